//! Arrays held in memory: a source over native column-major bytes (a decoded image,
//! decoded LZ4), and a sink that gathers the boxes into such bytes and hands them to
//! an encoder when committed (a PNG, one LZ4 block).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{Block, Converted, Desc, Grain, Sink, Source};
use crate::error::{Error, ErrorKind, Result};
use crate::selection;

/// Native column-major bytes of `desc`'s array, in memory: owned (a decoded image), or
/// borrowed from the caller (an array to write).
pub(crate) struct MemorySource<D = Vec<u8>> {
    pub(crate) desc: Desc,
    pub(crate) data: D,
    pub(crate) shown: PathBuf,
}

/// Copies `block` of the column-major array `data` of `dims` and `elbyte`-byte
/// elements into `out`.
pub(crate) fn copy_box(
    dims: &[u64],
    elbyte: u64,
    data: &[u8],
    block: &Block,
    out: &mut [u8],
) -> Result<()> {
    selection::fit(out, block.count() * elbyte)?;
    for r in selection::runs(dims, elbyte, &block.strides(), 0) {
        let from = r.from as usize;
        out[r.to..r.to + r.len].copy_from_slice(&data[from..from + r.len]);
    }
    Ok(())
}

impl<D: AsRef<[u8]> + Send + Sync> Source for MemorySource<D> {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        Grain::Memory
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        copy_box(
            &self.desc.dims,
            self.desc.dtype.elbyte,
            self.data.as_ref(),
            block,
            out,
        )
    }

    fn read_selection(&self, sel: &[crate::Stride], out: &mut [u8]) -> Result<()> {
        let (w, data) = (self.desc.dtype.elbyte, self.data.as_ref());
        selection::fit(out, selection::bytes_of(sel, w))?;
        for r in selection::runs(&self.desc.dims, w, sel, 0) {
            let from = r.from as usize;
            out[r.to..r.to + r.len].copy_from_slice(&data[from..from + r.len]);
        }
        Ok(())
    }

    fn lend(&self) -> Option<&[u8]> {
        Some(self.data.as_ref())
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

/// What a [`MemorySink`] does with the whole array once committed.
pub(crate) type Finish = Box<dyn FnOnce(&Desc, Vec<u8>) -> Result<Converted> + Send + Sync>;

/// Gathers the boxes of `desc`'s array into memory, then `finish`es it.
pub(crate) struct MemorySink {
    desc: Desc,
    data: Mutex<Vec<u8>>,
    finish: Finish,
    shown: PathBuf,
}

impl MemorySink {
    /// A sink that holds the whole array (refused when it cannot be held) until
    /// `finish` encodes it.
    pub(crate) fn new(desc: Desc, shown: &Path, finish: Finish) -> Result<MemorySink> {
        let n = usize::try_from(desc.nbytes()).map_err(|_| {
            Error::from(ErrorKind::TooLarge {
                what: "data bytes held in memory",
                value: desc.nbytes().into(),
            })
            .at(shown)
        })?;
        Ok(MemorySink {
            desc,
            data: Mutex::new(vec![0u8; n]),
            finish,
            shown: shown.to_path_buf(),
        })
    }
}

impl Sink for MemorySink {
    fn grain(&self) -> Grain {
        Grain::Memory
    }

    fn write_box(&self, block: &Block, data: &[u8]) -> Result<()> {
        let elbyte = self.desc.dtype.elbyte;
        let mut all = self.data.lock().map_err(|_| {
            Error::from(ErrorKind::InvalidArgument(
                "a writer of this sink panicked".into(),
            ))
        })?;
        for r in selection::runs(&self.desc.dims, elbyte, &block.strides(), 0) {
            let at = r.from as usize;
            all[at..at + r.len].copy_from_slice(&data[r.to..r.to + r.len]);
        }
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<Converted> {
        let MemorySink {
            desc, data, finish, ..
        } = *self;
        let data = data.into_inner().map_err(|_| {
            Error::from(ErrorKind::InvalidArgument(
                "a writer of this sink panicked".into(),
            ))
        })?;
        finish(&desc, data)
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}
