//! Datasets, folders of `.ra` files (issue 31), in the tool: `ra info`, `ra verify` and
//! `ra describe` of a folder go through its variables, its sub-groups' too.

use crate::common::{python, python_has, tmp, words, MAGIC};
use crate::tool::{fails, ok, s};

/// A float32 variable of `n` elements at `path`.
fn variable(path: &std::path::Path, n: u64) {
    let mut bytes = words(&[MAGIC, 0, 3, 4, 4 * n, 1, n]);
    bytes.resize(bytes.len() + 4 * n as usize, 0);
    std::fs::write(path, bytes).unwrap();
}

/// The files `names` under `a` and `b` are byte for byte the same.
fn same_files(a: &std::path::Path, b: &std::path::Path, names: &[&str]) {
    for v in names {
        assert_eq!(
            std::fs::read(a.join(v)).unwrap(),
            std::fs::read(b.join(v)).unwrap(),
            "{v}"
        );
    }
}

/// A dataset folder `run` in `dir`: `temp` (6 × `scale` elements), `lat` (2 ×) and the
/// group `coils` with `c0` (3 ×).
fn run_folder(dir: &std::path::Path, scale: u64) -> std::path::PathBuf {
    let run = dir.join("run");
    std::fs::create_dir_all(run.join("coils")).unwrap();
    variable(&run.join("temp.ra"), 6 * scale);
    variable(&run.join("lat.ra"), 2 * scale);
    variable(&run.join("coils/c0.ra"), 3 * scale);
    run
}

