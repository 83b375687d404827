//! HDF5 datasets in the engine: each a [`Source`] by its layout, a file or group a
//! tree of them, a contiguous one placed in the file (mapped in place, read in place
//! by Zarr readers), a chunked one a [`ChunkTable`] (decoded by zarrs; kerchunk
//! references for `ra refs`).
//!
//! Shapes are h5py's (C order; the `.ra` is written transposed, as from a C-order
//! `.npy`), but for MATLAB v7.3 variables: MATLAB's shape (h5py's reversed), whose
//! column-major data is the file's as it lies, with no transpose.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::layout::{self, Grid, Layout, TableError};
use super::matlab::{self, Class};
use super::{attrs, Dataset, Entry, H5};
use crate::convert::memory::MemorySource;
use crate::convert::{Block, Desc, Grain, Source};
use crate::descr::Descr;
use crate::dtype::{DType, Kind};
use crate::error::{io_at, Error, ErrorKind, Result, ResultExt};
use crate::formats::npy::{NpyHeader, NpySource};
use crate::formats::zarr::engine::ZarrSource;
use crate::formats::zarr::meta::{trailer_of_attributes, Reading};
use crate::formats::zarr::{ChunkTable, ReadRange, ZarrInput};

/// How a dataset is seen: its element and its logical dims (MATLAB's for a MATLAB
/// variable, whose data is then column-major as it lies).
pub(super) struct View {
    pub descr: Descr,
    pub dims: Vec<u64>,
    pub fortran: bool,
    /// A MATLAB char array: UTF-16 codes, read as text.
    pub text: bool,
}

/// The view of the readable dataset `ds` of `h5`: a MATLAB variable as its class
/// says (see [`matlab`]).
pub(super) fn view(h5: &H5, ds: &Dataset) -> Result<View> {
    let class = match h5.matlab {
        true => matlab::class(ds)
            .map_err(|why| Error::from(ErrorKind::Unsupported(why)).at(h5.shown(&ds.object)))?,
        false => Class::Plain,
    };
    let elem = ds.readable(h5)?;
    let mut descr = elem.descr.clone();
    let mut dims = ds.shape.clone();
    let mut text = false;
    if h5.matlab {
        dims.reverse();
        match class {
            Class::Logical => descr = matlab::logical(&descr).unwrap_or(descr),
            Class::Char => text = true,
            Class::Plain => {}
        }
    }
    Ok(View {
        descr,
        dims,
        fortran: h5.matlab,
        text,
    })
}

/// The description of `ds` of `h5` seen as `v`: its type, dims and a trailer of its
/// attributes (and a structured type's fields), and of its dimensions' names where
/// dimension scales give them (a NetCDF-4 variable's), with its name.
fn desc(h5: &H5, ds: &Dataset, v: &View, shown: &Path) -> Result<Desc> {
    let dtype = v.descr.dtype().at(shown)?;
    let header = crate::Header::new(dtype, &v.dims).at(shown)?;
    let user = (dtype.kind() == Kind::User).then_some(&v.descr);
    let attributes = attrs::attributes(&ds.attributes, ds.scale, h5.netcdf);
    let mut names = h5.dimension_names(ds);
    if let Some(n) = names.as_mut().filter(|_| v.fortran) {
        n.reverse();
    }
    let names = names.filter(|n| n.len() == v.dims.len());
    let name = ds
        .object
        .rsplit('/')
        .next()
        .unwrap_or(&ds.object)
        .to_string();
    let reading = match names {
        Some(_) => Reading::Variable(name),
        None => Reading::Alone,
    };
    let trailer = trailer_of_attributes(&attributes, names.as_deref(), &reading, &header, user);
    Ok(Desc {
        dtype,
        dims: v.dims.clone(),
        trailer,
    })
}

/// The dataset `object` of the file `file` as a source.
pub fn open_object(file: &Path, object: &str) -> Result<Box<dyn Source>> {
    open_in(&H5::open(file)?, object)
}

