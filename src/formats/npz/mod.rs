//! NumPy's `.npz`: a ZIP archive of `.npy` members, stored (`np.savez`) or deflated
//! (`np.savez_compressed`), ZIP64 for large ones. Reading needs only the central
//! directory, and each member streamed out in bounded memory; every offset and length
//! is checked against the file's length before use. Writing ([`NpzWriter`]) streams
//! stored members in, as `np.savez` writes them.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use crate::error::{io_at, Error, Result};

pub(crate) mod engine;
mod write;
pub use write::NpzWriter;

const EOCD: u32 = 0x0605_4b50;
const EOCD64: u32 = 0x0606_4b50;
const LOCATOR64: u32 = 0x0706_4b50;
const CENTRAL: u32 = 0x0201_4b50;
const LOCAL: u32 = 0x0403_4b50;

/// Bytes copied at a time.
const PIECE: usize = 1 << 20;

fn bad(detail: impl Into<String>) -> Error {
    Error::decode("npz", detail)
}

/// One member of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// Its name in the archive (`x.npy` for the array saved as `x`).
    pub name: String,
    /// 0 stored, 8 deflated.
    method: u16,
    /// Where its local header starts.
    local_offset: u64,
    /// Bytes in the archive.
    compressed: u64,
    /// Bytes when extracted.
    pub size: u64,
}

fn u16_at(b: &[u8], i: usize) -> Result<u16> {
    b.get(i..i + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| bad("truncated record"))
}

fn u32_at(b: &[u8], i: usize) -> Result<u32> {
    b.get(i..i + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| bad("truncated record"))
}

fn u64_at(b: &[u8], i: usize) -> Result<u64> {
    let lo = u32_at(b, i)?;
    let hi = u32_at(b, i + 4)?;
    Ok(u64::from(lo) | u64::from(hi) << 32)
}

fn read_at(file: &File, len: u64, offset: u64, n: u64, path: &Path) -> Result<Vec<u8>> {
    if offset.checked_add(n).is_none_or(|end| end > len) {
        return Err(bad(format!(
            "a record at byte {offset} of {n} bytes runs past the {len}-byte file"
        )));
    }
    let mut buf = vec![0u8; n as usize];
    crate::sys::read_exact_at(file, &mut buf, offset).map_err(io_at("read", path))?;
    Ok(buf)
}

/// The members of the archive `file` of length `len`, from its central directory.
pub fn members(file: &File, len: u64, path: &Path) -> Result<Vec<Member>> {
    // The end record is in the last 22 + 65535 (comment) bytes.
    let tail_len = len.min(22 + 65_535);
    let tail = read_at(file, len, len - tail_len, tail_len, path)?;
    let at = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| u32_at(&tail, i).ok() == Some(EOCD))
        .ok_or_else(|| bad("not a ZIP archive (no end of central directory)"))?;
    let eocd_pos = len - tail_len + at as u64;
    let mut entries = u64::from(u16_at(&tail, at + 10)?);
    let mut cd_size = u64::from(u32_at(&tail, at + 12)?);
    let mut cd_offset = u64::from(u32_at(&tail, at + 16)?);
    if entries == 0xffff || cd_size == 0xffff_ffff || cd_offset == 0xffff_ffff {
        let loc = read_at(
            file,
            len,
            eocd_pos
                .checked_sub(20)
                .ok_or_else(|| bad("no ZIP64 locator"))?,
            20,
            path,
        )?;
        if u32_at(&loc, 0)? != LOCATOR64 {
            return Err(bad("no ZIP64 end of central directory locator"));
        }
        let e64 = read_at(file, len, u64_at(&loc, 8)?, 56, path)?;
        if u32_at(&e64, 0)? != EOCD64 {
            return Err(bad("no ZIP64 end of central directory"));
        }
        entries = u64_at(&e64, 32)?;
        cd_size = u64_at(&e64, 40)?;
        cd_offset = u64_at(&e64, 48)?;
    }
    // Each entry takes at least 46 bytes: a lying count cannot make us loop long.
    if entries > cd_size / 46 + 1 {
        return Err(bad(format!(
            "{entries} entries cannot fit a {cd_size}-byte central directory"
        )));
    }
    let cd = read_at(file, len, cd_offset, cd_size, path)?;
    let mut out = Vec::new();
    let mut p = 0usize;
    for _ in 0..entries {
        if u32_at(&cd, p)? != CENTRAL {
            return Err(bad(format!(
                "no central directory entry at byte {}",
                cd_offset + p as u64
            )));
        }
        let method = u16_at(&cd, p + 10)?;
        let mut compressed = u64::from(u32_at(&cd, p + 20)?);
        let mut size = u64::from(u32_at(&cd, p + 24)?);
        let (n, e, c) = (
            usize::from(u16_at(&cd, p + 28)?),
            usize::from(u16_at(&cd, p + 30)?),
            usize::from(u16_at(&cd, p + 32)?),
        );
        let mut local_offset = u64::from(u32_at(&cd, p + 42)?);
        let name = cd
            .get(p + 46..p + 46 + n)
            .ok_or_else(|| bad("truncated member name"))?;
        let name = String::from_utf8_lossy(name).into_owned();
        let extra = cd
            .get(p + 46 + n..p + 46 + n + e)
            .ok_or_else(|| bad("truncated extra field"))?;
        // The ZIP64 extra field holds, in order, the fields that overflowed.
        let mut q = 0;
        while q + 4 <= extra.len() {
            let (id, sz) = (u16_at(extra, q)?, usize::from(u16_at(extra, q + 2)?));
            if id == 1 {
                let mut r = q + 4;
                for field in [&mut size, &mut compressed, &mut local_offset] {
                    if *field == 0xffff_ffff {
                        *field = u64_at(extra, r)?;
                        r += 8;
                    }
                }
            }
            q += 4 + sz;
        }
        out.push(Member {
            name,
            method,
            local_offset,
            compressed,
            size,
        });
        p += 46 + n + e + c;
    }
    Ok(out)
}

