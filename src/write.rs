//! Writing a file whole, atomically: any ndarray (in column-major order, whatever
//! its layout) or plain column-major bytes, with the options of [`WriteOptions`]
//! (trailer, LZ4, durability, how an existing file is replaced); and the atomic write
//! every writer of a whole file goes through.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc;

use ndarray::{ArrayBase, ArrayViewD, Data, Dimension};

use crate::codec;
use crate::dtype::Element;
use crate::error::{io_at, Error, ErrorKind, Result, ResultExt};
use crate::header::{Encoding, Flags, Header, FIXED_LEN};
use crate::layout::for_each_fortran_chunk;
use crate::padding::{Padding, ZeroPadding};
use crate::replace::{build_file, Placement};

/// Bytes per piece when a non-Fortran array is reordered on its way to the writer.
const WRITE_CHUNK_BYTES: usize = 4 << 20;

/// Arrays to reorder of at least this many pieces are reordered on a second thread
/// (below it, the thread costs more than the overlap saves).
const PIPELINE_MIN_PIECES: usize = 3;

/// How to write a file: metadata trailer, LZ4 compression, durability.
///
/// ```no_run
/// use rastore::WriteOptions;
/// let a = ndarray::Array2::<f64>::zeros((100, 200));
/// WriteOptions::new().compress(true).durable(true).metadata("---\nunits: m\n").write("a.ra", &a)?;
/// # Ok::<(), rastore::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    metadata: Vec<u8>,
    compress: bool,
    durable: bool,
    split_links: bool,
    keep_existing: bool,
}

impl WriteOptions {
    /// Defaults: no trailer, uncompressed, not synced.
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes to store after the data (kept verbatim by every rastore tool).
    pub fn metadata(mut self, bytes: impl Into<Vec<u8>>) -> Self {
        self.metadata = bytes.into();
        self
    }

    /// Store the data as one LZ4 block, unless that would not be smaller.
    pub fn compress(mut self, yes: bool) -> Self {
        self.compress = yes;
        self
    }

    /// Replace a file that has other hard links: this name gets the new file, the
    /// other names keep the old one. Without it such a file is refused, since the
    /// split would go unnoticed.
    pub fn split_links(mut self, yes: bool) -> Self {
        self.split_links = yes;
        self
    }

    /// Replace an existing file (the default); `false` refuses it with an error, and
    /// the check and the naming are one atomic step.
    pub fn overwrite(mut self, yes: bool) -> Self {
        self.keep_existing = !yes;
        self
    }

    pub(crate) fn placement(&self) -> Placement {
        Placement {
            overwrite: !self.keep_existing,
            durable: self.durable,
            split_links: self.split_links,
        }
    }

    /// Sync the file before the rename and the directory after it, so that a power
    /// loss leaves either the old file or the new one.
    pub fn durable(mut self, yes: bool) -> Self {
        self.durable = yes;
        self
    }

