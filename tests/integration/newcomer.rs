//! One regression test per finding of the newcomer's end-to-end trial (issue 18), each
//! through the real `ra` binary, with NumPy and Pillow as judges where they have an
//! answer. The Python package's findings are in `python/tests/test_newcomer.py`.

use std::path::Path;

use rastore::formats::npy::{Descr, NpyHeader};
use rastore::ndarray::{arr1, Array1, ArrayD, IxDyn};
use rastore::{DType, Header};

use crate::common::{python, python_has, tmp};
use crate::tool::{fails, ok, run, s};

fn npy(path: &Path, descr: &str, fortran: bool, shape: &[u64], body: &[u8]) {
    let mut f = NpyHeader::encode(&Descr::parse(descr).unwrap(), fortran, shape);
    f.extend_from_slice(body);
    std::fs::write(path, f).unwrap();
}

fn f64s(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// 1: the tolerance is relative to |b|, whatever b's sign.
#[test]
fn diff_rtol_is_relative_to_the_magnitude_of_b() {
    let d = tmp();
    let (a, b) = (d.path().join("a.ra"), d.path().join("b.ra"));
    rastore::write(&a, &arr1(&[-1.0f64, -2.0])).unwrap();
    rastore::write(&b, &arr1(&[-1.001f64, -2.0])).unwrap();
    let out = ok(&["diff", s(&a), s(&b), "--rtol", "0.1"]);
    assert!(out.starts_with("same: float64 [2]"), "{out}");
    let o = run(&["diff", s(&a), s(&b), "--rtol", "1e-4"]);
    assert_eq!(o.status.code(), Some(1));
}

/// 2: NumPy's allclose: signed zeros, NaN, exact integers.
#[test]
fn diff_is_numpys_allclose() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    rastore::write(p("z.ra"), &arr1(&[0.0f32, 1.0])).unwrap();
    rastore::write(p("nz.ra"), &arr1(&[-0.0f32, 1.0])).unwrap();
    ok(&["diff", s(&p("z.ra")), s(&p("nz.ra"))]);
    let nan = f64::NAN;
    rastore::write(p("n1.ra"), &arr1(&[nan, 1.0, 2.0, nan])).unwrap();
    rastore::write(p("n2.ra"), &arr1(&[nan, nan, 2.0, 5.0])).unwrap();
    let o = run(&["diff", s(&p("n1.ra")), s(&p("n1.ra"))]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "NaN differs from NaN: {text}");
    assert!(
        text.contains("NaN: 2 in both (first at [0])") && text.contains("--equal-nan"),
        "{text}"
    );
    ok(&["diff", s(&p("n1.ra")), s(&p("n1.ra")), "--equal-nan"]);
    let o = run(&["diff", s(&p("n1.ra")), s(&p("n2.ra")), "--equal-nan"]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains("2 of 4 elements differ")
            && text.contains("NaN: 1 in a only (first at [3]), 1 in b only (first at [1])"),
        "{text}"
    );
    // 64-bit integers, exactly: f64 rounds both to 2^64.
    rastore::write(p("u1.ra"), &arr1(&[u64::MAX])).unwrap();
    rastore::write(p("u2.ra"), &arr1(&[u64::MAX - 1])).unwrap();
    let o = run(&["diff", s(&p("u1.ra")), s(&p("u2.ra"))]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(o.status.code(), Some(1), "{text}");
    assert!(text.contains("largest |a - b| = 1 at [0]"), "{text}");
    rastore::write(p("i1.ra"), &arr1(&[i64::MIN, 0])).unwrap();
    rastore::write(p("i2.ra"), &arr1(&[i64::MAX, 0])).unwrap();
    let o = run(&["diff", s(&p("i1.ra")), s(&p("i2.ra"))]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(
        text.contains("largest |a - b| = 18446744073709551615"),
        "{text}"
    );
}

/// The structured type `[('a', u1), 3 bytes of padding, ('b', <i4)]` (NumPy's aligned
/// struct), and `n` elements whose padding bytes are 0xab.
const PADDED: &str = "[('a', '|u1'), ('', '|V3'), ('b', '<i4')]";

fn padded_elements(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            let mut e = vec![i as u8, 0xab, 0xab, 0xab];
            e.extend((i as i32 * 1000).to_le_bytes());
            e
        })
        .collect()
}

