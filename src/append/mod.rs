//! Appending along the last axis: a file that grows by whole frames and is valid at
//! every moment (docs/FORMAT.md section 9).
//!
//! A frame is the array without its last axis. While an [`Appender`] holds a file, its
//! header carries the appending flag (bit 3): the data the header names is committed,
//! and what follows it is frames written but not yet committed, never a trailer. The
//! file's trailer, if it has one, is kept in a sidecar (`NAME.trailer`) meanwhile and
//! put back by [`Appender::finish`] or by [`recover`].
//!
//! ```no_run
//! use ndarray::Array2;
//! let mut out = rastore::AppendOptions::new().create("frames.ra", rastore::DType::F32, &[64, 48])?;
//! for t in 0..100 {
//!     let frame = Array2::<f32>::from_elem((64, 48), t as f32);
//!     out.append(&frame)?;
//!     out.commit()?; // readers that open now see t + 1 frames, and they are on disk
//! }
//! let header = out.finish()?;
//! assert_eq!(header.dims(), &[64, 48, 100]);
//! # Ok::<(), rastore::Error>(())
//! ```

mod recover;

pub use recover::{append_state, recover, AppendState, Recovery};

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use ndarray::{ArrayBase, Data, Dimension};

use crate::dtype::{DType, Element};
use crate::error::{io_at, Error, ErrorKind, Result, ResultExt};
use crate::header::{Encoding, Flags, Header};
use crate::layout::for_each_fortran_chunk;
use crate::padding::Padding;
use crate::read::read_header_at_start;
use crate::replace::{build_file, Placement};
use crate::sys;

/// Most dims a file can have and be appended to: the header's `size` and dims then lie
/// within its first 512 bytes (`48 + 8 × 58`), one disk sector, so the one `pwrite`
/// that commits frames is never torn by a power loss.
pub const MAX_APPEND_DIMS: usize = 58;

/// Space reserved ahead of the data at a time, unless set otherwise.
const DEFAULT_RESERVE: u64 = 64 << 20;

/// Bytes of column-major elements written at a time when a frame must be reordered.
const REORDER_CHUNK_BYTES: usize = 4 << 20;

/// Offset of the `flags` field, and of `size` (followed by `ndims` and the dims).
const FLAGS_AT: u64 = 8;
const SIZE_AT: u64 = 32;

/// How an [`Appender`] writes: durability and space reservation.
#[derive(Debug, Clone)]
pub struct AppendOptions {
    durable: bool,
    reserve: u64,
}

impl Default for AppendOptions {
    fn default() -> Self {
        AppendOptions {
            durable: true,
            reserve: DEFAULT_RESERVE,
        }
    }
}

impl AppendOptions {
    /// Durable commits, 64 MiB reserved at a time.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether [`commit`](Appender::commit) syncs the frames to disk before the header
    /// names them and syncs the header after (default). Without it, a commit makes
    /// the frames visible to readers at once and a crash of the process loses nothing,
    /// but a power loss may leave committed frames unwritten (read as zeros).
    pub fn durable(mut self, yes: bool) -> Self {
        self.durable = yes;
        self
    }

    /// Disk space reserved past the data at a time (`fallocate` with `KEEP_SIZE`:
    /// the file's length does not change, so readers never see it). A full disk is
    /// then an error of the append that needs the space. 0 reserves nothing.
    pub fn reserve(mut self, bytes: u64) -> Self {
        self.reserve = bytes;
        self
    }

    /// Creates `path` (refusing an existing file) with no frames yet: dims are
    /// `frame` plus a last extent of 0.
    pub fn create(&self, path: impl AsRef<Path>, dtype: DType, frame: &[u64]) -> Result<Appender> {
        let path = path.as_ref();
        let mut dims = frame.to_vec();
        dims.push(0);
        let header = Header::new(dtype, &dims).at(path)?;
        check_appendable(&header).at(path)?;
        let how = Placement {
            durable: self.durable,
            ..Placement::default()
        };
        build_file(path, how, |new| {
            sys::write_all_at(new.file(), &header.encode(), 0).map_err(io_at("write", path))
        })?;
        self.open(path)
    }

