//! PNG images as a source (decoded whole: images are small, and decoding allocates only
//! as rows arrive) and a sink (gathered in memory, encoded when committed): the logical
//! image Pillow shows, as [`crate::formats::png`] maps it.

use std::path::Path;

use crate::convert::memory::{MemorySink, MemorySource};
use crate::convert::ConvertOptions;
use crate::convert::{Converted, Desc, Sink, Source};
use crate::error::Result;
use crate::formats::png;
use crate::header::Header;
use crate::write::atomic_write;

/// Opens and decodes the PNG `path`.
pub fn open(path: &Path) -> Result<Box<dyn Source>> {
    let img = png::decode_file(path)?;
    Ok(Box::new(MemorySource {
        desc: Desc {
            dtype: img.dtype,
            dims: img.dims,
            trailer: Vec::new(),
        },
        data: img.data,
        shown: path.to_path_buf(),
    }))
}

/// A new PNG of `desc` at `path`: 8/16-bit pixels, or any other 2-D numbers scaled to
/// gray (NaNs refused unless [`ConvertOptions::nan_gray`] gives them a level).
pub fn create(path: &Path, desc: Desc, options: &ConvertOptions) -> Result<Box<dyn Sink>> {
    let header = Header::new(desc.dtype, &desc.dims)?;
    let (how, nan_gray) = (options.placement(), options.nan_gray_level());
    let at = path.to_path_buf();
    let finish = Box::new(move |_: &Desc, data: Vec<u8>| {
        atomic_write(&at, how, data.len() as u64, |w| {
            png::encode(&header, &data, nan_gray, w)
        })?;
        Ok(Converted::default())
    });
    Ok(Box::new(MemorySink::new(desc, path, finish)?))
}
