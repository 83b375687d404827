//! safetensors (Hugging Face): named tensors behind a JSON header, parsed as the
//! `safetensors` package parses it, and refused where it refuses.
//!
//! Layout: an 8-byte little-endian length `N`, `N` bytes of JSON (`{NAME: {"dtype",
//! "shape", "data_offsets": [begin, end]}, "__metadata__": {str: str}}`, padded with
//! spaces), then the tensors' bytes, C order, little-endian, each at its offsets from
//! the end of the header. The tensors tile the data exactly: sorted by offset, each
//! begins where the one before ends, the first at 0 and the last at the file's end.
//!
//! Nothing a file merely claims is allocated: `N` is bounded by the file's length and
//! by the package's own limit ([`MAX_HEADER_LEN`]) before it is read.

pub mod engine;
mod write;

use std::collections::BTreeMap;
use std::fs::File;

use serde_json::Value;

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};

pub use write::{check, encode_header, Entry};

/// The safetensors package's limit on the header's length (100 MB): longer ones are
/// refused before they are read.
pub const MAX_HEADER_LEN: u64 = 100_000_000;

/// A tensor of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tensor {
    /// Its name (dots and all: `layers.0.weight`).
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Its shape, first axis first (C order).
    pub shape: Vec<u64>,
    /// Where its bytes start in the file (the header's end plus its `begin`).
    pub offset: u64,
    /// Its bytes.
    pub nbytes: u64,
}

/// A parsed header: the tensors in the order of their bytes, and `__metadata__`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Header {
    /// The tensors, sorted by offset.
    pub tensors: Vec<Tensor>,
    /// `__metadata__`: string to string.
    pub metadata: BTreeMap<String, String>,
    /// Where the data starts: 8 + `N`.
    pub data_start: u64,
}

impl Header {
    /// The tensor named `name`.
    pub fn tensor(&self, name: &str) -> Option<&Tensor> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// The tensors' names, in the order of their bytes.
    pub fn names(&self) -> Vec<&str> {
        self.tensors.iter().map(|t| t.name.as_str()).collect()
    }
}

/// `(safetensors name, type)` of every type rastore reads and writes, in the
/// package's order of alignment (its writer lays the most aligned tensors out first).
const TYPES: &[(&str, DType)] = &[
    ("BOOL", DType::BOOL),
    ("U8", DType::U8),
    ("I8", DType::I8),
    ("I16", DType::I16),
    ("U16", DType::U16),
    ("F16", DType::F16),
    ("BF16", DType::BF16),
    ("I32", DType::I32),
    ("U32", DType::U32),
    ("F32", DType::F32),
    ("C64", DType::C64),
    ("F64", DType::F64),
    ("I64", DType::I64),
    ("U64", DType::U64),
];

/// The sub-byte and 8-bit float types, valid in safetensors but with no RawArray
/// type: refused by name.
const REFUSED: &[&str] = &[
    "F4",
    "F6_E2M3",
    "F6_E3M2",
    "F8_E5M2",
    "F8_E4M3",
    "F8_E8M0",
    "F8_E4M3FNUZ",
    "F8_E5M2FNUZ",
];

/// The RawArray type of the safetensors type `name`.
pub fn dtype_of(name: &str) -> Result<DType> {
    if let Some((_, d)) = TYPES.iter().find(|(n, _)| *n == name) {
        return Ok(*d);
    }
    if REFUSED.contains(&name) {
        return Err(ErrorKind::Unsupported(format!(
            "the safetensors type {name} (an 8-bit or smaller float): RawArray has no such \
             type; convert the tensor to F16, BF16 or F32 first"
        ))
        .into());
    }
    Err(malformed("dtype", format!("unknown type {name:?}")))
}

/// The safetensors name of `dtype`, if it has one.
pub fn name_of(dtype: DType) -> Option<&'static str> {
    TYPES.iter().find(|(_, d)| *d == dtype).map(|(n, _)| *n)
}

fn malformed(field: impl Into<String>, detail: impl Into<String>) -> Error {
    ErrorKind::Malformed {
        format: "safetensors",
        field: field.into(),
        detail: detail.into(),
    }
    .into()
}

