//! IFD 0, checked before the `tiff` crate reads it: the crate parses the first IFD as
//! its decoder is made, under its default limits (a 256 MiB value buffer), before
//! rastore's own limits can be set. A value array longer than the file is refused
//! here, so that no tag's claimed count is ever allocated (a 128-byte file whose tag
//! claimed 6 million values made the crate reserve 153 MB; the fuzzer found it). A
//! BigTIFF entry of a field type TIFF does not define is refused too: the crate skips
//! such an entry as a classic one (8 bytes after its type, not 16), and so reads the
//! entries after it from the wrong bytes (a 503-byte file whose misread entry claimed
//! 3.6 million values made it reserve 115 MB; the fuzzer found that as well).

use std::io::{Read, Seek, SeekFrom};

use super::malformed;
use crate::error::Result;

/// Bytes of one value of TIFF field type `t` (0 for a type TIFF does not define).
fn type_size(t: u16) -> u64 {
    match t {
        1 | 2 | 6 | 7 => 1,
        3 | 8 => 2,
        4 | 9 | 11 | 13 => 4,
        5 | 10 | 12 | 16 | 17 | 18 => 8,
        _ => 0,
    }
}

/// Reads `N` bytes at the reader's position, or says which field was cut short.
fn take<const N: usize, R: Read>(r: &mut R, what: &str) -> Result<[u8; N]> {
    let mut b = [0u8; N];
    r.read_exact(&mut b)
        .map_err(|_| malformed(what, "the file ends before it"))?;
    Ok(b)
}

/// Checks every entry of IFD 0 of the TIFF `r` (`len` bytes): its values fit in the
/// file. Leaves `r` at the start.
pub fn check<R: Read + Seek>(r: &mut R, len: u64) -> Result<()> {
    let seek = |r: &mut R, at: u64| {
        r.seek(SeekFrom::Start(at))
            .map(drop)
            .map_err(|_| malformed("IFD 0", format!("cannot seek to byte {at}")))
    };
    seek(r, 0)?;
    let head: [u8; 4] = take(r, "header")?;
    let little = match &head[..2] {
        b"II" => true,
        b"MM" => false,
        _ => return seek(r, 0),
    };
    let u16_of = |b: [u8; 2]| match little {
        true => u16::from_le_bytes(b),
        false => u16::from_be_bytes(b),
    };
    let u32_of = |b: [u8; 4]| match little {
        true => u32::from_le_bytes(b),
        false => u32::from_be_bytes(b),
    };
    let u64_of = |b: [u8; 8]| match little {
        true => u64::from_le_bytes(b),
        false => u64::from_be_bytes(b),
    };
    let big = u16_of([head[2], head[3]]) == 43;
    let ifd = match big {
        true => {
            let _sizes: [u8; 4] = take(r, "BigTIFF header")?;
            u64_of(take(r, "IFD 0 offset")?)
        }
        false => u64::from(u32_of(take(r, "IFD 0 offset")?)),
    };
    if ifd >= len {
        // The crate names this itself.
        return seek(r, 0);
    }
    seek(r, ifd)?;
    let (entries, entry_len) = match big {
        true => (u64_of(take(r, "IFD 0 entry count")?), 20),
        false => (u64::from(u16_of(take(r, "IFD 0 entry count")?)), 12),
    };
    if entries.saturating_mul(entry_len) > len {
        return Err(malformed(
            "IFD 0 entry count",
            format!("{entries} entries of {entry_len} bytes cannot fit the {len}-byte file"),
        ));
    }
    for _ in 0..entries {
        let tag = u16_of(take(r, "IFD 0 entry")?);
        let kind = u16_of(take(r, "IFD 0 entry")?);
        let count = match big {
            true => {
                let c = u64_of(take(r, "IFD 0 entry")?);
                let _value: [u8; 8] = take(r, "IFD 0 entry")?;
                c
            }
            false => {
                let c = u64::from(u32_of(take(r, "IFD 0 entry")?));
                let _value: [u8; 4] = take(r, "IFD 0 entry")?;
                c
            }
        };
        if big && type_size(kind) == 0 {
            return Err(malformed(
                format!("IFD 0 tag {tag}"),
                format!("field type {kind} is none that TIFF defines"),
            ));
        }
        if count.saturating_mul(type_size(kind)) > len {
            return Err(malformed(
                format!("IFD 0 tag {tag}"),
                format!(
                    "{count} values of {} bytes cannot fit the {len}-byte file",
                    type_size(kind)
                ),
            ));
        }
    }
    seek(r, 0)
}
