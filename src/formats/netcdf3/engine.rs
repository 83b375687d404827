//! NetCDF-3 files in the engine: each variable a source, the file a dataset of them
//! (the netCDF data model, [`cdm`]), where a variable lies for mapping and reading in
//! place, and what `ra info` and `ra describe` say of them.
//!
//! A fixed-size variable, and the records of the only record variable, are C-order
//! big-endian values at `begin`, read as a C-order `.npy`'s data is
//! ([`NpySource`]) and mapped in place. The records of one of several record variables
//! are interleaved with the others': [`RecordSource`] gathers them, record by record.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::{NcFile, Variable};
use crate::cdm;
use crate::convert::{Block, Desc, Grain, Source};
use crate::error::{Error, ErrorKind, Result, ResultExt};
use crate::formats::npy::{NpyHeader, NpySource};
use crate::gather::{self, GatherOptions, Kept, Target};
use crate::layout::transpose_c_to_f;
use crate::selection::{self, Run, Stride};

/// The file `path`, open, and parsed.
pub fn file(path: &Path) -> Result<(File, NcFile)> {
    super::read_file(path)
}

/// The names of the variables, for messages.
fn listed(nc: &NcFile) -> String {
    match nc.vars.len() {
        0 => "no variables".into(),
        n => format!("{n} variables: {}", nc.names().join(", ")),
    }
}

/// The variable `name` of `nc`, or an error naming the variables there are.
fn find<'f>(path: &Path, nc: &'f NcFile, name: &str) -> Result<&'f Variable> {
    nc.variable(name).ok_or_else(|| {
        Error::from(ErrorKind::InvalidArgument(format!(
            "no variable {name:?}; it holds {}",
            listed(nc)
        )))
        .at(path)
    })
}

/// A variable as a source: its values in one run (a fixed-size variable, the records
/// of the only record variable), or its records gathered.
pub enum VariableSource {
    /// C-order, big-endian values from `begin`, read as a C-order `.npy`'s data is.
    Contiguous(NpySource),
    /// Records interleaved with other record variables'.
    Records(RecordSource),
}

impl VariableSource {
    /// Whether its values are read in C order by
    /// [`read_stored_into`](Self::read_stored_into) (an array of two or more axes).
    pub fn c_order(&self) -> bool {
        self.desc().dims.len() > 1
    }

    /// All of its values, in native byte order, into `out` (exactly their bytes), in C
    /// order as the file stores them (where [`c_order`](Self::c_order)): no transpose,
    /// for a C-order NumPy array.
    pub fn read_stored_into(self, out: &mut [u8]) -> Result<()> {
        match self {
            VariableSource::Contiguous(s) => s.read_stored_into(out),
            VariableSource::Records(s) => s.read_records(&s.all_records(), out),
        }
    }
}

impl Source for VariableSource {
    fn desc(&self) -> &Desc {
        match self {
            VariableSource::Contiguous(s) => s.desc(),
            VariableSource::Records(s) => s.desc(),
        }
    }

    fn grain(&self) -> Grain {
        match self {
            VariableSource::Contiguous(s) => s.grain(),
            VariableSource::Records(s) => s.grain(),
        }
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        self.read_selection(&block.strides(), out)
    }

    fn read_selection(&self, sel: &[Stride], out: &mut [u8]) -> Result<()> {
        match self {
            VariableSource::Contiguous(s) => s.read_selection(sel, out),
            VariableSource::Records(s) => s.read_selection(sel, out),
        }
    }

    fn shown(&self) -> &Path {
        match self {
            VariableSource::Contiguous(s) => s.shown(),
            VariableSource::Records(s) => s.shown(),
        }
    }
}