#[test]
fn the_tool_reads_a_folder_as_its_variables() {
    let d = tmp();
    let run = run_folder(d.path(), 1);
    variable(&run.join(".temp.ra.rastore-1.tmp"), 1);
    std::fs::write(run.join("notes.txt"), "not a variable").unwrap();
    std::fs::write(
        run.join("dataset.yaml"),
        "---\nattributes:\n  title: a run\n",
    )
    .unwrap();
    let info = ok(&["info", s(&run)]);
    let lines: Vec<&str> = info.lines().collect();
    assert_eq!(lines.len(), 4, "{info}");
    assert_eq!(
        lines[0],
        format!(
            "{}: 1 attribute (title: a run)",
            run.join("dataset.yaml").display()
        )
    );
    assert!(
        lines[1].contains("c0.ra") && lines[1].contains("[3]"),
        "{info}"
    );
    assert!(
        lines[2].contains("lat.ra") && lines[3].contains("temp.ra"),
        "{info}"
    );
    let verified = ok(&["verify", s(&run)]);
    assert_eq!(verified.lines().count(), 4, "{verified}");
    assert!(
        verified.contains("dataset.yaml: ok (1 attribute)"),
        "{verified}"
    );
    let doc = ok(&["describe", s(&run)]);
    assert!(doc.contains("attributes:\n  title: a run"), "{doc}");
    assert!(doc.contains("coils/c0:") && doc.contains("temp:"), "{doc}");
    assert!(!doc.contains(".rastore"), "{doc}");
    // Into a Zarr group of one array per variable, sub-folders sub-groups, and back.
    let z = d.path().join("run.zarr");
    ok(&["convert", s(&run), s(&z)]);
    for f in [
        "zarr.json",
        "temp/zarr.json",
        "coils/zarr.json",
        "coils/c0/zarr.json",
    ] {
        assert!(z.join(f).is_file(), "{f}");
    }
    let root = std::fs::read_to_string(z.join("zarr.json")).unwrap();
    assert!(root.contains("\"title\": \"a run\""), "{root}");
    // Dims without labels are named after their variable: temp's and lat's differ.
    assert!(
        root.contains("\"coils/c0\"")
            && root.contains("\"temp_dim_0\"")
            && root.contains("\"lat_dim_0\"")
            && root.contains("\"c0_dim_0\""),
        "{root}"
    );
    let back = d.path().join("back");
    ok(&["convert", s(&z), s(&back)]);
    same_files(&run, &back, &["temp.ra", "lat.ra", "coils/c0.ra"]);
    let attrs = std::fs::read_to_string(back.join("dataset.yaml")).unwrap();
    assert!(attrs.contains("title: a run"), "{attrs}");
    // An array and a group of one name cannot both be Zarr nodes.
    let clash = d.path().join("clash");
    std::fs::create_dir_all(clash.join("a")).unwrap();
    variable(&clash.join("a.ra"), 2);
    variable(&clash.join("a/b.ra"), 2);
    let e = fails(&["convert", s(&clash), s(&d.path().join("clash.zarr"))], 1);
    assert!(e.contains("a is both an array and a group"), "{e}");
    assert!(!d.path().join("clash.zarr").exists());
    // Several arrays into one file: refused, naming them, leaving nothing.
    let one = d.path().join("one.ra");
    let e = fails(&["convert", s(&z), s(&one)], 1);
    assert!(
        e.contains("a Zarr group of 3 arrays (coils/c0, lat, temp)"),
        "{e}"
    );
    assert!(!one.exists());
    // Into an .npz of its arrays (no groups in NumPy's archive), and back.
    let e = fails(&["convert", s(&run), s(&d.path().join("run.npz"))], 1);
    assert!(e.contains("the group coils"), "{e}");
    assert!(!d.path().join("run.npz").exists());
    let npz = d.path().join("coils.npz");
    ok(&["convert", s(&run.join("coils")), s(&npz)]);
    let unpacked = d.path().join("unpacked");
    ok(&["convert", s(&npz), s(&unpacked)]);
    assert_eq!(
        std::fs::read(run.join("coils/c0.ra")).unwrap(),
        std::fs::read(unpacked.join("c0.ra")).unwrap()
    );
    // A bare array, when asked.
    let bare = d.path().join("bare.zarr");
    ok(&["convert", s(&run.join("lat.ra")), s(&bare), "--array"]);
    let doc = std::fs::read_to_string(bare.join("zarr.json")).unwrap();
    assert!(doc.contains("\"node_type\": \"array\""), "{doc}");
    // A bad dataset.yaml is named.
    let sub = run.join("coils/dataset.yaml");
    std::fs::write(&sub, "---\nattributes: [1, 2]\n").unwrap();
    let err = fails(&["verify", s(&run)], 1);
    let named = err.contains("coils") && err.contains("dataset.yaml");
    assert!(named && err.contains("not a mapping"), "{err}");
    std::fs::remove_file(&sub).unwrap();
    // A bad variable is named; the others are still checked.
    std::fs::write(run.join("lat.ra"), b"short").unwrap();
    let err = fails(&["verify", s(&run)], 1);
    assert!(err.contains("lat.ra"), "{err}");
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(fails(&["info", s(&empty)], 1).contains("no .ra files"));
    // Into any output: a folder that is no dataset converts into nothing.
    let out = d.path().join("empty.zarr");
    assert!(fails(&["convert", s(&empty), s(&out)], 1).contains("not a dataset"));
    assert!(!out.exists());
}

