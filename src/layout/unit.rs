//! The squares a plane's transpose of 2-byte items is made of, and the blocks of any.
//!
//! Any item is moved as `MICRO`x`MICRO` blocks of plain copies. Items of 2 bytes
//! (uint16 stacks, f16 and bf16 tensors) are moved on x86-64 as squares of
//! `UNIT`x`UNIT` with SSE2's unpacks (in every x86-64 CPU; through `safe_arch`, whose
//! wrappers are safe where the feature is compiled in), staged on the stack and copied
//! out a column at a time: each destination column's cache line is written at once,
//! not in four pieces that evict one another when columns lie a power of two apart.
//! A square reads rows and writes columns that the parent module's `Staging` holds in
//! the cache (it asks the cache for the rows ahead). `ra convert` of a 2 GiB uint16
//! stack: user time 0.66x, wall 0.81x (docs/PERFORMANCE.md), and less again with the
//! staging (its figures are with it). Items of 4 bytes the same way were no faster than
//! the blocks on 4 GiB of f32 tensors, and squares of the blocks slower than their rows
//! of 8: both stay as they were. Elsewhere (aarch64) every item takes the blocks.

/// Edge of a square.
pub(super) const UNIT: usize = 32;

/// Edge of the plain copies' blocks: small enough for registers, and the fixed size
/// lets the compiler drop the bounds checks and unroll the copy.
pub(super) const MICRO: usize = 8;

/// Bytes of the stack's square of 2-byte items.
pub(super) const SQUARE: usize = UNIT * UNIT * 2;

/// Moves a square: `cols[j][rb + i] = rows[i][cb + j]` for `i, j < UNIT`, where
/// `rows` holds `UNIT` source rows and `cols` `UNIT` destination columns, staged in
/// `square` ([`SQUARE`] bytes, contents unspecified).
pub(super) type Move<T> = fn(&[&[T]], &mut [&mut [T]], usize, usize, &mut [u8]);

/// One full `MICRO`x`MICRO` block: rows `rb..` of `cols`, columns `cb..` of `rows`.
pub(super) fn block<T: Copy>(rows: &[&[T]], cols: &mut [&mut [T]], rb: usize, cb: usize) {
    let src: [&[T; MICRO]; MICRO] =
        std::array::from_fn(|i| match rows[i][cb..cb + MICRO].try_into() {
            Ok(a) => a,
            Err(_) => unreachable!("a slice of MICRO elements"),
        });
    for (j, col) in cols.iter_mut().enumerate() {
        let out: &mut [T; MICRO] = match (&mut col[rb..rb + MICRO]).try_into() {
            Ok(a) => a,
            Err(_) => unreachable!("a slice of MICRO elements"),
        };
        for (x, row) in out.iter_mut().zip(&src) {
            *x = row[j];
        }
    }
}

/// Asks the cache for the line holding `x` (where the CPU can be asked).
pub(super) fn ask<T>(x: &T) {
    simd::ask(x);
}

