//! Gathers: many scattered pieces of one file (a shuffled batch of frames, random
//! crops) read in one batch, at the device's queue depth.
//!
//! A mapping reads a cold file through page faults, one at a time per thread, each
//! bringing in the read-ahead window (8 MiB on the disk measured in docs/BIGDATA.md):
//! about 100 bytes read for every byte a scattered sample returns. A gather instead
//! knows every byte run of the batch before it reads any: it sorts them by where they
//! lie, merges those that overlap, touch or lie close, and keeps up to `depth` reads in
//! flight ([`crate::sys::read_batch`]: io_uring on Linux, else a pool of threads),
//! told not to read ahead. A read that holds one run lands straight in the output; the
//! others go through a buffer and are copied to each of their places (a frame asked
//! for twice is read once).

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use crate::error::{Error, ErrorKind, Result};
use crate::selection::Run;
use crate::sys::{self, FileAdvice, ReadAt, DIRECT_ALIGN};

pub use crate::sys::Engine;

/// Bytes of buffers a gather holds at once for reads that do not land straight in
/// the output (the rest wait for the next round).
const BOUNCE_BYTES: usize = 64 << 20;

/// How a gather reads: the engine, the reads in flight, and whether around the page
/// cache.
#[derive(Debug, Clone)]
pub struct GatherOptions {
    /// How the reads are issued.
    pub engine: Engine,
    /// Reads in flight at once.
    pub depth: usize,
    /// Around the page cache (`O_DIRECT`, Linux), through aligned buffers; buffered
    /// where the platform or file system has no such reads.
    pub direct: bool,
}

impl Default for GatherOptions {
    /// io_uring where there is one, 32 reads in flight, through the page cache (the
    /// `gather` benchmark's choice: docs/PERFORMANCE.md).
    fn default() -> Self {
        GatherOptions {
            engine: Engine::Auto,
            depth: 32,
            direct: false,
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

/// The file a gather reads: opened, its length, and how it is named in errors.
pub(crate) struct Target<'a> {
    pub(crate) file: &'a File,
    pub(crate) len: u64,
    pub(crate) path: &'a Path,
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
    let direct = options
        .direct
        .then(|| sys::open_direct(target.path))
        .flatten();
    let file = direct.as_ref().unwrap_or(target.file);
    if direct.is_none() {
        // Scattered reads: the kernel reads exactly what is asked, no window ahead.
        sys::advise_file(target.file, FileAdvice::Random, 0..target.len);
    }
    let mut start = 0;
    while start < reads.len() {
        // A round: the reads up to the bound on buffered bytes (at least one).
        let mut held = 0usize;
        let mut end = start;
        while end < reads.len() {
            let r = &reads[end];
            if direct.is_some() || !r.is_one_run() {
                let n = aligned(&r.range, direct.is_some()).1;
                if held > 0 && held + n > BOUNCE_BYTES {
                    break;
                }
                held += n;
            }
            end += 1;
        }
        round(
            target,
            file,
            direct.is_some(),
            &reads[start..end],
            out,
            options,
        )?;
        start = end;
    }
    Ok(())
}

/// `range` as read: from a multiple of the direct alignment to one, when direct.
fn aligned(range: &Range<u64>, direct: bool) -> (u64, usize) {
    if !direct {
        return (range.start, (range.end - range.start) as usize);
    }
    let a = DIRECT_ALIGN as u64;
    let from = range.start / a * a;
    (from, (range.end.div_ceil(a) * a - from) as usize)
}

/// One round of [`read_into`]: every read of `reads` in flight together.
fn round(
    target: &Target<'_>,
    file: &File,
    direct: bool,
    reads: &[Read],
    out: &mut [u8],
    options: &GatherOptions,
) -> Result<()> {
    // Direct reads past the last whole block of the file would come back short: those
    // few go through the page cache.
    let whole_blocks = target.len / DIRECT_ALIGN as u64 * DIRECT_ALIGN as u64;
    let mut straight: Vec<&Read> = Vec::new();
    let mut bounced: Vec<(&Read, bool, Vec<u8>)> = Vec::new();
    for r in reads {
        let (from, n) = aligned(&r.range, true);
        let this_direct = direct && from + n as u64 <= whole_blocks;
        if !this_direct && r.is_one_run() {
            straight.push(r);
        } else {
            let n = aligned(&r.range, this_direct).1 + if this_direct { DIRECT_ALIGN } else { 0 };
            bounced.push((r, this_direct, vec![0u8; n]));
        }
    }
    straight.sort_by_key(|r| r.runs[0].to);
    // Each straight read's place in the output, carved in order (the runs of a
    // gather never overlap in the output).
    let mut buffered: Vec<ReadAt<'_>> = Vec::new();
    let mut aligned_reads: Vec<ReadAt<'_>> = Vec::new();
    let mut rest: &mut [u8] = &mut *out;
    let mut at = 0usize;
    for r in &straight {
        let run = r.runs[0];
        let (_, tail) = std::mem::take(&mut rest).split_at_mut(run.to - at);
        let (piece, tail) = tail.split_at_mut(run.len);
        buffered.push(ReadAt {
            offset: run.from,
            buf: piece,
        });
        rest = tail;
        at = run.to + run.len;
    }
    let mut leads = Vec::with_capacity(bounced.len());
    for (r, this_direct, buf) in &mut bounced {
        let (from, n) = aligned(&r.range, *this_direct);
        let base = if *this_direct {
            buf.as_ptr().align_offset(DIRECT_ALIGN)
        } else {
            0
        };
        leads.push(base + (r.range.start - from) as usize);
        let read = ReadAt {
            offset: from,
            buf: &mut buf[base..base + n],
        };
        if *this_direct {
            aligned_reads.push(read);
        } else {
            buffered.push(read);
        }
    }
    let failed = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => {
            let now = target.file.metadata().map_or(0, |m| m.len());
            Error::from(ErrorKind::TruncatedData {
                expected: reads.iter().map(|r| r.range.end).max().unwrap_or(0),
                actual: now,
            })
            .at(target.path)
        }
        _ => Error::io("read", e).at(target.path),
    };
    sys::read_batch(target.file, &mut buffered, options.engine, options.depth).map_err(failed)?;
    sys::read_batch(file, &mut aligned_reads, options.engine, options.depth).map_err(failed)?;
    drop((buffered, aligned_reads));
    for ((r, _, buf), lead) in bounced.iter().zip(leads) {
        for run in &r.runs {
            let from = lead + (run.from - r.range.start) as usize;
            out[run.to..run.to + run.len].copy_from_slice(&buf[from..from + run.len]);
        }
    }
    Ok(())
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
