//! The numcodecs codecs of Zarr v2 arrays that zarrs does not decode, decoded here:
//! the `lz4` compressor (numcodecs' framing: the decoded length as 4 little-endian
//! bytes, then one LZ4 block) and the `delta` filter (differences of `astype`
//! elements, summed back into `dtype` ones as NumPy's `cumsum` does). An array that
//! uses either has its whole filter chain decoded here, and its compressor too when it
//! is `lz4`; other compressors stay zarrs'.

use serde_json::Value;

use crate::error::{Error, Result};

/// A v2 array's codecs that rastore undoes itself.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// The compressor is numcodecs' `lz4`.
    pub lz4: bool,
    /// The filters, in the order they were applied when encoding.
    pub filters: Vec<Delta>,
}

/// A `delta` filter: `dtype` elements stored as the differences of neighbours, as
/// `astype` elements (the first element as itself).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Delta {
    dtype: Num,
    astype: Num,
}

/// A NumPy number type of a delta filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Num {
    kind: char,
    size: usize,
    big: bool,
}

impl Num {
    fn parse(v: &Value) -> Option<Num> {
        let s = v.as_str()?;
        let (big, rest) = match s.as_bytes().first()? {
            b'>' => (true, &s[1..]),
            b'<' | b'|' | b'=' => (false, &s[1..]),
            _ => (false, s),
        };
        let kind = rest.chars().next()?;
        let size: usize = rest.get(1..)?.parse().ok()?;
        let ok = match kind {
            'i' | 'u' => matches!(size, 1 | 2 | 4 | 8),
            'f' => matches!(size, 4 | 8),
            _ => false,
        };
        ok.then_some(Num { kind, size, big })
    }

    /// The element at `b` (its `size` bytes) as an integer or a float.
    fn read(self, b: &[u8]) -> Acc {
        let mut w = [0u8; 8];
        if self.big {
            w[8 - self.size..].copy_from_slice(b);
            w.reverse();
        } else {
            w[..self.size].copy_from_slice(b);
        }
        let raw = u64::from_le_bytes(w);
        match (self.kind, self.size) {
            ('f', 4) => Acc::Float(f64::from(f32::from_bits(raw as u32))),
            ('f', _) => Acc::Float(f64::from_bits(raw)),
            ('i', n) => {
                let shift = 64 - 8 * n as u32;
                Acc::Int(((raw << shift) as i64 >> shift) as u64)
            }
            _ => Acc::Int(raw),
        }
    }

    /// Writes `v` as this type into `b`, cast as NumPy's `astype` casts.
    fn write(self, v: Acc, b: &mut [u8]) {
        let raw: u64 = match (self.kind, self.size, v) {
            ('f', 4, Acc::Float(x)) => u64::from((x as f32).to_bits()),
            ('f', 4, Acc::Int(i)) => u64::from((i as i64 as f32).to_bits()),
            ('f', _, Acc::Float(x)) => x.to_bits(),
            ('f', _, Acc::Int(i)) => (i as i64 as f64).to_bits(),
            (_, _, Acc::Int(i)) => i,
            ('u', _, Acc::Float(x)) => x as u64,
            (_, _, Acc::Float(x)) => x as i64 as u64,
        };
        let le = raw.to_le_bytes();
        b.copy_from_slice(&le[..self.size]);
        if self.big {
            b.reverse();
        }
    }
}

/// A running sum: integers wrap in 64 bits (NumPy sums small integers in the
/// platform's 64-bit ones), floats add in `f64` or, for `float32` differences, `f32`.
#[derive(Debug, Clone, Copy)]
enum Acc {
    Int(u64),
    Float(f64),
}

impl Delta {
    fn parse(v: &Value) -> Result<Delta> {
        let dtype = Num::parse(&v["dtype"]);
        let astype = if v["astype"].is_null() {
            dtype
        } else {
            Num::parse(&v["astype"])
        };
        match (dtype, astype) {
            (Some(dtype), Some(astype)) if (dtype.kind == 'f') == (astype.kind == 'f') => {
                Ok(Delta { dtype, astype })
            }
            _ => Err(refuse(format!(
                "the delta filter {v} (rastore undoes delta filters of integers, or of floats, \
                 of 1 to 8 bytes)"
            ))),
        }
    }

    /// Bytes of the filtered (encoded) form of `decoded` bytes.
    pub fn encoded_len(&self, decoded: usize) -> usize {
        decoded / self.dtype.size * self.astype.size
    }

    /// Sums the differences in `enc` back into the `dtype` elements they came from.
    pub fn decode(&self, enc: &[u8]) -> Result<Vec<u8>> {
        if !enc.len().is_multiple_of(self.astype.size) {
            return Err(Error::decode(
                "zarr",
                format!(
                    "delta: {} bytes are not whole {}-byte elements",
                    enc.len(),
                    self.astype.size
                ),
            ));
        }
        let n = enc.len() / self.astype.size;
        let mut out = vec![0u8; n * self.dtype.size];
        let narrow = self.astype.kind == 'f' && self.astype.size == 4;
        let mut acc = match self.astype.kind {
            'f' => Acc::Float(0.0),
            _ => Acc::Int(0),
        };
        let pieces = enc.chunks_exact(self.astype.size);
        for (d, dst) in pieces.zip(out.chunks_exact_mut(self.dtype.size)) {
            acc = match (acc, self.astype.read(d)) {
                (Acc::Int(a), Acc::Int(b)) => Acc::Int(a.wrapping_add(b)),
                (Acc::Float(a), Acc::Float(b)) if narrow => {
                    Acc::Float(f64::from(a as f32 + b as f32))
                }
                (Acc::Float(a), Acc::Float(b)) => Acc::Float(a + b),
                (_, b) => b,
            };
            self.dtype.write(acc, dst);
        }
        Ok(out)
    }
}

