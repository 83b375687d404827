//! TIFF images and stacks as RawArrays (docs/formats/tiff.md).
//!
//! Read through the image-rs `tiff` crate: classic TIFF and BigTIFF, either byte
//! order, one or many pages, strips or tiles, uncompressed, LZW, Deflate or PackBits
//! (with the horizontal or floating-point predictor), 8- to 64-bit integers and 16-,
//! 32- and 64-bit floats, one or many samples per pixel, chunky or planar. The IFD
//! walk, the tags and the decoding are the crate's; what rastore adds, reading tags
//! through the crate's tag API, is the shape, the refusals and the in-place layout:
//!
//! - The logical shape is the one `tifffile.imread` shows: a page is `[height, width]`,
//!   `[height, width, samples]` (chunky) or `[samples, height, width]` (planar); many
//!   pages stack first, `[pages, ...]`; a tifffile "shaped" description
//!   (`{"shape": [...]}` on the first page) that holds as many elements gives the shape.
//!   Every page must have the first's shape and type: another is refused, by number.
//! - Nothing is sized from a claim alone: every strip or tile must lie within the file,
//!   and a page must not decode to more bytes than its stored bytes can expand to under
//!   its compression (1:1 raw, 128:1 PackBits, 1032:1 Deflate, 4096:1 LZW), before
//!   anything is allocated for it.
//! - Uncompressed pages whose strips follow one another, page after page, are one raw
//!   C-order run ([`Tiff::layout`]), where tifffile would memory-map the series: they are
//!   read, mapped and served to Zarr readers in place.

pub(crate) mod engine;
mod first_ifd;
mod write;

use std::io::{Read, Seek};
use std::path::Path;

use tiff::decoder::{ChunkType, Decoder, Limits};
use tiff::tags::Tag;
use tiff::TiffError;

use crate::descr::Descr;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result, ResultExt};
use crate::formats::npy::NpyHeader;

pub use write::{check, encode, Layout};

/// The format's name in messages.
const FORMAT: &str = "TIFF";

/// The most tag-value bytes (strip offsets, descriptions) read for one tag.
const TAG_VALUE_LIMIT: u64 = 256 << 20;

/// A malformed field of a TIFF.
fn malformed(field: impl Into<String>, detail: impl Into<String>) -> Error {
    ErrorKind::Malformed {
        format: FORMAT,
        field: field.into(),
        detail: detail.into(),
    }
    .into()
}

/// The `tiff` crate's error about `field`, as rastore's: what the crate does not
/// support is unsupported, anything else malformed.
fn crate_err(field: String) -> impl FnOnce(TiffError) -> Error {
    move |e| match e {
        TiffError::UnsupportedError(u) => {
            ErrorKind::Unsupported(format!("TIFF {field}: {u}")).into()
        }
        TiffError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            malformed(field, "the file ends before it")
        }
        other => malformed(field, other.to_string()),
    }
}

/// How a page's strips or tiles are compressed (the ones rastore reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Stored raw (1).
    None,
    /// LZW (5).
    Lzw,
    /// Deflate, zlib streams (8, and the old 32946).
    Deflate,
    /// PackBits run lengths (32773).
    PackBits,
}

impl Compression {
    /// The compression of TIFF code `code`, or its refusal.
    fn of(code: u64, page: usize) -> Result<Compression> {
        Ok(match code {
            1 => Compression::None,
            5 => Compression::Lzw,
            8 | 32946 => Compression::Deflate,
            32773 => Compression::PackBits,
            other => {
                let name = match other {
                    2..=4 => "CCITT fax",
                    6 | 7 => "JPEG",
                    34887 => "LERC",
                    50000 | 34926 => "Zstandard",
                    34925 => "LZMA",
                    50001 | 34927 => "WebP",
                    33003..=33007 | 34712 => "JPEG 2000",
                    _ => "unknown",
                };
                return Err(ErrorKind::Unsupported(format!(
                    "TIFF compression {other} ({name}) in page {page}: rastore reads \
                     uncompressed, LZW, Deflate and PackBits pages"
                ))
                .into());
            }
        })
    }

