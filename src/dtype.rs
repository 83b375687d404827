//! Element types: [`DType`] (the header's `eltype` and `elbyte`), its names and
//! short codes, and the [`Element`] trait that ties a Rust type to a `DType`.

use std::fmt;
use std::str::FromStr;

use half::{bf16, f16};
use num_complex::Complex;

use crate::error::{Error, ErrorKind};

/// What an `eltype` code means (FORMAT.md section 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// 0: user-defined / composite; the bytes are the user's.
    User,
    /// 1: signed integer.
    Int,
    /// 2: unsigned integer.
    UInt,
    /// 3: IEEE-754 float.
    Float,
    /// 4: complex, a pair of IEEE floats.
    Complex,
    /// 5 with elbyte 2: bfloat16.
    BFloat16,
    /// 5 with elbyte 1: Julia `Bool`, one byte 0 or 1.
    Bool,
    /// 5 with elbyte 8: Julia `BitArray` chunks (only meaningful with the BITS flag).
    BitChunk,
    /// Anything else: a valid header whose elements are raw bytes only.
    Other,
}

/// An element type: the header's `(eltype, elbyte)` pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DType {
    /// The `eltype` code.
    pub eltype: u64,
    /// Bytes per element.
    pub elbyte: u64,
}

macro_rules! consts {
    ($($name:ident = ($e:expr, $b:expr);)*) => {
        impl DType { $(
            #[doc = concat!("`(eltype, elbyte) = (", stringify!($e), ", ", stringify!($b), ")`")]
            pub const $name: DType = DType { eltype: $e, elbyte: $b };
        )* }
    };
}

consts! {
    I8 = (1, 1); I16 = (1, 2); I32 = (1, 4); I64 = (1, 8); I128 = (1, 16);
    U8 = (2, 1); U16 = (2, 2); U32 = (2, 4); U64 = (2, 8); U128 = (2, 16);
    F16 = (3, 2); F32 = (3, 4); F64 = (3, 8); F128 = (3, 16);
    C32 = (4, 4); C64 = (4, 8); C128 = (4, 16);
    BF16 = (5, 2); BOOL = (5, 1); BIT_CHUNK = (5, 8);
}

/// `(name, short code, dtype)` for every named type.
const NAMES: &[(&str, &str, DType)] = &[
    ("int8", "i8", DType::I8),
    ("int16", "i16", DType::I16),
    ("int32", "i32", DType::I32),
    ("int64", "i64", DType::I64),
    ("int128", "i128", DType::I128),
    ("uint8", "u8", DType::U8),
    ("uint16", "u16", DType::U16),
    ("uint32", "u32", DType::U32),
    ("uint64", "u64", DType::U64),
    ("uint128", "u128", DType::U128),
    ("float16", "f16", DType::F16),
    ("float32", "f32", DType::F32),
    ("float64", "f64", DType::F64),
    ("float128", "f128", DType::F128),
    ("complex32", "c32", DType::C32),
    ("complex64", "c64", DType::C64),
    ("complex128", "c128", DType::C128),
    ("bfloat16", "bf16", DType::BF16),
    ("bool", "b1", DType::BOOL),
    ("bitarray", "bits", DType::BIT_CHUNK),
];

impl DType {
    /// A user-defined (eltype 0) type of `elbyte` bytes.
    pub const fn user(elbyte: u64) -> DType {
        DType { eltype: 0, elbyte }
    }

    /// The `DType` of a Rust element type.
    pub const fn of<T: Element>() -> DType {
        T::DTYPE
    }

    /// What the `eltype` code means for this `elbyte`.
    pub fn kind(&self) -> Kind {
        let int_width = matches!(self.elbyte, 1 | 2 | 4 | 8 | 16);
        match (self.eltype, self.elbyte) {
            (0, _) => Kind::User,
            (1, _) if int_width => Kind::Int,
            (2, _) if int_width => Kind::UInt,
            (3, 2 | 4 | 8 | 16) => Kind::Float,
            (4, 4 | 8 | 16) => Kind::Complex,
            (5, 2) => Kind::BFloat16,
            (5, 1) => Kind::Bool,
            (5, 8) => Kind::BitChunk,
            _ => Kind::Other,
        }
    }

    /// Whether an element can be NaN: IEEE floats (not the opaque quad), bfloat16 and
    /// complex numbers.
    pub fn may_be_nan(&self) -> bool {
        match self.kind() {
            Kind::Float => self.elbyte <= 8,
            Kind::BFloat16 | Kind::Complex => true,
            _ => false,
        }
    }

    /// Whether values are integers that the LEB128 variant may encode.
    pub fn is_leb128_capable(&self) -> bool {
        matches!(self.kind(), Kind::Int | Kind::UInt | Kind::Bool)
    }

    /// The width in bytes of the scalar that is byte-swapped between byte orders,
    /// or `None` when the layout is unknown (user and reserved types wider than a byte).
    pub fn swap_unit(&self) -> Option<usize> {
        match self.kind() {
            Kind::Int | Kind::UInt | Kind::Float | Kind::BFloat16 | Kind::Bool => {
                Some(self.elbyte as usize)
            }
            Kind::Complex => Some(self.elbyte as usize / 2),
            Kind::BitChunk => Some(8),
            Kind::User | Kind::Other if self.elbyte == 1 => Some(1),
            Kind::User | Kind::Other => None,
        }
    }

    /// Whether data of type `file` may be read as `self`. Types must be equal, except
    /// that Julia `Bool` bytes may be read as `u8`.
    pub fn accepts(&self, file: DType) -> bool {
        *self == file || (*self == DType::U8 && file == DType::BOOL)
    }

    /// The display name: `int8`…`uint128`, `float16`…`float128`, `complex32`…,
    /// `bfloat16`, `bool`, `user<N>`, or `eltype<E>x<B>` for a reserved pair.
    pub fn name(&self) -> String {
        if self.eltype == 0 {
            return format!("user<{}>", self.elbyte);
        }
        match NAMES.iter().find(|(_, _, d)| d == self) {
            Some((name, _, _)) => (*name).to_string(),
            None => format!("eltype{}x{}", self.eltype, self.elbyte),
        }
    }

    /// The short code (`f32`, `c64`, ...), if the type has one.
    pub fn short_code(&self) -> Option<&'static str> {
        NAMES.iter().find(|(_, _, d)| d == self).map(|(_, c, _)| *c)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
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
    fn kinds_follow_the_table() {
        assert_eq!(DType::C64.kind(), Kind::Complex);
        assert_eq!(
            DType {
                eltype: 1,
                elbyte: 3
            }
            .kind(),
            Kind::Other
        );
        assert_eq!(
            DType {
                eltype: 4,
                elbyte: 2
            }
            .kind(),
            Kind::Other
        );
        assert_eq!(DType::F128.kind(), Kind::Float);
        assert_eq!(
            DType {
                eltype: 6,
                elbyte: 4
            }
            .kind(),
            Kind::Other
        );
        assert_eq!(DType::C64.swap_unit(), Some(4));
        assert_eq!(DType::user(12).swap_unit(), None);
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
