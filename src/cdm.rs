//! The netCDF data model (Unidata's Common Data Model, as far as NetCDF-3 and NetCDF-4
//! files use it), shared by the netCDF readers: named variables, each with its
//! dimensions' names and its attributes, and the dataset's own attributes; and how
//! such a dataset becomes a dataset folder (FORMAT.md §10), a variable's trailer and
//! the dataset's `dataset.yaml`.
//!
//! A reader fills the model ([`Dataset`], [`Variable`], [`Attribute`]); the model
//! gives each variable's NDL trailer ([`Variable::trailer`]: its `name`, `dimcoords`
//! naming its dims, its attributes) and the dataset's attributes
//! ([`Dataset::attributes_doc`], [`Dataset::attributes_json`]).
//!
//! Attributes keep their types: numbers are NDL numbers (one value a scalar, several a
//! list, as netCDF4-python and xarray show them), text an NDL string, and the
//! `attribute_types` entry beside `attributes` names the type of every numeric one
//! (`scale_factor: float32`), which YAML's numbers do not say. xarray's decoding
//! depends on them (a `float32` `scale_factor` decodes `int16` data to `float32`), and
//! `rastore`'s xarray backend gives them back as NumPy scalars and arrays of those types.

use serde_json::{Map, Value};
use yaml_rust2::yaml::Hash;
use yaml_rust2::Yaml;

use crate::descr::Descr;
use crate::dtype::DType;
use crate::error::{ErrorKind, Result};
use crate::header::Header;
use crate::ndl::{real, s};

/// The key, beside `attributes`, of the types of the numeric attributes.
pub const TYPES_KEY: &str = "attribute_types";

/// An attribute's values, as netCDF holds them: text, or numbers of one type.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// Characters (netCDF's `NC_CHAR`, or a string).
    Text(String),
    /// `NC_BYTE`.
    I8(Vec<i8>),
    /// `NC_UBYTE`.
    U8(Vec<u8>),
    /// `NC_SHORT`.
    I16(Vec<i16>),
    /// `NC_USHORT`.
    U16(Vec<u16>),
    /// `NC_INT`.
    I32(Vec<i32>),
    /// `NC_UINT`.
    U32(Vec<u32>),
    /// `NC_INT64`.
    I64(Vec<i64>),
    /// `NC_UINT64`.
    U64(Vec<u64>),
    /// `NC_FLOAT`.
    F32(Vec<f32>),
    /// `NC_DOUBLE`.
    F64(Vec<f64>),
}

/// One value as YAML: integers as integers (a `uint64` past `i64::MAX` as its decimal
/// text, which the type names), floats in NDL's spelling.
enum One {
    Int(i128),
    Real(f64),
}

impl One {
    fn yaml(&self) -> Yaml {
        match *self {
            One::Int(v) => match i64::try_from(v) {
                Ok(i) => Yaml::Integer(i),
                Err(_) => s(&v.to_string()),
            },
            One::Real(v) => real(v),
        }
    }

    fn json(&self) -> Value {
        match *self {
            One::Int(v) => match (i64::try_from(v), u64::try_from(v)) {
                (Ok(i), _) => Value::from(i),
                (_, Ok(u)) => Value::from(u),
                _ => Value::String(v.to_string()),
            },
            // JSON has no NaN or infinity: their names, which the type reads back.
            One::Real(v) if !v.is_finite() => Value::String(format!("{v}")),
            One::Real(v) => Value::from(v),
        }
    }
}

impl Values {
    /// The NDL (and NumPy) name of the numbers' type; `None` for text.
    pub fn type_name(&self) -> Option<&'static str> {
        Some(match self {
            Values::Text(_) => return None,
            Values::I8(_) => "int8",
            Values::U8(_) => "uint8",
            Values::I16(_) => "int16",
            Values::U16(_) => "uint16",
            Values::I32(_) => "int32",
            Values::U32(_) => "uint32",
            Values::I64(_) => "int64",
            Values::U64(_) => "uint64",
            Values::F32(_) => "float32",
            Values::F64(_) => "float64",
        })
    }

    /// The numbers, each as YAML and JSON render it (none for text).
    fn numbers(&self) -> Vec<One> {
        fn ints<T: Copy + Into<i128>>(v: &[T]) -> Vec<One> {
            v.iter().map(|&x| One::Int(x.into())).collect()
        }
        match self {
            Values::Text(_) => Vec::new(),
            Values::I8(v) => ints(v),
            Values::U8(v) => ints(v),
            Values::I16(v) => ints(v),
            Values::U16(v) => ints(v),
            Values::I32(v) => ints(v),
            Values::U32(v) => ints(v),
            Values::I64(v) => ints(v),
            Values::U64(v) => ints(v),
            Values::F32(v) => v.iter().map(|&x| One::Real(f64::from(x))).collect(),
            Values::F64(v) => v.iter().map(|&x| One::Real(x)).collect(),
        }
    }

    /// The values as NDL holds them: text a string, one number a scalar, several (or
    /// none) a list.
    pub fn yaml(&self) -> Yaml {
        if let Values::Text(t) = self {
            return s(t);
        }
        match self.numbers().as_slice() {
            [one] => one.yaml(),
            many => Yaml::Array(many.iter().map(One::yaml).collect()),
        }
    }

    /// The values as JSON (a Zarr group's attributes): as [`yaml`](Self::yaml), with
    /// NaN and the infinities as their names.
    pub fn json(&self) -> Value {
        if let Values::Text(t) = self {
            return Value::String(t.clone());
        }
        match self.numbers().as_slice() {
            [one] => one.json(),
            many => Value::Array(many.iter().map(One::json).collect()),
        }
    }
}

