//! NumPy `.npy` files as a source (C or Fortran order, either byte order) and a sink
//! (Fortran order: the same bytes as a `.ra`'s, which NumPy loads as the same array).
//!
//! A C-order array of shape `(a, b, c)` is the column-major array of shape `(c, b, a)`:
//! the source reads a box as the runs of the reversed box, then transposes it in
//! memory. Boxes of the fewest requests (the planner's) keep both sides' runs long.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::convert::file::FileSink;
use crate::convert::ConvertOptions;
use crate::convert::{Block, Desc, Grain, Sink, Source};
use crate::dtype::{DType, Kind};
use crate::error::{io_at, ErrorKind, Result, ResultExt};
use crate::formats::npy::{self, Descr, NpyHeader};
use crate::header::Header;
use crate::layout::{select_c_to_f, transpose_c_to_f};
use crate::ndl;
use crate::padding::Padding;
use crate::reader::{Bools, DataReader};

/// A `.npy` file (or an archive's stored member: the same bytes at an offset).
pub struct NpySource {
    /// Over the data as column-major: of the reversed shape when it is C order.
    reader: DataReader,
    c_order: bool,
    /// C-order data of native bytes, mapped: boxes are transposed from where they
    /// lie, with no read into a buffer first and no request per run.
    mapped: Option<Mapped>,
    desc: Desc,
    shown: PathBuf,
}

/// The file mapped, and where the data lies in it.
struct Mapped {
    map: memmap2::Mmap,
    data: std::ops::Range<usize>,
}

impl NpySource {
    /// Opens the `.npy` file `path`.
    pub fn open(path: &Path) -> Result<NpySource> {
        let file = File::open(path).map_err(io_at("open", path))?;
        let len = file.metadata().map_err(io_at("stat", path))?.len();
        Self::at(path, file, 0, len)
    }

    /// The `.npy` that starts `start` bytes into `file` (named `path`), which holds
    /// `len` bytes from there.
    pub(crate) fn at(path: &Path, file: File, start: u64, len: u64) -> Result<NpySource> {
        let nh = {
            let mut r = crate::formats::npz::slice_reader(&file, start);
            npy::read_header(&mut r).at(path)?
        };
        Self::of_layout(path, file, start, len, nh)
    }

    /// The array `nh` lays out (its data offset counted from `start`) in `file` (named
    /// `path`), which holds `len` bytes from `start`: a `.npy`'s, or one that lies raw
    /// in a file of another format ([`crate::convert::placed`]).
    pub(crate) fn of_layout(
        path: &Path,
        file: File,
        start: u64,
        len: u64,
        nh: NpyHeader,
    ) -> Result<NpySource> {
        nh.data_within(len).at(path)?;
        let dtype = nh.descr.dtype().at(path)?;
        let header = Header::new(dtype, &nh.shape).at(path)?;
        let trailer = if dtype.kind() == Kind::User {
            ndl::descr_trailer(&header, &nh.descr)
        } else {
            Vec::new()
        };
        let unit = match (nh.descr.big_endian(), dtype.swap_unit(), &nh.descr) {
            (_, _, Descr::Struct(_)) => 1,
            (true, Some(unit), _) => unit,
            _ => 1,
        };
        let bools = if dtype == DType::BOOL {
            Bools::Normalize
        } else {
            Bools::No
        };
        let c_order = !nh.fortran_order && nh.shape.len() > 1;
        let trailer_unit = (trailer, (unit, bools));
        Self::laid_out(
            path,
            file,
            (start + len, start + nh.data_offset),
            dtype,
            nh.shape,
            c_order,
            trailer_unit,
        )
    }

    /// The little-endian array of `dims` stored in C order from `start` of `file`
    /// (named `path`, `len` bytes long), as a `.npy`'s data is: another format's (a
    /// safetensors tensor).
    pub(crate) fn c_order_at(
        path: &Path,
        file: File,
        (len, start): (u64, u64),
        dtype: DType,
        dims: Vec<u64>,
    ) -> Result<NpySource> {
        let unit = match (cfg!(target_endian = "big"), dtype.swap_unit()) {
            (true, Some(u)) => u,
            _ => 1,
        };
        let bools = if dtype == DType::BOOL {
            Bools::Normalize
        } else {
            Bools::No
        };
        let c_order = dims.len() > 1;
        Self::laid_out(
            path,
            file,
            (len, start),
            dtype,
            dims,
            c_order,
            (Vec::new(), (unit, bools)),
        )
    }

    /// The array of `dims` stored from `start` to at most `end` of `file`, in C order
    /// or column-major, with its trailer, swapped in units and Bools read as given.
    fn laid_out(
        path: &Path,
        file: File,
        (end, start): (u64, u64),
        dtype: DType,
        dims: Vec<u64>,
        c_order: bool,
        (trailer, read_as): (Vec<u8>, (usize, Bools)),
    ) -> Result<NpySource> {
        let stored: Vec<u64> = if c_order {
            dims.iter().rev().copied().collect()
        } else {
            dims.clone()
        };
        let header = Header::new(dtype, &stored).at(path)?;
        let mapped = match read_as {
            (1, Bools::No) if c_order => map_data(&file, start, header.nbytes()),
            _ => None,
        };
        let reader = DataReader::plain(path, file, end, start, header, read_as);
        Ok(NpySource {
            reader,
            c_order,
            mapped,
            desc: Desc {
                dtype,
                dims,
                trailer,
            },
            shown: path.to_path_buf(),
        })
    }
}

