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
//!
//! Windows refuses to shrink, replace or delete a file that has a live mapping, in this
//! process or another (`ERROR_USER_MAPPED_FILE`, 1224); every call here that can meet
//! that says so in its error.

#[cfg_attr(unix, path = "unix.rs")]
#[cfg_attr(windows, path = "windows.rs")]
mod imp;

pub(crate) use imp::*;

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

/// The alignment of offsets, lengths and buffers for a file from [`open_direct`].
pub(crate) const DIRECT_ALIGN: usize = 4096;