/// The dataset `object` of the open file `h5` as a source.
pub fn open_in(h5: &H5, object: &str) -> Result<Box<dyn Source>> {
    let ds = h5.dataset(object)?;
    source(h5, &ds)
}

/// The one dataset of the file `file` as a source; a file of several (or none) is
/// refused, naming them and saying how to name one.
pub fn open(file: &Path) -> Result<Box<dyn Source>> {
    let h5 = H5::open(file)?;
    // Those refused count: naming one says why.
    let datasets: Vec<String> = h5
        .walk("")?
        .into_iter()
        .filter_map(|e| match e {
            Entry::Dataset(p, _) | Entry::Refused(p, _) => Some(p),
            _ => None,
        })
        .filter(|p| !phony(&h5, p))
        .collect();
    match datasets.as_slice() {
        [one] => {
            let ds = h5.dataset(one)?;
            source(&h5, &ds)
        }
        _ => Err(Error::from(ErrorKind::InvalidArgument(format!(
            "an HDF5 file of {} datasets{}: name one as {}/NAME (as h5ls names it), or \
             convert the file into a folder (one NAME.ra each) or a .zarr",
            datasets.len(),
            listed(&datasets),
            file.display()
        )))
        .at(file)),
    }
}

/// `: a, b, c` (the first few), for messages.
fn listed(names: &[String]) -> String {
    match names.len() {
        0 => String::new(),
        n if n > 12 => format!(" ({}, …)", names[..12].join(", ")),
        _ => format!(" ({})", names.join(", ")),
    }
}

/// The readable dataset `ds` of `h5` as a source, by its layout; a MATLAB char array
/// read whole, as text.
pub fn source(h5: &H5, ds: &Dataset) -> Result<Box<dyn Source>> {
    let shown = h5.shown(&ds.object);
    let v = view(h5, ds)?;
    let stored = stored(h5, ds, &v, shown.clone())?;
    if !v.text {
        return Ok(stored);
    }
    let (descr, dims, data) = matlab::text(stored.as_ref(), &shown)?;
    let v = View {
        descr,
        dims,
        fortran: true,
        text: true,
    };
    Ok(Box::new(MemorySource {
        desc: desc(h5, ds, &v, &shown)?,
        data,
        shown,
    }))
}

/// The dataset `ds` seen as `v` as a source of its stored elements, by its layout.
fn stored(h5: &H5, ds: &Dataset, v: &View, shown: PathBuf) -> Result<Box<dyn Source>> {
    let desc = desc(h5, ds, v, &shown)?;
    match &ds.layout {
        Layout::Contiguous { offset } => {
            let nh = npy_header(v, *offset);
            let file = h5.file.try_clone().map_err(io_at("open", &h5.path))?;
            let npy = NpySource::of_layout(&shown, file, 0, h5.len, nh)?;
            Ok(Box::new(npy.with_trailer(desc.trailer)))
        }
        Layout::Compact(bytes) => Ok(Box::new(MemorySource {
            data: compact(v, &ds.shape, bytes)
                .map_err(|d| super::malformed(&format!("/{}", ds.object), d).at(&shown))?,
            desc,
            shown,
        })),
        Layout::Unwritten => Ok(Box::new(FillSource {
            elem: fill_element(&v.descr, ds.fill.as_deref()),
            desc,
            shown,
        })),
        Layout::Chunked { .. } => {
            let table = table(h5, ds, Value::Object(Map::new()), true)?;
            let file = h5.file.clone();
            let at = shown.clone();
            let checked = ds.filters.last().is_some_and(|f| f.id == 3);
            let read: ReadRange = Box::new(move |r: Range<u64>| -> Result<Vec<u8>> {
                // The table's ranges lie in the file: checked when it was made.
                let mut buf = vec![0u8; (r.end - r.start) as usize];
                crate::sys::read_exact_at(&file, &mut buf, r.start).map_err(io_at("read", &at))?;
                if checked {
                    return layout::strip_fletcher32(buf)
                        .map_err(|d| Error::decode("fletcher32", d).at(&at));
                }
                Ok(buf)
            });
            let input = ZarrInput::open_table(table, read, shown.clone())?;
            let got = input.dtype()?;
            if got != desc.dtype || input.dims() != desc.dims.as_slice() {
                return Err(super::malformed(
                    &format!("/{}", ds.object),
                    format!(
                        "its chunks read as {got} {:?}, its type says {} {:?}",
                        input.dims(),
                        desc.dtype,
                        desc.dims
                    ),
                )
                .at(&shown));
            }
            Ok(Box::new(ZarrSource::with(input, desc, shown)))
        }
    }
}

