//! Zarr metadata as rastore reads and writes it: data types to and from RawArray types
//! (through NumPy descrs for the fixed-size types NumPy has), fill values, and
//! attributes to and from the NDL trailer. Zarr metadata is untrusted input: every
//! size in it is checked before anything is sized by it.

use serde_json::{json, Map, Value};
use yaml_rust2::yaml::Hash;
use yaml_rust2::Yaml;

use crate::descr::{Descr, Field};
use crate::dtype::{DType, Kind};
use crate::error::{Error, ErrorKind, Result};

pub use crate::codec::{base64_decode, base64_encode};

/// Most fields, and levels of nesting, a structured type may have.
const MAX_FIELDS: usize = 10_000;
const MAX_DEPTH: usize = 32;

/// The attribute that keeps a RawArray trailer whole in a Zarr array's attributes, so
/// that converting back gives the same trailer: the text, or `{"hex": "..."}` for a
/// trailer that is not UTF-8.
pub const TRAILER_KEY: &str = "rawarray_trailer";

/// What a Zarr array's elements are, as RawArray sees them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elem {
    /// A number, a Bool or a bfloat16: zarrs decodes it to native order.
    Plain(DType),
    /// A fixed-size NumPy type RawArray keeps as `user<N>` with its descr: strings
    /// (`S`, `U`), structured records.
    Fields(Descr),
    /// Raw bytes of this many per element (`r*`, `raw_bytes`): `user<N>`.
    Raw(u64),
}

impl Elem {
    /// Bytes per element in the store.
    pub fn itemsize(&self) -> Result<u64> {
        match self {
            Elem::Plain(d) => Ok(d.elbyte),
            Elem::Fields(d) => d.itemsize(),
            Elem::Raw(n) => Ok(*n),
        }
    }

    /// The RawArray element type.
    pub fn dtype(&self) -> Result<DType> {
        Ok(match self {
            Elem::Plain(d) => *d,
            _ => DType::user(self.itemsize()?),
        })
    }

    /// The NumPy descr the `.ra` trailer records (user types with fields only).
    pub fn descr(&self) -> Option<&Descr> {
        match self {
            Elem::Fields(d) => Some(d),
            _ => None,
        }
    }
}

fn bad(why: impl Into<String>) -> Error {
    Error::decode("zarr", why.into())
}

fn no_equivalent(what: &str) -> Error {
    ErrorKind::Unsupported(format!(
        "the Zarr data type {what} has no RawArray equivalent (strings of any length, \
         objects and datetimes have none)"
    ))
    .into()
}

/// `(v3 name, RawArray type, NumPy type string)` of the plain types.
const PLAIN: &[(&str, DType, &str)] = &[
    ("bool", DType::BOOL, "|b1"),
    ("int8", DType::I8, "|i1"),
    ("int16", DType::I16, "<i2"),
    ("int32", DType::I32, "<i4"),
    ("int64", DType::I64, "<i8"),
    ("uint8", DType::U8, "|u1"),
    ("uint16", DType::U16, "<u2"),
    ("uint32", DType::U32, "<u4"),
    ("uint64", DType::U64, "<u8"),
    ("float16", DType::F16, "<f2"),
    ("float32", DType::F32, "<f4"),
    ("float64", DType::F64, "<f8"),
    ("complex64", DType::C64, "<c8"),
    ("complex128", DType::C128, "<c16"),
    ("bfloat16", DType::BF16, ""),
];

/// The Zarr v2 (NumPy) type string of the Zarr v3 `data_type` `name`, little-endian,
/// where Zarr v2 has one.
pub fn v2_typestr(name: &str) -> Option<&'static str> {
    PLAIN
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, s)| *s)
        .filter(|s| !s.is_empty())
}

/// The element of a Zarr v3 `data_type`.
pub fn elem_v3(v: &Value) -> Result<Elem> {
    elem_v3_at(v, 0)
}

fn length_bytes(v: &Value, name: &str) -> Result<u64> {
    v["configuration"]["length_bytes"]
        .as_u64()
        .filter(|&n| n > 0)
        .ok_or_else(|| bad(format!("data type {name} without a positive length_bytes")))
}

