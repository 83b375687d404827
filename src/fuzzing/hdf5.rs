//! The `hdf5` target: any bytes as an HDF5 file, end to end as `ra` runs it. The tree
//! is listed as `ra info` lists it; each dataset (the first few) is placed (a mapping's
//! layout, or refused) and opened as a source, and one of at most [`COMPARED_BYTES`] is
//! read whole, then converted by name into a `.ra` that must read back the same bytes,
//! or refused leaving nothing; the whole file is converted into a folder when every
//! dataset opened and all are small, and either reads back or leaves nothing. No
//! panic, no hang, and no allocation the file merely claims.

use std::path::Path;

use super::{check_peak_beyond, convert_over, peak_during, read_all, scratch_dir, scratch_file};
use crate::convert::ConvertOptions;
use crate::formats::hdf5::{engine, info};

/// Largest dataset read and compared; larger ones are opened and placed only.
const COMPARED_BYTES: u64 = 1 << 20;

/// Most datasets of one input tried.
const DATASETS: usize = 16;

/// See the module.
pub fn hdf5(data: &[u8]) {
    let input = scratch_file("in.h5", data);
    let outs = scratch_dir().join("hdf5");
    let _ = std::fs::remove_dir_all(&outs);
    std::fs::create_dir_all(&outs).expect("scratch output folder");
    let peak = peak_during(|| outputs(&input, &outs));
    // Beyond the input's own bytes: the datasets read back to compare (twice each),
    // the parser's block cache (4 MiB) and the sinks' buffers.
    check_peak_beyond(
        "hdf5",
        data,
        peak,
        16,
        4 * COMPARED_BYTES as usize + (32 << 20),
    );
}

fn outputs(input: &Path, outs: &Path) {
    if let Ok(lines) = info::lines(input, "") {
        for l in &lines {
            assert!(!l.text().is_empty());
        }
    }
    let tree = outs.join("tree");
    let Ok(paths) = engine::datasets(input, "") else {
        // Bytes that are another format by their contents (an empty NetCDF-3 file)
        // convert as that format: only an HDF5 file whose tree cannot be listed must not.
        if crate::convert::Format::of(input).ok() != Some(crate::convert::Format::Hdf5) {
            return;
        }
        assert!(
            convert_over(input, &tree).is_err(),
            "a file whose tree cannot be listed converts"
        );
        assert!(!tree.exists(), "a failed conversion left {tree:?}");
        return;
    };
    let options = ConvertOptions::new();
    let mut all_small = paths.len() <= DATASETS;
    for p in paths.iter().take(DATASETS) {
        let member = input.join(p);
        if let Ok(placed) = crate::convert::placed(&member) {
            let len = std::fs::metadata(input).expect("the input").len();
            assert!(
                placed.layout.data_within(len).is_ok(),
                "{p}: placed past the end"
            );
        }
        let Ok(source) = crate::convert::open(&member, &options) else {
            all_small = false;
            continue;
        };
        let want = source.desc().clone();
        if want.nbytes() > COMPARED_BYTES {
            all_small = false;
            continue;
        }
        let expected = read_all(source.as_ref()).map(|mut data| {
            // Padding between a structured type's fields is written as zeros.
            if let Some(pad) = crate::padding::Padding::of_trailer(&want.trailer, want.dtype) {
                pad.zero(&mut data, 0);
            }
            data
        });
        drop(source);
        let out = outs.join("one.ra");
        let _ = std::fs::remove_file(&out);
        match convert_over(&member, &out) {
            Ok(()) => {
                let raw = crate::read_raw(&out).expect("a dataset converted reads back");
                assert_eq!(raw.header.dims(), &want.dims[..], "{p}: dims");
                assert_eq!(raw.header.dtype(), want.dtype, "{p}: type");
                let expected = expected.expect("a dataset that converts reads");
                assert_eq!(
                    raw.data, expected,
                    "{p}: the .ra holds what the source read"
                );
            }
            Err(_) => assert!(!out.exists(), "a failed conversion left {out:?}"),
        }
    }
    if all_small {
        match convert_over(input, &tree) {
            Ok(()) => {
                for p in &paths {
                    let ra = tree.join(format!("{p}.ra"));
                    crate::read_raw(&ra).expect("a dataset of the tree reads back");
                }
            }
            Err(_) => assert!(!tree.exists(), "a failed conversion left {tree:?}"),
        }
    }
}
