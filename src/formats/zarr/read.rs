//! Zarr (v3 or v2) → `.ra`: the metadata read and checked by us, the chunks decoded by
//! zarrs in parallel and placed into a preallocated mapping of the output.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};
use zarrs::array::{
    Array, ArrayBytes, ArrayMetadata, ArrayMetadataV2, ArrayMetadataV3, CodecOptions,
};
use zarrs::plugin::{ExtensionName, ZarrVersion};
use zarrs::storage::ReadableWritableStorageTraits;

use super::meta::{self, Elem, Reading};
use super::numcodecs;
use super::store::{self, Location, Store};
use super::table::{ChunkTable, TableStorage};
use super::ReadRange;
use super::{bytes_of, refuse, zarr_err, GridIndices, Region};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::header::Header;

/// Largest metadata document read (`zarr.json`, `.zarray`, `.zattrs`).
const MAX_METADATA: usize = 16 << 20;

/// Largest chunk decoded: a store whose chunks claim more is refused before any is.
const MAX_CHUNK_BYTES: u64 = 4 << 30;

/// An opened Zarr array, its metadata checked.
pub struct ZarrInput {
    array: Array<dyn ReadableWritableStorageTraits>,
    shown: PathBuf,
    elem: Elem,
    dims: Vec<u64>,
    chunk: Vec<u64>,
    attributes: Map<String, Value>,
    /// The dimension names (v3 `dimension_names`, v2 `_ARRAY_DIMENSIONS`).
    names: Option<Vec<String>>,
    /// How it is read: which of its names stand for no labels.
    reading: Reading,
    /// The codecs of a v2 array that rastore undoes itself (numcodecs' `lz4`, `delta`),
    /// with the chunks' order (F) and byte order (big) that zarrs then does not undo.
    own: Option<(numcodecs::Chain, bool, bool)>,
    /// The stored chunks are the column-major elements themselves once their
    /// bytes-to-bytes codecs are undone (`transpose` to `[n-1, …, 0]` and little-endian
    /// `bytes`, or a 1-d or 0-d array with plain `bytes`).
    column_major: bool,
    /// Column-major chunks whose one bytes-to-bytes codec is zstd: decompressed
    /// straight into the output.
    zstd_only: bool,
    /// A v2 array's `fill_value`, which xarray takes as its `_FillValue`.
    v2_fill: Option<Value>,
}

fn get(store: &Store, name: &str, shown: &Path) -> Result<Option<Vec<u8>>> {
    let key = store.key(name)?;
    let bytes = store
        .storage
        .get(&key)
        .map_err(|e| zarr_err(shown, None, format!("{name}: {e}")))?;
    match bytes {
        Some(b) if b.len() > MAX_METADATA => Err(zarr_err(
            shown,
            None,
            format!("{name} is {} bytes, more than metadata can be", b.len()),
        )),
        b => Ok(b.map(|b| b.to_vec())),
    }
}

fn parse(bytes: &[u8], name: &str, shown: &Path) -> Result<Value> {
    serde_json::from_slice(bytes)
        .map_err(|e| zarr_err(shown, None, format!("{name} is not JSON: {e}")))
}

/// The extents a JSON list holds, each a whole number.
fn extents(v: &Value, what: &str, shown: &Path) -> Result<Vec<u64>> {
    v.as_array()
        .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
        .ok_or_else(|| {
            zarr_err(
                shown,
                None,
                format!("{what} {v} is not a list of whole numbers"),
            )
        })
}

impl ZarrInput {
    /// Opens the Zarr array at `location` (`zarr.json`, else `.zarray` with `.zattrs`).
    pub fn open(location: &Location) -> Result<ZarrInput> {
        Self::open_in(store::open(location, None)?, location.shown(), false)
    }

    /// Opens an array from in-memory `files` (`("zarr.json", bytes)`, chunks by key):
    /// the fuzz target's store.
    #[cfg(feature = "fuzzing")]
    #[doc(hidden)]
    pub fn open_in_memory(files: &[(&str, &[u8])]) -> Result<ZarrInput> {
        let memory = zarrs::storage::store::MemoryStore::new();
        for (key, bytes) in files {
            let key = zarrs::storage::StoreKey::new(*key)
                .map_err(|e| crate::error::ErrorKind::InvalidArgument(e.to_string()))?;
            zarrs::storage::WritableStorageTraits::set(&memory, &key, bytes.to_vec().into())
                .map_err(|e| zarr_err(Path::new("memory"), None, e))?;
        }
        let store = Store {
            storage: std::sync::Arc::new(memory),
            node: "/".into(),
        };
        Self::open_in(store, "memory".into(), false)
    }

