//! The NIfTI-1 (348-byte) and NIfTI-2 (540-byte) headers, parsed in either byte order
//! and encoded: every field as nibabel's header holds it, the floats of NIfTI-1 kept
//! exact (an `f32` widened to `f64`), and the extensions that follow the header.

use crate::descr::{Descr, Field};
use crate::dtype::DType;
use crate::error::{ErrorKind, Result};

/// Bytes of a NIfTI-1 header (`sizeof_hdr`).
pub const NIFTI1_LEN: usize = 348;
/// Bytes of a NIfTI-2 header (`sizeof_hdr`).
pub const NIFTI2_LEN: usize = 540;
/// A `.nii`'s data starts after the header and the four extension flag bytes at least.
pub const NIFTI1_MIN_OFFSET: u64 = 352;
/// The same for NIfTI-2.
pub const NIFTI2_MIN_OFFSET: u64 = 544;

/// A NIfTI header: every field nibabel reads, in NIfTI-2's widths.
#[derive(Debug, Clone, PartialEq)]
pub struct NiftiHeader {
    /// 1 or 2.
    pub version: u8,
    /// Whether the header (and the data) is big-endian.
    pub big_endian: bool,
    /// Whether the magic says a `.hdr`/`.img` pair (`ni1`, `ni2`), not one `.nii`.
    pub pair: bool,
    /// The datatype code (`2` uint8 … `2304` RGBA32).
    pub datatype: i16,
    /// `dim[0]` axes, then their extents.
    pub dim: [i64; 8],
    /// `intent_p1`, `intent_p2`, `intent_p3`.
    pub intent_p: [f64; 3],
    /// `intent_code`.
    pub intent_code: i32,
    /// `intent_name`, NUL-trimmed.
    pub intent_name: Vec<u8>,
    /// `pixdim[0]` (qfac) to `pixdim[7]`.
    pub pixdim: [f64; 8],
    /// Where the data starts (NIfTI-1 stores it as a float).
    pub vox_offset: f64,
    /// `scl_slope`.
    pub scl_slope: f64,
    /// `scl_inter`.
    pub scl_inter: f64,
    /// `slice_start`, `slice_end`.
    pub slice: [i64; 2],
    /// `slice_code`.
    pub slice_code: i32,
    /// `slice_duration`.
    pub slice_duration: f64,
    /// `xyzt_units`.
    pub xyzt_units: i32,
    /// `cal_max`, `cal_min`.
    pub cal: [f64; 2],
    /// `toffset`.
    pub toffset: f64,
    /// `descrip`, NUL-trimmed.
    pub descrip: Vec<u8>,
    /// `aux_file`, NUL-trimmed.
    pub aux_file: Vec<u8>,
    /// `qform_code`, `sform_code`.
    pub codes: [i32; 2],
    /// `quatern_b`, `quatern_c`, `quatern_d`.
    pub quatern: [f64; 3],
    /// `qoffset_x`, `qoffset_y`, `qoffset_z`.
    pub qoffset: [f64; 3],
    /// `srow_x`, `srow_y`, `srow_z`.
    pub srow: [[f64; 4]; 3],
    /// `dim_info`.
    pub dim_info: u8,
}

/// One header extension: its code and its content (trailing NULs stripped, as
/// nibabel keeps it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extension {
    /// `ecode`.
    pub code: i32,
    /// The content.
    pub content: Vec<u8>,
}

/// A malformed NIfTI file: which field, what is wrong.
pub(crate) fn malformed(version: u8, field: &str, detail: impl Into<String>) -> crate::Error {
    ErrorKind::Malformed {
        format: match version {
            1 => "NIfTI-1",
            2 => "NIfTI-2",
            _ => "NIfTI",
        },
        field: field.into(),
        detail: detail.into(),
    }
    .into()
}

/// Fixed-width fields of a header in its byte order.
struct Fields<'a> {
    b: &'a [u8],
    be: bool,
}

