//! TIFF as a source and a sink. A TIFF whose pages lie raw in one C-order run
//! ([`Tiff::layout`]) is read in place, as a C-order `.npy` is (no decoding, boxes read
//! as runs); any other is decoded page by page into memory (its size checked against
//! the file first). The sink gathers the array in memory and writes the TIFF when
//! committed ([`encode`](super::encode)): Deflate when compression is asked for.

use std::path::Path;

use crate::convert::memory::{MemorySink, MemorySource};
use crate::convert::ConvertOptions;
use crate::convert::{Converted, Desc, Sink, Source};
use crate::error::{Error, ErrorKind, Result, ResultExt};
use crate::formats::npy::NpySource;
use crate::formats::tiff::{self, Tiff};
use crate::layout::transpose_c_to_f;
use crate::write::atomic_write;

/// Refuses to hold `bytes` in memory where they cannot be.
fn held(bytes: u64, what: &'static str) -> Result<usize> {
    usize::try_from(bytes).map_err(|_| {
        ErrorKind::TooLarge {
            what,
            value: bytes.into(),
        }
        .into()
    })
}

/// Opens the TIFF `path`: in place when its pages are one raw run, else decoded.
pub fn open(path: &Path) -> Result<Box<dyn Source>> {
    let t = tiff::parse_file(path)?;
    if let Ok(layout) = t.layout() {
        let (file, len) = crate::read::open_len(path)?;
        return Ok(Box::new(NpySource::of_layout(path, file, 0, len, layout)?));
    }
    let n = held(t.nbytes(), "decoded TIFF bytes").map_err(|e| e.at(path))?;
    let mut c = vec![0u8; n];
    tiff::decode_file(path, &t, &mut c)?;
    Ok(Box::new(MemorySource {
        desc: Desc {
            dtype: t.dtype(),
            dims: t.shape.clone(),
            trailer: Vec::new(),
        },
        data: column_major(&t, c).at(path)?,
        shown: path.to_path_buf(),
    }))
}

/// The C-order bytes `c` of `t`'s array, column-major.
fn column_major(t: &Tiff, c: Vec<u8>) -> Result<Vec<u8>> {
    if t.shape.len() < 2 {
        return Ok(c);
    }
    let shape = crate::view::shape_usize(&t.shape)?;
    let mut f = vec![0u8; c.len()];
    transpose_c_to_f(
        &c,
        &shape,
        t.dtype().elbyte as usize,
        &mut f,
        &mut |_, _| (),
    )?;
    Ok(f)
}

/// The column-major bytes `f` of an array of `dims` and `elbyte`-byte elements, in
/// C order.
fn c_order(f: &[u8], dims: &[u64], elbyte: usize) -> Result<Vec<u8>> {
    let reversed: Vec<u64> = dims.iter().rev().copied().collect();
    let shape = crate::view::shape_usize(&reversed)?;
    let mut c = vec![0u8; f.len()];
    transpose_c_to_f(f, &shape, elbyte, &mut c, &mut |_, _| ())?;
    Ok(c)
}

/// A new TIFF of `desc` at `path` (refused before any data is read when a TIFF cannot
/// hold it): Deflate-compressed when [`ConvertOptions::compress`] says so.
pub fn create(path: &Path, desc: Desc, options: &ConvertOptions) -> Result<Box<dyn Sink>> {
    tiff::check(desc.dtype, &desc.dims).map_err(|e: Error| e.at(path))?;
    let (how, compress) = (options.placement(), options.compresses());
    let at = path.to_path_buf();
    let finish = Box::new(move |desc: &Desc, data: Vec<u8>| {
        let c = c_order(&data, &desc.dims, desc.dtype.elbyte as usize).at(&at)?;
        drop(data);
        atomic_write(&at, how, c.len() as u64, |w| {
            tiff::encode(desc.dtype, &desc.dims, &c, compress, w)
        })?;
        Ok(Converted::default())
    });
    Ok(Box::new(MemorySink::new(desc, path, finish)?))
}
