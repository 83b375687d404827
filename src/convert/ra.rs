//! `.ra` files as a source and a sink.
//!
//! The source reads boxes as a [`DataReader`] reads selections: the byte runs that hold
//! them, many at once, swapped to native order; encoded data (LZ4, LEB128, BitArrays)
//! is decoded once, when it is opened. Plain native data is also mapped, and lent to
//! sinks that take it whole chunk by chunk (Zarr). The sink is a new file, or one LZ4
//! block built in memory.

use std::path::{Path, PathBuf};

use super::file::FileSink;
use super::memory::MemorySink;
use super::options::ConvertOptions;
use super::{Block, Converted, Desc, Grain, Sink, Source};
use crate::dtype::DType;
use crate::error::Result;
use crate::header::{Encoding, Header};
use crate::mapped::MappedRa;
use crate::padding::Padding;
use crate::reader::DataReader;

/// A `.ra` file, read by boxes.
pub struct RaSource {
    reader: DataReader,
    desc: Desc,
    map: Option<MappedRa>,
    shown: PathBuf,
}

impl RaSource {
    /// Opens `path` (its header checked, encoded data decoded).
    pub fn open(path: &Path) -> Result<RaSource> {
        let reader = DataReader::open(path)?;
        let h = reader.header();
        let desc = Desc {
            dtype: h.dtype(),
            dims: h.dims().to_vec(),
            trailer: reader.metadata().to_vec(),
        };
        // SAFETY: `convert` and `ra` document that no other program may rewrite or
        // truncate an input while it is converted; rastore's writers never do.
        let map = unsafe { MappedRa::open(path) }
            .ok()
            .filter(|m| m.header().encoding() == Encoding::Raw && m.header().native_endian());
        Ok(RaSource {
            reader,
            desc,
            map,
            shown: path.to_path_buf(),
        })
    }
}

impl Source for RaSource {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        Grain::ColumnMajor
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        self.reader.read_selection_into(&block.strides(), out)
    }

    fn read_selection(&self, sel: &[crate::Stride], out: &mut [u8]) -> Result<()> {
        self.reader.read_selection_into(sel, out)
    }

    fn lend(&self) -> Option<&[u8]> {
        let m = self.map.as_ref()?;
        // Julia Bools are checked as they are read: never lent unchecked.
        let plain = m.header().dtype() == self.desc.dtype && self.desc.dtype != DType::BOOL;
        plain.then(|| m.data_bytes())
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

/// A new `.ra` file of `desc` at `path`, its trailer `desc.trailer`; with `compress`,
/// one LZ4 block (unless that would not be smaller: [`Converted::stored_raw`]).
pub fn create(path: &Path, desc: Desc, options: &ConvertOptions) -> Result<Box<dyn Sink>> {
    let header = Header::new(desc.dtype, &desc.dims)?;
    if options.compresses() {
        let write = options.write_options().metadata(desc.trailer.clone());
        let at = path.to_path_buf();
        let finish = Box::new(move |_: &Desc, data: Vec<u8>| {
            let packed = write.write_bytes_packed(&at, &header, &data)?;
            Ok(Converted {
                stored_raw: !packed,
            })
        });
        return Ok(Box::new(MemorySink::new(desc, path, finish)?));
    }
    let padding = Padding::of_trailer(&desc.trailer, desc.dtype);
    let tail = desc.trailer.clone();
    Ok(Box::new(FileSink::create(
        path,
        options.placement(),
        &header.encode(),
        desc,
        &tail,
        padding,
    )?))
}
