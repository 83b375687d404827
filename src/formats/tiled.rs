//! C-order data larger than memory into column-major order, box by box.
//!
//! The in-memory reorder ([`crate::layout`]) makes each slab of its output from
//! elements spread over the whole source: fine while the source stays in the page
//! cache, ruinous once it does not, when every slab reads the source from the disk
//! again. Here the array is cut into boxes whose bytes fit a budget. Each box is read
//! as the runs it is contiguous in along the source's trailing axes (positioned reads
//! on several threads, the next box read while this one is placed), reordered in
//! memory, and placed as the runs it is contiguous in along the output's leading axes.
//! The box's shape is the one that needs the fewest requests of the disk (see
//! [`box_shape`]): for a stack of frames, the frame's rows whole on the read side and
//! every frame on the write side. Every byte is read once and written once.
//! Boxes go in column-major order of the grid, so the output fills band by band.

use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::mpsc;

use crate::error::{io_at, Result};
use crate::sys::{self, FileAdvice, WriteBack};

/// How [`reorder`] works: bytes per box, and reads in flight.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tiling {
    /// The most bytes one box holds. Memory is three boxes: two being read or
    /// reordered, one reordered.
    pub budget: usize,
    /// Positioned reads in flight.
    pub readers: usize,
}

impl Default for Tiling {
    /// 128 MiB boxes (384 MiB in all), 8 reads in flight. 256 MiB boxes converted a
    /// 24 GiB stack of frames no faster (96.3 s against 97.5 and 90.8, cold).
    fn default() -> Self {
        Tiling {
            budget: 128 << 20,
            readers: 8,
        }
    }
}

/// Boxes whose output is written back before the current one's.
const LAG: usize = 4;

/// The axes from fastest to slowest: the last first in C order, the first first
/// column-major.
fn fastest_first(n: usize, c_order: bool) -> Vec<usize> {
    if c_order {
        (0..n).rev().collect()
    } else {
        (0..n).collect()
    }
}

/// The run of a box of extents `e` of an array of `shape`, along `axes` (fastest
/// first): the fastest axis, and the next while every faster one is whole, and so on.
/// Its length in elements, and how many of `axes` it spans.
fn run_of(shape: &[usize], e: &[usize], axes: &[usize]) -> (usize, usize) {
    let mut run = 1;
    for (spanned, &k) in axes.iter().enumerate() {
        run *= e[k];
        if e[k] < shape[k] {
            return (run, spanned + 1);
        }
    }
    (run, axes.len())
}

/// The extents of the boxes for `shape` (C order) of `w`-byte items within `budget`
/// bytes: of the boxes whose runs are as long as they can be (trailing axes whole on
/// the read side, leading axes whole on the write side, one partial axis on each, the
/// axes between them one element thick), the one making the fewest reads and writes
/// per element (`1/read run + 1/write run`). A disk's time per request is about a
/// fixed cost plus its bytes, so this is the one the disk finishes first.
pub(crate) fn box_shape(shape: &[usize], w: usize, budget: usize) -> Vec<usize> {
    let n = shape.len();
    let (c_axes, f_axes) = (fastest_first(n, true), fastest_first(n, false));
    let most = (budget / w.max(1)).max(1);
    let cost = |e: &[usize]| {
        let (r, _) = run_of(shape, e, &c_axes);
        let (w, _) = run_of(shape, e, &f_axes);
        1.0 / r as f64 + 1.0 / w as f64
    };
    let mut best = (cost(&vec![1; n]), vec![1; n]);
    // `p`: the read side's partial axis (those after it whole); `q <= p`: the write
    // side's (those before it whole).
    for p in 0..n {
        for q in 0..=p {
            let mut e = vec![1usize; n];
            e[p + 1..].copy_from_slice(&shape[p + 1..]);
            e[..q].copy_from_slice(&shape[..q]);
            let fixed: usize = e.iter().product();
            if fixed > most {
                continue;
            }
            let room = most / fixed;
            // Extents of axis `p` worth trying: powers of two, what leaves axis `q`
            // whole, and the most that fits; axis `q` takes the rest of the room.
            let top = shape[p].min(room);
            let powers = (0..usize::BITS)
                .map(|i| 1usize << i)
                .take_while(|&a| a < top);
            let tries = powers.chain([top, room / shape[q].max(1)]);
            for a in tries.filter(|&a| (1..=top).contains(&a)) {
                e[p] = a;
                if q != p {
                    e[q] = shape[q].min(room / a);
                }
                let c = cost(&e);
                if c < best.0 {
                    best = (c, e.clone());
                }
            }
        }
    }
    best.1
}

/// Strides in elements: C order (last axis fastest) or column-major.
fn strides(shape: &[usize], c_order: bool) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    let mut acc = 1;
    for k in fastest_first(shape.len(), c_order) {
        s[k] = acc;
        acc *= shape[k];
    }
    s
}

