//! The malformed-input suite: generated cases for every rule of FORMAT.md section 4 and
//! the boundaries around them, in both byte orders, with and without a trailer, each
//! through the library and through `ra info` and `ra verify`.

use rastore::fuzzing::image;
use rastore::{ErrorKind, Header};

use crate::cli::run;
use crate::common::{tmp, MAGIC};

/// What a case must give.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Want {
    Valid,
    Truncated,
    NotRa,
    TruncatedHeader,
    ZeroElbyte,
    Overflow,
    SizeMismatch,
    TruncatedData,
    Flags,
    /// A valid header whose data does not decode.
    BadData,
}

fn kind_matches(want: Want, k: &ErrorKind) -> bool {
    matches!(
        (want, k),
        (Want::Truncated, ErrorKind::Truncated { .. })
            | (Want::NotRa, ErrorKind::NotRawArray { .. })
            | (Want::TruncatedHeader, ErrorKind::TruncatedHeader { .. })
            | (Want::ZeroElbyte, ErrorKind::ZeroElbyte)
            | (Want::Overflow, ErrorKind::ShapeOverflow { .. })
            | (Want::SizeMismatch, ErrorKind::SizeMismatch { .. })
            | (Want::TruncatedData, ErrorKind::TruncatedData { .. })
            | (Want::Flags, ErrorKind::UnsupportedFlags { .. })
            | (Want::BadData, ErrorKind::Decode { .. })
    )
}