fn padding_bytes(data: &[u8]) -> Vec<u8> {
    data.chunks(8).flat_map(|e| e[1..4].to_vec()).collect()
}

/// 3: padding reaches no file as it was in memory: every path writes zeros.
#[test]
fn padding_of_structured_elements_is_written_as_zeros() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    npy(&p("in.npy"), PADDED, false, &[5], &padded_elements(5));
    ok(&["convert", s(&p("in.npy")), s(&p("out.ra"))]);
    let ra_file = std::fs::read(p("out.ra")).unwrap();
    let data = &ra_file[56..56 + 40];
    assert_eq!(padding_bytes(data), vec![0; 15], "npy -> ra");
    assert_eq!(data[8], 1, "the fields are kept");
    // A .ra with dirty padding (written by hand) through every writer.
    let header = Header::new(DType::user(8), &[5]).unwrap();
    let trailer = rastore::ndl::descr_trailer(&header, &Descr::parse(PADDED).unwrap());
    let mut dirty = header.encode();
    dirty.extend(padded_elements(5));
    dirty.extend(&trailer);
    std::fs::write(p("dirty.ra"), &dirty).unwrap();
    ok(&["convert", s(&p("dirty.ra")), s(&p("out.npy"))]);
    let npy_file = std::fs::read(p("out.npy")).unwrap();
    assert_eq!(padding_bytes(&npy_file[npy_file.len() - 40..]), vec![0; 15]);
    let (dirty, npy_in) = (p("dirty.ra"), p("in.npy"));
    let (copy, packed, sliced, stacked) =
        (p("copy.ra"), p("packed.ra"), p("slice.ra"), p("stack.ra"));
    for (args, out) in [
        (vec!["convert", s(&dirty), s(&copy)], &copy),
        (
            vec!["convert", s(&dirty), s(&packed), "--compress"],
            &packed,
        ),
        (
            vec!["slice", s(&dirty), s(&sliced), "--slice", "1:5"],
            &sliced,
        ),
        (vec!["stack", s(&stacked), s(&dirty), s(&npy_in)], &stacked),
    ] {
        ok(&args);
        let data = rastore::read_raw(out).unwrap().data;
        assert_eq!(
            padding_bytes(&data),
            vec![0; data.len() / 8 * 3],
            "ra {args:?}"
        );
    }
    // Appending such elements to a file that describes them.
    let mut app = rastore::AppendOptions::new().open(&copy).unwrap();
    app.append_bytes(&padded_elements(5)).unwrap();
    app.finish().unwrap();
    let data = rastore::read_raw(&copy).unwrap().data;
    assert_eq!(data.len(), 80);
    assert_eq!(padding_bytes(&data), vec![0; 30], "appended");
}

/// 4: the min and max of 64-bit integers are exact.
#[test]
fn stats_of_64_bit_integers_are_exact() {
    let d = tmp();
    let (u, i) = (d.path().join("u.ra"), d.path().join("i.ra"));
    rastore::write(&u, &arr1(&[u64::MAX, 3, u64::MAX - 1])).unwrap();
    rastore::write(&i, &arr1(&[i64::MIN, 7, i64::MAX])).unwrap();
    let text = ok(&["stats", s(&u)]);
    assert!(text.contains("min 3 max 18446744073709551615 "), "{text}");
    let json = ok(&["stats", s(&i), "--json"]);
    assert!(
        json.contains("\"min\": -9223372036854775808, \"max\": 9223372036854775807,"),
        "{json}"
    );
}

/// 5: every --json output parses with a strict parser (no NaN or Infinity tokens).
#[test]
fn every_json_output_parses_strictly() {
    if !python_has("json") {
        return;
    }
    let d = tmp();
    let (f, c) = (d.path().join("f.ra"), d.path().join("c.ra"));
    rastore::write(&f, &arr1(&[f64::NAN, f64::INFINITY, -f64::INFINITY, 1.5])).unwrap();
    let cs = Array1::from_vec(vec![rastore::num_complex::Complex::new(f32::NAN, 1.0)]);
    rastore::write(&c, &cs).unwrap();
    let big = d.path().join("big.ra");
    rastore::write(&big, &arr1(&[f64::MAX, -f64::MAX])).unwrap();
    for args in [
        vec!["cat", s(&f), "--json"],
        vec!["cat", s(&c), "--json"],
        vec!["stats", s(&f), "--json"],
        vec!["stats", s(&big), "--json"],
        vec!["info", s(&f), "--json"],
    ] {
        let out = ok(&args);
        let parsed = python(&[
            "-c",
            "import json, sys\n\
             def no(c): raise ValueError('not strict JSON: ' + c)\n\
             v = json.loads(sys.argv[1], parse_constant=no)\n\
             print(json.dumps(v))",
            &out,
        ]);
        assert!(!parsed.is_empty(), "ra {args:?}");
    }
    assert_eq!(
        ok(&["cat", s(&f), "--json"]).trim(),
        "[\"NaN\", \"Infinity\", \"-Infinity\", 1.5]"
    );
}

