//! TIFF (issue 38) through the real `ra`: what tifffile writes is read as
//! `tifffile.imread` shows it; what `ra` writes is read back identically by tifffile
//! (and by Pillow for 2-D 8/16-bit images); raw stacks are read in place; hostile
//! files are refused naming the file and the field, leaving nothing.

use std::path::Path;

use crate::common::{python, python_has, tmp};
use crate::tool::{fails, ok, s};

/// Makes, with tifffile, one TIFF per type, layout, compression, predictor, byte order
/// and flavour (classic or BigTIFF) in `dir`, each beside the `.npy` of what
/// `tifffile.imread` gives; prints their names.
const MAKE: &str = r#"
import sys, itertools, numpy as np, tifffile
d = sys.argv[1]
rng = np.random.default_rng(38)
g = dict(photometric='minisblack')
layouts = [((7, 9), {}), ((3, 7, 9), g), ((7, 9, 3), dict(photometric='rgb')),
           ((2, 7, 9, 4), dict(photometric='rgb')),
           ((3, 7, 9), dict(photometric='rgb', planarconfig='separate')),
           ((48, 32), dict(tile=(16, 16))), ((3, 40, 36), dict(tile=(16, 32), **g)),
           ((3, 40, 36), dict(tile=(16, 16), photometric='rgb', planarconfig='separate'))]
n = 0
for dt in ['u1', 'i1', 'u2', 'i2', 'u4', 'i4', 'u8', 'i8', 'f2', 'f4', 'f8']:
    for (shape, kw), comp in itertools.product(layouts, [None, 'lzw', 'zlib', 'packbits']):
        pred = comp in ('lzw', 'zlib') and dt not in ('f2', 'u8', 'i8') and n % 2 == 0
        a = (rng.standard_normal(shape) * 1000).astype(dt)
        p = f'{d}/t{n}.tif'
        tifffile.imwrite(p, a, compression=comp, predictor=pred or None,
                         byteorder='<>'[n % 2], bigtiff=n % 3 == 0, **kw)
        np.save(f'{d}/t{n}.want.npy', tifffile.imread(p))
        print(p)
        n += 1
"#;

/// Compares each `X.tif` named on stdin's list with `X.npy` (what `ra` made) against
/// `X.want.npy`: shape, type (in native order) and values.
const JUDGE: &str = r#"
import sys, numpy as np
bad = []
for p in sys.argv[1:]:
    want, got = np.load(p[:-4] + '.want.npy'), np.load(p[:-4] + '.npy')
    if got.shape != want.shape or got.dtype != want.dtype.newbyteorder('=') \
            or not np.array_equal(got, want, equal_nan=True):
        bad.append((p, got.shape, want.shape, got.dtype, want.dtype))
assert not bad, bad
print('judged', len(sys.argv) - 1)
"#;

#[test]
fn tiffs_tifffile_writes_read_as_tifffile_reads_them() {
    if !python_has("numpy, tifffile") {
        return;
    }
    let d = tmp();
    let made = python(&["-c", MAKE, s(d.path())]);
    let files: Vec<&str> = made.lines().filter(|l| l.ends_with(".tif")).collect();
    assert!(files.len() > 250, "{made}");
    for f in &files {
        let out = format!("{}.npy", &f[..f.len() - 4]);
        ok(&["convert", f, &out]);
    }
    let mut args = vec!["-c", JUDGE];
    args.extend(&files);
    let judged = python(&args);
    assert!(
        judged.contains(&format!("judged {}", files.len())),
        "{judged}"
    );
}

/// Writes NumPy arrays of every type TIFF takes and shapes of 2 to 4 axes as `.npy`,
/// printing their names.
const ARRAYS: &str = r#"
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
n = 0
for dt in ['u1', 'i1', 'u2', 'i2', 'u4', 'i4', 'u8', 'i8', 'f2', 'f4', 'f8']:
    for shape in [(7, 9), (3, 7, 9), (7, 9, 3), (7, 9, 4), (2, 3, 7, 9), (2, 7, 9, 3), (1, 1)]:
        a = (rng.standard_normal(shape) * 100).astype(dt)
        np.save(f'{d}/a{n}.npy', a)
        print(f'{d}/a{n}.npy')
        n += 1
