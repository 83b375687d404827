//! Zarr v3 arrays written chunk by chunk: each chunk's column-major bytes encoded by the
//! array's own bytes-to-bytes codecs and stored, from any thread; `zarr.json` last, so
//! that a store cut short is no array.

use std::borrow::Cow;
use std::path::PathBuf;

use serde_json::{json, Value};
use zarrs::array::{Array, ArrayMetadata, ArrayMetadataV3, CodecOptions};
use zarrs::storage::Bytes;

use super::meta::{self, ZarrType};
use super::store::{self, Location, Store};
use super::{bytes_of, zarr_err, Codec, Region};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::frame_chunks;
use crate::replace::NewFolder;

/// Bytes of a default chunk.
const CHUNK_BYTES: u64 = 16 << 20;

/// How a `.ra` becomes a Zarr array.
#[derive(Debug, Clone, Default)]
pub struct ZarrOptions {
    /// The chunk shape (default: whole frames of about 16 MiB; see the module).
    pub chunks: Option<Vec<u64>>,
    /// The bytes-to-bytes codec.
    pub codec: Codec,
    /// Replace an existing array.
    pub overwrite: bool,
    /// Metadata as xarray's Zarr backend reads a group's arrays: every dim named
    /// (where the trailer names none, as [`crate::ndl::unlabeled_dims`] names them:
    /// after [`variable`](Self::variable)), and a `_FillValue` attribute as the array's
    /// `fill_value` and as xarray's v3 attribute.
    pub xarray: bool,
    /// The array is the variable of this name of a dataset's group (not one array on
    /// its own): the dims it has no labels for are named after it.
    pub variable: Option<String>,
    /// Keep the whole trailer beside the attributes, not among them: in the extension
    /// field [`meta::TRAILER_KEY`] of `zarr.json`, which Zarr readers skip and xarray
    /// does not show (a dataset's variable, whose labels and attributes the metadata
    /// holds already), rather than as the attribute of that name.
    pub trailer_aside: bool,
}

/// Sets `doc`'s `fill_value` and `_FillValue` attribute to `fill`
/// ([`meta::fill_value`]'s pair), if there is one.
pub(super) fn set_fill(doc: &mut Value, fill: Option<&(Value, Value)>) {
    if let Some((value, attribute)) = fill {
        doc["fill_value"] = value.clone();
        doc["attributes"]["_FillValue"] = attribute.clone();
    }
}

/// The `zarr.json` of the output: the array's metadata as zarr-python reads it.
pub(super) fn metadata(
    dims: &[u64],
    chunk: &[u64],
    t: &ZarrType,
    big: bool,
    codec: Codec,
    attributes: serde_json::Map<String, Value>,
    names: Option<Vec<String>>,
) -> Value {
    let mut codecs = Vec::new();
    if dims.len() > 1 {
        let order: Vec<usize> = (0..dims.len()).rev().collect();
        codecs.push(json!({"name": "transpose", "configuration": {"order": order}}));
    }
    codecs.push(if t.endian {
        json!({"name": "bytes", "configuration": {"endian": if big { "big" } else { "little" }}})
    } else {
        json!({"name": "bytes"})
    });
    match codec {
        Codec::None => {}
        Codec::Zstd(level) => codecs.push(json!({"name": "zstd", "configuration": {"level": level, "checksum": false}})),
        Codec::Gzip(level) => codecs.push(json!({"name": "gzip", "configuration": {"level": level}})),
        Codec::Blosc(level) => codecs.push(json!({"name": "blosc", "configuration": {
            "cname": "zstd", "clevel": level, "shuffle": "shuffle", "typesize": t.itemsize, "blocksize": 0}})),
    }
    let mut doc = json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": dims,
        "data_type": t.data_type,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunk}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": t.fill_value,
        "codecs": codecs,
        "attributes": attributes,
        "storage_transformers": [],
    });
    if let Some(names) = names {
        doc["dimension_names"] = json!(names);
    }
    doc
}

