//! `ra stats`: count, min, max, mean, std and the NaN and infinity counts of any
//! numeric array, in one parallel pass (complex numbers by magnitude). Min, max, mean
//! and std are over the finite values, as `a[np.isfinite(a)]` gives them; std is the
//! population one (NumPy's default `ddof=0`). The min and max of integers are exact
//! integers (an `f64` cannot hold every 64-bit one), and so is the sum behind their
//! mean (in 128 bits, divided once at the end); std is `f64`.

use half::{bf16, f16};
use rastore::{DType, Kind};
use rayon::prelude::*;

use crate::input::Input;
use crate::slice::{self, Sel};

/// Bytes one task folds.
const TASK: usize = 1 << 20;

/// The exact least and greatest of integer elements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Exact {
    /// Signed.
    Int(i128, i128),
    /// Unsigned (and Bools).
    UInt(u128, u128),
}

impl Exact {
    fn join(a: Option<Exact>, b: Option<Exact>) -> Option<Exact> {
        match (a, b) {
            (Some(Exact::Int(a0, a1)), Some(Exact::Int(b0, b1))) => {
                Some(Exact::Int(a0.min(b0), a1.max(b1)))
            }
            (Some(Exact::UInt(a0, a1)), Some(Exact::UInt(b0, b1))) => {
                Some(Exact::UInt(a0.min(b0), a1.max(b1)))
            }
            (a, b) => a.or(b),
        }
    }

    /// `(min, max)` as text.
    pub fn text(self) -> (String, String) {
        match self {
            Exact::Int(lo, hi) => (lo.to_string(), hi.to_string()),
            Exact::UInt(lo, hi) => (lo.to_string(), hi.to_string()),
        }
    }
}

/// The exact sum of integer elements: in 128 bits, which no sum of up to 2^64
/// elements of 64 bits or less overflows (128-bit elements may: then `None`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sum {
    /// Signed.
    Int(Option<i128>),
    /// Unsigned (and Bools).
    UInt(Option<u128>),
}

impl Sum {
    fn join(a: Option<Sum>, b: Option<Sum>) -> Option<Sum> {
        match (a, b) {
            (Some(Sum::Int(a)), Some(Sum::Int(b))) => {
                Some(Sum::Int(a.zip(b).and_then(|(a, b)| a.checked_add(b))))
            }
            (Some(Sum::UInt(a)), Some(Sum::UInt(b))) => {
                Some(Sum::UInt(a.zip(b).and_then(|(a, b)| a.checked_add(b))))
            }
            (a, b) => a.or(b),
        }
    }

    /// The mean of `count` elements of this sum: the quotient and the remainder's
    /// fraction, each exact before the one rounding to `f64`.
    fn mean(self, count: u64) -> Option<f64> {
        let n = u128::from(count);
        match self {
            Sum::Int(Some(s)) => {
                let n = n as i128;
                Some((s / n) as f64 + (s % n) as f64 / n as f64)
            }
            Sum::UInt(Some(s)) => Some((s / n) as f64 + (s % n) as f64 / n as f64),
            _ => None,
        }
    }
}

/// The running statistics (Welford's mean and squared deviations, merged as Chan et
/// al. merge them, so that the parallel result matches a sequential one).
#[derive(Debug, Clone, Copy)]
pub struct Stats {
    /// All elements.
    pub count: u64,
    finite: u64,
    min: f64,
    max: f64,
    mean: f64,
    m2: f64,
    /// NaN elements.
    pub nan: u64,
    /// Infinite elements.
    pub inf: u64,
    /// The exact min and max of integer elements.
    pub exact: Option<Exact>,
    /// The exact sum of integer elements.
    sum: Option<Sum>,
}

impl Stats {
    fn new() -> Stats {
        Stats {
            count: 0,
            finite: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            mean: 0.0,
            m2: 0.0,
            nan: 0,
            inf: 0,
            exact: None,
            sum: None,
        }
    }

    fn push(&mut self, x: f64) {
        self.count += 1;
        if x.is_nan() {
            self.nan += 1;
        } else if x.is_infinite() {
            self.inf += 1;
        } else {
            self.finite += 1;
            self.min = self.min.min(x);
            self.max = self.max.max(x);
            let delta = x - self.mean;
            self.mean += delta / self.finite as f64;
            self.m2 += delta * (x - self.mean);
        }
    }

    fn merge(a: Stats, b: Stats) -> Stats {
        let finite = a.finite + b.finite;
        let (mean, m2) = if finite == 0 {
            (0.0, 0.0)
        } else {
            let delta = b.mean - a.mean;
            let (na, nb, n) = (a.finite as f64, b.finite as f64, finite as f64);
            (
                a.mean + delta * nb / n,
                a.m2 + b.m2 + delta * delta * na * nb / n,
            )
        };
        Stats {
            count: a.count + b.count,
            finite,
            min: a.min.min(b.min),
            max: a.max.max(b.max),
            mean,
            m2,
            nan: a.nan + b.nan,
            inf: a.inf + b.inf,
            exact: Exact::join(a.exact, b.exact),
            sum: Sum::join(a.sum, b.sum),
        }
    }

    /// `(min, max, mean, std)` over the finite values, `None` when there are none.
    pub fn summary(&self) -> Option<(f64, f64, f64, f64)> {
        (self.finite > 0).then(|| {
            let std = (self.m2 / self.finite as f64).max(0.0).sqrt();
            let mean = self.sum.and_then(|s| s.mean(self.finite));
            (self.min, self.max, mean.unwrap_or(self.mean), std)
        })
    }
}

