//! One regression test per papercut of the third newcomer's trial (issue 37), through
//! the real `ra` and the Rust library.

use std::process::Command;

use rastore::ndarray::{self, Array2, Array3, Axis};

use crate::common::tmp;
use crate::s3_server::Server;
use crate::tool::{fails, ok, run, s};

/// 1: a file of no format rastore reads keeps its magic number in the message, and says
/// what rastore does read and that `ra convert` converts between them; a format it
/// does not read yet (GIF) is named as such, with the same list; one it reads but that
/// is broken (an HDF5 signature and nothing of a superblock) is refused as that format.
#[test]
fn a_file_of_no_known_format_is_told_what_rastore_reads() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    let reads = ".ra, .npy, .npz, PNG, NIfTI, TIFF, safetensors, HDF5 (NetCDF-4, MATLAB v7.3), \
                 NetCDF-3, Zarr and dataset folders";
    let mut junk = vec![0x0d, 0x6d, 0xd7, 0xae, 0x65, 0xdc, 0xcb, 0x12];
    junk.extend([7u8; 92]);
    std::fs::write(p("junk.bin"), &junk).unwrap();
    let mut h5 = b"\x89HDF\r\n\x1a\n".to_vec();
    h5.extend([0u8; 92]);
    std::fs::write(p("x.h5"), &h5).unwrap();
    let mut gif = b"GIF89a".to_vec();
    gif.extend([0u8; 60]);
    std::fs::write(p("x.gif"), &gif).unwrap();
    let out = p("out.ra");
    for args in [
        vec!["info", s(&p("junk.bin"))],
        vec!["stats", s(&p("junk.bin"))],
        vec!["convert", s(&p("junk.bin")), s(&out)],
    ] {
        let err = fails(&args, 1);
        assert!(
            err.contains("junk.bin: not a RawArray file: magic is 0x12cbdc65aed76d0d")
                && err.contains(&format!("no other format rastore reads ({reads})"))
                && err.contains("`ra convert` converts between them"),
            "{args:?}: {err}"
        );
    }
    for args in [
        vec!["describe", s(&p("x.h5"))],
        vec!["convert", s(&p("x.h5")), s(&out)],
    ] {
        let err = fails(&args, 1);
        assert!(
            err.contains("x.h5: not a valid HDF5 file: superblock"),
            "{args:?}: {err}"
        );
    }
    for (name, what, magic) in [("x.gif", "a GIF image", "0x0000613938464947")] {
        for args in [
            vec!["describe", s(&p(name))],
            vec!["convert", s(&p(name)), s(&out)],
        ] {
            let err = fails(&args, 1);
            assert!(
                err.contains(&format!(
                    "{name}: not a RawArray file: it starts like {what} (magic {magic}), a format \
                     rastore does not read yet; it reads {reads}; `ra convert` converts between them"
                )),
                "{args:?}: {err}"
            );
        }
    }
    assert!(!out.exists());
    // The library says the same, without the tool's words.
    let e = rastore::info::info(p("junk.bin")).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            rastore::ErrorKind::NotRawArray {
                magic: 0x12cb_dc65_aed7_6d0d,
                found: None
            }
        ) && e.to_string().ends_with(&format!("({reads})")),
        "{e}"
    );
}

