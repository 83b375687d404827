//! Single elements as values: decode from native-order bytes, print, compare.
//! Used by `ra cat`, `ra diff` and the PNG writer's min..max scaling.

use std::fmt;

use half::{bf16, f16};

use crate::dtype::{DType, Kind};

/// One element's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A signed integer.
    Int(i128),
    /// An unsigned integer.
    UInt(u128),
    /// A real float (f16, bf16, f32, f64 widened); `true` when at most 32 bits wide,
    /// so it prints with the digits its own width needs.
    Float(f64, bool),
    /// A complex number, parts widened, and whether the parts are at most 32 bits wide.
    Complex(f64, f64, bool),
    /// A Julia Bool.
    Bool(bool),
    /// Anything else, as bytes.
    Bytes(Vec<u8>),
}

fn arr<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

fn float(width: usize, b: &[u8]) -> f64 {
    match width {
        2 => f16::from_ne_bytes(arr(b)).to_f64(),
        4 => f64::from(f32::from_ne_bytes(arr(b))),
        _ => f64::from_ne_bytes(arr(b)),
    }
}

impl Value {
    /// Decodes one element of `dtype` from `elbyte` native-order bytes.
    pub fn decode(dtype: DType, b: &[u8]) -> Value {
        let w = dtype.elbyte as usize;
        if b.len() < w {
            return Value::Bytes(b.to_vec());
        }
        let b = &b[..w];
        match dtype.kind() {
            Kind::Int => Value::Int(match w {
                1 => i8::from_ne_bytes(arr(b)).into(),
                2 => i16::from_ne_bytes(arr(b)).into(),
                4 => i32::from_ne_bytes(arr(b)).into(),
                8 => i64::from_ne_bytes(arr(b)).into(),
                _ => i128::from_ne_bytes(arr(b)),
            }),
            Kind::UInt => Value::UInt(match w {
                1 => b[0].into(),
                2 => u16::from_ne_bytes(arr(b)).into(),
                4 => u32::from_ne_bytes(arr(b)).into(),
                8 => u64::from_ne_bytes(arr(b)).into(),
                _ => u128::from_ne_bytes(arr(b)),
            }),
            Kind::Float if w <= 8 => Value::Float(float(w, b), w <= 4),
            Kind::Complex => Value::Complex(float(w / 2, b), float(w / 2, &b[w / 2..]), w <= 8),
            Kind::BFloat16 => Value::Float(bf16::from_ne_bytes(arr(b)).to_f64(), true),
            Kind::Bool if b[0] <= 1 => Value::Bool(b[0] == 1),
            _ => Value::Bytes(b.to_vec()),
        }
    }

    /// The value as a real number, where it is one (complex: `None`).
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::Int(v) => Some(v as f64),
            Value::UInt(v) => Some(v as f64),
            Value::Float(v, _) => Some(v),
            Value::Bool(v) => Some(f64::from(u8::from(v))),
            Value::Complex(..) | Value::Bytes(_) => None,
        }
    }

    /// `|a - b|` for numbers (the modulus for complex), `None` otherwise.
    pub fn abs_diff(&self, other: &Value) -> Option<f64> {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => Some(a.abs_diff(*b) as f64),
            (Value::UInt(a), Value::UInt(b)) => Some(a.abs_diff(*b) as f64),
            (Value::Complex(ar, ai, _), Value::Complex(br, bi, _)) => {
                Some((ar - br).hypot(ai - bi))
            }
            _ => Some((self.as_f64()? - other.as_f64()?).abs()),
        }
    }

    /// The magnitude used to put any numeric array on an image scale (complex: modulus).
    pub fn magnitude(&self) -> Option<f64> {
        match *self {
            Value::Complex(re, im, _) => Some(re.hypot(im)),
            _ => self.as_f64(),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Int(v) => write!(f, "{v}"),
            Value::UInt(v) => write!(f, "{v}"),
            Value::Float(v, narrow) => real(f, *v, *narrow),
            Value::Complex(re, im, narrow) => {
                real(f, *re, *narrow)?;
                f.write_str(if im.is_sign_negative() { "-" } else { "+" })?;
                real(f, im.abs(), *narrow)?;
                f.write_str("i")
            }
            Value::Bool(v) => write!(f, "{v}"),
            Value::Bytes(b) => {
                f.write_str("0x")?;
                b.iter().try_for_each(|x| write!(f, "{x:02x}"))
            }
        }
    }
}

/// Prints a float with the shortest digits that round-trip at its own width.
fn real(f: &mut fmt::Formatter<'_>, v: f64, narrow: bool) -> fmt::Result {
    if narrow {
        write!(f, "{}", v as f32)
    } else {
        write!(f, "{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_and_prints() {
        let c = [0f32.to_ne_bytes(), (-0.5f32).to_ne_bytes()].concat();
        assert_eq!(Value::decode(DType::C64, &c).to_string(), "0-0.5i");
        let third = [1f32.to_ne_bytes(), (1.0f32 / 3.0).to_ne_bytes()].concat();
        assert_eq!(
            Value::decode(DType::C64, &third).to_string(),
            "1+0.33333334i"
        );
        let h = f16::from_f32(1.5).to_ne_bytes();
        assert_eq!(Value::decode(DType::F16, &h).to_string(), "1.5");
        assert_eq!(
            Value::decode(DType::I16, &(-3i16).to_ne_bytes()).to_string(),
            "-3"
        );
        assert_eq!(Value::decode(DType::BOOL, &[1]).to_string(), "true");
        assert_eq!(
            Value::decode(DType::user(2), &[1, 255]).to_string(),
            "0x01ff"
        );
        let a = Value::decode(DType::U8, &[3]);
        let b = Value::decode(DType::U8, &[250]);
        assert_eq!(a.abs_diff(&b), Some(247.0));
    }
}
