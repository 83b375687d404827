//! Hardening, round 2: one regression test per finding of the black-box trial of
//! `ra` (issue 10), through the real binary, named after what it guards.

#[cfg(unix)]
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Output;

use rastore::{ErrorKind, MAGIC};

use crate::cli::run;
use crate::common::{numpy_available, python, tmp, words};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(o.status.success(), "ra {args:?}: {}", err(&o));
    out(&o)
}

/// Exit 1 with a message: the error path, not a crash.
fn fails(args: &[&str]) -> String {
    let o = run(args);
    assert_eq!(
        o.status.code(),
        Some(1),
        "ra {args:?}: {}{}",
        out(&o),
        err(&o)
    );
    let e = err(&o);
    assert!(!e.is_empty(), "ra {args:?} says why");
    e
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn regression(target: &str, name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target)
        .join(name)
}

/// A small valid f32 file with a trailer.
fn small(dir: &Path, name: &str) -> PathBuf {
    let p = dir.join(name);
    rastore::WriteOptions::new()
        .metadata("---\nnote: kept\n")
        .write(&p, &rastore::ndarray::Array2::<f32>::from_elem((2, 3), 1.5))
        .unwrap();
    p
}

// Finding 1.
#[test]
fn png_whose_header_claims_a_huge_image_fails_without_allocating_it() {
    let d = tmp();
    for name in [
        "ihdr-11x4294967295-rgb.png",
        "ihdr-100000x100000-rgba16.png",
        "interlaced-65535x65535-rgba16.png",
        "wide-ihdr-line-buffer.png",
    ] {
        let out = d.path().join("out.ra");
        let e = fails(&["convert", s(&regression("png_to_ra", name)), s(&out)]);
        assert!(e.contains("png"), "{name}: {e}");
        assert!(names(d.path()).is_empty(), "{name}: nothing left behind");
    }
}

// Finding 2.
#[test]
fn cat_of_no_elements_with_a_huge_elbyte_prints_nothing() {
    let d = tmp();
    let p = d.path().join("huge.ra");
    std::fs::write(&p, words(&[MAGIC, 0, 0, 1 << 62, 0, 1, 0])).unwrap();
    assert_eq!(ok(&["cat", s(&p)]), "");
    ok(&["info", s(&p)]);
    ok(&["verify", s(&p)]);
    assert_eq!(
        ok(&["diff", s(&p), s(&p)]),
        format!("same: user<{}> [0]\n", 1u64 << 62)
    );
}

// Finding 3.
#[test]
fn c_order_npy_with_a_zero_extent_converts_and_leaves_no_temporary_file() {
    let d = tmp();
    for (name, dims) in [
        ("c-order-0x2p64m1.npy", vec![0, u64::MAX]),
        ("c-order-0x2p32x2p32.npy", vec![0, 1 << 32, 1 << 32]),
    ] {
        let out = d.path().join("out.ra");
        ok(&[
            "convert",
            "--overwrite",
            s(&regression("npy_to_ra", name)),
            s(&out),
        ]);
        let (h, _) = rastore::read_header_at(&out).unwrap();
        assert_eq!(h.dims(), &dims[..], "{name}");
        assert_eq!(names(d.path()), ["out.ra"], "{name}");
    }
}

// Finding 4.
#[test]
fn create_refuses_a_file_size_beyond_u64() {
    let d = tmp();
    let p = d.path().join("x.ra");
    let e = fails(&[
        "create",
        s(&p),
        "--dtype",
        "u8",
        "--shape",
        "18446744073709551615",
    ]);
    assert!(e.contains("too large"), "{e}");
    std::fs::write(d.path().join("m"), b"meta").unwrap();
    fails(&[
        "create",
        s(&p),
        "--dtype",
        "u8",
        "--shape",
        "18446744073709551600",
        "--metadata",
        s(&d.path().join("m")),
    ]);
    assert_eq!(names(d.path()), ["m"]);
    let good = small(d.path(), "good.ra");
    let before = std::fs::read(&good).unwrap();
    fails(&[
        "create",
        s(&good),
        "--overwrite",
        "--dtype",
        "u8",
        "--shape",
        "18446744073709551615",
    ]);
    assert_eq!(
        std::fs::read(&good).unwrap(),
        before,
        "the good file is untouched"
    );
    assert!(matches!(
        rastore::Header::new(rastore::DType::U8, &[u64::MAX])
            .unwrap_err()
            .kind(),
        ErrorKind::TooLarge { .. }
    ));
}

