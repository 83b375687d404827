//! `ra info` of an HDF5 file, or of a group or dataset in it: the tree as `h5ls -r`
//! lists it, one line (or JSON object) per object: each group; each dataset with its
//! type, shape (h5py's; MATLAB's for a MATLAB variable), bytes, layout (contiguous at
//! its offset, compact, never written, chunked with its chunk shape and index) and
//! filters; each soft or external link with where it leads; and each object rastore
//! does not read, with why.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::engine::view;
use super::layout::Layout;
use super::{Dataset, Entry, Object, H5};
use crate::error::Result;

/// One object of the listing.
pub struct Line {
    /// How it is named: the file, then its path (`x.h5/grp/dset`).
    pub path: PathBuf,
    /// What it is, as JSON: `kind` (`group`, `dataset`, `link`, `unsupported`) and
    /// the rest.
    pub json: Value,
}

impl Line {
    /// The line `ra info` prints.
    pub fn text(&self) -> String {
        let j = &self.json;
        let what = match j["kind"].as_str().unwrap_or_default() {
            "group" => format!("group, {} attributes", j["attributes"]),
            "link" => format!(
                "{} link to {}",
                j["link"].as_str().unwrap_or_default(),
                j["to"].as_str().unwrap_or_default()
            ),
            "dataset" => {
                let dims: Vec<String> = j["dims"]
                    .as_array()
                    .map(|a| a.iter().map(Value::to_string).collect())
                    .unwrap_or_default();
                let mut s = format!(
                    "{} [{}] bytes {} hdf5 {}",
                    j["dtype"].as_str().unwrap_or_default(),
                    dims.join(", "),
                    j["bytes"],
                    j["layout"].as_str().unwrap_or_default()
                );
                if let Some(o) = j["data_offset"].as_u64() {
                    s.push_str(&format!(" offset {o}"));
                }
                if let Some(c) = j["chunks"].as_array() {
                    let c: Vec<String> = c.iter().map(Value::to_string).collect();
                    s.push_str(&format!(
                        " [{}] {} index",
                        c.join(", "),
                        j["index"].as_str().unwrap_or_default()
                    ));
                }
                if let Some(f) = j["filters"].as_array().filter(|f| !f.is_empty()) {
                    let f: Vec<&str> = f.iter().filter_map(Value::as_str).collect();
                    s.push_str(&format!(" filters {}", f.join("+")));
                }
                if j["matlab"] == true {
                    s.push_str(" (MATLAB's shape)");
                }
                if j["text"] == true {
                    s.push_str(" (MATLAB char: read as text)");
                }
                s
            }
            _ => j["why"].as_str().unwrap_or_default().to_string(),
        };
        format!("{}: {what}", self.path.display())
    }
}

/// The listing of `object` of the file `file` (its root: `""`): a dataset's one line,
/// or a group's tree.
pub fn lines(file: &Path, object: &str) -> Result<Vec<Line>> {
    let h5 = H5::open(file)?;
    let object = object.trim_matches('/');
    if let Object::Dataset { .. } = h5.resolve(object)? {
        let ds = h5.dataset(object)?;
        return Ok(vec![dataset_line(&h5, &ds)]);
    }
    let mut out = Vec::new();
    for e in h5.walk(object)? {
        let line = match e {
            Entry::Group(p, attrs) => Line {
                path: h5.shown(&super::join(object, &p)),
                json: json!({"kind": "group", "attributes": attrs.len()}),
            },
            Entry::Dataset(p, _) => match h5.dataset(&super::join(object, &p)) {
                Ok(ds) => dataset_line(&h5, &ds),
                Err(e) => refused(&h5, &super::join(object, &p), &e),
            },
            Entry::Refused(p, e) => refused(&h5, &super::join(object, &p), &e),
            Entry::Link(p, to) => Line {
                path: h5.shown(&super::join(object, &p)),
                json: json!({
                    "kind": "link",
                    "link": if to.contains(':') { "external" } else { "soft" },
                    "to": to,
                }),
            },
        };
        out.push(line);
    }
    Ok(out)
}

/// The line of an object rastore does not read: why (the error without the path).
fn refused(h5: &H5, object: &str, e: &crate::Error) -> Line {
    let why = e.kind().to_string();
    Line {
        path: h5.shown(object),
        json: json!({"kind": "unsupported", "why": why}),
    }
}

/// The line of the dataset `ds`.
fn dataset_line(h5: &H5, ds: &Dataset) -> Line {
    let path = h5.shown(&ds.object);
    let v = match view(h5, ds) {
        Ok(v) => v,
        Err(e) => return refused(h5, &ds.object, &e),
    };
    let dtype = v.descr.dtype().map(|d| d.name()).unwrap_or_default();
    let itemsize = v.descr.itemsize().unwrap_or(0);
    let bytes = crate::header::checked_bytes(itemsize, &v.dims);
    let mut j = json!({
        "kind": "dataset",
        "format": "hdf5",
        "dtype": dtype,
        "descr": v.descr.to_python(),
        "dims": v.dims,
        "bytes": bytes,
        "order": if v.fortran { "F" } else { "C" },
        "matlab": h5.matlab,
        "text": v.text,
        "attributes": ds.attributes.len(),
    });
    match &ds.layout {
        Layout::Contiguous { offset } => {
            j["layout"] = json!("contiguous");
            j["data_offset"] = json!(offset);
        }
        Layout::Compact(_) => j["layout"] = json!("compact"),
        Layout::Unwritten => j["layout"] = json!("never-written"),
        Layout::Chunked {
            chunk, indexing, ..
        } => {
            let mut c: Vec<u64> = chunk.iter().map(|&c| u64::from(c)).collect();
            c.extend_from_slice(&ds.shape[ds.own.min(ds.shape.len())..]);
            if h5.matlab {
                c.reverse();
            }
            j["layout"] = json!("chunked");
            j["chunks"] = json!(c);
            j["index"] = json!(Layout::index_name(indexing.as_ref()));
        }
    }
    j["filters"] = json!(ds.filters.iter().map(|f| f.name()).collect::<Vec<_>>());
    Line { path, json: j }
}
