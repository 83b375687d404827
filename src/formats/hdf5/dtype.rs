//! HDF5 datatypes as NumPy descrs, which the rest of rastore reads (the `.npy` path, the
//! structured types of `.ra` trailers, Zarr v2): integers and floats of either byte
//! order, h5py's complex (a compound of two floats `r`, `i`; MATLAB's `real`, `imag`),
//! h5py's bool (an enum `FALSE`/`TRUE` of int8), other enums as their integers,
//! bitfields as unsigned integers, fixed-length strings as `|S{n}` (as h5py reads
//! them), opaque types as `|V{n}`, compounds as structured types (padding kept as
//! unnamed void fields), array members as sub-array fields. What has no fixed-size
//! NumPy equivalent (variable-length strings and sequences, references) is refused by
//! name.

use hdf5_reader::messages::datatype::VarLenKind;
use hdf5_reader::{ByteOrder, Datatype, ReferenceType, StringSize};

use crate::descr::{Descr, Field};

/// Deepest nesting of compound and array types taken.
const MAX_DEPTH: usize = 16;

/// The element of a dataset: its descr, and, for an HDF5 array type, the array's
/// dims, which h5py appends to the dataset's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Elem {
    /// One element's NumPy descr.
    pub descr: Descr,
    /// The dims an array type adds after the dataset's own (C order).
    pub extra: Vec<u64>,
}

/// What a type is, in a message that refuses it: `variable-length strings`.
pub type Refusal = String;

/// The element of a dataset of type `dt`.
pub fn elem(dt: &Datatype) -> Result<Elem, Refusal> {
    let mut extra = Vec::new();
    let mut base = dt;
    while let Datatype::Array { base: b, dims } = base {
        if extra.len() + dims.len() > 32 {
            return Err("an array type of more than 32 dims".into());
        }
        extra.extend_from_slice(dims);
        base = b;
    }
    Ok(Elem {
        descr: descr(base, 0)?,
        extra,
    })
}

fn order(o: ByteOrder, size: u64) -> char {
    match (size, o) {
        (1, _) => '|',
        (_, ByteOrder::LittleEndian) => '<',
        (_, ByteOrder::BigEndian) => '>',
    }
}

/// The NumPy descr of `dt`.
pub fn descr(dt: &Datatype, depth: usize) -> Result<Descr, Refusal> {
    if depth > MAX_DEPTH {
        return Err(format!("types nested more than {MAX_DEPTH} deep"));
    }
    let simple = |order, kind, count| Descr::Simple { order, kind, count };
    Ok(match dt {
        Datatype::FixedPoint {
            size,
            signed,
            byte_order,
        } if matches!(size, 1 | 2 | 4 | 8) => {
            let n = u64::from(*size);
            simple(order(*byte_order, n), if *signed { 'i' } else { 'u' }, n)
        }
        Datatype::Bitfield { size, byte_order } if matches!(size, 1 | 2 | 4 | 8) => {
            let n = u64::from(*size);
            simple(order(*byte_order, n), 'u', n)
        }
        Datatype::FloatingPoint { size, byte_order } if matches!(size, 2 | 4 | 8) => {
            let n = u64::from(*size);
            simple(order(*byte_order, n), 'f', n)
        }
        Datatype::FixedPoint { size, .. } | Datatype::Bitfield { size, .. } => {
            return Err(format!("{size}-byte integers"))
        }
        Datatype::FloatingPoint { size, .. } => return Err(format!("{size}-byte floats")),
        Datatype::String {
            size: StringSize::Fixed(n),
            ..
        } if *n > 0 => simple('|', 'S', u64::from(*n)),
        Datatype::String {
            size: StringSize::Fixed(_),
            ..
        } => return Err("strings of length 0".into()),
        Datatype::String {
            size: StringSize::Variable,
            ..
        }
        | Datatype::VarLen {
            kind: VarLenKind::String,
            ..
        } => return Err("variable-length strings".into()),
        Datatype::VarLen { .. } => return Err("variable-length sequences".into()),
        Datatype::Reference {
            ref_type: ReferenceType::Object,
            ..
        } => return Err("object references".into()),
        Datatype::Reference { .. } => return Err("region references".into()),
        Datatype::Opaque { size, .. } if *size > 0 => simple('|', 'V', u64::from(*size)),
        Datatype::Opaque { .. } => return Err("opaque types of 0 bytes".into()),
        Datatype::Enum { base, members } => {
            let bool_like = matches!(**base, Datatype::FixedPoint { size: 1, .. })
                && members.len() == 2
                && members
                    .iter()
                    .any(|m| m.name == "FALSE" && m.value.as_slice() == [0])
                && members
                    .iter()
                    .any(|m| m.name == "TRUE" && m.value.as_slice() == [1]);
            if bool_like {
                simple('|', 'b', 1)
            } else {
                descr(base, depth + 1)?
            }
        }
        Datatype::Compound { size, fields } => compound(u64::from(*size), fields, depth)?,
        Datatype::Array { base, dims } => {
            // An array outside a compound: its own struct of one sub-array field.
            Descr::Struct(vec![Field {
                name: "f0".into(),
                descr: descr(base, depth + 1)?,
                shape: dims.clone(),
            }])
        }
    })
}