/// A named attribute.
#[derive(Debug, Clone, PartialEq)]
pub struct Attribute {
    /// Its name.
    pub name: String,
    /// Its values.
    pub values: Values,
}

/// Attributes as an NDL mapping, and the mapping of the numeric ones' types.
pub fn attributes_yaml(attrs: &[Attribute]) -> (Hash, Hash) {
    let mut values = Hash::new();
    let mut types = Hash::new();
    for a in attrs {
        values.insert(s(&a.name), a.values.yaml());
        if let Some(t) = a.values.type_name() {
            types.insert(s(&a.name), s(t));
        }
    }
    (values, types)
}

/// A variable: its type and shape, first axis first (as netCDF4-python shows it), its
/// dimensions' names in order, and its attributes.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// The NumPy type of elements RawArray keeps opaque (`|S1` characters).
    pub descr: Option<Descr>,
    /// Its shape.
    pub shape: Vec<u64>,
    /// The name of each of its dims.
    pub dims: Vec<String>,
    /// Its attributes, in the file's order.
    pub attributes: Vec<Attribute>,
}

impl Variable {
    /// Its NDL trailer: type and shape, `attributes` (and `attribute_types`), `name`,
    /// and `dimcoords` naming its dims. Attributes too large for a trailer
    /// ([`crate::ndl::MAX_TRAILER_YAML`]) are refused, naming the variable.
    pub fn trailer(&self) -> Result<Vec<u8>> {
        let header = Header::new(self.dtype, &self.shape)?;
        let (values, types) = attributes_yaml(&self.attributes);
        let mut extra = vec![("name".to_string(), s(&self.name))];
        if !types.is_empty() {
            extra.push((TYPES_KEY.to_string(), Yaml::Hash(types)));
        }
        extra.push(crate::ndl::dimcoords(&self.dims));
        let text =
            crate::ndl::labeled_trailer(&header, self.descr.as_ref(), Yaml::Hash(values), extra);
        if text.len() > crate::ndl::MAX_TRAILER_YAML {
            return Err(ErrorKind::Unsupported(format!(
                "the attributes of the variable {:?} take {} bytes of NDL, over the {} a \
                 trailer holds",
                self.name,
                text.len(),
                crate::ndl::MAX_TRAILER_YAML
            ))
            .into());
        }
        Ok(text)
    }
}

/// A dataset: its variables and its own (global) attributes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Dataset {
    /// Its attributes, in the file's order.
    pub attributes: Vec<Attribute>,
    /// Its variables, in the file's order.
    pub variables: Vec<Variable>,
}

impl Dataset {
    /// The variable named `name`.
    pub fn variable(&self, name: &str) -> Option<&Variable> {
        self.variables.iter().find(|v| v.name == name)
    }

    /// Its attributes as a Zarr group's (JSON, types dropped).
    pub fn attributes_json(&self) -> Map<String, Value> {
        self.attributes
            .iter()
            .map(|a| (a.name.clone(), a.values.json()))
            .collect()
    }

    /// Its `dataset.yaml` (FORMAT.md §10): `attributes`, and `attribute_types` for the
    /// numeric ones.
    pub fn attributes_doc(&self) -> String {
        let (values, types) = attributes_yaml(&self.attributes);
        let mut doc = Hash::new();
        doc.insert(s("attributes"), Yaml::Hash(values));
        if !types.is_empty() {
            doc.insert(s(TYPES_KEY), Yaml::Hash(types));
        }
        crate::ndl::to_text(&Yaml::Hash(doc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_keep_their_types_and_values() {
        let attrs = vec![
            Attribute {
                name: "scale_factor".into(),
                values: Values::F32(vec![0.1]),
            },
            Attribute {
                name: "valid_range".into(),
                values: Values::I16(vec![-5, 5]),
            },
            Attribute {
                name: "units".into(),
                values: Values::Text("K".into()),
            },
            Attribute {
                name: "big".into(),
                values: Values::U64(vec![u64::MAX]),
            },
            Attribute {
                name: "none".into(),
                values: Values::F64(vec![f64::NAN]),
            },
        ];
        let (values, types) = attributes_yaml(&attrs);
        // float32 0.1 exactly, as a float64 that reads back to it.
        assert_eq!(values[&s("scale_factor")], real(f64::from(0.1f32)));
        assert_eq!(
            values[&s("valid_range")],
            Yaml::Array(vec![Yaml::Integer(-5), Yaml::Integer(5)])
        );
        assert_eq!(values[&s("units")], s("K"));
        assert_eq!(values[&s("big")], s("18446744073709551615"));
        assert_eq!(types[&s("scale_factor")], s("float32"));
        assert_eq!(types[&s("big")], s("uint64"));
        assert!(!types.contains_key(&s("units")));
        let ds = Dataset {
            attributes: attrs,
            variables: Vec::new(),
        };
        let json = ds.attributes_json();
        assert_eq!(json["none"], Value::String("NaN".into()));
        assert_eq!(json["big"], Value::from(u64::MAX));
        let doc = ds.attributes_doc();
        assert!(doc.contains("attribute_types:"), "{doc}");
        assert!(doc.contains("scale_factor: float32"), "{doc}");
    }
}
