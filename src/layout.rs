//! Column-major (Fortran) ordering of arrays of any layout.
//!
//! RawArray stores the first dimension fastest. An ndarray can be laid out in C order,
//! Fortran order or with arbitrary strides; these functions produce its elements in
//! column-major order: a straight copy for Fortran-contiguous input, a cache-blocked
//! transpose of `(axis 0, last axis)` planes otherwise.

use ndarray::{ArrayViewD, ArrayViewMutD, Axis, Dimension, Ix2, IxDyn, ShapeBuilder, Slice};

use crate::error::{Error, ErrorKind, Result};

mod unit;

use unit::{Move, MICRO, UNIT};

/// Progress callback: `(bytes done, bytes total)`.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// Boxes of whole frames along the last axis of an array of `dims` and
/// `itemsize`-byte elements, about `target` bytes each, cut along the slowest axes
/// where one frame is larger: each one contiguous stretch of the column-major data (a
/// Zarr output's default chunks, a conversion's boxes).
pub fn frame_chunks(dims: &[u64], itemsize: u64, target: u64) -> Vec<u64> {
    let mut chunk: Vec<u64> = dims.iter().map(|&d| d.max(1)).collect();
    for k in (0..dims.len()).rev() {
        let inner = crate::header::checked_bytes(itemsize, &dims[..k])
            .unwrap_or(u64::MAX)
            .max(1);
        let whole = inner.saturating_mul(dims[k].max(1));
        if whole <= target {
            break;
        }
        if inner >= target {
            chunk[k] = 1;
            continue;
        }
        chunk[k] = (target / inner).clamp(1, dims[k].max(1));
        break;
    }
    chunk
}

/// Bytes reordered between progress reports.
const PIECE: usize = 16 << 20;

/// Edge of the square tiles of the blocked transpose of strided planes (ndarray's
/// `assign` per tile).
const TILE: usize = 64;

/// Edge of the square tiles of the blocked transpose of planes with contiguous rows,
/// chosen by measurement: on 4096x4096, 100x37x1000 and 4096x3x4096 f32 arrays,
/// 256 beat 32, 64, 128, 1024 and untiled, or came within 10% of the best.
const SLICE_TILE: usize = 256;

/// Axes shorter than this make tiling pointless; ndarray's own strided copy is used.
const MIN_TILED_EDGE: usize = 8;

/// Copies `src`'s elements into `dst` in column-major order. `dst.len()` must equal
/// `src.len()`.
pub fn copy_to_fortran<T: Copy>(src: &ArrayViewD<'_, T>, dst: &mut [T]) {
    to_fortran(src, dst, None);
}

/// [`copy_to_fortran`], its planes moved as squares by `squares` where given.
fn to_fortran<T: Copy>(src: &ArrayViewD<'_, T>, dst: &mut [T], squares: Option<Move<T>>) {
    assert_eq!(src.len(), dst.len(), "destination length");
    let rev = src.view().reversed_axes();
    if let Some(s) = rev.as_slice() {
        dst.copy_from_slice(s);
        return;
    }
    let mut out = match ArrayViewMutD::from_shape(IxDyn(src.shape()).f(), dst) {
        Ok(v) => v,
        Err(e) => unreachable!("a Fortran view of src.len() elements: {e}"),
    };
    let n = src.ndim();
    let d0 = src.len_of(Axis(0));
    if n < 2 || d0 < MIN_TILED_EDGE || src.len_of(Axis(n - 1)) < MIN_TILED_EDGE {
        out.assign(src);
        return;
    }
    let mut squares = squares.map(Squares::new);
    for idx in ndarray::indices(&src.shape()[1..n - 1]) {
        let (mut s, mut d) = (src.view(), out.view_mut());
        for &j in idx.slice() {
            s.index_axis_inplace(Axis(1), j);
            d.index_axis_inplace(Axis(1), j);
        }
        match (
            s.into_dimensionality::<Ix2>(),
            d.into_dimensionality::<Ix2>(),
        ) {
            (Ok(s), Ok(mut d)) => transpose_tiles(&s, &mut d, squares.as_mut()),
            _ => unreachable!("two axes remain"),
        }
    }
}

