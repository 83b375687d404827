//! NumPy's descr of elements: type strings (`<f4`, `|S10`) and structured dtypes,
//! as `.npy` headers, `.npz` members and the NDL trailers that record them hold
//! them. Parsed from their Python literal safely (no eval, a depth cap, a clear
//! error for every malformed literal), mapped to RawArray element types, and
//! written back as NumPy writes them. The literal parser serves the `.npy` header
//! dict too.

use std::fmt::Write as _;

use crate::dtype::{DType, Kind};
use crate::error::{ErrorKind, Result};

/// Nesting allowed in the header literal (structured dtypes nest).
const MAX_DEPTH: usize = 32;

pub(crate) fn bad(detail: impl Into<String>) -> crate::Error {
    ErrorKind::Decode {
        codec: "npy",
        detail: detail.into(),
    }
    .into()
}

/// A Python literal as it appears in an NPY header.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Lit {
    Str(String),
    Int(u64),
    Bool(bool),
    None,
    Seq(Vec<Lit>),
    Dict(Vec<(Lit, Lit)>),
}

struct LitParser<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> LitParser<'a> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.get(self.pos).copied()
    }

    fn expect(&mut self, c: u8) -> Result<()> {
        match self.peek() {
            Some(x) if x == c => {
                self.pos += 1;
                Ok(())
            }
            other => Err(bad(format!(
                "header: expected '{}' at byte {}, found {}",
                c as char,
                self.pos,
                other.map_or("end".to_string(), |x| format!("'{}'", x.escape_ascii()))
            ))),
        }
    }

    fn value(&mut self, depth: usize) -> Result<Lit> {
        if depth > MAX_DEPTH {
            return Err(bad(format!("header: nested deeper than {MAX_DEPTH}")));
        }
        match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                let items = self.items(b'}', |p| {
                    let k = p.value(depth + 1)?;
                    p.expect(b':')?;
                    Ok((k, p.value(depth + 1)?))
                })?;
                Ok(Lit::Dict(items))
            }
            Some(open @ (b'(' | b'[')) => {
                self.pos += 1;
                let close = if open == b'(' { b')' } else { b']' };
                Ok(Lit::Seq(self.items(close, |p| p.value(depth + 1))?))
            }
            Some(q @ (b'\'' | b'"')) => self.string(q),
            Some(c) if c.is_ascii_digit() => {
                let start = self.pos;
                while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() {
                    self.pos += 1;
                }
                // Python 2 wrote longs as 3L.
                let digits = std::str::from_utf8(&self.s[start..self.pos]).unwrap_or("");
                if self.s.get(self.pos) == Some(&b'L') {
                    self.pos += 1;
                }
                digits
                    .parse()
                    .map(Lit::Int)
                    .map_err(|_| bad(format!("header: integer {digits} out of range")))
            }
            Some(_) => {
                for (word, lit) in [
                    ("True", Lit::Bool(true)),
                    ("False", Lit::Bool(false)),
                    ("None", Lit::None),
                ] {
                    if self.s[self.pos..].starts_with(word.as_bytes()) {
                        self.pos += word.len();
                        return Ok(lit);
                    }
                }
                Err(bad(format!(
                    "header: unexpected input at byte {}",
                    self.pos
                )))
            }
            None => Err(bad("header: ends in the middle of a value")),
        }
    }

    /// Comma-separated `item`s up to `close` (a trailing comma allowed), the opening
    /// bracket already consumed.
    fn items<T>(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut items = Vec::new();
        loop {
            if self.peek() == Some(close) {
                self.pos += 1;
                return Ok(items);
            }
            items.push(item(self)?);
            if self.peek() == Some(b',') {
                self.pos += 1;
            } else {
                self.expect(close)?;
                return Ok(items);
            }
        }
    }

    /// A Python string literal with Python's escapes (`\\x1b`, `\\u00e9`, octal, ...).
    fn string(&mut self, quote: u8) -> Result<Lit> {
        self.pos += 1;
        let mut out = String::new();
        let mut run = self.pos;
        let flush = |p: &Self, out: &mut String, from: usize, to: usize| -> Result<()> {
            let text = std::str::from_utf8(&p.s[from..to])
                .map_err(|_| bad("header: string is not valid text"))?;
            out.push_str(text);
            Ok(())
        };
        while let Some(&c) = self.s.get(self.pos) {
            match c {
                _ if c == quote => {
                    flush(self, &mut out, run, self.pos)?;
                    self.pos += 1;
                    return Ok(Lit::Str(out));
                }
                b'\\' => {
                    flush(self, &mut out, run, self.pos)?;
                    self.pos += 1;
                    self.escape(&mut out)?;
                    run = self.pos;
                }
                b'\n' => return Err(bad("header: newline inside a string")),
                _ => self.pos += 1,
            }
        }
        Err(bad("header: unterminated string"))
    }

    /// One escape sequence after its backslash, as Python reads it in a `str` literal.
    fn escape(&mut self, out: &mut String) -> Result<()> {
        let e = *self
            .s
            .get(self.pos)
            .ok_or_else(|| bad("header: unterminated string"))?;
        self.pos += 1;
        if e == b'\n' {
            // A backslash at the end of a line continues the string on the next.
            return Ok(());
        }
        let simple = match e {
            b'n' => Some('\n'),
            b't' => Some('\t'),
            b'r' => Some('\r'),
            b'a' => Some('\u{7}'),
            b'b' => Some('\u{8}'),
            b'f' => Some('\u{c}'),
            b'v' => Some('\u{b}'),
            b'\\' | b'\'' | b'"' => Some(e as char),
            _ => None,
        };
        if let Some(c) = simple {
            out.push(c);
            return Ok(());
        }
        let code = match e {
            b'x' => self.hex(2)?,
            b'u' => self.hex(4)?,
            b'U' => self.hex(8)?,
            b'0'..=b'7' => {
                let mut v = u32::from(e - b'0');
                for _ in 0..2 {
                    match self.s.get(self.pos) {
                        Some(&d @ b'0'..=b'7') => {
                            v = v * 8 + u32::from(d - b'0');
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                v
            }
            // Python keeps an unknown escape as it is, backslash included.
            _ => {
                out.push('\\');
                self.pos -= 1;
                return Ok(());
            }
        };
        out.push(char::from_u32(code).ok_or_else(|| {
            bad(format!(
                "header: \\{} escape {code:#x} is not a character",
                e as char
            ))
        })?);
        Ok(())
    }

    /// `n` hex digits as a number.
    fn hex(&mut self, n: usize) -> Result<u32> {
        let digits = self
            .s
            .get(self.pos..self.pos + n)
            .and_then(|d| std::str::from_utf8(d).ok())
            .and_then(|d| {
                u32::from_str_radix(d, 16)
                    .ok()
                    .filter(|_| d.bytes().all(|b| b.is_ascii_hexdigit()))
            })
            .ok_or_else(|| {
                bad(format!(
                    "header: escape needs {n} hex digits at byte {}",
                    self.pos
                ))
            })?;
        self.pos += n;
        Ok(digits)
    }
}

pub(crate) fn parse_literal(text: &str) -> Result<Lit> {
    let mut p = LitParser {
        s: text.as_bytes(),
        pos: 0,
    };
    let v = p.value(0)?;
    if p.peek().is_some() {
        return Err(bad(format!(
            "header: unexpected text after the dict at byte {}",
            p.pos
        )));
    }
    Ok(v)
}

/// A NumPy dtype: a simple type string or a structured list of fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Descr {
    /// A type string such as `<f4`, `|b1`, `>i8`, `|S10`, `<U3`, `|V12`.
    Simple {
        /// The byte-order character (`<`, `>`, `|`, `=`).
        order: char,
        /// The kind character (`b`, `i`, `u`, `f`, `c`, `S`, `U`, `V`).
        kind: char,
        /// The number after the kind (bytes, or characters for `U`).
        count: u64,
    },
    /// A structured dtype: named fields, packed in order.
    Struct(Vec<Field>),
}

/// One field of a structured dtype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field's name.
    pub name: String,
    /// Its type.
    pub descr: Descr,
    /// A sub-array shape (empty for a scalar field).
    pub shape: Vec<u64>,
}

