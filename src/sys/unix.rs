//! Linux and macOS (and the other Unixes rustix serves). The Linux-only pieces, under
//! `cfg(target_os = "linux")`: unnamed files (`O_TMPFILE`, `linkat`) and space
//! reserved without changing the length (`fallocate(KEEP_SIZE)`).

use std::fs::{File, Metadata};
use std::io;
use std::ops::Range;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::path::Path;

use memmap2::Mmap;
use rustix::fs::FallocateFlags;
use rustix::io::Errno;

use super::{Advice, Direct, FileAdvice, WriteBack};

/// Reads up to `buf.len()` bytes at `offset`, without moving the file's cursor.
pub(crate) fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    file.read_at(buf, offset)
}

/// Reads exactly `buf.len()` bytes at `offset`, without moving the file's cursor.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    file.read_exact_at(buf, offset)
}

/// Whether all of `len` bytes at `offset` of `file` are in the page cache, asked
/// without reading anything (`cachestat`, Linux 6.5): `None` where the kernel cannot
/// tell.
pub(crate) fn is_cached(file: &File, offset: u64, len: u64) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        /// `struct cachestat_range` of the kernel's uapi.
        #[repr(C)]
        struct Range {
            off: u64,
            len: u64,
        }
        /// `struct cachestat` of the kernel's uapi.
        #[repr(C)]
        #[derive(Default)]
        struct Stat {
            nr_cache: u64,
            nr_dirty: u64,
            nr_writeback: u64,
            nr_evicted: u64,
            nr_recently_evicted: u64,
        }
        /// `cachestat`'s number, the same on every Linux architecture.
        const SYS_CACHESTAT: libc::c_long = 451;
        if len == 0 {
            return Some(true);
        }
        let range = Range { off: offset, len };
        let mut stat = Stat::default();
        // SAFETY: cachestat reads `range` and writes `stat`, both live locals of the
        // layout the kernel's uapi gives them; the descriptor is borrowed from `file`,
        // open for the whole call; flags must be 0.
        let r = unsafe {
            libc::syscall(
                SYS_CACHESTAT,
                file.as_raw_fd(),
                &range as *const Range,
                &mut stat as *mut Stat,
                0u32,
            )
        };
        if r != 0 {
            return None;
        }
        let page = rustix::param::page_size() as u64;
        let pages = (offset + len).div_ceil(page) - offset / page;
        Some(stat.nr_cache >= pages)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, offset, len);
        None
    }
}

/// Writes all of `buf` at `offset`, without moving the file's cursor.
pub(crate) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    file.write_all_at(buf, offset)
}

/// Whether a file system said it cannot do what was asked (rather than failing).
fn unsupported(e: Errno) -> bool {
    e == Errno::OPNOTSUPP || e == Errno::NOTSUP || e == Errno::NOSYS
}

/// Makes `file` `len` bytes long with the space really reserved, so that a full disk
/// is this error and never a `SIGBUS` on a later page fault: `fallocate` on Linux,
/// `fcntl(F_PREALLOCATE)` then `ftruncate` on macOS. A file system that cannot
/// reserve space (some network ones) gets the length alone.
pub(crate) fn preallocate(file: &File, len: u64) -> io::Result<()> {
    match rustix::fs::fallocate(file, FallocateFlags::empty(), 0, len) {
        Err(e) if unsupported(e) => file.set_len(len),
        r => r.map_err(io::Error::from),
    }
}

/// Reserves disk space for `len` bytes from `offset` without changing the file's
/// length, so that readers never see it; `Ok(false)` where the platform or the file
/// system cannot (then nothing is reserved, and a full disk is an error of the write
/// that needs the space).
pub(crate) fn reserve_ahead(file: &File, offset: u64, len: u64) -> io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        match rustix::fs::fallocate(file, FallocateFlags::KEEP_SIZE, offset, len) {
            Ok(()) => Ok(true),
            Err(e) if unsupported(e) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, offset, len);
        Ok(false)
    }
}

