//! A `.ra` file or object read as Zarr in place ([`crate::formats::zarr::InPlace`]):
//! its Zarr metadata and chunk ranges, and kerchunk references to them, for a local
//! path or an `s3://` URL; an uncompressed `.npy` file likewise (its data at an
//! offset, in C or Fortran order), and any array that lies raw in another format's
//! file. A chunked HDF5 dataset is its own chunks ([`hdf5_chunks`]): each a byte
//! range of the file, with the dataset's filters as the Zarr codecs, as kerchunk's
//! HDF5 reader gives them. Nothing is written to the file.

use std::fs::File;
use std::ops::Range;
use std::path::Path;

use serde_json::Value;

pub use super::options::array_name;
use super::options::{ConvertOptions, Format};
use super::Source;
use crate::error::{io_at, ErrorKind, Result};
use crate::formats::zarr::{
    in_place, in_place_npy, in_place_placed, InPlace, RaStorage, ReadRange,
};
use crate::header::Header;
use crate::sniff::is_npy;

/// The frames per chunk that `chunks` asks of an array of `dims` cut along `axis`
/// (the last for column-major data, the first for C order): a frame count (`[k]`),
/// or a chunk shape of whole frames (every axis but `axis` the array's).
pub fn frames_of_chunks(chunks: &[u64], dims: &[u64], axis: usize) -> Result<u64> {
    let n = dims.len();
    let whole_but = |k: usize| (0..n).all(|j| j == k || chunks[j] == dims[j]);
    let frames = match chunks {
        [k] => Some(*k),
        _ if chunks.len() == n && axis < n && whole_but(axis) => Some(chunks[axis]),
        _ => None,
    };
    match frames {
        Some(k) if k > 0 => Ok(k),
        _ => {
            let mut example = dims.to_vec();
            if let Some(a) = example.get_mut(axis) {
                *a = 1;
            }
            Err(ErrorKind::InvalidArgument(format!(
                "chunks {chunks:?} of an array of {dims:?}: a chunk read in place is whole \
                 frames (every axis but axis {axis} whole, e.g. {example:?}), one byte range \
                 of the file; or give the frame count alone"
            ))
            .into())
        }
    }
}

/// The view of `input` (`chunks`: see [`frames_of_chunks`]; default: the largest frame
/// count that divides the frames within about 16 MiB) and a reader of its bytes: a
/// `.ra`, or an uncompressed `.npy` (told by its first bytes) in C or Fortran order, or
/// an array of another format that lies raw in its file ([`placed`](super::placed())).
fn opened(
    input: &Path,
    chunks: Option<&[u64]>,
    options: &ConvertOptions,
    variable: Option<&str>,
) -> Result<(InPlace, ReadRange)> {
    let frames = |dims: &[u64], axis: usize| -> Result<Option<u64>> {
        chunks
            .map(|c| frames_of_chunks(c, dims, axis))
            .transpose()
            .map_err(|e| e.at(input))
    };
    if let Some(url) = input.to_str().filter(|s| s.starts_with("s3://")) {
        let (h, trailer, read) = remote(url, options)?;
        let axis = h.dims().len().saturating_sub(1);
        let view = in_place(&h, &trailer, frames(h.dims(), axis)?, input, variable)?;
        return Ok((view, read));
    }
    let (path, member) = super::member_path(input);
    let file = File::open(&path).map_err(io_at("open", &path))?;
    let len = file.metadata().map_err(io_at("stat", &path))?.len();
    let mut head = [0u8; 6];
    let npy = crate::sys::read_exact_at(&file, &mut head, 0).is_ok() && is_npy(&head);
    // Another format whose array lies raw: a NIfTI volume, a member of an archive.
    let raw = member.is_some() || (!npy && Format::of(&path).is_ok_and(|f| f != Format::Ra));
    let netcdf = member.is_some() && Format::of(&path).ok() == Some(Format::NetCdf3);
    let view = if let (true, Some(name)) = (netcdf, &member) {
        // A NetCDF variable, with its attributes and dimension names; the records of
        // one interleaved with others' are a chunk each, where each lies.
        let (nh, records) = crate::formats::netcdf3::engine::in_place(&path, name)?;
        let source = crate::formats::netcdf3::engine::open_variable(&path, name)?;
        let trailer = source.desc().trailer.clone();
        let asked = frames(&nh.shape, 0)?;
        if records.is_some() && asked.is_some_and(|k| k != 1) {
            return Err(crate::Error::from(ErrorKind::InvalidArgument(format!(
                "chunks {:?} of the record variable {name:?}: its records lie apart, \
                 interleaved with other variables', so each chunk is one record",
                chunks.unwrap_or_default()
            )))
            .at(input));
        }
        in_place_placed(&nh, &trailer, asked, records, input)?
    } else if npy || raw {
        let nh = super::placed(input)?.layout;
        let axis = match nh.fortran_order || nh.shape.len() < 2 {
            true => nh.shape.len().saturating_sub(1),
            false => 0,
        };
        in_place_npy(&nh, frames(&nh.shape, axis)?, input)?
    } else {
        let h = crate::read::read_header_at_start(&file, len).map_err(|e| e.at(input))?;
        let trailer =
            crate::read::ndl_trailer_of(&file, &h, len).map_err(io_at("read metadata", input))?;
        let axis = h.dims().len().saturating_sub(1);
        in_place(&h, &trailer, frames(h.dims(), axis)?, input, variable)?
    };
    let shown = input.to_path_buf();
    let read = move |r: Range<u64>| -> Result<Vec<u8>> {
        let mut buf = vec![0u8; (r.end - r.start) as usize];
        crate::sys::read_exact_at(&file, &mut buf, r.start).map_err(io_at("read", &shown))?;
        Ok(buf)
    };
    Ok((view, Box::new(read)))
}