/// A valid file with other values than [`small`]'s, to convert from.
fn other(dir: &Path) -> PathBuf {
    let p = dir.join("src.ra");
    rastore::write(&p, &rastore::ndarray::Array2::<f32>::from_elem((2, 3), 2.5)).unwrap();
    p
}

/// The rewrites of finding 5 and 6: meta --set, reshape to new ndims, convert over.
fn rewrites(target: &Path, src: &Path, meta: &Path) -> Vec<Vec<String>> {
    let t = s(target).to_string();
    vec![
        vec!["meta".into(), t.clone(), "--set".into(), s(meta).into()],
        vec!["reshape".into(), t.clone(), "6".into()],
        vec!["convert".into(), "--overwrite".into(), s(src).into(), t],
    ]
}

// Finding 5 (Unix modes and owners; Windows keeps the read-only attribute, see
// `platform::windows_keeps_the_read_only_attribute`).
#[cfg(unix)]
#[test]
fn rewrites_keep_the_permission_bits() {
    let d = tmp();
    let src = other(d.path());
    let meta = d.path().join("meta");
    std::fs::write(&meta, b"---\nx: 1\n").unwrap();
    for mode in [0o600, 0o640, 0o755] {
        let p = small(d.path(), "p.ra");
        for args in rewrites(&p, &src, &meta) {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            ok(&a);
            let got = std::fs::metadata(&p).unwrap().mode() & 0o7777;
            assert_eq!(got, mode, "{args:?}: mode {got:o}, was {mode:o}");
        }
    }
    // Owner and group are kept where the process may set them (root here and in CI).
    let p = small(d.path(), "owned.ra");
    if std::fs::metadata(&p).unwrap().uid() == 0 {
        std::os::unix::fs::chown(&p, Some(4321), Some(8765)).unwrap();
        for args in rewrites(&p, &src, &meta) {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            ok(&a);
            let m = std::fs::metadata(&p).unwrap();
            assert_eq!((m.uid(), m.gid()), (4321, 8765), "{args:?}");
        }
    }
    // A new file gets the usual mode (0666 less the umask), not the old file's.
    let fresh = d.path().join("fresh.ra");
    ok(&["convert", s(&src), s(&fresh)]);
    assert_eq!(std::fs::metadata(&fresh).unwrap().mode() & 0o111, 0);
}