/// Sets the length of `file` (shrinking drops what lies past it).
pub(crate) fn set_len(file: &File, len: u64) -> io::Result<()> {
    file.set_len(len)
}

/// Gives back the space reserved past the end of `file`, `len` long: truncating a
/// file to its own length frees the blocks allocated beyond it (ext4, XFS, btrfs;
/// punching a hole past the end frees nothing on ext4). Best effort: the length does
/// not change, so no reader can tell.
pub(crate) fn release(file: &File, len: u64) {
    let _ = file.set_len(len);
}

/// Opens a new file in `dir` that has no name yet, where the platform and the file
/// system can (Linux `O_TMPFILE`); `None` elsewhere.
pub(crate) fn open_unnamed(dir: &Path) -> Option<File> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{openat, Mode, OFlags, CWD};
        let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
        openat(CWD, dir, flags, Mode::from_raw_mode(0o666))
            .ok()
            .map(File::from)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = dir;
        None
    }
}

/// Gives a file from [`open_unnamed`] the name `to`; fails with `AlreadyExists` if it
/// is taken. By descriptor where the process may (root; no path lookup in `/proc`),
/// else through `/proc/self/fd`.
pub(crate) fn link_unnamed(file: &File, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        use rustix::fs::{linkat, AtFlags, CWD};
        match linkat(file, "", CWD, to, AtFlags::EMPTY_PATH) {
            Ok(()) => return Ok(()),
            Err(Errno::NOENT | Errno::PERM | Errno::INVAL) => {}
            Err(e) => return Err(e.into()),
        }
        link_by_proc(file, to)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, to);
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// [`link_unnamed`] through `/proc/self/fd`, which any process may use.
#[cfg(target_os = "linux")]
pub(crate) fn link_by_proc(file: &File, to: &Path) -> io::Result<()> {
    use rustix::fs::{linkat, AtFlags, CWD};
    use std::os::fd::AsRawFd;
    let proc_path = format!("/proc/self/fd/{}", file.as_raw_fd());
    linkat(CWD, proc_path.as_str(), CWD, to, AtFlags::SYMLINK_FOLLOW).map_err(io::Error::from)
}

/// Gives the new `file` what the file it replaces had (`old`): its owner and group
/// where the process may set them, and its permission bits.
pub(crate) fn carry_over(file: &File, old: &Metadata) -> io::Result<()> {
    let new = file.metadata()?;
    // Owner first: changing it may clear set-id bits that the mode restores. Only the
    // owner (or root) may give a file away: otherwise keep ours.
    let chowned = (old.uid(), old.gid()) != (new.uid(), new.gid())
        && rustix::fs::fchown(
            file,
            Some(rustix::fs::Uid::from_raw(old.uid())),
            Some(rustix::fs::Gid::from_raw(old.gid())),
        )
        .is_ok();
    if chowned || old.mode() & 0o7777 != new.mode() & 0o7777 {
        file.set_permissions(std::fs::Permissions::from_mode(old.mode() & 0o7777))?;
    }
    Ok(())
}

/// Renames `from` over `to` in one atomic step (`old`: what `to` was, if anything).
pub(crate) fn replace(from: &Path, to: &Path, old: Option<&Metadata>) -> io::Result<()> {
    let _ = old;
    std::fs::rename(from, to)
}