impl Fields<'_> {
    fn arr<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut a = [0u8; N];
        a.copy_from_slice(&self.b[at..at + N]);
        if self.be {
            a.reverse();
        }
        a
    }
    fn i16(&self, at: usize) -> i16 {
        i16::from_le_bytes(self.arr(at))
    }
    fn i32(&self, at: usize) -> i32 {
        i32::from_le_bytes(self.arr(at))
    }
    fn i64(&self, at: usize) -> i64 {
        i64::from_le_bytes(self.arr(at))
    }
    fn f32(&self, at: usize) -> f64 {
        f64::from(f32::from_le_bytes(self.arr(at)))
    }
    fn f64(&self, at: usize) -> f64 {
        f64::from_le_bytes(self.arr(at))
    }
    fn text(&self, at: usize, len: usize) -> Vec<u8> {
        let s = &self.b[at..at + len];
        let end = s.iter().position(|&c| c == 0).unwrap_or(len);
        s[..end].to_vec()
    }
}

/// The version, byte order and header length that the first four bytes
/// (`sizeof_hdr`) say, if they are NIfTI's.
pub fn sizeof_hdr(head: &[u8]) -> Option<(u8, bool, usize)> {
    let b: [u8; 4] = head.get(..4)?.try_into().ok()?;
    let (le, be) = (i32::from_le_bytes(b), i32::from_be_bytes(b));
    match (le, be) {
        (348, _) => Some((1, false, NIFTI1_LEN)),
        (540, _) => Some((2, false, NIFTI2_LEN)),
        (_, 348) => Some((1, true, NIFTI1_LEN)),
        (_, 540) => Some((2, true, NIFTI2_LEN)),
        _ => None,
    }
}

/// Whether `head` (a file's first 8 bytes at least) starts a NIfTI header: `sizeof_hdr`
/// 348 (NIfTI-1, magic at byte 344) or 540 with NIfTI-2's magic at byte 4.
pub fn looks_like(head: &[u8]) -> bool {
    match sizeof_hdr(head) {
        Some((1, _, _)) => true,
        Some((2, _, _)) => head
            .get(4..8)
            .is_some_and(|m| m == b"n+2\0" || m == b"ni2\0"),
        _ => false,
    }
}

impl NiftiHeader {
    /// Parses a header from `bytes` (its first 348 or 540 bytes at least).
    pub fn parse(bytes: &[u8]) -> Result<NiftiHeader> {
        let Some((version, be, len)) = sizeof_hdr(bytes) else {
            let got = bytes.get(..4).map_or_else(
                || format!("{} bytes, no header", bytes.len()),
                |b| {
                    format!(
                        "{b:02x?} is neither 348 (NIfTI-1) nor 540 (NIfTI-2) in either byte order"
                    )
                },
            );
            return Err(malformed(0, "sizeof_hdr", got));
        };
        if bytes.len() < len {
            return Err(malformed(
                version,
                "sizeof_hdr",
                format!("the header needs {len} bytes, the file has {}", bytes.len()),
            ));
        }
        let f = Fields { b: bytes, be };
        let h = if version == 1 {
            Self::parse1(&f)?
        } else {
            Self::parse2(&f)?
        };
        h.check()?;
        Ok(h)
    }

    fn parse1(f: &Fields<'_>) -> Result<NiftiHeader> {
        let pair = match &f.b[344..348] {
            b"n+1\0" => false,
            b"ni1\0" => true,
            m => {
                return Err(malformed(
                    1,
                    "magic",
                    format!(
                        "{:?} is neither \"n+1\" nor \"ni1\" (an Analyze 7.5 header is not read)",
                        String::from_utf8_lossy(m)
                    ),
                ))
            }
        };
        Ok(NiftiHeader {
            version: 1,
            big_endian: f.be,
            pair,
            datatype: f.i16(70),
            dim: std::array::from_fn(|k| i64::from(f.i16(40 + 2 * k))),
            intent_p: std::array::from_fn(|k| f.f32(56 + 4 * k)),
            intent_code: i32::from(f.i16(68)),
            intent_name: f.text(328, 16),
            pixdim: std::array::from_fn(|k| f.f32(76 + 4 * k)),
            vox_offset: f.f32(108),
            scl_slope: f.f32(112),
            scl_inter: f.f32(116),
            slice: [i64::from(f.i16(74)), i64::from(f.i16(120))],
            slice_code: i32::from(f.b[122]),
            slice_duration: f.f32(132),
            xyzt_units: i32::from(f.b[123]),
            cal: [f.f32(124), f.f32(128)],
            toffset: f.f32(136),
            descrip: f.text(148, 80),
            aux_file: f.text(228, 24),
            codes: [i32::from(f.i16(252)), i32::from(f.i16(254))],
            quatern: std::array::from_fn(|k| f.f32(256 + 4 * k)),
            qoffset: std::array::from_fn(|k| f.f32(268 + 4 * k)),
            srow: std::array::from_fn(|r| std::array::from_fn(|c| f.f32(280 + 16 * r + 4 * c))),
            dim_info: f.b[39],
        })
    }

