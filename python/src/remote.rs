//! Objects in S3-protocol storage (feature `s3`): an opened object read by frames,
//! whole reads and writes, `info`, and the steps of a distributed fill. Each call
//! releases the GIL while it waits on the network. `settings` are object_store's AWS
//! names (`aws_endpoint`, `aws_region`, ...) that override the environment's.

use std::path::Path;
use std::sync::OnceLock;

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1, PyReadwriteArray1};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rastore::convert::{ConvertOptions, Desc};
use rastore::remote::{FillToken, RemoteOptions, RemoteRa};
use rastore::{DType, Encoding, Header};

use crate::errors::{error, to_py};
use crate::io::{bytes_of, named_format, write_by_name};
use crate::reader::{along, bytes_mut, indices_of, strides};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RemoteFileCore>()?;
    m.add_function(wrap_pyfunction!(remote_read, m)?)?;
    m.add_function(wrap_pyfunction!(remote_write, m)?)?;
    m.add_function(wrap_pyfunction!(remote_info_json, m)?)?;
    m.add_function(wrap_pyfunction!(fill_plan, m)?)?;
    m.add_function(wrap_pyfunction!(fill_start, m)?)?;
    m.add_function(wrap_pyfunction!(fill_frames, m)?)?;
    m.add_function(wrap_pyfunction!(fill_put, m)?)?;
    m.add_function(wrap_pyfunction!(fill_complete, m)?)?;
    m.add_function(wrap_pyfunction!(fill_abort, m)?)?;
    m.add_function(wrap_pyfunction!(remote_list, m)?)?;
    m.add_function(wrap_pyfunction!(remote_get, m)?)?;
    m.add_function(wrap_pyfunction!(remote_put, m)?)?;
    m.add_function(wrap_pyfunction!(remote_delete, m)?)?;
    Ok(())
}

fn options(settings: Vec<(String, String)>) -> RemoteOptions {
    RemoteOptions::with_settings(settings)
}

/// An opened `.ra` object: its header (checked as a local file's is), read by ranges
/// of its last axis with concurrent ranged GETs.
#[pyclass(module = "rastore._rastore", frozen)]
pub struct RemoteFileCore {
    ra: RemoteRa,
    trailer: OnceLock<Vec<u8>>,
}

#[pymethods]
impl RemoteFileCore {
    #[new]
    fn new(py: Python<'_>, url: String, settings: Vec<(String, String)>) -> PyResult<Self> {
        let ra = py
            .detach(|| RemoteRa::open_with(&url, options(settings)))
            .map_err(to_py)?;
        Ok(RemoteFileCore {
            ra,
            trailer: OnceLock::new(),
        })
    }

    /// Bytes `start..stop` of the object as they are stored (one or more concurrent
    /// ranged GETs): a chunk of a Zarr view in place.
    fn read_range<'py>(
        &self,
        py: Python<'py>,
        start: u64,
        stop: u64,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let bytes = py
            .detach(|| self.ra.read_bytes(start..stop.max(start)))
            .map_err(to_py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// The dims, first fastest.
    #[getter]
    fn dims(&self) -> Vec<u64> {
        self.ra.header().dims().to_vec()
    }

    /// `(eltype, elbyte, is a BitArray)`.
    fn _type(&self) -> (u64, u64, bool) {
        let h = self.ra.header();
        let d = h.dtype();
        (d.eltype, d.elbyte, h.encoding() == Encoding::Bits)
    }

    /// The object's length in bytes.
    #[getter]
    fn length(&self) -> u64 {
        self.ra.len()
    }

    /// The object's ETag, when the server gave one.
    #[getter]
    fn etag(&self) -> Option<String> {
        self.ra.etag().map(str::to_string)
    }

    /// The trailer (one suffix GET, the first time).
    #[getter]
    fn metadata<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        if let Some(t) = self.trailer.get() {
            return Ok(PyBytes::new(py, t));
        }
        let t = py.detach(|| self.ra.metadata()).map_err(to_py)?;
        Ok(PyBytes::new(py, self.trailer.get_or_init(|| t)))
    }

    /// Reads the elements `sel` picks (`(start, step, count)` per axis, the first
    /// fastest, steps of at least 1), decoded to native order, into `buf` (their
    /// bytes, column-major): from a plain object, only the byte runs holding them.
    fn read_selection(
        &self,
        py: Python<'_>,
        sel: Vec<(u64, u64, u64)>,
        buf: PyReadwriteArray1<'_, u8>,
    ) -> PyResult<()> {
        self.gather_selections(py, vec![sel], buf)
    }