/// Swaps the names `a` and `b` (two folders, or files) in one atomic step:
/// `renameat2(RENAME_EXCHANGE)` on Linux, `renameatx_np(RENAME_SWAP)` on macOS.
/// `Ok(false)` where the file system cannot, and nothing was done.
#[cfg(any(target_os = "linux", target_vendor = "apple"))]
pub(crate) fn exchange(a: &Path, b: &Path) -> io::Result<bool> {
    use rustix::fs::{renameat_with, RenameFlags, CWD};
    match renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE) {
        Ok(()) => Ok(true),
        Err(Errno::INVAL | Errno::NOSYS | Errno::NOTSUP) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// How many names (hard links) the file of `meta`, at `path`, has.
pub(crate) fn link_count(meta: &Metadata, path: &Path) -> io::Result<u64> {
    let _ = path;
    Ok(meta.nlink())
}

/// Syncs the folder `dir`, so that a rename in it survives a power loss.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir).and_then(|d| d.sync_all())
}

/// Takes the append lock on `file` without waiting: exclusive (an appender, a
/// recovery) or shared (a look at whether one runs); `Ok(false)` when another
/// process holds it. `flock`, through std's `File::try_lock`.
pub(crate) fn try_lock(file: &File, exclusive: bool) -> io::Result<bool> {
    let r = if exclusive {
        file.try_lock()
    } else {
        file.try_lock_shared()
    };
    match r {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Tells the kernel how `range` of `map` (all of it: `None`) will be used. A hint:
/// errors are ignored.
pub(crate) fn advise(map: &Mmap, advice: Advice, range: Option<Range<usize>>) {
    let advice = match advice {
        Advice::Normal => memmap2::Advice::Normal,
        Advice::Sequential => memmap2::Advice::Sequential,
        Advice::Random => memmap2::Advice::Random,
        Advice::WillNeed => memmap2::Advice::WillNeed,
    };
    let _ = match range {
        Some(r) if !r.is_empty() => map.advise_range(advice, r.start, r.len()),
        Some(_) => Ok(()),
        None => map.advise(advice),
    };
}

/// Opens `file` again for reading around the page cache, where the platform can:
/// `O_DIRECT` on Linux, through `/proc/self/fd`, so that it is the same file even if
/// its name now points at another. Its reads' offsets and lengths are aligned to what
/// the file system asks (`statx`'s `STATX_DIOALIGN`, Linux 6.1: the device's logical
/// block, often 512 bytes) or else to [`DIRECT_ALIGN`]. `None` where it cannot (macOS,
/// no `/proc`, or a file system that refuses it, such as tmpfs).
#[cfg(target_os = "linux")]
pub(crate) fn open_direct(file: &File) -> Option<Direct> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let again = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::DIRECT.bits() as i32)
        .open(format!("/proc/self/fd/{}", file.as_raw_fd()))
        .ok()?;
    let (a, b) = (file.metadata().ok()?, again.metadata().ok()?);
    if a.dev() != b.dev() || a.ino() != b.ino() {
        return None;
    }
    let align = direct_align(&again);
    Some(Direct { file: again, align })
}

