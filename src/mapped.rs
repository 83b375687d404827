//! Memory-mapped files: [`MappedRa`] maps a file read-only, validates the header in
//! place and hands out zero-copy views; [`MappedRaMut`] maps one read-write to fill
//! it. This is the only module that calls memmap2 (a `.npy` file's
//! [`MappedNpy`](crate::MappedNpy) is mapped by [`map_whole`] here). Why mapping is
//! `unsafe`: see [`MappedRa`].

use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memmap2::{Mmap, MmapMut, MmapOptions};
use ndarray::{ArrayD, ArrayView, ArrayViewD, ArrayViewMutD, Dimension};

use crate::dtype::Element;
use crate::error::{io_at, ErrorKind, Result, ResultExt};
use crate::header::Header;
use crate::read::{read_header_at_start, read_header_live};
use crate::sys::Advice;
use crate::view::{stored_data, trailer, view_data, view_data_mut};
use crate::writeback::{Queued, Writeback};

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
///
/// # Why `open` is `unsafe`
///
/// A mapping shows the file's bytes as they are *now*. If another process (or this
/// one, through another handle) writes to the file while it is mapped, a `&[u8]` or
/// an `ArrayView` handed out here changes underneath safe code, which Rust's aliasing
/// rules forbid; if the file is truncated, touching the lost pages raises `SIGBUS`
/// and kills the process. No check at open time can rule either out, because they
/// happen later and elsewhere. memmap2 therefore makes mapping a file `unsafe`, and
/// [`MappedRa::open`] forwards that contract to you instead of hiding it: calling it
/// is a promise that the file will not be modified or truncated while the `MappedRa`
/// lives. Files you wrote yourself, read-only data sets and files written once by
/// rastore (whose writers replace files by rename and never truncate them) keep that
/// promise. For a file that may change underneath, use the copying reader
/// [`read`](crate::read), which is entirely safe.
pub struct MappedRa {
    map: Mmap,
    header: Header,
    path: PathBuf,
}

impl MappedRa {
    /// Maps `path` read-only and validates its header (FORMAT.md section 4, rules 1 to
    /// 8). Costs the same whatever the file's size: the header is read with one `pread`
    /// and no page of the mapping is touched until a view is used.
    ///
    /// # Safety
    ///
    /// The file must not be modified or truncated, by this or any other process, while
    /// the returned value or any view borrowed from it is alive. See
    /// [why](MappedRa#why-open-is-unsafe), and [`read`](crate::read) for a safe
    /// alternative.
    pub unsafe fn open(path: impl AsRef<Path>) -> Result<MappedRa> {
        let path = path.as_ref();
        let file = File::open(path).map_err(io_at("open", path))?;
        let len = file.metadata().map_err(io_at("stat", path))?.len();
        // The header is read with one pread rather than through the mapping: touching
        // the mapping would fault in (and fault around) pages nobody asked for yet.
        let (header, len) = read_header_live(&file, len).at(path)?;
        // SAFETY: the caller promises that the file is not modified or truncated while
        // this mapping lives (this function's contract); the mapping is read-only.
        let map = unsafe { map_whole(&file, len) }.map_err(io_at("mmap", path))?;
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
        crate::read::read_typed(&mut self.as_bytes(), Some(len)).at(&self.path)
    }

    /// Tells the system how the mapping will be used: [`Advice::Sequential`] before a
    /// pass front to back (the kernel reads ahead aggressively), [`Advice::Random`] for
    /// scattered access (it reads ahead nothing), [`Advice::Normal`] to go back. A hint:
    /// `madvise` on Linux and macOS, nothing on Windows; errors are ignored.
    ///
    /// For one pass over the whole data of a file larger than memory, prefer
    /// [`scan`](crate::scan::scan) over the view: a cold mapping is read by page
    /// faults a little at a time, and once the page cache is full every fault also
    /// evicts, where a scan reads large slabs ahead of the work and keeps the cache
    /// (`benches/bigdata.rs` measures both). The view is the right tool for random
    /// access, for repeated passes over data that fits in memory, and for slices.
    pub fn advise(&self, advice: Advice) {
        crate::sys::advise(&self.map, advice, None);
    }

