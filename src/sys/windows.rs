//! Windows.
//!
//! What differs from Unix, and why:
//! - Windows refuses to shrink, replace or delete a file while a mapping of it is open
//!   (`ERROR_USER_MAPPED_FILE`, 1224), in this process or another; [`explain`] turns that
//!   code into a message that says so.
//! - Byte-range locks are mandatory: std's `File::try_lock` locks the whole file, and
//!   every other handle's reads of it would then fail. The append lock is one byte at
//!   2^62, far past any data, as SQLite locks a byte past the data it guards.
//! - Nothing is reserved past the end of a file (the platform has no such call that
//!   leaves the length alone and that Wine, where this code is tested, implements).
//! - Files have no Unix mode or owner; the read-only attribute is kept on a rewrite.

use std::fs::{File, Metadata};
use std::io;
use std::ops::Range;
use std::os::windows::fs::FileExt;
use std::os::windows::io::AsRawHandle;
use std::path::Path;

use memmap2::Mmap;
use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_LOCK_VIOLATION, ERROR_SHARING_VIOLATION, ERROR_USER_MAPPED_FILE,
};
use windows_sys::Win32::Storage::FileSystem::{
    GetFileInformationByHandle, LockFileEx, BY_HANDLE_FILE_INFORMATION, LOCKFILE_EXCLUSIVE_LOCK,
    LOCKFILE_FAIL_IMMEDIATELY,
};
use windows_sys::Win32::System::IO::OVERLAPPED;

use super::{Advice, Direct, FileAdvice, WriteBack};

/// Reads up to `buf.len()` bytes at `offset` (the file's cursor moves; rastore never
/// reads a file through its cursor).
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    file.seek_read(buf, offset)
}

/// Reads exactly `buf.len()` bytes at `offset`.
pub(crate) fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Whether bytes are in the page cache: Windows does not tell (`None`).
pub(crate) fn is_cached(file: &File, offset: u64, len: u64) -> Option<bool> {
    let _ = (file, offset, len);
    None
}

/// Writes all of `buf` at `offset`.
pub(crate) fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.seek_write(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => {
                buf = &buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Makes `file` `len` bytes long. NTFS allocates the clusters of a file that is not
/// sparse when its end moves, so a full disk is this error here too.
pub(crate) fn preallocate(file: &File, len: u64) -> io::Result<()> {
    file.set_len(len).map_err(explain)
}

/// Nothing is reserved ahead on Windows: `Ok(false)`.
pub(crate) fn reserve_ahead(file: &File, offset: u64, len: u64) -> io::Result<bool> {
    let _ = (file, offset, len);
    Ok(false)
}

/// Sets the length of `file`; shrinking a mapped file is refused, and said so.
pub(crate) fn set_len(file: &File, len: u64) -> io::Result<()> {
    file.set_len(len).map_err(explain)
}

/// Truncates `file` to its own length (nothing was reserved past it on Windows; the
/// same call as elsewhere, best effort).
pub(crate) fn release(file: &File, len: u64) {
    let _ = file.set_len(len);
}

/// No unnamed files on Windows: `None` (a hidden temporary name is used instead).
pub(crate) fn open_unnamed(dir: &Path) -> Option<File> {
    let _ = dir;
    None
}

/// Never called: [`open_unnamed`] gives no file to name.
pub(crate) fn link_unnamed(file: &File, to: &Path) -> io::Result<()> {
    let _ = (file, to);
    Err(io::ErrorKind::Unsupported.into())
}

/// Windows files have no mode or owner to carry over (the read-only attribute is
/// kept by [`replace`]).
pub(crate) fn carry_over(file: &File, old: &Metadata) -> io::Result<()> {
    let _ = (file, old);
    Ok(())
}

/// Replaces `to` with `from` (`MoveFileExW` with `MOVEFILE_REPLACE_EXISTING`, what
/// std's `rename` does). A read-only `to` (`old`) is replaced too, and the new file is
/// made read-only. Windows refuses to replace a file that is open without sharing
/// deletion, or mapped: the error says so.
pub(crate) fn replace(from: &Path, to: &Path, old: Option<&Metadata>) -> io::Result<()> {
    let read_only = old.is_some_and(|m| m.permissions().readonly());
    if read_only {
        set_read_only(to, false)?;
    }
    match std::fs::rename(from, to) {
        Ok(()) if read_only => set_read_only(to, true),
        Ok(()) => Ok(()),
        Err(e) => {
            if read_only {
                let _ = set_read_only(to, true);
            }
            Err(refused_replace(e))
        }
    }
}

fn set_read_only(path: &Path, yes: bool) -> io::Result<()> {
    let mut p = std::fs::metadata(path)?.permissions();
    p.set_readonly(yes);
    std::fs::set_permissions(path, p)
}

/// How many names (hard links) the file at `path` has.
pub(crate) fn link_count(meta: &Metadata, path: &Path) -> io::Result<u64> {
    let _ = meta;
    let file = File::open(path)?;
    let mut info = BY_HANDLE_FILE_INFORMATION::default();
    // SAFETY: FFI with the handle of `file`, open for the whole call, and a pointer to
    // a struct of the size the function writes.
    let ok = unsafe { GetFileInformationByHandle(file.as_raw_handle(), &mut info) };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info.nNumberOfLinks.into())
}

/// Swaps the names `a` and `b` in one step: Windows has no such call, so `Ok(false)`
/// and nothing done (the caller renames twice).
pub(crate) fn exchange(a: &Path, b: &Path) -> io::Result<bool> {
    let _ = (a, b);
    Ok(false)
}

/// Nothing to sync: std cannot open a folder on Windows, and NTFS journals renames.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    let _ = dir;
    Ok(())
}

