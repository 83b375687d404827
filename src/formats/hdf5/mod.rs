//! HDF5 files (and NetCDF-4 and MATLAB v7.3 files, which are HDF5 inside) in: groups,
//! datasets and attributes, read with [hdf5-reader](https://docs.rs/hdf5-reader) for
//! the metadata only (superblock, object headers, types, layouts, chunk indexes) from
//! rastore's own positioned reads ([`store`]); rastore reads the data itself.
//!
//! - A group's links are listed from its own header ([`links`]), and each member is
//!   opened by itself: one that cannot be read is refused by its name and does not
//!   hide its siblings. A tree follows hard links, as h5py's `visititems` does (each
//!   group once: a cycle ends); a member named by a path follows soft links too, as
//!   `f["a/b"]` does.
//! - Types ([`dtype`]) become NumPy descrs; layouts ([`layout`]) become a run of the
//!   file read in place (contiguous), bytes in memory (compact), the fill value
//!   (never written), or a Zarr v2 chunk table (chunked) that zarrs decodes.
//! - Attributes ([`attrs`]) become NDL attributes.
//!
//! Every size the file claims is checked against its length before anything is
//! allocated for it, and every error names the file and the object.

mod attrs;
mod dtype;
pub mod engine;
pub mod info;
mod layout;
mod links;
mod matlab;
mod store;

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use hdf5_reader::error::Error as H5Error;
use hdf5_reader::group::Group;
use hdf5_reader::messages::dataspace::DataspaceType;
use hdf5_reader::messages::link::LinkTarget;
use hdf5_reader::messages::HdfMessage;
use hdf5_reader::object_header::ObjectHeader;
use hdf5_reader::{Attribute, Datatype, Hdf5File, OpenOptions};
use serde_json::{Map, Value};

use crate::error::{io_at, Error, ErrorKind, Result};
pub use dtype::Elem;
use layout::{Filter, Layout};
use links::{Link, Sizes};

/// Most soft links followed to reach one object.
const MAX_SOFT: usize = 16;

/// Deepest group a tree goes into.
const MAX_DEPTH: usize = 64;

/// Largest object header read (all its chunks).
const MAX_HEADER: usize = 16 << 20;

/// An HDF5 file, open.
pub struct H5 {
    h5: Hdf5File,
    file: Arc<File>,
    path: PathBuf,
    len: u64,
    base: u64,
    sizes: Sizes,
    /// A MATLAB v7.3 file (its user block says so): variables keep MATLAB's shape.
    matlab: bool,
    /// A NetCDF-4 file (its root has `_NCProperties`): netCDF's conventions apply.
    netcdf: bool,
    /// Each dataset's name by its address, to name the dimension scales that
    /// `DIMENSION_LIST`s refer to; listed once, when first needed.
    names: std::sync::OnceLock<std::collections::HashMap<u64, String>>,
    /// Each group's links by its header's address, parsed once: every dataset is
    /// looked up by its path from the root, through the groups above it.
    links: Mutex<HashMap<u64, Arc<Vec<Link>>>>,
}

/// What an object path leads to.
pub enum Object {
    /// A group, and its object header's address.
    Group(Group, u64),
    /// A dataset, by its link `name` in the group `parent`, and its address.
    Dataset {
        /// The group whose link leads to it.
        parent: Group,
        /// The link's name.
        name: String,
        /// Its object header's address.
        address: u64,
    },
}

/// An object a tree holds, by its path from the tree's top (`a`, `g/b`).
pub enum Entry {
    /// A group, with its attributes.
    Group(String, Map<String, Value>),
    /// A dataset, and its object header's address.
    Dataset(String, u64),
    /// An object that cannot be read: why.
    Refused(String, Error),
    /// A soft or external link, not followed in a tree: where it leads.
    Link(String, String),
}

