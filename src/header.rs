//! The RawArray header: parse and validate from bytes (FORMAT.md section 4), encode.
//!
//! No I/O and no `unsafe` here: [`Header::parse`] takes the first bytes of a file and
//! its length, so the same code serves the mapped reader, the copying reader and the
//! fuzz targets. Nothing is allocated from a length in the file before that length has
//! been checked against the file's own length.

use crate::dtype::{DType, Kind};
use crate::error::{ErrorKind, Result};

/// `rawarray` read as a little-endian u64.
pub const MAGIC: u64 = 0x7961_7272_6177_6172;

/// Length of the fixed part of the header (six u64 fields).
pub const FIXED_LEN: usize = 48;

/// The `flags` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Flags(pub u64);

impl Flags {
    /// Bit 0: data elements are big-endian.
    pub const BIG_ENDIAN: u64 = 1;
    /// Bit 1: the data segment is LZ4- or LEB128-encoded.
    pub const COMPRESSED: u64 = 2;
    /// Bit 2: Julia BitArray, packed u64 words of bits.
    pub const BITS: u64 = 4;
    /// Bit 3: open for appending (rastore's extension, docs/FORMAT.md section 9). The
    /// data is valid as the header says; the bytes after it are uncommitted frames,
    /// not a trailer.
    pub const APPENDING: u64 = 8;
    /// Every bit this reader understands.
    pub const KNOWN: u64 = Self::BIG_ENDIAN | Self::COMPRESSED | Self::BITS | Self::APPENDING;

    /// Bit 0 is set.
    pub fn big_endian(self) -> bool {
        self.0 & Self::BIG_ENDIAN != 0
    }
    /// Bit 1 is set.
    pub fn compressed(self) -> bool {
        self.0 & Self::COMPRESSED != 0
    }
    /// Bit 2 is set.
    pub fn bits(self) -> bool {
        self.0 & Self::BITS != 0
    }
    /// Bit 3 is set: the file is open for appending, or was left so by a crash.
    pub fn appending(self) -> bool {
        self.0 & Self::APPENDING != 0
    }
    /// The bits this reader does not know.
    pub fn unknown(self) -> u64 {
        self.0 & !Self::KNOWN
    }
}

/// How the data segment is stored (FORMAT.md sections 2 and 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// Plain elements, `size == elbyte × Π dims`.
    Raw,
    /// One LZ4 block of `size` bytes decoding to `elbyte × Π dims` bytes.
    Lz4,
    /// Julia's LEB128 (zig-zag for signed) integers, running to end of file. A header
    /// never says this alone: decoding tells it from [`Lz4OrLeb128`](Self::Lz4OrLeb128).
    Leb128,
    /// A compressed integer (or Bool) file whose `size` equals `elbyte × Π dims`: an
    /// LZ4 block exactly as long as the raw data, or LEB128 running to end of file.
    /// FORMAT.md section 5: decode as LZ4 first, then as LEB128.
    Lz4OrLeb128,
    /// Julia BitArray: `⌈Π dims / 64⌉` u64 words of bits.
    Bits,
}

impl Encoding {
    /// The filter's name in `ra info` and NDL storage (`None` for plain data).
    pub fn filter_name(self) -> Option<&'static str> {
        match self {
            Encoding::Raw => None,
            Encoding::Lz4 => Some("lz4"),
            Encoding::Leb128 => Some("leb128"),
            Encoding::Lz4OrLeb128 => Some("lz4 or leb128"),
            Encoding::Bits => Some("bits"),
        }
    }
}

/// A parsed, validated header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    dtype: DType,
    flags: Flags,
    size: u64,
    dims: Vec<u64>,
    header_big_endian: bool,
    count: u64,
    nbytes: u64,
}

/// The six fixed fields, read in the file's byte order.
struct Fixed {
    big: bool,
    flags: u64,
    eltype: u64,
    elbyte: u64,
    size: u64,
    ndims: u64,
}

fn word(bytes: &[u8], i: usize, big: bool) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&bytes[8 * i..8 * i + 8]);
    if big {
        u64::from_be_bytes(w)
    } else {
        u64::from_le_bytes(w)
    }
}

