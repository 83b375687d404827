//! NIfTI images as a source (a `.nii` or a pair's `.img` read in place by runs, either
//! byte order; a `.nii.gz` inflated on a thread as its boxes are read) and a sink (a `.nii`:
//! the header, then the same column-major bytes as a `.ra`'s; a `.nii.gz`: gathered,
//! then deflated), and where an uncompressed image lies for mapping in place.

use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use super::header::{datatype_of, NiftiHeader};
use super::stream::GzSource;
use super::{attrs, gz_named, open_parts, read_head, NiftiFile};
use crate::convert::file::FileSink;
use crate::convert::memory::MemorySink;
use crate::convert::{Block, ConvertOptions, Converted, Desc, Grain, Sink, Source};
use crate::error::{io_at, Error, ErrorKind, Result, ResultExt};
use crate::formats::npy::NpyHeader;
use crate::header::Header;
use crate::reader::{Bools, DataReader};
use crate::write::atomic_write;

/// The description of an image with `parts`: nibabel's shape, the element type (a
/// struct for RGB), the header as attributes.
fn desc_of(parts: &NiftiFile) -> Result<Desc> {
    let (dtype, descr) = parts.header.element()?;
    let dims = parts.header.shape();
    let header = Header::new(dtype, &dims)?;
    let attributes = attrs::to_attributes(&parts.header, &parts.extensions);
    Ok(Desc {
        dtype,
        dims,
        trailer: crate::ndl::labeled_trailer(&header, descr.as_ref(), attributes, Vec::new()),
    })
}

/// An uncompressed image: its data read in place.
pub struct NiftiSource {
    reader: DataReader,
    desc: Desc,
    shown: PathBuf,
}