/// The header's length `N` from the file's first 8 bytes (`prefix`, fewer if the file
/// is shorter), checked against the file's length `len` and [`MAX_HEADER_LEN`].
pub fn header_len(prefix: &[u8], len: u64) -> Result<u64> {
    let Ok(bytes) = <[u8; 8]>::try_from(prefix.get(..8).unwrap_or(prefix)) else {
        return Err(malformed(
            "header length",
            format!("the file holds {len} bytes, fewer than the 8 of the length"),
        ));
    };
    let n = u64::from_le_bytes(bytes);
    if n > MAX_HEADER_LEN {
        return Err(malformed(
            "header length",
            format!("{n} bytes, more than the {MAX_HEADER_LEN} safetensors allows"),
        ));
    }
    let after = len.saturating_sub(8);
    if n > after {
        return Err(malformed(
            "header length",
            format!("{n} bytes, past the end of the file ({after} bytes after the length)"),
        ));
    }
    Ok(n)
}

/// Parses the header's JSON (`json`, the `N` bytes after the length) of a file of
/// `len` bytes: every tensor's type, shape and offsets, checked to tile the data
/// exactly as the package checks them.
pub fn parse(json: &[u8], len: u64) -> Result<Header> {
    let data_start = 8 + json.len() as u64;
    let text =
        std::str::from_utf8(json).map_err(|e| malformed("header", format!("not UTF-8: {e}")))?;
    let doc: Value =
        serde_json::from_str(text).map_err(|e| malformed("header", format!("not JSON: {e}")))?;
    let Value::Object(entries) = doc else {
        return Err(malformed("header", "not a JSON object"));
    };
    let mut header = Header {
        data_start,
        ..Header::default()
    };
    let mut spans = Vec::new();
    for (name, v) in entries {
        if name == "__metadata__" {
            header.metadata = metadata(&v)?;
            continue;
        }
        let (tensor, begin, end) = tensor(&name, &v, data_start)?;
        spans.push((begin, end, header.tensors.len()));
        header.tensors.push(tensor);
    }
    spans.sort_unstable();
    let mut at = 0u64;
    for &(begin, end, i) in &spans {
        let name = &header.tensors[i].name;
        if begin != at {
            let what = if begin < at {
                "overlaps the tensor before it"
            } else {
                "leaves a gap"
            };
            return Err(malformed(
                name.clone(),
                format!("data_offsets [{begin}, {end}] {what}: the data before it ends at {at}"),
            ));
        }
        at = end;
    }
    let data = len.saturating_sub(data_start);
    if at != data || len < data_start {
        return Err(malformed(
            "data_offsets",
            format!("the tensors end at {at}, the data holds {data} bytes"),
        ));
    }
    header.tensors.sort_by_key(|t| t.offset);
    Ok(header)
}

/// `__metadata__`: an object of strings (or `null`, as the package takes it: none).
fn metadata(v: &Value) -> Result<BTreeMap<String, String>> {
    if v.is_null() {
        return Ok(BTreeMap::new());
    }
    let Value::Object(m) = v else {
        return Err(malformed("__metadata__", "not a JSON object"));
    };
    m.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            other => Err(malformed(
                "__metadata__",
                format!("{k:?} is {other}, not a string"),
            )),
        })
        .collect()
}

/// The tensor `name` of the entry `v`, with its `[begin, end)` in the data.
fn tensor(name: &str, v: &Value, data_start: u64) -> Result<(Tensor, u64, u64)> {
    let field = |f: &str| format!("{name}: {f}");
    let Value::Object(m) = v else {
        return Err(malformed(name, "not a JSON object"));
    };
    let dtype = match m.get("dtype") {
        Some(Value::String(s)) => dtype_of(s).map_err(|e| match e.kind() {
            ErrorKind::Malformed { detail, .. } => malformed(field("dtype"), detail.clone()),
            _ => e,
        })?,
        _ => return Err(malformed(field("dtype"), "missing, or not a string")),
    };
    let numbers = |f: &str| -> Result<Vec<u64>> {
        match m.get(f) {
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_u64()
                        .ok_or_else(|| malformed(field(f), format!("{x} is not a length")))
                })
                .collect(),
            _ => Err(malformed(field(f), "missing, or not a list")),
        }
    };
    let shape = numbers("shape")?;
    let (begin, end) = match numbers("data_offsets")?.as_slice() {
        &[b, e] if b <= e => (b, e),
        other => {
            return Err(malformed(
                field("data_offsets"),
                format!("{other:?} is not [begin, end] with begin <= end"),
            ))
        }
    };
    let nbytes = crate::header::checked_bytes(dtype.elbyte, &shape)
        .ok_or_else(|| malformed(field("shape"), format!("{shape:?} overflows")))?;
    if end - begin != nbytes {
        return Err(malformed(
            field("data_offsets"),
            format!(
                "[{begin}, {end}] holds {} bytes; {} of shape {shape:?} needs {nbytes}",
                end - begin,
                name_of(dtype).unwrap_or("?")
            ),
        ));
    }
    let offset = data_start
        .checked_add(begin)
        .ok_or_else(|| malformed(field("data_offsets"), "overflows"))?;
    let t = Tensor {
        name: name.to_string(),
        dtype,
        shape,
        offset,
        nbytes,
    };
    Ok((t, begin, end))
}

