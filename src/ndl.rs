//! YAML descriptions in the Ndarray Data Language (NDL): a File entity with one
//! ndarray (shape, type, attributes, storage), used both as `ra describe`'s output and
//! as the metadata trailer rastore writes itself (FORMAT.md section 6).
//!
//! Trailers are untrusted input: only one that starts with `---\n`, is at most
//! [`MAX_TRAILER_YAML`] bytes of UTF-8 and uses no aliases (which a loader would copy,
//! the "billion laughs") is parsed as YAML; anything else is opaque bytes.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::yaml::Hash;
use yaml_rust2::{Yaml, YamlEmitter, YamlLoader};

use crate::descr::{Descr, Field};
use crate::dtype::{DType, Kind};
use crate::error::{Error, ErrorKind, Result};
use crate::header::Header;

/// Largest trailer parsed as YAML.
pub const MAX_TRAILER_YAML: usize = 1 << 20;

/// Most parser events accepted from a trailer.
const MAX_EVENTS: usize = 100_000;

pub(crate) fn s(text: &str) -> Yaml {
    Yaml::String(text.to_string())
}

fn map(entries: Vec<(&str, Yaml)>) -> Yaml {
    let mut h = Hash::new();
    for (k, v) in entries {
        h.insert(s(k), v);
    }
    Yaml::Hash(h)
}

pub(crate) fn int(v: u64) -> Yaml {
    Yaml::Integer(i64::try_from(v).unwrap_or(i64::MAX))
}

/// A float as YAML (NDL) writes it: Rust's shortest round-trip form with a point, so
/// that it reads back as a float; NaN and the infinities as `.nan`, `.inf`, `-.inf`.
pub fn real(v: f64) -> Yaml {
    Yaml::Real(if v.is_nan() {
        ".nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { ".inf" } else { "-.inf" }.into()
    } else {
        let t = format!("{v:?}");
        if t.contains(['.', 'e', 'E']) {
            t
        } else {
            format!("{t}.0")
        }
    })
}

/// Parses a trailer as an NDL YAML document, if it is one and is safe to load.
pub fn parse_trailer(trailer: &[u8]) -> Option<Yaml> {
    if !trailer.starts_with(b"---\n") || trailer.len() > MAX_TRAILER_YAML {
        return None;
    }
    let text = std::str::from_utf8(trailer).ok()?;
    // YAML allows only printable characters; yaml-rust2 accepts some others in plain
    // scalars and then emits them unquoted, which is not YAML (found by fuzzing).
    if !text.chars().all(printable) {
        return None;
    }
    let mut parser = Parser::new_from_str(text);
    for _ in 0..MAX_EVENTS {
        match parser.next_token() {
            Ok((Event::StreamEnd, _)) => {
                let doc = YamlLoader::load_from_str(text).ok()?.into_iter().next()?;
                return doc.as_hash().is_some().then_some(doc);
            }
            Ok((Event::Alias(_), _)) | Err(_) => return None,
            Ok(_) => {}
        }
    }
    None
}

/// YAML 1.2's `c-printable`: tab, line breaks, and no other control characters.
fn printable(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | ' '..='~' | '\u{85}')
        || (c >= '\u{a0}' && c != '\u{feff}' && !('\u{fffe}'..='\u{ffff}').contains(&c))
}

/// A string for the YAML tree with non-printable characters shown as `?` (a path may
/// hold any byte but `/` and NUL).
fn printable_text(text: &str) -> Yaml {
    s(&text
        .chars()
        .map(|c| if printable(c) { c } else { '?' })
        .collect::<String>())
}

/// The single ndarray entry of an NDL document, if it has one.
fn ndarray_of(doc: &Yaml) -> Option<&Yaml> {
    doc["ndarrays"].as_hash()?.values().next()
}

