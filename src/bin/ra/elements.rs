//! Printing elements: `ra cat`'s walk over a selection and `ra diff`'s comparison.
//! Shared with the `print` fuzz target, which runs them over arbitrary valid headers
//! (no elements, huge elements, reserved types).

use std::io::{self, Write};

use rastore::values::Value;
use rastore::{DType, ErrorKind, Header, RawData};

use crate::input::Input;
use crate::slice::{self, Sel};

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
/// Complex numbers are `[re, im]`, NaN and infinities as Python's `json` writes them.
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

fn json_f64(v: f64, out: &mut dyn Write) -> io::Result<()> {
    if v.is_nan() {
        write!(out, "NaN")
    } else if v.is_infinite() {
        write!(out, "{}Infinity", if v < 0.0 { "-" } else { "" })
    } else {
        write!(out, "{v:?}")
    }
}

fn write_json_value(v: &Value, out: &mut dyn Write) -> io::Result<()> {
    match v {
        Value::Int(i) => write!(out, "{i}"),
        Value::UInt(u) => write!(out, "{u}"),
        Value::Float(f, _) => json_f64(*f, out),
        Value::Complex(re, im, _) => {
            out.write_all(b"[")?;
            json_f64(*re, out)?;
            out.write_all(b", ")?;
            json_f64(*im, out)?;
            out.write_all(b"]")
        }
        Value::Bool(b) => write!(out, "{b}"),
        Value::Bytes(_) => write!(out, "\"{v}\""),
    }
}

/// How close two elements must be to count as equal: `|a - b| <= atol + rtol·|b|`,
/// as NumPy's `allclose`. Both zero: only equal bytes are equal.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tolerance {
    /// Relative to `|b|`.
    pub rtol: f64,
    /// Absolute.
    pub atol: f64,
}

/// Compares two decoded files and prints what differs: dtype, dims, the first
/// differing element, how many differ and the largest |a - b| with its index, the
/// trailer. Returns whether they differ.
pub fn diff(
    a: &RawData,
    b: &RawData,
    tol: Tolerance,
    out: &mut dyn Write,
) -> rastore::Result<bool> {
    let (ha, hb) = (&a.header, &b.header);
    let mut differs = false;
    if ha.dtype() != hb.dtype() {
        writeln!(out, "dtype: {} vs {}", ha.dtype(), hb.dtype()).map_err(out_err)?;
        differs = true;
    }
    if ha.dims() != hb.dims() {
        writeln!(out, "dims: {:?} vs {:?}", ha.dims(), hb.dims()).map_err(out_err)?;
        differs = true;
    }
    if !differs {
        differs = diff_elements(ha, &a.data, &b.data, tol, out)?;
    }
    if a.metadata != b.metadata {
        writeln!(
            out,
            "metadata: {} bytes vs {} bytes, contents differ",
            a.metadata.len(),
            b.metadata.len()
        )
        .map_err(out_err)?;
        differs = true;
    }
    Ok(differs)
}

fn diff_elements(
    h: &Header,
    a: &[u8],
    b: &[u8],
    tol: Tolerance,
    out: &mut dyn Write,
) -> rastore::Result<bool> {
    let dtype: DType = h.dtype();
    let w = dtype.elbyte as usize;
    let exact = tol.rtol == 0.0 && tol.atol == 0.0;
    let mut first = None;
    let mut count = 0u64;
    let mut largest = None::<(f64, usize, Value, Value)>;
    for (i, (x, y)) in a.chunks_exact(w).zip(b.chunks_exact(w)).enumerate() {
        if x == y {
            continue;
        }
        let (va, vb) = (Value::decode(dtype, x), Value::decode(dtype, y));
        let d = va.abs_diff(&vb);
        let close = match (d, vb.magnitude()) {
            (Some(d), Some(m)) if !exact => d <= tol.atol + tol.rtol * m,
            _ => false,
        };
        if close {
            continue;
        }
        count += 1;
        if let Some(d) = d.filter(|d| !d.is_nan()) {
            if largest.as_ref().is_none_or(|l| d > l.0) {
                largest = Some((d, i, va.clone(), vb.clone()));
            }
        }
        first.get_or_insert((i, va, vb));
    }
    let Some((i, va, vb)) = first else {
        return Ok(false);
    };
    let ix = unravel(i as u64, h.dims());
    writeln!(out, "first difference at {ix:?}: {va} vs {vb}").map_err(out_err)?;
    write!(out, "{count} of {} elements differ", h.count()).map_err(out_err)?;
    if !exact {
        write!(out, " (rtol {}, atol {})", tol.rtol, tol.atol).map_err(out_err)?;
    }
    match largest {
        Some((d, j, la, lb)) => writeln!(
            out,
            ", largest |a - b| = {d} at {:?}: {la} vs {lb}",
            unravel(j as u64, h.dims())
        ),
        None => writeln!(out),
    }
    .map_err(out_err)?;
    Ok(true)
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
