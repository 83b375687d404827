//! A NIfTI header as attributes of the trailer, and back: each field under the name
//! nibabel's header gives it (`sform_code`, `srow_x`, `pixdim`, …), the affine nibabel's
//! `img.affine` gives (`affine`, 4×4), the scaling as CF's `scale_factor` and
//! `add_offset`, and the extensions (`extensions`: `code` with `text` or `base64`).

use yaml_rust2::yaml::Hash;
use yaml_rust2::Yaml;

use super::header::{Extension, NiftiHeader};
use crate::codec::{base64_decode, base64_encode};
use crate::ndl::{int, real, s};

fn reals(v: &[f64]) -> Yaml {
    Yaml::Array(v.iter().map(|&x| real(x)).collect())
}

fn signed(v: i64) -> Yaml {
    Yaml::Integer(v)
}

/// A byte string of the header as text: UTF-8 when it is, else Latin-1.
fn text(b: &[u8]) -> Yaml {
    match std::str::from_utf8(b) {
        Ok(t) => s(t),
        Err(_) => Yaml::String(b.iter().map(|&c| char::from(c)).collect()),
    }
}

/// What nibabel's `get_slope_inter` makes of the scaling fields: none unless the slope
/// is finite and nonzero and the intercept finite, and none for (1, 0).
pub fn scaling(h: &NiftiHeader) -> Option<(f64, f64)> {
    let (m, b) = (h.scl_slope, h.scl_inter);
    let valid = m != 0.0 && m.is_finite() && b.is_finite();
    (valid && (m, b) != (1.0, 0.0)).then_some((m, b))
}

/// The attributes of an array read from a NIfTI file with header `h`.
pub fn to_attributes(h: &NiftiHeader, extensions: &[Extension]) -> Yaml {
    let mut a = Hash::new();
    let mut put = |k: &str, v: Yaml| {
        a.insert(s(k), v);
    };
    put("nifti_version", int(u64::from(h.version)));
    let affine = affine(h);
    put(
        "affine",
        Yaml::Array(affine.iter().map(|row| reals(row)).collect()),
    );
    put("qform_code", signed(h.codes[0].into()));
    put("sform_code", signed(h.codes[1].into()));
    for (k, n) in ["quatern_b", "quatern_c", "quatern_d"].iter().enumerate() {
        put(n, real(h.quatern[k]));
    }
    for (k, n) in ["qoffset_x", "qoffset_y", "qoffset_z"].iter().enumerate() {
        put(n, real(h.qoffset[k]));
    }
    for (k, n) in ["srow_x", "srow_y", "srow_z"].iter().enumerate() {
        put(n, reals(&h.srow[k]));
    }
    put("pixdim", reals(&h.pixdim));
    put("xyzt_units", signed(h.xyzt_units.into()));
    if let Some((m, b)) = scaling(h) {
        put("scale_factor", real(m));
        put("add_offset", real(b));
    }
    let nonzero = |v: &[f64]| v.iter().any(|&x| x != 0.0);
    if h.intent_code != 0 || !h.intent_name.is_empty() || nonzero(&h.intent_p) {
        put("intent_code", signed(h.intent_code.into()));
        for (k, n) in ["intent_p1", "intent_p2", "intent_p3"].iter().enumerate() {
            put(n, real(h.intent_p[k]));
        }
        put("intent_name", text(&h.intent_name));
    }
    for (n, v) in [("descrip", &h.descrip), ("aux_file", &h.aux_file)] {
        if !v.is_empty() {
            put(n, text(v));
        }
    }
    if h.dim_info != 0 {
        put("dim_info", signed(h.dim_info.into()));
    }
    if h.slice_code != 0 || h.slice != [0, 0] || h.slice_duration != 0.0 {
        put("slice_code", signed(h.slice_code.into()));
        put("slice_start", signed(h.slice[0]));
        put("slice_end", signed(h.slice[1]));
        put("slice_duration", real(h.slice_duration));
    }
    if h.cal != [0.0, 0.0] {
        put("cal_max", real(h.cal[0]));
        put("cal_min", real(h.cal[1]));
    }
    if h.toffset != 0.0 {
        put("toffset", real(h.toffset));
    }
    if !extensions.is_empty() {
        let list = extensions
            .iter()
            .map(|e| {
                let mut m = Hash::new();
                m.insert(s("code"), signed(e.code.into()));
                match std::str::from_utf8(&e.content) {
                    Ok(t) if !t.contains('\0') => m.insert(s("text"), s(t)),
                    _ => m.insert(s("base64"), s(&base64_encode(&e.content))),
                };
                Yaml::Hash(m)
            })
            .collect();
        put("extensions", Yaml::Array(list));
    }
    Yaml::Hash(a)
}

