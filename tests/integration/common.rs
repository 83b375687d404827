//! Helpers shared by the integration tests.

use std::path::PathBuf;

/// The conformance folder: `$RASTORE_CONFORMANCE`, else `../shared/conformance`.
/// `None` (with the reason printed) when it is absent.
pub fn conformance_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("RASTORE_CONFORMANCE") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance"),
    };
    if dir.join("MANIFEST.md").is_file() {
        Some(dir)
    } else {
        println!(
            "SKIPPED: no conformance files at {} (set RASTORE_CONFORMANCE to their folder)",
            dir.display()
        );
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

/// A fresh temporary directory.
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}