    /// Asks for bytes `range` of the data segment to be read in now, ahead of use
    /// (`MADV_WILLNEED`; nothing on Windows). A range past the data is cut to it.
    pub fn will_need(&self, range: Range<u64>) {
        let start = self.header.data_offset();
        let end = start + self.data_bytes().len() as u64;
        let (a, b) = (
            (start + range.start).min(end),
            (start.saturating_add(range.end)).min(end),
        );
        crate::sys::advise(&self.map, Advice::WillNeed, Some(a as usize..b as usize));
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

/// A RawArray file (or one slab of it) mapped read-write, for filling in place.
///
/// Only the data segment is mapped, never the header. Create one with
/// [`MappedRaMut::create`], or map an existing file with [`MappedRaMut::open`] or, for
/// one of many processes writing disjoint parts, [`MappedRaMut::open_slab`].
///
/// # Crashes and `flush`
///
/// Stores through the mapping land in the kernel's page cache, shared with every other
/// mapping and `read` of the file. If the process crashes, they survive: the kernel
/// writes them back. If the machine loses power, stores not yet written back are lost
/// (the file keeps its size and the zeroes reserved at creation). [`flush`](Self::flush)
/// writes the mapped range back and syncs the file: once it returns, what was stored
/// before it survives a power loss.
pub struct MappedRaMut {
    map: MmapMut,
    file: File,
    header: Header,
    view_header: Header,
    slab: Option<Range<u64>>,
    /// Where in the file the mapping starts.
    offset: u64,
    path: PathBuf,
    /// What fills have queued for the disk ([`Writeback`]).
    queued: Mutex<Queued>,
}

impl MappedRaMut {
    /// Maps the data of an existing valid file read-write.
    ///
    /// # Safety
    ///
    /// While the result lives, no other process or handle may truncate the file or
    /// write the bytes it maps (here: the whole data segment).
    pub unsafe fn open(path: impl AsRef<Path>) -> Result<Self> {
        // SAFETY: forwarded to the caller (this function's contract).
        unsafe { Self::map(path.as_ref(), None) }
    }

    /// Maps only the slab whose last index lies in `range` (a range along the last,
    /// slowest axis), read-write. Many processes may each map and fill a disjoint slab
    /// of one file at the same time. The view has shape `dims[..n-1] + [range.len()]`.
    ///
    /// # Safety
    ///
    /// While the result lives, no other process or handle may truncate the file or
    /// write this slab's bytes; other slabs are free.
    pub unsafe fn open_slab(path: impl AsRef<Path>, range: Range<u64>) -> Result<Self> {
        // SAFETY: forwarded to the caller (this function's contract).
        unsafe { Self::map(path.as_ref(), Some(range)) }
    }

    /// # Safety
    ///
    /// As for [`open_slab`](Self::open_slab) (`slab` given) or [`open`](Self::open).
    unsafe fn map(path: &Path, slab: Option<Range<u64>>) -> Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(io_at("open read-write", path))?;
        // SAFETY: forwarded: this function's contract is the caller's.
        unsafe { Self::map_file(file, path, slab) }
    }

    /// Maps the data of an open read-write `file` (named `path` in messages).
    ///
    /// # Safety
    ///
    /// As for [`open`](Self::open).
    pub(crate) unsafe fn map_file(
        file: File,
        path: &Path,
        slab: Option<Range<u64>>,
    ) -> Result<Self> {
        let len = file.metadata().map_err(io_at("stat", path))?.len();
        let header = read_header_at_start(&file, len).at(path)?;
        let (view_header, offset) = match &slab {
            Some(range) => header.slab(range.clone()).at(path)?,
            None => (header.clone(), header.data_offset()),
        };
        let map_len = usize::try_from(view_header.size()).map_err(|_| {
            crate::Error::from(ErrorKind::TooLarge {
                what: "mapping bytes",
                value: view_header.size().into(),
            })
            .at(path)
        })?;
        // SAFETY: the caller promises that nobody truncates the file or writes the
        // mapped bytes while this mapping lives (this function's contract). The range
        // lies inside the file: the header was validated against its length.
        let map = unsafe {
            MmapOptions::new()
                .offset(offset)
                .len(map_len)
                .map_mut(&file)
        }
        .map_err(io_at("mmap read-write", path))?;
        Ok(MappedRaMut {
            map,
            file,
            header,
            view_header,
            slab,
            offset,
            path: path.to_path_buf(),
            queued: Mutex::default(),
        })
    }

    /// The whole file's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The range along the last axis this mapping covers (`None`: the whole array).
    pub fn slab(&self) -> Option<Range<u64>> {
        self.slab.clone()
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A zero-copy mutable view of the mapped data: shape == dims (for a slab,
    /// `dims[..n-1] + [range.len()]`), Fortran strides. Refused like
    /// [`MappedRa::view`] for a mismatched type or data that cannot be viewed.
    pub fn view_mut<T: Element>(&mut self) -> Result<ArrayViewMutD<'_, T>> {
        view_data_mut(&self.view_header, &mut self.map).at(&self.path)
    }

    /// The mapped data bytes (the whole data segment, or the slab's part of it).
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }

    /// A zero-copy read-only view of the mapped data.
    pub fn view<T: Element>(&self) -> Result<ArrayViewD<'_, T>> {
        view_data(&self.view_header, &self.map).at(&self.path)
    }