/// A Zarr v3 array being written, chunk by chunk, from any thread: a local one in a
/// hidden folder beside its name, one in object storage under its prefix with
/// `zarr.json` last. [`finish`](Self::finish) writes `zarr.json` and names the folder;
/// dropped unfinished, it removes what it wrote (the folder, or the chunks it put).
pub struct ZarrWriter {
    store: Store,
    array: Array<dyn zarrs::storage::ReadableWritableStorageTraits>,
    doc: Value,
    t: ZarrType,
    dims: Vec<u64>,
    chunk: Vec<u64>,
    codec: Codec,
    shown: PathBuf,
    /// The hidden folder of a local array, or nothing (an object).
    placing: Option<NewFolder>,
    /// Keys of the chunks put in object storage, to erase on abort.
    put: std::sync::Mutex<Vec<zarrs::storage::StoreKey>>,
    done: bool,
}

impl ZarrWriter {
    /// Starts the array of `dtype` and `dims` at `output`, its attributes and dimension
    /// names from the NDL `trailer` (kept whole as an attribute too), chunked and
    /// compressed as `options` say (by default whole frames of about 16 MiB). An
    /// existing output is refused unless overwriting; a missing folder above a local
    /// one is refused.
    pub fn create(
        output: &Location,
        dtype: crate::DType,
        dims: &[u64],
        trailer: &[u8],
        options: &ZarrOptions,
    ) -> Result<ZarrWriter> {
        let shown = output.shown();
        let descr = crate::ndl::numpy_descr(trailer, dtype.elbyte);
        let t = meta::zarr_type(dtype, descr.as_ref()).map_err(|e| e.at(&shown))?;
        let dims = dims.to_vec();
        let chunk = match &options.chunks {
            Some(c) if c.len() != dims.len() || c.contains(&0) => {
                return Err(ErrorKind::InvalidArgument(format!(
                    "--chunks {c:?}: a positive extent for each of the {} dims {dims:?}",
                    dims.len()
                ))
                .into())
            }
            Some(c) => c.clone(),
            None => frame_chunks(&dims, t.itemsize, CHUNK_BYTES),
        };
        let mut attributes = meta::attributes_of_trailer(trailer);
        let mut names = crate::ndl::dimension_names(trailer, dims.len());
        let mut fill = None;
        let aside = match options.trailer_aside {
            true => attributes.remove(meta::TRAILER_KEY),
            false => None,
        };
        if options.xarray {
            fill = meta::fill_value(&mut attributes, dtype);
            names.get_or_insert_with(|| {
                crate::ndl::unlabeled_dims(dims.len(), options.variable.as_deref())
            });
        }
        let big = cfg!(target_endian = "big");
        let mut doc = metadata(&dims, &chunk, &t, big, options.codec, attributes, names);
        set_fill(&mut doc, fill.as_ref());
        if let Some(kept) = aside {
            meta::put_trailer_aside(&mut doc, kept);
        }
        let placing = prepare(output, options.overwrite)?;
        let dir = placing.as_ref().map(|f| f.path().to_path_buf());
        let store = store::open(output, dir.as_deref())?;
        // zarrs encodes the raw bytes of types it does not know (structured, strings).
        let mut for_zarrs = doc.clone();
        if !matches!(meta::elem_v3(&t.data_type)?, meta::Elem::Plain(_)) {
            for_zarrs["data_type"] = json!(format!("r{}", t.itemsize * 8));
            for_zarrs["fill_value"] = json!(vec![0u8; t.itemsize as usize]);
        }
        let m: ArrayMetadataV3 =
            serde_json::from_value(for_zarrs).map_err(|e| zarr_err(&shown, None, e))?;
        let array =
            Array::new_with_metadata(store.storage.clone(), &store.node, ArrayMetadata::V3(m))
                .map_err(|e| zarr_err(&shown, None, e))?;
        Ok(ZarrWriter {
            store,
            array,
            doc,
            t,
            dims,
            chunk,
            codec: options.codec,
            shown,
            placing,
            put: std::sync::Mutex::new(Vec::new()),
            done: false,
        })
    }

    /// The chunk shape.
    pub fn chunk_shape(&self) -> &[u64] {
        &self.chunk
    }