/// A compound type: h5py's and MATLAB's complex numbers, else a structured type
/// whose fields lie at the compound's offsets (gaps as unnamed void fields).
fn compound(
    size: u64,
    fields: &[hdf5_reader::CompoundField],
    depth: usize,
) -> Result<Descr, Refusal> {
    if let [a, b] = fields {
        let names = (a.name.as_str(), b.name.as_str());
        if let (
            ("r", "i") | ("real", "imag"),
            Datatype::FloatingPoint {
                size: s,
                byte_order: oa,
            },
            Datatype::FloatingPoint {
                size: t,
                byte_order: ob,
            },
        ) = (names, &a.datatype, &b.datatype)
        {
            let s64 = u64::from(*s);
            if s == t
                && oa == ob
                && matches!(s, 4 | 8)
                && a.byte_offset == 0
                && u64::from(b.byte_offset) == s64
                && size == 2 * s64
            {
                return Ok(Descr::Simple {
                    order: order(*oa, 2),
                    kind: 'c',
                    count: 2 * s64,
                });
            }
        }
    }
    let mut sorted: Vec<&hdf5_reader::CompoundField> = fields.iter().collect();
    sorted.sort_by_key(|f| f.byte_offset);
    let mut out = Vec::new();
    let mut at = 0u64;
    let pad = |n: u64| Field {
        name: String::new(),
        descr: Descr::Simple {
            order: '|',
            kind: 'V',
            count: n,
        },
        shape: Vec::new(),
    };
    for f in sorted {
        let off = u64::from(f.byte_offset);
        if off < at {
            return Err(format!(
                "a compound whose member {:?} overlaps another",
                f.name
            ));
        }
        if off > at {
            out.push(pad(off - at));
        }
        let (d, shape) = match &f.datatype {
            Datatype::Array { base, dims } => (descr(base, depth + 1)?, dims.clone()),
            other => (descr(other, depth + 1)?, Vec::new()),
        };
        let field = Field {
            name: f.name.clone(),
            descr: d,
            shape,
        };
        let bytes = Descr::Struct(vec![field.clone()])
            .itemsize()
            .map_err(|_| format!("a compound member {:?} too large", f.name))?;
        at = off
            .checked_add(bytes)
            .ok_or_else(|| format!("a compound member {:?} too large", f.name))?;
        out.push(field);
    }
    if at > size {
        return Err(format!(
            "a compound of {size} bytes whose members end at byte {at}"
        ));
    }
    if at < size {
        out.push(pad(size - at));
    }
    if out.is_empty() {
        return Err("a compound with no members".into());
    }
    Ok(Descr::Struct(out))
}

/// One number, as a numeric type's element bytes hold it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Complex(f64, f64),
}