    /// Opens the array of a [`ChunkTable`], its chunks read through `read` (an HDF5
    /// dataset's chunks in its file); `shown` names it in messages.
    pub fn open_table(table: ChunkTable, read: ReadRange, shown: PathBuf) -> Result<ZarrInput> {
        let store = Store {
            storage: std::sync::Arc::new(TableStorage::new(table, read)),
            node: "/".into(),
        };
        Self::open_in(store, shown, false)
    }

    fn open_in(store: Store, shown: PathBuf, in_group: bool) -> Result<ZarrInput> {
        let mut own = None;
        let mut v2_fill = None;
        let (meta, elem, dims, chunk, attributes, names) =
            if let Some(b) = get(&store, "zarr.json", &shown)? {
                let mut v = parse(&b, "zarr.json", &shown)?;
                if v["node_type"] == "group" {
                    // A group of one array (as `ra convert` writes one) is that array.
                    return match (super::group::only_array(&v), in_group) {
                        (Ok(name), false) => {
                            let node = format!("{}/{name}", store.node.trim_end_matches('/'));
                            let store = Store {
                                storage: store.storage.clone(),
                                node,
                            };
                            let mut only = Self::open_in(store, shown.join(&name), true)?;
                            only.reading = Reading::OnlyOf(name);
                            Ok(only)
                        }
                        (Ok(_), true) => Err(zarr_err(&shown, None, "a group in a group")),
                        (Err(why), _) => Err(zarr_err(&shown, None, why)),
                    };
                }
                let elem = meta::elem_v3(&v["data_type"]).map_err(|e| e.at(&shown))?;
                let dims = extents(&v["shape"], "shape", &shown)?;
                let grid = &v["chunk_grid"];
                if grid["name"] != "regular" {
                    return Err(refuse(format!(
                        "{}: the chunk grid {} (rastore reads regular grids)",
                        shown.display(),
                        grid["name"]
                    )));
                }
                let chunk = extents(&grid["configuration"]["chunk_shape"], "chunk_shape", &shown)?;
                let mut attributes = v["attributes"].as_object().cloned().unwrap_or_default();
                if let Elem::Plain(d) = elem {
                    meta::decode_fill_attribute(&mut attributes, d);
                }
                // A trailer kept aside counts as one kept among the attributes.
                if let Some(kept) = meta::take_trailer_aside(&mut v) {
                    attributes.entry(meta::TRAILER_KEY).or_insert(kept);
                }
                let names = meta::dimension_names(&v["dimension_names"], dims.len());
                numcodecs::fill_in_v3(&mut v);
                if !matches!(elem, Elem::Plain(_)) {
                    // zarrs has no structured or fixed-length string types: it sees their
                    // bytes as raw bits, which is what a `.ra` holds.
                    let n = elem.itemsize()?;
                    let fill = fill_bytes(&v["fill_value"], n);
                    v["data_type"] = Value::String(format!("r{}", n * 8));
                    v["fill_value"] = Value::Array(fill.into_iter().map(Value::from).collect());
                }
                let m: ArrayMetadataV3 = serde_json::from_value(v)
                    .map_err(|e| zarr_err(&shown, None, format!("zarr.json: {e}")))?;
                (ArrayMetadata::V3(m), elem, dims, chunk, attributes, names)
            } else if let Some(b) = get(&store, ".zarray", &shown)? {
                let mut v = parse(&b, ".zarray", &shown)?;
                let elem = meta::elem_v2(&v["dtype"]).map_err(|e| e.at(&shown))?;
                v2_fill = Some(v["fill_value"].clone()).filter(|f| !f.is_null());
                let dims = extents(&v["shape"], "shape", &shown)?;
                let chunk = extents(&v["chunks"], "chunks", &shown)?;
                if let Some(chain) = numcodecs::take_v2(&mut v).map_err(|e| e.at(&shown))? {
                    let f_order = v["order"] == "F";
                    let big = matches!(elem, Elem::Plain(_))
                        && v["dtype"].as_str().is_some_and(|d| d.starts_with('>'));
                    own = Some((chain, f_order, big));
                }
                if !matches!(elem, Elem::Plain(_)) {
                    let n = elem.itemsize()?;
                    v["dtype"] = Value::String(format!("|V{n}"));
                    v["fill_value"] = Value::Null;
                }
                if dims.is_empty() {
                    // A 0-d array has one order: zarrs must not make an empty transpose.
                    v["order"] = Value::String("C".into());
                }
                let mut attributes = match get(&store, ".zattrs", &shown)? {
                    Some(b) => parse(&b, ".zattrs", &shown)?
                        .as_object()
                        .cloned()
                        .unwrap_or_default(),
                    None => Map::new(),
                };
                // xarray's dimension names of a v2 array: labels, not attributes.
                let names = attributes
                    .remove("_ARRAY_DIMENSIONS")
                    .and_then(|n| meta::dimension_names(&n, dims.len()));
                let mut m: ArrayMetadataV2 = serde_json::from_value(v)
                    .map_err(|e| zarr_err(&shown, None, format!(".zarray: {e}")))?;
                m.attributes = attributes.clone();
                (ArrayMetadata::V2(m), elem, dims, chunk, attributes, names)
            } else if get(&store, ".zgroup", &shown)?.is_some() {
                return Err(zarr_err(
                    &shown,
                    None,
                    "a Zarr v2 group: convert it into a folder, or name the array inside it",
                ));
            } else {
                return Err(zarr_err(
                    &shown,
                    None,
                    "no zarr.json or .zarray: not a Zarr array",
                ));
            };
        let itemsize = elem.itemsize()?;
        check_sizes(&dims, &chunk, itemsize, &shown)?;
        let array = Array::new_with_metadata(store.storage.clone(), &store.node, meta)
            .map_err(|e| zarr_err(&shown, None, e))?;
        let column_major = column_major(&array, dims.len());
        let zstd_only = column_major
            && own.is_none()
            && matches!(array.codecs().bytes_to_bytes_codecs(),
                [c] if c.name(ZarrVersion::V3).as_deref() == Some("zstd"));
        Ok(ZarrInput {
            array,
            shown,
            elem,
            dims,
            chunk,
            attributes,
            names,
            reading: Reading::Alone,
            own,
            column_major,
            zstd_only,
            v2_fill,
        })
    }