impl H5 {
    /// Opens the HDF5 file `path`.
    pub fn open(path: &Path) -> Result<H5> {
        let file = File::open(path).map_err(io_at("open", path))?;
        let len = file.metadata().map_err(io_at("stat", path))?.len();
        let mut head = [0u8; 20];
        let n = (len as usize).min(head.len());
        crate::sys::read_exact_at(&file, &mut head[..n], 0).map_err(io_at("read", path))?;
        if !crate::sniff::is_hdf5_file(&file, len) {
            let why = if head.starts_with(b"MATLAB 5.0 MAT-file") {
                "a MATLAB v5 .mat file (not HDF5): rastore reads v7.3 .mat files; save it \
                 with `save(name, '-v7.3')`, or read it with scipy.io.loadmat"
                    .to_string()
            } else {
                format!(
                    "no HDF5 superblock: {}",
                    crate::sniff::what(&head[..n]).unwrap_or("unknown contents")
                )
            };
            return Err(Error::from(ErrorKind::Unsupported(why)).at(path));
        }
        let file = Arc::new(file);
        let options = OpenOptions::default()
            .with_chunk_cache_bytes(0)
            .with_max_read_bytes(64 << 20)
            .with_max_chunk_bytes(64 << 20)
            .with_max_object_header_bytes(MAX_HEADER);
        let h5 = Hdf5File::from_storage_with_options(store::storage(file.clone(), len), options)
            .map_err(|e| malformed("superblock", e).at(path))?;
        let sb = h5.superblock();
        let sizes = Sizes {
            offset: sb.offset_size,
            length: sb.length_size,
        };
        let base = sb.base_address;
        let netcdf = h5
            .root_group()
            .and_then(|g| g.attributes())
            .is_ok_and(|a| a.iter().any(|a| a.name == "_NCProperties"));
        Ok(H5 {
            h5,
            file,
            path: path.to_path_buf(),
            len,
            base,
            sizes,
            matlab: base > 0 && head.starts_with(b"MATLAB 7.3 MAT-file"),
            netcdf,
            names: std::sync::OnceLock::new(),
            links: Mutex::default(),
        })
    }

    /// Whether it is a NetCDF-4 file.
    pub fn netcdf(&self) -> bool {
        self.netcdf
    }

    /// The name (its link's) of each dataset the root's tree reaches, by address: what
    /// a dimension scale is called.
    fn names(&self) -> &std::collections::HashMap<u64, String> {
        self.names.get_or_init(|| {
            let mut names = std::collections::HashMap::new();
            for e in self.walk("").unwrap_or_default() {
                if let Entry::Dataset(path, address) = e {
                    let name = path.rsplit('/').next().unwrap_or(&path).to_string();
                    names.entry(address).or_insert(name);
                }
            }
            names
        })
    }

