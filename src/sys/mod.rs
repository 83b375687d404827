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
//! | [`exchange`] two names (a dataset replaced) | `renameat2(RENAME_EXCHANGE)` | `renameatx_np(RENAME_SWAP)` | none: two renames |
//! | [`sync_dir`] after a rename | `fsync` of the folder | the same | nothing (NTFS journals it) |
//! | [`try_lock`] for appending, and a hidden output's lock ([`crate::leftovers`]) | `flock` (std's `File::try_lock`) | the same | `LockFileEx` of one byte at 2^62 |
//! | `on_interrupt` (feature `signals`) | SIGINT, SIGTERM, SIGHUP through signal-hook (a pipe, a thread), unless ignored; 128 + the signal | the same | `SetConsoleCtrlHandler`: Ctrl-C, Ctrl-Break, close, logoff, shutdown; `STATUS_CONTROL_C_EXIT` |
//! | [`advise`] a mapping | `madvise` | `madvise` | nothing |
//! | [`advise_file`] a read | `posix_fadvise` | nothing | nothing |
//! | [`open_direct`]: reads around the page cache | `O_DIRECT`, aligned as `statx` (`STATX_DIOALIGN`) says, else to 4 KiB | none (buffered) | none (buffered) |
//! | [`physical_memory`] | `sysinfo` | unknown | unknown |
//! | [`write_back`] dirty pages behind a large write | `sync_file_range` | nothing | nothing (the lazy writer paces them) |
//! | [`read_stream`]: many positioned reads at a queue depth | io_uring (`uring.rs`), else a pool of `pread` threads; what the page cache holds (`cachestat`) copied from it, the rest `O_DIRECT` through a file opened again by `/proc/self/fd`; ring and buffers kept between batches | the pool, buffered | the pool of `seek_read` threads, buffered |
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

/// How a batch of reads is issued (`read_stream`).
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

/// One read of a [`read_stream`]: `len` bytes at `offset`, into `target` (the
/// caller's memory, `len` long) when there is one, else handed to the stream's `done`.
#[derive(Debug)]
pub(crate) struct StreamRead<'a> {
    pub(crate) offset: u64,
    pub(crate) len: usize,
    pub(crate) target: Option<&'a mut [u8]>,
}

/// The file a stream reads.
pub(crate) struct StreamFile<'a> {
    /// Opened as usual: reads through the page cache.
    pub(crate) cached: &'a File,
    /// The same file around the page cache ([`open_direct`]), where it can be. Then a
    /// read whose bytes are all in the page cache ([`is_cached`]) is read from it, at
    /// memory speed, and any other around it, through an aligned buffer, at the
    /// device's speed, without filling the cache with scattered pages no one will
    /// read again.
    pub(crate) direct: Option<&'a Direct>,
    /// Its length: no direct read goes past its last whole block.
    pub(crate) len: u64,
}

/// How a read of a stream is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Around the page cache, aligned, into a buffer of the stream's.
    Direct,
    /// Through the page cache.
    Buffered,
}

/// The bytes of `[offset, offset + len)` a direct read covers: from the block of
/// `align` bytes it starts in to the end of the one it ends in.
fn aligned(offset: u64, len: usize, align: usize) -> (u64, usize) {
    let a = align as u64;
    let from = offset / a * a;
    let to = (offset + len as u64).div_ceil(a) * a;
    (from, (to - from) as usize)
}

/// A read of a stream, and how it is made.
struct Item<'r, 'a> {
    /// Its place in the stream (what `done` is told).
    index: usize,
    phase: Phase,
    read: &'r mut StreamRead<'a>,
}

impl Item<'_, '_> {
    /// Whether the read needs a buffer of the stream's: it is read around the cache
    /// (aligned), or has no target.
    fn needs_slot(&self) -> bool {
        self.phase == Phase::Direct || self.read.target.is_none()
    }
}

/// Reads probed for residency before a batch is taken to be all cached, or all not.
pub(crate) const PROBES: usize = 8;

/// Which of `reads` the page cache holds: each one asked ([`imp::is_cached`]) unless
/// [`PROBES`] of them spread over the batch agree, as they do when a file is cached
/// whole or not at all.
fn residency(file: &StreamFile<'_>, reads: &[StreamRead<'_>]) -> Vec<bool> {
    let ask =
        |r: &StreamRead<'_>| imp::is_cached(file.cached, r.offset, r.len as u64) == Some(true);
    let step = (reads.len() / PROBES).max(1);
    let probes: Vec<bool> = reads.iter().step_by(step).take(PROBES).map(ask).collect();
    match (probes.iter().all(|&c| c), probes.iter().any(|&c| c)) {
        (true, _) => vec![true; reads.len()],
        (_, false) => vec![false; reads.len()],
        _ => reads.iter().map(ask).collect(),
    }
}

