//! The formats around the RawArray core. Each is one folder, `formats/NAME/`, holding
//! its parser, its [`Source`](crate::convert::Source) and its
//! [`Sink`](crate::convert::Sink) (`engine.rs`); besides the folder, only the engine's
//! registry names it (`Format` in `convert/options.rs`: its magic number and its output
//! names; `convert/local.rs`: which source opens it and which sink makes it).
//!
//! | format | module | reads | writes |
//! |---|---|---|---|
//! | NumPy `.npy` | [`npy`] | headers, data zero-copy ([`MappedNpy`](crate::MappedNpy)) | Fortran order |
//! | NIfTI-1 and NIfTI-2 | [`nifti`] | `.nii`, `.nii.gz`, `.hdr`/`.img`, either byte order; mapped in place | `.nii`, `.nii.gz` |
//! | NumPy `.npz` | [`npz`] | its `.npy` members, stored or deflated | a dataset's arrays, stored |
//! | PNG | [`png`] | 1- to 16-bit images | 8- and 16-bit images |
//! | TIFF, BigTIFF | [`tiff`] | pages of strips or tiles, raw, LZW, Deflate, PackBits; raw runs in place | pages, raw or Deflate |
//! | safetensors | [`safetensors`] | every tensor (C order) but 8-bit and smaller floats; in place | a dataset's arrays, or one, C order |
//! | NetCDF-3 (CDF-1, 2, 5) | [`netcdf3`] | every variable, a file a dataset ([`crate::cdm`]); in place but interleaved records | no |
//! | Zarr v3 and v2 (feature `zarr`) | `zarr` | v3 and v2 arrays, local or in S3 | v3 arrays |
//! | HDF5, NetCDF-4, MATLAB v7.3 (feature `hdf5`) | `hdf5` | datasets of fixed-size types, any layout; contiguous ones in place | — |
//!
//! [`crate::cdm`] is the netCDF data model the netCDF readers fill: variables with
//! dimension names and attributes, and how they become a dataset folder's trailers and
//! `dataset.yaml` (a model, beside [`crate::dataset`], not a parser of files).
//!
//! The `.ra` source and sink are the core's ([`crate::convert::ra`]), and so are the NDL
//! trailers ([`crate::ndl`]) and content sniffing ([`crate::sniff`]).

#[cfg(feature = "hdf5")]
pub mod hdf5;
pub mod netcdf3;
pub mod nifti;
pub mod npy;
pub mod npz;
pub mod png;
pub mod safetensors;
pub mod tiff;
#[cfg(feature = "zarr")]
pub mod zarr;
