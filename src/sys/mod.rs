//! The platform layer: every operating-system call the crate makes that differs
//! between platforms, behind one small set of functions. One file per platform
//! family, as memmap2 splits its own: `unix.rs` (Linux and macOS, with the Linux-only
//! pieces under `cfg(target_os = "linux")`) and `windows.rs`. The rest of the crate
//! never says `cfg(unix)`.
//!
//! | task | Linux | macOS | Windows |
//! |---|---|---|---|
//! | positioned reads and writes | `pread`, `pwrite` | `pread`, `pwrite` | `seek_read`, `seek_write` in a loop |
//! | [`preallocate`] a new file | `fallocate` | `fcntl(F_PREALLOCATE)`, then `ftruncate` | `set_len`: nothing reserved |
//! | [`reserve_ahead`] of an append | `fallocate(KEEP_SIZE)` | nothing | nothing |
//! | [`release`] what was reserved | truncate to the length | the same | the same |
//! | a file built unseen | `O_TMPFILE`, then `linkat` | a hidden temporary name | a hidden temporary name |
//! | [`replace`] a file | `rename` | `rename` | `MoveFileExW(REPLACE_EXISTING)` (std's `rename`), read-only attribute kept |
//! | [`carry_over`] mode and owner | `fchmod`, `fchown` | the same | nothing (Windows has neither) |
//! | [`link_count`] | `st_nlink` | `st_nlink` | `nNumberOfLinks` |
//! | [`sync_dir`] after a rename | `fsync` of the folder | the same | nothing (NTFS journals it) |
//! | [`try_lock`] for appending | `flock` (std's `File::try_lock`) | the same | `LockFileEx` of one byte at 2^62 |
//! | [`advise`] a mapping | `madvise` | `madvise` | nothing |
//! | [`advise_file`] a read | `posix_fadvise` | nothing | nothing |
//! | [`open_direct`]: reads around the page cache | `O_DIRECT` | none (buffered) | none (buffered) |
//! | [`physical_memory`] | `sysinfo` | unknown | unknown |
//! | [`write_back`] dirty pages behind a large write | `sync_file_range` | nothing | nothing (the lazy writer paces them) |
//! | [`read_batch`]: many positioned reads at a queue depth | io_uring (`uring.rs`), else a pool of `pread` threads | the pool | the pool of `seek_read` threads |
//!
//! Windows refuses to shrink, replace or delete a file that has a live mapping, in this
//! process or another (`ERROR_USER_MAPPED_FILE`, 1224); every call here that can meet
//! that says so in its error.

#[cfg_attr(unix, path = "unix.rs")]
#[cfg_attr(windows, path = "windows.rs")]
mod imp;
#[cfg(target_os = "linux")]
mod uring;

pub(crate) use imp::*;

use std::fs::File;
use std::io;

/// How a mapping will be used: a hint for [`MappedRa::advise`](crate::MappedRa::advise).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Advice {
    /// No particular order (the kernel's default read-ahead).
    Normal,
    /// Front to back: read ahead aggressively, drop pages behind.
    Sequential,
    /// Scattered: read ahead nothing.
    Random,
    /// This range will be needed soon: start reading it now.
    WillNeed,
}

/// How a range of a file will be read: a hint for scans ([`crate::scan`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileAdvice {
    /// Front to back: read ahead more.
    Sequential,
    /// Scattered: read ahead nothing (each read brings only what it asks for).
    Random,
    /// Done with: its cached pages may go.
    DontNeed,
}

/// What [`write_back`] does with a range's dirty pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteBack {
    /// Queue them for writing and return.
    Start,
    /// Queue them and wait until they, and any queued before, are written.
    Finish,
}

/// How a batch of reads is issued ([`read_batch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// io_uring where the kernel offers it (Linux), else [`Threads`](Engine::Threads).
    #[default]
    Auto,
    /// io_uring, one thread keeping the queue full; where the kernel has none or
    /// refuses it (an old kernel, a seccomp filter), the threads.
    Uring,
    /// A pool of threads, each with one positioned read in flight.
    Threads,
}

/// One read of a batch: `buf.len()` bytes at `offset`.
#[derive(Debug)]
pub(crate) struct ReadAt<'a> {
    pub(crate) offset: u64,
    pub(crate) buf: &'a mut [u8],
}

/// Reads every `reads[i].buf` whole from its offset, `depth` reads in flight at once,
/// as `engine` says. A read that meets the end of the file is `UnexpectedEof`; the first
/// error is the result (and every read in flight has finished when it is returned).
pub(crate) fn read_batch(
    file: &File,
    reads: &mut [ReadAt<'_>],
    engine: Engine,
    depth: usize,
) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if engine != Engine::Threads {
        match uring::read_batch(file, reads, depth) {
            Err(uring::Unavailable) => {}
            Ok(r) => return r,
        }
    }
    let _ = engine;
    read_batch_threads(file, reads, depth)
}

/// [`read_batch`] on `depth` threads, each taking the next read when done with one.
fn read_batch_threads(file: &File, reads: &mut [ReadAt<'_>], depth: usize) -> io::Result<()> {
    let threads = depth.clamp(1, reads.len().max(1));
    let next = std::sync::Mutex::new(reads.iter_mut());
    let failed = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let read = match next.lock() {
                    Ok(mut it) => it.next(),
                    Err(_) => return,
                };
                let Some(read) = read else {
                    return;
                };
                if let Err(e) = imp::read_exact_at(file, read.buf, read.offset) {
                    if let Ok(mut f) = failed.lock() {
                        f.get_or_insert(e);
                    }
                    return;
                }
            });
        }
    });
    match failed.into_inner() {
        Ok(Some(e)) => Err(e),
        _ => Ok(()),
    }
}

/// The alignment of offsets, lengths and buffers for a file from [`open_direct`].
pub(crate) const DIRECT_ALIGN: usize = 4096;