impl Fixed {
    /// Rules 1 and 2. A file too short for the header that does not start as a
    /// RawArray does (the magic, or the start of it, in either byte order) is no
    /// RawArray rather than a truncated one: a short text file is named as such.
    fn parse(bytes: &[u8], file_len: u64) -> Result<Fixed> {
        if file_len < FIXED_LEN as u64 || bytes.len() < FIXED_LEN {
            let start = &bytes[..bytes.len().min(8)];
            let le = MAGIC.to_le_bytes();
            let be = MAGIC.to_be_bytes();
            if !le.starts_with(start) && !be.starts_with(start) {
                let mut first = [0u8; 8];
                first[..start.len()].copy_from_slice(start);
                return Err(ErrorKind::NotRawArray {
                    magic: u64::from_le_bytes(first),
                    found: crate::sniff::what(bytes),
                }
                .into());
            }
            return Err(ErrorKind::Truncated {
                len: file_len.min(bytes.len() as u64),
            }
            .into());
        }
        let magic = word(bytes, 0, false);
        let big = if magic == MAGIC {
            false
        } else if magic == MAGIC.swap_bytes() {
            true
        } else {
            return Err(ErrorKind::NotRawArray {
                magic,
                found: crate::sniff::what(bytes),
            }
            .into());
        };
        Ok(Fixed {
            big,
            flags: word(bytes, 1, big),
            eltype: word(bytes, 2, big),
            elbyte: word(bytes, 3, big),
            size: word(bytes, 4, big),
            ndims: word(bytes, 5, big),
        })
    }
}

/// `48 + 8·ndims`, or `None` when it overflows u64.
pub fn header_len(ndims: u64) -> Option<u64> {
    ndims.checked_mul(8)?.checked_add(FIXED_LEN as u64)
}

impl Header {
    /// A header for plain (uncompressed, native little-endian) data of this type and shape.
    pub fn new(dtype: DType, dims: &[u64]) -> Result<Header> {
        if dtype.elbyte == 0 {
            return Err(ErrorKind::ZeroElbyte.into());
        }
        let (count, nbytes) = shape_bytes(dtype.elbyte, dims)?;
        // The file must be addressable: header, dims and data within u64.
        let hlen = header_len(dims.len() as u64).unwrap_or(u64::MAX);
        if hlen.checked_add(nbytes).is_none() {
            return Err(ErrorKind::TooLarge {
                what: "header and data bytes",
                value: u128::from(hlen) + u128::from(nbytes),
            }
            .into());
        }
        Ok(Header {
            dtype,
            flags: Flags(0),
            size: nbytes,
            dims: dims.to_vec(),
            header_big_endian: false,
            count,
            nbytes,
        })
    }

    /// Parse and validate a whole file image (rules 1 to 8).
    pub fn parse(file: &[u8]) -> Result<Header> {
        Self::parse_prefix(file, file.len() as u64)
    }

    /// Parse and validate from the first bytes of a file of length `file_len` (rules 1
    /// to 8). `bytes` must hold at least the whole header (`48 + 8·ndims` bytes); fewer
    /// gives [`ErrorKind::TruncatedHeader`] with the bytes available.
    pub fn parse_prefix(bytes: &[u8], file_len: u64) -> Result<Header> {
        let (f, _) = Self::fixed_and_len(bytes, file_len)?;
        let avail = file_len.min(bytes.len() as u64);
        if header_len(f.ndims).is_none_or(|h| h > avail) {
            return Err(truncated_header(f.ndims, avail));
        }
        let dims: Vec<u64> = (0..f.ndims as usize)
            .map(|i| word(bytes, 6 + i, f.big))
            .collect();
        Self::validate(f, dims, file_len)
    }

    /// Rules 1 to 3 from the fixed 48 bytes alone: the whole header's length
    /// (`48 + 8·ndims`), checked to fit in a file of `file_len` bytes. A streaming
    /// reader calls this to learn how many more bytes the header has.
    pub fn required_len(fixed: &[u8], file_len: u64) -> Result<u64> {
        Self::fixed_and_len(fixed, file_len).map(|(_, len)| len)
    }

