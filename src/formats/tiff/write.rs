//! Writing a TIFF (in safe Rust, not through the `tiff` crate's encoder, whose
//! typed colour types hold no signed or multi-sample integers): the array as
//! `tifffile.imwrite` stores the same C-order NumPy array, so that `tifffile.imread`
//! gives it back identically.
//!
//! - The last two axes are each page's `[height, width]`, and every leading axis
//!   stacks pages; but a last axis of 3 or 4 (of an array of 3 or more axes) is RGB or
//!   RGBA, chunky: `[..., height, width, 3|4]`, as tifffile stores it.
//! - The first page carries tifffile's "shaped" description, `{"shape": [...]}`, so
//!   that tifffile gives back every axis, not only `[pages, height, width]`.
//! - The samples are the machine's byte order; the data of all pages comes first, in
//!   one C-order run, then the IFDs: uncompressed, the file maps in place as tifffile
//!   memory-maps it. With Deflate, strips of about 1 MiB are compressed on every core.
//! - BigTIFF when the file would pass 4 GiB (what 32-bit offsets reach).

use std::io::Write;

use rayon::prelude::*;

use crate::dtype::DType;
use crate::error::{ErrorKind, Result};

/// TIFF field types.
const SHORT: u16 = 3;
const LONG: u16 = 4;
const ASCII: u16 = 2;
const LONG8: u16 = 16;

/// Raw bytes per compressed strip, about.
const STRIP_BYTES: u64 = 1 << 20;

/// How an array lies in a TIFF's pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Pages.
    pub pages: u64,
    /// Rows of each.
    pub height: u64,
    /// Columns of each.
    pub width: u64,
    /// Samples per pixel: 1, or 3 (RGB) or 4 (RGBA).
    pub samples: u64,
}

/// Whether an array of `dtype` and `dims` can be a TIFF, and how it lies in pages
/// (checked before any data is read).
pub fn check(dtype: DType, dims: &[u64]) -> Result<Layout> {
    let n = dims.len();
    if n < 2 {
        return Err(ErrorKind::Unsupported(format!(
            "a TIFF needs at least 2 dims ([height, width]), not {dims:?}"
        ))
        .into());
    }
    if dims.contains(&0) {
        return Err(ErrorKind::Unsupported(format!(
            "a TIFF cannot hold an empty array (dims {dims:?})"
        ))
        .into());
    }
    if sample_format(dtype).is_none() {
        return Err(ErrorKind::Unsupported(format!(
            "{dtype} in a TIFF: rastore writes 8- to 64-bit integers and 16-, 32- and 64-bit \
             floats"
        ))
        .into());
    }
    let rgb = n >= 3 && matches!(dims[n - 1], 3 | 4);
    let (lead, height, width, samples) = if rgb {
        (&dims[..n - 3], dims[n - 3], dims[n - 2], dims[n - 1])
    } else {
        (&dims[..n - 2], dims[n - 2], dims[n - 1], 1)
    };
    for v in [height, width] {
        if v > u64::from(u32::MAX) {
            return Err(ErrorKind::Unsupported(format!(
                "a TIFF page cannot be {v} pixels wide or high"
            ))
            .into());
        }
    }
    let pages = lead.iter().product();
    Ok(Layout {
        pages,
        height,
        width,
        samples,
    })
}

/// The TIFF SampleFormat of `dtype` (1 unsigned, 2 signed, 3 float), if it has one.
fn sample_format(dtype: DType) -> Option<u16> {
    match dtype {
        DType::U8 | DType::U16 | DType::U32 | DType::U64 => Some(1),
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => Some(2),
        DType::F16 | DType::F32 | DType::F64 => Some(3),
        _ => None,
    }
}

/// One IFD entry: tag, type, count, its value's bytes (machine order).
struct Entry {
    tag: u16,
    kind: u16,
    count: u64,
    value: Vec<u8>,
}

fn shorts(tag: u16, v: &[u16]) -> Entry {
    Entry {
        tag,
        kind: SHORT,
        count: v.len() as u64,
        value: v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
    }
}

fn long(tag: u16, v: u32) -> Entry {
    Entry {
        tag,
        kind: LONG,
        count: 1,
        value: v.to_ne_bytes().to_vec(),
    }
}

/// Offsets or byte counts: LONG, or LONG8 in a BigTIFF.
fn offsets(tag: u16, v: &[u64], big: bool) -> Entry {
    let value = if big {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    } else {
        v.iter().flat_map(|&x| (x as u32).to_ne_bytes()).collect()
    };
    Entry {
        tag,
        kind: if big { LONG8 } else { LONG },
        count: v.len() as u64,
        value,
    }
}

