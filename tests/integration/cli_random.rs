//! A seeded, bounded black-box run of the real `ra` binary: valid `.ra`, `.npy` and
//! `.png` files are mutated and sent through every subcommand. Whatever the input:
//! the exit code is 0, 1 or 2 (never a signal), a failure says why on stderr, a failed
//! write leaves nothing behind, and read-only commands leave their input as it was.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use rastore::formats::npy::{Descr, NpyHeader};
use rastore::ndarray::{Array1, Array2, Array3};
use rastore::{ndarray, WriteOptions};

use crate::cli::ra;
use crate::common::{tmp, until_started};

/// Mutated inputs per run: about 1,200 `ra` processes, a few seconds.
const CASES: usize = 90;

/// The seed: the same inputs every run (RASTORE_CLI_SEED picks another).
const SEED: u64 = 0x5eed_0f0a_cafe;

/// No command on these small files may take this long: more is a hang.
const HANG: Duration = Duration::from_secs(20);

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Valid files of every kind the tool reads, as (extension, bytes).
fn originals(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    let mut files = Vec::new();
    let mut ra_file = |opts: WriteOptions, write: &dyn Fn(&WriteOptions, &Path)| {
        let p = dir.join("orig.ra");
        write(&opts, &p);
        files.push(("ra", std::fs::read(&p).unwrap()));
    };
    let f32s = Array2::from_shape_fn((5, 7), |(i, j)| i as f32 - 0.5 * j as f32);
    ra_file(WriteOptions::new().metadata("---\nunits: m\n"), &|o, p| {
        o.write(p, &f32s).unwrap()
    });
    let u8s = Array3::from_shape_fn((6, 4, 3), |(i, j, k)| (i * 40 + j * 9 + k) as u8);
    ra_file(WriteOptions::new(), &|o, p| o.write(p, &u8s).unwrap());
    let i16s = Array1::from_shape_fn(300, |i| (i / 10) as i16);
    ra_file(WriteOptions::new().compress(true), &|o, p| {
        o.write(p, &i16s).unwrap()
    });
    let c64 = Array1::from_shape_fn(4, |i| rastore::num_complex::Complex::new(i as f32, -1.0));
    ra_file(WriteOptions::new(), &|o, p| o.write(p, &c64).unwrap());
    // Big-endian f64, a Julia Bool and a BitArray, built by hand.
    let words = |w: &[u64], body: &[u8]| rastore::fuzzing::image(w, body, false);
    let be: Vec<u8> = (0..6)
        .flat_map(|i| (i as f64 * 1.5).to_be_bytes())
        .collect();
    files.push(("ra", words(&[rastore::MAGIC, 1, 3, 8, 48, 2, 2, 3], &be)));
    files.push((
        "ra",
        words(&[rastore::MAGIC, 0, 5, 1, 5, 1, 5], &[1, 0, 1, 1, 0]),
    ));
    files.push((
        "ra",
        words(
            &[rastore::MAGIC, 6, 5, 8, 8, 1, 70],
            &0x5555u64.to_le_bytes(),
        ),
    ));
    // NPY in both orders, big-endian, structured.
    let mut npy = |descr: &str, fortran: bool, shape: &[u64], body: Vec<u8>| {
        let mut f = NpyHeader::encode(&Descr::parse(descr).unwrap(), fortran, shape);
        f.extend(body);
        files.push(("npy", f));
    };
    npy("'<f4'", false, &[3, 4], (0..48).collect());
    npy("'<i2'", true, &[2, 3, 2], (0..24).collect());
    npy("'>u4'", false, &[5], (0..20).collect());
    npy(
        "[('a', '<i4'), ('b', 'S3')]",
        false,
        &[3],
        (0..21).collect(),
    );
    npy("'|b1'", false, &[2, 2], vec![0, 1, 1, 0]);
    // PNGs: RGB and 16-bit gray.
    for (name, arr) in [
        (
            "rgb",
            Array3::from_shape_fn((4, 5, 3), |(y, x, c)| (y * 50 + x * 7 + c) as u8).into_dyn(),
        ),
        (
            "gray",
            Array2::from_shape_fn((3, 6), |(y, x)| (y * 6 + x) as u8).into_dyn(),
        ),
    ] {
        let ra_path = dir.join(format!("{name}.ra"));
        let png = dir.join(format!("{name}.png"));
        rastore::write(&ra_path, &arr).unwrap();
        let o = ra()
            .arg("convert")
            .arg(&ra_path)
            .arg(&png)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        files.push(("png", std::fs::read(&png).unwrap()));
    }
    let g16: ndarray::ArrayD<u16> =
        Array2::from_shape_fn((2, 3), |(y, x)| (y * 999 + x) as u16).into_dyn();
    let p = dir.join("g16.ra");
    rastore::write(&p, &g16).unwrap();
    let png = dir.join("g16.png");
    assert!(ra()
        .arg("convert")
        .arg(&p)
        .arg(&png)
        .status()
        .unwrap()
        .success());
    files.push(("png", std::fs::read(&png).unwrap()));
    files
}

