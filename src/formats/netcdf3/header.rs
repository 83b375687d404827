//! The header grammar of the netCDF classic format (Unidata's "NetCDF Classic and
//! 64-bit Offset Format" and "CDF-5" specifications), read through a [`Cursor`] that
//! never reads, nor allocates for, more than the file holds:
//!
//! ```text
//! header   = magic numrecs dim_list gatt_list var_list
//! magic    = 'C' 'D' 'F' (1 | 2 | 5)
//! numrecs  = NON_NEG | STREAMING
//! dim_list = ABSENT | NC_DIMENSION nelems [dim ...]        dim  = name dim_length
//! att_list = ABSENT | NC_ATTRIBUTE nelems [attr ...]       attr = name nc_type nelems [values] padding
//! var_list = ABSENT | NC_VARIABLE nelems [var ...]
//! var      = name nelems [dimid ...] vatt_list nc_type vsize begin
//! name     = nelems namestring padding
//! ```
//!
//! Big-endian throughout. `NON_NEG` (counts, lengths, `dimid`s, `vsize`) is 4 bytes in
//! CDF-1 and CDF-2, 8 in CDF-5; `begin` is 4 bytes in CDF-1, 8 in CDF-2 and CDF-5;
//! tags and `nc_type` are 4 bytes; `ABSENT` is a zero tag and a zero count; padding
//! brings names and values to a multiple of 4 bytes.

use crate::cdm::Attribute;
use crate::error::{Error, ErrorKind, Result};

use super::types::NcType;

/// The format's name in messages.
pub const FORMAT: &str = "NetCDF-3";

/// `NC_DIMENSION`, `NC_VARIABLE`, `NC_ATTRIBUTE`.
const TAG_DIMENSION: u32 = 10;
const TAG_VARIABLE: u32 = 11;
const TAG_ATTRIBUTE: u32 = 12;

/// Bytes read from the file at once while parsing the header.
const WINDOW: u64 = 64 << 10;

/// A classic file's version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// CDF-1, the classic format: 32-bit offsets.
    Classic,
    /// CDF-2, 64-bit offsets.
    Offset64,
    /// CDF-5, 64-bit data: 64-bit counts and the unsigned and 64-bit integer types.
    Data64,
}

impl Version {
    /// The version of the magic number's fourth byte.
    pub fn of_byte(b: u8) -> Option<Version> {
        match b {
            1 => Some(Version::Classic),
            2 => Some(Version::Offset64),
            5 => Some(Version::Data64),
            _ => None,
        }
    }

    /// As users name it: `CDF-1`, `CDF-2`, `CDF-5`.
    pub fn name(self) -> &'static str {
        match self {
            Version::Classic => "CDF-1",
            Version::Offset64 => "CDF-2",
            Version::Data64 => "CDF-5",
        }
    }

    /// Bytes of a `NON_NEG`.
    fn count_bytes(self) -> u64 {
        match self {
            Version::Data64 => 8,
            _ => 4,
        }
    }

    /// Bytes of an `OFFSET` (`begin`).
    fn offset_bytes(self) -> u64 {
        match self {
            Version::Classic => 4,
            _ => 8,
        }
    }
}

/// A dimension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dim {
    /// Its name.
    pub name: String,
    /// Its length; 0 for the record (unlimited) dimension, whose length is `numrecs`.
    pub len: u64,
}

/// A variable as its header entry gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    /// Its name.
    pub name: String,
    /// Its dimensions, by index into the dimension list, first axis first.
    pub dimids: Vec<usize>,
    /// Its attributes.
    pub attrs: Vec<Attribute>,
    /// Its type.
    pub nc_type: NcType,
    /// Its size as the header states it (not relied on: it is truncated for large
    /// variables in CDF-1 and CDF-2).
    pub vsize: u64,
    /// Where its data starts (of a record variable: its part of the first record).
    pub begin: u64,
}

