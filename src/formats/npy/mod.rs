//! NumPy's `.npy` format: the header dict, parsed safely (no eval, a length cap as
//! NumPy has, a clear error for every malformed dict), and writing headers; the
//! element types it names are the core's [`Descr`]s. Also a file mapped zero-copy
//! ([`MappedNpy`]) and what `ra describe` says of one ([`describe_npy`]).
//!
//! Layout: `\x93NUMPY`, major, minor, header length (u16 for version 1, u32 for 2 and
//! 3), the header (a Python dict literal padded with spaces and a newline), the data.

pub(crate) mod engine;
mod mapped;

use yaml_rust2::Yaml;

use crate::descr::{bad, lengths, parse_literal, shape_python, Lit};
use crate::error::{ErrorKind, Result};
use crate::header::Header;
use crate::ndl::{displayable, document, int, s, storage_mut, to_text};

pub use crate::descr::{Descr, Field};
pub use engine::NpySource;
pub use mapped::MappedNpy;

/// The first six bytes of every `.npy` file.
pub const NPY_MAGIC: &[u8; 6] = b"\x93NUMPY";

/// NumPy's default `max_header_size`: longer headers are refused unread.
pub const MAX_HEADER_LEN: usize = 10_000;

/// A parsed `.npy` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyHeader {
    /// Format version (major, minor).
    pub version: (u8, u8),
    /// The element type.
    pub descr: Descr,
    /// Whether the data is in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The array's shape.
    pub shape: Vec<u64>,
    /// Where the data starts.
    pub data_offset: u64,
}

impl NpyHeader {
    /// Bytes needed to know the header's length: magic, version and length field.
    pub const PREFIX_LEN: usize = 12;