    /// The most bytes one stored byte decodes to.
    fn max_ratio(self) -> u64 {
        match self {
            Compression::None => 1,
            Compression::PackBits => 128,
            Compression::Deflate => 1032,
            Compression::Lzw => 4096,
        }
    }
}

/// One page (image file directory) of a TIFF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Pixels across.
    pub width: u64,
    /// Pixels down.
    pub height: u64,
    /// Samples per pixel.
    pub samples: u64,
    /// The type of every sample.
    pub dtype: DType,
    /// Each sample in a plane of its own (PlanarConfiguration 2).
    pub planar: bool,
    /// How its strips or tiles are compressed.
    pub compression: Compression,
    /// Tiles, not strips.
    pub tiled: bool,
    /// The tiles' width and height (the page's, for strips).
    pub tile: (u64, u64),
    /// The Predictor tag: 1 none, 2 horizontal differences, 3 floating point.
    pub predictor: u64,
    /// Where each strip or tile starts in the file.
    pub offsets: Vec<u64>,
    /// The stored bytes of each strip or tile.
    pub counts: Vec<u64>,
}

impl Page {
    /// The page as `tifffile` shows it: `[height, width]`, `[height, width, samples]`,
    /// or `[samples, height, width]` when planar.
    pub fn shape(&self) -> Vec<u64> {
        match (self.samples, self.planar) {
            (1, _) => vec![self.height, self.width],
            (s, true) => vec![s, self.height, self.width],
            (s, false) => vec![self.height, self.width, s],
        }
    }

    /// Its decoded bytes (checked when parsed).
    pub fn nbytes(&self) -> u64 {
        self.width * self.height * self.samples * self.dtype.elbyte
    }

    /// Where its bytes lie raw in one run (first byte, length): uncompressed strips,
    /// each right after the one before, holding exactly the page.
    fn run(&self) -> Option<u64> {
        if self.compression != Compression::None || self.tiled {
            return None;
        }
        let start = *self.offsets.first()?;
        let mut at = start;
        for (&o, &c) in self.offsets.iter().zip(&self.counts) {
            if o != at {
                return None;
            }
            at = at.checked_add(c)?;
        }
        (at - start == self.nbytes()).then_some(start)
    }
}

/// A parsed TIFF: its pages and the array they make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tiff {
    /// Every page, all of one shape and type.
    pub pages: Vec<Page>,
    /// Big-endian (`MM`) samples.
    pub big_endian: bool,
    /// The logical shape, as `tifffile.imread` shows it.
    pub shape: Vec<u64>,
}

impl Tiff {
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.pages[0].dtype
    }

    /// Bytes of the whole array.
    pub fn nbytes(&self) -> u64 {
        self.pages[0].nbytes() * self.pages.len() as u64
    }

    /// Where the array lies raw in the file, as a `.npy` header would say: every page
    /// uncompressed, its strips one after another, each page right after the one
    /// before (where tifffile would memory-map the series). Refused, saying why,
    /// otherwise.
    pub fn layout(&self) -> Result<NpyHeader> {
        let page = &self.pages[0];
        let why = |i: usize, p: &Page| {
            let what = if p.compression != Compression::None {
                format!("{:?}-compressed", p.compression)
            } else if p.tiled {
                "tiled".to_string()
            } else {
                "stored in strips apart from one another".to_string()
            };
            Err(ErrorKind::Unsupported(format!(
                "TIFF page {i} in place: it is {what}, so only an uncompressed TIFF whose \
                 pages are each one run maps; `rastore.read` or `ra convert` it"
            ))
            .into())
        };
        let mut start = None;
        let mut next = None;
        for (i, p) in self.pages.iter().enumerate() {
            let Some(at) = p.run() else {
                return why(i, p);
            };
            if next.is_some_and(|n| n != at) {
                return Err(ErrorKind::Unsupported(format!(
                    "TIFF page {i} in place: it does not follow page {} in the file, so the \
                     pages are no one run; `rastore.read` or `ra convert` it",
                    i - 1
                ))
                .into());
            }
            start.get_or_insert(at);
            next = Some(at + p.nbytes());
        }
        let e = page.dtype.elbyte;
        let order = if e == 1 {
            '|'
        } else if self.big_endian {
            '>'
        } else {
            '<'
        };
        let kind = match page.dtype.eltype {
            1 => 'i',
            2 => 'u',
            _ => 'f',
        };
        Ok(NpyHeader {
            version: (1, 0),
            descr: Descr::Simple {
                order,
                kind,
                count: e,
            },
            fortran_order: false,
            shape: self.shape.clone(),
            data_offset: start.unwrap_or(0),
        })
    }
}

