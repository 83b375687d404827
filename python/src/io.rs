//! Reading, writing, creating and converting whole files, and `info`: each releases the
//! GIL while it works.

use std::path::{Path, PathBuf};

use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};
use rastore::convert::{ConvertOptions, Desc, Format, Source};
use rastore::formats::npy::Descr;
use rastore::formats::npy::NpySource;
use rastore::{CreateOptions, DType, Header, WriteOptions};

use crate::errors::{error, to_py};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(read, m)?)?;
    m.add_function(wrap_pyfunction!(write, m)?)?;
    m.add_function(wrap_pyfunction!(fortran_of_c, m)?)?;
    m.add_function(wrap_pyfunction!(format_of_name, m)?)?;
    m.add_function(wrap_pyfunction!(create_file, m)?)?;
    m.add_function(wrap_pyfunction!(place_file, m)?)?;
    m.add_function(wrap_pyfunction!(place_dataset, m)?)?;
    m.add_function(wrap_pyfunction!(dataset_check, m)?)?;
    m.add_function(wrap_pyfunction!(check_output, m)?)?;
    m.add_function(wrap_pyfunction!(info_json, m)?)?;
    m.add_function(wrap_pyfunction!(convert, m)?)?;
    m.add_function(wrap_pyfunction!(type_name, m)?)?;
    m.add_function(wrap_pyfunction!(array_name, m)?)?;
    m.add_function(wrap_pyfunction!(descr_of, m)?)?;
    m.add_function(wrap_pyfunction!(descr_trailer, m)?)?;
    m.add_function(wrap_pyfunction!(write_box, m)?)?;
    Ok(())
}

/// The bytes of a C-contiguous `uint8` array (the Python side makes them so).
pub fn bytes_of<'a>(data: &'a PyReadonlyArray1<'_, u8>) -> PyResult<&'a [u8]> {
    data.as_slice()
        .map_err(|e| error(format!("data must be contiguous bytes: {e}")))
}

/// Every file the Rust reader accepts, and `.npy` files (told by their first bytes),
/// decoded to native order (a BitArray to one byte per Bool), into memory that NumPy
/// allocates: `allocate(eltype, elbyte, dims, trailer, fortran)` returns `(array, its
/// bytes as a flat uint8 view)`, Fortran-ordered unless `fortran` is false (a C-order
/// `.npy`, read as stored), and the data is read into the view with the GIL released.
/// Returns the array.
#[pyfunction]
fn read<'py>(
    py: Python<'py>,
    path: PathBuf,
    allocate: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    if crate::mapped::is_npy(&path) {
        let npy = py.detach(|| NpySource::open(&path)).map_err(to_py)?;
        return read_npy(py, npy, allocate);
    }
    // What the file is, told once: a safetensors tensor, a NIfTI image, a TIFF, a
    // NetCDF-3 variable or an HDF5 dataset (`x.h5/grp/dset`) go through their engine
    // sources, anything else to the RawArray reader.
    let (file, member) = rastore::convert::member_path(&path);
    match (Format::of(&file).ok(), member) {
        (Some(Format::Safetensors), member) => {
            let tensor = py.detach(|| tensor_of(&file, member)).map_err(to_py)?;
            return read_npy(py, tensor, allocate);
        }
        (Some(Format::NetCdf3), member) => {
            let variable = py.detach(|| variable_of(&file, member)).map_err(to_py)?;
            let stored = (variable.desc().clone(), variable.c_order());
            return read_stored(py, stored, allocate, move |buf| {
                variable.read_stored_into(buf)
            });
        }
        (Some(Format::Nifti | Format::Tiff), None) | (Some(Format::Hdf5), _) => {
            return read_source(py, &path, allocate)
        }
        _ => {}
    }
    let reader = py
        .detach(|| rastore::DataReader::open(&path))
        .map_err(to_py)?;
    let (h, trailer) = (reader.header(), PyBytes::new(py, reader.metadata()));
    let (dtype, dims) = (h.dtype(), h.dims().to_vec());
    let args = (dtype.eltype, dtype.elbyte, dims, trailer).into_pyobject(py)?;
    filled(py, &allocate, args, |buf| reader.read_into(buf))
}