/// Assigns `src` to `dst` tile by tile, so that both stay in cache.
fn transpose_tiles<T: Copy>(
    src: &ndarray::ArrayView2<'_, T>,
    dst: &mut ndarray::ArrayViewMut2<'_, T>,
    squares: Option<&mut Squares<T>>,
) {
    let rows: Option<Vec<&[T]>> = src.rows().into_iter().map(|r| r.to_slice()).collect();
    let cols: Option<Vec<&mut [T]>> = dst
        .columns_mut()
        .into_iter()
        .map(|c| c.into_slice())
        .collect();
    if let (Some(rows), Some(mut cols)) = (rows, cols) {
        transpose_slices(&rows, &mut cols, squares);
        return;
    }
    let (nrows, ncols) = src.dim();
    for c0 in (0..ncols).step_by(TILE) {
        let cs = Slice::from(c0..(c0 + TILE).min(ncols));
        for r0 in (0..nrows).step_by(TILE) {
            let rs = Slice::from(r0..(r0 + TILE).min(nrows));
            let s = src.slice_each_axis(|ax| if ax.axis.index() == 0 { rs } else { cs });
            dst.slice_each_axis_mut(|ax| if ax.axis.index() == 0 { rs } else { cs })
                .assign(&s);
        }
    }
}

/// `cols[j][i] = rows[i][j]`, for the contiguous rows of a source plane and the
/// contiguous columns of a destination plane: 256x256 tiles, each copied as bands of
/// 8 rows made of 8x8 blocks, or moved as squares by `squares` where there is such a
/// move, through [`Staging`] (the edges as blocks and single elements). Five times
/// faster than ndarray's strided `assign` per tile on a 4096x4096 f32 plane (15 ms
/// against 78), whose power-of-two strides defeat the cache.
fn transpose_slices<T: Copy>(
    rows: &[&[T]],
    cols: &mut [&mut [T]],
    squares: Option<&mut Squares<T>>,
) {
    let (nrows, ncols) = (rows.len(), cols.len());
    let tiles = (0..ncols)
        .step_by(SLICE_TILE)
        .flat_map(|c0| (0..nrows).step_by(SLICE_TILE).map(move |r0| (r0, c0)));
    let (Some(sq), Some(&first)) = (squares, rows.first().and_then(|r| r.first())) else {
        for (r0, c0) in tiles {
            let (r1, c1) = ((r0 + SLICE_TILE).min(nrows), (c0 + SLICE_TILE).min(ncols));
            bands(rows, cols, (r0, r1), (c0, c1), (0, 0));
        }
        return;
    };
    let Squares {
        by: move_square,
        square,
        rows: panel,
        cols: out,
    } = sq;
    panel.fit(first, UNIT, ncols.min(SLICE_TILE));
    out.fit(first, ncols.min(SLICE_TILE), nrows.min(SLICE_TILE));
    for (r0, c0) in tiles {
        let (r1, c1) = ((r0 + SLICE_TILE).min(nrows), (c0 + SLICE_TILE).min(ncols));
        let mut tile = out.lines_mut(c1 - c0, r1 - r0);
        for rb in (r0..r1).step_by(UNIT) {
            let re = (rb + UNIT).min(r1);
            let staged = panel.stage(rows, (rb, re), (c0, c1));
            for cb in (c0..c1).step_by(UNIT) {
                let ce = (cb + UNIT).min(c1);
                let (i, j) = (rb - r0, cb - c0);
                if ce - cb == UNIT && re - rb == UNIT {
                    move_square(&staged, &mut tile[j..j + UNIT], i, j, square);
                } else {
                    bands(&staged, &mut tile, (i, re - r0), (j, ce - c0), (i, 0));
                }
            }
        }
        for (col, staged) in cols[c0..c1].iter_mut().zip(&tile) {
            col[r0..r1].copy_from_slice(staged);
        }
    }
}

/// Lines of items padded by a cache line, in the cache, that squares read a tile's
/// source rows from (`UNIT` at a time) and write its columns into (copied out whole
/// when the tile is done). Rows of a plane that lie a power of two apart (the pages of
/// a stack, 8 MiB apart, in the page cache's 2 MiB folios) share one cache set at
/// every level, and a square reading a line of each of its 32 rows evicts its own
/// lines and prefetches; copied a row at a time, they are read in runs. Columns
/// written 64 bytes at a time, far apart in a box's buffer, each wait for their line;
/// copied out whole, each is a run. `ra convert` of a 2 GiB uint16 stack: user time
/// 0.79x, wall 0.90x with the rows staged; user time 0.90x again with the columns, the
/// wall within the machine's noise (docs/PERFORMANCE.md). Bands read 8 rows, what a set holds: through staged rows, a
/// 2 GiB float32 stack took 1.13x the user time, so they move the plane's own.
struct Staging<T> {
    buf: Vec<T>,
    stride: usize,
}

