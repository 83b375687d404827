//! Zarr over chunks that lie in another format's file: [`ChunkTable`], an array whose
//! chunks are byte ranges of one file, each encoded by the same codecs (an HDF5
//! dataset's chunks: deflate, shuffle, fletcher32), described as a Zarr v2 array, as
//! kerchunk and VirtualiZarr describe them. [`TableStorage`] serves it to zarrs, which
//! decodes the chunks (a chunk not in the table is the fill value), and
//! [`ChunkTable::references`] hands the ranges to a kerchunk reader. Nothing is
//! written: the storage refuses writes.

use std::collections::BTreeMap;
use std::ops::Range;

use serde_json::{json, Map, Value};
use zarrs::storage::byte_range::ByteRangeIterator;
use zarrs::storage::{
    Bytes, MaybeBytes, MaybeBytesIterator, ReadableStorageTraits, StorageError, StoreKey,
    StorePrefix, WritableStorageTraits,
};

use super::ra_storage::ranges_of;
use super::ReadRange;

/// An array whose chunks are byte ranges of one file.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkTable {
    /// `.zarray` (Zarr v2): `shape`, `chunks`, `dtype`, `order`, `fill_value`,
    /// `compressor` and `filters`.
    pub zarray: Value,
    /// `.zattrs`: the array's attributes (and `_ARRAY_DIMENSIONS`).
    pub zattrs: Value,
    /// Each stored chunk by its Zarr v2 key (`0.1.2`; `0` for a 0-d array), and where
    /// its encoded bytes lie in the file. A chunk not here is the fill value.
    pub chunks: BTreeMap<String, Range<u64>>,
}

impl ChunkTable {
    /// kerchunk v1 references: a Zarr v2 group holding the array as `name` (at the
    /// root when `name` is empty), each stored chunk `[url, offset, length]`.
    pub fn references(&self, url: &str, name: &str) -> Value {
        let chunks = self.chunks.iter().map(|(key, r)| {
            let at = json!([url, r.start, r.end - r.start]);
            (key.clone(), at)
        });
        kerchunk(name, (&self.zarray, &self.zattrs), chunks)
    }
}

/// kerchunk v1 references of a Zarr v2 array of metadata `zarray` and `zattrs`, held
/// as `name` in a group (at the root when `name` is empty), each of its `chunks` by
/// its key: `[url, offset, length]`, or its bytes inline.
pub(crate) fn kerchunk(
    name: &str,
    (zarray, zattrs): (&Value, &Value),
    chunks: impl IntoIterator<Item = (String, Value)>,
) -> Value {
    let prefix = match name {
        "" => String::new(),
        n => format!("{n}/"),
    };
    let text = |v: &Value| Value::String(v.to_string());
    let mut refs = Map::new();
    if !name.is_empty() {
        refs.insert(".zgroup".into(), text(&json!({"zarr_format": 2})));
    }
    refs.insert(format!("{prefix}.zarray"), text(zarray));
    refs.insert(format!("{prefix}.zattrs"), text(zattrs));
    for (key, at) in chunks {
        refs.insert(format!("{prefix}{key}"), at);
    }
    json!({"version": 1, "refs": refs})
}

/// A [`ChunkTable`] as a zarrs storage holding its array at the root (`.zarray`,
/// `.zattrs`, the chunks), each chunk read through a [`ReadRange`].
pub struct TableStorage {
    zarray: Bytes,
    zattrs: Bytes,
    chunks: BTreeMap<String, Range<u64>>,
    read: ReadRange,
}

impl TableStorage {
    /// The storage of `table`, its chunks read through `read`.
    pub fn new(table: ChunkTable, read: ReadRange) -> TableStorage {
        TableStorage {
            zarray: Bytes::from(table.zarray.to_string().into_bytes()),
            zattrs: Bytes::from(table.zattrs.to_string().into_bytes()),
            chunks: table.chunks,
            read,
        }
    }

    fn value(&self, key: &StoreKey) -> std::result::Result<Option<Bytes>, StorageError> {
        match key.as_str() {
            ".zarray" => Ok(Some(self.zarray.clone())),
            ".zattrs" => Ok(Some(self.zattrs.clone())),
            k => match self.chunks.get(k) {
                Some(r) => (self.read)(r.clone())
                    .map(|b| Some(Bytes::from(b)))
                    .map_err(|e| StorageError::Other(e.to_string())),
                None => Ok(None),
            },
        }
    }
}

impl ReadableStorageTraits for TableStorage {
    fn get(&self, key: &StoreKey) -> std::result::Result<MaybeBytes, StorageError> {
        self.value(key)
    }

    fn get_partial_many<'a>(
        &'a self,
        key: &StoreKey,
        byte_ranges: ByteRangeIterator<'a>,
    ) -> std::result::Result<MaybeBytesIterator<'a>, StorageError> {
        Ok(self
            .value(key)?
            .and_then(|value| ranges_of(value, byte_ranges)))
    }

    fn size_key(&self, key: &StoreKey) -> std::result::Result<Option<u64>, StorageError> {
        Ok(match key.as_str() {
            ".zarray" => Some(self.zarray.len() as u64),
            ".zattrs" => Some(self.zattrs.len() as u64),
            k => self.chunks.get(k).map(|r| r.end - r.start),
        })
    }

    fn supports_get_partial(&self) -> bool {
        false
    }
}

