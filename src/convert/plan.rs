//! The planner: an array cut into pieces that both sides read and write in long runs,
//! copied on a few threads in bounded memory.
//!
//! A piece is a box read at once, written whole or cut into the sink's chunks:
//!
//! - Column-major on both sides (`.ra`, Fortran `.npy`, memory): whole frames along
//!   the last axis, about 64 MiB a piece (each one contiguous stretch of both).
//! - A C-order source into a column-major sink: the box that needs the fewest requests
//!   of the disk ([`box_shape`]), about 128 MiB: for a stack of frames, the frames'
//!   rows whole on the read side and every frame on the write side. A C-order source
//!   that the page cache holds is mapped: a break in a read's run then costs a cache
//!   line, not a request, and the box weighs a write's break [`MAPPED_WRITE_COST`]
//!   times as much (a tensor is whole columns, one write each), in
//!   [`MAPPED_TILE_BYTES`].
//! - Either way, an array large enough is cut so that every worker has a piece.
//! - A sink with chunks (Zarr, an upload's parts) takes its chunks. From a source that
//!   holds its bytes in memory or a mapping, or whose runs a chunk keeps long, a piece
//!   is a chunk; from a file that a chunk would read in short runs, a slab of whole
//!   chunk rows is read at once (contiguous in the file: along the last axis of a
//!   column-major one, the first of a C-order one) and cut into its chunks.
//! - A source with chunks into a column-major sink: slabs of whole chunk rows along
//!   the last axis, each written as one run.
//!
//! Every byte is read once and written once. Each piece is read (or, from a source
//! that lends its bytes, taken where they lie) and written by one of [`WORKERS`]
//! threads (one per core at most where the copy is all computation), whose buffers a
//! tree's conversion keeps from one array to the next; progress is reported from this
//! one.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Mutex};

use super::memory::copy_box;
use super::{Block, Converted, Desc, Grain, Sink, Source};
use crate::error::{ErrorKind, Result};
use crate::layout::Progress;

/// Threads reading and writing pieces.
const WORKERS: usize = 3;

/// Bytes of a piece of whole frames, or of chunk rows.
const FRAME_BOX_BYTES: u64 = 64 << 20;

/// Bytes of a piece of a C-order source.
const TILE_BYTES: usize = 128 << 20;

/// Bytes of a piece of a mapped C-order source: a larger box reads no longer runs
/// from a mapping, while its buffer is zeroed and faulted in once per worker and
/// leaves the cache sooner. Against 128 MiB: 9% less time on a 2 GiB uint16 stack,
/// the same on 4 GiB of tensors (docs/PERFORMANCE.md); 4 MiB is no faster again.
const MAPPED_TILE_BYTES: usize = 16 << 20;

/// What a write's run broken costs against a read's, from a mapped source: a
/// request (a `pwrite` costs about 3 us besides its bytes) against a few cache lines.
/// For a 2 GiB uint16 stack: reads of 256 B and writes of 128 KiB, where 64 made reads
/// of 512 B and writes of 64 KiB: system time 0.82x, wall 0.93x (docs/PERFORMANCE.md);
/// 1024 made reads of 128 B, and took 1.25x the user time.
const MAPPED_WRITE_COST: f64 = 256.0;

/// The fewest bytes of a piece cut so that every worker has one: an array of fewer
/// than `WORKERS` times this is fewer pieces, and no more threads than pieces.
const SPLIT_BYTES: u64 = 4 << 20;

/// A box read at once, and the boxes it is written as (none: itself, whole).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) read: Block,
    pub(crate) writes: Vec<Block>,
}

/// A worker's buffers: the piece read, a box of it cut for the sink, and the scratch
/// of a C-order source's reads ([`crate::layout::with_scratch`]).
#[derive(Default)]
struct Buffers {
    buf: Vec<u8>,
    part: Vec<u8>,
    scratch: Vec<u8>,
}

/// Buffers kept from one array's conversion to the next: fresh ones per array (a
/// tensor of a model's, a variable of a file's) cost more in page faults than the
/// copy. Freed with the pool.
#[derive(Default)]
struct Pool(Mutex<Vec<Buffers>>);

