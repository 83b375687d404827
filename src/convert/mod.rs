//! One engine: every format a [`Source`] and a [`Sink`], and [`convert()`] any source
//! into any sink.
//!
//! A source describes an array ([`Desc`]: element type, logical shape, the trailer
//! with its labels and attributes) and reads any box of it, as native column-major
//! bytes, into the caller's buffer; where it holds the array so already (a mapping, a
//! decoded image) it lends the bytes instead. A sink is made from a description, takes
//! boxes in any order from many threads, and either commits (names the file, completes
//! the upload, writes `zarr.json`) or, dropped, leaves nothing. [`Grain`] says how each
//! lays its elements out, and the planner (`plan`) cuts the array into boxes that
//! both read and write in long runs: whole frames when both are column-major, the
//! fewest-request box where C order meets column-major (a C-order `.npy` read, a
//! safetensors file written), the chunks of a
//! Zarr side.
//!
//! | format | source | sink |
//! |---|---|---|
//! | `.ra`, local | plain, big-endian, LZ4, LEB128, Julia Bools and BitArrays ([`ra`]) | plain, or one LZ4 block |
//! | `.npy` | C and Fortran order, either byte order ([`npy`](crate::formats::npy)) | Fortran order |
//! | `.npz` | each member ([`npz`](crate::formats::npz)) | of a dataset's arrays, stored |
//! | PNG | decoded ([`png`](crate::formats::png)) | 8/16-bit, or scaled to gray |
//! | safetensors | each tensor, C order ([`safetensors`](crate::formats::safetensors)); a file a dataset | a dataset's arrays, or one, C order |
//! | NetCDF-3 (CDF-1, 2, 5) | each variable, C order, big-endian; records gathered ([`netcdf3`](crate::formats::netcdf3)); a file a dataset | no |
//! | NIfTI-1 and 2 | `.nii` and pairs in place, either byte order; `.nii.gz` inflated as read ([`nifti`](crate::formats::nifti)) | `.nii`, `.nii.gz` |
//! | Zarr v2 and v3, local or `s3://` | `formats::zarr` (feature `zarr`); a group's arrays | v3: a group of one array, or bare; a dataset's group |
//! | dataset folders (FORMAT.md §10) | each variable | one `NAME.ra` per array of a tree |
//! | `s3://` objects | `.ra` by ranged GETs; other formats downloaded ([`remote`], feature `s3`) | `.ra` as a multipart upload; others uploaded whole |
//!
//! Each format's source and sink live in its folder under [`crate::formats`]; the
//! registry that names them is [`Format`] (magic numbers, output names) and `local.rs`
//! (which source opens a file, which sink makes one).
//!
//! Inputs are told by their contents ([`Format::of`]), outputs by their names
//! ([`Format::of_output`]). [`open`] and [`create`] make them; [`copy`] copies one
//! into the other; [`convert()`] does all three, and converts trees of arrays (a
//! dataset folder, a Zarr group, an `.npz`) member by member (`group`).
//! [`write_array`] writes an array the caller holds in memory to any output, as
//! [`convert()`] would.

pub(crate) mod file;
#[cfg(feature = "zarr")]
mod group;
mod local;
pub(crate) mod memory;
mod open;
mod options;
mod placed;
mod plan;
pub mod ra;
#[cfg(feature = "zarr")]
pub mod refs;
#[cfg(feature = "s3")]
pub mod remote;
mod route;
mod select;
mod stack;

use std::path::Path;

use crate::dtype::DType;
use crate::error::Result;

pub use file::write_box;
pub use open::{create, open};
pub use options::{array_name, is_zarr, ConvertOptions, Format};
pub use placed::{hdf5_member, member_path, members, placeable, placed, Placed};
pub use plan::copy;
pub use route::{convert, write_array};
pub use select::{select, Pick};
pub use stack::stack;

pub use crate::layout::Progress;

/// What a conversion did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Converted {
    /// Compression was asked for but would not have saved space: the data is plain.
    pub stored_raw: bool,
}

/// What an array is, as a source gives it and a sink takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Desc {
    /// The element type (a BitArray's is Julia's Bool: sources decode bits).
    pub dtype: DType,
    /// The logical shape, first axis first, as NumPy and Julia show it.
    pub dims: Vec<u64>,
    /// The metadata: a RawArray trailer, an NDL document for what rastore writes. It
    /// carries the attributes, the labels (dimension names, 1-D coordinates) and the
    /// NumPy descr of a structured type; [`Desc::dimension_names`] and
    /// [`Desc::attributes`] read them.
    pub trailer: Vec<u8>,
}

impl Desc {
    /// The dimension names the trailer gives, when it names every dim.
    pub fn dimension_names(&self) -> Option<Vec<String>> {
        crate::ndl::dimension_names(&self.trailer, self.dims.len())
    }

    /// The attributes of the trailer's NDL ndarray (or of a plain YAML mapping).
    pub fn attributes(&self) -> Option<yaml_rust2::yaml::Hash> {
        crate::ndl::attributes(&self.trailer)
    }

    /// The same elements in an array of `dims` (a selection, a stack): a structured
    /// type keeps its fields in a new trailer; labels and attributes, which name the
    /// old axes, are not carried over.
    pub fn reshaped(&self, dims: Vec<u64>) -> Result<Desc> {
        let trailer = if self.dtype.kind() == crate::Kind::User {
            let header = crate::Header::new(self.dtype, &dims)?;
            crate::ndl::numpy_descr(&self.trailer, self.dtype.elbyte)
                .map_or_else(Vec::new, |d| crate::ndl::descr_trailer(&header, &d))
        } else {
            Vec::new()
        };
        Ok(Desc {
            dtype: self.dtype,
            dims,
            trailer,
        })
    }

