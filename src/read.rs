//! Reading whole files into memory: any valid file into an owned `ArrayD`
//! (byte-swapped, LZ4, LEB128, Julia Bool and BitArray) or into decoded bytes
//! ([`RawData`]), and a file's header or trailer alone.
//!
//! Reading uses plain large `read` calls, not a mapping: it is the path for files that
//! may change underneath, and the fast one on network file systems where page faults
//! are slow.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use ndarray::{ArrayD, IxDyn, ShapeBuilder};

use crate::codec;
use crate::dtype::{check_type, DType, Element};
use crate::error::{io_at, Error, ErrorKind, Result, ResultExt};
use crate::header::{Encoding, Flags, Header, FIXED_LEN};
use crate::view::shape_usize;

/// Files up to this size are read with a single `read` and decoded from memory.
const SMALL_FILE_BYTES: u64 = 64 << 10;

/// First allocation when the stream's length is unknown; it then doubles as data
/// actually arrives, so a lying header cannot make us allocate much more than is there
/// (at most about three times what was read, during a reallocation, plus this).
const UNTRUSTED_STEP_BYTES: usize = 64 << 10;

/// A file's contents decoded to plain bytes: data in native byte order where the
/// element layout is known (else as stored), uncompressed and unpacked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawData {
    /// The header as read from the file.
    pub header: Header,
    /// The decoded data: `elbyte × Π dims` bytes, or the packed words of a BitArray.
    pub data: Vec<u8>,
    /// Whether `data` is in native byte order (false only for big-endian user types).
    pub native: bool,
    /// The metadata trailer.
    pub metadata: Vec<u8>,
}

/// Opens `path` for reading, with its length.
pub(crate) fn open_len(path: &Path) -> Result<(File, u64)> {
    let f = File::open(path).map_err(io_at("open", path))?;
    let len = f.metadata().map_err(io_at("stat", path))?.len();
    Ok((f, len))
}

/// Reads and validates the header from the start of `r`. `file_len` is the whole
/// length when known; unknown, truncation is found while reading.
pub(crate) fn read_header(r: &mut impl Read, file_len: Option<u64>) -> Result<Header> {
    let mut buf = vec![0u8; FIXED_LEN];
    let got = read_full(r, &mut buf)?;
    buf.truncate(got);
    let len = file_len.unwrap_or(u64::MAX);
    let hlen = Header::required_len(&buf, len)?;
    r.take(hlen - FIXED_LEN as u64)
        .read_to_end(&mut buf)
        .map_err(|e| Error::io("read header", e))?;
    Header::parse_prefix(&buf, len)
}

/// Reads and validates the header of an open file of length `len` with one `pread` of
/// its first 512 bytes (a second read only for headers of over 58 dims, sized by the
/// file's length-checked `ndims`). Zeroing and copying 4 KiB instead cost 2% of an
/// open. Every reader of a header from a `File` goes through here.
pub(crate) fn read_header_at_start(file: &File, len: u64) -> Result<Header> {
    let mut buf = [0u8; 512];
    let want = len.min(buf.len() as u64) as usize;
    let mut got = 0;
    while got < want {
        match crate::sys::read_at(file, &mut buf[got..want], got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("read header", e)),
        }
    }
    match Header::required_len(&buf[..got], len) {
        Ok(h) if h <= got as u64 => Header::parse_prefix(&buf[..got], len),
        Ok(h) => {
            // Rule 3 checked `h` against the file's length: nothing larger is sized.
            let mut whole = vec![0u8; h as usize];
            crate::sys::read_exact_at(file, &mut whole, 0)
                .map_err(|e| Error::io("read header", e))?;
            Header::parse_prefix(&whole, len)
        }
        Err(e) => Err(e),
    }
}

/// Attempts at a header that an appender is updating (docs/FORMAT.md section 9).
const APPEND_RETRIES: u32 = 1000;