/// The variable `v` of `nc` (in `file`, named `path`) as a source, described by its
/// trailer: its name, dimension names and attributes.
fn source(path: &Path, file: File, nc: &NcFile, v: &Variable) -> Result<VariableSource> {
    let trailer = nc.model_of(v).trailer().at(path)?;
    let shown = path.join(&v.name);
    match nc.record_stride(v) {
        None => {
            let npy = NpySource::of_layout(path, file, 0, nc.len, nc.npy_layout(v))?;
            Ok(VariableSource::Contiguous(npy.with_trailer(trailer)))
        }
        Some(recsize) => {
            let dtype = v.nc_type.dtype();
            Ok(VariableSource::Records(RecordSource {
                file,
                len: nc.len,
                path: path.to_path_buf(),
                shown,
                desc: Desc {
                    dtype,
                    dims: v.shape.clone(),
                    trailer,
                },
                begin: v.begin,
                recsize,
                unit: match cfg!(target_endian = "big") {
                    true => 1,
                    false => dtype.swap_unit().unwrap_or(1),
                },
                kept: Kept::default(),
            }))
        }
    }
}

/// The variable `name` of the file `path` as a source.
pub fn open_variable(path: &Path, name: &str) -> Result<VariableSource> {
    let (file, nc) = self::file(path)?;
    let v = find(path, &nc, name)?.clone();
    source(path, file, &nc, &v)
}

/// The one variable of the file `path` as a source; a file of several (or none) is
/// refused, naming them and saying how to name one.
pub fn open(path: &Path) -> Result<VariableSource> {
    let (file, nc) = self::file(path)?;
    match nc.vars.as_slice() {
        [v] => {
            let v = v.clone();
            source(path, file, &nc, &v)
        }
        _ => Err(Error::from(ErrorKind::InvalidArgument(format!(
            "a NetCDF file of {}: name one as {}/NAME, or convert it into a folder (one \
             NAME.ra each), a .zarr or an .npz",
            listed(&nc),
            path.display()
        )))
        .at(path)),
    }
}

/// The file `path` in the netCDF data model: its variables (names, types, shapes,
/// dimension names, attributes) and its global attributes.
pub fn dataset(path: &Path) -> Result<cdm::Dataset> {
    Ok(self::file(path)?.1.model())
}

/// Where the variable `name` of `path` lies, as a `.npy` header describes it: C order,
/// big-endian. A record variable whose records are interleaved with others' is not one
/// run: refused, with what reads it instead.
pub fn placed(path: &Path, name: &str) -> Result<NpyHeader> {
    let (_, nc) = self::file(path)?;
    let v = find(path, &nc, name)?;
    if let Some(recsize) = nc.record_stride(v) {
        return Err(Error::from(ErrorKind::Unsupported(format!(
            "the record variable {name:?} in place: each of its {} records lies apart from \
             the next ({} bytes of {recsize} per record, interleaved with the other record \
             variables'); rastore.read or rastore.Array reads it, and ra refs and \
             rastore.ZarrStore read it in place, a chunk per record",
            nc.numrecs, v.slab
        )))
        .at(path));
    }
    Ok(nc.npy_layout(v))
}

/// Where the variable `name` of `path` lies for a Zarr reader: its layout as
/// [`placed`] gives it, and for a record variable interleaved with others, the bytes
/// from one record to the next (each record one chunk).
pub fn in_place(path: &Path, name: &str) -> Result<(NpyHeader, Option<u64>)> {
    let (_, nc) = self::file(path)?;
    let v = find(path, &nc, name)?;
    Ok((nc.npy_layout(v), nc.record_stride(v)))
}

/// The variables `path` names, for `ra info`: each of the file's, or the one of
/// `x.nc/NAME`, with the path that names it; and the file.
pub fn variables_named(path: &Path) -> Result<(NcFile, Vec<(PathBuf, Variable)>)> {
    let (file, member) = crate::convert::member_path(path);
    let (_, nc) = self::file(&file)?;
    let chosen = match member {
        Some(name) => vec![find(&file, &nc, &name)?.clone()],
        None => nc.vars.clone(),
    };
    let named = chosen
        .into_iter()
        .map(|v| (file.join(&v.name), v))
        .collect();
    Ok((nc, named))
}

/// The dims of `v` as `ra info` shows them: `[time (record), lat, lon]`.
fn dim_names(nc: &NcFile, v: &Variable) -> Vec<String> {
    v.dimids
        .iter()
        .map(|&d| match nc.dims[d].len {
            0 => format!("{} (record)", nc.dims[d].name),
            _ => nc.dims[d].name.clone(),
        })
        .collect()
}