/// A move of squares and its buffers, made once for all the planes of a transpose:
/// the stack of one square, and the staged rows and columns of a tile.
struct Squares<T> {
    by: Move<T>,
    square: Vec<u8>,
    rows: Staging<T>,
    cols: Staging<T>,
}

impl<T: Copy> Squares<T> {
    fn new(by: Move<T>) -> Self {
        Squares {
            by,
            square: vec![0; unit::SQUARE],
            rows: Staging::new(),
            cols: Staging::new(),
        }
    }
}

/// Rows ahead of the one being staged whose lines are asked of the cache.
const AHEAD_ROWS: usize = 8;

impl<T: Copy> Staging<T> {
    /// No room yet ([`Staging::fit`]).
    fn new() -> Self {
        Staging {
            buf: Vec::new(),
            stride: 0,
        }
    }

    /// Room for `lines` lines of `len` items: what there was, for the next plane of
    /// the same shape, or grown (its new items `fill`), not filled again per plane.
    fn fit(&mut self, fill: T, lines: usize, len: usize) {
        self.stride = len + Self::line();
        if self.buf.len() < lines * self.stride {
            self.buf.resize(lines * self.stride, fill);
        }
    }

    /// Items in a cache line.
    fn line() -> usize {
        (64 / std::mem::size_of::<T>().max(1)).max(1)
    }

    /// Rows `r` of `rows` (at most the lines there is room for), columns `c` (at most
    /// their length): `staged[i][j] == rows[r.0 + i][c.0 + j]`.
    fn stage<'a>(
        &'a mut self,
        rows: &[&[T]],
        (r0, r1): (usize, usize),
        (c0, c1): (usize, usize),
    ) -> Vec<&'a [T]> {
        let (width, stride) = (c1 - c0, self.stride);
        for (k, row) in rows[r0..r1].iter().enumerate() {
            if let Some(ahead) = rows.get(r0 + k + AHEAD_ROWS) {
                ahead[c0..c1]
                    .iter()
                    .step_by(Self::line())
                    .for_each(unit::ask);
            }
            self.buf[k * stride..k * stride + width].copy_from_slice(&row[c0..c1]);
        }
        (0..r1 - r0)
            .map(|k| &self.buf[k * stride..k * stride + width])
            .collect()
    }

    /// The first `n` lines, `len` items each (contents unspecified).
    fn lines_mut(&mut self, n: usize, len: usize) -> Vec<&mut [T]> {
        self.buf
            .chunks_mut(self.stride)
            .take(n)
            .map(|l| &mut l[..len])
            .collect()
    }
}

/// [`transpose_slices`] of rows `r` and columns `c` (a tile, or what squares leave):
/// bands of 8 rows, of 8x8 blocks where they fit and single elements elsewhere, from
/// `staged` rows whose first is row `at.0` of the plane and whose first element is in
/// column `at.1`.
fn bands<T: Copy>(
    staged: &[&[T]],
    cols: &mut [&mut [T]],
    (r0, r1): (usize, usize),
    (c0, c1): (usize, usize),
    at: (usize, usize),
) {
    for rb in (r0..r1).step_by(MICRO) {
        let re = (rb + MICRO).min(r1);
        let rows = &staged[rb - at.0..re - at.0];
        for cb in (c0..c1).step_by(MICRO) {
            let ce = (cb + MICRO).min(c1);
            if ce - cb == MICRO && re - rb == MICRO {
                unit::block(rows, &mut cols[cb..ce], rb, cb - at.1);
            } else {
                for (j, col) in cols[cb..ce].iter_mut().enumerate() {
                    for (x, row) in col[rb..re].iter_mut().zip(rows) {
                        *x = row[cb - at.1 + j];
                    }
                }
            }
        }
    }
}

