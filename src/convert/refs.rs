//! A `.ra` file or object read as Zarr in place ([`crate::formats::zarr::InPlace`]):
//! its Zarr metadata and chunk ranges, and kerchunk references to them, for a local
//! path or an `s3://` URL. Nothing is written to the file.

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use serde_json::Value;

use super::options::ConvertOptions;
use crate::error::{io_at, ErrorKind, Result};
use crate::formats::zarr::{in_place, InPlace, RaStorage, ReadRange};
use crate::header::Header;

/// The frames per chunk that `chunks` asks of an array of `dims`: a frame count
/// (`[k]`), or a chunk shape of whole frames (every axis but the last the array's).
pub fn frames_of_chunks(chunks: &[u64], dims: &[u64]) -> Result<u64> {
    let n = dims.len();
    let frames = match chunks {
        [k] => Some(*k),
        _ if chunks.len() == n && n > 0 && chunks[..n - 1] == dims[..n - 1] => Some(chunks[n - 1]),
        _ => None,
    };
    match frames {
        Some(k) if k > 0 => Ok(k),
        _ => Err(ErrorKind::InvalidArgument(format!(
            "chunks {chunks:?} of an array of {dims:?}: a chunk read in place is whole frames \
             (every axis but the last whole, e.g. {:?}), one byte range of the file; or give \
             the frame count alone",
            [&dims[..n.saturating_sub(1)], &[1]].concat()
        ))
        .into()),
    }
}

/// The header and trailer of `input` and a reader of its bytes.
fn opened(input: &Path, options: &ConvertOptions) -> Result<(Header, Vec<u8>, ReadRange)> {
    if let Some(url) = input.to_str().filter(|s| s.starts_with("s3://")) {
        return remote(url, options);
    }
    let file = File::open(input).map_err(io_at("open", input))?;
    let len = file.metadata().map_err(io_at("stat", input))?.len();
    let h = crate::read::read_header_at_start(&file, len).map_err(|e| e.at(input))?;
    let trailer =
        crate::read::ndl_trailer_of(&file, &h, len).map_err(io_at("read metadata", input))?;
    let shown = input.to_path_buf();
    let read = move |r: Range<u64>| -> Result<Vec<u8>> {
        let mut buf = vec![0u8; (r.end - r.start) as usize];
        crate::sys::read_exact_at(&file, &mut buf, r.start).map_err(io_at("read", &shown))?;
        Ok(buf)
    };
    Ok((h, trailer, Box::new(read)))
}

#[cfg(feature = "s3")]
fn remote(url: &str, options: &ConvertOptions) -> Result<(Header, Vec<u8>, ReadRange)> {
    let ra = crate::remote::RemoteRa::open_with(url, options.remote_options().clone())?;
    let h = ra.header().clone();
    let trailer = ra.metadata()?;
    Ok((h, trailer, Box::new(move |r| ra.read_bytes(r))))
}

#[cfg(not(feature = "s3"))]
fn remote(url: &str, _options: &ConvertOptions) -> Result<(Header, Vec<u8>, ReadRange)> {
    Err(crate::Error::from(ErrorKind::Unsupported(
        "an s3:// object, in a build without the `s3` feature".into(),
    ))
    .at(url))
}

/// The view of the opened file: `chunks` as [`frames_of_chunks`] reads them (default:
/// the largest frame count that divides the frames within about 16 MiB); as the
/// `variable` of a dataset, if it is one.
fn view(
    h: &Header,
    trailer: &[u8],
    chunks: Option<&[u64]>,
    input: &Path,
    variable: Option<&str>,
) -> Result<InPlace> {
    let frames = chunks
        .map(|c| frames_of_chunks(c, h.dims()))
        .transpose()
        .map_err(|e| e.at(input))?;
    in_place(h, trailer, frames, input, variable)
}

