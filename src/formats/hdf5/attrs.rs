//! HDF5 attributes as NDL attributes (JSON values, as the Zarr path carries them):
//! numbers (NaN and the infinities as NDL spells them), Bools, complex numbers as
//! `[re, im]`, fixed- and variable-length strings, each a scalar or a list (nested
//! by the attribute's shape). The attributes HDF5's conventions use for plumbing
//! (dimension scales, netCDF's bookkeeping, MATLAB's class) are interpreted
//! elsewhere, not copied; attributes of other types (compounds, references,
//! variable-length sequences, opaque) are left out.

use hdf5_reader::{Attribute, Datatype, StringSize};
use serde_json::{Map, Value};

use super::dtype::{descr, number, Number};
use crate::descr::Descr;

/// Most elements of one attribute taken: larger ones are left out.
const MAX_ELEMENTS: u64 = 1 << 20;

/// The attributes of HDF5's dimension scales, netCDF-4's bookkeeping and MATLAB's
/// classes: interpreted, never copied.
const INTERNAL: &[&str] = &[
    "DIMENSION_LIST",
    "REFERENCE_LIST",
    "_Netcdf4Dimid",
    "_Netcdf4Coordinates",
    "_NCProperties",
    "_nc3_strict",
    "_SuperblockVersion",
    "_IsNetcdf4",
    "MATLAB_class",
    "MATLAB_int_decode",
    "MATLAB_empty",
    "MATLAB_fields",
    "MATLAB_sparse",
    "H5PATH",
];

/// Whether the attribute `name` is one of HDF5's or its conventions' own; a dimension
/// scale's `CLASS` and `NAME` are (`scale`).
pub fn internal(name: &str, scale: bool) -> bool {
    INTERNAL.contains(&name) || (scale && matches!(name, "CLASS" | "NAME"))
}

/// The attributes `attrs` (of an object that is a dimension scale when `scale`) as
/// JSON, internal ones and those of no NDL value left out. In a NetCDF-4 file
/// (`netcdf`), whose attributes are all 1-D, one of one element is that element, as
/// netCDF4-python and xarray read it.
pub fn attributes(attrs: &[Attribute], scale: bool, netcdf: bool) -> Map<String, Value> {
    attrs
        .iter()
        .filter(|a| !internal(&a.name, scale))
        .filter_map(|a| {
            let v = value(a)?;
            let v = match v {
                Value::Array(mut one) if netcdf && a.shape == [1] && one.len() == 1 => {
                    one.remove(0)
                }
                v => v,
            };
            Some((a.name.clone(), v))
        })
        .collect()
}

/// The string value of the attribute `name` of `attrs`, if it has one.
pub fn string(attrs: &[Attribute], name: &str) -> Option<String> {
    let a = attrs.iter().find(|a| a.name == name)?;
    match value(a)? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// Whether `attrs` mark a dimension scale (`CLASS` is `DIMENSION_SCALE`).
pub fn is_scale(attrs: &[Attribute]) -> bool {
    string(attrs, "CLASS").as_deref() == Some("DIMENSION_SCALE")
}

/// The attribute's value, if NDL has one for it.
pub fn value(a: &Attribute) -> Option<Value> {
    let count = a
        .shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .filter(|&c| c <= MAX_ELEMENTS)?;
    let flat: Vec<Value> = match (&a.decoded_strings, &a.datatype) {
        (Some(strings), _) => strings.iter().cloned().map(Value::String).collect(),
        (
            None,
            Datatype::String {
                size: StringSize::Fixed(_),
                ..
            },
        ) => a
            .read_strings()
            .ok()?
            .into_iter()
            .map(Value::String)
            .collect(),
        (
            None,
            Datatype::String {
                size: StringSize::Variable,
                ..
            },
        ) if a.shape.is_empty() => {
            // A scalar variable-length string, resolved to its bytes.
            vec![Value::String(
                String::from_utf8_lossy(&a.raw_data)
                    .trim_end_matches('\0')
                    .to_string(),
            )]
        }
        (None, dt) => {
            let Ok(Descr::Simple {
                order,
                kind,
                count: n,
            }) = descr(dt, 0)
            else {
                return None;
            };
            let size = usize::try_from(n).ok()?;
            if !matches!(kind, 'b' | 'i' | 'u' | 'f' | 'c')
                || (a.raw_data.len() as u64) < count.checked_mul(n)?
            {
                return None;
            }
            a.raw_data
                .chunks_exact(size)
                .take(count as usize)
                .map(|b| number(order, kind, n, b).map(json_number))
                .collect::<Option<_>>()?
        }
    };
    if a.shape.is_empty() {
        return flat.into_iter().next();
    }
    if flat.len() as u64 != count {
        return None;
    }
    Some(nested(&a.shape, &mut flat.into_iter()))
}

/// The values `flat` (C order) as lists nested by `shape`.
fn nested(shape: &[u64], flat: &mut impl Iterator<Item = Value>) -> Value {
    match shape {
        [] => flat.next().unwrap_or(Value::Null),
        [n] => Value::Array(flat.take(*n as usize).collect()),
        [n, rest @ ..] => Value::Array((0..*n).map(|_| nested(rest, flat)).collect()),
    }
}

/// A number as an attribute's value (NaN and the infinities as NDL spells them).
pub fn json_number(n: Number) -> Value {
    let real = crate::formats::zarr::meta::ndl_number;
    match n {
        Number::Bool(b) => Value::Bool(b),
        Number::Int(i) => Value::from(i),
        Number::UInt(u) => Value::from(u),
        Number::Float(x) => real(x),
        Number::Complex(re, im) => Value::Array(vec![real(re), real(im)]),
    }
}
