//! Streaming a range of a file in slabs: the one way whole-file passes read.
//!
//! A mapping reads a cold file through page faults that bring in a little at a time,
//! and once the page cache is full every new page costs an eviction. A scan instead
//! reads large slabs with positioned reads, on reader threads that run ahead of the
//! caller while it works on the slab before; the caller sees each slab in order, in a
//! buffer that is reused, so memory is `(readers + 2) × slab_bytes` whatever the size.
//!
//! How the bytes are read ([`ScanMethod`]):
//! - **buffered** (the default): through the page cache, told the reads are sequential
//!   (`posix_fadvise`); a range larger than half the machine's memory is also dropped
//!   from the cache behind the scan, so that it never fills the cache and evicts the
//!   rest of the machine's files for pages that will not be read again;
//! - **direct**: around the page cache (`O_DIRECT`), aligned, where the platform can.
//!
//! The `bigdata` benchmark measured both on a 32 GiB file, cold, on a 24 GiB machine:
//! buffered with two readers of 8 MiB read it in 16.7 s, direct in 26–29 s whatever the
//! slab size and reader count, and the mapping that `ra stats` read through before in
//! 23.1 s (docs/BIGDATA.md).

use std::collections::BTreeMap;
use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::error::{io_at, Error, Result};
use crate::sys::{self, FileAdvice, DIRECT_ALIGN};

/// How a scan reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanMethod {
    /// Through the page cache, dropped behind the scan past half the memory.
    Buffered,
    /// Around the page cache (`O_DIRECT`); buffered where the platform or file system
    /// has no such reads.
    Direct,
}

/// How to scan: the method, the slab size and the reads in flight.
#[derive(Debug, Clone)]
pub struct ScanOptions {
    /// How the bytes are read.
    pub method: ScanMethod,
    /// Bytes per read (rounded to a multiple of the unit and of 4 KiB).
    pub slab_bytes: usize,
    /// Reader threads, each with one read in flight.
    pub readers: usize,
}

impl Default for ScanOptions {
    /// Buffered, 8 MiB slabs, 2 readers (the `bigdata` benchmark's choice).
    fn default() -> Self {
        ScanOptions {
            method: ScanMethod::Buffered,
            slab_bytes: 8 << 20,
            readers: 2,
        }
    }
}