    fn fixed_and_len(bytes: &[u8], file_len: u64) -> Result<(Fixed, u64)> {
        let f = Fixed::parse(bytes, file_len)?;
        // Rule 3, before anything is sized by ndims.
        match header_len(f.ndims) {
            Some(h) if h <= file_len => Ok((f, h)),
            _ => Err(truncated_header(f.ndims, file_len)),
        }
    }

    /// Rules 4 to 8, given the fixed fields and the dims.
    fn validate(f: Fixed, dims: Vec<u64>, file_len: u64) -> Result<Header> {
        // Rule 4.
        if f.elbyte == 0 {
            return Err(ErrorKind::ZeroElbyte.into());
        }
        // Rule 5.
        let (count, nbytes) = shape_bytes(f.elbyte, &dims)?;
        let h = Header {
            dtype: DType {
                eltype: f.eltype,
                elbyte: f.elbyte,
            },
            flags: Flags(f.flags),
            size: f.size,
            dims,
            header_big_endian: f.big,
            count,
            nbytes,
        };
        // Rule 6.
        let expected = match h.encoding() {
            Encoding::Raw => Some(nbytes),
            Encoding::Bits => Some(8 * count.div_ceil(64)),
            Encoding::Lz4 | Encoding::Leb128 | Encoding::Lz4OrLeb128 => None,
        };
        if let Some(expected) = expected {
            if h.size != expected {
                return Err(ErrorKind::SizeMismatch {
                    size: h.size,
                    expected,
                }
                .into());
            }
        }
        // Rule 7. The header length fits: rule 3 checked it against the file length.
        let hlen = h.data_offset();
        if h.encoding() != Encoding::Lz4OrLeb128 {
            let end = hlen.checked_add(h.size);
            if end.is_none_or(|e| e > file_len) {
                return Err(ErrorKind::TruncatedData {
                    expected: end.unwrap_or(u64::MAX),
                    actual: file_len,
                }
                .into());
            }
        }
        // Rule 8.
        if h.flags.unknown() != 0 {
            return Err(ErrorKind::UnsupportedFlags {
                flags: h.flags.0,
                unknown: h.flags.unknown(),
            }
            .into());
        }
        // Rule 8, continued: BITS has one meaning (FORMAT.md section 2).
        if h.flags.bits() && (f.eltype, f.elbyte) != (5, 8) {
            return Err(ErrorKind::BitsType {
                eltype: f.eltype,
                elbyte: f.elbyte,
            }
            .into());
        }
        // Rule 8, continued: only plain little-endian data is appended to.
        if h.flags.appending() && (h.encoding() != Encoding::Raw || h.data_big_endian()) {
            return Err(ErrorKind::Unsupported(format!(
                "appending flag (0x8) with flags {:#x}: only plain little-endian data is appended to",
                h.flags.0
            ))
            .into());
        }
        Ok(h)
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The flags.
    pub fn flags(&self) -> Flags {
        self.flags
    }
    /// The `size` field: data segment length as stored.
    pub fn size(&self) -> u64 {
        self.size
    }
    /// The extents, first dimension fastest.
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }
    /// Number of dimensions.
    pub fn ndims(&self) -> usize {
        self.dims.len()
    }
    /// Number of elements, `Π dims` (1 for 0-d).
    pub fn count(&self) -> u64 {
        self.count
    }
    /// Length of the decoded data, `elbyte × Π dims`.
    pub fn nbytes(&self) -> u64 {
        self.nbytes
    }
    /// Offset of the data segment: `48 + 8·ndims`, always a multiple of 8.
    pub fn data_offset(&self) -> u64 {
        FIXED_LEN as u64 + 8 * self.dims.len() as u64
    }
    /// Whether the header itself was written big-endian (magic reads `yarrawar`).
    pub fn header_big_endian(&self) -> bool {
        self.header_big_endian
    }
    /// Whether data elements are big-endian: the flag, or a big-endian header.
    pub fn data_big_endian(&self) -> bool {
        self.flags.big_endian() || self.header_big_endian
    }
    /// Whether the data is in this machine's byte order.
    pub fn native_endian(&self) -> bool {
        self.data_big_endian() == cfg!(target_endian = "big")
    }