    fn parse2(f: &Fields<'_>) -> Result<NiftiHeader> {
        let pair = match &f.b[4..12] {
            b"n+2\0\r\n\x1a\n" => false,
            b"ni2\0\r\n\x1a\n" => true,
            m => {
                return Err(malformed(
                    2,
                    "magic",
                    format!(
                        "{:?} is neither \"n+2\" nor \"ni2\" with \\0\\r\\n\\x1a\\n",
                        String::from_utf8_lossy(m)
                    ),
                ))
            }
        };
        Ok(NiftiHeader {
            version: 2,
            big_endian: f.be,
            pair,
            datatype: f.i16(12),
            dim: std::array::from_fn(|k| f.i64(16 + 8 * k)),
            intent_p: std::array::from_fn(|k| f.f64(80 + 8 * k)),
            intent_code: f.i32(504),
            intent_name: f.text(508, 16),
            pixdim: std::array::from_fn(|k| f.f64(104 + 8 * k)),
            vox_offset: f.i64(168) as f64,
            scl_slope: f.f64(176),
            scl_inter: f.f64(184),
            slice: [f.i64(224), f.i64(232)],
            slice_code: f.i32(496),
            slice_duration: f.f64(208),
            xyzt_units: f.i32(500),
            cal: [f.f64(192), f.f64(200)],
            toffset: f.f64(216),
            descrip: f.text(240, 80),
            aux_file: f.text(320, 24),
            codes: [f.i32(344), f.i32(348)],
            quatern: std::array::from_fn(|k| f.f64(352 + 8 * k)),
            qoffset: std::array::from_fn(|k| f.f64(376 + 8 * k)),
            srow: std::array::from_fn(|r| std::array::from_fn(|c| f.f64(400 + 32 * r + 8 * c))),
            dim_info: f.b[524],
        })
    }

    /// Refuses what no array can be: `dim[0]` outside 1–7 (nibabel's `(0,)` for 0
    /// holds nothing), a negative extent, a
    /// datatype refused or unknown, a shape whose bytes overflow.
    fn check(&self) -> Result<()> {
        let v = self.version;
        if !(1..=7).contains(&self.dim[0]) {
            return Err(malformed(
                v,
                "dim[0]",
                format!("{} axes: NIfTI holds 1 to 7", self.dim[0]),
            ));
        }
        for (k, &d) in self.dim.iter().enumerate().take(self.ndim() + 1).skip(1) {
            if d < 0 {
                return Err(malformed(
                    v,
                    &format!("dim[{k}]"),
                    format!("{d}: an extent is not negative"),
                ));
            }
        }
        let (dtype, _) = self.element()?;
        crate::header::checked_bytes(dtype.elbyte, &self.shape()).ok_or_else(|| {
            malformed(
                v,
                "dim",
                format!(
                    "{:?} voxels of {} bytes overflow 64 bits",
                    self.shape(),
                    dtype.elbyte
                ),
            )
        })?;
        if !self.vox_offset.is_finite() || self.vox_offset < 0.0 || self.vox_offset >= 2f64.powi(63)
        {
            return Err(malformed(
                v,
                "vox_offset",
                format!("{}: not an offset into a file", self.vox_offset),
            ));
        }
        Ok(())
    }

    fn ndim(&self) -> usize {
        self.dim[0].clamp(0, 7) as usize
    }

    /// The shape nibabel's `img.shape` gives: `dim[1..=dim[0]]`, trailing ones kept.
    pub fn shape(&self) -> Vec<u64> {
        self.dim[1..=self.ndim()]
            .iter()
            .map(|&d| d.max(0) as u64)
            .collect()
    }

