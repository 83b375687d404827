//! Many arrays at once, the engine's [`copy`] for each: a dataset folder (FORMAT.md
//! §10), a Zarr group (v3 or v2, as xarray's `to_zarr` writes it), an `.npz` archive or
//! one array, into a dataset folder or a Zarr v3 group as xarray's `open_zarr` reads
//! it: every dim named, `_FillValue` where xarray keeps it, attributes, and each group's
//! members' metadata consolidated in its `zarr.json`. A local output is built beside
//! its name and moved into place whole; on any failure nothing is left.
//!
//! Sub-folders of a dataset are sub-groups, and the other way round; a dataset's
//! `dataset.yaml` attributes are its group's. A dataset's variables have their labels
//! and attributes as the array's Zarr metadata, and their whole trailer beside it, in
//! an extension field xarray does not show, so that they convert back the same bytes
//! (a trailer whose attributes were changed in Zarr is made anew from the metadata).
//! One array keeps its trailer among its attributes, as a bare array does
//! ([`ConvertOptions::zarr_array`]).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{Map, Value};
use yaml_rust2::yaml::Hash;
use yaml_rust2::Yaml;

use super::options::{ConvertOptions, Format};
use super::plan::{copy, Overall};
use super::{Converted, Source};
use crate::error::{io_at, Error, ErrorKind, Result};
use crate::formats::npz::NpzWriter;
use crate::formats::zarr::group::{self, Node};
use crate::formats::zarr::meta::{json_of_yaml, yaml_of_json, Reading};
use crate::formats::zarr::Location;
use crate::layout::Progress;
use crate::replace::NewFolder;

#[cfg(feature = "s3")]
mod remote;

