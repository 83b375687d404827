//! Selections of column-major data: a [`Stride`] per axis, and the contiguous byte
//! runs that hold what they pick, grouped into reads.
//!
//! A selection picks, on each axis, `count` indices `step` apart. In column-major data
//! the leading axes taken whole, and a unit-step range on the next, are one contiguous
//! run; every other axis repeats that run. Runs close together are read as one (the
//! bytes between dropped), and long ones are cut, so that each read is of a useful
//! size; each read's runs go to one contiguous part of the output.

use std::ops::Range;

use crate::error::{Error, ErrorKind, Result};
use crate::header::Header;

/// One axis of a selection: `count` indices from `start`, `step` (≥ 1) apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stride {
    /// The first index.
    pub start: u64,
    /// The distance between indices, at least 1.
    pub step: u64,
    /// How many indices.
    pub count: u64,
}

impl Stride {
    /// `count` indices from `start`, `step` apart.
    pub fn new(start: u64, step: u64, count: u64) -> Stride {
        Stride { start, step, count }
    }

    /// The whole of an axis of `n`.
    pub fn all(n: u64) -> Stride {
        Stride::new(0, 1, n)
    }
}

/// A contiguous run of the selection: `len` bytes at `from` in the source, which go
/// to `to` in the output.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Run {
    pub(crate) from: u64,
    pub(crate) to: usize,
    pub(crate) len: usize,
}

/// One read (a GET of an object): the source's bytes `range`, and the runs in it.
#[derive(Debug)]
pub(crate) struct Fetch {
    pub(crate) range: Range<u64>,
    pub(crate) runs: Vec<Run>,
}

/// The runs of `sel` over data of `dims` and `elbyte` at `base`, in the output's
/// (column-major) order, which is also the source's; `sel` is checked already.
pub(crate) fn runs(
    dims: &[u64],
    elbyte: u64,
    sel: &[Stride],
    base: u64,
) -> impl Iterator<Item = Run> {
    let mut stride = Vec::with_capacity(dims.len());
    let mut s = elbyte;
    for &d in dims {
        stride.push(s);
        s = s.saturating_mul(d);
    }
    let whole = sel
        .iter()
        .zip(dims)
        .take_while(|(x, &d)| **x == Stride::all(d))
        .count();
    let mut len = stride.get(whole).copied().unwrap_or(s);
    let mut first = whole;
    if let Some(x) = sel.get(whole).filter(|x| x.step == 1) {
        len *= x.count;
        first += 1;
    }
    let from: u64 = base
        + sel
            .iter()
            .zip(&stride)
            .map(|(x, s)| x.start * s)
            .sum::<u64>();
    let outer: Vec<(u64, u64)> = sel[first..]
        .iter()
        .zip(&stride[first..])
        .map(|(x, s)| (x.count, x.step * s))
        .collect();
    let total: u64 = outer.iter().map(|(c, _)| c).product();
    let mut index = vec![0u64; outer.len()];
    let mut at = from;
    (0..total).map(move |i| {
        let run = Run {
            from: at,
            to: (i * len) as usize,
            len: len as usize,
        };
        // The odometer: the first outer axis turns fastest.
        for (k, (count, step)) in outer.iter().enumerate() {
            index[k] += 1;
            at += step;
            if index[k] < *count {
                break;
            }
            at -= step * count;
            index[k] = 0;
        }
        run
    })
}

/// The runs grouped into reads: merged across gaps of at most `gap` bytes, each read
/// at most `most` bytes (a longer run is cut into several).
pub(crate) fn fetches(
    runs: impl Iterator<Item = Run>,
    gap: u64,
    most: u64,
) -> impl Iterator<Item = Fetch> {
    let mut runs = runs.flat_map(move |r| {
        let pieces = (r.len as u64).div_ceil(most).max(1);
        (0..pieces).map(move |p| {
            let off = p * most;
            Run {
                from: r.from + off,
                to: r.to + off as usize,
                len: (r.len as u64 - off).min(most) as usize,
            }
        })
    });
    let mut next = runs.next();
    std::iter::from_fn(move || {
        let r = next.take()?;
        let mut f = Fetch {
            range: r.from..r.from + r.len as u64,
            runs: vec![r],
        };
        for r in runs.by_ref() {
            let end = r.from + r.len as u64;
            if r.from <= f.range.end + gap && end - f.range.start <= most {
                f.range.end = end;
                f.runs.push(r);
            } else {
                next = Some(r);
                break;
            }
        }
        Some(f)
    })
}