/// The byte the append lock covers: far past any file's data, so that the lock
/// (mandatory on Windows) never stands in a reader's way.
const LOCK_BYTE: u64 = 1 << 62;

/// Takes the append lock on `file` without waiting: exclusive, or shared; `Ok(false)`
/// when another handle holds it. `LockFileEx` of one byte at 2^62, released when the
/// handle closes.
pub(crate) fn try_lock(file: &File, exclusive: bool) -> io::Result<bool> {
    let mut overlapped = OVERLAPPED::default();
    overlapped.Anonymous.Anonymous.Offset = LOCK_BYTE as u32;
    overlapped.Anonymous.Anonymous.OffsetHigh = (LOCK_BYTE >> 32) as u32;
    let flags = LOCKFILE_FAIL_IMMEDIATELY
        | if exclusive {
            LOCKFILE_EXCLUSIVE_LOCK
        } else {
            0
        };
    // SAFETY: FFI with the handle of `file`, open for the whole call, and an OVERLAPPED
    // that lives through it (the handle is synchronous, so the call completes before it
    // returns).
    let ok = unsafe { LockFileEx(file.as_raw_handle(), flags, 0, 1, 0, &mut overlapped) };
    if ok != 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// What a mapped file's refusal means (error 1224), in words; other errors as they are.
fn explain(e: io::Error) -> io::Error {
    if e.raw_os_error() == Some(ERROR_USER_MAPPED_FILE as i32) {
        io::Error::new(
            io::ErrorKind::ResourceBusy,
            "a mapping of this file is open, in this process or another: Windows cannot \
             shrink, replace or delete a mapped file; close the mapping (drop the MappedRa, \
             delete the arrays over it) and retry (os error 1224)",
        )
    } else {
        e
    }
}

/// A refused replacement, in words: the target is open elsewhere, or mapped.
fn refused_replace(e: io::Error) -> io::Error {
    let code = e.raw_os_error();
    let denied = [
        ERROR_ACCESS_DENIED,
        ERROR_SHARING_VIOLATION,
        ERROR_USER_MAPPED_FILE,
    ];
    match code {
        Some(c) if denied.iter().any(|&d| d as i32 == c) => io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!(
                "Windows refused to replace the file: it is mapped (a MappedRa, an array \
                 over it) or open without shared deletion, in this process or another; \
                 close it and retry (os error {c})"
            ),
        ),
        _ => explain(e),
    }
}

/// Windows takes no advice here: a no-op.
pub(crate) fn advise(map: &Mmap, advice: Advice, range: Option<Range<usize>>) {
    let _ = (map, advice, range);
}

/// Reads around the cache (`FILE_FLAG_NO_BUFFERING`) are not used: buffered reads.
pub(crate) fn open_direct(_file: &File) -> Option<Direct> {
    None
}

/// No file advice on Windows (its cache manager detects sequential reads itself).
pub(crate) fn advise_file(_file: &File, _advice: FileAdvice, _range: Range<u64>) {}

/// No write-behind on Windows: its cache manager's lazy writer paces dirty pages itself.
pub(crate) fn write_back(_file: &File, _range: Range<u64>, _how: WriteBack) {}

/// Not asked on Windows: scans there read through the cache.
pub(crate) fn physical_memory() -> Option<u64> {
    None
}

/// Calls `f` at each Ctrl-C or Ctrl-Break, and when the console is closed or the user
/// logs off or the system shuts down, with the exit status Windows' own handling ends
/// a process with (`STATUS_CONTROL_C_EXIT`), instead of ending the process. `f` runs on
/// the thread Windows starts for the event, which is not to return before the process
/// ends (a closed console ends it when the handler returns). A process started with
/// Ctrl-C ignored (`CREATE_NEW_PROCESS_GROUP`) still ignores it.
#[cfg(feature = "signals")]
pub(crate) fn on_interrupt(f: fn(i32)) -> io::Result<()> {
    use std::sync::OnceLock;
    use windows_sys::core::BOOL;
    use windows_sys::Win32::Foundation::STATUS_CONTROL_C_EXIT;
    use windows_sys::Win32::System::Console::{
        SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_C_EVENT, CTRL_LOGOFF_EVENT,
        CTRL_SHUTDOWN_EVENT,
    };
    static HANDLER: OnceLock<fn(i32)> = OnceLock::new();
    unsafe extern "system" fn routine(event: u32) -> BOOL {
        let ours = matches!(
            event,
            CTRL_C_EVENT
                | CTRL_BREAK_EVENT
                | CTRL_CLOSE_EVENT
                | CTRL_LOGOFF_EVENT
                | CTRL_SHUTDOWN_EVENT
        );
        match HANDLER.get() {
            Some(f) if ours => {
                f(STATUS_CONTROL_C_EXIT);
                1
            }
            _ => 0,
        }
    }
    if HANDLER.set(f).is_err() {
        return Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            "the interrupt handler is already set",
        ));
    }
    // SAFETY: FFI; `routine` is a function of the program, there for its whole life.
    if unsafe { SetConsoleCtrlHandler(Some(routine), 1) } == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
