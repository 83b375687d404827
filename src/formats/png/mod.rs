//! PNG images as RawArrays (FORMAT.md section 7).
//!
//! 8- and 16-bit images map to uint8 / uint16 and keep the logical image that NumPy
//! and Pillow, MATLAB and Julia show: grayscale is dims `[height, width]`; gray+alpha,
//! RGB and RGBA are `[height, width, channels]`, so pixel (x, y) is `v[[y, x]]` or
//! `v[[y, x, c]]`. PNG stores rows one after another and RawArray the first dim
//! fastest, so both directions transpose. Where Pillow's `np.asarray` gives something
//! else, the image is expanded as Pillow's `convert` would: a palette image to RGB
//! (`convert('RGB')`), or RGBA when the palette has transparency (`convert('RGBA')`);
//! 1-, 2- and 4-bit gray to 8 bits, 0..255 (`convert('L')`; Pillow shows 1-bit images
//! as bool); a gray or RGB image with a transparent colour (`tRNS`) gains an alpha
//! channel (`convert('LA')`, `convert('RGBA')`). Writing a PNG from any other element type scales min..max to 0..255 in
//! grayscale.
//!
//! Decoding sizes nothing from the image header alone: rows are collected as they
//! decode, so a small file claiming a huge image fails when its data runs out, having
//! allocated only what the data held. (Interlaced images decode whole, after a check
//! that deflate's 1032:1 limit lets the file hold that much.)

pub(crate) mod engine;

use std::io::{BufRead, Seek, Write};
use std::path::Path;

use ndarray::{ArrayViewD, IxDyn, ShapeBuilder};

use crate::dtype::{DType, Kind};
use crate::error::{Error, ErrorKind, Result, ResultExt};
use crate::header::Header;
use crate::layout::copy_to_fortran;
use crate::values::Value;

/// The most bytes deflate can expand one compressed byte to.
const DEFLATE_MAX_RATIO: u64 = 1032;

/// The png crate's own allocations (text, ICC profiles, line buffers) at most.
const DECODER_LIMIT_BYTES: u64 = 64 << 20;

fn png_err(e: impl std::fmt::Display) -> Error {
    Error::decode("png", e.to_string())
}

/// A decoded image: element type, dims and native-order bytes in RawArray order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// uint8 or uint16.
    pub dtype: DType,
    /// `[height, width]` or `[height, width, channels]`.
    pub dims: Vec<u64>,
    /// The samples, column-major (y fastest, then x, then channel).
    pub data: Vec<u8>,
}

/// Decodes the PNG file at `path` into RawArray order.
pub fn decode_file(path: &Path) -> Result<Image> {
    let (f, len) = crate::read::open_len(path)?;
    decode(std::io::BufReader::new(f), len).at(path)
}

/// Decodes a PNG of `input_len` bytes into RawArray order.
pub fn decode(r: impl BufRead + Seek, input_len: u64) -> Result<Image> {
    // The decoder sizes its line buffers from the header's width: allow no more than
    // the data could inflate to (twice, for the previous line).
    let limit = input_len
        .saturating_mul(2 * DEFLATE_MAX_RATIO)
        .saturating_add(64 << 10)
        .min(DECODER_LIMIT_BYTES);
    let mut decoder = png::Decoder::new_with_limits(
        r,
        png::Limits {
            bytes: limit as usize,
        },
    );
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().map_err(png_err)?;
    let info = reader.info();
    let (w, h) = (info.width, info.height);
    let interlaced = info.interlaced;
    let raw = (info.raw_bytes() as u64).max(1);
    let (color, depth) = reader.output_color_type();
    let channels = color.samples();
    let line = reader
        .output_line_size(w)
        .ok_or_else(|| png_err("image too large"))?;
    let rows = if interlaced {
        if raw / DEFLATE_MAX_RATIO > input_len {
            return Err(png_err(format!(
                "the header says {w} × {h} pixels ({raw} bytes of image data); a {input_len}-byte file cannot hold that much"
            )));
        }
        let size = reader
            .output_buffer_size()
            .ok_or_else(|| png_err("image too large"))?;
        let mut data = vec![0u8; size];
        let frame = reader.next_frame(&mut data).map_err(png_err)?;
        data.truncate(frame.buffer_size());
        data
    } else {
        let mut data = Vec::new();
        while let Some(row) = reader.next_row().map_err(png_err)? {
            data.extend_from_slice(&row.data()[..line.min(row.data().len())]);
        }
        data
    };
    let expected = line as u64 * u64::from(h);
    if rows.len() as u64 != expected {
        return Err(png_err(format!(
            "decoded {} bytes of rows, {w} × {h} pixels need {expected}",
            rows.len()
        )));
    }
    let mut shape = vec![h as usize, w as usize];
    if channels > 1 {
        shape.push(channels);
    }
    let mut data = vec![0u8; rows.len()];
    let sample = if depth == png::BitDepth::Sixteen {
        2
    } else {
        1
    };
    crate::layout::transpose_c_to_f(&rows, &shape, sample, &mut data, &mut |_, _| ())?;
    let dtype = if sample == 2 {
        // PNG samples are big-endian.
        crate::codec::swap_bytes(&mut data, if cfg!(target_endian = "big") { 1 } else { 2 });
        DType::U16
    } else {
        DType::U8
    };
    Ok(Image {
        dtype,
        dims: shape.iter().map(|&d| d as u64).collect(),
        data,
    })
}