/// A parsed header.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// The version.
    pub version: Version,
    /// The record count, or `None` for `STREAMING` (to be found from the file's length).
    pub numrecs: Option<u64>,
    /// The dimensions.
    pub dims: Vec<Dim>,
    /// The global attributes.
    pub attrs: Vec<Attribute>,
    /// The variables.
    pub vars: Vec<Var>,
    /// Bytes of the header.
    pub len: u64,
}

/// Reads bytes at an offset: a file, or bytes in memory.
pub trait ReadAt {
    /// Fills `buf` from `at` (which the caller keeps within the length it gave).
    fn read_at(&self, buf: &mut [u8], at: u64) -> Result<()>;
}

impl ReadAt for [u8] {
    fn read_at(&self, buf: &mut [u8], at: u64) -> Result<()> {
        let start = usize::try_from(at).unwrap_or(usize::MAX);
        match self.get(start..).and_then(|r| r.get(..buf.len())) {
            Some(src) => {
                buf.copy_from_slice(src);
                Ok(())
            }
            None => Err(malformed("header", "a read past the end")),
        }
    }
}

impl ReadAt for std::fs::File {
    fn read_at(&self, buf: &mut [u8], at: u64) -> Result<()> {
        crate::sys::read_exact_at(self, buf, at).map_err(|e| Error::io("read", e))
    }
}

/// A netCDF-3 `Malformed` error.
pub fn malformed(field: impl Into<String>, detail: impl Into<String>) -> Error {
    ErrorKind::Malformed {
        format: FORMAT,
        field: field.into(),
        detail: detail.into(),
    }
    .into()
}

/// The header's bytes, read front to back through a window of the file.
struct Cursor<'a, R: ReadAt + ?Sized> {
    src: &'a R,
    len: u64,
    pos: u64,
    window: Vec<u8>,
    window_at: u64,
    version: Version,
}

impl<'a, R: ReadAt + ?Sized> Cursor<'a, R> {
    /// Bytes of the file after the cursor.
    fn left(&self) -> u64 {
        self.len - self.pos
    }

    /// The next `n` bytes of `field`; refused, before anything is read or allocated,
    /// when the file holds fewer.
    fn take(&mut self, n: u64, field: &dyn Fn() -> String) -> Result<&[u8]> {
        if n > self.left() {
            return Err(malformed(
                field(),
                format!(
                    "{n} bytes at offset {}, past the end of the file ({} bytes)",
                    self.pos, self.len
                ),
            ));
        }
        let end = self.pos + n;
        if self.pos < self.window_at || end > self.window_at + self.window.len() as u64 {
            let want = n.max(WINDOW).min(self.left());
            self.window = vec![0u8; want as usize];
            self.src.read_at(&mut self.window, self.pos)?;
            self.window_at = self.pos;
        }
        let from = (self.pos - self.window_at) as usize;
        self.pos = end;
        Ok(&self.window[from..from + n as usize])
    }

    fn u32(&mut self, field: &dyn Fn() -> String) -> Result<u32> {
        let b = self.take(4, field)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, field: &dyn Fn() -> String) -> Result<u64> {
        let b = self.take(8, field)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }

    /// A `NON_NEG`: 4 bytes (unsigned, as the C library reads lengths) or, in CDF-5,
    /// 8 bytes (signed: a negative one is refused).
    fn count(&mut self, field: &dyn Fn() -> String) -> Result<u64> {
        match self.version.count_bytes() {
            8 => {
                let v = self.u64(field)?;
                if v > i64::MAX as u64 {
                    return Err(malformed(field(), format!("{} is negative", v as i64)));
                }
                Ok(v)
            }
            _ => self.u32(field).map(u64::from),
        }
    }

    /// An `OFFSET` (`begin`): a signed 32-bit (CDF-1) or 64-bit integer; a negative
    /// one is refused.
    fn offset(&mut self, field: &dyn Fn() -> String) -> Result<u64> {
        let v = match self.version.offset_bytes() {
            8 => self.u64(field)? as i64,
            _ => i64::from(self.u32(field)? as i32),
        };
        u64::try_from(v).map_err(|_| malformed(field(), format!("{v} is negative")))
    }