/// One tile: its first index and its extents (those of the grid, cut at the edges).
struct Tile {
    origin: Vec<usize>,
    extent: Vec<usize>,
}

/// The boxes of extents `e` covering `shape`, in column-major order of the grid.
fn boxes<'a>(shape: &'a [usize], e: &[usize]) -> impl Iterator<Item = Tile> + 'a {
    let grid: Vec<usize> = shape.iter().zip(e).map(|(d, x)| d.div_ceil(*x)).collect();
    let count: usize = grid.iter().product();
    let e = e.to_vec();
    (0..count).map(move |mut i| {
        let mut origin = Vec::with_capacity(shape.len());
        for g in &grid {
            origin.push(i % g);
            i /= g;
        }
        let origin: Vec<usize> = origin.iter().zip(&e).map(|(g, x)| g * x).collect();
        let extent = origin
            .iter()
            .zip(&e)
            .zip(shape)
            .map(|((o, x), d)| (*x).min(d - o))
            .collect();
        Tile { origin, extent }
    })
}

/// A box's runs: `run` elements contiguous in the array along its fastest axes (the
/// trailing ones in C order, the leading ones column-major) while the box holds them
/// whole, and the element offset in the array of each run, in the order the box's
/// own buffer (in the same order) holds them.
fn runs(shape: &[usize], b: &Tile, c_order: bool) -> (usize, Vec<usize>) {
    let n = shape.len();
    let stride = strides(shape, c_order);
    let axes = fastest_first(n, c_order);
    let (run, inner) = run_of(shape, &b.extent, &axes);
    let outer = &axes[inner..];
    let base: usize = (0..n).map(|k| b.origin[k] * stride[k]).sum();
    let count: usize = outer.iter().map(|&k| b.extent[k]).product();
    let offsets = (0..count)
        .map(|mut i| {
            let mut at = base;
            for &k in outer {
                at += (i % b.extent[k]) * stride[k];
                i /= b.extent[k];
            }
            at
        })
        .collect();
    (run, offsets)
}

/// Where [`reorder`] puts the column-major bytes.
pub(crate) enum Output<'a> {
    /// Into memory.
    Memory(&'a mut [u8]),
    /// Into `file` (named `path`) from `offset`, each box's output written back a few
    /// boxes later so that dirty pages stay a few boxes' worth.
    File {
        file: &'a File,
        path: &'a Path,
        offset: u64,
    },
}

/// Reorders the C-order array of `shape` and `w`-byte items at `offset` of the file
/// `src` (named `path`) into column-major order in `out`, box by box (see the module
/// doc). `fix` is called on each box's reordered bytes before they are placed (byte
/// swaps, Bools); `placed(bytes)` after each box, with the bytes placed so far.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reorder(
    (src, path): (&File, &Path),
    offset: u64,
    shape: &[usize],
    w: usize,
    mut out: Output<'_>,
    tiling: Tiling,
    fix: &mut dyn FnMut(&mut [u8]) -> Result<()>,
    placed: &mut dyn FnMut(u64),
) -> Result<()> {
    let e = box_shape(shape, w, tiling.budget);
    // The runs are scattered: read-ahead around each would read most of the file for
    // every box (this disk reads ahead 8 MiB).
    let end = offset + (shape.iter().product::<usize>() * w) as u64;
    sys::advise_file(src, FileAdvice::Random, offset..end);
    let volume: usize = e.iter().product();
    let (free_tx, free_rx) = mpsc::channel::<Vec<u8>>();
    for _ in 0..2 {
        let _ = free_tx.send(vec![0u8; volume * w]);
    }
    let (full_tx, full_rx) = mpsc::sync_channel::<(Tile, Result<Vec<u8>>)>(1);
    let mut reordered = vec![0u8; volume * w];
    std::thread::scope(|s| {
        // Owned here, so that an early return ends the reader waiting for a buffer.
        let free_tx = free_tx;
        s.spawn(move || {
            for b in boxes(shape, &e) {
                let Ok(mut buf) = free_rx.recv() else {
                    return;
                };
                let got = read_box(src, path, offset, shape, w, &b, &mut buf, tiling.readers);
                let failed = got.is_err();
                if full_tx.send((b, got.map(|()| buf))).is_err() || failed {
                    return;
                }
            }
        });
        let mut done = 0u64;
        let mut behind: std::collections::VecDeque<Range<u64>> = Default::default();
        for (b, got) in full_rx {
            let buf = got?;
            let n: usize = b.extent.iter().product::<usize>() * w;
            let part = &mut reordered[..n];
            crate::layout::transpose_c_to_f(&buf[..n], &b.extent, w, part, &mut |_, _| {})?;
            let _ = free_tx.send(buf);
            fix(part)?;
            let (run, at) = runs(shape, &b, false);
            let run = run * w;
            for (piece, &o) in part.chunks_exact(run).zip(&at) {
                match &mut out {
                    Output::Memory(dst) => dst[o * w..o * w + run].copy_from_slice(piece),
                    // Written to the file, not stored through its mapping: a write
                    // fault brings in a large folio (up to 2 MiB) that is then written
                    // back whole for every run stored in it, where a write gets a
                    // folio its own size. Measured: 6.7 bytes to the disk per byte
                    // through the mapping.
                    Output::File { file, path, offset } => {
                        sys::write_all_at(file, piece, *offset + (o * w) as u64)
                            .map_err(io_at("write", path))?;
                    }
                }
            }
            if let (Output::File { file, offset, .. }, Some(first), Some(last)) =
                (&out, at.first(), at.last())
            {
                let base = *offset;
                behind.push_back(base + (first * w) as u64..base + (last * w + run) as u64);
                if behind.len() > LAG {
                    if let Some(r) = behind.pop_front() {
                        sys::write_back(file, r, WriteBack::Finish);
                    }
                }
            }
            done += n as u64;
            placed(done);
        }
        Ok(())
    })
}

