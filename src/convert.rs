//! Conversions between `.ra`, `.npy` and `.png`, chosen by extension, keeping the
//! logical array (FORMAT.md section 7).
//!
//! Plain conversions stream in bounded memory: `.npy` → `.ra` fills a preallocated
//! output through a mapping, reading a Fortran-order input in pieces or transposing a
//! mapped C-order input slab by slab; `.ra` → `.npy` copies the data in pieces. An LZ4
//! block is one block, so compressing or decompressing holds that one array in memory.

use std::fs::{self, File};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;

use ndarray::{ArrayViewD, Axis, IxDyn, Slice};

use crate::codec;
use crate::create::CreateOptions;
use crate::dtype::{DType, Kind};
use crate::error::{io_at, Error, ErrorKind, Result, ResultExt};
use crate::header::{Encoding, Flags, Header};
use crate::layout::copy_to_fortran;
use crate::mapped::{MappedNpy, MappedRaMut};
use crate::ndl;
use crate::npy::{self, Descr, NpyHeader};
use crate::owned::{atomic_write, read_header_at_start, with_temp_file, RawData, WriteOptions};
use crate::png_io;
use crate::view::shape_usize;

/// Progress callback: `(bytes done, bytes total)`.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// Bytes moved between progress reports.
const PIECE: usize = 16 << 20;

/// A file format, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.ra`
    Ra,
    /// `.npy`
    Npy,
    /// `.png`
    Png,
}

impl Format {
    /// The format of `path` by its extension.
    pub fn of(path: &Path) -> Result<Format> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("ra") => Ok(Format::Ra),
            Some("npy") => Ok(Format::Npy),
            Some("png") => Ok(Format::Png),
            _ => Err(ErrorKind::InvalidArgument(format!(
                "{}: unknown extension (use .ra, .npy or .png)",
                path.display()
            ))
            .into()),
        }
    }
}

/// Converts `input` to `output` by their extensions: `.npy` ↔ `.ra`, `.png` ↔ `.ra`,
/// `.ra` → `.ra` (compress with `compress`, else decompress and byte-swap to native).
pub fn convert(input: &Path, output: &Path, compress: bool, progress: Progress) -> Result<()> {
    match (Format::of(input)?, Format::of(output)?) {
        (Format::Npy, Format::Ra) => npy_to_ra(input, output, compress, progress).at(input),
        (Format::Ra, Format::Npy) => ra_to_npy(input, output, progress).at(input),
        (Format::Png, Format::Ra) => png_to_ra(input, output, compress).at(input),
        (Format::Ra, Format::Png) => ra_to_png(input, output).at(input),
        (Format::Ra, Format::Ra) => ra_to_ra(input, output, compress, progress).at(input),
        (a, b) => Err(ErrorKind::Unsupported(format!(
            "conversion from {a:?} to {b:?}: one side must be .ra"
        ))
        .into()),
    }
}

/// A file's data decoded to plain native bytes: BitArrays unpacked to Julia Bool bytes.
pub fn decoded(path: &Path) -> Result<RawData> {
    let mut raw = crate::read_raw(path)?;
    if raw.header.encoding() == Encoding::Bits {
        // read_raw gave the packed words, swapped to native order.
        let count = usize::try_from(raw.header.count()).map_err(|_| ErrorKind::TooLarge {
            what: "element count",
            value: raw.header.count().into(),
        })?;
        let bools = codec::bits_decode(&raw.data, count, cfg!(target_endian = "big")).at(path)?;
        raw.data = bools.into_iter().map(u8::from).collect();
        raw.header = Header::new(DType::BOOL, raw.header.dims())?;
    } else {
        let flags = if raw.native { 0 } else { Flags::BIG_ENDIAN };
        raw.header = Header::new(raw.header.dtype(), raw.header.dims())?
            .with_storage(flags, raw.header.nbytes());
    }
    Ok(raw)
}

/// Creates `output` through a temporary file: preallocated, mapped, filled by `fill`,
/// then renamed into place. On error nothing is left behind.
fn fill_new_file(
    output: &Path,
    dtype: DType,
    dims: &[u64],
    trailer: Vec<u8>,
    fill: impl FnOnce(&mut [u8]) -> Result<()>,
) -> Result<()> {
    let header = Header::new(dtype, dims)?;
    with_temp_file(output, |file, tmp| {
        CreateOptions::new()
            .metadata(trailer)
            .prepare(file, &header, tmp, output)?;
        // SAFETY: the temporary file was just created under a unique name that no other
        // program knows; it is neither truncated nor written elsewhere while mapped.
        let mut out = unsafe { MappedRaMut::open(tmp) }?;
        fill(out.data_mut())?;
        drop(out);
        fs::rename(tmp, output).map_err(io_at("rename", output))
    })
}

