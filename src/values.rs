//! Single elements as values: decode from native-order bytes, print, compare.
//! Used by `ra cat`, `ra diff` and the PNG writer's min..max scaling.
//!
//! Comparison is NumPy's `isclose`: `|a - b| <= atol + rtol·|b|`, `0.0 == -0.0`, NaN
//! equal to NaN only when asked, an infinity equal only to itself. Integers are
//! compared exactly: their difference is an exact integer, and the tolerance test is
//! done in exact arithmetic, so that `2^64 - 1` and `2^64 - 2` differ whatever `f64`
//! would round them to.

use std::cmp::Ordering;
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

/// Whether `b`, one element of `dtype` in native order, is a NaN (a complex one
/// when either part is), as [`Value::decode`] would find it. Two elements with the
/// same bytes compare equal, under any tolerance, unless this is true of them.
pub fn is_nan(dtype: DType, b: &[u8]) -> bool {
    let w = dtype.elbyte as usize;
    if b.len() < w {
        return false;
    }
    match dtype.kind() {
        Kind::Float if w <= 8 => float(w, b).is_nan(),
        Kind::Complex => float(w / 2, b).is_nan() || float(w / 2, &b[w / 2..]).is_nan(),
        Kind::BFloat16 => bf16::from_ne_bytes(arr(b)).is_nan(),
        _ => false,
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

    /// Compares `self` (NumPy's `a`) with `other` (`b`) as NumPy's `isclose(a, b)`
    /// does, with the tolerance relative to `|b|`. Values of different kinds, and
    /// elements that are not numbers, are close only when equal.
    pub fn compare(&self, other: &Value, tol: Tolerance) -> Compared {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => exact(a.abs_diff(*b), b.unsigned_abs(), tol),
            (Value::UInt(a), Value::UInt(b)) => exact(a.abs_diff(*b), *b, tol),
            (Value::Bool(a), Value::Bool(b)) => exact(u128::from(a != b), u128::from(*b), tol),
            (Value::Float(a, _), Value::Float(b, _)) => real_cmp(*a, *b, tol),
            (Value::Complex(ar, ai, _), Value::Complex(br, bi, _)) => {
                let (a_nan, b_nan) = (ar.is_nan() || ai.is_nan(), br.is_nan() || bi.is_nan());
                if a_nan || b_nan {
                    return nan(a_nan, b_nan, tol);
                }
                if ar == br && ai == bi {
                    return Compared::Close;
                }
                let d = (ar - br).hypot(ai - bi);
                let finite = br.is_finite() && bi.is_finite();
                within(d, br.hypot(*bi), finite, tol)
            }
            (a, b) if a == b => Compared::Close,
            _ => Compared::Far(None),
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

/// How close two elements must be to count as equal, as NumPy's `isclose`:
/// `|a - b| <= atol + rtol·|b|`; NaN equals NaN only with `equal_nan`. The default
/// (both tolerances 0) asks for equal values.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tolerance {
    /// Relative to `|b|`; finite and at least 0.
    pub rtol: f64,
    /// Absolute; finite and at least 0.
    pub atol: f64,
    /// Whether NaN equals NaN (NumPy's `equal_nan`).
    pub equal_nan: bool,
}

/// The verdict on one pair of elements.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Compared {
    /// Equal, or within the tolerance.
    Close,
    /// Not close: `|a - b|`, where it is a number.
    Far(Option<Delta>),
    /// One or both are NaN, and they do not count as equal: which ones are.
    Nan {
        /// `a` is NaN.
        a: bool,
        /// `b` is NaN.
        b: bool,
    },
}

/// `|a - b|` of two elements that are not close: exact for integers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Delta {
    /// The exact difference of two integers (or Bools).
    Exact(u128),
    /// The difference of two floats (the modulus for complex), in `f64`.
    Float(f64),
}

impl PartialOrd for Delta {
    fn partial_cmp(&self, other: &Delta) -> Option<Ordering> {
        match (self, other) {
            (Delta::Exact(a), Delta::Exact(b)) => a.partial_cmp(b),
            (Delta::Float(a), Delta::Float(b)) => a.partial_cmp(b),
            _ => None,
        }
    }
}

impl fmt::Display for Delta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Delta::Exact(d) => write!(f, "{d}"),
            Delta::Float(d) => write!(f, "{d}"),
        }
    }
}

fn nan(a: bool, b: bool, tol: Tolerance) -> Compared {
    if a && b && tol.equal_nan {
        Compared::Close
    } else {
        Compared::Nan { a, b }
    }
}

