//! Creating a file at its full size, space reserved, ready to be filled in place
//! (FORMAT.md section 8), and [`MappedRaMut::create`], which maps what it creates
//! (the mapping itself is `MappedRaMut`'s).

use std::fs::File;
use std::path::Path;

use crate::dtype::DType;
use crate::error::{io_at, Error, ErrorKind, Result, ResultExt};
use crate::header::Header;
use crate::mapped::MappedRaMut;
use crate::padding::Padding;
use crate::replace::{build_file, Placement};

/// How to create a preallocated file: trailer, and whether to replace an existing one.
#[derive(Debug, Clone, Default)]
pub struct CreateOptions {
    metadata: Vec<u8>,
    overwrite: bool,
    split_links: bool,
    durable: bool,
}

impl CreateOptions {
    /// Defaults: no trailer, refuse an existing path.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes to store after the data segment.
    pub fn metadata(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.metadata = bytes.into();
        self
    }

    /// Replace an existing file (by rename: a live mapping of it keeps its data).
    pub fn overwrite(mut self, yes: bool) -> Self {
        self.overwrite = yes;
        self
    }

    /// With [`overwrite`](Self::overwrite), replace a file that has other hard links
    /// (see [`WriteOptions::split_links`](crate::WriteOptions::split_links)).
    pub fn split_links(mut self, yes: bool) -> Self {
        self.split_links = yes;
        self
    }

    /// Sync the file, and its folder, when it is named (for [`place`](Self::place)).
    pub fn durable(mut self, yes: bool) -> Self {
        self.durable = yes;
        self
    }

    pub(crate) fn placement(&self) -> Placement {
        Placement {
            overwrite: self.overwrite,
            durable: self.durable,
            split_links: self.split_links,
        }
    }

    /// Names `complete` `path`, as every writer names its output: `complete` is a file
    /// [`create_file`](Self::create_file) made under a hidden name beside `path`, which
    /// processes filled in place (a Dask write, say). An existing `path` is refused
    /// unless overwriting (and one with other hard links unless splitting them); its
    /// mode and owner carry over; with [`durable`](Self::durable), file and folder are
    /// synced. On any error `complete` is removed.
    pub fn place(&self, complete: impl AsRef<Path>, path: impl AsRef<Path>) -> Result<()> {
        crate::replace::NewFile::adopt(complete.as_ref(), path.as_ref(), self.placement())?.place()
    }

    /// Creates `path` holding a zeroed array of `dtype` and `dims`, with the whole size
    /// reserved by `fallocate`, so a full disk is this error and never a `SIGBUS` on a
    /// later page fault. The file is built unnamed (or under a temporary name) and
    /// named when complete, so on any error nothing is left behind and an existing
    /// file is untouched.
    pub fn create_file(
        &self,
        path: impl AsRef<Path>,
        dtype: DType,
        dims: &[u64],
    ) -> Result<Header> {
        let path = path.as_ref();
        let header = Header::new(dtype, dims).at(path)?;
        build_file(path, self.placement(), |new| {
            self.prepare(new.file(), &header, path)
        })?;
        Ok(header)
    }

    /// Creates `path` like [`create_file`](Self::create_file), but fills it through a
    /// mapping *before* it has its name: `fill` gets the mapped file, and only when it
    /// returns `Ok` does the complete file appear under `path` (so readers never see
    /// it half filled, and on error or a crash nothing is left). Fill in parallel with
    /// [`MappedRaMut::par_fill_slabs`] or through [`MappedRaMut::data_mut`].
    pub fn create_filled(
        &self,
        path: impl AsRef<Path>,
        dtype: DType,
        dims: &[u64],
        fill: impl FnOnce(&mut MappedRaMut) -> Result<()>,
    ) -> Result<Header> {
        let path = path.as_ref();
        let header = Header::new(dtype, dims).at(path)?;
        build_file(path, self.placement(), |new| {
            self.prepare(new.file(), &header, path)?;
            let file = new.file().try_clone().map_err(io_at("open", path))?;
            // SAFETY: the new file has no name yet (or a temporary one no other
            // program knows); nothing else truncates or writes it while it is mapped.
            let mut out = unsafe { MappedRaMut::map_file(file, path, None) }?;
            fill(&mut out)?;
            if let Some(pad) = Padding::of_trailer(&self.metadata, dtype) {
                pad.zero_all(out.data_mut());
            }
            Ok(())
        })?;
        Ok(header)
    }

    /// Reserves the whole size of `file` and writes `header` and the trailer into it
    /// (`path` is the final name, for errors).
    pub(crate) fn prepare(&self, file: &File, header: &Header, path: &Path) -> Result<()> {
        // Header::new checked that header and data fit in u64.
        let data_end = header.data_offset() + header.size();
        let total = data_end
            .checked_add(self.metadata.len() as u64)
            .ok_or_else(|| {
                Error::from(ErrorKind::TooLarge {
                    what: "file bytes",
                    value: u128::from(data_end) + self.metadata.len() as u128,
                })
                .at(path)
            })?;
        if total > 0 {
            crate::sys::preallocate(file, total).map_err(io_at("reserve space", path))?;
        }
        crate::sys::write_all_at(file, &header.encode(), 0).map_err(io_at("write header", path))?;
        crate::sys::write_all_at(file, &self.metadata, data_end)
            .map_err(io_at("write metadata", path))
    }
}

impl MappedRaMut {
    /// Creates `path` with a zeroed array of `dtype` and `dims`, space reserved, and
    /// maps its data read-write. Refuses an existing path; see
    /// [`create_with`](Self::create_with) for overwriting and a trailer.
    ///
    /// # Safety
    ///
    /// As for [`MappedRa::open`](crate::MappedRa::open): while the result lives, no
    /// other process or handle may truncate the file or write the bytes it maps.
    pub unsafe fn create(path: impl AsRef<Path>, dtype: DType, dims: &[u64]) -> Result<Self> {
        // SAFETY: forwarded to the caller (this function's contract).
        unsafe { Self::create_with(path, dtype, dims, &CreateOptions::new()) }
    }

    /// [`create`](Self::create) with options: a metadata trailer, overwrite.
    ///
    /// # Safety
    ///
    /// As for [`create`](Self::create).
    pub unsafe fn create_with(
        path: impl AsRef<Path>,
        dtype: DType,
        dims: &[u64],
        options: &CreateOptions,
    ) -> Result<Self> {
        let path = path.as_ref();
        options.create_file(path, dtype, dims)?;
        // SAFETY: forwarded to the caller (this function's contract).
        unsafe { Self::open(path) }
    }
}

/// Creates a preallocated zeroed file with default options (see
/// [`CreateOptions::create_file`]).
pub fn create_file(path: impl AsRef<Path>, dtype: DType, dims: &[u64]) -> Result<Header> {
    CreateOptions::new().create_file(path, dtype, dims)
}
