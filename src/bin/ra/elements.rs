//! Printing elements: `ra cat`'s walk over a selection and `ra diff`'s comparison.
//! Shared with the `print` fuzz target, which runs them over arbitrary valid headers
//! (no elements, huge elements, reserved types).

use std::io::{self, Write};

use rastore::values::{self, Compared, Delta, Tolerance, Value};
use rastore::{DType, ErrorKind};
use rayon::prelude::*;

use crate::input::Input;
use crate::slice::{self, Sel};

/// Bytes compared between progress reports.
const PIECE: usize = 64 << 20;

fn out_err(e: io::Error) -> rastore::Error {
    ErrorKind::Io {
        op: "write output",
        source: e,
    }
    .into()
}

/// Prints the elements of `input` that `sels` selects, one per line with its index,
/// in column-major order, at most `limit`, then a line saying how many more there were.
pub fn cat(input: &Input, sels: &[Sel], limit: u64, out: &mut dyn Write) -> rastore::Result<()> {
    let mut result = Ok(());
    let total = slice::walk(sels, &input.dims, limit, |ix, _| {
        if result.is_ok() {
            let v = Value::decode(input.dtype, input.element(ix));
            result = writeln!(out, "{ix:?} {v}").map_err(out_err);
        }
    });
    result?;
    if total > limit {
        writeln!(
            out,
            "... {} more {} elements (raise --limit)",
            total - limit,
            input.dtype
        )
        .map_err(out_err)?;
    }
    Ok(())
}

/// Prints the selected elements as one JSON array nested as NumPy's `tolist()`
/// nests them (first index outermost; dims an integer index removed are dropped).
/// Complex numbers are `[re, im]`; NaN and infinities are the strings of
/// [`rastore::json::float`], so that strict parsers read the output.
pub fn cat_json(input: &Input, sels: &[Sel], out: &mut dyn Write) -> rastore::Result<()> {
    let mut ix = vec![0u64; sels.len()];
    json_level(input, sels, 0, &mut ix, out).map_err(out_err)?;
    writeln!(out).map_err(out_err)
}

fn json_level(
    input: &Input,
    sels: &[Sel],
    d: usize,
    ix: &mut Vec<u64>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let Some(sel) = sels.get(d) else {
        return write_json_value(&Value::decode(input.dtype, input.element(ix)), out);
    };
    if let Sel::Index(i) = *sel {
        ix[d] = i;
        return json_level(input, sels, d + 1, ix, out);
    }
    out.write_all(b"[")?;
    for k in 0..sel.count() {
        if k > 0 {
            out.write_all(b", ")?;
        }
        ix[d] = sel.at(k);
        json_level(input, sels, d + 1, ix, out)?;
    }
    out.write_all(b"]")
}

fn write_json_value(v: &Value, out: &mut dyn Write) -> io::Result<()> {
    match v {
        Value::Int(i) => write!(out, "{i}"),
        Value::UInt(u) => write!(out, "{u}"),
        Value::Float(f, _) => out.write_all(rastore::json::float(*f).as_bytes()),
        Value::Complex(re, im, _) => {
            out.write_all(b"[")?;
            write!(
                out,
                "{}, {}",
                rastore::json::float(*re),
                rastore::json::float(*im)
            )?;
            out.write_all(b"]")
        }
        Value::Bool(b) => write!(out, "{b}"),
        Value::Bytes(_) => write!(out, "\"{v}\""),
    }
}

/// Where pairs of elements with a NaN lie: how many, and the first.
#[derive(Debug, Clone, Copy, Default)]
struct Spot {
    count: u64,
    first: Option<u64>,
}

impl Spot {
    fn note(&mut self, i: u64) {
        self.count += 1;
        self.first.get_or_insert(i);
    }

    /// `self` from an earlier part of the array, `later` from the next.
    fn then(self, later: Spot) -> Spot {
        Spot {
            count: self.count + later.count,
            first: self.first.or(later.first),
        }
    }
}

/// What differs between two arrays, gathered in column-major order; parts gathered
/// in parallel are joined in order.
#[derive(Debug, Clone, Default)]
struct Differences {
    count: u64,
    first: Option<(u64, Value, Value)>,
    largest: Option<(Delta, u64, Value, Value)>,
    nan_both: Spot,
    nan_a: Spot,
    nan_b: Spot,
}

impl Differences {
    /// Notes the elements at column-major index `i`.
    fn note(&mut self, i: u64, va: Value, vb: Value, tol: Tolerance) {
        let delta = match va.compare(&vb, tol) {
            Compared::Close => return,
            Compared::Far(d) => d,
            Compared::Nan { a, b } => {
                match (a, b) {
                    (true, true) => self.nan_both.note(i),
                    (true, false) => self.nan_a.note(i),
                    _ => self.nan_b.note(i),
                }
                None
            }
        };
        self.count += 1;
        if let Some(d) = delta {
            if self.largest.as_ref().is_none_or(|l| d > l.0) {
                self.largest = Some((d, i, va.clone(), vb.clone()));
            }
        }
        self.first.get_or_insert((i, va, vb));
    }

    /// `self` from an earlier part of the array, `later` from the next.
    fn then(self, later: Differences) -> Differences {
        let largest = match (self.largest, later.largest) {
            (Some(a), Some(b)) => Some(if b.0 > a.0 { b } else { a }),
            (a, b) => a.or(b),
        };
        Differences {
            count: self.count + later.count,
            first: self.first.or(later.first),
            largest,
            nan_both: self.nan_both.then(later.nan_both),
            nan_a: self.nan_a.then(later.nan_a),
            nan_b: self.nan_b.then(later.nan_b),
        }
    }
}

