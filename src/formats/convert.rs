//! Conversions between `.ra`, `.npy` and `.png`, chosen by extension, keeping the
//! logical array (FORMAT.md section 7).
//!
//! Plain conversions stream in bounded memory: `.npy` → `.ra` fills a preallocated
//! output through a mapping, reading a Fortran-order input in pieces or transposing a
//! mapped C-order input slab by slab; `.ra` → `.npy` copies the data in pieces. An LZ4
//! block is one block, so compressing or decompressing holds that one array in memory.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use crate::codec;
use crate::create::CreateOptions;
use crate::dtype::{DType, Kind};
use crate::error::{io_at, Error, ErrorKind, Result, ResultExt};
use crate::formats::ndl;
use crate::formats::npy::{self, Descr, NpyHeader};
use crate::formats::png;
use crate::formats::tiled::{self, Output, Tiling};
use crate::header::{Encoding, Flags, Header};
use crate::layout::transpose_c_to_f;
use crate::mapped::MappedNpy;
use crate::owned::{atomic_write, open_len, read_header_at_start, RawData, WriteOptions};
use crate::padding::Padding;
use crate::replace::{check_folder, refuse_existing, Placement};
use crate::scan::{self, ScanOptions};
use crate::view::shape_usize;
use crate::writeback::WriteBehind;

pub use crate::layout::Progress;

/// Bytes read at once (by a scan's readers) when the data goes straight to the output.
const STREAM_PIECE: usize = 64 << 20;

/// A file format, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.ra`
    Ra,
    /// `.npy`
    Npy,
    /// `.png`
    Png,
    /// `.npz` (input only: an archive of `.npy` members)
    Npz,
}

impl Format {
    /// The format of an input `path` by its contents (a `.ra` named `ct.dat` is a
    /// RawArray); by its extension only when its first bytes are none of the formats
    /// (then the reader of that format says what is wrong).
    pub fn of(path: &Path) -> Result<Format> {
        let mut head = [0u8; 8];
        let mut file = File::open(path).map_err(io_at("open", path))?;
        let n = crate::owned::read_full(&mut file, &mut head).map_err(|e| e.at(path))?;
        if let Some(f) = Self::by_content(&head[..n]) {
            return Ok(f);
        }
        Self::by_extension(path).ok_or_else(|| {
            Error::from(ErrorKind::NotRawArray {
                magic: u64::from_le_bytes(head),
                found: crate::formats::sniff::what(&head[..n]),
            })
            .at(path)
        })
    }

    /// The format whose magic number `head` starts with.
    fn by_content(head: &[u8]) -> Option<Format> {
        let starts = |m: &[u8]| head.starts_with(m);
        if starts(&crate::MAGIC.to_le_bytes()) || starts(&crate::MAGIC.to_be_bytes()) {
            Some(Format::Ra)
        } else if crate::formats::sniff::is_npy(head) {
            Some(Format::Npy)
        } else if starts(b"\x89PNG\r\n\x1a\n") {
            Some(Format::Png)
        } else if starts(b"PK\x03\x04") || starts(b"PK\x05\x06") {
            Some(Format::Npz)
        } else {
            None
        }
    }

    /// The format of an output `path` by its extension (an `.npz` is never one).
    pub fn of_output(path: &Path) -> Result<Format> {
        match Self::by_extension(path) {
            Some(Format::Npz) | None => Err(ErrorKind::InvalidArgument(format!(
                "{}: unknown extension for an output (it is written as .ra, .npy or .png, \
                 by its extension; a file, not standard output)",
                path.display()
            ))
            .into()),
            Some(f) => Ok(f),
        }
    }

    fn by_extension(path: &Path) -> Option<Format> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("ra") => Some(Format::Ra),
            Some("npy") => Some(Format::Npy),
            Some("png") => Some(Format::Png),
            Some("npz") => Some(Format::Npz),
            _ => None,
        }
    }
}

/// How to convert: compression of a `.ra` output, and how the output may replace a
/// file that exists.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    compress: bool,
    nan_gray: Option<u8>,
    overwrite: bool,
    split_links: bool,
    #[cfg(feature = "zarr")]
    zarr: crate::formats::zarr::ZarrOptions,
    #[cfg(feature = "zarr")]
    store_settings: Vec<(String, String)>,
}