/// `input` (a `.ra` file or `s3://` object) as a Zarr array of whole-frame chunks
/// (`chunks`: see [`frames_of_chunks`]). As a dataset's variable (`variable`, its
/// name), the dims it has no labels for are named after it; on its own, `dim_0`, …
/// ([`crate::ndl::unlabeled_dims`]).
pub fn zarr_in_place(
    input: &Path,
    chunks: Option<&[u64]>,
    options: &ConvertOptions,
    variable: Option<&str>,
) -> Result<InPlace> {
    let (h, trailer, _) = opened(input, options)?;
    view(&h, &trailer, chunks, input, variable)
}

/// `input` (a `.ra` file or `s3://` object) as a zarrs storage holding its array at the
/// root: `zarrs::array::Array::open(Arc::new(storage), "/")` reads it in place.
pub fn zarrs_storage(
    input: &Path,
    chunks: Option<&[u64]>,
    options: &ConvertOptions,
) -> Result<RaStorage> {
    let (h, trailer, read) = opened(input, options)?;
    Ok(RaStorage::new(
        view(&h, &trailer, chunks, input, None)?,
        read,
    ))
}

/// kerchunk v1 references to `input` read in place: a Zarr v2 group holding the array
/// under the file's name (its stem), each chunk `[url, offset, length]` with `url` as
/// given or else the input's own (an absolute path for a file), a short last chunk
/// inline. fsspec's `ReferenceFileSystem`, and so `xr.open_dataset("reference://",
/// engine="zarr", ...)`, read them.
pub fn references(
    input: &Path,
    chunks: Option<&[u64]>,
    url: Option<&str>,
    options: &ConvertOptions,
) -> Result<Value> {
    let (h, trailer, read) = opened(input, options)?;
    let view = view(&h, &trailer, chunks, input, None)?;
    let own = match input.to_str() {
        Some(s) if s.starts_with("s3://") => s.to_string(),
        _ => std::path::absolute(input)
            .map_err(io_at("resolve", input))?
            .to_string_lossy()
            .into_owned(),
    };
    let name = array_name(input);
    view.references(url.unwrap_or(&own), &name, read)
        .map_err(|e| e.at(input))
}

/// [`references`] written as JSON to the local file `output`, as every writer writes:
/// built beside it and named when complete; an existing `output` replaced only when
/// `options` overwrite.
pub fn write_references(
    input: &Path,
    output: &Path,
    chunks: Option<&[u64]>,
    url: Option<&str>,
    options: &ConvertOptions,
) -> Result<()> {
    options.check_output(output)?;
    let refs = references(input, chunks, url, options)?;
    let text = serde_json::to_vec(&refs).map_err(|e| {
        crate::Error::from(ErrorKind::Unsupported(format!("references as JSON: {e}")))
    })?;
    crate::replace::build_file(output, options.placement(), |new| {
        crate::sys::write_all_at(new.file(), &text, 0).map_err(io_at("write", output))
    })
}

/// The name of the array a file holds in a group: its file name without its format's
/// extension (`.ra`, `.npy`, `.png`, `.zarr`).
pub fn array_name(input: &Path) -> String {
    let s = input.to_string_lossy();
    let base = match s.strip_prefix("s3://") {
        Some(key) => key
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string(),
        None => input
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let known = super::Format::by_extension(Path::new(&base)).is_some();
    let stem = match base.rsplit_once('.') {
        Some((stem, _)) if known => stem,
        _ => &base,
    };
    if stem.is_empty() || stem.starts_with('.') {
        "array".into()
    } else {
        stem.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_whole_frames_and_names_are_stems() {
        assert_eq!(frames_of_chunks(&[4, 5, 2], &[4, 5, 9]).unwrap(), 2);
        assert_eq!(frames_of_chunks(&[3], &[4, 5, 9]).unwrap(), 3);
        assert!(frames_of_chunks(&[2, 5, 2], &[4, 5, 9]).is_err());
        assert!(frames_of_chunks(&[0], &[4, 5, 9]).is_err());
        assert_eq!(array_name(Path::new("s3://b/scans/ct.ra")), "ct");
        assert_eq!(array_name(Path::new("/data/x")), "x");
        assert_eq!(array_name(Path::new("/data/t.2m.npy")), "t.2m");
        assert_eq!(array_name(Path::new("/data/in.zarr/")), "in");
        assert_eq!(array_name(Path::new("a/.hidden.ra")), "array");
    }
}
