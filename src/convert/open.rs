//! The engine's entry points for one array: [`open`] any input by its contents and
//! [`create`] any output by its name, on this machine or in object storage (`s3://`).

use std::path::Path;

use super::local::{create_local, open_local};
use super::options::ConvertOptions;
use super::{Desc, Sink, Source};
use crate::error::{ErrorKind, Result};

/// The `s3://` URL `path` is, if it is one.
pub(super) fn url_of(path: &Path) -> Option<&str> {
    path.to_str().filter(|s| s.starts_with("s3://"))
}

/// Opens the input `path` (a file or folder, or an `s3://` object or Zarr prefix),
/// telling its format by its contents. An archive of several arrays is refused
/// (convert it to a folder: [`convert()`](super::convert())).
pub fn open(path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>> {
    if let Some(url) = url_of(path) {
        return open_remote(url, path, options);
    }
    open_local(path, &std::env::temp_dir(), options)
}

#[cfg(feature = "s3")]
fn open_remote(url: &str, path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>> {
    use super::remote::{open_downloaded, RemoteRaSource};
    if super::options::is_zarr(path) {
        return super::local::open_zarr(path, options);
    }
    match RemoteRaSource::open(url, options.remote_options()) {
        Ok(s) => Ok(Box::new(s)),
        // Another format: downloaded, and read as what its contents say.
        Err(e) if matches!(e.kind(), ErrorKind::NotRawArray { .. }) => {
            open_downloaded(url, options)
        }
        Err(e) => Err(e),
    }
}

/// Refuses an object in a build without the `s3` feature.
#[cfg(not(feature = "s3"))]
fn no_s3(path: &Path) -> crate::error::Error {
    crate::error::Error::from(ErrorKind::Unsupported(
        "an s3:// object, in a build without the `s3` feature".into(),
    ))
    .at(path)
}

#[cfg(not(feature = "s3"))]
fn open_remote(_url: &str, path: &Path, _options: &ConvertOptions) -> Result<Box<dyn Source>> {
    Err(no_s3(path))
}

/// Creates the output `path` for an array `desc` describes, in the format its name
/// says (a file or a Zarr folder, or an `s3://` object or Zarr prefix). Nothing is
/// visible there until the sink commits; an existing output is refused unless
/// overwriting, as is a local one whose folder does not exist.
pub fn create(path: &Path, desc: Desc, options: &ConvertOptions) -> Result<Box<dyn Sink>> {
    if let Some(url) = url_of(path) {
        return create_remote(url, path, desc, options);
    }
    options.check_output(path)?;
    create_local(path, desc, options)
}

#[cfg(feature = "s3")]
fn create_remote(
    url: &str,
    path: &Path,
    desc: Desc,
    options: &ConvertOptions,
) -> Result<Box<dyn Sink>> {
    use super::options::Format;
    use super::remote::{create_ra, scratch_then_upload};
    match Format::of_output(path)? {
        Format::Zarr => super::local::create_zarr(path, desc, options),
        Format::Ra => create_ra(url, desc, options),
        f => {
            super::local::check_fits(f, &desc).map_err(|e| e.at(path))?;
            let ext = match crate::formats::nifti::gz_named(path) {
                true => "nii.gz".into(),
                false => path.extension().unwrap_or_default().to_string_lossy(),
            };
            scratch_then_upload(url, &ext, desc, options)
        }
    }
}

#[cfg(not(feature = "s3"))]
fn create_remote(
    _url: &str,
    path: &Path,
    _desc: Desc,
    _options: &ConvertOptions,
) -> Result<Box<dyn Sink>> {
    Err(no_s3(path))
}
