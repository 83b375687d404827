//! Where a dataset's data lies: contiguous (one run at an offset of the file, read in
//! place as a `.npy`'s data is), compact (in its object header), never written (its
//! fill value), or chunked: then a [`ChunkTable`], a Zarr v2 array whose chunks are
//! byte ranges of the file, its codecs the dataset's filters in their order (deflate
//! as numcodecs' `zlib`, `shuffle`, `fletcher32`), which zarrs decodes and kerchunk
//! readers read.

use std::collections::BTreeMap;

use hdf5_reader::chunk_index::{self, ChunkEntry};
use hdf5_reader::error::Result as H5Result;
use hdf5_reader::io::Cursor;
use hdf5_reader::messages::layout::{ChunkIndexing, DataLayout};
use hdf5_reader::Storage;
use serde_json::{json, Value};

use super::dtype::{number, Number};
use super::links::Sizes;
use crate::descr::Descr;
use crate::formats::zarr::ChunkTable;

/// How a dataset's data is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// One run of bytes from `offset` of the file (the superblock's base added).
    Contiguous { offset: u64 },
    /// Never written (no address): every element is the fill value.
    Unwritten,
    /// In the object header.
    Compact(Vec<u8>),
    /// Chunks of `chunk` (the dataset's dims), indexed from `address` (relative to
    /// the superblock's base, undefined when no chunk was written).
    Chunked {
        chunk: Vec<u32>,
        address: u64,
        indexing: Option<ChunkIndexing>,
    },
}

impl Layout {
    /// The layout a data layout message gives, for a dataset of `rank` dims in a
    /// file whose addresses start at `base`.
    pub fn of(dl: &DataLayout, rank: usize, base: u64, sizes: Sizes) -> Layout {
        match dl {
            DataLayout::Compact { data } => Layout::Compact(data.clone()),
            DataLayout::Contiguous { address, .. } => {
                if Cursor::is_undefined_offset(*address, sizes.offset) {
                    Layout::Unwritten
                } else {
                    Layout::Contiguous {
                        offset: address.saturating_add(base),
                    }
                }
            }
            DataLayout::Chunked {
                address,
                dims,
                chunk_indexing,
                ..
            } => {
                // Layout messages before version 4 count the element as a last dim.
                let mut chunk = dims.clone();
                if chunk.len() == rank + 1 {
                    chunk.pop();
                }
                Layout::Chunked {
                    chunk,
                    address: *address,
                    indexing: chunk_indexing.clone(),
                }
            }
        }
    }

    /// The chunk index's name, as `h5ls -v` and the HDF5 docs name it.
    pub fn index_name(indexing: Option<&ChunkIndexing>) -> &'static str {
        match indexing {
            None => "B-tree v1",
            Some(ChunkIndexing::SingleChunk { .. }) => "single chunk",
            Some(ChunkIndexing::Implicit) => "implicit",
            Some(ChunkIndexing::FixedArray { .. }) => "fixed array",
            Some(ChunkIndexing::ExtensibleArray { .. }) => "extensible array",
            Some(ChunkIndexing::BTreeV2) => "B-tree v2",
        }
    }
}

/// A filter of a dataset's pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// The HDF5 filter id.
    pub id: u16,
    /// Its client data.
    pub client_data: Vec<u32>,
}

impl Filter {
    /// The filter's name, as HDF5 and its registered plugins name it.
    pub fn name(&self) -> String {
        match self.id {
            1 => "deflate".into(),
            2 => "shuffle".into(),
            3 => "fletcher32".into(),
            4 => "szip".into(),
            5 => "nbit".into(),
            6 => "scaleoffset".into(),
            307 => "bzip2".into(),
            32000 => "lzf".into(),
            32001 => "blosc".into(),
            32004 => "lz4".into(),
            32008 => "bitshuffle".into(),
            32015 => "zstd".into(),
            32026 => "blosc2".into(),
            id => format!("filter {id}"),
        }
    }

