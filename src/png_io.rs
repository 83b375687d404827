//! PNG images as RawArrays (FORMAT.md section 7).
//!
//! 8- and 16-bit images map to uint8 / uint16. Grayscale is dims `[width, height]`;
//! gray+alpha, RGB and RGBA are `[channels, width, height]`, interleaved as PNG stores
//! them, so the conversion is a byte copy (16-bit samples swapped from PNG's big-endian
//! to native). Palette and sub-byte images are expanded to 8 bits. Writing a PNG from
//! any other element type scales min..max to 0..255 in grayscale.

use std::io::{BufRead, Seek, Write};

use crate::dtype::{DType, Kind};
use crate::error::{Error, ErrorKind, Result};
use crate::header::Header;
use crate::values::Value;

fn png_err(e: impl std::fmt::Display) -> Error {
    Error::decode("png", e.to_string())
}

/// A decoded image: element type, dims and native-order bytes in RawArray order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// uint8 or uint16.
    pub dtype: DType,
    /// `[w, h]` or `[c, w, h]`.
    pub dims: Vec<u64>,
    /// The samples, column-major (channel fastest, then x, then y).
    pub data: Vec<u8>,
}

/// Decodes a PNG into RawArray order.
pub fn decode(r: impl BufRead + Seek) -> Result<Image> {
    let mut decoder = png::Decoder::new(r);
    decoder.set_transformations(png::Transformations::EXPAND);
    let mut reader = decoder.read_info().map_err(png_err)?;
    let size = reader
        .output_buffer_size()
        .ok_or_else(|| png_err("image too large"))?;
    let mut data = vec![0u8; size];
    let info = reader.next_frame(&mut data).map_err(png_err)?;
    data.truncate(info.buffer_size());
    let channels = info.color_type.samples() as u64;
    let (w, h) = (u64::from(info.width), u64::from(info.height));
    let dtype = match info.bit_depth {
        png::BitDepth::Sixteen => {
            crate::codec::swap_bytes(&mut data, if cfg!(target_endian = "big") { 1 } else { 2 });
            DType::U16
        }
        _ => DType::U8,
    };
    let dims = if channels == 1 {
        vec![w, h]
    } else {
        vec![channels, w, h]
    };
    Ok(Image { dtype, dims, data })
}

/// Encodes RawArray data (native order, decoded) as a PNG.
pub fn encode(header: &Header, data: &[u8], w: impl Write) -> Result<()> {
    let dims = header.dims();
    let dtype = header.dtype();
    let (channels, width, height) = match *dims {
        [w, h] => (1, w, h),
        [c @ 1..=4, w, h] => (c, w, h),
        _ => {
            return Err(ErrorKind::Unsupported(format!(
                "a PNG needs dims [width, height] or [channels ≤ 4, width, height], not {dims:?}"
            ))
            .into())
        }
    };
    let too_big = |v: u64| {
        u32::try_from(v)
            .map_err(|_| ErrorKind::Unsupported(format!("{v} pixels is too wide for PNG")))
    };
    let (width, height) = (too_big(width)?, too_big(height)?);
    let typed = matches!(dtype, DType::U8 | DType::U16);
    let (color, samples) = if typed {
        let color = match channels {
            1 => png::ColorType::Grayscale,
            2 => png::ColorType::GrayscaleAlpha,
            3 => png::ColorType::Rgb,
            _ => png::ColorType::Rgba,
        };
        let mut bytes = data.to_vec();
        if dtype == DType::U16 && cfg!(target_endian = "little") {
            crate::codec::swap_bytes(&mut bytes, 2);
        }
        (color, bytes)
    } else if channels == 1 && dtype.kind() != Kind::User && dtype.kind() != Kind::Other {
        (png::ColorType::Grayscale, scale_to_u8(dtype, data))
    } else {
        return Err(ErrorKind::Unsupported(format!(
            "a {dtype} image must be 2-D ([width, height]) to be scaled to grayscale"
        ))
        .into());
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

/// Scales every element's magnitude min..max to 0..255; NaN maps to 0.
fn scale_to_u8(dtype: DType, data: &[u8]) -> Vec<u8> {
    let w = dtype.elbyte as usize;
    let mags: Vec<f64> = data
        .chunks_exact(w)
        .map(|b| Value::decode(dtype, b).magnitude().unwrap_or(f64::NAN))
        .collect();
    let (lo, hi) = mags
        .iter()
        .filter(|m| m.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &m| {
            (a.min(m), b.max(m))
        });
    let span = hi - lo;
    mags.iter()
        .map(|&m| {
            if !m.is_finite() || span <= 0.0 || !span.is_finite() {
                0
            } else {
                ((m - lo) / span * 255.0).round() as u8
            }
        })
        .collect()
}
