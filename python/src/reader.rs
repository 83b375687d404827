//! Gathers from Python: `rastore.Array.take` and integer-array indexing read a batch of
//! selections in one call, with the GIL released. `ReaderCore` is a local file's
//! reader (kept open by `rastore.Array`, one per process); objects have the same
//! `gather` on `RemoteFileCore`.

use std::path::PathBuf;

use numpy::{PyReadonlyArray1, PyReadwriteArray1};
use pyo3::prelude::*;
use rastore::{DataReader, Stride};

use crate::errors::{error, to_py};

/// The selections of a gather along `axis`: `base` (`(start, step, count)` per axis)
/// with `(i, 1, 1)` on `axis` for each index `i`, in order.
pub fn along(base: &[(u64, u64, u64)], axis: usize, indices: &[u64]) -> PyResult<Vec<Vec<Stride>>> {
    if axis >= base.len() {
        return Err(error(format!("axis {axis} of {} axes", base.len())));
    }
    let base: Vec<Stride> = base.iter().map(|&(a, s, c)| Stride::new(a, s, c)).collect();
    Ok(indices
        .iter()
        .map(|&i| {
            let mut sel = base.clone();
            sel[axis] = Stride::new(i, 1, 1);
            sel
        })
        .collect())
}

/// Selections as Python gives them: `(start, step, count)` per axis, each.
pub fn strides(selections: Vec<Vec<(u64, u64, u64)>>) -> Vec<Vec<Stride>> {
    selections
        .into_iter()
        .map(|sel| {
            sel.into_iter()
                .map(|(a, s, c)| Stride::new(a, s, c))
                .collect()
        })
        .collect()
}

/// The indices of a gather, which NumPy hands over contiguous.
pub fn indices_of<'a>(indices: &'a PyReadonlyArray1<'_, u64>) -> PyResult<&'a [u64]> {
    indices
        .as_slice()
        .map_err(|e| error(format!("indices must be contiguous: {e}")))
}

/// The bytes of a writeable, contiguous `uint8` array.
pub fn bytes_mut<'a>(buf: &'a mut PyReadwriteArray1<'_, u8>) -> PyResult<&'a mut [u8]> {
    buf.as_slice_mut()
        .map_err(|e| error(format!("the buffer must be contiguous bytes: {e}")))
}

/// A local file opened for gathers (`rastore::DataReader`).
#[pyclass(module = "rastore._rastore", frozen)]
pub struct ReaderCore {
    reader: DataReader,
}

#[pymethods]
impl ReaderCore {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let reader = py.detach(|| DataReader::open(&path)).map_err(to_py)?;
        Ok(ReaderCore { reader })
    }

    /// `(eltype, elbyte, dims)` of the data as the reader gives it (a BitArray as Julia
    /// Bools, native byte order but for big-endian user types).
    #[getter]
    fn header(&self) -> (u64, u64, Vec<u64>) {
        let h = self.reader.header();
        let dtype = h.dtype();
        (dtype.eltype, dtype.elbyte, h.dims().to_vec())
    }

    /// The trailer's bytes.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        pyo3::types::PyBytes::new(py, self.reader.metadata())
    }

    /// Reads `base` with each of `indices` on `axis` (see [`along`]), one selection
    /// after another into `buf`, each column-major: one batch, at the device's queue
    /// depth.
    fn gather(
        &self,
        py: Python<'_>,
        base: Vec<(u64, u64, u64)>,
        axis: usize,
        indices: PyReadonlyArray1<'_, u64>,
        mut buf: PyReadwriteArray1<'_, u8>,
    ) -> PyResult<()> {
        let indices = indices_of(&indices)?;
        let sels = along(&base, axis, indices)?;
        let out = bytes_mut(&mut buf)?;
        py.detach(|| self.reader.read_many_into(&sels, out))
            .map_err(to_py)
    }

    /// Whether the page cache holds `base` with each of `indices` on `axis`, judged by
    /// a few of them.
    fn resident(
        &self,
        py: Python<'_>,
        base: Vec<(u64, u64, u64)>,
        axis: usize,
        indices: PyReadonlyArray1<'_, u64>,
    ) -> PyResult<bool> {
        let indices = indices_of(&indices)?;
        let step = (indices.len() / 8).max(1);
        let probes: Vec<u64> = indices.iter().step_by(step).take(8).copied().collect();
        let sels = along(&base, axis, &probes)?;
        py.detach(|| self.reader.resident(&sels)).map_err(to_py)
    }

    /// Reads each of `selections` (`(start, step, count)` per axis), one after another
    /// into `buf`: one batch.
    fn gather_selections(
        &self,
        py: Python<'_>,
        selections: Vec<Vec<(u64, u64, u64)>>,
        mut buf: PyReadwriteArray1<'_, u8>,
    ) -> PyResult<()> {
        let sels = strides(selections);
        let out = bytes_mut(&mut buf)?;
        py.detach(|| self.reader.read_many_into(&sels, out))
            .map_err(to_py)
    }
}