/// Converts `input` into `output` where either is a tree of arrays: a dataset folder
/// or Zarr group in, or a `.zarr` out (a group of the one array, named after the
/// input, unless [`ConvertOptions::zarr_array`]) or a folder out. `None` when it is one
/// array into one array, which [`copy`] does.
pub(super) fn convert(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Option<Converted>> {
    if url_of(output) {
        let (i, o) = (input.to_string_lossy(), output.to_string_lossy());
        let (i, o) = (i.trim_end_matches('/'), o.trim_end_matches('/'));
        if i == o || i.starts_with(&format!("{o}/")) {
            return Err(Error::from(ErrorKind::InvalidArgument(
                "the output holds the input: in object storage, which has no rename, it \
                 would be replaced before it is read; convert into another name"
                    .into(),
            ))
            .at(output));
        }
    }
    let out = Format::by_extension(output);
    let into_tree = match out {
        Some(Format::Zarr) => !options.zarr_bare(),
        Some(Format::Npz) => true,
        // A tree's arrays into one file; one array is a file of one tensor.
        Some(Format::Safetensors) => true,
        // A folder; in object storage, a prefix ending `/`.
        None => !url_of(output) || output.to_string_lossy().ends_with('/'),
        Some(_) => false,
    };
    match (Tree::of(input, options)?, into_tree) {
        (Some(tree), true) => tree.write(output, options, progress).map(Some),
        (Some(tree), false) => {
            let source = tree.only(input, options)?;
            let sink = super::create(output, source.desc().clone(), options)?;
            copy(source, sink, progress).map(Some)
        }
        (None, true) if matches!(out, Some(Format::Zarr | Format::Npz)) => {
            let name = super::refs::array_name(input);
            one_into_group(input, &name, output, options, progress).map(Some)
        }
        (None, _) => Ok(None),
    }
}

/// The one array of `input` into a new Zarr group `output`, named `name`.
pub(super) fn one_into_group(
    input: &Path,
    name: &str,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    Tree::one(input, name.into()).write(output, options, progress)
}

/// One array in memory (`source`) into a new tree output `output` (a Zarr group, an
/// `.npz`), named `name`.
pub(super) fn source_into_group(
    source: Box<dyn Source>,
    name: String,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    let mut tree = Tree::new("one array", Map::new());
    tree.arrays
        .push((name, Member::Given(Mutex::new(Some(source)))));
    tree.write(output, options, progress)
}

/// An array of a tree, and where it is read from.
enum Member {
    /// A dataset's variable, a `.ra`.
    Variable(PathBuf),
    /// A member of an `.npz` archive (`archive`); a deflated one is inflated into the
    /// folder `scratch` first.
    Npz {
        archive: PathBuf,
        member: crate::formats::npz::Member,
        scratch: PathBuf,
    },
    /// One array: anything [`open`](super::open()) opens.
    One(PathBuf),
    /// One array already open (held in memory), taken when it is copied.
    Given(Mutex<Option<Box<dyn Source>>>),
    /// An array of a Zarr group, its fill value taken as xarray takes it.
    Zarr(PathBuf),
    /// A tensor of a safetensors file, by name.
    Tensor(PathBuf, String),
    /// An array inside a file of named arrays (a NetCDF variable), by name.
    Inside(PathBuf, String),
    /// A dataset of an HDF5 file (opened once for all of a tree's), by its path there.
    #[cfg(feature = "hdf5")]
    Hdf5(std::sync::Arc<crate::formats::hdf5::H5>, String),
}

/// A tree of arrays: each by its path in the tree (`a`, `sub/b`), and each group
/// (the root is `""`) with its attributes.
pub(super) struct Tree {
    /// What it is, for messages.
    kind: &'static str,
    arrays: Vec<(String, Member)>,
    groups: BTreeMap<String, Map<String, Value>>,
    /// The `dataset.yaml` of a group whose attributes have types JSON does not say (a
    /// NetCDF file's), written as given into a folder; a Zarr group has `groups`'.
    typed: BTreeMap<String, String>,
    /// The scratch copy of an object its arrays are read from (a safetensors file in
    /// object storage), removed with the tree.
    #[cfg(feature = "s3")]
    held: Option<crate::convert::remote::Scratch>,
}

impl Tree {
    /// A tree of no arrays yet, whose top group has `attrs`.
    fn new(kind: &'static str, attrs: Map<String, Value>) -> Tree {
        Tree {
            kind,
            arrays: Vec::new(),
            groups: BTreeMap::from([(String::new(), attrs)]),
            typed: BTreeMap::new(),
            #[cfg(feature = "s3")]
            held: None,
        }
    }

    /// Adds the dataset's variable `name` (`sub/x`) read from `at`, and the groups
    /// above it.
    fn add_variable(&mut self, name: String, at: PathBuf) {
        let mut g = name.as_str();
        while let Some((up, _)) = g.rsplit_once('/') {
            self.groups.entry(up.to_string()).or_default();
            g = up;
        }
        self.arrays.push((name, Member::Variable(at)));
    }

    /// The tree the local folder `input` holds, if it holds several arrays' worth: a
    /// Zarr group, or a dataset (a folder that is no Zarr node).
    pub fn of(input: &Path, options: &ConvertOptions) -> Result<Option<Tree>> {
        if url_of(input) {
            return remote_tree(input, options);
        }
        if input.is_file() {
            match Format::of(input).ok() {
                Some(Format::Safetensors) => return safetensors_tree(input).map(Some),
                Some(Format::NetCdf3) => {
                    let ds = crate::formats::netcdf3::engine::dataset(input)?;
                    return cdm_tree("a NetCDF file", input, ds).map(Some);
                }
                _ => {}
            }
        }
        #[cfg(feature = "hdf5")]
        if let Some(tree) = hdf5_tree(input)? {
            return Ok(Some(tree));
        }
        if !input.is_dir() {
            return Ok(None);
        }
        match group::node(input)? {
            Some(Node::Array) => Ok(None),
            Some(Node::Group(attrs)) => zarr_tree(input, attrs).map(Some),
            None => dataset_tree(input).map(Some),
        }
    }

    /// The tree of the arrays of the archive `input`, each named as it was saved; a
    /// deflated member is inflated into the folder `scratch` when it is read.
    pub fn of_npz(input: &Path, scratch: &Path) -> Result<Tree> {
        let mut tree = Tree::new("an .npz", Map::new());
        for (name, member) in crate::formats::npz::engine::members(input)? {
            let m = Member::Npz {
                archive: input.to_path_buf(),
                member,
                scratch: scratch.to_path_buf(),
            };
            tree.arrays.push((name, m));
        }
        Ok(tree)
    }

    /// One array, named `name`, in a group of its own.
    pub fn one(input: &Path, name: String) -> Tree {
        let mut tree = Tree::new("one array", Map::new());
        tree.arrays.push((name, Member::One(input.to_path_buf())));
        tree
    }

    /// Its one array, opened; several are refused, named, with what to do instead.
    pub fn only(&self, input: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>> {
        match self.arrays.as_slice() {
            [(name, m)] => open_member(name, m, Alone::Yes, options),
            [] => Err(Error::from(ErrorKind::InvalidArgument(format!(
                "{} with no arrays",
                self.kind
            )))
            .at(input)),
            arrays => {
                let names: Vec<&str> = arrays.iter().map(|(n, _)| n.as_str()).collect();
                Err(Error::from(ErrorKind::InvalidArgument(format!(
                    "{} of {} arrays ({}): convert it into a folder or a .zarr group, or \
                     name one array inside it",
                    self.kind,
                    arrays.len(),
                    names.join(", ")
                )))
                .at(input))
            }
        }
    }

    /// Writes the tree to `output`: a dataset folder, a Zarr group where its name ends
    /// `.zarr` (in object storage, a group of one array), or an `.npz` of its arrays.
    pub fn write(
        self,
        output: &Path,
        options: &ConvertOptions,
        progress: Progress,
    ) -> Result<Converted> {
        let zarr = Format::by_extension(output) == Some(Format::Zarr);
        if let Some((name, _)) = self
            .arrays
            .iter()
            .find(|(n, _)| self.groups.contains_key(n))
        {
            return Err(Error::from(ErrorKind::InvalidArgument(format!(
                "{name} is both an array and a group of {}: rename one",
                self.kind
            )))
            .at(output));
        }
        if Format::by_extension(output) == Some(Format::Npz) {
            return self.write_npz(output, options, progress);
        }
        if Format::by_extension(output) == Some(Format::Safetensors) {
            return self.write_safetensors(output, options, progress);
        }
        if url_of(output) {
            return upload(self, output, zarr, options, progress);
        }
        let folder = NewFolder::create(output, options.placement().overwrite)?;
        let top = folder.path();
        for (g, attrs) in &self.groups {
            if !g.is_empty() {
                // Not after an interrupt's removal of `top`, which this would make again.
                let _writing = crate::leftovers::writing();
                std::fs::create_dir_all(top.join(g)).map_err(io_at("create folder", output))?;
            }
            // A tree of no arrays is still a dataset: an empty one is a `dataset.yaml`
            // of no attributes (FORMAT.md §10), not an empty folder readers refuse.
            let empty = g.is_empty() && self.arrays.is_empty();
            if !zarr && (!attrs.is_empty() || empty) {
                let path = top.join(g).join(crate::dataset::ATTRIBUTES);
                let doc = self
                    .typed
                    .get(g)
                    .cloned()
                    .unwrap_or_else(|| attributes_doc(attrs));
                std::fs::write(&path, doc).map_err(io_at("write", output))?;
            }
        }
        let mut result = Converted::default();
        let mut overall = Overall::default();
        for (name, m) in &self.arrays {
            let source = open_member(name, m, Alone::No, options)?;
            let sink = if zarr {
                let at = Location::Local(top.join(name));
                crate::formats::zarr::engine::create(
                    &at,
                    source.desc().clone(),
                    &xarray(options, name, m),
                )?
            } else {
                let path = top.join(format!("{name}.ra"));
                super::local::create_local(&path, source.desc().clone(), options)?
            };
            result.stored_raw |= overall.copy(source, sink, progress)?.stored_raw;
        }
        if zarr {
            self.write_groups(top)?;
        }
        folder.place()?;
        Ok(result)
    }

    /// An `.npz` of the arrays, each `NAME.npy` (Fortran order): converted into a
    /// scratch `.npy` beside the output, then streamed into the archive. NumPy's
    /// archive has no groups, labels or attributes: a tree with sub-groups is refused,
    /// and only the arrays are kept.
    fn write_npz(
        self,
        output: &Path,
        options: &ConvertOptions,
        progress: Progress,
    ) -> Result<Converted> {
        let refuse = |why: &str| Err(Error::from(ErrorKind::Unsupported(why.into())).at(output));
        if url_of(output) {
            return refuse("an .npz into object storage: write it here, then upload it");
        }
        if let Some(g) = self.groups.keys().find(|g| !g.is_empty()) {
            return refuse(&format!(
                "the group {g}: an .npz holds arrays, not groups; convert the group's \
                 folder alone"
            ));
        }
        let dir = crate::replace::parent_dir(output);
        crate::replace::build_file(output, options.placement(), |new| {
            let mut npz = NpzWriter::new(new.file(), output);
            let mut result = Converted::default();
            let mut overall = Overall::default();
            for (name, m) in &self.arrays {
                let source = open_member(name, m, Alone::No, options)?;
                let (temporary, ()) = crate::formats::npz::engine::scratch(dir, "npy", |_| Ok(()))
                    .map_err(io_at("create a scratch file", dir))?;
                let scratch = temporary.path();
                // Errors name the archive's member, not the scratch file.
                let member = output.join(format!("{name}.npy"));
                let shown = |e: Error| e.shown_as(scratch, &member);
                let sink = super::local::create_local(scratch, source.desc().clone(), options)
                    .map_err(shown)?;
                result.stored_raw |= overall
                    .copy(source, sink, progress)
                    .map_err(shown)?
                    .stored_raw;
                let file = File::open(scratch).map_err(io_at("open", scratch))?;
                let len = file.metadata().map_err(io_at("stat", scratch))?.len();
                npz.add(&format!("{name}.npy"), file, len)?;
            }
            npz.finish()?;
            Ok(result)
        })
    }

    /// A safetensors file of the arrays, each named by its path in the tree (`sub/x`),
    /// in C order; the top group's attributes are its `__metadata__` (strings kept,
    /// other values as JSON text). Every array is described first, so that a type
    /// safetensors has not is refused before anything is written.
    fn write_safetensors(
        self,
        output: &Path,
        options: &ConvertOptions,
        progress: Progress,
    ) -> Result<Converted> {
        use crate::formats::safetensors::engine;
        if url_of(output) {
            return upload_safetensors(self, output, options, progress);
        }
        // Each opened for its description, then again when copied (a model's
        // hundreds of tensors are not all held open); one given in memory is kept.
        let mut descs = Vec::with_capacity(self.arrays.len());
        let mut kept = Vec::with_capacity(self.arrays.len());
        for (name, m) in &self.arrays {
            let source = open_member(name, m, Alone::No, options)?;
            descs.push((name.clone(), source.desc().clone()));
            kept.push(matches!(m, Member::Given(_)).then_some(source));
        }
        let metadata = engine::metadata_of(&self.groups[""]);
        crate::replace::build_file(output, options.placement(), |new| {
            let sinks = engine::start(new.file(), output, &descs, &metadata)?;
            let mut result = Converted::default();
            let mut overall = Overall::default();
            for (((name, m), kept), sink) in self.arrays.iter().zip(kept).zip(sinks) {
                let source = match kept {
                    Some(source) => source,
                    None => open_member(name, m, Alone::No, options)?,
                };
                result.stored_raw |= overall.copy(source, sink, progress)?.stored_raw;
            }
            Ok(result)
        })
    }

    /// Each group's `zarr.json` in the folder `top`, its members' metadata
    /// consolidated; the deepest first, the root last.
    fn write_groups(&self, top: &Path) -> Result<()> {
        let mut arrays: BTreeMap<String, Value> = BTreeMap::new();
        for (name, _) in &self.arrays {
            let path = top.join(name).join("zarr.json");
            let bytes = std::fs::read(&path).map_err(io_at("read", &path))?;
            let doc = serde_json::from_slice(&bytes)
                .map_err(|e| Error::decode("zarr", e.to_string()).at(&path))?;
            arrays.insert(name.clone(), doc);
        }
        for (g, doc) in self.group_docs(arrays) {
            let path = top.join(g).join("zarr.json");
            let text = serde_json::to_vec_pretty(&doc)
                .map_err(|e| Error::decode("zarr", e.to_string()).at(&path))?;
            std::fs::write(&path, text).map_err(io_at("write", &path))?;
        }
        Ok(())
    }

    /// Each group's `zarr.json`, the deepest first and the root last, from the arrays'
    /// own (`docs`, by path): its members' metadata consolidated.
    fn group_docs(&self, mut docs: BTreeMap<String, Value>) -> Vec<(String, Value)> {
        let mut groups: Vec<&String> = self.groups.keys().collect();
        groups.sort_by_key(|g| std::cmp::Reverse(depth(g)));
        let mut out = Vec::new();
        for g in groups {
            let doc = group::group_doc(self.groups[g].clone(), &below(&docs, g));
            // In its parents' consolidated metadata a group's own is empty: they hold
            // every node below them already (zarr-python's flattened form).
            let mut flat = doc.clone();
            flat["consolidated_metadata"]["metadata"] = Value::Object(Map::new());
            docs.insert(g.clone(), flat);
            out.push((g.clone(), doc));
        }
        out
    }
}

/// Whether `path` is an `s3://` URL.
fn url_of(path: &Path) -> bool {
    super::open::url_of(path).is_some()
}

fn depth(g: &str) -> usize {
    if g.is_empty() {
        0
    } else {
        g.matches('/').count() + 1
    }
}

/// The documents of the nodes below the group `g`, by path within it.
fn below(docs: &BTreeMap<String, Value>, g: &str) -> Vec<(String, Value)> {
    let prefix = if g.is_empty() {
        String::new()
    } else {
        format!("{g}/")
    };
    docs.iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?.to_string(), v.clone())))
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