    /// Opens an existing plain file to append to. A file left open for appending by a
    /// crash is repaired first, as [`recover`] does.
    pub fn open(&self, path: impl AsRef<Path>) -> Result<Appender> {
        Appender::open(path.as_ref(), self)
    }

    /// Opens `path` to append frames of `dtype` and shape `frame`, creating it when it
    /// does not exist; an existing file must hold such frames.
    pub fn open_or_create(
        &self,
        path: impl AsRef<Path>,
        dtype: DType,
        frame: &[u64],
    ) -> Result<Appender> {
        let path = path.as_ref();
        if std::fs::symlink_metadata(path).is_err() {
            return self.create(path, dtype, frame);
        }
        let appender = self.open(path)?;
        appender.frames_in(dtype, frame).at(path)?;
        Ok(appender)
    }
}

/// A file open for appending frames along its last axis (FORMAT.md section 9 has the
/// rules it keeps).
///
/// Dropped without [`finish`](Self::finish), it discards the frames appended since the
/// last commit and closes the file as `finish` does, ignoring errors.
pub struct Appender {
    file: File,
    path: PathBuf,
    dtype: DType,
    /// The committed dims: the last extent is the committed frame count.
    dims: Vec<u64>,
    frame_bytes: u64,
    /// Frames written after the committed data and not yet named by the header.
    pending: u64,
    durable: bool,
    reserve: u64,
    /// The file offset up to which disk space is reserved.
    reserved_to: u64,
    /// The file's trailer, put back after the data when appending ends.
    trailer: Vec<u8>,
    /// The padding of structured elements the trailer describes, written as zeros.
    padding: Option<Padding>,
    closed: bool,
}

/// Why a file cannot be appended to, if it cannot.
fn check_appendable(h: &Header) -> Result<()> {
    let why = if h.ndims() == 0 {
        "a 0-d array has no last axis".to_string()
    } else if h.ndims() > MAX_APPEND_DIMS {
        format!(
            "{} dims: at most {MAX_APPEND_DIMS} keep size and dims in one 512-byte sector, \
             which a commit rewrites in one write",
            h.ndims()
        )
    } else if h.encoding() != Encoding::Raw {
        format!(
            "the data is {}: only plain data grows in place; `ra convert` it to plain first",
            h.encoding().filter_name().unwrap_or("encoded")
        )
    } else if h.data_big_endian() {
        "the file is big-endian; `ra convert` it to native order first".to_string()
    } else {
        return Ok(());
    };
    Err(ErrorKind::Unsupported(format!("cannot append: {why}")).into())
}

/// `elbyte × Π frame dims`.
fn frame_bytes(h: &Header) -> u64 {
    let frame = &h.dims()[..h.ndims() - 1];
    // Header validation bounded elbyte × Π dims; a zero last extent does not, so the
    // frame's own product is checked.
    crate::header::checked_bytes(h.dtype().elbyte, frame).unwrap_or(u64::MAX)
}

/// The sidecar that holds a file's trailer while it is open for appending.
pub fn trailer_sidecar(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".trailer");
    PathBuf::from(name)
}

/// Takes the append lock on `file` (exclusive: see [`sys::try_lock`]), so that one
/// appender or recovery at a time works on it.
fn lock(file: &File, path: &Path) -> Result<()> {
    // A reader asking `ra info` holds a shared lock for a moment: try a few times.
    for _ in 0..50 {
        match sys::try_lock(file, true) {
            Ok(true) => return Ok(()),
            Ok(false) => std::thread::sleep(std::time::Duration::from_millis(2)),
            Err(e) => return Err(Error::io("lock", e).at(path)),
        }
    }
    Err(ErrorKind::InvalidArgument(
        "another process is appending to this file (it holds the append lock)".into(),
    )
    .into())
}