    /// Skips the padding after `n` bytes, to a multiple of 4.
    fn pad(&mut self, n: u64, field: &dyn Fn() -> String) -> Result<()> {
        let p = (4 - n % 4) % 4;
        self.take(p, field).map(drop)
    }

    /// A name: its length, its bytes (UTF-8; no `/` and no NUL, as netCDF names), its
    /// padding.
    fn name(&mut self, field: &dyn Fn() -> String) -> Result<String> {
        let n = self.count(&|| format!("{}: name length", field()))?;
        if n == 0 {
            return Err(malformed(field(), "an empty name"));
        }
        let bytes = self.take(n, &|| format!("{}: name ({n} bytes)", field()))?;
        let name = std::str::from_utf8(bytes)
            .map_err(|e| malformed(field(), format!("a name that is not UTF-8: {e}")))?
            .to_string();
        if name.contains(['/', '\0']) {
            return Err(malformed(
                field(),
                format!("the name {name:?} holds '/' or NUL, which netCDF names may not"),
            ));
        }
        self.pad(n, &|| format!("{}: name padding", field()))?;
        Ok(name)
    }

    /// A list's tag and count (`label`: the list, in messages): `ABSENT` is `(0, 0)`;
    /// any other tag but `tag` (`NC_` + `kind`) is refused, as is a count of more
    /// entries of at least `least` bytes than the file holds.
    fn list(&mut self, (tag, kind): (u32, &str), label: &str, least: u64) -> Result<u64> {
        let got = self.u32(&|| label.to_string())?;
        let n = self.count(&|| format!("{label}: nelems"))?;
        if got == 0 && n == 0 {
            return Ok(0);
        }
        if got != tag {
            return Err(malformed(
                label,
                format!("tag {got}, not {tag} (NC_{kind})"),
            ));
        }
        if n > self.left() / least {
            return Err(malformed(
                format!("{label}: nelems"),
                format!(
                    "{n} entries of at least {least} bytes each, in the {} bytes left",
                    self.left()
                ),
            ));
        }
        Ok(n)
    }

    /// An attribute list: the global attributes (`of` `None`), or those of a variable
    /// (`of`: `variable "t"`, which fields are named after).
    fn attrs(&mut self, of: Option<&str>) -> Result<Vec<Attribute>> {
        let c = self.version.count_bytes();
        let prefix = of.map(|o| format!("{o}: ")).unwrap_or_default();
        let label = format!(
            "{prefix}{}",
            if of.is_some() {
                "vatt_list"
            } else {
                "gatt_list"
            }
        );
        let n = self.list((TAG_ATTRIBUTE, "ATTRIBUTE"), &label, 2 * c + 4)?;
        let mut attrs = Vec::new();
        for k in 0..n {
            let name = self.name(&|| format!("{prefix}attribute {k}"))?;
            let field = |f: &str| format!("{prefix}attribute {name:?}: {f}");
            let code = self.u32(&|| field("nc_type"))?;
            let t = NcType::of_code(code, self.version == Version::Data64).ok_or_else(|| {
                malformed(
                    field("nc_type"),
                    format!("{code}, no type of {}", self.version.name()),
                )
            })?;
            let count = self.count(&|| field("nelems"))?;
            let bytes = count
                .checked_mul(t.size())
                .filter(|&b| b <= self.left())
                .ok_or_else(|| {
                    malformed(
                        field("nelems"),
                        format!(
                            "{count} values of {} bytes, more than the {} bytes left",
                            t.size(),
                            self.left()
                        ),
                    )
                })?;
            let values = t.values(self.take(bytes, &|| field("values"))?);
            self.pad(bytes, &|| field("padding"))?;
            attrs.push(Attribute { name, values });
        }
        Ok(attrs)
    }
}

