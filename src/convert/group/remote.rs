//! Trees in object storage. A dataset: the objects under a prefix ending `/`
//! (`s3://bucket/run/`) are its files, `NAME.ra` its variables and `dataset.yaml` its
//! attributes, sub-prefixes its groups. A Zarr group: `s3://bucket/run.zarr`. Object
//! storage has no rename: a tree is written object by object (each variable a whole
//! upload, completed or aborted; each Zarr array's chunks, then its `zarr.json`), its
//! `dataset.yaml` files or groups' `zarr.json` last; on any failure the objects the
//! write added are removed (a variable it had replaced already holds the new one,
//! whole). Replacing a dataset removes the old objects the new one does
//! not have, once it is written; replacing a Zarr group removes the old one first (its
//! keys would mix with the new ones).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Map;

use super::{attributes_doc, attributes_map, open_member, xarray, Alone, Member, Node, Tree};
use crate::convert::options::{is_zarr, ConvertOptions, Format};
use crate::convert::plan::Overall;
use crate::convert::Converted;
use crate::dataset::ATTRIBUTES;
use crate::error::{Error, ErrorKind, Result};
use crate::formats::zarr::group;
use crate::layout::Progress;
use crate::remote::objects::{self, Listed};

/// The tree at `input`: a Zarr group (v3 or v2), or the dataset under a prefix ending
/// `/`; `None` for anything else.
pub(super) fn tree(input: &Path, options: &ConvertOptions) -> Result<Option<Tree>> {
    let url = input.to_string_lossy();
    if is_zarr(input) {
        return zarr_tree(&url, options);
    }
    if Format::by_extension(input) == Some(Format::Safetensors) {
        // Downloaded whole, then read as a local file is; named as the object.
        let scratch = crate::convert::remote::downloaded(&url, "safetensors", options)?;
        let mut tree =
            super::safetensors_tree(&scratch.0).map_err(|e| e.shown_as(&scratch.0, input))?;
        tree.held = Some(scratch);
        return Ok(Some(tree));
    }
    if !url.ends_with('/') {
        return Ok(None);
    }
    let remote = options.remote_options();
    let base = url.trim_end_matches('/');
    // One listing: the variables and the groups' attributes.
    let listed: Vec<Listed> = objects::list_where(&url, remote, |n| {
        !objects::hidden(n) && (n.ends_with(".ra") || n.ends_with(ATTRIBUTES))
    })?;
    let mut tree = Tree::new("a dataset folder", Map::new());
    for (name, at) in objects::variables_in(&listed, &url)? {
        tree.add_variable(name, at.into());
    }
    for l in &listed {
        let group = match l.name.strip_suffix(ATTRIBUTES) {
            Some("") => "",
            Some(g) if g.ends_with('/') => g.trim_end_matches('/'),
            _ => continue,
        };
        objects::check_name(&l.name, &url)?;
        let at = format!("{base}/{}", l.name);
        let attrs = objects::dataset_attributes(&at, remote)?;
        tree.groups.insert(group.to_string(), attributes_map(attrs));
    }
    Ok(Some(tree))
}

/// The JSON document in the object `url`, if there is one.
fn json_at(url: &str, options: &ConvertOptions) -> Result<Option<serde_json::Value>> {
    let Some(bytes) = objects::get_small(url, 16 << 20, options.remote_options())? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| Error::decode("zarr", format!("not JSON: {e}")).at(url))
}

/// The Zarr group at `url` in object storage, its members found by listing (v3
/// `zarr.json`, v2 `.zarray` and `.zgroup`); `None` if it is no group. Only the
/// documents the listing holds are fetched.
fn zarr_tree(url: &str, options: &ConvertOptions) -> Result<Option<Tree>> {
    let base = url.trim_end_matches('/');
    // The node itself first: an array's store is never listed (its chunks may be many).
    let Some(Node::Group(attrs)) =
        group::node_of(|name| json_at(&format!("{base}/{name}"), options))?
    else {
        return Ok(None);
    };
    let metadata = |n: &str| {
        [".zarray", ".zgroup", ".zattrs", "zarr.json"]
            .iter()
            .any(|m| n.ends_with(m))
    };
    let listed: BTreeSet<String> =
        objects::list_where(&format!("{base}/"), options.remote_options(), metadata)?
            .into_iter()
            .map(|l| l.name)
            .collect();
    // The documents of the member at `key` that were listed: fetched where their
    // contents count (`zarr.json`, `.zattrs`); v2's `.zarray` and `.zgroup` only say
    // what the node is, which the listing already does.
    let node = |key: &str| {
        group::node_of(|name| match listed.contains(&format!("{key}/{name}")) {
            true if matches!(name, ".zarray" | ".zgroup") => Ok(Some(serde_json::Value::Null)),
            true => json_at(&format!("{base}/{key}/{name}"), options),
            false => Ok(None),
        })
    };
    let mut tree = Tree::new("a Zarr group", attrs);
    let keys: BTreeSet<&str> = listed
        .iter()
        .filter_map(|n| Some(n.rsplit_once('/')?.0))
        .collect();
    for key in keys {
        // (v2's own keys start with `.`: a hidden node is one whose path does.)
        if objects::hidden(key) {
            continue;
        }
        objects::check_name(key, url)?;
        match node(key)? {
            Some(Node::Array) => tree.arrays.push((
                key.to_string(),
                Member::Zarr(format!("{base}/{key}").into()),
            )),
            Some(Node::Group(a)) => {
                tree.groups.insert(key.to_string(), a);
            }
            None => {}
        }
    }
    Ok(Some(tree))
}