/// 2: `ra --help` says what `slice` and `stack` really write: any output the engine
/// writes, by its name; a stack and a slice written as .npy and .zarr hold the arrays.
#[test]
fn slice_and_stack_write_any_output_as_their_help_says() {
    let help = ok(&["--help"]);
    let line = |cmd: &str| {
        help.lines()
            .find(|l| l.trim_start().starts_with(&format!("{cmd} ")))
            .unwrap_or_else(|| panic!("no {cmd} in {help}"))
            .to_string()
    };
    for cmd in ["slice", "stack"] {
        assert!(
            line(cmd).ends_with("any output: .ra, .npy, .png, .tif or .zarr, by its name"),
            "{}",
            line(cmd)
        );
        assert!(ok(&[cmd, "--help"]).contains(".ra, .npy, .png, .tif or .zarr"));
    }
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    let a = Array3::<f32>::from_shape_fn((3, 4, 5), |(i, j, k)| (i + 10 * j + 100 * k) as f32);
    let b = a.mapv(|v| -v);
    rastore::write(p("a.ra"), &a).unwrap();
    rastore::write(p("b.ra"), &b).unwrap();
    let back = |out: &str| {
        let ra = p(&format!("{out}.ra"));
        let options = rastore::convert::ConvertOptions::new();
        rastore::convert::convert(&p(out), &ra, &options, &mut |_, _| ()).unwrap();
        rastore::read::<f32>(ra).unwrap()
    };
    let stacked = ndarray::stack(Axis(3), &[a.view(), b.view()])
        .unwrap()
        .into_dyn();
    let plane = a.index_axis(Axis(2), 1).to_owned().into_dyn();
    for out in ["s.npy", "s.zarr"] {
        ok(&["stack", s(&p(out)), s(&p("a.ra")), s(&p("b.ra"))]);
        assert_eq!(back(out), stacked, "{out}");
    }
    for out in ["p.npy", "p.zarr"] {
        ok(&["slice", s(&p("a.ra")), s(&p(out)), "--slice", "...,1"]);
        assert_eq!(back(out), plane, "{out}");
    }
}

/// 3: a folder given to a command that takes one file says what the folder is (a
/// dataset, naming one of its files to give instead; a Zarr store; a folder of no
/// arrays) and what the command takes, never the OS's "Is a directory".
#[test]
fn a_folder_where_one_file_is_wanted_is_named_with_what_to_give() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    let a = Array3::<f32>::from_shape_fn((3, 4, 5), |(i, j, k)| (i + j + k) as f32);
    std::fs::create_dir(p("run")).unwrap();
    std::fs::create_dir(p("empty")).unwrap();
    rastore::write(p("run").join("x.ra"), &a).unwrap();
    rastore::write(p("run").join("y.ra"), &a).unwrap();
    rastore::write(p("a.ra"), &a).unwrap();
    ok(&["convert", s(&p("a.ra")), s(&p("a.zarr")), "--array"]);
    let (run, empty, zarr, file) = (p("run"), p("empty"), p("a.zarr"), p("a.ra"));
    let member = run.join("x.ra");
    for (args, takes) in [
        (
            vec!["stats", s(&run)],
            "`ra stats` takes one array, a .ra or .npy file",
        ),
        (
            vec!["cat", s(&run)],
            "`ra cat` takes one array, a .ra or .npy file",
        ),
        (
            vec!["diff", s(&file), s(&run)],
            "`ra diff` takes one array, a .ra or .npy file",
        ),
        (vec!["meta", s(&run)], "`ra meta` takes one .ra file"),
        (
            vec!["reshape", s(&run), "60,2"],
            "`ra reshape` takes one .ra file",
        ),
        (
            vec!["slice", s(&run), s(&p("o.ra")), "--slice", "0"],
            "`ra slice` takes one array per input (a file or a Zarr array)",
        ),
        (
            vec!["stack", s(&p("o.ra")), s(&file), s(&run)],
            "`ra stack` takes one array per input (a file or a Zarr array)",
        ),
    ] {
        let err = fails(&args, 1);
        assert!(
            err.contains(&format!(
                "{}: a dataset folder of 2 arrays; {takes}: name one of its files, as {}",
                run.display(),
                member.display()
            )),
            "{args:?}: {err}"
        );
        assert!(!err.contains("os error"), "{args:?}: {err}");
    }
    for cmd in ["stats", "cat", "meta"] {
        let err = fails(&[cmd, s(&zarr)], 1);
        assert!(
            err.contains(&format!(
                "{}: a Zarr store (a folder); `ra {cmd}` takes",
                zarr.display()
            )) && err.contains("`ra convert` it to .ra first"),
            "{cmd}: {err}"
        );
        let err = fails(&[cmd, s(&empty)], 1);
        assert!(
            err.contains(&format!(
                "{}: a folder with no .ra files, not a dataset; `ra {cmd}` takes",
                empty.display()
            )),
            "{cmd}: {err}"
        );
    }
    // A Zarr array is one array to slice.
    ok(&["slice", s(&zarr), s(&p("plane.ra")), "--slice", "...,1"]);
    assert_eq!(
        rastore::read::<f32>(p("plane.ra")).unwrap(),
        a.index_axis(Axis(2), 1).to_owned().into_dyn()
    );
    assert!(!p("o.ra").exists());
}