fn npy_to_ra(input: &Path, output: &Path, compress: bool, progress: Progress) -> Result<()> {
    let mut file = File::open(input).map_err(io_at("open", input))?;
    let len = file.metadata().map_err(io_at("stat", input))?.len();
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
        ndl::to_text(&ndl::document(None, &header, Some(&nh.descr), None)).into_bytes()
    } else {
        Vec::new()
    };
    let swap = match (nh.descr.big_endian(), dtype.swap_unit()) {
        (true, Some(unit)) if !matches!(nh.descr, Descr::Struct(_)) => unit,
        _ => 1,
    };
    let mut fill = |dst: &mut [u8]| -> Result<()> {
        if nh.fortran_order || nh.shape.len() <= 1 {
            for (i, piece) in dst.chunks_mut(PIECE).enumerate() {
                let off = nh.data_offset + (i * PIECE) as u64;
                file.read_exact_at(piece, off)
                    .map_err(io_at("read", input))?;
                progress(((i * PIECE) + piece.len()) as u64, nbytes);
            }
        } else {
            // SAFETY: conversion inputs are read-only for the duration of the call;
            // the README states that `ra convert` must not race a writer of its input.
            let src = unsafe { MappedNpy::open(input) }?;
            let itemsize = nh.descr.itemsize()? as usize;
            transpose_c_to_f(
                src.data_bytes(),
                &shape_usize(&nh.shape)?,
                itemsize,
                dst,
                progress,
            );
        }
        dst.chunks_mut(PIECE)
            .for_each(|p| codec::swap_bytes(p, swap));
        Ok(())
    };
    if compress {
        let mut data = vec![0u8; nbytes as usize];
        fill(&mut data)?;
        return WriteOptions::new()
            .compress(true)
            .metadata(trailer)
            .write_bytes(output, &header, &data);
    }
    fill_new_file(output, dtype, &nh.shape, trailer, fill)
}

/// Reorders C-order elements of `itemsize` bytes into column-major order, slab by slab
/// along the last axis so that progress can be reported.
pub fn transpose_c_to_f(
    src: &[u8],
    shape: &[usize],
    itemsize: usize,
    dst: &mut [u8],
    progress: Progress,
) {
    fn typed<E: bytemuck::Pod>(src: &[u8], shape: &[usize], dst: &mut [u8], progress: Progress) {
        let s: &[E] = bytemuck::cast_slice(src);
        let d: &mut [E] = bytemuck::cast_slice_mut(dst);
        match ArrayViewD::from_shape(IxDyn(shape), s) {
            Ok(v) => by_slabs(&v, d, std::mem::size_of::<E>(), progress),
            Err(e) => unreachable!("shape matches the data: {e}"),
        }
    }
    match itemsize {
        1 => typed::<[u8; 1]>(src, shape, dst, progress),
        2 => typed::<[u8; 2]>(src, shape, dst, progress),
        4 => typed::<[u8; 4]>(src, shape, dst, progress),
        8 => typed::<[u8; 8]>(src, shape, dst, progress),
        16 => typed::<[u8; 16]>(src, shape, dst, progress),
        n => {
            // Bytes as one more, fastest axis in C order; moved first, it is the fastest
            // axis of the column-major output too.
            let mut ext = shape.to_vec();
            ext.push(n);
            match ArrayViewD::from_shape(IxDyn(&ext), src) {
                Ok(v) => {
                    let mut axes: Vec<usize> = (0..ext.len()).collect();
                    axes.rotate_right(1);
                    by_slabs(&v.permuted_axes(axes), dst, 1, progress);
                }
                Err(e) => unreachable!("shape matches the data: {e}"),
            }
        }
    }
}

fn by_slabs<E: Copy>(v: &ArrayViewD<'_, E>, dst: &mut [E], size: usize, progress: Progress) {
    let total = (dst.len() * size) as u64;
    if v.ndim() == 0 || v.is_empty() {
        copy_to_fortran(v, dst);
        return progress(total, total);
    }
    let last = Axis(v.ndim() - 1);
    let dl = v.len_of(last);
    let per = v.len() / dl;
    let step = (PIECE / (per * size).max(1)).max(1);
    for k0 in (0..dl).step_by(step) {
        let k1 = (k0 + step).min(dl);
        let part = v.slice_axis(last, Slice::from(k0..k1));
        copy_to_fortran(&part, &mut dst[k0 * per..k1 * per]);
        progress((k1 * per * size) as u64, total);
    }
}