/// The element type of samples of `bits` bits in sample format `format`.
fn dtype_of(format: u64, bits: u64, page: usize) -> Result<DType> {
    Ok(match (format, bits) {
        (1, 8) => DType::U8,
        (1, 16) => DType::U16,
        (1, 32) => DType::U32,
        (1, 64) => DType::U64,
        (2, 8) => DType::I8,
        (2, 16) => DType::I16,
        (2, 32) => DType::I32,
        (2, 64) => DType::I64,
        (3, 16) => DType::F16,
        (3, 32) => DType::F32,
        (3, 64) => DType::F64,
        _ => {
            let kind = match format {
                1 => "unsigned integer",
                2 => "signed integer",
                3 => "float",
                4 => "undefined",
                5 => "complex integer",
                6 => "complex float",
                _ => "unknown",
            };
            return Err(ErrorKind::Unsupported(format!(
                "TIFF page {page} of {bits}-bit {kind} samples (SampleFormat {format}): \
                 rastore reads 8-, 16-, 32- and 64-bit integers and 16-, 32- and 64-bit \
                 floats"
            ))
            .into());
        }
    })
}

/// One value per sample, all the same (rastore reads no mixed samples).
fn uniform(values: Option<Vec<u64>>, default: u64, field: &str, page: usize) -> Result<u64> {
    let values = values.unwrap_or_default();
    let first = values.first().copied().unwrap_or(default);
    if values.iter().any(|&v| v != first) {
        return Err(ErrorKind::Unsupported(format!(
            "TIFF page {page} has samples of different {field} ({values:?}): rastore reads \
             pages whose samples are all of one type"
        ))
        .into());
    }
    Ok(first)
}