/// Whether `len` bytes are better kept out of the page cache: more than half the
/// machine's memory (unknown memory: never).
pub(crate) fn larger_than_cache(len: u64) -> bool {
    sys::physical_memory().is_some_and(|m| len > m / 2)
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Reads bytes `range` of the file `path` in slabs and calls `f(offset, bytes)` for
/// each, in order, `offset` counted from `range.start`. Every slab but the
/// last is a whole number of `unit`s (an element's size), so `f` never sees an
/// element cut in two; the slab is `f`'s to change in place (byte swaps, say). The
/// first error, from a read or from `f`, ends the scan.
pub fn scan(
    path: &Path,
    range: Range<u64>,
    unit: usize,
    options: &ScanOptions,
    mut f: impl FnMut(u64, &mut [u8]) -> Result<()>,
) -> Result<()> {
    scan_many(&[(path, range)], unit, options, |offset, slabs| {
        f(offset, slabs[0])
    })
}

/// [`scan`] of several files in lockstep: `sources` are `(path, range)` pairs whose
/// ranges have one length, and `f(offset, slabs)` gets the slab at `offset` of each,
/// in the order of `sources` (two files compared element by element, say). The
/// memory is that of a scan, times the number of sources.
pub fn scan_many(
    sources: &[(&Path, Range<u64>)],
    unit: usize,
    options: &ScanOptions,
    mut f: impl FnMut(u64, &mut [&mut [u8]]) -> Result<()>,
) -> Result<()> {
    let Some((_, first)) = sources.first() else {
        return Ok(());
    };
    let len = first.end.saturating_sub(first.start);
    if let Some((path, r)) = sources
        .iter()
        .find(|(_, r)| r.end.saturating_sub(r.start) != len)
    {
        return Err(Error::from(crate::ErrorKind::InvalidArgument(format!(
            "a scan of {len} bytes in lockstep with {} bytes of {}",
            r.end.saturating_sub(r.start),
            path.display()
        ))));
    }
    if len == 0 {
        return Ok(());
    }
    let unit = unit.max(1);
    let step = unit / gcd(unit, DIRECT_ALIGN) * DIRECT_ALIGN;
    // No larger than the range: a small file gets small buffers.
    let slab =
        ((options.slab_bytes / step).max(1) * step).min(len.next_multiple_of(step as u64) as usize);
    let big = larger_than_cache(len * sources.len() as u64);
    let files = sources
        .iter()
        .map(|(path, range)| Source::open(path, range.clone(), options.method))
        .collect::<Result<Vec<_>>>()?;
    let files = &files;
    let slabs = len.div_ceil(slab as u64) as usize;
    let readers = options.readers.clamp(1, slabs);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (free_tx, free_rx) = mpsc::channel::<Vec<Vec<u8>>>();
    let free_rx = std::sync::Mutex::new(free_rx);
    // A slab's buffer, with room for direct reads: aligning its start costs under one
    // block, and whole blocks from the one the slab starts in cost under one more
    // (`slab` is itself whole blocks).
    let room = slab + 2 * DIRECT_ALIGN;
    for _ in 0..(readers + 2).min(slabs + 1) {
        let _ = free_tx.send(vec![vec![0u8; room]; files.len()]);
    }
    let (full_tx, full_rx) = mpsc::channel::<Filled>();
    std::thread::scope(|s| {
        for _ in 0..readers {
            let (full_tx, free_rx, next, stop) = (full_tx.clone(), &free_rx, &next, &stop);
            s.spawn(move || loop {
                // A buffer first, then a slab: every slab claimed has its buffer, so
                // the one the caller waits for is never stuck behind later ones.
                let bufs = match free_rx.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok(mut bufs) = bufs else {
                    return;
                };
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= slabs || stop.load(Ordering::Relaxed) {
                    return;
                }
                let at = (i * slab) as u64;
                let n = (len - at).min(slab as u64);
                let got = files
                    .iter()
                    .zip(bufs.iter_mut())
                    .map(|(src, buf)| src.read(at..at + n, buf))
                    .collect();
                if full_tx.send((i, bufs, got)).is_err() {
                    return;
                }
            });
        }
        drop(full_tx);
        let result = deliver(slabs, &full_rx, &free_tx, sources[0].0, |i, bytes| {
            let offset = (i * slab) as u64;
            f(offset, bytes)?;
            if big {
                for src in files {
                    src.done_with(offset..offset + slab as u64);
                }
            }
            Ok(())
        });
        stop.store(true, Ordering::Relaxed);
        drop(free_tx);
        result
    })
}

/// Reads bytes `offset..offset + buf.len()` of the file `path` into `buf` as a scan
/// reads them (large positioned reads, `options.readers` at once, told sequential, the
/// cache dropped behind when the file is larger than half the memory, whether it is
/// read whole or a piece at a time), straight into `buf`: no slab buffers. Always
/// buffered (`buf` need not be aligned).
pub fn read_into(path: &Path, offset: u64, buf: &mut [u8], options: &ScanOptions) -> Result<()> {
    let file = File::open(path).map_err(io_at("open", path))?;
    read_file_into(&file, path, offset, buf, options)
}

/// [`read_into`] from an open `file` (named `path` in errors).
pub(crate) fn read_file_into(
    file: &File,
    path: &Path,
    offset: u64,
    buf: &mut [u8],
    options: &ScanOptions,
) -> Result<()> {
    let len = buf.len() as u64;
    if len == 0 {
        return Ok(());
    }
    sys::advise_file(file, FileAdvice::Sequential, offset..offset + len);
    // The file's size, not the piece's: callers read large files in pieces (a
    // conversion in 64 MiB, an upload part by part).
    let big = larger_than_cache(file.metadata().map_or(len, |m| m.len().max(len)));
    let slab = (options.slab_bytes / DIRECT_ALIGN).max(1) * DIRECT_ALIGN;
    let readers = options.readers.clamp(1, len.div_ceil(slab as u64) as usize);
    let pieces = buf.chunks_mut(slab).enumerate();
    let pieces = pieces.map(|(i, piece)| (piece, offset + (i * slab) as u64));
    read_pieces(file, path, pieces, readers, |at, n| {
        if big {
            sys::advise_file(file, FileAdvice::DontNeed, at..at + n as u64);
        }
    })
}

/// Positioned reads of `pieces` (each a buffer and the offset of `file` it is read
/// from) on `readers` threads, `then(offset, len)` after each piece is read. A reader
/// that meets an error stops; the first error is the result.
pub(crate) fn read_pieces<'b>(
    file: &File,
    path: &Path,
    pieces: impl Iterator<Item = (&'b mut [u8], u64)> + Send,
    readers: usize,
    then: impl Fn(u64, usize) + Sync,
) -> Result<()> {
    on_threads(pieces, readers, |(piece, at)| {
        sys::read_exact_at(file, piece, at).map_err(io_at("read", path))?;
        then(at, piece.len());
        Ok(())
    })
}

/// `work` on each of `items`, on `threads` threads that each take the next item when
/// done with one. A thread that meets an error stops; the first error is the result.
pub(crate) fn on_threads<I: Send>(
    items: impl Iterator<Item = I> + Send,
    threads: usize,
    work: impl Fn(I) -> Result<()> + Sync,
) -> Result<()> {
    let items = std::sync::Mutex::new(items);
    let failed = std::sync::Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let next = match items.lock() {
                    Ok(mut it) => it.next(),
                    Err(_) => return,
                };
                let Some(item) = next else {
                    return;
                };
                if let Err(e) = work(item) {
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

/// One file of a scan: how it is read, and from where.
struct Source<'p> {
    path: &'p Path,
    /// The file as opened, for advice.
    file: File,
    /// The same file opened for direct reads, where asked and possible.
    direct: Option<sys::Direct>,
    /// Where the scanned range starts.
    start: u64,
}

impl<'p> Source<'p> {
    fn open(path: &'p Path, range: Range<u64>, method: ScanMethod) -> Result<Source<'p>> {
        let file = File::open(path).map_err(io_at("open", path))?;
        let direct = match method {
            ScanMethod::Buffered => None,
            ScanMethod::Direct => sys::open_direct(&file),
        };
        if direct.is_none() {
            sys::advise_file(&file, FileAdvice::Sequential, range.clone());
        }
        Ok(Source {
            path,
            file,
            direct,
            start: range.start,
        })
    }

    /// Reads bytes `range` (from the scan's start) into `buf`; gives where they are.
    fn read(&self, range: Range<u64>, buf: &mut [u8]) -> Result<Range<usize>> {
        let at = self.start + range.start..self.start + range.end;
        match &self.direct {
            Some(d) => read_slab(&d.file, self.path, at, buf, true),
            None => read_slab(&self.file, self.path, at, buf, false),
        }
    }

    /// The bytes `range` (from the scan's start) will not be read again: dropped from
    /// the cache (a buffered scan's; direct reads never filled it).
    fn done_with(&self, range: Range<u64>) {
        if self.direct.is_none() {
            let at = self.start + range.start..self.start + range.end;
            sys::advise_file(&self.file, FileAdvice::DontNeed, at);
        }
    }
}

/// A slab read: its index, its buffers (one per source), and where in each buffer its
/// bytes are.
type Filled = (usize, Vec<Vec<u8>>, Result<Vec<Range<usize>>>);

/// Hands slabs `0..slabs` to `each(index, bytes)` in order as the readers finish
/// them (early ones wait), each buffer going back to the readers after.
fn deliver(
    slabs: usize,
    full: &mpsc::Receiver<Filled>,
    free: &mpsc::Sender<Vec<Vec<u8>>>,
    path: &Path,
    mut each: impl FnMut(usize, &mut [&mut [u8]]) -> Result<()>,
) -> Result<()> {
    let mut pending = BTreeMap::new();
    for want in 0..slabs {
        let (mut buf, got) = loop {
            if let Some(ready) = pending.remove(&want) {
                break ready;
            }
            let Ok((i, buf, got)) = full.recv() else {
                return Err(Error::io(
                    "read",
                    std::io::Error::other("a scan's reader ended early"),
                )
                .at(path));
            };
            pending.insert(i, (buf, got));
        };
        let got = got?;
        let mut slabs: Vec<&mut [u8]> = buf.iter_mut().zip(got).map(|(b, r)| &mut b[r]).collect();
        each(want, &mut slabs)?;
        let _ = free.send(buf);
    }
    Ok(())
}

/// Reads bytes `range` of `file` into `buf`, and gives where in `buf` they are.
/// Aligned (direct) reads cover the range with whole 4 KiB blocks from a 4 KiB
/// boundary in the buffer; a short read at the end of the file is an error.
fn read_slab(
    file: &File,
    path: &Path,
    range: Range<u64>,
    buf: &mut [u8],
    aligned: bool,
) -> Result<Range<usize>> {
    let n = (range.end - range.start) as usize;
    if !aligned {
        sys::read_exact_at(file, &mut buf[..n], range.start).map_err(io_at("read", path))?;
        return Ok(0..n);
    }
    let a = DIRECT_ALIGN as u64;
    let from = range.start / a * a;
    let to = range.end.div_ceil(a) * a;
    let lead = (range.start - from) as usize;
    let base = buf.as_ptr().align_offset(DIRECT_ALIGN);
    let window = &mut buf[base..base + (to - from) as usize];
    let mut done = 0;
    while done < window.len() {
        let got = sys::read_at(file, &mut window[done..], from + done as u64)
            .map_err(io_at("read", path))?;
        if got == 0 {
            break;
        }
        done += got;
    }
    if done < lead + n {
        return Err(Error::io(
            "read",
            std::io::Error::from(std::io::ErrorKind::UnexpectedEof),
        )
        .at(path));
    }
    Ok(base + lead..base + lead + n)
}