/// Calls `sink` with `src`'s elements in column-major order, in pieces of at most
/// `budget` elements copied through `buf`, or in one piece borrowed straight from
/// `src` when it is Fortran-contiguous.
pub fn for_each_fortran_chunk<T: bytemuck::Zeroable + Copy, E>(
    src: ArrayViewD<'_, T>,
    budget: usize,
    buf: &mut Vec<T>,
    sink: &mut impl FnMut(&[T]) -> Result<(), E>,
) -> Result<(), E> {
    let rev = src.view().reversed_axes();
    if let Some(s) = rev.as_slice() {
        return sink(s);
    }
    if src.len() <= budget.max(1) || src.ndim() == 0 {
        buf.clear();
        buf.resize(src.len(), T::zeroed());
        copy_to_fortran(&src, buf);
        return sink(buf);
    }
    let last = Axis(src.ndim() - 1);
    let dl = src.len_of(last);
    let per = src.len() / dl;
    if per > budget {
        for k in 0..dl {
            for_each_fortran_chunk(src.index_axis(last, k), budget, buf, sink)?;
        }
    } else {
        let step = budget / per;
        for k0 in (0..dl).step_by(step) {
            let part = src.slice_axis(last, Slice::from(k0..(k0 + step).min(dl)));
            for_each_fortran_chunk(part, budget, buf, sink)?;
        }
    }
    Ok(())
}

/// Reorders C-order elements of `itemsize` bytes into column-major order, slab by slab
/// along the last axis so that progress can be reported.
pub fn transpose_c_to_f(
    src: &[u8],
    shape: &[usize],
    itemsize: usize,
    dst: &mut [u8],
    progress: Progress,
) -> Result<()> {
    c_to_f(src, shape, itemsize, None, dst, progress)
}

/// The elements `sel` picks (a [`Stride`](crate::Stride) per axis, checked by the
/// caller to lie within `shape`) of the C-order array `src` of `shape` and
/// `itemsize`-byte elements, column-major into `dst`: a box of a C-order array held
/// in memory or a mapping, read where it lies and transposed once.
pub fn select_c_to_f(
    src: &[u8],
    shape: &[usize],
    itemsize: usize,
    sel: &[crate::Stride],
    dst: &mut [u8],
) -> Result<()> {
    c_to_f(src, shape, itemsize, Some(sel), dst, &mut |_, _| ())
}

/// [`transpose_c_to_f`] of the elements `sel` picks (all of them without one).
fn c_to_f(
    src: &[u8],
    shape: &[usize],
    itemsize: usize,
    sel: Option<&[crate::Stride]>,
    dst: &mut [u8],
    progress: Progress,
) -> Result<()> {
    fn typed<const N: usize>(
        src: &[u8],
        shape: &[usize],
        sel: Option<&[crate::Stride]>,
        dst: &mut [u8],
        progress: Progress,
    ) -> std::result::Result<(), String>
    where
        [u8; N]: bytemuck::Pod,
    {
        type E<const N: usize> = [u8; N];
        let s: &[E<N>] = bytemuck::try_cast_slice(src).map_err(|e| e.to_string())?;
        let d: &mut [E<N>] = bytemuck::try_cast_slice_mut(dst).map_err(|e| e.to_string())?;
        let v = ArrayViewD::from_shape(IxDyn(shape), s).map_err(|e| e.to_string())?;
        let v = picked(v, sel, d.len(), "elements")?;
        by_slabs(&v, d, N, progress, unit::of::<N>());
        Ok(())
    }
    /// Items of `n` bytes: the bytes as one more, fastest axis in C order, taken
    /// whole; moved first, it is the fastest axis of the column-major output too.
    fn bytes(
        src: &[u8],
        shape: &[usize],
        n: usize,
        sel: Option<&[crate::Stride]>,
        dst: &mut [u8],
        progress: Progress,
    ) -> std::result::Result<(), String> {
        let mut ext = shape.to_vec();
        ext.push(n);
        let v = ArrayViewD::from_shape(IxDyn(&ext), src).map_err(|e| e.to_string())?;
        let v = picked(v, sel, dst.len(), "bytes")?;
        let mut axes: Vec<usize> = (0..ext.len()).collect();
        axes.rotate_right(1);
        by_slabs(&v.permuted_axes(axes), dst, 1, progress, None);
        Ok(())
    }
    let done = match itemsize {
        1 => typed::<1>(src, shape, sel, dst, progress),
        2 => typed::<2>(src, shape, sel, dst, progress),
        4 => typed::<4>(src, shape, sel, dst, progress),
        8 => typed::<8>(src, shape, sel, dst, progress),
        16 => typed::<16>(src, shape, sel, dst, progress),
        n => bytes(src, shape, n, sel, dst, progress),
    };
    done.map_err(|e| -> Error {
        let what = match sel {
            Some(sel) => format!("{sel:?} of shape {shape:?}"),
            None => format!("shape {shape:?} of {itemsize}-byte items"),
        };
        ErrorKind::InvalidArgument(format!("{what}: {e}")).into()
    })
}

