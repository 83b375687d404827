//! The one error type of the crate.
//!
//! [`Error`] is a small box around an [`ErrorKind`] (what went wrong, with the
//! field and the numbers) and the path of the file it concerns, when there is one.
//! Match on [`Error::kind`]; print with `Display`, which gives one line a user
//! can act on: `data/x.ra: size mismatch: header says 100 bytes, elbyte × Π dims = 96`.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::dtype::types::DType;

/// Shorthand for `Result<T, rastore::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a zero-copy view was refused; the owned read path handles all of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewRefusal {
    /// The data is stored in the other byte order.
    NonNativeEndian,
    /// The data segment is LZ4- or LEB128-encoded.
    Compressed,
    /// The data is a Julia BitArray (packed bits).
    BitPacked,
    /// The data does not start at a multiple of the element's alignment.
    Misaligned {
        /// Required alignment in bytes.
        align: usize,
    },
}

impl fmt::Display for ViewRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NonNativeEndian => f.write_str("the data is not in native byte order"),
            Self::Compressed => f.write_str("the data is compressed"),
            Self::BitPacked => f.write_str("the data is a packed BitArray"),
            Self::Misaligned { align } => {
                write!(f, "the data is not aligned to {align} bytes")
            }
        }
    }
}

/// Everything that can go wrong, with the field and the numbers involved.
///
/// The variants named after FORMAT.md section 4 come in the order the header is
/// validated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// An I/O operation failed.
    #[error("{op}: {source}")]
    Io {
        /// What was being done (`open`, `read`, `rename`, ...).
        op: &'static str,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// Rule 1: the file is shorter than the fixed 48-byte header.
    #[error("truncated: file is {len} bytes, shorter than the 48-byte header")]
    Truncated {
        /// The file's length.
        len: u64,
    },
    /// Rule 2: the first 8 bytes are not the magic in either byte order.
    #[error("not a RawArray file: {}", found_format(*.found, *.magic))]
    NotRawArray {
        /// The first 8 bytes read as a little-endian u64.
        magic: u64,
        /// What the first bytes say the file is instead (`"a PNG image"`), if known.
        found: Option<&'static str>,
    },
    /// Rule 3: the dims do not fit in the file.
    #[error("truncated header: ndims = {ndims} needs {needed} header bytes, file is {len} bytes")]
    TruncatedHeader {
        /// The `ndims` field.
        ndims: u64,
        /// `48 + 8·ndims`, saturated at `u128` range.
        needed: u128,
        /// The file's length (or the bytes available).
        len: u64,
    },
    /// Rule 4: `elbyte` is zero.
    #[error("bad elbyte: elbyte = 0, must be at least 1")]
    ZeroElbyte,
    /// Rule 5: `elbyte × Π dims` overflows u64.
    #[error("shape overflows: elbyte {elbyte} × product of dims {dims:?} does not fit in 64 bits")]
    ShapeOverflow {
        /// The `elbyte` field.
        elbyte: u64,
        /// The dims.
        dims: Vec<u64>,
    },
    /// Rule 6: `size` disagrees with the shape.
    #[error("size mismatch: header says size = {size} bytes, the shape needs {expected}")]
    SizeMismatch {
        /// The `size` field.
        size: u64,
        /// What the shape and flags require.
        expected: u64,
    },
    /// Rule 7: the data segment runs past the end of the file.
    #[error("truncated data: header and data need {expected} bytes, file is {actual} bytes")]
    TruncatedData {
        /// Header length plus `size`.
        expected: u64,
        /// The file's length (or the bytes read).
        actual: u64,
    },
    /// Rule 8: flag bits this reader does not know.
    #[error("unsupported flags: bits {unknown:#x} of flags {flags:#x} are unknown (known: 0x1 big-endian, 0x2 compressed, 0x4 bits, 0x8 appending)")]
    UnsupportedFlags {
        /// The whole `flags` field.
        flags: u64,
        /// The unknown bits.
        unknown: u64,
    },
    /// Rule 8: the BITS flag on anything but Julia BitArray chunks.
    #[error("bits flag (0x4) means a Julia BitArray, stored as eltype 5 with elbyte 8; this header has eltype {eltype}, elbyte {elbyte}")]
    BitsType {
        /// The `eltype` field.
        eltype: u64,
        /// The `elbyte` field.
        elbyte: u64,
    },
    /// Rule 9: the requested Rust type does not match the file.
    #[error("type mismatch: file holds {file}, requested {requested}")]
    TypeMismatch {
        /// The file's element type.
        file: DType,
        /// The type asked for.
        requested: DType,
    },
    /// The requested dimensionality does not match the file's.
    #[error("dimension mismatch: file has {actual} dims, requested {expected}")]
    DimMismatch {
        /// The requested number of dims.
        expected: usize,
        /// The file's `ndims`.
        actual: usize,
    },
    /// A zero-copy view is impossible for this file; use the owned read path.
    #[error("cannot view in place: {reason}; read it for a copy (rastore::read in Rust, rastore.read in Python)")]
    NotViewable {
        /// Why.
        reason: ViewRefusal,
    },
    /// The array does not fit this machine's address space.
    #[error("too large for this platform: {what} = {value}")]
    TooLarge {
        /// Which quantity.
        what: &'static str,
        /// Its value.
        value: u128,
    },
    /// Compressed or packed data failed to decode.
    #[error("{codec} decode failed: {detail}")]
    Decode {
        /// `lz4`, `leb128`, `bool`, ...
        codec: &'static str,
        /// What was wrong, with the numbers.
        detail: String,
    },
    /// A file of another format (NIfTI, TIFF, safetensors, HDF5, ...) whose header or
    /// index is wrong: which field, and what is wrong with it, with the numbers.
    #[error("not a valid {format} file: {field}: {detail}")]
    Malformed {
        /// The format, as users name it: `NIfTI-1`, `TIFF`, `safetensors`.
        format: &'static str,
        /// The field or object at fault: `vox_offset`, `IFD 3 StripOffsets`, a tensor's name.
        field: String,
        /// What is wrong, with the numbers.
        detail: String,
    },
    /// The file is valid but this operation does not support its contents.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The file is open for appending, or was left so by a crash, and this operation
    /// needs it closed.
    #[error("open for appending ({frames} frames committed): {detail}")]
    Appending {
        /// Frames the header names.
        frames: u64,
        /// What was refused, and what to do.
        detail: String,
    },
    /// A request to object storage failed (after its retries).
    #[error("{op}: {detail}")]
    Remote {
        /// What was being done (`get`, `put part 3`, ...).
        op: &'static str,
        /// The store's error.
        detail: String,
    },
    /// Object storage has no object under the key (Python's `FileNotFoundError`).
    #[error("{op}: no such object")]
    NoSuchObject {
        /// What was being done (`get`, `head`, ...).
        op: &'static str,
    },
    /// A caller-supplied argument is invalid.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A folder (or object prefix) taken for a dataset holds no `.ra` file, so it is
    /// no dataset (FORMAT.md §10).
    #[error("a folder with no .ra files, not a dataset")]
    NoDataset,
    /// An output's name has no extension of a format rastore writes, by which it would
    /// know the format to write.
    #[error(
        "unknown extension for an output (it is written as .ra, .npy, .png, .tif or .zarr, by its \
         extension; a file, not standard output)"
    )]
    UnknownOutput,
    /// The output exists, and replacing it was not asked for (`--overwrite` in `ra`,
    /// `overwrite=True` in Python, `.overwrite(true)` in Rust).
    #[error("file exists")]
    Exists,
    /// The output has other hard links, and splitting them was not asked for
    /// (`--split-links` in `ra`, `split_links=True` in Python, `.split_links(true)`).
    #[error(
        "has {links} hard links; replacing it would leave the other names with the old contents"
    )]
    HardLinks {
        /// The file's link count.
        links: u64,
    },
}