    /// The mapped data bytes, and a [`Writeback`] to queue each part for the disk as
    /// soon as it is filled: for fills larger than memory that do not go through
    /// [`par_fill_slabs`](Self::par_fill_slabs) or [`par_fill`](Self::par_fill),
    /// which do it themselves.
    pub fn data_mut_with_writeback(&mut self) -> (&mut [u8], Writeback<'_>) {
        (
            &mut self.map,
            Writeback::new(&self.file, self.offset, self.header.nbytes(), &self.queued),
        )
    }

    /// Fills the mapped data in parallel: splits it along the last axis into disjoint
    /// slabs and calls `f(range, slab)` for each on the rayon pool; `range` counts in
    /// the whole file's last axis (also for a slab mapping).
    pub fn par_fill_slabs<T, F>(&mut self, f: F) -> Result<()>
    where
        T: Element,
        F: Fn(Range<usize>, ArrayViewMutD<'_, T>) + Sync,
    {
        let first = self.slab.as_ref().map_or(0, |r| r.start as usize);
        let per_index = match self.view_header.dims().last() {
            Some(&last) if last > 0 => (self.view_header.size() / last) as usize,
            _ => 0,
        };
        let behind = Writeback::new(&self.file, self.offset, self.header.nbytes(), &self.queued);
        let view = view_data_mut(&self.view_header, &mut self.map).at(&self.path)?;
        crate::fill::par_fill_slabs(view, first, |range, slab| {
            let bytes = (range.start - first) * per_index..(range.end - first) * per_index;
            f(range, slab);
            // Queued as soon as filled, not when the kernel reaches its dirty limit.
            behind.finished(bytes);
        });
        Ok(())
    }

    /// Fills the mapped data in parallel as a flat slice: `f(offset, chunk)` where
    /// `offset` is the column-major index (in the whole file) of `chunk[0]`.
    pub fn par_fill<T, F>(&mut self, f: F) -> Result<()>
    where
        T: Element,
        F: Fn(usize, &mut [T]) + Sync,
    {
        let first = match (&self.slab, self.header.dims().split_last()) {
            (Some(r), Some((&last, _))) => (r.start * (self.header.count() / last)) as usize,
            _ => 0,
        };
        let behind = Writeback::new(&self.file, self.offset, self.header.nbytes(), &self.queued);
        let size = std::mem::size_of::<T>();
        let mut view = view_data_mut(&self.view_header, &mut self.map).at(&self.path)?;
        let Some(data) = view.as_slice_memory_order_mut() else {
            unreachable!("a view of a whole mapping is contiguous")
        };
        crate::fill::par_fill_flat(data, first, |at, chunk| {
            let bytes = (at - first) * size..(at - first + chunk.len()) * size;
            f(at, chunk);
            behind.finished(bytes);
        });
        Ok(())
    }

    /// Writes the mapped range back to the file (`msync`) and syncs the file
    /// (`fsync`): on return, every store made before survives a power loss.
    pub fn flush(&self) -> Result<()> {
        self.map.flush().map_err(io_at("msync", &self.path))?;
        self.file.sync_all().map_err(io_at("fsync", &self.path))
    }
}

impl std::fmt::Debug for MappedRaMut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappedRaMut")
            .field("path", &self.path)
            .field("header", &self.header)
            .field("slab", &self.slab)
            .finish()
    }
}

/// Maps the first `len` bytes of `file` read-only. `len` is the length the caller has
/// just read with fstat; passing it spares memmap2 a second fstat (0.45 µs of an open
/// that takes 10).
///
/// # Safety
///
/// The file must not be modified or truncated while the mapping lives.
pub(crate) unsafe fn map_whole(file: &File, len: u64) -> std::io::Result<Mmap> {
    let len = usize::try_from(len).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "file larger than the address space",
        )
    })?;
    // SAFETY: forwarded to the caller (this function's contract).
    unsafe { MmapOptions::new().len(len).map(file) }
}