/// The `.npy` header of a dataset seen as `v` whose data starts at `offset`.
fn npy_header(v: &View, offset: u64) -> NpyHeader {
    NpyHeader {
        version: (1, 0),
        descr: v.descr.clone(),
        fortran_order: v.fortran,
        shape: v.dims.clone(),
        data_offset: offset,
    }
}

/// The chunk table of the chunked dataset `ds` of `h5`, `zattrs` its `.zattrs`; for
/// rastore's reader (`ours`), without a last fletcher32 filter, which it checks.
pub fn table(h5: &H5, ds: &Dataset, zattrs: Value, ours: bool) -> Result<ChunkTable> {
    let shown = h5.shown(&ds.object);
    let v = view(h5, ds)?;
    let Layout::Chunked {
        chunk,
        address,
        indexing,
    } = &ds.layout
    else {
        return Err(
            Error::from(ErrorKind::InvalidArgument("not a chunked dataset".into())).at(&shown),
        );
    };
    let field = format!("/{}", ds.object);
    if chunk.len() != ds.own || chunk.contains(&0) {
        return Err(super::malformed(
            &field,
            format!("chunk shape {chunk:?} for a dataset of {} dims", ds.own),
        )
        .at(&shown));
    }
    let itemsize = v.descr.itemsize().at(&shown)?;
    let extra = &ds.shape[ds.own..];
    let stored_item = extra
        .iter()
        .try_fold(itemsize, |a, &d| a.checked_mul(d))
        .unwrap_or(u64::MAX);
    let entries = layout::entries(
        h5.h5.storage(),
        h5.sizes,
        (&ds.shape[..ds.own], ds.max_shape.as_deref()),
        (chunk, *address, indexing.as_ref()),
        stored_item,
    )
    .map_err(|e| h5.err(&ds.object, e))?;
    let mut chunk64: Vec<u64> = chunk.iter().map(|&c| u64::from(c)).collect();
    chunk64.extend_from_slice(extra);
    let grid = Grid {
        shape: &ds.shape,
        chunk: &chunk64,
        own: ds.own,
        descr: &v.descr,
        reversed: v.fortran,
        base: h5.base,
        len: h5.len,
    };
    let filters = (ds.filters.as_slice(), ours);
    layout::table(&grid, filters, ds.fill.as_deref(), &entries, zattrs).map_err(|e| match e {
        TableError::Malformed(what, detail) => {
            super::malformed(&format!("{field}: {what}"), detail).at(&shown)
        }
        TableError::Refused(why) => {
            Error::from(ErrorKind::Unsupported(format!("a dataset with {why}"))).at(&shown)
        }
    })
}

