//! Memory-mapped files: [`MappedRa`] maps a file read-only, validates the header in
//! place and hands out zero-copy views. This is the only module that calls memmap2.
//!
//! # Why `open` is `unsafe`
//!
//! A mapping shows the file's bytes as they are *now*. If another process (or this
//! one, through another handle) writes to the file while it is mapped, a `&[u8]` or
//! an `ArrayView` handed out here changes underneath safe code, which Rust's aliasing
//! rules forbid; if the file is truncated, touching the lost pages raises `SIGBUS`
//! and kills the process. No check at open time can rule either out, because they
//! happen later and elsewhere. memmap2 therefore makes mapping a file `unsafe`, and
//! [`MappedRa::open`] forwards that contract to you instead of hiding it: calling it
//! is a promise that the file will not be modified or truncated while the `MappedRa`
//! lives. Files you wrote yourself, read-only data sets and files written once by
//! rastore (whose writers replace files by rename and never truncate them) keep that
//! promise. For a file that may change underneath, use the copying reader
//! [`read`](crate::read), which is entirely safe.

use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use ndarray::{ArrayD, ArrayView, ArrayViewD, Dimension};

use crate::dtype::Element;
use crate::error::{io_at, ErrorKind, Result, ResultExt};
use crate::header::{Header, FIXED_LEN};
use crate::view::{stored_data, trailer, view_data};

/// A RawArray file mapped read-only, its header validated.
///
/// ```no_run
/// use rastore::MappedRa;
/// // SAFETY: nothing modifies or truncates volume.ra while it is mapped.
/// let file = unsafe { MappedRa::open("volume.ra")? };
/// let v = file.view::<f32>()?;            // ArrayViewD<f32>, shape == dims
/// println!("{:?} sum = {}", v.shape(), v.sum());
/// # Ok::<(), rastore::Error>(())
/// ```
pub struct MappedRa {
    map: Mmap,
    header: Header,
    path: PathBuf,
}

impl MappedRa {
    /// Maps `path` read-only and validates its header (FORMAT.md section 4, rules 1 to
    /// 8). Costs the same whatever the file's size: only the header pages are read.
    ///
    /// # Safety
    ///
    /// The file must not be modified or truncated, by this or any other process, while
    /// the returned value or any view borrowed from it is alive. See the
    /// [module docs](self) for why, and [`read`](crate::read) for a safe alternative.
    pub unsafe fn open(path: impl AsRef<Path>) -> Result<MappedRa> {
        let path = path.as_ref();
        let file = File::open(path).map_err(io_at("open", path))?;
        let len = file.metadata().map_err(io_at("stat", path))?.len();
        if len < FIXED_LEN as u64 {
            return Err(crate::Error::from(ErrorKind::Truncated { len }).at(path));
        }
        // SAFETY: the caller promises that the file is not modified or truncated while
        // this mapping lives (this function's contract); the mapping is read-only.
        let map = unsafe { Mmap::map(&file) }.map_err(io_at("mmap", path))?;
        let header = Header::parse(&map).at(path)?;
        Ok(MappedRa {
            map,
            header,
            path: path.to_path_buf(),
        })
    }

    /// The validated header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole file's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.map
    }

    /// The data segment as stored (possibly compressed or big-endian).
    pub fn data_bytes(&self) -> &[u8] {
        stored_data(&self.header, &self.map)
    }

    /// The metadata trailer: every byte after the data segment.
    pub fn metadata(&self) -> &[u8] {
        trailer(&self.header, &self.map)
    }

    /// A zero-copy view of the data: shape == dims, Fortran strides, elements read
    /// straight from the mapping.
    ///
    /// Refused with [`ErrorKind::TypeMismatch`] when `T` does not match the file, and
    /// with [`ErrorKind::NotViewable`] when the data is big-endian, compressed,
    /// bit-packed or misaligned for `T`; [`to_owned`](Self::to_owned) decodes those.
    pub fn view<T: Element>(&self) -> Result<ArrayViewD<'_, T>> {
        view_data(&self.header, self.data_bytes()).at(&self.path)
    }

    /// [`view`](Self::view) with a fixed dimensionality, e.g. `view_ix::<f32, Ix3>()`.
    pub fn view_ix<T: Element, D: Dimension>(&self) -> Result<ArrayView<'_, T, D>> {
        let v = self.view::<T>()?;
        let actual = v.ndim();
        v.into_dimensionality::<D>().map_err(|_| {
            crate::Error::from(ErrorKind::DimMismatch {
                expected: D::NDIM.unwrap_or(actual),
                actual,
            })
            .at(&self.path)
        })
    }

    /// Decodes the data into an owned array, whatever its byte order or encoding.
    pub fn to_owned<T: Element>(&self) -> Result<ArrayD<T>> {
        let len = self.map.len() as u64;
        crate::owned::read_typed(&mut self.as_bytes(), Some(len)).at(&self.path)
    }

    /// Tells the kernel the data will be read front to back (`MADV_SEQUENTIAL`), so
    /// it reads ahead aggressively. A hint: errors are ignored.
    pub fn advise_sequential(&self) {
        #[cfg(unix)]
        let _ = self.map.advise(memmap2::Advice::Sequential);
    }
}

impl std::fmt::Debug for MappedRa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedRa")
            .field("path", &self.path)
            .field("header", &self.header)
            .finish()
    }
}