    /// Bytes of the whole array.
    pub fn nbytes(&self) -> u64 {
        crate::header::checked_bytes(self.dtype.elbyte, &self.dims).unwrap_or(u64::MAX)
    }
}

/// A box of an array: its first index and its extent on each axis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// The first index on each axis.
    pub origin: Vec<u64>,
    /// How many indices on each axis.
    pub shape: Vec<u64>,
}

impl Block {
    /// The whole of an array of `dims`.
    pub fn all(dims: &[u64]) -> Block {
        Block {
            origin: vec![0; dims.len()],
            shape: dims.to_vec(),
        }
    }

    /// Its elements (none when an extent is zero, whatever the others).
    pub fn count(&self) -> u64 {
        crate::header::checked_bytes(1, &self.shape).unwrap_or(u64::MAX)
    }

    /// The box as a selection: a unit-step [`Stride`](crate::Stride) per axis.
    pub fn strides(&self) -> Vec<crate::Stride> {
        self.origin
            .iter()
            .zip(&self.shape)
            .map(|(&o, &n)| crate::Stride::new(o, 1, n))
            .collect()
    }

    /// Whether the box is one contiguous stretch of the column-major array of `dims`:
    /// whole along every axis but the slowest it cuts, one index thick beyond it.
    pub fn contiguous_in(&self, dims: &[u64]) -> bool {
        let n = dims.len();
        let cut = (0..n).find(|&k| self.shape[k] != dims[k]).unwrap_or(n);
        (cut + 1..n).all(|k| self.shape[k] <= 1)
    }

    /// Where the box starts in the column-major array of `dims` and `elbyte`-byte
    /// elements, in bytes.
    pub fn offset_in(&self, dims: &[u64], elbyte: u64) -> u64 {
        self.origin
            .iter()
            .zip(dims)
            .rev()
            .fold(0u64, |acc, (o, d)| acc * d + o)
            * elbyte
    }
}

/// How a source or a sink lays its elements out: the planner cuts boxes by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grain {
    /// Column-major: whole leading axes are one run (`.ra`, Fortran `.npy`).
    ColumnMajor,
    /// C order: whole trailing axes are one run (a C-order `.npy`).
    RowMajor,
    /// C order, mapped where the page cache holds it: a read's run broken costs a
    /// cache line, a write's a request.
    RowMajorMapped,
    /// Chunks of this shape, each read or written whole (Zarr, an upload's parts).
    Chunks(Vec<u64>),
    /// Held in memory: any box costs the same (PNG, decoded data).
    Memory,
}

/// An array to read: any box of it, into the caller's buffer.
pub trait Source: Send + Sync {
    /// What it holds.
    fn desc(&self) -> &Desc;

    /// How its elements lie.
    fn grain(&self) -> Grain;

    /// The elements of `block` into `out` (exactly their bytes), native byte order,
    /// column-major within the box.
    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()>;

    /// The elements a strided selection (a [`Stride`](crate::Stride) per axis, checked
    /// to lie within the array) picks into `out`, native byte order, column-major. By
    /// default each frame's bounding box is read and picked from; sources that read
    /// runs (`.ra`, `.npy`, objects, memory) read only the runs.
    fn read_selection(&self, sel: &[crate::Stride], out: &mut [u8]) -> Result<()> {
        bounded_selection(self, sel, out)
    }

    /// All of its data as native column-major bytes, where it holds them so (a
    /// mapping, decoded memory): the planner copies from them instead of reading.
    fn lend(&self) -> Option<&[u8]> {
        None
    }

    /// How it is named in errors.
    fn shown(&self) -> &Path;
}

/// [`Source::read_selection`] by bounding boxes, one frame (last index) at a time.
fn bounded_selection<S: Source + ?Sized>(
    source: &S,
    sel: &[crate::Stride],
    out: &mut [u8],
) -> Result<()> {
    let w = source.desc().dtype.elbyte;
    let want = crate::selection::bytes_of(sel, w);
    crate::selection::fit(out, want)?;
    if want == 0 {
        return Ok(());
    }
    let Some((last, lead)) = sel.split_last() else {
        return source.read_box(&Block::all(&[]), out);
    };
    let mut bound = Block {
        origin: sel.iter().map(|s| s.start).collect(),
        shape: lead.iter().map(|s| (s.count - 1) * s.step + 1).collect(),
    };
    bound.shape.push(1);
    let within: Vec<crate::Stride> = lead
        .iter()
        .map(|s| crate::Stride::new(0, s.step, s.count))
        .chain([crate::Stride::all(1)])
        .collect();
    let frame = (want / last.count) as usize;
    let mut buf = vec![0u8; (bound.count() * w) as usize];
    for (t, dst) in out.chunks_mut(frame).enumerate() {
        bound.origin[sel.len() - 1] = last.start + t as u64 * last.step;
        source.read_box(&bound, &mut buf)?;
        for r in crate::selection::runs(&bound.shape, w, &within, 0) {
            let from = r.from as usize;
            dst[r.to..r.to + r.len].copy_from_slice(&buf[from..from + r.len]);
        }
    }
    Ok(())
}

/// An array to write: boxes in any order, from many threads, then
/// [`commit`](Sink::commit). Dropped without committing, it leaves nothing: no file,
/// no store, no pending upload.
pub trait Sink: Send + Sync {
    /// How it takes its elements.
    fn grain(&self) -> Grain;

    /// Writes `data`, the native column-major bytes of `block`.
    fn write_box(&self, block: &Block, data: &[u8]) -> Result<()>;

    /// Makes the output whole and visible: named, completed, described.
    fn commit(self: Box<Self>) -> Result<Converted>;

    /// How it is named in errors.
    fn shown(&self) -> &Path;
}
