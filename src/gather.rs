//! Gathers: many scattered pieces of one file (a shuffled batch of frames, random
//! crops) read in one batch, at the device's queue depth.
//!
//! A mapping reads a cold file through page faults, one at a time per thread, each
//! bringing in the read-ahead window (8 MiB on the disk measured in docs/BIGDATA.md):
//! about 100 bytes read for every byte a scattered sample returns. A gather instead
//! knows every byte run of the batch before it reads any: it sorts them by where they
//! lie, merges those that overlap, touch or lie close, and keeps up to `depth` reads in
//! flight (`sys::read_stream`: io_uring on Linux, else a pool of threads).
//! What the page cache holds is read from it, at memory speed; the rest around it
//! (`O_DIRECT`, where the platform can), so that scattered pages read once do not
//! fill the cache. A read that holds one run lands in the output (through an aligned
//! buffer when read around the cache); the others are copied to each of their places
//! as they arrive (a frame asked for twice is read once).

use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use crate::error::{Error, ErrorKind, Result};
use crate::selection::Run;
use crate::sys::{self, FileAdvice, StreamFile, StreamRead};

pub use crate::sys::Engine;

/// How a gather reads: the engine, the reads in flight, and whether what the page
/// cache does not hold is read around it.
#[derive(Debug, Clone)]
pub struct GatherOptions {
    /// How the reads are issued.
    pub engine: Engine,
    /// Reads in flight at once.
    pub depth: usize,
    /// What is not in the page cache is read around it (`O_DIRECT`, Linux), through
    /// aligned buffers, and what is, from it; `false`: everything through the page
    /// cache. Where the platform or file system has no direct reads, the page cache.
    pub direct: bool,
}

impl Default for GatherOptions {
    /// io_uring where there is one, 64 reads in flight, cached data from the cache and
    /// the rest around it: what measured fastest, cold and warm (docs/PERFORMANCE.md).
    fn default() -> Self {
        GatherOptions {
            engine: Engine::Auto,
            depth: 64,
            direct: true,
        }
    }
}

/// One read of a gather: the source's bytes `range`, and the runs in it, each to its
/// place in the output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Read {
    pub(crate) range: Range<u64>,
    pub(crate) runs: Vec<Run>,
}

impl Read {
    /// Whether the read is its one run, so that it can land straight in the output.
    fn is_one_run(&self) -> bool {
        matches!(self.runs.as_slice(), [r] if r.from == self.range.start && r.len as u64 == self.range.end - self.range.start)
    }
}

/// Groups `runs` (going anywhere in the output) into reads, in the source's order:
/// runs that overlap, touch or lie at most `gap` bytes apart are read as one, as long
/// as the read stays within `most` bytes; a longer run is cut into pieces of `most`.
pub(crate) fn plan(runs: impl IntoIterator<Item = Run>, gap: u64, most: u64) -> Vec<Read> {
    let most = most.max(1);
    let mut pieces: Vec<Run> = runs
        .into_iter()
        .flat_map(|r| {
            let n = (r.len as u64).div_ceil(most).max(1);
            (0..n).map(move |p| {
                let off = p * most;
                Run {
                    from: r.from + off,
                    to: r.to + off as usize,
                    len: (r.len as u64 - off).min(most) as usize,
                }
            })
        })
        .filter(|r| r.len > 0)
        .collect();
    pieces.sort_by_key(|r| (r.from, r.to));
    let mut reads: Vec<Read> = Vec::new();
    for r in pieces {
        let end = r.from + r.len as u64;
        match reads.last_mut() {
            Some(last)
                if r.from <= last.range.end.saturating_add(gap)
                    && end.max(last.range.end) - last.range.start <= most =>
            {
                last.range.end = last.range.end.max(end);
                last.runs.push(r);
            }
            _ => reads.push(Read {
                range: r.from..end,
                runs: vec![r],
            }),
        }
    }
    reads
}

/// The file a gather reads: opened, its length, how it is named in errors, and what
/// its reader keeps between gathers.
pub(crate) struct Target<'a> {
    pub(crate) file: &'a File,
    pub(crate) len: u64,
    pub(crate) path: &'a Path,
    pub(crate) kept: &'a Kept,
}

/// What a reader keeps from one gather to the next: the file opened again around the
/// page cache (when first needed), and the buffers and ring of its reads
/// ([`sys::Streamer`]). Made once per batch instead, they cost up to a fifth of a
/// batch of 500 scattered 16 KiB reads (docs/PERFORMANCE.md).
#[derive(Default)]
pub(crate) struct Kept {
    direct: OnceLock<sys::Direct>,
    streamer: Mutex<sys::Streamer>,
}

