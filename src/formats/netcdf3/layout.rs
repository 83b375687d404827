//! Where each variable's data lies, computed from the shapes (never from `vsize`, which
//! CDF-1 and CDF-2 truncate for variables past 4 GiB), and checked against the file:
//!
//! - A fixed-size variable is its values in C order from `begin`.
//! - The record variables share the records: record `i` of a variable is at
//!   `begin + i * recsize`, where `recsize` is the sum of their per-record sizes, each
//!   rounded up to 4 bytes; but when there is exactly one record variable its records
//!   are not padded (the C library's special case), so they lie one after another.
//! - `numrecs` `STREAMING` (all ones) is found from the file's length: the whole
//!   records after the first record variable's `begin`.
//!
//! Refused, naming the variable or field: data past the end of the file (a `begin` or
//! a `numrecs` that lies), data that overlaps the header or other data, records that
//! overflow `recsize`, sizes that overflow.

use crate::cdm;
use crate::error::Result;
use crate::formats::npy::NpyHeader;

use super::header::{malformed, Dim, Header, Version};
use super::types::NcType;

/// A variable and where its data lies.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Its type.
    pub nc_type: NcType,
    /// Its dimensions, by index into [`NcFile::dims`].
    pub dimids: Vec<usize>,
    /// Its shape, first axis first; a record variable's first extent is `numrecs`.
    pub shape: Vec<u64>,
    /// Whether its first dimension is the record dimension.
    pub record: bool,
    /// Where its data (of a record variable: its part of the first record) starts.
    pub begin: u64,
    /// Bytes of its data: all of it, or of a record variable one record's.
    pub slab: u64,
    /// Its attributes.
    pub attrs: Vec<cdm::Attribute>,
}

/// A parsed, checked classic file.
#[derive(Debug, Clone, PartialEq)]
pub struct NcFile {
    /// Its version.
    pub version: Version,
    /// Its dimensions (the record dimension's `len` is 0: its length is `numrecs`).
    pub dims: Vec<Dim>,
    /// Its global attributes.
    pub attrs: Vec<cdm::Attribute>,
    /// Its variables, in the header's order.
    pub vars: Vec<Variable>,
    /// The record count (from the file's length, when the header says `STREAMING`).
    pub numrecs: u64,
    /// Whether the header's `numrecs` was `STREAMING`.
    pub streaming: bool,
    /// Bytes from one record to the next.
    pub recsize: u64,
    /// Bytes of the header.
    pub header_len: u64,
    /// Bytes of the file.
    pub len: u64,
}

impl NcFile {
    /// The variable named `name`.
    pub fn variable(&self, name: &str) -> Option<&Variable> {
        self.vars.iter().find(|v| v.name == name)
    }

    /// The variables' names, in the header's order.
    pub fn names(&self) -> Vec<&str> {
        self.vars.iter().map(|v| v.name.as_str()).collect()
    }

    /// Bytes from one record of `v` to the next: `None` for a fixed-size variable,
    /// and for the records of the only record variable, which lie one after another.
    pub fn record_stride(&self, v: &Variable) -> Option<u64> {
        (v.record && self.recsize != v.slab && self.numrecs > 1).then_some(self.recsize)
    }

    /// Bytes of `v`'s values.
    pub fn nbytes(&self, v: &Variable) -> u64 {
        match v.record {
            true => v.slab.saturating_mul(self.numrecs),
            false => v.slab,
        }
    }

    /// `v` laid out as a `.npy` header describes an array: big-endian, C order, from
    /// `begin` (a record variable of no records, whose `begin` may lie past the end of
    /// the file, from the end). Of a record variable whose records are not contiguous
    /// ([`record_stride`](Self::record_stride)), only where the first record starts.
    pub fn npy_layout(&self, v: &Variable) -> NpyHeader {
        let empty = self.nbytes(v) == 0;
        NpyHeader {
            version: (1, 0),
            descr: v.nc_type.descr(),
            fortran_order: false,
            shape: v.shape.clone(),
            data_offset: if empty {
                v.begin.min(self.len)
            } else {
                v.begin
            },
        }
    }

    /// The dataset in the netCDF data model: each variable's type, shape, dimension
    /// names and attributes, and the global attributes.
    pub fn model(&self) -> cdm::Dataset {
        cdm::Dataset {
            attributes: self.attrs.clone(),
            variables: self.vars.iter().map(|v| self.model_of(v)).collect(),
        }
    }

    /// The variable `v` in the netCDF data model.
    pub fn model_of(&self, v: &Variable) -> cdm::Variable {
        cdm::Variable {
            name: v.name.clone(),
            dtype: v.nc_type.dtype(),
            descr: (v.nc_type == NcType::Char).then(|| v.nc_type.descr()),
            shape: v.shape.clone(),
            dims: v
                .dimids
                .iter()
                .map(|&d| self.dims[d].name.clone())
                .collect(),
            attributes: v.attrs.clone(),
        }
    }
}

