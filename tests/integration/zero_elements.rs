//! Hostile files through the engine (issue 37): zero-element arrays whose other extents
//! are huge, and `.npy` descrs NumPy refuses. The files are built here as the chaos run
//! found them. Each converts into every output (`.ra`, `.ra --compress`, `.npy`, `.png`,
//! `.zarr`) and either exits 0 with an output that reads back as the same array (dims
//! and trailer included), or exits 1 naming the file; never a panic.

use std::path::Path;

use crate::cli::run;
use crate::common::{tmp, words, MAGIC};

/// A `.ra` image: the header words, then `tail` (data and trailer).
fn ra(words_: &[u64], tail: &[u8]) -> Vec<u8> {
    let mut b = words(words_);
    b.extend_from_slice(tail);
    b
}

/// A version-1.0 `.npy` of the header dict `dict`, then `body`.
fn npy(dict: &str, body: &[u8]) -> Vec<u8> {
    let total = (10 + dict.len() + 1).div_ceil(64) * 64;
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend(((total - 10) as u16).to_le_bytes());
    b.extend(dict.as_bytes());
    b.resize(total - 1, b' ');
    b.push(b'\n');
    b.extend_from_slice(body);
    b
}

/// The files, as `(name, bytes)`.
fn files() -> Vec<(&'static str, Vec<u8>)> {
    let trailer14 = [0, 0, 0, 0, 0, 0, 0x80, 0xff, 0, 0, 0x80, 0x3f, 0, 0];
    vec![
        (
            "zero-elements-dims-2e63-0-1.ra",
            ra(&[MAGIC, 0, 9, 3, 0, 3, 1 << 63, 0, 1], &trailer14),
        ),
        (
            "zero-elements-dims-2e64m1-0.npy",
            npy(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (18446744073709551615, 0), }",
                &[0x71, 0x51, 0xa6, 0x28],
            ),
        ),
        (
            "bitarray-zero-elements-dims-2e63-0.ra",
            ra(
                &[MAGIC, 4, 5, 8, 0, 2, 1 << 63, 0],
                &[0xcd, 0x66, 0xb3, 0xd9, 0x6c, 0x36, 0x9b, 0xcd, 0x26],
            ),
        ),
        (
            "zero-elements-5d-huge-elbyte.ra",
            ra(
                &[MAGIC, 0, 2, 0x4b63_6702_f210_1d6e, 0, 5, 1 << 32, 3, 0, 1 << 63, 1 << 32],
                b"---\n\x07\x08\x08: \x1b[2J\x1b[H\n",
            ),
        ),
        (
            "npy-duplicate-field-names.npy",
            npy(
                "{'descr': [('a', '<i4'), ('a', '<f8')], 'fortran_order': False, 'shape': (2, 3), }",
                &[0; 72],
            ),
        ),
        (
            "npy-descr-u3-named-png.png",
            npy(
                "{'descr': '<u3', 'fortran_order': False, 'shape': (3, 4, 5), }",
                &[7; 180],
            ),
        ),
    ]
}

/// The dims and the trailer of the array at `path`, as the engine reads it.
fn dims_and_trailer(path: &Path) -> (Vec<u64>, Vec<u8>) {
    let options = rastore::convert::ConvertOptions::new();
    let source = rastore::convert::open(path, &options).expect("reads back");
    (source.desc().dims.clone(), source.desc().trailer.clone())
}

#[test]
fn zero_element_arrays_and_bad_descrs_convert_whole_or_not_at_all() {
    let dir = tmp();
    for (name, bytes) in files() {
        let input = dir.path().join(name);
        std::fs::write(&input, &bytes).unwrap();
        let ins = input.to_str().unwrap();
        for (out, extra) in [
            ("o.ra", None),
            ("oz.ra", Some("--compress")),
            ("o.npy", None),
            ("o.png", None),
            ("o.zarr", Some("--array")),
        ] {
            let output = dir.path().join(format!("{name}-{out}"));
            let outs = output.to_str().unwrap();
            let mut args = vec!["convert", ins, outs];
            args.extend(extra);
            let o = run(&args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(!err.contains("panicked"), "{name} -> {out}: {err}");
            match o.status.code() {
                Some(0) => {
                    // The same array: `ra verify` accepts a file, and `ra diff` finds it
                    // equal.
                    if out.ends_with(".zarr") {
                        let (want, got) = (dims_and_trailer(&input), dims_and_trailer(&output));
                        assert_eq!(got.0, want.0, "{name} -> {out}: dims");
                    } else {
                        let v = run(&["verify", outs]);
                        assert!(v.status.success(), "{name} -> {out}: verify: {v:?}");
                        let d = run(&["diff", ins, outs]);
                        assert!(d.status.success(), "{name} -> {out}: diff: {d:?}");
                    }
                    if out.ends_with(".ra") {
                        let (want, got) = (dims_and_trailer(&input), dims_and_trailer(&output));
                        assert_eq!(got, want, "{name} -> {out}: dims and trailer");
                    }
                }
                Some(1) => {
                    assert!(err.contains(name), "{name} -> {out}: {err}");
                    assert!(!output.exists(), "{name} -> {out}: left an output");
                }
                other => panic!("{name} -> {out}: exit {other:?}: {err}"),
            }
        }
    }
}

#[test]
fn the_zero_element_files_keep_every_extent_and_every_trailer_byte() {
    let dir = tmp();
    for (name, bytes) in files().into_iter().filter(|(n, _)| n.ends_with(".ra")) {
        let input = dir.path().join(name);
        std::fs::write(&input, &bytes).unwrap();
        for compress in [false, true] {
            let output = dir.path().join(format!("{compress}-{name}"));
            let mut args = vec!["convert", input.to_str().unwrap(), output.to_str().unwrap()];
            if compress {
                args.push("--compress");
            }
            let o = run(&args);
            assert!(o.status.success(), "{name}: {o:?}");
            assert_eq!(
                dims_and_trailer(&output),
                dims_and_trailer(&input),
                "{name}"
            );
        }
    }
}

#[test]
fn descrs_numpy_refuses_are_refused_by_name() {
    let dir = tmp();
    for (name, want) in [
        ("npy-duplicate-field-names.npy", "\"a\" is used twice"),
        ("npy-descr-u3-named-png.png", "no 3-byte unsigned integer"),
    ] {
        let bytes = files().into_iter().find(|(n, _)| *n == name).unwrap().1;
        let input = dir.path().join(name);
        std::fs::write(&input, bytes).unwrap();
        let o = run(&[
            "convert",
            input.to_str().unwrap(),
            dir.path().join("x.npy").to_str().unwrap(),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(err.contains(want) && err.contains(name), "{name}: {err}");
    }
}