    /// The numcodecs codec (Zarr v2) that undoes it, for elements of `itemsize`
    /// bytes; `None` for a filter rastore does not decode.
    pub fn codec(&self, itemsize: u64) -> Option<Value> {
        match self.id {
            1 => Some(
                json!({"id": "zlib", "level": self.client_data.first().copied().unwrap_or(6).min(9)}),
            ),
            2 => Some(json!({"id": "shuffle", "elementsize": itemsize})),
            3 => Some(json!({"id": "fletcher32"})),
            _ => None,
        }
    }
}

/// HDF5's Fletcher-32 checksum of `data` (`H5_checksum_fletcher32`): 16-bit words,
/// big-endian, an odd last byte as the high byte of a last word.
pub fn fletcher32(data: &[u8]) -> u32 {
    let (mut sum1, mut sum2) = (0u32, 0u32);
    let words = data.chunks(2).map(|w| match w {
        [a, b] => (u32::from(*a) << 8) | u32::from(*b),
        [a] => u32::from(*a) << 8,
        _ => 0,
    });
    let mut n = 0;
    for w in words {
        sum1 += w;
        sum2 += sum1;
        n += 1;
        if n == 360 {
            sum1 = (sum1 & 0xffff) + (sum1 >> 16);
            sum2 = (sum2 & 0xffff) + (sum2 >> 16);
            n = 0;
        }
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
    (sum2 << 16) | sum1
}

/// `chunk` (a stored chunk whose last filter is fletcher32) without its checksum,
/// once checked: HDF5 stores it little-endian after the data (files of old big-endian
/// writers, byte-swapped: HDF5 takes both).
pub fn strip_fletcher32(mut chunk: Vec<u8>) -> Result<Vec<u8>, String> {
    let Some(at) = chunk.len().checked_sub(4) else {
        return Err(format!(
            "a chunk of {} bytes, too short for its fletcher32 checksum",
            chunk.len()
        ));
    };
    let stored = u32::from_le_bytes([chunk[at], chunk[at + 1], chunk[at + 2], chunk[at + 3]]);
    let sum = fletcher32(&chunk[..at]);
    let reversed =
        ((sum & 0xff) << 24) | ((sum & 0xff00) << 8) | ((sum >> 8) & 0xff00) | (sum >> 24);
    if stored != sum && stored != reversed {
        return Err(format!(
            "a chunk's fletcher32 checksum is {stored:#010x}, its bytes sum to {sum:#010x}"
        ));
    }
    chunk.truncate(at);
    Ok(chunk)
}

/// The stored chunks of a chunked dataset of `shape` (h5py's), read from its chunk
/// index at `address` (relative to the file's base).
pub fn entries(
    storage: &dyn Storage,
    sizes: Sizes,
    (shape, max_shape): (&[u64], Option<&[u64]>),
    (chunk, address, indexing): (&[u32], u64, Option<&ChunkIndexing>),
    itemsize: u64,
) -> H5Result<Vec<ChunkEntry>> {
    if Cursor::is_undefined_offset(address, sizes.offset) {
        return Ok(Vec::new());
    }
    let (os, ls) = (sizes.offset, sizes.length);
    let ndim = shape.len();
    let chunk_bytes = chunk
        .iter()
        .try_fold(itemsize, |a, &c| a.checked_mul(u64::from(c)))
        .unwrap_or(u64::MAX);
    let mut list = match indexing {
        None => hdf5_reader::btree_v1::collect_btree_v1_leaves_storage(
            storage,
            address,
            os,
            ls,
            Some(ndim as u32),
            chunk,
            None,
        )?
        .into_iter()
        .filter_map(|(k, a)| match k {
            hdf5_reader::btree_v1::BTreeV1Key::RawData {
                chunk_size,
                filter_mask,
                offsets,
            } => Some(ChunkEntry {
                address: a,
                size: u64::from(chunk_size),
                filter_mask,
                offsets: offsets.into_iter().take(ndim).collect(),
            }),
            _ => None,
        })
        .collect(),
        Some(ChunkIndexing::SingleChunk {
            filtered_size,
            filters,
        }) => vec![chunk_index::single_chunk_entry(
            address,
            *filtered_size,
            *filters,
            ndim,
        )],
        Some(ChunkIndexing::Implicit) => chunk_index::collect_implicit_chunk_entries(
            address,
            shape,
            chunk,
            usize::try_from(itemsize).unwrap_or(usize::MAX),
            None,
            storage.len(),
        )?,
        Some(ChunkIndexing::FixedArray { .. }) => {
            hdf5_reader::fixed_array::collect_fixed_array_chunk_entries_storage(
                storage, address, os, ls, shape, chunk, None,
            )?
        }
        Some(ChunkIndexing::ExtensibleArray { .. }) => {
            hdf5_reader::extensible_array::collect_extensible_array_chunk_entries_storage(
                storage, address, os, ls, shape, max_shape, chunk, None,
            )?
        }
        Some(ChunkIndexing::BTreeV2) => chunk_index::collect_v2_chunk_entries_storage(
            storage,
            address,
            os,
            ls,
            ndim as u32,
            chunk,
            None,
        )?,
    };
    // Unfiltered chunks of the single-chunk and implicit indexes record no size.
    for e in &mut list {
        if e.size == 0 {
            e.size = chunk_bytes;
        }
    }
    Ok(list)
}

/// A dataset's chunk layout as Zarr v2 sees it.
pub struct Grid<'a> {
    /// The array's shape, h5py's (C order, an array type's dims appended).
    pub shape: &'a [u64],
    /// The chunk shape, likewise.
    pub chunk: &'a [u64],
    /// The dataset's own dims (the chunk index's), before an array type's.
    pub own: usize,
    /// The element.
    pub descr: &'a Descr,
    /// MATLAB's view: shape, chunks and keys reversed, the chunks read in F order.
    pub reversed: bool,
    /// Where the file's addresses start (its user block's length), and its length.
    pub base: u64,
    pub len: u64,
}