/// Parses the header of a file of `len` bytes that `src` reads.
pub fn parse<R: ReadAt + ?Sized>(src: &R, len: u64) -> Result<Header> {
    let mut magic = [0u8; 4];
    if len < 4 {
        return Err(malformed(
            "magic",
            format!("the file holds {len} bytes, fewer than the 4 of the magic number"),
        ));
    }
    src.read_at(&mut magic, 0)?;
    let version = match (&magic[..3], Version::of_byte(magic[3])) {
        (b"CDF", Some(v)) => v,
        _ => {
            return Err(malformed(
                "magic",
                format!("{magic:02x?}, not CDF followed by 1, 2 or 5"),
            ))
        }
    };
    let mut c = Cursor {
        src,
        len,
        pos: 4,
        window: Vec::new(),
        window_at: 0,
        version,
    };
    let numrecs = match version.count_bytes() {
        8 => match c.u64(&|| "numrecs".into())? {
            u64::MAX => None,
            n if n > i64::MAX as u64 => {
                return Err(malformed("numrecs", format!("{} is negative", n as i64)))
            }
            n => Some(n),
        },
        _ => match c.u32(&|| "numrecs".into())? {
            u32::MAX => None,
            n => Some(u64::from(n)),
        },
    };
    let cb = version.count_bytes();
    let ndims = c.list((TAG_DIMENSION, "DIMENSION"), "dim_list", 2 * cb)?;
    let mut dims = Vec::new();
    for k in 0..ndims {
        let name = c.name(&|| format!("dimension {k}"))?;
        let len = c.count(&|| format!("dimension {name:?}: dim_length"))?;
        if dims.iter().any(|d: &Dim| d.name == name) {
            return Err(malformed(
                format!("dimension {name:?}"),
                "a second dimension of that name",
            ));
        }
        if len == 0 && dims.iter().any(|d: &Dim| d.len == 0) {
            return Err(malformed(
                format!("dimension {name:?}"),
                "a second record (unlimited) dimension: a classic file has one",
            ));
        }
        dims.push(Dim { name, len });
    }
    let attrs = c.attrs(None)?;
    let least = 4 * cb + 8 + version.offset_bytes();
    let nvars = c.list((TAG_VARIABLE, "VARIABLE"), "var_list", least)?;
    let mut vars = Vec::new();
    for k in 0..nvars {
        let name = c.name(&|| format!("variable {k}"))?;
        let field = |f: &str| format!("variable {name:?}: {f}");
        let rank = c.count(&|| field("nelems (rank)"))?;
        if rank > c.left() / cb {
            return Err(malformed(
                field("nelems (rank)"),
                format!(
                    "{rank} dimension ids, more than the {} bytes left hold",
                    c.left()
                ),
            ));
        }
        let mut dimids = Vec::new();
        for axis in 0..rank {
            let id = c.count(&|| field(&format!("dimid {axis}")))?;
            let d = usize::try_from(id)
                .ok()
                .filter(|&i| i < dims.len())
                .ok_or_else(|| {
                    malformed(
                        field(&format!("dimid {axis}")),
                        format!("{id}, and the file has {} dimensions", dims.len()),
                    )
                })?;
            if axis > 0 && dims[d].len == 0 {
                return Err(malformed(
                    field(&format!("dimid {axis}")),
                    format!(
                        "the record dimension {:?} as axis {axis}: it may only be the first",
                        dims[d].name
                    ),
                ));
            }
            dimids.push(d);
        }
        let vattrs = c.attrs(Some(&format!("variable {name:?}")))?;
        let code = c.u32(&|| field("nc_type"))?;
        let nc_type = NcType::of_code(code, version == Version::Data64).ok_or_else(|| {
            malformed(
                field("nc_type"),
                format!("{code}, no type of {}", version.name()),
            )
        })?;
        let vsize = c.count(&|| field("vsize"))?;
        let begin = c.offset(&|| field("begin"))?;
        vars.push(Var {
            name,
            dimids,
            attrs: vattrs,
            nc_type,
            vsize,
            begin,
        });
    }
    let mut seen = std::collections::HashSet::new();
    if let Some(v) = vars.iter().find(|v| !seen.insert(v.name.as_str())) {
        return Err(malformed(
            format!("variable {:?}", v.name),
            "a second variable of that name",
        ));
    }
    Ok(Header {
        version,
        numrecs,
        dims,
        attrs,
        vars,
        len: c.pos,
    })
}