    /// Reads `base` with each of `indices` on `axis`, one selection after another into
    /// `buf`: one batch of concurrent ranged GETs, coalesced.
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
        py.detach(|| self.ra.read_many_into(&sels, out))
            .map_err(to_py)
    }

    /// Reads each of `selections`, one after another into `buf`: one batch.
    fn gather_selections(
        &self,
        py: Python<'_>,
        selections: Vec<Vec<(u64, u64, u64)>>,
        mut buf: PyReadwriteArray1<'_, u8>,
    ) -> PyResult<()> {
        let sels = strides(selections);
        let out = bytes_mut(&mut buf)?;
        py.detach(|| self.ra.read_many_into(&sels, out))
            .map_err(to_py)
    }

    fn __repr__(&self) -> String {
        format!("RemoteFileCore({:?})", self.ra.url().to_string())
    }
}

/// The whole object, decoded, into memory NumPy allocates: `allocate(eltype, elbyte,
/// dims, trailer)` returns `(array, its bytes as a flat uint8 view)`, as for `read`.
/// Plain data is fetched by concurrent ranged GETs straight into the array.
#[pyfunction]
fn remote_read<'py>(
    py: Python<'py>,
    url: String,
    settings: Vec<(String, String)>,
    allocate: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let ra = py
        .detach(|| RemoteRa::open_with(&url, options(settings)))
        .map_err(to_py)?;
    let h = ra.header().clone();
    let plain = h.encoding() == Encoding::Raw && !h.dims().is_empty();
    let (raw, trailer) = if plain {
        (None, py.detach(|| ra.metadata()).map_err(to_py)?)
    } else {
        let raw = py.detach(|| ra.decoded()).map_err(to_py)?;
        let trailer = raw.metadata.clone();
        (Some(raw), trailer)
    };
    let header = raw.as_ref().map_or(&h, |r| &r.header);
    let (dtype, dims) = (header.dtype(), header.dims().to_vec());
    let (array, bytes): (Bound<'py, PyAny>, Bound<'py, PyArray1<u8>>) = allocate
        .call1((dtype.eltype, dtype.elbyte, dims, PyBytes::new(py, &trailer)))?
        .extract()?;
    let mut bytes = bytes.readwrite();
    let buf = bytes
        .as_slice_mut()
        .map_err(|e| error(format!("the buffer must be contiguous bytes: {e}")))?;
    match raw {
        None => {
            let frames = h.dims().last().copied().unwrap_or(0);
            py.detach(|| ra.read_slab_into(0..frames, buf))
                .map_err(to_py)?;
        }
        Some(raw) if raw.data.len() == buf.len() => buf.copy_from_slice(&raw.data),
        Some(raw) => {
            return Err(error(format!(
                "{url}: {} data bytes for a buffer of {}",
                raw.data.len(),
                buf.len()
            )))
        }
    }
    Ok(array)
}

/// Uploads column-major `data` of `dims` and type `(eltype, elbyte)`, then `metadata`,
/// to `url`: nothing is visible under the key until the upload completes. A `.ra`
/// unless the name says another format (`write_by_name`); a `.ra` object is stored
/// raw, for ranged reads (`compress` refused).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn remote_write(
    py: Python<'_>,
    url: String,
    settings: Vec<(String, String)>,
    eltype: u64,
    elbyte: u64,
    dims: Vec<u64>,
    data: PyReadonlyArray1<'_, u8>,
    metadata: Vec<u8>,
    compress: bool,
) -> PyResult<()> {
    let bytes = bytes_of(&data)?;
    let path = Path::new(&url);
    if let Some(format) = named_format(path) {
        let desc = Desc {
            dtype: DType { eltype, elbyte },
            dims,
            trailer: metadata,
        };
        let options = ConvertOptions::new()
            .overwrite(true)
            .remote(options(settings));
        return write_by_name(py, path, format, desc, bytes, (compress, false), options);
    }
    if compress {
        return Err(error(format!(
            "{url}: compress applies to files; objects are stored raw, for ranged reads"
        )));
    }
    py.detach(|| {
        let header = Header::new(DType { eltype, elbyte }, &dims).map_err(|e| e.at(&url))?;
        rastore::remote::upload_bytes(&url, &header, bytes, &metadata, &options(settings))
    })
    .map(drop)
    .map_err(to_py)
}