/// Bytes of an IFD of `entries` with their out-of-line values.
fn ifd_len(entries: &[Entry], big: bool) -> u64 {
    let (head, entry, inline, next) = if big { (8, 20, 8, 8) } else { (2, 12, 4, 4) };
    let values: u64 = entries
        .iter()
        .filter(|e| e.value.len() > inline)
        .map(|e| (e.value.len() as u64).next_multiple_of(2))
        .sum();
    head + entry * entries.len() as u64 + next + values
}

/// The IFD of `entries` (sorted by tag) at offset `at`, pointing to `next`.
fn ifd_bytes(entries: &[Entry], at: u64, next: u64, big: bool) -> Vec<u8> {
    let (head, entry, inline) = if big { (8, 20, 8) } else { (2, 12, 4) };
    let mut out = Vec::new();
    let mut values = Vec::new();
    let mut value_at = at + head + entry * entries.len() as u64 + if big { 8 } else { 4 };
    let word = |out: &mut Vec<u8>, v: u64| {
        if big {
            out.extend_from_slice(&v.to_ne_bytes());
        } else {
            out.extend_from_slice(&(v as u32).to_ne_bytes());
        }
    };
    if big {
        out.extend_from_slice(&(entries.len() as u64).to_ne_bytes());
    } else {
        out.extend_from_slice(&(entries.len() as u16).to_ne_bytes());
    }
    for e in entries {
        out.extend_from_slice(&e.tag.to_ne_bytes());
        out.extend_from_slice(&e.kind.to_ne_bytes());
        word(&mut out, e.count);
        if e.value.len() <= inline {
            let mut v = e.value.clone();
            v.resize(inline, 0);
            out.extend_from_slice(&v);
        } else {
            word(&mut out, value_at);
            values.extend_from_slice(&e.value);
            if e.value.len() % 2 == 1 {
                values.push(0);
            }
            value_at += (e.value.len() as u64).next_multiple_of(2);
        }
    }
    word(&mut out, next);
    out.extend_from_slice(&values);
    out
}

/// The entries of page `page` of `layout`.
#[allow(clippy::too_many_arguments)]
fn entries(
    layout: &Layout,
    dtype: DType,
    page: u64,
    description: &[u8],
    rows_per_strip: u64,
    strip_offsets: &[u64],
    strip_counts: &[u64],
    deflate: bool,
    big: bool,
) -> Vec<Entry> {
    let s = layout.samples as usize;
    let bits = (dtype.elbyte * 8) as u16;
    let mut e = vec![
        long(256, layout.width as u32),
        long(257, layout.height as u32),
        shorts(258, &vec![bits; s]),
        shorts(259, &[if deflate { 8 } else { 1 }]),
        shorts(262, &[if s == 1 { 1 } else { 2 }]),
    ];
    if page == 0 {
        e.push(Entry {
            tag: 270,
            kind: ASCII,
            count: description.len() as u64,
            value: description.to_vec(),
        });
    }
    e.push(offsets(273, strip_offsets, big));
    e.push(shorts(277, &[s as u16]));
    e.push(long(278, rows_per_strip as u32));
    e.push(offsets(279, strip_counts, big));
    e.push(shorts(284, &[1]));
    if s == 4 {
        e.push(shorts(338, &[2]));
    }
    e.push(shorts(339, &vec![sample_format(dtype).unwrap_or(1); s]));
    e
}

/// Compresses `raw` as one zlib stream (TIFF Deflate).
fn deflate(raw: &[u8]) -> Result<Vec<u8>> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::new(6));
    z.write_all(raw)
        .and_then(|_| z.finish())
        .map_err(|e| crate::error::Error::decode("deflate", e.to_string()))
}

/// Encodes `data`, the C-order native bytes of an array of `dtype` and `dims`, as a
/// TIFF into `w` (see the module's notes); Deflate-compressed when `compress`.
pub fn encode(
    dtype: DType,
    dims: &[u64],
    data: &[u8],
    compress: bool,
    w: impl Write,
) -> Result<()> {
    encode_as(dtype, dims, data, compress, None, w)
}