impl ConvertOptions {
    /// Defaults: a plain output, and an existing output is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Store a `.ra` output as one LZ4 block (held in memory while compressing), unless
    /// that would not be smaller: then it is stored plain, and
    /// [`convert`] returns [`Converted::stored_raw`].
    pub fn compress(mut self, yes: bool) -> Self {
        self.compress = yes;
        self
    }

    /// The gray level of NaN elements in a PNG output scaled to 8-bit gray; without
    /// it, NaNs are refused (see [`png::encode`]).
    pub fn nan_gray(mut self, gray: Option<u8>) -> Self {
        self.nan_gray = gray;
        self
    }

    /// Replace an existing output (a symbolic link is followed, permissions kept).
    pub fn overwrite(mut self, yes: bool) -> Self {
        self.overwrite = yes;
        self
    }

    /// Replace an output that has other hard links (see
    /// [`WriteOptions::split_links`]).
    pub fn split_links(mut self, yes: bool) -> Self {
        self.split_links = yes;
        self
    }

    /// The chunk shape of a Zarr output (default: whole frames of about 16 MiB).
    #[cfg(feature = "zarr")]
    pub fn chunks(mut self, chunks: Option<Vec<u64>>) -> Self {
        self.zarr.chunks = chunks;
        self
    }

    /// The codec of a Zarr output (with [`compress`](Self::compress) and none named:
    /// zstd).
    #[cfg(feature = "zarr")]
    pub fn zarr_codec(mut self, codec: crate::formats::zarr::Codec) -> Self {
        self.zarr.codec = codec;
        self
    }

    /// object_store settings (`aws_endpoint`, ...) for a Zarr array at `s3://`, over
    /// the AWS environment's (`.ra` objects take theirs from
    /// [`RemoteOptions`](crate::remote::RemoteOptions)).
    #[cfg(feature = "zarr")]
    pub fn store_settings(mut self, settings: Vec<(String, String)>) -> Self {
        self.store_settings = settings;
        self
    }

    /// Whether the output is to be compressed.
    pub fn compresses(&self) -> bool {
        self.compress
    }

    /// Refuses, before any work is done, an `output` whose folder does not exist, and
    /// an existing one unless overwriting.
    pub fn check_output(&self, output: &Path) -> Result<()> {
        check_folder(output)?;
        refuse_existing(output, self.placement())
    }

    fn placement(&self) -> Placement {
        Placement {
            overwrite: self.overwrite,
            durable: false,
            split_links: self.split_links,
        }
    }

    fn create_options(&self) -> CreateOptions {
        CreateOptions::new()
            .overwrite(self.overwrite)
            .split_links(self.split_links)
    }

    fn write_options(&self) -> WriteOptions {
        WriteOptions::new()
            .compress(self.compress)
            .overwrite(self.overwrite)
            .split_links(self.split_links)
    }
}

/// What a conversion did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Converted {
    /// Compression was asked for but would not have saved space: the data is plain.
    pub stored_raw: bool,
}

/// Converts `input` to `output` by their extensions: `.npy` ↔ `.ra`, `.png` ↔ `.ra`,
/// `.png` ↔ `.npy`, `.ra` → `.ra` (compress, else decompress and byte-swap to
/// native), and `.npz` → a folder `output` of one `.ra` per member, named after it.
pub fn convert(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    #[cfg(feature = "zarr")]
    if is_zarr(input) || is_zarr(output) {
        return zarr_convert(input, output, options, progress);
    }
    if Format::of(input)? == Format::Npz {
        return npz_to_dir(input, output, options, progress);
    }
    let formats = (Format::of(input)?, Format::of_output(output)?);
    options.check_output(output)?;
    match formats {
        (Format::Npy, Format::Ra) => npy_to_ra(input, output, options, progress).at(input),
        (Format::Ra, Format::Npy) => ra_to_npy(input, output, options, progress).at(input),
        (Format::Png, Format::Ra) => png_to_ra(input, output, options).at(input),
        (Format::Ra, Format::Png) => ra_to_png(input, output, options).at(input),
        (Format::Ra, Format::Ra) => ra_to_ra(input, output, options, progress).at(input),
        (Format::Png, Format::Npy) => png_to_npy(input, output, options).at(input),
        (Format::Npy, Format::Png) => npy_to_png(input, output, options).at(input),
        (a, b) => Err(ErrorKind::Unsupported(format!(
            "conversion from {a:?} to {b:?}: nothing to convert"
        ))
        .into()),
    }
}