/// The alignment of a direct read's offset and length in `file`: the file system's,
/// when it says and it divides [`DIRECT_ALIGN`] (to which buffers are aligned), else
/// [`DIRECT_ALIGN`].
#[cfg(target_os = "linux")]
fn direct_align(file: &File) -> usize {
    use super::DIRECT_ALIGN;
    use rustix::fs::{statx, AtFlags, StatxFlags};
    let Ok(st) = statx(file, "", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN) else {
        return DIRECT_ALIGN;
    };
    let (offset, memory) = (
        st.stx_dio_offset_align as usize,
        st.stx_dio_mem_align as usize,
    );
    let said = StatxFlags::from_bits_retain(st.stx_mask).contains(StatxFlags::DIOALIGN);
    let fits = |a: usize| a.is_power_of_two() && DIRECT_ALIGN.is_multiple_of(a);
    if said && fits(offset) && fits(memory) {
        offset
    } else {
        DIRECT_ALIGN
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn open_direct(_file: &File) -> Option<Direct> {
    None
}

/// Tells the kernel how `range` of `file` will be used (`posix_fadvise` on Linux;
/// nothing elsewhere). A hint: errors are ignored.
#[cfg(target_os = "linux")]
pub(crate) fn advise_file(file: &File, advice: FileAdvice, range: Range<u64>) {
    use rustix::fs::Advice as A;
    let advice = match advice {
        FileAdvice::Sequential => A::Sequential,
        FileAdvice::Random => A::Random,
        FileAdvice::DontNeed => A::DontNeed,
    };
    let len = std::num::NonZeroU64::new(range.end.saturating_sub(range.start));
    let _ = rustix::fs::fadvise(file, range.start, len, advice);
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn advise_file(_file: &File, _advice: FileAdvice, _range: Range<u64>) {}

/// Writes back the dirty pages of `range` of `file` (`sync_file_range` on Linux;
/// nothing elsewhere): [`WriteBack::Start`] queues them and returns, [`WriteBack::Finish`]
/// also waits until they are on the disk. Not a sync (no metadata, no cache flush): it
/// keeps a large write's dirty pages few. Errors are ignored (a later sync reports them).
#[cfg(target_os = "linux")]
pub(crate) fn write_back(file: &File, range: Range<u64>, how: WriteBack) {
    use std::os::fd::AsRawFd;
    let flags = match how {
        WriteBack::Start => libc::SYNC_FILE_RANGE_WRITE,
        WriteBack::Finish => {
            libc::SYNC_FILE_RANGE_WAIT_BEFORE
                | libc::SYNC_FILE_RANGE_WRITE
                | libc::SYNC_FILE_RANGE_WAIT_AFTER
        }
    };
    let len = range.end.saturating_sub(range.start);
    let (Ok(offset), Ok(len)) = (i64::try_from(range.start), i64::try_from(len)) else {
        return;
    };
    // SAFETY: sync_file_range takes no pointers; the descriptor is borrowed from `file`,
    // open for the whole call.
    let _ = unsafe { libc::sync_file_range(file.as_raw_fd(), offset, len, flags) };
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn write_back(_file: &File, _range: Range<u64>, _how: WriteBack) {}

/// The machine's physical memory in bytes, where the platform tells it cheaply
/// (`sysinfo` on Linux).
#[cfg(target_os = "linux")]
// `totalram` is a C `unsigned long`: u64 here, u32 on 32-bit targets.
#[allow(clippy::useless_conversion)]
pub(crate) fn physical_memory() -> Option<u64> {
    let i = rustix::system::sysinfo();
    Some(u64::from(i.totalram).saturating_mul(u64::from(i.mem_unit)))
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn physical_memory() -> Option<u64> {
    None
}

/// Calls `f`, on a thread of its own, at each SIGINT, SIGTERM or SIGHUP, with the exit
/// status shells give a process that signal ends (128 and its number: 130, 143, 129),
/// instead of ending the process. A signal the process was started ignoring (`nohup`,
/// a shell's background job) stays ignored. signal-hook's handler only writes to a
/// pipe, which a thread of its own reads.
#[cfg(feature = "signals")]
pub(crate) fn on_interrupt(f: fn(i32)) -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let wanted: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
        .into_iter()
        .filter(|&s| !ignored(s))
        .collect();
    let mut signals = signal_hook::iterator::Signals::new(wanted)?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                std::thread::spawn(move || f(128 + signal));
            }
        })?;
    Ok(())
}

/// Whether `signal` is ignored (`SIG_IGN`), as a process started by `nohup` finds
/// SIGHUP.
#[cfg(feature = "signals")]
fn ignored(signal: i32) -> bool {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: with no new action, sigaction only writes the current one into `old`,
    // a live local of the type it writes.
    let r = unsafe { libc::sigaction(signal, std::ptr::null(), old.as_mut_ptr()) };
    // SAFETY: zeroed, then written by a successful sigaction; a zeroed sigaction is a
    // valid value of the type (plain integers, pointers and a mask).
    r == 0 && unsafe { old.assume_init() }.sa_sigaction == libc::SIG_IGN
}
