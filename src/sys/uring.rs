//! Batches of positioned reads through io_uring (Linux): one thread keeps up to
//! `depth` reads in flight, with one system call per wait instead of one per read.
//!
//! The kernel writes into the callers' buffers while their reads are in flight, so no
//! read is left in flight when [`read_batch`] returns: after an error, the reads
//! already submitted are still waited for.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use io_uring::{opcode, types, IoUring};

use super::ReadAt;

/// io_uring cannot be used here (no such system call, or refused by a filter): the
/// caller reads another way. Nothing was read.
pub(crate) struct Unavailable;

/// Most reads in flight: io_uring's submission queue is sized to the next power of two.
const MAX_DEPTH: usize = 4096;

/// Reads every `reads[i].buf` whole from its offset, `depth` at once; a read that comes
/// back short is resubmitted for the rest, and one that meets the end of the file is
/// `UnexpectedEof`. `Err(Unavailable)` when the ring cannot be set up.
pub(crate) fn read_batch(
    file: &File,
    reads: &mut [ReadAt<'_>],
    depth: usize,
) -> Result<io::Result<()>, Unavailable> {
    if reads.is_empty() {
        return Ok(Ok(()));
    }
    let depth = depth.clamp(1, MAX_DEPTH).min(reads.len());
    let mut ring = IoUring::new(depth.next_power_of_two() as u32).map_err(|_| Unavailable)?;
    let fd = types::Fd(file.as_raw_fd());
    // Bytes of each read already in its buffer.
    let mut done = vec![0usize; reads.len()];
    // Reads that came back short, to submit again for the rest.
    let mut again: VecDeque<usize> = VecDeque::new();
    let mut next = 0usize;
    let mut in_flight = 0usize;
    let mut failed: Option<io::Error> = None;
    loop {
        while failed.is_none() && in_flight < depth {
            let i = match again.pop_front() {
                Some(i) => i,
                None if next < reads.len() => {
                    next += 1;
                    next - 1
                }
                None => break,
            };
            let read = &mut reads[i];
            let rest = &mut read.buf[done[i]..];
            if rest.is_empty() {
                continue;
            }
            let len = rest.len().min(u32::MAX as usize) as u32;
            let entry = opcode::Read::new(fd, rest.as_mut_ptr(), len)
                .offset(read.offset + done[i] as u64)
                .build()
                .user_data(i as u64);
            // SAFETY: the entry points into `reads[i].buf`, which the caller lends
            // mutably for the whole call and which nothing else touches until this
            // read's completion is reaped below; `fd` is `file`'s, open for the whole
            // call. No read is left in flight when this function returns: the loop
            // ends only with `in_flight` at 0. The queue has room: at most `depth`
            // entries are in flight, and it holds at least `depth`.
            let pushed = unsafe { ring.submission().push(&entry) };
            if pushed.is_err() {
                failed = Some(io::Error::other("io_uring submission queue full"));
                break;
            }
            in_flight += 1;
        }
        if in_flight == 0 {
            return Ok(failed.map_or(Ok(()), Err));
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) || e.raw_os_error() == Some(libc::EBUSY) =>
            {
                continue
            }
            // Reads are in flight into the callers' buffers and the kernel will not
            // say when they end: returning would let it write into freed memory.
            Err(e) => {
                eprintln!("rastore: io_uring stopped answering with reads in flight: {e}");
                std::process::abort();
            }
        }
        for cqe in ring.completion() {
            in_flight -= 1;
            let i = cqe.user_data() as usize;
            match cqe.result() {
                n if n > 0 => {
                    done[i] += n as usize;
                    if done[i] < reads[i].buf.len() {
                        again.push_back(i);
                    }
                }
                0 => {
                    failed.get_or_insert(io::ErrorKind::UnexpectedEof.into());
                }
                e if -e == libc::EINTR || -e == libc::EAGAIN => again.push_back(i),
                e => {
                    failed.get_or_insert(io::Error::from_raw_os_error(-e));
                }
            }
        }
    }
}