/// A mutation of `data`: flipped bytes, a header word set to an edge value, a cut, or
/// bytes added.
fn mutate(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    for _ in 0..1 + rng.below(3) {
        match rng.below(5) {
            0 if !d.is_empty() => {
                let i = rng.below(d.len());
                d[i] ^= 1 << rng.below(8);
            }
            1 if d.len() >= 8 => {
                let edges = [
                    0,
                    1,
                    2,
                    4,
                    7,
                    8,
                    16,
                    255,
                    1 << 32,
                    1 << 62,
                    u64::MAX,
                    u64::MAX - 7,
                ];
                let w = rng.below(d.len().min(96) / 8);
                let v = edges[rng.below(edges.len())];
                d[8 * w..8 * w + 8].copy_from_slice(&v.to_le_bytes());
            }
            2 => d.truncate(rng.below(d.len() + 1)),
            3 => d.extend((0..rng.below(40)).map(|_| rng.next() as u8)),
            _ if !d.is_empty() => {
                let i = rng.below(d.len());
                d[i] = rng.next() as u8;
            }
            _ => {}
        }
    }
    d
}

/// Runs `ra args`, killing it if it hangs, and starting it again if Windows failed
/// to start it (see `until_started`).
fn run(args: &[String]) -> Output {
    until_started(&args, || run_once(args))
}