/// Writes `tree` as the dataset under the prefix `output`: refused where objects are
/// already unless overwriting.
pub(super) fn upload_folder(
    tree: Tree,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    let url = output.to_string_lossy();
    let base = url.trim_end_matches('/').to_string();
    let remote = options.remote_options();
    let old = objects::list(&url, remote)?;
    if !old.is_empty() && !options.placement().overwrite {
        return Err(Error::from(ErrorKind::Exists).at(output));
    }
    let dataset = |l: &Listed| l.name.ends_with(".ra") || l.name.ends_with(ATTRIBUTES);
    if !old.is_empty() && !old.iter().any(dataset) {
        return Err(Error::from(ErrorKind::InvalidArgument(
            "holds objects and is no dataset (no .ra objects, no dataset.yaml): not replaced"
                .into(),
        ))
        .at(output));
    }
    let mut written: Vec<String> = Vec::new();
    let result = (|| {
        let mut result = Converted::default();
        let mut overall = Overall::default();
        for (name, m) in &tree.arrays {
            let source = open_member(name, m, Alone::No, options)?;
            let to = format!("{base}/{name}.ra");
            let sink = crate::convert::create(Path::new(&to), source.desc().clone(), options)?;
            result.stored_raw |= overall.copy(source, sink, progress)?.stored_raw;
            written.push(to);
        }
        for (g, attrs) in tree.groups.iter().filter(|(_, a)| !a.is_empty()) {
            let to = match g.as_str() {
                "" => format!("{base}/{ATTRIBUTES}"),
                g => format!("{base}/{g}/{ATTRIBUTES}"),
            };
            objects::put(&to, attributes_doc(attrs).into_bytes(), remote)?;
            written.push(to);
        }
        Ok(result)
    })();
    let old: BTreeSet<String> = old.iter().map(|l| format!("{base}/{}", l.name)).collect();
    if result.is_err() {
        // What it added goes; an old object it replaced holds a whole new variable
        // (an upload is one object), the others are untouched.
        let added: Vec<String> = written.into_iter().filter(|u| !old.contains(u)).collect();
        let _ = objects::delete(&added, remote);
        return result;
    }
    // What the old dataset had and the new one has not.
    let new: BTreeSet<&String> = written.iter().collect();
    let stale: Vec<String> = old.iter().filter(|u| !new.contains(u)).cloned().collect();
    objects::delete(&stale, remote)?;
    result
}

/// Writes `tree` as the Zarr group at `output` (`s3://bucket/run.zarr`): each array
/// (chunks, then its `zarr.json`), then each group's `zarr.json`, the root last.
pub(super) fn upload_group(
    tree: Tree,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    let base = output.to_string_lossy().trim_end_matches('/').to_string();
    let prefix = format!("{base}/");
    let remote = options.remote_options();
    let old: Vec<String> = objects::list(&prefix, remote)?
        .into_iter()
        .map(|l| format!("{prefix}{}", l.name))
        .collect();
    if !old.is_empty() {
        if !options.placement().overwrite {
            return Err(Error::from(ErrorKind::Exists).at(output));
        }
        // Zarr keys hold no version: the old group goes first, as zarr-python's
        // mode="w" does.
        objects::delete(&old, remote)?;
    }
    let at = |name: &str| match name {
        "" => options.zarr_at(Path::new(&base)),
        n => options.zarr_at(Path::new(&format!("{base}/{n}"))),
    };
    let result = (|| {
        let mut result = Converted::default();
        let mut docs = BTreeMap::new();
        let mut overall = Overall::default();
        for (name, m) in &tree.arrays {
            let source = open_member(name, m, Alone::No, options)?;
            let to = at(name);
            let sink = crate::formats::zarr::engine::create(
                &to,
                source.desc().clone(),
                &xarray(options, name, m),
            )?;
            result.stored_raw |= overall.copy(source, sink, progress)?.stored_raw;
            docs.insert(name.clone(), group::read_doc(&to)?);
        }
        for (g, doc) in tree.group_docs(docs) {
            group::write_doc(&at(&g), &doc)?;
        }
        Ok(result)
    })();
    if result.is_err() {
        if let Ok(written) = objects::list(&prefix, remote) {
            let urls: Vec<String> = written
                .iter()
                .map(|l| format!("{prefix}{}", l.name))
                .collect();
            let _ = objects::delete(&urls, remote);
        }
    }
    result
}
