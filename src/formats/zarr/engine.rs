//! Zarr arrays (v3 and v2 in, v3 out; a folder or `s3://`) as a source and a sink: a
//! box is read as the chunks it meets, decoded; a sink takes its chunks as boxes, one
//! each, and writes `zarr.json` when committed ([`crate::formats::zarr`]).

use std::path::{Path, PathBuf};

use crate::convert::ConvertOptions;
use crate::convert::{Block, Converted, Desc, Grain, Sink, Source};
use crate::error::{Error, ErrorKind, Result};
use crate::formats::zarr::meta::Reading;
use crate::formats::zarr::{Location, ZarrInput, ZarrWriter};

/// A Zarr array, read by chunks.
pub struct ZarrSource {
    input: ZarrInput,
    desc: Desc,
    shown: PathBuf,
}

impl ZarrSource {
    /// Opens the array at `at` (its metadata checked).
    pub fn open(at: &Location) -> Result<ZarrSource> {
        Self::of(ZarrInput::open(at)?, at)
    }

    /// Opens the array at `at` as a member of a group, read as `reading` says (the
    /// variable of a dataset, or the one array of its group), its fill value taken as
    /// xarray's Zarr backend takes it ([`ZarrInput::fill_as_xarray_reads`]).
    pub fn open_member(at: &Location, reading: Reading) -> Result<ZarrSource> {
        let mut input = ZarrInput::open(at)?;
        input.fill_as_xarray_reads();
        input.read_as(reading);
        Self::of(input, at)
    }

    /// The array `input` reads, described by `desc` and named `shown` in messages: a
    /// Zarr array whose metadata another format gave (an HDF5 dataset's chunk table).
    pub fn with(input: ZarrInput, desc: Desc, shown: PathBuf) -> ZarrSource {
        ZarrSource { input, desc, shown }
    }

    fn of(input: ZarrInput, at: &Location) -> Result<ZarrSource> {
        let desc = Desc {
            dtype: input.dtype()?,
            dims: input.dims().to_vec(),
            trailer: input.trailer()?,
        };
        Ok(ZarrSource {
            input,
            desc,
            shown: at.shown(),
        })
    }
}

impl Source for ZarrSource {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        Grain::Chunks(self.input.chunk_shape().to_vec())
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        self.input.read_box(&block.origin, &block.shape, out)
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

/// A Zarr v3 array being written: one chunk per box.
struct ZarrSink {
    writer: ZarrWriter,
    shown: PathBuf,
}

/// A new Zarr v3 array of `desc` at `at`, chunked and compressed as `options` say.
pub fn create(at: &Location, desc: Desc, options: &ConvertOptions) -> Result<Box<dyn Sink>> {
    let writer = ZarrWriter::create(
        at,
        desc.dtype,
        &desc.dims,
        &desc.trailer,
        &options.zarr_options(),
    )?;
    Ok(Box::new(ZarrSink {
        writer,
        shown: at.shown(),
    }))
}

impl Sink for ZarrSink {
    fn grain(&self) -> Grain {
        Grain::Chunks(self.writer.chunk_shape().to_vec())
    }

    fn write_box(&self, block: &Block, data: &[u8]) -> Result<()> {
        let chunk = self.writer.chunk_shape();
        let index: Vec<u64> = block.origin.iter().zip(chunk).map(|(o, c)| o / c).collect();
        let aligned = block.origin.iter().zip(chunk).all(|(o, c)| o % c == 0);
        if !aligned {
            return Err(Error::from(ErrorKind::InvalidArgument(format!(
                "a box at {:?} is not a chunk of {chunk:?}",
                block.origin
            )))
            .at(&self.shown));
        }
        self.writer.write_chunk(&index, data)
    }

    fn commit(self: Box<Self>) -> Result<Converted> {
        self.writer.finish()?;
        Ok(Converted::default())
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}