/// Whether `path` names a Zarr array (always false without the `zarr` feature).
pub fn is_zarr(path: &Path) -> bool {
    #[cfg(feature = "zarr")]
    return crate::formats::zarr::is_zarr(path);
    #[cfg(not(feature = "zarr"))]
    {
        let _ = path;
        false
    }
}

/// `.ra` → Zarr, or Zarr → `.ra` (a Zarr array converts to and from `.ra` alone).
#[cfg(feature = "zarr")]
fn zarr_convert(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    use crate::formats::zarr::{self, Codec, Location};
    let at = |p: &Path| Location::of(p).with_settings(options.store_settings.clone());
    let (zin, zout) = (zarr::is_zarr(input), zarr::is_zarr(output));
    let ra = |p: &Path| Format::by_extension(p) == Some(Format::Ra);
    if zin && ra(output) {
        options.check_output(output)?;
        zarr::zarr_to_ra(&at(input), output, &options.create_options(), progress)?;
    } else if zout && ra(input) {
        let mut z = options.zarr.clone();
        z.overwrite = options.overwrite;
        if options.compress && z.codec == Codec::None {
            z.codec = Codec::Zstd(3);
        }
        zarr::ra_to_zarr(input, &at(output), &z, progress)?;
    } else {
        return Err(ErrorKind::Unsupported(format!(
            "{} to {}: a Zarr array converts to and from .ra (convert other formats to .ra first)",
            input.display(),
            output.display()
        ))
        .into());
    }
    Ok(Converted::default())
}

/// Writes a whole `.ra` of plain `data` as `options` say, and reports whether asked-for
/// compression stored it raw.
fn write_ra(
    options: &ConvertOptions,
    write: WriteOptions,
    output: &Path,
    header: &Header,
    data: &[u8],
) -> Result<Converted> {
    let packed = write.write_bytes_packed(output, header, data)?;
    Ok(Converted {
        stored_raw: options.compress && !packed,
    })
}

