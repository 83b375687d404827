//! NDL trailers to and from Python values, for xarray's labels: the ndarray entity as
//! a dict, and a trailer made from attributes and extra entries (`name`,
//! `dimcoords`). YAML stays on the Rust side; Python sees plain values.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use rastore::formats::npy::Descr;
use rastore::ndl;
use rastore::{DType, Header};
use yaml_rust2::yaml::Hash;
use yaml_rust2::Yaml;

use crate::errors::{error, to_py};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(ndl_entity, m)?)?;
    m.add_function(wrap_pyfunction!(ndl_trailer, m)?)?;
    m.add_function(wrap_pyfunction!(ndl_document, m)?)?;
    m.add_function(wrap_pyfunction!(ndl_text, m)?)?;
    m.add_function(wrap_pyfunction!(unlabeled_dims, m)?)?;
    m.add("MAX_TRAILER_YAML", ndl::MAX_TRAILER_YAML)?;
    Ok(())
}

fn to_python<'py>(py: Python<'py>, y: &Yaml) -> PyResult<Bound<'py, PyAny>> {
    Ok(match y {
        Yaml::Integer(i) => i.into_pyobject(py)?.into_any(),
        Yaml::Real(text) => {
            let v = match text.trim_start_matches('+') {
                ".nan" | ".NaN" | ".NAN" => f64::NAN,
                ".inf" | ".Inf" | ".INF" => f64::INFINITY,
                "-.inf" | "-.Inf" | "-.INF" => f64::NEG_INFINITY,
                t => t
                    .parse()
                    .map_err(|_| error(format!("NDL: {text:?} is not a number")))?,
            };
            PyFloat::new(py, v).into_any()
        }
        Yaml::String(s) => PyString::new(py, s).into_any(),
        Yaml::Boolean(b) => PyBool::new(py, *b).to_owned().into_any(),
        Yaml::Array(items) => {
            let list = PyList::empty(py);
            for i in items {
                list.append(to_python(py, i)?)?;
            }
            list.into_any()
        }
        Yaml::Hash(h) => hash_to_python(py, h)?.into_any(),
        _ => py.None().into_bound(py),
    })
}

fn hash_to_python<'py>(py: Python<'py>, h: &Hash) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in h {
        let key = match k {
            Yaml::String(s) => PyString::new(py, s).into_any(),
            other => to_python(py, other)?,
        };
        d.set_item(key, to_python(py, v)?)?;
    }
    Ok(d)
}

fn to_yaml(v: &Bound<'_, PyAny>) -> PyResult<Yaml> {
    if v.is_none() {
        return Ok(Yaml::Null);
    }
    if let Ok(b) = v.cast::<PyBool>() {
        return Ok(Yaml::Boolean(b.is_true()));
    }
    if v.is_instance_of::<PyInt>() {
        return v
            .extract::<i64>()
            .map(Yaml::Integer)
            .map_err(|_| error(format!("NDL: the integer {v} does not fit 64 bits")));
    }
    if let Ok(f) = v.cast::<PyFloat>() {
        return Ok(rastore::ndl::real(f.value()));
    }
    if let Ok(s) = v.cast::<PyString>() {
        return Ok(Yaml::String(s.to_cow()?.into_owned()));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        return dict_to_yaml(d).map(Yaml::Hash);
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        return v
            .try_iter()?
            .map(|i| to_yaml(&i?))
            .collect::<PyResult<_>>()
            .map(Yaml::Array);
    }
    Err(PyTypeError::new_err(format!(
        "NDL holds None, bool, int, float, str, lists and dicts, not {}",
        v.get_type().name()?
    )))
}

fn dict_to_yaml(d: &Bound<'_, PyDict>) -> PyResult<Hash> {
    let mut h = Hash::new();
    for (k, v) in d.iter() {
        let key = k
            .cast::<PyString>()
            .map_err(|_| PyTypeError::new_err(format!("NDL keys are str, not {k}")))?;
        h.insert(Yaml::String(key.to_cow()?.into_owned()), to_yaml(&v)?);
    }
    Ok(h)
}

/// The ndarray entity of an NDL trailer as a dict, or None for a trailer that is not
/// NDL.
#[pyfunction]
fn ndl_entity<'py>(py: Python<'py>, trailer: &[u8]) -> PyResult<Option<Bound<'py, PyDict>>> {
    ndl::ndarray_entity(trailer)
        .map(|h| hash_to_python(py, &h))
        .transpose()
}

/// The NDL trailer for data of this type and dims (with a NumPy descr, as Python
/// source, for a type kept opaque), its ndarray holding `attributes` and the entries of
/// `extra` beside them.
#[pyfunction]
fn ndl_trailer<'py>(
    py: Python<'py>,
    eltype: u64,
    elbyte: u64,
    dims: Vec<u64>,
    descr: Option<&str>,
    attributes: &Bound<'py, PyDict>,
    extra: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyBytes>> {
    let header = Header::new(DType { eltype, elbyte }, &dims).map_err(to_py)?;
    let descr = descr.map(Descr::parse).transpose().map_err(to_py)?;
    let attributes = Yaml::Hash(dict_to_yaml(attributes)?);
    let extra = dict_to_yaml(extra)?
        .into_iter()
        .filter_map(|(k, v)| k.into_string().map(|k| (k, v)))
        .collect();
    let text = ndl::labeled_trailer(&header, descr.as_ref(), attributes, extra);
    Ok(PyBytes::new(py, &text))
}

/// An NDL YAML document (a dataset's `dataset.yaml`) as a dict, or None when the text
/// is not one (or is not safe to load: the trailer's limits apply).
#[pyfunction]
fn ndl_document<'py>(py: Python<'py>, text: &[u8]) -> PyResult<Option<Bound<'py, PyDict>>> {
    ndl::parse_trailer(text)
        .and_then(|doc| doc.as_hash().cloned())
        .map(|h| hash_to_python(py, &h))
        .transpose()
}

/// `doc`, a dict of the values NDL holds, as an NDL YAML document.
#[pyfunction]
fn ndl_text<'py>(py: Python<'py>, doc: &Bound<'py, PyDict>) -> PyResult<Bound<'py, PyBytes>> {
    let text = ndl::to_text(&Yaml::Hash(dict_to_yaml(doc)?));
    Ok(PyBytes::new(py, text.as_bytes()))
}

/// The names of the dims of an array without labels: `VAR_dim_0`, … for the variable
/// `VAR` of a dataset, `dim_0`, … for an array on its own (`variable` None); the rule
/// every Zarr group rastore writes follows.
#[pyfunction]
#[pyo3(signature = (ndims, variable=None))]
fn unlabeled_dims(ndims: usize, variable: Option<&str>) -> Vec<String> {
    ndl::unlabeled_dims(ndims, variable)
}
