//! The `tiff` fuzz target's body: a TIFF end to end, as `ra convert` runs it.

use std::path::Path;

use super::{
    check_peak_beyond, engine_outputs, peak_during, read_all, scratch_dir, scratch_file,
    ENGINE_BYTES,
};
use crate::convert::{convert, ConvertOptions};

/// The most one stored byte of a TIFF decodes to (LZW's bound, the largest of the
/// compressions read: docs/formats/tiff.md).
const TIFF_EXPANSION: usize = 4096;

/// A TIFF (any bytes; the corpus holds tifffile's files) parsed, decoded and
/// converted into every sink (`.ra`, `.npy`, PNG, Zarr, and TIFF raw and Deflate),
/// each output opened again and compared with the input as the engine reads it; or
/// refused, leaving nothing. Never a panic; the allocation peak is bounded by what
/// the file's bytes can decode to (a few copies), never by what its tags claim.
pub fn tiff(data: &[u8]) {
    let input = scratch_file("in.tif", data);
    let outs = scratch_dir().join("tiff");
    let _ = std::fs::remove_dir_all(&outs);
    std::fs::create_dir_all(&outs).expect("scratch output folder");
    let peak = peak_during(|| {
        engine_outputs(&input, &outs);
        tiff_outputs(&input, &outs);
    });
    check_peak_beyond(
        "tiff",
        data,
        peak,
        4 * TIFF_EXPANSION,
        8 * ENGINE_BYTES as usize + (24 << 20),
    );
}

/// Converts `input` into a TIFF, raw and Deflate, in `outs`, and checks that each
/// reads back as the input does, or that a refused conversion left nothing.
fn tiff_outputs(input: &Path, outs: &Path) {
    let Ok(source) = crate::convert::open(input, &ConvertOptions::new()) else {
        return;
    };
    let want = source.desc().clone();
    let expected = (want.nbytes() <= ENGINE_BYTES)
        .then(|| read_all(source.as_ref()).ok())
        .flatten();
    drop(source);
    for (name, opts) in [
        ("o.tif", ConvertOptions::new()),
        ("oz.tif", ConvertOptions::new().compress(true)),
    ] {
        let out = outs.join(name);
        if convert(input, &out, &opts, &mut |_, _| ()).is_err() {
            assert!(!out.exists(), "a failed conversion left {out:?}");
            continue;
        }
        let back = crate::convert::open(&out, &opts)
            .unwrap_or_else(|e| panic!("{name} written from {input:?} does not open: {e}"));
        assert_eq!(back.desc().dims, want.dims, "{name}: dims");
        assert_eq!(back.desc().dtype, want.dtype, "{name}: type");
        if let Some(expected) = &expected {
            let got = read_all(back.as_ref()).expect("what convert wrote reads back");
            assert_eq!(&got, expected, "{name}: data");
        }
    }
}
