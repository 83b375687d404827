//! Streams of positioned reads through io_uring (Linux): one thread keeps up to `depth`
//! reads in flight, one system call per wait instead of one per read.
//!
//! In a stream that can read around the page cache ([`StreamFile::direct`]), what is
//! not cached is read so (`O_DIRECT`), into an aligned slot, and copied; what is
//! cached, and everything in other streams, through the page cache, which the kernel
//! serves from its io-wq workers when the data is not there: as many of them as reads
//! in flight are allowed.
//!
//! The kernel writes into the callers' buffers and the slots while their reads are in
//! flight, so no read is left in flight when [`read_stream`] returns: after an error,
//! the reads already submitted are still waited for.

use std::collections::VecDeque;
use std::io;
use std::os::fd::AsRawFd;

use io_uring::{opcode, types, IoUring};

use super::{aligned, Item, Phase, Slots, StreamFile, DIRECT_ALIGN};

/// io_uring cannot be used here (no such system call, or refused by a filter): the
/// caller reads another way. Nothing was read.
pub(crate) struct Unavailable;

/// Most reads in flight: io_uring's submission queue is sized to the next power of two.
const MAX_DEPTH: usize = 4096;

/// A ring kept between streams ([`super::Streamer`]), with the depth it was made for.
/// It belongs to the process that made it: a forked child inherits the ring's memory,
/// shared with its parent, and one process's completions would reach the other
/// (`pid` tells them apart; a child makes its own).
pub(crate) struct Ring {
    ring: IoUring,
    depth: usize,
    pid: u32,
}

impl Ring {
    /// A ring for `depth` reads in flight, its kernel workers as many.
    fn new(depth: usize) -> Result<Ring, Unavailable> {
        let ring = IoUring::new(depth.next_power_of_two() as u32).map_err(|_| Unavailable)?;
        // Buffered reads of uncached data run on the kernel's io-wq workers, of which
        // it allows four per CPU unless told otherwise: as many as reads in flight.
        let _ = ring
            .submitter()
            .register_iowq_max_workers(&mut [depth as u32, 0]);
        Ok(Ring {
            ring,
            depth,
            pid: std::process::id(),
        })
    }
}

/// A read in flight: which of the items, in which slot, and its bytes so far.
#[derive(Debug, Clone, Copy)]
struct Flight {
    read: usize,
    slot: Option<usize>,
    done: usize,
}