/// How a read is made: around the page cache when the stream can, it is not cached,
/// and its blocks lie within the file; else through the cache.
fn phase(file: &StreamFile<'_>, read: &StreamRead<'_>, cached: bool) -> Phase {
    let Some(direct) = file.direct else {
        return Phase::Buffered;
    };
    let (from, n) = aligned(read.offset, read.len, direct.align);
    let whole = file.len / direct.align as u64 * direct.align as u64;
    if !cached && from + n as u64 <= whole {
        Phase::Direct
    } else {
        Phase::Buffered
    }
}

/// Most bytes of buffers a stream holds for reads without a target.
const SLOT_BYTES: usize = 64 << 20;

/// Most bytes of those buffers a [`Streamer`] keeps between streams: the 128 slots of
/// 16 KiB samples (2.5 MiB) are kept, the 63 of 1 MiB samples are not.
const KEEP_BYTES: usize = 8 << 20;

/// What a reader keeps from one [`read_stream`] to the next, so that a batch of a few
/// hundred reads does not pay for its setup each time: the slots' memory (zeroed once,
/// not once per batch: up to [`KEEP_BYTES`]) and, on Linux, the io_uring ring. A
/// batch that finds it in use makes its own.
#[derive(Default)]
pub(crate) struct Streamer {
    arena: Vec<u8>,
    ring: KeptRing,
}

/// The io_uring ring a [`Streamer`] keeps, once made.
#[cfg(target_os = "linux")]
type KeptRing = Option<uring::Ring>;
/// No ring to keep: reads go to the threads.
#[cfg(not(target_os = "linux"))]
type KeptRing = ();

/// Buffers for the reads of a stream that have no target or read around the cache:
/// `count` of `size` bytes, each aligned for direct reads, in the [`Streamer`]'s
/// memory, grown when first needed (a stream of cached reads into targets needs
/// none). Only io_uring (Linux) reads into them; the threads engine uses their size
/// alone.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct Slots<'k> {
    arena: &'k mut Vec<u8>,
    size: usize,
    count: usize,
    free: Vec<usize>,
}

impl<'k> Slots<'k> {
    /// Slots for `reads` (those that need one): one per read, at most `most` of them
    /// and [`SLOT_BYTES`] in all (at least one), each large enough for any of them read
    /// around the cache.
    fn for_reads<'r, 'a: 'r>(
        reads: impl Iterator<Item = &'r StreamRead<'a>>,
        most: usize,
        arena: &'k mut Vec<u8>,
    ) -> Slots<'k> {
        let (reads, longest) = reads.fold((0, 0), |(n, longest), r| {
            (n + 1, longest.max(aligned(r.offset, r.len, DIRECT_ALIGN).1))
        });
        let size = longest.next_multiple_of(DIRECT_ALIGN);
        let count = SLOT_BYTES
            .checked_div(size)
            .map_or(0, |fit| reads.min(most).min(fit).max(1));
        Slots {
            arena,
            size,
            count,
            free: (0..count).rev().collect(),
        }
    }

    /// Slot `slot`'s bytes. The memory grows (is made anew) only at a stream's first
    /// use of a slot, before any read into a slot of that stream is in flight: a
    /// stream's slots keep one size and count, and no read of an earlier stream is
    /// left in flight when it returns.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn get(&mut self, slot: usize) -> &mut [u8] {
        let need = self.count * self.size + DIRECT_ALIGN;
        if self.arena.len() < need {
            *self.arena = vec![0u8; need];
        }
        let at = self.arena.as_ptr().align_offset(DIRECT_ALIGN) + slot * self.size;
        &mut self.arena[at..at + self.size]
    }
}

