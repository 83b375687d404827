//! Appending frames from Python: `rastore.Appender` wraps this.

use std::path::PathBuf;

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;
use rastore::{AppendOptions, Appender, DType};

use crate::errors::{error, to_py};
use crate::io::bytes_of;

/// The appender behind `rastore.Appender`.
#[pyclass(subclass, module = "rastore._rastore")]
pub struct AppenderCore {
    inner: Option<Appender>,
}

impl AppenderCore {
    fn inner(&mut self) -> PyResult<&mut Appender> {
        self.inner
            .as_mut()
            .ok_or_else(|| error("the appender is finished"))
    }
}

#[pymethods]
impl AppenderCore {
    /// Opens `path` to append to, or creates it for frames of `(eltype, elbyte)` and
    /// shape `frame` when they are given and it does not exist.
    #[new]
    #[pyo3(signature = (path, eltype = None, elbyte = None, frame = None, durable = true))]
    fn new(
        py: Python<'_>,
        path: PathBuf,
        eltype: Option<u64>,
        elbyte: Option<u64>,
        frame: Option<Vec<u64>>,
        durable: bool,
    ) -> PyResult<Self> {
        let options = AppendOptions::new().durable(durable);
        let inner = py
            .detach(|| match (eltype, elbyte, &frame) {
                (Some(eltype), Some(elbyte), Some(frame)) => {
                    options.open_or_create(&path, DType { eltype, elbyte }, frame)
                }
                _ => options.open(&path),
            })
            .map_err(to_py)?;
        Ok(AppenderCore { inner: Some(inner) })
    }

    /// Appends column-major `data` of type `(eltype, elbyte)` and `shape` (one frame,
    /// or frames along a last axis); returns the frame count.
    fn _append(
        &mut self,
        py: Python<'_>,
        eltype: u64,
        elbyte: u64,
        shape: Vec<u64>,
        data: PyReadonlyArray1<'_, u8>,
    ) -> PyResult<u64> {
        let bytes = bytes_of(&data)?;
        let a = self.inner()?;
        let k = a
            .frames_in(DType { eltype, elbyte }, &shape)
            .map_err(|e| to_py(e.at(a.path())))?;
        if k == 0 {
            return Ok(0);
        }
        py.detach(|| a.append_bytes(bytes)).map_err(to_py)
    }

    /// Makes the frames appended so far visible (and durable, unless opened with
    /// `durable=False`); returns the frames committed in all.
    fn commit(&mut self, py: Python<'_>) -> PyResult<u64> {
        let a = self.inner()?;
        py.detach(|| a.commit()).map_err(to_py)
    }

    /// Commits and ends the appending; returns the file's dims.
    fn finish(&mut self, py: Python<'_>) -> PyResult<Vec<u64>> {
        let a = self
            .inner
            .take()
            .ok_or_else(|| error("the appender is finished"))?;
        py.detach(|| a.finish())
            .map(|h| h.dims().to_vec())
            .map_err(to_py)
    }

    /// Ends the appending without committing what is pending.
    fn discard(&mut self, py: Python<'_>) {
        if let Some(a) = self.inner.take() {
            py.detach(|| drop(a));
        }
    }

    /// Frames committed.
    #[getter]
    fn frames(&mut self) -> PyResult<u64> {
        Ok(self.inner()?.frames())
    }

    /// Frames appended since the last commit.
    #[getter]
    fn pending(&mut self) -> PyResult<u64> {
        Ok(self.inner()?.pending())
    }

    /// The shape of one frame, first dim fastest.
    #[getter]
    fn frame_dims(&mut self) -> PyResult<Vec<u64>> {
        Ok(self.inner()?.frame_dims().to_vec())
    }
}
