//! What `cargo test` can check on this machine, said where the tests start (this is
//! the first test binary of a run): the conformance files, NumPy and Pillow (the
//! interop tests' judges) and the S3 test server. Where one is missing its tests skip;
//! `tests/summary.rs`, the last binary, counts them. This runs without the harness so
//! that its lines are shown. In CI (`CI` set) a missing one is a failure.

#[allow(dead_code)]
#[path = "integration/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "integration/s3_server.rs"]
mod s3_server;

fn main() {
    // A new run: the skips of the last one are gone.
    let _ = std::fs::remove_file(common::skip_log());
    let ci = std::env::var_os("CI").is_some();
    let mut missing = Vec::new();
    let mut say = |what: &str, found: Option<String>, how: &str| match found {
        Some(at) => println!("environment: {what}: {at}"),
        None => {
            println!("environment: {what}: missing, so its tests skip ({how})");
            missing.push(what.to_string());
        }
    };
    let conformance = common::conformance_location();
    say(
        "conformance files",
        conformance
            .join("MANIFEST.md")
            .is_file()
            .then(|| conformance.display().to_string()),
        common::CONFORMANCE_WHAT,
    );
    if cfg!(windows) {
        println!("environment: NumPy and Pillow: judge on Linux (the Windows run skips them)");
    } else {
        let python = common::python_cmd()
            .args(["-c", "import numpy, PIL; print(numpy.__version__)"])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| format!("NumPy {}", String::from_utf8_lossy(&o.stdout).trim()));
        say(
            "NumPy and Pillow",
            python,
            "scripts/test-all installs them in .venv",
        );
    }
    say(
        "the S3 test server",
        s3_server::binary().map(|p| p.display().to_string()),
        "scripts/test-all installs s3s-fs",
    );
    if ci && !missing.is_empty() {
        eprintln!("environment: CI needs {}", missing.join(", "));
        std::process::exit(1);
    }
}