/// The number `bytes` (one element of the simple type `order`, `kind`, `count`: its
/// bytes in its byte order) hold; `None` for a type of no numbers, or too few bytes.
pub fn number(order: char, kind: char, count: u64, bytes: &[u8]) -> Option<Number> {
    let n = usize::try_from(count).ok()?;
    let mut b = bytes.get(..n)?.to_vec();
    let big = order == '>';
    let word = |b: &[u8]| {
        let mut w = [0u8; 8];
        let k = b.len().min(8);
        if big {
            let mut r = b[..k].to_vec();
            r.reverse();
            w[..k].copy_from_slice(&r);
        } else {
            w[..k].copy_from_slice(&b[..k]);
        }
        u64::from_le_bytes(w)
    };
    let float = |b: &[u8]| match b.len() {
        2 => Some(f64::from(half::f16::from_bits(word(b) as u16))),
        4 => Some(f64::from(f32::from_bits(word(b) as u32))),
        8 => Some(f64::from_bits(word(b))),
        _ => None,
    };
    Some(match kind {
        'b' => Number::Bool(b[0] != 0),
        'u' if n <= 8 => Number::UInt(word(&b)),
        'i' if (1..=8).contains(&n) => {
            let shift = 64 - 8 * n as u32;
            Number::Int(((word(&b) << shift) as i64) >> shift)
        }
        'f' => Number::Float(float(&b)?),
        'c' => {
            let (re, im) = b.split_at_mut(n / 2);
            Number::Complex(float(re)?, float(im)?)
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdf5_reader::{CompoundField, EnumMember};

    fn float(size: u8, o: ByteOrder) -> Datatype {
        Datatype::FloatingPoint {
            size,
            byte_order: o,
        }
    }

    #[test]
    fn types_as_numpy_reads_them() {
        let le = ByteOrder::LittleEndian;
        let be = ByteOrder::BigEndian;
        let d = |dt: &Datatype| descr(dt, 0).unwrap().to_python();
        assert_eq!(d(&float(4, be)), "'>f4'");
        let c = |n: &str, m: &str, o| Datatype::Compound {
            size: 16,
            fields: vec![
                CompoundField {
                    name: n.into(),
                    byte_offset: 0,
                    datatype: float(8, o),
                },
                CompoundField {
                    name: m.into(),
                    byte_offset: 8,
                    datatype: float(8, o),
                },
            ],
        };
        assert_eq!(d(&c("r", "i", be)), "'>c16'");
        assert_eq!(d(&c("real", "imag", le)), "'<c16'");
        assert_eq!(d(&c("x", "y", le)), "[('x', '<f8'), ('y', '<f8')]");
        let b = Datatype::Enum {
            base: Box::new(Datatype::FixedPoint {
                size: 1,
                signed: true,
                byte_order: le,
            }),
            members: vec![
                EnumMember {
                    name: "FALSE".into(),
                    value: vec![0],
                },
                EnumMember {
                    name: "TRUE".into(),
                    value: vec![1],
                },
            ],
        };
        assert_eq!(d(&b), "'|b1'");
        let padded = Datatype::Compound {
            size: 12,
            fields: vec![
                CompoundField {
                    name: "b".into(),
                    byte_offset: 4,
                    datatype: Datatype::Array {
                        base: Box::new(Datatype::FixedPoint {
                            size: 2,
                            signed: false,
                            byte_order: be,
                        }),
                        dims: vec![3],
                    },
                },
                CompoundField {
                    name: "a".into(),
                    byte_offset: 0,
                    datatype: Datatype::FixedPoint {
                        size: 1,
                        signed: true,
                        byte_order: le,
                    },
                },
            ],
        };
        let p = descr(&padded, 0).unwrap();
        assert_eq!(
            p.to_python(),
            "[('a', '|i1'), ('', '|V3'), ('b', '>u2', (3,)), ('', '|V2')]"
        );
        assert_eq!(p.itemsize().unwrap(), 12);
        let e = elem(&Datatype::Array {
            base: Box::new(float(4, le)),
            dims: vec![2, 3],
        })
        .unwrap();
        assert_eq!(
            (e.descr.to_python().as_str(), e.extra),
            ("'<f4'", vec![2, 3])
        );
        let vlen = Datatype::String {
            size: StringSize::Variable,
            encoding: hdf5_reader::StringEncoding::Utf8,
            padding: hdf5_reader::StringPadding::NullTerminate,
        };
        assert_eq!(descr(&vlen, 0).unwrap_err(), "variable-length strings");
        let r = Datatype::Reference {
            ref_type: ReferenceType::DatasetRegion,
            size: 12,
        };
        assert_eq!(descr(&r, 0).unwrap_err(), "region references");
    }
}