/// `ra info --json` of an object.
#[pyfunction]
fn remote_info_json(
    py: Python<'_>,
    url: String,
    settings: Vec<(String, String)>,
) -> PyResult<String> {
    py.detach(|| RemoteRa::open_with(&url, options(settings)).map(|r| r.info().to_json()))
        .map_err(to_py)
}

fn token(text: &str) -> PyResult<FillToken> {
    FillToken::from_json(text).map_err(to_py)
}

/// Plans a fill of `url` without beginning it: a token (JSON) with no upload id yet.
#[pyfunction]
fn fill_plan(
    url: String,
    settings: Vec<(String, String)>,
    eltype: u64,
    elbyte: u64,
    dims: Vec<u64>,
    trailer: Vec<u8>,
) -> PyResult<String> {
    let dtype = DType { eltype, elbyte };
    FillToken::plan(&url, dtype, &dims, &trailer, &options(settings))
        .map(|t| t.to_json())
        .map_err(to_py)
}

/// Begins the upload a planned token describes: the token with its upload id.
#[pyfunction]
fn fill_start(
    py: Python<'_>,
    token_json: &str,
    settings: Vec<(String, String)>,
) -> PyResult<String> {
    let t = token(token_json)?;
    py.detach(|| t.start(&options(settings)).map(|t| t.to_json()))
        .map_err(to_py)
}

/// The plan of a fill: `(part, start, stop)` frames of each part, parts from 1.
#[pyfunction]
fn fill_frames(token_json: &str) -> PyResult<Vec<(u64, u64, u64)>> {
    let t = token(token_json)?;
    (1..=t.parts())
        .map(|p| t.frames(p).map(|f| (p, f.start, f.end)).map_err(to_py))
        .collect()
}

/// Uploads part `part` from its frames' column-major bytes; returns its ETag.
#[pyfunction]
fn fill_put(
    py: Python<'_>,
    token_json: &str,
    settings: Vec<(String, String)>,
    part: u64,
    data: PyReadonlyArray1<'_, u8>,
) -> PyResult<String> {
    let t = token(token_json)?;
    let bytes = bytes_of(&data)?.to_vec();
    py.detach(|| t.put_part(part, bytes, &options(settings)))
        .map_err(to_py)
}

/// Completes the fill from every part's ETag: the object appears whole.
#[pyfunction]
fn fill_complete(
    py: Python<'_>,
    token_json: &str,
    settings: Vec<(String, String)>,
    etags: Vec<(u64, String)>,
) -> PyResult<()> {
    let t = token(token_json)?;
    py.detach(|| t.complete(&etags, &options(settings)))
        .map_err(to_py)
}

/// Aborts the fill: the parts uploaded are dropped, and no object appears.
#[pyfunction]
fn fill_abort(py: Python<'_>, token_json: &str, settings: Vec<(String, String)>) -> PyResult<()> {
    let t = token(token_json)?;
    py.detach(|| t.abort(&options(settings))).map_err(to_py)
}

/// The objects under the prefix `url` (`s3://bucket/run/`), every level: `(name below
/// the prefix, size)`, sorted.
#[pyfunction]
fn remote_list(
    py: Python<'_>,
    url: String,
    settings: Vec<(String, String)>,
) -> PyResult<Vec<(String, u64)>> {
    let listed = py
        .detach(|| rastore::remote::objects::list(&url, &options(settings)))
        .map_err(to_py)?;
    Ok(listed.into_iter().map(|l| (l.name, l.size)).collect())
}

/// The bytes of a small object (at most `max`), or `None` if there is none.
#[pyfunction]
fn remote_get<'py>(
    py: Python<'py>,
    url: String,
    max: u64,
    settings: Vec<(String, String)>,
) -> PyResult<Option<Bound<'py, PyBytes>>> {
    let bytes = py
        .detach(|| rastore::remote::objects::get_small(&url, max, &options(settings)))
        .map_err(to_py)?;
    Ok(bytes.map(|b| PyBytes::new(py, &b)))
}

/// Stores `data` as the object `url`, whole.
#[pyfunction]
fn remote_put(
    py: Python<'_>,
    url: String,
    data: Vec<u8>,
    settings: Vec<(String, String)>,
) -> PyResult<()> {
    py.detach(|| rastore::remote::objects::put(&url, data, &options(settings)))
        .map_err(to_py)
}

/// Removes the objects `urls` (a missing one is no error).
#[pyfunction]
fn remote_delete(
    py: Python<'_>,
    urls: Vec<String>,
    settings: Vec<(String, String)>,
) -> PyResult<()> {
    py.detach(|| rastore::remote::objects::delete(&urls, &options(settings)))
        .map_err(to_py)
}
