//! HDF5 (and NetCDF-4, MATLAB v7.3) files in `ra`: a file or a group in it stands for
//! its datasets, each named as `h5ls` names it (`x.h5/grp/dset`); `ra info` lists the
//! tree as `h5ls -r` does.

use std::path::{Path, PathBuf};

/// The HDF5 file `path` is, or names an object of (`x.h5/grp`), and that object's
/// path in it (`""` for the file).
pub fn target(path: &Path) -> Option<(PathBuf, String)> {
    if !cfg!(feature = "hdf5") || crate::remote::is_remote(path) {
        return None;
    }
    rastore::convert::hdf5_member(path)
}

/// The datasets the object `object` of `file` stands for, each named `FILE/PATH`.
#[cfg(feature = "hdf5")]
pub fn datasets(file: &Path, object: &str) -> rastore::Result<Vec<PathBuf>> {
    let paths = rastore::formats::hdf5::engine::datasets(file, object)?;
    Ok(paths.into_iter().map(|p| file.join(p)).collect())
}

#[cfg(not(feature = "hdf5"))]
pub fn datasets(file: &Path, _object: &str) -> rastore::Result<Vec<PathBuf>> {
    Ok(vec![file.to_path_buf()])
}

/// `ra info` of the object `object` of `file`: a line (or JSON object) per object of
/// its tree.
#[cfg(feature = "hdf5")]
pub fn info_lines(file: &Path, object: &str, json: bool) -> rastore::Result<Vec<String>> {
    let lines = rastore::formats::hdf5::info::lines(file, object)?;
    Ok(lines
        .into_iter()
        .map(|l| match json {
            true => {
                let mut j = l.json;
                j["path"] = serde_json::Value::String(l.path.to_string_lossy().into_owned());
                j.to_string()
            }
            false => crate::term::line(&l.text()),
        })
        .collect())
}

#[cfg(not(feature = "hdf5"))]
pub fn info_lines(file: &Path, _object: &str, _json: bool) -> rastore::Result<Vec<String>> {
    Err(rastore::Error::from(rastore::ErrorKind::Unsupported(
        "an HDF5 file, in a build without the `hdf5` feature".into(),
    ))
    .at(file))
}
