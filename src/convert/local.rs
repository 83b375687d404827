//! Inputs and outputs on this machine: the source of each format opened by its
//! contents (an `.npz` of one array too), the sink of each created by its name, and
//! the check, before any data is read, that an output's format can hold the array.

use std::path::Path;

use super::options::{ConvertOptions, Format};
use super::{Desc, Sink, Source};
use crate::error::{Error, ErrorKind, Result};

/// Refuses a Zarr array in a build without the `zarr` feature.
#[cfg(not(feature = "zarr"))]
fn no_zarr(path: &Path) -> Error {
    Error::from(ErrorKind::Unsupported(
        "a Zarr array, in a build without the `zarr` feature".into(),
    ))
    .at(path)
}

#[cfg(feature = "zarr")]
pub(super) fn open_zarr(path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>> {
    Ok(Box::new(crate::formats::zarr::engine::ZarrSource::open(
        &options.zarr_at(path),
    )?))
}

#[cfg(not(feature = "zarr"))]
pub(super) fn open_zarr(path: &Path, _options: &ConvertOptions) -> Result<Box<dyn Source>> {
    Err(no_zarr(path))
}

/// Opens the local input `path` by its contents; an archive's deflated member is
/// inflated into `scratch` (a folder). A path past a file names one array in it
/// (`m.safetensors/NAME`: [`member_path`](super::member_path)).
pub(crate) fn open_local(
    path: &Path,
    scratch: &Path,
    options: &ConvertOptions,
) -> Result<Box<dyn Source>> {
    if let (file, Some(name)) = super::member_path(path) {
        return open_inside(&file, &name);
    }
    Ok(match Format::of(path)? {
        Format::Safetensors => Box::new(crate::formats::safetensors::engine::open(path)?),
        Format::Ra => Box::new(super::ra::RaSource::open(path)?),
        Format::Npy => Box::new(crate::formats::npy::NpySource::open(path)?),
        Format::Png => crate::formats::png::engine::open(path)?,
        Format::Tiff => crate::formats::tiff::engine::open(path)?,
        Format::Zarr => open_zarr(path, options)?,
        Format::Nifti => crate::formats::nifti::engine::open(path)?,
        Format::NetCdf3 => Box::new(crate::formats::netcdf3::engine::open(path)?),
        Format::Hdf5 => open_hdf5(path, None)?,
        Format::Npz => {
            let members = crate::formats::npz::engine::members(path)?;
            match members.as_slice() {
                [(_, m)] => Box::new(crate::formats::npz::engine::MemberSource::open(
                    path, m, scratch,
                )?),
                _ => return Err(several(path, &members, None)),
            }
        }
    })
}

/// The array named `name` inside the local `file`, a file of named arrays: a tensor of
/// a safetensors file, a variable of a NetCDF-3 file, a dataset of an HDF5 file. Files of one array are refused.
pub(crate) fn open_inside(file: &Path, name: &str) -> Result<Box<dyn Source>> {
    match Format::of(file)? {
        Format::Safetensors => Ok(Box::new(crate::formats::safetensors::engine::open_tensor(
            file, name,
        )?)),
        Format::NetCdf3 => Ok(Box::new(crate::formats::netcdf3::engine::open_variable(
            file, name,
        )?)),
        Format::Hdf5 => open_hdf5(file, Some(name)),
        f => Err(Error::from(ErrorKind::Unsupported(format!(
            "a member ({name:?}) of a {f:?} file: it holds one array"
        )))
        .at(file)),
    }
}

/// The dataset `object` of the HDF5 file `file`, or its one dataset.
#[cfg(feature = "hdf5")]
fn open_hdf5(file: &Path, object: Option<&str>) -> Result<Box<dyn Source>> {
    use crate::formats::hdf5::engine;
    match object {
        Some(o) => engine::open_object(file, o),
        None => engine::open(file),
    }
}

#[cfg(not(feature = "hdf5"))]
fn open_hdf5(file: &Path, _object: Option<&str>) -> Result<Box<dyn Source>> {
    Err(Error::from(ErrorKind::Unsupported(
        "an HDF5 file, in a build without the `hdf5` feature".into(),
    ))
    .at(file))
}

/// Refuses to take one array from an archive of `members`, saying what to do.
pub(super) fn several(
    path: &Path,
    members: &[(String, crate::formats::npz::Member)],
    to: Option<&Path>,
) -> Error {
    let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
    Error::from(ErrorKind::InvalidArgument(format!(
        "{} holds {} arrays ({}): give a folder as the output, for one NAME.ra each, or a \
         .zarr for a Zarr group of them{}",
        path.display(),
        members.len(),
        names.join(", "),
        if members.len() == 1 {
            "; or a .ra file"
        } else {
            ""
        }
    )))
    .at(to.unwrap_or(path))
}

#[cfg(feature = "zarr")]
pub(super) fn create_zarr(
    path: &Path,
    desc: Desc,
    options: &ConvertOptions,
) -> Result<Box<dyn Sink>> {
    crate::formats::zarr::engine::create(&options.zarr_at(path), desc, options)
}

#[cfg(not(feature = "zarr"))]
pub(super) fn create_zarr(
    path: &Path,
    _desc: Desc,
    _options: &ConvertOptions,
) -> Result<Box<dyn Sink>> {
    Err(no_zarr(path))
}

/// Refuses, before any data is read, an array the format `f` cannot hold.
pub(super) fn check_fits(f: Format, desc: &Desc) -> Result<()> {
    match f {
        Format::Png => crate::formats::png::check(desc.dtype, &desc.dims).map(drop),
        Format::Tiff => crate::formats::tiff::check(desc.dtype, &desc.dims).map(drop),
        Format::Npy => {
            let descr = crate::formats::npy::engine::descr_of(desc)?;
            crate::formats::npy::check_numpy_shape(&desc.dims, descr.itemsize()?)
        }
        Format::Safetensors => crate::formats::safetensors::check(desc.dtype),
        Format::Nifti => crate::formats::nifti::engine::header_for(desc).map(drop),
        _ => Ok(()),
    }
}

/// [`create`](super::create()) for a local `path`, already checked.
pub(crate) fn create_local(
    path: &Path,
    desc: Desc,
    options: &ConvertOptions,
) -> Result<Box<dyn Sink>> {
    let f = Format::of_output(path)?;
    check_fits(f, &desc).map_err(|e| e.at(path))?;
    match f {
        Format::Ra => super::ra::create(path, desc, options),
        Format::Npy => crate::formats::npy::engine::create(path, desc, options),
        Format::Png => crate::formats::png::engine::create(path, desc, options),
        Format::Tiff => crate::formats::tiff::engine::create(path, desc, options),
        Format::Safetensors => crate::formats::safetensors::engine::create(path, desc, options),
        Format::Nifti => crate::formats::nifti::engine::create(path, desc, options),
        _ => create_zarr(path, desc, options),
    }
}
