//! What kind of file a file is, by its first bytes: so that a RawArray reader given
//! a PNG or an `.npz` says what it found instead of printing a number, and so that
//! readers that take several formats choose by content, not by name.

/// NumPy's `.npy` magic.
pub const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// HDF5's signature (at 0, or after a user block: at 512 bytes times a power of two).
pub const HDF5_MAGIC: &[u8] = b"\x89HDF\r\n\x1a\n";

/// Whether `file` (`len` bytes long) holds HDF5's signature where a superblock may
/// start: at 0, or at 512 bytes times a power of two (after a user block, such as a
/// MATLAB v7.3 file's 512 bytes of text). A read of 8 bytes at each place.
pub(crate) fn is_hdf5_file(file: &std::fs::File, len: u64) -> bool {
    let mut at = 0u64;
    while at.saturating_add(8) <= len {
        let mut head = [0u8; 8];
        if crate::sys::read_exact_at(file, &mut head, at).is_ok() && head.as_slice() == HDF5_MAGIC {
            return true;
        }
        at = if at == 0 { 512 } else { at.saturating_mul(2) };
    }
    false
}

/// What [`what`] calls a `.npy` file.
pub const NPY_NAME: &str = "a NumPy .npy file";

/// Whether rastore reads a kind of file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// It does (`.ra`, `.npy`, PNG, `.npz`).
    Read,
    /// A format of arrays or images it does not read yet (HDF5, MATLAB, ...).
    NotYet,
    /// Not a format of arrays (text, a compressed stream, an executable).
    NoArray,
}

/// What rastore reads, for messages that refuse something else.
pub const READS: &str =
    ".ra, .npy, .npz, PNG, NIfTI, TIFF, safetensors, HDF5 (NetCDF-4, MATLAB v7.3), NetCDF-3, \
     Zarr and dataset folders";

/// What [`what`] calls a safetensors file (which has no magic number: a length, then
/// its JSON header).
pub const SAFETENSORS_NAME: &str = "a safetensors file";

/// `(leading bytes, what a file starting with them is, whether rastore reads it)`.
const MAGICS: &[(&[u8], &str, Support)] = &[
    (b"rawarray", "a RawArray file", Support::Read),
    (b"yarrawar", "a big-endian RawArray file", Support::Read),
    (NPY_MAGIC, NPY_NAME, Support::Read),
    (b"\x89PNG\r\n\x1a\n", "a PNG image", Support::Read),
    (
        b"PK\x03\x04",
        "a ZIP archive (NumPy's .npz is one)",
        Support::Read,
    ),
    (b"PK\x05\x06", "an empty ZIP archive", Support::Read),
    (b"", SAFETENSORS_NAME, Support::Read),
    (b"\x5c\x01\0\0", "a NIfTI-1 image", Support::Read),
    (b"\0\0\x01\x5c", "a big-endian NIfTI-1 image", Support::Read),
    (b"\x1c\x02\0\0", "a NIfTI-2 image", Support::Read),
    (b"\0\0\x02\x1c", "a big-endian NIfTI-2 image", Support::Read),
    (
        HDF5_MAGIC,
        "an HDF5 file (or NetCDF-4, MATLAB v7.3)",
        Support::Read,
    ),
    (b"CDF\x01", "a NetCDF-3 classic file", Support::Read),
    (b"CDF\x02", "a NetCDF-3 64-bit offset file", Support::Read),
    (b"CDF\x05", "a NetCDF-3 64-bit data file", Support::Read),
    (b"II*\0", "a TIFF image", Support::Read),
    (b"MM\0*", "a TIFF image", Support::Read),
    (b"II+\0", "a BigTIFF image", Support::Read),
    (b"MM\0+", "a BigTIFF image", Support::Read),
    (b"\xff\xd8\xff", "a JPEG image", Support::NotYet),
    (b"GIF8", "a GIF image", Support::NotYet),
    (b"\x1f\x8b", "a gzip stream", Support::NoArray),
    (b"\x28\xb5\x2f\xfd", "a Zstandard stream", Support::NoArray),
    (b"BZh", "a bzip2 stream", Support::NoArray),
    (b"\xfd7zXZ\0", "an xz stream", Support::NoArray),
    (b"\x93MAT", "a MATLAB file", Support::NotYet),
    (b"MATLAB 7.3 MAT-file", "a MATLAB v7.3 file", Support::Read),
    (b"MATLAB", "a MATLAB v5 file", Support::NotYet),
    (b"\x7fELF", "an executable (ELF)", Support::NoArray),
    (b"{", "JSON text", Support::NoArray),
];

