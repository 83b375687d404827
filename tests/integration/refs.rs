//! `ra refs` (issue 32): kerchunk references to a `.ra` read in place, judged by
//! fsspec's `ReferenceFileSystem` and zarr-python; the refusals, by name; and the
//! zarrs storage over a `.ra`, judged by zarrs' own reader.

use crate::common::{python, python_has, tmp, words, MAGIC};
use crate::tool::{fails, ok, s};

/// A [3, 4, 7] float32 volume (values 0..84 in file order) at `path`.
fn volume(path: &std::path::Path) {
    let data: Vec<u8> = (0..84u32).flat_map(|v| (v as f32).to_le_bytes()).collect();
    let mut bytes = words(&[MAGIC, 0, 3, 4, 336, 3, 3, 4, 7]);
    bytes.extend_from_slice(&data);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn references_read_by_fsspec_are_the_file_and_reach_no_byte_past_it() {
    let d = tmp();
    let p = d.path().join("vol.ra");
    volume(&p);
    let before = std::fs::read(&p).unwrap();
    let out = d.path().join("vol.json");
    ok(&["refs", s(&p), "-o", s(&out), "--chunks", "3"]);
    let shown = ok(&[
        "refs",
        s(&p),
        "--chunks",
        "3,4,3",
        "--url",
        "s3://lab/vol.ra",
    ]);
    assert!(
        shown.contains(r#""vol/0.0.1":["s3://lab/vol.ra",216,144]"#),
        "{shown}"
    );
    // 7 frames in chunks of 3: the last (one frame) inline, padded.
    assert!(shown.contains(r#""vol/0.0.2":"base64:"#), "{shown}");
    assert_eq!(
        std::fs::read(&p).unwrap(),
        before,
        "the file is never written"
    );
    let err = fails(&["refs", s(&p), "-o", s(&out)], 2);
    assert!(err.contains("--overwrite"), "{err}");
    let err = fails(&["refs", s(&p), "--chunks", "2,4,3"], 1);
    assert!(err.contains("whole frames"), "{err}");
    if !python_has("numpy, zarr, fsspec") {
        return;
    }
    let judged = python(&[
        "-c",
        r#"
import json, sys, fsspec, zarr, numpy as np
refs = json.load(open(sys.argv[1]))
a = zarr.open_group(fsspec.filesystem('reference', fo=refs).get_mapper(''), mode='r', zarr_format=2)['vol']
want = np.arange(84, dtype='<f4').reshape(3, 4, 7, order='F')
assert a.chunks == (3, 4, 3), a.chunks
assert np.array_equal(a[...], want)
ends = [v[1] + v[2] for v in refs['refs'].values() if isinstance(v, list)]
assert max(ends) <= 72 + 336, ends
print('judged', len(ends))
"#,
        s(&out),
    ]);
    assert!(judged.contains("judged 2"), "{judged}");
}

#[test]
fn what_cannot_be_referenced_is_refused_by_name() {
    let d = tmp();
    let plain = d.path().join("plain.ra");
    volume(&plain);
    let zeros = d.path().join("zeros.ra");
    let mut bytes = words(&[MAGIC, 0, 3, 4, 4096, 1, 1024]);
    bytes.resize(bytes.len() + 4096, 0);
    std::fs::write(&zeros, bytes).unwrap();
    let lz4 = d.path().join("lz4.ra");
    ok(&["convert", s(&zeros), s(&lz4), "--compress"]);
    assert!(fails(&["refs", s(&lz4)], 1).contains("compressed"));
    // Flag bit 3: open for appending.
    let mut growing = std::fs::read(&plain).unwrap();
    growing[8] = 8;
    let grow = d.path().join("grow.ra");
    std::fs::write(&grow, growing).unwrap();
    let err = fails(&["refs", s(&grow)], 1);
    assert!(
        err.contains("appending") && err.contains("ra recover"),
        "{err}"
    );
    let err = fails(
        &["refs", s(&plain), "-o", s(&d.path().join("no/r.json"))],
        1,
    );
    assert!(err.contains("does not exist"), "{err}");
}

#[test]
fn zarrs_reads_a_ra_in_place_through_its_storage() {
    use std::sync::Arc;
    use zarrs::array::Array;
    use zarrs::array::ArraySubset;

    let d = tmp();
    let p = d.path().join("vol.ra");
    volume(&p);
    let options = rastore::convert::ConvertOptions::new();
    for chunks in [
        None,
        Some(&[3u64][..]),
        Some(&[1u64][..]),
        Some(&[3, 4, 2][..]),
    ] {
        let storage = rastore::convert::refs::zarrs_storage(&p, chunks, &options).unwrap();
        let array = Array::open(Arc::new(storage), "/").unwrap();
        assert_eq!(array.shape(), &[3, 4, 7]);
        // zarrs gives C order: element [i, j, k] is i + 3 j + 12 k in the file.
        let all: Vec<f32> = array
            .retrieve_array_subset::<Vec<f32>>(&ArraySubset::new_with_ranges(&[0..3, 0..4, 0..7]))
            .unwrap();
        let mut want = Vec::new();
        for i in 0..3 {
            for j in 0..4 {
                for k in 0..7 {
                    want.push((i + 3 * j + 12 * k) as f32);
                }
            }
        }
        assert_eq!(all, want, "{chunks:?}");
        let part: Vec<f32> = array
            .retrieve_array_subset::<Vec<f32>>(&ArraySubset::new_with_ranges(&[1..2, 2..3, 5..7]))
            .unwrap();
        assert_eq!(part, [(1 + 6 + 60) as f32, (1 + 6 + 72) as f32]);
    }
}
