//! NumPy-style slice specs in RawArray dim order (`0:10,:,3`) and the column-major
//! walk over the elements they select.

/// One dim's selection, resolved against its extent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sel {
    /// A single index: the dim is dropped from the result.
    Index(u64),
    /// `count` indices `start, start + step, ...` (a negative step walks down).
    Range { start: u64, step: i64, count: u64 },
}

impl Sel {
    /// How many indices it selects.
    pub fn count(&self) -> u64 {
        match *self {
            Sel::Index(_) => 1,
            Sel::Range { count, .. } => count,
        }
    }

    /// The `k`-th index it selects.
    pub fn at(&self, k: u64) -> u64 {
        match *self {
            Sel::Index(i) => i,
            Sel::Range { start, step, .. } => {
                (i128::from(start) + i128::from(k) * i128::from(step)) as u64
            }
        }
    }
}

fn index(text: &str, extent: u64) -> Result<u64, String> {
    let v: i128 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not an index"))?;
    let e = i128::from(extent);
    let r = if v < 0 { v + e } else { v };
    if (0..e).contains(&r) {
        Ok(r as u64)
    } else {
        Err(format!("index {v} is out of bounds for extent {extent}"))
    }
}

/// `start:stop:step` on an axis of `extent`, as Python's `slice.indices` resolves it:
/// missing bounds run to the end the step walks towards, negative ones count from
/// the end, and out-of-range ones are clamped.
fn range(part: &str, extent: u64) -> Result<Sel, String> {
    let f: Vec<&str> = part.split(':').collect();
    if f.len() > 3 {
        return Err(format!("{part:?} is not start:stop:step"));
    }
    let number = |s: &str| -> Result<Option<i128>, String> {
        match s.trim() {
            "" => Ok(None),
            t => t
                .parse::<i128>()
                .map(Some)
                .map_err(|_| format!("{t:?} is not an index")),
        }
    };
    let step = match f.get(2) {
        Some(s) => number(s)?.unwrap_or(1),
        None => 1,
    };
    if step == 0 || i64::try_from(step).is_err() {
        return Err(format!("step {step} must be a nonzero integer"));
    }
    let e = i128::from(extent);
    let (lower, upper) = if step < 0 { (-1, e - 1) } else { (0, e) };
    let bound = |v: Option<i128>, default: i128| match v {
        None => default,
        Some(v) if v < 0 => (v + e).max(lower),
        Some(v) => v.min(upper),
    };
    let (start, stop) = if step < 0 {
        (bound(number(f[0])?, upper), bound(number(f[1])?, lower))
    } else {
        (bound(number(f[0])?, lower), bound(number(f[1])?, upper))
    };
    let count = if step < 0 && stop < start {
        (start - stop - 1) / -step + 1
    } else if step > 0 && start < stop {
        (stop - start - 1) / step + 1
    } else {
        0
    };
    Ok(Sel::Range {
        start: start.max(0) as u64,
        step: step as i64,
        count: count as u64,
    })
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
        .map(|(d, &extent)| match parts.get(d) {
            None => range(":", extent),
            Some(part) if part.contains(':') => range(part, extent),
            Some(part) => index(part, extent).map(Sel::Index),
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
                step: 3,
                count: 4
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

    /// Every start, stop and step from -12 to 12 on an axis of 9 picks what Python's
    /// `range(9)[start:stop:step]` picks.
    #[test]
    fn steps_match_python_slices() {
        let python = |start: Option<i64>, stop: Option<i64>, step: i64| -> Vec<u64> {
            let n = 9i64;
            let norm = |v: i64, lo: i64, hi: i64| if v < 0 { (v + n).max(lo) } else { v.min(hi) };
            let (lo, hi) = if step < 0 { (-1, n - 1) } else { (0, n) };
            let a = start.map_or(if step < 0 { hi } else { lo }, |v| norm(v, lo, hi));
            let b = stop.map_or(if step < 0 { lo } else { hi }, |v| norm(v, lo, hi));
            let mut out = Vec::new();
            let mut i = a;
            while (step > 0 && i < b) || (step < 0 && i > b) {
                out.push(i as u64);
                i += step;
            }
            out
        };
        let text = |v: Option<i64>| v.map_or(String::new(), |v| v.to_string());
        let bounds: Vec<Option<i64>> = std::iter::once(None).chain((-12..=12).map(Some)).collect();
        for &start in &bounds {
            for &stop in &bounds {
                for step in (-12..=12).filter(|&s| s != 0) {
                    let spec = format!("{}:{}:{step}", text(start), text(stop));
                    let sel = &parse(&spec, &[9]).unwrap()[0];
                    let got: Vec<u64> = (0..sel.count()).map(|k| sel.at(k)).collect();
                    assert_eq!(got, python(start, stop, step), "{spec}");
                }
            }
        }
    }
}