    /// The names of the dimensions of `ds`: a dimension scale's own name (a 1-D one),
    /// else the scales its `DIMENSION_LIST` refers to, one per dim; `None` when it
    /// names none, or not all.
    pub fn dimension_names(&self, ds: &Dataset) -> Option<Vec<String>> {
        if ds.scale && ds.own == 1 {
            let name = ds.object.rsplit('/').next().unwrap_or(&ds.object);
            return Some(vec![name.to_string()]);
        }
        let refs = ds
            .dim_refs
            .as_ref()
            .filter(|r| r.len() == ds.own && ds.own == ds.shape.len())?;
        let names = self.names();
        refs.iter().map(|a| names.get(a).cloned()).collect()
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether it is a MATLAB v7.3 file.
    pub fn matlab(&self) -> bool {
        self.matlab
    }

    /// How the object at `object` (`grp/dset`; the root is `""`) is named in messages:
    /// the file's path, then the object's, as `h5ls` names it.
    pub fn shown(&self, object: &str) -> PathBuf {
        if object.is_empty() {
            self.path.clone()
        } else {
            self.path.join(object)
        }
    }

    /// `e`, an hdf5-reader error met reading `object`, as ours, naming both.
    fn err(&self, object: &str, e: H5Error) -> Error {
        let shown = self.shown(object);
        match unwrap(e) {
            H5Error::UnsupportedLayoutClass(3) => Error::from(ErrorKind::Unsupported(
                "a virtual dataset (its elements are mapped from other datasets): h5py \
                 reads it, or `h5repack -l CONTI` writes it out as data"
                    .into(),
            ))
            .at(shown),
            e => malformed(&format!("/{object}"), e).at(shown),
        }
    }

    /// The object header at `address`, of the object `object`.
    fn header(&self, object: &str, address: u64) -> Result<Arc<ObjectHeader>> {
        self.h5
            .get_or_parse_header(address)
            .map_err(|e| self.err(object, e))
    }

    /// The links of the group `object` whose header is at `address`, sorted by name.
    fn links(&self, object: &str, address: u64) -> Result<Arc<Vec<Link>>> {
        let known = self
            .links
            .lock()
            .ok()
            .and_then(|m| m.get(&address).cloned());
        if let Some(links) = known {
            return Ok(links);
        }
        let header = self.header(object, address)?;
        let links = links::links(self.h5.storage(), &header, self.sizes)
            .map_err(|e| self.err(object, e))?;
        let links = Arc::new(links);
        if let Ok(mut m) = self.links.lock() {
            m.insert(address, links.clone());
        }
        Ok(links)
    }

    /// The root group.
    fn root(&self) -> Result<(Group, u64)> {
        let g = self.h5.root_group().map_err(|e| self.err("", e))?;
        let address = g.address();
        Ok((g, address))
    }

    /// The object `object` names (`grp/dset`, components split at `/`; empty for the
    /// root), soft links followed.
    pub fn resolve(&self, object: &str) -> Result<Object> {
        let mut soft = 0;
        self.resolve_from(self.root()?, String::new(), object, &mut soft)
    }

    /// The object `object` names from the group `here` (its path), which is `group`
    /// at `address`.
    fn resolve_from(
        &self,
        (mut group, mut address): (Group, u64),
        mut here: String,
        object: &str,
        soft: &mut usize,
    ) -> Result<Object> {
        let parts: Vec<&str> = object
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .collect();
        for (k, part) in parts.iter().enumerate() {
            let last = k + 1 == parts.len();
            let path = join(&here, part);
            let links = self.links(&here, address)?;
            let Ok(at) = links.binary_search_by(|l| l.name.as_str().cmp(part)) else {
                return Err(self.missing(&here, part, &links));
            };
            let link = &links[at];
            let (child, child_address) = match &link.target {
                LinkTarget::Hard { address } => (None, *address),
                LinkTarget::Soft { path: to } => {
                    *soft += 1;
                    if *soft > MAX_SOFT {
                        return Err(malformed(
                            &format!("/{path}"),
                            format!("more than {MAX_SOFT} soft links followed (a cycle?)"),
                        )
                        .at(self.shown(&path)));
                    }
                    let (start, from) = if to.starts_with('/') {
                        (self.root()?, String::new())
                    } else {
                        ((group.clone(), address), here.clone())
                    };
                    match self.resolve_from(start, from, to, soft)? {
                        Object::Group(g, a) => (Some(g), a),
                        Object::Dataset { address, .. } => (None, address),
                    }
                }
                LinkTarget::External { filename, path: to } => {
                    return Err(Error::from(ErrorKind::Unsupported(format!(
                        "an external link (to {filename}:{to}): name the object in that \
                         file instead"
                    )))
                    .at(self.shown(&path)))
                }
            };
            let h = self.header(&path, child_address)?;
            match kind(&h) {
                Kind::Group => {
                    let g = match child {
                        Some(g) => g,
                        None => group.group(part).map_err(|e| self.err(&path, e))?,
                    };
                    group = g;
                    address = child_address;
                }
                Kind::Dataset if last => {
                    return Ok(Object::Dataset {
                        parent: group,
                        name: part.to_string(),
                        address: child_address,
                    })
                }
                Kind::Dataset => {
                    return Err(Error::from(ErrorKind::InvalidArgument(format!(
                        "{path} is a dataset, not a group"
                    )))
                    .at(self.shown(&path)))
                }
                Kind::Other => {
                    return Err(Error::from(ErrorKind::Unsupported(
                        "a named datatype, not a dataset or a group".into(),
                    ))
                    .at(self.shown(&path)))
                }
            }
            here = path;
        }
        Ok(Object::Group(group, address))
    }

    /// The error for no member `name` in the group `at`, naming those it has.
    fn missing(&self, at: &str, name: &str, links: &[Link]) -> Error {
        let names: Vec<&str> = links.iter().map(|l| l.name.as_str()).collect();
        let held = match names.len() {
            0 => "nothing".to_string(),
            n if n > 20 => format!("{n} members: {}, …", names[..20].join(", ")),
            _ => names.join(", "),
        };
        Error::from(ErrorKind::InvalidArgument(format!(
            "no member {name:?} in the group /{at} (it holds {held})"
        )))
        .at(self.shown(&join(at, name)))
    }

    /// The objects of the group `top` and below, hard links followed (each group
    /// once), in `h5ls -r` order: a group's members by name, each group's own
    /// members after it. Paths are from `top`.
    pub fn walk(&self, top: &str) -> Result<Vec<Entry>> {
        let (group, address) = match self.resolve(top)? {
            Object::Group(g, a) => (g, a),
            Object::Dataset { .. } => {
                return Err(Error::from(ErrorKind::InvalidArgument(
                    "a dataset, not a group".into(),
                ))
                .at(self.shown(top)))
            }
        };
        let mut out = vec![Entry::Group(
            String::new(),
            self.group_attributes(top, &group)?,
        )];
        let mut seen = HashSet::from([address]);
        self.walk_into(top, "", (&group, address), 0, &mut seen, &mut out)?;
        Ok(out)
    }

    fn walk_into(
        &self,
        top: &str,
        rel: &str,
        (group, address): (&Group, u64),
        depth: usize,
        seen: &mut HashSet<u64>,
        out: &mut Vec<Entry>,
    ) -> Result<()> {
        let object = join(top, rel);
        for link in self.links(&object, address)?.iter() {
            let child = join(rel, &link.name);
            let path = join(top, &child);
            let address = match &link.target {
                LinkTarget::Hard { address } => *address,
                LinkTarget::Soft { path: to } => {
                    out.push(Entry::Link(child, to.clone()));
                    continue;
                }
                LinkTarget::External { filename, path: to } => {
                    out.push(Entry::Link(child, format!("{filename}:{to}")));
                    continue;
                }
            };
            let h = match self.header(&path, address) {
                Ok(h) => h,
                Err(e) => {
                    out.push(Entry::Refused(child, e));
                    continue;
                }
            };
            match kind(&h) {
                Kind::Dataset => out.push(Entry::Dataset(child, address)),
                Kind::Other => {}
                Kind::Group if !seen.insert(address) => {}
                Kind::Group if depth >= MAX_DEPTH => {
                    return Err(malformed(
                        &format!("/{path}"),
                        format!("groups nested more than {MAX_DEPTH} deep"),
                    )
                    .at(self.shown(&path)))
                }
                Kind::Group => {
                    let g = match group.group(&link.name) {
                        Ok(g) => g,
                        Err(e) => {
                            out.push(Entry::Refused(child, self.err(&path, e)));
                            continue;
                        }
                    };
                    let attrs = match self.group_attributes(&path, &g) {
                        Ok(a) => a,
                        Err(e) => {
                            out.push(Entry::Refused(child, e));
                            continue;
                        }
                    };
                    out.push(Entry::Group(child.clone(), attrs));
                    self.walk_into(top, &child, (&g, address), depth + 1, seen, out)?;
                }
            }
        }
        Ok(())
    }

    /// The addresses of the dimension scales a `DIMENSION_LIST` among `attributes`
    /// refers to (the first of each of its `rank` lists), if it has one that reads.
    fn dimension_list(
        &self,
        parent: &Group,
        attributes: &[Attribute],
        rank: usize,
    ) -> Option<Vec<u64>> {
        let list = attributes.iter().find(|a| a.name == "DIMENSION_LIST")?;
        let os = self.sizes.offset;
        let entry = 4 + usize::from(os) + 4;
        if rank == 0 || list.raw_data.len() < rank * entry {
            return None;
        }
        list.raw_data
            .chunks_exact(entry)
            .take(rank)
            .map(|e| {
                let heap = parent
                    .resolve_vlen_reference_bytes(e, usize::from(os))
                    .ok()?;
                let refs = hdf5_reader::reference::read_object_references(&heap, os).ok()?;
                refs.first().copied()
            })
            .collect()
    }

    /// The attributes of the group `object`, as NDL attributes.
    fn group_attributes(&self, object: &str, g: &Group) -> Result<Map<String, Value>> {
        let attrs = g.attributes().map_err(|e| self.err(object, e))?;
        Ok(attrs::attributes(&attrs, false, self.netcdf))
    }

    /// The dataset `object`, its metadata read (nothing refused yet: see
    /// [`Dataset::elem`]).
    pub fn dataset(&self, object: &str) -> Result<Dataset> {
        let (parent, name, address) = match self.resolve(object)? {
            Object::Dataset {
                parent,
                name,
                address,
            } => (parent, name, address),
            Object::Group(..) => {
                return Err(Error::from(ErrorKind::InvalidArgument(
                    "a group, not a dataset: convert it into a folder or a .zarr, or name \
                     a dataset in it"
                        .into(),
                ))
                .at(self.shown(object)))
            }
        };
        let object = object.trim_matches('/').to_string();
        let header = self.header(&object, address)?;
        let mut space = None;
        let mut datatype = None;
        let mut data_layout = None;
        let mut fill = None;
        let mut filters = Vec::new();
        let mut external = false;
        for m in &header.messages {
            match m {
                HdfMessage::Dataspace(s) => space = Some(s.clone()),
                HdfMessage::Datatype(t) => datatype = Some(t.datatype.clone()),
                HdfMessage::DataLayout(l) => data_layout = Some(l.layout.clone()),
                HdfMessage::FillValue(f) => fill = f.value.clone(),
                HdfMessage::FilterPipeline(p) => {
                    filters = p
                        .filters
                        .iter()
                        .map(|f| Filter {
                            id: f.id,
                            client_data: f.client_data.clone(),
                        })
                        .collect()
                }
                HdfMessage::ExternalFiles(_) => external = true,
                _ => {}
            }
        }
        let bad = |what: &str| {
            malformed(
                &format!("/{object}"),
                format!("a dataset with no {what} message"),
            )
            .at(self.shown(&object))
        };
        let space = space.ok_or_else(|| bad("dataspace"))?;
        let datatype = datatype.ok_or_else(|| bad("datatype"))?;
        let data_layout = data_layout.ok_or_else(|| bad("data layout"))?;
        let attributes = parent
            .dataset(&name)
            .map_err(|e| self.err(&object, e))?
            .attributes();
        let own = space.dims.len();
        let scale = attrs::is_scale(&attributes);
        let phony = scale
            && attrs::string(&attributes, "NAME").is_some_and(|n| {
                n.starts_with("This is a netCDF dimension but not a netCDF variable")
            });
        let dim_refs = self.dimension_list(&parent, &attributes, own);
        let elem = dtype::elem(&datatype);
        let mut shape = space.dims.clone();
        if let Ok(e) = &elem {
            shape.extend_from_slice(&e.extra);
        }
        Ok(Dataset {
            layout: Layout::of(&data_layout, own, self.base, self.sizes),
            address,
            scale,
            phony,
            dim_refs,
            object,
            shape,
            own,
            max_shape: space.max_dims.clone(),
            null: space.dataspace_type == DataspaceType::Null,
            elem,
            datatype,
            filters,
            fill,
            external,
            attributes,
        })
    }
}

/// A dataset's metadata.
pub struct Dataset {
    /// Its path in the file (`grp/dset`).
    pub object: String,
    /// Its object header's address.
    pub address: u64,
    /// It is a dimension scale (`CLASS` is `DIMENSION_SCALE`).
    pub scale: bool,
    /// It is a netCDF dimension that is no variable (a dimension scale netCDF makes
    /// for a dimension without a coordinate variable).
    pub phony: bool,
    /// The dimension scales its `DIMENSION_LIST` refers to, by address.
    pub dim_refs: Option<Vec<u64>>,
    /// Its shape as h5py shows it (C order; an array type's dims appended).
    pub shape: Vec<u64>,
    /// How many of those dims are the dataspace's own.
    pub own: usize,
    /// Its maximum shape, if given (`u64::MAX` for unlimited).
    pub max_shape: Option<Vec<u64>>,
    /// A null dataspace (h5py's `Empty`): no shape.
    pub null: bool,
    /// Its element, or why rastore refuses it.
    pub elem: std::result::Result<Elem, dtype::Refusal>,
    /// Its HDF5 type.
    pub datatype: Datatype,
    /// Where its data lies.
    pub layout: Layout,
    /// Its filters, in the order they were applied.
    pub filters: Vec<Filter>,
    /// Its fill value's bytes, if set.
    pub fill: Option<Vec<u8>>,
    /// Its data lies in other files.
    pub external: bool,
    /// Its attributes.
    pub attributes: Vec<Attribute>,
}

impl Dataset {
    /// Its element, or the refusal of a dataset rastore does not read, naming why.
    pub fn readable(&self, h5: &H5) -> Result<&Elem> {
        let refuse =
            |why: String| Err(Error::from(ErrorKind::Unsupported(why)).at(h5.shown(&self.object)));
        if self.external {
            return refuse(
                "an external dataset (its data lies in other files): h5py reads it, or \
                 `h5repack -l CONTI` writes it into the file"
                    .into(),
            );
        }
        if self.null {
            return refuse(
                "a dataset with a null dataspace (h5py's Empty): it has no shape and no data"
                    .into(),
            );
        }
        match &self.elem {
            Ok(e) => Ok(e),
            Err(why) => refuse(format!(
                "a dataset of {why}: RawArray holds fixed-size elements"
            )),
        }
    }
}

/// What an object header makes the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Group,
    Dataset,
    Other,
}

