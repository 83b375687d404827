//! HDF5, NetCDF-4 and MATLAB v7.3 files through the real `ra`, judged by h5py, xarray
//! and zarr-python (tests/scripts/hdf5_judge.py): the corpus of tests/corpus/hdf5.py
//! (every dtype, rank 0 to 5, every layout and chunk index, both libvers, big-endian,
//! groups, links) converts into folders of `.ra` equal to h5py's values; what rastore
//! refuses is refused by name, naming the object, and converts into nothing; a member
//! is `x.h5/grp/dset` for every read command; `ra info` lists the tree; `ra refs` of a
//! chunked dataset is its own chunks; NetCDF-4 converts into a Zarr group that xarray
//! opens identical to the file; hostile files exit 1 and leave nothing.

use std::path::{Path, PathBuf};

use crate::cli::ra;
use crate::common::{python, python_has, tmp};

const JUDGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/hdf5_judge.py");

fn s(p: &Path) -> &std::ffi::OsStr {
    p.as_os_str()
}

/// `ra ARGS`, which must succeed: its stdout.
fn ok(args: &[&std::ffi::OsStr]) -> String {
    let out = ra().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "ra {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `ra ARGS`, which must exit 1: its stderr.
fn fails(args: &[&std::ffi::OsStr]) -> String {
    let out = ra().args(args).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "ra {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn judge(args: &[&str]) -> String {
    let mut all = vec![JUDGE];
    all.extend_from_slice(args);
    python(&all)
}

/// The corpus of tests/corpus/hdf5.py in `dir`, and its manifest.
fn corpus(dir: &Path) -> serde_json::Value {
    judge(&["corpus", dir.to_str().unwrap()]);
    let text = std::fs::read_to_string(dir.join("MANIFEST.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The datasets h5py visits in `file` (hard links, each object once).
fn visited(file: &Path) -> Vec<String> {
    let out = judge(&["datasets", file.to_str().unwrap()]);
    serde_json::from_str(out.trim()).unwrap()
}

/// netCDF's dimensions that are no variables: no dataset of a folder.
const NOT_VARIABLES: &[&str] = &["t", "y", "forecast/step"];

#[test]
fn the_corpus_converts_into_folders_equal_to_h5py_and_refuses_by_name() {
    if !python_has("h5py, netCDF4, h5netcdf, hdf5storage, scipy") {
        return;
    }
    let d = tmp();
    let files = d.path().join("corpus");
    std::fs::create_dir(&files).unwrap();
    let manifest = corpus(&files);
    let mut judged = 0;
    for entry in manifest["files"].as_array().unwrap() {
        if entry["kind"] == "netcdf3" {
            continue;
        }
        let name = entry["file"].as_str().unwrap();
        let file = files.join(name);
        let refuse = entry["refuse"].as_object().unwrap();
        let out = d.path().join(format!("out-{}", name.replace('.', "-")));
        if refuse.is_empty() {
            ok(&[s(Path::new("convert")), s(&file), s(&out)]);
        } else {
            // One refused dataset refuses the tree, naming it; nothing is left.
            let err = fails(&[s(Path::new("convert")), s(&file), s(&out)]);
            assert!(err.contains(name), "{err}");
            assert!(refuse.keys().any(|k| err.contains(k.as_str())), "{err}");
            assert!(!out.exists(), "{name}: a refused conversion left {out:?}");
            std::fs::create_dir(&out).unwrap();
            // A MATLAB file's #refs# holds no variables (the targets of its cells).
            for ds in visited(&file)
                .into_iter()
                .filter(|d| !d.starts_with("#refs#"))
            {
                let member = file.join(&ds);
                let target = out.join(format!("{ds}.ra"));
                std::fs::create_dir_all(target.parent().unwrap()).unwrap();
                let args = [s(Path::new("convert")), s(&member), s(&target)];
                match refuse.get(&ds) {
                    Some(why) => {
                        let err = fails(&args);
                        let object = PathBuf::from(name).join(&ds);
                        assert!(err.contains(&*object.to_string_lossy()), "{err}");
                        assert!(err.contains("unsupported"), "{name}/{ds} ({why}): {err}");
                        assert!(!target.exists());
                    }
                    None => {
                        ok(&args);
                    }
                }
            }
        }
        let report = judge(&["judge", file.to_str().unwrap(), out.to_str().unwrap()]);
        let report: serde_json::Value = serde_json::from_str(report.trim()).unwrap();
        for m in report["missing"].as_array().unwrap() {
            let m = m.as_str().unwrap();
            assert!(
                refuse.contains_key(m) || NOT_VARIABLES.contains(&m) || m.starts_with("#refs#"),
                "{name}: {m} was not converted"
            );
        }
        judged += report["checked"].as_array().unwrap().len();
    }
    assert!(judged > 300, "{judged} datasets judged");
}

#[test]
fn info_lists_the_tree_and_a_member_is_named_as_h5ls_names_it() {
    if !python_has("h5py") {
        return;
    }
    let d = tmp();
    judge(&["make", d.path().to_str().unwrap()]);
    let tree = d.path().join("tree.h5");
    let info = ok(&[s(Path::new("info")), s(&tree)]);
    let line = |what: &str| {
        info.lines()
            .find(|l| l.contains(what))
            .unwrap_or_else(|| panic!("no {what} in {info}"))
            .to_string()
    };
    assert!(line("tree.h5: group").contains("3 attributes"), "{info}");
    assert!(line("grp/temp:").contains("float32 [3, 4, 5] bytes 240 hdf5 contiguous"));
    let chunked = line("tree.h5/chunked:");
    assert!(chunked.contains("uint16 [37, 23]"), "{chunked}");
    assert!(chunked.contains("chunked [8, 5]"), "{chunked}");
    assert!(chunked.contains("filters shuffle+deflate"), "{chunked}");
    assert!(line("grp/sub:").contains("group"));
    let json = ok(&[
        s(Path::new("info")),
        s(Path::new("--json")),
        s(&tree.join("grp/temp")),
    ]);
    let j: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(j["dims"], serde_json::json!([3, 4, 5]));
    assert_eq!(j["layout"], "contiguous");
    // Each read command takes a member.
    let temp = tree.join("grp/temp");
    let npy = d.path().join("temp.npy");
    ok(&[s(Path::new("convert")), s(&temp), s(&npy)]);
    judge(&[
        "npy",
        tree.to_str().unwrap(),
        "grp/temp",
        npy.to_str().unwrap(),
    ]);
    let part = d.path().join("part.npy");
    ok(&[
        s(Path::new("slice")),
        s(&tree.join("chunked")),
        s(&part),
        s(Path::new("--slice")),
        s(Path::new("3:30:4,-5:")),
    ]);
    let sliced = python(&[
        "-c",
        "import sys, h5py, numpy as np; a = np.load(sys.argv[2]); \
         b = h5py.File(sys.argv[1])['chunked'][3:30:4, -5:]; \
         assert np.array_equal(a, b), (a, b); print('sliced', a.shape)",
        tree.to_str().unwrap(),
        part.to_str().unwrap(),
    ]);
    assert!(sliced.contains("sliced (7, 5)"), "{sliced}");
    let stats = ok(&[s(Path::new("stats")), s(Path::new("--json")), s(&temp)]);
    assert!(stats.contains("\"count\": 60"), "{stats}");
    let cat = ok(&[
        s(Path::new("cat")),
        s(Path::new("--json")),
        s(&tree.join("grp/sub/count")),
    ]);
    assert_eq!(cat.trim(), "[[0, 1, 2], [3, 4, 5]]");
    let ra_file = d.path().join("temp.ra");
    ok(&[s(Path::new("convert")), s(&temp), s(&ra_file)]);
    ok(&[s(Path::new("diff")), s(&temp), s(&ra_file)]);
    let described = ok(&[s(Path::new("describe")), s(&temp)]);
    assert!(described.contains("long_name: temperature"), "{described}");
    assert!(described.contains("valid_range"), "{described}");
    let verified = ok(&[s(Path::new("verify")), s(&tree)]);
    assert_eq!(verified.lines().count(), 5, "{verified}");
    // A group names its sub-tree.
    let sub = d.path().join("grp");
    ok(&[s(Path::new("convert")), s(&tree.join("grp")), s(&sub)]);
    assert!(sub.join("temp.ra").is_file() && sub.join("sub/count.ra").is_file());
    let err = fails(&[s(Path::new("cat")), s(&tree.join("grp/nothing"))]);
    assert!(err.contains("no member \"nothing\""), "{err}");
    assert!(err.contains("temp"), "{err}");
}

#[test]
fn groups_and_attributes_become_folders_and_zarr_groups() {
    if !python_has("h5py, zarr") {
        return;
    }
    let d = tmp();
    judge(&["make", d.path().to_str().unwrap()]);
    let tree = d.path().join("tree.h5");
    let folder = d.path().join("folder");
    ok(&[s(Path::new("convert")), s(&tree), s(&folder)]);
    let top = std::fs::read_to_string(folder.join("dataset.yaml")).unwrap();
    assert!(
        top.contains("title: issue 39") && top.contains("version: 3"),
        "{top}"
    );
    assert!(top.contains(".nan"), "{top}");
    let grp = std::fs::read_to_string(folder.join("grp/dataset.yaml")).unwrap();
    assert!(grp.contains("units: K"), "{grp}");
    let temp = rastore::read_header_and_metadata(folder.join("grp/temp.ra")).unwrap();
    let trailer = String::from_utf8(temp.1).unwrap();
    assert!(trailer.contains("long_name: temperature"), "{trailer}");
    assert!(trailer.contains("bytes: fixed"), "{trailer}");
    let report = judge(&["judge", tree.to_str().unwrap(), folder.to_str().unwrap()]);
    assert!(report.contains("\"missing\": []"), "{report}");
    let zarr = d.path().join("tree.zarr");
    ok(&[s(Path::new("convert")), s(&tree), s(&zarr)]);
    let read = python(&[
        "-c",
        r#"
import sys, h5py, zarr, numpy as np
g = zarr.open_group(sys.argv[2], mode="r")
f = h5py.File(sys.argv[1])
assert g.attrs["title"] == "issue 39" and g["grp"].attrs["units"] == "K", dict(g.attrs)
for name in ["grp/temp", "grp/sub/count", "chunked", "flag", "z"]:
    assert np.array_equal(g[name][...], f[name][()]), name
assert g["grp/temp"].attrs["long_name"] == "temperature"
print("zarr ok")
"#,
        tree.to_str().unwrap(),
        zarr.to_str().unwrap(),
    ]);
    assert!(read.contains("zarr ok"), "{read}");
}

#[test]
fn refs_of_a_chunked_dataset_are_its_own_chunks() {
    if !python_has("h5py, zarr, fsspec") {
        return;
    }
    let d = tmp();
    judge(&["make", d.path().to_str().unwrap()]);
    let slices = d.path().join("slices.h5");
    for name in ["chunked", "contiguous"] {
        let refs = d.path().join(format!("{name}.json"));
        ok(&[
            s(Path::new("refs")),
            s(&slices.join(name)),
            s(Path::new("-o")),
            s(&refs),
        ]);
        if name == "chunked" {
            let r = judge(&[
                "refs",
                slices.to_str().unwrap(),
                name,
                refs.to_str().unwrap(),
            ]);
            // 13×7×5 in chunks of 4×3×2: 4·3·3 chunks, each its own range of the file.
            assert!(r.contains("ok 36"), "{r}");
        }
    }
    let err = fails(&[s(Path::new("refs")), s(&slices.join("compact"))]);
    assert!(err.contains("compact"), "{err}");
}

#[test]
fn netcdf4_converts_into_zarr_groups_xarray_opens_identical() {
    if !python_has("h5py, netCDF4, h5netcdf, xarray, zarr") {
        return;
    }
    let d = tmp();
    let files = d.path().join("corpus");
    std::fs::create_dir(&files).unwrap();
    corpus(&files);
    for name in [
        "nc4_classic.nc",
        "nc4_h5netcdf.nc",
        "nc4_xarray_netcdf4.nc",
        "nc4_xarray_h5netcdf.nc",
    ] {
        let nc = files.join(name);
        let zarr = d.path().join(name.replace(".nc", ".zarr"));
        ok(&[s(Path::new("convert")), s(&nc), s(&zarr)]);
        let r = judge(&["xarray", nc.to_str().unwrap(), zarr.to_str().unwrap()]);
        assert!(r.contains("identical"), "{name}: {r}");
        // The folder's variables name their dimensions as the file does.
        let folder = d.path().join(name.replace(".nc", ""));
        ok(&[s(Path::new("convert")), s(&nc), s(&folder)]);
        if name == "nc4_xarray_h5netcdf.nc" {
            let (_, t) = rastore::read_header_and_metadata(folder.join("temp.ra")).unwrap();
            let t = String::from_utf8(t).unwrap();
            assert!(
                t.contains("- name: time\n      - name: lat\n      - name: lon"),
                "{t}"
            );
            assert!(
                t.contains("name: temp") && !t.contains("DIMENSION_LIST"),
                "{t}"
            );
        }
    }
}

#[test]
fn matlab_variables_keep_matlabs_shape() {
    if !python_has("h5py, hdf5storage") {
        return;
    }
    let d = tmp();
    let files = d.path().join("corpus");
    std::fs::create_dir(&files).unwrap();
    corpus(&files);
    let mat = files.join("mat73.mat");
    let info = ok(&[s(Path::new("info")), s(&mat.join("A"))]);
    // h5py shows (4, 3): MATLAB's A is 3×4.
    assert!(info.contains("float64 [3, 4]"), "{info}");
    let a = d.path().join("A.npy");
    ok(&[s(Path::new("convert")), s(&mat.join("A")), s(&a)]);
    judge(&["npy", mat.to_str().unwrap(), "A", a.to_str().unwrap()]);
    let text = ok(&[
        s(Path::new("cat")),
        s(Path::new("--json")),
        s(&mat.join("name")),
    ]);
    assert!(text.contains('"'), "a char array reads as text: {text}");
    let err = fails(&[
        s(Path::new("convert")),
        s(&files.join("mat73_cell.mat/C")),
        s(&d.path().join("c.ra")),
    ]);
    assert!(
        err.contains("mat73_cell.mat/C") && err.contains("cell array"),
        "{err}"
    );
}

/// A copy of `file` with `patch` applied.
fn patched(file: &Path, to: &Path, patch: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(file).unwrap();
    patch(&mut bytes);
    std::fs::write(to, &bytes).unwrap();
    to.to_path_buf()
}

#[test]
fn hostile_files_exit_1_naming_the_file_and_leave_nothing() {
    if !python_has("h5py") {
        return;
    }
    let d = tmp();
    let p = d.path();
    let good = p.join("good.h5");
    let made = python(&[
        "-c",
        r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], "w", libver="earliest") as f:
    f["x"] = np.arange(12, dtype="<i4").reshape(3, 4)
    f.create_dataset("c", data=np.arange(100, dtype="<f4"), chunks=(10,), compression="gzip")
    f.create_group("g")["back"] = f  # a cycle of hard links
    print("chunk", f["c"].id.get_chunk_info(0).byte_offset)
"#,
        good.to_str().unwrap(),
    ]);
    let chunk: u64 = made
        .trim()
        .strip_prefix("chunk ")
        .and_then(|n| n.parse().ok())
        .expect("the first chunk's offset");
    let bytes = std::fs::read(&good).unwrap();
    // The dataspace of `x`: its dims (3, 4) as 8-byte little-endian lengths.
    let mut dims = 3u64.to_le_bytes().to_vec();
    dims.extend(4u64.to_le_bytes());
    let at = bytes
        .windows(16)
        .position(|w| w == dims.as_slice())
        .expect("the dataspace of x");
    let cases = [
        patched(&good, &p.join("truncated.h5"), |b| b.truncate(b.len() / 3)),
        patched(&good, &p.join("huge.h5"), |b| {
            b[at..at + 8].copy_from_slice(&(1u64 << 60).to_le_bytes());
            b[at + 8..at + 16].copy_from_slice(&(1u64 << 60).to_le_bytes());
        }),
        patched(&good, &p.join("lying.h5"), |b| {
            // The first chunk's address, in its B-tree key, past the end of the file.
            let at = b
                .windows(8)
                .position(|w| w == chunk.to_le_bytes())
                .expect("the first chunk's address");
            let past = b.len() as u64 + 4096;
            b[at..at + 8].copy_from_slice(&past.to_le_bytes());
        }),
        {
            let text = p.join("notes.h5");
            std::fs::write(&text, "a text file named .h5\n").unwrap();
            text
        },
    ];
    for case in &cases {
        // The file into a folder; each dataset into a .ra and a .npy: each converts
        // what it holds, or exits 1 naming the file and leaves nothing.
        for (target, out) in [
            (case.clone(), p.join("out")),
            (case.join("x"), p.join("x.ra")),
            (case.join("c"), p.join("c.ra")),
            (case.join("c"), p.join("c.npy")),
        ] {
            let r = ra()
                .args([s(Path::new("convert")), s(&target), s(&out)])
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&r.stderr);
            match r.status.code() {
                Some(0) => assert!(out.exists(), "{target:?}"),
                Some(1) => {
                    assert!(err.contains(&*case.to_string_lossy()), "{err}");
                    assert!(!out.exists(), "{target:?} left {out:?}");
                }
                other => panic!("{target:?}: exit {other:?}: {err}"),
            }
            assert!(!err.contains("panicked"), "{err}");
            let _ = std::fs::remove_dir_all(&out);
            let _ = std::fs::remove_file(&out);
        }
        let info = ra().args([s(Path::new("info")), s(case)]).output().unwrap();
        assert!(matches!(info.status.code(), Some(0 | 1)), "{case:?}");
    }
    // The cycle ends: `g/back` is the root, listed once.
    let info = ok(&[s(Path::new("info")), s(&good)]);
    assert_eq!(info.matches("good.h5/x:").count(), 1, "{info}");
    let huge = fails(&[s(Path::new("cat")), s(&cases[1].join("x"))]);
    assert!(huge.contains("huge.h5/x"), "{huge}");
    for (case, what) in [(&cases[0], "c"), (&cases[2], "c")] {
        let out = p.join("none.ra");
        let err = fails(&[s(Path::new("convert")), s(&case.join(what)), s(&out)]);
        assert!(err.contains(&*case.join(what).to_string_lossy()), "{err}");
        assert!(!out.exists());
    }
    let text = fails(&[s(Path::new("info")), s(&cases[3])]);
    assert!(text.contains("no HDF5 superblock: a text file"), "{text}");
}