/// 4: an output that exists (without --overwrite) and an output named with no format's
/// extension are usage errors, exit 2 as TOOL.md says, for every writer; bad data is
/// still exit 1.
#[test]
fn an_existing_or_unnamed_output_is_a_usage_error() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    let a = Array3::<f32>::from_shape_fn((3, 4, 5), |(i, j, k)| (i + j + k) as f32);
    rastore::write(p("a.ra"), &a).unwrap();
    std::fs::write(p("taken.npy"), b"keep").unwrap();
    let (src, taken, txt) = (p("a.ra"), p("taken.npy"), p("out.txt"));
    for args in [
        vec!["convert", s(&src), s(&taken)],
        vec!["slice", s(&src), s(&taken), "--slice", "...,0"],
        vec!["stack", s(&taken), s(&src)],
        vec!["create", s(&taken), "--dtype", "f32", "--shape", "2"],
        vec!["refs", s(&src), "-o", s(&taken)],
    ] {
        let err = fails(&args, 2);
        assert!(
            err.contains(&format!(
                "{}: file exists; pass --overwrite to replace it",
                taken.display()
            )),
            "{args:?}: {err}"
        );
        assert_eq!(std::fs::read(&taken).unwrap(), b"keep");
    }
    for args in [
        vec!["convert", s(&src), s(&txt)],
        vec!["slice", s(&src), s(&txt), "--slice", "...,0"],
        vec!["stack", s(&txt), s(&src)],
        vec!["convert", s(&src), "-"],
    ] {
        let err = fails(&args, 2);
        assert!(
            err.contains(
                ": unknown extension for an output (it is written as .ra, .npy, .png, .tif or .zarr"
            ),
            "{args:?}: {err}"
        );
        assert!(!txt.exists());
    }
    // Bad data is exit 1.
    std::fs::write(p("bad.ra"), b"rawarray and then too little").unwrap();
    fails(&["convert", s(&p("bad.ra")), s(&p("b.npy"))], 1);
    // The library tells them by kind.
    let options = rastore::convert::ConvertOptions::new();
    let e = rastore::convert::convert(&src, &txt, &options, &mut |_, _| ()).unwrap_err();
    assert!(matches!(e.kind(), rastore::ErrorKind::UnknownOutput), "{e}");
    assert_eq!(e.path(), Some(txt.as_path()));
    let e = rastore::convert::convert(&src, &taken, &options, &mut |_, _| ()).unwrap_err();
    assert!(matches!(e.kind(), rastore::ErrorKind::Exists), "{e}");
}