/// Reads every read of `reads` (see [`super::read_stream`]), `depth` at once.
/// `Err(Unavailable)` when the ring cannot be set up.
pub(crate) fn read_stream(
    file: &StreamFile<'_>,
    reads: &mut [Item<'_, '_>],
    depth: usize,
    slots: &mut Slots,
    kept: &mut Option<Ring>,
    done: &mut (dyn FnMut(usize, &[u8]) + Send),
) -> Result<io::Result<()>, Unavailable> {
    let asked = depth.clamp(1, MAX_DEPTH);
    // A kept ring serves any depth up to its own (with fewer reads in flight), in the
    // process that made it. Dropping a parent's ring in a child unmaps and closes
    // only the child's copies.
    if kept
        .as_ref()
        .is_none_or(|r| r.depth < asked || r.pid != std::process::id())
    {
        *kept = Some(Ring::new(asked)?);
    }
    let Some(Ring { ring, .. }) = kept.as_mut() else {
        return Err(Unavailable);
    };
    let depth = asked.min(reads.len().max(1));
    let (cached, direct) = (
        types::Fd(file.cached.as_raw_fd()),
        file.direct.map(|d| types::Fd(d.file.as_raw_fd())),
    );
    let align = file.direct.map_or(DIRECT_ALIGN, |d| d.align);
    let mut flights: Vec<Option<Flight>> = vec![None; depth];
    let mut ready: VecDeque<Flight> = (0..reads.len())
        .map(|read| Flight {
            read,
            slot: None,
            done: 0,
        })
        .collect();
    let mut in_flight = 0usize;
    let mut failed: Option<io::Error> = None;
    // Reads whose bytes are all in, to be copied out of their slots once the reads
    // that take their places are on their way.
    let mut finished: Vec<Flight> = Vec::new();
    loop {
        while failed.is_none() && in_flight < depth {
            let Some(mut f) = ready.pop_front() else {
                break;
            };
            let item = &mut reads[f.read];
            let (this, needs_slot) = (item.phase, item.needs_slot());
            let read = &mut *item.read;
            if needs_slot && f.slot.is_none() {
                match slots.free.pop() {
                    Some(s) => f.slot = Some(s),
                    None => {
                        // Every slot is taken: this read waits for one.
                        ready.push_front(f);
                        break;
                    }
                }
            }
            let (fd, at, buf): (types::Fd, u64, &mut [u8]) = match (this, f.slot) {
                (Phase::Direct, Some(s)) => {
                    let (from, n) = aligned(read.offset, read.len, align);
                    let Some(fd) = direct else {
                        failed = Some(io::Error::other("a direct read without a direct file"));
                        break;
                    };
                    (fd, from + f.done as u64, &mut slots.get(s)[f.done..n])
                }
                (_, Some(s)) => (
                    cached,
                    read.offset + f.done as u64,
                    &mut slots.get(s)[f.done..read.len],
                ),
                (_, None) => match &mut read.target {
                    Some(t) => (cached, read.offset + f.done as u64, &mut t[f.done..]),
                    None => {
                        failed = Some(io::Error::other("a read with neither target nor slot"));
                        break;
                    }
                },
            };
            if buf.is_empty() {
                finished.push(f);
                continue;
            }
            let Some(at_flight) = flights.iter().position(Option::is_none) else {
                failed = Some(io::Error::other("io_uring: no free entry for a read"));
                break;
            };
            let len = buf.len().min(u32::MAX as usize) as u32;
            let entry = opcode::Read::new(fd, buf.as_mut_ptr(), len)
                .offset(at)
                .build()
                .user_data(at_flight as u64);
            // SAFETY: the entry points into a read's target (lent mutably by the caller
            // for the whole call) or into a slot of `slots` (borrowed for the whole
            // call), which nothing else touches until this read's completion is reaped
            // below; the file descriptors are the caller's files, open for the whole
            // call. No read is left in flight when this function returns: the loop ends
            // only with `in_flight` at 0. The queue has room: at most `depth` entries
            // are in flight, and it holds at least `depth`.
            if unsafe { ring.submission().push(&entry) }.is_err() {
                failed = Some(io::Error::other("io_uring submission queue full"));
                ready.push_front(f);
                break;
            }
            flights[at_flight] = Some(f);
            in_flight += 1;
        }
        if !finished.is_empty() {
            // The new reads first, then the copies, while they are in flight.
            if let Err(e) = submit(ring, 0) {
                failed.get_or_insert(e);
            }
            for f in finished.drain(..) {
                finish(reads, &f, slots, align, done);
                if let Some(s) = f.slot {
                    slots.free.push(s);
                }
            }
            continue;
        }
        if in_flight == 0 {
            return Ok(match failed {
                Some(e) => Err(e),
                None if ready.is_empty() => Ok(()),
                None => Err(io::Error::other("io_uring: reads left unsubmitted")),
            });
        }
        if let Err(e) = submit(ring, 1) {
            // Reads are in flight into the callers' buffers and the kernel will not
            // say when they end: returning would let it write into freed memory.
            eprintln!("rastore: io_uring stopped answering with reads in flight: {e}");
            std::process::abort();
        }
        let completed: Vec<(usize, i32)> = ring
            .completion()
            .map(|c| (c.user_data() as usize, c.result()))
            .collect();
        for (k, res) in completed {
            in_flight -= 1;
            let Some(mut f) = flights[k].take() else {
                continue;
            };
            let (offset, len) = (reads[f.read].read.offset, reads[f.read].read.len);
            let need = match reads[f.read].phase {
                Phase::Direct => {
                    let (from, _) = aligned(offset, len, align);
                    (offset - from) as usize + len
                }
                _ => len,
            };
            match res {
                n if n > 0 => {
                    f.done += n as usize;
                    if f.done >= need {
                        finished.push(f);
                    } else {
                        ready.push_front(f);
                    }
                }
                0 => {
                    failed.get_or_insert(io::ErrorKind::UnexpectedEof.into());
                    if let Some(s) = f.slot {
                        slots.free.push(s);
                    }
                }
                e if -e == libc::EINTR || -e == libc::EAGAIN => ready.push_front(f),
                e => {
                    failed.get_or_insert(io::Error::from_raw_os_error(-e));
                    if let Some(s) = f.slot {
                        slots.free.push(s);
                    }
                }
            }
        }
    }
}

/// Submits what is queued and waits for `want` completions, through the interruptions
/// a wait may meet.
fn submit(ring: &mut IoUring, want: usize) -> io::Result<()> {
    loop {
        match ring.submit_and_wait(want) {
            Ok(_) => return Ok(()),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) || e.raw_os_error() == Some(libc::EBUSY) => {}
            Err(e) => return Err(e),
        }
    }
}

/// A read whose bytes are all in: copied from its slot to its target, or handed to
/// `done`.
fn finish(
    reads: &mut [Item<'_, '_>],
    f: &Flight,
    slots: &mut Slots,
    align: usize,
    done: &mut (dyn FnMut(usize, &[u8]) + Send),
) {
    let item = &mut reads[f.read];
    let Some(s) = f.slot else {
        return;
    };
    let read = &mut *item.read;
    let lead = match item.phase {
        Phase::Direct => (read.offset - aligned(read.offset, read.len, align).0) as usize,
        Phase::Buffered => 0,
    };
    let bytes = &slots.get(s)[lead..lead + read.len];
    match &mut read.target {
        Some(t) => t.copy_from_slice(bytes),
        None => done(item.index, bytes),
    }
}