fn run_once(args: &[String]) -> std::io::Result<Output> {
    let mut child: std::process::Child = ra()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > HANG {
            child.kill().unwrap();
            panic!("ra {args:?} hung for {HANG:?}");
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    child.wait_with_output()
}

fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Checks what must hold for every command, whatever its input.
fn check(args: &[String], o: &Output) {
    let code = o.status.code();
    assert!(
        matches!(code, Some(0..=2)),
        "ra {args:?} ended with {:?}: {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    // `diff` exits 1 for a difference, which it prints on stdout.
    let said = !o.stderr.is_empty() || (args[0] == "diff" && !o.stdout.is_empty());
    if code != Some(0) {
        assert!(said, "ra {args:?} failed without a word");
    }
}

fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn mutated_files_through_every_subcommand() {
    let seed = std::env::var("RASTORE_CLI_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let root = tmp();
    let originals = originals(root.path());
    let (input_dir, out_dir, work_dir) = (
        root.path().join("in"),
        root.path().join("out"),
        root.path().join("work"),
    );
    for d in [&input_dir, &out_dir, &work_dir] {
        std::fs::create_dir(d).unwrap();
    }
    let mut rng = Rng(seed);
    let mut failures = 0;
    let mut runs = 0;
    for case in 0..CASES {
        let (ext, orig) = &originals[case % originals.len()];
        let data = mutate(&mut rng, orig);
        let input: PathBuf = input_dir.join(format!("case.{ext}"));
        std::fs::write(&input, &data).unwrap();
        let i = input.to_str().unwrap();
        let base = root.path().join("base.ra");
        std::fs::write(&base, &originals[0].1).unwrap();
        let slice = ["", "0", "-1,1:3", "::2", "1:0", "9", "-1,-1,-1"][rng.below(7)];
        let read_only = [
            strs(&["info", i]),
            strs(&["info", "--json", i]),
            strs(&["describe", i]),
            strs(&["cat", i, "--limit", "50"]),
            strs(&["cat", i, &format!("--slice={slice}")]),
            strs(&["verify", i]),
            strs(&["meta", i]),
            strs(&["diff", i, base.to_str().unwrap()]),
        ];
        for args in &read_only {
            let o = run(args);
            check(args, &o);
            assert_eq!(
                std::fs::read(&input).unwrap(),
                data,
                "ra {args:?} changed its input"
            );
            runs += 1;
            failures += usize::from(!o.status.success());
        }
        // Conversions to every format: a failure leaves the output folder empty.
        let outs: &[&str] = if *ext == "ra" {
            &["npy", "png", "ra"]
        } else {
            &["ra"]
        };
        for out_ext in outs {
            let out = out_dir.join(format!("o.{out_ext}"));
            let mut args = strs(&["convert", i, out.to_str().unwrap()]);
            if rng.below(3) == 0 && *out_ext == "ra" {
                args.push("--compress".into());
            }
            let o = run(&args);
            check(&args, &o);
            assert_eq!(
                std::fs::read(&input).unwrap(),
                data,
                "ra {args:?} changed its input"
            );
            if o.status.success() {
                std::fs::remove_file(&out).unwrap();
            } else {
                failures += 1;
            }
            assert!(
                listing(&out_dir).is_empty(),
                "ra {args:?} left {:?}",
                listing(&out_dir)
            );
            runs += 1;
        }
        if *ext == "ra" {
            // In-place rewrites of a copy: on failure the copy is as it was, alone.
            let copy = work_dir.join("copy.ra");
            let c = copy.to_str().unwrap();
            let meta = root.path().join("meta.txt");
            std::fs::write(&meta, b"---\nnew: 1\n").unwrap();
            for args in [
                strs(&["meta", c, "--set", meta.to_str().unwrap()]),
                strs(&["reshape", c, "35"]),
                strs(&["reshape", c, "2,0"]),
            ] {
                std::fs::write(&copy, &data).unwrap();
                let o = run(&args);
                check(&args, &o);
                if !o.status.success() {
                    assert_eq!(
                        std::fs::read(&copy).unwrap(),
                        data,
                        "failed ra {args:?} changed the file"
                    );
                    failures += 1;
                }
                assert_eq!(
                    listing(&work_dir),
                    ["copy.ra"],
                    "ra {args:?} left files behind"
                );
                runs += 1;
            }
        }
    }
    println!("{runs} runs of ra over {CASES} mutated files (seed {seed:#x}), {failures} refused");
    assert!(
        failures > 0 && failures < runs,
        "the mutations hit both paths"
    );
}

/// Values a random array is made of: negatives, signed zeros, NaN, infinities and the
/// extremes of 64-bit integers, and neighbours that a tolerance may or may not cover.
trait Sample: rastore::Element + Copy {
    /// One value drawn by `rng`.
    fn draw(rng: &mut Rng) -> Self;
    /// A value near `self` (or equal, or far).
    fn near(self, rng: &mut Rng) -> Self;
}

fn float_draw(rng: &mut Rng) -> f64 {
    let special = [
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        -f64::INFINITY,
        1.0,
        -1.0,
    ];
    if rng.below(4) == 0 {
        special[rng.below(special.len())]
    } else {
        let mantissa = (rng.next() % 2_000_001) as f64 / 1e6 - 1.0;
        mantissa * 10f64.powi(rng.below(12) as i32 - 4)
    }
}

fn float_near(x: f64, rng: &mut Rng) -> f64 {
    match rng.below(20) {
        0..=11 => x,
        12 | 13 => x * (1.0 + 10f64.powi(-(1 + rng.below(9) as i32)) * (rng.below(3) as f64 - 1.0)),
        14 | 15 => x + 10f64.powi(-(rng.below(6) as i32)),
        16..=18 if x == 0.0 => -x,
        16 | 17 => x * (1.0 + 1e-7),
        _ => float_draw(rng),
    }
}

impl Sample for f64 {
    fn draw(rng: &mut Rng) -> Self {
        float_draw(rng)
    }
    fn near(self, rng: &mut Rng) -> Self {
        float_near(self, rng)
    }
}

impl Sample for f32 {
    fn draw(rng: &mut Rng) -> Self {
        float_draw(rng) as f32
    }
    fn near(self, rng: &mut Rng) -> Self {
        float_near(f64::from(self), rng) as f32
    }
}

impl Sample for rastore::num_complex::Complex<f64> {
    fn draw(rng: &mut Rng) -> Self {
        Self::new(float_draw(rng), float_draw(rng))
    }
    fn near(self, rng: &mut Rng) -> Self {
        Self::new(float_near(self.re, rng), float_near(self.im, rng))
    }
}

macro_rules! int_sample {
    ($($t:ty),*) => {$(
        impl Sample for $t {
            fn draw(rng: &mut Rng) -> Self {
                let special = [<$t>::MIN, <$t>::MAX, <$t>::MAX - 1, 0, 1];
                if rng.below(3) == 0 {
                    special[rng.below(special.len())]
                } else {
                    rng.next() as $t
                }
            }
            fn near(self, rng: &mut Rng) -> Self {
                match rng.below(10) {
                    0..=6 => self,
                    7 | 8 => self.wrapping_add((rng.below(5) as $t).wrapping_sub(2)),
                    _ => Self::draw(rng),
                }
            }
        }
    )*};
}
int_sample!(i64, u64, i8, u16);

/// Writes `a` as a C-order `.npy`, the judge's copy.
fn write_npy<T: rastore::Element>(path: &Path, a: &ndarray::ArrayD<T>) {
    let shape: Vec<u64> = a.shape().iter().map(|&d| d as u64).collect();
    let descr = Descr::for_dtype(T::DTYPE).unwrap();
    let mut f = NpyHeader::encode(&descr, false, &shape);
    let c = a.as_standard_layout();
    f.extend_from_slice(bytemuck::cast_slice(c.as_slice().unwrap()));
    std::fs::write(path, f).unwrap();
}

/// One case of [`diff_agrees_with_numpys_allclose`]: two arrays of `T`, `b` near `a`,
/// written as `.ra` for `ra diff` (b as a C-order `.npy` half the time) and as `.npy`
/// for the judge; returns the `ra diff` arguments and the judge's line.
fn diff_case<T: Sample>(dir: &Path, k: usize, rng: &mut Rng) -> (Vec<String>, String) {
    let n = 1 + rng.below(9);
    let shape = if n.is_multiple_of(3) && rng.below(2) == 0 {
        vec![3, n / 3]
    } else {
        vec![n]
    };
    let a = ndarray::ArrayD::from_shape_simple_fn(ndarray::IxDyn(&shape), || T::draw(rng));
    let b = a.mapv(|x| x.near(rng));
    let p = |n: &str| dir.join(format!("{k}{n}"));
    rastore::write(p("a.ra"), &a).unwrap();
    write_npy(&p("a.npy"), &a);
    write_npy(&p("b.npy"), &b);
    let b_input = if rng.below(2) == 0 {
        rastore::write(p("b.ra"), &b).unwrap();
        p("b.ra")
    } else {
        p("b.npy")
    };
    let rtol = [0.0, 1e-9, 1e-5, 1e-2, 0.5][rng.below(5)];
    let atol = [0.0, 1e-12, 1e-3, 1.0, 100.0][rng.below(5)];
    let equal_nan = rng.below(2) == 0;
    let mut args = vec![
        "diff".to_string(),
        p("a.ra").to_string_lossy().into_owned(),
        b_input.to_string_lossy().into_owned(),
        format!("--rtol={rtol:e}"),
        format!("--atol={atol:e}"),
    ];
    if equal_nan {
        args.push("--equal-nan".into());
    }
    let judge = format!(
        "{} {} {rtol:e} {atol:e} {}",
        p("a.npy").display(),
        p("b.npy").display(),
        u8::from(equal_nan)
    );
    (args, judge)
}

/// `ra diff` says "equal" exactly when NumPy's `allclose(a, b, rtol, atol, equal_nan)`
/// does, on random arrays with negatives, signed zeros, NaN, infinities and 64-bit
/// extremes. Floats are judged by NumPy in float64 (which holds every float32 exactly);
/// integers by NumPy's formula in exact arithmetic (NumPy itself rounds them through
/// float64, which cannot tell 2^64 - 1 from 2^64 - 2: ra does not round them).
#[test]
fn diff_agrees_with_numpys_allclose() {
    if !crate::common::python_has("numpy") {
        return;
    }
    let dir = tmp();
    let mut rng = Rng(SEED ^ 0xd1ff);
    let mut cases = Vec::new();
    for k in 0..160 {
        cases.push(match k % 8 {
            0 => diff_case::<f64>(dir.path(), k, &mut rng),
            1 | 2 => diff_case::<f32>(dir.path(), k, &mut rng),
            3 => diff_case::<rastore::num_complex::Complex<f64>>(dir.path(), k, &mut rng),
            4 => diff_case::<i64>(dir.path(), k, &mut rng),
            5 => diff_case::<u64>(dir.path(), k, &mut rng),
            6 => diff_case::<i8>(dir.path(), k, &mut rng),
            _ => diff_case::<u16>(dir.path(), k, &mut rng),
        });
    }
    let list = dir.path().join("cases.txt");
    let lines: Vec<&str> = cases.iter().map(|(_, j)| j.as_str()).collect();
    std::fs::write(&list, lines.join("\n")).unwrap();
    let verdicts = crate::common::python(&[
        "-c",
        r#"
import sys
from fractions import Fraction
import numpy as np
for line in open(sys.argv[1]):
    fa, fb, rtol, atol, en = line.split()
    a, b, rtol, atol, en = np.load(fa), np.load(fb), float(rtol), float(atol), en == '1'
    if a.dtype.kind in 'iu':
        close = all(abs(x - y) <= Fraction(atol) + Fraction(rtol) * abs(y)
                    for x, y in zip(a.ravel().tolist(), b.ravel().tolist()))
    else:
        wide = np.complex128 if a.dtype.kind == 'c' else np.float64
        close = np.allclose(a.astype(wide), b.astype(wide), rtol=rtol, atol=atol, equal_nan=en)
    print(int(bool(close)))
"#,
        list.to_str().unwrap(),
    ]);
    let verdicts: Vec<&str> = verdicts.lines().collect();
    assert_eq!(verdicts.len(), cases.len());
    let mut equal = 0;
    for ((args, judge), verdict) in cases.iter().zip(verdicts) {
        let o = run(args);
        let said = match o.status.code() {
            Some(0) => "1",
            Some(1) => "0",
            other => panic!("ra {args:?} ended with {other:?}"),
        };
        assert_eq!(
            said,
            verdict,
            "ra {args:?} disagrees with NumPy ({judge}): {}",
            String::from_utf8_lossy(&o.stdout)
        );
        equal += usize::from(said == "1");
    }
    assert!(
        equal > 30 && equal < cases.len() - 30,
        "both verdicts are exercised: {equal} of {} equal",
        cases.len()
    );
}
