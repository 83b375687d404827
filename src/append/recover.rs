//! What a crash can leave of an append, how to see it, and its repair.

use std::fs::File;
use std::path::Path;

use super::{close_file, open_locked, release, trailer_sidecar};
use crate::error::{io_at, Error, Result, ResultExt};
use crate::header::Header;
use crate::read::open_len;

/// The state of a file that is open for appending, or was left so by a crash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendState {
    /// Frames the header names (committed).
    pub frames: u64,
    /// Bytes after the committed data: frames written but not committed.
    pub uncommitted_bytes: u64,
    /// Length of the trailer kept in the sidecar, if there is one.
    pub saved_trailer: Option<u64>,
    /// Whether an appender holds the file now (else it needs [`recover`]).
    pub appender_running: bool,
}

/// What [`recover`] did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Recovery {
    /// Whether the file was left open for appending (else nothing needed repair).
    pub repaired: bool,
    /// Frames the file holds.
    pub frames: u64,
    /// Uncommitted bytes dropped from after the data.
    pub dropped_bytes: u64,
    /// Bytes of trailer put back from the sidecar.
    pub trailer_restored: u64,
    /// A sidecar left by a crash around the start or end of appending, when the file's
    /// own trailer was intact, was removed.
    pub stale_sidecar_removed: bool,
    /// The file's length now.
    pub file_len: u64,
}

/// The appending state of `path`: `None` when it is not open for appending.
pub fn append_state(path: impl AsRef<Path>) -> Result<Option<AppendState>> {
    let path = path.as_ref();
    let (file, len) = open_len(path)?;
    let (h, len) = crate::read::read_header_live(&file, len).at(path)?;
    if !h.flags().appending() {
        return Ok(None);
    }
    let appender_running =
        !crate::sys::try_lock(&file, false).map_err(|e| Error::io("lock", e).at(path))?;
    let saved_trailer = std::fs::metadata(trailer_sidecar(path))
        .ok()
        .map(|m| m.len());
    Ok(Some(AppendState {
        frames: frames(&h),
        uncommitted_bytes: len - h.data_end(len),
        saved_trailer,
        appender_running,
    }))
}

fn frames(h: &Header) -> u64 {
    h.dims().last().copied().unwrap_or(0)
}

/// Repairs what a crash while appending can leave: uncommitted bytes after the data
/// are dropped, the trailer comes back from its sidecar, the appending flag is
/// cleared. Refused while an appender holds the file. A file that needs nothing is
/// left as it is (`repaired` false).
pub fn recover(path: impl AsRef<Path>) -> Result<Recovery> {
    let path = path.as_ref();
    let (file, h, len) = open_locked(path)?;
    if h.flags().appending() {
        return repair(&file, path, &h, len);
    }
    let sidecar = trailer_sidecar(path);
    let stale = sidecar.exists();
    if stale {
        std::fs::remove_file(&sidecar).map_err(io_at("remove", &sidecar))?;
    }
    Ok(Recovery {
        frames: frames(&h),
        stale_sidecar_removed: stale,
        file_len: len,
        ..Recovery::default()
    })
}

/// The repair of [`recover`], on a file whose header `h` carries the flag, under the
/// append lock.
pub(super) fn repair(file: &File, path: &Path, h: &Header, len: u64) -> Result<Recovery> {
    let end = h.data_end(len);
    if len > end {
        crate::sys::set_len(file, end).map_err(io_at("truncate", path))?;
    }
    let sidecar = trailer_sidecar(path);
    let trailer = match std::fs::read(&sidecar) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(Error::io("read", e).at(sidecar)),
    };
    let eof = close_file(file, path, h, &trailer, true)?;
    release(file, eof);
    Ok(Recovery {
        repaired: true,
        frames: frames(h),
        dropped_bytes: len - end,
        trailer_restored: trailer.len() as u64,
        stale_sidecar_removed: false,
        file_len: eof,
    })
}
