//! Zarr (v3, and v2 for reading) ↔ RawArray, with [zarrs](https://docs.rs/zarrs)
//! (feature `zarr`; with `s3`, stores in S3-protocol storage too).
//!
//! - **`.ra` → Zarr v3** keeps the logical shape (dims `[a, b, c]` are a Zarr array of
//!   shape `(a, b, c)`). Chunks are stored column-major: a `transpose` codec (order
//!   `[n-1, …, 0]`) before `bytes`, so the stored bytes of a chunk are its elements in
//!   the `.ra`'s own order. By default a chunk is whole frames along the last axis, about
//!   16 MiB (cut along the slowest axes where one frame is larger), so each chunk is one
//!   contiguous byte range of the `.ra` data, read from the mapping and written (or
//!   compressed) as it is, in parallel. The NDL trailer's attributes become the array's
//!   `attributes`, and the whole trailer is kept under [`meta::TRAILER_KEY`] so that
//!   converting back gives it again.
//! - **Zarr → `.ra`** reads any regular-grid array zarr-python writes (C or F order,
//!   partial edge chunks, missing chunks as the fill value; codecs zstd, gzip, blosc,
//!   crc32c, transpose, sharding) into a preallocated mapping, chunks decoded in
//!   parallel. Attributes become NDL attributes.
//! - **Structured types** go both ways as zarr-python's `structured` data type (the
//!   Zarr struct extension's `(name, type)` fields): zarr-python packs the fields, so a
//!   padded NumPy struct is stored packed, and comes back packed.
//!
//! Zarr metadata is untrusted: its shapes, chunk grids and types are checked before
//! anything is sized by them, and a bad store or chunk is an error naming it.

pub(crate) mod engine;
pub mod group;
mod inplace;
pub mod meta;
mod numcodecs;
mod ra_storage;
mod read;
mod store;
mod table;
mod write;
mod zstd;

pub use inplace::{in_place, in_place_npy, in_place_placed, InPlace};
pub use ra_storage::{RaStorage, ReadRange};
pub use read::ZarrInput;
pub use store::Location;
pub use table::{ChunkTable, TableStorage};
pub use write::{ZarrOptions, ZarrWriter};

use std::path::Path;

use crate::error::{Error, ErrorKind};

/// The bytes-to-bytes codec of a Zarr output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Codec {
    /// Chunks stored as they are.
    #[default]
    None,
    /// Zstandard at this level (3 by default).
    Zstd(i32),
    /// gzip at this level (0 to 9).
    Gzip(u32),
    /// Blosc (zstd inside, byte shuffle) at this level (0 to 9).
    Blosc(u8),
}

impl std::str::FromStr for Codec {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Codec, String> {
        let (name, level) = match s.split_once(':') {
            Some((n, l)) => (
                n,
                Some(
                    l.parse::<i32>()
                        .map_err(|_| format!("{l:?} is not a level"))?,
                ),
            ),
            None => (s, None),
        };
        Ok(match name {
            "none" => Codec::None,
            "zstd" => Codec::Zstd(level.unwrap_or(3)),
            "gzip" => Codec::Gzip(level.unwrap_or(6).clamp(0, 9) as u32),
            "blosc" => Codec::Blosc(level.unwrap_or(5).clamp(0, 9) as u8),
            other => {
                return Err(format!(
                    "{other:?}: the Zarr codecs are zstd, gzip, blosc and none"
                ))
            }
        })
    }
}

/// Whether `path` names a Zarr array: a `.zarr` name, an `s3://…/x.zarr` URL, or a
/// folder holding `zarr.json` or `.zarray`.
pub fn is_zarr(path: &Path) -> bool {
    let named = path
        .to_str()
        .map(|s| s.trim_end_matches(['/', '\\']))
        .is_some_and(|s| s.to_ascii_lowercase().ends_with(".zarr"));
    named || path.join("zarr.json").is_file() || path.join(".zarray").is_file()
}

/// Bytes of the elements a grid of `shape` holds, checked against overflow.
fn bytes_of(shape: &[u64], itemsize: u64) -> Option<u64> {
    crate::header::checked_bytes(itemsize, shape)
}