impl Descr {
    /// Parses a type string (`<f4`) or a structured descr literal.
    pub fn parse(text: &str) -> Result<Descr> {
        Self::from_lit(&parse_literal(text)?, 0)
    }

    pub(crate) fn from_lit(lit: &Lit, depth: usize) -> Result<Descr> {
        match lit {
            Lit::Str(s) => Self::simple(s),
            Lit::Seq(items) if depth < MAX_DEPTH => {
                let fields = items
                    .iter()
                    .map(|item| Field::from_lit(item, depth + 1))
                    .collect::<Result<Vec<_>>>()?;
                if fields.is_empty() {
                    return Err(bad("descr: a structured dtype needs at least one field"));
                }
                // NumPy refuses a name used twice ("name already used as a name or
                // title"); unnamed fields are padding, and may repeat.
                let mut seen = std::collections::HashSet::new();
                let named = fields.iter().filter(|f| !f.name.is_empty());
                if let Some(f) = named.into_iter().find(|f| !seen.insert(f.name.as_str())) {
                    return Err(bad(format!(
                        "descr: field name {:?} is used twice (NumPy refuses it)",
                        f.name
                    )));
                }
                Ok(Descr::Struct(fields))
            }
            other => Err(bad(format!(
                "descr: expected a type string or a list of fields, got {other:?}"
            ))),
        }
    }

