//! The parser and layout on files built byte by byte: records interleaved and padded,
//! the one record variable unpadded, STREAMING, every version's field widths, and
//! hostile headers, each refused naming its field.

use super::header::Version;
use super::*;
use crate::cdm::Values;
use crate::convert::{Block, Source};

/// A variable to write: name, dimension ids, `nc_type` code, attributes.
struct V<'a> {
    name: &'a str,
    dims: &'a [u64],
    code: u32,
    attrs: &'a [(&'a str, u32, &'a [u8], u64)],
}

/// Writes classic headers.
struct W {
    version: Version,
    out: Vec<u8>,
}

impl W {
    fn count(&mut self, n: u64) {
        match self.version {
            Version::Data64 => self.out.extend(n.to_be_bytes()),
            _ => self.out.extend((n as u32).to_be_bytes()),
        }
    }

    fn offset(&mut self, n: u64) {
        match self.version {
            Version::Classic => self.out.extend((n as u32).to_be_bytes()),
            _ => self.out.extend(n.to_be_bytes()),
        }
    }

    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }

    fn name(&mut self, s: &str) {
        self.count(s.len() as u64);
        self.out.extend(s.as_bytes());
        self.pad();
    }

    fn attrs(&mut self, attrs: &[(&str, u32, &[u8], u64)]) {
        if attrs.is_empty() {
            self.out.extend(0u32.to_be_bytes());
            self.count(0);
            return;
        }
        self.out.extend(12u32.to_be_bytes());
        self.count(attrs.len() as u64);
        for (name, code, bytes, n) in attrs {
            self.name(name);
            self.out.extend(code.to_be_bytes());
            self.count(*n);
            self.out.extend(*bytes);
            self.pad();
        }
    }
}