/// A file's data decoded to plain native bytes: BitArrays unpacked to Julia Bool bytes,
/// Julia Bools checked to be 0 or 1.
pub fn decoded(path: &Path) -> Result<RawData> {
    decode(crate::read_raw(path)?).at(path)
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

fn npy_to_ra(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    let (mut file, len) = open_len(input)?;
    let nh = npy::read_header(&mut file)?;
    let (_, nbytes) = nh.data_len()?;
    let end = nh.data_offset.saturating_add(nbytes);
    if end > len {
        return Err(ErrorKind::TruncatedData {
            expected: end,
            actual: len,
        }
        .into());
    }
    let dtype = nh.descr.dtype()?;
    let header = Header::new(dtype, &nh.shape)?;
    let trailer = if dtype.kind() == Kind::User {
        ndl::descr_trailer(&header, &nh.descr)
    } else {
        Vec::new()
    };
    let swap = match (nh.descr.big_endian(), dtype.swap_unit()) {
        (true, Some(unit)) if !matches!(nh.descr, Descr::Struct(_)) => unit,
        _ => 1,
    };
    let fix = |p: &mut [u8]| {
        codec::swap_bytes(p, swap);
        if dtype == DType::BOOL {
            // NumPy takes any nonzero byte as True; Julia's Bool is 0 or 1.
            p.iter_mut().for_each(|b| *b = u8::from(*b != 0));
        }
    };
    // `out`: the output file and where `dst` starts in it, to write back behind.
    let mut fill = |dst: &mut [u8], out: Option<(&File, u64)>| -> Result<()> {
        if dst.is_empty() {
            progress(0, 0);
            return Ok(());
        }
        if nh.fortran_order || nh.shape.len() <= 1 {
            // In column-major order already: read straight into the output.
            let mut behind = out.map(|(f, at)| WriteBehind::new(f, at, dst.len() as u64));
            let options = ScanOptions::default();
            for (i, piece) in dst.chunks_mut(STREAM_PIECE).enumerate() {
                let at = (i * STREAM_PIECE) as u64;
                scan::read_file_into(&file, input, nh.data_offset + at, piece, &options)?;
                fix(piece);
                let done = at + piece.len() as u64;
                if let Some(b) = &mut behind {
                    b.wrote(done);
                }
                progress(done, nbytes);
            }
            return Ok(());
        }
        let shape = shape_usize(&nh.shape)?;
        let itemsize = nh.descr.itemsize()? as usize;
        if scan::larger_than_cache(nbytes) {
            // Larger than memory: box by box, each byte read once.
            let into = match out {
                Some((file, offset)) => Output::File {
                    file,
                    path: output,
                    offset,
                },
                None => Output::Memory(dst),
            };
            return tiled::reorder(
                (&file, input),
                nh.data_offset,
                &shape,
                itemsize,
                into,
                Tiling::default(),
                &mut |p| {
                    fix(p);
                    Ok(())
                },
                &mut |done| progress(done, nbytes),
            );
        }
        // SAFETY: conversion inputs are read-only for the duration of the call;
        // the README states that `ra convert` must not race a writer of its input.
        let src = unsafe { MappedNpy::open(input) }?;
        transpose_c_to_f(src.data_bytes(), &shape, itemsize, dst, progress)?;
        if swap > 1 || dtype == DType::BOOL {
            fix(dst);
        }
        Ok(())
    };
    if options.compress {
        let mut data = vec![0u8; nbytes as usize];
        fill(&mut data, None)?;
        let write = options.write_options().metadata(trailer);
        return write_ra(options, write, output, &header, &data);
    }
    options
        .create_options()
        .metadata(trailer)
        .create_filled(output, dtype, &nh.shape, |out| {
            let (dst, behind) = out.data_mut_with_writeback();
            fill(dst, Some(behind.file_at()))
        })?;
    Ok(Converted::default())
}

fn ra_to_npy(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    let (file, len) = open_len(input)?;
    let h = read_header_at_start(&file, len)?;
    let descr = if h.dtype().kind() == Kind::User {
        let mut trailer =
            vec![0u8; (len - h.trailer_start(len)).min(ndl::MAX_TRAILER_YAML as u64) as usize];
        crate::sys::read_exact_at(&file, &mut trailer, h.trailer_start(len))
            .map_err(io_at("read metadata", input))?;
        ndl::numpy_descr(&trailer, h.dtype().elbyte).unwrap_or(Descr::Simple {
            order: '|',
            kind: 'V',
            count: h.dtype().elbyte,
        })
    } else if h.is_bool() {
        Descr::for_dtype(DType::BOOL).ok_or_else(|| no_npy_type(DType::BOOL))?
    } else {
        Descr::for_dtype(h.dtype()).ok_or_else(|| no_npy_type(h.dtype()))?
    };
    npy::check_numpy_shape(h.dims(), descr.itemsize()?)?;
    let npy_header = NpyHeader::encode(&descr, true, h.dims());
    let unit = match h.dtype().swap_unit() {
        Some(unit) if !h.native_endian() => unit,
        _ => 1,
    };
    let size = npy_header.len() as u64 + h.nbytes();
    atomic_write(output, options.placement(), size, |w| {
        w.write_all(&npy_header).map_err(io_at("write", output))?;
        if h.encoding() == Encoding::Raw {
            let data = h.data_offset()..h.data_offset() + h.size();
            let bools = h.dtype() == DType::BOOL;
            let how = Pieces {
                unit,
                swap_end: data.end,
                bools,
                padding: Padding::of(&descr)?,
            };
            let file_out = *w.get_ref();
            let at = npy_header.len() as u64;
            copy_pieces(
                input,
                data,
                how,
                (w, output, Some((file_out, at))),
                progress,
            )?;
        } else {
            let mut raw = decoded(input)?;
            if let Some(pad) = Padding::of(&descr)? {
                pad.zero_all(&mut raw.data);
            }
            w.write_all(&raw.data).map_err(io_at("write", output))?;
            progress(raw.data.len() as u64, raw.data.len() as u64);
        }
        Ok(())
    })?;
    Ok(Converted::default())
}

/// What [`copy_pieces`] does to the bytes on their way.
struct Pieces {
    /// Reverse each `unit`-byte element ...
    unit: usize,
    /// ... of those before this offset.
    swap_end: u64,
    /// Check that every byte is a Julia Bool (0 or 1).
    bools: bool,
    /// Zero the padding of structured elements (data bytes only).
    padding: Option<Padding>,
}

/// Copies bytes `range` of `input` to `output`, read by a scan, as `how` says, and
/// reports progress. With `behind`, the file `w` writes to and the offset in it of
/// `range.start`, what is written is written back behind the copy.
fn copy_pieces(
    input: &Path,
    range: std::ops::Range<u64>,
    how: Pieces,
    (w, output, behind): (&mut impl Write, &Path, Option<(&File, u64)>),
    progress: Progress,
) -> Result<()> {
    let (start, total) = (range.start, range.end - range.start);
    let mut behind = behind.map(|(f, at)| WriteBehind::new(f, at, total));
    scan::scan(
        input,
        range,
        how.unit,
        &ScanOptions::default(),
        |offset, buf| {
            let pos = start + offset;
            let swapped = how.swap_end.saturating_sub(pos).min(buf.len() as u64) as usize;
            codec::swap_bytes(&mut buf[..swapped], how.unit);
            if how.bools {
                codec::check_bools(&buf[..swapped], offset)?;
            }
            if let Some(pad) = &how.padding {
                pad.zero(&mut buf[..swapped], offset);
            }
            w.write_all(buf).map_err(io_at("write", output))?;
            let done = offset + buf.len() as u64;
            if let Some(b) = &mut behind {
                b.wrote(done);
            }
            progress(done, total);
            Ok(())
        },
    )
}

/// Removes a file when dropped.
struct Removed<'a>(&'a Path);