impl Pool {
    /// `f` over buffers from the pool (new ones where it has none), this thread
    /// keeping their scratch meanwhile; given back after.
    fn with<R>(&self, f: impl FnOnce(&mut Buffers) -> R) -> R {
        let taken = self.0.lock().map(|mut v| v.pop()).ok().flatten();
        let mut b = taken.unwrap_or_default();
        let kept = crate::layout::keep_scratch(std::mem::take(&mut b.scratch));
        let r = f(&mut b);
        b.scratch = kept.release();
        if let Ok(mut v) = self.0.lock() {
            v.push(b);
        }
        r
    }
}

/// The progress of many arrays (a tree's, an archive's), copied one after another, as
/// one count: each array's bytes after those of the arrays before it (the total grows
/// as each array is reached), so that a bar runs once over them all, not once each.
/// Their workers' buffers are kept from one array to the next.
#[derive(Default)]
pub(crate) struct Overall {
    before: u64,
    pool: Pool,
}

impl Overall {
    /// [`copy`], its progress counted after the arrays copied before.
    pub(crate) fn copy(
        &mut self,
        source: Box<dyn Source>,
        sink: Box<dyn Sink>,
        progress: Progress,
    ) -> Result<Converted> {
        let before = self.before;
        let mut total = 0;
        let done = copy_in(source, sink, &self.pool, &mut |d, t| {
            total = t;
            progress(before + d, before + t);
        });
        self.before += total;
        done
    }
}

/// Copies `source` into `sink` piece by piece (see the module), then closes the source
/// and commits the sink; on an error the sink is dropped, and leaves nothing.
pub fn copy(source: Box<dyn Source>, sink: Box<dyn Sink>, progress: Progress) -> Result<Converted> {
    copy_in(source, sink, &Pool::default(), progress)
}

/// [`copy`], its workers' buffers taken from `pool` and given back.
fn copy_in(
    source: Box<dyn Source>,
    sink: Box<dyn Sink>,
    pool: &Pool,
    progress: Progress,
) -> Result<Converted> {
    fill_in(source.as_ref(), sink.as_ref(), pool, progress)?;
    // Closed first: the output may be the input, and Windows replaces no open file.
    drop(source);
    sink.commit()
}

/// Copies `source` into `sink` piece by piece, without committing: [`copy`]'s work,
/// for a source the caller keeps (an array in memory).
pub(crate) fn fill(source: &dyn Source, sink: &dyn Sink, progress: Progress) -> Result<()> {
    fill_in(source, sink, &Pool::default(), progress)
}

/// [`fill`], its workers' buffers taken from `pool` and given back.
fn fill_in(source: &dyn Source, sink: &dyn Sink, pool: &Pool, progress: Progress) -> Result<()> {
    let desc = source.desc().clone();
    // A source that lends its bytes costs the same whatever the box.
    let from = match source.lend() {
        Some(_) => Grain::Memory,
        None => source.grain(),
    };
    let pieces = plan(&desc, &from, &sink.grain())?;
    run(source, sink, &desc, &pieces, workers(&from), pool, progress)
}