/// 5: two byte-identical files holding a NaN differ, as NumPy's allclose says (exit 1),
/// and the count says the differing elements are NaN in both and names --equal-nan.
#[test]
fn a_nan_in_both_files_is_said_to_differ_with_equal_nan_named() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    let mut a = Array2::<f32>::from_shape_fn((120, 120), |(i, j)| (i * 120 + j) as f32);
    a[[3, 5]] = f32::NAN;
    rastore::write(p("a.ra"), &a).unwrap();
    std::fs::copy(p("a.ra"), p("copy.ra")).unwrap();
    let o = run(&["diff", s(&p("a.ra")), s(&p("copy.ra"))]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "1 of 14400 elements differ: it is NaN in both, and NaN differs from NaN as in \
             NumPy's allclose (--equal-nan counts NaN equal to NaN)\n"
        ),
        "{text}"
    );
    assert!(ok(&["diff", s(&p("a.ra")), s(&p("copy.ra")), "--equal-nan"]).starts_with("same:"));
    // Among other differences, how many of them are NaN in both.
    let mut b = a.clone();
    b[[7, 7]] = 5.0;
    b[[9, 9]] = f32::NAN;
    rastore::write(p("b.ra"), &b).unwrap();
    let o = run(&["diff", s(&p("a.ra")), s(&p("b.ra"))]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(
            "3 of 14400 elements differ (1 of them NaN in both: NaN differs from NaN unless \
             --equal-nan), largest |a - b| = 842 at [7, 7]: 847 vs 5\n"
        ) && text.contains("NaN: 1 in both (first at [3, 5]), 1 in b only (first at [9, 9])"),
        "{text}"
    );
}

/// 6: `ra describe` of a folder with no .ra files is refused (exit 1), with the message
/// `ra info` and `ra verify` give (one check, the library's), not `ndarrays: {}`; so is
/// an `s3://` prefix with no `.ra` objects.
#[test]
fn describe_refuses_a_folder_that_is_no_dataset() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    std::fs::create_dir(p("empty")).unwrap();
    std::fs::create_dir(p("notes")).unwrap();
    std::fs::write(p("notes").join("readme.txt"), "not arrays\n").unwrap();
    std::fs::write(
        p("notes").join("dataset.yaml"),
        "---\nattributes:\n  title: no arrays\n",
    )
    .unwrap();
    for folder in [p("empty"), p("notes")] {
        let want = format!(
            "{}: a folder with no .ra files, not a dataset",
            folder.display()
        );
        for cmd in ["describe", "info", "verify"] {
            let o = run(&[cmd, s(&folder)]);
            assert_eq!(o.status.code(), Some(1), "{cmd}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(err.contains(&want), "{cmd}: {err}");
            assert!(!String::from_utf8_lossy(&o.stdout).contains("ndarrays"));
        }
        let e = rastore::dataset::describe(&folder).unwrap_err();
        assert!(matches!(e.kind(), rastore::ErrorKind::NoDataset), "{e}");
    }
    // A dataset is still described.
    let a = Array2::<u8>::from_shape_fn((2, 3), |(i, j)| (i + j) as u8);
    rastore::write(p("notes").join("x.ra"), &a).unwrap();
    let doc = ok(&["describe", s(&p("notes"))]);
    assert!(
        doc.contains("title: no arrays") && doc.contains("  x:"),
        "{doc}"
    );
    // An object prefix with no .ra objects.
    let Some(server) = Server::start() else {
        return;
    };
    std::fs::create_dir_all(server.object("bare")).unwrap();
    std::fs::write(server.object("bare/readme.txt"), "x").unwrap();
    for cmd in ["describe", "info"] {
        let o = Command::new(env!("CARGO_BIN_EXE_ra"))
            .envs(Server::env(&server.endpoint()))
            .args([cmd, "s3://bkt/bare/"])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(1), "{cmd}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("s3://bkt/bare/: a folder with no .ra files, not a dataset"),
            "{cmd}: {err}"
        );
    }
}

