//! `.ra` files and objects (and `.npy` files) read as Zarr in place (feature `zarr`): the metadata and
//! chunk layout `rastore.ZarrStore` serves, and the kerchunk references
//! `rastore.references` returns ([`rastore::convert::refs`]).

use std::path::PathBuf;

use pyo3::prelude::*;
use rastore::convert::refs;
use rastore::convert::ConvertOptions;
use serde_json::json;

use crate::errors::to_py;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(zarr_in_place, m)?)?;
    m.add_function(wrap_pyfunction!(references_json, m)?)?;
    m.add_function(wrap_pyfunction!(file_group, m)?)?;
    m.add_function(wrap_pyfunction!(hdf5_chunks, m)?)?;
    Ok(())
}

/// The options that reach `location` (object-store `settings` where it is `s3://`).
fn options(settings: Vec<(String, String)>) -> ConvertOptions {
    let options = ConvertOptions::new();
    #[cfg(feature = "s3")]
    let options = options.remote(rastore::remote::RemoteOptions::with_settings(settings));
    #[cfg(not(feature = "s3"))]
    let _ = settings;
    options
}

/// The Zarr view of the file or object: `zarr.json` (v3), `.zarray` and `.zattrs`
/// (v2; `.zarray` null where v2 has no such type) and the chunk layout, as JSON. As a
/// dataset's `variable`, the dims it has no labels for are named after it.
#[pyfunction]
#[pyo3(signature = (location, settings, chunks, variable=false))]
fn zarr_in_place(
    py: Python<'_>,
    location: PathBuf,
    settings: Vec<(String, String)>,
    chunks: Option<Vec<u64>>,
    variable: bool,
) -> PyResult<String> {
    py.detach(|| {
        let o = options(settings);
        let name = variable.then(|| refs::array_name(&location));
        let v = refs::zarr_in_place(&location, chunks.as_deref(), &o, name.as_deref())
            .map_err(to_py)?;
        Ok(json!({
            "zarr_json": v.zarr_json,
            "zarray": v.zarray,
            "zattrs": v.zattrs,
            "dims": v.dims,
            "chunk": v.chunk,
            "axis": v.axis,
            "data_offset": v.data_offset,
            "data_bytes": v.data_bytes,
            "chunk_bytes": v.chunk_bytes,
            "chunk_stride": v.chunk_stride,
            "count": v.count,
            "name": refs::array_name(&location),
        })
        .to_string())
    })
}

/// kerchunk v1 references to the file or object, as JSON.
#[pyfunction]
fn references_json(
    py: Python<'_>,
    location: PathBuf,
    settings: Vec<(String, String)>,
    chunks: Option<Vec<u64>>,
    url: Option<String>,
) -> PyResult<String> {
    py.detach(|| {
        let o = options(settings);
        let r =
            refs::references(&location, chunks.as_deref(), url.as_deref(), &o).map_err(to_py)?;
        Ok(r.to_string())
    })
}

/// A local file that is a group of named arrays in Zarr (a NetCDF file): its arrays'
/// names and its attributes (JSON, a Zarr group's); `None` for any other file.
#[pyfunction]
fn file_group(py: Python<'_>, location: PathBuf) -> PyResult<Option<(Vec<String>, String)>> {
    use rastore::convert::Format;
    py.detach(|| {
        if !location.is_file() || Format::of(&location).ok() != Some(Format::NetCdf3) {
            return Ok(None);
        }
        let ds = rastore::formats::netcdf3::engine::dataset(&location).map_err(to_py)?;
        let names = ds.variables.iter().map(|v| v.name.clone()).collect();
        let attrs = serde_json::Value::Object(ds.attributes_json()).to_string();
        Ok(Some((names, attrs)))
    })
}

/// The chunks of a chunked HDF5 dataset (`x.h5/grp/dset`) as JSON: its Zarr v2
/// `zarray` and `zattrs`, and `chunks`, each stored chunk's key and `[offset, length]`
/// in the file (`file`, absolute); `None` for anything else.
#[pyfunction]
fn hdf5_chunks(py: Python<'_>, location: PathBuf) -> PyResult<Option<String>> {
    py.detach(|| {
        let Some(t) = refs::hdf5_chunks(&location).map_err(to_py)? else {
            return Ok(None);
        };
        let file = refs::own_url(&location).map_err(to_py)?;
        let chunks: serde_json::Map<String, serde_json::Value> = t
            .chunks
            .iter()
            .map(|(k, r)| (k.clone(), json!([r.start, r.end - r.start])))
            .collect();
        Ok(Some(
            json!({
                "file": file,
                "zarray": t.zarray,
                "zattrs": t.zattrs,
                "chunks": chunks,
            })
            .to_string(),
        ))
    })
}