    /// The element type, and the NumPy descr of RGB24 and RGBA32 (a struct of `u1`
    /// fields `R`, `G`, `B` and `A`, as nibabel's `dataobj` gives them).
    pub fn element(&self) -> Result<(DType, Option<Descr>)> {
        element(self.datatype).map_err(|e| match e {
            Refused::Unknown => malformed(
                self.version,
                "datatype",
                format!("{} is no NIfTI datatype code", self.datatype),
            ),
            Refused::Named(name) => ErrorKind::Unsupported(format!(
                "NIfTI datatype {} ({name}): it has no RawArray or NumPy equivalent here",
                self.datatype
            ))
            .into(),
        })
    }

    /// The data's offset in a `.nii` (or in the `.img` of a pair): `vox_offset`,
    /// where a `.nii` of offset 0 (unset) starts after the header as nibabel reads it.
    pub fn data_offset(&self) -> Result<u64> {
        let off = self.vox_offset as u64;
        let min = self.min_offset();
        if self.pair {
            return Ok(off);
        }
        match off {
            0 => Ok(min),
            o if o < min => Err(malformed(
                self.version,
                "vox_offset",
                format!("{o} lies within the {min}-byte header"),
            )),
            o => Ok(o),
        }
    }

    /// Where the data of a `.nii` starts at the earliest.
    pub fn min_offset(&self) -> u64 {
        if self.version == 1 {
            NIFTI1_MIN_OFFSET
        } else {
            NIFTI2_MIN_OFFSET
        }
    }

    /// The layout of one element's bytes as NumPy names it, in the file's byte order.
    pub fn numpy_descr(&self) -> Result<Descr> {
        let (dtype, fields) = self.element()?;
        if let Some(d) = fields {
            return Ok(d);
        }
        let kind = match dtype.kind() {
            crate::Kind::Int => 'i',
            crate::Kind::UInt => 'u',
            crate::Kind::Complex => 'c',
            _ => 'f',
        };
        let order = match (dtype.elbyte, self.big_endian) {
            (1, _) => '|',
            (_, true) => '>',
            _ => '<',
        };
        Ok(Descr::Simple {
            order,
            kind,
            count: dtype.elbyte,
        })
    }

    /// Encodes the header (NIfTI-1 or 2 as `version` says, little-endian, the magic
    /// of a single `.nii` or of a pair), then the extension flag and the
    /// extensions; `vox_offset` is set to where the data follows them (a multiple of
    /// 16), or 0 for a pair.
    pub fn encode(&self, extensions: &[Extension]) -> Vec<u8> {
        let mut exts = Vec::new();
        for e in extensions {
            let len = (e.content.len() + 8).div_ceil(16) * 16;
            exts.extend((len as i32).to_le_bytes());
            exts.extend(e.code.to_le_bytes());
            exts.extend(&e.content);
            exts.resize(exts.len() + len - 8 - e.content.len(), 0);
        }
        let n = if self.version == 1 {
            NIFTI1_LEN
        } else {
            NIFTI2_LEN
        };
        let offset = if self.pair { 0 } else { n + 4 + exts.len() };
        let mut b = vec![0u8; n];
        if self.version == 1 {
            self.encode1(&mut b, offset);
        } else {
            self.encode2(&mut b, offset);
        }
        b.extend([u8::from(!extensions.is_empty()), 0, 0, 0]);
        b.extend(exts);
        b
    }

    fn encode1(&self, b: &mut [u8], offset: usize) {
        let mut w = Writer { b };
        w.put(0, &348i32.to_le_bytes());
        w.put(38, b"r");
        w.put(39, &[self.dim_info]);
        for k in 0..8 {
            w.put(40 + 2 * k, &(self.dim[k] as i16).to_le_bytes());
            w.f32(76 + 4 * k, self.pixdim[k]);
        }
        for k in 0..3 {
            w.f32(56 + 4 * k, self.intent_p[k]);
            w.f32(256 + 4 * k, self.quatern[k]);
            w.f32(268 + 4 * k, self.qoffset[k]);
            for c in 0..4 {
                w.f32(280 + 16 * k + 4 * c, self.srow[k][c]);
            }
        }
        w.put(68, &(self.intent_code as i16).to_le_bytes());
        w.put(70, &self.datatype.to_le_bytes());
        w.put(72, &self.bitpix().to_le_bytes());
        w.put(74, &(self.slice[0] as i16).to_le_bytes());
        w.f32(108, offset as f64);
        w.f32(112, self.scl_slope);
        w.f32(116, self.scl_inter);
        w.put(120, &(self.slice[1] as i16).to_le_bytes());
        w.put(122, &[self.slice_code as u8]);
        w.put(123, &[self.xyzt_units as u8]);
        w.f32(124, self.cal[0]);
        w.f32(128, self.cal[1]);
        w.f32(132, self.slice_duration);
        w.f32(136, self.toffset);
        w.text(148, 80, &self.descrip);
        w.text(228, 24, &self.aux_file);
        w.put(252, &(self.codes[0] as i16).to_le_bytes());
        w.put(254, &(self.codes[1] as i16).to_le_bytes());
        w.text(328, 16, &self.intent_name);
        w.put(344, if self.pair { b"ni1\0" } else { b"n+1\0" });
    }

