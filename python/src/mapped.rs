//! `MappedFile`: a read-only or read-write mapping of a `.ra` file, and the NumPy arrays
//! that lie straight over it.
//!
//! Every array made here has the `MappedFile` as its `base`, so the mapping lives at
//! least as long as any array over it (views of those arrays keep them alive in turn).
//! `close` unmaps early, and refuses while one of them is alive: each is tracked by a
//! weak reference. No array can outlive the memory it points to.

use std::ffi::{c_int, c_void};
use std::path::PathBuf;

use numpy::npyffi::{self, npy_intp, NPY_ARRAY_WRITEABLE, PY_ARRAY_API};
use numpy::{PyArrayDescr, PyArrayDescrMethods};
use pyo3::exceptions::PyBufferError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyWeakrefMethods, PyWeakrefReference};
use rastore::{Advice, Encoding, ErrorKind, Header, MappedNpy, MappedRa, MappedRaMut, ViewRefusal};

use crate::errors::{error, to_py};

enum Map {
    Read(MappedRa),
    Write(MappedRaMut),
    Npy(MappedNpy),
    Closed,
}

/// The mapping behind `rastore.MappedFile` (which subclasses it in Python).
#[pyclass(subclass, module = "rastore._rastore")]
pub struct MappedFileCore {
    map: Map,
    path: PathBuf,
    /// The path made absolute when the file was mapped: what a pickle carries, so that
    /// a process in another folder maps the same file.
    absolute: PathBuf,
    slab: Option<(u64, u64)>,
    /// Weak references to the arrays exported over the mapping.
    exports: Vec<Py<PyWeakrefReference>>,
}

/// Where the array over a mapping lies and how it is laid out.
struct Region {
    ptr: *mut u8,
    len: usize,
    dims: Vec<u64>,
    writeable: bool,
    /// Column-major (`.ra`, Fortran-order `.npy`), else row-major.
    fortran: bool,
}

/// Whether `path` starts like a `.npy` file.
pub fn is_npy(path: &std::path::Path) -> bool {
    let mut magic = [0u8; 6];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok_and(|()| rastore::sniff::is_npy(&magic))
}

/// Why the data cannot be used in place, if it cannot.
fn refusal(h: &Header) -> Option<ViewRefusal> {
    match h.encoding() {
        Encoding::Bits => Some(ViewRefusal::BitPacked),
        Encoding::Raw if h.native_endian() => None,
        Encoding::Raw => Some(ViewRefusal::NonNativeEndian),
        _ => Some(ViewRefusal::Compressed),
    }
}

impl MappedFileCore {
    /// Where the array over the mapping lies, its dims and layout.
    fn region(&mut self) -> PyResult<Region> {
        let (header, slab, ptr, len, writeable) = match &mut self.map {
            Map::Npy(m) => {
                let d = m.data_bytes();
                return Ok(Region {
                    ptr: d.as_ptr().cast_mut(),
                    len: d.len(),
                    dims: m.header().shape.clone(),
                    writeable: false,
                    fortran: m.header().fortran_order,
                });
            }
            Map::Read(m) => {
                let d = m.data_bytes();
                (
                    m.header().clone(),
                    None,
                    d.as_ptr().cast_mut(),
                    d.len(),
                    false,
                )
            }
            Map::Write(m) => {
                let (h, s) = (m.header().clone(), m.slab());
                let d = m.data_mut();
                (h, s, d.as_mut_ptr(), d.len(), true)
            }
            Map::Closed => {
                return Err(error(format!(
                    "{}: the mapping is closed",
                    self.path.display()
                )))
            }
        };
        if let Some(reason) = refusal(&header) {
            return Err(to_py(
                rastore::Error::from(ErrorKind::NotViewable { reason }).at(&self.path),
            ));
        }
        let mut dims = header.dims().to_vec();
        if let (Some(r), Some(last)) = (slab, dims.last_mut()) {
            *last = r.end - r.start;
        }
        Ok(Region {
            ptr,
            len,
            dims,
            writeable,
            fortran: true,
        })
    }

    fn live_exports(&mut self, py: Python<'_>) -> usize {
        self.exports.retain(|w| w.bind(py).upgrade().is_some());
        self.exports.len()
    }
}