/// The attributes of an NDL trailer's ndarray (or, in a plain YAML mapping without
/// `ndarrays`, its top-level keys), if the trailer is NDL and has any.
pub fn attributes(trailer: &[u8]) -> Option<Hash> {
    let doc = parse_trailer(trailer)?;
    let attrs = match ndarray_of(&doc) {
        Some(nd) => nd["attributes"].as_hash()?.clone(),
        None if doc["ndarrays"].is_badvalue() => doc.as_hash()?.clone(),
        None => return None,
    };
    (!attrs.is_empty()).then_some(attrs)
}

/// The ndarray entity of an NDL trailer (shape, type, attributes, storage, and
/// whatever else its writer put there, such as xarray's `name` and `dimcoords`).
pub fn ndarray_entity(trailer: &[u8]) -> Option<Hash> {
    ndarray_of(&parse_trailer(trailer)?)?.as_hash().cloned()
}

/// The dimension names of an NDL trailer (the `name` of each `dimcoords` entry, as
/// `rastore.write` of an xarray `DataArray` and Zarr conversions record them), when
/// it names all `ndims` dims.
pub fn dimension_names(trailer: &[u8], ndims: usize) -> Option<Vec<String>> {
    let entity = ndarray_entity(trailer)?;
    let entries = entity.get(&s("dimcoords"))?.as_vec()?;
    let names: Vec<String> = entries
        .iter()
        .map(|e| e.as_hash()?.get(&s("name"))?.as_str().map(str::to_string))
        .collect::<Option<_>>()?;
    (names.len() == ndims).then_some(names)
}

/// The names xarray, and every Zarr group rastore writes, give the dims of an array
/// without labels: `VAR_dim_0`, `VAR_dim_1`, … for the variable `VAR` of a dataset (a
/// folder, a Zarr group, an `.npz`), its own, which no other variable's can conflict
/// with whatever their sizes; `dim_0`, `dim_1`, … for an array on its own (`variable`
/// `None`), as xarray names a DataArray's.
pub fn unlabeled_dims(ndims: usize, variable: Option<&str>) -> Vec<String> {
    (0..ndims)
        .map(|k| match variable {
            Some(v) => format!("{v}_dim_{k}"),
            None => format!("dim_{k}"),
        })
        .collect()
}

/// The `dimcoords` entry of an NDL ndarray that names its dims (and no coordinates).
pub fn dimcoords(names: &[String]) -> (String, Yaml) {
    let entries = names
        .iter()
        .map(|n| map(vec![("name", Yaml::String(n.clone()))]))
        .collect();
    ("dimcoords".to_string(), Yaml::Array(entries))
}

/// The NumPy descr recorded in a trailer written by `ra convert` (structured dtypes),
/// if it describes elements of `elbyte` bytes.
pub fn numpy_descr(trailer: &[u8], elbyte: u64) -> Option<Descr> {
    descr_of(ndarray_of(&parse_trailer(trailer)?)?, elbyte)
}

/// The NumPy descr an ndarray entry records, if it parses and its itemsize is the
/// file's `elbyte`: a descr of another size (or one whose size overflows) does not
/// describe the data, and is not used to lay out fields.
fn descr_of(ndarray: &Yaml, elbyte: u64) -> Option<Descr> {
    let d = Descr::parse(ndarray["type"]["numpy_descr"].as_str()?).ok()?;
    (d.itemsize().ok() == Some(elbyte)).then_some(d)
}

