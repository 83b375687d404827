//! Editing a file in place of its name: a new metadata trailer, new dims. The file is
//! rewritten (header, data copied byte for byte, trailer) and placed over the old one,
//! or, for a reshape that keeps the header's length and the trailer, only its header
//! is rewritten.

use std::fs::OpenOptions;
use std::io::{self, Read, Write};
use std::path::Path;

use crate::error::{io_at, ErrorKind, Result, ResultExt};
use crate::header::{Encoding, Header};
use crate::read::{data_end_at, open_len, read_header_at, read_header_at_start, read_metadata};
use crate::replace::Placement;
use crate::write::{atomic_write, WriteOptions};

/// Rewrites `path` with the header `new(old header)`, the data segment copied byte for
/// byte, then `trailer` (`None`: the old one, copied too), into a new file placed over
/// `path`: a live mapping of the old file keeps its contents (no file is truncated in
/// place). Returns the new header.
fn rewrite(
    path: &Path,
    how: Placement,
    new: impl FnOnce(&Header) -> Result<Header>,
    trailer: Option<&[u8]>,
) -> Result<Header> {
    let (f, len) = open_len(path)?;
    let old = read_header_at_start(&f, len).at(path)?;
    refuse_appending(&old).at(path)?;
    let header = new(&old).at(path)?;
    let copy_end = match trailer {
        Some(t) => {
            let end = data_end_at(&f, &old, len).at(path)?;
            if end == len && old.encoding() == Encoding::Lz4OrLeb128 && !t.is_empty() {
                return Err(ErrorKind::Unsupported(
                    "a LEB128 file's data runs to end of file: it cannot carry a trailer".into(),
                )
                .into());
            }
            end
        }
        None => len,
    };
    let copy_len = copy_end - old.data_offset();
    let trailer = trailer.unwrap_or_default();
    let size = header.data_offset() + copy_len + trailer.len() as u64;
    let (encoded, data_start) = (header.encode(), old.data_offset());
    // `move`: the old file is closed before the new one takes its name, as Windows
    // cannot replace a file that is open.
    atomic_write(path, how, size, move |w| {
        w.write_all(&encoded).map_err(io_at("write", path))?;
        let mut data = &f;
        io::Seek::seek(&mut data, io::SeekFrom::Start(data_start)).map_err(io_at("seek", path))?;
        let copied = io::copy(&mut data.take(copy_len), w).map_err(io_at("copy", path))?;
        if copied != copy_len {
            return Err(ErrorKind::TruncatedData {
                expected: copy_end,
                actual: data_start + copied,
            }
            .into());
        }
        w.write_all(trailer).map_err(io_at("write", path))
    })
    .at(path)?;
    Ok(header)
}

/// Refuses to rewrite a file that is open for appending: the appender would go on
/// writing to the replaced file.
fn refuse_appending(h: &Header) -> Result<()> {
    if h.flags().appending() {
        return Err(ErrorKind::Appending {
            frames: h.dims().last().copied().unwrap_or(0),
            detail: "finish the appender, or run `ra recover` if it crashed, then retry".into(),
        }
        .into());
    }
    Ok(())
}

/// Replaces the metadata trailer of `path`, leaving header and data as they are
/// (with default [`WriteOptions`]).
pub fn replace_metadata(path: impl AsRef<Path>, trailer: &[u8]) -> Result<()> {
    WriteOptions::new().replace_metadata(path, trailer)
}

/// Gives `path` new dims with the same element count (with default [`WriteOptions`]).
pub fn reshape(path: impl AsRef<Path>, dims: &[u64]) -> Result<Header> {
    WriteOptions::new().reshape(path, dims)
}

impl WriteOptions {
    /// Replaces the metadata trailer of `path`, leaving header and data as they are.
    /// The file is rewritten and placed over the old one (see [`write`](Self::write)).
    pub fn replace_metadata(&self, path: impl AsRef<Path>, trailer: &[u8]) -> Result<()> {
        let how = self.placement();
        rewrite(path.as_ref(), how, |old| Ok(old.clone()), Some(trailer)).map(drop)
    }

    /// Gives `path` new dims with the same element count, in column-major order (the
    /// bytes do not move: NumPy's `reshape(order='F')`). An NDL trailer's `shape` is
    /// brought up to date, everything else in it kept. With the same number of dims
    /// and a trailer that needs no change, the header is rewritten in place (same
    /// length, data untouched, through any symbolic link); otherwise the file is
    /// rewritten.
    pub fn reshape(&self, path: impl AsRef<Path>, dims: &[u64]) -> Result<Header> {
        let path = path.as_ref();
        let (old, _) = read_header_at(path)?;
        refuse_appending(&old).at(path)?;
        let new = old.reshaped(dims).at(path)?;
        let trailer = read_metadata(path)?;
        let updated = crate::ndl::with_shape(&trailer, &new).filter(|t| *t != trailer);
        if let Some(t) = updated {
            rewrite(path, self.placement(), |old| old.reshaped(dims), Some(&t))
        } else if new.ndims() == old.ndims() {
            let f = OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(io_at("open read-write", path))?;
            crate::sys::write_all_at(&f, &new.encode(), 0).map_err(io_at("write header", path))?;
            Ok(new)
        } else {
            rewrite(path, self.placement(), |old| old.reshaped(dims), None)
        }
    }
}