/// The compact data `bytes` of a dataset of `shape` (h5py's) seen as `v`, as native
/// column-major bytes.
fn compact(v: &View, shape: &[u64], bytes: &[u8]) -> std::result::Result<Vec<u8>, String> {
    let w = v.descr.itemsize().map_err(|e| e.to_string())?;
    let want = crate::header::checked_bytes(w, shape).unwrap_or(u64::MAX);
    if bytes.len() as u64 != want {
        return Err(format!(
            "compact data of {} bytes, its shape {shape:?} of {w}-byte elements needs {want}",
            bytes.len()
        ));
    }
    let mut data = bytes.to_vec();
    native(&v.descr, &mut data);
    if v.fortran || shape.len() < 2 {
        return Ok(data);
    }
    let dims = crate::view::shape_usize(shape).map_err(|e| e.to_string())?;
    let mut out = vec![0u8; data.len()];
    crate::layout::transpose_c_to_f(&data, &dims, w as usize, &mut out, &mut |_, _| ())
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// Elements of `descr` in its byte order made native: numbers swapped, Bools 0 or 1;
/// structured and byte types kept as they are.
fn native(descr: &Descr, data: &mut [u8]) {
    let Ok(dtype) = descr.dtype() else { return };
    if dtype == DType::BOOL {
        data.iter_mut().for_each(|b| *b = u8::from(*b != 0));
    }
    if matches!(descr, Descr::Simple { .. }) && descr.big_endian() != cfg!(target_endian = "big") {
        if let (Some(unit), true) = (dtype.swap_unit(), dtype.kind() != Kind::User) {
            crate::codec::swap_bytes(data, unit);
        }
    }
}

/// One native element of the fill value `fill` (zeros when there is none).
fn fill_element(descr: &Descr, fill: Option<&[u8]>) -> Vec<u8> {
    let w = descr.itemsize().unwrap_or(1) as usize;
    let mut e = match fill {
        Some(b) if b.len() >= w => b[..w].to_vec(),
        _ => vec![0u8; w],
    };
    native(descr, &mut e);
    e
}

/// A dataset never written: every element its fill value.
struct FillSource {
    elem: Vec<u8>,
    desc: Desc,
    shown: PathBuf,
}

impl Source for FillSource {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        Grain::Memory
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        self.read_selection(&block.strides(), out)
    }

    fn read_selection(&self, sel: &[crate::Stride], out: &mut [u8]) -> Result<()> {
        let w = self.elem.len() as u64;
        crate::selection::fit(out, crate::selection::bytes_of(sel, w))?;
        out.chunks_exact_mut(self.elem.len())
            .for_each(|e| e.copy_from_slice(&self.elem));
        Ok(())
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

/// Where the dataset `object` of `file` lies raw, as a `.npy` header describes it: a
/// contiguous dataset (C order; MATLAB's variables column-major in their shape).
/// Other layouts are refused, saying what reads them.
pub fn placed(file: &Path, object: &str) -> Result<NpyHeader> {
    let h5 = H5::open(file)?;
    let ds = h5.dataset(object)?;
    let v = view(&h5, &ds)?;
    let why = match &ds.layout {
        _ if v.text => {
            "a MATLAB char array in place (its UTF-16 codes are read as text): \
             rastore.read reads it"
        }
        Layout::Contiguous { offset } => {
            let nh = npy_header(&v, *offset);
            nh.data_within(h5.len).at(&h5.shown(&ds.object))?;
            return Ok(nh);
        }
        Layout::Chunked { .. } => {
            "a chunked dataset in place (its chunks lie apart, each filtered or not): \
             rastore.read and rastore.Array read it by chunks, and ra refs or \
             rastore.ZarrStore read its chunks in place"
        }
        Layout::Compact(_) => {
            "a compact dataset in place (its few bytes lie in its object header): \
             rastore.read and rastore.Array read it"
        }
        Layout::Unwritten => {
            "a dataset never written in place (it has no data: every element is its fill \
             value): rastore.read and rastore.Array read it"
        }
    };
    Err(Error::from(ErrorKind::Unsupported(why.into())).at(h5.shown(&ds.object)))
}

/// Each group of a tree with its attributes, by its path from the tree's top.
pub type Groups = BTreeMap<String, Map<String, Value>>;

/// The file `file` opened, and the datasets and groups of its group `top` (the root:
/// `""`) by their paths from it: each dataset's, and each group's with its attributes
/// (the top's under `""`); `None` where `top` is a dataset. A member that cannot be
/// read is refused, naming it; soft and external links are not followed (h5py's
/// `visititems` does not follow them); a MATLAB file's `#refs#` group (the targets of
/// its cells) is no variable. Its datasets are opened from the file returned
/// ([`open_in`]), each without opening the file again.
pub fn tree(file: &Path, top: &str) -> Result<Option<GroupTree>> {
    let h5 = H5::open(file)?;
    if !matches!(h5.resolve(top)?, super::Object::Group(..)) {
        return Ok(None);
    }
    let mut datasets = Vec::new();
    let mut groups = BTreeMap::new();
    for e in h5.walk(top)? {
        match e {
            Entry::Group(p, _) | Entry::Dataset(p, _)
                if h5.matlab && p.split('/').any(|c| c == "#refs#") => {}
            Entry::Group(p, attrs) => {
                groups.insert(p, attrs);
            }
            Entry::Dataset(p, _) => match h5.dataset(&super::join(top, &p)) {
                Ok(ds) if ds.phony => {}
                Ok(_) => datasets.push(p),
                Err(e) => return Err(e),
            },
            Entry::Refused(_, e) => return Err(e),
            Entry::Link(..) => {}
        }
    }
    Ok(Some(GroupTree {
        h5: Arc::new(h5),
        datasets,
        groups,
    }))
}

/// A group of an HDF5 file and what is below it ([`tree`]).
pub struct GroupTree {
    /// The file, open.
    pub h5: Arc<H5>,
    /// The datasets' paths from the group.
    pub datasets: Vec<String>,
    /// The groups' attributes by their paths from the group.
    pub groups: Groups,
}

/// The chunk table of the chunked dataset `object` of `file`, with its attributes as
/// `.zattrs`; `None` for a dataset of another layout.
pub fn chunk_table(file: &Path, object: &str) -> Result<Option<ChunkTable>> {
    let h5 = H5::open(file)?;
    let ds = h5.dataset(object)?;
    if !matches!(ds.layout, Layout::Chunked { .. }) {
        return Ok(None);
    }
    let mut zattrs = attrs::attributes(&ds.attributes, ds.scale, h5.netcdf);
    if let Some(names) = h5.dimension_names(&ds) {
        // xarray's dimension names of a Zarr v2 array.
        zattrs.insert("_ARRAY_DIMENSIONS".into(), serde_json::json!(names));
    }
    let zattrs = Value::Object(zattrs);
    table(&h5, &ds, zattrs, false).map(Some)
}

/// The paths in the file of the datasets `object` of `file` stands for: its own, for a
/// dataset; those of a group (or the file) and below, hard links followed, those
/// rastore refuses included (each then refused by name when read), a MATLAB file's
/// `#refs#` left out.
pub fn datasets(file: &Path, object: &str) -> Result<Vec<String>> {
    let h5 = H5::open(file)?;
    let object = object.trim_matches('/');
    if let super::Object::Dataset { .. } = h5.resolve(object)? {
        return Ok(vec![object.to_string()]);
    }
    Ok(h5
        .walk(object)?
        .into_iter()
        .filter_map(|e| match e {
            Entry::Dataset(p, _) | Entry::Refused(p, _) => Some(super::join(object, &p)),
            _ => None,
        })
        .filter(|p| !(phony(&h5, p) || h5.matlab && p.split('/').any(|c| c == "#refs#")))
        .collect())
}

/// The refusal of a whole file where one dataset is wanted in place: its datasets
/// listed, and how to name one (or what is wrong with the file).
pub fn name_one(file: &Path) -> Error {
    match datasets(file, "") {
        Err(e) => e,
        Ok(names) => Error::from(ErrorKind::InvalidArgument(format!(
            "an HDF5 file of {} datasets{}: name one as {}/PATH, as h5ls names it",
            names.len(),
            listed(&names),
            file.display()
        )))
        .at(file),
    }
}

/// Whether the dataset `object` of `h5` is a netCDF dimension that is no variable
/// (one that cannot be read is not: it is refused by name when read).
fn phony(h5: &H5, object: &str) -> bool {
    h5.dataset(object).is_ok_and(|ds| ds.phony)
}
