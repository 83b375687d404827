//! [`DataReader`]: a file opened to be read into memory the caller allocates, whole, as
//! selections, or as a batch of scattered selections (a gather).

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::codec;
use crate::dtype::DType;
use crate::error::{io_at, Error, ErrorKind, Result, ResultExt};
use crate::gather::{self, GatherOptions, Target};
use crate::header::{Encoding, Header};
use crate::read::{open_len, read_header_live, read_plain};
use crate::selection::{self, Run, Stride};

/// Runs of a selection at most this far apart are read as one. With 64 reads in
/// flight, a read costs the device about what 16-25 KiB more of a read cost (1/IOPS
/// times bandwidth: 15 µs at 1.5 GB/s on the disk of docs/PERFORMANCE.md); merging
/// across 64 KiB, what it cost with 8 in flight, read sorted batches of 16 KiB
/// samples 10% slower.
pub(crate) const SELECTION_GAP: u64 = 16 << 10;

/// The longest read of a selection: longer runs are cut into reads of this many bytes
/// (the scan's slab), several in flight.
pub(crate) const SELECTION_READ: u64 = 8 << 20;

/// A file opened to be read into memory that the caller allocates (a NumPy array, a
/// pinned buffer): [`header`](Self::header) and [`metadata`](Self::metadata) come
/// first, so the buffer can be made to measure, then
/// [`read_into`](Self::read_into) decodes the data straight into it, or
/// [`read_many_into`](Self::read_many_into) and [`take_into`](Self::take_into) read a
/// batch of scattered pieces of it at the device's queue depth.
///
/// ```no_run
/// let r = rastore::DataReader::open("cube.ra")?;
/// let mut buf = vec![0u8; r.header().nbytes() as usize];
/// r.read_into(&mut buf)?;
/// # Ok::<(), rastore::Error>(())
/// ```
pub struct DataReader {
    path: PathBuf,
    header: Header,
    metadata: Vec<u8>,
    source: Source,
    kept: gather::Kept,
}

/// What becomes of Bool bytes on the way in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bools {
    /// Not Bools.
    No,
    /// Julia Bools: each byte 0 or 1, anything else refused.
    Check,
    /// NumPy's: any nonzero byte is true, made 1.
    Normalize,
}

impl Bools {
    fn apply(self, bytes: &mut [u8], path: &Path) -> Result<()> {
        match self {
            Bools::No => Ok(()),
            Bools::Check => codec::check_bools(bytes, 0).at(path),
            Bools::Normalize => {
                bytes.iter_mut().for_each(|b| *b = u8::from(*b != 0));
                Ok(())
            }
        }
    }
}

/// Where [`DataReader`] takes the data from.
enum Source {
    /// Plain data at `offset` of `file` (`len` bytes long when opened): `unit`-byte
    /// swaps, Bools to check or normalize.
    Plain {
        file: File,
        len: u64,
        offset: u64,
        unit: usize,
        bools: Bools,
    },
    /// Encoded data, decoded when the file was opened.
    Decoded(Vec<u8>),
}

impl DataReader {
    /// Opens `path` and reads its header and trailer. Encoded files (LZ4, LEB128,
    /// BitArrays) are decoded here; plain data is read by [`read_into`](Self::read_into).
    pub fn open(path: impl AsRef<Path>) -> Result<DataReader> {
        let path = path.as_ref();
        let (file, len) = open_len(path)?;
        let (h, len) = read_header_live(&file, len).at(path)?;
        let (header, metadata, source) = match (h.encoding(), h.dtype().swap_unit()) {
            (Encoding::Raw, Some(unit)) => {
                let start = h.trailer_start(len);
                let mut metadata = vec![0u8; (len - start) as usize];
                crate::sys::read_exact_at(&file, &mut metadata, start)
                    .map_err(io_at("read metadata", path))?;
                let header = Header::new(h.dtype(), h.dims()).at(path)?;
                let unit = if h.native_endian() { 1 } else { unit };
                let bools = if h.dtype() == DType::BOOL {
                    Bools::Check
                } else {
                    Bools::No
                };
                let offset = h.data_offset();
                let source = Source::Plain {
                    file,
                    len,
                    offset,
                    unit,
                    bools,
                };
                (header, metadata, source)
            }
            _ => {
                drop(file);
                let raw = crate::read::decoded(path)?;
                (raw.header, raw.metadata, Source::Decoded(raw.data))
            }
        };
        Ok(DataReader {
            path: path.to_path_buf(),
            header,
            metadata,
            source,
            kept: gather::Kept::default(),
        })
    }