/// `v` cut to what `sel` picks (all of it without one), checked to hold `len` of the
/// `what` a destination has room for.
fn picked<'a, E>(
    mut v: ArrayViewD<'a, E>,
    sel: Option<&[crate::Stride]>,
    len: usize,
    what: &str,
) -> std::result::Result<ArrayViewD<'a, E>, String> {
    if let Some(sel) = sel {
        pick(&mut v, sel)?;
    }
    if v.len() != len {
        return Err(format!("{} {what} into {len}", v.len()));
    }
    Ok(v)
}

/// `v` cut to what `sel` picks along its first axes (a [`Stride`](crate::Stride)
/// each), or why it cannot be.
fn pick<E>(v: &mut ArrayViewD<'_, E>, sel: &[crate::Stride]) -> std::result::Result<(), String> {
    for (k, t) in sel.iter().enumerate() {
        let len = v.len_of(Axis(k));
        let step = usize::try_from(t.step.max(1)).map_err(|e| e.to_string())?;
        let (start, count) = (t.start as usize, t.count as usize);
        let end = count
            .checked_sub(1)
            .and_then(|c| c.checked_mul(step))
            .and_then(|x| x.checked_add(start + 1))
            .filter(|&end| end <= len && start < len)
            .ok_or_else(|| format!("axis {k} of {len} has no {t:?}"))?;
        v.slice_axis_inplace(
            Axis(k),
            Slice::new(start as isize, Some(end as isize), step as isize),
        );
    }
    Ok(())
}

fn by_slabs<E: Copy>(
    v: &ArrayViewD<'_, E>,
    dst: &mut [E],
    size: usize,
    progress: Progress,
    squares: Option<Move<E>>,
) {
    let total = (dst.len() * size) as u64;
    if v.ndim() == 0 || v.is_empty() {
        to_fortran(v, dst, squares);
        return progress(total, total);
    }
    let last = Axis(v.ndim() - 1);
    let dl = v.len_of(last);
    let per = v.len() / dl;
    let step = (PIECE / (per * size).max(1)).max(1);
    for k0 in (0..dl).step_by(step) {
        let k1 = (k0 + step).min(dl);
        let part = v.slice_axis(last, Slice::from(k0..k1));
        to_fortran(&part, &mut dst[k0 * per..k1 * per], squares);
        progress((k1 * per * size) as u64, total);
    }
}

thread_local! {
    /// Each thread's scratch buffer ([`with_scratch`]), and whether it keeps it.
    static SCRATCH: std::cell::Cell<(Vec<u8>, bool)> =
        const { std::cell::Cell::new((Vec::new(), false)) };
}

/// The largest scratch buffer a thread keeps between calls (a C-order piece of the
/// engine is at most 128 MiB).
const MAX_SCRATCH: usize = 128 << 20;

/// `f` over a scratch buffer of `len` bytes (contents unspecified). On a thread that
/// [keeps](keep_scratch) its buffer (a conversion's worker, reading box after box),
/// the buffer is the one of its last call, not a fresh allocation and its page faults
/// per box; elsewhere (a caller's thread, Python's) it is freed on return.
pub fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [u8]) -> R) -> R {
    let (mut buf, keep) = SCRATCH.take();
    if buf.len() < len {
        buf.resize(len, 0);
    }
    let r = f(&mut buf[..len]);
    if keep && buf.capacity() <= MAX_SCRATCH {
        SCRATCH.set((buf, true));
    } else {
        SCRATCH.set((Vec::new(), keep));
    }
    r
}