/// [`read_header_at_start`] for a file that may be growing under an appender: a header
/// read while the appender rewrote it (size and last dim out of step), or naming data
/// written after `len` was taken, is read again with a fresh length, as long as the
/// file is open for appending or its length moved (an appender that finished in
/// between has cleared the flag, but the file grew). Returns the header and the length
/// it was validated against.
pub(crate) fn read_header_live(file: &File, mut len: u64) -> Result<(Header, u64)> {
    let mut tries = 0;
    loop {
        match read_header_at_start(file, len) {
            Ok(h) => return Ok((h, len)),
            Err(e)
                if tries < APPEND_RETRIES
                    && matches!(
                        e.kind(),
                        ErrorKind::SizeMismatch { .. } | ErrorKind::TruncatedData { .. }
                    ) =>
            {
                let fresh = file.metadata().map_err(|e| Error::io("stat", e))?.len();
                if fresh == len && !appending_on_disk(file) {
                    return Err(e);
                }
                tries += 1;
                std::thread::yield_now();
                len = fresh;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Whether the file's header carries the appending flag (little-endian headers only:
/// nothing else is appended to).
fn appending_on_disk(file: &File) -> bool {
    let mut fixed = [0u8; 16];
    crate::sys::read_exact_at(file, &mut fixed, 0).is_ok()
        && u64::from_le_bytes(fixed[..8].try_into().unwrap_or_default()) == crate::MAGIC
        && u64::from_le_bytes(fixed[8..].try_into().unwrap_or_default()) & Flags::APPENDING != 0
}

/// Like `read_exact`, but returns how many bytes were read before end of input.
pub(crate) fn read_full(r: &mut impl Read, buf: &mut [u8]) -> Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io("read", e)),
        }
    }
    Ok(n)
}

/// Reads exactly `nbytes` into a new `Vec<T>`. When `trusted` (the length was checked
/// against a real file length) it allocates once; otherwise it grows as bytes arrive.
fn read_vec<T: bytemuck::Pod>(
    r: &mut impl Read,
    nbytes: u64,
    trusted: bool,
    data_offset: u64,
) -> Result<Vec<T>> {
    let too_large = || ErrorKind::TooLarge {
        what: "data bytes",
        value: nbytes.into(),
    };
    let n = usize::try_from(nbytes).map_err(|_| too_large())? / std::mem::size_of::<T>();
    let step = if trusted {
        n
    } else {
        n.min(UNTRUSTED_STEP_BYTES / std::mem::size_of::<T>())
    };
    let mut v: Vec<T> = bytemuck::zeroed_vec(step);
    let mut filled = 0;
    loop {
        let got = read_full(r, bytemuck::cast_slice_mut(&mut v[filled..]))?;
        let want = (v.len() - filled) * std::mem::size_of::<T>();
        filled += got / std::mem::size_of::<T>();
        if got < want {
            let actual = data_offset + (filled * std::mem::size_of::<T>()) as u64;
            return Err(ErrorKind::TruncatedData {
                expected: data_offset + nbytes,
                actual,
            }
            .into());
        }
        if filled == n {
            return Ok(v);
        }
        let grow = (n - filled).min(v.len().max(1));
        v.resize(filled + grow, T::zeroed());
    }
}

/// A decoded data segment.
struct Body<T> {
    /// `elbyte × Π dims` bytes' worth of `T`s (for BitArrays: the stored words).
    data: Vec<T>,
    /// Whether `data` is in native byte order.
    native: bool,
    /// The trailer, when finding the data's end meant reading to end of input.
    trailer: Option<Vec<u8>>,
}

