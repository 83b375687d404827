//! The padding bytes of structured elements, and writing them as zeros.
//!
//! A NumPy structured dtype may leave bytes between and after its fields (an aligned
//! struct, or explicit offsets); its descr lists them as unnamed void fields,
//! `('', '|V3')`. NumPy leaves those bytes uninitialized in arrays it allocates, so
//! writing them as they are would put whatever was in the process's memory into the
//! file. Every rastore writer of structured elements writes them as zeros.

use std::io::{self, Write};
use std::ops::Range;

use rayon::prelude::*;

use crate::descr::Descr;
use crate::dtype::{DType, Kind};
use crate::error::{ErrorKind, Result};

/// Most padding runs an element may have: more is refused rather than walked.
const MAX_RUNS: usize = 1 << 16;

/// Where the padding lies in each element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Padding {
    itemsize: u64,
    /// Byte ranges within one element, in order, not touching.
    runs: Vec<Range<u64>>,
}

impl Padding {
    /// The padding of elements of `descr`; `None` when it has none.
    pub fn of(descr: &Descr) -> Result<Option<Padding>> {
        let mut runs = Vec::new();
        collect(descr, 0, &mut runs)?;
        Ok((!runs.is_empty()).then(|| Padding {
            itemsize: descr.itemsize().unwrap_or(0),
            runs,
        }))
    }

    /// The padding of `dtype` elements whose layout the NDL trailer records (a
    /// `user<N>` type with a NumPy descr, as `ra convert` writes it); `None` when it
    /// has none or records none.
    pub fn of_trailer(trailer: &[u8], dtype: DType) -> Option<Padding> {
        if dtype.kind() != Kind::User || trailer.is_empty() {
            return None;
        }
        let descr = crate::ndl::numpy_descr(trailer, dtype.elbyte)?;
        Padding::of(&descr).ok().flatten()
    }

    /// Zeroes the padding in `buf`, which holds data bytes from `offset` (in bytes
    /// from the start of the first element) on; `buf` may start and end mid-element.
    pub fn zero(&self, buf: &mut [u8], offset: u64) {
        let isz = self.itemsize.max(1);
        let end = offset + buf.len() as u64;
        let mut item = offset / isz;
        while item * isz < end {
            let base = item * isz;
            for r in &self.runs {
                let (a, b) = ((base + r.start).max(offset), (base + r.end).min(end));
                if a < b {
                    buf[(a - offset) as usize..(b - offset) as usize].fill(0);
                }
            }
            item += 1;
        }
    }

    /// [`zero`](Self::zero) over a whole data segment, in parallel.
    pub fn zero_all(&self, data: &mut [u8]) {
        let isz = self.itemsize.max(1) as usize;
        let step = ((4 << 20) / isz).max(1) * isz;
        data.par_chunks_mut(step)
            .enumerate()
            .for_each(|(i, c)| self.zero(c, (i * step) as u64));
    }
}

/// The padding runs of `descr` at `base`, merged where they touch.
fn collect(descr: &Descr, base: u64, runs: &mut Vec<Range<u64>>) -> Result<()> {
    let Descr::Struct(fields) = descr else {
        return Ok(());
    };
    let mut at = base;
    for f in fields {
        let size = f.descr.itemsize()?;
        // Descr::itemsize checked that these products fit.
        let n = f.shape.iter().product::<u64>();
        let whole = n * size;
        if f.name.is_empty() && matches!(f.descr, Descr::Simple { kind: 'V', .. }) {
            push(runs, at..at + whole)?;
        } else if matches!(f.descr, Descr::Struct(_)) && size > 0 {
            let mut inner = Vec::new();
            collect(&f.descr, 0, &mut inner)?;
            if inner.len() == 1 && inner[0] == (0..size) {
                push(runs, at..at + whole)?;
            } else if !inner.is_empty() {
                // Each copy adds a run of its own (data lies between): MAX_RUNS bounds
                // this loop.
                for k in 0..n {
                    for r in &inner {
                        push(runs, at + k * size + r.start..at + k * size + r.end)?;
                    }
                }
            }
        }
        at += whole;
    }
    Ok(())
}

fn push(runs: &mut Vec<Range<u64>>, r: Range<u64>) -> Result<()> {
    if r.is_empty() {
        return Ok(());
    }
    if let Some(last) = runs.last_mut().filter(|l| l.end == r.start) {
        last.end = r.end;
    } else if runs.len() >= MAX_RUNS {
        return Err(ErrorKind::Unsupported(format!(
            "a structured type with more than {MAX_RUNS} runs of padding"
        ))
        .into());
    } else {
        runs.push(r);
    }
    Ok(())
}

/// A writer of data bytes that writes the padding of each element as zeros.
pub(crate) struct ZeroPadding<'p, W> {
    inner: W,
    padding: &'p Padding,
    /// Data bytes written so far.
    at: u64,
    scratch: Vec<u8>,
}

impl<'p, W: Write> ZeroPadding<'p, W> {
    pub(crate) fn new(inner: W, padding: &'p Padding) -> Self {
        ZeroPadding {
            inner,
            padding,
            at: 0,
            scratch: Vec::new(),
        }
    }
}

impl<W: Write> Write for ZeroPadding<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(4 << 20);
        self.scratch.clear();
        self.scratch.extend_from_slice(&buf[..n]);
        self.padding.zero(&mut self.scratch, self.at);
        self.inner.write_all(&self.scratch)?;
        self.at += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_aligned_nested_and_subarray_structs() {
        // np.dtype([('a', 'u1'), ('b', '<i4')], align=True) and a nested array of it.
        let d = Descr::parse("[('a', '|u1'), ('', '|V3'), ('b', '<i4')]").unwrap();
        let p = Padding::of(&d).unwrap().unwrap();
        assert_eq!((p.itemsize, p.runs.len(), p.runs[0].clone()), (8, 1, 1..4));
        let n =
            Descr::parse("[('x', [('a', '|u1'), ('', '|V3'), ('b', '<i4')], (2,)), ('', '|V4')]")
                .unwrap();
        let p = Padding::of(&n).unwrap().unwrap();
        assert_eq!(
            (p.itemsize, p.runs.clone()),
            (20, vec![1..4, 9..12, 16..20])
        );
        assert_eq!(Padding::of(&Descr::parse("'<f4'").unwrap()).unwrap(), None);
        // Zeroing a buffer that starts and ends mid-element, as a stream does.
        let mut buf = vec![0xabu8; 30];
        p.zero(&mut buf, 15);
        let want: Vec<u8> = (15..45u64)
            .map(|i| {
                let k = i % 20;
                if [1..4, 9..12, 16..20].iter().any(|r| r.contains(&k)) {
                    0
                } else {
                    0xab
                }
            })
            .collect();
        assert_eq!(buf, want);
    }

    #[test]
    fn the_writer_zeroes_across_write_boundaries() {
        let d = Descr::parse("[('a', '|u1'), ('', '|V3')]").unwrap();
        let p = Padding::of(&d).unwrap().unwrap();
        let mut out = Vec::new();
        let mut w = ZeroPadding::new(&mut out, &p);
        w.write_all(&[9, 9]).unwrap();
        w.write_all(&[9, 9, 9, 9, 9]).unwrap();
        drop(w);
        assert_eq!(out, [9, 0, 0, 0, 9, 0, 0]);
    }
}