#[cfg(feature = "s3")]
fn remote(url: &str, options: &ConvertOptions) -> Result<(Header, Vec<u8>, ReadRange)> {
    let ra =
        crate::remote::RemoteRa::open_with(url, options.remote_options().clone()).map_err(|e| {
            match e.kind() {
                ErrorKind::NotRawArray {
                    found: Some(what), ..
                } => crate::Error::from(ErrorKind::Unsupported(format!(
                    "{what} in object storage: objects are read in place as .ra only (a .npy \
                 reads in place as a local file); `ra convert` it to .ra first"
                )))
                .at(url),
                _ => e,
            }
        })?;
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

/// `input` (a `.ra` or `.npy` file, or a `.ra` `s3://` object) as a Zarr array of
/// whole-frame chunks (`chunks`: see [`frames_of_chunks`]). As a dataset's variable
/// (`variable`, its name), the dims it has no labels for are named after it; on its
/// own, `dim_0`, … ([`crate::ndl::unlabeled_dims`]).
pub fn zarr_in_place(
    input: &Path,
    chunks: Option<&[u64]>,
    options: &ConvertOptions,
    variable: Option<&str>,
) -> Result<InPlace> {
    opened(input, chunks, options, variable).map(|(view, _)| view)
}

/// `input` (a `.ra` or `.npy` file, or a `.ra` `s3://` object) as a zarrs storage
/// holding its array at the root: `zarrs::array::Array::open(Arc::new(storage), "/")`
/// reads it in place.
pub fn zarrs_storage(
    input: &Path,
    chunks: Option<&[u64]>,
    options: &ConvertOptions,
) -> Result<RaStorage> {
    let (view, read) = opened(input, chunks, options, None)?;
    Ok(RaStorage::new(view, read))
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
    if let Some(table) = hdf5_chunks(input)? {
        // Chunked in the file: its own chunks, whatever `chunks` asks.
        let own = own_url(input)?;
        return Ok(table.references(url.unwrap_or(&own), &array_name(input)));
    }
    if let Some(names) = super::members(input).filter(|_| is_netcdf(input)) {
        return file_references(input, &names?, chunks, url, options);
    }
    let (view, read) = opened(input, chunks, options, None)?;
    let own = own_url(input)?;
    let name = array_name(input);
    view.references(url.unwrap_or(&own), &name, read)
        .map_err(|e| e.at(input))
}

/// Where references to `input`'s bytes point: an object's URL as it is, else the
/// absolute path of the file (of the file an array is inside: `m.safetensors/NAME`,
/// `x.h5/dset`).
pub fn own_url(input: &Path) -> Result<String> {
    match input.to_str() {
        Some(s) if s.starts_with("s3://") => Ok(s.to_string()),
        _ => Ok(std::path::absolute(super::member_path(input).0)
            .map_err(io_at("resolve", input))?
            .to_string_lossy()
            .into_owned()),
    }
}

/// Whether `path` is a local NetCDF file.
fn is_netcdf(path: &Path) -> bool {
    Format::of(path).ok() == Some(Format::NetCdf3)
}

/// kerchunk v1 references to every variable (`names`) of the NetCDF file `input`, as
/// kerchunk's NetCDF-3 reader makes them: a Zarr v2 group of the variables, the file's
/// attributes its own, each variable's chunks ranges of the file (a record variable
/// interleaved with others', one chunk per record).
fn file_references(
    input: &Path,
    names: &[String],
    chunks: Option<&[u64]>,
    url: Option<&str>,
    options: &ConvertOptions,
) -> Result<Value> {
    let own = std::path::absolute(input)
        .map_err(io_at("resolve", input))?
        .to_string_lossy()
        .into_owned();
    let mut all = serde_json::Map::new();
    for name in names {
        let (view, read) = opened(&input.join(name), chunks, options, None)?;
        let refs = view
            .references(url.unwrap_or(&own), name, read)
            .map_err(|e| e.at(input))?;
        if let Some(Value::Object(m)) = refs.get("refs") {
            all.extend(m.clone());
        }
    }
    let ds = crate::formats::netcdf3::engine::dataset(input)?;
    let text = |v: Value| Value::String(v.to_string());
    all.insert(
        ".zgroup".into(),
        text(serde_json::json!({"zarr_format": 2})),
    );
    all.insert(".zattrs".into(), text(Value::Object(ds.attributes_json())));
    Ok(serde_json::json!({"version": 1, "refs": all}))
}

/// The chunk table of the chunked HDF5 dataset `input` names (`x.h5/grp/dset`): a
/// Zarr v2 `.zarray` and `.zattrs` (the dataset's attributes), and each stored chunk's
/// byte range in the file. `None` for anything else (a contiguous HDF5 dataset lies
/// raw in its file: [`zarr_in_place`] reads it).
pub fn hdf5_chunks(input: &Path) -> Result<Option<crate::formats::zarr::ChunkTable>> {
    #[cfg(feature = "hdf5")]
    if let Some((file, object)) = super::hdf5_member(input).filter(|(_, o)| !o.is_empty()) {
        return crate::formats::hdf5::engine::chunk_table(&file, &object);
    }
    let _ = input;
    Ok(None)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_whole_frames_and_names_are_stems() {
        assert_eq!(frames_of_chunks(&[4, 5, 2], &[4, 5, 9], 2).unwrap(), 2);
        assert_eq!(frames_of_chunks(&[3], &[4, 5, 9], 2).unwrap(), 3);
        assert!(frames_of_chunks(&[2, 5, 2], &[4, 5, 9], 2).is_err());
        assert!(frames_of_chunks(&[0], &[4, 5, 9], 2).is_err());
        // C order: rows along the first axis.
        assert_eq!(frames_of_chunks(&[2, 5, 9], &[4, 5, 9], 0).unwrap(), 2);
        assert!(frames_of_chunks(&[4, 5, 2], &[4, 5, 9], 0).is_err());
        assert_eq!(array_name(Path::new("s3://b/scans/ct.ra")), "ct");
        assert_eq!(array_name(Path::new("/data/x")), "x");
        assert_eq!(array_name(Path::new("/data/t.2m.npy")), "t.2m");
        assert_eq!(array_name(Path::new("/data/in.zarr/")), "in");
        assert_eq!(array_name(Path::new("a/.hidden.ra")), "array");
    }
}