/// Bytes of each input compared by one task.
const DIFF_TASK: usize = 1 << 20;

/// Compares the elements of two inputs of one type and shape, as NumPy's `isclose`
/// (see [`Value::compare`]), and prints what differs: the first differing element, how
/// many differ, the largest `|a - b|` with its index, and where NaNs made elements
/// differ. `done` hears the bytes compared so far. Returns whether they differ.
pub fn diff_elements(
    a: &Input,
    b: &Input,
    tol: Tolerance,
    out: &mut dyn Write,
    done: &mut dyn FnMut(u64),
) -> rastore::Result<bool> {
    let dtype: DType = a.dtype;
    let w = (dtype.elbyte as usize).max(1);
    let d = if a.is_fortran() && b.is_fortran() {
        // Both in column-major order: compare the bytes slab by slab, in parallel.
        let task = (DIFF_TASK / w).max(1) * w;
        let may_be_nan = dtype.may_be_nan();
        let mut total = Differences::default();
        let mut compare = |at: u64, pa: &[u8], pb: &[u8]| {
            let first = at / w as u64;
            let part = pa
                .par_chunks(task)
                .zip(pb.par_chunks(task))
                .enumerate()
                .map(|(j, (ta, tb))| {
                    let mut d = Differences::default();
                    // Equal bytes are equal values unless NaN: a task whose bytes
                    // agree is only looked at for NaNs, nothing decoded.
                    let nan = |x: &[u8]| may_be_nan && values::is_nan(dtype, x);
                    if ta == tb && !ta.chunks_exact(w).any(nan) {
                        return d;
                    }
                    let base = first + (j * task / w) as u64;
                    for (i, (x, y)) in ta.chunks_exact(w).zip(tb.chunks_exact(w)).enumerate() {
                        if x != y || nan(x) {
                            let (va, vb) = (Value::decode(dtype, x), Value::decode(dtype, y));
                            d.note(base + i as u64, va, vb, tol);
                        }
                    }
                    d
                })
                .reduce(Differences::default, Differences::then);
            total = std::mem::take(&mut total).then(part);
            done(at + pa.len() as u64);
        };
        match (a.source(), b.source()) {
            // Two files: read in lockstep by a scan, large reads ahead of the comparison.
            (Some(sa), Some(sb)) => {
                let options = rastore::scan::ScanOptions::default();
                rastore::scan::scan_many(&[sa, sb], w, &options, |at, slabs| {
                    compare(at, slabs[0], slabs[1]);
                    Ok(())
                })?;
            }
            _ => {
                let (xa, xb) = (a.bytes(), b.bytes());
                let piece = (PIECE / w).max(1) * w;
                for (k, (pa, pb)) in xa.chunks(piece).zip(xb.chunks(piece)).enumerate() {
                    compare((k * piece) as u64, pa, pb);
                }
            }
        }
        total
    } else {
        // A C-order .npy on one side: element by element, in column-major order.
        let mut d = Differences::default();
        let sels = slice::parse("", &a.dims).unwrap_or_default();
        let mut i = 0u64;
        slice::walk(&sels, &a.dims, u64::MAX, |ix, _| {
            let (va, vb) = (
                Value::decode(dtype, a.element(ix)),
                Value::decode(dtype, b.element(ix)),
            );
            d.note(i, va, vb, tol);
            i += 1;
        });
        d
    };
    report(&d, &a.dims, a.count(), tol, out).map_err(out_err)?;
    Ok(d.count > 0)
}

/// Prints what [`diff_elements`] found.
fn report(
    d: &Differences,
    dims: &[u64],
    count: u64,
    tol: Tolerance,
    out: &mut dyn Write,
) -> io::Result<()> {
    let Some((i, va, vb)) = &d.first else {
        return Ok(());
    };
    writeln!(
        out,
        "first difference at {:?}: {va} vs {vb}",
        unravel(*i, dims)
    )?;
    write!(out, "{} of {count} elements differ", d.count)?;
    if tol.rtol != 0.0 || tol.atol != 0.0 {
        write!(out, " (rtol {}, atol {})", tol.rtol, tol.atol)?;
    }
    // NaN against NaN differs, as in NumPy's allclose: said where the count is.
    let both = d.nan_both.count;
    if both == d.count {
        write!(
            out,
            ": {} NaN in both, and NaN differs from NaN as in NumPy's allclose (--equal-nan counts NaN equal to NaN)",
            if both == 1 { "it is" } else { "all are" }
        )?;
    } else if both > 0 {
        write!(
            out,
            " ({both} of them NaN in both: NaN differs from NaN unless --equal-nan)"
        )?;
    }
    match &d.largest {
        Some((delta, j, la, lb)) => writeln!(
            out,
            ", largest |a - b| = {delta} at {:?}: {la} vs {lb}",
            unravel(*j, dims)
        )?,
        None => writeln!(out)?,
    }
    let mut spots = Vec::new();
    for (spot, which) in [
        (d.nan_both, "in both"),
        (d.nan_a, "in a only"),
        (d.nan_b, "in b only"),
    ] {
        if let Some(first) = spot.first {
            spots.push(format!(
                "{} {which} (first at {:?})",
                spot.count,
                unravel(first, dims)
            ));
        }
    }
    if !spots.is_empty() {
        writeln!(out, "NaN: {}", spots.join(", "))?;
    }
    Ok(())
}

/// Column-major linear index → multi-index.
fn unravel(mut i: u64, dims: &[u64]) -> Vec<u64> {
    dims.iter()
        .map(|&d| {
            let r = i % d.max(1);
            i /= d.max(1);
            r
        })
        .collect()
}