/// 7: `ra info` of a dataset folder shows each `dataset.yaml` (its attributes count
/// and title), as `ra verify` lists it, in text and in JSON; a bad one is reported
/// and the variables still listed.
#[test]
fn info_of_a_dataset_shows_its_dataset_yaml() {
    let d = tmp();
    let run_dir = d.path().join("run");
    let sub = run_dir.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let a = Array2::<u8>::from_shape_fn((2, 3), |(i, j)| (i + j) as u8);
    rastore::write(run_dir.join("x.ra"), &a).unwrap();
    rastore::write(sub.join("y.ra"), &a).unwrap();
    std::fs::write(
        run_dir.join("dataset.yaml"),
        "---\nattributes:\n  title: scan \"4\"\n  site: north\n",
    )
    .unwrap();
    std::fs::write(sub.join("dataset.yaml"), "---\nattributes:\n  k: 1\n").unwrap();
    let (top, low) = (run_dir.join("dataset.yaml"), sub.join("dataset.yaml"));
    let info = ok(&["info", s(&run_dir)]);
    let lines: Vec<&str> = info.lines().collect();
    assert_eq!(lines.len(), 4, "{info}");
    assert_eq!(
        lines[0],
        format!("{}: 2 attributes (title: scan \"4\")", top.display())
    );
    assert_eq!(lines[1], format!("{}: 1 attribute", low.display()));
    assert!(
        lines[2].contains("y.ra") && lines[3].contains("x.ra"),
        "{info}"
    );
    let verified = ok(&["verify", s(&run_dir)]);
    assert!(
        verified.contains(&format!("{}: ok (2 attributes)", top.display()))
            && verified.contains(&format!("{}: ok (1 attribute)", low.display())),
        "{verified}"
    );
    let json = ok(&["info", "--json", s(&run_dir)]);
    let first = json.lines().next().unwrap();
    assert_eq!(
        first,
        format!(
            "{{\"path\": {}, \"attributes\": 2, \"title\": \"scan \\\"4\\\"\"}}",
            rastore::json::string(&top.to_string_lossy())
        )
    );
    // A dataset.yaml that is no NDL document: reported, exit 1, the variables listed.
    std::fs::write(&low, "not yaml: [").unwrap();
    let o = run(&["info", s(&run_dir)]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!(
            "{}: invalid argument: not an NDL document",
            low.display()
        )),
        "{err}"
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("x.ra"));
}

/// 8: a `.npy` whose header is fine but whose data is cut short is refused by `ra info`
/// (text and JSON) and `ra describe`, naming the byte counts, as a truncated `.ra` is;
/// the library's `info::npy_header` (what Python's `rastore.info` reads) refuses it.
#[test]
fn a_truncated_npy_is_refused_by_info_and_describe() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    let a = Array2::<f32>::from_shape_fn((120, 120), |(i, j)| (i * 120 + j) as f32);
    rastore::write(p("a.ra"), &a).unwrap();
    let options = rastore::convert::ConvertOptions::new();
    rastore::convert::convert(&p("a.ra"), &p("a.npy"), &options, &mut |_, _| ()).unwrap();
    let whole = std::fs::read(p("a.npy")).unwrap();
    std::fs::write(p("trunc.npy"), &whole[..200]).unwrap();
    let ra_bytes = std::fs::read(p("a.ra")).unwrap();
    std::fs::write(p("trunc.ra"), &ra_bytes[..200]).unwrap();
    for (name, len) in [("trunc.npy", whole.len()), ("trunc.ra", ra_bytes.len())] {
        let want = format!(
            "{}: truncated data: header and data need {len} bytes, file is 200 bytes",
            p(name).display()
        );
        for args in [
            vec!["info", s(&p(name))],
            vec!["info", "--json", s(&p(name))],
            vec!["describe", s(&p(name))],
        ] {
            let err = fails(&args, 1);
            assert!(err.contains(&want), "{args:?}: {err}");
        }
    }
    let e = rastore::info::npy_header(p("trunc.npy")).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            rastore::ErrorKind::TruncatedData { expected, actual: 200 }
                if *expected == whole.len() as u64
        ),
        "{e}"
    );
    assert!(rastore::info::info(p("trunc.npy")).is_err());
    // The whole file is fine.
    let nh = rastore::info::npy_header(p("a.npy")).unwrap();
    assert_eq!(nh.shape, vec![120, 120]);
    assert!(ok(&["info", s(&p("a.npy"))]).contains("float32 [120, 120]"));
}