/// Reads and decodes the data segment, swapping to native order where the element
/// layout is known.
fn read_body<T: bytemuck::Pod>(
    r: &mut impl Read,
    h: &Header,
    file_len: Option<u64>,
) -> Result<Body<T>> {
    let trusted = file_len.is_some();
    let off = h.data_offset();
    let mut trailer = None;
    let mut data: Vec<T> = match h.encoding() {
        Encoding::Raw | Encoding::Bits => read_vec(r, h.size(), trusted, off)?,
        Encoding::Lz4 => {
            codec::lz4_check_ratio(h.size(), h.nbytes())?;
            let stored: Vec<u8> = read_vec(r, h.size(), trusted, off)?;
            let mut out = zeroed_for::<T>(h.nbytes())?;
            codec::lz4_decode(&stored, bytemuck::cast_slice_mut(&mut out))?;
            out
        }
        Encoding::Lz4OrLeb128 | Encoding::Leb128 => {
            let mut stored = Vec::new();
            r.read_to_end(&mut stored)
                .map_err(|e| Error::io("read", e))?;
            // Both encodings need at least a byte per value: check before allocating.
            if h.count() > stored.len() as u64 {
                return Err(Error::decode(
                    "lz4 or leb128",
                    format!(
                        "{} values need at least {} bytes, {} present",
                        h.count(),
                        h.count(),
                        stored.len()
                    ),
                ));
            }
            let mut out = zeroed_for::<T>(h.nbytes())?;
            match codec::decode_lz4_or_leb128(&stored, h, bytemuck::cast_slice_mut(&mut out))? {
                Encoding::Lz4 => trailer = Some(stored.split_off(h.size() as usize)),
                _ => {
                    return Ok(Body {
                        data: out,
                        native: true,
                        trailer: Some(Vec::new()),
                    })
                }
            }
            out
        }
    };
    let native = if h.native_endian() {
        true
    } else if let Some(unit) = h.dtype().swap_unit() {
        codec::swap_bytes(bytemuck::cast_slice_mut(&mut data), unit);
        true
    } else {
        false
    };
    Ok(Body {
        data,
        native,
        trailer,
    })
}

fn zeroed_for<T: bytemuck::Pod>(nbytes: u64) -> Result<Vec<T>> {
    let n = usize::try_from(nbytes).map_err(|_| ErrorKind::TooLarge {
        what: "data bytes",
        value: nbytes.into(),
    })?;
    Ok(bytemuck::zeroed_vec(n / std::mem::size_of::<T>()))
}

fn into_array<T>(h: &Header, data: Vec<T>) -> Result<ArrayD<T>> {
    let shape = IxDyn(&shape_usize(h.dims())?).f();
    ArrayD::from_shape_vec(shape, data).map_err(|e| {
        ErrorKind::Unsupported(format!("dims {:?} on this platform: {e}", h.dims())).into()
    })
}

pub(crate) fn read_typed<T: Element>(
    r: &mut impl Read,
    file_len: Option<u64>,
) -> Result<ArrayD<T>> {
    let h = read_header(r, file_len)?;
    check_type::<T>(h.dtype())?;
    if h.encoding() == Encoding::Bits {
        return Err(ErrorKind::Unsupported(
            "a BitArray decodes to bool: use rastore::read_bool".into(),
        )
        .into());
    }
    let Body { data, native, .. } = read_body::<T>(r, &h, file_len)?;
    if !native {
        return Err(ErrorKind::Unsupported(format!(
            "cannot byte-swap big-endian {} elements (layout unknown); use rastore::read_raw",
            h.dtype()
        ))
        .into());
    }
    into_array(&h, data)
}

/// Reads a whole file into an owned array, whatever its byte order or encoding.
///
/// ```no_run
/// let a: ndarray::ArrayD<f32> = rastore::read("image.ra")?;
/// # Ok::<(), rastore::Error>(())
/// ```
pub fn read<T: Element>(path: impl AsRef<Path>) -> Result<ArrayD<T>> {
    let path = path.as_ref();
    let (mut f, len) = open_len(path)?;
    if len <= SMALL_FILE_BYTES {
        // One read for header, dims and data, instead of one each.
        let mut all = vec![0u8; len as usize];
        let got = read_full(&mut f, &mut all).at(path)?;
        return read_typed(&mut &all[..got], Some(got as u64)).at(path);
    }
    let (h, _) = read_header_live(&f, len).at(path)?;
    if let (Encoding::Raw, Some(unit)) = (h.encoding(), h.dtype().swap_unit()) {
        check_type::<T>(h.dtype()).at(path)?;
        let mut data = zeroed_for::<T>(h.nbytes()).at(path)?;
        let unit = if h.native_endian() { 1 } else { unit };
        read_plain(
            &f,
            path,
            h.data_offset(),
            bytemuck::cast_slice_mut(&mut data),
            unit,
        )?;
        return into_array(&h, data).at(path);
    }
    read_typed(&mut f, Some(len)).at(path)
}