    fn simple(s: &str) -> Result<Descr> {
        let b = s.as_bytes();
        let (order, rest) = match b.first() {
            Some(&c @ (b'<' | b'>' | b'|' | b'=')) => (c as char, &s[1..]),
            _ => ('|', s),
        };
        let mut chars = rest.chars();
        let kind = chars
            .next()
            .ok_or_else(|| bad(format!("descr {s:?}: empty type string")))?;
        let digits = chars.as_str();
        match kind {
            'O' => {
                return Err(ErrorKind::Unsupported(
                    "Python objects (dtype object) cannot be stored in a RawArray: \
                     store numbers, bools, fixed-length strings or structured types"
                        .into(),
                )
                .into())
            }
            'M' | 'm' => {
                return Err(ErrorKind::Unsupported(format!(
                    "NumPy {} ({s:?}) cannot be stored in a RawArray: store \
                     a.astype('i8') and keep the unit beside it",
                    if kind == 'M' {
                        "datetimes"
                    } else {
                        "timedeltas"
                    }
                ))
                .into())
            }
            _ => {}
        }
        let count: u64 = if digits.is_empty() && kind == 'b' {
            1
        } else {
            digits
                .parse()
                .map_err(|_| bad(format!("descr {s:?}: no size after the kind")))?
        };
        let d = Descr::Simple { order, kind, count };
        if !"biufcSUV".contains(kind) {
            return Err(bad(format!(
                "descr {s:?}: kind '{kind}' is not supported (objects and datetimes are not supported)"
            )));
        }
        // The sizes NumPy has for each numeric kind: it refuses any other ('<u3').
        let sizes: &[u64] = match kind {
            'b' => &[1],
            'i' | 'u' => &[1, 2, 4, 8],
            'f' => &[2, 4, 8, 16],
            'c' => &[8, 16, 32],
            _ => &[],
        };
        if !sizes.is_empty() && !sizes.contains(&count) {
            let what = match kind {
                'b' => "bool",
                'i' => "signed integer",
                'u' => "unsigned integer",
                'f' => "float",
                _ => "complex",
            };
            return Err(bad(format!(
                "descr {s:?}: NumPy has no {count}-byte {what} type (sizes {sizes:?})"
            )));
        }
        if d.itemsize()? == 0 {
            return Err(bad(format!("descr {s:?}: zero-sized elements")));
        }
        Ok(d)
    }

