//! `rastore.Error` and how Rust errors become Python ones: the message is the Rust one
//! (path, field, numbers) either way.

use pyo3::exceptions::{PyFileExistsError, PyFileNotFoundError, PyOSError, PyPermissionError};
use pyo3::PyErr;
use rastore::ErrorKind;

pyo3::create_exception!(
    rastore,
    Error,
    pyo3::exceptions::PyValueError,
    "A bad file or a refused operation; the message names the path, the field and the numbers."
);

/// OS failures become the matching `OSError` subclass (with `errno`), everything else
/// `rastore.Error`.
pub fn to_py(e: rastore::Error) -> PyErr {
    let msg = e.to_string();
    let ErrorKind::Io { source, .. } = e.kind() else {
        return Error::new_err(msg);
    };
    let args = (source.raw_os_error().unwrap_or(0), msg);
    match source.kind() {
        std::io::ErrorKind::NotFound => PyFileNotFoundError::new_err(args),
        std::io::ErrorKind::PermissionDenied => PyPermissionError::new_err(args),
        std::io::ErrorKind::AlreadyExists => PyFileExistsError::new_err(args),
        _ => PyOSError::new_err(args),
    }
}

/// `rastore.Error` with a message of our own.
pub fn error(msg: impl Into<String>) -> PyErr {
    Error::new_err(msg.into())
}
