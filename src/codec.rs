//! Data-segment codecs: byte swapping, LZ4 blocks, Julia's LEB128 integers and
//! BitArray bits (FORMAT.md sections 2 and 5). Pure functions over byte slices.

use crate::dtype::{DType, Kind};
use crate::error::{Error, Result};
use crate::header::{Encoding, Header};

/// Reverses the bytes of every `unit`-byte scalar in `bytes`.
pub fn swap_bytes(bytes: &mut [u8], unit: usize) {
    if unit > 1 {
        bytes.chunks_exact_mut(unit).for_each(<[u8]>::reverse);
    }
}

/// The largest factor by which an LZ4 block can expand, plus slack for tiny blocks.
fn lz4_max_decoded(compressed: usize) -> u128 {
    compressed as u128 * 255 + 16
}

/// Decodes one LZ4 block into `dst`, which must come out exactly full.
pub fn lz4_decode(src: &[u8], dst: &mut [u8]) -> Result<()> {
    if dst.len() as u128 > lz4_max_decoded(src.len()) {
        return Err(Error::decode(
            "lz4",
            format!(
                "{} compressed bytes cannot decode to {} bytes (LZ4 expands at most 255×)",
                src.len(),
                dst.len()
            ),
        ));
    }
    let n = lz4_flex::block::decompress_into(src, dst)
        .map_err(|e| Error::decode("lz4", format!("{e} ({} compressed bytes)", src.len())))?;
    if n != dst.len() {
        return Err(Error::decode(
            "lz4",
            format!("block decoded to {n} bytes, the shape needs {}", dst.len()),
        ));
    }
    Ok(())
}

/// Checks that `nbytes` decoded bytes are possible from `compressed` bytes, so that a
/// caller may allocate `nbytes` before decoding.
pub fn lz4_check_ratio(compressed: u64, nbytes: u64) -> Result<()> {
    if nbytes as u128 > lz4_max_decoded(compressed as usize) {
        return Err(Error::decode(
            "lz4",
            format!("{compressed} compressed bytes cannot decode to {nbytes} bytes (LZ4 expands at most 255×)"),
        ));
    }
    Ok(())
}

/// Encodes `src` as one LZ4 block.
pub fn lz4_encode(src: &[u8]) -> Vec<u8> {
    lz4_flex::block::compress(src)
}

/// Decodes exactly `dst.len() / elbyte` LEB128 values of `dtype` (zig-zag for signed
/// types) from `src` into native-endian integers in `dst`. Every byte of `src` must be
/// used.
pub fn leb128_decode(src: &[u8], dtype: DType, dst: &mut [u8]) -> Result<()> {
    let width = dtype.elbyte as usize;
    let signed = dtype.kind() == Kind::Int;
    if !dtype.is_leb128_capable() {
        return Err(Error::decode(
            "leb128",
            format!("{dtype} is not an integer type"),
        ));
    }
    let count = dst.len() / width;
    if count > src.len() {
        return Err(Error::decode(
            "leb128",
            format!(
                "{count} values need at least {count} bytes, only {} present",
                src.len()
            ),
        ));
    }
    let bits = 8 * width as u32;
    let mut pos = 0usize;
    for (i, out) in dst.chunks_exact_mut(width).enumerate() {
        let (raw, used) = read_varint(&src[pos..]).ok_or_else(|| {
            Error::decode(
                "leb128",
                format!("value {i} at byte {pos} is truncated or longer than 128 bits"),
            )
        })?;
        pos += used;
        let value: u128 = if signed {
            let v = ((raw >> 1) as i128) ^ -((raw & 1) as i128);
            if bits < 128 && !(-(1i128 << (bits - 1))..1i128 << (bits - 1)).contains(&v) {
                return Err(out_of_range(i, &v.to_string(), dtype));
            }
            v as u128
        } else {
            if bits < 128 && raw >> bits != 0 {
                return Err(out_of_range(i, &raw.to_string(), dtype));
            }
            raw
        };
        let le = value.to_le_bytes();
        out.copy_from_slice(&le[..width]);
        if cfg!(target_endian = "big") {
            out.reverse();
        }
    }
    if pos != src.len() {
        return Err(Error::decode(
            "leb128",
            format!("{} bytes left over after {count} values", src.len() - pos),
        ));
    }
    Ok(())
}