/// Two reals as `isclose`: equal, or `b` finite and `|a - b|` within the tolerance.
fn real_cmp(a: f64, b: f64, tol: Tolerance) -> Compared {
    if a.is_nan() || b.is_nan() {
        return nan(a.is_nan(), b.is_nan(), tol);
    }
    if a == b {
        return Compared::Close;
    }
    within((a - b).abs(), b.abs(), b.is_finite(), tol)
}

fn within(d: f64, b_abs: f64, b_finite: bool, tol: Tolerance) -> Compared {
    if b_finite && d <= tol.atol + tol.rtol * b_abs {
        Compared::Close
    } else {
        Compared::Far(Some(Delta::Float(d)))
    }
}

/// Two integers `d` apart, `b_abs` the magnitude of `b`: close when
/// `d <= atol + rtol·b_abs`, decided in exact arithmetic.
fn exact(d: u128, b_abs: u128, tol: Tolerance) -> Compared {
    if d == 0 || wide::le_tolerance(d, tol.atol, tol.rtol, b_abs) {
        Compared::Close
    } else {
        Compared::Far(Some(Delta::Exact(d)))
    }
}

/// Exact `d <= atol + rtol·b` for integers `d`, `b` and finite, non-negative `f64`
/// tolerances: every `f64` is `m·2^e`, so scaling both sides by a power of two makes
/// them integers, compared as little-endian limbs.
mod wide {
    use std::cmp::Ordering;

    /// `(m, e)` with `x = m·2^e`, for a finite `x >= 0`.
    fn parts(x: f64) -> (u64, i32) {
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i32;
        let frac = bits & ((1 << 52) - 1);
        if exp == 0 {
            (frac, -1074)
        } else {
            (frac | 1 << 52, exp - 1075)
        }
    }

    /// An unsigned integer as little-endian 64-bit limbs.
    #[derive(Debug, Clone)]
    struct Big(Vec<u64>);

    impl Big {
        fn from_u128(v: u128) -> Big {
            Big(vec![v as u64, (v >> 64) as u64])
        }

        fn mul(&self, m: u64) -> Big {
            let mut out = Vec::with_capacity(self.0.len() + 1);
            let mut carry = 0u128;
            for &l in &self.0 {
                let p = u128::from(l) * u128::from(m) + carry;
                out.push(p as u64);
                carry = p >> 64;
            }
            out.push(carry as u64);
            Big(out)
        }

        fn shl(&self, s: u32) -> Big {
            let (limbs, bits) = ((s / 64) as usize, s % 64);
            let mut out = vec![0u64; limbs];
            let mut carry = 0u64;
            for &l in &self.0 {
                out.push(if bits == 0 { l } else { l << bits | carry });
                carry = if bits == 0 { 0 } else { l >> (64 - bits) };
            }
            out.push(carry);
            Big(out)
        }

        fn add(&self, o: &Big) -> Big {
            let n = self.0.len().max(o.0.len());
            let mut out = Vec::with_capacity(n + 1);
            let mut carry = false;
            for i in 0..n {
                let (a, b) = (
                    self.0.get(i).copied().unwrap_or(0),
                    o.0.get(i).copied().unwrap_or(0),
                );
                let (s1, c1) = a.overflowing_add(b);
                let (s2, c2) = s1.overflowing_add(u64::from(carry));
                out.push(s2);
                carry = c1 || c2;
            }
            out.push(u64::from(carry));
            Big(out)
        }

        fn cmp(&self, o: &Big) -> Ordering {
            let n = self.0.len().max(o.0.len());
            (0..n)
                .rev()
                .map(|i| {
                    let a = self.0.get(i).copied().unwrap_or(0);
                    a.cmp(&o.0.get(i).copied().unwrap_or(0))
                })
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        }
    }

    pub(super) fn le_tolerance(d: u128, atol: f64, rtol: f64, b: u128) -> bool {
        let terms: Vec<(Big, i32)> = [(atol, 1), (rtol, b)]
            .into_iter()
            .filter(|(t, factor)| *t > 0.0 && *factor > 0)
            .map(|(t, factor)| {
                let (m, e) = parts(t);
                (Big::from_u128(factor).mul(m), e)
            })
            .collect();
        // Scale by 2^s, s the largest negative exponent: every term an integer.
        let s = terms.iter().map(|(_, e)| (-e).max(0)).max().unwrap_or(0);
        let rhs = terms.iter().fold(Big(Vec::new()), |acc, (v, e)| {
            acc.add(&v.shl((e + s) as u32))
        });
        Big::from_u128(d).shl(s as u32).cmp(&rhs) != Ordering::Greater
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
        let exact = Tolerance::default();
        assert_eq!(a.compare(&b, exact), Compared::Far(Some(Delta::Exact(247))));
    }