#[pymethods]
impl MappedFileCore {
    /// Maps `path`: read-only (`mode="r"`), or read-write (`"r+"`), the whole array or
    /// the `slab = (start, stop)` range of its last axis. A `.npy` file (told by its
    /// first bytes) is mapped read-only, in the order it is stored.
    #[new]
    #[pyo3(signature = (path, mode = "r", slab = None))]
    fn new(py: Python<'_>, path: PathBuf, mode: &str, slab: Option<(u64, u64)>) -> PyResult<Self> {
        let absolute = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
        let map = match (mode, slab) {
            // SAFETY: the package's documented contract, as np.memmap's: no other program
            // truncates or rewrites the file in place while it is mapped (rastore's own
            // writers replace files by rename and never truncate them).
            // A `.npy`, or another format's array that lies raw in its file, only when
            // the file is no `.ra`: opening a `.ra` reads nothing more than before.
            // SAFETY: as above: np.load(mmap_mode="r")'s contract.
            ("r", None) => py.detach(|| match unsafe { MappedRa::open(&path) } {
                Err(_) if rastore::convert::placeable(&path) => {
                    let placed = rastore::convert::placed(&path)?;
                    unsafe { MappedNpy::open_placed(&placed) }.map(Map::Npy)
                }
                r => r.map(Map::Read),
            }),
            // SAFETY: as above; the caller's slabs are disjoint from other writers'.
            ("r+", None) => py.detach(|| unsafe { MappedRaMut::open(&path) }.map(Map::Write)),
            // SAFETY: as above.
            ("r+", Some((a, b))) => {
                py.detach(|| unsafe { MappedRaMut::open_slab(&path, a..b) }.map(Map::Write))
            }
            ("r", Some(_)) => return Err(error("a slab is mapped for writing: mode=\"r+\"")),
            _ => return Err(error(format!("mode must be \"r\" or \"r+\", not {mode:?}"))),
        }
        .map_err(to_py)?;
        Ok(MappedFileCore {
            map,
            path,
            absolute,
            slab,
            exports: Vec::new(),
        })
    }

