//! NumPy-style slice specs in RawArray dim order (`0:10,:,3`) and the column-major
//! walk over the elements they select.

/// One dim's selection, resolved against its extent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sel {
    /// A single index: the dim is dropped from the result.
    Index(u64),
    /// `start, start + step, ...` below `stop`.
    Range { start: u64, stop: u64, step: u64 },
}

impl Sel {
    /// How many indices it selects.
    pub fn count(&self) -> u64 {
        match *self {
            Sel::Index(_) => 1,
            Sel::Range { start, stop, step } => stop.saturating_sub(start).div_ceil(step),
        }
    }

    /// The `k`-th index it selects.
    pub fn at(&self, k: u64) -> u64 {
        match *self {
            Sel::Index(i) => i,
            Sel::Range { start, step, .. } => start + k * step,
        }
    }
}

fn index(text: &str, extent: u64, clamp: bool) -> Result<u64, String> {
    let v: i128 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not an index"))?;
    let e = i128::from(extent);
    let r = if v < 0 { v + e } else { v };
    if clamp {
        Ok(r.clamp(0, e) as u64)
    } else if (0..e).contains(&r) {
        Ok(r as u64)
    } else {
        Err(format!("index {v} is out of bounds for extent {extent}"))
    }
}

/// Parses `spec` against `dims`; missing trailing parts select everything, and one
/// `...` stands for as many `:` as the dims need.
pub fn parse(spec: &str, dims: &[u64]) -> Result<Vec<Sel>, String> {
    let mut parts: Vec<&str> = if spec.trim().is_empty() {
        Vec::new()
    } else {
        spec.split(',').collect()
    };
    if let Some(at) = parts.iter().position(|p| p.trim() == "...") {
        if parts.iter().filter(|p| p.trim() == "...").count() > 1 {
            return Err(format!("slice {spec:?} has more than one ..."));
        }
        let fill = (dims.len() + 1).saturating_sub(parts.len());
        parts.splice(at..=at, std::iter::repeat_n(":", fill));
    }
    if parts.len() > dims.len() {
        return Err(format!(
            "slice {spec:?} has {} parts, the file has {} dims",
            parts.len(),
            dims.len()
        ));
    }
    dims.iter()
        .enumerate()
        .map(|(d, &extent)| {
            let Some(part) = parts.get(d) else {
                return Ok(Sel::Range {
                    start: 0,
                    stop: extent,
                    step: 1,
                });
            };
            if !part.contains(':') {
                return index(part, extent, false).map(Sel::Index);
            }
            let f: Vec<&str> = part.split(':').collect();
            if f.len() > 3 {
                return Err(format!("{part:?} is not start:stop:step"));
            }
            let step = match f.get(2).map(|s| s.trim()) {
                None | Some("") => 1,
                Some(s) => s
                    .parse::<u64>()
                    .ok()
                    .filter(|&s| s > 0)
                    .ok_or_else(|| format!("step {s:?} must be a positive integer"))?,
            };
            let start = match f[0].trim() {
                "" => 0,
                s => index(s, extent, true)?,
            };
            let stop = match f[1].trim() {
                "" => extent,
                s => index(s, extent, true)?,
            };
            Ok(Sel::Range { start, stop, step })
        })
        .collect()
}

/// Calls `f(multi-index, linear index)` for every selected element in column-major
/// order (first dim fastest), at most `limit` times; returns how many were selected.
pub fn walk(sels: &[Sel], dims: &[u64], limit: u64, mut f: impl FnMut(&[u64], u64)) -> u64 {
    let counts: Vec<u64> = sels.iter().map(Sel::count).collect();
    let total = counts
        .iter()
        .try_fold(1u64, |a, &c| a.checked_mul(c))
        .unwrap_or(u64::MAX);
    let strides: Vec<u64> = dims
        .iter()
        .scan(1u64, |acc, &d| {
            let s = *acc;
            *acc = acc.saturating_mul(d);
            Some(s)
        })
        .collect();
    let mut k = vec![0u64; sels.len()];
    let mut idx = vec![0u64; sels.len()];
    for _ in 0..total.min(limit) {
        let mut linear = 0u64;
        for d in 0..sels.len() {
            idx[d] = sels[d].at(k[d]);
            linear += idx[d] * strides[d];
        }
        f(&idx, linear);
        for d in 0..sels.len() {
            k[d] += 1;
            if k[d] < counts[d] {
                break;
            }
            k[d] = 0;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_style_specs() {
        let dims = [10, 4, 5];
        let s = parse("0:10:3,:,-1", &dims).unwrap();
        assert_eq!(
            s[0],
            Sel::Range {
                start: 0,
                stop: 10,
                step: 3
            }
        );
        assert_eq!(s[2], Sel::Index(4));
        let mut seen = Vec::new();
        let n = walk(&s, &dims, 100, |ix, lin| seen.push((ix.to_vec(), lin)));
        assert_eq!(n, 16);
        assert_eq!(seen[0], (vec![0, 0, 4], 160));
        assert_eq!(seen[1], (vec![3, 0, 4], 163));
        assert_eq!(seen[4], (vec![0, 1, 4], 170));
        assert!(parse("1,2,3,4", &dims).is_err());
        assert!(parse("10", &dims).is_err());
        assert!(parse("::0", &dims).is_err());
        assert!(parse("a:b", &dims).is_err());
        assert_eq!(walk(&parse("", &[]).unwrap(), &[], 5, |_, _| ()), 1);
        assert_eq!(walk(&parse("5:2", &[9]).unwrap(), &[9], 5, |_, _| ()), 0);
        assert_eq!(
            parse("...,-1", &dims).unwrap(),
            parse(":,:,-1", &dims).unwrap()
        );
        assert_eq!(parse("1,...", &dims).unwrap(), parse("1", &dims).unwrap());
        assert_eq!(
            parse("0,...,2", &dims).unwrap(),
            parse("0,:,2", &dims).unwrap()
        );
        assert!(parse("...,...", &dims).is_err());
    }
}
