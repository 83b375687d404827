//! Zarr groups: the `zarr.json` of a v3 group with its members' metadata consolidated
//! (as zarr-python's `consolidate_metadata` writes it, and xarray's `open_zarr` reads
//! it first), written last; and the members of a local group, v3 or v2, as xarray's
//! `to_zarr` writes them.

use std::path::Path;

use serde_json::{json, Map, Value};
use zarrs::storage::Bytes;

use super::store::{self, Location};
use super::zarr_err;
use crate::error::{io_at, Result};

/// Largest group metadata document read (`zarr.json`, `.zattrs`).
const MAX_METADATA: u64 = 16 << 20;

/// The `zarr.json` of a v3 group with `attributes`, whose members below it (by path
/// within it, `a` or `sub/b`) have the metadata `members` gives, consolidated.
pub fn group_doc(attributes: Map<String, Value>, members: &[(String, Value)]) -> Value {
    let metadata: Map<String, Value> = members.iter().cloned().collect();
    json!({
        "zarr_format": 3,
        "node_type": "group",
        "attributes": attributes,
        "consolidated_metadata": {"kind": "inline", "must_understand": false, "metadata": metadata},
    })
}

/// Stores `doc` as the `zarr.json` of the node at `location`.
pub fn write_doc(location: &Location, doc: &Value) -> Result<()> {
    let shown = location.shown();
    let text = serde_json::to_vec_pretty(doc).map_err(|e| zarr_err(&shown, None, e))?;
    let store = store::open(location, None)?;
    store
        .storage
        .set(&store.key("zarr.json")?, Bytes::from(text))
        .map_err(|e| zarr_err(&shown, None, e))
}

/// The name of the one array in the v3 group `doc`, by its consolidated metadata; or
/// why the group is not one array, naming its arrays.
pub fn only_array(doc: &Value) -> std::result::Result<String, String> {
    let members = doc["consolidated_metadata"]["metadata"].as_object();
    let arrays: Vec<&String> = members
        .iter()
        .flat_map(|m| m.iter())
        .filter(|(_, v)| v["node_type"] == "array")
        .map(|(k, _)| k)
        .collect();
    match (arrays.as_slice(), members.map(Map::len)) {
        ([name], Some(1)) if !name.contains('/') && !name.starts_with('.') => Ok(name.to_string()),
        (_, None) => Err(
            "a Zarr group without consolidated metadata: convert it into a \
                          folder, or name the array inside it"
                .into(),
        ),
        (names, _) => Err(format!(
            "a Zarr group of {} arrays ({}): convert it into a folder, or name the array \
             inside it",
            names.len(),
            names
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The `zarr.json` of the node at `location`.
pub fn read_doc(location: &Location) -> Result<Value> {
    let shown = location.shown();
    let store = store::open(location, None)?;
    let bytes = store
        .storage
        .get(&store.key("zarr.json")?)
        .map_err(|e| zarr_err(&shown, None, e))?
        .ok_or_else(|| zarr_err(&shown, None, "no zarr.json"))?;
    if bytes.len() as u64 > MAX_METADATA {
        return Err(zarr_err(
            &shown,
            None,
            "zarr.json is larger than metadata can be",
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| zarr_err(&shown, None, format!("zarr.json: {e}")))
}

/// A node of a local Zarr hierarchy.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// An array (`zarr.json` of node type array, or `.zarray`).
    Array,
    /// A group (`zarr.json` of node type group, or `.zgroup`), with its attributes.
    Group(Map<String, Value>),
}

/// What a node of a Zarr hierarchy is, from its documents as `doc(name)` gives them
/// (`zarr.json`, `.zarray`, `.zgroup`, `.zattrs`; `None` where there is none), in any
/// store: v3's `zarr.json` first, then v2's.
pub fn node_of(mut doc: impl FnMut(&str) -> Result<Option<Value>>) -> Result<Option<Node>> {
    let attributes = |d: Option<Value>| d.and_then(|a| a.as_object().cloned()).unwrap_or_default();
    if let Some(d) = doc("zarr.json")? {
        return Ok(Some(match d["node_type"].as_str() {
            Some("group") => Node::Group(attributes(Some(d["attributes"].clone()))),
            _ => Node::Array,
        }));
    }
    if doc(".zarray")?.is_some() {
        return Ok(Some(Node::Array));
    }
    if doc(".zgroup")?.is_some() {
        return Ok(Some(Node::Group(attributes(doc(".zattrs")?))));
    }
    Ok(None)
}

/// What the local folder `dir` is in a Zarr hierarchy, if it is a node of one.
pub fn node(dir: &Path) -> Result<Option<Node>> {
    node_of(|name| json_in(&dir.join(name)))
}

/// The nodes below the local group `dir`, by path within it (`a`, `sub`, `sub/b`),
/// sorted, each group before its members. Folders that are no Zarr node, and names
/// starting with `.`, are not members.
pub fn members(dir: &Path) -> Result<Vec<(String, Node)>> {
    let mut out = Vec::new();
    walk(dir, "", &mut out)?;
    Ok(out)
}

fn walk(dir: &Path, at: &str, out: &mut Vec<(String, Node)>) -> Result<()> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map_err(io_at("read the folder", dir))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    for name in names {
        let path = dir.join(&name);
        let Some(node) = node(&path)? else { continue };
        let key = format!("{at}{name}");
        let group = matches!(node, Node::Group(_));
        out.push((key.clone(), node));
        if group {
            walk(&path, &format!("{key}/"), out)?;
        }
    }
    Ok(())
}

/// The JSON document in the file `path`, if there is one.
fn json_in(path: &Path) -> Result<Option<Value>> {
    if !path.is_file() {
        return Ok(None);
    }
    let len = std::fs::metadata(path).map_err(io_at("stat", path))?.len();
    if len > MAX_METADATA {
        return Err(zarr_err(
            path,
            None,
            format!("{len} bytes, more than metadata can be"),
        ));
    }
    let bytes = std::fs::read(path).map_err(io_at("read", path))?;
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        zarr_err(path, None, format!("{name} is not JSON: {e}"))
    })
}