/// Edits the attributes of an NDL trailer: sets each `(key, value)` (the value read
/// as a YAML scalar: `3`, `true`, `m/s`) and removes each key in `del`, keeping
/// everything else. An empty trailer becomes a new NDL document for `header`. An
/// opaque trailer (not a YAML mapping starting `---\n`) is refused. The attributes
/// are the document's single ndarray's `attributes`, or, in a plain YAML mapping
/// without `ndarrays`, its top-level keys.
pub fn edit_attributes(
    header: &Header,
    trailer: &[u8],
    set: &[(String, String)],
    del: &[String],
) -> Result<Vec<u8>> {
    let mut doc = if trailer.is_empty() {
        document(None, header, None, None)
    } else {
        parse_trailer(trailer).ok_or_else(|| {
            Error::from(ErrorKind::Unsupported(format!(
                "the {}-byte trailer is not NDL YAML (a mapping starting ---): \
                 edit it whole with ra meta --set",
                trailer.len()
            )))
        })?
    };
    let attributes = attributes_mut(&mut doc).ok_or_else(|| {
        Error::from(ErrorKind::Unsupported(
            "the trailer's ndarray has no attributes mapping to edit".into(),
        ))
    })?;
    for key in del {
        attributes.remove(&s(key));
    }
    for (key, value) in set {
        attributes.insert(s(key), scalar(value));
    }
    Ok(to_text(&doc).into_bytes())
}

/// The trailer with its one ndarray's `shape` (and `storage.size`, where given) set to
/// `header`'s, everything else kept: what an append that grew the array does to its
/// NDL trailer. `None` when the trailer is not an NDL document with a shape.
pub fn with_shape(trailer: &[u8], header: &Header) -> Option<Vec<u8>> {
    let mut doc = parse_trailer(trailer)?;
    let Yaml::Hash(top) = &mut doc else {
        return None;
    };
    let Some(Yaml::Hash(arrays)) = top.get_mut(&s("ndarrays")) else {
        return None;
    };
    if arrays.len() != 1 {
        return None;
    }
    let Some((_, Yaml::Hash(nd))) = arrays.iter_mut().next() else {
        return None;
    };
    // Values are replaced where they are, so the document keeps its order.
    *nd.get_mut(&s("shape"))? = Yaml::Array(header.dims().iter().map(|&d| int(d)).collect());
    if let Some(Yaml::Hash(storage)) = nd.get_mut(&s("storage")) {
        if let Some(size) = storage.get_mut(&s("size")) {
            *size = int(header.size());
        }
    }
    Some(to_text(&doc).into_bytes())
}

/// The attributes mapping to edit (created if the ndarray has none).
fn attributes_mut(doc: &mut Yaml) -> Option<&mut Hash> {
    let Yaml::Hash(top) = doc else {
        return None;
    };
    if !top.contains_key(&s("ndarrays")) {
        return Some(top);
    }
    let Some(Yaml::Hash(arrays)) = top.get_mut(&s("ndarrays")) else {
        return None;
    };
    let Some((_, Yaml::Hash(nd))) = arrays.iter_mut().next() else {
        return None;
    };
    let entry = nd
        .entry(s("attributes"))
        .or_insert_with(|| Yaml::Hash(Hash::new()));
    if matches!(entry, Yaml::Null) {
        *entry = Yaml::Hash(Hash::new());
    }
    match entry {
        Yaml::Hash(h) => Some(h),
        _ => None,
    }
}

/// `text` as a YAML scalar (`3` an integer, `true` a bool, `1.5` a float), else a string.
fn scalar(text: &str) -> Yaml {
    match YamlLoader::load_from_str(text)
        .ok()
        .and_then(|d| d.into_iter().next())
    {
        Some(y @ (Yaml::Integer(_) | Yaml::Real(_) | Yaml::Boolean(_) | Yaml::Null)) => y,
        _ => s(text),
    }
}

/// The NDL type of a NumPy descr: a name for numbers, else a class map.
fn descr_type(d: &Descr) -> Yaml {
    match d {
        Descr::Simple { kind, count, .. } => {
            let dt = d.dtype().unwrap_or(DType::user(*count));
            let base = match kind {
                'S' => map(vec![("class", s("string")), ("size", int(*count))]),
                'U' => map(vec![
                    ("class", s("string")),
                    ("charset", s("UTF-32")),
                    ("size", int(count.saturating_mul(4))),
                ]),
                _ if dt.kind() == Kind::User => {
                    map(vec![("class", s("opaque")), ("size", int(*count))])
                }
                _ => s(&dt.name()),
            };
            if d.big_endian() {
                map(vec![("class", base), ("order", s("big"))])
            } else {
                base
            }
        }
        Descr::Struct(fields) => compound(fields),
    }
}

