//! Zarr over `.ra` files in place: the metadata that describes a file's data as a Zarr
//! array whose chunks are whole frames along the last axis, each one contiguous byte
//! range of the file (column-major data: a `transpose` to `[n-1, …, 0]` and `bytes` in
//! the file's byte order in Zarr v3, `order: "F"` in Zarr v2), and kerchunk references
//! to those ranges. An uncompressed `.npy` is the same: its data at an offset, in
//! Fortran order (as a `.ra`), or in C order (no `transpose`, `order: "C"`, chunks of
//! whole rows along the first axis). Nothing is copied and the file is never written: a store serves
//! each chunk from the file's bytes (`rastore.ZarrStore`), a reader of references
//! fetches them itself (`rastore.references`, `ra refs`).
//!
//! A short last chunk: by default a chunk holds the largest count of frames that
//! divides the frame count within the chunk size (about 16 MiB, at least one frame), so
//! every chunk is whole and no reference reaches past the data; where that divisor is
//! under a quarter of what fits (a prime frame count of small frames), chunks hold what
//! fits instead. A frame count that does not divide leaves a short last chunk: a store
//! pads it in memory, and references carry it inline (base64), padded with zeros, never
//! a range past the data.
//!
//! Refused by name: LZ4 data (one block: no chunk is a byte range), Julia BitArrays
//! (elements are bits), files open for appending (their frame count is moving), types
//! Zarr has none of, and structured types whose fields Zarr would store packed.

use std::ops::Range;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::meta::{self, ZarrType};
use super::Codec;
use crate::dtype::Kind;
use crate::error::{Error, ErrorKind, Result};
use crate::formats::npy::NpyHeader;
use crate::header::{Encoding, Header};

/// Bytes of a chunk, about, by default.
const CHUNK_BYTES: u64 = 16 << 20;

/// A `.ra` file's data as a Zarr array of whole-frame chunks.
#[derive(Debug, Clone)]
pub struct InPlace {
    /// The array's shape.
    pub dims: Vec<u64>,
    /// The chunk shape: every axis but [`axis`](Self::axis) whole, `frames` along it.
    pub chunk: Vec<u64>,
    /// The axis the chunks cut: the last (column-major data), or the first (a C-order
    /// `.npy`); 0 for a 0-d array.
    pub axis: usize,
    /// Where the data starts in the file.
    pub data_offset: u64,
    /// Bytes of the data.
    pub data_bytes: u64,
    /// Bytes of one whole chunk.
    pub chunk_bytes: u64,
    /// Bytes from the start of one chunk in the file to the next: `chunk_bytes`, but
    /// for the records of a NetCDF record variable interleaved with others'.
    pub chunk_stride: u64,
    /// How many chunks.
    pub count: u64,
    /// `zarr.json` of the array (Zarr v3).
    pub zarr_json: Value,
    /// `.zarray` of the array (Zarr v2), for kerchunk references.
    pub zarray: Value,
    /// `.zattrs` of the array (Zarr v2): its attributes and `_ARRAY_DIMENSIONS`.
    pub zattrs: Value,
}

/// Why the file `shown` cannot be read in place, or `None`.
fn refusal(h: &Header) -> Option<String> {
    if h.flags().appending() {
        return Some(
            "open for appending: its frame count is moving; let the appender finish, or \
             `ra recover` the file, then reference it"
                .into(),
        );
    }
    match h.encoding() {
        Encoding::Raw => None,
        Encoding::Bits => Some(
            "a Julia BitArray: its elements are bits, which no Zarr data type reads; \
             `ra convert` it to a .ra of Bools (one byte each) first"
                .into(),
        ),
        _ => Some(
            "compressed (one LZ4 block): no chunk of it is a byte range; `ra convert` it \
             to a plain .ra (or to Zarr, which compresses by chunk) first"
                .into(),
        ),
    }
}

/// The frames per chunk: `asked`, or the largest count that divides `frames` within
/// [`CHUNK_BYTES`] (at least one), unless that is under a quarter of what fits: then
/// what fits (chunks of a few bytes would make millions of keys).
fn frames_per_chunk(frames: u64, frame_bytes: u64, asked: Option<u64>) -> u64 {
    if let Some(k) = asked {
        return k.clamp(1, frames.max(1));
    }
    let most = (CHUNK_BYTES / frame_bytes.max(1)).clamp(1, frames.max(1));
    let divisor = (1..=most)
        .rev()
        .find(|k| frames.is_multiple_of(*k))
        .unwrap_or(1);
    if divisor * 4 < most {
        most
    } else {
        divisor
    }
}

