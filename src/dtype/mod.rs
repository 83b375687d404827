//! Element types: [`DType`] and [`Kind`] (defined in `types`, which the error type
//! names), parsing a type from its names and short codes, and the [`Element`] trait
//! that ties a Rust type to a `DType`.

use std::str::FromStr;

use half::{bf16, f16};
use num_complex::Complex;

use crate::error::{Error, ErrorKind};

pub(crate) mod types;

use types::NAMES;
pub use types::{DType, Kind};

impl DType {
    /// The `DType` of a Rust element type.
    pub const fn of<T: Element>() -> DType {
        T::DTYPE
    }
}

impl FromStr for DType {
    type Err = Error;

    /// Parses a display name (`float32`), a short code in bits (`f32`, `i8` is int8),
    /// `user<N>`, a NumPy type string in bytes with its byte-order mark (`<f4`, `|u1`,
    /// `<i8` is int64; native or `|` only) or a NumPy type name (`float`, `double`,
    /// `int`, `complex`, `bool`, ...).
    fn from_str(s: &str) -> Result<Self, Error> {
        let s = s.trim();
        if let Some(n) = s.strip_prefix("user<").and_then(|r| r.strip_suffix('>')) {
            return match n.parse::<u64>() {
                Ok(n) if n >= 1 => Ok(DType::user(n)),
                _ => Err(bad_name(s)),
            };
        }
        if let Some(d) = NAMES
            .iter()
            .find(|(name, code, _)| s.eq_ignore_ascii_case(name) || s.eq_ignore_ascii_case(code))
            .map(|(_, _, d)| *d)
        {
            return Ok(d);
        }
        if let Some(d) = NUMPY_NAMES.iter().find(|(n, _)| *n == s).map(|(_, d)| *d) {
            return Ok(d);
        }
        numpy_type_string(s).ok_or_else(|| bad_name(s))
    }
}

/// NumPy's type names (`np.dtype(name)`), for `--dtype`.
const NUMPY_NAMES: &[(&str, DType)] = &[
    ("float", DType::F64),
    ("double", DType::F64),
    ("single", DType::F32),
    ("half", DType::F16),
    ("int", DType::I64),
    ("uint", DType::U64),
    ("byte", DType::I8),
    ("ubyte", DType::U8),
    ("short", DType::I16),
    ("ushort", DType::U16),
    ("intc", DType::I32),
    ("uintc", DType::U32),
    ("longlong", DType::I64),
    ("ulonglong", DType::U64),
    ("complex", DType::C128),
    ("csingle", DType::C64),
    ("cdouble", DType::C128),
    ("?", DType::BOOL),
];

/// A NumPy type string with its byte-order mark, counting bytes: `<f4` is float32.
/// Only this machine's order (or `|`, `=`): the files written are native.
fn numpy_type_string(s: &str) -> Option<DType> {
    let native = if cfg!(target_endian = "big") {
        '>'
    } else {
        '<'
    };
    let mut chars = s.chars();
    let order = chars.next()?;
    if !(order == native || order == '|' || order == '=') {
        return None;
    }
    let rest = chars.as_str();
    let kind = rest.chars().next()?;
    let bytes: u64 = rest[1..].parse().ok()?;
    let d = match kind {
        'b' if bytes == 1 => DType::BOOL,
        'i' => DType {
            eltype: 1,
            elbyte: bytes,
        },
        'u' => DType {
            eltype: 2,
            elbyte: bytes,
        },
        'f' if bytes <= 8 => DType {
            eltype: 3,
            elbyte: bytes,
        },
        'c' if bytes <= 16 => DType {
            eltype: 4,
            elbyte: bytes,
        },
        'V' if bytes >= 1 => DType::user(bytes),
        _ => return None,
    };
    (d.kind() != Kind::Other).then_some(d)
}