// Finding 6: symbolic links (Unix: Windows makes them only with a privilege).
#[cfg(unix)]
#[test]
fn rewrites_follow_a_symlink_and_keep_it() {
    let d = tmp();
    let src = other(d.path());
    let meta = d.path().join("meta");
    std::fs::write(&meta, b"---\nx: 1\n").unwrap();
    let target = small(d.path(), "target.ra");
    let link = d.path().join("link.ra");
    std::os::unix::fs::symlink("target.ra", &link).unwrap();
    for args in rewrites(&link, &src, &meta) {
        let before = std::fs::read(&target).unwrap();
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(&a);
        let m = std::fs::symlink_metadata(&link).unwrap();
        assert!(
            m.file_type().is_symlink(),
            "{args:?}: the link stays a link"
        );
        assert_eq!(std::fs::read_link(&link).unwrap(), Path::new("target.ra"));
        assert_ne!(
            std::fs::read(&target).unwrap(),
            before,
            "{args:?}: the target changed"
        );
    }
    let a: rastore::ndarray::ArrayD<f32> = rastore::read(&target).unwrap();
    assert!(
        a.iter().all(|&x| x == 2.5),
        "the converted data is in the target"
    );
    // In-place reshape (same ndims) writes through the link too: consistent.
    ok(&["reshape", s(&link), "3,2"]);
    assert_eq!(rastore::read_header_at(&target).unwrap().0.dims(), &[3, 2]);
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

// Finding 6: hard links.
#[test]
fn rewrites_refuse_hard_linked_files_unless_split_links() {
    let d = tmp();
    let src = other(d.path());
    let meta = d.path().join("meta");
    std::fs::write(&meta, b"---\nx: 1\n").unwrap();
    for args in rewrites(&d.path().join("a.ra"), &src, &meta) {
        let a = small(d.path(), "a.ra");
        let b = d.path().join("b.ra");
        let _ = std::fs::remove_file(&b);
        std::fs::hard_link(&a, &b).unwrap();
        let before = std::fs::read(&a).unwrap();
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let e = fails(&argv);
        assert!(
            e.contains("2 hard links") && e.contains("--split-links"),
            "{e}"
        );
        assert_eq!(
            std::fs::read(&a).unwrap(),
            before,
            "{args:?}: refused, untouched"
        );
        let mut split = argv.clone();
        split.push("--split-links");
        ok(&split);
        assert_eq!(
            std::fs::read(&b).unwrap(),
            before,
            "{args:?}: the other name keeps the old file"
        );
        assert_ne!(std::fs::read(&a).unwrap(), before);
        #[cfg(unix)]
        assert_eq!(std::fs::metadata(&a).unwrap().nlink(), 1);
    }
}

// Finding 7.
#[test]
fn npy_field_names_keep_escapes_and_latin1() {
    if !numpy_available() {
        return;
    }
    let d = tmp();
    let npy = d.path().join("names.npy");
    python(&[
        "-c",
        "import numpy as np, sys\n\
         a = np.zeros(3, dtype=[('na\\x1bme', '<i2'), ('uni\\xe9', 'u1')])\n\
         a['na\\x1bme'] = [1, -2, 3]; a['uni\\xe9'] = [4, 5, 6]\n\
         np.save(sys.argv[1], a)\n\
         assert open(sys.argv[1], 'rb').read()[6] == 1, 'a version 1.0 header'",
        s(&npy),
    ]);
    let ra_path = d.path().join("names.ra");
    let back = d.path().join("back.npy");
    ok(&["convert", s(&npy), s(&ra_path)]);
    ok(&["convert", s(&ra_path), s(&back)]);
    let report = python(&[
        "-c",
        "import numpy as np, sys\n\
         a, b = np.load(sys.argv[1]), np.load(sys.argv[2])\n\
         assert a.dtype == b.dtype, (a.dtype, b.dtype)\n\
         assert a.dtype.names == ('na\\x1bme', 'uni\\xe9'), a.dtype.names\n\
         assert (a == b).all()\n\
         print('ok', b['na\\x1bme'].tolist(), b['uni\\xe9'].tolist())",
        s(&npy),
        s(&back),
    ]);
    assert_eq!(report.trim(), "ok [1, -2, 3] [4, 5, 6]");
}

// Finding 8.
#[test]
fn the_longest_names_work_and_errors_name_the_target() {
    let d = tmp();
    let src = other(d.path());
    let long = d.path().join(format!("{}.ra", "n".repeat(252)));
    assert_eq!(long.file_name().unwrap().len(), 255);
    ok(&["convert", s(&src), s(&long)]);
    std::fs::write(d.path().join("m"), b"---\ny: 2\n").unwrap();
    ok(&["meta", s(&long), "--set", s(&d.path().join("m"))]);
    ok(&["reshape", s(&long), "6"]);
    ok(&[
        "create",
        "--overwrite",
        s(&long),
        "--dtype",
        "f32",
        "--shape",
        "4",
    ]);
    assert_eq!(rastore::read_header_at(&long).unwrap().0.dims(), &[4]);
    let missing = d.path().join("no-such-dir").join("out.ra");
    let e = fails(&["convert", s(&src), s(&missing)]);
    assert!(e.contains(s(&missing)), "{e}");
    assert!(
        !e.contains(".ra-"),
        "the temporary name stays out of messages: {e}"
    );
}

// Finding 9 (Linux: the new file is unnamed until complete; elsewhere a killed
// writer leaves its hidden `.ra-ID.tmp` and its lock, which the next writer in the
// folder removes, as docs/TOOL.md says and interrupt.rs tests).
#[cfg(target_os = "linux")]
#[test]
fn a_killed_convert_leaves_nothing_beside_the_destination() {
    let d = tmp();
    let input = d.path().join("big.npy");
    // A C-order .npy of 192 MiB: the transpose takes long enough to be killed in.
    crate::common::slow_npy(&input, &[4096, 4096, 3]);
    let out = d.path().join("out.ra");
    let mut killed = 0;
    for delay_ms in [30u64, 80, 150, 250, 400] {
        let _ = std::fs::remove_file(&out);
        let mut child = crate::cli::ra()
            .args(["convert", s(&input), s(&out)])
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        let running = child.try_wait().unwrap().is_none();
        child.kill().unwrap();
        let status = child.wait().unwrap();
        killed += usize::from(running);
        let left = names(d.path());
        assert!(
            left == ["big.npy"] || left == ["big.npy", "out.ra"],
            "after kill at {delay_ms} ms ({status:?}): {left:?}"
        );
        if left.len() == 2 {
            rastore::read_header_at(&out).expect("a complete output when there is one");
        }
    }
    assert!(killed > 0, "no run was killed while converting");
}

// Finding 10.
#[test]
fn ra_to_npy_refuses_shapes_numpy_cannot_hold() {
    let d = tmp();
    let out = d.path().join("out.npy");
    for dims in [
        vec![1u64 << 63],
        vec![0, 1 << 32, 1 << 32],
        vec![0, 1 << 61, 4],
    ] {
        let p = d.path().join("z.ra");
        let mut w = vec![MAGIC, 0, 2, 4, 0, dims.len() as u64];
        w.extend(&dims);
        if dims[0] != 0 {
            w[5] = 2;
            w.insert(6, 0);
        }
        std::fs::write(&p, words(&w)).unwrap();
        let e = fails(&["convert", s(&p), s(&out)]);
        assert!(e.contains("NumPy cannot hold"), "{dims:?}: {e}");
        assert!(!out.exists());
    }
    if numpy_available() {
        // The largest NumPy takes: (0, 2^61) of 4-byte items is 2^63 bytes - too many;
        // (0, 2^60) is fine, and NumPy loads what we write.
        let p = d.path().join("ok.ra");
        std::fs::write(&p, words(&[MAGIC, 0, 2, 4, 0, 2, 0, 1 << 60])).unwrap();
        ok(&["convert", s(&p), s(&out)]);
        let shape = python(&[
            "-c",
            "import numpy as np, sys; print(np.load(sys.argv[1]).shape)",
            s(&out),
        ]);
        assert_eq!(shape.trim(), format!("(0, {})", 1u64 << 60));
    }
}

// Finding 11.
#[test]
fn bools_are_0_or_1_and_bits_means_bitarray() {
    let d = tmp();
    let npy = d.path().join("b.npy");
    let mut f = rastore::formats::npy::NpyHeader::encode(
        &rastore::formats::npy::Descr::parse("'|b1'").unwrap(),
        true,
        &[4],
    );
    f.extend([0, 1, 255, 2]);
    std::fs::write(&npy, &f).unwrap();
    let ra_path = d.path().join("b.ra");
    ok(&["convert", s(&npy), s(&ra_path)]);
    ok(&["verify", s(&ra_path)]);
    assert_eq!(
        rastore::read_bool(&ra_path)
            .unwrap()
            .into_raw_vec_and_offset()
            .0,
        [false, true, true, true]
    );
    // A Julia Bool holding 7 is refused on its way to NumPy.
    let julia = d.path().join("j.ra");
    let mut b = words(&[MAGIC, 0, 5, 1, 3, 1, 3]);
    b.extend([1, 7, 0]);
    std::fs::write(&julia, &b).unwrap();
    let e = fails(&["convert", s(&julia), s(&d.path().join("j.npy"))]);
    assert!(e.contains("element 1 is 7, not 0 or 1"), "{e}");
    fails(&["verify", s(&julia)]);
    // BITS (flags 4) with a float type is not a BitArray.
    let bits = d.path().join("bits.ra");
    let mut b = words(&[MAGIC, 4, 3, 4, 8, 1, 10]);
    b.extend([0u8; 8]);
    std::fs::write(&bits, &b).unwrap();
    for cmd in ["info", "verify", "cat"] {
        let e = fails(&[cmd, s(&bits)]);
        assert!(
            e.contains("eltype 5 with elbyte 8") && e.contains("eltype 3, elbyte 4"),
            "{e}"
        );
    }
}

// Finding 12 (Unix: Windows names cannot hold control characters; its messages are
// escaped the same, see `platform::messages_reach_the_terminal_escaped_on_every_platform`).
#[cfg(unix)]
#[test]
fn names_and_messages_reach_the_terminal_escaped() {
    let d = tmp();
    let evil = d.path().join("a\x1b[31mb\x07c\rd\ne\u{9b}f.ra");
    rastore::write(&evil, &rastore::ndarray::Array1::<u8>::zeros(2)).unwrap();
    let controls = |t: &str| t.chars().filter(|c| c.is_control() && *c != '\n').count();
    let info = ok(&["info", s(&evil)]);
    assert_eq!(controls(&info), 0, "{info:?}");
    assert_eq!(info.lines().count(), 1, "{info:?}");
    assert!(
        info.contains("a\\x1b[31mb\\x07c\\x0dd\\x0ae\\u{9b}f.ra"),
        "{info}"
    );
    let e = fails(&["info", &format!("{}\x1b]0;x\x07", s(&evil))]);
    assert_eq!(controls(&e), 0, "{e:?}");
    assert!(e.contains("\\x1b]0;x\\x07"), "{e}");
    // describe: a trailer's escapes become `?`.
    let p = d.path().join("t.ra");
    rastore::WriteOptions::new()
        .metadata("---\nattributes: {t: \"x\\u009b31m\\x1by\"}\n")
        .write(&p, &rastore::ndarray::Array1::<u8>::zeros(2))
        .unwrap();
    let text = ok(&["describe", s(&p)]);
    assert_eq!(controls(&text), 0, "{text:?}");
    assert!(text.contains("x?31m?y"), "{text}");
    // meta to a pipe is the raw bytes.
    let raw = d.path().join("raw.ra");
    rastore::WriteOptions::new()
        .metadata(b"\x1b\x00\xff".to_vec())
        .write(&raw, &rastore::ndarray::Array1::<u8>::zeros(2))
        .unwrap();
    assert_eq!(run(&["meta", s(&raw)]).stdout, b"\x1b\x00\xff");
    // On a terminal (util-linux `script` gives it one), escaped.
    let cmd = format!("'{}' meta '{}'", env!("CARGO_BIN_EXE_ra"), s(&raw));
    if let Ok(o) = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
    {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            o.stdout,
            b"\\x1b\\x00\\xff",
            "{:?}",
            String::from_utf8_lossy(&o.stdout)
        );
    }
}

