//! Selections of column-major data: a [`Stride`] per axis, and the contiguous byte
//! runs that hold what they pick (which [`crate::gather`] groups into reads).
//!
//! A selection picks, on each axis, `count` indices `step` apart. In column-major data
//! the leading axes taken whole, and a unit-step range on the next, are one contiguous
//! run; every other axis repeats that run. A batch of selections puts them one after
//! another in its output.

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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) from: u64,
    pub(crate) to: usize,
    pub(crate) len: usize,
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
        len = len.saturating_mul(x.count);
        first += 1;
    }
    // A selection of no elements has no runs; the sums below then need not fit.
    let empty = sel.iter().any(|x| x.count == 0);
    let from: u64 = base.saturating_add(
        sel.iter()
            .zip(&stride)
            .map(|(x, s)| x.start.saturating_mul(*s))
            .fold(0u64, u64::saturating_add),
    );
    let outer: Vec<(u64, u64)> = sel[first..]
        .iter()
        .zip(&stride[first..])
        .map(|(x, s)| (x.count, x.step.saturating_mul(*s)))
        .collect();
    let counts: Vec<u64> = outer.iter().map(|(c, _)| *c).collect();
    let total = if empty {
        0
    } else {
        crate::header::checked_bytes(1, &counts).unwrap_or(0)
    };
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

/// Checks every selection of a batch against `header`, before anything is read, and
/// gives the output's length (the selections one after another) and their runs over
/// data at `base`, each to its place in that output.
pub(crate) fn batch<'a, S: AsRef<[Stride]>>(
    header: &'a Header,
    selections: &'a [S],
    base: u64,
) -> Result<(u64, impl Iterator<Item = Run> + 'a)> {
    let n = selections.len();
    let mut starts = Vec::with_capacity(n);
    let mut total = 0u64;
    for (i, sel) in selections.iter().enumerate() {
        let bytes = check(header, sel.as_ref()).map_err(|e| match e.kind() {
            ErrorKind::InvalidArgument(why) if n > 1 => Error::from(ErrorKind::InvalidArgument(
                format!("selection {i} of {n}: {why}"),
            )),
            _ => e,
        })?;
        starts.push(total);
        total = total.saturating_add(bytes);
    }
    let (dims, elbyte) = (header.dims(), header.dtype().elbyte);
    let all = selections.iter().zip(starts).flat_map(move |(sel, start)| {
        runs(dims, elbyte, sel.as_ref(), base).map(move |r| Run {
            to: r.to + start as usize,
            ..r
        })
    });
    Ok((total, all))
}

/// Checks `indices` of the last axis of `header`'s array, before anything is read, and
/// gives a frame's bytes: what taking frames needs.
pub(crate) fn frames(header: &Header, indices: &[u64]) -> Result<u64> {
    let dims = header.dims();
    let Some((&count, lead)) = dims.split_last() else {
        return Err(ErrorKind::InvalidArgument(
            "a 0-d array has no axis to take frames along".into(),
        )
        .into());
    };
    if let Some((k, i)) = indices.iter().enumerate().find(|(_, &i)| i >= count) {
        return Err(ErrorKind::InvalidArgument(format!(
            "index {i} (at {k} of {}) is out of bounds for axis {} with size {count}",
            indices.len(),
            dims.len() - 1
        ))
        .into());
    }
    lead.iter()
        .try_fold(header.dtype().elbyte, |a, &d| a.checked_mul(d))
        .filter(|f| f.checked_mul(indices.len() as u64).is_some())
        .ok_or_else(|| {
            ErrorKind::TooLarge {
                what: "frame bytes",
                value: header.nbytes().into(),
            }
            .into()
        })
}

/// The bytes of the elements `sel` picks, of `elbyte` bytes each (`u64::MAX` when
/// they could not be counted: no buffer is that long).
pub(crate) fn bytes_of(sel: &[Stride], elbyte: u64) -> u64 {
    let counts: Vec<u64> = sel.iter().map(|s| s.count).collect();
    crate::header::checked_bytes(elbyte, &counts).unwrap_or(u64::MAX)
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
    }
    Ok(bytes_of(sel, header.dtype().elbyte))
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
}