/// The Zarr v2 `dtype` of elements of `t` in the file's byte order, where Zarr v2 has
/// one.
fn v2_dtype(h: &Header, t: &ZarrType) -> Option<Value> {
    if t.data_type["name"] == "null_terminated_bytes" {
        // Byte strings: NumPy's `|S<n>` (a NetCDF character array's `|S1`).
        let n = t.data_type["configuration"]["length_bytes"].as_u64()?;
        return Some(json!(format!("|S{n}")));
    }
    let name = t.data_type.as_str()?;
    let s = meta::v2_typestr(name)?;
    let big = h.data_big_endian();
    Some(json!(match (s.chars().next(), big) {
        (Some('<'), true) => format!(">{}", &s[1..]),
        _ => s.to_string(),
    }))
}

/// The file of `header` and `trailer` (named `shown`) as a Zarr array of chunks of
/// `frames` frames (default: see the module); as the `variable` of a dataset, the dims
/// it has no labels for are named after it ([`crate::ndl::unlabeled_dims`]).
pub fn in_place(
    header: &Header,
    trailer: &[u8],
    frames: Option<u64>,
    shown: &Path,
    variable: Option<&str>,
) -> Result<InPlace> {
    describe(
        header,
        trailer,
        frames,
        shown,
        (header.data_offset(), false),
        variable,
    )
}

/// The `.npy` of header `nh` (named `shown`) as a Zarr array of chunks of `frames`
/// frames: rows along the first axis when it is in C order (default: see the module).
pub fn in_place_npy(nh: &NpyHeader, frames: Option<u64>, shown: &Path) -> Result<InPlace> {
    in_place_placed(nh, &[], frames, None, shown)
}

/// An array of another format whose bytes lie raw in its file as `nh` lays them out
/// (named `shown`), described by `trailer` (its labels and attributes; empty for
/// none), as a Zarr array of chunks of `frames` frames. With `records`, the records of
/// a NetCDF record variable interleaved with other variables' (`records` bytes from
/// one to the next): each record is one chunk, where it lies.
pub fn in_place_placed(
    nh: &NpyHeader,
    trailer: &[u8],
    frames: Option<u64>,
    records: Option<u64>,
    shown: &Path,
) -> Result<InPlace> {
    let dtype = nh.descr.dtype().map_err(|e| e.at(shown))?;
    let mut header = Header::new(dtype, &nh.shape).map_err(|e| e.at(shown))?;
    if nh.descr.big_endian() {
        let size = header.size();
        header = header.with_storage(crate::header::Flags::BIG_ENDIAN, size);
    }
    let trailer = match trailer.is_empty() && dtype.kind() == Kind::User {
        true => crate::ndl::descr_trailer(&header, &nh.descr),
        false => trailer.to_vec(),
    };
    let c_order = !nh.fortran_order && nh.shape.len() > 1;
    let frames = if records.is_some() { Some(1) } else { frames };
    let mut view = describe(
        &header,
        &trailer,
        frames,
        shown,
        (nh.data_offset, c_order),
        None,
    )?;
    if let Some(stride) = records {
        view.chunk_stride = stride;
    }
    Ok(view)
}

