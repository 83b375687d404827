//! The squares a plane's transpose is made of: `UNIT`x`UNIT` elements moved at once.
//!
//! Any item is moved as `MICRO`x`MICRO` blocks of plain copies. Items of 2 and 4
//! bytes (uint16 stacks, f16/bf16 and f32 tensors) are moved with SSE2's unpacks on
//! x86-64, where SSE2 is part of every CPU (through `safe_arch`, whose wrappers are
//! safe where the feature is compiled in), into a square on the stack whose columns are
//! then copied out whole: a destination column's cache line is written at once, not in
//! four pieces that evict one another when columns lie a power of two apart. The
//! rows ahead are asked of the cache: a plane's rows lie a page or more apart, too many
//! streams for the hardware's prefetcher. `ra convert` of a 2 GiB uint16 stack: user
//! time 1.74 s → 1.38 s (docs/PERFORMANCE.md). Elsewhere (aarch64) every item takes
//! the plain copies.

/// Edge of a unit.
pub(super) const UNIT: usize = 32;

/// Edge of the plain copies' blocks: small enough for registers, and the fixed size
/// lets the compiler drop the bounds checks and unroll the copy.
pub(super) const MICRO: usize = 8;

/// Bytes of the square a move may stage a unit in (items of up to 4 bytes).
pub(super) const SQUARE: usize = UNIT * UNIT * 4;

/// Moves a unit: `cols[j][rb + i] = rows[i][cb + j]` for `i, j < UNIT`, where `rows`
/// holds `UNIT` source rows and `cols` `UNIT` destination columns, through `square`
/// ([`SQUARE`] bytes, contents unspecified) where it stages.
pub(super) type Move<T> = fn(&[&[T]], &mut [&mut [T]], usize, usize, &mut [u8]);

/// A unit as `MICRO`x`MICRO` blocks of plain copies: any item.
pub(super) fn plain<T: Copy>(
    rows: &[&[T]],
    cols: &mut [&mut [T]],
    rb: usize,
    cb: usize,
    _: &mut [u8],
) {
    for bi in (0..UNIT).step_by(MICRO) {
        for bj in (0..UNIT).step_by(MICRO) {
            block(
                &rows[bi..bi + MICRO],
                &mut cols[bj..bj + MICRO],
                rb + bi,
                cb + bj,
            );
        }
    }
}

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