/// 6: the read commands take .ra and .npy alike, mixing them; another format is named.
#[test]
fn read_commands_take_npy_and_name_other_formats() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    // A C-order .npy of [[0, 1, 2], [3, 4, 5]] and the same array as .ra.
    npy(
        &p("a.npy"),
        "'<f8'",
        false,
        &[2, 3],
        &f64s(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
    );
    let a = ArrayD::from_shape_fn(IxDyn(&[2, 3]), |ix| (ix[0] * 3 + ix[1]) as f64);
    rastore::write(p("a.ra"), &a).unwrap();
    // A name that says nothing: the contents decide.
    std::fs::copy(p("a.npy"), p("a.data")).unwrap();
    ok(&["diff", s(&p("a.npy")), s(&p("a.ra"))]);
    ok(&["diff", s(&p("a.ra")), s(&p("a.data"))]);
    let changed = ArrayD::from_shape_fn(IxDyn(&[2, 3]), |ix| (ix[0] * 3 + ix[1]) as f64 + 0.5);
    rastore::write(p("b.ra"), &changed).unwrap();
    let o = run(&["diff", s(&p("a.npy")), s(&p("b.ra"))]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stdout).contains("6 of 6 elements differ"));
    assert!(ok(&["verify", s(&p("a.npy"))]).contains("ok (float64 [2, 3], 48 data bytes"));
    assert!(ok(&["stats", s(&p("a.data"))]).starts_with("count 6 min 0.0 max 5.0"));
    assert!(ok(&["cat", s(&p("a.npy")), "--slice", "1,2"]).contains("[1, 2] 5"));
    ok(&["meta", s(&p("a.npy"))]);
    ok(&["slice", s(&p("a.data")), s(&p("row.ra")), "--slice", "1,:"]);
    assert_eq!(
        rastore::read::<f64>(p("row.ra")).unwrap(),
        arr1(&[3.0, 4.0, 5.0]).into_dyn()
    );
    // Another format: named, with what the command reads.
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend([0u8; 40]);
    std::fs::write(p("photo.png"), &png).unwrap();
    let (photo, other) = (p("photo.png"), p("a.ra"));
    for cmd in ["info", "verify", "stats", "cat", "describe", "diff"] {
        let mut args = vec![cmd, s(&photo)];
        if cmd == "diff" {
            args.push(s(&other));
        }
        let e = fails(&args, 1);
        assert!(
            e.contains("it starts like a PNG image")
                && e.contains("take .ra, .npy, NIfTI, TIFF, safetensors and NetCDF-3 files"),
            "ra {cmd}: {e}"
        );
    }
}