/// What the `.zarray` document `v` asks of rastore's own decoders: `None` when zarrs
/// decodes the whole chain. When some of it is rastore's, that part is taken out of
/// `v` (`compressor` set to null for `lz4`, `filters` emptied), so that zarrs sees
/// only what it decodes.
pub fn take_v2(v: &mut Value) -> Result<Option<Chain>> {
    let lz4 = v["compressor"]["id"] == "lz4";
    let filters = match v["filters"].as_array() {
        Some(list) if list.iter().any(|f| f["id"] == "delta") => list
            .iter()
            .map(|f| match f["id"].as_str() {
                Some("delta") => Delta::parse(f),
                _ => Err(refuse(format!(
                    "the filter {f} beside a delta filter (rastore undoes delta filters alone)"
                ))),
            })
            .collect::<Result<Vec<_>>>()?,
        _ => Vec::new(),
    };
    if !lz4 && filters.is_empty() {
        return Ok(None);
    }
    if lz4 {
        v["compressor"] = Value::Null;
    }
    if !filters.is_empty() {
        v["filters"] = Value::Null;
    }
    Ok(Some(Chain { lz4, filters }))
}

/// What zarr-python leaves out of a v3 `zarr.json` that zarrs asks for: the `level`
/// of `numcodecs.zlib` (written `{}` at numcodecs' default, 1; decoding needs none).
pub fn fill_in_v3(v: &mut Value) {
    if let Some(codecs) = v["codecs"].as_array_mut() {
        for c in codecs.iter_mut().filter(|c| c["name"] == "numcodecs.zlib") {
            if c["configuration"]["level"].is_null() {
                c["configuration"] = serde_json::json!({"level": 1});
            }
        }
    }
}

/// Decodes numcodecs' LZ4 framing: the decoded length (4 bytes, little-endian), then
/// one block, which must give exactly `want` bytes (checked before anything is
/// allocated by it).
pub fn lz4_decode(stored: &[u8], want: usize) -> Result<Vec<u8>> {
    let bad = |why: String| Error::decode("zarr", format!("lz4: {why}"));
    let (head, block) = stored.split_first_chunk::<4>().ok_or_else(|| {
        bad(format!(
            "{} bytes, shorter than the 4-byte length",
            stored.len()
        ))
    })?;
    let claimed = u32::from_le_bytes(*head) as usize;
    if claimed != want {
        return Err(bad(format!("says {claimed} bytes, a chunk is {want}")));
    }
    crate::codec::lz4_check_ratio(block.len() as u64, want as u64)?;
    let mut out = vec![0u8; want];
    crate::codec::lz4_decode(block, &mut out)?;
    Ok(out)
}

fn refuse(why: String) -> Error {
    super::refuse(why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn delta_sums_back_as_numpy_cumsum() {
        // int32 data stored as int16 differences: [5, 7, 6, 40000] -> [5, 2, -1, 39994].
        let d = Delta::parse(&json!({"id": "delta", "dtype": "<i4", "astype": "<i2"})).unwrap();
        let enc: Vec<u8> = [5i16, 2, -1, 39994u16 as i16]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let out: Vec<i32> = d
            .decode(&enc)
            .unwrap()
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(out, [5, 7, 6, 6 + 39994 - 65536]);
        let f = Delta::parse(&json!({"id": "delta", "dtype": ">f8"})).unwrap();
        let enc: Vec<u8> = [1.5f64, 0.25, -2.0]
            .iter()
            .flat_map(|x| x.to_be_bytes())
            .collect();
        let out: Vec<f64> = f
            .decode(&enc)
            .unwrap()
            .chunks_exact(8)
            .map(|c| f64::from_be_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(out, [1.5, 1.75, -0.25]);
        assert!(Delta::parse(&json!({"id": "delta", "dtype": "<i4", "astype": "<f4"})).is_err());
    }

    #[test]
    fn only_lz4_and_delta_are_taken() {
        let mut v = json!({"compressor": {"id": "zlib", "level": 1}, "filters": null});
        assert_eq!(take_v2(&mut v).unwrap(), None);
        let mut v = json!({"compressor": {"id": "lz4", "acceleration": 1},
                           "filters": [{"id": "delta", "dtype": "<u2"}]});
        let chain = take_v2(&mut v).unwrap().unwrap();
        assert!(chain.lz4 && chain.filters.len() == 1);
        assert!(v["compressor"].is_null() && v["filters"].is_null());
        let mut v = json!({"filters": [{"id": "delta", "dtype": "<u2"}, {"id": "quantize"}]});
        assert!(take_v2(&mut v).is_err());
    }

    #[test]
    fn lz4_checks_the_length_before_decoding() {
        let data = vec![7u8; 1000];
        let mut framed = (data.len() as u32).to_le_bytes().to_vec();
        framed.extend(crate::codec::lz4_encode(&data));
        assert_eq!(lz4_decode(&framed, 1000).unwrap(), data);
        assert!(lz4_decode(&framed, 999).is_err());
        assert!(lz4_decode(&framed[..3], 1000).is_err());
    }
}