    /// From the first bytes of a file (at least [`PREFIX_LEN`](Self::PREFIX_LEN)):
    /// the total header length, data offset included. Refuses a header longer than
    /// [`MAX_HEADER_LEN`] before anything is read or allocated for it.
    pub fn required_len(prefix: &[u8]) -> Result<usize> {
        if prefix.len() < 10 || &prefix[..6] != NPY_MAGIC {
            return Err(bad("not an NPY file (no \\x93NUMPY magic)"));
        }
        let (major, minor) = (prefix[6], prefix[7]);
        let (start, len) = match major {
            1 => (10, usize::from(u16::from_le_bytes([prefix[8], prefix[9]]))),
            2 | 3 if prefix.len() >= 12 => (
                12,
                u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]) as usize,
            ),
            2 | 3 => return Err(bad("truncated NPY preamble")),
            _ => {
                return Err(bad(format!(
                    "NPY version {major}.{minor} is not supported (1, 2 or 3)"
                )))
            }
        };
        if len > MAX_HEADER_LEN {
            return Err(bad(format!(
                "header of {len} bytes is longer than the {MAX_HEADER_LEN}-byte limit"
            )));
        }
        Ok(start + len)
    }

    /// Parses a whole header (the file's first [`required_len`](Self::required_len)
    /// bytes, or more).
    pub fn parse(bytes: &[u8]) -> Result<NpyHeader> {
        let total = Self::required_len(bytes)?;
        let start = if bytes[6] == 1 { 10 } else { 12 };
        let text = bytes.get(start..total).ok_or_else(|| {
            bad(format!(
                "truncated: header needs {total} bytes, {} present",
                bytes.len()
            ))
        })?;
        // Versions 1 and 2 are Latin-1, as NumPy writes and reads them; 3 is UTF-8.
        let text: String = if bytes[6] == 3 {
            std::str::from_utf8(text)
                .map_err(|_| bad("version 3.0 header is not UTF-8 text"))?
                .to_owned()
        } else {
            text.iter().map(|&b| char::from(b)).collect()
        };
        let Lit::Dict(items) = parse_literal(text.trim_end_matches(['\n', ' ', '\0']))? else {
            return Err(bad("header is not a dict"));
        };
        let mut descr = None;
        let mut fortran = None;
        let mut shape = None;
        for (k, v) in &items {
            match (k, v) {
                (Lit::Str(k), v) if k == "descr" => descr = Some(Descr::from_lit(v, 0)?),
                (Lit::Str(k), Lit::Bool(b)) if k == "fortran_order" => fortran = Some(*b),
                (Lit::Str(k), Lit::Seq(dims)) if k == "shape" => {
                    shape = Some(lengths(dims, |other| {
                        bad(format!("shape: {other:?} is not a length"))
                    })?)
                }
                (k, v) => return Err(bad(format!("header: unexpected entry {k:?}: {v:?}"))),
            }
        }
        // Three entries, each of the three keys: no key given twice.
        let (Some(descr), Some(fortran_order), Some(shape), 3) =
            (descr, fortran, shape, items.len())
        else {
            return Err(bad(
                "header must hold exactly 'descr', 'fortran_order' and 'shape'",
            ));
        };
        Ok(NpyHeader {
            version: (bytes[6], bytes[7]),
            descr,
            fortran_order,
            shape,
            data_offset: total as u64,
        })
    }

    /// The data bytes, checked to end within a file (or archive member) of `len`
    /// bytes: a `.npy` cut short is [`ErrorKind::TruncatedData`](crate::ErrorKind),
    /// with the bytes header and data need and the bytes there are, as a `.ra` is.
    pub fn data_within(&self, len: u64) -> Result<u64> {
        let (_, nbytes) = self.data_len()?;
        let end = self.data_offset.saturating_add(nbytes);
        if end > len {
            return Err(crate::ErrorKind::TruncatedData {
                expected: end,
                actual: len,
            }
            .into());
        }
        Ok(nbytes)
    }

    /// Element count and data bytes, checked for overflow.
    pub fn data_len(&self) -> Result<(u64, u64)> {
        let overflows = || bad(format!("shape {:?} overflows", self.shape));
        let count = crate::header::checked_bytes(1, &self.shape).ok_or_else(overflows)?;
        let bytes = crate::header::checked_bytes(self.descr.itemsize()?, &self.shape)
            .ok_or_else(overflows)?;
        Ok((count, bytes))
    }

    /// Encodes a header: version 1.0 when it fits, else 2.0 (3.0 for non-Latin-1
    /// field names), padded with spaces so the data starts at a multiple of 64.
    pub fn encode(descr: &Descr, fortran_order: bool, shape: &[u64]) -> Vec<u8> {
        let dict = format!(
            "{{'descr': {}, 'fortran_order': {}, 'shape': {}, }}",
            descr.to_python(),
            if fortran_order { "True" } else { "False" },
            shape_python(shape)
        );
        let latin1 = dict.chars().all(|c| (c as u32) < 256);
        let body: Vec<u8> = if latin1 {
            dict.chars().map(|c| c as u8).collect()
        } else {
            dict.into_bytes()
        };
        let (major, prefix) = if body.len() + 11 <= 65535 && latin1 {
            (1u8, 10usize)
        } else {
            (if latin1 { 2 } else { 3 }, 12)
        };
        let total = (prefix + body.len() + 1).div_ceil(64) * 64;
        let hlen = total - prefix;
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(NPY_MAGIC);
        out.extend([major, 0]);
        if major == 1 {
            out.extend((hlen as u16).to_le_bytes());
        } else {
            out.extend((hlen as u32).to_le_bytes());
        }
        out.extend(body);
        out.resize(total - 1, b' ');
        out.push(b'\n');
        out
    }
}

/// Checks that NumPy can hold an array of `shape` with `itemsize`-byte elements: every
/// extent at most 2^63 − 1, and `itemsize × Π (nonzero extents)` too (NumPy refuses a
/// larger shape even when another extent is zero).
pub fn check_numpy_shape(shape: &[u64], itemsize: u64) -> Result<()> {
    let limit = i64::MAX as u64;
    let bytes = shape
        .iter()
        .filter(|&&d| d != 0)
        .try_fold(itemsize, |acc, &d| {
            acc.checked_mul(d).filter(|&b| b <= limit)
        });
    if shape.iter().any(|&d| d > limit) || bytes.is_none() {
        return Err(ErrorKind::Unsupported(format!(
            "NumPy cannot hold shape {shape:?} of {itemsize}-byte elements: each extent and \
             the bytes of the nonzero extents must be at most 2^63 - 1"
        ))
        .into());
    }
    Ok(())
}

/// Reads and parses an NPY header from the start of `r`, reading no more than the
/// header's own (capped) length.
pub fn read_header(r: &mut impl std::io::Read) -> Result<NpyHeader> {
    use std::io::Read as _;
    let mut buf = vec![0u8; NpyHeader::PREFIX_LEN];
    let got = crate::read::read_full(r, &mut buf)?;
    buf.truncate(got);
    let total = NpyHeader::required_len(&buf)?;
    if total > buf.len() {
        let mut rest = Vec::new();
        r.take((total - buf.len()) as u64)
            .read_to_end(&mut rest)
            .map_err(|e| crate::Error::io("read", e))?;
        buf.extend(rest);
    } else {
        buf.truncate(total);
    }
    NpyHeader::parse(&buf)
}