    /// A reader of plain data of `header`'s type and dims at `offset` of `file` (named
    /// `path`, `len` bytes long), swapping `unit`-byte scalars (1: none): the data of a
    /// `.npy`, or of an archive's stored member.
    pub(crate) fn plain(
        path: &Path,
        file: File,
        len: u64,
        offset: u64,
        header: Header,
        (unit, bools): (usize, Bools),
    ) -> DataReader {
        DataReader {
            path: path.to_path_buf(),
            header,
            metadata: Vec::new(),
            source: Source::Plain {
                file,
                len,
                offset,
                unit,
                bools,
            },
            kept: gather::Kept::default(),
        }
    }

    /// The header of the data as [`read_into`](Self::read_into) gives it: plain, in
    /// native byte order (a BitArray as Julia Bools, one byte each). Only elements
    /// whose layout is unknown (big-endian user types) keep the big-endian flag.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The metadata trailer.
    pub fn metadata(&self) -> &[u8] {
        &self.metadata
    }

    /// The elements `sel` picks (a [`Stride`] per axis, the first fastest) into `out`,
    /// of exactly their length, as native column-major bytes: a gather of one
    /// selection (see [`read_many_into`](Self::read_many_into)). As
    /// `RemoteRa::read_selection_into` does for objects.
    pub fn read_selection_into(&self, sel: &[Stride], out: &mut [u8]) -> Result<()> {
        self.read_many_into(&[sel], out)
    }

    /// The elements each of `selections` picks (a [`Stride`] per axis, the first
    /// fastest), one after another in `out` (of exactly their length), each as native
    /// column-major bytes. Every selection is checked before anything is read. From
    /// plain data only the byte runs that hold them are read, all the batch's at once:
    /// sorted by where they lie, merged where they overlap, touch or lie at most 16 KiB
    /// apart, long ones cut at 8 MiB, and kept in flight 64 at a time (fewer of a MiB
    /// or more: at most 64 MiB of buffers; io_uring on Linux, threads elsewhere), what
    /// the page cache holds from it and the rest around it
    /// ([`read_many_into_with`](Self::read_many_into_with) says otherwise). This is
    /// the way to read a shuffled batch of samples from a file larger than memory,
    /// where a mapping would fault them in one read-ahead window at a time. The reader
    /// keeps its io_uring ring, its file opened around the cache, and aligned buffers
    /// up to 8 MiB (twice the depth's reads of up to 64 KiB) from one batch to the
    /// next; a forked child makes its own ring, and dropping the reader frees them.
    ///
    /// ```no_run
    /// use rastore::Stride;
    /// let r = rastore::DataReader::open("volume.ra")?; // float32 [1024, 1024, 8192]
    /// // Three [:, j:j+4, k] blocks: 16 KiB each.
    /// let sel = |j, k| [Stride::all(1024), Stride::new(j, 1, 4), Stride::new(k, 1, 1)];
    /// let batch = [sel(7, 4000), sel(900, 12), sel(7, 4000)];
    /// let mut out = vec![0u8; 3 * 16384];
    /// r.read_many_into(&batch, &mut out)?;
    /// # Ok::<(), rastore::Error>(())
    /// ```
    pub fn read_many_into<S: AsRef<[Stride]>>(
        &self,
        selections: &[S],
        out: &mut [u8],
    ) -> Result<()> {
        self.read_many_into_with(selections, out, &GatherOptions::default())
    }