// Finding 13.
#[test]
fn numpy_long_double_is_stored_opaque_with_its_descr() {
    let d = tmp();
    let npy = d.path().join("ld.npy");
    let mut f = rastore::formats::npy::NpyHeader::encode(
        &rastore::formats::npy::Descr::parse("'<f16'").unwrap(),
        true,
        &[2],
    );
    let body: Vec<u8> = (0..32).collect();
    f.extend(&body);
    std::fs::write(&npy, &f).unwrap();
    let ra_path = d.path().join("ld.ra");
    ok(&["convert", s(&npy), s(&ra_path)]);
    let raw = rastore::read_raw(&ra_path).unwrap();
    assert_eq!(
        (raw.header.dtype().eltype, raw.header.dtype().elbyte),
        (0, 16)
    );
    assert_eq!(raw.data, body);
    assert!(String::from_utf8_lossy(&raw.metadata).contains("<f16"));
    let back = d.path().join("back.npy");
    ok(&["convert", s(&ra_path), s(&back)]);
    assert_eq!(std::fs::read(&back).unwrap(), f, "the same .npy comes back");
    if numpy_available() {
        python(&[
            "-c",
            "import numpy as np, sys; a = np.load(sys.argv[1]); assert a.dtype == np.dtype('<f16'), a.dtype",
            s(&back),
        ]);
    }
}