/// `ra describe` of a `.npy`: its type (with the descr of an opaque one) and shape,
/// and where its data lies.
pub fn describe_npy(file: &str, nh: &NpyHeader) -> Result<String> {
    let dtype = nh.descr.dtype()?;
    let header = Header::new(dtype, &nh.shape)?;
    let mut doc = document(Some(file), &header, Some(&nh.descr), None);
    if let Some(Yaml::Hash(storage)) = storage_mut(&mut doc) {
        storage.insert(s("format"), s("NPY"));
        storage.insert(
            s("endian"),
            s(if nh.descr.big_endian() {
                "big"
            } else {
                "little"
            }),
        );
        let order = if nh.fortran_order {
            "column-major"
        } else {
            "row-major"
        };
        storage.insert(s("order"), s(order));
        storage.insert(s("data_offset"), int(nh.data_offset));
        storage.insert(
            s("version"),
            s(&format!("{}.{}", nh.version.0, nh.version.1)),
        );
    }
    Ok(to_text(&displayable(doc)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn parses_what_numpy_writes() {
        let h = NpyHeader::encode(&Descr::parse("'<f4'").unwrap(), false, &[3, 4]);
        assert_eq!(h.len() % 64, 0);
        let p = NpyHeader::parse(&h).unwrap();
        assert_eq!(p.shape, [3, 4]);
        assert!(!p.fortran_order);
        assert_eq!(p.descr.dtype().unwrap(), DType::F32);
        assert_eq!(p.data_offset, h.len() as u64);
        let dict = b"{'descr': '>i8', 'fortran_order': True, 'shape': (5,), }    \n";
        let mut text = b"\x93NUMPY\x01\x00".to_vec();
        text.extend((dict.len() as u16).to_le_bytes());
        text.extend(dict);
        let p = NpyHeader::parse(&text).unwrap();
        assert!(p.descr.big_endian() && p.fortran_order);
        assert_eq!(p.descr.dtype().unwrap(), DType::I64);
    }

    #[test]
    fn names_with_escapes_round_trip_as_python_reads_them() {
        let parsed = Descr::parse("[('a\\nb\\\\c\\'d\\x1be\\u00e9\\101\\\nf', '<i2')]").unwrap();
        let Descr::Struct(fields) = &parsed else {
            panic!("{parsed:?}")
        };
        assert_eq!(fields[0].name, "a\nb\\c'd\u{1b}e\u{e9}Af");
        for name in [
            "x\ny",
            "back\\slash\\n",
            "q'uo\"te",
            "\u{1b}[0m",
            "tab\t\r",
            "\u{9b}c1",
        ] {
            let d = Descr::Struct(vec![Field {
                name: name.into(),
                descr: Descr::parse("'<f4'").unwrap(),
                shape: vec![],
            }]);
            let enc = NpyHeader::encode(&d, false, &[1]);
            let back = NpyHeader::parse(&enc).unwrap();
            assert_eq!(back.descr, d, "{name:?}");
        }
    }

    #[test]
    fn malformed_headers_are_errors() {
        for text in [
            "{'descr': '<f4', 'fortran_order': False}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
            "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}",
            "{'descr': '<O8', 'fortran_order': False, 'shape': ()}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,)}",
            "{'descr': '<f4' 'fortran_order': False, 'shape': ()}",
            "{'descr': '<f4', 'fortran_order': False, 'shape': ()} trailing",
            "__import__('os').system('true')",
            "{'descr': [], 'fortran_order': False, 'shape': ()}",
            "{'descr': '<f0', 'fortran_order': False, 'shape': ()}",
        ] {
            let mut h = Vec::from(&b"\x93NUMPY\x01\x00"[..]);
            h.extend((text.len() as u16).to_le_bytes());
            h.extend(text.as_bytes());
            assert!(NpyHeader::parse(&h).is_err(), "{text}");
        }
        let deep = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(Descr::parse(&deep).is_err());
        let mut long = Vec::from(&b"\x93NUMPY\x02\x00"[..]);
        long.extend(1_000_000u32.to_le_bytes());
        assert!(NpyHeader::required_len(&long).is_err());
    }
}
