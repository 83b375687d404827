//! NIfTI-1 and NIfTI-2 images: `.nii`, `.nii.gz` and `.hdr`/`.img` pairs, in either
//! byte order ([`header`]); the header as attributes and back ([`attrs`]); the file's
//! parts found without trusting a size it claims ([`NiftiFile`]).
//!
//! The array is what nibabel shows: `img.shape` (`dim[1..=dim[0]]`, trailing ones
//! kept), the raw stored values (`scl_slope`/`scl_inter` become CF's `scale_factor`
//! and `add_offset`), column-major as NIfTI stores it, so the bytes go into a `.ra`
//! unchanged. RGB24 and RGBA32 are structs of `u1` fields `R`, `G`, `B` (and `A`), as
//! nibabel's `dataobj` gives them; float128, complex256 and 1-bit binary are refused
//! by name. See docs/formats/nifti.md.

pub mod attrs;
pub mod engine;
pub mod header;
mod stream;

use std::io::Read;

use crate::error::{io_at, Result, ResultExt};
pub use header::{looks_like, Extension, NiftiHeader};
use header::{malformed, parse_extensions, sizeof_hdr};

/// A NIfTI file's header, its extensions, and where its data starts (in the `.nii`,
/// or in the `.img` of a pair).
#[derive(Debug, Clone, PartialEq)]
pub struct NiftiFile {
    /// The header.
    pub header: NiftiHeader,
    /// The extensions between the header and the data (or to the end of a `.hdr`).
    pub extensions: Vec<Extension>,
    /// Where the data starts.
    pub data_offset: u64,
}

impl NiftiFile {
    /// The data bytes the header's shape and type need.
    pub fn data_len(&self) -> Result<u64> {
        let (dtype, _) = self.header.element()?;
        crate::header::checked_bytes(dtype.elbyte, &self.header.shape()).ok_or_else(|| {
            malformed(
                self.header.version,
                "dim",
                "the data's bytes overflow 64 bits",
            )
        })
    }

    /// Refuses data that does not lie within a data file of `len` bytes.
    pub fn check_data_within(&self, len: u64) -> Result<u64> {
        let n = self.data_len()?;
        let end = self.data_offset.checked_add(n);
        if end.is_none_or(|e| e > len) {
            let field = if self.data_offset > len {
                "vox_offset"
            } else {
                "dim"
            };
            return Err(malformed(
                self.header.version,
                field,
                format!(
                    "the data ({n} bytes of {:?} from byte {}) runs past the end of the {len}-byte {}",
                    self.header.shape(),
                    self.data_offset,
                    if self.header.pair { ".img" } else { "file" }
                ),
            ));
        }
        Ok(n)
    }
}