/// The `dataset.yaml` of a group with `attrs`.
fn attributes_doc(attrs: &Map<String, Value>) -> String {
    let mut h = Hash::new();
    h.insert(
        Yaml::String("attributes".into()),
        yaml_of_json(&Value::Object(attrs.clone())),
    );
    crate::ndl::to_text(&Yaml::Hash(h))
}

/// The tree of a dataset in object storage (`s3://bucket/run/`, ending `/`), if `input`
/// names one.
#[cfg(feature = "s3")]
fn remote_tree(input: &Path, options: &ConvertOptions) -> Result<Option<Tree>> {
    remote::tree(input, options)
}

#[cfg(not(feature = "s3"))]
fn remote_tree(_input: &Path, _options: &ConvertOptions) -> Result<Option<Tree>> {
    Ok(None)
}

/// The tree into object storage at `output`: a Zarr group (`zarr`), or a dataset
/// under the prefix.
#[cfg(feature = "s3")]
fn upload(
    tree: Tree,
    output: &Path,
    zarr: bool,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    match zarr {
        true => remote::upload_group(tree, output, options, progress),
        false => remote::upload_folder(tree, output, options, progress),
    }
}

#[cfg(not(feature = "s3"))]
fn upload(
    _tree: Tree,
    output: &Path,
    _zarr: bool,
    _options: &ConvertOptions,
    _progress: Progress,
) -> Result<Converted> {
    Err(Error::from(ErrorKind::Unsupported(
        "a dataset or Zarr group in object storage, in a build without the `s3` feature".into(),
    ))
    .at(output))
}