/// 8: a finished append keeps no space reserved past its end.
#[cfg(target_os = "linux")]
#[test]
fn a_finished_append_gives_back_its_reserved_space() {
    use std::os::unix::fs::MetadataExt;
    let d = tmp();
    let f = d.path().join("grow.ra");
    let frame = d.path().join("frame.ra");
    rastore::write(&frame, &arr1(&[1u8, 2])).unwrap();
    ok(&["append", s(&f), s(&frame)]);
    let allocated = |p: &Path| {
        let m = std::fs::metadata(p).unwrap();
        (
            m.blocks() * 512,
            m.len().div_ceil(m.blksize()) * m.blksize(),
        )
    };
    let (used, len) = allocated(&f);
    assert!(used <= len, "ra append: {used} bytes allocated for {len}");
    // Dropping an appender, and recovering a crashed one, give it back too.
    let mut a = rastore::AppendOptions::new().open(&f).unwrap();
    a.append(&arr1(&[3u8, 4])).unwrap();
    a.commit().unwrap();
    drop(a);
    let (used, len) = allocated(&f);
    assert!(
        used <= len,
        "dropped appender: {used} bytes allocated for {len}"
    );
    // A crash: `ra append` from stdin, killed after its first frame.
    let mut child = crate::cli::ra()
        .args(["append", s(&f), "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, &[5, 6]).unwrap();
    let t = std::time::Instant::now();
    while rastore::read_header_at(&f).unwrap().0.dims() != [2, 3] {
        assert!(t.elapsed().as_secs() < 20, "the appender committed nothing");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        allocated(&f).0 > 1 << 20,
        "the appender reserved space ahead"
    );
    rastore::recover(&f).unwrap();
    let (used, len) = allocated(&f);
    assert!(used <= len, "recover: {used} bytes allocated for {len}");
}

/// 9: reshape brings the NDL trailer's shape up to date, as describe shows it.
#[test]
fn reshape_updates_the_ndl_shape() {
    let d = tmp();
    let f = d.path().join("r.ra");
    rastore::write(&f, &Array1::<f32>::zeros(12)).unwrap();
    ok(&["meta", s(&f), "--set-attr", "units=m"]);
    let shape_of = |yaml: &[u8]| -> Vec<i64> {
        let doc = rastore::ndl::parse_trailer(yaml).expect("NDL");
        let nd = doc["ndarrays"]
            .as_hash()
            .unwrap()
            .values()
            .next()
            .unwrap()
            .clone();
        nd["shape"]
            .as_vec()
            .unwrap()
            .iter()
            .map(|d| d.as_i64().unwrap())
            .collect()
    };
    for (dims, want) in [("3,4", vec![3, 4]), ("2,-1,2", vec![2, 3, 2])] {
        ok(&["reshape", s(&f), dims]);
        let trailer = rastore::read_metadata(&f).unwrap();
        assert_eq!(shape_of(&trailer), want, "{dims}");
        assert!(String::from_utf8_lossy(&trailer).contains("units: m"));
        assert_eq!(shape_of(ok(&["describe", s(&f)]).as_bytes()), want);
    }
}

/// 10: an .npz of one array converts to a .ra file; of several, to a folder (or a Zarr
/// group, `dataset.rs`) only.
#[test]
fn npz_to_a_ra_file_or_a_folder() {
    if !python_has("numpy") {
        return;
    }
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    python(&[
        "-c",
        "import numpy as np, sys\n\
         np.savez(sys.argv[1] + '/one.npz', x=np.arange(4.0))\n\
         np.savez(sys.argv[1] + '/two.npz', x=np.arange(4.0), y=np.ones(2))",
        s(d.path()),
    ]);
    ok(&["convert", s(&p("one.npz")), s(&p("one.ra"))]);
    assert!(p("one.ra").is_file());
    assert_eq!(
        rastore::read::<f64>(p("one.ra")).unwrap(),
        arr1(&[0.0, 1.0, 2.0, 3.0]).into_dyn()
    );
    let e = fails(&["convert", s(&p("two.npz")), s(&p("two.ra"))], 1);
    assert!(
        e.contains("holds 2 arrays") && e.contains("give a folder"),
        "{e}"
    );
    assert!(!p("two.ra").exists(), "nothing made");
    ok(&["convert", s(&p("two.npz")), s(&p("two"))]);
    assert!(p("two/x.ra").is_file() && p("two/y.ra").is_file());
}

/// 11: `--shape ''`, as --help offers, is a 0-d scalar.
#[test]
fn create_takes_an_empty_shape_for_a_scalar() {
    let d = tmp();
    let f = d.path().join("scalar.ra");
    let help = ok(&["create", "--help"]);
    assert!(help.contains("--shape ''"), "{help}");
    ok(&["create", s(&f), "--dtype", "f32", "--shape", ""]);
    let (h, _) = rastore::read_header_at(&f).unwrap();
    assert_eq!((h.dims(), h.count()), (&[][..], 1));
    let e = fails(&["create", s(&f), "--dtype", "f32", "--shape", "3,x"], 2);
    assert!(e.contains("\"x\" is not a dim"), "{e}");
}

/// 13: messages that say what is wrong, where.
#[test]
fn messages_name_what_is_wrong() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    npy(&p("small.npy"), "'<f8'", false, &[2], &f64s(&[1.0, 2.0]));
    let e = fails(&["convert", s(&p("small.npy")), "-"], 2);
    assert!(
        e.contains("for an output") && !e.contains("as input"),
        "{e}"
    );
    let e = fails(&["convert", s(&p("small.npy")), s(&p("nodir/x.ra"))], 1);
    assert!(
        e.contains(&format!("the folder {} does not exist", s(&p("nodir")))),
        "{e}"
    );
    let one = ok(&["stack", s(&p("st.ra")), s(&p("small.npy"))]);
    assert!(one.ends_with("from 1 input\n"), "{one}");
    rastore::write(p("empty.ra"), &Array1::<f32>::zeros(0)).unwrap();
    let text = ok(&["stats", s(&p("empty.ra"))]);
    assert!(
        !text.contains("null") && text.contains("no finite values"),
        "{text}"
    );
}

/// 13: `--compress` shows progress as the plain conversion does (on a terminal, as
/// `script` gives one).
#[cfg(target_os = "linux")]
#[test]
fn compressing_conversions_show_progress() {
    let d = tmp();
    let src = d.path().join("big.ra");
    let a = Array1::from_shape_fn(20 << 20, |i| (i % 7) as f32);
    rastore::write(&src, &a).unwrap();
    let dst = d.path().join("packed.ra");
    let cmd = format!(
        "{} convert {} {} --compress",
        env!("CARGO_BIN_EXE_ra"),
        s(&src),
        s(&dst)
    );
    let o = std::process::Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .output()
        .unwrap();
    let screen = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{screen}");
    assert!(
        screen.contains("/s"),
        "no progress with throughput: {screen:?}"
    );
    assert_eq!(rastore::read::<f32>(&dst).unwrap(), a.into_dyn());
}

/// 14: a newcomer's first build is quiet: no build script speaks (what skips is said
/// by `tests/environment.rs`, where the tests run).
#[test]
fn the_build_prints_no_warnings() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let build = std::fs::read_to_string(root.join("build.rs")).unwrap_or_default();
    assert!(
        !build.contains("cargo:warning"),
        "build.rs warns on every build"
    );
}