/// The array `allocate(*args)` makes, its bytes (a flat uint8 view) filled by `fill`
/// with the GIL released.
fn filled<'py>(
    py: Python<'py>,
    allocate: &Bound<'py, PyAny>,
    args: Bound<'py, PyTuple>,
    fill: impl FnOnce(&mut [u8]) -> rastore::Result<()> + Send,
) -> PyResult<Bound<'py, PyAny>> {
    let (array, bytes): (Bound<'py, PyAny>, Bound<'py, PyArray1<u8>>) =
        allocate.call1(args)?.extract()?;
    let mut bytes = bytes.readwrite();
    let buf = bytes
        .as_slice_mut()
        .map_err(|e| error(format!("the buffer must be contiguous bytes: {e}")))?;
    py.detach(|| fill(buf)).map_err(to_py)?;
    Ok(array)
}

/// The tensor `member` of the safetensors `file` names, or the one tensor of `file`:
/// read as a C-order `.npy`'s data is.
fn tensor_of(file: &Path, member: Option<String>) -> rastore::Result<NpySource> {
    use rastore::formats::safetensors::engine;
    match member {
        Some(name) => engine::open_tensor(file, &name),
        None => engine::open(file),
    }
}

/// The variable `member` of the NetCDF `file`, or its one variable.
fn variable_of(
    file: &Path,
    member: Option<String>,
) -> rastore::Result<rastore::formats::netcdf3::engine::VariableSource> {
    use rastore::formats::netcdf3::engine;
    match member {
        Some(name) => engine::open_variable(file, &name),
        None => engine::open(file),
    }
}

/// `read` of an array stored raw, `desc` in C order where `c_order` says (a `.npy`, a
/// tensor, a NetCDF variable, its records gathered): its data as stored, native byte
/// order, `read` into the array that `allocate` makes of that order.
fn read_stored<'py>(
    py: Python<'py>,
    (desc, c_order): (Desc, bool),
    allocate: Bound<'py, PyAny>,
    read: impl FnOnce(&mut [u8]) -> rastore::Result<()> + Send,
) -> PyResult<Bound<'py, PyAny>> {
    let trailer = PyBytes::new(py, &desc.trailer);
    let args = (
        desc.dtype.eltype,
        desc.dtype.elbyte,
        desc.dims,
        trailer,
        !c_order,
    );
    filled(py, &allocate, args.into_pyobject(py)?, read)
}

/// [`read_stored`] of a `.npy` (or an array stored as one: a safetensors tensor).
fn read_npy<'py>(
    py: Python<'py>,
    npy: NpySource,
    allocate: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let stored = (npy.desc().clone(), npy.c_order());
    read_stored(py, stored, allocate, move |buf| npy.read_stored_into(buf))
}

/// `read` of a file of another format through its engine source (a NIfTI image,
/// `.nii.gz` inflated; a TIFF, decoded): the whole array, column-major, native byte
/// order.
fn read_source<'py>(
    py: Python<'py>,
    path: &Path,
    allocate: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let source = py
        .detach(|| rastore::convert::open(path, &ConvertOptions::new()))
        .map_err(to_py)?;
    let desc = source.desc().clone();
    let trailer = PyBytes::new(py, &desc.trailer);
    let args = (
        desc.dtype.eltype,
        desc.dtype.elbyte,
        desc.dims.clone(),
        trailer,
    );
    let all = rastore::convert::Block::all(&desc.dims);
    filled(py, &allocate, args.into_pyobject(py)?, |buf| {
        source.read_box(&all, buf)
    })
}

/// The format other than RawArray that `path`'s name says (`.npy`, `.png`, `.npz`,
/// `.zarr`), if any: what `write` writes there instead of a `.ra`.
pub fn named_format(path: &Path) -> Option<Format> {
    Format::by_extension(path).filter(|f| *f != Format::Ra)
}

/// `named_format` as Python names it (`"npy"`, ...), for the writers that make only
/// `.ra` files (`create`, Dask's stores, `Appender`) to refuse the others by name.
#[pyfunction]
fn format_of_name(path: PathBuf) -> Option<&'static str> {
    named_format(&path).map(|f| match f {
        Format::Npy => "npy",
        Format::Png => "png",
        Format::Tiff => "tiff",
        Format::Npz => "npz",
        Format::Zarr => "zarr",
        Format::Safetensors => "safetensors",
        Format::Nifti => "nifti",
        Format::NetCdf3 => "nc",
        Format::Hdf5 => "hdf5",
        Format::Ra => "ra",
    })
}