/// The page the decoder is on, number `index`, of a file of `len` bytes.
fn page_of<R: Read + Seek>(d: &mut Decoder<R>, index: usize, len: u64) -> Result<Page> {
    let field = |name: &str| format!("page {index} {name}");
    let tag = |d: &mut Decoder<R>, t: Tag, name: &str| {
        d.find_tag_unsigned_vec::<u64>(t)
            .map_err(crate_err(field(name)))
    };
    let (width, height) = d.dimensions().map_err(crate_err(field("ImageWidth")))?;
    let (width, height) = (u64::from(width), u64::from(height));
    let samples = uniform(
        tag(d, Tag::SamplesPerPixel, "SamplesPerPixel")?,
        1,
        "",
        index,
    )?;
    let bits = uniform(
        tag(d, Tag::BitsPerSample, "BitsPerSample")?,
        1,
        "BitsPerSample",
        index,
    )?;
    let format = uniform(
        tag(d, Tag::SampleFormat, "SampleFormat")?,
        1,
        "SampleFormat",
        index,
    )?;
    let dtype = dtype_of(format, bits, index)?;
    let planar = samples > 1
        && tag(d, Tag::PlanarConfiguration, "PlanarConfiguration")?
            .and_then(|v| v.first().copied())
            == Some(2);
    let code = tag(d, Tag::Compression, "Compression")?
        .and_then(|v| v.first().copied())
        .unwrap_or(1);
    let compression = Compression::of(code, index)?;
    let tiled = d.get_chunk_type() == ChunkType::Tile;
    let (off_tag, count_tag, off_name, count_name) = if tiled {
        (
            Tag::TileOffsets,
            Tag::TileByteCounts,
            "TileOffsets",
            "TileByteCounts",
        )
    } else {
        (
            Tag::StripOffsets,
            Tag::StripByteCounts,
            "StripOffsets",
            "StripByteCounts",
        )
    };
    let offsets = tag(d, off_tag, off_name)?.unwrap_or_default();
    let counts = tag(d, count_tag, count_name)?.unwrap_or_default();
    if offsets.len() != counts.len() || offsets.is_empty() {
        return Err(malformed(
            field(count_name),
            format!(
                "{} offsets and {} byte counts: one of each per {}",
                offsets.len(),
                counts.len(),
                if tiled { "tile" } else { "strip" }
            ),
        ));
    }
    for (i, (&o, &c)) in offsets.iter().zip(&counts).enumerate() {
        if o.checked_add(c).is_none_or(|end| end > len) {
            return Err(malformed(
                field(off_name),
                format!(
                    "{} {i} of {c} bytes at offset {o} lies past the end of the {len}-byte file",
                    if tiled { "tile" } else { "strip" }
                ),
            ));
        }
    }
    let nbytes = width
        .checked_mul(height)
        .and_then(|n| n.checked_mul(samples))
        .and_then(|n| n.checked_mul(dtype.elbyte))
        .ok_or_else(|| {
            malformed(
                field("ImageWidth"),
                format!("{width} × {height} pixels of {samples} samples overflow 64 bits"),
            )
        })?;
    let stored = counts.iter().fold(0u64, |a, &c| a.saturating_add(c));
    let ratio = compression.max_ratio();
    if nbytes > stored.saturating_mul(ratio) {
        return Err(malformed(
            field(count_name),
            format!(
                "{width} × {height} pixels of {samples} {dtype} samples need {nbytes} bytes; \
                 the {stored} stored bytes cannot hold them ({compression:?} expands at most \
                 {ratio}:1)"
            ),
        ));
    }
    let (tw, th) = if tiled {
        let one = |v: Option<Vec<u64>>| v.and_then(|v| v.first().copied()).unwrap_or(0);
        (
            one(tag(d, Tag::TileWidth, "TileWidth")?),
            one(tag(d, Tag::TileLength, "TileLength")?),
        )
    } else {
        (width, height)
    };
    if tiled {
        let tile = tw
            .saturating_mul(th)
            .saturating_mul(samples)
            .saturating_mul(dtype.elbyte);
        if tile > nbytes.max(1 << 24) {
            return Err(malformed(
                field("TileWidth"),
                format!("tiles of {tw} × {th} pixels for a {width} × {height} image"),
            ));
        }
    }
    let predictor = tag(d, Tag::Predictor, "Predictor")?
        .and_then(|v| v.first().copied())
        .unwrap_or(1);
    Ok(Page {
        tile: (tw, th),
        predictor,
        width,
        height,
        samples,
        dtype,
        planar,
        compression,
        tiled,
        offsets,
        counts,
    })
}

/// The shape a tifffile "shaped" description (`{"shape": [2, 3, 4]}`) gives, if it is
/// one.
fn described_shape(description: &str) -> Option<Vec<u64>> {
    let rest = description.trim().strip_prefix('{')?;
    let at = rest.find("\"shape\"")?;
    let rest = rest[at + 7..].trim_start().strip_prefix(':')?;
    let rest = rest.trim_start().strip_prefix('[')?;
    let list = &rest[..rest.find(']')?];
    list.split(',')
        .map(|n| n.trim().parse::<u64>().ok())
        .collect()
}