/// The tree into object storage as the safetensors object `output`: written into a
/// scratch file, then uploaded whole.
#[cfg(feature = "s3")]
fn upload_safetensors(
    tree: Tree,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    use crate::convert::remote::{upload_scratch, Scratch};
    let scratch = Scratch::new("safetensors");
    let done = tree
        .write_safetensors(&scratch.0, &options.clone().overwrite(true), progress)
        .map_err(|e| e.shown_as(&scratch.0, output))?;
    upload_scratch(&scratch, &output.to_string_lossy(), options)?;
    Ok(done)
}

#[cfg(not(feature = "s3"))]
fn upload_safetensors(
    _tree: Tree,
    output: &Path,
    _options: &ConvertOptions,
    _progress: Progress,
) -> Result<Converted> {
    Err(Error::from(ErrorKind::Unsupported(
        "a .safetensors into object storage, in a build without the `s3` feature".into(),
    ))
    .at(output))
}

/// The name of the array at `path` in its tree (`x` for `sub/x`): a dataset's
/// variable's, after which the dims it has no labels for are named.
fn variable(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// `options` for the array `m` at `name` of a group: its Zarr metadata as xarray reads
/// it. A dataset's variable (every array of a tree but one array on its own) has the
/// dims it has no labels for named after it ([`crate::ndl::unlabeled_dims`]) and its
/// trailer kept aside, where xarray does not see it; one array keeps its trailer among
/// its attributes, as a bare array does.
fn xarray(options: &ConvertOptions, name: &str, m: &Member) -> ConvertOptions {
    let variable = match m {
        Member::One(_) | Member::Given(_) => None,
        _ => Some(variable(name)),
    };
    options.clone().zarr_xarray(variable)
}

/// Whether an array of a tree is read as one array on its own (the only one of its
/// tree, into one output) or as one of a dataset's variables.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Alone {
    Yes,
    No,
}

