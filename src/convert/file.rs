//! A file sink: a header, the data column-major at its offset, a trailer, in a new
//! file built out of sight ([`crate::replace`]) and named when committed. Boxes are
//! written with positioned writes, from any thread, in any order; a file larger than
//! half the memory is written behind as its boxes land ([`Writeback`]), the one
//! write-behind of every conversion.

use std::fs::File;
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
    /// Held while a box is written: a file system writes one file on one thread at a
    /// time (ext4 and XFS lock the file for each write), and the workers that wait
    /// for it should sleep, not spin in the kernel on a core another could use.
    writing: Mutex<()>,
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
        let too_large = || {
            Error::from(ErrorKind::TooLarge {
                what: "file bytes",
                value: u128::from(data_offset) + u128::from(desc.nbytes()) + tail.len() as u128,
            })
            .at(path)
        };
        let data_end = data_offset
            .checked_add(desc.nbytes())
            .ok_or_else(too_large)?;
        let total = data_end
            .checked_add(tail.len() as u64)
            .ok_or_else(too_large)?;
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
            writing: Mutex::new(()),
        })
    }
}

impl Sink for FileSink {
    fn grain(&self) -> Grain {
        Grain::ColumnMajor
    }

    fn write_box(&self, block: &Block, data: &[u8]) -> Result<()> {
        let at = Placed {
            file: self.new.file(),
            shown: &self.shown,
            data_offset: self.data_offset,
            desc: &self.desc,
            padding: self.padding.as_ref(),
        };
        let _one = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        at.write_box(block, data, &self.queued)
    }

    fn commit(self: Box<Self>) -> Result<Converted> {
        self.new.place()?;
        Ok(Converted::default())
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

/// Where boxes go: the data of an array `desc` at `data_offset` of `file`.
struct Placed<'a> {
    file: &'a File,
    shown: &'a Path,
    data_offset: u64,
    desc: &'a Desc,
    padding: Option<&'a Padding>,
}

impl Placed<'_> {
    /// Writes `data`, the native column-major bytes of `block`, one positioned write per
    /// run, padding zeroed; then queues what it wrote for write-back.
    fn write_box(&self, block: &Block, data: &[u8], queued: &Mutex<Queued>) -> Result<()> {
        let (dims, elbyte) = (&self.desc.dims, self.desc.dtype.elbyte);
        selection::fit(data, block.count() * elbyte).map_err(|e| e.at(self.shown))?;
        let mut first = u64::MAX;
        let mut last = 0u64;
        let mut zeroed = Vec::new();
        for r in selection::runs(dims, elbyte, &block.strides(), 0) {
            let mut bytes = &data[r.to..r.to + r.len];
            if let Some(pad) = self.padding {
                zeroed.clear();
                zeroed.extend_from_slice(bytes);
                pad.zero(&mut zeroed, r.from);
                bytes = &zeroed;
            }
            crate::sys::write_all_at(self.file, bytes, self.data_offset + r.from)
                .map_err(io_at("write", self.shown))?;
            first = first.min(r.from);
            last = last.max(r.from + r.len as u64);
        }
        if first < last {
            Writeback::new(self.file, self.data_offset, self.desc.nbytes(), queued)
                .finished(first as usize..last as usize);
        }
        Ok(())
    }
}

/// Writes `data`, the native column-major bytes of `block`, into the `.ra` file `path`
/// made to be filled in place ([`create_file`](crate::create_file), `ra create`,
/// `rastore.create`): how worker processes, each with boxes of its own, fill one file
/// through the engine (Dask's writes do). One positioned write per run, from any
/// process, in any order; the padding of structured elements zeroed. The box must lie
/// within the dims; the file must hold plain native-order data.
pub fn write_box(path: &Path, block: &Block, data: &[u8]) -> Result<()> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io_at("open", path))?;
    let len = file.metadata().map_err(io_at("stat", path))?.len();
    let h = crate::read::read_header_at_start(&file, len).map_err(|e| e.at(path))?;
    if h.encoding() != crate::header::Encoding::Raw || !h.native_endian() {
        return Err(Error::from(ErrorKind::Unsupported(
            "boxes are written into plain native-order data (a file made by create_file)".into(),
        ))
        .at(path));
    }
    let trailer =
        crate::read::ndl_trailer_of(&file, &h, len).map_err(io_at("read metadata", path))?;
    let desc = Desc {
        dtype: h.dtype(),
        dims: h.dims().to_vec(),
        trailer,
    };
    let bad = block.origin.len() != desc.dims.len()
        || block.shape.len() != desc.dims.len()
        || block
            .origin
            .iter()
            .zip(&block.shape)
            .zip(&desc.dims)
            .any(|((o, n), d)| o.checked_add(*n).is_none_or(|end| end > *d));
    if bad {
        return Err(Error::from(ErrorKind::InvalidArgument(format!(
            "a box at {:?} of {:?} in an array of {:?}",
            block.origin, block.shape, desc.dims
        )))
        .at(path));
    }
    let padding = Padding::of_trailer(&desc.trailer, desc.dtype);
    let at = Placed {
        file: &file,
        shown: path,
        data_offset: h.data_offset(),
        desc: &desc,
        padding: padding.as_ref(),
    };
    at.write_box(block, data, &Mutex::new(Queued::new()))
}