fn bad_name(s: &str) -> Error {
    ErrorKind::InvalidArgument(format!(
        "unknown element type {s:?}: use a name (float32, int16, complex64, bfloat16, user<12>, ...), a short code in bits (f32, i16, c64, bf16, ...) or a NumPy type string in bytes (<f4, <i2, |u1, ...)"
    ))
    .into()
}

/// A Rust type that can be an element of a RawArray.
///
/// Implemented for the integers `i8`…`i128`, `u8`…`u128`, `half::f16`, `half::bf16`,
/// `f32`, `f64`, `Complex<f16|f32|f64>` and `[u8; N]` (eltype 0). For your own
/// composite types, derive `bytemuck::Pod` and implement `Element` with
/// `const DTYPE: DType = DType::user(size_of::<Self>() as u64)`; a type whose
/// `DTYPE.elbyte` differs from its size is refused at run time.
pub trait Element: bytemuck::Pod + Send + Sync {
    /// The `(eltype, elbyte)` of this type.
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:expr),* $(,)?) => { $( impl Element for $t { const DTYPE: DType = $d; } )* };
}

element! {
    i8 => DType::I8, i16 => DType::I16, i32 => DType::I32, i64 => DType::I64, i128 => DType::I128,
    u8 => DType::U8, u16 => DType::U16, u32 => DType::U32, u64 => DType::U64, u128 => DType::U128,
    f16 => DType::F16, f32 => DType::F32, f64 => DType::F64, bf16 => DType::BF16,
    Complex<f16> => DType::C32, Complex<f32> => DType::C64, Complex<f64> => DType::C128,
}

impl<const N: usize> Element for [u8; N]
where
    [u8; N]: bytemuck::Pod,
{
    const DTYPE: DType = DType::user(N as u64);
}

/// Checks that `T` may read data of type `file`, and that `T`'s size agrees with its
/// declared `DTYPE` (a user `Element` impl could get that wrong).
pub(crate) fn check_type<T: Element>(file: DType) -> Result<(), Error> {
    let requested = T::DTYPE;
    if !requested.accepts(file) || std::mem::size_of::<T>() as u64 != requested.elbyte {
        return Err(ErrorKind::TypeMismatch { file, requested }.into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_round_trip() {
        for (name, code, d) in NAMES {
            assert_eq!(name.parse::<DType>().unwrap(), *d);
            assert_eq!(code.parse::<DType>().unwrap(), *d);
            assert_eq!(d.name(), *name);
        }
        assert_eq!("user<12>".parse::<DType>().unwrap(), DType::user(12));
        for (numpy, d) in [
            ("<f4", DType::F32),
            ("float32", DType::F32),
            ("float", DType::F64),
            ("complex64", DType::C64),
            ("bool", DType::BOOL),
            ("|u1", DType::U8),
            ("<i8", DType::I64),
            ("i8", DType::I8),
            ("<c16", DType::C128),
            ("|V12", DType::user(12)),
        ] {
            assert_eq!(numpy.parse::<DType>().unwrap(), d, "{numpy}");
        }
        for bad in [">f4", "<f16", "<x4", "<f", "float31"] {
            assert!(bad.parse::<DType>().is_err(), "{bad}");
        }
        assert_eq!(DType::user(12).to_string(), "user<12>");
        assert_eq!(
            DType {
                eltype: 9,
                elbyte: 3
            }
            .name(),
            "eltype9x3"
        );
        assert!("float7".parse::<DType>().is_err());
        assert!("user<0>".parse::<DType>().is_err());
    }

    #[test]
    fn of_matches_rust_types() {
        assert_eq!(DType::of::<Complex<f32>>(), DType::C64);
        assert_eq!(DType::of::<bf16>(), DType::BF16);
        assert_eq!(DType::of::<[u8; 10]>(), DType::user(10));
        assert!(check_type::<u8>(DType::BOOL).is_ok());
        assert!(check_type::<i8>(DType::BOOL).is_err());
        assert!(check_type::<f32>(DType::I32).is_err());
    }
}
