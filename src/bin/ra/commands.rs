//! The subcommands other than `demo`.

use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use rastore::convert::ConvertOptions;
use rastore::values::Tolerance;
use rastore::{DType, WriteOptions};

use crate::bar::progress_bar;
use crate::dims::Dims;
use crate::folder::no_folder;
use crate::input::{is_npy, Input};
use crate::{elements, remote, slice, stats, term, Fail, Outcome};

#[derive(clap::Args)]
pub struct CreateArgs {
    /// The file to create.
    file: PathBuf,
    /// Element type: a name (float32, int16, complex64, user<12>) or a short code (f32, i16, c64).
    #[arg(long)]
    dtype: DType,
    /// Dims, first fastest, comma-separated: 4096,4096,16 (`--shape ''` for a 0-d scalar).
    #[arg(long, allow_hyphen_values = true)]
    shape: Dims,
    /// Replace an existing file.
    #[arg(long)]
    overwrite: bool,
    /// With --overwrite, replace a file that has other hard links (they keep the old one).
    #[arg(long)]
    split_links: bool,
    /// A file whose bytes become the metadata trailer.
    #[arg(long)]
    metadata: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct InfoArgs {
    /// Files to inspect; a folder (a dataset) stands for its variables, sub-groups' too.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// One JSON object per line, keys: path, dtype, eltype, elbyte, dims, count (elements), bytes (data as stored), flags
    /// {big_endian, compressed, bits}, header_bytes, data_offset, metadata_bytes.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct FileArg {
    /// The file, or a folder (a dataset: its attributes and every variable).
    file: PathBuf,
}

#[derive(clap::Args)]
pub struct FilesArg {
    /// The files; a folder (a dataset) stands for its variables, sub-groups' too.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

#[derive(clap::Args)]
pub struct CatArgs {
    /// The file: .ra or .npy.
    file: PathBuf,
    /// NumPy-style selection in dim order, e.g. 0:10,:,3 or -1,... (negative indices count from the end).
    #[arg(long, allow_hyphen_values = true)]
    slice: Option<String>,
    /// Print at most this many elements (with --json: refuse more).
    #[arg(long, default_value_t = 10_000)]
    limit: u64,
    /// One JSON array, nested as NumPy's tolist() (first index outermost).
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct StatsArgs {
    /// The file: .ra or .npy.
    file: PathBuf,
    /// Only these elements, as for cat.
    #[arg(long, allow_hyphen_values = true)]
    slice: Option<String>,
    /// One JSON object with keys count, min, max, mean, std, nan, inf.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct MetaArgs {
    /// The file.
    file: PathBuf,
    /// Replace the trailer with the bytes of this file (- for standard input); the data is untouched.
    #[arg(long, value_name = "SRC", conflicts_with_all = ["set_attr", "del_attr"])]
    set: Option<PathBuf>,
    /// Set one NDL attribute, keeping the rest of the trailer (VALUE is a YAML scalar: 3, 1.5, true, text). Repeatable.
    #[arg(long, value_name = "KEY=VALUE")]
    set_attr: Vec<String>,
    /// Remove one NDL attribute, keeping the rest of the trailer. Repeatable.
    #[arg(long, value_name = "KEY")]
    del_attr: Vec<String>,
    /// With --set, drop a compound description that the element type depends on.
    #[arg(long)]
    force: bool,
    /// Replace a file that has other hard links (they keep the old one).
    #[arg(long)]
    split_links: bool,
}

/// Compare as NumPy's `allclose(a, b, rtol, atol, equal_nan)`: elements are equal when
/// |a - b| <= atol + rtol * |b|; 0.0 equals -0.0; an infinity equals only itself; NaN
/// differs from everything, NaN included, unless --equal-nan. Integers are compared
/// exactly, never through floating point. With no tolerance, only equal values are equal.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// First file: .ra or .npy (or an s3:// object).
    a: PathBuf,
    /// Second file: .ra or .npy (or an s3:// object).
    b: PathBuf,
    /// Relative tolerance, times |b|.
    #[arg(long, default_value_t = 0.0)]
    rtol: f64,
    /// Absolute tolerance.
    #[arg(long, default_value_t = 0.0)]
    atol: f64,
    /// Count NaN equal to NaN (NumPy's equal_nan).
    #[arg(long)]
    equal_nan: bool,
}

/// Reshape in column-major order, as Julia and MATLAB do: the bytes do not move and
/// the first index still varies fastest. In NumPy terms this is
/// `a.reshape(dims, order='F')` of the array `ra convert` gives, not the default
/// `order='C'`.
#[derive(clap::Args)]
pub struct ReshapeArgs {
    /// The file.
    file: PathBuf,
    /// New dims, comma-separated, with the same element count; one may be -1 (inferred).
    #[arg(allow_hyphen_values = true)]
    dims: String,
    /// Replace a file that has other hard links (they keep the old one).
    #[arg(long)]
    split_links: bool,
}

#[derive(clap::Args)]
pub struct ConvertArgs {
    /// Input: .ra, .npy, .png, .npz (an archive of .npy files), a .zarr array or group (v3 or v2; a folder or s3://bucket/x.zarr), or a dataset folder of .ra files.
    input: PathBuf,
    /// Output: .ra, .npy or .png; .zarr, a Zarr v3 group as xarray opens it (of the one array, named after the input; of a dataset's variables or an .npz's members); a folder, for a dataset or Zarr group's arrays (one NAME.ra each) or an .npz's members; .npz, of a dataset's arrays.
    output: PathBuf,
    /// Write one array into .zarr as a bare Zarr array, not as the one member of a group.
    #[cfg(feature = "zarr")]
    #[arg(long)]
    array: bool,
    /// Store the output .ra as one LZ4 block (held in memory while compressing); a .zarr output with zstd.
    #[arg(long)]
    compress: bool,
    /// The chunk shape of a .zarr output, first dim first (default: whole frames of about 16 MiB).
    #[cfg(feature = "zarr")]
    #[arg(long)]
    chunks: Option<Dims>,
    /// The codec of a .zarr output: zstd, gzip, blosc or none, with a level after a colon (zstd:5).
    #[cfg(feature = "zarr")]
    #[arg(long)]
    codec: Option<rastore::formats::zarr::Codec>,
    /// A PNG output of non-8/16-bit data is scaled to gray (-inf black, +inf white):
    /// the gray level (0 to 255) of NaN elements, which are refused without it.
    #[arg(long, value_name = "GRAY")]
    nan_gray: Option<u8>,
    /// Replace an existing output.
    #[arg(long)]
    overwrite: bool,
    /// With --overwrite, replace an output that has other hard links (they keep the old one).
    #[arg(long)]
    split_links: bool,
}

fn read_input(src: &Path) -> Result<Vec<u8>, Fail> {
    let mut buf = Vec::new();
    if src == Path::new("-") {
        io::stdin().read_to_end(&mut buf)?;
    } else {
        File::open(src)
            .and_then(|mut f| f.read_to_end(&mut buf))
            .map_err(|e| Fail::Data(format!("{}: {e}", term::path(src))))?;
    }
    Ok(buf)
}

pub fn create(a: &CreateArgs) -> Outcome {
    let metadata = match &a.metadata {
        Some(p) => read_input(p)?,
        None => Vec::new(),
    };
    let h = rastore::CreateOptions::new()
        .overwrite(a.overwrite)
        .split_links(a.split_links)
        .metadata(metadata)
        .create_file(&a.file, a.dtype, &a.shape.0)?;
    writeln!(
        io::stdout(),
        "{}: {} {:?}, {} data bytes reserved",
        term::path(&a.file),
        h.dtype(),
        h.dims(),
        h.size()
    )?;
    Ok(())
}

/// The type as shown to people: BitArrays are bools.
fn info_line(i: &rastore::info::FileInfo) -> String {
    let h = &i.header;
    let mut notes = Vec::new();
    if h.data_big_endian() {
        notes.push("big-endian");
    }
    notes.extend(h.encoding().filter_name());
    let notes = if notes.is_empty() {
        String::new()
    } else {
        format!(" ({})", notes.join(", "))
    };
    let append = i.append.as_ref().map_or_else(String::new, |s| {
        let state = if s.appender_running {
            "an appender is running"
        } else {
            "needs `ra recover`"
        };
        format!(
            "; appending: {} frames committed, {} bytes uncommitted, {state}",
            s.frames, s.uncommitted_bytes
        )
    });
    format!(
        "{}: {} {:?} bytes {} flags {:#x}{notes} trailer {}{append}",
        term::path(&i.path),
        i.type_name(),
        h.dims(),
        h.size(),
        h.flags().0,
        i.trailer_bytes
    )
}

/// Runs `each` on every file, a folder standing for its dataset's variables (and its
/// sub-groups'), a file of named arrays for them (a safetensors file's tensors, a
/// NetCDF-3 file's variables, each `FILE/NAME`) and an HDF5 file (or a group in it)
/// for its datasets; failures are reported on stderr and the others go on; fails if
/// any did.
fn per_file(files: &[PathBuf], mut each: impl FnMut(&Path) -> Outcome) -> Outcome {
    let mut bad = false;
    let mut all = Vec::new();
    for p in files {
        let prefix = remote::is_remote(p) && p.to_string_lossy().ends_with('/');
        if let Some(found) = rastore::convert::members(p) {
            match found {
                Ok(names) => all.extend(names.iter().map(|n| p.join(n))),
                Err(_) => all.push(p.clone()),
            }
            continue;
        }
        if let Some((file, object)) = crate::hdf5::target(p) {
            // An HDF5 file or group stands for its datasets, each `x.h5/grp/dset`.
            match crate::hdf5::datasets(&file, &object) {
                Ok(found) => all.extend(found),
                Err(e) => {
                    bad = true;
                    eprintln!("{}", term::line(&crate::message(&e)));
                }
            }
            continue;
        }
        if !p.is_dir() && !prefix {
            all.push(p.clone());
            continue;
        }
        let found = match prefix {
            true => remote::variables(p),
            false => rastore::dataset::require_variables(p)
                .map(|v| v.into_iter().map(|v| v.path).collect()),
        };
        match found {
            Ok(vars) => all.extend(vars),
            Err(e) => {
                bad = true;
                eprintln!("{}", term::line(&crate::message(&e)));
            }
        }
    }
    for p in &all {
        match each(p) {
            Ok(()) => {}
            Err(Fail::Pipe) => return Err(Fail::Pipe),
            Err(Fail::Data(m) | Fail::Usage(m)) => {
                bad = true;
                eprintln!("{}", term::line(&m));
            }
            Err(Fail::Reported) => bad = true,
        }
    }
    if bad {
        Err(Fail::Reported)
    } else {
        Ok(())
    }
}

/// Whether `path` is a TIFF file, by its first bytes.
fn is_tiff(path: &Path) -> bool {
    use rastore::convert::Format;
    !remote::is_remote(path) && !path.is_dir() && Format::of(path).ok() == Some(Format::Tiff)
}

/// Whether `path` is a NIfTI image (by its contents, or by name: a `.nii.gz`, the
/// `.img` of a pair).
fn is_nifti(path: &Path) -> bool {
    use rastore::convert::Format;
    !remote::is_remote(path) && !path.is_dir() && Format::of(path).ok() == Some(Format::Nifti)
}

/// `ra info` of a NIfTI image, from its header alone: its type and shape (nibabel's),
/// as a line or JSON.
fn nifti_info_line(path: &Path, json: bool) -> Result<String, Fail> {
    if json {
        return Ok(rastore::info::nifti_json(path)?);
    }
    let (desc, version) = rastore::formats::nifti::engine::describe(path)?;
    Ok(format!(
        "{}: {} {:?} bytes {} nifti-{version}",
        term::path(path),
        desc.dtype,
        desc.dims,
        desc.nbytes()
    ))
}

/// The header of a `.npy`, read alone (not its data).
fn npy_header(path: &Path) -> Result<rastore::formats::npy::NpyHeader, Fail> {
    Ok(rastore::info::npy_header(path)?)
}

/// `ra info` of a `.npy`: its type, shape, order and version.
fn npy_info_line(path: &Path, json: bool) -> Result<String, Fail> {
    let nh = npy_header(path)?;
    if json {
        return Ok(rastore::info::npy_json(path, &nh)?);
    }
    let dtype = nh.descr.dtype().map_err(|e| e.at(path))?;
    let (_, bytes) = nh.data_len().map_err(|e| e.at(path))?;
    let order = if nh.fortran_order { "F" } else { "C" };
    Ok(format!(
        "{}: {} {:?} bytes {bytes} npy {}.{} {order}-order descr {}",
        term::path(path),
        dtype,
        nh.shape,
        nh.version.0,
        nh.version.1,
        term::line(&nh.descr.to_python())
    ))
}

/// Whether `path` is a NetCDF-3 file, or names a variable in one (`x.nc/NAME`).
fn is_netcdf3(path: &Path) -> bool {
    use rastore::convert::Format;
    let (file, _) = rastore::convert::member_path(path);
    !remote::is_remote(&file) && file.is_file() && Format::of(&file).ok() == Some(Format::NetCdf3)
}

/// `ra info` of a NetCDF file's variables, or of the one `x.nc/NAME` names: type,
/// shape, dims (the record one said), bytes, where it lies.
fn netcdf3_info_lines(path: &Path, json: bool) -> Result<Vec<String>, Fail> {
    use rastore::formats::netcdf3::engine;
    let (nc, named) = engine::variables_named(path)?;
    Ok(named
        .iter()
        .map(|(p, v)| match json {
            true => engine::info_json(p, &nc, v),
            false => term::line(&engine::info_line(p, &nc, v)),
        })
        .collect())
}

/// `ra info` of a safetensors file's tensors, or of the one `m.safetensors/NAME`
/// names: type, shape, bytes, where it lies.
fn engine_info_lines(path: &Path, json: bool) -> Result<Vec<String>, Fail> {
    use rastore::formats::safetensors::engine;
    if is_netcdf3(path) {
        return netcdf3_info_lines(path, json);
    }
    let lines = engine::tensors_named(path)?
        .into_iter()
        .map(|(p, t)| match json {
            true => engine::info_json(&p, &t),
            false => format!(
                "{}: {} {:?} bytes {} safetensors C-order offset {}",
                term::path(&p),
                t.dtype,
                t.shape,
                t.nbytes,
                t.offset
            ),
        })
        .collect();
    Ok(lines)
}

pub fn info(a: &InfoArgs) -> Outcome {
    let mut out = io::stdout().lock();
    // A dataset's attributes, as `verify` lists them.
    let bad = attribute_files(&a.files, |f, attributes| {
        writeln!(out, "{}", attributes_line(f, attributes, a.json))
    })?;
    // A NetCDF file's version, records and attributes, before its variables.
    let mut bad = bad;
    for f in a.files.iter().filter(|f| f.is_file() && is_netcdf3(f)) {
        match rastore::formats::netcdf3::engine::file(f) {
            Ok((_, nc)) => {
                let line = match a.json {
                    true => rastore::formats::netcdf3::engine::file_json(f, &nc),
                    false => term::line(&rastore::formats::netcdf3::engine::file_line(f, &nc)),
                };
                writeln!(out, "{line}")?;
            }
            Err(e) => {
                bad = true;
                eprintln!("{}", term::line(&crate::message(&e)));
            }
        }
    }
    // An HDF5 file or object: its tree, as `h5ls -r` lists it.
    let mut rest = Vec::new();
    for p in &a.files {
        match crate::hdf5::target(p) {
            Some((file, object)) => match crate::hdf5::info_lines(&file, &object, a.json) {
                Ok(lines) => {
                    for line in lines {
                        writeln!(out, "{line}")?;
                    }
                }
                Err(e) => {
                    bad = true;
                    eprintln!("{}", term::line(&crate::message(&e)));
                }
            },
            None => rest.push(p.clone()),
        }
    }
    let files = per_file(&rest, |p| {
        if is_npy(p) {
            writeln!(out, "{}", npy_info_line(p, a.json)?)?;
            return Ok(());
        }
        if is_tiff(p) {
            let t = rastore::formats::tiff::parse_file(p)?;
            let line = if a.json {
                t.json(p)
            } else {
                format!(
                    "{}: {} {:?} bytes {} tiff {}",
                    term::path(p),
                    t.dtype(),
                    t.shape,
                    t.nbytes(),
                    t.storage()
                )
            };
            writeln!(out, "{line}")?;
            return Ok(());
        }
        if is_nifti(p) {
            writeln!(out, "{}", nifti_info_line(p, a.json)?)?;
            return Ok(());
        }
        if rastore::convert::placeable(p) {
            for line in engine_info_lines(p, a.json)? {
                writeln!(out, "{line}")?;
            }
            return Ok(());
        }
        let i = if remote::is_remote(p) {
            remote::info(p)?
        } else {
            rastore::info::info(p)?
        };
        let line = if a.json { i.to_json() } else { info_line(&i) };
        writeln!(out, "{line}")?;
        Ok(())
    });
    match files {
        Ok(()) if bad => Err(Fail::Reported),
        r => r,
    }
}

pub fn describe(a: &FileArg) -> Outcome {
    let name = a.file.to_string_lossy();
    let doc = if remote::is_remote(&a.file) && name.ends_with('/') {
        remote::describe_dataset(&a.file)?
    } else if remote::is_remote(&a.file) {
        remote::describe(&a.file)?
    } else if a.file.is_dir() {
        rastore::dataset::describe(&a.file)?
    } else if is_npy(&a.file) {
        rastore::formats::npy::describe_npy(&name, &npy_header(&a.file)?)?
    } else if is_tiff(&a.file) {
        rastore::formats::tiff::parse_file(&a.file)?
            .describe(&name)
            .map_err(|e| e.at(&a.file))?
    } else if is_nifti(&a.file) {
        let i = Input::open(&a.file)?;
        let h = rastore::Header::new(i.dtype, &i.dims).map_err(|e| e.at(&a.file))?;
        rastore::ndl::describe(&name, &h, i.trailer().unwrap_or_default())
    } else if is_netcdf3(&a.file) {
        rastore::formats::netcdf3::engine::describe(&a.file)?
    } else if crate::hdf5::target(&a.file).is_some() {
        // One dataset, described as the engine reads it.
        let i = Input::open(&a.file)?;
        let h = rastore::Header::new(i.dtype, &i.dims).map_err(|e| e.at(&a.file))?;
        rastore::ndl::describe(&name, &h, i.trailer().unwrap_or_default())
    } else if rastore::convert::placeable(&a.file) {
        rastore::formats::safetensors::engine::describe(&a.file)?
    } else {
        let (h, trailer) = rastore::read_header_and_metadata(&a.file)?;
        rastore::ndl::describe(&name, &h, &trailer)
    };
    io::stdout().write_all(doc.as_bytes())?;
    Ok(())
}

pub fn cat(a: &CatArgs) -> Outcome {
    let (input, sels) = opened(&a.file, a.slice.as_deref(), "cat")?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    if a.json {
        let n = slice::walk(&sels, &input.dims, 0, |_, _| ());
        if n > a.limit {
            return Err(Fail::Usage(format!(
                "the selection has {n} elements, more than --limit {}",
                a.limit
            )));
        }
        elements::cat_json(&input, &sels, &mut out)?;
    } else {
        elements::cat(&input, &sels, a.limit, &mut out)?;
    }
    out.flush()?;
    Ok(())
}

/// What `cat`, `stats` and `diff` take for each input.
const ONE_ARRAY: &str = "one array, a .ra or .npy file";

/// What the commands that rewrite a `.ra` file take.
const ONE_RA: &str = "one .ra file";

/// A file or object as an input, with a selection parsed against its dims (of an
/// object, only the range of the last axis the selection touches is fetched).
fn opened(p: &Path, spec: Option<&str>, cmd: &str) -> Result<(Input, Vec<slice::Sel>), Fail> {
    if remote::is_remote(p) {
        return remote::input(p, spec);
    }
    no_folder(p, cmd, ONE_ARRAY)?;
    let input = Input::open(p)?;
    let sels = slice::parse(spec.unwrap_or(""), &input.dims).map_err(Fail::Usage)?;
    Ok((input, sels))
}

pub fn stats(a: &StatsArgs) -> Outcome {
    let (input, sels) = opened(&a.file, a.slice.as_deref(), "stats")?;
    let result = match &a.slice {
        Some(_) => stats::selected(&input, &sels),
        None => {
            let total = input.bytes().len() as u64;
            let bar = progress_bar(total);
            let r = stats::whole(&input, &mut |done| {
                if let Some(b) = &bar {
                    b.set_position(done);
                }
            })?;
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            r
        }
    };
    let st = result.ok_or_else(|| {
        Fail::Data(format!(
            "{}: {} elements are not numbers",
            term::path(&a.file),
            input.dtype
        ))
    })?;
    let mut out = io::stdout().lock();
    let Some((min, max, mean, std)) = st.summary() else {
        // No finite values: min, max, mean and std are undefined.
        if a.json {
            writeln!(
                out,
                "{{\"count\": {}, \"min\": null, \"max\": null, \"mean\": null, \"std\": null, \"nan\": {}, \"inf\": {}}}",
                st.count, st.nan, st.inf
            )?;
        } else {
            writeln!(
                out,
                "count {} nan {} inf {} (no finite values: no min, max, mean or std)",
                st.count, st.nan, st.inf
            )?;
        }
        return Ok(());
    };
    let number = |v: f64| {
        if a.json {
            rastore::json::float(v)
        } else {
            format!("{v:?}")
        }
    };
    let (min, max) = match st.exact {
        Some(e) => e.text(),
        None => (number(min), number(max)),
    };
    let (mean, std) = (number(mean), number(std));
    if a.json {
        writeln!(
            out,
            "{{\"count\": {}, \"min\": {min}, \"max\": {max}, \"mean\": {mean}, \"std\": {std}, \"nan\": {}, \"inf\": {}}}",
            st.count, st.nan, st.inf
        )?;
    } else {
        writeln!(
            out,
            "count {} min {min} max {max} mean {mean} std {std} nan {} inf {}",
            st.count, st.nan, st.inf
        )?;
    }
    Ok(())
}

/// Runs `each` on every `dataset.yaml` of the folders (datasets) among `files` and of
/// their sub-groups, with its attributes (a mapping), as `info` and `verify` show them
/// beside the variables; one that is no NDL document of attributes is reported on
/// stderr. Returns whether one was.
fn attribute_files(
    files: &[PathBuf],
    mut each: impl FnMut(&Path, &yaml_rust2::Yaml) -> io::Result<()>,
) -> Result<bool, Fail> {
    let mut bad = false;
    for folder in files.iter().filter(|p| p.is_dir()) {
        match rastore::dataset::attribute_files(folder) {
            Ok(found) => {
                for (f, attributes) in found {
                    each(&f, &attributes)?;
                }
            }
            Err(e) => {
                bad = true;
                eprintln!("{}", term::line(&crate::message(&e)));
            }
        }
    }
    Ok(bad)
}

/// `1 attribute`, `3 attributes`: how many a `dataset.yaml` holds.
fn attribute_count(attributes: &yaml_rust2::Yaml) -> String {
    match attributes.as_hash().map_or(0, |h| h.len()) {
        1 => "1 attribute".into(),
        n => format!("{n} attributes"),
    }
}

/// `ra info` of a `dataset.yaml`: how many attributes, and the title if it has one.
fn attributes_line(path: &Path, attributes: &yaml_rust2::Yaml, json: bool) -> String {
    let n = attributes.as_hash().map_or(0, |h| h.len());
    let title = attributes["title"].as_str();
    if json {
        let title = title.map_or_else(String::new, |t| {
            format!(", \"title\": {}", rastore::json::string(t))
        });
        return format!(
            "{{\"path\": {}, \"attributes\": {n}{title}}}",
            rastore::json::string(&path.to_string_lossy())
        );
    }
    let title = title.map_or_else(String::new, |t| format!(" (title: {})", term::line(t)));
    format!(
        "{}: {}{title}",
        term::path(path),
        attribute_count(attributes)
    )
}

pub fn verify(a: &FilesArg) -> Outcome {
    let mut out = io::stdout().lock();
    // A dataset's attributes: each dataset.yaml an NDL document of them.
    let bad = attribute_files(&a.files, |f, attributes| {
        writeln!(
            out,
            "{}: ok ({})",
            term::path(f),
            attribute_count(attributes)
        )
    })?;
    let files = per_file(&a.files, |p| {
        let (dtype, dims, bytes) = if remote::is_remote(p) {
            let raw = remote::decoded(p)?;
            (
                raw.header.dtype(),
                raw.header.dims().to_vec(),
                raw.data.len(),
            )
        } else {
            // Header parsed, type known, data all there (compressed data decoded, and
            // Bools checked, by the open); plain data read through in slabs: every byte
            // readable, Bools 0 or 1.
            let i = Input::open(p)?;
            let bools = i.dtype == DType::BOOL;
            let w = i.dtype.elbyte.max(1);
            let bar = progress_bar(i.bytes().len() as u64);
            let read = i.scan(|offset, slab| {
                if bools {
                    rastore::codec::check_bools(slab, offset / w).map_err(|e| e.at(p))?;
                }
                if let Some(b) = &bar {
                    b.set_position(offset + slab.len() as u64);
                }
                Ok(())
            });
            if let Some(b) = bar {
                b.finish_and_clear();
            }
            read?;
            (i.dtype, i.dims.clone(), i.bytes().len())
        };
        writeln!(
            out,
            "{}: ok ({dtype} {dims:?}, {bytes} data bytes decoded)",
            term::path(p),
        )?;
        Ok(())
    });
    match files {
        Ok(()) if bad => Err(Fail::Reported),
        r => r,
    }
}

pub fn meta(a: &MetaArgs) -> Outcome {
    no_folder(&a.file, "meta", ONE_RA)?;
    let options = WriteOptions::new().split_links(a.split_links);
    if let Some(src) = &a.set {
        let bytes = read_input(src)?;
        let (h, old) = rastore::read_header_and_metadata(&a.file)?;
        let elbyte = h.dtype().elbyte;
        let needed = rastore::ndl::numpy_descr(&old, elbyte);
        if needed.is_some() && rastore::ndl::numpy_descr(&bytes, elbyte).is_none() && !a.force {
            return Err(Fail::Data(format!(
                "{}: the trailer describes the fields of its {} elements, and the new one \
                 does not: they would become opaque bytes (pass --force to drop it, or use \
                 --set-attr to edit attributes)",
                term::path(&a.file),
                h.dtype()
            )));
        }
        options.replace_metadata(&a.file, &bytes)?;
        return Ok(());
    }
    if !a.set_attr.is_empty() || !a.del_attr.is_empty() {
        let set = a
            .set_attr
            .iter()
            .map(|kv| match kv.split_once('=') {
                Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
                _ => Err(Fail::Usage(format!(
                    "--set-attr {kv:?}: expected KEY=VALUE"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let (h, old) = rastore::read_header_and_metadata(&a.file)?;
        let new = rastore::ndl::edit_attributes(&h, &old, &set, &a.del_attr)
            .map_err(|e| e.at(&a.file))?;
        options.replace_metadata(&a.file, &new)?;
        return Ok(());
    }
    if is_npy(&a.file) {
        eprintln!(
            "ra: {}: a .npy file has no metadata trailer",
            term::path(&a.file)
        );
        return Ok(());
    }
    let trailer = rastore::read_metadata(&a.file)?;
    let mut out = io::stdout();
    if out.is_terminal() {
        out.write_all(term::text(&trailer).as_bytes())?;
    } else {
        out.write_all(&trailer)?;
    }
    Ok(())
}

pub fn diff(a: &DiffArgs) -> Outcome {
    let tol = Tolerance {
        rtol: a.rtol,
        atol: a.atol,
        equal_nan: a.equal_nan,
    };
    let valid = |t: f64| t.is_finite() && t >= 0.0;
    if !(valid(tol.rtol) && valid(tol.atol)) {
        return Err(Fail::Usage(
            "--rtol and --atol must be finite and at least 0".into(),
        ));
    }
    let ((ia, _), (ib, _)) = (opened(&a.a, None, "diff")?, opened(&a.b, None, "diff")?);
    let mut out = io::stdout().lock();
    let mut differs = false;
    if ia.dtype != ib.dtype {
        writeln!(out, "dtype: {} vs {}", ia.dtype, ib.dtype)?;
        differs = true;
    }
    if ia.dims != ib.dims {
        writeln!(out, "dims: {:?} vs {:?}", ia.dims, ib.dims)?;
        differs = true;
    }
    if !differs {
        let bar = progress_bar(ia.bytes().len() as u64);
        let found = elements::diff_elements(&ia, &ib, tol, &mut out, &mut |done| {
            if let Some(b) = &bar {
                b.set_position(done);
            }
        });
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        differs = found?;
    }
    // Trailers are compared between two .ra files (a .npy has none).
    if let (Some(ta), Some(tb)) = (ia.trailer(), ib.trailer()) {
        if ta != tb {
            writeln!(
                out,
                "metadata: {} bytes vs {} bytes, contents differ",
                ta.len(),
                tb.len()
            )?;
            differs = true;
        }
    }
    if differs {
        Err(Fail::Reported)
    } else {
        writeln!(out, "same: {} {:?}", ia.dtype, ia.dims)?;
        Ok(())
    }
}

pub fn reshape(a: &ReshapeArgs) -> Outcome {
    no_folder(&a.file, "reshape", ONE_RA)?;
    let (old, _) = rastore::read_header_at(&a.file)?;
    let dims = a
        .dims
        .split(',')
        .map(|d| {
            d.trim()
                .parse::<i128>()
                .map_err(|_| format!("{d:?} is not a dim"))
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(|d| infer_dims(&d, old.count()))
        .map_err(Fail::Usage)?;
    let h = WriteOptions::new()
        .split_links(a.split_links)
        .reshape(&a.file, &dims)?;
    writeln!(io::stdout(), "{}: now {:?}", term::path(&a.file), h.dims())?;
    Ok(())
}

/// Dims with at most one -1, which becomes what makes the count `count`.
fn infer_dims(dims: &[i128], count: u64) -> Result<Vec<u64>, String> {
    let unknown: Vec<usize> = (0..dims.len()).filter(|&i| dims[i] == -1).collect();
    if unknown.len() > 1 {
        return Err("only one dim can be -1".into());
    }
    let known = dims
        .iter()
        .filter(|&&d| d != -1)
        .map(|&d| u64::try_from(d).map_err(|_| format!("{d} is not a dim (0 or more, or -1)")))
        .collect::<Result<Vec<u64>, _>>()?;
    let Some(&at) = unknown.first() else {
        return Ok(known);
    };
    let product = known
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or("the dims overflow")?;
    if product == 0 || !count.is_multiple_of(product) {
        return Err(format!(
            "cannot infer the -1 in {dims:?}: {count} elements are not a multiple of {product}"
        ));
    }
    let mut out = known;
    out.insert(at, count / product);
    Ok(out)
}

pub fn convert(a: &ConvertArgs) -> Outcome {
    let options = ConvertOptions::new()
        .compress(a.compress)
        .nan_gray(a.nan_gray)
        .overwrite(a.overwrite)
        .split_links(a.split_links);
    #[cfg(feature = "zarr")]
    let options = options
        .chunks(a.chunks.clone().map(|d| d.0))
        .zarr_codec(a.codec.unwrap_or_default())
        .zarr_array(a.array);
    // An object, a folder (a Zarr array) or an array inside a file
    // (`m.safetensors/NAME`): its size is known once it is opened.
    let size = match remote::is_remote(&a.input) {
        true => u64::MAX,
        false if rastore::convert::member_path(&a.input).1.is_some() => u64::MAX,
        false => std::fs::metadata(&a.input)
            .map(|m| if m.is_dir() { u64::MAX } else { m.len() })
            .map_err(|e| Fail::Data(format!("{}: {e}", term::path(&a.input))))?,
    };
    let bar = progress_bar(size);
    let mut progress = |done: u64, total: u64| {
        if let Some(b) = &bar {
            b.set_length(total);
            b.set_position(done);
        }
    };
    let result = rastore::convert::convert(&a.input, &a.output, &options, &mut progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if result?.stored_raw {
        eprintln!(
            "ra: {}: stored uncompressed (LZ4 would not have made it smaller)",
            term::path(&a.output)
        );
    }
    Ok(())
}
