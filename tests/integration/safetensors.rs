//! safetensors through the real `ra`, judged by the safetensors package: a file is a
//! dataset of its tensors (names keep their dots, `__metadata__` its attributes), one
//! tensor is `m.safetensors/NAME`, and what rastore writes the package reads the same.
//! Hostile headers exit 1 naming the file and the field, and leave nothing.

use std::path::Path;

use crate::cli::ra;
use crate::common::{python, python_has, tmp};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/scripts/safetensors_fixtures.py"
);

fn ok(args: &[&std::ffi::OsStr]) -> String {
    let out = ra().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ra {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn s(p: &Path) -> &std::ffi::OsStr {
    p.as_os_str()
}

/// A safetensors file of `json` (padded to 8 bytes) and `data` bytes.
fn file(json: &str, data: usize) -> Vec<u8> {
    let mut text = json.as_bytes().to_vec();
    text.resize(text.len().next_multiple_of(8), b' ');
    let mut f = (text.len() as u64).to_le_bytes().to_vec();
    f.extend(text);
    f.extend((0..data).map(|i| i as u8));
    f
}

#[test]
fn every_type_and_rank_round_trips_through_ra_npz_and_back() {
    if !python_has("numpy, safetensors, ml_dtypes") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    python(&[SCRIPT, "make", d.to_str().unwrap()]);
    let m = d.join("m.safetensors");
    let out = d.join("out");
    ok(&[s(Path::new("convert")), s(&m), s(&out)]);
    let attrs = std::fs::read_to_string(out.join("dataset.yaml")).unwrap();
    assert!(attrs.contains("model: issue 38"), "{attrs}");
    // Names keep their dots: `layers.2.float32.ra`, a variable named so.
    let w = out.join("layers.2.float32.ra");
    let raw = rastore::read_raw(&w).unwrap();
    assert_eq!(raw.header.dims(), [3, 4]);
    // The .ra folder into a second format (.npz), and back into safetensors: the
    // package reads the same tensors and metadata from both.
    let npz = d.join("m.npz");
    ok(&[s(Path::new("convert")), s(&out), s(&npz)]);
    let text = python(&[SCRIPT, "npz", m.to_str().unwrap(), npz.to_str().unwrap()]);
    assert!(text.contains("60 arrays"), "{text}");
    let back = d.join("back.safetensors");
    ok(&[s(Path::new("convert")), s(&out), s(&back)]);
    let text = python(&[SCRIPT, "same", m.to_str().unwrap(), back.to_str().unwrap()]);
    assert!(text.contains("60 tensors"), "{text}");
    // Laid out as the package lays it out: the same tensors at the same offsets, the
    // same data bytes (only `__metadata__`'s order may differ: the package's is a
    // hash map's).
    let (_, _, hm) = rastore::formats::safetensors::engine::header(&m).unwrap();
    let (_, _, hb) = rastore::formats::safetensors::engine::header(&back).unwrap();
    assert_eq!(hm, hb);
    let (a, b) = (std::fs::read(&m).unwrap(), std::fs::read(&back).unwrap());
    assert_eq!(a.len(), b.len());
    assert_eq!(a[hm.data_start as usize..], b[hb.data_start as usize..]);
    // Straight into an .npz, and one tensor by name into a .npy.
    let npz2 = d.join("m2.npz");
    ok(&[s(Path::new("convert")), s(&m), s(&npz2)]);
    python(&[SCRIPT, "npz", m.to_str().unwrap(), npz2.to_str().unwrap()]);
    for name in [
        "layers.3.int16",
        "layers.0.bool",
        "layers.4.float64",
        "layers.1.uint64",
    ] {
        let npy = d.join(format!("{name}.npy"));
        ok(&[s(Path::new("convert")), s(&m.join(name)), s(&npy)]);
        python(&[
            SCRIPT,
            "npy",
            m.to_str().unwrap(),
            name,
            npy.to_str().unwrap(),
        ]);
    }
    // bfloat16 and complex64: into .ra and back, the same bytes.
    let bf = d.join("bf16.safetensors");
    let bf_out = d.join("bf");
    ok(&[s(Path::new("convert")), s(&bf), s(&bf_out)]);
    let raw = rastore::read_raw(bf_out.join("w.bf16.ra")).unwrap();
    assert_eq!(raw.header.dtype(), rastore::DType::BF16);
    assert_eq!(raw.header.dims(), [2, 3]);
    // Column-major: [0, 0], [1, 0], [0, 1] = 1.5, 0.0, -2.0 in bfloat16.
    assert_eq!(&raw.data[..6], &[0xc0, 0x3f, 0, 0, 0, 0xc0]);
    let bf_back = d.join("bf_back.safetensors");
    ok(&[s(Path::new("convert")), s(&bf_out), s(&bf_back)]);
    // NumPy has no bfloat16: the package's Rust crate judges.
    let (a, b) = (
        std::fs::read(&bf).unwrap(),
        std::fs::read(&bf_back).unwrap(),
    );
    let (a, b) = (
        safetensors::SafeTensors::deserialize(&a).unwrap(),
        safetensors::SafeTensors::deserialize(&b).unwrap(),
    );
    let mut names = a.names();
    names.sort();
    let mut again = b.names();
    again.sort();
    assert_eq!(names, ["w.bf16", "z.c64"]);
    assert_eq!(names, again);
    for n in names {
        let (x, y) = (a.tensor(n).unwrap(), b.tensor(n).unwrap());
        assert_eq!(
            (x.dtype(), x.shape(), x.data()),
            (y.dtype(), y.shape(), y.data())
        );
    }
}

#[test]
fn one_tensor_is_named_as_file_slash_name_in_every_command() {
    let dir = tmp();
    let d = dir.path();
    let m = d.join("m.safetensors");
    let json = r#"{"__metadata__":{"k":"v"},"a.b":{"dtype":"I16","shape":[2,3],"data_offsets":[0,12]},"c":{"dtype":"U8","shape":[4],"data_offsets":[12,16]}}"#;
    std::fs::write(&m, file(json, 16)).unwrap();
    let info = ok(&[s(Path::new("info")), s(&m)]);
    assert!(info.contains("a.b: int16 [2, 3] bytes 12"), "{info}");
    assert!(info.contains("c: uint8 [4] bytes 4"), "{info}");
    let t = m.join("a.b");
    let described = ok(&[s(Path::new("describe")), s(&t)]);
    assert!(described.contains("format: safetensors"), "{described}");
    assert!(described.contains("order: row-major"), "{described}");
    let verified = ok(&[s(Path::new("verify")), s(&t)]);
    assert!(verified.contains("ok (int16 [2, 3]"), "{verified}");
    let verified = ok(&[s(Path::new("verify")), s(&m)]);
    assert_eq!(verified.lines().count(), 2, "a line per tensor: {verified}");
    let cat = ok(&[s(Path::new("cat")), s(&t)]);
    // C order: [0, 1] is the second element stored, bytes 2 and 3 (0x0302).
    assert!(cat.contains("[0, 1] 770"), "{cat}");
    let stats = ok(&[s(Path::new("stats")), s(&m.join("c"))]);
    assert!(stats.contains("min 12 max 15"), "{stats}");
    let part = d.join("part.ra");
    ok(&[
        s(Path::new("slice")),
        s(&t),
        s(&part),
        s(Path::new("--slice")),
        s(Path::new("1,:")),
    ]);
    let raw = rastore::read_raw(&part).unwrap();
    assert_eq!(raw.header.dims(), [3]);
    assert_eq!(raw.data, [6, 7, 8, 9, 10, 11]);
    // In place for Zarr readers: the references point into the file, at the tensor.
    let refs = ok(&[s(Path::new("refs")), s(&t)]);
    let data_start = 8 + json.len().next_multiple_of(8);
    assert!(
        refs.contains(&format!(",{data_start},12]")),
        "the chunk lies at the tensor's offset: {refs}"
    );
    assert!(!refs.contains("m.safetensors/a.b\""), "{refs}");
    // One array into a .safetensors: the tensor is named after the file.
    let one = d.join("one.safetensors");
    ok(&[s(Path::new("convert")), s(&part), s(&one)]);
    let (_, _, h) = rastore::formats::safetensors::engine::header(&one).unwrap();
    assert_eq!(h.names(), ["one"]);
    // Several tensors into one array is refused, naming them.
    let out = ra()
        .arg("convert")
        .arg(&m)
        .arg(d.join("x.ra"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("a.b, c"), "{e}");
    assert!(!d.join("x.ra").exists());
    let out = ra().arg("info").arg(m.join("nope")).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no tensor \"nope\""));
}

#[test]
fn hostile_headers_exit_1_naming_the_file_and_field_and_leave_nothing() {
    let dir = tmp();
    let d = dir.path();
    let t = |dtype: &str, shape: &str, offsets: &str| {
        format!(r#"{{"x":{{"dtype":"{dtype}","shape":{shape},"data_offsets":{offsets}}}}}"#)
    };
    let two = |a: &str, b: &str| {
        format!(
            r#"{{"a":{{"dtype":"U8","shape":[4],"data_offsets":{a}}},"b":{{"dtype":"U8","shape":[4],"data_offsets":{b}}}}}"#
        )
    };
    let mut huge = (1u64 << 60).to_le_bytes().to_vec();
    huge.extend(b"{}");
    let mut past = 4096u64.to_le_bytes().to_vec();
    past.extend(b"{\"a\":1}");
    let mut not_utf8 = 8u64.to_le_bytes().to_vec();
    not_utf8.extend(b"{\"\xff\":1}  ");
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("claimed 2^60", huge, "header length"),
        ("past the end", past, "header length"),
        ("not UTF-8", not_utf8, "header"),
        ("not JSON", file("{\"x\": [1,", 0), "header"),
        ("overlap", file(&two("[0,4]", "[2,6]"), 6), "b"),
        ("gap", file(&two("[0,4]", "[6,10]"), 10), "b"),
        (
            "trailing bytes",
            file(&t("U8", "[4]", "[0,4]"), 9),
            "data_offsets",
        ),
        (
            "offsets past the end",
            file(&t("U8", "[4]", "[0,4]"), 2),
            "data_offsets",
        ),
        (
            "shape against offsets",
            file(&t("F32", "[4]", "[0,8]"), 8),
            "x: data_offsets",
        ),
        (
            "overflowing shape",
            file(&t("F64", "[4294967296,4294967296]", "[0,8]"), 8),
            "x: shape",
        ),
        ("fp8", file(&t("F8_E4M3", "[4]", "[0,4]"), 4), "F8_E4M3"),
        ("fp4", file(&t("F4", "[4]", "[0,2]"), 2), "F4"),
        (
            "unknown type",
            file(&t("Q7", "[4]", "[0,4]"), 4),
            "x: dtype",
        ),
        (
            "metadata not strings",
            file(r#"{"__metadata__":{"a":1}}"#, 0),
            "__metadata__",
        ),
        (
            "escaping name",
            file(
                r#"{"../../x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}"#,
                1,
            ),
            "../../x",
        ),
    ];
    for (what, bytes, field) in cases {
        let f = d.join("bad.safetensors");
        std::fs::write(&f, &bytes).unwrap();
        let out_dir = d.join("out");
        for output in [
            out_dir.clone(),
            d.join("out.npz"),
            d.join("out.safetensors"),
        ] {
            let out = ra().arg("convert").arg(&f).arg(&output).output().unwrap();
            let e = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{what}: {e}");
            assert!(
                e.contains("bad.safetensors") && e.contains(field),
                "{what}: {e}"
            );
            assert!(!e.contains("panicked"), "{what}: {e}");
            assert!(!output.exists(), "{what}: {} left behind", output.display());
        }
        let listing: Vec<_> = std::fs::read_dir(d).unwrap().collect();
        assert_eq!(listing.len(), 1, "{what}: only the input is left");
        if what != "escaping name" {
            let out = ra().arg("info").arg(&f).output().unwrap();
            assert_eq!(out.status.code(), Some(1), "{what}");
        }
    }
}

#[test]
fn a_safetensors_object_converts_into_a_dataset_and_back_into_object_storage() {
    use crate::s3_server::{Server, BUCKET};
    let Some(server) = Server::start() else {
        return;
    };
    let env = Server::env(&server.endpoint());
    let run = |args: &[&std::ffi::OsStr]| {
        let out = ra().args(args).envs(env.clone()).output().unwrap();
        assert!(
            out.status.success(),
            "ra {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let dir = tmp();
    let d = dir.path();
    let json = r#"{"__metadata__":{"k":"v"},"a.b":{"dtype":"I16","shape":[2,3],"data_offsets":[0,12]},"c":{"dtype":"U8","shape":[4],"data_offsets":[12,16]}}"#;
    let bytes = file(json, 16);
    std::fs::write(server.object("m.safetensors"), &bytes).unwrap();
    let url = format!("s3://{BUCKET}/m.safetensors");
    let out = d.join("out");
    run(&[
        s(Path::new("convert")),
        Path::new(&url).as_os_str(),
        s(&out),
    ]);
    assert!(std::fs::read_to_string(out.join("dataset.yaml"))
        .unwrap()
        .contains("k: v"));
    let raw = rastore::read_raw(out.join("a.b.ra")).unwrap();
    assert_eq!(raw.header.dims(), [2, 3]);
    // C order [i, j] at 2 (3 i + j): column-major [0, 0], [1, 0], [0, 1] are 0, 6, 2.
    assert_eq!(&raw.data[..6], &[0, 1, 6, 7, 2, 3]);
    // The folder back into object storage as one safetensors object: the same bytes.
    let back = format!("s3://{BUCKET}/back.safetensors");
    run(&[
        s(Path::new("convert")),
        s(&out),
        Path::new(&back).as_os_str(),
    ]);
    assert_eq!(
        std::fs::read(server.object("back.safetensors")).unwrap(),
        bytes
    );
}