fn num(v: &Yaml) -> Option<f64> {
    match v {
        Yaml::Integer(i) => Some(*i as f64),
        Yaml::Real(r) => match r.as_str() {
            ".nan" | ".NaN" | ".NAN" => Some(f64::NAN),
            ".inf" | "+.inf" => Some(f64::INFINITY),
            "-.inf" => Some(f64::NEG_INFINITY),
            t => t.parse().ok(),
        },
        _ => None,
    }
}

fn nums<const N: usize>(v: &Yaml) -> Option<[f64; N]> {
    let a = v.as_vec()?;
    if a.len() != N {
        return None;
    }
    let mut out = [0.0; N];
    for (o, x) in out.iter_mut().zip(a) {
        *o = num(x)?;
    }
    Some(out)
}

fn bytes(v: &Yaml) -> Option<Vec<u8>> {
    v.as_str().map(|t| t.as_bytes().to_vec())
}

/// Sets the fields of `h` that `attrs` give (those [`to_attributes`] writes; others
/// keep nibabel's defaults), and returns the extensions they list. An `affine` without
/// `sform_code` or `qform_code` becomes the sform, code 2 (aligned), as nibabel sets
/// it for `Nifti1Image(data, affine)`.
pub fn from_attributes(h: &mut NiftiHeader, attrs: &Hash) -> Vec<Extension> {
    let get = |k: &str| attrs.get(&s(k));
    let f = |k: &str| get(k).and_then(num);
    if let Some(v) = f("nifti_version") {
        if v == 2.0 {
            h.version = 2;
        }
    }
    if let Some(p) = get("pixdim").and_then(nums::<8>) {
        h.pixdim = p;
    }
    for (k, n) in ["qform_code", "sform_code"].iter().enumerate() {
        if let Some(v) = f(n) {
            h.codes[k] = v as i32;
        }
    }
    for (k, n) in ["quatern_b", "quatern_c", "quatern_d"].iter().enumerate() {
        if let Some(v) = f(n) {
            h.quatern[k] = v;
        }
    }
    for (k, n) in ["qoffset_x", "qoffset_y", "qoffset_z"].iter().enumerate() {
        if let Some(v) = f(n) {
            h.qoffset[k] = v;
        }
    }
    for (k, n) in ["srow_x", "srow_y", "srow_z"].iter().enumerate() {
        if let Some(v) = get(n).and_then(nums::<4>) {
            h.srow[k] = v;
        }
    }
    let has_codes = get("sform_code").is_some() || get("qform_code").is_some();
    if let (false, Some(rows)) = (has_codes, get("affine").and_then(|v| v.as_vec())) {
        let rows: Vec<[f64; 4]> = rows.iter().filter_map(nums::<4>).collect();
        if rows.len() == 4 {
            h.srow = [rows[0], rows[1], rows[2]];
            h.codes[1] = 2;
            for (c, p) in h.pixdim[1..4].iter_mut().enumerate() {
                *p = rows[..3].iter().map(|r| r[c] * r[c]).sum::<f64>().sqrt();
            }
        }
    }
    if let Some(v) = f("xyzt_units") {
        h.xyzt_units = v as i32;
    }
    match (f("scale_factor"), f("add_offset")) {
        (None, None) => {}
        (m, b) => {
            h.scl_slope = m.unwrap_or(1.0);
            h.scl_inter = b.unwrap_or(0.0);
        }
    }
    if let Some(v) = f("intent_code") {
        h.intent_code = v as i32;
    }
    for (k, n) in ["intent_p1", "intent_p2", "intent_p3"].iter().enumerate() {
        if let Some(v) = f(n) {
            h.intent_p[k] = v;
        }
    }
    if let Some(v) = get("intent_name").and_then(bytes) {
        h.intent_name = v;
    }
    if let Some(v) = get("descrip").and_then(bytes) {
        h.descrip = v;
    }
    if let Some(v) = get("aux_file").and_then(bytes) {
        h.aux_file = v;
    }
    if let Some(v) = f("dim_info") {
        h.dim_info = v as u8;
    }
    if let Some(v) = f("slice_code") {
        h.slice_code = v as i32;
    }
    for (k, n) in ["slice_start", "slice_end"].iter().enumerate() {
        if let Some(v) = f(n) {
            h.slice[k] = v as i64;
        }
    }
    if let Some(v) = f("slice_duration") {
        h.slice_duration = v;
    }
    for (k, n) in ["cal_max", "cal_min"].iter().enumerate() {
        if let Some(v) = f(n) {
            h.cal[k] = v;
        }
    }
    if let Some(v) = f("toffset") {
        h.toffset = v;
    }
    get("extensions")
        .and_then(|v| v.as_vec())
        .map(|list| list.iter().filter_map(extension).collect())
        .unwrap_or_default()
}

