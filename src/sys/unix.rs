//! Linux and macOS.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Reads exactly `buf.len()` bytes at `offset`, without moving the file's cursor.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    file.read_exact_at(buf, offset)
}

/// Writes all of `buf` at `offset`, without moving the file's cursor.
pub(crate) fn write_all_at(file: &File, buf: &[u8], offset: u64) -> io::Result<()> {
    file.write_all_at(buf, offset)
}