// Finding 14.
#[test]
fn c_reference_lz4_block_as_long_as_the_data_reads_as_lz4() {
    // Bytes whose LZ4 block is exactly as long as they are: the header then fits
    // Julia's LEB128 variant too, and only decoding tells them apart.
    let noise = crate::common::noise(400, 0x2545_f491_4f6c_dd1d);
    let (data, block) = (100..400)
        .flat_map(|r| (0..64).map(move |z| (r, z)))
        .find_map(|(r, z)| {
            let mut data = noise[..r].to_vec();
            data.resize(r + z, 0);
            let block = rastore::codec::lz4_encode(&data);
            (block.len() == data.len()).then_some((data, block))
        })
        .expect("some noise and run of zeros make the block as long as the data");
    let d = tmp();
    let p = d.path().join("c.ra");
    let n = data.len() as u64;
    let mut b = words(&[MAGIC, 2, 2, 1, n, 1, n]);
    b.extend(&block);
    b.extend(b"---\ntrailer: yes\n");
    std::fs::write(&p, &b).unwrap();
    let a: rastore::ndarray::ArrayD<u8> = rastore::read(&p).unwrap();
    assert_eq!(a.as_slice().unwrap(), &data[..]);
    assert_eq!(rastore::read_metadata(&p).unwrap(), b"---\ntrailer: yes\n");
    ok(&["verify", s(&p)]);
    let info = ok(&["info", s(&p)]);
    assert!(
        info.contains("lz4 or leb128") && info.ends_with("trailer 17\n"),
        "{info}"
    );
    // Neither: the message says what each attempt found.
    let bad = d.path().join("bad.ra");
    let mut b = words(&[MAGIC, 2, 2, 1, 4, 1, 4]);
    b.extend([0xff, 0xff, 0xff, 0xff, 0xff]);
    std::fs::write(&bad, &b).unwrap();
    let e = fails(&["verify", s(&bad)]);
    assert!(
        e.contains("as an LZ4 block") && e.contains("as LEB128"),
        "{e}"
    );
}