/// The array `m` at `name` of a tree, opened; a Zarr array read as `alone` says
/// ([`Reading`]).
fn open_member(
    name: &str,
    m: &Member,
    alone: Alone,
    options: &ConvertOptions,
) -> Result<Box<dyn Source>> {
    match m {
        Member::Variable(p) | Member::One(p) => super::open(p, options),
        Member::Given(source) => source
            .lock()
            .ok()
            .and_then(|mut s| s.take())
            .ok_or_else(|| {
                Error::from(ErrorKind::InvalidArgument(
                    "an array given in memory is copied once".into(),
                ))
            }),
        Member::Npz {
            archive,
            member,
            scratch,
        } => Ok(Box::new(crate::formats::npz::engine::MemberSource::open(
            archive, member, scratch,
        )?)),
        Member::Tensor(file, tensor) => Ok(Box::new(
            crate::formats::safetensors::engine::open_tensor(file, tensor)?,
        )),
        Member::Inside(file, name) => super::local::open_inside(file, name),
        #[cfg(feature = "hdf5")]
        Member::Hdf5(h5, object) => crate::formats::hdf5::engine::open_in(h5, object),
        Member::Zarr(p) => {
            let v = variable(name).to_string();
            let reading = match alone {
                Alone::Yes => Reading::OnlyOf(v),
                Alone::No => Reading::Variable(v),
            };
            let source = crate::formats::zarr::engine::ZarrSource::open_member(
                &options.zarr_at(p),
                reading,
            )?;
            Ok(Box::new(source))
        }
    }
}

