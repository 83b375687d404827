//! Printing elements: `ra cat`'s walk over a selection and `ra diff`'s comparison.
//! Shared with the `print` fuzz target, which runs them over arbitrary valid headers
//! (no elements, huge elements, reserved types).

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

use rastore::convert::decoded;
use rastore::values::Value;
use rastore::{DType, Encoding, ErrorKind, Header, RawData};

use crate::slice::{self, Sel};

fn out_err(e: io::Error) -> rastore::Error {
    ErrorKind::Io {
        op: "write output",
        source: e,
    }
    .into()
}

/// Element `linear` of a plain file, read with one `pread`, in native order.
fn pread_element(f: &File, h: &Header, linear: u64, buf: &mut [u8]) -> io::Result<()> {
    f.read_exact_at(buf, h.data_offset() + linear * h.dtype().elbyte)?;
    if !h.native_endian() {
        if let Some(unit) = h.dtype().swap_unit() {
            rastore::codec::swap_bytes(buf, unit);
        }
    }
    Ok(())
}

/// Prints the elements of `path` (header `h`) that `sels` selects, one per line with
/// its index, at most `limit`, then a line saying how many more there were. Plain
/// data is read element by element, never whole.
pub fn cat(
    path: &Path,
    h: &Header,
    sels: &[Sel],
    limit: u64,
    out: &mut dyn Write,
) -> rastore::Result<()> {
    let mut result = Ok(());
    let (total, dtype) = if h.encoding() == Encoding::Raw {
        let f = File::open(path).map_err(|e| {
            rastore::Error::from(ErrorKind::Io {
                op: "open",
                source: e,
            })
            .at(path)
        })?;
        // Sized on the first element: a file of no elements may claim any elbyte.
        let mut buf = Vec::new();
        let n = slice::walk(sels, h.dims(), limit, |ix, lin| {
            if result.is_err() {
                return;
            }
            buf.resize(h.dtype().elbyte as usize, 0);
            result = pread_element(&f, h, lin, &mut buf)
                .map_err(|e| {
                    rastore::Error::from(ErrorKind::Io {
                        op: "read",
                        source: e,
                    })
                    .at(path)
                })
                .and_then(|()| {
                    writeln!(out, "{ix:?} {}", Value::decode(h.dtype(), &buf)).map_err(out_err)
                });
        });
        (n, h.dtype())
    } else {
        let raw = decoded(path)?;
        let dtype = raw.header.dtype();
        let w = dtype.elbyte as usize;
        let n = slice::walk(sels, h.dims(), limit, |ix, lin| {
            if result.is_ok() {
                let b = &raw.data[lin as usize * w..][..w];
                result = writeln!(out, "{ix:?} {}", Value::decode(dtype, b)).map_err(out_err);
            }
        });
        (n, dtype)
    };
    result?;
    if total > limit {
        writeln!(
            out,
            "... {} more {dtype} elements (raise --limit)",
            total - limit
        )
        .map_err(out_err)?;
    }
    Ok(())
}

/// Compares two decoded files and prints what differs: dtype, dims, the first
/// differing element and the largest |a - b|, the trailer. Returns whether they differ.
pub fn diff(a: &RawData, b: &RawData, out: &mut dyn Write) -> rastore::Result<bool> {
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
        differs = diff_elements(ha, &a.data, &b.data, out)?;
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

fn diff_elements(h: &Header, a: &[u8], b: &[u8], out: &mut dyn Write) -> rastore::Result<bool> {
    let dtype: DType = h.dtype();
    let w = dtype.elbyte as usize;
    let mut first = None;
    let mut count = 0u64;
    let mut max = None::<f64>;
    for (i, (x, y)) in a.chunks_exact(w).zip(b.chunks_exact(w)).enumerate() {
        if x != y {
            count += 1;
            let (va, vb) = (Value::decode(dtype, x), Value::decode(dtype, y));
            if let Some(d) = va.abs_diff(&vb) {
                max = Some(max.map_or(d, |m: f64| m.max(d)));
            }
            first.get_or_insert((i, va, vb));
        }
    }
    let Some((i, va, vb)) = first else {
        return Ok(false);
    };
    let ix = unravel(i as u64, h.dims());
    writeln!(out, "first difference at {ix:?}: {va} vs {vb}").map_err(out_err)?;
    write!(out, "{count} of {} elements differ", h.count()).map_err(out_err)?;
    match max {
        Some(m) => writeln!(out, ", largest |a - b| = {m}"),
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