/// Opens `path` read-write under the append lock, with its header and length.
fn open_locked(path: &Path) -> Result<(File, Header, u64)> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(io_at("open read-write", path))?;
    lock(&file, path).at(path)?;
    let len = file.metadata().map_err(io_at("stat", path))?.len();
    let header = read_header_at_start(&file, len).at(path)?;
    Ok((file, header, len))
}

impl Appender {
    fn open(path: &Path, options: &AppendOptions) -> Result<Appender> {
        let (file, mut header, mut len) = open_locked(path)?;
        check_appendable(&header).at(path)?;
        if header.flags().appending() {
            len = recover::repair(&file, path, &header, len)?.file_len;
            let (flags, size) = (header.flags().0 & !Flags::APPENDING, header.size());
            header = header.with_storage(flags, size);
        }
        let data_end = header.data_end(len);
        let mut trailer = vec![0u8; (len - data_end) as usize];
        sys::read_exact_at(&file, &mut trailer, data_end).map_err(io_at("read metadata", path))?;
        if !trailer.is_empty() {
            // The trailer is safe in the sidecar before frames may overwrite it.
            let how = Placement {
                overwrite: true,
                durable: true,
                ..Placement::default()
            };
            let sidecar = trailer_sidecar(path);
            build_file(&sidecar, how, |new| {
                sys::write_all_at(new.file(), &trailer, 0).map_err(io_at("write", &sidecar))
            })?;
        }
        write_flags(&file, path, header.flags().0 | Flags::APPENDING)?;
        file.sync_data().map_err(io_at("sync", path))?;
        let mut appender = Appender {
            dtype: header.dtype(),
            dims: header.dims().to_vec(),
            frame_bytes: frame_bytes(&header),
            pending: 0,
            durable: options.durable,
            reserve: options.reserve,
            reserved_to: data_end,
            padding: Padding::of_trailer(&trailer, header.dtype()),
            trailer,
            closed: false,
            path: path.to_path_buf(),
            file,
        };
        // Trailer bytes past the data are overwritten by the first frames; from here
        // on the file's length is the end of what has been written.
        if len > data_end {
            appender.truncate_to(data_end)?;
        }
        Ok(appender)
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The shape of one frame: the file's dims without the last.
    pub fn frame_dims(&self) -> &[u64] {
        &self.dims[..self.dims.len() - 1]
    }

    /// Frames committed: readers that open the file now see this many.
    pub fn frames(&self) -> u64 {
        self.dims[self.dims.len() - 1]
    }

    /// Frames appended since the last commit.
    pub fn pending(&self) -> u64 {
        self.pending
    }

    /// The path appended to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn data_offset(&self) -> u64 {
        8 * (6 + self.dims.len() as u64)
    }

    /// Where the next frame goes.
    fn write_end(&self) -> u64 {
        self.data_offset() + self.frame_bytes * (self.frames() + self.pending)
    }

    /// Checks that an array of `dtype` and `shape` (one frame, or `k` frames with a
    /// last extent of `k`) fits the file; returns `k`.
    pub fn frames_in(&self, dtype: DType, shape: &[u64]) -> Result<u64> {
        if dtype != self.dtype {
            return Err(ErrorKind::TypeMismatch {
                file: self.dtype,
                requested: dtype,
            }
            .into());
        }
        let frame = self.frame_dims();
        if shape == frame {
            return Ok(1);
        }
        match shape.split_last() {
            Some((&k, rest)) if rest == frame => Ok(k),
            _ => Err(ErrorKind::InvalidArgument(format!(
                "frame shape mismatch: the file's frames are {frame:?} (dims {:?}); \
                 an array of shape {shape:?} is neither one frame nor frames along a last axis",
                self.dims
            ))
            .into()),
        }
    }

