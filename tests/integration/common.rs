//! Helpers shared by the integration tests.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

/// Where skipped tests say so for the run's closing summary (`tests/summary.rs`),
/// which libtest would otherwise hide: `tests/environment.rs`, the first test binary
/// of a run, empties it.
pub fn skip_log() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rastore-skipped.tsv")
}

/// Says that the running test skipped, and why: on its output, and in the run's
/// closing summary.
pub fn skipped(why: &str) {
    println!("SKIPPED: {why}");
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let line = format!("{test}\t{why}\n");
    let _ = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(skip_log())
        .and_then(|mut f| f.write_all(line.as_bytes()));
}

/// What the conformance files are, and how to point the tests at them.
pub const CONFORMANCE_WHAT: &str = "the files the RawArray reference implementations \
    (C, Python, Julia) wrote, with a MANIFEST.md, kept outside this repository; set \
    RASTORE_CONFORMANCE to their folder";

/// Where the conformance files are looked for: `$RASTORE_CONFORMANCE`, else
/// `../shared/conformance`.
pub fn conformance_location() -> PathBuf {
    match std::env::var_os("RASTORE_CONFORMANCE") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance"),
    }
}

/// The conformance folder, or `None` (the test skipping, with the reason) when it is
/// absent.
pub fn conformance_dir() -> Option<PathBuf> {
    let dir = conformance_location();
    if dir.join("MANIFEST.md").is_file() {
        Some(dir)
    } else {
        skipped(&format!(
            "no conformance files at {}: {CONFORMANCE_WHAT}",
            dir.display()
        ));
        None
    }
}

/// Little-endian bytes of u64 words: a hand-built header.
pub fn words(ws: &[u64]) -> Vec<u8> {
    rastore::fuzzing::image(ws, &[], false)
}

/// Big-endian bytes of u64 words.
pub fn words_be(ws: &[u64]) -> Vec<u8> {
    rastore::fuzzing::image(ws, &[], true)
}

pub const MAGIC: u64 = rastore::MAGIC;

/// Writes a C-order float32 `.npy` of `shape` (every byte 7) at `path`: an input whose
/// conversion to `.ra` (a transpose) takes long enough to be interrupted. The tests that
/// signal or kill `ra` mid-conversion are Unix ones.
#[cfg(unix)]
pub fn slow_npy(path: &std::path::Path, shape: &[u64]) {
    let descr = rastore::formats::npy::Descr::parse("'<f4'").unwrap();
    let mut bytes = rastore::formats::npy::NpyHeader::encode(&descr, false, shape);
    let data: u64 = shape.iter().product::<u64>() * 4;
    bytes.resize(bytes.len() + data as usize, 7);
    std::fs::write(path, &bytes).unwrap();
}

/// A fresh temporary directory.
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// The Python that has NumPy and Pillow: `$RASTORE_PYTHON`, else the `.venv` that
/// `.ci/run` makes, else `python3`.
pub fn python_cmd() -> Command {
    if let Some(p) = std::env::var_os("RASTORE_PYTHON") {
        return Command::new(p);
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python3");
    Command::new(if venv.is_file() {
        venv.into_os_string()
    } else {
        "python3".into()
    })
}

/// Whether Python can import `modules` (e.g. "numpy, PIL"). In CI their absence is a
/// failure, not a skip: `.ci/run` installs them. On Windows (the tests run under Wine
/// in CI) the judges are not asked: NumPy and Pillow judge the same code on Linux.
pub fn python_has(modules: &str) -> bool {
    if cfg!(windows) {
        // Not a skip: the same code is judged on Linux.
        println!("{modules} judge on Linux");
        return false;
    }
    let ok = python_cmd()
        .args(["-c", &format!("import {modules}")])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        assert!(
            std::env::var("CI").is_err(),
            "CI must have {modules}: .ci/run installs them in .venv"
        );
        skipped(&format!(
            "no Python with {modules} (scripts/test-all installs them in .venv)"
        ));
    }
    ok
}

/// Whether NumPy is there (see [`python_has`]).
pub fn numpy_available() -> bool {
    python_has("numpy")
}

/// Runs Python with `args`; panics with its output if it fails.
pub fn python(args: &[&str]) -> String {
    let out = python_cmd().args(args).output().expect("python3");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "python3 {args:?}: {text}");
    text
}

/// `n` bytes that no compressor can shrink (xorshift64 from `seed`).
pub fn noise(n: usize, mut seed: u64) -> Vec<u8> {
    (0..n)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed as u8
        })
        .collect()
}

/// Runs `attempt`, which starts `ra` and waits for it, again when the child never
/// ran: at most three times. Wine fails a start now and then when many processes
/// start at once on a busy machine, in one of two ways:
/// - the child dies in the loader before its `main`, with `STATUS_DLL_INIT_FAILED`
///   (0xC0000142), which no Unix exit code can take;
/// - `CreateProcess` itself fails with `ERROR_INTERNAL_ERROR` (1359), which no Unix
///   errno takes.
///
/// Any other failure to start is the test's failure.
pub fn until_started(
    what: &dyn std::fmt::Debug,
    mut attempt: impl FnMut() -> std::io::Result<std::process::Output>,
) -> std::process::Output {
    for _ in 0..3 {
        match attempt() {
            Ok(out) if out.status.code() == Some(0xC000_0142_u32 as i32) => {}
            Ok(out) => return out,
            Err(e) if e.raw_os_error() == Some(1359) => {}
            Err(e) => panic!("ra {what:?} did not start: {e}"),
        }
    }
    panic!("ra {what:?}: Windows failed to start it three times");
}