/// The decoder's limits for a file of `len` bytes: tag values no longer than the file
/// (nor than 256 MiB), and the crate's buffers of decoded tag values (which it sizes by
/// a tag's claimed count before reading it) at most 8 times that, or 1 MiB; the image
/// buffers are rastore's, sized by the checks of [`page_of`].
fn limits(len: u64) -> Limits {
    let mut l = Limits::unlimited();
    let tag_bytes = len.min(TAG_VALUE_LIMIT);
    l.ifd_value_size = usize::try_from(tag_bytes).unwrap_or(usize::MAX);
    l.decoding_buffer_size =
        usize::try_from(tag_bytes.saturating_mul(8).clamp(1 << 20, TAG_VALUE_LIMIT))
            .unwrap_or(usize::MAX);
    l
}

/// Parses the TIFF `r` of `len` bytes: every page, checked.
pub fn parse<R: Read + Seek>(r: R, len: u64) -> Result<Tiff> {
    let mut d = decoder(r, len)?;
    let big_endian = d.byte_order() == tiff::tags::ByteOrder::BigEndian;
    let description = d
        .find_tag(Tag::ImageDescription)
        .ok()
        .flatten()
        .and_then(|v| v.into_string().ok());
    let described = description.as_deref().and_then(described_shape);
    // A tifffile shaped series of fewer pages than the file's: `tifffile.imread` gives
    // that series alone, and so does rastore.
    let mut series_pages = None;
    let mut pages: Vec<Page> = Vec::new();
    let mut chunks = 0u64;
    loop {
        let index = pages.len();
        let page = page_of(&mut d, index, len)?;
        if let Some(first) = pages.first() {
            if page.shape() != first.shape() || page.dtype != first.dtype {
                return Err(ErrorKind::Unsupported(format!(
                    "TIFF page {index} is {:?} {}, page 0 {:?} {}: rastore reads a TIFF whose \
                     pages all have one shape and type",
                    page.shape(),
                    page.dtype,
                    first.shape(),
                    first.dtype
                ))
                .into());
            }
        }
        chunks += page.offsets.len() as u64;
        if chunks > len {
            return Err(malformed(
                format!("page {index} StripOffsets"),
                format!("{chunks} strips or tiles in a {len}-byte file"),
            ));
        }
        if index == 0 {
            let per_page = page.nbytes() / page.dtype.elbyte;
            series_pages = described
                .as_ref()
                .and_then(|s| s.iter().try_fold(1u64, |a, &d| a.checked_mul(d)))
                .filter(|&n| per_page > 0 && n > 0 && n % per_page == 0)
                .map(|n| n / per_page);
        }
        pages.push(page);
        if !d.more_images() || series_pages == Some(pages.len() as u64) {
            break;
        }
        d.next_image()
            .map_err(crate_err(format!("IFD {} (the next page)", index + 1)))?;
    }
    let ratio = pages
        .iter()
        .map(|p| p.compression.max_ratio())
        .max()
        .unwrap_or(1);
    let page_shape = pages[0].shape();
    let total = pages[0]
        .nbytes()
        .checked_mul(pages.len() as u64)
        .filter(|&t| t <= len.saturating_mul(ratio))
        .ok_or_else(|| {
            malformed(
                "IFD chain",
                format!(
                    "{} pages of {} bytes cannot be stored in a {len}-byte file",
                    pages.len(),
                    pages[0].nbytes()
                ),
            )
        })?;
    let mut shape = page_shape;
    if pages.len() > 1 {
        shape.insert(0, pages.len() as u64);
    }
    let elements = total / pages[0].dtype.elbyte;
    if let Some(s) = described {
        if !s.is_empty()
            && s.iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .is_some_and(|n| n == elements)
        {
            shape = s;
        }
    }
    Ok(Tiff {
        pages,
        big_endian,
        shape,
    })
}

