//! safetensors files in the engine: each tensor a source (a C-order, little-endian
//! array at an offset, read as a C-order `.npy`'s data is), the file a dataset of
//! them whose attributes are `__metadata__`, and a new file written from a dataset:
//! its header first, then each tensor in C order, by positioned writes.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::Path;

use serde_json::{Map, Value};

use super::{encode_header, Entry, Header, Tensor};
use crate::convert::{Block, Converted, Desc, Grain, Sink};
use crate::error::{io_at, Error, ErrorKind, Result, ResultExt};
use crate::formats::npy::{Descr, NpyHeader, NpySource};
use crate::layout::transpose_c_to_f;
use crate::replace::NewFile;

/// The file `path`, open, its length and its parsed header.
pub fn header(path: &Path) -> Result<(File, u64, Header)> {
    let file = File::open(path).map_err(io_at("open", path))?;
    let len = file.metadata().map_err(io_at("stat", path))?.len();
    let header = super::read_header(&file, len).at(path)?;
    Ok((file, len, header))
}

/// The tensor `name` of `header`, or an error naming the tensors there are.
fn find<'h>(path: &Path, header: &'h Header, name: &str) -> Result<&'h Tensor> {
    header.tensor(name).ok_or_else(|| {
        Error::from(ErrorKind::InvalidArgument(format!(
            "no tensor {name:?}; it holds {}",
            listed(header)
        )))
        .at(path)
    })
}

/// The names of the tensors, for messages.
fn listed(header: &Header) -> String {
    match header.tensors.len() {
        0 => "no tensors".into(),
        n => format!("{n}: {}", header.names().join(", ")),
    }
}

/// The tensor `name` of the file `path` as a source.
pub fn open_tensor(path: &Path, name: &str) -> Result<NpySource> {
    let (file, len, header) = header(path)?;
    let t = find(path, &header, name)?;
    NpySource::c_order_at(path, file, (len, t.offset), t.dtype, t.shape.clone())
}

/// The one tensor of the file `path` as a source; a file of several (or none) is
/// refused, naming them and saying how to name one.
pub fn open(path: &Path) -> Result<NpySource> {
    let (file, len, header) = header(path)?;
    match header.tensors.as_slice() {
        [t] => NpySource::c_order_at(path, file, (len, t.offset), t.dtype, t.shape.clone()),
        _ => Err(Error::from(ErrorKind::InvalidArgument(format!(
            "a safetensors file of {}: name one as {}/NAME, or convert it into a folder \
             (one NAME.ra each), a .zarr or an .npz",
            listed(&header),
            path.display()
        )))
        .at(path)),
    }
}

/// The tensors' names, and `__metadata__` as a dataset's attributes (strings).
pub fn dataset(path: &Path) -> Result<(Vec<String>, Map<String, Value>)> {
    let (_, _, header) = header(path)?;
    let names = header.tensors.iter().map(|t| t.name.clone()).collect();
    let attrs = header
        .metadata
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    Ok((names, attrs))
}

/// Where the tensor `name` of `path` lies, as a `.npy` header describes it: C order,
/// little-endian. A bfloat16 tensor, which NumPy has no type for, is refused.
pub fn placed(path: &Path, name: &str) -> Result<NpyHeader> {
    let (_, _, header) = header(path)?;
    let t = find(path, &header, name)?;
    let descr = match crate::formats::npy::Descr::for_dtype(t.dtype) {
        Some(Descr::Simple { kind, count, .. }) if t.dtype.kind() != crate::Kind::BFloat16 => {
            Descr::Simple {
                order: if count == 1 { '|' } else { '<' },
                kind,
                count,
            }
        }
        _ => {
            return Err(Error::from(ErrorKind::Unsupported(format!(
                "the {} tensor {name:?} in place: NumPy has no such type; rastore.read \
                 gives it as ml_dtypes.bfloat16",
                t.dtype
            )))
            .at(path))
        }
    };
    Ok(NpyHeader {
        version: (1, 0),
        descr,
        fortran_order: false,
        shape: t.shape.clone(),
        data_offset: t.offset,
    })
}

/// A dataset's attributes as `__metadata__`: strings as they are, anything else as
/// its JSON text.
pub fn metadata_of(attrs: &Map<String, Value>) -> BTreeMap<String, String> {
    attrs
        .iter()
        .map(|(k, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            (k.clone(), text)
        })
        .collect()
}

/// Starts a safetensors file in `file` (new, empty) for tensors of `descs` by name:
/// writes the header and reserves the data; returns a sink for each tensor, in the
/// order of `descs`. A type safetensors has not is refused before anything is written.
pub fn start(
    file: &File,
    shown: &Path,
    descs: &[(String, Desc)],
    metadata: &BTreeMap<String, String>,
) -> Result<Vec<Box<dyn Sink>>> {
    let entries: Vec<Entry> = descs
        .iter()
        .map(|(name, d)| Entry {
            name: name.clone(),
            dtype: d.dtype,
            shape: d.dims.clone(),
        })
        .collect();
    let (head, tensors) = encode_header(&entries, metadata).at(shown)?;
    let end = tensors
        .iter()
        .map(|t| t.offset + t.nbytes)
        .max()
        .unwrap_or(head.len() as u64);
    crate::sys::preallocate(file, end).map_err(io_at("reserve space", shown))?;
    crate::sys::write_all_at(file, &head, 0).map_err(io_at("write header", shown))?;
    let mut sinks: Vec<Box<dyn Sink>> = Vec::with_capacity(descs.len());
    for (name, _) in descs {
        let Some(t) = tensors.iter().find(|t| &t.name == name) else {
            return Err(Error::from(ErrorKind::InvalidArgument(format!(
                "the tensor {name:?} was not laid out"
            )))
            .at(shown));
        };
        let file = file.try_clone().map_err(io_at("open", shown))?;
        sinks.push(Box::new(TensorSink {
            file,
            tensor: t.clone(),
            shown: shown.to_path_buf(),
        }));
    }
    Ok(sinks)
}