/// The checked layout of the file of `len` bytes whose header is `h`.
pub fn lay_out(h: Header, len: u64) -> Result<NcFile> {
    let mut vars = Vec::with_capacity(h.vars.len());
    for v in h.vars {
        let field = |f: &str| format!("variable {:?}: {f}", v.name);
        let record = v.dimids.first().is_some_and(|&d| h.dims[d].len == 0);
        let fixed: Vec<u64> = v
            .dimids
            .iter()
            .skip(usize::from(record))
            .map(|&d| h.dims[d].len)
            .collect();
        let slab = crate::header::checked_bytes(v.nc_type.size(), &fixed).ok_or_else(|| {
            malformed(
                field("shape"),
                format!("{fixed:?} of {}-byte values overflows", v.nc_type.size()),
            )
        })?;
        let mut shape = fixed;
        if record {
            shape.insert(0, 0);
        }
        vars.push(Variable {
            name: v.name,
            nc_type: v.nc_type,
            dimids: v.dimids,
            shape,
            record,
            begin: v.begin,
            slab,
            attrs: v.attrs,
        });
    }
    let records: Vec<&Variable> = vars.iter().filter(|v| v.record).collect();
    let recsize = match records.as_slice() {
        [] => 0,
        // The C library's special case: one record variable's records are not padded.
        [one] => one.slab,
        many => many
            .iter()
            .try_fold(0u64, |acc, v| {
                acc.checked_add(v.slab.checked_next_multiple_of(4)?)
            })
            .ok_or_else(|| malformed("recsize", "the record variables' sizes overflow"))?,
    };
    let begin_rec = records.iter().map(|v| v.begin).min().unwrap_or(0);
    let numrecs = match (h.numrecs, recsize) {
        (Some(n), _) => n,
        (None, 0) => 0,
        (None, r) => len.saturating_sub(begin_rec) / r,
    };
    for v in vars.iter_mut().filter(|v| v.record) {
        v.shape[0] = numrecs;
    }
    let file = NcFile {
        version: h.version,
        dims: h.dims,
        attrs: h.attrs,
        vars,
        numrecs,
        streaming: h.numrecs.is_none(),
        recsize,
        header_len: h.len,
        len,
    };
    check(&file, len, begin_rec)?;
    Ok(file)
}

/// Every variable's data within the file, none overlapping the header or another's.
fn check(f: &NcFile, len: u64, begin_rec: u64) -> Result<()> {
    // (start, end, whose): the header, the fixed-size variables, the records.
    let mut spans: Vec<(u64, u64, String)> = vec![(0, f.header_len, "the header".into())];
    let mut record_end = begin_rec;
    for v in &f.vars {
        let what = format!("variable {:?}", v.name);
        if !v.record {
            let end = v.begin.checked_add(v.slab).filter(|&e| e <= len);
            let Some(end) = end else {
                return Err(malformed(
                    format!("{what}: begin"),
                    format!(
                        "{} bytes of data at {}, past the end of the file ({len} bytes)",
                        v.slab, v.begin
                    ),
                ));
            };
            spans.push((v.begin, end, what));
            continue;
        }
        if f.numrecs == 0 {
            continue;
        }
        let within = v.begin - begin_rec;
        if within.saturating_add(v.slab) > f.recsize {
            return Err(malformed(
                format!("{what}: begin"),
                format!(
                    "{} bytes per record at {within} bytes into a record of {}",
                    v.slab, f.recsize
                ),
            ));
        }
        let end = (f.numrecs - 1)
            .checked_mul(f.recsize)
            .and_then(|b| b.checked_add(v.begin))
            .and_then(|b| b.checked_add(v.slab))
            .filter(|&e| e <= len);
        let Some(end) = end else {
            return Err(malformed(
                "numrecs",
                format!(
                    "{} records of {} bytes from {}: the {what}'s run past the end of the \
                     file ({len} bytes)",
                    f.numrecs, f.recsize, v.begin
                ),
            ));
        };
        record_end = record_end.max(end);
    }
    if f.numrecs > 0 && record_end > begin_rec {
        spans.push((begin_rec, record_end, "the record variables".into()));
        // Within a record, each record variable's part apart from the others'.
        let mut parts: Vec<(u64, u64, String)> = f
            .vars
            .iter()
            .filter(|v| v.record)
            .map(|v| (v.begin, v.begin + v.slab, format!("variable {:?}", v.name)))
            .collect();
        disjoint(&mut parts)?;
    }
    disjoint(&mut spans)
}

/// Refuses spans that overlap, naming both.
fn disjoint(spans: &mut [(u64, u64, String)]) -> Result<()> {
    spans.sort();
    for w in spans.windows(2) {
        let ((a0, a1, a), (b0, b1, b)) = (&w[0], &w[1]);
        if b0 < a1 {
            return Err(malformed(
                format!("{b}: begin"),
                format!("its data [{b0}, {b1}) overlaps {a} [{a0}, {a1})"),
            ));
        }
    }
    Ok(())
}