/// Reads `reads` from `target` into `out` as `options` say: the runs of each read
/// copied to their places. A file that has become shorter than a read is
/// [`ErrorKind::TruncatedData`], never a short read.
pub(crate) fn read_into(
    target: &Target<'_>,
    reads: &[Read],
    out: &mut [u8],
    options: &GatherOptions,
) -> Result<()> {
    let Some(last) = reads.iter().map(|r| r.range.end).max() else {
        return Ok(());
    };
    if last > target.len {
        return Err(truncated(target, last));
    }
    // Opened once and kept; a failure (a file system without direct reads, or no
    // descriptor left) is tried again next batch. Not `get_or_init`: a fork while
    // another thread is inside it would leave the child waiting for good.
    let kept = &target.kept.direct;
    let direct = match (options.direct, kept.get()) {
        (false, _) => None,
        (true, Some(f)) => Some(f),
        (true, None) => sys::open_direct(target.file).and_then(|f| {
            let _ = kept.set(f);
            kept.get()
        }),
    };
    // Scattered reads: the kernel reads exactly what is asked, no window ahead.
    sys::advise_file(target.file, FileAdvice::Random, 0..target.len);
    // Every run's place in the output, carved in order (the runs of a gather never
    // overlap in the output): a read of one run is read straight into its place; the
    // others are copied to theirs as they arrive.
    let mut places: Vec<(usize, usize, usize)> = Vec::new();
    for (i, r) in reads.iter().enumerate() {
        for (k, run) in r.runs.iter().enumerate() {
            places.push((run.to, i, k));
        }
    }
    places.sort_unstable();
    let mut carved: Vec<Vec<&mut [u8]>> = reads
        .iter()
        .map(|r| Vec::with_capacity(r.runs.len()))
        .collect();
    let mut order: Vec<Vec<usize>> = reads
        .iter()
        .map(|r| Vec::with_capacity(r.runs.len()))
        .collect();
    let mut rest: &mut [u8] = out;
    let mut at = 0usize;
    for (to, i, k) in places {
        let len = reads[i].runs[k].len;
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(to - at);
        let (piece, tail) = tail.split_at_mut(len);
        carved[i].push(piece);
        order[i].push(k);
        rest = tail;
        at = to + len;
    }
    let mut stream: Vec<StreamRead<'_>> = Vec::with_capacity(reads.len());
    let mut scattered: Vec<Vec<(usize, &mut [u8])>> = Vec::with_capacity(reads.len());
    for ((r, pieces), ks) in reads.iter().zip(carved).zip(order) {
        let len = (r.range.end - r.range.start) as usize;
        let mut pieces: Vec<(usize, &mut [u8])> = ks
            .into_iter()
            .zip(pieces)
            .map(|(k, p)| ((r.runs[k].from - r.range.start) as usize, p))
            .collect();
        let target = if r.is_one_run() {
            pieces.pop().map(|(_, p)| p)
        } else {
            None
        };
        stream.push(StreamRead {
            offset: r.range.start,
            len,
            target,
        });
        scattered.push(pieces);
    }
    let file = StreamFile {
        cached: target.file,
        direct,
        len: target.len,
    };
    // Two gathers at once from one reader: the second makes its own.
    let mut own = sys::Streamer::default();
    let mut kept = target.kept.streamer.try_lock().ok();
    let keep = kept.as_deref_mut().unwrap_or(&mut own);
    let mut scatter = |i: usize, bytes: &[u8]| {
        for (from, place) in scattered[i].iter_mut() {
            let n = place.len();
            place.copy_from_slice(&bytes[*from..*from + n]);
        }
    };
    sys::read_stream(
        &file,
        &mut stream,
        options.engine,
        options.depth,
        keep,
        &mut scatter,
    )
    .map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            let now = target.file.metadata().map_or(0, |m| m.len());
            Error::from(ErrorKind::TruncatedData {
                expected: last,
                actual: now,
            })
            .at(target.path)
        }
        _ => Error::io("read", e).at(target.path),
    })
}

/// Whether the page cache holds `reads` of `target`, judged by as many as
/// [`sys::PROBES`] of them spread over the batch (all must be cached); `false` where
/// the platform cannot tell.
pub(crate) fn resident(target: &Target<'_>, reads: &[Read]) -> bool {
    let step = (reads.len() / sys::PROBES).max(1);
    reads.iter().step_by(step).take(sys::PROBES).all(|r| {
        sys::is_cached(target.file, r.range.start, r.range.end - r.range.start) == Some(true)
    })
}

fn truncated(target: &Target<'_>, expected: u64) -> Error {
    Error::from(ErrorKind::TruncatedData {
        expected,
        actual: target.len,
    })
    .at(target.path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(from: u64, to: usize, len: usize) -> Run {
        Run { from, to, len }
    }

    #[test]
    fn plans_merge_what_overlaps_touches_or_lies_close_in_source_order() {
        let reads = plan(
            [
                run(100, 0, 10),
                run(0, 10, 10),
                run(10, 20, 5),
                run(100, 30, 10),
                run(300, 40, 10),
            ],
            50,
            1000,
        );
        let ranges: Vec<Range<u64>> = reads.iter().map(|r| r.range.clone()).collect();
        assert_eq!(ranges, vec![0..15, 100..110, 300..310]);
        assert_eq!(reads[1].runs.len(), 2, "a repeat is one read, two runs");
        assert!(reads[2].is_one_run() && !reads[1].is_one_run());
        let cut = plan([run(0, 0, 25)], 0, 10);
        let ranges: Vec<(Range<u64>, usize)> = cut
            .iter()
            .map(|r| (r.range.clone(), r.runs[0].to))
            .collect();
        assert_eq!(ranges, vec![(0..10, 0), (10..20, 10), (20..25, 20)]);
        // Close, but the merged read would be too long.
        assert_eq!(plan([run(0, 0, 8), run(9, 8, 8)], 4, 16).len(), 2);
    }
}