/// Reorders column-major elements of `shape` into row-major order.
fn fortran_to_c<E: bytemuck::Pod>(src: &[u8], shape: &[usize]) -> Result<Vec<u8>> {
    let s: &[E] = bytemuck::try_cast_slice(src).map_err(png_err)?;
    let v = ArrayViewD::from_shape(IxDyn(shape).f(), s).map_err(png_err)?;
    let mut out = vec![0u8; src.len()];
    copy_to_fortran(
        &v.reversed_axes(),
        bytemuck::try_cast_slice_mut(&mut out).map_err(png_err)?,
    );
    Ok(out)
}

/// What a PNG of an array is: its size, and whether its numbers are scaled to gray.
pub struct Shape {
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
    /// Samples per pixel (1 to 4).
    pub channels: u64,
    /// Scaled min..max to 8-bit gray (any number type but `u8` and `u16`).
    pub scaled: bool,
}

/// Whether an array of `dtype` and `dims` can be a PNG, and how (see [`encode`]):
/// checked before any data is read.
pub fn check(dtype: DType, dims: &[u64]) -> Result<Shape> {
    let (height, width, channels) = match *dims {
        [h, w] => (h, w, 1),
        [h, w, c @ 1..=4] => (h, w, c),
        _ => {
            return Err(ErrorKind::Unsupported(format!(
                "a PNG needs dims [height, width] or [height, width, channels ≤ 4], not {dims:?}"
            ))
            .into())
        }
    };
    let too_big = |v: u64| {
        u32::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| {
            ErrorKind::Unsupported(format!("a PNG cannot be {v} pixels wide or high"))
        })
    };
    let (width, height) = (too_big(width)?, too_big(height)?);
    let scaled = match dtype {
        DType::U8 | DType::U16 => false,
        _ if channels == 1 && !matches!(dtype.kind(), Kind::User | Kind::Other) => true,
        _ => {
            return Err(ErrorKind::Unsupported(format!(
                "a {dtype} image must be 2-D ([height, width]) to be scaled to grayscale"
            ))
            .into())
        }
    };
    Ok(Shape {
        height,
        width,
        channels,
        scaled,
    })
}

/// Encodes RawArray data (native order, decoded) as a PNG. `u8` and `u16` data are
/// the pixels; any other 2-D numeric array is scaled min..max (over its finite
/// values) to 8-bit gray, -inf to 0 and +inf to 255; a NaN has no gray level and is
/// refused unless `nan_gray` gives it one.
pub fn encode(header: &Header, data: &[u8], nan_gray: Option<u8>, w: impl Write) -> Result<()> {
    let dtype = header.dtype();
    let Shape {
        height,
        width,
        channels,
        scaled,
    } = check(dtype, header.dims())?;
    let shape = [height as usize, width as usize, channels as usize];
    let (color, samples) = if scaled {
        let scaled = scale_to_u8(dtype, data, nan_gray)?;
        (
            png::ColorType::Grayscale,
            fortran_to_c::<[u8; 1]>(&scaled, &shape)?,
        )
    } else {
        let color = match channels {
            1 => png::ColorType::Grayscale,
            2 => png::ColorType::GrayscaleAlpha,
            3 => png::ColorType::Rgb,
            _ => png::ColorType::Rgba,
        };
        let mut bytes = if dtype == DType::U16 {
            fortran_to_c::<[u8; 2]>(data, &shape)?
        } else {
            fortran_to_c::<[u8; 1]>(data, &shape)?
        };
        if dtype == DType::U16 && cfg!(target_endian = "little") {
            crate::codec::swap_bytes(&mut bytes, 2);
        }
        (color, bytes)
    };
    let mut enc = png::Encoder::new(w, width, height);
    enc.set_color(color);
    enc.set_depth(if dtype == DType::U16 {
        png::BitDepth::Sixteen
    } else {
        png::BitDepth::Eight
    });
    let mut writer = enc.write_header().map_err(png_err)?;
    writer.write_image_data(&samples).map_err(png_err)?;
    writer.finish().map_err(png_err)
}

/// Scales every element's magnitude min..max (of the finite ones) to 0..255, -inf to
/// 0 and +inf to 255; NaN to `nan_gray`, or refused.
fn scale_to_u8(dtype: DType, data: &[u8], nan_gray: Option<u8>) -> Result<Vec<u8>> {
    let w = dtype.elbyte as usize;
    let mags: Vec<f64> = data
        .chunks_exact(w)
        .map(|b| Value::decode(dtype, b).magnitude().unwrap_or(f64::NAN))
        .collect();
    let nans = mags.iter().filter(|m| m.is_nan()).count();
    if nans > 0 && nan_gray.is_none() {
        return Err(ErrorKind::Unsupported(format!(
            "{nans} NaN elements have no gray level in a PNG: give them one \
             (`ra convert --nan-gray 0`, `nan_gray=0` in Python), or replace them first"
        ))
        .into());
    }
    let (lo, hi) = mags
        .iter()
        .filter(|m| m.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &m| {
            (a.min(m), b.max(m))
        });
    let span = hi - lo;
    Ok(mags
        .iter()
        .map(|&m| {
            if m.is_nan() {
                nan_gray.unwrap_or(0)
            } else if m == f64::INFINITY {
                255
            } else if m == f64::NEG_INFINITY || span <= 0.0 || !span.is_finite() {
                0
            } else {
                ((m - lo) / span * 255.0).round() as u8
            }
        })
        .collect())
}
