//! Parallel fills of mutable views: disjoint pieces handed to rayon tasks.
//!
//! Disjointness comes from construction: the pieces are produced by ndarray's
//! `axis_chunks_iter_mut` and slice `par_chunks_mut`, which split one `&mut` borrow
//! into non-overlapping ones, never by index arithmetic on a shared pointer.

use std::ops::Range;

use ndarray::{ArrayViewMutD, Axis};
use rayon::prelude::*;

/// Bytes per piece handed to one task: large enough to amortise the task, small
/// enough to balance across threads.
const PIECE_BYTES: usize = 8 << 20;

/// Splits `view` along its last (slowest) axis into slabs and calls `f(range, slab)`
/// for each on the rayon pool. `range` is the slab's extent along the last axis,
/// counted from `first` (so a slab of a file slab gets global indices). A 0-d view is
/// one slab with range `first..first + 1`.
pub fn par_fill_slabs<T, F>(mut view: ArrayViewMutD<'_, T>, first: usize, f: F)
where
    T: Send,
    F: Fn(Range<usize>, ArrayViewMutD<'_, T>) + Sync,
{
    if view.ndim() == 0 {
        return f(first..first + 1, view);
    }
    let last = Axis(view.ndim() - 1);
    let extent = view.len_of(last);
    if extent == 0 {
        return;
    }
    let per_index = (view.len() / extent * std::mem::size_of::<T>()).max(1);
    let by_size = (PIECE_BYTES / per_index).max(1);
    let by_threads = extent.div_ceil(4 * rayon::current_num_threads()).max(1);
    let step = by_size.min(by_threads);
    let slabs: Vec<_> = view.axis_chunks_iter_mut(last, step).collect();
    slabs.into_par_iter().enumerate().for_each(|(i, slab)| {
        let start = first + i * step;
        let len = slab.len_of(last);
        f(start..start + len, slab);
    });
}

/// Calls `f(offset, chunk)` on disjoint chunks of `data` on the rayon pool, where
/// `offset` is the index (from `first`) of `chunk[0]`: for a column-major view's
/// memory, its column-major linear index.
pub fn par_fill_flat<T, F>(data: &mut [T], first: usize, f: F)
where
    T: Send,
    F: Fn(usize, &mut [T]) + Sync,
{
    let step = (PIECE_BYTES / std::mem::size_of::<T>().max(1)).max(1);
    data.par_chunks_mut(step)
        .enumerate()
        .for_each(|(i, chunk)| f(first + i * step, chunk));
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn, ShapeBuilder};

    #[test]
    fn slabs_cover_every_element_once_like_the_obvious_loop() {
        for shape in [vec![3usize, 4, 1000], vec![5], vec![2, 0, 3], vec![7, 1]] {
            let mut a = ArrayD::<u32>::zeros(IxDyn(&shape).f());
            par_fill_slabs(a.view_mut(), 10, |range, mut slab| {
                let last = Axis(slab.ndim() - 1);
                for (k, mut sub) in range.zip(slab.axis_iter_mut(last)) {
                    sub.iter_mut().for_each(|x| *x += k as u32);
                }
            });
            let naive =
                ArrayD::from_shape_fn(IxDyn(&shape).f(), |ix| 10 + ix[shape.len() - 1] as u32);
            assert_eq!(a, naive, "{shape:?}");
        }
        let mut z = ArrayD::<u8>::zeros(IxDyn(&[]));
        par_fill_slabs(z.view_mut(), 4, |r, mut s| s.fill(r.start as u8));
        assert_eq!(z[[]], 4);
    }

    #[test]
    fn flat_chunks_carry_their_offsets() {
        // Several pieces of PIECE_BYTES, and a ragged end (smaller under Miri: slow).
        let n = if cfg!(miri) { 3_001 } else { 3_000_001 };
        let mut v = vec![0u64; n];
        par_fill_flat(&mut v, 5, |off, c| {
            c.iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = (off + i) as u64)
        });
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 + 5));
    }
}