/// Copies the runs of `f` from `bytes` (the source's `f.range`) into `out`, which
/// starts where the first run goes in the output.
pub(crate) fn scatter(f: &Fetch, bytes: &[u8], out: &mut [u8]) {
    let base = f.runs.first().map_or(0, |r| r.to);
    for r in &f.runs {
        let (at, to) = ((r.from - f.range.start) as usize, r.to - base);
        out[to..to + r.len].copy_from_slice(&bytes[at..at + r.len]);
    }
}

impl Fetch {
    /// The bytes of the output its runs fill.
    pub(crate) fn out_len(&self) -> usize {
        self.runs.iter().map(|r| r.len).sum()
    }
}

/// Refuses a buffer of another length than the `want` bytes to be read into it.
pub(crate) fn fit(out: &[u8], want: u64) -> Result<()> {
    if out.len() as u64 != want {
        return Err(Error::from(ErrorKind::InvalidArgument(format!(
            "{} bytes of buffer for {want} bytes to read",
            out.len()
        ))));
    }
    Ok(())
}

/// Checks `sel` against `header`, and gives the output's length in bytes.
pub(crate) fn check(header: &Header, sel: &[Stride]) -> Result<u64> {
    let dims = header.dims();
    if sel.len() != dims.len() {
        return Err(ErrorKind::InvalidArgument(format!(
            "a selection of {} axes for an array of {}",
            sel.len(),
            dims.len()
        ))
        .into());
    }
    let mut n = header.dtype().elbyte;
    for (axis, (x, &d)) in sel.iter().zip(dims).enumerate() {
        let last = x
            .count
            .checked_sub(1)
            .map(|c| c.checked_mul(x.step).and_then(|o| o.checked_add(x.start)));
        if x.step == 0 || matches!(last, Some(None)) || last.flatten().is_some_and(|l| l >= d) {
            return Err(ErrorKind::InvalidArgument(format!(
                "axis {axis}: {} indices from {} by {} are not all within its {d}",
                x.count, x.start, x.step
            ))
            .into());
        }
        n *= x.count;
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all_runs(dims: &[u64], sel: &[Stride]) -> Vec<(u64, usize, usize)> {
        runs(dims, 4, sel, 0)
            .map(|r| (r.from, r.to, r.len))
            .collect()
    }

    #[test]
    fn whole_leading_axes_and_a_range_are_one_run() {
        let sel = [Stride::all(3), Stride::new(1, 1, 2), Stride::new(2, 1, 1)];
        assert_eq!(all_runs(&[3, 4, 5], &sel), vec![(4 * (3 + 24), 0, 24)]);
    }

    #[test]
    fn a_step_repeats_the_run() {
        let sel = [
            Stride::new(1, 1, 2),
            Stride::new(0, 2, 2),
            Stride::new(4, 1, 1),
        ];
        let base = 4 * (1 + 4 * 3 * 4);
        assert_eq!(
            all_runs(&[3, 4, 5], &sel),
            vec![(base, 0, 8), (base + 24, 8, 8)]
        );
    }

    #[test]
    fn the_odometer_turns_the_first_outer_axis_fastest() {
        let sel = [
            Stride::new(0, 2, 2),
            Stride::new(1, 1, 1),
            Stride::new(1, 2, 2),
        ];
        // strides 4, 12, 48 bytes
        let got: Vec<u64> = all_runs(&[3, 4, 5], &sel).iter().map(|r| r.0).collect();
        assert_eq!(got, vec![12 + 48, 12 + 48 + 8, 12 + 144, 12 + 144 + 8]);
    }

    #[test]
    fn fetches_merge_small_gaps_and_cut_long_runs() {
        let r = |from, to, len| Run { from, to, len };
        let got: Vec<Range<u64>> = fetches(
            [r(0, 0, 10), r(15, 10, 10), r(100, 20, 10)].into_iter(),
            5,
            1000,
        )
        .map(|f| f.range)
        .collect();
        assert_eq!(got, vec![0..25, 100..110]);
        let got: Vec<(Range<u64>, usize)> = fetches([r(0, 0, 25)].into_iter(), 5, 10)
            .map(|f| (f.range, f.runs[0].to))
            .collect();
        assert_eq!(got, vec![(0..10, 0), (10..20, 10), (20..25, 20)]);
    }
}
