//! Replays the committed fuzz corpora (and named regression inputs) through the same
//! target functions cargo-fuzz runs, on stable, with the counting allocator installed,
//! so that a regression needs no nightly to be caught. Its own test binary, so the
//! allocation peak is not shared with other tests.

use std::path::PathBuf;

use rastore::fuzzing::{self, CountingAlloc};

// The tool's element printing, fuzzed as the `print` target runs it.
#[path = "../src/bin/ra/elements.rs"]
mod elements;
// The print target reads what the tool reads, not all of it.
#[allow(dead_code)]
#[path = "../src/bin/ra/input.rs"]
mod input;
#[path = "../fuzz/shared/print.rs"]
mod print;
#[path = "../src/bin/ra/slice.rs"]
mod slice;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// A fuzz target's body.
type Target = fn(&[u8]);

const TARGETS: [(&str, Target); 18] = [
    ("header", fuzzing::header),
    ("file", fuzzing::file),
    ("npy_header", fuzzing::npy_header),
    ("codecs", fuzzing::codecs),
    ("describe", fuzzing::describe),
    ("structured", fuzzing::structured),
    ("png_to_ra", fuzzing::png_to_ra),
    ("npy_to_ra", fuzzing::npy_to_ra),
    ("ra_export", fuzzing::ra_export),
    ("print", print::print),
    ("zarr", fuzzing::zarr),
    ("engine", fuzzing::engine),
    ("npz", fuzzing::npz),
    ("safetensors", fuzzing::safetensors),
    ("nifti", fuzzing::nifti),
    ("tiff", fuzzing::tiff),
    ("netcdf3", fuzzing::netcdf3),
    ("hdf5", fuzzing::hdf5),
];

fn inputs(target: &str) -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut files: Vec<PathBuf> = ["corpus", "regressions"]
        .iter()
        .filter_map(|d| std::fs::read_dir(root.join(d).join(target)).ok())
        .flatten()
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// One test, sequential: the allocation counter is process-wide.
#[test]
fn replay_corpora_and_regressions() {
    let mut total = 0;
    for (name, target) in TARGETS {
        let files = inputs(name);
        assert!(
            !files.is_empty(),
            "fuzz/corpus/{name} is committed and not empty"
        );
        for f in &files {
            let data = std::fs::read(f).expect("corpus file");
            target(&data);
        }
        println!("{name}: {} inputs replayed", files.len());
        total += files.len();
    }
    // Regressions that need no file: found by the fuzzer, kept as code.
    // A stream whose header claims 512 KiB of data but holds 4 KiB: the streaming
    // reader's buffer grows with the data that arrives, not with the claim.
    let mut stream: Vec<u8> = [rastore::MAGIC, 0, 3, 8, 524_288, 2, 256, 256]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    stream.resize(4096, 0);
    fuzzing::file(&stream);
    assert!(rastore::read_raw_from(&stream[..]).is_err());
    println!("{total} corpus inputs replayed");
    std::fs::remove_dir_all(fuzzing::scratch_dir()).expect("remove the scratch folder");
}
