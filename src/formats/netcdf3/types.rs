//! The external types of netCDF classic files (`nc_type`): their codes, sizes, the
//! RawArray type of each, and their big-endian values as attribute [`Values`].

use crate::cdm::Values;
use crate::descr::Descr;
use crate::dtype::DType;

/// An external type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NcType {
    /// `NC_BYTE`: signed 8-bit.
    Byte,
    /// `NC_CHAR`: 8-bit characters.
    Char,
    /// `NC_SHORT`.
    Short,
    /// `NC_INT`.
    Int,
    /// `NC_FLOAT`.
    Float,
    /// `NC_DOUBLE`.
    Double,
    /// `NC_UBYTE` (CDF-5).
    UByte,
    /// `NC_USHORT` (CDF-5).
    UShort,
    /// `NC_UINT` (CDF-5).
    UInt,
    /// `NC_INT64` (CDF-5).
    Int64,
    /// `NC_UINT64` (CDF-5).
    UInt64,
}

impl NcType {
    /// The type of code `code`, if a file of CDF-5 (`data64`) or not may hold it.
    pub fn of_code(code: u32, data64: bool) -> Option<NcType> {
        let t = match code {
            1 => NcType::Byte,
            2 => NcType::Char,
            3 => NcType::Short,
            4 => NcType::Int,
            5 => NcType::Float,
            6 => NcType::Double,
            7 => NcType::UByte,
            8 => NcType::UShort,
            9 => NcType::UInt,
            10 => NcType::Int64,
            11 => NcType::UInt64,
            _ => return None,
        };
        (data64 || code <= 6).then_some(t)
    }

    /// Bytes of one value.
    pub fn size(self) -> u64 {
        match self {
            NcType::Byte | NcType::Char | NcType::UByte => 1,
            NcType::Short | NcType::UShort => 2,
            NcType::Int | NcType::UInt | NcType::Float => 4,
            NcType::Double | NcType::Int64 | NcType::UInt64 => 8,
        }
    }

    /// Its name in the netCDF C library (`NC_FLOAT`).
    pub fn name(self) -> &'static str {
        match self {
            NcType::Byte => "NC_BYTE",
            NcType::Char => "NC_CHAR",
            NcType::Short => "NC_SHORT",
            NcType::Int => "NC_INT",
            NcType::Float => "NC_FLOAT",
            NcType::Double => "NC_DOUBLE",
            NcType::UByte => "NC_UBYTE",
            NcType::UShort => "NC_USHORT",
            NcType::UInt => "NC_UINT",
            NcType::Int64 => "NC_INT64",
            NcType::UInt64 => "NC_UINT64",
        }
    }

    /// The RawArray type of its values: characters are opaque bytes, NumPy's `|S1`.
    pub fn dtype(self) -> DType {
        match self {
            NcType::Byte => DType::I8,
            NcType::Char => DType::user(1),
            NcType::Short => DType::I16,
            NcType::Int => DType::I32,
            NcType::Float => DType::F32,
            NcType::Double => DType::F64,
            NcType::UByte => DType::U8,
            NcType::UShort => DType::U16,
            NcType::UInt => DType::U32,
            NcType::Int64 => DType::I64,
            NcType::UInt64 => DType::U64,
        }
    }

    /// The NumPy type of its values as stored: big-endian (`>f4`), characters `|S1`.
    pub fn descr(self) -> Descr {
        let (kind, order) = match self {
            NcType::Char => ('S', '|'),
            NcType::Byte => ('i', '|'),
            NcType::UByte => ('u', '|'),
            NcType::Short | NcType::Int | NcType::Int64 => ('i', '>'),
            NcType::UShort | NcType::UInt | NcType::UInt64 => ('u', '>'),
            NcType::Float | NcType::Double => ('f', '>'),
        };
        Descr::Simple {
            order,
            kind,
            count: self.size(),
        }
    }

    /// The big-endian `bytes` (whole values) as attribute values; characters as text
    /// (see [`text`]).
    pub fn values(self, bytes: &[u8]) -> Values {
        fn be<const N: usize, T>(bytes: &[u8], f: fn([u8; N]) -> T) -> Vec<T> {
            bytes
                .chunks_exact(N)
                .map(|c| f(c.try_into().unwrap_or([0; N])))
                .collect()
        }
        match self {
            NcType::Char => Values::Text(text(bytes)),
            NcType::Byte => Values::I8(bytes.iter().map(|&b| b as i8).collect()),
            NcType::UByte => Values::U8(bytes.to_vec()),
            NcType::Short => Values::I16(be(bytes, i16::from_be_bytes)),
            NcType::UShort => Values::U16(be(bytes, u16::from_be_bytes)),
            NcType::Int => Values::I32(be(bytes, i32::from_be_bytes)),
            NcType::UInt => Values::U32(be(bytes, u32::from_be_bytes)),
            NcType::Int64 => Values::I64(be(bytes, i64::from_be_bytes)),
            NcType::UInt64 => Values::U64(be(bytes, u64::from_be_bytes)),
            NcType::Float => Values::F32(be(bytes, f32::from_be_bytes)),
            NcType::Double => Values::F64(be(bytes, f64::from_be_bytes)),
        }
    }
}

/// An `NC_CHAR` attribute's characters as text, as netCDF4-python gives them: UTF-8
/// (an invalid sequence replaced by U+FFFD), with trailing NULs (C's terminators,
/// which some writers count) dropped.
pub fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_sizes_and_values() {
        assert_eq!(NcType::of_code(5, false), Some(NcType::Float));
        assert_eq!(NcType::of_code(10, false), None);
        assert_eq!(NcType::of_code(10, true), Some(NcType::Int64));
        assert_eq!(NcType::of_code(0, true), None);
        assert_eq!(NcType::of_code(12, true), None);
        assert_eq!(NcType::Double.size(), 8);
        assert_eq!(NcType::Float.descr().to_python(), "'>f4'");
        assert_eq!(NcType::Char.descr().to_python(), "'|S1'");
        assert_eq!(
            NcType::Short.values(&[0xff, 0xfe, 0, 3]),
            Values::I16(vec![-2, 3])
        );
        assert_eq!(NcType::Char.values(b"K\0\0"), Values::Text("K".into()));
        assert_eq!(text(b"a\xffb"), "a\u{fffd}b");
    }
}