/// Why a chunk table cannot be made: malformed (`field`, `detail`), or refused by
/// name.
#[derive(Debug)]
pub enum TableError {
    Malformed(String, String),
    Refused(String),
}

/// The [`ChunkTable`] of a dataset of `grid`, its `filters` and its fill value's
/// bytes (`fill`, in the file's byte order), from its stored `entries`. With
/// `unchecked_last`, a last fletcher32 filter is left out of the codecs (its reader
/// checks and strips the checksum: zarrs 0.23 sums an odd-length chunk wrongly).
pub fn table(
    grid: &Grid<'_>,
    (filters, unchecked_last): (&[Filter], bool),
    fill: Option<&[u8]>,
    entries: &[ChunkEntry],
    zattrs: Value,
) -> Result<ChunkTable, TableError> {
    let itemsize = grid.descr.itemsize().unwrap_or(1);
    let mut codecs = Vec::new();
    let decoded = match filters.split_last() {
        Some((last, rest)) if unchecked_last && last.id == 3 => rest,
        _ => filters,
    };
    for f in decoded {
        match f.codec(itemsize) {
            Some(c) => codecs.push(c),
            None => {
                return Err(TableError::Refused(format!(
                    "the {} filter (rastore decodes deflate, shuffle and fletcher32; h5py \
                     reads it with its plugin, or h5repack -f NONE writes it unfiltered)",
                    f.name()
                )))
            }
        }
    }
    let n = grid.shape.len();
    let own = grid.own.min(n);
    let mut chunks = BTreeMap::new();
    for e in entries {
        let offsets = e.offsets.get(..own).unwrap_or(&e.offsets);
        if let Some(k) = (0..filters.len()).find(|&k| e.filter_mask & (1 << k.min(31)) != 0) {
            return Err(TableError::Refused(format!(
                "a chunk at {offsets:?} stored without its {} filter (rastore reads \
                 chunks that went through the whole pipeline)",
                filters[k].name()
            )));
        }
        let mut index = Vec::with_capacity(n);
        let mut outside = false;
        for (k, &o) in offsets.iter().enumerate() {
            let c = grid.chunk.get(k).copied().unwrap_or(1).max(1);
            if o % c != 0 {
                return Err(TableError::Malformed(
                    "chunk index".into(),
                    format!(
                        "a chunk at {offsets:?} is not on the grid of {:?}",
                        grid.chunk
                    ),
                ));
            }
            outside |= o >= grid.shape.get(k).copied().unwrap_or(0);
            index.push(o / c);
        }
        if index.len() != own || outside {
            // Chunks of a dataset made smaller stay in its index: not read.
            continue;
        }
        index.resize(n, 0);
        if grid.reversed {
            index.reverse();
        }
        let start = e.address.checked_add(grid.base);
        let end = start.and_then(|s| s.checked_add(e.size));
        let (Some(start), Some(end)) = (start, end) else {
            return Err(TableError::Malformed(
                "chunk index".into(),
                format!("a chunk at {offsets:?} overflows the address space"),
            ));
        };
        if end > grid.len {
            return Err(TableError::Malformed(
                "chunk index".into(),
                format!(
                    "the chunk at {offsets:?} ({} bytes at {start}) runs past the end of \
                     the file ({} bytes)",
                    e.size, grid.len
                ),
            ));
        }
        let key: Vec<String> = index.iter().map(u64::to_string).collect();
        let key = if key.is_empty() {
            "0".to_string()
        } else {
            key.join(".")
        };
        if chunks.insert(key, start..end).is_some() {
            return Err(TableError::Malformed(
                "chunk index".into(),
                format!("two chunks at {offsets:?}"),
            ));
        }
    }
    let (mut shape, mut chunk) = (grid.shape.to_vec(), grid.chunk.to_vec());
    if grid.reversed {
        shape.reverse();
        chunk.reverse();
    }
    let zarray = json!({
        "zarr_format": 2,
        "shape": shape,
        "chunks": chunk,
        "dtype": v2_dtype(grid.descr),
        "order": if grid.reversed { "F" } else { "C" },
        "fill_value": fill_json(grid.descr, fill),
        "compressor": null,
        "filters": if codecs.is_empty() { Value::Null } else { Value::Array(codecs) },
    });
    Ok(ChunkTable {
        zarray,
        zattrs,
        chunks,
    })
}