/// Reads plain data at `offset` of `file` into `buf` with large reads on several
/// threads, as every whole-file pass reads, and swaps `unit`-byte scalars (1: none).
pub(crate) fn read_plain(
    file: &File,
    path: &Path,
    offset: u64,
    buf: &mut [u8],
    unit: usize,
) -> Result<()> {
    let options = crate::scan::ScanOptions::default();
    crate::scan::read_file_into(file, path, offset, buf, &options)?;
    codec::swap_bytes(buf, unit);
    Ok(())
}

/// Reads an array from any reader (a socket, a decompressor, a byte slice). The
/// stream's length is unknown, so memory grows only as data actually arrives.
pub fn read_from<T: Element>(mut r: impl Read) -> Result<ArrayD<T>> {
    read_typed(&mut r, None)
}

fn read_bool_impl(r: &mut impl Read, file_len: Option<u64>) -> Result<ArrayD<bool>> {
    let h = read_header(r, file_len)?;
    let values = if h.encoding() == Encoding::Bits {
        let words = read_body::<u8>(r, &h, file_len)?.data;
        let count = usize::try_from(h.count()).map_err(|_| ErrorKind::TooLarge {
            what: "element count",
            value: h.count().into(),
        })?;
        // read_body swapped the words to native order.
        codec::bits_decode(&words, count, cfg!(target_endian = "big"))?
    } else {
        check_type::<u8>(h.dtype()).map_err(|_| {
            Error::from(ErrorKind::TypeMismatch {
                file: h.dtype(),
                requested: DType::BOOL,
            })
        })?;
        let bytes = read_body::<u8>(r, &h, file_len)?.data;
        codec::check_bools(&bytes, 0)?;
        bytes.into_iter().map(|b| b == 1).collect()
    };
    into_array(&h, values)
}

/// Reads a Julia `Bool` array (one byte per element, validated to be 0 or 1; `uint8`
/// files are accepted too) or a packed `BitArray`.
pub fn read_bool(path: impl AsRef<Path>) -> Result<ArrayD<bool>> {
    let path = path.as_ref();
    let (mut f, len) = open_len(path)?;
    read_bool_impl(&mut f, Some(len)).at(path)
}

/// [`read_bool`] from any reader.
pub fn read_bool_from(mut r: impl Read) -> Result<ArrayD<bool>> {
    read_bool_impl(&mut r, None)
}

fn read_raw_impl(r: &mut impl Read, file_len: Option<u64>) -> Result<RawData> {
    let header = read_header(r, file_len)?;
    let body = read_body::<u8>(r, &header, file_len)?;
    let metadata = match body.trailer {
        Some(t) => t,
        // Open for appending: what follows the data is uncommitted frames.
        None if header.flags().appending() => Vec::new(),
        None => {
            let mut t = Vec::new();
            r.read_to_end(&mut t)
                .map_err(|e| Error::io("read metadata", e))?;
            t
        }
    };
    Ok(RawData {
        header,
        data: body.data,
        native: body.native,
        metadata,
    })
}

/// A file's data decoded to plain native bytes: BitArrays unpacked to Julia Bool bytes,
/// Julia Bools checked to be 0 or 1.
pub fn decoded(path: &Path) -> Result<RawData> {
    decode(read_raw(path)?).at(path)
}