/// The data of `header` and `trailer`, at `offset` of the file `shown`, column-major
/// or (`c_order`) in C order, as a Zarr array of chunks of `frames` frames; as the
/// `variable` of a dataset, if it is one.
fn describe(
    header: &Header,
    trailer: &[u8],
    frames: Option<u64>,
    shown: &Path,
    (offset, c_order): (u64, bool),
    variable: Option<&str>,
) -> Result<InPlace> {
    let refuse = |why: String| Error::from(ErrorKind::Unsupported(why)).at(shown);
    if let Some(why) = refusal(header) {
        return Err(refuse(why));
    }
    let dtype = header.dtype();
    let descr = crate::ndl::numpy_descr(trailer, dtype.elbyte);
    let t = meta::zarr_type(dtype, descr.as_ref()).map_err(|e| e.at(shown))?;
    if t.packing.is_some() {
        return Err(refuse(format!(
            "{dtype} elements with padding or big-endian fields: Zarr stores a structured \
             type packed, so it cannot read these bytes in place; `ra convert` to Zarr \
             copies them packed"
        )));
    }
    let dims = header.dims().to_vec();
    let n = dims.len();
    let axis = if c_order { 0 } else { n.saturating_sub(1) };
    let last = dims.get(axis).copied().unwrap_or(1);
    let others: Vec<u64> = dims
        .iter()
        .enumerate()
        .filter(|(k, _)| *k != axis)
        .map(|(_, d)| *d)
        .collect();
    let frame_bytes = crate::header::checked_bytes(dtype.elbyte, &others).unwrap_or(0);
    let k = frames_per_chunk(last, frame_bytes, frames);
    let mut chunk = dims.clone();
    if let Some(c) = chunk.get_mut(axis) {
        *c = k;
    }
    // Zarr has no chunk of extent 0: an empty axis is one of extent 1.
    let chunk: Vec<u64> = chunk.iter().map(|&c| c.max(1)).collect();
    let names = crate::ndl::dimension_names(trailer, n)
        .unwrap_or_else(|| crate::ndl::unlabeled_dims(n, variable));
    let mut attributes = meta::attributes_of_trailer(trailer);
    // The whole trailer rides along when a conversion copies the data (so that it
    // converts back); a view of the file in place has the file.
    attributes.remove(meta::TRAILER_KEY);
    let fill = meta::fill_value(&mut attributes, dtype);
    let big = header.data_big_endian();
    let mut zarr_json = super::write::metadata(
        &dims,
        &chunk,
        &t,
        big,
        Codec::None,
        attributes.clone(),
        Some(names.clone()),
    );
    super::write::set_fill(&mut zarr_json, fill.as_ref());
    if c_order {
        // C order is Zarr's own: no `transpose`.
        if let Some(codecs) = zarr_json["codecs"].as_array_mut() {
            codecs.retain(|c| c["name"] != "transpose");
        }
    }
    let mut zattrs = Map::new();
    zattrs.insert("_ARRAY_DIMENSIONS".into(), json!(names));
    for (key, v) in attributes {
        zattrs.insert(key, v);
    }
    let zarray = match v2_dtype(header, &t) {
        Some(dt) => json!({
            "zarr_format": 2,
            "shape": dims,
            "chunks": chunk,
            "dtype": dt,
            "compressor": null,
            "filters": null,
            // Every chunk is present: no fill value but the data's own `_FillValue`
            // (xarray takes any as one, and would mask real zeros).
            "fill_value": fill.as_ref().map(|(v, _)| v.clone()),
            "order": if c_order { "C" } else { "F" },
            "dimension_separator": ".",
        }),
        None => Value::Null,
    };
    let count = if dims.contains(&0) {
        0
    } else {
        last.div_ceil(k)
    };
    Ok(InPlace {
        chunk_bytes: frame_bytes * k,
        chunk_stride: frame_bytes * k,
        data_offset: offset,
        data_bytes: header.nbytes(),
        dims,
        chunk,
        axis,
        count,
        zarr_json,
        zarray,
        zattrs: Value::Object(zattrs),
    })
}

impl InPlace {
    /// The grid index of chunk `i` (along [`axis`](Self::axis); 0 on the others).
    fn index(&self, i: u64) -> Vec<u64> {
        let mut at = vec![0u64; self.dims.len()];
        if let Some(a) = at.get_mut(self.axis) {
            *a = i;
        }
        at
    }

    /// The key of chunk `i` in Zarr v2 (`0.0.i`, `0` for 0-d).
    pub fn key_v2(&self, i: u64) -> String {
        let parts: Vec<String> = self.index(i).iter().map(u64::to_string).collect();
        if parts.is_empty() {
            "0".into()
        } else {
            parts.join(".")
        }
    }

    /// The bytes of the file chunk `i` holds (fewer than [`chunk_bytes`](Self::chunk_bytes)
    /// for a short last chunk), [`chunk_stride`](Self::chunk_stride) bytes after the
    /// chunk before.
    pub fn range(&self, i: u64) -> Range<u64> {
        let start = (i * self.chunk_bytes).min(self.data_bytes);
        let end = (start + self.chunk_bytes).min(self.data_bytes);
        let at = self.data_offset + i * self.chunk_stride;
        at..at + (end - start)
    }