/// Reads every read of `reads`, `depth` in flight at once, as `engine` says: into its
/// target, or handed to `done(index, bytes)` (called on this thread, or under a lock).
/// In a stream that reads around the cache, the cached reads with a target are copied
/// from the cache by as many threads as there are CPUs, while the others go to the
/// device. A read that meets the end of the file is `UnexpectedEof`; the first error is
/// the result, and no read is in flight when it is returned.
pub(crate) fn read_stream(
    file: &StreamFile<'_>,
    reads: &mut [StreamRead<'_>],
    engine: Engine,
    depth: usize,
    keep: &mut Streamer,
    done: &mut (dyn FnMut(usize, &[u8]) + Send),
) -> io::Result<()> {
    if reads.is_empty() {
        return Ok(());
    }
    let hybrid = file.direct.is_some();
    let cached = if hybrid {
        residency(file, reads)
    } else {
        vec![false; reads.len()]
    };
    let mut copies = Vec::new();
    let mut rest = Vec::new();
    for (index, (read, cached)) in reads.iter_mut().zip(cached).enumerate() {
        let item = Item {
            index,
            phase: phase(file, read, cached),
            read,
        };
        if hybrid && cached && item.read.target.is_some() {
            copies.push(item);
        } else {
            rest.push(item);
        }
    }
    // Twice as many slots as reads in flight (new reads go out before the bytes of
    // those just done are copied from theirs), for the reads that need one.
    let mut slots = Slots::for_reads(
        rest.iter().filter(|i| i.needs_slot()).map(|i| &*i.read),
        2 * depth,
        &mut keep.arena,
    );
    // The copies are the CPUs' work; the device's reads wait on it, mostly asleep.
    let copiers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let result = std::thread::scope(|s| {
        let copied =
            (!copies.is_empty()).then(|| s.spawn(|| copy_cached(file, &mut copies, copiers)));
        let read = if rest.is_empty() {
            Ok(())
        } else {
            read_items(
                file,
                &mut rest,
                engine,
                depth,
                &mut slots,
                &mut keep.ring,
                done,
            )
        };
        let copied = copied.map_or(Ok(()), |h| {
            h.join().unwrap_or_else(|_| {
                Err(io::Error::other(
                    "a thread copying from the page cache panicked",
                ))
            })
        });
        read.and(copied)
    });
    drop(slots);
    // Large slots (reads of a MiB) are not worth keeping: zeroing them again is small
    // beside a batch of such reads, and a reader keeps at most this much.
    if keep.arena.len() > KEEP_BYTES {
        keep.arena = Vec::new();
    }
    result
}

/// The reads of `items` through the engine: io_uring where it can, else threads.
fn read_items(
    file: &StreamFile<'_>,
    items: &mut [Item<'_, '_>],
    engine: Engine,
    depth: usize,
    slots: &mut Slots,
    ring: &mut KeptRing,
    done: &mut (dyn FnMut(usize, &[u8]) + Send),
) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    if engine != Engine::Threads {
        match uring::read_stream(file, items, depth, slots, ring, done) {
            Err(uring::Unavailable) => {}
            Ok(r) => return r,
        }
    }
    let _ = (engine, ring);
    read_items_threads(file, items, depth, slots.size, done)
}

/// Cached reads, into their targets, on `threads` threads: copies from the page cache,
/// in parallel.
fn copy_cached(
    file: &StreamFile<'_>,
    items: &mut [Item<'_, '_>],
    threads: usize,
) -> io::Result<()> {
    on_threads(
        items,
        threads,
        || (),
        |(), item| match &mut item.read.target {
            Some(t) => imp::read_exact_at(file.cached, t, item.read.offset),
            None => Ok(()),
        },
    )
}

/// `work` on each of `items` on `threads` threads (this one among them), each with
/// its own state from `init` and taking the next item when done with one; the first
/// error is the result.
fn on_threads<T: Send, S>(
    items: &mut [T],
    threads: usize,
    init: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &mut T) -> io::Result<()> + Sync,
) -> io::Result<()> {
    let threads = threads.clamp(1, items.len().max(1));
    let next = std::sync::Mutex::new(items.iter_mut());
    let failed = std::sync::Mutex::new(None);
    let run = || {
        let mut state = init();
        loop {
            let item = match next.lock() {
                Ok(mut it) => it.next(),
                Err(_) => return,
            };
            let Some(item) = item else {
                return;
            };
            if let Err(e) = work(&mut state, item) {
                if let Ok(mut f) = failed.lock() {
                    f.get_or_insert(e);
                }
                return;
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(run);
        }
        run();
    });
    match failed.into_inner() {
        Ok(Some(e)) => Err(e),
        _ => Ok(()),
    }
}