fn ra_to_npy(input: &Path, output: &Path, progress: Progress) -> Result<()> {
    let file = File::open(input).map_err(io_at("open", input))?;
    let len = file.metadata().map_err(io_at("stat", input))?.len();
    let h = read_header_at_start(&file, len)?;
    let descr = if h.dtype().kind() == Kind::User {
        let mut trailer =
            vec![0u8; (len - h.data_end(len)).min(ndl::MAX_TRAILER_YAML as u64) as usize];
        file.read_exact_at(&mut trailer, h.data_end(len))
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
    let npy_header = NpyHeader::encode(&descr, true, h.dims());
    let unit = match h.dtype().swap_unit() {
        Some(unit) if !h.native_endian() => unit,
        _ => 1,
    };
    let size = npy_header.len() as u64 + h.nbytes();
    atomic_write(output, false, size, |w| {
        w.write_all(&npy_header).map_err(io_at("write", output))?;
        if h.encoding() == Encoding::Raw {
            let data = h.data_offset()..h.data_offset() + h.size();
            let swap = (unit, data.end);
            copy_pieces((&file, input), data, swap, (w, output), progress)?;
        } else {
            let raw = decoded(input)?;
            w.write_all(&raw.data).map_err(io_at("write", output))?;
            progress(raw.data.len() as u64, raw.data.len() as u64);
        }
        Ok(())
    })
}

/// Copies bytes `range` of `input` to `output` in pieces of [`PIECE`], reversing each
/// `swap.0`-byte element of those before offset `swap.1`, and reports progress.
fn copy_pieces(
    (file, input): (&File, &Path),
    range: std::ops::Range<u64>,
    (unit, swap_end): (usize, u64),
    (w, output): (&mut impl Write, &Path),
    progress: Progress,
) -> Result<()> {
    let total = range.end - range.start;
    let mut buf = vec![0u8; PIECE.min(total as usize)];
    let mut pos = range.start;
    while pos < range.end {
        let n = (range.end - pos).min(PIECE as u64) as usize;
        file.read_exact_at(&mut buf[..n], pos)
            .map_err(io_at("read", input))?;
        let swapped = swap_end.saturating_sub(pos).min(n as u64) as usize;
        codec::swap_bytes(&mut buf[..swapped], unit);
        w.write_all(&buf[..n]).map_err(io_at("write", output))?;
        pos += n as u64;
        progress(pos - range.start, total);
    }
    Ok(())
}

fn no_npy_type(d: DType) -> Error {
    ErrorKind::Unsupported(format!("{d} has no NumPy equivalent")).into()
}

fn png_to_ra(input: &Path, output: &Path, compress: bool) -> Result<()> {
    let f = File::open(input).map_err(io_at("open", input))?;
    let img = png_io::decode(std::io::BufReader::new(f))?;
    let header = Header::new(img.dtype, &img.dims)?;
    WriteOptions::new()
        .compress(compress)
        .write_bytes(output, &header, &img.data)
}

fn ra_to_png(input: &Path, output: &Path) -> Result<()> {
    let raw = decoded(input)?;
    atomic_write(output, false, raw.data.len() as u64, |w| {
        png_io::encode(&raw.header, &raw.data, w)
    })
}

fn ra_to_ra(input: &Path, output: &Path, compress: bool, progress: Progress) -> Result<()> {
    let file = File::open(input).map_err(io_at("open", input))?;
    let len = file.metadata().map_err(io_at("stat", input))?.len();
    let h = read_header_at_start(&file, len)?;
    if let (false, Encoding::Raw, Some(unit)) = (compress, h.encoding(), h.dtype().swap_unit()) {
        // Plain to plain (byte-swapped to native): piece by piece, trailer kept.
        let native = Header::new(h.dtype(), h.dims())?;
        let unit = if h.native_endian() { 1 } else { unit };
        // Swap data bytes only: the trailer is the user's, copied verbatim.
        let swap = (unit, h.data_end(len));
        return atomic_write(output, false, len, |w| {
            w.write_all(&native.encode())
                .map_err(io_at("write", output))?;
            copy_pieces(
                (&file, input),
                h.data_offset()..len,
                swap,
                (w, output),
                progress,
            )
        });
    }
    let raw = decoded(input)?;
    WriteOptions::new()
        .compress(compress)
        .metadata(raw.metadata)
        .write_bytes(output, &raw.header, &raw.data)
}