"#;

/// Checks each `X.tif` and `X.z.tif` (Deflate) against `X.npy` with tifffile (and
/// Pillow for 2-D 8/16-bit gray and 8-bit RGB(A)), and `X.back.npy` (TIFF → .ra →
/// Zarr → .npy) with NumPy.
const READ_BACK: &str = r#"
import sys, numpy as np, tifffile
from PIL import Image
for p in sys.argv[1:]:
    a = np.load(p)
    for tif, deflate in [(p[:-4] + '.tif', False), (p[:-4] + '.z.tif', True)]:
        with tifffile.TiffFile(tif) as t:
            b = t.asarray()
            assert b.shape == a.shape and b.dtype.newbyteorder('=') == a.dtype, (tif, b.shape, b.dtype)
            assert np.array_equal(a, b, equal_nan=True), tif
            comp = t.pages[0].compression.name
            assert comp == ('ADOBE_DEFLATE' if deflate else 'NONE'), (tif, comp)
            if not deflate:
                assert t.series[0].dataoffset is not None, tif
        gray = a.ndim == 2 and a.dtype in (np.uint8, np.uint16)
        rgb = a.ndim == 3 and a.shape[2] in (3, 4) and a.dtype == np.uint8
        if gray or rgb:
            assert np.array_equal(np.asarray(Image.open(tif)), a), tif
    back = np.load(p[:-4] + '.back.npy')
    assert back.shape == a.shape and np.array_equal(back, a, equal_nan=True), p
print('read back', len(sys.argv) - 1)
"#;

#[test]
fn arrays_written_as_tiff_read_back_identically_through_ra_and_zarr() {
    if !python_has("numpy, tifffile, PIL") {
        return;
    }
    let d = tmp();
    let made = python(&["-c", ARRAYS, s(d.path())]);
    let files: Vec<&str> = made.lines().filter(|l| l.ends_with(".npy")).collect();
    assert_eq!(files.len(), 77, "{made}");
    for f in &files {
        let stem = &f[..f.len() - 4];
        let (tif, ztif) = (format!("{stem}.tif"), format!("{stem}.z.tif"));
        let (ra, zarr, back) = (
            format!("{stem}.ra"),
            format!("{stem}.zarr"),
            format!("{stem}.back.npy"),
        );
        ok(&["convert", f, &tif]);
        ok(&["convert", "--compress", f, &ztif]);
        ok(&["convert", &ztif, &ra]);
        ok(&["convert", &ra, &zarr]);
        let again = format!("{stem}.again.tif");
        ok(&["convert", &zarr, &again]);
        assert_eq!(
            std::fs::read(&again).unwrap(),
            std::fs::read(&tif).unwrap(),
            "{stem}: the same array makes the same TIFF"
        );
        ok(&["convert", &again, &back]);
    }
    let mut args = vec!["-c", READ_BACK];
    args.extend(&files);
    let judged = python(&args);
    assert!(judged.contains("read back 77"), "{judged}");
}

#[test]
fn arrays_no_tiff_holds_are_refused_before_anything_is_written() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    ok(&["create", s(&p("v.ra")), "--dtype", "uint8", "--shape", "5"]);
    let err = fails(&["convert", s(&p("v.ra")), s(&p("v.tif"))], 1);
    assert!(
        err.contains("v.tif") && err.contains("at least 2 dims"),
        "{err}"
    );
    ok(&[
        "create",
        s(&p("c.ra")),
        "--dtype",
        "complex64",
        "--shape",
        "3,4",
    ]);
    let err = fails(&["convert", s(&p("c.ra")), s(&p("c.tif"))], 1);
    assert!(err.contains("complex64 in a TIFF"), "{err}");
    assert!(!p("v.tif").exists() && !p("c.tif").exists());
}

/// An IFD entry: tag, type, count, value (inline).
type Entry = (u16, u16, u32, u32);

/// An IFD: its offset, its entries, the offset of the next.
type Ifd = (u32, Vec<Entry>, u32);