/// The reads of `items` on `depth` threads, each with one read in flight and, from its
/// first read that needs one, a slot of its own (`size` bytes: the longest of those
/// reads). Where reads need slots, no more threads than slots fit in [`SLOT_BYTES`]:
/// 8 reads of 8 MiB in flight, not 64.
fn read_items_threads(
    file: &StreamFile<'_>,
    items: &mut [Item<'_, '_>],
    depth: usize,
    size: usize,
    done: &mut (dyn FnMut(usize, &[u8]) + Send),
) -> io::Result<()> {
    let done = std::sync::Mutex::new(done);
    let slotted = items.iter().any(Item::needs_slot);
    let threads = if slotted {
        depth.min(SLOT_BYTES.checked_div(size).unwrap_or(depth).max(1))
    } else {
        depth
    };
    on_threads(items, threads, Vec::new, |own: &mut Vec<u8>, item| {
        let needs = item.needs_slot();
        if needs && own.is_empty() {
            *own = vec![0u8; size + DIRECT_ALIGN];
        }
        // No slot (an empty one) for a read into its target through the cache.
        let slot = match own.as_ptr().align_offset(DIRECT_ALIGN) {
            base if needs => &mut own[base..base + size],
            _ => &mut [],
        };
        if let Some(bytes) = read_one(file, item, slot)? {
            if let Ok(mut d) = done.lock() {
                d(item.index, bytes);
            }
        }
        Ok(())
    })
}

/// One read of a stream, with the calls of this thread: its bytes in `slot` (for
/// `done`), or `None` when they went to its target.
fn read_one<'s>(
    file: &StreamFile<'_>,
    item: &mut Item<'_, '_>,
    slot: &'s mut [u8],
) -> io::Result<Option<&'s [u8]>> {
    let read = &mut *item.read;
    let (offset, len) = (read.offset, read.len);
    let bytes: &[u8] = match (item.phase, file.direct) {
        (Phase::Direct, Some(direct)) => {
            let (from, n) = aligned(offset, len, direct.align);
            imp::read_exact_at(&direct.file, &mut slot[..n], from)?;
            let lead = (offset - from) as usize;
            &slot[lead..lead + len]
        }
        _ => match &mut read.target {
            Some(t) => {
                imp::read_exact_at(file.cached, t, offset)?;
                return Ok(None);
            }
            None => {
                imp::read_exact_at(file.cached, &mut slot[..len], offset)?;
                &slot[..len]
            }
        },
    };
    match &mut read.target {
        Some(t) => {
            t.copy_from_slice(bytes);
            Ok(None)
        }
        None => Ok(Some(bytes)),
    }
}

/// The alignment of buffers for a file from [`open_direct`], and of offsets and
/// lengths where its file system does not say a smaller one ([`Direct::align`]).
pub(crate) const DIRECT_ALIGN: usize = 4096;

/// A file opened around the page cache ([`open_direct`]).
pub(crate) struct Direct {
    pub(crate) file: File,
    /// What its reads' offsets and lengths are multiples of: a power of two that
    /// divides [`DIRECT_ALIGN`].
    pub(crate) align: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_direct_read_covers_the_blocks_of_its_alignment() {
        // A 16 KiB sample 72 bytes (a header) past a block.
        assert_eq!(aligned(72, 16384, 512), (0, 16896));
        assert_eq!(aligned(72, 16384, 4096), (0, 20480));
        assert_eq!(aligned(4096 + 72, 4096, 512), (4096, 4608));
        assert_eq!(aligned(1024, 512, 512), (1024, 512));
    }

    /// The alignment `open_direct` gives is one the file system takes: a read of one
    /// such block, at an offset of that alignment only, gives the file's bytes.
    #[cfg(target_os = "linux")]
    #[test]
    fn the_file_system_takes_direct_reads_at_the_alignment_it_says() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        let bytes: Vec<u8> = (0..65536u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        let f = File::open(&p).unwrap();
        let Some(direct) = open_direct(&f) else {
            // A file system without direct reads (tmpfs): nothing to check.
            return;
        };
        let a = direct.align;
        assert!(a.is_power_of_two() && DIRECT_ALIGN.is_multiple_of(a), "{a}");
        let mut buf = vec![0u8; 2 * DIRECT_ALIGN];
        let at = buf.as_ptr().align_offset(DIRECT_ALIGN);
        let block = &mut buf[at..at + a];
        imp::read_exact_at(&direct.file, block, 3 * a as u64).unwrap();
        assert_eq!(block, &bytes[3 * a..4 * a]);
    }
}
