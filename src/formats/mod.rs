//! The formats around the RawArray core, and the conversions between them: NumPy's
//! `.npy` and `.npz`, PNG images, NDL (the Ndarray Data Language) trailers, and
//! [`convert`], which turns any of them into any other by name.
//!
//! | format | module | reads | writes |
//! |---|---|---|---|
//! | NumPy `.npy` | [`npy`] | headers, data zero-copy ([`MappedNpy`](crate::MappedNpy)) | headers |
//! | NumPy `.npz` | [`npz`] | its `.npy` members, stored or deflated | no |
//! | PNG | [`png`] | 1- to 16-bit images | 8- and 16-bit images |
//! | NDL YAML trailers | [`ndl`] | shape, type, compound, attributes | the same |
//! | what a file is, by its first bytes | [`sniff`] | | |
//! | Zarr v3 and v2 (feature `zarr`) | `zarr` | v3 and v2 arrays, local or in S3 | v3 arrays |

pub mod convert;
pub mod ndl;
pub mod npy;
pub mod npz;
pub mod png;
pub mod sniff;
mod tiled;
#[cfg(feature = "zarr")]
pub mod zarr;