    /// Stores the chunk at grid `index`, from the column-major bytes of its in-bounds
    /// elements (`valid`, its extent within the array): padded to the whole chunk with
    /// zeros, packed (structured types), encoded by the array's codecs.
    pub fn write_chunk(&self, index: &[u64], data: &[u8]) -> Result<()> {
        let elbyte = self
            .t
            .packing
            .as_ref()
            .map_or(self.t.itemsize, |p| p.from as u64);
        let region = Region::of(index, &self.chunk, &self.dims);
        let chunk_bytes = bytes_of(&self.chunk, elbyte).unwrap_or(0) as usize;
        let mut whole: Cow<[u8]> = if region.valid == region.full {
            Cow::Borrowed(data)
        } else {
            // The in-bounds part, column-major, into a chunk of zeros.
            let mut buf = vec![0u8; chunk_bytes];
            let local = Region {
                origin: vec![0; self.dims.len()],
                valid: region.valid.clone(),
                full: region.full.clone(),
            };
            local.runs(&region.valid, elbyte, |a, c, n| {
                buf[c..c + n].copy_from_slice(&data[a..a + n])
            });
            Cow::Owned(buf)
        };
        if let Some(p) = &self.t.packing {
            let mut packed = vec![0u8; chunk_bytes / p.from * p.to];
            p.pack(&whole, &mut packed);
            whole = Cow::Owned(packed);
        }
        let key = self.array.chunk_key(index);
        let shown_key = key.to_string();
        let err = |e: &dyn std::fmt::Display| zarr_err(&self.shown, Some(&shown_key), e);
        let options = CodecOptions::default().with_concurrent_target(1);
        let mut encoded = whole;
        if let Codec::Zstd(level) = self.codec {
            encoded = Cow::Owned(super::zstd::compress(&encoded, level).map_err(|e| err(&e))?);
        } else {
            for c in self.array.codecs().bytes_to_bytes_codecs() {
                encoded = c.encode(encoded, &options).map_err(|e| err(&e))?;
            }
        }
        // A local chunk's write makes the folders above it: not after an interrupt's
        // removal of the hidden folder.
        let _writing = self.placing.as_ref().map(|_| crate::leftovers::writing());
        // SAFETY: the bytes are this chunk encoded as the array's codecs encode it:
        // the elements column-major (what `transpose` to [n-1, …, 0] gives), in the
        // byte order the `bytes` codec names, then each bytes-to-bytes codec.
        unsafe {
            self.array
                .store_encoded_chunk(index, Bytes::from(encoded.into_owned()))
        }
        .map_err(|e| err(&e))?;
        if self.placing.is_none() {
            if let Ok(mut put) = self.put.lock() {
                put.push(key);
            }
        }
        Ok(())
    }

    /// Writes `zarr.json` (last: a store cut short is no array) and names a local
    /// array's folder; gives the `zarr.json` written.
    pub fn finish(mut self) -> Result<Value> {
        let text =
            serde_json::to_vec_pretty(&self.doc).map_err(|e| zarr_err(&self.shown, None, e))?;
        let writing = self.placing.as_ref().map(|_| crate::leftovers::writing());
        self.store
            .storage
            .set(&self.store.key("zarr.json")?, Bytes::from(text))
            .map_err(|e| zarr_err(&self.shown, None, e))?;
        drop(writing);
        self.done = true;
        if let Some(folder) = self.placing.take() {
            folder.place()?;
        }
        Ok(std::mem::take(&mut self.doc))
    }
}

impl Drop for ZarrWriter {
    /// Unfinished: the hidden folder goes (with `placing`), or the chunks put in
    /// object storage.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        if let Ok(put) = self.put.lock() {
            for key in put.iter() {
                let _ = self.store.storage.erase(key);
            }
        }
    }
}

/// For a local output: the hidden folder it is built in (an existing one refused
/// unless `overwrite`); for an object, nothing (an existing array refused unless
/// `overwrite`).
fn prepare(output: &Location, overwrite: bool) -> Result<Option<NewFolder>> {
    match output {
        Location::Local(p) => NewFolder::create(p, overwrite).map(Some),
        Location::Object { url, .. } => {
            if !overwrite && super::read::ZarrInput::open(output).is_ok() {
                return Err(Error::from(ErrorKind::Exists).at(url));
            }
            Ok(None)
        }
    }
}