/// `ra info` of the file `nc` (named `shown`): its version, records and attributes.
pub fn file_line(shown: &Path, nc: &NcFile) -> String {
    let streaming = if nc.streaming { " (streaming)" } else { "" };
    let n = |k: u64, what: &str| match k {
        1 => format!("1 {what}"),
        k => format!("{k} {what}s"),
    };
    format!(
        "{}: netcdf3 {} {}, {}{streaming} of {} bytes, {}",
        shown.display(),
        nc.version.name(),
        n(nc.vars.len() as u64, "variable"),
        n(nc.numrecs, "record"),
        nc.recsize,
        n(nc.attrs.len() as u64, "attribute")
    )
}

/// `ra info --json` of the file `nc` (named `shown`): one JSON object.
pub fn file_json(shown: &Path, nc: &NcFile) -> String {
    use crate::json::string;
    let names: Vec<String> = nc.vars.iter().map(|v| string(&v.name)).collect();
    format!(
        "{{\"path\": {}, \"format\": \"netcdf3\", \"version\": {}, \"variables\": [{}], \
         \"numrecs\": {}, \"streaming\": {}, \"recsize\": {}, \"attributes\": {}}}",
        string(&shown.to_string_lossy()),
        string(nc.version.name()),
        names.join(", "),
        nc.numrecs,
        nc.streaming,
        nc.recsize,
        nc.attrs.len()
    )
}

/// `ra info` of the variable `v` of `nc`, named `shown`: type, shape, dims, where it
/// lies.
pub fn info_line(shown: &Path, nc: &NcFile, v: &Variable) -> String {
    let lies = match nc.record_stride(v) {
        Some(r) => format!("records of {} bytes every {r} from {}", v.slab, v.begin),
        None => format!("offset {}", v.begin),
    };
    format!(
        "{}: {} {:?} bytes {} netcdf3 {} {} dims [{}] C-order {lies}",
        shown.display(),
        v.nc_type.dtype(),
        v.shape,
        nc.nbytes(v),
        nc.version.name(),
        v.nc_type.name(),
        dim_names(nc, v).join(", ")
    )
}

/// `ra info --json` of the variable `v` of `nc`, named `shown`: one JSON object.
pub fn info_json(shown: &Path, nc: &NcFile, v: &Variable) -> String {
    use crate::json::string;
    let dims: Vec<String> = v.shape.iter().map(u64::to_string).collect();
    let names: Vec<String> = v.dimids.iter().map(|&d| string(&nc.dims[d].name)).collect();
    let count = crate::header::checked_bytes(1, &v.shape).unwrap_or(0);
    let stride = nc
        .record_stride(v)
        .map_or_else(|| "null".to_string(), |r| r.to_string());
    format!(
        "{{\"path\": {}, \"format\": \"netcdf3\", \"version\": {}, \"nc_type\": {}, \
         \"dtype\": {}, \"dims\": [{}], \"dim_names\": [{}], \"record\": {}, \"count\": \
         {count}, \"bytes\": {}, \"order\": \"C\", \"data_offset\": {}, \"record_stride\": \
         {stride}}}",
        string(&shown.to_string_lossy()),
        string(nc.version.name()),
        string(v.nc_type.name()),
        string(&v.nc_type.dtype().name()),
        dims.join(", "),
        names.join(", "),
        v.record,
        nc.nbytes(v),
        v.begin,
    )
}