/// The tree of the local Zarr group `dir`, whose attributes are `attrs`.
fn zarr_tree(dir: &Path, attrs: Map<String, Value>) -> Result<Tree> {
    let mut tree = Tree::new("a Zarr group", attrs);
    for (key, node) in group::members(dir)? {
        match node {
            Node::Array => tree
                .arrays
                .push((key.clone(), Member::Zarr(dir.join(&key)))),
            Node::Group(a) => {
                tree.groups.insert(key, a);
            }
        }
    }
    Ok(tree)
}

/// Whether `name` (parts split at `/`) is a path inside a folder: no part empty, `.`
/// or `..`, none holding a backslash or a NUL.
fn is_folder_path(name: &str) -> bool {
    name.split('/')
        .all(|c| !c.is_empty() && c != "." && c != ".." && !c.contains(['\\', '\0']))
}

/// The tree of the safetensors file `file`: each tensor by its name (a name holding
/// `/` is in a sub-group), `__metadata__` the top group's attributes.
fn safetensors_tree(file: &Path) -> Result<Tree> {
    let (names, attrs) = crate::formats::safetensors::engine::dataset(file)?;
    let mut tree = Tree::new("a safetensors file", attrs);
    for name in names {
        if !is_folder_path(&name) {
            return Err(Error::from(ErrorKind::Malformed {
                format: "safetensors",
                field: name,
                detail: "a tensor name that is no path inside a folder (an empty part, `.`, \
                         `..` or a backslash); name it in place as FILE/NAME instead"
                    .into(),
            })
            .at(file));
        }
        let mut g = name.as_str();
        while let Some((up, _)) = g.rsplit_once('/') {
            tree.groups.entry(up.to_string()).or_default();
            g = up;
        }
        let m = Member::Tensor(file.to_path_buf(), name.clone());
        tree.arrays.push((name, m));
    }
    Ok(tree)
}