/// How squares of `N`-byte items are moved on this machine, where they are (blocks
/// otherwise).
pub(super) fn of<const N: usize>() -> Option<Move<[u8; N]>> {
    simd::of::<N>()
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use safe_arch::{
        load_unaligned_m128i, m128i, store_unaligned_m128i, unpack_high_i16_m128i,
        unpack_high_i32_m128i, unpack_high_i64_m128i, unpack_low_i16_m128i, unpack_low_i32_m128i,
        unpack_low_i64_m128i,
    };

    use super::{Move, UNIT};

    /// Asks for `x`'s line in every level of the cache.
    pub(super) fn ask<T>(x: &T) {
        safe_arch::prefetch_t0(x);
    }

    /// The SSE2 move of `N`-byte items: 2-byte ones only.
    pub(super) fn of<const N: usize>() -> Option<Move<[u8; N]>> {
        let two: &dyn std::any::Any = &(staged as Move<[u8; 2]>);
        two.downcast_ref::<Move<[u8; N]>>().copied()
    }

    /// 16 bytes at `at` of `b`.
    fn load(b: &[u8], at: usize) -> m128i {
        match b[at..at + 16].try_into() {
            Ok(a) => load_unaligned_m128i(a),
            Err(_) => unreachable!("16 bytes"),
        }
    }

    /// `x` into 16 bytes at `at` of `b`.
    fn store(b: &mut [u8], at: usize, x: m128i) {
        match (&mut b[at..at + 16]).try_into() {
            Ok(a) => store_unaligned_m128i(a, x),
            Err(_) => unreachable!("16 bytes"),
        }
    }

    /// The 8x8 transpose of 2-byte lanes: `a[i]` holds row `i`, the result column `j`.
    /// Three rounds of unpacks, of 2-, 4- and 8-byte lanes: round `k` pairs the
    /// registers `2^k` apart within each group of `2^(k+1)`, low halves to even slots.
    fn t8x16(a: [m128i; 8]) -> [m128i; 8] {
        let t = round(a, 1, unpack_low_i16_m128i, unpack_high_i16_m128i);
        let u = round(t, 2, unpack_low_i32_m128i, unpack_high_i32_m128i);
        round(u, 4, unpack_low_i64_m128i, unpack_high_i64_m128i)
    }

    /// One round of [`t8x16`]: slots `2i` and `2i + 1` of the result are the low and
    /// high unpacks of the `i`th pair of registers `d` apart (in order of the first).
    fn round(
        a: [m128i; 8],
        d: usize,
        lo: fn(m128i, m128i) -> m128i,
        hi: fn(m128i, m128i) -> m128i,
    ) -> [m128i; 8] {
        std::array::from_fn(|j| {
            let i = j / 2;
            let first = (i / d) * 2 * d + i % d;
            let (x, y) = (a[first], a[first + d]);
            if j % 2 == 0 {
                lo(x, y)
            } else {
                hi(x, y)
            }
        })
    }

    /// One square of 2-byte items through `square`: 16-byte pieces of 8 rows in,
    /// transposed in registers, whole columns of the square out.
    fn staged(
        rows: &[&[[u8; 2]]],
        cols: &mut [&mut [[u8; 2]]],
        rb: usize,
        cb: usize,
        square: &mut [u8],
    ) {
        let col_bytes = UNIT * 2;
        let src: [&[u8]; UNIT] =
            std::array::from_fn(|i| bytemuck::cast_slice::<[u8; 2], u8>(&rows[i][cb..cb + UNIT]));
        for i0 in (0..UNIT).step_by(8) {
            for j0 in (0..UNIT).step_by(8) {
                let a = std::array::from_fn(|i| load(src[i0 + i], j0 * 2));
                for (j, x) in t8x16(a).into_iter().enumerate() {
                    store(square, (j0 + j) * col_bytes + i0 * 2, x);
                }
            }
        }
        for (j, col) in cols.iter_mut().enumerate() {
            let out = bytemuck::cast_slice_mut::<[u8; 2], u8>(&mut col[rb..rb + UNIT]);
            out.copy_from_slice(&square[j * col_bytes..(j + 1) * col_bytes]);
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod simd {
    use super::Move;

    /// Nothing asked of the cache here.
    pub(super) fn ask<T>(_: &T) {}

    /// No SIMD move here: every item takes the blocks.
    pub(super) fn of<const N: usize>() -> Option<Move<[u8; N]>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_square_of_2_byte_items_lands_transposed_and_nothing_else_moves() {
        let Some(m) = of::<2>() else {
            // No SIMD move on this machine: the blocks, tested with the transposes.
            return;
        };
        let (nrows, ncols) = (UNIT + 5, UNIT + 9);
        let src: Vec<Vec<[u8; 2]>> = (0..nrows)
            .map(|i| {
                (0..ncols)
                    .map(|j| [(i * 131 + j * 7) as u8, (i * 3 + j * 61) as u8])
                    .collect()
            })
            .collect();
        let (rb, cb) = (3, 6);
        let rows: Vec<&[[u8; 2]]> = src[rb..rb + UNIT].iter().map(|r| &r[..]).collect();
        let mut dst = vec![vec![[0u8; 2]; nrows + 4]; UNIT];
        let mut cols: Vec<&mut [[u8; 2]]> = dst.iter_mut().map(|c| &mut c[..]).collect();
        m(&rows, &mut cols, rb, cb, &mut [0; SQUARE]);
        for (j, col) in dst.iter().enumerate() {
            for (i, x) in col.iter().enumerate() {
                let want = if (rb..rb + UNIT).contains(&i) {
                    src[i][cb + j]
                } else {
                    [0; 2]
                };
                assert_eq!(*x, want, "column {j}, row {i}");
            }
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn only_2_byte_items_take_sse2_on_x86_64() {
        assert!(of::<2>().is_some());
        assert!(of::<1>().is_none() && of::<4>().is_none() && of::<8>().is_none());
    }
}