    fn tol(rtol: f64, atol: f64) -> Tolerance {
        Tolerance {
            rtol,
            atol,
            equal_nan: false,
        }
    }

    #[test]
    fn isclose_semantics() {
        let f = |x: f64| Value::Float(x, false);
        // The tolerance is relative to |b|, whatever b's sign.
        assert_eq!(f(-1.0).compare(&f(-1.001), tol(0.1, 0.0)), Compared::Close);
        assert_eq!(
            f(0.0).compare(&f(-0.0), Tolerance::default()),
            Compared::Close
        );
        let nan = f(f64::NAN);
        assert_eq!(
            nan.compare(&nan, Tolerance::default()),
            Compared::Nan { a: true, b: true }
        );
        let equal_nan = Tolerance {
            equal_nan: true,
            ..Tolerance::default()
        };
        assert_eq!(nan.compare(&nan, equal_nan), Compared::Close);
        assert_eq!(
            nan.compare(&f(1.0), equal_nan),
            Compared::Nan { a: true, b: false }
        );
        let inf = f(f64::INFINITY);
        assert_eq!(inf.compare(&inf, tol(1.0, 1.0)), Compared::Close);
        assert!(matches!(
            f(1.0).compare(&inf, tol(1.0, 1e300)),
            Compared::Far(_)
        ));
        assert!(matches!(
            inf.compare(&f(1.0), tol(1.0, 1e300)),
            Compared::Far(_)
        ));
    }

    proptest::proptest! {
        /// The bit test agrees with decoding, for every float type and any bits:
        /// NaN payloads, signalling NaNs, infinities, subnormals.
        #[test]
        fn is_nan_agrees_with_the_decoded_value(bits: [u8; 16]) {
            for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64, DType::C32, DType::C64, DType::C128] {
                let b = &bits[..dtype.elbyte as usize];
                let want = match Value::decode(dtype, b) {
                    Value::Float(x, _) => x.is_nan(),
                    Value::Complex(re, im, _) => re.is_nan() || im.is_nan(),
                    other => panic!("{dtype:?} decoded as {other:?}"),
                };
                proptest::prop_assert_eq!(is_nan(dtype, b), want, "{:?} {:?}", dtype, b);
            }
            proptest::prop_assert!(!is_nan(DType::I32, &bits[..4]));
        }
    }

    #[test]
    fn integers_compare_exactly() {
        let u = |x: u128| Value::UInt(x);
        let big = u(u64::MAX.into());
        let next = u(u128::from(u64::MAX) - 1);
        assert_eq!(
            big.compare(&next, Tolerance::default()),
            Compared::Far(Some(Delta::Exact(1)))
        );
        // 1 <= 0 + 2^-64·(2^64 - 2) is false by a hair; 1 <= 2^-64·(2^64) is true.
        let r = 2f64.powi(-64);
        assert!(matches!(big.compare(&next, tol(r, 0.0)), Compared::Far(_)));
        assert_eq!(
            next.compare(&u(1 << 64), tol(r, 0.0)),
            Compared::Far(Some(Delta::Exact(2)))
        );
        assert_eq!(big.compare(&u(1 << 64), tol(r, 0.0)), Compared::Close);
        // atol and rtol add up exactly: 3 <= 0.5 + 0.25·10.
        assert_eq!(u(13).compare(&u(10), tol(0.25, 0.5)), Compared::Close);
        assert!(matches!(
            u(14).compare(&u(10), tol(0.25, 0.5)),
            Compared::Far(_)
        ));
        let i = |x: i128| Value::Int(x);
        assert_eq!(
            i(i128::MIN).compare(&i(i128::MAX), Tolerance::default()),
            Compared::Far(Some(Delta::Exact(u128::MAX)))
        );
        assert_eq!(i(-5).compare(&i(-4), tol(0.25, 0.0)), Compared::Close);
        assert_eq!(
            i(1).compare(&i(0), tol(1e300, 5e-324)),
            Compared::Far(Some(Delta::Exact(1)))
        );
        assert_eq!(i(1).compare(&i(0), tol(0.0, 1.0)), Compared::Close);
    }
}