/// A classic little-endian TIFF: its IFDs (each a list of (tag, type, count, value))
/// at the offsets given, after an 8-byte header pointing to the first, and `tail`
/// bytes after them all.
fn classic(ifds: &[Ifd], tail: &[u8]) -> Vec<u8> {
    let mut b = b"II*\0".to_vec();
    b.extend(ifds[0].0.to_le_bytes());
    for (at, entries, next) in ifds {
        b.resize(*at as usize, 0);
        b.extend((entries.len() as u16).to_le_bytes());
        for (tag, kind, count, value) in entries {
            b.extend(tag.to_le_bytes());
            b.extend(kind.to_le_bytes());
            b.extend(count.to_le_bytes());
            b.extend(value.to_le_bytes());
        }
        b.extend(next.to_le_bytes());
    }
    b.extend(tail);
    b
}

/// The entries of a gray page of `w` × `h` pixels of `bits`-bit unsigned samples, one
/// strip of `count` bytes at `offset`.
fn gray(w: u32, h: u32, bits: u32, offset: u32, count: u32) -> Vec<Entry> {
    vec![
        (256, 4, 1, w),
        (257, 4, 1, h),
        (258, 3, 1, bits),
        (259, 3, 1, 1),
        (262, 3, 1, 1),
        (273, 4, 1, offset),
        (277, 3, 1, 1),
        (278, 4, 1, h),
        (279, 4, 1, count),
    ]
}

/// `ra convert` of `bytes` (as `name`) fails with exit 1 naming the file and each of
/// `words`, and leaves no output.
fn refused(dir: &Path, name: &str, bytes: &[u8], words: &[&str]) {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    let out = dir.join(format!("{name}.npy"));
    let err = fails(&["convert", s(&p), s(&out)], 1);
    assert!(
        err.contains(name) && words.iter().all(|w| err.contains(w)),
        "{name}: {err}"
    );
    assert!(!out.exists(), "{name}: nothing left");
    let err = fails(&["stats", s(&p)], 1);
    assert!(
        err.contains(name) && err.contains(words[0]),
        "{name}: {err}"
    );
    let others: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".tif"))
        .collect();
    assert!(others.is_empty(), "{name}: left {others:?}");
}

#[test]
fn hostile_tiffs_are_refused_naming_the_file_and_the_field() {
    let d = tmp();
    // A valid 4 × 2 page, to start from.
    let good = classic(&[(8, gray(4, 2, 8, 200, 8), 0)], &[0; 100]);
    let p = d.path().join("good.tif");
    std::fs::write(&p, &good).unwrap();
    assert!(ok(&["info", s(&p)]).contains("uint8 [2, 4]"));
    std::fs::remove_file(&p).unwrap();
    // Two IFDs that point to each other.
    let looped = classic(
        &[
            (8, gray(4, 2, 8, 400, 8), 200),
            (200, gray(4, 2, 8, 400, 8), 8),
        ],
        &[0; 200],
    );
    refused(
        d.path(),
        "loop.tif",
        &looped,
        &["IFD 1", "a cycle in the list of IFDs"],
    );
    // A strip past the end of the file.
    let past = classic(&[(8, gray(4, 2, 8, 1 << 30, 8), 0)], &[0; 100]);
    refused(
        d.path(),
        "past.tif",
        &past,
        &["page 0 StripOffsets", "past the end"],
    );
    // 2^64 bytes claimed by a page of 2^32 - 1 squared pixels, stored in 8 bytes.
    let huge = classic(&[(8, gray(u32::MAX, u32::MAX, 8, 200, 8), 0)], &[0; 100]);
    refused(
        d.path(),
        "huge.tif",
        &huge,
        &["page 0 StripByteCounts", "cannot hold them"],
    );
    // A strip of 2^60 bytes claimed in a BigTIFF.
    let mut big = b"II+\0\x08\0\0\0".to_vec();
    big.extend(16u64.to_le_bytes());
    let entries: [(u16, u16, u64); 9] = [
        (256, 4, 4),
        (257, 4, 2),
        (258, 3, 8),
        (259, 3, 1),
        (262, 3, 1),
        (273, 16, 300),
        (277, 3, 1),
        (278, 4, 2),
        (279, 16, 1 << 60),
    ];
    big.extend((entries.len() as u64).to_le_bytes());
    for (tag, kind, value) in entries {
        big.extend(tag.to_le_bytes());
        big.extend(kind.to_le_bytes());
        big.extend(1u64.to_le_bytes());
        big.extend(value.to_le_bytes());
    }
    big.extend(0u64.to_le_bytes());
    big.resize(400, 0);
    refused(
        d.path(),
        "claims.tif",
        &big,
        &["page 0 StripOffsets", "1152921504606846976 bytes"],
    );
    // The same BigTIFF with a field type TIFF does not define in its first entry.
    let mut unknown = big.clone();
    unknown[26..28].copy_from_slice(&8448u16.to_le_bytes());
    refused(
        d.path(),
        "unknown.tif",
        &unknown,
        &["IFD 0 tag 256", "field type 8448 is none that TIFF defines"],
    );
    // Pages of two shapes.
    let mixed = classic(
        &[
            (8, gray(4, 2, 8, 400, 8), 200),
            (200, gray(2, 4, 8, 400, 8), 0),
        ],
        &[0; 200],
    );
    refused(
        d.path(),
        "mixed.tif",
        &mixed,
        &["page 1 is [4, 2] uint8, page 0 [2, 4] uint8"],
    );
    // 12-bit samples, refused by name.
    let twelve = classic(&[(8, gray(4, 2, 12, 200, 12), 0)], &[0; 100]);
    refused(
        d.path(),
        "twelve.tif",
        &twelve,
        &["12-bit unsigned integer"],
    );
}