/// [`decoded`] for a file already read whole ([`read_raw_from`](crate::read_raw_from)).
pub fn decode(mut raw: RawData) -> Result<RawData> {
    if raw.header.encoding() == Encoding::Bits {
        // read_raw gave the packed words, swapped to native order.
        let count = usize::try_from(raw.header.count()).map_err(|_| ErrorKind::TooLarge {
            what: "element count",
            value: raw.header.count().into(),
        })?;
        let bools = codec::bits_decode(&raw.data, count, cfg!(target_endian = "big"))?;
        raw.data = bools.into_iter().map(u8::from).collect();
        raw.header = Header::new(DType::BOOL, raw.header.dims())?;
    } else {
        if raw.header.dtype() == DType::BOOL {
            codec::check_bools(&raw.data, 0)?;
        }
        let flags = if raw.native { 0 } else { Flags::BIG_ENDIAN };
        raw.header = Header::new(raw.header.dtype(), raw.header.dims())?
            .with_storage(flags, raw.header.nbytes());
    }
    Ok(raw)
}

/// Reads any valid file, of any element type, into decoded bytes and its trailer.
pub fn read_raw(path: impl AsRef<Path>) -> Result<RawData> {
    let path = path.as_ref();
    let (mut f, len) = open_len(path)?;
    read_raw_impl(&mut f, Some(len)).at(path)
}

/// [`read_raw`] from any reader.
pub fn read_raw_from(mut r: impl Read) -> Result<RawData> {
    read_raw_impl(&mut r, None)
}

/// Reads and validates only the header of `path`; returns it with the file's length.
pub fn read_header_at(path: impl AsRef<Path>) -> Result<(Header, u64)> {
    let path = path.as_ref();
    let (f, len) = open_len(path)?;
    read_header_live(&f, len).at(path)
}

/// Where the trailer of an open file starts (the end of its data segment, or the end
/// of the file while it is open for appending). Only a header that fits both LZ4 and
/// LEB128 (FORMAT.md section 5) needs its data decoded for this.
pub(crate) fn data_end_at(file: &File, h: &Header, len: u64) -> Result<u64> {
    if h.encoding() != Encoding::Lz4OrLeb128 {
        return Ok(h.trailer_start(len));
    }
    let mut stored = vec![0u8; (len - h.data_offset()) as usize];
    crate::sys::read_exact_at(file, &mut stored, h.data_offset())
        .map_err(|e| Error::io("read", e))?;
    let mut out = zeroed_for::<u8>(h.nbytes())?;
    Ok(match codec::decode_lz4_or_leb128(&stored, h, &mut out)? {
        Encoding::Lz4 => h.data_offset() + h.size(),
        _ => len,
    })
}

/// Reads the metadata trailer of `path` (every byte after the data segment).
pub fn read_metadata(path: impl AsRef<Path>) -> Result<Vec<u8>> {
    Ok(read_header_and_metadata(path)?.1)
}

/// Reads and validates the header of `path` and its metadata trailer, with one open.
pub fn read_header_and_metadata(path: impl AsRef<Path>) -> Result<(Header, Vec<u8>)> {
    let path = path.as_ref();
    let (mut f, len) = open_len(path)?;
    let h = read_header_at_start(&f, len).at(path)?;
    let start = data_end_at(&f, &h, len).at(path)?;
    let mut out = Vec::new();
    io::Seek::seek(&mut f, io::SeekFrom::Start(start)).map_err(io_at("seek", path))?;
    f.read_to_end(&mut out)
        .map_err(io_at("read metadata", path))?;
    Ok((h, out))
}

/// The start of the trailer of the open plain file of `h` (`len` bytes), as much of it
/// as an NDL document may hold: enough for its labels and types, and never sized by
/// an untrusted trailer's length.
pub(crate) fn ndl_trailer_of(file: &File, h: &Header, len: u64) -> io::Result<Vec<u8>> {
    let start = h.trailer_start(len);
    let mut trailer = vec![0u8; (len - start).min(crate::ndl::MAX_TRAILER_YAML as u64) as usize];
    crate::sys::read_exact_at(file, &mut trailer, start)?;
    Ok(trailer)
}