/// Makes this thread keep its scratch buffer from one [`with_scratch`] to the next,
/// starting from `buf` (a buffer kept from an earlier array's conversion, or a new
/// one), until the guard returned is [released](KeptScratch::release) or dropped,
/// which frees it: for a conversion's workers.
#[must_use = "the buffer is kept only while the guard lives"]
pub fn keep_scratch(buf: Vec<u8>) -> KeptScratch {
    SCRATCH.set((buf, true));
    KeptScratch(())
}

/// While it lives, its thread keeps its scratch buffer ([`keep_scratch`]).
pub struct KeptScratch(());

impl KeptScratch {
    /// Stops keeping the buffer, and hands it back (to be kept for the next array).
    pub fn release(self) -> Vec<u8> {
        let (buf, _) = SCRATCH.take();
        buf
    }
}

impl Drop for KeptScratch {
    fn drop(&mut self) {
        SCRATCH.set((Vec::new(), false));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    fn naive<T: Copy>(a: &ArrayViewD<'_, T>) -> Vec<T> {
        a.t().iter().copied().collect()
    }

    #[test]
    fn matches_naive_for_c_order_and_strided() {
        for shape in [
            vec![70usize, 90],
            vec![300, 270],
            vec![17, 2, 520],
            vec![9, 3, 70],
            vec![65, 2, 3, 67],
            vec![3, 100],
            vec![100, 3],
            vec![0, 5],
            vec![],
            vec![7],
        ] {
            let n: usize = shape.iter().product();
            let a = ArrayD::from_shape_vec(IxDyn(&shape), (0..n as u32).collect()).unwrap();
            let mut out = vec![0u32; n];
            copy_to_fortran(&a.view(), &mut out);
            assert_eq!(out, naive(&a.view()), "shape {shape:?}");
            if !shape.is_empty() && shape[0] > 2 {
                let s = a.slice_axis(Axis(0), Slice::new(0, None, 2));
                let mut out = vec![0u32; s.len()];
                copy_to_fortran(&s, &mut out);
                assert_eq!(out, naive(&s), "strided {shape:?}");
            }
            if shape.len() >= 2 && shape[shape.len() - 1] > 2 {
                // Rows not contiguous: the fallback through ndarray's assign.
                let s = a.slice_axis(Axis(shape.len() - 1), Slice::new(0, None, 2));
                let mut out = vec![0u32; s.len()];
                copy_to_fortran(&s, &mut out);
                assert_eq!(out, naive(&s), "strided last axis {shape:?}");
            }
        }
    }

    #[test]
    fn selections_of_c_order_bytes_come_out_column_major() {
        use crate::Stride;
        // Element (i0, i1, i2) of shape (11, 6, 9) in C order, as `w` bytes each:
        // the bytes of its flat index, so that every element and byte is told apart.
        let shape = [11usize, 6, 9];
        let n: usize = shape.iter().product();
        for w in [1usize, 2, 3, 4, 8, 12, 16] {
            let item = |i: usize| -> Vec<u8> { (0..w).map(|b| (i * 31 + b * 7) as u8).collect() };
            let src: Vec<u8> = (0..n).flat_map(item).collect();
            for sel in [
                [
                    Stride::new(0, 1, 11),
                    Stride::new(0, 1, 6),
                    Stride::new(0, 1, 9),
                ],
                [
                    Stride::new(3, 1, 8),
                    Stride::new(1, 1, 4),
                    Stride::new(0, 1, 9),
                ],
                [
                    Stride::new(0, 1, 11),
                    Stride::new(2, 1, 1),
                    Stride::new(4, 2, 3),
                ],
                [
                    Stride::new(10, 1, 1),
                    Stride::new(0, 5, 2),
                    Stride::new(8, 1, 1),
                ],
            ] {
                // Column-major: the first axis fastest.
                let mut want = Vec::new();
                for k in 0..sel[2].count as usize {
                    for j in 0..sel[1].count as usize {
                        for i in 0..sel[0].count as usize {
                            let at = |t: &Stride, x: usize| t.start as usize + x * t.step as usize;
                            let flat = (at(&sel[0], i) * shape[1] + at(&sel[1], j)) * shape[2]
                                + at(&sel[2], k);
                            want.extend(item(flat));
                        }
                    }
                }
                let mut got = vec![0u8; want.len()];
                select_c_to_f(&src, &shape, w, &sel, &mut got).unwrap();
                assert_eq!(got, want, "{w}-byte items, {sel:?}");
            }
            // Past the end, and into a buffer of the wrong length: refused.
            let past = [
                Stride::new(0, 1, 11),
                Stride::new(5, 1, 2),
                Stride::new(0, 1, 9),
            ];
            let e = select_c_to_f(&src, &shape, w, &past, &mut vec![0u8; 2 * 11 * 9 * w]);
            assert!(e.unwrap_err().to_string().contains("axis 1 of 6"), "{w}");
            let all = [
                Stride::new(0, 1, 11),
                Stride::new(0, 1, 6),
                Stride::new(0, 1, 9),
            ];
            assert!(select_c_to_f(&src, &shape, w, &all, &mut vec![0u8; w]).is_err());
        }
    }

    #[test]
    fn planes_of_whole_squares_and_edges_come_out_column_major() {
        use crate::Stride;
        // Planes of 300x530: past one 256x256 tile each way, so that panels start
        // inside the plane, with whole squares and an edge in each tile; and a
        // selection whose squares and tiles start off the array's own grid.
        let shape = [300usize, 2, 530];
        let n: usize = shape.iter().product();
        for w in [1usize, 2, 4, 8] {
            let item = |i: usize| -> Vec<u8> { (0..w).map(|b| (i * 37 + b * 11) as u8).collect() };
            let src: Vec<u8> = (0..n).flat_map(item).collect();
            let sel = [
                Stride::new(5, 1, 290),
                Stride::new(1, 1, 1),
                Stride::new(3, 1, 520),
            ];
            for (sel, what) in [(None, "whole"), (Some(&sel), "selection")] {
                let all = |k: usize| Stride::new(0, 1, shape[k] as u64);
                let s: [Stride; 3] = sel.cloned().unwrap_or([all(0), all(1), all(2)]);
                let mut want = Vec::new();
                for k in 0..s[2].count as usize {
                    for j in 0..s[1].count as usize {
                        for i in 0..s[0].count as usize {
                            let at = |t: &Stride, x: usize| t.start as usize + x;
                            let flat =
                                (at(&s[0], i) * shape[1] + at(&s[1], j)) * shape[2] + at(&s[2], k);
                            want.extend(item(flat));
                        }
                    }
                }
                let mut got = vec![0u8; want.len()];
                match sel {
                    Some(sel) => select_c_to_f(&src, &shape, w, sel, &mut got).unwrap(),
                    None => transpose_c_to_f(&src, &shape, w, &mut got, &mut |_, _| ()).unwrap(),
                }
                assert!(got == want, "{w}-byte items, {what}");
            }
        }
    }

    #[test]
    fn chunks_concatenate_to_the_whole() {
        let a = ArrayD::from_shape_vec(IxDyn(&[13, 7, 11]), (0..1001u32).collect()).unwrap();
        for budget in [1, 5, 13, 50, 91, 200, 5000] {
            let mut got = Vec::new();
            let mut buf = Vec::new();
            for_each_fortran_chunk::<u32, ()>(a.view(), budget, &mut buf, &mut |c| {
                assert!(c.len() <= budget.max(1));
                got.extend_from_slice(c);
                Ok(())
            })
            .unwrap();
            assert_eq!(got, naive(&a.view()), "budget {budget}");
        }
    }
}

#[cfg(test)]
mod frame_tests {
    use super::frame_chunks;

    #[test]
    fn frame_chunks_are_whole_frames_or_contiguous_cuts() {
        assert_eq!(
            frame_chunks(&[1024, 1024, 256], 4, 16 << 20),
            [1024, 1024, 4]
        );
        assert_eq!(frame_chunks(&[10, 10], 4, 16 << 20), [10, 10]);
        assert_eq!(
            frame_chunks(&[1 << 20, 64, 2], 4, 16 << 20),
            [1 << 20, 4, 1]
        );
        assert_eq!(frame_chunks(&[1 << 23, 2], 4, 16 << 20), [1 << 22, 1]);
        assert_eq!(frame_chunks(&[], 4, 16 << 20), Vec::<u64>::new());
        assert_eq!(frame_chunks(&[0, 5], 4, 16), [1, 5]);
    }
}
