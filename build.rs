//! Says, where `cargo build` and `cargo test` show it, which interop tests will skip
//! on this machine: libtest hides a passing test's output, so a skip printed by the
//! test itself goes unseen. (Cargo shows build-script warnings only for local
//! packages: users of the crate never see these.)

use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let conformance = std::env::var_os("RASTORE_CONFORMANCE")
        .map_or_else(|| root.join("../shared/conformance"), Into::into);
    let venv = root.join(".venv/bin/python3");
    println!("cargo:rerun-if-env-changed=RASTORE_CONFORMANCE");
    println!("cargo:rerun-if-env-changed=RASTORE_PYTHON");
    println!(
        "cargo:rerun-if-changed={}",
        conformance.join("MANIFEST.md").display()
    );
    println!("cargo:rerun-if-changed={}", venv.display());
    if !conformance.join("MANIFEST.md").is_file() {
        println!(
            "cargo:warning=conformance tests will skip: no {} (set RASTORE_CONFORMANCE)",
            conformance.display()
        );
    }
    if std::env::var_os("RASTORE_PYTHON").is_none() && !venv.is_file() {
        println!(
            "cargo:warning=NumPy/Pillow interop tests use python3 from PATH and skip without \
             numpy and PIL: `python3 -m venv .venv && .venv/bin/pip install numpy pillow` (as .ci/run does)"
        );
    }
}