/// Reads a header and its extensions from `r`, which starts at the header: up to the
/// data of a `.nii` (`r` then stands at the data), or to the end of a `.hdr` (`pair`
/// says which the caller holds; the magic must agree). Reads only bytes that are
/// there: a size the header claims allocates nothing.
pub fn read_head(r: &mut impl Read, pair_file: bool) -> Result<NiftiFile> {
    let mut head = Vec::with_capacity(header::NIFTI2_LEN + 4);
    r.by_ref()
        .take(4)
        .read_to_end(&mut head)
        .map_err(|e| crate::Error::io("read", e))?;
    let Some((_, _, len)) = sizeof_hdr(&head) else {
        return Err(NiftiHeader::parse(&head)
            .err()
            .unwrap_or_else(|| malformed(0, "sizeof_hdr", "not a NIfTI header")));
    };
    r.by_ref()
        .take(len as u64 - 4)
        .read_to_end(&mut head)
        .map_err(|e| crate::Error::io("read", e))?;
    let header = NiftiHeader::parse(&head)?;
    if header.pair != pair_file {
        return Err(malformed(
            header.version,
            "magic",
            if header.pair {
                "a .hdr/.img pair's magic (ni1, ni2) in a single-file image: open the .hdr or .img"
            } else {
                "a single-file image's magic (n+1, n+2) in a .hdr"
            },
        ));
    }
    let data_offset = header.data_offset()?;
    let mut flag = Vec::with_capacity(4);
    r.by_ref()
        .take(4)
        .read_to_end(&mut flag)
        .map_err(|e| crate::Error::io("read", e))?;
    let mut ext = Vec::new();
    if flag.first().is_some_and(|&b| b != 0) {
        let limit = if pair_file {
            u64::MAX
        } else {
            data_offset.saturating_sub(len as u64 + 4)
        };
        r.by_ref()
            .take(limit)
            .read_to_end(&mut ext)
            .map_err(|e| crate::Error::io("read", e))?;
    }
    let extensions = parse_extensions(header.version, &ext, header.big_endian)?;
    if !pair_file {
        let at = len as u64 + flag.len() as u64 + ext.len() as u64;
        if at < data_offset {
            let skipped =
                std::io::copy(&mut r.by_ref().take(data_offset - at), &mut std::io::sink())
                    .map_err(|e| crate::Error::io("read", e))?;
            if at + skipped < data_offset {
                return Err(malformed(
                    header.version,
                    "vox_offset",
                    format!(
                        "{data_offset} is past the end of the file ({} bytes)",
                        at + skipped
                    ),
                ));
            }
        }
    }
    Ok(NiftiFile {
        header,
        extensions,
        data_offset,
    })
}

/// A whole `.nii` in memory (uncompressed): its parts, the data checked to be there.
pub fn parse(bytes: &[u8]) -> Result<NiftiFile> {
    let mut r = bytes;
    let f = read_head(&mut r, false)?;
    f.check_data_within(bytes.len() as u64)?;
    Ok(f)
}

/// Whether the gzip stream `path` inflates to a NIfTI header (`n+1` or `n+2`): a
/// `.nii.gz` under any name (a download, say).
pub fn gzipped(path: &std::path::Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::with_capacity(header::NIFTI1_LEN);
    let inflated = flate2::read::MultiGzDecoder::new(file)
        .take(header::NIFTI1_LEN as u64)
        .read_to_end(&mut head);
    inflated.is_ok()
        && match sizeof_hdr(&head) {
            Some((1, _, _)) => head.get(344..348) == Some(b"n+1\0"),
            Some((2, _, _)) => head.get(4..8) == Some(b"n+2\0"),
            _ => false,
        }
}

/// Whether `path` names a gzipped image by its name (`.nii.gz`, in any case).
pub fn gz_named(path: &std::path::Path) -> bool {
    path.to_str()
        .is_some_and(|p| p.to_ascii_lowercase().ends_with(".nii.gz"))
}

/// The header file and the data file of the image `path` names: a `.hdr` and its
/// `.img` (either named), or one `.nii` (`pair` false: both are `path`).
pub fn files_of(path: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf, bool) {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let other = |want: &str| {
        let lower = path.with_extension(want);
        let upper = path.with_extension(want.to_ascii_uppercase());
        if !lower.exists() && upper.exists() {
            upper
        } else {
            lower
        }
    };
    match ext.as_deref() {
        Some("hdr") => (path.to_path_buf(), other("img"), true),
        Some("img") => (other("hdr"), path.to_path_buf(), true),
        _ => (path.to_path_buf(), path.to_path_buf(), false),
    }
}

/// The parts of the uncompressed image `path` names (a `.nii`, or a pair's `.hdr` or
/// `.img`), the data checked to lie within its file: `(header file, data file, parts)`.
pub fn open_parts(
    path: &std::path::Path,
) -> Result<(std::path::PathBuf, std::path::PathBuf, NiftiFile)> {
    let (hdr, img, pair) = files_of(path);
    let file = std::fs::File::open(&hdr).map_err(io_at("open", &hdr))?;
    let parts = read_head(&mut std::io::BufReader::new(file), pair).at(&hdr)?;
    let len = std::fs::metadata(&img).map_err(io_at("stat", &img))?.len();
    parts.check_data_within(len).at(&img)?;
    Ok((hdr, img, parts))
}