    fn encode2(&self, b: &mut [u8], offset: usize) {
        let mut w = Writer { b };
        w.put(0, &540i32.to_le_bytes());
        w.put(
            4,
            if self.pair {
                b"ni2\0\r\n\x1a\n"
            } else {
                b"n+2\0\r\n\x1a\n"
            },
        );
        w.put(12, &self.datatype.to_le_bytes());
        w.put(14, &self.bitpix().to_le_bytes());
        for k in 0..8 {
            w.put(16 + 8 * k, &self.dim[k].to_le_bytes());
            w.put(104 + 8 * k, &self.pixdim[k].to_le_bytes());
        }
        for k in 0..3 {
            w.put(80 + 8 * k, &self.intent_p[k].to_le_bytes());
            w.put(352 + 8 * k, &self.quatern[k].to_le_bytes());
            w.put(376 + 8 * k, &self.qoffset[k].to_le_bytes());
            for c in 0..4 {
                w.put(400 + 32 * k + 8 * c, &self.srow[k][c].to_le_bytes());
            }
        }
        w.put(168, &(offset as i64).to_le_bytes());
        w.put(176, &self.scl_slope.to_le_bytes());
        w.put(184, &self.scl_inter.to_le_bytes());
        w.put(192, &self.cal[0].to_le_bytes());
        w.put(200, &self.cal[1].to_le_bytes());
        w.put(208, &self.slice_duration.to_le_bytes());
        w.put(216, &self.toffset.to_le_bytes());
        w.put(224, &self.slice[0].to_le_bytes());
        w.put(232, &self.slice[1].to_le_bytes());
        w.text(240, 80, &self.descrip);
        w.text(320, 24, &self.aux_file);
        w.put(344, &self.codes[0].to_le_bytes());
        w.put(348, &self.codes[1].to_le_bytes());
        w.put(496, &self.slice_code.to_le_bytes());
        w.put(500, &self.xyzt_units.to_le_bytes());
        w.put(504, &self.intent_code.to_le_bytes());
        w.text(508, 16, &self.intent_name);
        w.put(524, &[self.dim_info]);
    }

    /// Bits per voxel of the datatype (0 for an unknown one).
    fn bitpix(&self) -> i16 {
        element(self.datatype).map_or(0, |(d, _)| (d.elbyte * 8) as i16)
    }

    /// A header for an array of `dtype` (`fields` for RGB) and `shape`, with
    /// nibabel's defaults: no scaling, no transform (`pixdim` 1, codes 0).
    pub fn new(version: u8, datatype: i16, shape: &[u64]) -> NiftiHeader {
        let mut dim = [1i64; 8];
        dim[0] = shape.len() as i64;
        for (d, &n) in dim[1..].iter_mut().zip(shape) {
            *d = n as i64;
        }
        NiftiHeader {
            version,
            big_endian: false,
            pair: false,
            datatype,
            dim,
            intent_p: [0.0; 3],
            intent_code: 0,
            intent_name: Vec::new(),
            pixdim: [1.0; 8],
            vox_offset: 0.0,
            scl_slope: f64::NAN,
            scl_inter: f64::NAN,
            slice: [0, 0],
            slice_code: 0,
            slice_duration: 0.0,
            xyzt_units: 0,
            cal: [0.0, 0.0],
            toffset: 0.0,
            descrip: Vec::new(),
            aux_file: Vec::new(),
            codes: [0, 0],
            quatern: [0.0; 3],
            qoffset: [0.0; 3],
            srow: [[0.0; 4]; 3],
            dim_info: 0,
        }
    }
}