impl Drop for Removed<'_> {
    fn drop(&mut self) {
        let _ = fs::remove_file(self.0);
    }
}

/// An `.npz`: to a `.ra` file when it holds one array, else each `NAME.npy` member as
/// `dir/NAME.ra` (the folder made if missing), streamed through a temporary `.npy`.
fn npz_to_dir(
    input: &Path,
    dir: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    let (file, len) = open_len(input)?;
    let members = crate::formats::npz::members(&file, len, input).at(input)?;
    let to_file = match Format::by_extension(dir).ok_or(()) {
        Ok(Format::Ra) if members.len() == 1 => true,
        Ok(_) => {
            let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
            return Err(Error::from(ErrorKind::InvalidArgument(format!(
                "{} holds {} arrays ({}): give a folder as the output, for one NAME.ra each{}",
                input.display(),
                members.len(),
                names.join(", "),
                if members.len() == 1 {
                    "; or a .ra file"
                } else {
                    ""
                }
            )))
            .at(dir));
        }
        Err(_) => false,
    };
    let stem = |name: &str| -> Result<String> {
        match name.strip_suffix(".npy") {
            Some(s) if !s.is_empty() && !s.starts_with('.') && !s.contains(['/', '\\']) => {
                Ok(s.to_string())
            }
            _ => Err(Error::decode(
                "npz",
                format!("member {name:?} is not NAME.npy with a plain NAME"),
            )
            .at(input)),
        }
    };
    let names = members
        .iter()
        .map(|m| stem(&m.name))
        .collect::<Result<Vec<_>>>()?;
    if !to_file {
        check_folder(dir)?;
        if !dir.is_dir() {
            fs::create_dir(dir).map_err(io_at("create folder", dir))?;
        }
    }
    let mut result = Converted::default();
    for (i, (m, name)) in members.iter().zip(&names).enumerate() {
        let out = if to_file {
            dir.to_path_buf()
        } else {
            dir.join(format!("{name}.ra"))
        };
        options.check_output(&out)?;
        let folder = crate::replace::parent_dir(&out);
        let tmp = folder.join(format!(".ra-npz-{:x}-{i}.npy", std::process::id()));
        let _removed = Removed(&tmp);
        let mut w = std::io::BufWriter::new(File::create(&tmp).map_err(io_at("create", &out))?);
        crate::formats::npz::extract(&file, len, m, input, &mut w).at(input)?;
        w.flush().map_err(io_at("write", &out))?;
        drop(w);
        let r = npy_to_ra(&tmp, &out, options, progress)
            .map_err(|e| Error::decode("npz", format!("member {}: {e}", m.name)).at(input))?;
        result.stored_raw |= r.stored_raw;
    }
    Ok(result)
}

fn no_npy_type(d: DType) -> Error {
    ErrorKind::Unsupported(format!("{d} has no NumPy equivalent")).into()
}

fn png_to_ra(input: &Path, output: &Path, options: &ConvertOptions) -> Result<Converted> {
    let img = png::decode_file(input)?;
    let header = Header::new(img.dtype, &img.dims)?;
    write_ra(options, options.write_options(), output, &header, &img.data)
}