    /// Writes `array` to `path` atomically: the new file is built unnamed (or under a
    /// temporary name) in the same directory and takes the name when complete. A
    /// symbolic link is followed and stays; an existing file's permissions are kept;
    /// a file with other hard links is refused unless [`split_links`](Self::split_links).
    pub fn write<T, S, D>(&self, path: impl AsRef<Path>, array: &ArrayBase<S, D>) -> Result<()>
    where
        T: Element,
        S: Data<Elem = T>,
        D: Dimension,
    {
        let path = path.as_ref();
        let size = (FIXED_LEN + 8 * array.ndim() + self.metadata.len()) as u64
            + (array.len() as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        atomic_write(path, self.placement(), size, |w| self.write_to(w, array)).at(path)
    }

    /// Writes `array` as a RawArray stream to `w`. Only LZ4 compression holds the whole
    /// array in memory; otherwise non-Fortran arrays are reordered in 4 MiB pieces.
    pub fn write_to<T, S, D>(&self, mut w: impl Write, array: &ArrayBase<S, D>) -> Result<()>
    where
        T: Element,
        S: Data<Elem = T>,
        D: Dimension,
    {
        let view = array.view().into_dyn();
        let dims: Vec<u64> = view.shape().iter().map(|&d| d as u64).collect();
        let header = Header::new(T::DTYPE, &dims)?;
        let wr = |e| Error::io("write", e);
        let budget = WRITE_CHUNK_BYTES / std::mem::size_of::<T>().max(1);
        let mut buf: Vec<T> = Vec::new();
        if self.compress {
            let mut all: Vec<u8> = Vec::with_capacity(header.nbytes() as usize);
            for_each_fortran_chunk(view, budget, &mut buf, &mut |c: &[T]| {
                all.extend_from_slice(bytemuck::cast_slice(c));
                Ok::<(), Error>(())
            })?;
            return self.write_bytes_to(w, &header, &all);
        }
        w.write_all(&header.encode()).map_err(wr)?;
        match Padding::of_trailer(&self.metadata, header.dtype()) {
            Some(pad) => write_column_major(&mut ZeroPadding::new(&mut w, &pad), view, budget)?,
            None => write_column_major(&mut w, view, budget)?,
        }
        w.write_all(&self.metadata).map_err(wr)?;
        w.flush().map_err(wr)
    }

    /// Writes plain column-major `data` described by `header` (its dtype, dims and
    /// byte-order flag; `data.len()` must be `header.nbytes()`) to `path` atomically.
    pub fn write_bytes(&self, path: impl AsRef<Path>, header: &Header, data: &[u8]) -> Result<()> {
        self.write_bytes_packed(path.as_ref(), header, data)
            .map(drop)
    }

    /// [`write_bytes`](Self::write_bytes), returning whether the data was stored as an
    /// LZ4 block (false also when compression would not have saved space).
    pub(crate) fn write_bytes_packed(
        &self,
        path: &Path,
        header: &Header,
        data: &[u8],
    ) -> Result<bool> {
        let size = header.data_offset() + data.len() as u64 + self.metadata.len() as u64;
        let mut packed = false;
        atomic_write(path, self.placement(), size, |w| {
            packed = self.write_bytes_counted(w, header, data)?;
            Ok(())
        })
        .at(path)?;
        Ok(packed)
    }

    /// [`write_bytes`](Self::write_bytes) to any writer.
    pub fn write_bytes_to(&self, w: impl Write, header: &Header, data: &[u8]) -> Result<()> {
        self.write_bytes_counted(w, header, data).map(drop)
    }

    /// Writes the file image; returns whether the data went in as an LZ4 block.
    fn write_bytes_counted(&self, mut w: impl Write, header: &Header, data: &[u8]) -> Result<bool> {
        if data.len() as u64 != header.nbytes() || header.encoding() != Encoding::Raw {
            return Err(ErrorKind::InvalidArgument(format!(
                "{} plain data bytes for a header that needs {}",
                data.len(),
                header.nbytes()
            ))
            .into());
        }
        let wr = |e| Error::io("write", e);
        let padding = Padding::of_trailer(&self.metadata, header.dtype());
        let packed = if self.compress {
            let zeroed = padding.as_ref().map(|p| {
                let mut v = data.to_vec();
                p.zero_all(&mut v);
                v
            });
            let plain = zeroed.as_deref().unwrap_or(data);
            Some(codec::lz4_encode(plain)).filter(|p| p.len() < data.len())
        } else {
            None
        };
        let stored_packed = packed.is_some();
        match (packed, &padding) {
            (Some(p), _) => {
                let flags = header.flags().0 | Flags::COMPRESSED;
                let h = header.clone().with_storage(flags, p.len() as u64);
                w.write_all(&h.encode()).map_err(wr)?;
                w.write_all(&p).map_err(wr)?;
            }
            (None, Some(pad)) => {
                w.write_all(&header.encode()).map_err(wr)?;
                ZeroPadding::new(&mut w, pad).write_all(data).map_err(wr)?;
            }
            (None, None) => {
                w.write_all(&header.encode()).map_err(wr)?;
                w.write_all(data).map_err(wr)?;
            }
        }
        w.write_all(&self.metadata).map_err(wr)?;
        w.flush().map_err(wr)?;
        Ok(stored_packed)
    }
}

/// Writes `view`'s elements to `w` in column-major order. An array that must be
/// reordered and spans several pieces of `budget` elements is reordered on a second
/// thread, one piece ahead of this one's writes: on two cores a 64 MiB C-order array
/// then costs about what a Fortran-order one does.
fn write_column_major<T: Element>(
    w: &mut impl Write,
    view: ArrayViewD<'_, T>,
    budget: usize,
) -> Result<()> {
    let wr = |e| Error::io("write", e);
    let fortran = view.view().reversed_axes().is_standard_layout();
    if fortran || view.len() / PIPELINE_MIN_PIECES < budget {
        let mut buf = Vec::new();
        return for_each_fortran_chunk(view, budget, &mut buf, &mut |c: &[T]| {
            w.write_all(bytemuck::cast_slice(c)).map_err(wr)
        });
    }
    let (full_tx, full_rx) = mpsc::sync_channel::<Vec<T>>(1);
    let (empty_tx, empty_rx) = mpsc::channel::<Vec<T>>();
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut buf = Vec::new();
            // A failed send means the writer failed and hung up: stop reordering.
            let _ = for_each_fortran_chunk(view, budget, &mut buf, &mut |c: &[T]| {
                let mut piece = empty_rx.try_recv().unwrap_or_default();
                piece.clear();
                piece.extend_from_slice(c);
                full_tx.send(piece)
            });
        });
        let result = full_rx.iter().try_for_each(|piece| {
            w.write_all(bytemuck::cast_slice(&piece)).map_err(wr)?;
            // The reorderer may have finished: then the piece is simply dropped.
            let _ = empty_tx.send(piece);
            Ok(())
        });
        // Hang up before the scope joins the reorderer, which may wait to send.
        drop(full_rx);
        result
    })
}

/// Writes `array` to `path` atomically with default options.
///
/// The file's dims are the array's logical shape, its bytes column-major, whatever
/// the array's memory layout: reading it back gives the same logical array.
pub fn write<T, S, D>(path: impl AsRef<Path>, array: &ArrayBase<S, D>) -> Result<()>
where
    T: Element,
    S: Data<Elem = T>,
    D: Dimension,
{
    WriteOptions::new().write(path, array)
}

/// Writes `array` as a RawArray stream with default options.
pub fn write_to<T, S, D>(w: impl Write, array: &ArrayBase<S, D>) -> Result<()>
where
    T: Element,
    S: Data<Elem = T>,
    D: Dimension,
{
    WriteOptions::new().write_to(w, array)
}

/// Writes through `fill` into a new file that replaces `path` when complete
/// (FORMAT.md section 8; see [`crate::replace`] for links, permissions and names).
///
/// `size_hint` is the expected file size: the write buffer is no larger (at most
/// 1 MiB), so writing a small file costs no 1 MiB allocation (an mmap and a munmap).
pub(crate) fn atomic_write(
    path: &Path,
    how: Placement,
    size_hint: u64,
    fill: impl FnOnce(&mut BufWriter<&File>) -> Result<()>,
) -> Result<()> {
    build_file(path, how, |new| {
        let mut w = BufWriter::with_capacity(size_hint.clamp(1, 1 << 20) as usize, new.file());
        fill(&mut w)?;
        w.flush().map_err(io_at("write", path))
    })
}