/// What [`what`] calls a file of printable text.
pub const TEXT_NAME: &str = "a text file";

/// What a file starting with `bytes` is, in words (`"a PNG image"`), if known: by a
/// magic number, else text when its first bytes are printable UTF-8.
pub fn what(bytes: &[u8]) -> Option<&'static str> {
    MAGICS
        .iter()
        .find(|(m, _, _)| !m.is_empty() && bytes.starts_with(m))
        .map(|(_, name, _)| *name)
        .or_else(|| is_safetensors(bytes).then_some(SAFETENSORS_NAME))
        .or_else(|| is_text(bytes).then_some(TEXT_NAME))
}

/// Whether rastore reads the kind of file [`what`] named `what` (text does not).
pub fn support(what: &str) -> Support {
    MAGICS
        .iter()
        .find(|(_, name, _)| *name == what)
        .map_or(Support::NoArray, |(_, _, s)| *s)
}

/// Whether the first 512 bytes are printable UTF-8 (tabs and line ends allowed; a
/// character cut at the end of the sample counts).
fn is_text(bytes: &[u8]) -> bool {
    let sample = &bytes[..bytes.len().min(512)];
    let valid = match std::str::from_utf8(sample) {
        Ok(s) => s,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&sample[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return false,
    };
    !valid.is_empty()
        && valid
            .chars()
            .all(|c| !c.is_control() || matches!(c, '\t' | '\n' | '\r'))
}

/// Whether `bytes` (at least 9) start like a safetensors file: a header length of at
/// most the package's 100 MB limit, then the header's `{`.
pub fn is_safetensors(bytes: &[u8]) -> bool {
    match (bytes.get(..8), bytes.get(8)) {
        (Some(n), Some(b'{')) => {
            let n = u64::from_le_bytes(n.try_into().unwrap_or([0xff; 8]));
            (2..=100_000_000).contains(&n)
        }
        _ => false,
    }
}

/// Whether `bytes` start a NumPy `.npy` file.
pub fn is_npy(bytes: &[u8]) -> bool {
    bytes.starts_with(NPY_MAGIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_it_finds() {
        assert_eq!(what(b"\x89PNG\r\n\x1a\n...."), Some("a PNG image"));
        assert_eq!(what(b"\x93NUMPY\x01\x00"), Some("a NumPy .npy file"));
        assert_eq!(what(b"rawarray"), Some("a RawArray file"));
        assert_eq!(what(b"\x00\x01"), None);
        assert_eq!(what(b"notes on scan 4, day 2\r\n"), Some(TEXT_NAME));
        assert_eq!(what("unié\tok".as_bytes()), Some(TEXT_NAME));
        assert_eq!(what(b"text\x00binary"), None);
        assert!(is_npy(b"\x93NUMPY\x02\x00") && !is_npy(b"\x93NUMP"));
        assert_eq!(support(NPY_NAME), Support::Read);
        assert_eq!(support("a JPEG image"), Support::NotYet);
        let h5 = what(b"\x89HDF\r\n\x1a\n\x00").unwrap();
        assert_eq!(support(h5), Support::Read);
        assert_eq!(
            support(what(b"MATLAB 5.0 MAT-file").unwrap()),
            Support::NotYet
        );
        assert_eq!(support(TEXT_NAME), Support::NoArray);
        let st = b"\x10\0\0\0\0\0\0\0{\"a\":{}}       ";
        assert_eq!(what(st), Some(SAFETENSORS_NAME));
        assert_eq!(support(SAFETENSORS_NAME), Support::Read);
        assert!(!is_safetensors(b"\xff\xff\xff\xff\xff\xff\xff\xff{"));
    }
}
