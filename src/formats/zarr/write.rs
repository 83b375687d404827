//! `.ra` → Zarr v3: chunks gathered (or taken whole) from the mapped column-major data,
//! encoded by the array's own bytes-to-bytes codecs, stored in parallel; `zarr.json`
//! last, so that a store cut short is no array.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde_json::{json, Value};
use zarrs::array::{Array, ArrayMetadata, ArrayMetadataV3, CodecOptions};
use zarrs::storage::Bytes;

use super::meta::{self, ZarrType};
use super::store::{self, Location, Store};
use super::{bytes_of, default_chunks, zarr_err, Codec, GridIndices, Region, BATCH_PER_THREAD};
use crate::error::{io_at, Error, ErrorKind, Result};
use crate::header::Encoding;
use crate::layout::Progress;
use crate::MappedRa;

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
}

/// The column-major data of the input, where it lies.
enum Data {
    Mapped(MappedRa),
    Owned(Vec<u8>),
}

impl Data {
    fn bytes(&self) -> &[u8] {
        match self {
            Data::Mapped(m) => m.data_bytes(),
            Data::Owned(v) => v,
        }
    }
}

/// The `zarr.json` of the output: the array's metadata as zarr-python reads it.
fn metadata(
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

/// Converts the `.ra` file `input` into a Zarr v3 array at `output`. A local output is
/// built in a hidden folder beside it and named when complete; in object storage the
/// chunks go first and `zarr.json` last.
pub fn ra_to_zarr(
    input: &Path,
    output: &Location,
    options: &ZarrOptions,
    progress: Progress,
) -> Result<()> {
    // SAFETY: conversion inputs are read-only for the duration of the call, as for
    // every `ra convert` (the README says so).
    let map = unsafe { MappedRa::open(input) }?;
    let h = map.header().clone();
    let trailer = map.metadata().to_vec();
    let (dtype, data, big) = match (h.encoding(), h.dtype().swap_unit()) {
        (Encoding::Raw, Some(_)) => (h.dtype(), Data::Mapped(map), h.data_big_endian()),
        _ => {
            drop(map);
            let raw = crate::formats::convert::decoded(input)?;
            (raw.header.dtype(), Data::Owned(raw.data), !raw.native)
        }
    };
    let descr = crate::formats::ndl::numpy_descr(&trailer, dtype.elbyte);
    let t = meta::zarr_type(dtype, descr.as_ref()).map_err(|e| e.at(input))?;
    let dims = h.dims().to_vec();
    let chunk = match &options.chunks {
        Some(c) if c.len() != dims.len() || c.contains(&0) => {
            return Err(ErrorKind::InvalidArgument(format!(
                "--chunks {c:?}: a positive extent for each of the {} dims {dims:?}",
                dims.len()
            ))
            .into())
        }
        Some(c) => c.clone(),
        None => default_chunks(&dims, t.itemsize, CHUNK_BYTES),
    };
    let attributes = meta::attributes_of_trailer(&trailer);
    let names = crate::formats::ndl::dimension_names(&trailer, dims.len());
    let doc = metadata(&dims, &chunk, &t, big, options.codec, attributes, names);
    let shown = output.shown();
    let (dir, placed) = prepare(output, options.overwrite)?;
    let result = (|| {
        let store = store::open(output, dir.as_deref())?;
        write_chunks(
            &store,
            &doc,
            &t,
            data.bytes(),
            &dims,
            &chunk,
            options.codec,
            &shown,
            progress,
        )?;
        let text = serde_json::to_vec_pretty(&doc).map_err(|e| zarr_err(&shown, None, e))?;
        store
            .storage
            .set(&store.key("zarr.json")?, Bytes::from(text))
            .map_err(|e| zarr_err(&shown, None, e))
    })();
    match (result, dir) {
        (Ok(()), Some(tmp)) => place(&tmp, &placed, options.overwrite),
        (Ok(()), None) => Ok(()),
        (Err(e), tmp) => {
            if let Some(tmp) = tmp {
                let _ = std::fs::remove_dir_all(tmp);
            }
            Err(e)
        }
    }
}

/// For a local output: refuses an existing one unless `overwrite`, and gives the hidden
/// folder to build in, and the final name.
fn prepare(output: &Location, overwrite: bool) -> Result<(Option<PathBuf>, PathBuf)> {
    match output {
        Location::Local(p) => {
            crate::replace::check_folder(p)?;
            if p.exists() && !overwrite {
                return Err(Error::from(ErrorKind::Exists).at(p));
            }
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let tmp =
                crate::replace::parent_dir(p).join(format!(".{name}.{}.tmp", std::process::id()));
            std::fs::create_dir(&tmp).map_err(io_at("create folder", p))?;
            Ok((Some(tmp), p.clone()))
        }
        Location::Object { url, .. } => {
            if !overwrite && super::ZarrInput::open(output).is_ok() {
                return Err(Error::from(ErrorKind::Exists).at(url));
            }
            Ok((None, url.into()))
        }
    }
}

/// Names the folder `tmp` `to`, the folder there moved aside and removed first when
/// replacing it.
fn place(tmp: &Path, to: &Path, overwrite: bool) -> Result<()> {
    let old = tmp.with_extension("old");
    let replacing = overwrite && to.exists();
    if replacing {
        std::fs::rename(to, &old).map_err(io_at("rename", to))?;
    }
    if let Err(e) = std::fs::rename(tmp, to) {
        if replacing {
            let _ = std::fs::rename(&old, to);
        }
        let _ = std::fs::remove_dir_all(tmp);
        return Err(Error::io("rename", e).at(to));
    }
    if replacing {
        std::fs::remove_dir_all(&old).map_err(io_at("remove the replaced folder", &old))?;
    }
    Ok(())
}

/// Gathers, encodes and stores every chunk, in parallel batches.
#[allow(clippy::too_many_arguments)]
fn write_chunks(
    store: &Store,
    doc: &Value,
    t: &ZarrType,
    data: &[u8],
    dims: &[u64],
    chunk: &[u64],
    codec: Codec,
    shown: &Path,
    progress: Progress,
) -> Result<()> {
    // zarrs encodes the raw bytes of types it does not know (structured, strings).
    let mut for_zarrs = doc.clone();
    if !matches!(meta::elem_v3(&t.data_type)?, meta::Elem::Plain(_)) {
        for_zarrs["data_type"] = json!(format!("r{}", t.itemsize * 8));
        for_zarrs["fill_value"] = json!(vec![0u8; t.itemsize as usize]);
    }
    let m: ArrayMetadataV3 =
        serde_json::from_value(for_zarrs).map_err(|e| zarr_err(shown, None, e))?;
    let array = Array::new_with_metadata(store.storage.clone(), &store.node, ArrayMetadata::V3(m))
        .map_err(|e| zarr_err(shown, None, e))?;
    let elbyte = t.packing.as_ref().map_or(t.itemsize, |p| p.from as u64);
    let grid: Vec<u64> = dims
        .iter()
        .zip(chunk)
        .map(|(d, c)| d.div_ceil(*c))
        .collect();
    let total = bytes_of(dims, elbyte).unwrap_or(0);
    let chunk_bytes = bytes_of(chunk, elbyte).unwrap_or(0) as usize;
    let options = CodecOptions::default().with_concurrent_target(1);
    let batch = BATCH_PER_THREAD * rayon::current_num_threads();
    let mut indices = GridIndices::new(&grid);
    let mut done = 0;
    loop {
        let some: Vec<Vec<u64>> = indices.by_ref().take(batch).collect();
        if some.is_empty() {
            break;
        }
        some.par_iter().try_for_each(|index| -> Result<()> {
            let region = Region::of(index, chunk, dims);
            let start = region
                .origin
                .iter()
                .zip(dims)
                .rev()
                .fold(0u64, |acc, (o, d)| acc * d + o)
                * elbyte;
            let mut gathered: Cow<[u8]> = if region.contiguous(dims) {
                Cow::Borrowed(&data[start as usize..start as usize + chunk_bytes])
            } else {
                let mut buf = vec![0u8; chunk_bytes];
                region.runs(dims, elbyte, |a, c, n| {
                    buf[c..c + n].copy_from_slice(&data[a..a + n])
                });
                Cow::Owned(buf)
            };
            if let Some(p) = &t.packing {
                let mut packed = vec![0u8; chunk_bytes / p.from * p.to];
                p.pack(&gathered, &mut packed);
                gathered = Cow::Owned(packed);
            }
            let key = array.chunk_key(index).to_string();
            let err = |e: &dyn std::fmt::Display| zarr_err(shown, Some(&key), e);
            let mut encoded = gathered;
            if let Codec::Zstd(level) = codec {
                encoded = Cow::Owned(super::zstd::compress(&encoded, level).map_err(|e| err(&e))?);
            } else {
                for c in array.codecs().bytes_to_bytes_codecs() {
                    encoded = c.encode(encoded, &options).map_err(|e| err(&e))?;
                }
            }
            // SAFETY: the bytes are this chunk encoded as the array's codecs encode it:
            // the elements column-major (what `transpose` to [n-1, …, 0] gives), in the
            // byte order the `bytes` codec names, then each bytes-to-bytes codec.
            unsafe { array.store_encoded_chunk(index, Bytes::from(encoded.into_owned())) }
                .map_err(|e| err(&e))
        })?;
        done += some
            .iter()
            .map(|i| bytes_of(&Region::of(i, chunk, dims).valid, elbyte).unwrap_or(0))
            .sum::<u64>();
        progress(done, total);
    }
    Ok(())
}