/// What `NotRawArray` says of the file it found, and, when it is no format rastore
/// reads, the formats it does.
fn found_format(found: Option<&str>, magic: u64) -> String {
    use crate::sniff::{support, Support, READS};
    match found.map(|what| (what, support(what))) {
        Some((what, Support::Read)) => format!("it starts like {what} (magic {magic:#018x})"),
        Some((what, Support::NotYet)) => format!(
            "it starts like {what} (magic {magic:#018x}), a format rastore does not read yet; \
             it reads {READS}"
        ),
        Some((what, Support::NoArray)) => {
            format!("it starts like {what} (magic {magic:#018x}); rastore reads {READS}")
        }
        None => format!(
            "magic is {magic:#018x}, expected 0x7961727261776172 (\"rawarray\"), and it is no \
             other format rastore reads ({READS})"
        ),
    }
}

/// The crate's error: an [`ErrorKind`] and, where there is one, the path.
pub struct Error(Box<Inner>);

struct Inner {
    kind: ErrorKind,
    path: Option<PathBuf>,
}

impl Error {
    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// The file concerned, if known.
    pub fn path(&self) -> Option<&Path> {
        self.0.path.as_deref()
    }

    /// Attach a path, unless one is already there.
    pub fn at(mut self, path: impl AsRef<Path>) -> Self {
        if self.0.path.is_none() {
            self.0.path = Some(path.as_ref().to_path_buf());
        }
        self
    }

    /// This error naming `to` where it named `from`: for a tool that works through a
    /// file of its own (a scratch download, a temporary output), whose errors must name
    /// the user's path.
    pub fn shown_as(mut self, from: &Path, to: impl AsRef<Path>) -> Self {
        if self.0.path.as_deref() == Some(from) {
            self.0.path = Some(to.as_ref().to_path_buf());
        }
        self
    }

    pub(crate) fn io(op: &'static str, source: io::Error) -> Self {
        ErrorKind::Io { op, source }.into()
    }

    pub(crate) fn decode(codec: &'static str, detail: impl Into<String>) -> Self {
        ErrorKind::Decode {
            codec,
            detail: detail.into(),
        }
        .into()
    }
}

impl From<ErrorKind> for Error {
    fn from(kind: ErrorKind) -> Self {
        Error(Box::new(Inner { kind, path: None }))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0.path {
            Some(p) => write!(f, "{}: {}", p.display(), self.0.kind),
            None => write!(f, "{}", self.0.kind),
        }
    }
}

/// The one-line message, as `Display`: what `fn main() -> Result<(), rastore::Error>`
/// prints. Match on [`Error::kind`] for the structure.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.0.kind)
    }
}

/// Extension to attach a path to any `Result<T, Error>`.
pub(crate) trait ResultExt<T> {
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> ResultExt<T> for Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|e| e.at(path))
    }
}

/// Map an `io::Error` into ours, naming the operation and the path.
pub(crate) fn io_at<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Error + 'a {
    move |e| Error::io(op, e).at(path)
}