/// Where one chunk lies in the array: its origin, its in-bounds extent, and its full
/// (stored) extent.
#[derive(Debug, Clone)]
struct Region {
    origin: Vec<u64>,
    valid: Vec<u64>,
    full: Vec<u64>,
}

impl Region {
    fn of(index: &[u64], chunk: &[u64], dims: &[u64]) -> Region {
        let origin: Vec<u64> = index.iter().zip(chunk).map(|(i, c)| i * c).collect();
        let valid = origin
            .iter()
            .zip(chunk.iter().zip(dims))
            .map(|(o, (c, d))| (*c).min(d.saturating_sub(*o)))
            .collect();
        Region {
            origin,
            valid,
            full: chunk.to_vec(),
        }
    }

    /// Calls `run(array_offset, chunk_offset, len)` for each run of the in-bounds
    /// elements along the first (fastest) axis: offsets and length in bytes, in the
    /// column-major array of `dims` and the column-major full chunk.
    fn runs(&self, dims: &[u64], itemsize: u64, mut run: impl FnMut(usize, usize, usize)) {
        let n = dims.len();
        if self.valid.contains(&0) {
            return;
        }
        if n == 0 {
            return run(0, 0, itemsize as usize);
        }
        let strides = |ext: &[u64]| -> Vec<u64> {
            ext.iter()
                .scan(itemsize, |acc, &d| {
                    let s = *acc;
                    *acc *= d;
                    Some(s)
                })
                .collect()
        };
        let (sa, sc) = (strides(dims), strides(&self.full));
        let len = (self.valid[0] * itemsize) as usize;
        let mut j = vec![0u64; n];
        loop {
            let a: u64 = (0..n).map(|k| (self.origin[k] + j[k]) * sa[k]).sum();
            let c: u64 = (1..n).map(|k| j[k] * sc[k]).sum();
            run(a as usize, c as usize, len);
            // The next index over axes 1.. (axis 0 is the run itself).
            let mut k = 1;
            loop {
                if k == n {
                    return;
                }
                j[k] += 1;
                if j[k] < self.valid[k] {
                    break;
                }
                j[k] = 0;
                k += 1;
            }
        }
    }
}

/// The indices of a chunk grid, the first axis fastest (the order of the output).
pub(crate) struct GridIndices {
    grid: Vec<u64>,
    next: Option<Vec<u64>>,
}

impl GridIndices {
    pub(crate) fn new(grid: &[u64]) -> GridIndices {
        let next = (!grid.contains(&0)).then(|| vec![0; grid.len()]);
        GridIndices {
            grid: grid.to_vec(),
            next,
        }
    }
}

impl Iterator for GridIndices {
    type Item = Vec<u64>;

    fn next(&mut self) -> Option<Vec<u64>> {
        let cur = self.next.take()?;
        let mut n = cur.clone();
        for k in 0..n.len() {
            n[k] += 1;
            if n[k] < self.grid[k] {
                self.next = Some(n);
                return Some(cur);
            }
            n[k] = 0;
        }
        Some(cur)
    }
}

/// An error of the store at `shown`, about its chunk `key` where there is one.
fn zarr_err(shown: &Path, key: Option<&str>, e: impl std::fmt::Display) -> Error {
    let detail = match key {
        Some(k) => format!("chunk {k}: {e}"),
        None => e.to_string(),
    };
    Error::decode("zarr", detail).at(shown)
}

fn refuse(why: String) -> Error {
    ErrorKind::Unsupported(why).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cover_the_chunk_like_the_obvious_loop() {
        let dims = [5u64, 4, 3];
        let r = Region::of(&[1, 0, 1], &[3, 3, 2], &dims);
        let mut got = Vec::new();
        r.runs(&dims, 1, |a, c, n| got.push((a, c, n)));
        // Origin (3, 0, 2), valid (2, 3, 1): runs of 2 at y = 0..3, z = 2.
        assert_eq!(got, [(43, 0, 2), (48, 3, 2), (53, 6, 2)]);
    }
}