fn compound(fields: &[Field]) -> Yaml {
    let mut offset = 0u64;
    let members = fields
        .iter()
        .map(|f| {
            let mut ty = descr_type(&f.descr);
            if !f.shape.is_empty() {
                ty = map(vec![
                    ("class", s("array")),
                    (
                        "shape",
                        Yaml::Array(f.shape.iter().map(|&d| int(d)).collect()),
                    ),
                    ("base", ty),
                ]);
            }
            let m = map(vec![
                ("name", s(&f.name)),
                ("type", ty),
                ("offset", int(offset)),
            ]);
            let n: u64 = f.shape.iter().product();
            offset += n * f.descr.itemsize().unwrap_or(0);
            m
        })
        .collect();
    map(vec![
        ("class", s("compound")),
        ("size", int(offset)),
        ("members", Yaml::Array(members)),
    ])
}

/// The NDL document for a file with this header: shape, type (a compound for a
/// structured `descr`), attributes and storage. `file` names the file (for
/// `ra describe`); `attributes` are carried over from an NDL trailer.
pub fn document(
    file: Option<&str>,
    header: &Header,
    descr: Option<&Descr>,
    attributes: Option<Yaml>,
) -> Yaml {
    // NumPy types that are opaque here (structs, strings, void, long double) keep
    // their descr, so that they convert back.
    let opaque = |d: &Descr| d.dtype().is_ok_and(|t| t.kind() == Kind::User);
    let ty = match descr {
        Some(d) if opaque(d) => {
            let mut t = descr_type(d);
            if let Yaml::Hash(h) = &mut t {
                h.insert(s("numpy_descr"), s(&d.to_python()));
            }
            t
        }
        _ => s(&header.dtype().name()),
    };
    let mut storage = vec![
        ("format", s("RawArray")),
        (
            "endian",
            s(if header.data_big_endian() {
                "big"
            } else {
                "little"
            }),
        ),
        ("order", s("column-major")),
    ];
    if let Some(name) = header.encoding().filter_name() {
        storage.push(("filter", Yaml::Array(vec![s(name)])));
    }
    storage.push(("data_offset", int(header.data_offset())));
    storage.push(("size", int(header.size())));
    let ndarray = map(vec![
        (
            "shape",
            Yaml::Array(header.dims().iter().map(|&d| int(d)).collect()),
        ),
        ("type", ty),
        (
            "attributes",
            attributes.unwrap_or_else(|| Yaml::Hash(Hash::new())),
        ),
        ("storage", map(storage)),
    ]);
    let mut top = Vec::new();
    if let Some(f) = file {
        top.push(("file", printable_text(f)));
    }
    top.push(("ndarrays", map(vec![("data", ndarray)])));
    map(top)
}

/// The trailer that records a NumPy `descr` for data of `header`: an NDL document whose
/// type is the compound (or opaque class) with the descr beside it, so that the
/// fields survive conversions.
pub fn descr_trailer(header: &Header, descr: &Descr) -> Vec<u8> {
    to_text(&document(None, header, Some(descr), None)).into_bytes()
}

/// The trailer of an NDL document for data of `header` (with `descr` for a NumPy
/// type kept opaque) whose ndarray has `attributes` and the entries `extra` beside
/// them: xarray's `name` and `dimcoords` (see FORMAT.md section 6).
pub fn labeled_trailer(
    header: &Header,
    descr: Option<&Descr>,
    attributes: Yaml,
    extra: Vec<(String, Yaml)>,
) -> Vec<u8> {
    let mut doc = document(None, header, descr, Some(attributes));
    if let Yaml::Hash(top) = &mut doc {
        if let Some(Yaml::Hash(nds)) = top.get_mut(&s("ndarrays")) {
            if let Some(Yaml::Hash(nd)) = nds.get_mut(&s("data")) {
                for (k, v) in extra {
                    nd.insert(Yaml::String(k), v);
                }
            }
        }
    }
    to_text(&doc).into_bytes()
}