/// The tree of the file `file` (`kind`, for messages) whose arrays the netCDF data
/// model `ds` describes: each variable by its name, read from the file by name; its
/// global attributes the top group's, typed in `dataset.yaml`.
fn cdm_tree(kind: &'static str, file: &Path, ds: crate::cdm::Dataset) -> Result<Tree> {
    let mut tree = Tree::new(kind, ds.attributes_json());
    if !ds.attributes.is_empty() {
        tree.typed.insert(String::new(), ds.attributes_doc());
    }
    for v in ds.variables {
        let name = v.name;
        if name.starts_with('.') || name.contains(['/', '\\', '\0']) {
            return Err(Error::from(ErrorKind::Unsupported(format!(
                "the variable {name:?} as a file in a folder (its name starts with `.` or \
                 holds a slash): name it in place as FILE/NAME instead"
            )))
            .at(file));
        }
        let m = Member::Inside(file.to_path_buf(), name.clone());
        tree.arrays.push((name, m));
    }
    Ok(tree)
}

/// The tree of an HDF5 file, or of a group in it (`x.h5/grp`), if `input` names one:
/// each dataset by its path from the group (`sub/x`), each group with its attributes.
#[cfg(feature = "hdf5")]
fn hdf5_tree(input: &Path) -> Result<Option<Tree>> {
    use crate::formats::hdf5::engine;
    let Some((file, object)) = super::hdf5_member(input) else {
        return Ok(None);
    };
    let Some(engine::GroupTree {
        h5,
        datasets,
        groups,
    }) = engine::tree(&file, &object)?
    else {
        return Ok(None);
    };
    let mut tree = Tree::new("an HDF5 group", Map::new());
    tree.groups = groups;
    tree.groups.entry(String::new()).or_default();
    for name in tree.groups.keys().chain(&datasets) {
        if !name.is_empty() && !is_folder_path(name) {
            return Err(Error::from(ErrorKind::Unsupported(format!(
                "the HDF5 object {name:?}: a name that is no path inside a folder (`.`, \
                 `..` or a backslash); name its datasets one by one as FILE/PATH instead"
            )))
            .at(&file));
        }
    }
    for d in datasets {
        let path = crate::formats::hdf5::join(&object, &d);
        tree.arrays.push((d, Member::Hdf5(h5.clone(), path)));
    }
    Ok(Some(tree))
}

/// Attributes as NDL holds them (a `dataset.yaml`'s), as JSON.
fn attributes_map(attrs: Option<Yaml>) -> Map<String, Value> {
    attrs
        .and_then(|a| json_of_yaml(&a).as_object().cloned())
        .unwrap_or_default()
}

/// The tree of the dataset at `folder`: its variables, and a group for the folder and
/// each sub-folder that holds variables, with its `dataset.yaml` attributes.
fn dataset_tree(folder: &Path) -> Result<Tree> {
    crate::dataset::check(folder)?;
    let mut tree = Tree::new("a dataset folder", Map::new());
    for v in crate::dataset::variables(folder)? {
        tree.add_variable(v.name, v.path);
    }
    for (g, attrs) in tree.groups.iter_mut() {
        let (a, typed) = crate::dataset::attributes_and_text(&folder.join(g))?;
        *attrs = attributes_map(a);
        // Attributes with their types (a NetCDF file's) go into a folder as they are.
        if let Some(text) = typed {
            tree.typed.insert(g.clone(), text);
        }
    }
    Ok(tree)
}