/// The pieces that cover `desc`'s array for a source of grain `from` and a sink of
/// grain `to`, in column-major order of their grid.
pub(crate) fn plan(desc: &Desc, from: &Grain, to: &Grain) -> Result<Vec<Piece>> {
    let dims = &desc.dims;
    if dims.contains(&0) {
        return Ok(Vec::new());
    }
    let w = desc.dtype.elbyte;
    let n = dims.len();
    // Pieces of at most `most` bytes, and at least one per worker where the array is
    // big enough: the workers share even one array's copy.
    let each = desc.nbytes().div_ceil(WORKERS as u64).max(SPLIT_BYTES);
    let budget = |most: u64| most.min(each);
    let whole = |shape: Vec<u64>| -> Result<Vec<Piece>> {
        Ok(grid(dims, &shape)?
            .into_iter()
            .map(|read| Piece {
                read,
                writes: Vec::new(),
            })
            .collect())
    };
    // Slabs of `rows` chunk rows (of extent `c` along `axis`), whole along the others.
    let slabs = |c: &[u64], axis: usize| -> Vec<u64> {
        let mut shape = dims.clone();
        let row: u64 = dims
            .iter()
            .enumerate()
            .map(|(k, &d)| if k == axis { c[k] } else { d })
            .product::<u64>()
            * w;
        shape[axis] = (c[axis] * (FRAME_BOX_BYTES / row.max(1)).max(1)).min(dims[axis]);
        shape
    };
    match (from, to) {
        (Grain::RowMajor, Grain::Chunks(c)) if n > 1 => cut(dims, slabs(c, 0), c),
        (Grain::ColumnMajor, Grain::Chunks(c)) if n > 1 && !Block::all(c).contiguous_in(dims) => {
            cut(dims, slabs(c, n - 1), c)
        }
        (_, Grain::Chunks(c)) => whole(c.clone()),
        (Grain::Chunks(c), _) if n > 0 => whole(slabs(c, n - 1)),
        (Grain::RowMajor | Grain::RowMajorMapped, _) | (_, Grain::RowMajor) => {
            let shape = crate::view::shape_usize(dims)?;
            let (most, write_cost) = if *from == Grain::RowMajorMapped {
                (MAPPED_TILE_BYTES, MAPPED_WRITE_COST)
            } else {
                (TILE_BYTES, 1.0)
            };
            whole(
                box_shape(&shape, w as usize, budget(most as u64) as usize, write_cost)
                    .into_iter()
                    .map(|e| e as u64)
                    .collect(),
            )
        }
        _ => whole(crate::layout::frame_chunks(
            dims,
            w,
            budget(FRAME_BOX_BYTES),
        )),
    }
}

/// Pieces of `shape`, each cut into the chunks of `chunk` it holds (`shape` is whole
/// chunks along every axis, or reaches the array's end).
fn cut(dims: &[u64], shape: Vec<u64>, chunk: &[u64]) -> Result<Vec<Piece>> {
    let chunks = grid(dims, chunk)?;
    let mut pieces: Vec<Piece> = grid(dims, &shape)?
        .into_iter()
        .map(|read| Piece {
            read,
            writes: Vec::new(),
        })
        .collect();
    let pgrid: Vec<u64> = dims
        .iter()
        .zip(&shape)
        .map(|(d, s)| d.div_ceil(*s))
        .collect();
    for c in chunks {
        // The piece whose grid cell holds the chunk's origin.
        let i = c
            .origin
            .iter()
            .zip(&shape)
            .zip(&pgrid)
            .rev()
            .fold(0u64, |acc, ((o, s), g)| acc * g + o / s);
        pieces[i as usize].writes.push(c);
    }
    Ok(pieces)
}

/// The boxes of extents `shape` that cover an array of `dims` (edge boxes cut short),
/// in column-major order of their grid.
fn grid(dims: &[u64], shape: &[u64]) -> Result<Vec<Block>> {
    if shape.len() != dims.len() || shape.contains(&0) {
        return Err(ErrorKind::InvalidArgument(format!(
            "boxes of {shape:?} for an array of {dims:?}"
        ))
        .into());
    }
    let cells: Vec<u64> = dims
        .iter()
        .zip(shape)
        .map(|(d, s)| d.div_ceil(*s))
        .collect();
    let count: u64 = cells.iter().product();
    Ok((0..count)
        .map(|mut i| {
            let origin: Vec<u64> = cells
                .iter()
                .zip(shape)
                .map(|(g, s)| {
                    let o = (i % g) * s;
                    i /= g;
                    o
                })
                .collect();
            let extent = origin
                .iter()
                .zip(shape)
                .zip(dims)
                .map(|((o, s), d)| (*s).min(d - o))
                .collect();
            Block {
                origin,
                shape: extent,
            }
        })
        .collect())
}