/// Renders a YAML document as text starting `---\n`.
///
/// The emitter writes some control characters (BEL, ESC, DEL, C1) unquoted or
/// unescaped, which is not YAML. So every string holding a non-printable character is
/// swapped for a placeholder the emitter does quote, and the placeholder's text is
/// then replaced by the string, double-quoted with every such character escaped.
pub fn to_text(doc: &Yaml) -> String {
    let mut swapped = Vec::new();
    let doc = with_placeholders(doc.clone(), &mut swapped);
    let mut out = String::new();
    // Writing to a String cannot fail; an emitter error would be a bug in the tree.
    if YamlEmitter::new(&mut out).dump(&doc).is_err() {
        out = "---\n".into();
    }
    for (i, original) in swapped.iter().enumerate() {
        out = out.replacen(&format!("\"\\u0001{i}\\u0001\""), &quoted(original), 1);
    }
    out.push('\n');
    out
}

fn with_placeholders(doc: Yaml, swapped: &mut Vec<String>) -> Yaml {
    match doc {
        Yaml::String(t) if !t.chars().all(|c| printable(c) && c != '\u{85}') => {
            swapped.push(t);
            Yaml::String(format!("\u{1}{}\u{1}", swapped.len() - 1))
        }
        Yaml::Array(items) => Yaml::Array(
            items
                .into_iter()
                .map(|y| with_placeholders(y, swapped))
                .collect(),
        ),
        Yaml::Hash(h) => Yaml::Hash(
            h.into_iter()
                .map(|(k, v)| (with_placeholders(k, swapped), with_placeholders(v, swapped)))
                .collect(),
        ),
        other => other,
    }
}