fn extension(v: &Yaml) -> Option<Extension> {
    let m = v.as_hash()?;
    let code = num(m.get(&s("code"))?)? as i32;
    let content = match (m.get(&s("text")), m.get(&s("base64"))) {
        (Some(t), _) => t.as_str()?.as_bytes().to_vec(),
        (None, Some(b)) => base64_decode(b.as_str()?)?,
        _ => return None,
    };
    Some(Extension { code, content })
}

/// The affine nibabel's `img.affine` gives: the sform when `sform_code` is set, else the
/// qform when `qform_code` is, else the base affine of the voxel sizes (x flipped,
/// centered).
pub fn affine(h: &NiftiHeader) -> [[f64; 4]; 4] {
    if h.codes[1] != 0 {
        return [h.srow[0], h.srow[1], h.srow[2], [0.0, 0.0, 0.0, 1.0]];
    }
    if h.codes[0] != 0 {
        return qform(h);
    }
    let ndim = h.dim[0].clamp(0, 7) as usize;
    let mut a = [[0.0; 4]; 4];
    a[3][3] = 1.0;
    for (k, row) in a.iter_mut().take(3).enumerate() {
        let (n, z) = if k < ndim {
            (h.dim[k + 1] as f64, h.pixdim[k + 1])
        } else {
            (1.0, 1.0)
        };
        let z = if k == 0 { -z } else { z };
        row[k] = z;
        row[3] = -(n - 1.0) / 2.0 * z;
    }
    a
}

/// The qform as nibabel computes it: the rotation of the quaternion (`b`, `c`, `d`,
/// `a` made positive), the voxel sizes with `qfac` (`pixdim[0]`, −1 or else 1) on z,
/// the offsets; in single precision for NIfTI-1, whose fields are, as NumPy does it.
fn qform(h: &NiftiHeader) -> [[f64; 4]; 4] {
    let single = h.version == 1;
    let q = |v: f64| if single { f64::from(v as f32) } else { v };
    let [x, y, z] = h.quatern;
    let w2 = q(1.0 - q(q(q(x * x) + q(y * y)) + q(z * z)));
    let w = if w2 < 0.0 { 0.0 } else { q(w2.sqrt()) };
    let n = q(q(q(q(w * w) + q(x * x)) + q(y * y)) + q(z * z));
    let r = if n < f64::EPSILON {
        [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    } else {
        let s2 = q(2.0 / n);
        let (sx, sy, sz) = (q(x * s2), q(y * s2), q(z * s2));
        let (wx, wy, wz) = (q(w * sx), q(w * sy), q(w * sz));
        let (xx, xy, xz) = (q(x * sx), q(x * sy), q(x * sz));
        let (yy, yz, zz) = (q(y * sy), q(y * sz), q(z * sz));
        [
            [q(1.0 - q(yy + zz)), q(xy - wz), q(xz + wy)],
            [q(xy + wz), q(1.0 - q(xx + zz)), q(yz - wx)],
            [q(xz - wy), q(yz + wx), q(1.0 - q(xx + yy))],
        ]
    };
    let qfac = if h.pixdim[0] == -1.0 { -1.0 } else { 1.0 };
    let zooms = [h.pixdim[1], h.pixdim[2], h.pixdim[3] * qfac];
    let mut m = [[0.0; 4]; 4];
    for i in 0..3 {
        for j in 0..3 {
            m[i][j] = q(r[i][j] * zooms[j]);
        }
        m[i][3] = h.qoffset[i];
    }
    m[3][3] = 1.0;
    m
}
