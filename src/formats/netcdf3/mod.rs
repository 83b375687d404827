//! NetCDF-3 classic files (CDF-1, CDF-2 with 64-bit offsets, CDF-5 with 64-bit data),
//! parsed in our own safe Rust: a file is a dataset of named variables (the netCDF
//! data model, [`crate::cdm`]), each a C-order, big-endian array at an offset,
//! or interleaved with the other record variables record by record.
//!
//! - [`header`]: the header's grammar, read through a window of the file; every count
//!   is bounded by the bytes left in the file before anything is allocated for it.
//! - [`layout`]: where each variable's data lies, from the shapes (not `vsize`), and
//!   the checks that it lies within the file and overlaps nothing else.
//! - [`engine`]: each variable as a [`Source`](crate::convert::Source), the file as a
//!   dataset, where a variable lies for mapping and reading in place, and `ra info`.

pub mod engine;
pub mod header;
pub mod layout;
pub mod types;

#[cfg(test)]
mod tests;

use std::fs::File;
use std::path::Path;

use crate::error::{io_at, Result, ResultExt};

pub use header::{ReadAt, Version, FORMAT};
pub use layout::{NcFile, Variable};
pub use types::NcType;

/// Whether `head` starts with a classic file's magic number (`CDF` and 1, 2 or 5).
pub fn looks_like(head: &[u8]) -> bool {
    head.len() >= 4 && &head[..3] == b"CDF" && matches!(head[3], 1 | 2 | 5)
}

/// Parses the header of the file of `len` bytes that `src` reads, and lays its
/// variables out.
pub fn parse<R: ReadAt + ?Sized>(src: &R, len: u64) -> Result<NcFile> {
    layout::lay_out(header::parse(src, len)?, len)
}

/// The file `path`, open, and parsed.
pub fn read_file(path: &Path) -> Result<(File, NcFile)> {
    let file = File::open(path).map_err(io_at("open", path))?;
    let len = file.metadata().map_err(io_at("stat", path))?.len();
    let nc = parse(&file, len).at(path)?;
    Ok((file, nc))
}