/// Decodes every page of `tiff` into `out` (exactly [`Tiff::nbytes`]): native byte
/// order, C order (page after page, each as [`Page::shape`] says). Pages are decoded on
/// every core, each thread through a decoder of its own that `open` makes (over the
/// same bytes [`parse`] read).
pub fn decode_pages<R, F>(tiff: &Tiff, open: F, out: &mut [u8]) -> Result<()>
where
    R: Read + Seek,
    F: Fn() -> Result<Decoder<R>> + Sync,
{
    use rayon::prelude::*;
    let n = tiff.pages[0].nbytes() as usize;
    out.par_chunks_mut(n.max(1)).enumerate().try_for_each_init(
        || None,
        |decoder: &mut Option<Decoder<R>>, (i, buf)| {
            let d = match decoder {
                Some(d) => d,
                None => decoder.insert(open()?),
            };
            decode_page(tiff, d, i, buf)
        },
    )
}

/// Decodes page `i` of `tiff` through `d` into `buf`, its C-order bytes.
fn decode_page<R: Read + Seek>(
    tiff: &Tiff,
    d: &mut Decoder<R>,
    i: usize,
    buf: &mut [u8],
) -> Result<()> {
    let field = format!("page {i}");
    d.seek_to_image(i).map_err(crate_err(field.clone()))?;
    if tiff.pages[i].tiled {
        return decode_tiles(&tiff.pages[i], d, buf, &field, tiff.big_endian);
    }
    let layout = d.image_buffer_layout().map_err(crate_err(field.clone()))?;
    if layout.complete_len != buf.len() {
        return Err(malformed(
            field,
            format!(
                "decodes to {} bytes, {} expected",
                layout.complete_len,
                buf.len()
            ),
        ));
    }
    d.read_image_bytes(buf).map_err(crate_err(field))
}

/// A decoder of the TIFF `r` of `len` bytes, with rastore's limits.
fn decoder<R: Read + Seek>(mut r: R, len: u64) -> Result<Decoder<R>> {
    first_ifd::check(&mut r, len)?;
    Ok(Decoder::new(r)
        .map_err(crate_err("header and IFD 0".into()))?
        .with_limits(limits(len)))
}

/// Decodes the tiled page `page`, the one `d` is on, into `out` (its C-order bytes):
/// tile by tile (plane by plane when planar), each placed where it belongs. (The
/// crate's whole-image reading of planar tiles trips over its own layout check.)
fn decode_tiles<R: Read + Seek>(
    page: &Page,
    d: &mut Decoder<R>,
    out: &mut [u8],
    field: &str,
    big_endian: bool,
) -> Result<()> {
    let (tw, th) = (page.tile.0.max(1), page.tile.1.max(1));
    let across = page.width.div_ceil(tw);
    let down = page.height.div_ceil(th);
    let (planes, spp) = if page.planar {
        (page.samples, 1)
    } else {
        (1, page.samples)
    };
    let pixel = spp * page.dtype.elbyte;
    let plane_bytes = page.width * page.height * pixel;
    if planes * across * down != page.offsets.len() as u64 {
        return Err(malformed(
            format!("{field} TileOffsets"),
            format!(
                "{} tiles, {planes} × {down} × {across} expected",
                page.offsets.len()
            ),
        ));
    }
    let mut buf = Vec::new();
    for plane in 0..planes {
        for ty in 0..down {
            for tx in 0..across {
                let index = (plane * down + ty) * across + tx;
                let at = format!("{field} tile {index}");
                let dw = tw.min(page.width - tx * tw);
                let dh = th.min(page.height - ty * th);
                let row = (dw * pixel) as usize;
                let stride = if page.compression == Compression::Lzw && dw < tw {
                    // The crate's LZW reader fails on tiles the image does not fill
                    // across: these are decoded here, whole.
                    buf = lzw_tile(page, d, index as usize, (tw, th, spp), big_endian, &at)?;
                    (tw * pixel) as usize
                } else {
                    let layout = d
                        .image_chunk_buffer_layout(index as u32)
                        .map_err(crate_err(at.clone()))?;
                    buf.resize(layout.len, 0);
                    d.read_chunk_bytes(index as u32, &mut buf)
                        .map_err(crate_err(at.clone()))?;
                    layout.row_stride.map_or(row, |s| s.get())
                };
                for r in 0..dh {
                    let to = (plane * plane_bytes + ((ty * th + r) * page.width + tx * tw) * pixel)
                        as usize;
                    let from = r as usize * stride;
                    let (Some(src), Some(dst)) =
                        (buf.get(from..from + row), out.get_mut(to..to + row))
                    else {
                        return Err(malformed(at, "decodes to fewer bytes than it holds"));
                    };
                    dst.copy_from_slice(src);
                }
            }
        }
    }
    Ok(())
}