/// `ra describe` of the variables `path` names: an NDL document each (its type, shape,
/// attributes, dimension names), its storage the file's (row-major, big-endian, at its
/// offset; a record variable's records `record_stride` apart).
pub fn describe(path: &Path) -> Result<String> {
    use crate::ndl::{displayable, int, parse_trailer, s, storage_mut, to_text};
    let (nc, named) = variables_named(path)?;
    let mut out = String::new();
    for (shown, v) in named {
        let trailer = nc.model_of(&v).trailer().at(path)?;
        let Some(mut doc) = parse_trailer(&trailer) else {
            continue;
        };
        if let yaml_rust2::Yaml::Hash(top) = &mut doc {
            let mut with_file = yaml_rust2::yaml::Hash::new();
            with_file.insert(s("file"), s(&shown.to_string_lossy()));
            with_file.extend(std::mem::take(top));
            *top = with_file;
        }
        if let Some(yaml_rust2::Yaml::Hash(storage)) = storage_mut(&mut doc) {
            storage.insert(s("format"), s("netcdf3"));
            storage.insert(s("version"), s(nc.version.name()));
            storage.insert(s("endian"), s("big"));
            storage.insert(s("order"), s("row-major"));
            storage.insert(s("data_offset"), int(v.begin));
            storage.insert(s("size"), int(nc.nbytes(&v)));
            if let Some(r) = nc.record_stride(&v) {
                storage.insert(s("record_stride"), int(r));
            }
        }
        out.push_str(&to_text(&displayable(doc)));
    }
    Ok(out)
}

/// A record variable whose records are interleaved with other record variables': its
/// records `recsize` bytes apart from `begin`, each the C-order, big-endian values of
/// one record, gathered by runs.
pub struct RecordSource {
    file: File,
    len: u64,
    path: PathBuf,
    shown: PathBuf,
    desc: Desc,
    begin: u64,
    recsize: u64,
    /// The width of the scalars to swap into native order (1: none).
    unit: usize,
    kept: Kept,
}

impl Source for RecordSource {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        match self.desc.dims.len() {
            0 | 1 => Grain::ColumnMajor,
            _ => Grain::RowMajor,
        }
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        self.read_selection(&block.strides(), out)
    }

    fn read_selection(&self, sel: &[Stride], out: &mut [u8]) -> Result<()> {
        let w = self.desc.dtype.elbyte;
        let want = selection::bytes_of(sel, w);
        selection::fit(out, want).at(&self.shown)?;
        if want == 0 {
            return Ok(());
        }
        if sel.iter().skip(1).filter(|s| s.count > 1).count() == 0 {
            // One value per record, or a single record: C order is column-major.
            return self.read_records(sel, out);
        }
        let counts: Vec<u64> = sel.iter().map(|s| s.count).collect();
        let shape = crate::view::shape_usize(&counts)?;
        // Through this thread's scratch buffer, as a C-order `.npy`'s boxes go.
        crate::layout::with_scratch(out.len(), |c| {
            self.read_records(sel, c)?;
            transpose_c_to_f(c, &shape, w as usize, out, &mut |_, _| ())
        })
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

impl RecordSource {
    /// The selection of every value.
    fn all_records(&self) -> Vec<Stride> {
        self.desc.dims.iter().map(|&d| Stride::all(d)).collect()
    }

    /// The values `sel` picks into `out` (exactly their bytes, checked by the caller),
    /// in C order, native byte order: the runs of each record selected, gathered.
    fn read_records(&self, sel: &[Stride], out: &mut [u8]) -> Result<()> {
        let w = self.desc.dtype.elbyte;
        let want = selection::bytes_of(sel, w);
        selection::fit(out, want).at(&self.shown)?;
        let Some((records, inner)) = sel.split_first() else {
            return Ok(());
        };
        if want == 0 {
            return Ok(());
        }
        // In C order a record is the column-major array of its reversed shape.
        let dims: Vec<u64> = self.desc.dims[1..].iter().rev().copied().collect();
        let within: Vec<Stride> = inner.iter().rev().copied().collect();
        let per = (want / records.count) as usize;
        let runs = (0..records.count).flat_map(|t| {
            let r = records.start + t * records.step;
            let base = self.begin + r * self.recsize;
            selection::runs(&dims, w, &within, base).map(move |run| Run {
                to: run.to + t as usize * per,
                ..run
            })
        });
        let reads = gather::plan(
            runs,
            crate::reader::SELECTION_GAP,
            crate::reader::SELECTION_READ,
        );
        let target = Target {
            file: &self.file,
            len: self.len,
            path: &self.path,
            kept: &self.kept,
        };
        gather::read_into(&target, &reads, out, &GatherOptions::default())?;
        crate::codec::swap_bytes(out, self.unit);
        Ok(())
    }
}