/// Threads copying from a source of grain `from` ([`Grain::Memory`] for one that
/// lends its bytes): [`WORKERS`], or one per core at most where the copy is all
/// computation (a source that lends its bytes, or a mapped one): there a thread more
/// than the cores only contends for the memory and the file (a 2 GiB uint16 stack on
/// two cores: 0.94x the time with two; 4 GiB of tensors no slower).
fn workers(from: &Grain) -> usize {
    if matches!(from, Grain::Memory | Grain::RowMajorMapped) {
        rayon::current_num_threads().clamp(1, WORKERS)
    } else {
        WORKERS
    }
}

/// Reads and writes `pieces` on `threads` threads (one piece on this one), their
/// buffers from `pool`, reporting progress here.
fn run(
    source: &dyn Source,
    sink: &dyn Sink,
    desc: &Desc,
    pieces: &[Piece],
    threads: usize,
    pool: &Pool,
    progress: Progress,
) -> Result<()> {
    let total = desc.nbytes();
    let w = desc.dtype.elbyte;
    let lent = source.lend();
    if pieces.len() <= 1 {
        // One piece (every small array): no thread to start, here where it is asked.
        pool.with(|b| {
            pieces.iter().try_for_each(|p| {
                copy_piece(source, sink, desc, lent, p, (&mut b.buf, &mut b.part))
            })
        })?;
        progress(total, total);
        return Ok(());
    }
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<Result<u64>>();
    std::thread::scope(|s| {
        for _ in 0..threads.min(pieces.len()) {
            let (tx, next, stop) = (tx.clone(), &next, &stop);
            s.spawn(move || {
                pool.with(|b| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= pieces.len() || stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let p = &pieces[i];
                    let done = copy_piece(source, sink, desc, lent, p, (&mut b.buf, &mut b.part))
                        .map(|()| p.read.count() * w);
                    let failed = done.is_err();
                    if tx.send(done).is_err() || failed {
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                })
            });
        }
        drop(tx);
        let mut done = 0u64;
        for got in rx {
            match got {
                Ok(n) => {
                    done += n;
                    progress(done, total);
                }
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    return Err(e);
                }
            }
        }
        Ok(())
    })
}

/// Reads piece `p` (or takes it from the `lent` bytes) and writes it, whole or as its
/// boxes; `buf` and `part` are the thread's buffers.
fn copy_piece(
    source: &dyn Source,
    sink: &dyn Sink,
    desc: &Desc,
    lent: Option<&[u8]>,
    p: &Piece,
    (buf, part): (&mut Vec<u8>, &mut Vec<u8>),
) -> Result<()> {
    let (dims, w) = (&desc.dims, desc.dtype.elbyte);
    let bytes = (p.read.count() * w) as usize;
    let data: &[u8] = match lent {
        Some(all) if p.read.contiguous_in(dims) => {
            let at = p.read.offset_in(dims, w) as usize;
            &all[at..at + bytes]
        }
        Some(all) => {
            let buf = sized(buf, bytes);
            copy_box(dims, w, all, &p.read, buf)?;
            buf
        }
        None => {
            let buf = sized(buf, bytes);
            source.read_box(&p.read, buf)?;
            buf
        }
    };
    if p.writes.is_empty() {
        return sink.write_box(&p.read, data);
    }
    for b in &p.writes {
        // The box, within the piece.
        let inner = Block {
            origin: b
                .origin
                .iter()
                .zip(&p.read.origin)
                .map(|(a, o)| a - o)
                .collect(),
            shape: b.shape.clone(),
        };
        let part = sized(part, (b.count() * w) as usize);
        copy_box(&p.read.shape, w, data, &inner, part)?;
        sink.write_box(b, part)?;
    }
    Ok(())
}

/// The first `len` bytes of `buf` (contents unspecified), grown where it is shorter:
/// a kept buffer is zeroed once, not for every piece longer than the last.
fn sized(buf: &mut Vec<u8>, len: usize) -> &mut [u8] {
    if buf.len() < len {
        buf.resize(len, 0);
    }
    &mut buf[..len]
}

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
/// Its length in elements.
fn run_of(shape: &[usize], e: &[usize], axes: &[usize]) -> usize {
    let mut run = 1;
    for &k in axes {
        run *= e[k];
        if e[k] < shape[k] {
            return run;
        }
    }
    run
}

