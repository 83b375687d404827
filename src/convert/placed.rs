//! Arrays of any format whose bytes lie raw in their file, in one run, as a `.npy`'s
//! data does: where they are and how they are laid out ([`Placed`]), so that they are
//! mapped in place ([`MappedNpy::open_placed`](crate::MappedNpy::open_placed),
//! `rastore.open`) and read in place by Zarr readers (`ra refs`, `rastore.ZarrStore`).
//!
//! The layout is the one a `.npy` header describes ([`NpyHeader`]: a NumPy type with
//! its byte order, C or Fortran order, the shape, the data's offset): each format's
//! parser finds it in its own header, and refuses, naming why, an array whose bytes
//! are not one raw run (compressed, chunked, scattered).
//!
//! A path may go on past its file to name one member of it, as `h5ls` names a
//! dataset: `m.safetensors/NAME`, `x.nc/VAR`, `x.h5/grp/dset` ([`member_path`]).

use std::fs::File;
use std::path::{Path, PathBuf};

use super::options::Format;
use crate::error::{io_at, Error, ErrorKind, Result, ResultExt};
use crate::formats::npy::{self, NpyHeader};

/// An array whose bytes lie raw in `file`, laid out as `layout` says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    /// The file that holds it.
    pub file: PathBuf,
    /// Its type, order, shape and offset, as a `.npy` header gives them.
    pub layout: NpyHeader,
}

/// `path` split into the file it starts with and the member it names in that file, if
/// it goes on past one (`m.safetensors/layers.0.weight` is the tensor
/// `layers.0.weight` of `m.safetensors`; a member's name may hold `/`). A path that is
/// a file, a folder or nothing at all is returned whole.
pub fn member_path(path: &Path) -> (PathBuf, Option<String>) {
    if path.exists() {
        return (path.to_path_buf(), None);
    }
    let mut file = path.to_path_buf();
    while file.pop() && !file.as_os_str().is_empty() {
        if file.is_file() {
            let rest = path.strip_prefix(&file).unwrap_or(path);
            let name: Vec<String> = rest
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            return (file, Some(name.join("/")));
        }
        if file.is_dir() {
            break;
        }
    }
    (path.to_path_buf(), None)
}

/// The HDF5 file that `path` is, or names an object of (`x.h5/grp/dset`,
/// [`member_path`]), and that object's path in it (`""` for the file itself); `None`
/// for a path of anything else.
pub fn hdf5_member(path: &Path) -> Option<(PathBuf, String)> {
    let (file, object) = member_path(path);
    (file.is_file() && Format::of(&file).ok() == Some(Format::Hdf5))
        .then(|| (file, object.unwrap_or_default()))
}

/// The names of the arrays inside the local file `path`, when it is a file of named
/// arrays (a safetensors file's tensors, a NetCDF file's variables), each named
/// `path/NAME` ([`member_path`]); `None` for any other file.
pub fn members(path: &Path) -> Option<Result<Vec<String>>> {
    if !path.is_file() {
        return None;
    }
    match Format::of(path).ok()? {
        Format::Safetensors => {
            Some(crate::formats::safetensors::engine::dataset(path).map(|(names, _)| names))
        }
        Format::NetCdf3 => Some(
            crate::formats::netcdf3::engine::file(path)
                .map(|(_, nc)| nc.vars.into_iter().map(|v| v.name).collect()),
        ),
        _ => None,
    }
}

/// Whether `path` names an array of a format that may lie raw in its file, or a
/// member of a file: what [`placed`] answers for (anything else is mapped as a `.ra`,
/// or refused as what it is).
pub fn placeable(path: &Path) -> bool {
    let (file, member) = member_path(path);
    member.is_some()
        || matches!(
            Format::of(&file),
            Ok(Format::Npy
                | Format::Safetensors
                | Format::Nifti
                | Format::Tiff
                | Format::NetCdf3
                | Format::Hdf5)
        )
}

/// Where the array `path` names lies raw, for a mapping or a Zarr reader: a `.npy`, or
/// a member (see [`member_path`]) of a format that stores it raw. Refused, with what
/// to do instead, for a format or an array that is not one raw run.
pub fn placed(path: &Path) -> Result<Placed> {
    let (file, member) = member_path(path);
    let format = Format::of(&file)?;
    let (file, layout) = match (format, member) {
        (Format::Npy, None) => {
            let mut f = File::open(&file).map_err(io_at("open", &file))?;
            let layout = npy::read_header(&mut f).at(&file)?;
            (file, layout)
        }
        (Format::Safetensors, Some(name)) => {
            let layout = crate::formats::safetensors::engine::placed(&file, &name)?;
            (file, layout)
        }
        (Format::Safetensors, None) => {
            let (names, _) = crate::formats::safetensors::engine::dataset(&file)?;
            return Err(Error::from(ErrorKind::InvalidArgument(format!(
                "a safetensors file holds named tensors: name one, as {}/NAME (it holds {})",
                file.display(),
                names.join(", ")
            )))
            .at(&file));
        }
        (Format::NetCdf3, Some(name)) => {
            let layout = crate::formats::netcdf3::engine::placed(&file, &name)?;
            (file, layout)
        }
        (Format::NetCdf3, None) => {
            let (_, nc) = crate::formats::netcdf3::engine::file(&file)?;
            return Err(Error::from(ErrorKind::InvalidArgument(format!(
                "a NetCDF file holds named variables: name one, as {}/NAME (it holds {})",
                file.display(),
                nc.names().join(", ")
            )))
            .at(&file));
        }
        #[cfg(feature = "hdf5")]
        (Format::Hdf5, Some(name)) => {
            let layout = crate::formats::hdf5::engine::placed(&file, &name)?;
            (file, layout)
        }
        #[cfg(feature = "hdf5")]
        (Format::Hdf5, None) => return Err(crate::formats::hdf5::engine::name_one(&file)),
        (Format::Nifti, None) => crate::formats::nifti::engine::placed(&file)?,
        (Format::Tiff, None) => {
            let layout = crate::formats::tiff::parse_file(&file)?
                .layout()
                .at(&file)?;
            (file, layout)
        }
        (_, Some(name)) => {
            return Err(Error::from(ErrorKind::Unsupported(format!(
                "a member ({name:?}) of a file of this format: it holds one array"
            )))
            .at(&file))
        }
        (f, None) => {
            return Err(Error::from(ErrorKind::Unsupported(format!(
                "{f:?} in place: only raw data maps; `rastore.read` or `ra convert` it"
            )))
            .at(&file))
        }
    };
    let len = std::fs::metadata(&file)
        .map_err(io_at("stat", &file))?
        .len();
    layout.data_within(len).at(&file)?;
    Ok(Placed { file, layout })
}