/// A dataset under an `s3://bucket/prefix/`, against s3s-fs: a folder uploads into
/// one, converts from one into a Zarr group and back into a folder; a failure at any
/// variable removes every object written; replacing one removes what the new one has
/// not.
#[test]
fn a_dataset_in_object_storage_goes_both_ways() {
    let Some(server) = crate::s3_server::Server::start() else {
        return;
    };
    let d = tmp();
    let run = d.path().join("run");
    std::fs::create_dir_all(run.join("coils")).unwrap();
    variable(&run.join("temp.ra"), 6);
    variable(&run.join("coils/c0.ra"), 3);
    std::fs::write(run.join("dataset.yaml"), "---\nattributes:\n  title: up\n").unwrap();
    let url = format!("s3://{}/sets/run/", crate::s3_server::BUCKET);
    let env = crate::s3_server::Server::env(&server.endpoint());
    let ra = |args: &[&str]| {
        crate::cli::ra()
            .args(args)
            .envs(env.clone())
            .output()
            .unwrap()
    };
    let okay = |args: &[&str]| {
        let o = ra(args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "ra {args:?}: {err}");
    };
    okay(&["convert", s(&run), &url]);
    for key in ["temp.ra", "coils/c0.ra", "dataset.yaml"] {
        assert!(server.object(&format!("sets/run/{key}")).is_file(), "{key}");
    }
    // ra info and ra verify go through its variables.
    for cmd in ["info", "verify"] {
        let o = ra(&[cmd, &url]);
        let said = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{cmd}: {said}");
        assert_eq!(said.lines().count(), 2, "{cmd}: {said}");
        assert!(
            said.contains("run/coils/c0.ra") && said.contains("run/temp.ra"),
            "{said}"
        );
    }
    let o = ra(&["describe", &url]);
    let doc = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{doc}");
    assert!(
        doc.contains("title: up") && doc.contains("coils/c0:"),
        "{doc}"
    );
    // An existing dataset is refused without --overwrite.
    let again = ra(&["convert", s(&run), &url]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("--overwrite"));
    // From object storage into a Zarr group, and into a folder.
    let z = d.path().join("run.zarr");
    okay(&["convert", &url, s(&z)]);
    let root = std::fs::read_to_string(z.join("zarr.json")).unwrap();
    assert!(
        root.contains("\"title\": \"up\"") && root.contains("coils/c0"),
        "{root}"
    );
    let back = d.path().join("back");
    okay(&["convert", &url, s(&back)]);
    same_files(&run, &back, &["temp.ra", "coils/c0.ra"]);
    assert!(std::fs::read_to_string(back.join("dataset.yaml"))
        .unwrap()
        .contains("title: up"));
    // A Zarr group in object storage, both ways.
    let zurl = format!("s3://{}/sets/run.zarr", crate::s3_server::BUCKET);
    okay(&["convert", &url, &zurl]);
    assert!(server.object("sets/run.zarr/coils/c0/zarr.json").is_file());
    // An output that holds the input is refused, and the input is kept.
    let same = ra(&["convert", &zurl, &zurl, "--overwrite"]);
    assert!(String::from_utf8_lossy(&same.stderr).contains("holds the input"));
    assert!(server.object("sets/run.zarr/zarr.json").is_file());
    let fromz = d.path().join("fromz");
    okay(&["convert", &zurl, s(&fromz)]);
    same_files(&run, &fromz, &["temp.ra", "coils/c0.ra"]);
    // A variable that fails (cut short) leaves no object of the new dataset.
    let bad = d.path().join("bad");
    std::fs::create_dir(&bad).unwrap();
    variable(&bad.join("a.ra"), 4);
    variable(&bad.join("b.ra"), 4);
    let cut = std::fs::read(bad.join("b.ra")).unwrap();
    std::fs::write(bad.join("b.ra"), &cut[..60]).unwrap();
    let bad_url = format!("s3://{}/sets/bad/", crate::s3_server::BUCKET);
    let failed = ra(&["convert", s(&bad), &bad_url]);
    assert!(!failed.status.success());
    assert!(String::from_utf8_lossy(&failed.stderr).contains("b.ra"));
    assert!(!server.object("sets/bad/a.ra").exists());
    assert!(server.pending_uploads().is_empty());
    // Replacing: the variables the new dataset has not are removed.
    std::fs::remove_dir_all(run.join("coils")).unwrap();
    okay(&["convert", s(&run), &url, "--overwrite"]);
    assert!(server.object("sets/run/temp.ra").is_file());
    assert!(!server.object("sets/run/coils/c0.ra").exists());
}