/// Writes the array of `desc`, column-major `bytes`, to `path` in the `format` its
/// name says, as `ra convert` writes it there (`rastore::convert::write_array`):
/// `compress` is a `.zarr`'s zstd and means nothing to the other formats, whose
/// files `durable` syncs (a `.zarr` folder's are not).
pub fn write_by_name(
    py: Python<'_>,
    path: &Path,
    format: Format,
    desc: Desc,
    bytes: &[u8],
    (compress, durable): (bool, bool),
    options: ConvertOptions,
) -> PyResult<()> {
    let ext = format!(
        ".{}",
        path.extension().unwrap_or_default().to_string_lossy()
    );
    if compress && !matches!(format, Format::Zarr | Format::Tiff) {
        return Err(error(format!(
            "{}: compress=True stores a .ra as LZ4, a .zarr with zstd or a .tif with \
             Deflate; a {ext} has no such option (write a .ra, .zarr or .tif name to \
             compress)",
            path.display()
        )));
    }
    if durable && format == Format::Zarr {
        return Err(error(format!(
            "{}: durable=True syncs a file before naming it; the files of a .zarr folder \
             are not synced (write a .ra or .npy to have it durable)",
            path.display()
        )));
    }
    let options = options.compress(compress).durable(durable);
    py.detach(|| rastore::convert::write_array(path, desc, bytes, &options))
        .map(drop)
        .map_err(to_py)
}

/// Writes column-major `data` of `dims` and type `(eltype, elbyte)` to `path`,
/// atomically: a `.ra` as `rastore::write` does, unless the name says another format
/// (`write_by_name`).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn write(
    py: Python<'_>,
    path: PathBuf,
    eltype: u64,
    elbyte: u64,
    dims: Vec<u64>,
    data: PyReadonlyArray1<'_, u8>,
    compress: bool,
    metadata: Vec<u8>,
    durable: bool,
    split_links: bool,
) -> PyResult<()> {
    let bytes = bytes_of(&data)?;
    if let Some(format) = named_format(&path) {
        let desc = Desc {
            dtype: DType { eltype, elbyte },
            dims,
            trailer: metadata,
        };
        let options = ConvertOptions::new()
            .overwrite(true)
            .split_links(split_links);
        return write_by_name(py, &path, format, desc, bytes, (compress, durable), options);
    }
    py.detach(|| {
        let header = Header::new(DType { eltype, elbyte }, &dims).map_err(|e| e.at(&path))?;
        WriteOptions::new()
            .compress(compress)
            .metadata(metadata)
            .durable(durable)
            .split_links(split_links)
            .write_bytes(&path, &header, bytes)
    })
    .map_err(to_py)
}

/// Writes `data`, the column-major bytes of the box at `origin` of extents `shape`,
/// into a file made by `create_file`, through the engine's file sink (Dask's stores).
#[pyfunction]
fn write_box(
    py: Python<'_>,
    path: PathBuf,
    origin: Vec<u64>,
    shape: Vec<u64>,
    data: PyReadonlyArray1<'_, u8>,
) -> PyResult<()> {
    let bytes = bytes_of(&data)?;
    let block = rastore::convert::Block { origin, shape };
    py.detach(|| rastore::convert::write_box(&path, &block, bytes))
        .map_err(to_py)
}

/// Creates a zeroed file at full size, space reserved, for a writeable mapping.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn create_file(
    py: Python<'_>,
    path: PathBuf,
    eltype: u64,
    elbyte: u64,
    dims: Vec<u64>,
    overwrite: bool,
    metadata: Vec<u8>,
    split_links: bool,
) -> PyResult<()> {
    py.detach(|| {
        CreateOptions::new()
            .overwrite(overwrite)
            .split_links(split_links)
            .metadata(metadata)
            .create_file(&path, DType { eltype, elbyte }, &dims)
    })
    .map(drop)
    .map_err(to_py)
}