    /// Takes a v2 array's `fill_value` as its `_FillValue` attribute, as xarray's Zarr
    /// backend reads a v2 group (a v3 array's `_FillValue` is an attribute already).
    pub fn fill_as_xarray_reads(&mut self) {
        if let Some(fill) = self.v2_fill.take() {
            // Zarr names NaN and the infinities ("NaN", "Infinity", "-Infinity").
            let fill = match fill.as_str() {
                Some(s @ ("NaN" | "Infinity" | "-Infinity")) => {
                    meta::ndl_number(s.parse().unwrap_or(f64::NAN))
                }
                _ => fill,
            };
            self.attributes.entry("_FillValue").or_insert(fill);
        }
    }

    /// Reads it as `reading` says (by default [`Reading::Alone`]): which of its
    /// dimension names stand for no labels.
    pub fn read_as(&mut self, reading: Reading) {
        self.reading = reading;
    }

    /// The array's shape.
    pub fn dims(&self) -> &[u64] {
        &self.dims
    }

    /// The shape of its chunks (of its shards, when sharded).
    pub fn chunk_shape(&self) -> &[u64] {
        &self.chunk
    }

    /// The RawArray element type.
    pub fn dtype(&self) -> Result<DType> {
        self.elem.dtype()
    }

    /// The `.ra` trailer: the attributes and dimension names (and a structured type's
    /// compound).
    pub fn trailer(&self) -> Result<Vec<u8>> {
        let header = Header::new(self.dtype()?, &self.dims)?;
        Ok(meta::trailer_of_attributes(
            &self.attributes,
            self.names.as_deref(),
            &self.reading,
            &header,
            self.elem.descr(),
        ))
    }

    fn chunk_err(&self, index: &[u64], e: &dyn std::fmt::Display) -> Error {
        zarr_err(
            &self.shown,
            Some(&self.array.chunk_key(index).to_string()),
            e,
        )
    }

    /// The stored bytes of the chunk at `index`, or None for a missing chunk.
    fn encoded(&self, index: &[u64]) -> Result<Option<Vec<u8>>> {
        self.array
            .retrieve_encoded_chunk(index)
            .map_err(|e| self.chunk_err(index, &e))
    }