impl Source for NiftiSource {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        Grain::ColumnMajor
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        self.reader.read_selection_into(&block.strides(), out)
    }

    fn read_selection(&self, sel: &[crate::Stride], out: &mut [u8]) -> Result<()> {
        self.reader.read_selection_into(sel, out)
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

/// The width of the scalars to swap into native order (1: none).
fn swap_unit(h: &NiftiHeader, dtype: crate::DType) -> usize {
    match dtype.swap_unit() {
        Some(unit) if h.big_endian != cfg!(target_endian = "big") => unit,
        _ => 1,
    }
}

/// Opens the image `path`: a `.nii.gz` (by its gzip magic) inflated, else a `.nii` or
/// a pair read in place.
pub fn open(path: &Path) -> Result<Box<dyn Source>> {
    if is_gzip(path)? {
        return open_gz(path);
    }
    let (_, img, parts) = open_parts(path)?;
    let desc = desc_of(&parts).at(path)?;
    let (dtype, h) = (desc.dtype, &parts.header);
    let file = File::open(&img).map_err(io_at("open", &img))?;
    let len = file.metadata().map_err(io_at("stat", &img))?.len();
    let reader = DataReader::plain(
        &img,
        file,
        len,
        parts.data_offset,
        Header::new(dtype, &desc.dims).at(path)?,
        (swap_unit(h, dtype), Bools::No),
    );
    Ok(Box::new(NiftiSource {
        reader,
        desc,
        shown: path.to_path_buf(),
    }))
}

/// What the image `path` holds, from its header alone (a `.nii.gz` inflated only as
/// far as its header), with its NIfTI version.
pub fn describe(path: &Path) -> Result<(Desc, u8)> {
    let parts = if is_gzip(path)? {
        let file = File::open(path).map_err(io_at("open", path))?;
        read_head(
            &mut MultiGzDecoder::new(std::io::BufReader::new(file)),
            false,
        )
        .at(path)?
    } else {
        open_parts(path)?.2
    };
    Ok((desc_of(&parts).at(path)?, parts.header.version))
}

/// Whether `path` starts with gzip's magic.
fn is_gzip(path: &Path) -> Result<bool> {
    let mut magic = Vec::with_capacity(2);
    File::open(path)
        .map_err(io_at("open", path))?
        .take(2)
        .read_to_end(&mut magic)
        .map_err(io_at("read", path))?;
    Ok(magic == b"\x1f\x8b")
}

/// A `.nii.gz`: its header read, its data inflated on a thread as it is read
/// ([`GzSource`]), swapped into native order.
fn open_gz(path: &Path) -> Result<Box<dyn Source>> {
    let file = File::open(path).map_err(io_at("open", path))?;
    let mut r = MultiGzDecoder::new(std::io::BufReader::with_capacity(1 << 20, file));
    let parts = read_head(&mut r, false).at(path)?;
    let desc = desc_of(&parts).at(path)?;
    let n = parts.data_len().at(path)?;
    let unit = swap_unit(&parts.header, desc.dtype);
    Ok(Box::new(GzSource::start(
        r,
        desc,
        n,
        unit,
        parts.header.version,
        path,
    )))
}

/// Where the array of the uncompressed image `path` lies in its data file (the `.nii`,
/// or the `.img` of a pair), laid out as a Fortran-order `.npy`'s would be.
pub fn placed(path: &Path) -> Result<(PathBuf, NpyHeader)> {
    if is_gzip(path)? {
        return Err(Error::from(ErrorKind::Unsupported(
            "a gzipped NIfTI image in place: only an uncompressed .nii (or .img) maps; \
             `rastore.read` it, or `ra convert` it to a .nii or .ra"
                .into(),
        ))
        .at(path));
    }
    let (_, img, parts) = open_parts(path)?;
    let layout = NpyHeader {
        version: (1, 0),
        descr: parts.header.numpy_descr().at(path)?,
        fortran_order: true,
        shape: parts.header.shape(),
        data_offset: parts.data_offset,
    };
    Ok((img, layout))
}

/// The header and extensions that describe `desc` in a NIfTI file: its NIfTI
/// attributes written back, nibabel's defaults for the others. NIfTI-2 when the
/// attributes say so or an extent needs it.
pub fn header_for(desc: &Desc) -> Result<(NiftiHeader, Vec<super::Extension>)> {
    let descr = crate::ndl::numpy_descr(&desc.trailer, desc.dtype.elbyte);
    let code = datatype_of(desc.dtype, descr.as_ref()).ok_or_else(|| {
        Error::from(ErrorKind::Unsupported(format!(
            "{} in NIfTI, which holds (u)int8 to (u)int64, float32, float64, complex64, \
             complex128, bool (as uint8) and RGB(A) structs of u1 fields R, G, B(, A)",
            desc.dtype
        )))
    })?;
    if !(1..=7).contains(&desc.dims.len()) {
        return Err(Error::from(ErrorKind::Unsupported(format!(
            "an array of {} axes in NIfTI, which holds 1 to 7",
            desc.dims.len()
        ))));
    }
    if desc.dims.iter().any(|&d| d > i64::MAX as u64) {
        return Err(Error::from(ErrorKind::Unsupported(format!(
            "extents {:?} in NIfTI, whose extents are signed 64-bit",
            desc.dims
        ))));
    }
    let mut h = NiftiHeader::new(1, code, &desc.dims);
    let extensions = desc
        .attributes()
        .map(|a| attrs::from_attributes(&mut h, &a))
        .unwrap_or_default();
    if desc.dims.iter().any(|&d| d > i16::MAX as u64) {
        h.version = 2;
    }
    Ok((h, extensions))
}

/// A new NIfTI image of `desc` at `path`: a `.nii` (a NIfTI-1 header unless NIfTI-2 is
/// needed, then the data), or a `.nii.gz` deflated as nibabel writes it (level 1).
pub fn create(path: &Path, desc: Desc, options: &ConvertOptions) -> Result<Box<dyn Sink>> {
    let (h, extensions) = header_for(&desc).at(path)?;
    let head = h.encode(&extensions);
    if !gz_named(path) {
        return Ok(Box::new(FileSink::create(
            path,
            options.placement(),
            &head,
            desc,
            &[],
            None,
        )?));
    }
    let (how, at) = (options.placement(), path.to_path_buf());
    let finish = Box::new(move |_: &Desc, data: Vec<u8>| {
        atomic_write(&at, how, data.len() as u64 / 2, |w| {
            let mut gz = flate2::write::GzEncoder::new(w, flate2::Compression::new(1));
            gz.write_all(&head)
                .and_then(|()| gz.write_all(&data))
                .and_then(|()| gz.finish().map(drop))
                .map_err(io_at("write", &at))
        })?;
        Ok(Converted::default())
    });
    Ok(Box::new(MemorySink::new(desc, path, finish)?))
}