/// The `len` bytes at `start` of `file`, mapped, where they can be and the page cache
/// can hold them. Else (a mapping that fails, or data larger than the cache, which a
/// mapping would fault in one read-ahead window at a time) none: the reader reads
/// them, many runs at once, around the cache.
fn map_data(file: &File, start: u64, len: u64) -> Option<Mapped> {
    let end = start.checked_add(len)?;
    let fits = !crate::scan::larger_than_cache(len);
    if len == 0 || !fits || file.metadata().ok()?.len() < end {
        return None;
    }
    let data = usize::try_from(start).ok()?..usize::try_from(end).ok()?;
    // SAFETY: as for `RaSource`'s mapping: `convert` and `ra` document that no other
    // program may rewrite or truncate an input while it is read; rastore's writers
    // never do. The range lies within the file (checked just above).
    let map = unsafe { crate::mapped::map_whole(file, end) }.ok()?;
    Some(Mapped { map, data })
}

impl NpySource {
    /// The same array described by `trailer`: another format's labels and attributes
    /// (a netCDF variable's).
    pub(crate) fn with_trailer(mut self, trailer: Vec<u8>) -> NpySource {
        self.desc.trailer = trailer;
        self
    }

    /// Whether the data is stored in C order (an array of two or more axes).
    pub fn c_order(&self) -> bool {
        self.c_order
    }

    /// All of the data, in native byte order (Bools 0 or 1), into `out`, which must be
    /// exactly its bytes: column-major, or in C order where [`c_order`](Self::c_order)
    /// says it is stored so (the bytes of a C-order NumPy array), with no transpose.
    pub fn read_stored_into(self, out: &mut [u8]) -> Result<()> {
        self.reader.read_into(out)
    }
}

impl Source for NpySource {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        if self.mapped.is_some() {
            Grain::RowMajorMapped
        } else if self.c_order {
            Grain::RowMajor
        } else {
            Grain::ColumnMajor
        }
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        self.read_selection(&block.strides(), out)
    }

    fn read_selection(&self, sel: &[crate::Stride], out: &mut [u8]) -> Result<()> {
        if !self.c_order {
            return self.reader.read_selection_into(sel, out);
        }
        // The selection of the reversed (column-major) array holds it in C order.
        let reversed: Vec<crate::Stride> = sel.iter().rev().copied().collect();
        if crate::selection::bytes_of(sel, self.desc.dtype.elbyte) == 0 {
            // Nothing to reorder (and an empty selection's other extents may be too
            // large for any buffer's shape): checked, and done.
            return self.reader.read_selection_into(&reversed, out);
        }
        let w = self.desc.dtype.elbyte as usize;
        if let Some(m) = &self.mapped {
            let shape = crate::view::shape_usize(&self.desc.dims)?;
            let fit = crate::selection::fit(out, crate::selection::bytes_of(sel, w as u64));
            fit.at(&self.shown)?;
            return select_c_to_f(&m.map[m.data.clone()], &shape, w, sel, out).at(&self.shown);
        }
        let counts: Vec<u64> = sel.iter().map(|s| s.count).collect();
        let shape = crate::view::shape_usize(&counts)?;
        // The C-order bytes go through this thread's scratch buffer, kept from one
        // box to the next: a fresh one per box cost more in page faults than the
        // transpose.
        crate::layout::with_scratch(out.len(), |c| {
            self.reader.read_selection_into(&reversed, c)?;
            transpose_c_to_f(c, &shape, w, out, &mut |_, _| ())
        })
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

/// The NumPy descr of `desc`'s elements: a structured type's from its trailer, else
/// the number type's (a Julia Bool is `|b1`).
pub(crate) fn descr_of(desc: &Desc) -> Result<Descr> {
    let d = desc.dtype;
    if d.kind() == Kind::User {
        return Ok(
            ndl::numpy_descr(&desc.trailer, d.elbyte).unwrap_or(Descr::Simple {
                order: '|',
                kind: 'V',
                count: d.elbyte,
            }),
        );
    }
    Descr::for_dtype(d)
        .ok_or_else(|| ErrorKind::Unsupported(format!("{d} has no NumPy equivalent")).into())
}

/// A new Fortran-order `.npy` of `desc` at `path`: the same bytes as a `.ra`'s data,
/// after NumPy's header. Shapes NumPy cannot load are refused.
pub fn create(path: &Path, desc: Desc, options: &ConvertOptions) -> Result<Box<dyn Sink>> {
    let descr = descr_of(&desc).at(path)?;
    npy::check_numpy_shape(&desc.dims, descr.itemsize()?).at(path)?;
    let head = NpyHeader::encode(&descr, true, &desc.dims);
    let padding = Padding::of(&descr)?;
    Ok(Box::new(FileSink::create(
        path,
        options.placement(),
        &head,
        desc,
        &[],
        padding,
    )?))
}