/// The extents of the boxes for `shape` (C order) of `w`-byte items within `budget`
/// bytes: of the boxes whose runs are as long as they can be (trailing axes whole on
/// the read side, leading axes whole on the write side, one partial axis on each, the
/// axes between them one element thick), the one making the fewest reads and writes
/// per element (`1/read run + write_cost/write run`). A disk's time per request is
/// about a fixed cost plus its bytes, so with a `write_cost` of 1 this is the one the
/// disk finishes first; from a mapping a read's break costs far less than a write's.
pub(crate) fn box_shape(shape: &[usize], w: usize, budget: usize, write_cost: f64) -> Vec<usize> {
    let n = shape.len();
    let (c_axes, f_axes) = (fastest_first(n, true), fastest_first(n, false));
    let most = (budget / w.max(1)).max(1);
    let cost = |e: &[usize]| {
        let r = run_of(shape, e, &c_axes);
        let w = run_of(shape, e, &f_axes);
        1.0 / r as f64 + write_cost / w as f64
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DType;

    #[test]
    fn boxes_make_the_fewest_requests_within_the_budget() {
        // 2-D: square-ish boxes, reads and writes of similar length.
        let e = box_shape(&[1 << 17, 49152], 4, 128 << 20, 1.0);
        assert_eq!(e, vec![8192, 4096]);
        // A stack of frames: the frame's rows whole on the read side and the frame
        // count whole on the write side, 40 KiB reads and 240 KiB writes (halving
        // the frame count instead would double the reads but make 16 KiB writes).
        let e = box_shape(&[6144, 1024, 1024], 4, 256 << 20, 1.0);
        assert_eq!(e, vec![6144, 10, 1024]);
        assert_eq!(
            box_shape(&[6144, 1024, 1024], 4, 128 << 20, 1.0),
            vec![6144, 5, 1024]
        );
        // Small enough: one box, the whole array.
        assert_eq!(box_shape(&[30, 40, 5], 8, 1 << 20, 1.0), vec![30, 40, 5]);
        // A 4096x2048 f16 tensor in 5 MiB boxes: from a file, rows whole (one read,
        // writes of 1365 elements); from a mapping, columns whole (one write, reads of
        // 682 elements, which cost a cache line each, not a request).
        assert_eq!(
            box_shape(&[4096, 2048], 2, (16 << 20) / 3, 1.0),
            vec![1365, 2048]
        );
        assert_eq!(
            box_shape(&[4096, 2048], 2, (16 << 20) / 3, MAPPED_WRITE_COST),
            vec![4096, 682]
        );
        // A stack of 256 pages of 2048x2048 u16 in 16 MiB boxes, from a mapping:
        // reads of 256 B (128 of each row), writes of 128 KiB (every page of 256 rows).
        assert_eq!(
            box_shape(&[256, 2048, 2048], 2, MAPPED_TILE_BYTES, MAPPED_WRITE_COST),
            vec![256, 256, 128]
        );
    }

    #[test]
    fn every_worker_has_a_piece_of_a_large_array_and_a_small_one_is_one_piece() {
        let desc = |dims: Vec<u64>| Desc {
            dtype: DType::F32,
            dims,
            trailer: Vec::new(),
        };
        for from in [
            Grain::ColumnMajor,
            Grain::RowMajor,
            Grain::RowMajorMapped,
            Grain::Memory,
        ] {
            // 64 MiB: WORKERS pieces of about a third each (and the rest of a
            // frame), not one of 64 MiB.
            let pieces = plan(&desc(vec![4096, 4096]), &from, &Grain::ColumnMajor).unwrap();
            assert!((WORKERS..=WORKERS + 1).contains(&pieces.len()), "{from:?}");
            let most = pieces.iter().map(|p| p.read.count() * 4).max().unwrap();
            assert!(
                most <= (64 << 20) / WORKERS as u64 + (64 << 10),
                "{from:?}: {most}"
            );
            // 1 MiB: one piece, on the caller's thread.
            let pieces = plan(&desc(vec![512, 512]), &from, &Grain::ColumnMajor).unwrap();
            assert_eq!(pieces.len(), 1, "{from:?}");
        }
        // A 2 GiB uint16 stack: 16 MiB boxes from a mapping, each page's column
        // (256 frames) whole for runs of 64 KiB written; 128 MiB from a file.
        let stack = Desc {
            dtype: DType::U16,
            dims: vec![256, 2048, 2048],
            trailer: Vec::new(),
        };
        let most = |from| {
            let pieces = plan(&stack, &from, &Grain::ColumnMajor).unwrap();
            assert!(pieces.iter().all(|p| p.read.shape[0] == 256), "{from:?}");
            pieces.iter().map(|p| p.read.count() * 2).max().unwrap()
        };
        assert_eq!(most(Grain::RowMajorMapped), 16 << 20);
        assert_eq!(most(Grain::RowMajor), 128 << 20);
        // From memory (or a mapping), a piece is whole frames: one write each.
        let pieces = plan(&desc(vec![4096, 2048]), &Grain::Memory, &Grain::ColumnMajor);
        for p in pieces.unwrap() {
            assert!(p.read.contiguous_in(&[4096, 2048]), "{:?}", p.read);
        }
    }

    #[test]
    fn a_copy_all_computation_takes_a_thread_per_core_at_most() {
        let cores = rayon::current_num_threads().clamp(1, WORKERS);
        assert_eq!(workers(&Grain::Memory), cores);
        assert_eq!(workers(&Grain::RowMajorMapped), cores);
        assert_eq!(workers(&Grain::RowMajor), WORKERS);
        assert_eq!(workers(&Grain::ColumnMajor), WORKERS);
    }

    #[test]
    fn plans_cover_the_array_once() {
        let desc = Desc {
            dtype: DType::F32,
            dims: vec![5, 7, 9],
            trailer: Vec::new(),
        };
        for (from, to) in [
            (Grain::ColumnMajor, Grain::ColumnMajor),
            (Grain::RowMajor, Grain::ColumnMajor),
            (Grain::Memory, Grain::ColumnMajor),
            (Grain::RowMajorMapped, Grain::ColumnMajor),
            (Grain::RowMajorMapped, Grain::Chunks(vec![2, 3, 4])),
            (Grain::ColumnMajor, Grain::Chunks(vec![2, 3, 4])),
            (Grain::RowMajor, Grain::Chunks(vec![2, 3, 4])),
            (Grain::Memory, Grain::Chunks(vec![2, 3, 4])),
            (Grain::Chunks(vec![5, 7, 2]), Grain::Memory),
            (Grain::Chunks(vec![2, 2, 2]), Grain::ColumnMajor),
        ] {
            let pieces = plan(&desc, &from, &to).unwrap();
            let (mut read, mut written) = (vec![0u8; 5 * 7 * 9], vec![0u8; 5 * 7 * 9]);
            let mark = |seen: &mut [u8], b: &Block| {
                for r in crate::selection::runs(&desc.dims, 1, &b.strides(), 0) {
                    for x in &mut seen[r.from as usize..r.from as usize + r.len] {
                        *x += 1;
                    }
                }
            };
            for p in &pieces {
                mark(&mut read, &p.read);
                if p.writes.is_empty() {
                    mark(&mut written, &p.read);
                }
                for b in &p.writes {
                    let inside = (0..3).all(|k| {
                        b.origin[k] >= p.read.origin[k]
                            && b.origin[k] + b.shape[k] <= p.read.origin[k] + p.read.shape[k]
                    });
                    assert!(inside, "{b:?} outside {:?}", p.read);
                    mark(&mut written, b);
                }
            }
            assert!(read.iter().all(|&x| x == 1), "read {from:?} -> {to:?}");
            assert!(
                written.iter().all(|&x| x == 1),
                "written {from:?} -> {to:?}"
            );
        }
        let empty = Desc {
            dims: vec![3, 0],
            ..desc
        };
        assert!(plan(&empty, &Grain::ColumnMajor, &Grain::ColumnMajor)
            .unwrap()
            .is_empty());
    }
}
