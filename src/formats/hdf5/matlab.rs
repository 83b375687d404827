//! MATLAB v7.3 `.mat` files: HDF5 with a 512-byte user block, each variable a dataset
//! (a struct a group) whose `MATLAB_class` attribute says what it holds. Variables keep
//! MATLAB's shape, h5py's reversed: the file holds them column-major already, so they
//! go into `.ra` as they lie. `logical` variables (bytes 0 and 1) are Bools; `char`
//! variables (UTF-16 code units) are text, as `scipy.io.loadmat` gives them by
//! default: the last axis made strings (`|U{n}`), a 1×5 char array one string of
//! five characters. Cell arrays (object references into `#refs#`) and empty arrays
//! (whose data is their shape) are refused by name.

use std::path::Path;

use super::attrs;
use super::Dataset;
use crate::convert::{Block, Source};
use crate::descr::Descr;
use crate::error::{Error, ErrorKind, Result, ResultExt};

/// Largest char array read as text (it is converted in memory).
const MAX_TEXT: u64 = 64 << 20;

/// What a MATLAB variable's class makes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Class {
    /// Numbers as they are (double, single, the integers; complex as `real`/`imag`).
    Plain,
    /// `logical`: Bools.
    Logical,
    /// `char`: text.
    Char,
}

/// The class of the variable `ds`, or why it is refused.
pub fn class(ds: &Dataset) -> std::result::Result<Class, String> {
    let name = attrs::string(&ds.attributes, "MATLAB_class").unwrap_or_default();
    let empty = ds
        .attributes
        .iter()
        .find(|a| a.name == "MATLAB_empty")
        .and_then(attrs::value)
        .is_some_and(|v| v.as_u64().unwrap_or(0) != 0 || v == serde_json::json!(true));
    if empty {
        return Err(
            "a MATLAB empty array (its data is its shape, not its elements): it holds no \
             elements"
                .into(),
        );
    }
    match name.as_str() {
        "logical" => Ok(Class::Logical),
        "char" => Ok(Class::Char),
        "cell" => Err(
            "a MATLAB cell array (object references to its elements in #refs#: \
             convert each of those by name, or read the file with scipy or mat73)"
                .into(),
        ),
        _ => Ok(Class::Plain),
    }
}

/// The descr of a logical variable stored as `descr` (one-byte integers): Bools.
pub fn logical(descr: &Descr) -> Option<Descr> {
    match descr {
        Descr::Simple {
            kind: 'u' | 'i' | 'b',
            count: 1,
            ..
        } => Some(Descr::Simple {
            order: '|',
            kind: 'b',
            count: 1,
        }),
        _ => None,
    }
}

/// The char variable `codes` reads (UTF-16 code units, `u16`, in MATLAB's shape) as
/// text: the last axis made strings of UTF-32 characters (`<U{n}`, NumPy's, `n` the
/// longest string's), the other axes kept: the strings' descr, dims and native
/// column-major bytes.
pub fn text(codes: &dyn Source, shown: &Path) -> Result<(Descr, Vec<u64>, Vec<u8>)> {
    let d = codes.desc();
    let Some((&n, lead)) = d.dims.split_last() else {
        return Err(Error::from(ErrorKind::Unsupported(
            "a MATLAB char array of no dims".into(),
        ))
        .at(shown));
    };
    if d.nbytes() > MAX_TEXT {
        return Err(Error::from(ErrorKind::Unsupported(format!(
            "a MATLAB char array of {} bytes, read as text in memory up to {MAX_TEXT}: name \
             it with rastore.read for its codes",
            d.nbytes()
        )))
        .at(shown));
    }
    let mut raw = vec![0u8; d.nbytes() as usize];
    codes.read_box(&Block::all(&d.dims), &mut raw)?;
    let units: Vec<u16> = raw
        .chunks_exact(2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .collect();
    let strings = lead.iter().product::<u64>() as usize;
    let n = n as usize;
    // Each string: its units are `strings` apart (column-major, the last axis slowest).
    let decoded: Vec<Vec<char>> = (0..strings)
        .map(|k| {
            let one = (0..n).map(|j| units[k + strings * j]);
            char::decode_utf16(one)
                .map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER))
                .collect()
        })
        .collect();
    let width = decoded.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mut out = vec![0u8; strings * width * 4];
    for (k, s) in decoded.iter().enumerate() {
        for (j, c) in s.iter().enumerate() {
            let at = (k * width + j) * 4;
            out[at..at + 4].copy_from_slice(&(*c as u32).to_le_bytes());
        }
    }
    let descr = Descr::Simple {
        order: '<',
        kind: 'U',
        count: width as u64,
    };
    descr.itemsize().at(shown)?;
    Ok((descr, lead.to_vec(), out))
}