    /// Appends one frame (an array of the frame's shape) or `k` frames (the frame's
    /// shape plus a last extent of `k`), in any memory layout. They are written at
    /// once and become visible at the next [`commit`](Self::commit). Returns the
    /// number of frames appended.
    pub fn append<T, S, D>(&mut self, frames: &ArrayBase<S, D>) -> Result<u64>
    where
        T: Element,
        S: Data<Elem = T>,
        D: Dimension,
    {
        let shape: Vec<u64> = frames.shape().iter().map(|&d| d as u64).collect();
        let k = self.frames_in(T::DTYPE, &shape).at(&self.path)?;
        let view = frames.view().into_dyn();
        if let Some(s) = view.view().reversed_axes().as_slice() {
            return self.write_frames(k, |w| w(bytemuck::cast_slice(s)));
        }
        let budget = REORDER_CHUNK_BYTES / std::mem::size_of::<T>().max(1);
        let mut buf: Vec<T> = Vec::new();
        self.write_frames(k, |w| {
            for_each_fortran_chunk(view, budget, &mut buf, &mut |c: &[T]| {
                w(bytemuck::cast_slice(c))
            })
        })
    }

    /// Appends whole frames given as column-major bytes in the file's element type
    /// (`bytes.len()` a multiple of the frame's size). Returns the number of frames.
    pub fn append_bytes(&mut self, bytes: &[u8]) -> Result<u64> {
        let fb = self.frame_bytes;
        if fb == 0 || !(bytes.len() as u64).is_multiple_of(fb) {
            return Err(Error::from(ErrorKind::InvalidArgument(format!(
                "{} bytes are not whole frames of {fb} bytes ({} {:?})",
                bytes.len(),
                self.dtype,
                self.frame_dims()
            )))
            .at(&self.path));
        }
        self.write_frames(bytes.len() as u64 / fb, |w| w(bytes))
    }