/// A PNG as NumPy and Pillow show it: `[height, width(, channels)]`.
fn png_to_npy(input: &Path, output: &Path, options: &ConvertOptions) -> Result<Converted> {
    let img = png::decode_file(input)?;
    let descr = Descr::for_dtype(img.dtype).ok_or_else(|| no_npy_type(img.dtype))?;
    let npy_header = NpyHeader::encode(&descr, true, &img.dims);
    let size = (npy_header.len() + img.data.len()) as u64;
    atomic_write(output, options.placement(), size, |w| {
        w.write_all(&npy_header).map_err(io_at("write", output))?;
        w.write_all(&img.data).map_err(io_at("write", output))
    })?;
    Ok(Converted::default())
}

/// A `.npy` image (2-D, or 3-D with up to 4 channels last) as a PNG.
fn npy_to_png(input: &Path, output: &Path, options: &ConvertOptions) -> Result<Converted> {
    // SAFETY: conversion inputs are read-only for the duration of the call, as above.
    let src = unsafe { MappedNpy::open(input) }?;
    let nh = src.header();
    let dtype = nh.descr.dtype()?;
    let header = Header::new(dtype, &nh.shape)?;
    let mut data = vec![0u8; src.data_bytes().len()];
    if nh.fortran_order || nh.shape.len() <= 1 {
        data.copy_from_slice(src.data_bytes());
    } else {
        let itemsize = nh.descr.itemsize()? as usize;
        transpose_c_to_f(
            src.data_bytes(),
            &shape_usize(&nh.shape)?,
            itemsize,
            &mut data,
            &mut |_, _| (),
        )?;
    }
    if let (true, Some(unit)) = (nh.descr.big_endian(), dtype.swap_unit()) {
        codec::swap_bytes(&mut data, unit);
    }
    atomic_write(output, options.placement(), data.len() as u64, |w| {
        png::encode(&header, &data, options.nan_gray, w)
    })?;
    Ok(Converted::default())
}

fn ra_to_png(input: &Path, output: &Path, options: &ConvertOptions) -> Result<Converted> {
    let raw = decoded(input)?;
    atomic_write(output, options.placement(), raw.data.len() as u64, |w| {
        png::encode(&raw.header, &raw.data, options.nan_gray, w)
    })?;
    Ok(Converted::default())
}

fn ra_to_ra(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    let (file, len) = open_len(input)?;
    let h = read_header_at_start(&file, len)?;
    if let (Encoding::Raw, Some(unit)) = (h.encoding(), h.dtype().swap_unit()) {
        // Plain data (byte-swapped to native), piece by piece, trailer kept.
        let native = Header::new(h.dtype(), h.dims())?;
        let trailer = if h.dtype().kind() == Kind::User || options.compress {
            crate::read_metadata(input)?
        } else {
            Vec::new()
        };
        let how = Pieces {
            unit: if h.native_endian() { 1 } else { unit },
            // Swap data bytes only: the trailer is the user's, copied verbatim.
            swap_end: h.data_end(len),
            bools: h.dtype() == DType::BOOL,
            padding: Padding::of_trailer(&trailer, h.dtype()),
        };
        if options.compress {
            // One LZ4 block: the data is read whole (with progress), then encoded.
            let mut data = Vec::with_capacity(h.size() as usize);
            let range = h.data_offset()..h.data_end(len);
            copy_pieces(input, range, how, (&mut data, output, None), progress)?;
            drop(file);
            let write = options.write_options().metadata(trailer);
            return write_ra(options, write, output, &native, &data);
        }
        // A file open for appending gives its committed frames, and no trailer.
        let end = if h.flags().appending() {
            h.data_end(len)
        } else {
            len
        };
        // `move`: the input is closed before the output takes its name (they may be one
        // file, and Windows cannot replace a file that is open).
        atomic_write(output, options.placement(), end, move |w| {
            let head = native.encode();
            w.write_all(&head).map_err(io_at("write", output))?;
            drop(file);
            let file_out = *w.get_ref();
            let at = Some((file_out, head.len() as u64));
            copy_pieces(input, h.data_offset()..end, how, (w, output, at), progress)
        })?;
        return Ok(Converted::default());
    }
    drop(file);
    let raw = decoded(input)?;
    let write = options.write_options().metadata(raw.metadata);
    write_ra(options, write, output, &raw.header, &raw.data)
}