    /// Bytes per element.
    pub fn itemsize(&self) -> Result<u64> {
        match self {
            Descr::Simple {
                kind: 'U', count, ..
            } => count
                .checked_mul(4)
                .ok_or_else(|| bad("descr: itemsize overflows")),
            Descr::Simple { count, .. } => Ok(*count),
            Descr::Struct(fields) => fields.iter().try_fold(0u64, |acc, f| {
                let n = f.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
                n.and_then(|n| n.checked_mul(f.descr.itemsize().ok()?))
                    .and_then(|b| acc.checked_add(b))
                    .ok_or_else(|| bad("descr: itemsize overflows"))
            }),
        }
    }

    /// The RawArray element type: numbers map to their types, `|b1` to Julia Bool,
    /// everything else (strings, void, structured, datetimes) to `user<itemsize>`.
    pub fn dtype(&self) -> Result<DType> {
        let size = self.itemsize()?;
        Ok(match self {
            Descr::Simple { kind, count, .. } => {
                let d = match kind {
                    'b' if *count == 1 => DType::BOOL,
                    'i' => DType {
                        eltype: 1,
                        elbyte: *count,
                    },
                    'u' => DType {
                        eltype: 2,
                        elbyte: *count,
                    },
                    // NumPy's 'f16' is the platform's long double (x87 80-bit,
                    // padded, on x86), not the IEEE quad of eltype 3: opaque.
                    'f' if *count <= 8 => DType {
                        eltype: 3,
                        elbyte: *count,
                    },
                    'c' => DType {
                        eltype: 4,
                        elbyte: *count,
                    },
                    _ => DType::user(size),
                };
                if d.kind() == Kind::Other {
                    DType::user(size)
                } else {
                    d
                }
            }
            Descr::Struct(_) => DType::user(size),
        })
    }

    /// Whether the elements are numbers stored big-endian (and so need swapping).
    pub fn big_endian(&self) -> bool {
        let native_big = cfg!(target_endian = "big");
        match self {
            Descr::Simple { order: '>', .. } => true,
            Descr::Simple { order: '=', .. } => native_big,
            _ => false,
        }
    }

    /// The descr as NumPy writes it in a header: `'<f4'` or `[('x', '<f4'), ...]`.
    pub fn to_python(&self) -> String {
        match self {
            Descr::Simple { order, kind, count } => format!("'{order}{kind}{count}'"),
            Descr::Struct(fields) => {
                let parts: Vec<String> = fields.iter().map(Field::to_python).collect();
                format!("[{}]", parts.join(", "))
            }
        }
    }

    /// The NumPy type string for a RawArray type in native byte order, if NumPy has one.
    pub fn for_dtype(dtype: DType) -> Option<Descr> {
        let order = if dtype.elbyte == 1 {
            '|'
        } else if cfg!(target_endian = "big") {
            '>'
        } else {
            '<'
        };
        let kind = match dtype.kind() {
            Kind::Bool => 'b',
            Kind::Int if dtype.elbyte <= 8 => 'i',
            Kind::UInt if dtype.elbyte <= 8 => 'u',
            Kind::Float if dtype.elbyte <= 8 => 'f',
            Kind::Complex if dtype.elbyte >= 8 => 'c',
            Kind::User => 'V',
            _ => return None,
        };
        let order = if kind == 'V' { '|' } else { order };
        Some(Descr::Simple {
            order,
            kind,
            count: dtype.elbyte,
        })
    }
}

/// A Python string literal, escaped as Python's `repr` escapes it, so that NumPy
/// reads back the same name.
fn quote(s: &str) -> String {
    let mut out = String::from("'");
    for c in s.chars() {
        match c {
            '\'' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 && c.is_control() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            _ => out.push(c),
        }
    }
    out.push('\'');
    out
}