/// Reads and parses the header of `file` (`len` bytes), reading no more than its own
/// checked length.
pub fn read_header(file: &File, len: u64) -> Result<Header> {
    let mut prefix = [0u8; 8];
    let got = (len as usize).min(8);
    crate::sys::read_exact_at(file, &mut prefix[..got], 0).map_err(|e| Error::io("read", e))?;
    let n = header_len(&prefix[..got], len)?;
    let mut json = vec![0u8; n as usize];
    crate::sys::read_exact_at(file, &mut json, 8).map_err(|e| Error::io("read", e))?;
    parse(&json, len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(json: &str, data: usize) -> Vec<u8> {
        let mut f = (json.len() as u64).to_le_bytes().to_vec();
        f.extend(json.as_bytes());
        f.extend(vec![0u8; data]);
        f
    }

    fn parsed(json: &str, data: usize) -> Result<Header> {
        let f = file(json, data);
        let n = header_len(&f, f.len() as u64)?;
        parse(&f[8..8 + n as usize], f.len() as u64)
    }

    #[test]
    fn reads_what_the_package_writes() {
        let h = parsed(
            r#"{"__metadata__":{"format":"pt"},"b.1":{"dtype":"F32","shape":[2,3],"data_offsets":[4,28]},"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}"#,
            28,
        )
        .unwrap();
        assert_eq!(h.names(), ["a", "b.1"]);
        assert_eq!(h.tensors[1].dtype, DType::F32);
        assert_eq!(h.tensors[1].shape, [2, 3]);
        assert_eq!(h.tensors[1].offset, h.data_start + 4);
        assert_eq!(h.metadata["format"], "pt");
        let none = parsed(r#"{"__metadata__":null}"#, 0).unwrap();
        assert!(none.metadata.is_empty() && none.tensors.is_empty());
        assert!(crate::sniff::is_safetensors(&file("{}", 0)));
    }

    #[test]
    fn refuses_what_the_package_refuses() {
        let t = |d: &str, s: &str, o: &str| {
            format!(r#"{{"x":{{"dtype":"{d}","shape":{s},"data_offsets":{o}}}}}"#)
        };
        for (json, data) in [
            (t("F32", "[2]", "[0,4]"), 4),
            (t("F32", "[2]", "[0,8]"), 9),
            (t("F32", "[2]", "[1,9]"), 9),
            (t("F32", "[2]", "[8,0]"), 8),
            (t("X9", "[2]", "[0,8]"), 8),
            (t("F32", "[-2]", "[0,8]"), 8),
            (t("F32", "[4294967296,4294967296]", "[0,8]"), 8),
            ("[1]".into(), 0),
            ("{\"__metadata__\":{\"a\":1}}".into(), 0),
            (
                r#"{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}"#.into(),
                3,
            ),
        ] {
            assert!(parsed(&json, data).is_err(), "{json}");
        }
        let e = parsed(&t("F8_E4M3", "[2]", "[0,2]"), 2).unwrap_err();
        assert!(e.to_string().contains("F8_E4M3"), "{e}");
        let mut huge = 1u64 << 60;
        assert!(header_len(&huge.to_le_bytes(), 100).is_err());
        huge = 50;
        assert!(header_len(&huge.to_le_bytes(), 40).is_err());
        assert!(header_len(b"\x01", 1).is_err());
        assert!(parsed("{\"a\": \u{ff}}", 0).is_err());
    }
}