/// `(name, bytes, expected)`: header words, then data, in both byte orders.
fn cases() -> Vec<(String, Vec<u8>, Want)> {
    use Want::*;
    let m = MAGIC;
    // (name, header words, body length, expected)
    let specs: Vec<(&str, Vec<u64>, usize, Want)> = vec![
        ("f32x3", vec![m, 0, 3, 4, 12, 1, 3], 12, Valid),
        ("scalar_ndims0", vec![m, 0, 3, 8, 8, 0], 8, Valid),
        ("zero_extent", vec![m, 0, 1, 4, 0, 2, 5, 0], 0, Valid),
        ("size0_ndims1", vec![m, 0, 2, 1, 0, 1, 0], 0, Valid),
        ("elbyte3", vec![m, 0, 1, 3, 6, 1, 2], 6, Valid),
        ("elbyte7", vec![m, 0, 2, 7, 14, 1, 2], 14, Valid),
        ("elbyte17", vec![m, 0, 0, 17, 34, 1, 2], 34, Valid),
        ("eltype6", vec![m, 0, 6, 4, 8, 1, 2], 8, Valid),
        ("eltype7", vec![m, 0, 7, 2, 4, 1, 2], 4, Valid),
        ("eltype255", vec![m, 0, 255, 1, 3, 1, 3], 3, Valid),
        ("eltype_max", vec![m, 0, u64::MAX, 2, 2, 1, 1], 2, Valid),
        ("bool", vec![m, 0, 5, 1, 4, 1, 4], 4, Valid),
        ("bitarray", vec![m, 6, 5, 8, 16, 1, 65], 16, Valid),
        ("empty_file", vec![], 0, Truncated),
        ("len47", vec![m, 0, 3, 4, 4], 7, Truncated),
        ("magic_only", vec![m], 0, Truncated),
        ("zeros", vec![0, 0, 0, 0, 0, 0], 4, NotRa),
        (
            "npy_magic",
            vec![0x0001_5950_4d55_4e93, 0, 0, 0, 0, 0],
            0,
            NotRa,
        ),
        ("ndims1_no_dims", vec![m, 0, 3, 4, 4, 1], 0, TruncatedHeader),
        (
            "ndims_2e60",
            vec![m, 0, 3, 4, 4, 1 << 60, 1],
            0,
            TruncatedHeader,
        ),
        (
            "ndims_max",
            vec![m, 0, 3, 4, 4, u64::MAX, 1],
            0,
            TruncatedHeader,
        ),
        (
            "ndims3_two_dims",
            vec![m, 0, 3, 4, 4, 3, 1, 1],
            0,
            TruncatedHeader,
        ),
        ("elbyte0", vec![m, 0, 3, 0, 0, 1, 4], 0, ZeroElbyte),
        ("elbyte0_scalar", vec![m, 0, 1, 0, 0, 0], 0, ZeroElbyte),
        (
            "dims_2e32_sq",
            vec![m, 0, 3, 4, 0, 2, 1 << 32, 1 << 32],
            0,
            Overflow,
        ),
        (
            "elbyte_times_2e63",
            vec![m, 0, 1, 8, 0, 1, 1 << 63],
            0,
            Overflow,
        ),
        (
            "five_dims_overflow",
            vec![
                m,
                0,
                2,
                1,
                0,
                5,
                1 << 13,
                1 << 13,
                1 << 13,
                1 << 13,
                1 << 13,
            ],
            0,
            Overflow,
        ),
        ("elbyte_max", vec![m, 0, 0, u64::MAX, 0, 1, 2], 0, Overflow),
        ("size_too_big", vec![m, 0, 3, 4, 16, 1, 3], 16, SizeMismatch),
        (
            "size_too_small",
            vec![m, 0, 3, 4, 8, 1, 3],
            12,
            SizeMismatch,
        ),
        (
            "size_for_zero_extent",
            vec![m, 0, 3, 4, 4, 1, 0],
            4,
            SizeMismatch,
        ),
        (
            "bits_size_wrong",
            vec![m, 6, 5, 8, 8, 1, 65],
            8,
            SizeMismatch,
        ),
        (
            "bits_size_elbyte",
            vec![m, 4, 5, 8, 520, 1, 65],
            520,
            SizeMismatch,
        ),
        (
            "data_short_by_one",
            vec![m, 0, 3, 4, 12, 1, 3],
            11,
            TruncatedData,
        ),
        (
            "lz4_size_past_end",
            vec![m, 2, 3, 4, 100, 1, 64],
            20,
            TruncatedData,
        ),
        (
            "size_near_max",
            vec![m, 2, 3, 4, u64::MAX - 8, 1, 1],
            0,
            TruncatedData,
        ),
        ("flag_bit4", vec![m, 16, 3, 4, 4, 1, 1], 4, Flags),
        ("flag_bit63", vec![m, 1 << 63, 3, 4, 4, 1, 1], 4, Flags),
        ("flags_ff", vec![m, 0xf0, 3, 4, 4, 1, 1], 4, Flags),
        ("lz4_garbage", vec![m, 2, 3, 4, 10, 1, 64], 10, BadData),
        ("leb128_truncated", vec![m, 2, 1, 4, 16, 1, 4], 3, BadData),
        ("bool_value_2", vec![m, 0, 5, 1, 3, 1, 3], 3, BadData),
    ];
    let mut out = Vec::new();
    for (name, words, body_len, want) in specs {
        for big in [false, true] {
            // Bytes 0xff make LZ4 and LEB128 bodies invalid and Bools out of range.
            let fill = if want == BadData { 0xff } else { 0x01 };
            let mut body = vec![fill; body_len];
            if name == "bool" || name == "bitarray" {
                body.fill(0x01);
            }
            let bytes = image(&words, &body, big);
            let order = if big { "be" } else { "le" };
            out.push((format!("{name}_{order}"), bytes.clone(), want));
            if want == Valid && words.len() >= 6 && words[1] & 2 == 0 {
                let mut with = bytes;
                with.extend(b"---\ntrailer: yes\n");
                out.push((format!("{name}_{order}_trailer"), with, want));
            }
        }
    }
    out
}

