//! Typed column-major views over the bytes of a data segment.
//!
//! The checks live here, once, for the mapped reader, the mutable writer and views
//! over plain byte slices: rule 9 (type), then what makes a view impossible
//! (byte order, compression, packed bits, alignment).

use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn, ShapeBuilder};

use crate::dtype::{check_type, Element};
use crate::error::{ErrorKind, Result, ViewRefusal};
use crate::header::{Encoding, Header};

/// The dims as `usize`, or an error when they do not fit this platform.
pub(crate) fn shape_usize(dims: &[u64]) -> Result<Vec<usize>> {
    dims.iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                ErrorKind::TooLarge {
                    what: "dimension",
                    value: d.into(),
                }
                .into()
            })
        })
        .collect()
}

/// Rule 9, then whether the stored bytes can be used in place.
fn check_viewable<T: Element>(header: &Header) -> Result<()> {
    check_type::<T>(header.dtype())?;
    let reason = match header.encoding() {
        Encoding::Bits => Some(ViewRefusal::BitPacked),
        Encoding::Lz4 | Encoding::Leb128 | Encoding::Lz4OrLeb128 => Some(ViewRefusal::Compressed),
        Encoding::Raw if !header.native_endian() && header.dtype().elbyte > 1 => {
            Some(ViewRefusal::NonNativeEndian)
        }
        Encoding::Raw => None,
    };
    match reason {
        Some(reason) => Err(ErrorKind::NotViewable { reason }.into()),
        None => Ok(()),
    }
}

fn misaligned<T>() -> crate::Error {
    ErrorKind::NotViewable {
        reason: ViewRefusal::Misaligned {
            align: std::mem::align_of::<T>(),
        },
    }
    .into()
}

fn fortran_shape(header: &Header) -> Result<ndarray::Shape<IxDyn>> {
    Ok(IxDyn(&shape_usize(header.dims())?).f())
}

fn shape_error(e: ndarray::ShapeError, header: &Header) -> crate::Error {
    ErrorKind::Unsupported(format!(
        "dims {:?} cannot be viewed on this platform: {e}",
        header.dims()
    ))
    .into()
}

/// A zero-copy view of `data` (exactly the data segment described by `header`).
pub fn view_data<'a, T: Element>(header: &Header, data: &'a [u8]) -> Result<ArrayViewD<'a, T>> {
    check_viewable::<T>(header)?;
    let elems: &[T] = match data {
        [] => &[],
        _ => bytemuck::try_cast_slice(data).map_err(|_| misaligned::<T>())?,
    };
    ArrayViewD::from_shape(fortran_shape(header)?, elems).map_err(|e| shape_error(e, header))
}

/// A zero-copy mutable view of `data` (exactly the data segment described by `header`).
pub fn view_data_mut<'a, T: Element>(
    header: &Header,
    data: &'a mut [u8],
) -> Result<ArrayViewMutD<'a, T>> {
    check_viewable::<T>(header)?;
    let elems: &mut [T] = match data {
        [] => &mut [],
        _ => bytemuck::try_cast_slice_mut(data).map_err(|_| misaligned::<T>())?,
    };
    ArrayViewMutD::from_shape(fortran_shape(header)?, elems).map_err(|e| shape_error(e, header))
}

/// Parses a whole file image and views its data in place: the slice form of
/// [`MappedRa::view`](crate::MappedRa::view), for buffers you already hold.
pub fn view_bytes<T: Element>(file: &[u8]) -> Result<ArrayViewD<'_, T>> {
    let header = Header::parse(file)?;
    view_data(&header, stored_data(&header, file))
}

/// The data segment as stored, from a whole file image that `header` was parsed from
/// (so its bounds are already checked against the image's length).
pub(crate) fn stored_data<'a>(header: &Header, file: &'a [u8]) -> &'a [u8] {
    let start = header.data_offset() as usize;
    let end = header.data_end(file.len() as u64) as usize;
    &file[start..end]
}

/// The metadata trailer, from a whole file image that `header` was parsed from.
pub(crate) fn trailer<'a>(header: &Header, file: &'a [u8]) -> &'a [u8] {
    &file[header.trailer_start(file.len() as u64) as usize..]
}