/// [`encode`], BigTIFF when `big` says so, else when the file needs it.
pub(crate) fn encode_as(
    dtype: DType,
    dims: &[u64],
    data: &[u8],
    compress: bool,
    big: Option<bool>,
    mut w: impl Write,
) -> Result<()> {
    let layout = check(dtype, dims)?;
    let row = layout.width * layout.samples * dtype.elbyte;
    let page_bytes = row * layout.height;
    if data.len() as u64 != page_bytes * layout.pages {
        return Err(ErrorKind::InvalidArgument(format!(
            "{} bytes for a TIFF of {dims:?} {dtype}",
            data.len()
        ))
        .into());
    }
    let rows_per_strip = if compress {
        (STRIP_BYTES / row).clamp(1, layout.height)
    } else {
        layout.height
    };
    let strip_bytes = (rows_per_strip * row) as usize;
    let strips_per_page = layout.height.div_ceil(rows_per_strip) as usize;
    let compressed: Option<Vec<Vec<u8>>> = if compress {
        Some(
            data.par_chunks(page_bytes as usize)
                .flat_map_iter(|page| page.chunks(strip_bytes))
                .map(deflate)
                .collect::<Result<_>>()?,
        )
    } else {
        None
    };
    let counts: Vec<u64> = match &compressed {
        Some(c) => c.iter().map(|s| s.len() as u64).collect(),
        None => (0..layout.pages)
            .flat_map(|_| {
                (0..strips_per_page as u64)
                    .map(|k| (page_bytes - k * strip_bytes as u64).min(strip_bytes as u64))
            })
            .collect(),
    };
    let stored: u64 = counts.iter().sum();
    let mut description = format!(
        "{{\"shape\": [{}]}}",
        dims.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
    .into_bytes();
    description.push(0);
    let ifds_len = |big: bool| -> u64 {
        (0..layout.pages)
            .map(|p| {
                let zeros = vec![0u64; strips_per_page];
                ifd_len(
                    &entries(
                        &layout,
                        dtype,
                        p,
                        &description,
                        rows_per_strip,
                        &zeros,
                        &zeros,
                        compress,
                        big,
                    ),
                    big,
                )
                .next_multiple_of(8)
            })
            .sum()
    };
    let classic_len = 8 + stored.next_multiple_of(8) + ifds_len(false);
    let big = big.unwrap_or(classic_len > u64::from(u32::MAX));
    let header_len: u64 = if big { 16 } else { 8 };
    let data_end = header_len + stored;
    let first_ifd = data_end.next_multiple_of(8);
    let io = |e: std::io::Error| crate::error::Error::io("write", e);
    let order: &[u8; 2] = if cfg!(target_endian = "big") {
        b"MM"
    } else {
        b"II"
    };
    w.write_all(order).map_err(io)?;
    if big {
        w.write_all(&43u16.to_ne_bytes()).map_err(io)?;
        w.write_all(&8u16.to_ne_bytes()).map_err(io)?;
        w.write_all(&0u16.to_ne_bytes()).map_err(io)?;
        w.write_all(&first_ifd.to_ne_bytes()).map_err(io)?;
    } else {
        w.write_all(&42u16.to_ne_bytes()).map_err(io)?;
        w.write_all(&(first_ifd as u32).to_ne_bytes()).map_err(io)?;
    }
    match &compressed {
        Some(c) => {
            for s in c {
                w.write_all(s).map_err(io)?;
            }
        }
        None => w.write_all(data).map_err(io)?,
    }
    w.write_all(&vec![0u8; (first_ifd - data_end) as usize])
        .map_err(io)?;
    let mut at = first_ifd;
    let mut strip_at = header_len;
    for p in 0..layout.pages {
        let k = p as usize * strips_per_page;
        let page_counts = &counts[k..k + strips_per_page];
        let page_offsets: Vec<u64> = page_counts
            .iter()
            .scan(strip_at, |o, &c| {
                let this = *o;
                *o += c;
                Some(this)
            })
            .collect();
        strip_at += page_counts.iter().sum::<u64>();
        let e = entries(
            &layout,
            dtype,
            p,
            &description,
            rows_per_strip,
            &page_offsets,
            page_counts,
            compress,
            big,
        );
        let len = ifd_len(&e, big).next_multiple_of(8);
        let next = if p + 1 == layout.pages { 0 } else { at + len };
        let mut bytes = ifd_bytes(&e, at, next, big);
        bytes.resize(len as usize, 0);
        w.write_all(&bytes).map_err(io)?;
        at += len;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `dims` of u16 as a TIFF (BigTIFF when `big`) and reads it back.
    fn round_trip(dims: &[u64], compress: bool, big: bool) {
        let n: u64 = dims.iter().product();
        let data: Vec<u8> = (0..n as u16).flat_map(|v| v.to_ne_bytes()).collect();
        let mut file = Vec::new();
        encode_as(DType::U16, dims, &data, compress, Some(big), &mut file).unwrap();
        assert_eq!(
            &file[2..4],
            &(if big { 43u16 } else { 42u16 }).to_ne_bytes()
        );
        let (tiff, back) = super::super::decode(&file).unwrap();
        assert_eq!(tiff.shape, dims);
        assert_eq!(back, data);
        if !compress {
            assert_eq!(tiff.layout().unwrap().data_offset, if big { 16 } else { 8 });
        }
    }

    #[test]
    fn classic_and_big_round_trip() {
        for big in [false, true] {
            for compress in [false, true] {
                round_trip(&[5, 7], compress, big);
                round_trip(&[3, 5, 7], compress, big);
                round_trip(&[2, 3, 5, 4], compress, big);
            }
        }
    }
}
