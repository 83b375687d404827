//! Datasets in object storage: the objects under a prefix ending `/`
//! (`s3://bucket/run/`) are its files, `NAME.ra` its variables and `dataset.yaml` its
//! attributes, sub-prefixes its groups. Object storage has no rename: a dataset is
//! written object by object (each variable a whole upload, completed or aborted), its
//! `dataset.yaml` files last; on any failure every object written is removed. Replacing
//! one removes the old objects the new dataset does not have, once it is written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Map;

use super::{attributes_doc, open_member, Member, Tree};
use crate::convert::options::{is_zarr, ConvertOptions};
use crate::convert::plan::copy;
use crate::convert::Converted;
use crate::dataset::{attributes_in, ATTRIBUTES, MAX_ATTRIBUTES};
use crate::error::{Error, ErrorKind, Result};
use crate::formats::zarr::meta::json_of_yaml;
use crate::layout::Progress;
use crate::remote::objects::{self, Listed};

/// The dataset at `input`, if it names a prefix (ending `/`) that is no Zarr store.
pub(super) fn tree(input: &Path, options: &ConvertOptions) -> Result<Option<Tree>> {
    let url = input.to_string_lossy();
    if !url.ends_with('/') || is_zarr(input) {
        return Ok(None);
    }
    let remote = options.remote_options();
    let base = url.trim_end_matches('/');
    let listed: Vec<Listed> = objects::list(&url, remote)?
        .into_iter()
        .filter(|l| !objects::hidden(&l.name))
        .collect();
    let mut tree = Tree {
        kind: "a dataset folder",
        arrays: Vec::new(),
        groups: BTreeMap::from([(String::new(), Map::new())]),
    };
    for l in &listed {
        if let Some(stem) = l.name.strip_suffix(".ra") {
            let at = format!("{base}/{}", l.name);
            tree.arrays
                .push((stem.to_string(), Member::Variable(at.into())));
            let mut g = stem;
            while let Some((up, _)) = g.rsplit_once('/') {
                tree.groups.entry(up.to_string()).or_default();
                g = up;
            }
        }
    }
    for l in &listed {
        let group = match l.name.strip_suffix(ATTRIBUTES) {
            Some("") => "",
            Some(g) if g.ends_with('/') => g.trim_end_matches('/'),
            _ => continue,
        };
        let at = format!("{base}/{}", l.name);
        let text = objects::get_small(&at, MAX_ATTRIBUTES, remote)?.unwrap_or_default();
        let attrs = attributes_in(&text).map_err(|e| e.at(&at))?;
        let attrs = attrs.map(|a| json_of_yaml(&a));
        let attrs = attrs
            .and_then(|a| a.as_object().cloned())
            .unwrap_or_default();
        tree.groups.insert(group.to_string(), attrs);
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
    let mut written: Vec<String> = Vec::new();
    let result = (|| {
        let mut result = Converted::default();
        for (name, m) in &tree.arrays {
            let source = open_member(m, options)?;
            let to = format!("{base}/{name}.ra");
            let sink = crate::convert::create(Path::new(&to), source.desc().clone(), options)?;
            written.push(to);
            result.stored_raw |= copy(source, sink, progress)?.stored_raw;
        }
        for (g, attrs) in tree.groups.iter().filter(|(_, a)| !a.is_empty()) {
            let to = match g.as_str() {
                "" => format!("{base}/{ATTRIBUTES}"),
                g => format!("{base}/{g}/{ATTRIBUTES}"),
            };
            written.push(to.clone());
            objects::put(&to, attributes_doc(attrs).into_bytes(), remote)?;
        }
        Ok(result)
    })();
    if result.is_err() {
        let _ = objects::delete(&written, remote);
        return result;
    }
    // What the old dataset had and the new one has not.
    let new: BTreeSet<&String> = written.iter().collect();
    let stale: Vec<String> = old
        .iter()
        .map(|l| format!("{base}/{}", l.name))
        .filter(|u| !new.contains(u))
        .collect();
    objects::delete(&stale, remote)?;
    result
}