/// One tensor of a safetensors file being written: boxes in, C order out, at its
/// offset. Committing it does nothing: the file is named when all are written.
struct TensorSink {
    file: File,
    tensor: Tensor,
    shown: std::path::PathBuf,
}

impl Sink for TensorSink {
    fn grain(&self) -> Grain {
        match self.tensor.shape.len() {
            0 | 1 => Grain::ColumnMajor,
            _ => Grain::RowMajor,
        }
    }

    fn write_box(&self, block: &Block, data: &[u8]) -> Result<()> {
        let w = self.tensor.dtype.elbyte;
        // The column-major bytes of the box are the C-order bytes of its reversed
        // shape; transposed, they are its own C-order bytes.
        let c_bytes;
        let bytes: &[u8] = if block.shape.iter().filter(|&&e| e > 1).count() > 1 {
            let rev: Vec<u64> = block.shape.iter().rev().copied().collect();
            let shape = crate::view::shape_usize(&rev)?;
            let mut out = vec![0u8; data.len()];
            transpose_c_to_f(data, &shape, w as usize, &mut out, &mut |_, _| ())?;
            c_bytes = out;
            &c_bytes
        } else {
            data
        };
        // In C order the tensor is the column-major array of its reversed shape.
        let dims: Vec<u64> = self.tensor.shape.iter().rev().copied().collect();
        let sel: Vec<crate::Stride> = block.strides().into_iter().rev().collect();
        for r in crate::selection::runs(&dims, w, &sel, self.tensor.offset) {
            crate::sys::write_all_at(&self.file, &bytes[r.to..r.to + r.len], r.from)
                .map_err(io_at("write", &self.shown))?;
        }
        Ok(())
    }

    fn commit(self: Box<Self>) -> Result<Converted> {
        Ok(Converted::default())
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

/// A new safetensors file of one tensor at `path`, named after the file
/// ([`array_name`](crate::convert::array_name)): `m.safetensors` holds `m`.
pub fn create(
    path: &Path,
    desc: Desc,
    options: &crate::convert::ConvertOptions,
) -> Result<Box<dyn Sink>> {
    let new = NewFile::beside(path, options.placement())?;
    let name = crate::convert::array_name(path);
    let mut sinks = start(new.file(), path, &[(name, desc)], &BTreeMap::new())?;
    let tensor = sinks.pop().ok_or_else(|| {
        Error::from(ErrorKind::InvalidArgument("no tensor to write".into())).at(path)
    })?;
    Ok(Box::new(OneTensor { new, tensor }))
}

/// A new file of one tensor, named when committed.
struct OneTensor {
    new: NewFile,
    tensor: Box<dyn Sink>,
}

impl Sink for OneTensor {
    fn grain(&self) -> Grain {
        self.tensor.grain()
    }

    fn write_box(&self, block: &Block, data: &[u8]) -> Result<()> {
        self.tensor.write_box(block, data)
    }

    fn commit(self: Box<Self>) -> Result<Converted> {
        self.new.place()?;
        Ok(Converted::default())
    }

    fn shown(&self) -> &Path {
        self.tensor.shown()
    }
}

/// The tensors `path` names, for `ra info`: each of the file's, or the one of
/// `m.safetensors/NAME`, with the path that names it; from one reading of the header.
pub fn tensors_named(path: &Path) -> Result<Vec<(std::path::PathBuf, Tensor)>> {
    let (file, member) = crate::convert::member_path(path);
    let (_, _, header) = self::header(&file)?;
    let chosen = match member {
        Some(name) => vec![find(&file, &header, &name)?.clone()],
        None => header.tensors.clone(),
    };
    Ok(chosen
        .into_iter()
        .map(|t| (file.join(&t.name), t))
        .collect())
}

/// `ra info --json` of a tensor named `shown`: one JSON object.
pub fn info_json(shown: &Path, t: &Tensor) -> String {
    let dims: Vec<String> = t.shape.iter().map(u64::to_string).collect();
    let count = crate::header::checked_bytes(1, &t.shape).unwrap_or(0);
    format!(
        "{{\"path\": {}, \"format\": \"safetensors\", \"dtype\": {}, \"dims\": [{}], \
         \"count\": {count}, \"bytes\": {}, \"order\": \"C\", \"data_offset\": {}}}",
        crate::json::string(&shown.to_string_lossy()),
        crate::json::string(&t.dtype.name()),
        dims.join(", "),
        t.nbytes,
        t.offset
    )
}

/// `ra describe` of the tensors `path` names (see [`tensors_named`]): an NDL document
/// each, its storage the file's (row-major, little-endian, at its offset).
pub fn describe(path: &Path) -> Result<String> {
    use crate::ndl::{displayable, document, int, s, storage_mut, to_text};
    let mut out = String::new();
    for (shown, t) in tensors_named(path)? {
        let header = crate::header::Header::new(t.dtype, &t.shape).at(path)?;
        let mut doc = document(Some(&shown.to_string_lossy()), &header, None, None);
        if let Some(yaml_rust2::Yaml::Hash(storage)) = storage_mut(&mut doc) {
            storage.insert(s("format"), s("safetensors"));
            storage.insert(s("endian"), s("little"));
            storage.insert(s("order"), s("row-major"));
            storage.insert(s("data_offset"), int(t.offset));
        }
        out.push_str(&to_text(&displayable(doc)));
    }
    Ok(out)
}