    /// The chunk at `key` (v3, under the array: `c/0/…/0/i`, `c/i/0/…/0` in C order,
    /// `c` for 0-d), if it is one of the grid.
    pub fn chunk_of_key_v3(&self, key: &str) -> Option<u64> {
        let mut parts = key.split('/');
        if parts.next() != Some("c") {
            return None;
        }
        let index: Vec<u64> = parts.map(|p| p.parse().ok()).collect::<Option<_>>()?;
        if index.len() != self.dims.len() {
            return None;
        }
        let i = index.get(self.axis).copied().unwrap_or(0);
        (index == self.index(i) && i < self.count).then_some(i)
    }

    /// kerchunk v1 references to the array at `url` (a group holding it as `name`, or
    /// the array itself at the root when `name` is empty): explicit `refs`, Zarr v2
    /// metadata, `[url, offset, length]` per chunk; a short last chunk inline, read by
    /// `read` and padded with zeros.
    pub fn references(
        &self,
        url: &str,
        name: &str,
        mut read: impl FnMut(Range<u64>) -> Result<Vec<u8>>,
    ) -> Result<Value> {
        if self.zarray.is_null() {
            return Err(ErrorKind::Unsupported(format!(
                "{}: Zarr v2, which kerchunk references are, has no such data type \
                 (rastore.ZarrStore serves it as Zarr v3)",
                self.zarr_json["data_type"]
            ))
            .into());
        }
        let mut chunks = Vec::with_capacity(self.count.min(1 << 20) as usize);
        for i in 0..self.count {
            let r = self.range(i);
            let at = if r.end - r.start == self.chunk_bytes {
                json!([url, r.start, r.end - r.start])
            } else {
                let mut bytes = read(r)?;
                bytes.resize(self.chunk_bytes as usize, 0);
                json!(format!("base64:{}", meta::base64_encode(&bytes)))
            };
            chunks.push((self.key_v2(i), at));
        }
        let metadata = (&self.zarray, &self.zattrs);
        Ok(super::table::kerchunk(name, metadata, chunks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_divide_the_frames_unless_asked_otherwise() {
        // 4 MiB frames: 4 fit 16 MiB, and 1009 frames (a prime) take one each.
        assert_eq!(frames_per_chunk(1009, 4 << 20, None), 1);
        // A prime count of small frames: what fits, a short last chunk.
        assert_eq!(frames_per_chunk(4_194_301, 8, None), 2 << 20);
        assert_eq!(frames_per_chunk(1021, 4096, None), 1021);
        assert_eq!(frames_per_chunk(1000, 4 << 20, None), 4);
        assert_eq!(frames_per_chunk(1000, 3 << 20, None), 5);
        assert_eq!(frames_per_chunk(7, 100, None), 7);
        assert_eq!(frames_per_chunk(10, 100, Some(3)), 3);
        assert_eq!(frames_per_chunk(0, 100, None), 1);
    }

    #[test]
    fn a_short_last_chunk_is_inline_and_no_range_passes_the_data() {
        let h = Header::new(crate::DType::U16, &[3, 2, 5]).unwrap();
        let p = in_place(&h, &[], Some(2), Path::new("x.ra"), None).unwrap();
        assert_eq!((p.count, p.chunk_bytes), (3, 24));
        assert_eq!(p.range(2), 72 + 48..72 + 60);
        assert_eq!(p.chunk_of_key_v3("c/0/0/2"), Some(2));
        for bad in [
            "c/0/0/3",
            "c/1/0/0",
            "c/0/0",
            "c/0/0/x",
            "0/0/0/1",
            "c/0/0/1/0",
        ] {
            assert_eq!(p.chunk_of_key_v3(bad), None, "{bad}");
        }
        let refs = p
            .references("s3://b/x.ra", "x", |r| {
                Ok(vec![9; (r.end - r.start) as usize])
            })
            .unwrap();
        assert_eq!(refs["refs"]["x/0.0.1"], json!(["s3://b/x.ra", 96, 24]));
        let inline = refs["refs"]["x/0.0.2"].as_str().unwrap();
        let bytes = meta::base64_decode(inline.strip_prefix("base64:").unwrap()).unwrap();
        assert_eq!(bytes, [vec![9; 12], vec![0; 12]].concat());
    }
}