pub(crate) fn shape_python(shape: &[u64]) -> String {
    match shape {
        [] => "()".into(),
        [d] => format!("({d},)"),
        _ => {
            let parts: Vec<String> = shape.iter().map(u64::to_string).collect();
            format!("({})", parts.join(", "))
        }
    }
}

/// The integers of a shape literal; `not_int` names any other item.
pub(crate) fn lengths(items: &[Lit], not_int: impl Fn(&Lit) -> crate::Error) -> Result<Vec<u64>> {
    items
        .iter()
        .map(|d| match d {
            Lit::Int(n) => Ok(*n),
            other => Err(not_int(other)),
        })
        .collect()
}

impl Field {
    fn from_lit(lit: &Lit, depth: usize) -> Result<Field> {
        let Lit::Seq(parts) = lit else {
            return Err(bad(format!("descr: a field must be a tuple, got {lit:?}")));
        };
        let name = match parts.first() {
            Some(Lit::Str(n)) => n.clone(),
            // (title, name) pairs: keep the name.
            Some(Lit::Seq(tn)) if matches!(tn.get(1), Some(Lit::Str(_))) => match &tn[1] {
                Lit::Str(n) => n.clone(),
                _ => unreachable!("matched a string"),
            },
            _ => return Err(bad("descr: a field needs a name")),
        };
        let descr = Descr::from_lit(
            parts
                .get(1)
                .ok_or_else(|| bad(format!("descr: field {name:?} has no type")))?,
            depth,
        )?;
        let bad_shape = || bad(format!("descr: field {name:?} has a bad shape"));
        let shape = match parts.get(2) {
            None => Vec::new(),
            Some(Lit::Int(n)) => vec![*n],
            Some(Lit::Seq(dims)) => lengths(dims, |_| bad_shape())?,
            Some(_) => return Err(bad_shape()),
        };
        if parts.len() > 3 {
            return Err(bad(format!("descr: field {name:?} has extra items")));
        }
        Ok(Field { name, descr, shape })
    }

    fn to_python(&self) -> String {
        let mut s = format!("({}, {}", quote(&self.name), self.descr.to_python());
        if !self.shape.is_empty() {
            let _ = write!(s, ", {}", shape_python(&self.shape));
        }
        s.push(')');
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_descr_round_trips() {
        let text = "[('name', '|S10'), ('age', '<i4'), ('weight', '<f4'), ('xy', '<f8', (2,)), ('p', [('a', '|u1')])]";
        let d = Descr::parse(text).unwrap();
        assert_eq!(d.itemsize().unwrap(), 10 + 4 + 4 + 16 + 1);
        assert_eq!(d.to_python(), text);
        assert_eq!(d.dtype().unwrap(), DType::user(35));
    }

    #[test]
    fn refuses_what_numpy_refuses() {
        let err = |t: &str| Descr::parse(t).unwrap_err().to_string();
        assert!(
            err("'<u3'").contains("no 3-byte unsigned integer"),
            "{}",
            err("'<u3'")
        );
        assert!(err("'<i16'").contains("no 16-byte signed integer"));
        assert!(err("'<c4'").contains("no 4-byte complex"));
        assert!(err("'|b2'").contains("no 2-byte bool"));
        let twice = err("[('a', '<i4'), ('a', '<f8')]");
        assert!(twice.contains("\"a\" is used twice"), "{twice}");
        // Padding fields have no name, and may repeat; every size NumPy has is taken.
        let padded = "[('x', '<f8'), ('', '|V4'), ('y', '<f8'), ('', '|V4')]";
        assert_eq!(Descr::parse(padded).unwrap().itemsize().unwrap(), 24);
        for t in [
            "'<f2'", "'<f16'", "'<c32'", "'|u1'", "'<i8'", "'|S3'", "'|V3'", "'<U3'",
        ] {
            assert!(Descr::parse(t).is_ok(), "{t}");
        }
    }
}
