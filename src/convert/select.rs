//! A selection of a source as a source of its own (`ra slice`): on each axis one index
//! (the axis dropped, as NumPy drops it) or a range with any nonzero step. A box of it
//! is read as the strided selection of the source that holds it, ascending, and turned
//! around where a step is negative.

use std::path::Path;

use super::{Block, Desc, Grain, Source};
use crate::error::{Error, ErrorKind, Result};
use crate::selection::Stride;

/// What a selection takes on one axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// One index: the axis is dropped.
    Index(u64),
    /// `count` indices `start, start + step, …` (a negative step walks down).
    Range {
        /// The first index taken.
        start: u64,
        /// The distance to the next, not zero.
        step: i64,
        /// How many indices.
        count: u64,
    },
}

/// A selection of another source.
struct Selected {
    source: Box<dyn Source>,
    picks: Vec<Pick>,
    desc: Desc,
}

/// The part of `source` that `picks` (one per axis, within its dims) select. A
/// structured type keeps its fields in the trailer; other labels and attributes,
/// which name the source's axes, are not carried over.
pub fn select(source: Box<dyn Source>, picks: &[Pick]) -> Result<Box<dyn Source>> {
    let from = source.desc();
    let bad = |why: String| Error::from(ErrorKind::InvalidArgument(why)).at(source.shown());
    if picks.len() != from.dims.len() {
        return Err(bad(format!(
            "{} picks for an array of {} dims {:?}",
            picks.len(),
            from.dims.len(),
            from.dims
        )));
    }
    for (axis, (p, &d)) in picks.iter().zip(&from.dims).enumerate() {
        let within = match *p {
            Pick::Index(i) => i < d,
            Pick::Range { count: 0, step, .. } => step != 0,
            Pick::Range { start, step, count } => {
                let last = i128::from(start) + i128::from(count - 1) * i128::from(step);
                step != 0 && start < d && (0..i128::from(d)).contains(&last)
            }
        };
        if !within {
            return Err(bad(format!("{p:?} on axis {axis} of {d} indices")));
        }
    }
    let dims: Vec<u64> = picks
        .iter()
        .filter_map(|p| match p {
            Pick::Range { count, .. } => Some(*count),
            Pick::Index(_) => None,
        })
        .collect();
    let desc = from.reshaped(dims)?;
    Ok(Box::new(Selected {
        source,
        picks: picks.to_vec(),
        desc,
    }))
}

impl Source for Selected {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        match self.source.grain() {
            // A chunk grid of the source is none of the selection's.
            Grain::Chunks(_) => Grain::ColumnMajor,
            g => g,
        }
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        let mut k = 0;
        let mut flips = Vec::new();
        let strides: Vec<Stride> = self
            .picks
            .iter()
            .map(|p| match *p {
                Pick::Index(i) => Stride::new(i, 1, 1),
                Pick::Range { start, step, .. } => {
                    let (o, n) = (block.origin[k], block.shape[k]);
                    k += 1;
                    let s = step.unsigned_abs();
                    if step > 0 {
                        Stride::new(start + o * s, s, n)
                    } else {
                        flips.push(k - 1);
                        Stride::new(start - (o + n.max(1) - 1) * s, s, n)
                    }
                }
            })
            .collect();
        self.source.read_selection(&strides, out)?;
        let w = self.desc.dtype.elbyte as usize;
        for axis in flips {
            flip(out, &block.shape, w, axis);
        }
        Ok(())
    }

    fn shown(&self) -> &Path {
        self.source.shown()
    }
}

/// Reverses axis `axis` of the column-major array `data` of extents `shape`.
fn flip(data: &mut [u8], shape: &[u64], elbyte: usize, axis: usize) {
    let inner = crate::header::checked_bytes(elbyte as u64, &shape[..axis]).unwrap_or(0) as usize;
    let n = shape[axis] as usize;
    if inner == 0 || n < 2 {
        return;
    }
    for block in data.chunks_mut(inner * n) {
        for i in 0..n / 2 {
            let (head, tail) = block.split_at_mut((n - 1 - i) * inner);
            head[i * inner..(i + 1) * inner].swap_with_slice(&mut tail[..inner]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::memory::MemorySource;
    use crate::DType;

    #[test]
    fn flip_reverses_one_axis() {
        // Shape [2, 3], one byte each: columns (0 1) (2 3) (4 5).
        let mut d: Vec<u8> = (0..6).collect();
        flip(&mut d, &[2, 3], 1, 1);
        assert_eq!(d, [4, 5, 2, 3, 0, 1]);
        flip(&mut d, &[2, 3], 1, 0);
        assert_eq!(d, [5, 4, 3, 2, 1, 0]);
    }

    /// Every box of a selection with steps of both signs and a dropped axis holds the
    /// elements the obvious loop picks.
    #[test]
    fn boxes_of_a_selection_are_what_the_loop_picks() {
        let dims = [7u64, 5, 6];
        let data: Vec<u8> = (0..7 * 5 * 6).map(|i| i as u8).collect();
        let at = |i: u64, j: u64, k: u64| data[(i + 7 * (j + 5 * k)) as usize];
        let source = MemorySource {
            desc: Desc {
                dtype: DType::U8,
                dims: dims.to_vec(),
                trailer: Vec::new(),
            },
            data: data.clone(),
            shown: "m".into(),
        };
        let picks = [
            Pick::Range {
                start: 6,
                step: -2,
                count: 4,
            },
            Pick::Index(3),
            Pick::Range {
                start: 1,
                step: 2,
                count: 3,
            },
        ];
        let sel = select(Box::new(source), &picks).unwrap();
        assert_eq!(sel.desc().dims, [4, 3]);
        for (o, n) in [([0, 0], [4, 3]), ([1, 1], [2, 2]), ([3, 2], [1, 1])] {
            let block = Block {
                origin: o.to_vec(),
                shape: n.to_vec(),
            };
            let mut got = vec![0u8; block.count() as usize];
            sel.read_box(&block, &mut got).unwrap();
            let mut want = Vec::new();
            for b in o[1]..o[1] + n[1] {
                for a in o[0]..o[0] + n[0] {
                    want.push(at(6 - 2 * a, 3, 1 + 2 * b));
                }
            }
            assert_eq!(got, want, "{block:?}");
        }
        let out = Pick::Range {
            start: 6,
            step: 2,
            count: 2,
        };
        let source = MemorySource {
            desc: Desc {
                dtype: DType::U8,
                dims: dims.to_vec(),
                trailer: Vec::new(),
            },
            data,
            shown: "m".into(),
        };
        assert!(select(Box::new(source), &[out, Pick::Index(0), Pick::Index(0)]).is_err());
    }
}
