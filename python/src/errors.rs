//! `rastore.Error` and how Rust errors become Python ones: the message is the Rust one
//! (path, field, numbers) either way, with what to do named in Python's terms.

use pyo3::exceptions::{PyFileExistsError, PyFileNotFoundError, PyOSError, PyPermissionError};
use pyo3::PyErr;
use rastore::ErrorKind;

pyo3::create_exception!(
    rastore,
    Error,
    pyo3::exceptions::PyValueError,
    "A bad file or a refused operation; the message names the path, the field and the numbers."
);

/// The errno values Python's `OSError` subclasses stand for: the same numbers on
/// Linux, macOS and Windows' C runtime.
const ENOENT: i32 = 2;
const EACCES: i32 = 13;
const EEXIST: i32 = 17;
const ENOTDIR: i32 = 20;
const EISDIR: i32 = 21;
const EINVAL: i32 = 22;
const ENOSPC: i32 = 28;
const EIO: i32 = 5;

/// The OS's errno of `e`, or, for an error rastore made with a clearer message than
/// the OS's (a missing folder, say), the errno of its kind: never 0.
fn errno(e: &std::io::Error) -> i32 {
    use std::io::ErrorKind as K;
    e.raw_os_error().unwrap_or(match e.kind() {
        K::NotFound => ENOENT,
        K::PermissionDenied => EACCES,
        K::AlreadyExists => EEXIST,
        K::NotADirectory => ENOTDIR,
        K::IsADirectory => EISDIR,
        K::InvalidInput => EINVAL,
        K::StorageFull => ENOSPC,
        _ => EIO,
    })
}

/// OS failures become the matching `OSError` subclass, with `errno`, `strerror` (the
/// Rust message without the path) and `filename` set; everything else `rastore.Error`.
pub fn to_py(e: rastore::Error) -> PyErr {
    let filename = e.path().map(|p| p.to_string_lossy().into_owned());
    match e.kind() {
        ErrorKind::Io { source, .. } => {
            let args = (errno(source), e.kind().to_string(), filename);
            match source.kind() {
                std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(args),
                std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(args),
                std::io::ErrorKind::AlreadyExists => PyFileExistsError::new_err(args),
                _ => PyOSError::new_err(args),
            }
        }
        ErrorKind::Exists => PyFileExistsError::new_err((
            EEXIST,
            "file exists; pass overwrite=True to replace it",
            filename,
        )),
        ErrorKind::NoSuchObject { .. } => {
            PyFileNotFoundError::new_err((ENOENT, e.kind().to_string(), filename))
        }
        ErrorKind::HardLinks { .. } => Error::new_err(format!(
            "{e}; pass split_links=True to replace this name only"
        )),
        // No format rastore reads: the message lists those it does.
        ErrorKind::NotRawArray { found, .. }
            if found.map(rastore::sniff::support) != Some(rastore::sniff::Support::Read) =>
        {
            Error::new_err(format!("{e}; rastore.convert converts between them"))
        }
        _ => Error::new_err(e.to_string()),
    }
}

/// `rastore.Error` with a message of our own.
pub fn error(msg: impl Into<String>) -> PyErr {
    Error::new_err(msg.into())
}
