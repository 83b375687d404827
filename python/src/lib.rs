//! `rastore._rastore`: the Rust half of the Python package. The Python half
//! (`rastore/__init__.py`) maps NumPy dtypes to RawArray types and back and shapes
//! the API; everything that touches files or memory is here.
//!
//! | concern | file |
//! |---|---|
//! | `rastore.Error` and the mapping of Rust errors to Python ones | `errors.rs` |
//! | `MappedFile`: mappings and the NumPy arrays that lie over them | `mapped.rs` |
//! | reading, writing, creating, converting, `info` | `io.rs` |
//! | appending frames | `append.rs` |
//! | objects in S3-protocol storage (feature `s3`) | `remote.rs` |
//! | NDL trailers to and from Python values (xarray's labels) | `ndl.rs` |
//! | gathers: a batch of selections in one call (`take`, integer-array indexing) | `reader.rs` |
//! | `.ra` read as Zarr in place: the store's layout, kerchunk references (feature `zarr`) | `refs.rs` |

mod append;
mod errors;
mod io;
mod mapped;
mod ndl;
mod reader;
#[cfg(feature = "zarr")]
mod refs;
#[cfg(feature = "s3")]
mod remote;

use pyo3::prelude::*;

#[pymodule]
fn _rastore(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<errors::Error>())?;
    m.add_class::<mapped::MappedFileCore>()?;
    m.add_class::<append::AppenderCore>()?;
    m.add_class::<reader::ReaderCore>()?;
    io::register(m)?;
    ndl::register(m)?;
    #[cfg(feature = "s3")]
    remote::register(m)?;
    #[cfg(feature = "zarr")]
    refs::register(m)?;
    Ok(())
}