/// The error of every write: the file is read in place, never written.
fn read_only() -> StorageError {
    StorageError::Other("chunks read in place from another format's file are read-only".into())
}

impl WritableStorageTraits for TableStorage {
    fn set(&self, _key: &StoreKey, _value: Bytes) -> std::result::Result<(), StorageError> {
        Err(read_only())
    }

    fn set_partial_many(
        &self,
        _key: &StoreKey,
        _offset_values: zarrs::storage::OffsetBytesIterator,
    ) -> std::result::Result<(), StorageError> {
        Err(read_only())
    }

    fn erase(&self, _key: &StoreKey) -> std::result::Result<(), StorageError> {
        Err(read_only())
    }

    fn erase_prefix(&self, _prefix: &StorePrefix) -> std::result::Result<(), StorageError> {
        Err(read_only())
    }

    fn supports_set_partial(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;
    use crate::error::Result;
    use crate::formats::zarr::ZarrInput;

    /// A 5×4 array of i32 in chunks of 2×3, each zlib-compressed after a 4-byte
    /// shuffle and laid end to end in one buffer; chunk (1, 1) left out.
    fn table() -> (ChunkTable, Vec<u8>, Vec<i32>) {
        let values: Vec<i32> = (0..20).map(|i| i * 7 - 30).collect();
        let mut file = vec![0xAAu8; 3];
        let mut chunks = BTreeMap::new();
        for (ci, cj) in [(0u64, 0u64), (0, 1), (1, 0), (2, 0), (2, 1)] {
            let mut chunk = [0i32; 6];
            for a in 0..2 {
                for b in 0..3 {
                    let (i, j) = (ci * 2 + a, cj * 3 + b);
                    if i < 5 && j < 4 {
                        chunk[(a * 3 + b) as usize] = values[(i * 4 + j) as usize];
                    }
                }
            }
            let raw: Vec<u8> = chunk.iter().flat_map(|v| v.to_le_bytes()).collect();
            let mut shuffled = vec![0u8; raw.len()];
            for (e, el) in raw.chunks(4).enumerate() {
                for (k, b) in el.iter().enumerate() {
                    shuffled[k * 6 + e] = *b;
                }
            }
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(4));
            z.write_all(&shuffled).unwrap();
            let encoded = z.finish().unwrap();
            let start = file.len() as u64;
            file.extend_from_slice(&encoded);
            chunks.insert(format!("{ci}.{cj}"), start..file.len() as u64);
        }
        let zarray = json!({
            "zarr_format": 2, "shape": [5, 4], "chunks": [2, 3], "dtype": "<i4",
            "order": "C", "fill_value": -1, "compressor": {"id": "zlib", "level": 4},
            "filters": [{"id": "shuffle", "elementsize": 4}],
        });
        let mut expected = values.clone();
        for i in 2..4 {
            expected[i * 4 + 3] = -1;
        }
        let table = ChunkTable {
            zarray,
            zattrs: json!({"units": "K"}),
            chunks,
        };
        (table, file, expected)
    }

    #[test]
    fn zarrs_decodes_the_chunks_and_fills_the_missing_one() {
        let (table, file, expected) = table();
        let file = std::sync::Arc::new(file);
        let read: ReadRange = Box::new(move |r: Range<u64>| -> Result<Vec<u8>> {
            Ok(file[r.start as usize..r.end as usize].to_vec())
        });
        let input = ZarrInput::open_table(table, read, "t.h5/x".into()).unwrap();
        assert_eq!(input.dims(), &[5, 4]);
        let mut out = vec![0u8; 20 * 4];
        input.read_box(&[0, 0], &[5, 4], &mut out).unwrap();
        // read_box gives column-major bytes: element (i, j) at j * 5 + i.
        for i in 0..5 {
            for j in 0..4 {
                let k = (j * 5 + i) * 4;
                let v = i32::from_le_bytes(out[k..k + 4].try_into().unwrap());
                assert_eq!(v, expected[i * 4 + j], "({i}, {j})");
            }
        }
    }

    #[test]
    fn references_name_each_stored_chunk() {
        let (table, _, _) = table();
        let refs = table.references("/d/t.h5", "x");
        assert_eq!(refs["refs"]["x/0.1"][0], "/d/t.h5");
        let r = &table.chunks["0.1"];
        assert_eq!(refs["refs"]["x/0.1"][1], r.start);
        assert_eq!(refs["refs"]["x/0.1"][2], r.end - r.start);
        assert!(refs["refs"].get("x/1.1").is_none());
        assert_eq!(refs["refs"][".zgroup"], r#"{"zarr_format":2}"#);
    }
}