/// Names `complete` (a file `create_file` made under a hidden name, filled in place)
/// `path`, replacing what is there as every writer does; `complete` is removed on error.
#[pyfunction]
fn place_file(
    py: Python<'_>,
    complete: PathBuf,
    path: PathBuf,
    durable: bool,
    split_links: bool,
) -> PyResult<()> {
    py.detach(|| {
        CreateOptions::new()
            .overwrite(true)
            .split_links(split_links)
            .durable(durable)
            .place(&complete, &path)
    })
    .map_err(to_py)
}

/// Names the complete dataset folder `tmp` `folder` (`rastore::dataset::place`):
/// swapped with an old one in one step where the file system can.
#[pyfunction]
fn place_dataset(py: Python<'_>, tmp: PathBuf, folder: PathBuf, durable: bool) -> PyResult<()> {
    py.detach(|| rastore::dataset::place(&tmp, &folder, durable))
        .map_err(to_py)
}

/// Refuses a local folder that is no dataset (`rastore::dataset::check`): no `.ra`
/// files and no `dataset.yaml`, in it or below.
#[pyfunction]
fn dataset_check(py: Python<'_>, folder: PathBuf) -> PyResult<()> {
    py.detach(|| rastore::dataset::check(&folder))
        .map_err(to_py)
}

/// Refuses an output whose folder does not exist, as every writer does, before a job
/// that writes it later is laid out.
#[pyfunction]
fn check_output(path: PathBuf) -> PyResult<()> {
    ConvertOptions::new()
        .overwrite(true)
        .check_output(&path)
        .map_err(to_py)
}

/// The C-order bytes `data` of an array of `shape` and `itemsize`-byte elements into
/// `out`, column-major: what `rastore.write` hands the writer for a C-order array. The
/// engine's cache-blocked transpose on every core, the GIL released; NumPy's own
/// (`np.asarray(a, order="F")`) ran at a tenth of its speed on a 1 GiB image stack.
#[pyfunction]
fn fortran_of_c(
    py: Python<'_>,
    data: numpy::PyReadonlyArray1<'_, u8>,
    shape: Vec<usize>,
    itemsize: usize,
    mut out: numpy::PyReadwriteArray1<'_, u8>,
) -> PyResult<()> {
    let src = bytes_of(&data)?;
    let dst = crate::reader::bytes_mut(&mut out)?;
    if src.len() != dst.len() {
        return Err(crate::errors::error(format!(
            "{} bytes in, a buffer of {} out",
            src.len(),
            dst.len()
        )));
    }
    py.detach(|| rastore::transpose_c_to_f(src, &shape, itemsize, dst, &mut |_, _| ()))
        .map_err(to_py)
}

/// `ra info --json` of a `.ra` or `.npy` file, told apart by its first bytes (a bad
/// `.npy`, a truncated one say, is refused as a `.npy`), of a NIfTI image, of a
/// safetensors tensor, of a NetCDF-3 variable, or of an HDF5 dataset.
#[pyfunction]
fn info_json(py: Python<'_>, path: PathBuf) -> PyResult<String> {
    py.detach(|| {
        if crate::mapped::is_npy(&path) {
            rastore::info::npy_header(&path).and_then(|nh| rastore::info::npy_json(&path, &nh))
        } else if Format::of(&path).ok() == Some(Format::Nifti) {
            rastore::info::nifti_json(&path)
        } else if Format::of(&rastore::convert::member_path(&path).0).ok() == Some(Format::NetCdf3)
        {
            // A variable of a NetCDF file (`x.nc/NAME`), or its only one.
            use rastore::formats::netcdf3::engine;
            match engine::variables_named(&path)? {
                (nc, named) if named.len() == 1 => {
                    Ok(engine::info_json(&named[0].0, &nc, &named[0].1))
                }
                _ => engine::open(&path).map(|_| String::new()),
            }
        } else if let Some(json) = hdf5_info(&path) {
            json
        } else if rastore::convert::placeable(&path) {
            // One tensor of a safetensors file (`m.safetensors/NAME`), or its only one.
            use rastore::formats::safetensors::engine;
            match engine::tensors_named(&path)?.as_slice() {
                [(p, t)] => Ok(engine::info_json(p, t)),
                _ => engine::open(&path).map(|_| String::new()),
            }
        } else {
            rastore::info::info(&path).map(|i| i.to_json())
        }
    })
    .map_err(to_py)
}

