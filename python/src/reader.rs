//! Gathers from Python: `rastore.Array.take` and integer-array indexing read a batch of
//! selections in one call, with the GIL released. `ReaderCore` is a local file's
//! reader (kept open by `rastore.Array`, one per process), or, for another format's
//! array that does not lie raw in its file (a chunked HDF5 dataset), its engine
//! source; objects have the same `gather` on `RemoteFileCore`.

use std::path::{Path, PathBuf};

use numpy::{PyReadonlyArray1, PyReadwriteArray1};
use pyo3::prelude::*;
use rastore::convert::{ConvertOptions, Format, Source};
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

/// A local file opened for gathers: a `.ra` (`rastore::DataReader`), or an array of
/// another format that cannot be used in place (a NetCDF record variable interleaved
/// with others), read through its engine source.
#[pyclass(module = "rastore._rastore", frozen)]
pub struct ReaderCore {
    reader: Reader,
}

enum Reader {
    Ra(Box<DataReader>),
    Engine(Box<dyn Source>),
}

impl Reader {
    /// `path` opened: a `.ra`, else, when its contents (or the file a path past it
    /// names a member of) are another format the engine reads, its source.
    fn open(path: &Path) -> rastore::Result<Reader> {
        match DataReader::open(path) {
            Ok(r) => Ok(Reader::Ra(Box::new(r))),
            Err(e) => {
                let (file, _) = rastore::convert::member_path(path);
                if !(file.is_file() && Format::of(&file).is_ok_and(|f| f != Format::Ra)) {
                    return Err(e);
                }
                rastore::convert::open(path, &ConvertOptions::new()).map(Reader::Engine)
            }
        }
    }

    /// Each of `sels`, checked against the dims first, one after another into `out`.
    fn read_many(&self, sels: &[Vec<Stride>], out: &mut [u8]) -> rastore::Result<()> {
        let source = match self {
            Reader::Ra(r) => return r.read_many_into(sels, out),
            Reader::Engine(s) => s,
        };
        let desc = source.desc();
        let w = desc.dtype.elbyte;
        let mut sizes = Vec::with_capacity(sels.len());
        for sel in sels {
            let within = sel.len() == desc.dims.len()
                && sel.iter().zip(&desc.dims).all(|(s, &d)| {
                    s.count == 0
                        || (s.count - 1)
                            .checked_mul(s.step)
                            .and_then(|x| x.checked_add(s.start))
                            .is_some_and(|last| last < d)
                });
            if !within {
                return Err(rastore::ErrorKind::InvalidArgument(format!(
                    "the selection {sel:?} is not within dims {:?}",
                    desc.dims
                ))
                .into());
            }
            let n = sel.iter().try_fold(w, |acc, s| acc.checked_mul(s.count));
            sizes.push(n.unwrap_or(u64::MAX));
        }
        let total = sizes.iter().try_fold(0u64, |acc, &n| acc.checked_add(n));
        if total != Some(out.len() as u64) {
            return Err(rastore::ErrorKind::InvalidArgument(format!(
                "a buffer of {} bytes for {total:?} selected",
                out.len()
            ))
            .into());
        }
        let mut at = 0usize;
        for (sel, n) in sels.iter().zip(sizes) {
            let n = n as usize;
            source.read_selection(sel, &mut out[at..at + n])?;
            at += n;
        }
        Ok(())
    }
}

#[pymethods]
impl ReaderCore {
    #[new]
    fn new(py: Python<'_>, path: PathBuf) -> PyResult<Self> {
        let reader = py.detach(|| Reader::open(&path)).map_err(to_py)?;
        Ok(ReaderCore { reader })
    }

    /// `(eltype, elbyte, dims)` of the data as the reader gives it (a BitArray as Julia
    /// Bools, native byte order but for big-endian user types).
    #[getter]
    fn header(&self) -> (u64, u64, Vec<u64>) {
        match &self.reader {
            Reader::Ra(r) => {
                let h = r.header();
                let dtype = h.dtype();
                (dtype.eltype, dtype.elbyte, h.dims().to_vec())
            }
            Reader::Engine(s) => {
                let d = s.desc();
                (d.dtype.eltype, d.dtype.elbyte, d.dims.clone())
            }
        }
    }

    /// The trailer's bytes.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        let trailer = match &self.reader {
            Reader::Ra(r) => r.metadata(),
            Reader::Engine(s) => &s.desc().trailer,
        };
        pyo3::types::PyBytes::new(py, trailer)
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
        py.detach(|| self.reader.read_many(&sels, out))
            .map_err(to_py)
    }

    /// Whether the page cache holds `base` with each of `indices` on `axis`, judged by
    /// a few of them (an engine source: no, it decodes).
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
        match &self.reader {
            Reader::Ra(r) => py.detach(|| r.resident(&sels)).map_err(to_py),
            Reader::Engine(_) => Ok(false),
        }
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
        py.detach(|| self.reader.read_many(&sels, out))
            .map_err(to_py)
    }
}