    /// How the data segment is stored.
    pub fn encoding(&self) -> Encoding {
        if self.flags.bits() {
            Encoding::Bits
        } else if !self.flags.compressed() {
            Encoding::Raw
        } else if self.dtype.is_leb128_capable() && self.size == self.nbytes {
            Encoding::Lz4OrLeb128
        } else {
            Encoding::Lz4
        }
    }

    /// Offset one past the data segment, where the metadata trailer starts. For a
    /// header that may be LEB128 this assumes it is (the data runs to the end of the
    /// file, no trailer); only decoding can tell (FORMAT.md section 5).
    pub fn data_end(&self, file_len: u64) -> u64 {
        match self.encoding() {
            Encoding::Leb128 | Encoding::Lz4OrLeb128 => file_len,
            _ => self.data_offset() + self.size,
        }
    }

    /// Offset where the metadata trailer starts: [`data_end`](Self::data_end), or the
    /// file's end while the file is open for appending (what follows its data then is
    /// uncommitted frames, never a trailer).
    pub fn trailer_start(&self, file_len: u64) -> u64 {
        if self.flags.appending() {
            file_len
        } else {
            self.data_end(file_len)
        }
    }

    /// Whether elements are Julia `Bool`s (bytes, or packed bits).
    pub fn is_bool(&self) -> bool {
        matches!(self.dtype.kind(), Kind::Bool) || self.encoding() == Encoding::Bits
    }

    /// The same header with other flags and size (for encoders).
    pub fn with_storage(mut self, flags: u64, size: u64) -> Header {
        self.flags = Flags(flags);
        self.size = size;
        self
    }

    /// The same header with other dims of the same element count.
    pub fn reshaped(&self, dims: &[u64]) -> Result<Header> {
        let (count, _) = shape_bytes(self.dtype.elbyte, dims)?;
        if count != self.count {
            return Err(ErrorKind::InvalidArgument(format!(
                "cannot reshape {} elements {:?} to {} elements {:?}",
                self.count, self.dims, count, dims
            ))
            .into());
        }
        Ok(Header {
            dims: dims.to_vec(),
            ..self.clone()
        })
    }

    /// The part of the array whose last index lies in `range`: its header (dims
    /// `dims[..n-1] + [range.len()]`, same flags) and the byte offset of its first
    /// element in the file. Only plain (raw) data has slabs.
    pub fn slab(&self, range: std::ops::Range<u64>) -> Result<(Header, u64)> {
        let bad = |why: String| -> crate::Error { ErrorKind::InvalidArgument(why).into() };
        let Some((&last, rest)) = self.dims.split_last() else {
            return Err(bad("a 0-d array has no last axis to cut into slabs".into()));
        };
        if self.encoding() != Encoding::Raw {
            return Err(ErrorKind::Unsupported(format!(
                "slabs of {:?}-encoded data: only plain data can be written in place",
                self.encoding()
            ))
            .into());
        }
        if range.start >= range.end || range.end > last {
            return Err(bad(format!(
                "slab {}..{} is empty or outside the last axis 0..{last}",
                range.start, range.end
            )));
        }
        let mut dims = rest.to_vec();
        dims.push(range.end - range.start);
        let mut h = Header::new(self.dtype, &dims)?;
        h.flags = self.flags;
        h.header_big_endian = self.header_big_endian;
        // Within the file: validated products cannot overflow.
        let offset = self.data_offset() + range.start * (self.nbytes / last);
        Ok((h, offset))
    }

    /// The header's bytes, in the byte order it was read in (little-endian for new ones).
    pub fn encode(&self) -> Vec<u8> {
        let big = self.header_big_endian;
        let fields = [
            MAGIC,
            self.flags.0,
            self.dtype.eltype,
            self.dtype.elbyte,
            self.size,
            self.dims.len() as u64,
        ];
        fields
            .iter()
            .chain(&self.dims)
            .flat_map(|w| {
                if big {
                    w.to_be_bytes()
                } else {
                    w.to_le_bytes()
                }
            })
            .collect()
    }
}

