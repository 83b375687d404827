//! What `ra info` says about a `.ra` file or object: its header, its trailer's length
//! and its appending state ([`FileInfo`]).

use std::path::{Path, PathBuf};

use crate::append::{append_state, AppendState};
use crate::error::Result;
use crate::header::{Encoding, Header};

/// A file's header, trailer length and appending state.
#[derive(Debug, Clone)]
pub struct FileInfo {
    /// The path as given.
    pub path: PathBuf,
    /// The validated header.
    pub header: Header,
    /// Bytes of metadata trailer.
    pub trailer_bytes: u64,
    /// The appending state, for a file open for appending (or left so by a crash).
    pub append: Option<AppendState>,
}

/// Reads what `ra info` shows of `path`: the header, checked; the trailer's length;
/// the appending state. Costs a header read, except for a header that fits LZ4 and
/// LEB128 alike, whose data is decoded to find where the trailer starts.
pub fn info(path: impl AsRef<Path>) -> Result<FileInfo> {
    let path = path.as_ref();
    let (header, len) = crate::read_header_at(path)?;
    let append = if header.flags().appending() {
        append_state(path)?
    } else {
        None
    };
    let mut info = FileInfo::of(path, header, len, || crate::read_metadata(path));
    info.append = append;
    Ok(info)
}

impl FileInfo {
    /// What `ra info` says of a file (or object) at `path` with `header` and length
    /// `len`; `metadata` reads the trailer, only for a header that fits LZ4 and LEB128
    /// alike, where decoding is the only way to know where the data ends (data that
    /// decodes as neither is for `verify` to report: no trailer).
    pub fn of(
        path: &Path,
        header: Header,
        len: u64,
        metadata: impl FnOnce() -> Result<Vec<u8>>,
    ) -> FileInfo {
        let trailer_bytes = if header.encoding() == Encoding::Lz4OrLeb128 {
            metadata().map_or(0, |t| t.len() as u64)
        } else {
            len - header.trailer_start(len)
        };
        FileInfo {
            path: path.to_path_buf(),
            header,
            trailer_bytes,
            append: None,
        }
    }

    /// The element type's name: `float32`, `user<12>`, or `bool (BitArray)`.
    pub fn type_name(&self) -> String {
        if self.header.encoding() == Encoding::Bits {
            "bool (BitArray)".into()
        } else {
            self.header.dtype().name()
        }
    }

    /// One JSON object, keys: `path, dtype, eltype, elbyte, dims, count, bytes,
    /// flags {big_endian, compressed, bits, appending}, header_bytes, data_offset,
    /// metadata_bytes`, and `append {frames, uncommitted_bytes, appender_running}` for
    /// a file open for appending.
    pub fn to_json(&self) -> String {
        let h = &self.header;
        let f = h.flags();
        let dims: Vec<String> = h.dims().iter().map(u64::to_string).collect();
        let append = self.append.as_ref().map_or_else(String::new, |s| {
            format!(
                ", \"append\": {{\"frames\": {}, \"uncommitted_bytes\": {}, \"appender_running\": {}}}",
                s.frames, s.uncommitted_bytes, s.appender_running
            )
        });
        format!(
            "{{\"path\": {}, \"dtype\": {}, \"eltype\": {}, \"elbyte\": {}, \"dims\": [{}], \"count\": {}, \"bytes\": {}, \
             \"flags\": {{\"big_endian\": {}, \"compressed\": {}, \"bits\": {}, \"appending\": {}}}, \"header_bytes\": {}, \
             \"data_offset\": {}, \"metadata_bytes\": {}{append}}}",
            crate::json::string(&self.path.to_string_lossy()),
            crate::json::string(&self.type_name()),
            h.dtype().eltype,
            h.dtype().elbyte,
            dims.join(", "),
            h.count(),
            h.size(),
            h.data_big_endian(),
            f.compressed(),
            f.bits(),
            f.appending(),
            h.data_offset(),
            h.data_offset(),
            self.trailer_bytes
        )
    }
}