#[test]
fn generated_malformed_suite() {
    let cases = cases();
    assert!(cases.len() >= 80, "{} cases", cases.len());
    let dir = tmp();
    for (name, bytes, want) in &cases {
        // Library: the header parser, then the full decode.
        let lib = Header::parse(bytes).and_then(|_| rastore::read_raw_from(&bytes[..]).map(drop));
        let lib = lib.and_then(|_| {
            if *want == Want::BadData && name.starts_with("bool") {
                rastore::read_bool_from(&bytes[..]).map(drop)
            } else {
                Ok(())
            }
        });
        match (want, &lib) {
            (Want::Valid, Ok(())) => {}
            (w, Err(e)) if kind_matches(*w, e.kind()) => {}
            (w, other) => panic!("{name}: expected {w:?}, got {other:?}"),
        }
        // The tool: info checks the header, verify decodes everything.
        let p = dir.path().join(format!("{name}.ra"));
        std::fs::write(&p, bytes).unwrap();
        for sub in ["info", "verify"] {
            let o = run(&[sub, p.to_str().unwrap()]);
            let err = String::from_utf8_lossy(&o.stderr);
            let header_ok = !matches!(want, Want::Valid | Want::BadData);
            let expect_fail = header_ok || (sub == "verify" && *want == Want::BadData);
            if expect_fail {
                assert_eq!(o.status.code(), Some(1), "ra {sub} {name}: {err}");
                assert_eq!(
                    err.trim_end().lines().count(),
                    1,
                    "ra {sub} {name}: one line: {err}"
                );
                assert!(
                    err.contains(&format!("{name}.ra")),
                    "ra {sub} {name} names the file: {err}"
                );
            } else {
                assert_eq!(o.status.code(), Some(0), "ra {sub} {name}: {err}");
            }
        }
    }
    println!(
        "{} malformed and boundary cases through the library, ra info and ra verify",
        cases.len()
    );
}

/// No subcommand shrinks an existing file in place: each keeps an open handle on the
/// original file and checks that the file it names (the inode) keeps its length.
/// (Unix: inodes. Windows refuses to shrink a mapped file outright, see
/// `platform::windows_refuses_to_replace_a_mapped_file_and_says_why`.)
#[cfg(unix)]
#[test]
fn no_subcommand_shrinks_a_file_in_place() {
    use std::os::unix::fs::MetadataExt;
    let dir = tmp();
    let s = |n: &str| dir.path().join(n).to_string_lossy().into_owned();
    let big = rastore::ndarray::Array2::<f64>::from_elem((64, 64), 1.5);
    let setup = |name: &str| {
        rastore::WriteOptions::new()
            .metadata(vec![b'x'; 4096])
            .write(s(name), &big)
            .unwrap();
        let f = std::fs::File::open(s(name)).unwrap();
        let len = f.metadata().unwrap().len();
        (f, len)
    };
    let small = s("small.ra");
    rastore::write(&small, &rastore::ndarray::Array1::<u8>::zeros(2)).unwrap();
    std::fs::write(s("empty.meta"), b"").unwrap();
    let runs: Vec<(&str, Vec<String>)> = vec![
        (
            "meta.ra",
            vec!["meta".into(), s("meta.ra"), "--set".into(), s("empty.meta")],
        ),
        (
            "reshape.ra",
            vec!["reshape".into(), s("reshape.ra"), "4096".into()],
        ),
        (
            "reshape2.ra",
            vec!["reshape".into(), s("reshape2.ra"), "32,128".into()],
        ),
        (
            "convert.ra",
            vec![
                "convert".into(),
                "--overwrite".into(),
                small.clone(),
                s("convert.ra"),
            ],
        ),
        (
            "compress.ra",
            vec![
                "convert".into(),
                "--compress".into(),
                "--overwrite".into(),
                s("compress.ra"),
                s("compress.ra"),
            ],
        ),
        (
            "create.ra",
            vec![
                "create".into(),
                "--overwrite".into(),
                s("create.ra"),
                "--dtype".into(),
                "u8".into(),
                "--shape".into(),
                "1".into(),
            ],
        ),
    ];
    for (name, args) in runs {
        let (held, len) = setup(name);
        let ino = held.metadata().unwrap().ino();
        let o = crate::cli::ra().args(&args).output().unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            held.metadata().unwrap().len(),
            len,
            "{args:?} shrank the file in place"
        );
        let now = std::fs::metadata(s(name)).unwrap();
        assert!(
            now.ino() != ino || now.len() >= len,
            "{args:?}: same inode, shorter"
        );
    }
}