    /// The elements of the box at `origin` of extents `shape` into `out`, column-major:
    /// each chunk it meets decoded, and the part of it in the box copied.
    pub fn read_box(&self, origin: &[u64], shape: &[u64], out: &mut [u8]) -> Result<()> {
        let n = self.dims.len();
        let w = self.elem.itemsize()?;
        if shape.contains(&0) {
            return Ok(());
        }
        let first: Vec<u64> = (0..n).map(|k| origin[k] / self.chunk[k]).collect();
        let last: Vec<u64> = (0..n)
            .map(|k| (origin[k] + shape[k] - 1) / self.chunk[k])
            .collect();
        let span: Vec<u64> = (0..n).map(|k| last[k] - first[k] + 1).collect();
        for offset in GridIndices::new(&span) {
            let index: Vec<u64> = (0..n).map(|k| first[k] + offset[k]).collect();
            let chunk = self.chunk_column_major(&index)?;
            // The part of the chunk in the box, per axis: from, to (array indices).
            let lo: Vec<u64> = (0..n)
                .map(|k| (index[k] * self.chunk[k]).max(origin[k]))
                .collect();
            let hi: Vec<u64> = (0..n)
                .map(|k| ((index[k] + 1) * self.chunk[k]).min(origin[k] + shape[k]))
                .collect();
            let part: Vec<u64> = (0..n).map(|k| hi[k] - lo[k]).collect();
            let at_chunk = Region {
                origin: (0..n).map(|k| lo[k] - index[k] * self.chunk[k]).collect(),
                valid: part.clone(),
                full: self.chunk.clone(),
            };
            let at_box = Region {
                origin: (0..n).map(|k| lo[k] - origin[k]).collect(),
                valid: part,
                full: shape.to_vec(),
            };
            // Runs along the first axis: each the same in the chunk and in the box.
            let mut to = Vec::new();
            at_box.runs(shape, w, |a, _, len| to.push((a, len)));
            let mut k = 0;
            at_chunk.runs(&self.chunk, w, |a, _, len| {
                let (b, _) = to[k];
                out[b..b + len].copy_from_slice(&chunk[a..a + len]);
                k += 1;
            });
        }
        Ok(())
    }

    /// The chunk at `index`, whole (edge chunks padded), its elements column-major.
    fn chunk_column_major(&self, index: &[u64]) -> Result<Vec<u8>> {
        let err = |e: &dyn std::fmt::Display| self.chunk_err(index, e);
        let itemsize = self.elem.itemsize()?;
        let n = bytes_of(&self.chunk, itemsize).unwrap_or(0) as usize;
        if self.column_major || self.own.is_some() {
            let Some(stored) = self.encoded(index)? else {
                return Ok(self
                    .array
                    .fill_value()
                    .as_ne_bytes()
                    .repeat(n / itemsize as usize));
            };
            let Some((chain, f_order, big)) = &self.own else {
                if self.zstd_only {
                    // One zstd context per thread, rather than zarrs' one per chunk.
                    let mut out = vec![0u8; n];
                    super::zstd::decompress_into(&stored, &mut out).map_err(|e| err(&e))?;
                    return Ok(out);
                }
                return self.decode_bytes(stored, n).map_err(|e| err(&e));
            };
            // The bytes each filter made, in the order they were applied.
            let mut sizes = vec![n];
            for f in &chain.filters {
                sizes.push(f.encoded_len(sizes[sizes.len() - 1]));
            }
            let filtered = sizes[sizes.len() - 1];
            let mut bytes = if chain.lz4 {
                numcodecs::lz4_decode(&stored, filtered)
            } else {
                self.decode_bytes(stored, filtered)
            }
            .map_err(|e| err(&e))?;
            for f in chain.filters.iter().rev() {
                bytes = f.decode(&bytes).map_err(|e| err(&e))?;
            }
            if bytes.len() != n {
                return Err(err(&format!(
                    "decodes to {} bytes, a chunk is {n}",
                    bytes.len()
                )));
            }
            if *big {
                let unit = self.elem.dtype()?.swap_unit().unwrap_or(1);
                crate::codec::swap_bytes(&mut bytes, unit);
            }
            if *f_order || self.chunk.len() < 2 {
                return Ok(bytes);
            }
            return self.c_to_f(&bytes);
        }
        let options = CodecOptions::default().with_concurrent_target(1);
        let chunk: ArrayBytes = self
            .array
            .retrieve_chunk_opt(index, &options)
            .map_err(|e| err(&e))?;
        let c_order = chunk.into_fixed().map_err(|e| err(&e))?;
        if c_order.len() != n {
            return Err(err(&format!(
                "decodes to {} bytes, a chunk is {n}",
                c_order.len()
            )));
        }
        self.c_to_f(&c_order)
    }