/// `ra info --json` of an HDF5 dataset (`x.h5/grp/dset`); `None` for anything else.
#[cfg(feature = "hdf5")]
fn hdf5_info(path: &Path) -> Option<rastore::Result<String>> {
    let (file, object) = rastore::convert::hdf5_member(path)?;
    Some(
        rastore::formats::hdf5::info::lines(&file, &object).and_then(|lines| {
            match lines.as_slice() {
                [one] if one.json["kind"] == "dataset" => {
                    let mut j = one.json.clone();
                    j["path"] = serde_json::Value::String(one.path.to_string_lossy().into_owned());
                    Ok(j.to_string())
                }
                _ => rastore::convert::open(path, &ConvertOptions::new()).map(|_| String::new()),
            }
        }),
    )
}

#[cfg(not(feature = "hdf5"))]
fn hdf5_info(_path: &Path) -> Option<rastore::Result<String>> {
    None
}

/// `ra convert`: between `.ra`, `.npy`, `.png` and Zarr by extension, either side
/// possibly `s3://` (with `settings` over the AWS environment); `chunks` and `codec`
/// (`"zstd"`, `"gzip:6"`, ...) shape a Zarr output.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn convert(
    py: Python<'_>,
    input: PathBuf,
    output: PathBuf,
    compress: bool,
    overwrite: bool,
    split_links: bool,
    chunks: Option<Vec<u64>>,
    codec: Option<String>,
    settings: Vec<(String, String)>,
    nan_gray: Option<u8>,
    group: bool,
) -> PyResult<()> {
    let options = ConvertOptions::new()
        .compress(compress)
        .nan_gray(nan_gray)
        .overwrite(overwrite)
        .split_links(split_links);
    #[cfg(feature = "zarr")]
    let options = {
        let codec: rastore::formats::zarr::Codec = match codec {
            Some(c) => c.parse().map_err(error)?,
            None => Default::default(),
        };
        options.chunks(chunks).zarr_codec(codec).zarr_array(!group)
    };
    #[cfg(not(feature = "zarr"))]
    if chunks.is_some() || codec.is_some() || !group {
        return Err(error(
            "chunks, codec and group shape Zarr outputs: this build has no Zarr",
        ));
    }
    #[cfg(feature = "s3")]
    let options = options.remote(rastore::remote::RemoteOptions::with_settings(settings));
    #[cfg(not(feature = "s3"))]
    let _ = settings;
    py.detach(|| rastore::convert::convert(&input, &output, &options, &mut |_, _| ()))
        .map(drop)
        .map_err(to_py)
}

/// The name of the array a file or object holds, when it names none: its file name
/// without its format's extension (`rastore::convert::array_name`), as Zarr groups
/// and `ra convert` name it.
#[pyfunction]
fn array_name(location: PathBuf) -> String {
    rastore::convert::array_name(&location)
}

/// The RawArray type's name (`int128`, `user<12>`), for messages.
#[pyfunction]
fn type_name(eltype: u64, elbyte: u64) -> String {
    DType { eltype, elbyte }.name()
}

/// The NumPy descr (as Python source) that an NDL trailer records for elements of
/// `elbyte` bytes, as `ra convert` writes it.
#[pyfunction]
fn descr_of(trailer: &[u8], elbyte: u64) -> Option<String> {
    rastore::ndl::numpy_descr(trailer, elbyte).map(|d| d.to_python())
}

/// The NDL trailer that records a NumPy descr (given as Python source) for data of
/// this type and dims, as `ra convert` writes it.
#[pyfunction]
fn descr_trailer<'py>(
    py: Python<'py>,
    eltype: u64,
    elbyte: u64,
    dims: Vec<u64>,
    descr: &str,
) -> PyResult<Bound<'py, PyBytes>> {
    let header = Header::new(DType { eltype, elbyte }, &dims).map_err(to_py)?;
    let descr = Descr::parse(descr).map_err(to_py)?;
    Ok(PyBytes::new(
        py,
        &rastore::ndl::descr_trailer(&header, &descr),
    ))
}