/// Little-endian fields into a header being encoded.
struct Writer<'a> {
    b: &'a mut [u8],
}

impl Writer<'_> {
    fn put(&mut self, at: usize, bytes: &[u8]) {
        self.b[at..at + bytes.len()].copy_from_slice(bytes);
    }
    fn f32(&mut self, at: usize, v: f64) {
        self.put(at, &(v as f32).to_le_bytes());
    }
    fn text(&mut self, at: usize, len: usize, s: &[u8]) {
        let n = s.len().min(len);
        self.put(at, &s[..n]);
    }
}

/// Why a datatype code is refused.
enum Refused {
    /// Not a NIfTI code.
    Unknown,
    /// A NIfTI type taken by nothing here, by its name.
    Named(&'static str),
}

fn rgb(names: &[&str]) -> Descr {
    Descr::Struct(
        names
            .iter()
            .map(|n| Field {
                name: (*n).into(),
                descr: Descr::Simple {
                    order: '|',
                    kind: 'u',
                    count: 1,
                },
                shape: Vec::new(),
            })
            .collect(),
    )
}

/// The element type of a NIfTI datatype code.
fn element(code: i16) -> std::result::Result<(DType, Option<Descr>), Refused> {
    Ok(match code {
        2 => (DType::U8, None),
        4 => (DType::I16, None),
        8 => (DType::I32, None),
        16 => (DType::F32, None),
        32 => (DType::C64, None),
        64 => (DType::F64, None),
        128 => (DType::user(3), Some(rgb(&["R", "G", "B"]))),
        256 => (DType::I8, None),
        512 => (DType::U16, None),
        768 => (DType::U32, None),
        1024 => (DType::I64, None),
        1280 => (DType::U64, None),
        1792 => (DType::C128, None),
        2304 => (DType::user(4), Some(rgb(&["R", "G", "B", "A"]))),
        1 => return Err(Refused::Named("binary, 1 bit per voxel")),
        1536 => return Err(Refused::Named("float128")),
        2048 => return Err(Refused::Named("complex256")),
        _ => return Err(Refused::Unknown),
    })
}

/// The NIfTI datatype code of an element type (`descr` tells RGB24 and RGBA32 from
/// other 3- and 4-byte structs); a Bool is stored as uint8, as nibabel stores one.
pub fn datatype_of(dtype: DType, descr: Option<&Descr>) -> Option<i16> {
    Some(match dtype {
        DType::U8 | DType::BOOL => 2,
        DType::I16 => 4,
        DType::I32 => 8,
        DType::F32 => 16,
        DType::C64 => 32,
        DType::F64 => 64,
        DType::I8 => 256,
        DType::U16 => 512,
        DType::U32 => 768,
        DType::I64 => 1024,
        DType::U64 => 1280,
        DType::C128 => 1792,
        d if d == DType::user(3) && descr == Some(&rgb(&["R", "G", "B"])) => 128,
        d if d == DType::user(4) && descr == Some(&rgb(&["R", "G", "B", "A"])) => 2304,
        _ => return None,
    })
}

/// The extensions in `bytes` (what follows the header's four flag bytes, up to the
/// data or the end of a `.hdr`), in the header's byte order.
pub fn parse_extensions(version: u8, bytes: &[u8], be: bool) -> Result<Vec<Extension>> {
    let mut out = Vec::new();
    let mut at = 0usize;
    while bytes.len() - at >= 8 {
        let f = Fields {
            b: &bytes[at..],
            be,
        };
        let (esize, code) = (f.i32(0), f.i32(4));
        let field = format!("extension {} esize", out.len());
        let size = usize::try_from(esize)
            .ok()
            .filter(|&s| s >= 8)
            .ok_or_else(|| malformed(version, &field, format!("{esize} is less than 8")))?;
        let end = at
            .checked_add(size)
            .filter(|&e| e <= bytes.len())
            .ok_or_else(|| {
                malformed(
                    version,
                    &field,
                    format!(
                        "{esize} bytes at byte {at} of the extensions run past their {} bytes",
                        bytes.len()
                    ),
                )
            })?;
        let mut content = bytes[at + 8..end].to_vec();
        while content.last() == Some(&0) {
            content.pop();
        }
        out.push(Extension { code, content });
        at = end;
    }
    Ok(out)
}