fn truncated_header(ndims: u64, len: u64) -> crate::Error {
    ErrorKind::TruncatedHeader {
        ndims,
        needed: 48 + 8 * u128::from(ndims),
        len,
    }
    .into()
}

/// `(Π dims, elbyte × Π dims)` with checked multiplication (rule 5).
fn shape_bytes(elbyte: u64, dims: &[u64]) -> Result<(u64, u64)> {
    let overflow = || ErrorKind::ShapeOverflow {
        elbyte,
        dims: dims.to_vec(),
    };
    let count = checked_bytes(1, dims).ok_or_else(overflow)?;
    let nbytes = checked_bytes(elbyte, dims).ok_or_else(overflow)?;
    Ok((count, nbytes))
}

/// `itemsize × Π extents`, the bytes of a box or an array, or `None` when it does not
/// fit in 64 bits. An extent of zero makes it zero however large the others are, in
/// whatever order they come: `[2^63, 4, 0]` holds no bytes, as `[0, 2^63, 4]` holds
/// none (a product taken left to right would overflow on the first and not the second).
pub fn checked_bytes(itemsize: u64, extents: &[u64]) -> Option<u64> {
    if extents.contains(&0) {
        return Some(0);
    }
    extents
        .iter()
        .try_fold(itemsize, |acc, &d| acc.checked_mul(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(fields: &[u64]) -> Vec<u8> {
        fields.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    #[test]
    fn encode_parse_round_trip() {
        let h = Header::new(DType::F32, &[3, 4]).unwrap();
        let mut file = h.encode();
        assert_eq!(file.len(), 64);
        file.resize(64 + 48, 0);
        let p = Header::parse(&file).unwrap();
        assert_eq!(p, h);
        assert_eq!(p.data_offset(), 64);
        assert_eq!(p.nbytes(), 48);
    }

    #[test]
    fn big_endian_header() {
        let fields = [MAGIC, 1, 3, 4, 8, 1, 2];
        let mut file: Vec<u8> = fields.iter().flat_map(|w| w.to_be_bytes()).collect();
        file.extend([0u8; 8]);
        let h = Header::parse(&file).unwrap();
        assert!(h.header_big_endian());
        assert!(h.data_big_endian());
        assert_eq!(h.dims(), &[2]);
        assert_eq!(h.encode(), file[..56].to_vec());
    }

    #[test]
    fn rule_order() {
        // Unknown flags and a lying size: the size is reported first (rule 6 before 8).
        let file = image(&[MAGIC, 16, 3, 4, 99, 1, 2, 0]);
        assert!(matches!(
            Header::parse(&file).unwrap_err().kind(),
            ErrorKind::SizeMismatch {
                size: 99,
                expected: 8
            }
        ));
        let file = image(&[MAGIC, 16, 3, 4, 8, 1, 2, 0]);
        assert!(matches!(
            Header::parse(&file).unwrap_err().kind(),
            ErrorKind::UnsupportedFlags { unknown: 16, .. }
        ));
    }

    #[test]
    fn prefix_shorter_than_header() {
        let file = image(&[MAGIC, 0, 3, 4, 8, 2, 1, 2]);
        let err = Header::parse_prefix(&file[..56], 1000).unwrap_err();
        assert!(matches!(
            err.kind(),
            ErrorKind::TruncatedHeader {
                ndims: 2,
                needed: 64,
                len: 56
            }
        ));
    }

    #[test]
    fn encodings() {
        let leb = image(&[MAGIC, 2, 1, 4, 8, 1, 2, 0]);
        assert_eq!(
            Header::parse(&leb).unwrap().encoding(),
            Encoding::Lz4OrLeb128
        );
        let lz4 = image(&[MAGIC, 2, 3, 4, 5, 1, 2, 0]);
        assert_eq!(Header::parse(&lz4).unwrap().encoding(), Encoding::Lz4);
        let bits = image(&[MAGIC, 6, 5, 8, 8, 1, 70, 0, 0]);
        assert!(Header::parse(&bits).is_err(), "70 bits need two words");
        let bits = image(&[MAGIC, 6, 5, 8, 16, 1, 70, 0, 0]);
        assert_eq!(Header::parse(&bits).unwrap().encoding(), Encoding::Bits);
    }
}