    /// A NumPy array of `dtype` over the mapping: shape == dims (the slab's extent last),
    /// Fortran-ordered, writeable only for `"r+"`, with this object as its `base`.
    fn _export<'py>(
        slf: &Bound<'py, Self>,
        dtype: &Bound<'py, PyArrayDescr>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let Region {
            ptr,
            len,
            dims,
            writeable,
            fortran,
        } = slf.borrow_mut().region()?;
        let path = slf.borrow().path.clone();
        let itemsize = dtype.itemsize() as u64;
        rastore::formats::npy::check_numpy_shape(&dims, itemsize).map_err(|e| {
            error(format!(
                "{}: NumPy cannot hold dims {dims:?}: {e}",
                path.display()
            ))
        })?;
        let count = dims.iter().product::<u64>();
        if count.checked_mul(itemsize) != Some(len as u64) {
            return Err(error(format!(
                "{}: a dtype of {itemsize} bytes does not fit {len} data bytes of dims {dims:?}",
                path.display()
            )));
        }
        // check_numpy_shape bounded every extent and the byte count by 2^63 - 1.
        let mut shape: Vec<npy_intp> = dims.iter().map(|&d| d as npy_intp).collect();
        let mut strides: Vec<npy_intp> = vec![0; dims.len()];
        let mut stride = itemsize as npy_intp;
        let order: Vec<usize> = if fortran {
            (0..dims.len()).collect()
        } else {
            (0..dims.len()).rev().collect()
        };
        for i in order {
            strides[i] = stride;
            stride = stride.saturating_mul(dims[i].max(1) as npy_intp);
        }
        let flags: c_int = if writeable { NPY_ARRAY_WRITEABLE } else { 0 };
        // SAFETY: FFI into NumPy's C API with the GIL held. `ptr` points at `len` mapped
        // bytes, exactly the `Π shape × itemsize` the shape and the strides reach;
        // the mapping stays valid while the array lives because the array's base (set
        // next) is this object, and `close` refuses while the array is alive. The descr
        // reference passed is a new one, which NumPy steals.
        let arr = unsafe {
            PY_ARRAY_API.PyArray_NewFromDescr(
                py,
                npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
                dtype.clone().into_dtype_ptr(),
                shape.len() as c_int,
                shape.as_mut_ptr(),
                strides.as_mut_ptr(),
                ptr.cast::<c_void>(),
                flags,
                std::ptr::null_mut(),
            )
        };
        if arr.is_null() {
            let e = PyErr::fetch(py);
            return Err(error(format!(
                "{}: NumPy cannot hold dims {dims:?} of {itemsize}-byte elements: {e}",
                path.display()
            )));
        }
        // SAFETY: `arr` is a new, non-null reference that we now own.
        let arr = unsafe { Bound::from_owned_ptr(py, arr) };
        // SAFETY: `arr` is an ndarray fresh from NumPy without a base; NumPy steals the
        // new reference to this object that `into_ptr` hands over.
        let rc = unsafe {
            PY_ARRAY_API.PyArray_SetBaseObject(
                py,
                arr.as_ptr().cast::<npyffi::PyArrayObject>(),
                slf.clone().into_any().into_ptr(),
            )
        };
        if rc < 0 {
            return Err(PyErr::fetch(py));
        }
        let weak = PyWeakrefReference::new(&arr)?;
        let mut this = slf.borrow_mut();
        this.live_exports(py);
        this.exports.push(weak.unbind());
        Ok(arr)
    }

    /// Unmaps now. Raises `BufferError` while an array over the mapping is alive.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        let alive = self.live_exports(py);
        if alive > 0 {
            return Err(PyBufferError::new_err(format!(
                "cannot close {}: {alive} array(s) over its mapping are alive; delete them first",
                self.path.display()
            )));
        }
        self.map = Map::Closed;
        Ok(())
    }

    /// Tells the system how a read-only mapping will be used: `"sequential"` (read
    /// ahead aggressively), `"random"` (read ahead nothing), `"willneed"` (read it all
    /// in now), `"normal"`. A hint (`madvise`; nothing on Windows). Read-write and
    /// `.npy` mappings take no hint.
    fn advise(&self, advice: &str) -> PyResult<()> {
        let a = match advice {
            "normal" => Advice::Normal,
            "sequential" => Advice::Sequential,
            "random" => Advice::Random,
            "willneed" => Advice::WillNeed,
            _ => {
                return Err(error(format!(
                    "advice must be \"normal\", \"sequential\", \"random\" or \"willneed\", not {advice:?}"
                )))
            }
        };
        if let Map::Read(m) = &self.map {
            if a == Advice::WillNeed {
                m.will_need(0..u64::MAX);
            } else {
                m.advise(a);
            }
        }
        Ok(())
    }

    /// Whether `close` has unmapped the file.
    #[getter]
    fn closed(&self) -> bool {
        matches!(self.map, Map::Closed)
    }

    /// Writes a writeable mapping back to the file and syncs it (`msync` + `fsync`):
    /// on return every store made before survives a power loss. Nothing to do for a
    /// read-only mapping.
    fn flush(&self, py: Python<'_>) -> PyResult<()> {
        match &self.map {
            Map::Write(m) => py.detach(|| m.flush()).map_err(to_py),
            Map::Read(_) | Map::Npy(_) => Ok(()),
            Map::Closed => Err(error(format!(
                "{}: the mapping is closed",
                self.path.display()
            ))),
        }
    }

    /// The path, as given.
    #[getter]
    fn path(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }

    /// The path made absolute when the file was mapped (what a pickle carries).
    #[getter]
    fn _absolute(&self) -> String {
        self.absolute.to_string_lossy().into_owned()
    }

    /// `"r"` or `"r+"`.
    #[getter]
    fn mode(&self) -> &'static str {
        match self.map {
            Map::Read(_) | Map::Npy(_) => "r",
            _ => "r+",
        }
    }

    /// The NumPy descr of a mapped `.npy` (as Python source), else `None`.
    fn _npy_descr(&self) -> Option<String> {
        match &self.map {
            Map::Npy(m) => Some(m.header().descr.to_python()),
            _ => None,
        }
    }

    /// The `(start, stop)` range of the last axis mapped, or `None` for all of it.
    #[getter]
    fn slab(&self) -> Option<(u64, u64)> {
        self.slab
    }

    /// The metadata trailer.
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        match &self.map {
            Map::Read(m) => Ok(PyBytes::new(py, m.metadata())),
            Map::Npy(_) => Ok(PyBytes::new(py, b"")),
            _ => {
                let t = py
                    .detach(|| rastore::read_metadata(&self.path))
                    .map_err(to_py)?;
                Ok(PyBytes::new(py, &t))
            }
        }
    }

    /// `(eltype, elbyte, bitarray)` from the mapped header.
    fn _type(&self) -> PyResult<(u64, u64, bool)> {
        let h = match &self.map {
            Map::Read(m) => m.header(),
            Map::Write(m) => m.header(),
            Map::Npy(_) => {
                return Err(error(
                    "a .npy mapping has a NumPy descr, not a RawArray type",
                ))
            }
            Map::Closed => {
                return Err(error(format!(
                    "{}: the mapping is closed",
                    self.path.display()
                )))
            }
        };
        let d = h.dtype();
        Ok((d.eltype, d.elbyte, h.encoding() == Encoding::Bits))
    }

    /// Address and length of the mapped data (for the zero-copy tests).
    fn _data_range(&mut self) -> PyResult<(usize, usize)> {
        let r = self.region()?;
        Ok((r.ptr as usize, r.len))
    }
}
