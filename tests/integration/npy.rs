//! NumPy interop: files written by real NumPy convert to .ra and back, every dtype,
//! order and version; skipped (with the reason printed) where numpy is absent.

use std::path::Path;

use rastore::{DType, MappedNpy, MappedRa};

use crate::cli::ra;
use crate::common::{numpy_available, python, tmp};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/npy_fixtures.py");

fn convert(a: &Path, b: &Path, extra: &[&str]) {
    let out = ra()
        .arg("convert")
        .arg(a)
        .arg(b)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ra convert {} {}: {}",
        a.display(),
        b.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn numpy_files_convert_to_ra_and_back() {
    if !numpy_available() {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    python(&[SCRIPT, "make", d.to_str().unwrap()]);
    let cases = std::fs::read_to_string(d.join("cases.txt")).unwrap();
    let mut n = 0;
    for line in cases.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (name, ty, dims) = (f[0], f[1], f[2]);
        let dims: Vec<u64> = if dims == "-" {
            vec![]
        } else {
            dims.split(',').map(|x| x.parse().unwrap()).collect()
        };
        let (npy, ra_path, back) = (
            d.join(format!("{name}.npy")),
            d.join(format!("{name}.ra")),
            d.join(format!("{name}.back.npy")),
        );
        let extra: &[&str] = if n % 3 == 1 { &["--compress"] } else { &[] };
        convert(&npy, &ra_path, extra);
        let raw = rastore::read_raw(&ra_path).unwrap();
        assert_eq!(raw.header.dtype().name(), ty, "{name}");
        assert_eq!(raw.header.dims(), &dims[..], "{name}");
        assert!(!raw.header.data_big_endian(), "{name}: written native");
        assert_eq!(
            raw.data,
            std::fs::read(d.join(format!("{name}.fbytes"))).unwrap(),
            "{name}: column-major bytes"
        );
        convert(&ra_path, &back, &[]);
        n += 1;
    }
    assert_eq!(n, 47, "every case ran");
    let report = python(&[SCRIPT, "check", d.to_str().unwrap()]);
    assert!(report.contains("checked; 0 mismatches"), "{report}");
    println!("numpy interop: {n} cases converted .npy -> .ra -> .npy and checked by numpy");
}

#[test]
fn mapped_npy_views_match_the_converted_ra() {
    if !numpy_available() {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    python(&[SCRIPT, "make", d.to_str().unwrap()]);
    for name in ["c_f4", "f_f4"] {
        convert(
            &d.join(format!("{name}.npy")),
            &d.join(format!("{name}.ra")),
            &[],
        );
        // SAFETY: private files, not modified while mapped.
        let (npy, ra_file) = unsafe {
            (
                MappedNpy::open(d.join(format!("{name}.npy"))).unwrap(),
                MappedRa::open(d.join(format!("{name}.ra"))).unwrap(),
            )
        };
        let (a, b) = (npy.view::<f32>().unwrap(), ra_file.view::<f32>().unwrap());
        assert_eq!(a.shape(), &[3, 4, 5]);
        assert_eq!(a, b, "{name}");
        assert_eq!(npy.header().fortran_order, name == "f_f4");
    }
    // Big-endian data is refused as a view.
    // SAFETY: private file.
    let be = unsafe { MappedNpy::open(d.join("be_f4.npy")) }.unwrap();
    assert!(be.view::<f32>().is_err());
}

#[test]
fn structured_dtype_round_trips_and_describes_as_compound() {
    if !numpy_available() {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    python(&[SCRIPT, "make", d.to_str().unwrap()]);
    convert(&d.join("struct.npy"), &d.join("struct.ra"), &[]);
    let out = ra()
        .arg("describe")
        .arg(d.join("struct.ra"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).expect("describe prints YAML");
    let ty = &docs[0]["ndarrays"]["data"]["type"];
    assert_eq!(ty["class"].as_str(), Some("compound"), "{text}");
    let members: Vec<(&str, i64)> = ty["members"]
        .as_vec()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap(), m["offset"].as_i64().unwrap()))
        .collect();
    assert_eq!(members, [("name", 0), ("age", 10), ("weight", 14)]);
    assert_eq!(ty["members"][0]["type"]["class"].as_str(), Some("string"));
    assert_eq!(ty["members"][1]["type"].as_str(), Some("int32"));
    convert(&d.join("struct.ra"), &d.join("struct.back.npy"), &[]);
    let check = "import numpy as np, sys; a = np.load(sys.argv[1]); b = np.load(sys.argv[2]); \
                 assert a.dtype == b.dtype, (a.dtype, b.dtype); assert (a == b).all(); \
                 assert b[1]['name'] == b'grace' and b[1]['age'] == 85; print('identical')";
    let msg = python(&[
        "-c",
        check,
        d.join("struct.npy").to_str().unwrap(),
        d.join("struct.back.npy").to_str().unwrap(),
    ]);
    assert!(msg.contains("identical"));
}

#[test]
fn conformance_test_ra_loads_in_numpy_with_the_same_values() {
    let Some(conf) = crate::common::conformance_dir() else {
        return;
    };
    if !numpy_available() {
        return;
    }
    let dir = tmp();
    let out = dir.path().join("test.npy");
    convert(&conf.join("test.ra"), &out, &[]);
    let check = "import numpy as np, sys; a = np.load(sys.argv[1]); assert a.shape == (3, 4), a.shape; \
                 assert a.dtype == np.complex64; \
                 ok = all(a[k % 3, k // 3].real == k and (k == 0 or np.isclose(a[k % 3, k // 3].imag, -1 / k)) for k in range(12)); \
                 assert ok and np.isneginf(a[0, 0].imag); print('values ok')";
    assert!(python(&["-c", check, out.to_str().unwrap()]).contains("values ok"));
}

#[test]
fn npy_headers_are_parsed_safely() {
    let dir = tmp();
    for (name, bytes) in [
        ("long.npy", {
            let mut b = b"\x93NUMPY\x02\x00".to_vec();
            b.extend(1_000_000u32.to_le_bytes());
            b
        }),
        ("eval.npy", {
            let text = "__import__('os').system('touch /tmp/pwned')\n";
            let mut b = b"\x93NUMPY\x01\x00".to_vec();
            b.extend((text.len() as u16).to_le_bytes());
            b.extend(text.as_bytes());
            b
        }),
        (
            "short.npy",
            b"\x93NUMPY\x01\x00\x76\x00{'descr': '<f4',".to_vec(),
        ),
        ("notnpy.npy", b"hello".to_vec()),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        let out = ra()
            .arg("convert")
            .arg(&p)
            .arg(dir.path().join("o.ra"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{name}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: {err}");
        assert!(err.contains("npy"), "{name}: {err}");
    }
    assert!(!dir.path().join("o.ra").exists());
}

#[test]
fn ra_types_without_numpy_equivalent_are_refused_clearly() {
    let dir = tmp();
    let p = dir.path().join("b.ra");
    rastore::write(
        &p,
        &rastore::ndarray::Array1::from_elem(3, rastore::half::bf16::ONE),
    )
    .unwrap();
    let out = ra()
        .arg("convert")
        .arg(&p)
        .arg(dir.path().join("b.npy"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bfloat16 has no NumPy equivalent"));
    assert_eq!(DType::BF16.name(), "bfloat16");
}