fn fold<const N: usize>(bytes: &[u8], conv: impl Fn([u8; N]) -> f64) -> Stats {
    let mut s = Stats::new();
    for c in bytes.chunks_exact(N) {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        s.push(conv(a));
    }
    s
}

/// [`fold`] of signed integers, keeping their exact min and max.
fn fold_int<const N: usize>(bytes: &[u8], conv: impl Fn([u8; N]) -> i128) -> Stats {
    let mut s = Stats::new();
    let (mut lo, mut hi, mut sum) = (i128::MAX, i128::MIN, Some(0i128));
    for c in bytes.chunks_exact(N) {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        let v = conv(a);
        (lo, hi) = (lo.min(v), hi.max(v));
        sum = sum.and_then(|s| s.checked_add(v));
        s.push(v as f64);
    }
    s.exact = (s.count > 0).then_some(Exact::Int(lo, hi));
    s.sum = Some(Sum::Int(sum));
    s
}

/// [`fold`] of unsigned integers (and Bools), keeping their exact min and max.
fn fold_uint<const N: usize>(bytes: &[u8], conv: impl Fn([u8; N]) -> u128) -> Stats {
    let mut s = Stats::new();
    let (mut lo, mut hi, mut sum) = (u128::MAX, u128::MIN, Some(0u128));
    for c in bytes.chunks_exact(N) {
        let mut a = [0u8; N];
        a.copy_from_slice(c);
        let v = conv(a);
        (lo, hi) = (lo.min(v), hi.max(v));
        sum = sum.and_then(|s| s.checked_add(v));
        s.push(v as f64);
    }
    s.exact = (s.count > 0).then_some(Exact::UInt(lo, hi));
    s.sum = Some(Sum::UInt(sum));
    s
}

/// The statistics of native-order elements of `dtype`; `None` for types that are
/// not numbers.
fn of_chunk(dtype: DType, b: &[u8]) -> Option<Stats> {
    let half = |a: [u8; 4]| {
        let re = f16::from_ne_bytes([a[0], a[1]]).to_f64();
        re.hypot(f16::from_ne_bytes([a[2], a[3]]).to_f64())
    };
    Some(match (dtype.kind(), dtype.elbyte) {
        (Kind::Int, 1) => fold_int(b, |a: [u8; 1]| i128::from(a[0] as i8)),
        (Kind::Int, 2) => fold_int(b, |a| i16::from_ne_bytes(a).into()),
        (Kind::Int, 4) => fold_int(b, |a| i32::from_ne_bytes(a).into()),
        (Kind::Int, 8) => fold_int(b, |a| i64::from_ne_bytes(a).into()),
        (Kind::Int, 16) => fold_int(b, i128::from_ne_bytes),
        (Kind::UInt, 1) | (Kind::Bool, 1) => fold_uint(b, |a: [u8; 1]| a[0].into()),
        (Kind::UInt, 2) => fold_uint(b, |a| u16::from_ne_bytes(a).into()),
        (Kind::UInt, 4) => fold_uint(b, |a| u32::from_ne_bytes(a).into()),
        (Kind::UInt, 8) => fold_uint(b, |a| u64::from_ne_bytes(a).into()),
        (Kind::UInt, 16) => fold_uint(b, u128::from_ne_bytes),
        (Kind::Float, 2) => fold(b, |a| f16::from_ne_bytes(a).to_f64()),
        (Kind::Float, 4) => fold(b, |a| f64::from(f32::from_ne_bytes(a))),
        (Kind::Float, 8) => fold(b, f64::from_ne_bytes),
        (Kind::BFloat16, 2) => fold(b, |a| bf16::from_ne_bytes(a).to_f64()),
        (Kind::Complex, 4) => fold(b, half),
        (Kind::Complex, 8) => fold(b, |a: [u8; 8]| {
            let (re, im) = a.split_at(4);
            let f = |x: &[u8]| f64::from(f32::from_ne_bytes([x[0], x[1], x[2], x[3]]));
            f(re).hypot(f(im))
        }),
        (Kind::Complex, 16) => fold(b, |a: [u8; 16]| {
            let (re, im) = a.split_at(8);
            let f = |x: &[u8]| {
                let mut w = [0u8; 8];
                w.copy_from_slice(x);
                f64::from_ne_bytes(w)
            };
            f(re).hypot(f(im))
        }),
        _ => return None,
    })
}

/// The statistics of the whole array, read in slabs ([`Input::scan`]) and each slab
/// folded on the thread pool while the next is read; `done` hears the bytes finished
/// after each slab.
pub fn whole(input: &Input, done: &mut dyn FnMut(u64)) -> rastore::Result<Option<Stats>> {
    let w = input.dtype.elbyte as usize;
    if of_chunk(input.dtype, &[]).is_none() {
        return Ok(None);
    }
    let task = (TASK / w * w).max(w);
    let mut total = Stats::new();
    input.scan(|offset, slab| {
        let s = slab
            .par_chunks(task)
            .map(|c| of_chunk(input.dtype, c).unwrap_or_else(Stats::new))
            .reduce(Stats::new, Stats::merge);
        total = Stats::merge(total, s);
        done(offset + slab.len() as u64);
        Ok(())
    })?;
    Ok(Some(total))
}

/// The statistics of the elements `sels` selects, in one walk.
pub fn selected(input: &Input, sels: &[Sel]) -> Option<Stats> {
    let mut total = of_chunk(input.dtype, &[])?;
    slice::walk(sels, &input.dims, u64::MAX, |ix, _| {
        if let Some(s) = of_chunk(input.dtype, input.element(ix)) {
            total = Stats::merge(total, s);
        }
    });
    Some(total)
}