    /// [`read_many_into`](Self::read_many_into) with the reads issued as `options` say.
    pub fn read_many_into_with<S: AsRef<[Stride]>>(
        &self,
        selections: &[S],
        out: &mut [u8],
        options: &GatherOptions,
    ) -> Result<()> {
        let (total, runs) =
            selection::batch(&self.header, selections, self.data_offset()).at(&self.path)?;
        selection::fit(out, total).at(&self.path)?;
        self.gather(runs, out, options)
    }

    /// Whether the page cache holds what `selections` pick, judged by a few of them
    /// spread over the batch (`cachestat`, Linux; elsewhere `false`, and for encoded
    /// files, decoded in memory, `true`). A caller with a mapping of the file (Python's
    /// `rastore.Array`) copies a resident batch from the mapping at memory speed, and
    /// gathers any other.
    pub fn resident<S: AsRef<[Stride]>>(&self, selections: &[S]) -> Result<bool> {
        let Source::Plain { file, len, .. } = &self.source else {
            return Ok(true);
        };
        let (_, runs) =
            selection::batch(&self.header, selections, self.data_offset()).at(&self.path)?;
        let reads = gather::plan(runs, SELECTION_GAP, SELECTION_READ);
        let target = Target {
            file,
            len: *len,
            path: &self.path,
            kept: &self.kept,
        };
        Ok(gather::resident(&target, &reads))
    }

    /// Whole frames (indices of the last axis) into `out`, one after another in the
    /// order given, repeats included: NumPy's `a.take(indices, axis=-1)`, as native
    /// column-major bytes. An index past the end is refused before anything is read.
    /// A gather, as [`read_many_into`](Self::read_many_into) reads it.
    pub fn take_into(&self, indices: &[u64], out: &mut [u8]) -> Result<()> {
        let frame = selection::frames(&self.header, indices).at(&self.path)?;
        selection::fit(out, frame * indices.len() as u64).at(&self.path)?;
        let base = self.data_offset();
        let runs = indices.iter().enumerate().map(|(k, &i)| Run {
            from: base + i * frame,
            to: k * frame as usize,
            len: frame as usize,
        });
        self.gather(runs, out, &GatherOptions::default())
    }

    /// Where the data starts in what [`gather`](Self::gather) reads: the file, or the
    /// decoded bytes.
    fn data_offset(&self) -> u64 {
        match &self.source {
            Source::Plain { offset, .. } => *offset,
            Source::Decoded(_) => 0,
        }
    }

    /// Reads `runs` (their sources from [`data_offset`](Self::data_offset)) into
    /// `out`, then brings them to native order and checks Bools.
    fn gather(
        &self,
        runs: impl Iterator<Item = Run>,
        out: &mut [u8],
        options: &GatherOptions,
    ) -> Result<()> {
        match &self.source {
            Source::Decoded(data) => {
                for r in runs {
                    let from = r.from as usize;
                    out[r.to..r.to + r.len].copy_from_slice(&data[from..from + r.len]);
                }
            }
            Source::Plain {
                file,
                len,
                unit,
                bools,
                ..
            } => {
                let reads = gather::plan(runs, SELECTION_GAP, SELECTION_READ);
                let target = Target {
                    file,
                    len: *len,
                    path: &self.path,
                    kept: &self.kept,
                };
                gather::read_into(&target, &reads, out, options)?;
                codec::swap_bytes(out, *unit);
                bools.apply(out, &self.path)?;
            }
        }
        Ok(())
    }

    /// Reads the data into `buf`, which must be exactly `header().nbytes()` long.
    pub fn read_into(self, buf: &mut [u8]) -> Result<()> {
        let path = &self.path;
        if buf.len() as u64 != self.header.nbytes() {
            return Err(Error::from(ErrorKind::InvalidArgument(format!(
                "a buffer of {} bytes for {} data bytes",
                buf.len(),
                self.header.nbytes()
            )))
            .at(path));
        }
        match self.source {
            Source::Decoded(data) => buf.copy_from_slice(&data),
            Source::Plain {
                file,
                offset,
                unit,
                bools,
                ..
            } => {
                read_plain(&file, path, offset, buf, unit)?;
                bools.apply(buf, path)?;
            }
        }
        Ok(())
    }
}