    /// Undoes the array's bytes-to-bytes codecs (zarrs'), innermost last, on `stored`,
    /// which must decode to `n` bytes.
    fn decode_bytes(&self, stored: Vec<u8>, n: usize) -> Result<Vec<u8>> {
        let options = CodecOptions::default().with_concurrent_target(1);
        let chain = self.array.codecs();
        let b2b = chain.bytes_to_bytes_codecs();
        // The decoded size each codec sees, innermost first.
        let mut reps = vec![zarrs::array::BytesRepresentation::FixedSize(n as u64)];
        for c in b2b {
            let r = c.encoded_representation(reps.last().unwrap_or(&reps[0]));
            reps.push(r);
        }
        let mut bytes: Cow<[u8]> = Cow::Owned(stored);
        for (c, rep) in b2b.iter().zip(&reps).rev() {
            bytes = c
                .decode(bytes, rep, &options)
                .map_err(|e| Error::decode("zarr", e.to_string()))?;
        }
        if bytes.len() != n {
            return Err(Error::decode(
                "zarr",
                format!("decodes to {} bytes, a chunk is {n}", bytes.len()),
            ));
        }
        Ok(bytes.into_owned())
    }

    /// A whole chunk's C-order bytes, column-major.
    fn c_to_f(&self, c_order: &[u8]) -> Result<Vec<u8>> {
        let mut f = vec![0u8; c_order.len()];
        let shape = crate::view::shape_usize(&self.chunk)?;
        let itemsize = self.elem.itemsize()? as usize;
        crate::layout::transpose_c_to_f(c_order, &shape, itemsize, &mut f, &mut |_, _| ())?;
        Ok(f)
    }
}

/// Fill-value bytes of a type zarrs sees as raw bits: the base64 of zarr-python's
/// raw fill values when it is `n` bytes long, else zeros (strings fill with "").
fn fill_bytes(v: &Value, n: u64) -> Vec<u8> {
    v.as_str()
        .and_then(meta::base64_decode)
        .filter(|b| b.len() as u64 == n)
        .unwrap_or_else(|| vec![0; n as usize])
}

/// Refuses a shape or chunk grid that no data could back, before anything is sized
/// by it: the array's bytes must fit `u64` and this machine, and a chunk at most
/// `MAX_CHUNK_BYTES` and four times the array (or 16 MiB).
fn check_sizes(dims: &[u64], chunk: &[u64], itemsize: u64, shown: &Path) -> Result<()> {
    if chunk.len() != dims.len() {
        return Err(zarr_err(
            shown,
            None,
            format!("chunk shape {chunk:?} for a shape of {} dims", dims.len()),
        ));
    }
    if chunk.contains(&0) {
        return Err(zarr_err(
            shown,
            None,
            format!("chunk shape {chunk:?} has an extent of 0"),
        ));
    }
    let total = bytes_of(dims, itemsize)
        .filter(|&b| usize::try_from(b).is_ok())
        .ok_or_else(|| {
            zarr_err(
                shown,
                None,
                format!("shape {dims:?} of {itemsize}-byte elements does not fit this machine"),
            )
        })?;
    if total == 0 {
        // No element, so no chunk is ever read: its shape allocates nothing.
        return Ok(());
    }
    let bound = MAX_CHUNK_BYTES.min(total.max(16 << 20).saturating_mul(4));
    match bytes_of(chunk, itemsize) {
        Some(b) if b <= bound => Ok(()),
        _ => Err(zarr_err(shown, None, format!("chunk shape {chunk:?} of {itemsize}-byte elements is larger than any chunk of a {total}-byte array can be"))),
    }
}

/// Whether `array`'s chunks, their bytes-to-bytes codecs undone, hold the elements
/// column-major in native (little-endian) order.
fn column_major(array: &Array<dyn ReadableWritableStorageTraits>, ndims: usize) -> bool {
    if cfg!(target_endian = "big") {
        return false;
    }
    let chain = array.codecs();
    let options = Default::default();
    let a2b = chain.array_to_bytes_codec();
    let bytes_le = a2b.name(ZarrVersion::V3).as_deref() == Some("bytes")
        && a2b
            .configuration(ZarrVersion::V3, &options)
            .and_then(|c| c.get("endian").and_then(Value::as_str).map(str::to_string))
            .is_none_or(|e| e == "little");
    let a2a = chain.array_to_array_codecs();
    let reversed: Vec<Value> = (0..ndims).rev().map(Value::from).collect();
    let transposed = match a2a {
        [] => ndims <= 1,
        [t] => {
            t.name(ZarrVersion::V3).as_deref() == Some("transpose")
                && t.configuration(ZarrVersion::V3, &options)
                    .and_then(|c| c.get("order").cloned())
                    == Some(Value::Array(reversed))
        }
        _ => false,
    };
    bytes_le && transposed
}