/// The LZW tile `index` of `page`, `tw` × `th` pixels of `spp` samples each,
/// decoded whole (padding too) with its predictor undone, in native byte order:
/// `at` names it in errors.
fn lzw_tile<R: Read + Seek>(
    page: &Page,
    d: &mut Decoder<R>,
    index: usize,
    (tw, th, spp): (u64, u64, u64),
    big_endian: bool,
    at: &str,
) -> Result<Vec<u8>> {
    let (offset, count) = (page.offsets[index], page.counts[index]);
    let r = d.inner();
    let mut stored = vec![0u8; count as usize];
    r.seek(std::io::SeekFrom::Start(offset))
        .and_then(|_| r.read_exact(&mut stored))
        .map_err(|e| malformed(at, format!("reading its {count} bytes at {offset}: {e}")))?;
    let e = page.dtype.elbyte as usize;
    let want = (tw * th * spp) as usize * e;
    let mut out = Vec::new();
    let mut decoder = weezl::decode::Decoder::with_tiff_size_switch(weezl::BitOrder::Msb, 8);
    let done = decoder.into_vec(&mut out).decode(&stored);
    if let Err(err) = done.status {
        return Err(malformed(at, format!("LZW: {err}")));
    }
    if out.len() < want {
        return Err(malformed(
            at,
            format!("decodes to {} bytes, a tile is {want}", out.len()),
        ));
    }
    out.truncate(want);
    let row = (tw * spp) as usize * e;
    let spp = spp as usize;
    for r in out.chunks_mut(row) {
        if page.predictor == 3 {
            unshuffle_floats(r, e, spp);
        } else {
            if big_endian != cfg!(target_endian = "big") && e > 1 {
                r.chunks_mut(e).for_each(<[u8]>::reverse);
            }
            if page.predictor == 2 {
                undo_differences(r, e, spp);
            }
        }
    }
    Ok(out)
}

/// Undoes the horizontal predictor on a row of native `e`-byte integers, `spp` per
/// pixel: each sample was stored as its difference from the pixel before's.
fn undo_differences(row: &mut [u8], e: usize, spp: usize) {
    let get = |b: &[u8]| {
        let mut v = [0u8; 8];
        if cfg!(target_endian = "big") {
            v[8 - e..].copy_from_slice(b);
            u64::from_be_bytes(v)
        } else {
            v[..e].copy_from_slice(b);
            u64::from_le_bytes(v)
        }
    };
    for i in spp..row.len() / e {
        let sum =
            get(&row[i * e..(i + 1) * e]).wrapping_add(get(&row[(i - spp) * e..(i - spp + 1) * e]));
        let bytes = if cfg!(target_endian = "big") {
            sum.to_be_bytes()[8 - e..].to_vec()
        } else {
            sum.to_le_bytes()[..e].to_vec()
        };
        row[i * e..(i + 1) * e].copy_from_slice(&bytes);
    }
}

/// Undoes the floating-point predictor on a row of `e`-byte floats, `spp` per pixel:
/// the bytes were differenced, then shuffled most significant first; they come back
/// as native floats.
fn unshuffle_floats(row: &mut [u8], e: usize, spp: usize) {
    for i in spp..row.len() {
        row[i] = row[i].wrapping_add(row[i - spp]);
    }
    let n = row.len() / e;
    let shuffled = row.to_vec();
    for j in 0..n {
        for k in 0..e {
            let byte = shuffled[k * n + j];
            let at = if cfg!(target_endian = "big") {
                k
            } else {
                e - 1 - k
            };
            row[j * e + at] = byte;
        }
    }
}

