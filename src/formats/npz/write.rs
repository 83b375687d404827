//! `.npz` archives written as `np.savez` writes them: `NAME.npy` members stored
//! (uncompressed), one after another, then the central directory. Every size and
//! offset is ZIP64, so members and archives of any size fit; each member's CRC and
//! sizes follow its data (a data descriptor), so a member is streamed in one pass.

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::{CENTRAL, EOCD, EOCD64, LOCAL, LOCATOR64, PIECE};
use crate::error::{io_at, Error, Result};

/// The data descriptor's signature.
const DESCRIPTOR: u32 = 0x0807_4b50;
/// ZIP 4.5: ZIP64.
const VERSION: u16 = 45;
/// General purpose flags: sizes and CRC in the data descriptor (bit 3), names in
/// UTF-8 (bit 11).
const FLAGS: u16 = (1 << 3) | (1 << 11);
/// 1980-01-01, the earliest date ZIP has.
const DATE: u16 = (1 << 5) | 1;
const MAX32: u32 = u32::MAX;

/// An `.npz` archive being written, member by member, into a new file.
pub struct NpzWriter<'a> {
    out: BufWriter<&'a std::fs::File>,
    /// Bytes written so far: where the next record starts.
    at: u64,
    central: Vec<u8>,
    count: u64,
    shown: PathBuf,
}

fn put16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}

impl<'a> NpzWriter<'a> {
    /// An archive written into `file` (new and empty), named `shown` in errors.
    pub fn new(file: &'a std::fs::File, shown: &Path) -> NpzWriter<'a> {
        NpzWriter {
            out: BufWriter::with_capacity(PIECE, file),
            at: 0,
            central: Vec::new(),
            count: 0,
            shown: shown.to_path_buf(),
        }
    }

    fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.out
            .write_all(bytes)
            .map_err(io_at("write", &self.shown))?;
        self.at += bytes.len() as u64;
        Ok(())
    }

    /// Adds the member `name` (`x.npy` for the array `x`) of the bytes `data` gives,
    /// which must be `len` of them.
    pub fn add(&mut self, name: &str, mut data: impl Read, len: u64) -> Result<()> {
        let start = self.at;
        let mut local = Vec::with_capacity(50 + name.len());
        put32(&mut local, LOCAL);
        put16(&mut local, VERSION);
        put16(&mut local, FLAGS);
        put16(&mut local, 0); // stored
        put16(&mut local, 0); // time
        put16(&mut local, DATE);
        put32(&mut local, 0); // CRC, in the descriptor
        put32(&mut local, MAX32);
        put32(&mut local, MAX32);
        put16(&mut local, name.len() as u16);
        put16(&mut local, 20);
        local.extend_from_slice(name.as_bytes());
        put16(&mut local, 1); // ZIP64: size, compressed size
        put16(&mut local, 16);
        put64(&mut local, 0);
        put64(&mut local, 0);
        self.write(&local)?;
        let mut crc = flate2::Crc::new();
        let mut buf = vec![0u8; PIECE];
        let mut copied = 0u64;
        loop {
            let n = data.read(&mut buf).map_err(io_at("read", &self.shown))?;
            if n == 0 {
                break;
            }
            crc.update(&buf[..n]);
            self.write(&buf[..n])?;
            copied += n as u64;
        }
        if copied != len {
            return Err(Error::decode(
                "npz",
                format!("member {name}: {copied} bytes, {len} expected"),
            )
            .at(&self.shown));
        }
        let mut descriptor = Vec::with_capacity(24);
        put32(&mut descriptor, DESCRIPTOR);
        put32(&mut descriptor, crc.sum());
        put64(&mut descriptor, len);
        put64(&mut descriptor, len);
        self.write(&descriptor)?;
        let c = &mut self.central;
        put32(c, CENTRAL);
        put16(c, VERSION);
        put16(c, VERSION);
        put16(c, FLAGS);
        put16(c, 0);
        put16(c, 0);
        put16(c, DATE);
        put32(c, crc.sum());
        put32(c, MAX32);
        put32(c, MAX32);
        put16(c, name.len() as u16);
        put16(c, 28);
        put16(c, 0); // comment
        put16(c, 0); // disk
        put16(c, 0); // internal attributes
        put32(c, 0o100644 << 16); // a regular file, rw-r--r--
        put32(c, MAX32);
        c.extend_from_slice(name.as_bytes());
        put16(c, 1); // ZIP64: size, compressed size, local header offset
        put16(c, 24);
        put64(c, len);
        put64(c, len);
        put64(c, start);
        self.count += 1;
        Ok(())
    }

    /// Writes the central directory and its ends (ZIP64, then the classic one).
    pub fn finish(mut self) -> Result<()> {
        let (cd_start, cd_len) = (self.at, self.central.len() as u64);
        let central = std::mem::take(&mut self.central);
        self.write(&central)?;
        let eocd64 = self.at;
        let mut end = Vec::with_capacity(98);
        put32(&mut end, EOCD64);
        put64(&mut end, 44);
        put16(&mut end, VERSION);
        put16(&mut end, VERSION);
        put32(&mut end, 0);
        put32(&mut end, 0);
        put64(&mut end, self.count);
        put64(&mut end, self.count);
        put64(&mut end, cd_len);
        put64(&mut end, cd_start);
        put32(&mut end, LOCATOR64);
        put32(&mut end, 0);
        put64(&mut end, eocd64);
        put32(&mut end, 1);
        put32(&mut end, EOCD);
        put16(&mut end, 0);
        put16(&mut end, 0);
        put16(&mut end, u16::MAX);
        put16(&mut end, u16::MAX);
        put32(&mut end, MAX32);
        put32(&mut end, MAX32);
        put16(&mut end, 0); // comment
        self.write(&end)?;
        self.out.flush().map_err(io_at("write", &self.shown))
    }
}