/// 15: a palette PNG is expanded to RGB (RGBA with transparency), as Pillow's
/// `convert`, and docs/TOOL.md and FORMAT.md say so.
#[test]
fn palette_pngs_expand_as_the_docs_say() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for doc in ["docs/TOOL.md", "docs/FORMAT.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        assert!(
            text.contains("palette") && text.contains("convert('RGB')"),
            "{doc} does not say what a palette image becomes"
        );
    }
    if !python_has("numpy, PIL") {
        return;
    }
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    // Each kind of PNG that `np.asarray(Image.open(f))` does not give as ra does, and
    // the Pillow conversion that gives ra's array.
    python(&[
        "-c",
        r#"
import numpy as np, sys
from PIL import Image
d = sys.argv[1]
g = (np.arange(48 * 64) % 200).astype(np.uint8).reshape(48, 64)
rgb = np.stack([g, g // 2, 255 - g], -1)
Image.fromarray(g).convert('P').save(d + '/pal.png')
Image.fromarray(g).convert('P').save(d + '/palt.png', transparency=3)
Image.fromarray(g > 100).save(d + '/bits.png')
Image.fromarray(g).save(d + '/grayt.png', transparency=5)
Image.fromarray(rgb).save(d + '/rgbt.png', transparency=(5, 2, 250))
for name, mode in [('pal', 'RGB'), ('palt', 'RGBA'), ('bits', 'L'), ('grayt', 'LA'), ('rgbt', 'RGBA')]:
    im = Image.open(d + '/' + name + '.png')
    np.save(d + '/' + name + '_want.npy', np.asarray(im.convert(mode)))
"#,
        s(d.path()),
    ]);
    for name in ["pal", "palt", "bits", "grayt", "rgbt"] {
        let (png, out) = (p(&format!("{name}.png")), p(&format!("{name}.npy")));
        ok(&["convert", s(&png), s(&out)]);
        ok(&["diff", s(&out), s(&p(&format!("{name}_want.npy")))]);
    }
}

/// 16: the crate docs say what the README's examples are: compiled, not run.
#[test]
fn the_docs_say_the_readme_examples_are_compiled_not_run() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    if readme.contains("```rust,no_run") {
        assert!(
            !lib.contains("compiled and run"),
            "src/lib.rs says the README examples run; they are no_run"
        );
    }
}