/// Parses the TIFF file `path`.
pub fn parse_file(path: &Path) -> Result<Tiff> {
    let (f, len) = crate::read::open_len(path)?;
    parse(std::io::BufReader::new(f), len).at(path)
}

/// Decodes the TIFF file `path`, parsed as `tiff`, into `out` (see [`decode_pages`]).
pub fn decode_file(path: &Path, tiff: &Tiff, out: &mut [u8]) -> Result<()> {
    decode_pages(
        tiff,
        || {
            let (f, len) = crate::read::open_len(path)?;
            decoder(std::io::BufReader::new(f), len)
        },
        out,
    )
    .at(path)
}

/// Decodes the TIFF of `bytes`: what it is, and its data in C order, native bytes.
pub fn decode(bytes: &[u8]) -> Result<(Tiff, Vec<u8>)> {
    let len = bytes.len() as u64;
    let tiff = parse(std::io::Cursor::new(bytes), len)?;
    let mut data = vec![0u8; tiff.nbytes() as usize];
    decode_pages(
        &tiff,
        || decoder(std::io::Cursor::new(bytes), len),
        &mut data,
    )?;
    Ok((tiff, data))
}

impl Tiff {
    /// How its pages are stored, for `ra info`: compression, strips or tiles, order.
    pub fn storage(&self) -> String {
        let p = &self.pages[0];
        format!(
            "{} page{}, {}{}, {}, {}-endian",
            self.pages.len(),
            if self.pages.len() == 1 { "" } else { "s" },
            match p.compression {
                Compression::None => "uncompressed".to_string(),
                c => format!("{c:?}"),
            },
            if p.planar { ", planar" } else { "" },
            if p.tiled { "tiles" } else { "strips" },
            if self.big_endian { "big" } else { "little" },
        )
    }

    /// `ra info --json` of the TIFF `path`.
    pub fn json(&self, path: &Path) -> String {
        let dims: Vec<String> = self.shape.iter().map(u64::to_string).collect();
        let offset = self
            .layout()
            .map_or("null".to_string(), |l| l.data_offset.to_string());
        format!(
            "{{\"path\": {}, \"format\": \"tiff\", \"dtype\": {}, \"dims\": [{}], \"count\": {}, \
             \"bytes\": {}, \"pages\": {}, \"storage\": {}, \"data_offset\": {offset}}}",
            crate::json::string(&path.to_string_lossy()),
            crate::json::string(&self.dtype().name()),
            dims.join(", "),
            self.nbytes() / self.dtype().elbyte,
            self.nbytes(),
            self.pages.len(),
            crate::json::string(&self.storage()),
        )
    }

    /// `ra describe` of the TIFF named `file`: an NDL document of its array, with how
    /// it is stored.
    pub fn describe(&self, file: &str) -> Result<String> {
        use crate::ndl::{displayable, document, int, s, storage_mut, to_text};
        use yaml_rust2::Yaml;
        let header = crate::header::Header::new(self.dtype(), &self.shape)?;
        let mut doc = document(Some(file), &header, None, None);
        if let Some(Yaml::Hash(storage)) = storage_mut(&mut doc) {
            storage.insert(s("format"), s("TIFF"));
            storage.insert(
                s("endian"),
                s(if self.big_endian { "big" } else { "little" }),
            );
            storage.insert(s("pages"), int(self.pages.len() as u64));
            storage.insert(s("layout"), s(&self.storage()));
            storage.insert(s("order"), s("row-major"));
            if let Ok(l) = self.layout() {
                storage.insert(s("data_offset"), int(l.data_offset));
            }
        }
        Ok(to_text(&displayable(doc)))
    }
}