fn out_of_range(i: usize, v: &str, dtype: DType) -> Error {
    Error::decode("leb128", format!("value {i} = {v} does not fit {dtype}"))
}

/// One unsigned LEB128 value and the bytes it used; `None` when truncated or wider
/// than 128 bits.
fn read_varint(src: &[u8]) -> Option<(u128, usize)> {
    let mut value = 0u128;
    for (i, &b) in src.iter().enumerate().take(19) {
        let chunk = u128::from(b & 0x7f);
        let shift = 7 * i as u32;
        if shift == 126 && chunk > 3 {
            return None;
        }
        value |= chunk << shift;
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// Encodes `values` as LEB128 (zig-zag first when `signed`), as Julia's RawArray does.
pub fn leb128_encode(values: impl IntoIterator<Item = i128>, signed: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for v in values {
        let mut u = if signed {
            ((v << 1) ^ (v >> 127)) as u128
        } else {
            v as u128
        };
        loop {
            let b = (u & 0x7f) as u8;
            u >>= 7;
            if u == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
    }
    out
}

/// Decodes the data of a header that fits both LZ4 and LEB128 (FORMAT.md section 5)
/// into `dst` (`elbyte × Π dims` bytes). `stored` runs from the data offset to the end
/// of the file. LZ4 first: the `size` bytes at the data offset must decode to exactly
/// `dst`; else every byte of `stored` must decode as `Π dims` LEB128 values. Returns
/// which it was; when neither, the error says what each attempt found.
pub fn decode_lz4_or_leb128(stored: &[u8], h: &Header, dst: &mut [u8]) -> Result<Encoding> {
    let size = h.size() as usize;
    let lz4 = match stored.get(..size) {
        Some(block) => lz4_decode(block, dst),
        None => Err(Error::decode(
            "lz4",
            format!("a {size}-byte block, only {} bytes present", stored.len()),
        )),
    };
    let Err(as_lz4) = lz4 else {
        return Ok(Encoding::Lz4);
    };
    match leb128_decode(stored, h.dtype(), dst) {
        Ok(()) => Ok(Encoding::Leb128),
        Err(as_leb) => Err(Error::decode(
            "lz4 or leb128",
            format!("neither decodes: as an LZ4 block, {as_lz4}; as LEB128, {as_leb}"),
        )),
    }
}

/// Unpacks `count` bits from little-endian (or, when `big`, big-endian) u64 words;
/// element `i` is bit `i mod 64` of word `i / 64`.
pub fn bits_decode(words: &[u8], count: usize, big: bool) -> Result<Vec<bool>> {
    let needed = count.div_ceil(64);
    if words.len() / 8 < needed {
        return Err(Error::decode(
            "bits",
            format!(
                "{count} bits need {needed} words, only {} present",
                words.len() / 8
            ),
        ));
    }
    let mut out = Vec::with_capacity(count);
    for chunk in words.chunks_exact(8).take(needed) {
        let mut w = [0u8; 8];
        w.copy_from_slice(chunk);
        let word = if big {
            u64::from_be_bytes(w)
        } else {
            u64::from_le_bytes(w)
        };
        let take = (count - out.len()).min(64);
        out.extend((0..take).map(|b| word >> b & 1 == 1));
    }
    Ok(out)
}

/// Checks that Julia `Bool` bytes are all 0 or 1; `first` is the index of the first
/// (for the message).
pub fn check_bools(bytes: &[u8], first: u64) -> Result<()> {
    match bytes.iter().position(|&b| b > 1) {
        Some(i) => Err(Error::decode(
            "bool",
            format!("element {} is {}, not 0 or 1", first + i as u64, bytes[i]),
        )),
        None => Ok(()),
    }
}

/// Packs bools into little-endian u64 words, as Julia's BitArray stores them.
pub fn bits_encode(values: &[bool]) -> Vec<u8> {
    values
        .chunks(64)
        .flat_map(|c| {
            c.iter()
                .enumerate()
                .fold(0u64, |w, (i, &b)| w | u64::from(b) << i)
                .to_le_bytes()
        })
        .collect()
}

/// Encodes `bytes` as standard base64, padded.
pub fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let mut b = [0u8; 3];
        b[..chunk.len()].copy_from_slice(chunk);
        let acc = u32::from_be_bytes([0, b[0], b[1], b[2]]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(acc >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (with or without padding); `None` if it is not.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let body = text.trim_end_matches('=').as_bytes();
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for chunk in body.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= val(c)? << (18 - 6 * i);
        }
        let n = match chunk.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => return None,
        };
        out.extend_from_slice(&acc.to_be_bytes()[1..1 + n]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128_signed_round_trip() {
        let vals = [
            0i128,
            1,
            -1,
            63,
            -64,
            64,
            1000,
            -1000,
            i32::MAX as i128,
            i32::MIN as i128,
        ];
        let enc = leb128_encode(vals, true);
        let mut dst = vec![0u8; vals.len() * 4];
        leb128_decode(&enc, DType::I32, &mut dst).unwrap();
        let got: Vec<i32> = dst
            .chunks(4)
            .map(|c| i32::from_ne_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, vals.iter().map(|&v| v as i32).collect::<Vec<_>>());
    }

    #[test]
    fn leb128_extremes_of_u128_and_i128() {
        let enc = leb128_encode([u128::MAX as i128], false);
        assert_eq!(enc.len(), 19);
        let mut dst = [0u8; 16];
        leb128_decode(&enc, DType::U128, &mut dst).unwrap();
        assert_eq!(u128::from_ne_bytes(dst), u128::MAX);
        let enc = leb128_encode([i128::MIN], true);
        leb128_decode(&enc, DType::I128, &mut dst).unwrap();
        assert_eq!(i128::from_ne_bytes(dst), i128::MIN);
    }

    #[test]
    fn leb128_errors() {
        let mut dst = [0u8; 2];
        // 300 does not fit u8.
        let enc = leb128_encode([300, 1], false);
        assert!(leb128_decode(&enc, DType::U8, &mut dst).is_err());
        // Truncated value.
        assert!(leb128_decode(&[0x80, 0x80], DType::U8, &mut dst).is_err());
        // Bytes left over.
        assert!(leb128_decode(&[1, 2, 3], DType::U8, &mut dst).is_err());
        // Too few bytes for the count.
        let mut big = vec![0u8; 100];
        assert!(leb128_decode(&[1], DType::U8, &mut big).is_err());
        // Endless continuation bytes stop at 19.
        assert!(leb128_decode(&[0xff; 40], DType::U8, &mut [0u8; 1]).is_err());
    }

    #[test]
    fn bits_round_trip() {
        let v: Vec<bool> = (0..130).map(|i| i % 3 == 0).collect();
        let words = bits_encode(&v);
        assert_eq!(words.len(), 24);
        assert_eq!(bits_decode(&words, 130, false).unwrap(), v);
        assert!(bits_decode(&words[..16], 130, false).is_err());
    }

    #[test]
    fn lz4_round_trip_and_bounds() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i / 100) as u8).collect();
        let enc = lz4_encode(&data);
        assert!(enc.len() < data.len());
        let mut out = vec![0u8; data.len()];
        lz4_decode(&enc, &mut out).unwrap();
        assert_eq!(out, data);
        let mut short = vec![0u8; data.len() - 1];
        assert!(lz4_decode(&enc, &mut short).is_err());
        let mut long = vec![0u8; data.len() + 1];
        assert!(lz4_decode(&enc, &mut long).is_err());
        assert!(lz4_check_ratio(10, 1_000_000).is_err());
    }
}