/// What the object of `header` is: a group (links, or a symbol table), a dataset (a
/// dataspace, a layout), or another object (a named datatype).
fn kind(header: &ObjectHeader) -> Kind {
    let mut dataset = false;
    for m in &header.messages {
        match m {
            HdfMessage::SymbolTable(_)
            | HdfMessage::Link(_)
            | HdfMessage::LinkInfo(_)
            | HdfMessage::GroupInfo(_) => return Kind::Group,
            HdfMessage::Dataspace(_) | HdfMessage::DataLayout(_) => dataset = true,
            _ => {}
        }
    }
    if dataset {
        Kind::Dataset
    } else if header
        .messages
        .iter()
        .any(|m| matches!(m, HdfMessage::Datatype(_)))
    {
        Kind::Other
    } else {
        // An object of attributes alone is an empty group, as HDF5 makes them.
        Kind::Group
    }
}

/// The error hdf5-reader wrapped in its context.
fn unwrap(e: H5Error) -> H5Error {
    match e {
        H5Error::Context { source, .. } => unwrap(*source),
        e => e,
    }
}

/// A malformed HDF5 file: what is wrong with `field` (an object's path).
fn malformed(field: &str, detail: impl std::fmt::Display) -> Error {
    ErrorKind::Malformed {
        format: "HDF5",
        field: field.to_string(),
        detail: detail.to_string(),
    }
    .into()
}

/// `a/b`: the path `name` in the group `at` (`""` is the top).
pub fn join(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_string()
    } else {
        format!("{at}/{name}")
    }
}
