//! A NumPy `.npy` file mapped read-only: [`MappedNpy`], zero-copy views in C or
//! Fortran order, mapped as [`MappedRa`](crate::MappedRa) maps a RawArray.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use ndarray::ArrayViewD;

use super::{read_header, NpyHeader};
use crate::convert::Placed;
use crate::dtype::Element;
use crate::error::{io_at, Result, ResultExt};
use crate::header::Header;
use crate::mapped::map_whole;
use crate::view::view_data;

/// A NumPy `.npy` file mapped read-only: the same zero-copy views as
/// [`MappedRa`](crate::MappedRa), in C or Fortran order as the file says.
pub struct MappedNpy {
    map: Mmap,
    header: NpyHeader,
    data_len: u64,
    path: PathBuf,
}

impl MappedNpy {
    /// Maps `path` and parses its header.
    ///
    /// # Safety
    ///
    /// As for [`MappedRa::open`](crate::MappedRa::open): the file must not be
    /// modified or truncated while the result or a view borrowed from it lives.
    pub unsafe fn open(path: impl AsRef<Path>) -> Result<MappedNpy> {
        let path = path.as_ref();
        let mut file = File::open(path).map_err(io_at("open", path))?;
        let len = file.metadata().map_err(io_at("stat", path))?.len();
        let header = read_header(&mut file).at(path)?;
        // SAFETY: this function's contract.
        unsafe { Self::map(path, &file, len, header) }
    }

    /// Maps the array of another format whose bytes lie raw in its file, where
    /// [`placed`](crate::convert::placed()) found them: a NIfTI volume, a tensor of a
    /// safetensors file.
    ///
    /// # Safety
    ///
    /// As for [`open`](Self::open).
    pub unsafe fn open_placed(placed: &Placed) -> Result<MappedNpy> {
        let path = &placed.file;
        let file = File::open(path).map_err(io_at("open", path))?;
        let len = file.metadata().map_err(io_at("stat", path))?.len();
        // SAFETY: this function's contract.
        unsafe { Self::map(path, &file, len, placed.layout.clone()) }
    }

    /// Maps `file` (`len` bytes, named `path`) whose data `header` describes.
    ///
    /// # Safety
    ///
    /// As for [`open`](Self::open).
    unsafe fn map(path: &Path, file: &File, len: u64, header: NpyHeader) -> Result<MappedNpy> {
        let data_len = header.data_within(len).at(path)?;
        // SAFETY: as in `MappedRa::open`: this function's contract.
        let map = unsafe { map_whole(file, len) }.map_err(io_at("mmap", path))?;
        Ok(MappedNpy {
            map,
            header,
            data_len,
            path: path.to_path_buf(),
        })
    }

    /// The parsed header.
    pub fn header(&self) -> &NpyHeader {
        &self.header
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The data bytes as stored.
    pub fn data_bytes(&self) -> &[u8] {
        let start = self.header.data_offset as usize;
        &self.map[start..start + self.data_len as usize]
    }

    /// A zero-copy view: shape == the NPY shape, strides per `fortran_order`. Refused
    /// for a mismatched type, big-endian data or misalignment.
    pub fn view<T: Element>(&self) -> Result<ArrayViewD<'_, T>> {
        let descr = &self.header.descr;
        let dtype = descr.dtype().at(&self.path)?;
        let mut h = Header::new(dtype, &self.header.shape).at(&self.path)?;
        if descr.big_endian() {
            let size = h.size();
            h = h.with_storage(crate::header::Flags::BIG_ENDIAN, size);
        }
        let v = view_data::<T>(&h, self.data_bytes()).at(&self.path)?;
        if self.header.fortran_order {
            return Ok(v);
        }
        // Same bytes, C order: view the reversed shape in Fortran order, then reverse.
        let rev: Vec<u64> = self.header.shape.iter().rev().copied().collect();
        let hr = h.reshaped(&rev).at(&self.path)?;
        Ok(view_data::<T>(&hr, self.data_bytes())
            .at(&self.path)?
            .reversed_axes())
    }
}

impl std::fmt::Debug for MappedNpy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedNpy")
            .field("path", &self.path)
            .field("header", &self.header)
            .finish()
    }
}