/// Reads box `b` into `buf` in C order, its runs on `readers` threads.
#[allow(clippy::too_many_arguments)]
fn read_box(
    file: &File,
    path: &Path,
    offset: u64,
    shape: &[usize],
    w: usize,
    b: &Tile,
    buf: &mut [u8],
    readers: usize,
) -> Result<()> {
    let (run, at) = runs(shape, b, true);
    let run = run * w;
    let pieces = buf.chunks_exact_mut(run).zip(&at);
    let pieces = pieces.map(|(piece, &o)| (piece, offset + (o * w) as u64));
    crate::scan::read_pieces(file, path, pieces, readers.clamp(1, at.len()), |_, _| {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn boxes_make_the_fewest_requests_within_the_budget() {
        // 2-D: square-ish boxes, reads and writes of similar length.
        let e = box_shape(&[1 << 17, 49152], 4, 128 << 20);
        assert_eq!(e, vec![8192, 4096]);
        // A stack of frames: the frame's rows whole on the read side and the frame
        // count whole on the write side, 40 KiB reads and 240 KiB writes (halving
        // the frame count instead would double the reads but make 16 KiB writes).
        let e = box_shape(&[6144, 1024, 1024], 4, 256 << 20);
        assert_eq!(e, vec![6144, 10, 1024]);
        assert_eq!(
            box_shape(&[6144, 1024, 1024], 4, 128 << 20),
            vec![6144, 5, 1024]
        );
        // Small enough: one box, the whole array.
        assert_eq!(box_shape(&[30, 40, 5], 8, 1 << 20), vec![30, 40, 5]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Any shape, item size and budget: the file reordered box by box equals the
        /// in-memory reorder, and the fix saw every byte once.
        #[test]
        fn equals_the_in_memory_reorder(
            shape in proptest::collection::vec(1usize..9, 1..5),
            w in prop::sample::select(vec![1usize, 2, 3, 4, 8]),
            budget in 1usize..600,
            readers in 1usize..4,
            lead in 0u64..9,
        ) {
            let n: usize = shape.iter().product::<usize>() * w;
            let src: Vec<u8> = (0..n).map(|i| (i * 7 + i / 251) as u8).collect();
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("c.bin");
            let mut bytes = vec![0xAAu8; lead as usize];
            bytes.extend_from_slice(&src);
            std::fs::write(&path, &bytes).unwrap();
            let file = File::open(&path).unwrap();
            let mut want = vec![0u8; n];
            crate::layout::transpose_c_to_f(&src, &shape, w, &mut want, &mut |_, _| {}).unwrap();
            let mut got = vec![0u8; n];
            let mut fixed = 0;
            let mut last = 0;
            let tiling = Tiling { budget, readers };
            reorder(
                (&file, &path), lead, &shape, w, Output::Memory(&mut got), tiling,
                &mut |b| { fixed += b.len(); Ok(()) },
                &mut |done| { assert!(done > last); last = done; },
            ).unwrap();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(fixed, n);
            prop_assert_eq!(last, n as u64);
            // Into a file, after `lead` bytes of something else, as a conversion writes.
            let out_path = dir.path().join("f.bin");
            let out = std::fs::OpenOptions::new()
                .read(true).write(true).create(true).truncate(true)
                .open(&out_path).unwrap();
            out.set_len(lead + n as u64).unwrap();
            let into = Output::File { file: &out, path: &out_path, offset: lead };
            reorder(
                (&file, &path), lead, &shape, w, into, tiling,
                &mut |_| Ok(()), &mut |_| {},
            ).unwrap();
            let written = std::fs::read(&out_path).unwrap();
            prop_assert_eq!(&written[lead as usize..], &want[..]);
            prop_assert!(written[..lead as usize].iter().all(|&b| b == 0));
        }
    }
}