/// A tree converted array by array reports its progress as one count: never going
/// back, ending at all its arrays' bytes (one bar over the tree, not one per array),
/// into a folder, a Zarr group and an `.npz`, and from an `.npz` into a folder.
#[test]
fn a_tree_converts_under_one_count_of_progress() {
    let d = tmp();
    let run = run_folder(d.path(), 1000);
    let all = 4 * (6000 + 2000 + 3000);
    let check = |input: &std::path::Path, output: &std::path::Path, all: u64| {
        let mut seen: Vec<(u64, u64)> = Vec::new();
        rastore::convert::convert(input, output, &Default::default(), &mut |d, t| {
            seen.push((d, t))
        })
        .unwrap();
        assert!(
            seen.windows(2)
                .all(|w| w[1].0 >= w[0].0 && w[1].1 >= w[0].1),
            "{}: {seen:?}",
            output.display()
        );
        assert_eq!(seen.last(), Some(&(all, all)), "{}", output.display());
    };
    check(&run, &d.path().join("run.zarr"), all);
    check(&run, &d.path().join("copy"), all);
    check(&d.path().join("run.zarr"), &d.path().join("back"), all);
    std::fs::remove_dir_all(run.join("coils")).unwrap();
    let flat = 4 * (6000 + 2000);
    check(&run, &d.path().join("run.npz"), flat);
    check(&d.path().join("run.npz"), &d.path().join("unpacked"), flat);
}

/// The arrays `a` (2 × 3 float64), `b` (4 int32) and `c` (5 float32), saved by NumPy in
/// `dir` as `three.npz` (stored) and `packed.npz` (deflated), and `a` alone as `one.npz`.
fn npz_files(dir: &std::path::Path) {
    python(&[
        "-c",
        "import numpy as np, sys\n\
         a, b, c = np.arange(6.0).reshape(2, 3), np.arange(4, dtype='i4'), np.ones(5, 'f4')\n\
         np.savez(sys.argv[1] + '/three.npz', a=a, b=b, c=c)\n\
         np.savez_compressed(sys.argv[1] + '/packed.npz', a=a, b=b, c=c)\n\
         np.savez(sys.argv[1] + '/one.npz', a=a)",
        s(dir),
    ]);
}

/// zarr-python's word on the group `zarr`: its arrays are those of the archive `npz`,
/// names, types and values; "ok" if so.
fn zarr_holds_npz(zarr: &std::path::Path, npz: &std::path::Path) -> String {
    python(&[
        "-c",
        "import sys, warnings, zarr, numpy as np\nwarnings.simplefilter('ignore')\n\
         g = zarr.open_group(sys.argv[1], mode='r')\n\
         n = np.load(sys.argv[2])\n\
         assert sorted(g.array_keys()) == sorted(n.files), sorted(g.array_keys())\n\
         for k in n.files:\n\
         \x20   assert g[k].dtype == n[k].dtype, (k, g[k].dtype)\n\
         \x20   np.testing.assert_array_equal(g[k][...], n[k])\n\
         print('ok')",
        s(zarr),
        s(npz),
    ])
}

/// An `.npz` is a tree of arrays as a folder is: one of several arrays converts
/// straight into a Zarr group of one array per member (stored or deflated), which
/// zarr-python reads as NumPy saved them, leaving nothing else beside it.
#[test]
fn an_npz_of_several_arrays_converts_into_a_zarr_group() {
    if !python_has("numpy, zarr") {
        return;
    }
    let d = tmp();
    npz_files(d.path());
    for name in ["three", "packed"] {
        let npz = d.path().join(format!("{name}.npz"));
        let z = d.path().join(format!("{name}.zarr"));
        ok(&["convert", s(&npz), s(&z)]);
        let said = zarr_holds_npz(&z, &npz);
        assert!(said.contains("ok"), "{name}: {said}");
        // An existing group is kept without --overwrite (a usage error), replaced with it.
        let e = fails(&["convert", s(&npz), s(&z)], 2);
        assert!(e.contains("--overwrite"), "{e}");
        ok(&["convert", s(&npz), s(&z), "--overwrite"]);
        assert!(zarr_holds_npz(&z, &npz).contains("ok"));
    }
    let mut names: Vec<String> = std::fs::read_dir(d.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "one.npz",
            "packed.npz",
            "packed.zarr",
            "three.npz",
            "three.zarr"
        ],
        "no scratch file is left"
    );
    // A bare array is one array: refused, naming them.
    let bare = d.path().join("bare.zarr");
    let e = fails(
        &[
            "convert",
            s(&d.path().join("three.npz")),
            s(&bare),
            "--array",
        ],
        1,
    );
    assert!(e.contains("holds 3 arrays (a, b, c)"), "{e}");
    assert!(!bare.exists());
}