/// How a unit of `N`-byte items is moved on this machine.
pub(super) fn of<const N: usize>() -> Move<[u8; N]> {
    simd::of::<N>().unwrap_or(plain::<[u8; N]>)
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use safe_arch::{
        load_unaligned_m128i, m128i, prefetch_t0, store_unaligned_m128i, unpack_high_i16_m128i,
        unpack_high_i32_m128i, unpack_high_i64_m128i, unpack_low_i16_m128i, unpack_low_i32_m128i,
        unpack_low_i64_m128i,
    };

    use super::{Move, UNIT};

    /// Units ahead along the rows that a move asks the cache for: the rows of a plane
    /// lie far apart (a page each, for a stack of frames), too many streams for the
    /// hardware's prefetcher to follow.
    const AHEAD: usize = 2;

    /// The SSE2 move of `N`-byte items, where there is one.
    pub(super) fn of<const N: usize>() -> Option<Move<[u8; N]>> {
        let any: &dyn std::any::Any = match N {
            2 => &(staged::<2> as Move<[u8; 2]>),
            4 => &(staged::<4> as Move<[u8; 4]>),
            _ => return None,
        };
        any.downcast_ref::<Move<[u8; N]>>().copied()
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
    fn t8x16(a: [m128i; 8]) -> [m128i; 8] {
        let lo = |x, y| unpack_low_i16_m128i(x, y);
        let hi = |x, y| unpack_high_i16_m128i(x, y);
        let t = [
            lo(a[0], a[1]),
            hi(a[0], a[1]),
            lo(a[2], a[3]),
            hi(a[2], a[3]),
            lo(a[4], a[5]),
            hi(a[4], a[5]),
            lo(a[6], a[7]),
            hi(a[6], a[7]),
        ];
        let u = [
            unpack_low_i32_m128i(t[0], t[2]),
            unpack_high_i32_m128i(t[0], t[2]),
            unpack_low_i32_m128i(t[1], t[3]),
            unpack_high_i32_m128i(t[1], t[3]),
            unpack_low_i32_m128i(t[4], t[6]),
            unpack_high_i32_m128i(t[4], t[6]),
            unpack_low_i32_m128i(t[5], t[7]),
            unpack_high_i32_m128i(t[5], t[7]),
        ];
        std::array::from_fn(|j| {
            let (x, y) = (u[j / 2], u[j / 2 + 4]);
            if j % 2 == 0 {
                unpack_low_i64_m128i(x, y)
            } else {
                unpack_high_i64_m128i(x, y)
            }
        })
    }

    /// The 4x4 transpose of 4-byte lanes: `a[i]` holds row `i`, the result column `j`.
    fn t4x32(a: [m128i; 4]) -> [m128i; 4] {
        let t0 = unpack_low_i32_m128i(a[0], a[1]);
        let t1 = unpack_high_i32_m128i(a[0], a[1]);
        let t2 = unpack_low_i32_m128i(a[2], a[3]);
        let t3 = unpack_high_i32_m128i(a[2], a[3]);
        [
            unpack_low_i64_m128i(t0, t2),
            unpack_high_i64_m128i(t0, t2),
            unpack_low_i64_m128i(t1, t3),
            unpack_high_i64_m128i(t1, t3),
        ]
    }

    /// One unit of `N`-byte items (2 or 4) through a square on the stack: 16-byte
    /// rows of the source in, whole columns of the square out.
    fn staged<const N: usize>(
        rows: &[&[[u8; N]]],
        cols: &mut [&mut [[u8; N]]],
        rb: usize,
        cb: usize,
        square: &mut [u8],
    ) {
        // Lanes per register, and the square's column in bytes.
        let lanes = 16 / N;
        let col_bytes = UNIT * N;
        let square = &mut square[..UNIT * col_bytes];
        let src: [&[u8]; UNIT] = std::array::from_fn(|i| {
            if let Some(ahead) = rows[i].get(cb + AHEAD * UNIT) {
                prefetch_t0(ahead);
            }
            bytemuck::cast_slice::<[u8; N], u8>(&rows[i][cb..cb + UNIT])
        });
        // Registers of `lanes` rows by `lanes` columns, transposed in place.
        for i0 in (0..UNIT).step_by(lanes) {
            for j0 in (0..UNIT).step_by(lanes) {
                let at = j0 * N;
                if N == 2 {
                    let a = std::array::from_fn(|i| load(src[i0 + i], at));
                    for (j, x) in t8x16(a).into_iter().enumerate() {
                        store(square, (j0 + j) * col_bytes + i0 * N, x);
                    }
                } else {
                    let a = std::array::from_fn(|i| load(src[i0 + i], at));
                    for (j, x) in t4x32(a).into_iter().enumerate() {
                        store(square, (j0 + j) * col_bytes + i0 * N, x);
                    }
                }
            }
        }
        for (j, col) in cols.iter_mut().enumerate() {
            let out = bytemuck::cast_slice_mut::<[u8; N], u8>(&mut col[rb..rb + UNIT]);
            out.copy_from_slice(&square[j * col_bytes..(j + 1) * col_bytes]);
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod simd {
    use super::Move;

    /// No SIMD move here: every item takes the plain copies.
    pub(super) fn of<const N: usize>() -> Option<Move<[u8; N]>> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every move of `N`-byte items gives the plain copies' result, at offsets
    /// inside longer rows and columns.
    fn same_as_plain<const N: usize>() {
        let (nrows, ncols) = (UNIT + 5, UNIT + 9);
        let src: Vec<Vec<[u8; N]>> = (0..nrows)
            .map(|i| {
                (0..ncols)
                    .map(|j| std::array::from_fn(|b| (i * 131 + j * 7 + b * 61) as u8))
                    .collect()
            })
            .collect();
        let (rb, cb) = (3, 6);
        let rows: Vec<&[[u8; N]]> = src[rb..rb + UNIT].iter().map(|r| &r[..]).collect();
        let run = |m: Move<[u8; N]>| {
            let mut dst = vec![vec![[0u8; N]; nrows + 4]; UNIT];
            let mut cols: Vec<&mut [[u8; N]]> = dst.iter_mut().map(|c| &mut c[..]).collect();
            m(&rows, &mut cols, rb, cb, &mut [0; SQUARE]);
            dst
        };
        let got = run(of::<N>());
        for (j, col) in got.iter().enumerate() {
            for (i, x) in col.iter().enumerate() {
                let want = if (rb..rb + UNIT).contains(&i) {
                    src[i][cb + j]
                } else {
                    [0; N]
                };
                assert_eq!(*x, want, "{N}-byte items, column {j}, row {i}");
            }
        }
        assert_eq!(got, run(plain::<[u8; N]>));
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn two_and_four_byte_items_take_sse2_on_x86_64() {
        assert!(simd::of::<2>().is_some() && simd::of::<4>().is_some());
        assert!(simd::of::<1>().is_none() && simd::of::<8>().is_none());
    }

    #[test]
    fn every_item_size_moves_as_the_plain_copies_do() {
        same_as_plain::<1>();
        same_as_plain::<2>();
        same_as_plain::<4>();
        same_as_plain::<8>();
        same_as_plain::<16>();
    }
}
