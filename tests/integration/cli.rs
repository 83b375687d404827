//! The real `ra` binary: golden outputs on the conformance files, exit codes, and
//! malformed input through every subcommand.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::{conformance_dir, tmp, until_started, words, MAGIC};

pub fn ra() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ra"))
}

/// Runs `ra args`, starting it again if Windows failed to start it (see
/// `until_started`).
pub fn run(args: &[&str]) -> Output {
    until_started(&args, || ra().args(args).output())
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn demo_runs_end_to_end_on_a_small_array() {
    let dir = tmp();
    let out = ra()
        .args(["demo", "--gib", "0.01", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("float32 [1024, 1024, 3]"), "{text}");
    assert!(text.contains("fill ") && text.contains("MiB/s"), "{text}");
    assert!(
        text.contains("ok: values read through the mapping match"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "demo file removed"
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(run(&["info"]).status.code(), Some(2));
    assert_eq!(
        run(&["cat", "x.ra", "--limit", "many"]).status.code(),
        Some(2)
    );
    for sub in [
        "info", "describe", "cat", "verify", "meta", "diff", "reshape", "convert", "create",
        "demo", "stats", "slice", "stack",
    ] {
        let o = run(&[sub, "--help"]);
        assert!(o.status.success(), "{sub} --help");
        assert!(stdout(&o).contains("Usage: ra"), "{sub}");
    }
}

fn conf(name: &str) -> Option<String> {
    conformance_dir().map(|d| d.join(name).to_string_lossy().into_owned())
}

#[test]
fn golden_info() {
    let (Some(t), Some(z)) = (conf("test.ra"), conf("mnist_8_z.ra")) else {
        return;
    };
    let o = run(&["info", &t, &z]);
    assert!(o.status.success());
    assert_eq!(
        stdout(&o),
        format!(
            "{t}: complex64 [3, 4] bytes 96 flags 0x0 trailer 0\n\
             {z}: uint8 [28, 28, 3] bytes 486 flags 0x2 (lz4) trailer 0\n"
        )
    );
    let o = run(&["info", "--json", &t]);
    let path = rastore::json::string(&t);
    assert_eq!(
        stdout(&o),
        format!(
            "{{\"path\": {path}, \"dtype\": \"complex64\", \"eltype\": 4, \"elbyte\": 8, \"dims\": [3, 4], \
             \"count\": 12, \"bytes\": 96, \"flags\": {{\"big_endian\": false, \"compressed\": false, \"bits\": false, \"appending\": false}}, \
             \"header_bytes\": 64, \"data_offset\": 64, \"metadata_bytes\": 0}}\n"
        )
    );
}

#[test]
fn golden_cat() {
    let Some(t) = conf("test.ra") else { return };
    let o = run(&["cat", &t]);
    assert!(o.status.success());
    let want = "[0, 0] 0-infi\n[1, 0] 1-1i\n[2, 0] 2-0.5i\n[0, 1] 3-0.33333334i\n[1, 1] 4-0.25i\n\
                [2, 1] 5-0.2i\n[0, 2] 6-0.16666667i\n[1, 2] 7-0.14285715i\n[2, 2] 8-0.125i\n\
                [0, 3] 9-0.11111111i\n[1, 3] 10-0.1i\n[2, 3] 11-0.09090909i\n";
    assert_eq!(stdout(&o), want);
    let o = run(&["cat", &t, "--slice", "1:,-1", "--limit", "1"]);
    assert_eq!(
        stdout(&o),
        "[1, 3] 10-0.1i\n... 1 more complex64 elements (raise --limit)\n"
    );
    let Some(h) = conf("randf16.ra") else { return };
    let o = run(&["cat", &h, "--slice", "0,0"]);
    assert!(stdout(&o).starts_with("[0, 0] 0."), "{}", stdout(&o));
    let Some(z) = conf("mnist_8_z.ra") else {
        return;
    };
    let (zo, plain) = (
        run(&["cat", &z, "--slice", ":,14,0"]),
        run(&["cat", &conf("mnist_8.ra").unwrap(), "--slice", ":,14,0"]),
    );
    assert_eq!(
        stdout(&zo),
        stdout(&plain),
        "compressed and plain twins print alike"
    );
    assert_eq!(stdout(&zo).lines().count(), 28);
    assert_eq!(run(&["cat", &t, "--slice", "5,0"]).status.code(), Some(2));
}

#[test]
fn golden_describe() {
    let Some(t) = conf("test.ra") else { return };
    let o = run(&["describe", &t]);
    assert!(o.status.success());
    let text = stdout(&o);
    // The emitter quotes the path only where YAML needs it; compare it parsed.
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).expect("YAML");
    assert_eq!(docs[0]["file"].as_str(), Some(t.as_str()));
    let (head, rest) = text.split_at(text.find("ndarrays:").unwrap());
    assert!(head.starts_with("---\nfile: "));
    let want = "ndarrays:\n  data:\n    shape:\n      - 3\n      - 4\n    type: complex64\n    \
                attributes: {}\n    storage:\n      format: RawArray\n      endian: little\n      order: column-major\n      \
                data_offset: 64\n      size: 96\n";
    assert_eq!(rest, want);
}

#[test]
fn verify_decodes_everything_and_reports_bad_files() {
    let Some(dir) = conformance_dir() else { return };
    let files: Vec<String> = [
        "test.ra",
        "mnist_8_z.ra",
        "cifar_airplane_z.ra",
        "shepplogan.ra",
    ]
    .iter()
    .map(|f| dir.join(f).to_string_lossy().into_owned())
    .collect();
    let mut args = vec!["verify"];
    args.extend(files.iter().map(String::as_str));
    let o = run(&args);
    assert!(o.status.success());
    assert_eq!(
        stdout(&o).lines().filter(|l| l.contains(": ok (")).count(),
        4
    );
    // A corrupt LZ4 block: the header is fine, decoding is not.
    let tdir = tmp();
    let mut bytes = std::fs::read(dir.join("mnist_8_z.ra")).unwrap();
    let n = bytes.len();
    bytes[n - 40..n - 20].fill(0xff);
    let bad = tdir.path().join("corrupt.ra");
    std::fs::write(&bad, bytes).unwrap();
    let o = ra()
        .arg("verify")
        .arg(&files[0])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("corrupt.ra") && err.contains("lz4"), "{err}");
}

#[test]
fn meta_reshape_and_diff() {
    let dir = tmp();
    let a = dir.path().join("a.ra");
    let b = dir.path().join("b.ra");
    let arr = rastore::ndarray::Array2::from_shape_fn((4, 6), |(i, j)| (i * 10 + j) as f32);
    rastore::write(&a, &arr).unwrap();
    rastore::write(&b, &arr).unwrap();
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let o = run(&["diff", &s(&a), &s(&b)]);
    assert!(o.status.success(), "{}", stdout(&o));
    assert_eq!(stdout(&o), "same: float32 [4, 6]\n");

    // meta --set from a file replaces the trailer; the data is untouched.
    let src = dir.path().join("m.yaml");
    std::fs::write(&src, "---\nunits: kelvin\n").unwrap();
    assert!(run(&["meta", &s(&a), "--set", &s(&src)]).status.success());
    assert_eq!(stdout(&run(&["meta", &s(&a)])), "---\nunits: kelvin\n");
    assert_eq!(rastore::read::<f32>(&a).unwrap(), arr.clone().into_dyn());
    // A shorter trailer from stdin: the file is rewritten, never truncated in place.
    let mut child = ra()
        .args(["meta", &s(&a), "--set", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"k").unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(rastore::read_metadata(&a).unwrap(), b"k");
    let o = run(&["diff", &s(&a), &s(&b)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stdout(&o).contains("metadata: 1 bytes vs 0 bytes"),
        "{}",
        stdout(&o)
    );

    // reshape in place (same ndims), then to 3-D (rewritten, trailer kept).
    assert!(run(&["reshape", &s(&a), "6,4"]).status.success());
    assert_eq!(rastore::read_header_at(&a).unwrap().0.dims(), &[6, 4]);
    assert!(run(&["reshape", &s(&a), "2,3,4"]).status.success());
    let back: rastore::ndarray::ArrayD<f32> = rastore::read(&a).unwrap();
    assert_eq!(back.shape(), &[2, 3, 4]);
    assert_eq!(
        back.t().iter().copied().collect::<Vec<_>>(),
        arr.t().iter().copied().collect::<Vec<_>>()
    );
    assert_eq!(rastore::read_metadata(&a).unwrap(), b"k");
    let o = run(&["reshape", &s(&a), "5,5"]);
    assert_eq!(o.status.code(), Some(1));

    // diff: first differing element and the largest |a - b|.
    let mut other = arr.clone();
    other[[1, 2]] += 0.5;
    other[[3, 5]] -= 4.0;
    rastore::write(&a, &arr).unwrap();
    rastore::write(&b, &other).unwrap();
    let o = run(&["diff", &s(&a), &s(&b)]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "first difference at [1, 2]: 12 vs 12.5\n2 of 24 elements differ, largest |a - b| = 4 at [3, 5]: 35 vs 31\n"
    );
    // Within tolerance: equal; outside it, only what differs more is counted.
    let o = run(&["diff", &s(&a), &s(&b), "--atol", "4"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    let o = run(&["diff", &s(&a), &s(&b), "--atol", "1"]);
    assert_eq!(
        stdout(&o),
        "first difference at [3, 5]: 35 vs 31\n1 of 24 elements differ (rtol 0, atol 1), largest |a - b| = 4 at [3, 5]: 35 vs 31\n"
    );
    let o = run(&["diff", &s(&a), &s(&b), "--rtol", "0.25"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    rastore::write(&b, &rastore::ndarray::Array2::<f64>::zeros((4, 6))).unwrap();
    assert_eq!(
        stdout(&run(&["diff", &s(&a), &s(&b)])),
        "dtype: float32 vs float64\n"
    );
}

#[test]
fn png_round_trips_and_scales() {
    let dir = tmp();
    let s = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    // RGBA uint8 [h, w, 4] (FORMAT.md section 7): pixel (x, y) = v[[y, x, c]].
    let rgb =
        rastore::ndarray::Array3::from_shape_fn((3, 5, 4), |(y, x, c)| (c * 60 + x * 10 + y) as u8);
    rastore::write(s("rgb.ra"), &rgb).unwrap();
    assert!(run(&["convert", &s("rgb.ra"), &s("rgb.png")])
        .status
        .success());
    assert!(run(&["convert", &s("rgb.png"), &s("rgb2.ra")])
        .status
        .success());
    assert_eq!(rastore::read::<u8>(s("rgb2.ra")).unwrap(), rgb.into_dyn());
    // 16-bit gray [h, w].
    let g = rastore::ndarray::Array2::from_shape_fn((7, 3), |(y, x)| (y * 9000 + x) as u16);
    rastore::write(s("g.ra"), &g).unwrap();
    assert!(run(&["convert", &s("g.ra"), &s("g.png")]).status.success());
    assert!(run(&["convert", &s("g.png"), &s("g2.ra")]).status.success());
    assert_eq!(rastore::read::<u16>(s("g2.ra")).unwrap(), g.into_dyn());
    // float64 is scaled min..max to 0..255.
    let f = rastore::ndarray::Array2::from_shape_fn((4, 2), |(y, x)| -1.0 + (y + 4 * x) as f64);
    rastore::write(s("f.ra"), &f).unwrap();
    assert!(run(&["convert", &s("f.ra"), &s("f.png")]).status.success());
    assert!(run(&["convert", &s("f.png"), &s("f2.ra")]).status.success());
    let back = rastore::read::<u8>(s("f2.ra")).unwrap();
    assert_eq!(back[[0, 0]], 0);
    assert_eq!(back[[3, 1]], 255);
    assert_eq!(back[[1, 0]], 36);
    // 4-D cannot be an image.
    rastore::write(
        s("4d.ra"),
        &rastore::ndarray::Array4::<u8>::zeros((1, 2, 2, 2)),
    )
    .unwrap();
    let o = run(&["convert", &s("4d.ra"), &s("4d.png")]);
    assert_eq!(o.status.code(), Some(1));
    if let Some(m) = conf("mnist_8.png") {
        assert!(run(&["convert", &m, &s("m.ra")]).status.success());
        let h = rastore::read_header_at(s("m.ra")).unwrap().0;
        assert_eq!(h.dims(), &[28, 28], "grayscale is [height, width]");
        assert_eq!(h.dtype(), rastore::DType::U8);
    }
}

#[test]
fn ra_to_ra_compresses_decompresses_and_swaps_to_native() {
    let dir = tmp();
    let s = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    let vals = [1.5f32, -2.0, 3.25, 0.0];
    let mut be = crate::common::words_be(&[MAGIC, 1, 3, 4, 16, 1, 4]);
    vals.iter().for_each(|v| be.extend(v.to_be_bytes()));
    be.extend(b"trailer");
    std::fs::write(s("be.ra"), &be).unwrap();
    assert!(run(&["convert", &s("be.ra"), &s("le.ra")]).status.success());
    let raw = rastore::read_raw(s("le.ra")).unwrap();
    assert!(!raw.header.data_big_endian() && !raw.header.header_big_endian());
    assert_eq!(raw.metadata, b"trailer");
    assert_eq!(
        rastore::read::<f32>(s("le.ra"))
            .unwrap()
            .as_slice()
            .unwrap(),
        &vals
    );
    let z = rastore::ndarray::Array1::<i64>::zeros(1000);
    rastore::write(s("z.ra"), &z).unwrap();
    assert!(run(&["convert", "--compress", &s("z.ra"), &s("zc.ra")])
        .status
        .success());
    let h = rastore::read_header_at(s("zc.ra")).unwrap().0;
    assert!(h.flags().compressed() && h.size() < 8000);
    assert!(run(&["convert", &s("zc.ra"), &s("zd.ra")]).status.success());
    assert_eq!(
        std::fs::read(s("zd.ra")).unwrap(),
        std::fs::read(s("z.ra")).unwrap()
    );
}

#[test]
fn every_subcommand_exits_1_with_one_line_on_malformed_files() {
    let dir = tmp();
    let s = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    std::fs::write(
        s("garbage.ra"),
        b"this is not a rawarray file, not even close to one",
    )
    .unwrap();
    let mut t = words(&[MAGIC, 0, 3, 4, 400, 1, 100]);
    t.extend([0; 10]);
    std::fs::write(s("trunc.ra"), &t).unwrap();
    std::fs::write(s("tiny.ra"), b"ra").unwrap();
    let good = s("good.ra");
    rastore::write(&good, &rastore::ndarray::Array1::<f32>::zeros(3)).unwrap();
    for bad in ["garbage.ra", "trunc.ra", "tiny.ra", "missing.ra"] {
        let b = s(bad);
        for args in [
            vec!["info", &b],
            vec!["info", "--json", &b],
            vec!["describe", &b],
            vec!["cat", &b],
            vec!["verify", &b],
            vec!["meta", &b],
            vec!["meta", &b, "--set", &good],
            vec!["diff", &b, &good],
            vec!["diff", &good, &b],
            vec!["reshape", &b, "3"],
        ] {
            let o = run(&args);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains(bad), "{args:?} names the file: {err}");
            assert!(!err.contains("panicked"), "{args:?}: {err}");
        }
        for out in ["o.npy", "o.png", "o.ra"] {
            let o = run(&["convert", &b, &s(out)]);
            assert_eq!(o.status.code(), Some(1), "convert {bad} {out}");
            assert_eq!(
                String::from_utf8_lossy(&o.stderr)
                    .trim_end()
                    .lines()
                    .count(),
                1
            );
            assert!(
                !dir.path().join(out).exists(),
                "nothing written for {bad} -> {out}"
            );
        }
    }
    assert_eq!(
        std::fs::read(s("trunc.ra")).unwrap(),
        t,
        "no subcommand changed a bad file"
    );
}

#[test]
fn describe_stays_yaml_for_odd_paths_and_trailers() {
    let dir = tmp();
    // Windows names cannot hold control characters.
    let name = if cfg!(unix) {
        "odd\u{19}name.ra"
    } else {
        "odd name.ra"
    };
    let p = dir.path().join(name);
    rastore::WriteOptions::new()
        .metadata(b"---\nkey\x19: 1\n".to_vec())
        .write(&p, &rastore::ndarray::Array1::<u8>::zeros(2))
        .unwrap();
    let o = ra().arg("describe").arg(&p).output().unwrap();
    assert!(o.status.success());
    let text = stdout(&o);
    let docs = yaml_rust2::YamlLoader::load_from_str(&text).expect("describe prints YAML");
    assert!(
        docs[0]["file"]
            .as_str()
            .unwrap()
            .ends_with(&name.replace('\u{19}', "?")),
        "{text}"
    );
    // A trailer that is not printable YAML is described as opaque bytes.
    assert_eq!(
        docs[0]["ndarrays"]["data"]["attributes"]["trailer"]["format"].as_str(),
        Some("opaque")
    );
}