/// The Zarr v2 (NumPy) type string of `descr`: its own for numbers, Bools and bytes,
/// `|V{n}` for a structured type (read as raw bytes, as a `.ra` holds them).
fn v2_dtype(descr: &Descr) -> String {
    match descr {
        Descr::Simple { order, kind, count } => format!("{order}{kind}{count}"),
        Descr::Struct(_) => format!("|V{}", descr.itemsize().unwrap_or(1)),
    }
}

/// The Zarr v2 `fill_value` of a number type from its bytes (`fill`, in its byte
/// order; zero when there are none); `null` (zeros) for other types.
pub fn fill_json(descr: &Descr, fill: Option<&[u8]>) -> Value {
    let Descr::Simple { order, kind, count } = descr else {
        return Value::Null;
    };
    let zeros = vec![0u8; *count as usize];
    let bytes = fill.filter(|b| b.len() as u64 >= *count).unwrap_or(&zeros);
    let float = |x: f64| match serde_json::Number::from_f64(x) {
        Some(num) => Value::Number(num),
        None if x.is_nan() => json!("NaN"),
        None if x > 0.0 => json!("Infinity"),
        None => json!("-Infinity"),
    };
    match number(*order, *kind, *count, bytes) {
        Some(Number::Bool(b)) => json!(b),
        Some(Number::Int(i)) => json!(i),
        Some(Number::UInt(u)) => json!(u),
        Some(Number::Float(x)) => float(x),
        Some(Number::Complex(re, im)) => json!([float(re), float(im)]),
        None => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_values_as_zarr_names_them() {
        let d = |s: &str| Descr::parse(&format!("'{s}'")).unwrap();
        assert_eq!(
            fill_json(&d("<i2"), Some(&(-3i16).to_le_bytes())),
            json!(-3)
        );
        assert_eq!(
            fill_json(&d(">i4"), Some(&(-3i32).to_be_bytes())),
            json!(-3)
        );
        assert_eq!(
            fill_json(&d("<f4"), Some(&f32::NAN.to_le_bytes())),
            json!("NaN")
        );
        assert_eq!(
            fill_json(&d(">f8"), Some(&2.5f64.to_be_bytes())),
            json!(2.5)
        );
        assert_eq!(fill_json(&d("|b1"), None), json!(false));
        let mut c = 1.5f32.to_be_bytes().to_vec();
        c.extend((-2f32).to_be_bytes());
        assert_eq!(fill_json(&d(">c8"), Some(&c)), json!([1.5, -2.0]));
        assert_eq!(fill_json(&d("|S3"), Some(b"abc")), Value::Null);
    }

    #[test]
    fn fletcher32_is_hdf5s_for_odd_lengths_too() {
        // H5_checksum_fletcher32 of "abcde": words 0x6162, 0x6364, 0x6500.
        let (s1, s2) = (
            0x6162u32 + 0x6364 + 0x6500,
            0x6162u32 * 3 + 0x6364 * 2 + 0x6500,
        );
        let fold = |x: u32| (x & 0xffff) + (x >> 16);
        assert_eq!(
            fletcher32(b"abcde"),
            (fold(fold(s2)) << 16) | fold(fold(s1))
        );
        let mut chunk = b"abcde".to_vec();
        chunk.extend(fletcher32(b"abcde").to_le_bytes());
        assert_eq!(strip_fletcher32(chunk.clone()).unwrap(), b"abcde");
        chunk[0] ^= 1;
        assert!(strip_fletcher32(chunk).is_err());
        assert!(strip_fletcher32(vec![1, 2]).is_err());
    }

    #[test]
    fn chunks_are_keyed_on_the_grid_and_checked_against_the_file() {
        let descr = Descr::parse("'<i4'").unwrap();
        let grid = Grid {
            shape: &[5, 4],
            chunk: &[2, 3],
            own: 2,
            descr: &descr,
            reversed: false,
            base: 512,
            len: 2000,
        };
        let e = |o: [u64; 2], a, s| ChunkEntry {
            address: a,
            size: s,
            filter_mask: 0,
            offsets: o.to_vec(),
        };
        let filters = [
            Filter {
                id: 2,
                client_data: vec![4],
            },
            Filter {
                id: 1,
                client_data: vec![4],
            },
        ];
        let t = table(
            &grid,
            (&filters, false),
            Some(&7i32.to_le_bytes()),
            &[e([0, 0], 0, 10), e([2, 3], 10, 10), e([6, 0], 20, 10)],
            json!({}),
        )
        .unwrap();
        assert_eq!(t.chunks.len(), 2, "the chunk past the shape is left out");
        assert_eq!(t.chunks["1.1"], 522..532);
        assert_eq!(t.zarray["filters"][0]["id"], "shuffle");
        assert_eq!(t.zarray["filters"][1]["id"], "zlib");
        assert_eq!(t.zarray["fill_value"], 7);
        let past = table(&grid, (&[], false), None, &[e([0, 0], 1480, 10)], json!({}));
        assert!(matches!(past, Err(TableError::Malformed(..))));
        let odd = table(&grid, (&[], false), None, &[e([1, 0], 0, 10)], json!({}));
        assert!(matches!(odd, Err(TableError::Malformed(..))));
        let mut skipped = e([0, 0], 0, 10);
        skipped.filter_mask = 2;
        let r = table(&grid, (&filters, false), None, &[skipped], json!({}));
        assert!(matches!(r, Err(TableError::Refused(m)) if m.contains("deflate")));
        let lzf = Filter {
            id: 32000,
            client_data: vec![],
        };
        let r = table(&grid, (&[lzf], false), None, &[], json!({}));
        assert!(matches!(r, Err(TableError::Refused(m)) if m.contains("lzf")));
        let matlab = Grid {
            reversed: true,
            ..grid
        };
        let t = table(&matlab, (&[], false), None, &[e([2, 0], 0, 24)], json!({})).unwrap();
        assert!(t.chunks.contains_key("0.1"), "{:?}", t.chunks);
        assert_eq!(t.zarray["shape"], json!([4, 5]));
        assert_eq!(t.zarray["order"], "F");
    }
}
