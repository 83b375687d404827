//! The element type itself: [`DType`] (the header's `eltype` and `elbyte`), what
//! its code means ([`Kind`]), its constants and its names. It names nothing else in
//! the crate, so that the error type can hold it.

use std::fmt;

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
pub(super) const NAMES: &[(&str, &str, DType)] = &[
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