fn elem_v3_at(v: &Value, depth: usize) -> Result<Elem> {
    if depth > MAX_DEPTH {
        return Err(bad("structured data type nested too deep"));
    }
    let name = match v {
        Value::String(s) => s.as_str(),
        Value::Object(o) => o.get("name").and_then(Value::as_str).unwrap_or_default(),
        _ => {
            return Err(bad(format!(
                "data_type {v} is neither a name nor an object"
            )))
        }
    };
    if let Some((_, d, _)) = PLAIN.iter().find(|(n, _, _)| *n == name) {
        return Ok(Elem::Plain(*d));
    }
    if let Some(bits) = name.strip_prefix('r').and_then(|b| b.parse::<u64>().ok()) {
        if bits == 0 || bits % 8 != 0 {
            return Err(bad(format!(
                "data type {name}: raw bits come in whole bytes"
            )));
        }
        return Ok(Elem::Raw(bits / 8));
    }
    match name {
        "null_terminated_bytes" => Ok(Elem::Fields(simple('|', 'S', length_bytes(v, name)?))),
        "fixed_length_utf32" => {
            let n = length_bytes(v, name)?;
            if n % 4 != 0 {
                return Err(bad(format!(
                    "{name}: {n} bytes are not whole UTF-32 characters"
                )));
            }
            Ok(Elem::Fields(simple('<', 'U', n / 4)))
        }
        "raw_bytes" => Ok(Elem::Raw(length_bytes(v, name)?)),
        "structured" | "struct" => {
            let fields = v["configuration"]["fields"]
                .as_array()
                .ok_or_else(|| bad(format!("{name} data type without fields")))?;
            if fields.is_empty() || fields.len() > MAX_FIELDS {
                return Err(bad(format!(
                    "{name} data type with {} fields",
                    fields.len()
                )));
            }
            let fields = fields
                .iter()
                .map(|f| {
                    let (name, ty) = match f {
                        Value::Array(p) if p.len() == 2 => (p[0].as_str(), &p[1]),
                        Value::Object(o) => {
                            (o.get("name").and_then(Value::as_str), &f["data_type"])
                        }
                        _ => (None, f),
                    };
                    let name = name.ok_or_else(|| bad(format!("field {f} has no name")))?;
                    let descr = match elem_v3_at(ty, depth + 1)? {
                        Elem::Plain(d) => plain_descr(d)?,
                        Elem::Fields(d) => d,
                        Elem::Raw(n) => simple('|', 'V', n),
                    };
                    Ok(Field {
                        name: name.to_string(),
                        descr,
                        shape: Vec::new(),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let d = Descr::Struct(fields);
            d.itemsize()?;
            Ok(Elem::Fields(d))
        }
        "" => Err(bad(format!("data_type {v} has no name"))),
        other => Err(no_equivalent(other)),
    }
}

fn simple(order: char, kind: char, count: u64) -> Descr {
    Descr::Simple { order, kind, count }
}

fn plain_descr(d: DType) -> Result<Descr> {
    match PLAIN.iter().find(|(_, t, s)| *t == d && !s.is_empty()) {
        Some((_, _, s)) => Descr::parse(&format!("'{s}'")),
        None => Err(no_equivalent(&format!("{d} in a structured field"))),
    }
}

/// The element of a Zarr v2 `dtype`: a NumPy type string or a list of fields.
pub fn elem_v2(v: &Value) -> Result<Elem> {
    let descr = descr_v2(v, 0)?;
    Ok(match &descr {
        Descr::Simple {
            kind: 'V', count, ..
        } => Elem::Raw(*count),
        Descr::Simple {
            kind: 'S' | 'U', ..
        }
        | Descr::Struct(_) => Elem::Fields(descr),
        Descr::Simple { .. } => Elem::Plain(descr.dtype()?),
    })
}

fn descr_v2(v: &Value, depth: usize) -> Result<Descr> {
    if depth > MAX_DEPTH {
        return Err(bad("structured dtype nested too deep"));
    }
    match v {
        Value::String(s) => match Descr::parse(&format!("'{}'", s.replace(['\'', '\\'], ""))) {
            Ok(d) if d.dtype().is_ok() => Ok(d),
            _ => Err(no_equivalent(s)),
        },
        Value::Array(fields) if !fields.is_empty() && fields.len() <= MAX_FIELDS => {
            let fields = fields
                .iter()
                .map(|f| {
                    let parts = f.as_array().filter(|p| p.len() == 2 || p.len() == 3);
                    let p = parts.ok_or_else(|| bad(format!("field {f} is not [name, dtype]")))?;
                    let name = p[0]
                        .as_str()
                        .ok_or_else(|| bad(format!("field {f} has no name")))?;
                    let shape = match p.get(2) {
                        None => Vec::new(),
                        Some(s) => s
                            .as_array()
                            .and_then(|d| d.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
                            .ok_or_else(|| bad(format!("field {name:?} has a bad shape")))?,
                    };
                    Ok(Field {
                        name: name.to_string(),
                        descr: descr_v2(&p[1], depth + 1)?,
                        shape,
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            let d = Descr::Struct(fields);
            d.itemsize()?;
            Ok(d)
        }
        other => Err(bad(format!("dtype {other} is not a NumPy type"))),
    }
}

/// A structured element as zarr-python stores it: its named fields packed one after
/// another, little-endian, no padding. `fields` are `(name, offset, size, swap unit)`
/// in the RawArray element (a swap unit above 1 for a big-endian field).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packing {
    /// The RawArray element's size.
    pub from: usize,
    /// The packed element's size.
    pub to: usize,
    fields: Vec<(usize, usize, usize)>,
}

impl Packing {
    /// Packs `src` (whole elements of `from` bytes) into `dst` (of `to` bytes each).
    pub fn pack(&self, src: &[u8], dst: &mut [u8]) {
        for (s, d) in src
            .chunks_exact(self.from)
            .zip(dst.chunks_exact_mut(self.to))
        {
            let mut at = 0;
            for &(offset, size, unit) in &self.fields {
                let f = &mut d[at..at + size];
                f.copy_from_slice(&s[offset..offset + size]);
                crate::codec::swap_bytes(f, unit);
                at += size;
            }
        }
    }
}

/// How a RawArray element goes into Zarr v3: the `data_type`, its zero `fill_value`,
/// whether the `bytes` codec names an endianness, and a repacking for structured
/// elements with padding or big-endian fields.
pub struct ZarrType {
    /// The `data_type` of `zarr.json`.
    pub data_type: Value,
    /// Its zero `fill_value`.
    pub fill_value: Value,
    /// Whether the `bytes` codec names an endianness (multi-byte numbers do).
    pub endian: bool,
    /// Bytes per element in the store.
    pub itemsize: u64,
    /// How a structured element is repacked on its way (padding dropped, big-endian
    /// fields swapped), if it must be.
    pub packing: Option<Packing>,
}

/// The largest element a Zarr array of ours holds.
const MAX_ELEMENT_BYTES: u64 = 1 << 20;

/// `n` zero bytes in base64, as zarr-python writes raw fill values.
fn zeros_base64(n: u64) -> String {
    let mut s = "AAAA".repeat((n / 3) as usize);
    s.push_str(match n % 3 {
        1 => "AA==",
        2 => "AAA=",
        _ => "",
    });
    s
}

/// The Zarr v3 type of RawArray elements of `dtype` (with `descr` for user types that
/// record one).
pub fn zarr_type(dtype: DType, descr: Option<&Descr>) -> Result<ZarrType> {
    if let Some((name, d, _)) = PLAIN.iter().find(|(_, t, _)| *t == dtype) {
        let fill = match d.kind() {
            Kind::Bool => json!(false),
            Kind::Float | Kind::BFloat16 => json!(0.0),
            Kind::Complex => json!([0.0, 0.0]),
            _ => json!(0),
        };
        return Ok(ZarrType {
            data_type: json!(name),
            fill_value: fill,
            endian: d.elbyte > 1,
            itemsize: d.elbyte,
            packing: None,
        });
    }
    if dtype.kind() != Kind::User {
        return Err(ErrorKind::Unsupported(format!(
            "{dtype} has no Zarr data type (Zarr's numbers stop at 64 bits)"
        ))
        .into());
    }
    let n = dtype.elbyte;
    if n > MAX_ELEMENT_BYTES {
        // Its fill value (one element) goes into zarr.json, as base64.
        return Err(ErrorKind::Unsupported(format!(
            "{dtype}: a Zarr element of {n} bytes (at most {MAX_ELEMENT_BYTES}: each array's \
             zarr.json holds one as its fill value)"
        ))
        .into());
    }
    let raw = || ZarrType {
        data_type: json!({"name": "raw_bytes", "configuration": {"length_bytes": n}}),
        fill_value: json!(zeros_base64(n)),
        endian: false,
        itemsize: n,
        packing: None,
    };
    Ok(match descr {
        None | Some(Descr::Simple { kind: 'V', .. }) => raw(),
        Some(Descr::Simple {
            kind: 'S', count, ..
        }) => ZarrType {
            data_type: json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": count}}),
            fill_value: json!(""),
            endian: false,
            itemsize: *count,
            packing: None,
        },
        Some(d @ Descr::Simple { kind: 'U', .. }) if !d.big_endian() => ZarrType {
            data_type: json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": n}}),
            fill_value: json!(""),
            endian: true,
            itemsize: n,
            packing: None,
        },
        Some(Descr::Struct(fields)) => structured(fields, n)?,
        Some(d) => {
            return Err(ErrorKind::Unsupported(format!(
                "user<{n}> elements of NumPy type {} have no Zarr data type",
                d.to_python()
            ))
            .into())
        }
    })
}

/// zarr-python's `structured` type of a NumPy struct: its named scalar fields, packed.
fn structured(fields: &[Field], elbyte: u64) -> Result<ZarrType> {
    let refuse = |why: String| -> Error {
        ErrorKind::Unsupported(format!("a structured type with {why} has no Zarr data type (zarr-python's structured type holds named scalar fields)")).into()
    };
    let (mut at, mut packed, mut list, mut plan) = (0u64, 0u64, Vec::new(), Vec::new());
    for f in fields {
        let size = f.descr.itemsize()?;
        let n = f.shape.iter().product::<u64>();
        if f.name.is_empty() && matches!(f.descr, Descr::Simple { kind: 'V', .. }) {
            at += size * n;
            continue;
        }
        if !f.shape.is_empty() {
            return Err(refuse(format!("a sub-array field ({:?})", f.name)));
        }
        let (ty, unit) = match &f.descr {
            Descr::Simple {
                kind: 'S' | 'V', ..
            } => (zarr_type(DType::user(size), Some(&f.descr))?.data_type, 1),
            d @ Descr::Simple { kind: 'U', .. } => {
                let t = zarr_type(DType::user(size), Some(&simple('<', 'U', size / 4)))?;
                (t.data_type, if d.big_endian() { 4 } else { 1 })
            }
            d @ Descr::Simple { .. } => {
                let t = d.dtype()?;
                let z = zarr_type(t, None)?;
                let unit = match t.swap_unit() {
                    Some(u) if d.big_endian() => u,
                    _ => 1,
                };
                (z.data_type, unit)
            }
            Descr::Struct(_) => return Err(refuse(format!("a nested structure ({:?})", f.name))),
        };
        list.push(json!([f.name, ty]));
        plan.push((at as usize, size as usize, unit));
        at += size;
        packed += size;
    }
    let moved = at != elbyte || packed != elbyte || plan.iter().any(|p| p.2 > 1);
    Ok(ZarrType {
        data_type: json!({"name": "structured", "configuration": {"fields": list}}),
        fill_value: json!(zeros_base64(packed)),
        endian: false,
        itemsize: packed,
        packing: moved.then_some(Packing {
            from: elbyte as usize,
            to: packed as usize,
            fields: plan,
        }),
    })
}

/// The NDL attributes of a trailer as Zarr attributes (JSON), with the whole trailer
/// kept under [`TRAILER_KEY`].
pub fn attributes_of_trailer(trailer: &[u8]) -> Map<String, Value> {
    let mut out = Map::new();
    if trailer.is_empty() {
        return out;
    }
    if let Some(attrs) = crate::ndl::attributes(trailer) {
        for (k, v) in &attrs {
            if let Some(k) = yaml_key(k) {
                out.insert(k, json_of_yaml(v));
            }
        }
    }
    let kept = match std::str::from_utf8(trailer) {
        Ok(text) => json!(text),
        Err(_) => json!({"hex": trailer.iter().map(|b| format!("{b:02x}")).collect::<String>()}),
    };
    out.insert(TRAILER_KEY.into(), kept);
    out
}

fn yaml_key(k: &Yaml) -> Option<String> {
    match k {
        Yaml::String(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        Yaml::Real(r) => Some(r.clone()),
        _ => None,
    }
}

/// A YAML value as JSON (keys made strings; NDL's `.nan` and infinities as strings).
pub(crate) fn json_of_yaml(v: &Yaml) -> Value {
    match v {
        Yaml::Integer(i) => json!(i),
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| json!(r), Value::Number),
        Yaml::String(s) => json!(s),
        Yaml::Boolean(b) => json!(b),
        Yaml::Array(a) => Value::Array(a.iter().map(json_of_yaml).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .filter_map(|(k, v)| Some((yaml_key(k)?, json_of_yaml(v))))
                .collect(),
        ),
        _ => Value::Null,
    }
}

/// A JSON value as YAML, the inverse of [`json_of_yaml`].
pub(crate) fn yaml_of_json(v: &Value) -> Yaml {
    match v {
        Value::Null => Yaml::Null,
        Value::Bool(b) => Yaml::Boolean(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Yaml::Integer(i),
            None => Yaml::Real(n.to_string()),
        },
        // NDL's spellings of NaN and the infinities, as `json_of_yaml` gives them.
        Value::String(s) if matches!(s.as_str(), ".nan" | ".inf" | "-.inf") => {
            Yaml::Real(s.clone())
        }
        Value::String(s) => Yaml::String(s.clone()),
        Value::Array(a) => Yaml::Array(a.iter().map(yaml_of_json).collect()),
        Value::Object(o) => {
            let mut h = Hash::new();
            for (k, v) in o {
                h.insert(Yaml::String(k.clone()), yaml_of_json(v));
            }
            Yaml::Hash(h)
        }
    }
}

/// Keeps `kept`, the value of a [`TRAILER_KEY`] attribute, in the extension field of
/// that name of the array's `zarr.json` `doc` instead: `{"must_understand": false,
/// "trailer": kept}`, which Zarr v3 readers skip (zarr-python keeps it as an extra
/// field) and xarray does not show.
pub(super) fn put_trailer_aside(doc: &mut Value, kept: Value) {
    doc[TRAILER_KEY] = json!({"must_understand": false, "trailer": kept});
}

/// Takes the extension field [`put_trailer_aside`] writes out of the `zarr.json`
/// `doc`, and gives the trailer as the attribute [`TRAILER_KEY`] holds it, if there is
/// one.
pub(super) fn take_trailer_aside(doc: &mut Value) -> Option<Value> {
    let field = doc.as_object_mut()?.remove(TRAILER_KEY)?;
    field.get("trailer").cloned()
}

/// The trailer kept under [`TRAILER_KEY`], if there is one.
fn kept_trailer(attrs: &Map<String, Value>) -> Option<Vec<u8>> {
    match attrs.get(TRAILER_KEY)? {
        Value::String(s) => Some(s.clone().into_bytes()),
        Value::Object(o) => {
            let hex = o.get("hex")?.as_str()?;
            (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
                .collect()
        }
        _ => None,
    }
}

/// How a Zarr array is read, which says which of its dimension names are the ones
/// rastore gives the dims of an array without labels ([`crate::ndl::unlabeled_dims`]),
/// and so stand for none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// An array on its own: `dim_0`, … are no labels.
    Alone,
    /// The one array of a group, named `VAR`, read as one array: `dim_0`, … and
    /// `VAR_dim_0`, … are no labels.
    OnlyOf(String),
    /// The variable `VAR` of a group read as a dataset: `VAR_dim_0`, … are no labels,
    /// and `dim_0`, … are dims xarray named, which its variables may share.
    Variable(String),
}

impl Reading {
    /// Whether `names` are those of dims without labels.
    fn unlabeled(&self, names: &[String]) -> bool {
        let n = names.len();
        let plain = || names == crate::ndl::unlabeled_dims(n, None);
        let own = |v: &str| names == crate::ndl::unlabeled_dims(n, Some(v));
        match self {
            Reading::Alone => plain(),
            Reading::OnlyOf(v) => plain() || own(v),
            Reading::Variable(v) => own(v),
        }
    }

    /// The dimension names that are labels: `names`, unless they stand for none.
    pub fn labels(&self, names: Option<&[String]>) -> Option<Vec<String>> {
        names.filter(|n| !self.unlabeled(n)).map(<[String]>::to_vec)
    }
}

/// The trailer of the `.ra` made from a Zarr array with `attrs` and dimension
/// `names`, read as `reading` says, for elements of `header` (with `descr` for user
/// types): the trailer kept under [`TRAILER_KEY`] (an attribute, or kept aside) when
/// the other attributes and the names are still the ones it holds (names it had none
/// for being the ones rastore gives such dims); else an NDL document with them (the
/// labels as `dimcoords`, with the array's name in its group as `name`, and the
/// compound of a structured type); empty when there is nothing to keep.
pub fn trailer_of_attributes(
    attrs: &Map<String, Value>,
    names: Option<&[String]>,
    reading: &Reading,
    header: &crate::Header,
    descr: Option<&Descr>,
) -> Vec<u8> {
    let others: Map<String, Value> = attrs
        .iter()
        .filter(|(k, _)| *k != TRAILER_KEY)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(kept) = kept_trailer(attrs) {
        let same_attributes = attributes_of_trailer(&kept)
            .into_iter()
            .filter(|(k, _)| k != TRAILER_KEY)
            .collect::<Map<_, _>>()
            == others;
        let kept_names = crate::ndl::dimension_names(&kept, header.ndims());
        let same_names = match (names, kept_names.as_deref()) {
            (None, _) => true,
            (Some(n), Some(k)) => n == k,
            (Some(n), None) => reading.unlabeled(n),
        };
        if same_attributes && same_names {
            return kept;
        }
    }
    let names = reading.labels(names);
    let names = names.as_deref();
    if others.is_empty() && descr.is_none() && names.is_none() {
        return Vec::new();
    }
    let attributes = (!others.is_empty()).then(|| yaml_of_json(&Value::Object(others)));
    match names {
        Some(names) => {
            // Its name beside its dims, as a dataset's variable's trailer has it.
            let mut extra = vec![crate::ndl::dimcoords(names)];
            if let Reading::OnlyOf(v) | Reading::Variable(v) = reading {
                extra.push(("name".into(), Yaml::String(v.clone())));
            }
            let attributes = attributes.unwrap_or(Yaml::Hash(Hash::new()));
            crate::ndl::labeled_trailer(header, descr, attributes, extra)
        }
        None => {
            let doc = crate::ndl::document(None, header, descr, attributes);
            crate::ndl::to_text(&doc).into_bytes()
        }
    }
}

/// The dimension names of a Zarr array: v3's `dimension_names` (all of them named),
/// or xarray's `_ARRAY_DIMENSIONS` attribute of a v2 array. Which are labels, and which
/// stand for none, [`Reading::labels`] says.
pub fn dimension_names(names: &Value, ndims: usize) -> Option<Vec<String>> {
    let names: Vec<String> = names
        .as_array()?
        .iter()
        .map(|n| n.as_str().map(str::to_string))
        .collect::<Option<_>>()?;
    (names.len() == ndims).then_some(names)
}

/// A `_FillValue` attribute (xarray's, CF's) taken out of `attrs`, as Zarr holds it:
/// (the array's `fill_value`, NaN and infinities named as Zarr names them; the
/// attribute as xarray's Zarr v3 backend reads it: base64 of the little-endian f64 for
/// floats, the number for integers). `None` if there is none, or it is not a number.
pub(crate) fn fill_value(
    attrs: &mut Map<String, Value>,
    dtype: crate::DType,
) -> Option<(Value, Value)> {
    let float = match dtype.kind() {
        Kind::Float | Kind::BFloat16 => true,
        Kind::Int | Kind::UInt => false,
        _ => return None,
    };
    let x = match attrs.get("_FillValue")? {
        Value::Number(n) => n.as_f64()?,
        // NDL (YAML) spells them .nan, .inf and -.inf.
        Value::String(t) => match t.to_ascii_lowercase().as_str() {
            ".nan" => f64::NAN,
            ".inf" | "+.inf" => f64::INFINITY,
            "-.inf" => f64::NEG_INFINITY,
            other => other.parse().ok()?,
        },
        _ => return None,
    };
    let value = match x {
        _ if x.is_nan() => json!("NaN"),
        f64::INFINITY => json!("Infinity"),
        f64::NEG_INFINITY => json!("-Infinity"),
        _ if float => json!(x),
        // An integer type's fill value is a whole number it holds.
        _ if x.fract() == 0.0 && x >= i64::MIN as f64 && x <= u64::MAX as f64 => {
            if x < 0.0 {
                json!(x as i64)
            } else {
                json!(x as u64)
            }
        }
        _ => return None,
    };
    let attribute = if float {
        json!(base64_encode(&x.to_le_bytes()))
    } else {
        value.clone()
    };
    attrs.remove("_FillValue");
    Some((value, attribute))
}

/// xarray's Zarr v3 `_FillValue` attribute of a float array (base64 of the
/// little-endian f64) made a number again, as NDL holds it (NaN and the infinities as
/// `.nan`, `.inf`, `-.inf`); other attributes are left as they are.
pub(crate) fn decode_fill_attribute(attrs: &mut Map<String, Value>, dtype: DType) {
    if !matches!(dtype.kind(), Kind::Float | Kind::BFloat16) {
        return;
    }
    let Some(Value::String(text)) = attrs.get("_FillValue") else {
        return;
    };
    let Some(bytes) = base64_decode(text).filter(|b| b.len() == 8) else {
        return;
    };
    let x = f64::from_le_bytes(bytes.try_into().unwrap_or_default());
    attrs.insert("_FillValue".into(), ndl_number(x));
}

/// `x` as an attribute's value: a JSON number, or NaN and the infinities as NDL spells
/// them (`.nan`, `.inf`, `-.inf`), which JSON cannot.
pub(crate) fn ndl_number(x: f64) -> Value {
    match serde_json::Number::from_f64(x) {
        Some(n) => Value::Number(n),
        None if x.is_nan() => json!(".nan"),
        None if x > 0.0 => json!(".inf"),
        None => json!("-.inf"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_both_ways() {
        for (name, d, _) in PLAIN {
            assert_eq!(elem_v3(&json!(name)).unwrap(), Elem::Plain(*d));
            assert_eq!(zarr_type(*d, None).unwrap().data_type, json!(name));
        }
        assert_eq!(elem_v3(&json!("r24")).unwrap(), Elem::Raw(3));
        assert!(elem_v3(&json!("r7")).is_err() && elem_v3(&json!("string")).is_err());
        let e = elem_v3(&json!({"name": "numpy.datetime64"})).unwrap_err();
        assert!(e.to_string().contains("numpy.datetime64"), "{e}");
        let s = json!({"name": "structured", "configuration": {"fields": [
            ["name", {"name": "null_terminated_bytes", "configuration": {"length_bytes": 10}}],
            ["age", "int32"], ["w", "float32"]]}});
        let e = elem_v3(&s).unwrap();
        assert_eq!(
            e.descr().unwrap().to_python(),
            "[('name', '|S10'), ('age', '<i4'), ('w', '<f4')]"
        );
        assert_eq!(e.dtype().unwrap(), DType::user(18));
        let back = zarr_type(DType::user(18), e.descr()).unwrap();
        assert_eq!(back.data_type, s);
        assert!(back.packing.is_none());
        let err = elem_v2(&json!("<M8[ns]")).unwrap_err().to_string();
        assert!(err.contains("<M8[ns]"), "{err}");
        assert_eq!(elem_v2(&json!(">i2")).unwrap(), Elem::Plain(DType::I16));
        let v2 = elem_v2(&json!([["a", "<i4"], ["b", "|S3"]])).unwrap();
        assert_eq!(v2.dtype().unwrap(), DType::user(7));
    }

    #[test]
    fn padded_and_big_endian_structs_are_packed_little_endian() {
        let d = Descr::parse("[('a', '|u1'), ('', '|V3'), ('b', '>i4')]").unwrap();
        let t = zarr_type(DType::user(8), Some(&d)).unwrap();
        assert_eq!(t.itemsize, 5);
        let p = t.packing.unwrap();
        let mut out = vec![0u8; 5];
        p.pack(&[7, 9, 9, 9, 0, 0, 1, 2], &mut out);
        assert_eq!(out, [7, 2, 1, 0, 0]);
        assert_eq!(t.fill_value, json!("AAAAAAA="));
    }

    #[test]
    fn base64() {
        assert_eq!(base64_decode("AAAAAAA=").unwrap(), vec![0; 5]);
        assert_eq!(base64_decode("aGk=").unwrap(), b"hi");
        assert_eq!(base64_decode("MAAAAAAAAAAAAAAAAAAAAAAA").unwrap().len(), 18);
        assert!(base64_decode("a!").is_none());
    }

    #[test]
    fn which_dimension_names_stand_for_no_labels() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let (plain, own) = (names(&["dim_0", "dim_1"]), names(&["a_dim_0", "a_dim_1"]));
        let alone = Reading::Alone;
        let only = Reading::OnlyOf("a".into());
        let variable = Reading::Variable("a".into());
        assert_eq!(alone.labels(Some(&plain)), None);
        assert_eq!(alone.labels(Some(&own)), Some(own.clone()));
        assert_eq!(only.labels(Some(&plain)), None);
        assert_eq!(only.labels(Some(&own)), None);
        // In a dataset, xarray's dim_0 is a label its variables share.
        assert_eq!(variable.labels(Some(&plain)), Some(plain.clone()));
        assert_eq!(variable.labels(Some(&own)), None);
        assert_eq!(Reading::Variable("b".into()).labels(Some(&own)), Some(own));
        assert_eq!(variable.labels(None), None);
    }

    #[test]
    fn the_trailer_comes_back_whole_unless_its_attributes_changed() {
        let h = crate::Header::new(DType::F32, &[2]).unwrap();
        let t = crate::ndl::edit_attributes(&h, b"", &[("units".into(), "m".into())], &[]).unwrap();
        let mut attrs = attributes_of_trailer(&t);
        assert_eq!(attrs["units"], json!("m"));
        assert_eq!(
            trailer_of_attributes(&attrs, None, &Reading::Alone, &h, None),
            t
        );
        attrs.insert("units".into(), json!("km"));
        let changed = String::from_utf8(trailer_of_attributes(
            &attrs,
            None,
            &Reading::Alone,
            &h,
            None,
        ))
        .unwrap();
        assert!(changed.contains("units: km"), "{changed}");
        assert!(attributes_of_trailer(b"\xff\x00").contains_key(TRAILER_KEY));
        assert_eq!(
            trailer_of_attributes(
                &attributes_of_trailer(b"\xff\x00"),
                None,
                &Reading::Alone,
                &h,
                None
            ),
            b"\xff\x00"
        );
    }
}