/// A header of `version` with `numrecs`, the dimensions `dims`, the global attributes
/// and the variables, each at the begin `begins` gives (all 0 when empty).
fn header(
    version: Version,
    numrecs: u64,
    dims: &[(&str, u64)],
    gatts: &[(&str, u32, &[u8], u64)],
    vars: &[V<'_>],
    begins: &[u64],
) -> Vec<u8> {
    let byte = match version {
        Version::Classic => 1,
        Version::Offset64 => 2,
        Version::Data64 => 5,
    };
    let mut w = W {
        version,
        out: vec![b'C', b'D', b'F', byte],
    };
    w.count(numrecs);
    w.out.extend(10u32.to_be_bytes());
    w.count(dims.len() as u64);
    for (name, len) in dims {
        w.name(name);
        w.count(*len);
    }
    w.attrs(gatts);
    w.out.extend(11u32.to_be_bytes());
    w.count(vars.len() as u64);
    for (k, v) in vars.iter().enumerate() {
        w.name(v.name);
        w.count(v.dims.len() as u64);
        for d in v.dims {
            w.count(*d);
        }
        w.attrs(v.attrs);
        w.out.extend(v.code.to_be_bytes());
        w.count(0);
        w.offset(begins.get(k).copied().unwrap_or(0));
    }
    w.out
}

/// A CDF-`version` file: `t` (record, f64), `b` (record × x, i16), `c` (x, i8, fixed),
/// two records: `c` after the header, then the records of 8 + 8 (6 padded) bytes.
fn interleaved(version: Version) -> Vec<u8> {
    let dims = [("time", 0), ("x", 3)];
    let units = b"days since 2000-01-01";
    let vars = [
        V {
            name: "t",
            dims: &[0],
            code: 6,
            attrs: &[("units", 2, units, units.len() as u64)],
        },
        V {
            name: "b",
            dims: &[0, 1],
            code: 3,
            attrs: &[("scale_factor", 5, &0.5f32.to_be_bytes(), 1)],
        },
        V {
            name: "c",
            dims: &[1],
            code: 1,
            attrs: &[],
        },
    ];
    let gatts: &[(&str, u32, &[u8], u64)] = &[("title", 2, b"run", 3), ("n", 4, &[0, 0, 0, 7], 1)];
    let h = header(version, 2, &dims, gatts, &vars, &[]).len() as u64;
    let (c, rec) = (h, h + 4);
    let mut f = header(version, 2, &dims, gatts, &vars, &[rec, rec + 8, c]);
    f.extend([1u8, 2, 0xff, 0]);
    for r in 0..2u8 {
        f.extend(f64::from(r + 1).to_be_bytes());
        for k in 0..3i16 {
            f.extend((10 * i16::from(r) + k).to_be_bytes());
        }
        f.extend([0, 0]);
    }
    // The last record's padding may be missing: the data ends with `b`'s.
    f.truncate(f.len() - 2);
    f
}

fn parsed(bytes: &[u8]) -> crate::Result<NcFile> {
    parse(bytes, bytes.len() as u64)
}

/// The field of a `Malformed` error.
fn field_of(e: &crate::Error) -> String {
    match e.kind() {
        crate::ErrorKind::Malformed { field, .. } => field.clone(),
        other => panic!("not Malformed: {other:?}"),
    }
}

/// `bytes` written to a scratch file, named after `tag`.
fn scratch(tag: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = std::env::temp_dir().join(format!("rastore-netcdf3-{}-{tag}.nc", std::process::id()));
    std::fs::write(&p, bytes).unwrap();
    p
}

fn read_all(path: &std::path::Path, name: &str) -> (Vec<u64>, Vec<u8>) {
    let s = engine::open_variable(path, name).unwrap();
    let dims = s.desc().dims.clone();
    let mut out = vec![0u8; s.desc().nbytes() as usize];
    s.read_box(&Block::all(&dims), &mut out).unwrap();
    (dims, out)
}

#[test]
fn records_interleave_in_every_version() {
    for version in [Version::Classic, Version::Offset64, Version::Data64] {
        let bytes = interleaved(version);
        let nc = parsed(&bytes).unwrap();
        assert_eq!((nc.numrecs, nc.recsize), (2, 16), "{version:?}");
        let b = nc.variable("b").unwrap();
        assert_eq!((b.shape.clone(), b.slab, b.record), (vec![2, 3], 6, true));
        assert_eq!(nc.record_stride(b), Some(16));
        assert_eq!(nc.record_stride(nc.variable("c").unwrap()), None);
        let model = nc.model();
        assert_eq!(model.variable("b").unwrap().dims, ["time", "x"]);
        assert_eq!(model.attributes[1].values, Values::I32(vec![7]));
        assert_eq!(
            model.variable("b").unwrap().attributes[0].values,
            Values::F32(vec![0.5])
        );
        let path = scratch(version.name(), &bytes);
        // b: C order [[0, 1, 2], [10, 11, 12]] read column-major.
        let (dims, out) = read_all(&path, "b");
        assert_eq!(dims, [2, 3]);
        let v: Vec<i16> = out
            .chunks(2)
            .map(|c| i16::from_ne_bytes([c[0], c[1]]))
            .collect();
        assert_eq!(v, [0, 10, 1, 11, 2, 12]);
        let (_, t) = read_all(&path, "t");
        assert_eq!(t[..8], 1f64.to_ne_bytes());
        assert_eq!(t[8..], 2f64.to_ne_bytes());
        assert_eq!(read_all(&path, "c").1, [1, 2, 0xff]);
        // A selection across records: b[1, 0:3:2].
        let s = engine::open_variable(&path, "b").unwrap();
        let mut two = [0u8; 4];
        let sel = [crate::Stride::new(1, 1, 1), crate::Stride::new(0, 2, 2)];
        s.read_selection(&sel, &mut two).unwrap();
        assert_eq!(two, [10i16.to_ne_bytes(), 12i16.to_ne_bytes()].concat()[..]);
        // Closed before the file is removed (Windows removes no open file).
        drop(s);
        assert!(engine::placed(&path, "b").is_err());
        assert_eq!(
            engine::placed(&path, "c").unwrap().data_offset,
            nc.variable("c").unwrap().begin
        );
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn one_record_variable_is_unpadded_and_streaming_counts_records() {
    // One i8 record variable of 3 values per record: records 3 bytes apart, not 4.
    let dims = [("time", 0), ("x", 3)];
    let vars = [V {
        name: "a",
        dims: &[0, 1],
        code: 1,
        attrs: &[],
    }];
    for (numrecs, streaming) in [(3u64, false), (u64::from(u32::MAX), true)] {
        let h = header(Version::Classic, numrecs, &dims, &[], &vars, &[]).len() as u64;
        let mut f = header(Version::Classic, numrecs, &dims, &[], &vars, &[h]);
        f.extend(1..=9u8);
        // Half a record more: STREAMING counts whole records only.
        if streaming {
            f.extend([10, 11]);
        }
        let nc = parsed(&f).unwrap();
        assert_eq!((nc.numrecs, nc.recsize, nc.streaming), (3, 3, streaming));
        let a = nc.variable("a").unwrap();
        assert_eq!(nc.record_stride(a), None, "contiguous records");
        let path = scratch(&format!("one-{streaming}"), &f);
        let (dims, out) = read_all(&path, "a");
        assert_eq!(dims, [3, 3]);
        assert_eq!(out, [1, 4, 7, 2, 5, 8, 3, 6, 9]);
        std::fs::remove_file(&path).unwrap();
    }
}

#[test]
fn every_prefix_of_a_file_is_refused() {
    let bytes = interleaved(Version::Offset64);
    for k in 0..bytes.len() {
        let e = parsed(&bytes[..k]).unwrap_err();
        assert!(
            matches!(e.kind(), crate::ErrorKind::Malformed { .. }),
            "{k}: {e}"
        );
    }
}

#[test]
fn hostile_headers_are_refused_naming_the_field() {
    let good = interleaved(Version::Data64);
    let nc = parsed(&good).unwrap();
    let at = |needle: &[u8]| {
        good.windows(needle.len())
            .position(|w| w == needle)
            .unwrap()
    };
    let patch = |at: usize, with: &[u8]| {
        let mut b = good.clone();
        b[at..at + with.len()].copy_from_slice(with);
        b
    };
    // nelems of the dim_list (after magic and the 8-byte numrecs, and its tag): 2^60.
    let b = patch(16, &(1u64 << 60).to_be_bytes());
    assert_eq!(field_of(&parsed(&b).unwrap_err()), "dim_list: nelems");
    // A name's length of 2^40.
    let b = patch(24, &(1u64 << 40).to_be_bytes());
    assert_eq!(
        field_of(&parsed(&b).unwrap_err()),
        "dimension 0: name (1099511627776 bytes)"
    );
    // numrecs 1000: the records run past the end.
    let b = patch(4, &1000u64.to_be_bytes());
    assert_eq!(field_of(&parsed(&b).unwrap_err()), "numrecs");
    // A negative numrecs (CDF-5's are signed 64-bit).
    let b = patch(4, &(-5i64).to_be_bytes());
    assert_eq!(field_of(&parsed(&b).unwrap_err()), "numrecs");
    // c's begin (the last 8 bytes of the header) past the end, inside the header, and
    // over the records.
    let hlen = nc.header_len as usize;
    let begin = hlen - 8;
    for (to, field) in [
        (1u64 << 62, "variable \"c\": begin"),
        (8, "variable \"c\": begin"),
        (nc.header_len + 6, "variable \"c\": begin"),
        (nc.header_len + 3, "the record variables: begin"),
        (u64::MAX, "variable \"c\": begin"),
    ] {
        let b = patch(begin, &to.to_be_bytes());
        let e = parsed(&b).unwrap_err();
        assert_eq!(field_of(&e), field, "{to}: {e}");
    }
    // An attribute's nelems of 2^61 values (the units of t).
    let units = at(b"units");
    let b = patch(units + 12, &(1u64 << 61).to_be_bytes());
    assert_eq!(
        field_of(&parsed(&b).unwrap_err()),
        "variable \"t\": attribute \"units\": nelems"
    );
    // A type CDF-1 does not have, and no type at all.
    let mut classic = interleaved(Version::Classic);
    let sf = classic
        .windows(12)
        .position(|w| w == b"scale_factor")
        .unwrap();
    classic[sf + 12..sf + 16].copy_from_slice(&10u32.to_be_bytes());
    assert_eq!(
        field_of(&parsed(&classic).unwrap_err()),
        "variable \"b\": attribute \"scale_factor\": nc_type"
    );
    // A dimid past the dimensions, and the record dimension second.
    let dims = [("time", 0), ("x", 3)];
    let v = |d: &'static [u64]| {
        [V {
            name: "z",
            dims: d,
            code: 5,
            attrs: &[],
        }]
    };
    let h = header(Version::Classic, 0, &dims, &[], &v(&[1, 7]), &[0]);
    assert_eq!(
        field_of(&parsed(&h).unwrap_err()),
        "variable \"z\": dimid 1"
    );
    let h = header(Version::Classic, 0, &dims, &[], &v(&[1, 0]), &[0]);
    assert_eq!(
        field_of(&parsed(&h).unwrap_err()),
        "variable \"z\": dimid 1"
    );
    // A negative begin in CDF-1 (a signed 32-bit offset).
    let h = header(Version::Classic, 0, &dims, &[], &v(&[1]), &[0xffff_fff0]);
    assert_eq!(field_of(&parsed(&h).unwrap_err()), "variable \"z\": begin");
    // Two record dimensions; a name with a slash; a bad magic.
    let two = header(Version::Classic, 0, &[("a", 0), ("b", 0)], &[], &[], &[]);
    assert_eq!(field_of(&parsed(&two).unwrap_err()), "dimension \"b\"");
    let slash = header(Version::Classic, 0, &[("a/b", 2)], &[], &[], &[]);
    assert_eq!(field_of(&parsed(&slash).unwrap_err()), "dimension 0");
    assert_eq!(field_of(&parsed(b"CDF\x03\0\0\0\0").unwrap_err()), "magic");
    assert!(looks_like(b"CDF\x05") && !looks_like(b"CDF\x03") && !looks_like(b"CD"));
}
