//! What `ra info` says about a file: of a `.ra` file or object ([`FileInfo`], in
//! `file`), of a `.npy` file and of a NIfTI image; one computation for the tool's line and JSON and for
//! the Python package's `info` dict, so that they agree key for key.

pub(crate) mod file;

use std::path::Path;

use crate::error::{Result, ResultExt};
use crate::formats::npy::NpyHeader;

pub use file::{info, FileInfo};

/// Reads the header of the `.npy` file `path` (not its data), refusing a file too short
/// for the data it declares ([`ErrorKind::TruncatedData`](crate::ErrorKind), as
/// [`info`] refuses a `.ra`).
pub fn npy_header(path: impl AsRef<Path>) -> Result<NpyHeader> {
    let path = path.as_ref();
    let f = std::fs::File::open(path).map_err(crate::error::io_at("open", path))?;
    let len = f
        .metadata()
        .map_err(crate::error::io_at("stat", path))?
        .len();
    let nh = crate::formats::npy::read_header(&mut std::io::BufReader::new(f)).at(path)?;
    nh.data_within(len).at(path)?;
    Ok(nh)
}

/// What `ra info --json` says of a `.npy` file: keys `path, format ("npy"), version,
/// descr, dtype, dims, count, bytes, order ("C" or "F"), data_offset`.
pub fn npy_json(path: &Path, nh: &NpyHeader) -> Result<String> {
    let dtype = nh.descr.dtype().at(path)?;
    let (count, bytes) = nh.data_len().at(path)?;
    let order = if nh.fortran_order { "F" } else { "C" };
    let dims: Vec<String> = nh.shape.iter().map(u64::to_string).collect();
    Ok(format!(
        "{{\"path\": {}, \"format\": \"npy\", \"version\": \"{}.{}\", \"descr\": {}, \"dtype\": {}, \
         \"dims\": [{}], \"count\": {count}, \"bytes\": {bytes}, \"order\": \"{order}\", \"data_offset\": {}}}",
        crate::json::string(&path.to_string_lossy()),
        nh.version.0,
        nh.version.1,
        crate::json::string(&nh.descr.to_python()),
        crate::json::string(&dtype.name()),
        dims.join(", "),
        nh.data_offset
    ))
}

/// What `ra info --json` says of a NIfTI image, from its header alone: keys `path,
/// format ("nifti"), version (1 or 2), dtype, dims, count, bytes`.
pub fn nifti_json(path: impl AsRef<Path>) -> Result<String> {
    let path = path.as_ref();
    let (desc, version) = crate::formats::nifti::engine::describe(path)?;
    let dims: Vec<String> = desc.dims.iter().map(u64::to_string).collect();
    let count = crate::header::checked_bytes(1, &desc.dims).unwrap_or(u64::MAX);
    Ok(format!(
        "{{\"path\": {}, \"format\": \"nifti\", \"version\": {version}, \"dtype\": {}, \
         \"dims\": [{}], \"count\": {count}, \"bytes\": {}}}",
        crate::json::string(&path.to_string_lossy()),
        crate::json::string(&desc.dtype.name()),
        dims.join(", "),
        desc.nbytes()
    ))
}