#[test]
fn the_read_commands_and_refs_take_a_tiff() {
    if !python_has("numpy, tifffile") {
        return;
    }
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    python(&[
        "-c",
        "import sys, numpy as np, tifffile; \
         a = np.arange(3 * 4 * 5, dtype='>u2').reshape(3, 4, 5); \
         tifffile.imwrite(sys.argv[1], a, photometric='minisblack'); \
         tifffile.imwrite(sys.argv[2], a, photometric='minisblack', compression='lzw'); \
         np.save(sys.argv[3], a)",
        s(&p("raw.tif")),
        s(&p("lzw.tif")),
        s(&p("a.npy")),
    ]);
    for f in ["raw.tif", "lzw.tif"] {
        let info = ok(&["info", s(&p(f))]);
        assert!(
            info.contains("uint16 [3, 4, 5] bytes 120 tiff 3 pages"),
            "{info}"
        );
        let described = ok(&["describe", s(&p(f))]);
        assert!(
            described.contains("format: TIFF") && described.contains("endian: big"),
            "{described}"
        );
        assert!(ok(&["verify", s(&p(f))]).contains("ok (uint16 [3, 4, 5]"));
        let stats = ok(&["stats", s(&p(f))]);
        assert!(stats.contains("count 60 min 0 max 59 mean 29.5"), "{stats}");
        assert!(ok(&["diff", s(&p(f)), s(&p("a.npy"))]).contains("same"));
        let plane = p(&format!("{f}.plane.npy"));
        ok(&["slice", "--slice", "1", s(&p(f)), s(&plane)]);
        python(&[
            "-c",
            "import sys, numpy as np; a = np.load(sys.argv[1]); \
             assert np.array_equal(a, np.arange(20, 40).reshape(4, 5)), a",
            s(&plane),
        ]);
    }
    let json = ok(&["info", "--json", s(&p("raw.tif"))]);
    assert!(json.contains("\"data_offset\": "), "{json}");
    let refs = ok(&["refs", s(&p("raw.tif"))]);
    assert!(refs.contains("\\\"dtype\\\":\\\">u2\\\""), "{refs}");
    let err = fails(&["refs", s(&p("lzw.tif"))], 1);
    assert!(
        err.contains("lzw.tif") && err.contains("Lzw-compressed"),
        "{err}"
    );
    if python_has("zarr, fsspec") {
        let out = p("raw.json");
        ok(&["refs", s(&p("raw.tif")), "-o", s(&out)]);
        python(&[
            "-c",
            r#"
import json, sys, fsspec, zarr, numpy as np, tifffile
refs = json.load(open(sys.argv[1]))
g = zarr.open_group(fsspec.filesystem('reference', fo=refs).get_mapper(''), mode='r', zarr_format=2)
a = g['raw']
assert np.array_equal(a[...], tifffile.imread(sys.argv[2]))
"#,
            s(&out),
            s(&p("raw.tif")),
        ]);
    }
}
