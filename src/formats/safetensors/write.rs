//! The header of a new safetensors file, as the package writes it: the tensors laid
//! out back to back, the most aligned types first and then by name (so that every
//! tensor starts at a multiple of its element's size), `__metadata__` first, compact
//! JSON padded with spaces to a multiple of 8 bytes.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::Value;

use super::{malformed, Tensor, MAX_HEADER_LEN, TYPES};
use crate::dtype::DType;
use crate::error::{ErrorKind, Result};

/// A tensor to write: its name, type and shape (C order).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its name.
    pub name: String,
    /// Its element type (one safetensors has: [`super::name_of`]).
    pub dtype: DType,
    /// Its shape, first axis first.
    pub shape: Vec<u64>,
}

/// Refuses a type safetensors has not.
pub fn check(dtype: DType) -> Result<()> {
    rank(dtype).map(drop)
}

/// The type's rank in the package's order of alignment.
fn rank(dtype: DType) -> Result<(usize, &'static str)> {
    TYPES
        .iter()
        .position(|(_, d)| *d == dtype)
        .map(|i| (i, TYPES[i].0))
        .ok_or_else(|| {
            ErrorKind::Unsupported(format!(
                "{dtype} in safetensors, which holds booleans, integers of 8 to 64 bits, \
                 float16, bfloat16, float32, float64 and complex64"
            ))
            .into()
        })
}

/// The header (length and JSON) of a file of `entries` and `metadata`, and each
/// entry's tensor (where its bytes go), in the order of the file.
pub fn encode_header(
    entries: &[Entry],
    metadata: &BTreeMap<String, String>,
) -> Result<(Vec<u8>, Vec<Tensor>)> {
    let mut order: Vec<(usize, &'static str, &Entry)> = entries
        .iter()
        .map(|e| rank(e.dtype).map(|(r, n)| (r, n, e)))
        .collect::<Result<_>>()?;
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.2.name.cmp(&b.2.name)));
    if let Some(w) = order.windows(2).find(|w| w[0].2.name == w[1].2.name) {
        return Err(malformed(w[0].2.name.clone(), "two tensors of this name"));
    }
    let quote = |s: &str| Value::String(s.to_string()).to_string();
    let mut json = String::from("{");
    if !metadata.is_empty() {
        json.push_str("\"__metadata__\":{");
        for (i, (k, v)) in metadata.iter().enumerate() {
            let comma = if i > 0 { "," } else { "" };
            let _ = write!(json, "{comma}{}:{}", quote(k), quote(v));
        }
        json.push('}');
    }
    let mut at = 0u64;
    let mut tensors = Vec::with_capacity(order.len());
    for (i, (_, name, e)) in order.into_iter().enumerate() {
        let nbytes = crate::header::checked_bytes(e.dtype.elbyte, &e.shape)
            .ok_or_else(|| malformed(e.name.clone(), format!("shape {:?} overflows", e.shape)))?;
        let end = at
            .checked_add(nbytes)
            .ok_or_else(|| malformed(e.name.clone(), "the data overflows"))?;
        let comma = if i > 0 || !metadata.is_empty() {
            ","
        } else {
            ""
        };
        let shape: Vec<String> = e.shape.iter().map(u64::to_string).collect();
        let _ = write!(
            json,
            "{comma}{}:{{\"dtype\":\"{name}\",\"shape\":[{}],\"data_offsets\":[{at},{end}]}}",
            quote(&e.name),
            shape.join(",")
        );
        tensors.push(Tensor {
            name: e.name.clone(),
            dtype: e.dtype,
            shape: e.shape.clone(),
            offset: at,
            nbytes,
        });
        at = end;
    }
    json.push('}');
    let n = json.len().next_multiple_of(8);
    if n as u64 > MAX_HEADER_LEN {
        return Err(ErrorKind::Unsupported(format!(
            "a safetensors header of {n} bytes: the package reads at most {MAX_HEADER_LEN}"
        ))
        .into());
    }
    let mut out = (n as u64).to_le_bytes().to_vec();
    out.extend(json.into_bytes());
    out.resize(8 + n, b' ');
    for t in &mut tensors {
        t.offset += out.len() as u64;
    }
    Ok((out, tensors))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lays_out_as_the_package() {
        let e = |name: &str, dtype, shape: &[u64]| Entry {
            name: name.into(),
            dtype,
            shape: shape.to_vec(),
        };
        let meta = BTreeMap::from([("k\"1".to_string(), "v".to_string())]);
        let (head, tensors) = encode_header(
            &[
                e("b", DType::U8, &[3]),
                e("a.0", DType::F64, &[2, 1]),
                e("c", DType::U8, &[0]),
            ],
            &meta,
        )
        .unwrap();
        assert_eq!(head.len() % 8, 0);
        let back = super::super::parse(&head[8..], head.len() as u64 + 19).unwrap();
        assert_eq!(back.names(), ["a.0", "b", "c"]);
        assert_eq!(back.tensors, tensors);
        assert_eq!(back.metadata, meta);
        assert!(encode_header(&[e("x", DType::I128, &[1])], &meta).is_err());
        assert!(encode_header(&[e("x", DType::U8, &[1]), e("x", DType::U8, &[1])], &meta).is_err());
    }
}