impl Member {
    /// Whether the member is stored as it is (`np.savez`), not deflated: its bytes are
    /// a `.npy` at [`data_start`] in the archive.
    pub fn is_stored(&self) -> bool {
        self.method == 0
    }
}

/// Where the bytes of `m` start in the archive `file` (of length `len`), checked to
/// lie within it.
pub fn data_start(file: &File, len: u64, m: &Member, path: &Path) -> Result<u64> {
    let local = read_at(file, len, m.local_offset, 30, path)?;
    if u32_at(&local, 0)? != LOCAL {
        return Err(bad(format!("{}: no local header", m.name)));
    }
    let skip = 30 + u64::from(u16_at(&local, 26)?) + u64::from(u16_at(&local, 28)?);
    let start = m.local_offset + skip;
    if start.checked_add(m.compressed).is_none_or(|end| end > len) {
        return Err(bad(format!(
            "{}: data runs past the end of the file",
            m.name
        )));
    }
    Ok(start)
}

/// Reads `file` from `pos` on, without a shared cursor.
pub fn slice_reader(file: &File, pos: u64) -> impl Read + '_ {
    FileRange { file, pos }
}

/// Writes the extracted bytes of `m` to `w`, in pieces (inflating deflated members).
pub fn extract(file: &File, len: u64, m: &Member, path: &Path, w: &mut impl Write) -> Result<()> {
    let start = data_start(file, len, m, path)?;
    let mut raw = FileRange { file, pos: start }.take(m.compressed);
    let copied = match m.method {
        0 => std::io::copy(&mut raw, w),
        8 => std::io::copy(
            &mut std::io::BufReader::with_capacity(PIECE, flate2::read::DeflateDecoder::new(raw))
                .take(m.size.saturating_add(1)),
            w,
        ),
        other => {
            return Err(bad(format!(
                "{}: compression method {other} (only stored and deflate)",
                m.name
            )))
        }
    }
    .map_err(|e| bad(format!("{}: {e}", m.name)))?;
    if copied != m.size {
        return Err(bad(format!(
            "{}: {copied} bytes extracted, the directory says {}",
            m.name, m.size
        )));
    }
    Ok(())
}

/// Reads a file from `pos` on, with `pread` (no shared cursor).
struct FileRange<'a> {
    file: &'a File,
    pos: u64,
}

impl Read for FileRange<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = crate::sys::read_at(self.file, buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}
