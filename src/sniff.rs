//! What kind of file a file is, by its first bytes: so that a RawArray reader given
//! a PNG or an `.npz` says what it found instead of printing a number, and so that
//! readers that take several formats choose by content, not by name.

/// NumPy's `.npy` magic.
pub const NPY_MAGIC: &[u8] = b"\x93NUMPY";

/// What [`what`] calls a `.npy` file.
pub const NPY_NAME: &str = "a NumPy .npy file";

/// `(leading bytes, what a file starting with them is)`.
const MAGICS: &[(&[u8], &str)] = &[
    (b"rawarray", "a RawArray file"),
    (b"yarrawar", "a big-endian RawArray file"),
    (NPY_MAGIC, NPY_NAME),
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"PK\x03\x04", "a ZIP archive (NumPy's .npz is one)"),
    (b"PK\x05\x06", "an empty ZIP archive"),
    (b"\x89HDF\r\n\x1a\n", "an HDF5 file"),
    (b"CDF\x01", "a netCDF classic file"),
    (b"CDF\x02", "a netCDF 64-bit offset file"),
    (b"II*\0", "a TIFF image"),
    (b"MM\0*", "a TIFF image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x1f\x8b", "a gzip stream"),
    (b"\x28\xb5\x2f\xfd", "a Zstandard stream"),
    (b"BZh", "a bzip2 stream"),
    (b"\xfd7zXZ\0", "an xz stream"),
    (b"\x93MAT", "a MATLAB file"),
    (b"MATLAB", "a MATLAB file"),
    (b"\x7fELF", "an executable (ELF)"),
    (b"{", "JSON text"),
];

/// What [`what`] calls a file of printable text.
pub const TEXT_NAME: &str = "a text file";

/// What a file starting with `bytes` is, in words (`"a PNG image"`), if known: by a
/// magic number, else text when its first bytes are printable UTF-8.
pub fn what(bytes: &[u8]) -> Option<&'static str> {
    MAGICS
        .iter()
        .find(|(m, _)| bytes.starts_with(m))
        .map(|(_, name)| *name)
        .or_else(|| is_text(bytes).then_some(TEXT_NAME))
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
    }
}