/// A YAML double-quoted scalar with every character that is not printable escaped.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if printable(c) && !matches!(c, '\t' | '\n' | '\r' | '\u{85}') => out.push(c),
            c if (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{:04x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// `ra describe`: the NDL document for a file, merging what its trailer says (an NDL
/// trailer's type and attributes; for an opaque trailer, its length).
pub fn describe(file: &str, header: &Header, trailer: &[u8]) -> String {
    to_text(&displayable(describe_doc(Some(file), header, trailer)))
}

/// The ndarray entry [`describe`] gives for a file of `header` and `trailer`.
pub fn describe_entity(header: &Header, trailer: &[u8]) -> Yaml {
    let doc = displayable(describe_doc(None, header, trailer));
    ndarray_of(&doc).cloned().unwrap_or(Yaml::Null)
}

/// The NDL document of [`describe`], before it is made displayable.
fn describe_doc(file: Option<&str>, header: &Header, trailer: &[u8]) -> Yaml {
    let parsed = parse_trailer(trailer);
    let nd = parsed.as_ref().and_then(ndarray_of);
    let descr = nd.and_then(|n| descr_of(n, header.dtype().elbyte));
    let attributes = match (nd, trailer.is_empty()) {
        (Some(n), _) if n["attributes"].as_hash().is_some() => Some(n["attributes"].clone()),
        (None, false) if parsed.is_some() => parsed.clone(),
        (None, false) => Some(map(vec![(
            "trailer",
            map(vec![
                ("bytes", int(trailer.len() as u64)),
                ("format", s("opaque")),
            ]),
        )])),
        _ => None,
    };
    document(file, header, descr.as_ref(), attributes)
}

/// The storage entry of a document's single ndarray.
pub(crate) fn storage_mut(doc: &mut Yaml) -> Option<&mut Yaml> {
    let Yaml::Hash(top) = doc else { return None };
    let Some(Yaml::Hash(arrays)) = top.get_mut(&s("ndarrays")) else {
        return None;
    };
    let Some((_, Yaml::Hash(nd))) = arrays.iter_mut().next() else {
        return None;
    };
    nd.get_mut(&s("storage"))
}

/// The tree with every string's non-printable characters shown as `?`: escapes in a
/// trailer (`"\x1b"`, `"\u009b"`) or field names can carry terminal controls, and the
/// emitter writes them raw.
pub(crate) fn displayable(doc: Yaml) -> Yaml {
    match doc {
        Yaml::String(t) if !t.chars().all(printable) => printable_text(&t),
        Yaml::Array(items) => Yaml::Array(items.into_iter().map(displayable).collect()),
        Yaml::Hash(h) => Yaml::Hash(
            h.into_iter()
                .map(|(k, v)| (displayable(k), displayable(v)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_names_with_controls_survive_the_trailer() {
        let descr = Descr::parse("[('na\\x1bme', '<i2'), ('uni\\xe9', 'u1')]").unwrap();
        let h = Header::new(DType::user(3), &[2]).unwrap();
        let text = to_text(&document(None, &h, Some(&descr), None));
        assert!(text.chars().all(printable), "{text:?}");
        assert_eq!(numpy_descr(text.as_bytes(), 3), Some(descr));
    }

    #[test]
    fn describe_shows_escaped_controls_as_question_marks() {
        let h = Header::new(DType::F32, &[1]).unwrap();
        let trailer = b"---\nattributes: {t: \"a\\x1b[31mb\\u009bc\\x07\"}\n";
        let text = describe("f.ra", &h, trailer);
        assert!(text.contains("a?[31mb?c?"), "{text}");
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
    }

    #[test]
    fn trailers_with_aliases_or_not_yaml_are_opaque() {
        assert!(parse_trailer(b"---\na: 1\n").is_some());
        assert!(parse_trailer(b"a: 1\n").is_none());
        assert!(parse_trailer(b"---\na: &x [1, 2]\nb: *x\n").is_none());
        assert!(parse_trailer(b"---\n[unclosed\n").is_none());
        assert!(parse_trailer(b"---\n\xff\n").is_none());
        assert!(parse_trailer(b"---\nkey\x19: 1\n").is_none());
    }

    #[test]
    fn compound_offsets_and_descr_survive() {
        let d = Descr::parse("[('name', '|S10'), ('age', '<i4'), ('weight', '<f4')]").unwrap();
        let h = Header::new(DType::user(18), &[3]).unwrap();
        let text = to_text(&document(None, &h, Some(&d), None));
        let back = numpy_descr(text.as_bytes(), 18).unwrap();
        assert_eq!(back, d);
        assert_eq!(
            numpy_descr(text.as_bytes(), 20),
            None,
            "not 20-byte elements"
        );
        let doc = parse_trailer(text.as_bytes()).unwrap();
        let t = &doc["ndarrays"]["data"]["type"];
        assert_eq!(t["class"].as_str(), Some("compound"));
        assert_eq!(t["size"].as_i64(), Some(18));
        assert_eq!(t["members"][2]["offset"].as_i64(), Some(14));
        assert_eq!(t["members"][1]["type"].as_str(), Some("int32"));
    }

    #[test]
    fn a_descr_that_does_not_fit_the_elements_is_not_laid_out() {
        // 2^32 × 2^32 elements: the field offsets would overflow (a panic in debug
        // builds before this was checked); the type falls back to the file's own.
        let trailer = b"---\nndarrays:\n  data:\n    type:\n      numpy_descr: \"[('a', '<f4', (4294967296, 4294967296))]\"\n";
        let h = Header::new(DType::F32, &[2]).unwrap();
        let text = describe("x.ra", &h, trailer);
        let doc = parse_trailer(text.as_bytes()).unwrap();
        assert_eq!(doc["ndarrays"]["data"]["type"].as_str(), Some("float32"));
    }
}