    /// Writes `k` frames that `fill` hands, in order, to the writer it is given. On
    /// any error the partial frames are cut off again: the file is as before.
    fn write_frames(
        &mut self,
        k: u64,
        fill: impl FnOnce(&mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()>,
    ) -> Result<u64> {
        let mut dims = self.dims.clone();
        let last = dims.len() - 1;
        dims[last] = self.frames() + self.pending + k;
        // The grown shape must still be a valid header (u64 sizes).
        Header::new(self.dtype, &dims).at(&self.path)?;
        let start = self.write_end();
        let end = start + self.frame_bytes * k;
        self.reserve_to(end)?;
        let (file, path, padding) = (&self.file, &self.path, &self.padding);
        let data_offset = self.data_offset();
        let mut at = start;
        let mut zeroed = Vec::new();
        let result = fill(&mut |bytes: &[u8]| {
            let bytes = match padding {
                Some(pad) => {
                    zeroed.clear();
                    zeroed.extend_from_slice(bytes);
                    pad.zero(&mut zeroed, at - data_offset);
                    &zeroed[..]
                }
                None => bytes,
            };
            sys::write_all_at(file, bytes, at).map_err(io_at("append", path))?;
            at += bytes.len() as u64;
            Ok(())
        });
        match result {
            Ok(()) if at == end => {
                self.pending += k;
                Ok(k)
            }
            Ok(()) => {
                let e = Error::from(ErrorKind::InvalidArgument(format!(
                    "frames gave {} bytes, {k} frames are {}",
                    at - start,
                    end - start
                )))
                .at(path);
                self.truncate_to(start)?;
                Err(e)
            }
            Err(e) => {
                self.truncate_to(start)?;
                Err(e)
            }
        }
    }

    /// Reserves disk space up to `end`, in steps of the reserve size.
    fn reserve_to(&mut self, end: u64) -> Result<()> {
        if end <= self.reserved_to || self.reserve == 0 {
            return Ok(());
        }
        let to = end.max(self.reserved_to.saturating_add(self.reserve));
        match sys::reserve_ahead(&self.file, self.reserved_to, to - self.reserved_to) {
            Ok(true) => self.reserved_to = to,
            // Platforms and file systems that cannot: space is found as frames are
            // written.
            Ok(false) => self.reserve = 0,
            Err(e) => return Err(Error::io("reserve space", e).at(&self.path)),
        }
        Ok(())
    }

    /// Cuts the file back to `len` (only bytes past the committed data, which no reader
    /// looks at while the appending flag is set).
    fn truncate_to(&mut self, len: u64) -> Result<()> {
        sys::set_len(&self.file, len).map_err(io_at("truncate", &self.path))
    }

    /// Makes the frames appended so far visible to readers that open the file from now
    /// on. Durable (the default), the frames are synced before the header names them
    /// and the header after. The header's `size` and last extent change in one write
    /// within the first 512 bytes. Returns the frames committed in all.
    pub fn commit(&mut self) -> Result<u64> {
        if self.pending == 0 {
            return Ok(self.frames());
        }
        if self.durable {
            self.file.sync_data().map_err(io_at("sync", &self.path))?;
        }
        let last = self.dims.len() - 1;
        let mut dims = self.dims.clone();
        dims[last] += self.pending;
        let header = Header::new(self.dtype, &dims)?;
        let bytes = header.encode();
        sys::write_all_at(&self.file, &bytes[SIZE_AT as usize..], SIZE_AT)
            .map_err(io_at("write header", &self.path))?;
        if self.durable {
            self.file.sync_data().map_err(io_at("sync", &self.path))?;
        }
        self.dims = dims;
        self.pending = 0;
        Ok(self.frames())
    }

    /// Commits what is pending and ends the appending: the trailer goes back after the
    /// data, the flag is cleared, unused reserved space is released. Returns the final
    /// header.
    pub fn finish(mut self) -> Result<Header> {
        self.commit()?;
        self.close()?;
        Header::new(self.dtype, &self.dims)
    }

    /// Ends the appending without committing what is pending.
    fn close(&mut self) -> Result<()> {
        self.closed = true;
        let end = self.data_offset() + self.frame_bytes * self.frames();
        if self.pending > 0 {
            self.pending = 0;
            self.truncate_to(end)?;
        }
        let header = Header::new(self.dtype, &self.dims)?;
        let eof = close_file(&self.file, &self.path, &header, &self.trailer, self.durable)?;
        release(&self.file, eof);
        Ok(())
    }
}

impl Drop for Appender {
    fn drop(&mut self) {
        if !self.closed {
            // Errors cannot be reported from here; the flag stays and `ra recover`
            // (or the next appender) finishes the job.
            let _ = self.close();
        }
    }
}

/// Rewrites the flags word alone.
fn write_flags(file: &File, path: &Path, flags: u64) -> Result<()> {
    sys::write_all_at(file, &flags.to_le_bytes(), FLAGS_AT).map_err(io_at("write header", path))
}

/// The end of appending, for the appender and for recovery: `trailer` written after
/// the data of `header` (the file ends there), its NDL shape brought up to date, then
/// the flag cleared, then the sidecar removed; `durable`, each step synced before the
/// next. Returns the file's length.
fn close_file(
    file: &File,
    path: &Path,
    header: &Header,
    trailer: &[u8],
    durable: bool,
) -> Result<u64> {
    let sync = || -> Result<()> {
        if durable {
            file.sync_data().map_err(io_at("sync", path))?;
        }
        Ok(())
    };
    let end = header.data_offset() + header.size();
    let trailer = crate::ndl::with_shape(trailer, header).unwrap_or_else(|| trailer.to_vec());
    if !trailer.is_empty() {
        sys::write_all_at(file, &trailer, end).map_err(io_at("write metadata", path))?;
        sync()?;
    }
    let mut fixed = [0u8; 16];
    sys::read_exact_at(file, &mut fixed, 0).map_err(io_at("read header", path))?;
    let flags = u64::from_le_bytes(fixed[8..].try_into().unwrap_or_default());
    write_flags(file, path, flags & !Flags::APPENDING)?;
    sync()?;
    let sidecar = trailer_sidecar(path);
    match std::fs::remove_file(&sidecar) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::io("remove", e).at(sidecar))
        }
        _ => Ok(end + trailer.len() as u64),
    }
}

/// Gives back the space reserved past the end of the file, `eof` long
/// ([`sys::release`]: the file truncated to its own length).
fn release(file: &File, eof: u64) {
    sys::release(file, eof);
}