/// An `.npz` of several arrays into object storage: a Zarr group (`s3://…/x.zarr`), or a
/// dataset under a prefix (`s3://…/x/`), as from a folder; one of one array, a group
/// of it.
#[test]
fn an_npz_of_several_arrays_converts_into_object_storage() {
    if !python_has("numpy, zarr") {
        return;
    }
    let Some(server) = crate::s3_server::Server::start() else {
        return;
    };
    let d = tmp();
    npz_files(d.path());
    let okay = |args: &[&str]| {
        let o = crate::cli::ra()
            .args(args)
            .envs(crate::s3_server::Server::env(&server.endpoint()))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(o.status.success(), "ra {args:?}: {err}");
    };
    for name in ["three", "packed", "one"] {
        let npz = d.path().join(format!("{name}.npz"));
        let zurl = format!("s3://{}/sets/{name}.zarr", crate::s3_server::BUCKET);
        okay(&["convert", s(&npz), &zurl]);
        // s3s-fs keeps objects as files: zarr-python judges the group it holds.
        let said = zarr_holds_npz(&server.object(&format!("sets/{name}.zarr")), &npz);
        assert!(said.contains("ok"), "{name}: {said}");
        if name == "one" {
            continue;
        }
        let url = format!("s3://{}/sets/{name}/", crate::s3_server::BUCKET);
        okay(&["convert", s(&npz), &url]);
        let local = d.path().join(format!("{name}-local"));
        ok(&["convert", s(&npz), s(&local)]);
        for v in ["a.ra", "b.ra", "c.ra"] {
            let object = server.object(&format!("sets/{name}/{v}"));
            assert_eq!(
                std::fs::read(&object).unwrap(),
                std::fs::read(local.join(v)).unwrap(),
                "{name}/{v}"
            );
        }
    }
    assert!(server.pending_uploads().is_empty());
}

/// Arrays without labels, of different shapes, make a dataset xarray opens: in the Zarr
/// groups `ra` makes of them (from an `.npz`, from a folder), each variable's dims are
/// named after it (`a_dim_0`, …), never the `dim_0` that xarray would find of several
/// sizes; and back in a folder they are no labels again, the files the same bytes.
#[test]
fn unlabeled_variables_have_dims_of_their_own() {
    if !python_has("numpy, zarr, xarray") {
        return;
    }
    let d = tmp();
    npz_files(d.path());
    let npz = d.path().join("three.npz");
    let folder = d.path().join("three");
    ok(&["convert", s(&npz), s(&folder)]);
    let direct = d.path().join("direct.zarr");
    let via = d.path().join("via.zarr");
    ok(&["convert", s(&npz), s(&direct)]);
    ok(&["convert", s(&folder), s(&via)]);
    let said = python(&[
        "-c",
        "import sys, warnings, xarray as xr, numpy as np\nwarnings.simplefilter('ignore')\n\
         n = np.load(sys.argv[1])\n\
         for z in sys.argv[2:]:\n\
         \x20   ds = xr.open_zarr(z).load()\n\
         \x20   assert ds['a'].dims == ('a_dim_0', 'a_dim_1'), ds\n\
         \x20   assert ds['b'].dims == ('b_dim_0',) and ds['c'].dims == ('c_dim_0',), ds\n\
         \x20   for k in n.files:\n\
         \x20       np.testing.assert_array_equal(ds[k].values, n[k])\n\
         print('ok')",
        s(&npz),
        s(&direct),
        s(&via),
    ]);
    assert!(said.contains("ok"), "{said}");
    for (z, out) in [(&direct, "from-direct"), (&via, "from-via")] {
        let back = d.path().join(out);
        ok(&["convert", s(z), s(&back)]);
        same_files(&folder, &back, &["a.ra", "b.ra", "c.ra"]);
    }
}

