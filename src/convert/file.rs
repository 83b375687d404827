//! A file sink: a header, the data column-major at its offset, a trailer, in a new
//! file built out of sight ([`crate::replace`]) and named when committed. Boxes are
//! written with positioned writes, from any thread, in any order; a file larger than
//! half the memory is written behind as its boxes land ([`Writeback`]), the one
//! write-behind of every conversion.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{Block, Converted, Desc, Grain, Sink};
use crate::error::{io_at, Error, ErrorKind, Result};
use crate::padding::Padding;
use crate::replace::{NewFile, Placement};
use crate::selection;
use crate::writeback::{Queued, Writeback};

/// A new file of a header, `desc`'s data column-major, and a trailer.
pub(crate) struct FileSink {
    new: NewFile,
    shown: PathBuf,
    desc: Desc,
    data_offset: u64,
    padding: Option<Padding>,
    queued: Mutex<Queued>,
}

impl FileSink {
    /// Starts the file that is to become `path`: `head` at its start, room for the
    /// data reserved after it, `tail` after the data. `padding` is zeroed in every
    /// element written (structured types).
    pub(crate) fn create(
        path: &Path,
        how: Placement,
        head: &[u8],
        desc: Desc,
        tail: &[u8],
        padding: Option<Padding>,
    ) -> Result<FileSink> {
        let new = NewFile::beside(path, how)?;
        let data_offset = head.len() as u64;
        let data_end = data_offset + desc.nbytes();
        let total = data_end.checked_add(tail.len() as u64).ok_or_else(|| {
            Error::from(ErrorKind::TooLarge {
                what: "file bytes",
                value: u128::from(data_end) + tail.len() as u128,
            })
            .at(path)
        })?;
        if total > 0 {
            crate::sys::preallocate(new.file(), total).map_err(io_at("reserve space", path))?;
        }
        crate::sys::write_all_at(new.file(), head, 0).map_err(io_at("write header", path))?;
        crate::sys::write_all_at(new.file(), tail, data_end)
            .map_err(io_at("write metadata", path))?;
        Ok(FileSink {
            new,
            shown: path.to_path_buf(),
            desc,
            data_offset,
            padding,
            queued: Mutex::new(Queued::new()),
        })
    }
}

impl Sink for FileSink {
    fn grain(&self) -> Grain {
        Grain::ColumnMajor
    }

    fn write_box(&self, block: &Block, data: &[u8]) -> Result<()> {
        let (dims, elbyte) = (&self.desc.dims, self.desc.dtype.elbyte);
        let file = self.new.file();
        let mut first = u64::MAX;
        let mut last = 0u64;
        let mut zeroed = Vec::new();
        for r in selection::runs(dims, elbyte, &block.strides(), 0) {
            let mut bytes = &data[r.to..r.to + r.len];
            if let Some(pad) = &self.padding {
                zeroed.clear();
                zeroed.extend_from_slice(bytes);
                pad.zero(&mut zeroed, r.from);
                bytes = &zeroed;
            }
            crate::sys::write_all_at(file, bytes, self.data_offset + r.from)
                .map_err(io_at("write", &self.shown))?;
            first = first.min(r.from);
            last = last.max(r.from + r.len as u64);
        }
        if first < last {
            Writeback::new(file, self.data_offset, self.desc.nbytes(), &self.queued)
                .finished(first as usize..last as usize);
        }
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<Converted> {
        self.new.place()?;
        Ok(Converted::default())
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}
