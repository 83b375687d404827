//! The formats around the RawArray core, their headers and codecs: NumPy's `.npy` and
//! `.npz`, PNG images, NDL (the Ndarray Data Language) trailers, Zarr. Each is a
//! source and a sink of the conversion engine, [`crate::convert`].
//!
//! | format | module | reads | writes |
//! |---|---|---|---|
//! | NumPy `.npy` | [`npy`] | headers, data zero-copy ([`MappedNpy`](crate::MappedNpy)) | headers |
//! | NumPy `.npz` | [`npz`] | its `.npy` members, stored or deflated | no |
//! | PNG | [`png`] | 1- to 16-bit images | 8- and 16-bit images |
//! | NDL YAML trailers | [`ndl`] | shape, type, compound, attributes | the same |
//! | what a file is, by its first bytes | [`sniff`] | | |
//! | Zarr v3 and v2 (feature `zarr`) | `zarr` | v3 and v2 arrays, local or in S3 | v3 arrays |

pub mod ndl;
pub mod npy;
pub mod npz;
pub mod png;
pub mod sniff;
#[cfg(feature = "zarr")]
pub mod zarr;