/// A dataset's variables keep their trailers through a Zarr group byte for byte:
/// labeled ones (`dimcoords`, `name` and attributes, as `rastore.write` of a Dataset
/// puts them, with a float JSON spells otherwise), and ones without labels, with
/// attributes or with no trailer. The trailer rides beside the Zarr metadata, not
/// among the attributes xarray shows.
#[test]
fn a_folder_through_zarr_and_back_is_the_same_files() {
    let d = tmp();
    let run = d.path().join("run");
    std::fs::create_dir_all(run.join("coils")).unwrap();
    let temp = "---\nndarrays:\n  data:\n    shape:\n      - 2\n      - 3\n    \
                type: float32\n    attributes:\n      units: K\n      scale: 1e-5\n      \
                _FillValue: .nan\n    storage:\n      format: RawArray\n      \
                endian: little\n      order: column-major\n      data_offset: 56\n      \
                size: 24\n    dimcoords:\n      - name: y\n      - name: x\n    name: temp\n";
    let a = rastore::ndarray::Array2::from_shape_fn((2, 3), |(i, j)| (i * 3 + j) as f32);
    rastore::WriteOptions::new()
        .metadata(temp)
        .write(run.join("temp.ra"), &a)
        .unwrap();
    variable(&run.join("plain.ra"), 4);
    ok(&["meta", s(&run.join("plain.ra")), "--set-attr", "units=m"]);
    variable(&run.join("coils/c0.ra"), 3);
    let z = d.path().join("run.zarr");
    ok(&["convert", s(&run), s(&z)]);
    let back = d.path().join("back");
    ok(&["convert", s(&z), s(&back)]);
    same_files(&run, &back, &["temp.ra", "plain.ra", "coils/c0.ra"]);
    if python_has("numpy, zarr, xarray") {
        let said = python(&[
            "-c",
            "import sys, warnings, xarray as xr\nwarnings.simplefilter('ignore')\n\
             ds = xr.open_zarr(sys.argv[1])\n\
             print(sorted(ds['temp'].attrs.items()), ds['temp'].dims, ds['plain'].attrs)",
            s(&z),
        ]);
        assert!(
            said.contains("[('scale', 1e-05), ('units', 'K')] ('y', 'x') {'units': 'm'}"),
            "{said}"
        );
    }
}

/// An `.npz` that lists no array converts into an empty dataset (a `dataset.yaml` of no
/// attributes, FORMAT.md §10), as an empty NetCDF file does, not into an empty folder
/// that is no dataset; and that converts back into an archive of no arrays.
#[test]
fn an_npz_of_no_arrays_is_an_empty_dataset() {
    let dir = tmp();
    let npz = dir.path().join("empty.npz");
    // A ZIP of no members: its end-of-directory record alone.
    std::fs::write(&npz, b"PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0").unwrap();
    let out = dir.path().join("out");
    ok(&["convert", s(&npz), s(&out)]);
    let names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["dataset.yaml"]);
    let yaml = std::fs::read_to_string(out.join("dataset.yaml")).unwrap();
    assert!(yaml.contains("attributes: {}"), "{yaml}");
    let back = dir.path().join("back.npz");
    ok(&["convert", s(&out), s(&back)]);
    let again = dir.path().join("again");
    ok(&["convert", s(&back), s(&again)]);
    assert!(again.join("dataset.yaml").is_file());
}
