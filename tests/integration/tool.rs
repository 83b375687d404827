//! The `ra` commands NumPy, Julia and HDF5 users reach for (issue 11), through the
//! real binary, with NumPy and Pillow as the judges wherever they have an answer.

use std::path::Path;
use std::process::Output;

use crate::common::{python, python_has, tmp};

pub fn run(args: &[&str]) -> Output {
    crate::cli::run(args)
}

pub fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(
        o.status.success(),
        "ra {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn fails(args: &[&str], code: i32) -> String {
    let o = run(args);
    assert_eq!(o.status.code(), Some(code), "ra {args:?}");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn png_keeps_the_logical_image_pillow_shows() {
    if !python_has("numpy, PIL") {
        return;
    }
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    // Pillow writes images; ra's .npy of them is Pillow's own array.
    python(&[
        "-c",
        "import numpy as np, sys\nfrom PIL import Image\n\
         d = sys.argv[1]\n\
         g = np.zeros((100, 200), np.uint8); g[10:20, :] = 255\n\
         Image.fromarray(g).save(d + '/band.png')\n\
         rgb = np.random.default_rng(1).integers(0, 255, (30, 60, 3), dtype=np.uint8)\n\
         Image.fromarray(rgb).save(d + '/rgb.png')\n\
         g16 = np.arange(12, dtype=np.uint16).reshape(3, 4) * 5000\n\
         Image.fromarray(g16).save(d + '/g16.png')",
        s(d.path()),
    ]);
    for name in ["band", "rgb", "g16"] {
        ok(&[
            "convert",
            s(&p(&format!("{name}.png"))),
            s(&p(&format!("{name}.npy"))),
        ]);
        ok(&[
            "convert",
            s(&p(&format!("{name}.png"))),
            s(&p(&format!("{name}.ra"))),
        ]);
        // And back: a .npy from NumPy becomes a PNG Pillow reads as the same array.
        ok(&[
            "convert",
            s(&p(&format!("{name}.ra"))),
            s(&p(&format!("{name}.back.png"))),
        ]);
    }
    let report = python(&[
        "-c",
        "import numpy as np, sys\nfrom PIL import Image\n\
         d = sys.argv[1]\n\
         for n in ['band', 'rgb', 'g16']:\n\
         \x20   want = np.asarray(Image.open(f'{d}/{n}.png'))\n\
         \x20   got = np.load(f'{d}/{n}.npy')\n\
         \x20   assert got.shape == want.shape and (got == want).all(), (n, got.shape, want.shape)\n\
         \x20   back = np.asarray(Image.open(f'{d}/{n}.back.png'))\n\
         \x20   assert (back == want).all(), n\n\
         print(np.load(d + '/band.npy').shape, np.load(d + '/rgb.npy').shape)",
        s(d.path()),
    ]);
    assert_eq!(report.trim(), "(100, 200) (30, 60, 3)");
    let (h, _) = rastore::read_header_at(p("rgb.ra")).unwrap();
    assert_eq!(h.dims(), &[30, 60, 3], "[height, width, channels]");
    // The conformance PNGs too.
    if let Some(conf) = crate::common::conformance_dir() {
        for name in ["mnist_8", "cifar_airplane"] {
            let png = conf.join(format!("{name}.png"));
            let npy = p(&format!("{name}.npy"));
            ok(&["convert", s(&png), s(&npy)]);
            python(&[
                "-c",
                "import numpy as np, sys\nfrom PIL import Image\n\
                 want = np.asarray(Image.open(sys.argv[1])); got = np.load(sys.argv[2])\n\
                 assert got.shape == want.shape and (got == want).all(), (got.shape, want.shape)",
                s(&png),
                s(&npy),
            ]);
        }
    }
}

#[test]
fn meta_edits_attributes_and_keeps_what_the_data_needs() {
    if !python_has("numpy") {
        return;
    }
    let d = tmp();
    let npy = d.path().join("people.npy");
    python(&[
        "-c",
        "import numpy as np, sys\n\
         a = np.array([(b'ann', 31, 1.5), (b'bob', 42, 2.5)], dtype=[('name', 'S10'), ('age', '<i4'), ('w', '<f4')])\n\
         np.save(sys.argv[1], a)",
        s(&npy),
    ]);
    let file = d.path().join("people.ra");
    ok(&["convert", s(&npy), s(&file)]);
    ok(&[
        "meta",
        s(&file),
        "--set-attr",
        "units=kg",
        "--set-attr",
        "count=2",
        "--set-attr",
        "ok=true",
    ]);
    ok(&[
        "meta",
        s(&file),
        "--set-attr",
        "scale=0.5",
        "--del-attr",
        "ok",
    ]);
    let text = ok(&["meta", s(&file)]);
    assert!(text.starts_with("---\n"), "{text}");
    assert!(
        text.contains("units: kg") && text.contains("count: 2") && text.contains("scale: 0.5"),
        "{text}"
    );
    assert!(!text.contains("ok: true"), "{text}");
    let back = d.path().join("back.npy");
    ok(&["convert", s(&file), s(&back)]);
    python(&[
        "-c",
        "import numpy as np, sys\n\
         a, b = np.load(sys.argv[1]), np.load(sys.argv[2])\n\
         assert a.dtype == b.dtype and (a == b).all(), b.dtype",
        s(&npy),
        s(&back),
    ]);
    // --set without the fields is refused unless forced.
    let plain = d.path().join("plain.yaml");
    std::fs::write(&plain, "---\nunits: kg\n").unwrap();
    let e = fails(&["meta", s(&file), "--set", s(&plain)], 1);
    assert!(e.contains("--force"), "{e}");
    ok(&["meta", s(&file), "--set", s(&plain), "--force"]);
    assert_eq!(rastore::read_metadata(&file).unwrap(), b"---\nunits: kg\n");
    // A plain YAML mapping's top-level keys are its attributes.
    ok(&["meta", s(&file), "--set-attr", "units=g"]);
    assert_eq!(rastore::read_metadata(&file).unwrap(), b"---\nunits: g\n");
    // An opaque trailer is refused, and left alone.
    let opaque = d.path().join("o.ra");
    rastore::WriteOptions::new()
        .metadata(b"\x00binary".to_vec())
        .write(&opaque, &rastore::ndarray::Array1::<u8>::zeros(2))
        .unwrap();
    let e = fails(&["meta", s(&opaque), "--set-attr", "a=1"], 1);
    assert!(e.contains("not NDL YAML"), "{e}");
    assert_eq!(rastore::read_metadata(&opaque).unwrap(), b"\x00binary");
    // An empty trailer becomes an NDL document.
    let empty = d.path().join("e.ra");
    rastore::write(&empty, &rastore::ndarray::Array1::<u8>::zeros(2)).unwrap();
    ok(&["meta", s(&empty), "--set-attr", "units=m"]);
    let text = ok(&["describe", s(&empty)]);
    assert!(
        text.contains("units: m") && text.contains("uint8"),
        "{text}"
    );
}

#[test]
fn convert_refuses_an_existing_output_and_says_when_it_stored_raw() {
    let d = tmp();
    let a = d.path().join("a.ra");
    let noise = crate::common::noise(4096, 0x9e37_79b9_7f4a_7c15);
    rastore::write(&a, &rastore::ndarray::Array1::from(noise)).unwrap();
    let b = d.path().join("b.ra");
    std::fs::write(&b, b"keep").unwrap();
    let e = fails(&["convert", s(&a), s(&b)], 2);
    assert!(e.contains("--overwrite"), "{e}");
    assert_eq!(std::fs::read(&b).unwrap(), b"keep");
    let o = run(&["convert", "--compress", "--overwrite", s(&a), s(&b)]);
    assert!(o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("stored uncompressed"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!rastore::read_header_at(&b).unwrap().0.flags().compressed());
}

#[test]
fn reshape_infers_one_dim_in_column_major_order() {
    let d = tmp();
    let f = d.path().join("r.ra");
    let a = rastore::ndarray::Array2::from_shape_fn((4, 6), |(i, j)| (i + 10 * j) as u16);
    rastore::write(&f, &a).unwrap();
    assert!(ok(&["reshape", s(&f), "2,-1,2"]).contains("now [2, 6, 2]"));
    let back: rastore::ndarray::ArrayD<u16> = rastore::read(&f).unwrap();
    // Column-major: the bytes do not move, as NumPy's reshape(order='F').
    assert_eq!(back[[1, 0, 0]], a[[1, 0]]);
    assert_eq!(back[[0, 1, 0]], a[[2, 0]]);
    assert_eq!(back[[0, 0, 1]], a[[0, 3]]);
    fails(&["reshape", s(&f), "-1,-1"], 2);
    fails(&["reshape", s(&f), "5,-1"], 2);
    let help = ok(&["reshape", "--help"]);
    assert!(help.contains("order='F'") && help.contains("-1"), "{help}");
}

#[test]
fn stats_agree_with_numpy() {
    if !python_has("numpy") {
        return;
    }
    let d = tmp();
    python(&[
        "-c",
        "import numpy as np, sys\nd = sys.argv[1]\n\
         r = np.random.default_rng(3)\n\
         f = r.normal(5, 2, (300, 70)).astype(np.float32); f[0, 0] = np.nan; f[1, 1] = np.inf; f[2, 2] = -np.inf\n\
         np.save(d + '/f32.npy', f)\n\
         np.save(d + '/i16.npy', r.integers(-900, 900, (50, 3)).astype(np.int16))\n\
         np.save(d + '/f16.npy', r.normal(0, 1, 1000).astype(np.float16))\n\
         np.save(d + '/c64.npy', (r.normal(0, 1, 64) + 1j * r.normal(0, 1, 64)).astype(np.complex64))\n\
         np.save(d + '/u8.npy', np.asfortranarray(r.integers(0, 255, (9, 8, 7)).astype(np.uint8)))",
        s(d.path()),
    ]);
    for name in ["f32", "i16", "f16", "c64", "u8"] {
        let npy = d.path().join(format!("{name}.npy"));
        let ra_path = d.path().join(format!("{name}.ra"));
        ok(&["convert", s(&npy), s(&ra_path)]);
        for (file, spec) in [
            (&npy, None),
            (&ra_path, None),
            (&ra_path, Some("1:7,...")),
            (&npy, Some("-1,...")),
        ] {
            let mut args = vec!["stats", s(file), "--json"];
            if let Some(spec) = spec {
                args.extend(["--slice", spec]);
            }
            let json = ok(&args);
            let sel = spec.map_or(String::new(), |sp| format!("[{sp}]"));
            python(&[
                "-c",
                &format!(
                    "import numpy as np, sys, json\n\
                     a = np.load(sys.argv[1]){sel}\n\
                     a = np.abs(a.astype(np.complex128)) if np.iscomplexobj(a) else a\n\
                     a = np.asarray(a, dtype=np.float64).ravel()\n\
                     got = json.loads(sys.argv[2])\n\
                     fin = a[np.isfinite(a)]\n\
                     want = dict(count=a.size, min=fin.min(), max=fin.max(), mean=fin.mean(), std=fin.std(),\n\
                     \x20   nan=int(np.isnan(a).sum()), inf=int(np.isinf(a).sum()))\n\
                     for k, v in want.items():\n\
                     \x20   assert np.isclose(got[k], v, rtol=1e-9, atol=1e-12), (k, got[k], v)\n\
                     assert set(got) == set(want), got"
                ),
                s(&npy),
                &json,
            ]);
        }
    }
    let text = ok(&["stats", s(&d.path().join("i16.ra"))]);
    assert!(text.starts_with("count 150 min "), "{text}");
}

#[test]
fn slice_writes_the_sub_array_numpy_would_give() {
    if !python_has("numpy, PIL") {
        return;
    }
    let d = tmp();
    let vol = d.path().join("vol.npy");
    python(&[
        "-c",
        "import numpy as np, sys\n\
         np.save(sys.argv[1], np.arange(6 * 5 * 4, dtype=np.uint16).reshape(6, 5, 4))",
        s(&vol),
    ]);
    let vol_ra = d.path().join("vol.ra");
    ok(&["convert", s(&vol), s(&vol_ra)]);
    // A C-order .npy input slices the same as its .ra.
    let from_npy = d.path().join("from_npy.ra");
    let from_ra = d.path().join("from_ra.ra");
    ok(&["slice", s(&vol), s(&from_npy), "--slice", "1:4,...,-1"]);
    ok(&["slice", s(&vol_ra), s(&from_ra), "--slice", "1:4,...,-1"]);
    assert_eq!(
        std::fs::read(&from_npy).unwrap(),
        std::fs::read(&from_ra).unwrap()
    );
    // Negative steps as NumPy takes them, on every axis, with bounds out of range.
    for (spec, out) in [
        ("1:5:2,-1,...", "a.npy"),
        ("...,2", "plane.npy"),
        ("::-1", "rev.npy"),
        ("::-1,0,...", "rev0.npy"),
        ("4:0:-2,::-3,-1:-9:-1", "steps.npy"),
        (":,1:100:-1,::-2", "empty.npy"),
        ("3", "one.ra"),
        (":,:,0", "plane.png"),
        ("::-1,::-1,1", "flipped.png"),
    ] {
        let target = d.path().join(out);
        let o = run(&["slice", s(&vol_ra), s(&target), "--slice", spec]);
        assert!(
            o.status.success(),
            "{spec}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let load = if out.ends_with(".png") {
            "np.asarray(__import__('PIL.Image').Image.open(sys.argv[2]))"
        } else if out.ends_with(".ra") {
            "None"
        } else {
            "np.load(sys.argv[2])"
        };
        if load == "None" {
            let got: rastore::ndarray::ArrayD<u16> = rastore::read(&target).unwrap();
            assert_eq!(got.shape(), &[5, 4]);
            assert_eq!(got[[0, 0]], 3 * 20);
            continue;
        }
        let scaled = if out.ends_with(".png") {
            "want = want.astype(np.uint16)"
        } else {
            ""
        };
        python(&[
            "-c",
            &format!(
                "import numpy as np, sys\n\
                 want = np.load(sys.argv[1])[{spec}]\n{scaled}\n\
                 got = {load}\n\
                 assert got.shape == want.shape, (got.shape, want.shape)\n\
                 assert (got == want).all()"
            ),
            s(&vol),
            s(&target),
        ]);
    }
    // A plane of a float volume as a PNG: scaled, and the shape Pillow shows.
    let f = d.path().join("f.ra");
    rastore::write(
        &f,
        &rastore::ndarray::Array3::from_shape_fn((8, 6, 3), |(i, j, k)| (i * j + k) as f32),
    )
    .unwrap();
    let png = d.path().join("f.png");
    ok(&["slice", s(&f), s(&png), "--slice", "...,1"]);
    let shape = python(&[
        "-c",
        "import sys\nfrom PIL import Image\nprint(Image.open(sys.argv[1]).size)",
        s(&png),
    ]);
    assert_eq!(shape.trim(), "(6, 8)", "Pillow's (width, height)");
    let e = fails(&["slice", s(&f), s(&png), "--slice", "0"], 2);
    assert!(e.contains("--overwrite"), "{e}");
}

#[test]
fn stack_builds_one_array_from_many_images() {
    if !python_has("numpy, PIL") {
        return;
    }
    let d = tmp();
    python(&[
        "-c",
        "import numpy as np, sys\nfrom PIL import Image\nd = sys.argv[1]\n\
         r = np.random.default_rng(5)\n\
         for i in range(5):\n\
         \x20   Image.fromarray(r.integers(0, 255, (12, 9, 3), dtype=np.uint8)).save(f'{d}/im{i}.png')\n\
         Image.fromarray(np.zeros((9, 12, 3), np.uint8)).save(f'{d}/wrong.png')",
        s(d.path()),
    ]);
    let ims: Vec<String> = (0..5)
        .map(|i| s(&d.path().join(format!("im{i}.png"))).to_string())
        .collect();
    let out = d.path().join("stack.ra");
    let mut args = vec!["stack", s(&out)];
    args.extend(ims.iter().map(String::as_str));
    let text = ok(&args);
    assert!(text.contains("uint8 [12, 9, 3, 5] from 5 inputs"), "{text}");
    let npy = d.path().join("stack.npy");
    ok(&["convert", s(&out), s(&npy)]);
    python(&[
        "-c",
        "import numpy as np, sys\nfrom PIL import Image\n\
         want = np.stack([np.asarray(Image.open(f)) for f in sys.argv[2:]], axis=-1)\n\
         got = np.load(sys.argv[1])\n\
         assert got.shape == want.shape and (got == want).all(), got.shape",
        s(&npy),
        &ims[0],
        &ims[1],
        &ims[2],
        &ims[3],
        &ims[4],
    ]);
    // Refused: an existing output (a usage error), and a misfit named (the first one, in
    // order).
    let e = fails(&args, 2);
    assert!(e.contains("--overwrite"), "{e}");
    let wrong = d.path().join("wrong.png");
    let out2 = d.path().join("s2.ra");
    let e = fails(
        &["stack", s(&out2), &ims[0], &ims[1], s(&wrong), s(&wrong)],
        1,
    );
    assert!(
        e.contains("wrong.png: invalid argument: uint8 [9, 12, 3] differs from")
            && e.contains("[12, 9, 3]"),
        "{e}"
    );
    assert!(!out2.exists(), "nothing is placed when an input fails");
}

#[test]
fn npy_files_are_read_by_every_read_command_and_cat_json_nests_as_tolist() {
    if !python_has("numpy") {
        return;
    }
    let d = tmp();
    let c = d.path().join("c.npy");
    let f = d.path().join("f.npy");
    python(&[
        "-c",
        "import numpy as np, sys\n\
         a = np.arange(24, dtype=np.float32).reshape(2, 3, 4); a[1, 2, 3] = np.nan\n\
         np.save(sys.argv[1], a); np.save(sys.argv[2], np.asfortranarray(a))\n\
         np.save(sys.argv[3], (np.arange(4) + 1j).astype('>c8'))",
        s(&c),
        s(&f),
        s(&d.path().join("z.npy")),
    ]);
    let info = ok(&["info", s(&c)]);
    assert!(
        info.contains("float32 [2, 3, 4] bytes 96 npy 1.0 C-order"),
        "{info}"
    );
    assert!(ok(&["describe", s(&f)]).contains("order: column-major"));
    for file in [&c, &f] {
        for spec in ["", "1", "-1,0:2", "...,-1", "0,1,2"] {
            let mut args = vec!["cat", s(file), "--json"];
            if !spec.is_empty() {
                args.extend(["--slice", spec]);
            }
            let json = ok(&args);
            let sel = if spec.is_empty() {
                String::new()
            } else {
                format!("[{spec}]")
            };
            python(&[
                "-c",
                &format!(
                    "import numpy as np, sys, json\n\
                     want = np.load(sys.argv[1]){sel}.tolist()\n\
                     num = lambda v: float(v) if isinstance(v, str) else v\n\
                     got = json.loads(sys.argv[2])\n\
                     same = lambda a, b: (num(a) != num(a) and b != b) or num(a) == b if not isinstance(a, list) else len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))\n\
                     assert same(got, want), (got, want)"
                ),
                s(file),
                &json,
            ]);
        }
    }
    // Complex as [re, im], big-endian read natively.
    assert_eq!(
        ok(&[
            "cat",
            s(&d.path().join("z.npy")),
            "--json",
            "--slice",
            "1:3"
        ]),
        "[[1.0, 1.0], [2.0, 1.0]]\n"
    );
    // --slice without '=' takes negative indices.
    assert_eq!(ok(&["cat", s(&c), "--slice", "-1,-1,-2"]), "[1, 2, 2] 22\n");
    let e = fails(&["cat", s(&c), "--json", "--limit", "5"], 2);
    assert!(e.contains("more than --limit"), "{e}");
}

#[test]
fn dtype_accepts_numpy_strings_and_create_needs_a_shape() {
    let d = tmp();
    for (dtype, name) in [
        ("<f4", "float32"),
        ("float32", "float32"),
        ("float", "float64"),
        ("complex64", "complex64"),
        ("bool", "bool"),
        ("<i8", "int64"),
        ("i8", "int8"),
    ] {
        let p = d.path().join("x.ra");
        let text = ok(&[
            "create",
            "--overwrite",
            s(&p),
            "--dtype",
            dtype,
            "--shape",
            "2",
        ]);
        assert!(text.contains(&format!(": {name} [2]")), "{dtype}: {text}");
    }
    let e = fails(&["create", s(&d.path().join("y.ra")), "--dtype", "f32"], 2);
    assert!(e.contains("--shape"), "{e}");
    let e = fails(
        &[
            "create",
            s(&d.path().join("y.ra")),
            "--dtype",
            "f33",
            "--shape",
            "1",
        ],
        2,
    );
    assert!(e.contains("NumPy type string"), "{e}");
}

#[test]
fn errors_debug_as_their_message() {
    let e = rastore::read::<f32>("/no/such/file.ra").unwrap_err();
    assert_eq!(format!("{e:?}"), e.to_string());
    assert!(
        format!("{e:?}").starts_with("/no/such/file.ra: open: "),
        "{e:?}"
    );
}

#[test]
fn npz_members_become_one_ra_each() {
    if !python_has("numpy") {
        return;
    }
    let d = tmp();
    for (name, save) in [("plain.npz", "savez"), ("packed.npz", "savez_compressed")] {
        let npz = d.path().join(name);
        python(&[
            "-c",
            &format!(
                "import numpy as np, sys\n\
                 r = np.random.default_rng(2)\n\
                 np.{save}(sys.argv[1], img=r.integers(0, 255, (20, 30, 3), dtype=np.uint8),\n\
                 \x20   table=np.array([(1, 2.5)], dtype=[('k', '<i4'), ('v', '<f8')]),\n\
                 \x20   mask=np.array([[True, False], [False, True]]), scalar=np.float64(4.5))"
            ),
            s(&npz),
        ]);
        let out = d.path().join(format!("{name}.d"));
        ok(&["convert", s(&npz), s(&out)]);
        let mut made: Vec<String> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        made.sort();
        assert_eq!(
            made,
            ["img.ra", "mask.ra", "scalar.ra", "table.ra"],
            "{name}"
        );
        for m in ["img", "table", "mask", "scalar"] {
            ok(&[
                "convert",
                s(&out.join(format!("{m}.ra"))),
                s(&out.join(format!("{m}.npy"))),
            ]);
        }
        python(&[
            "-c",
            "import numpy as np, sys\n\
             z = np.load(sys.argv[1])\n\
             for k in z.files:\n\
             \x20   b = np.load(f'{sys.argv[2]}/{k}.npy')\n\
             \x20   assert z[k].dtype == b.dtype and z[k].shape == b.shape and (z[k] == b).all(), k",
            s(&npz),
            s(&out),
        ]);
        let e = fails(&["convert", s(&npz), s(&out)], 2);
        assert!(e.contains("--overwrite"), "{e}");
        // A cut archive is refused, and leaves no temporary member behind.
        let bytes = std::fs::read(&npz).unwrap();
        let cut = d.path().join("cut.npz");
        std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
        let out2 = d.path().join("cut.d");
        let e = fails(&["convert", s(&cut), s(&out2)], 1);
        assert!(e.contains("npz"), "{e}");
        assert!(!out2.exists(), "a failed conversion left {out2:?}");
    }
    // A good member, then a bad one: the good one's .ra goes too, and the folder.
    let mixed = d.path().join("mixed.npz");
    python(&[
        "-c",
        "import io, numpy as np, sys, zipfile\n\
         b = io.BytesIO(); np.save(b, np.arange(6.0))\n\
         with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
         \x20   z.writestr('good.npy', b.getvalue())\n\
         \x20   z.writestr('bad.npy', b'not an npy at all')",
        s(&mixed),
    ]);
    // An array NumPy cannot hold, into an .npz: refused, naming the member, not the
    // scratch file it was being written to.
    let folder = d.path().join("huge");
    std::fs::create_dir(&folder).unwrap();
    let words = crate::common::words(&[crate::common::MAGIC, 0, 2, 1, 0, 2, 0, 1 << 63]);
    std::fs::write(folder.join("big.ra"), words).unwrap();
    let npz_out = d.path().join("huge.npz");
    let e = fails(&["convert", s(&folder), s(&npz_out)], 1);
    assert!(e.contains("NumPy cannot hold"), "{e}");
    assert!(
        e.contains(&format!(
            "{}",
            Path::new("huge.npz").join("big.npy").display()
        )),
        "{e}"
    );
    assert!(!e.contains(".rastore-"), "{e}");
    assert!(!npz_out.exists());
    // A stored member whose size in the directory runs past the archive (its header
    // claims 64 GiB): refused before any output is made, never allocated.
    let liar = d.path().join("liar.npz");
    python(&[
        "-c",
        "import io, numpy as np, struct, sys, zipfile\n\
         b = io.BytesIO(); np.lib.format.write_array_header_1_0(b, {'descr': '<f8', \
         'fortran_order': True, 'shape': (1 << 33,)})\n\
         with zipfile.ZipFile(sys.argv[1], 'w') as z:\n\
         \x20   z.writestr('a.npy', b.getvalue())\n\
         data = bytearray(open(sys.argv[1], 'rb').read())\n\
         cd = data.index(b'PK\\x01\\x02')\n\
         data[cd + 20:cd + 28] = struct.pack('<II', 0xfffffff0, 0xfffffff0)\n\
         open(sys.argv[1], 'wb').write(data)",
        s(&liar),
    ]);
    let liar_out = d.path().join("liar.ra");
    let e = fails(&["convert", s(&liar), s(&liar_out), "--compress"], 1);
    assert!(e.contains("past the end") && e.contains("liar.npz"), "{e}");
    assert!(!liar_out.exists());
    let out3 = d.path().join("mixed.d");
    let e = fails(&["convert", s(&mixed), s(&out3)], 1);
    assert!(e.contains("bad.npy") && e.contains("mixed.npz"), "{e}");
    assert!(!out3.exists(), "a failed conversion left {out3:?}");
}

/// `ra slice` of a `.ra` reads the runs that hold the selection, in pieces along the
/// last axis: steps on every axis, dropped dims, edges and empty ranges give what
/// ndarray's slicing gives, plain and compressed, in either byte order of the data.
#[test]
fn slice_of_a_ra_equals_ndarray_slicing() {
    use ndarray::{s, ArrayD, IxDyn, ShapeBuilder};
    let d = tmp();
    let n = 7 * 5 * 37;
    let a = ArrayD::from_shape_vec(IxDyn(&[7, 5, 37]).f(), (0..n as u16).collect()).unwrap();
    let cases: Vec<(&str, ArrayD<u16>)> = vec![
        (
            "1:6:2,::3,2:35:3",
            a.slice(s![1..6;2, ..;3, 2..35;3]).to_owned().into_dyn(),
        ),
        ("::2,1,5:", a.slice(s![..;2, 1, 5..]).to_owned().into_dyn()),
        ("...,::5", a.slice(s![.., .., ..;5]).to_owned().into_dyn()),
        ("-1,...,30:", a.slice(s![6, .., 30..]).to_owned().into_dyn()),
        (
            "3,4,17",
            a.slice(s![3, 4, 17..18])
                .to_owned()
                .into_dyn()
                .into_shape_with_order(IxDyn(&[]))
                .unwrap(),
        ),
        (":,:,9:3", a.slice(s![.., .., 9..9]).to_owned().into_dyn()),
    ];
    let plain = d.path().join("plain.ra");
    rastore::write(&plain, &a).unwrap();
    let packed = d.path().join("packed.ra");
    rastore::WriteOptions::new()
        .compress(true)
        .write(&packed, &a)
        .unwrap();
    // The same data big-endian: the flag set, each value's bytes swapped.
    let swapped = d.path().join("swapped.ra");
    let mut bytes = std::fs::read(&plain).unwrap();
    bytes[8] |= 1;
    let data = rastore::header_len(3).unwrap() as usize;
    bytes[data..data + 2 * n]
        .chunks_exact_mut(2)
        .for_each(<[u8]>::reverse);
    std::fs::write(&swapped, &bytes).unwrap();
    for input in [&plain, &packed, &swapped] {
        for (spec, want) in &cases {
            let out = d.path().join("out.ra");
            ok(&["slice", s(input), s(&out), "--slice", spec, "--overwrite"]);
            let got: ArrayD<u16> = rastore::read(&out).unwrap();
            assert_eq!(&got, want, "{} {spec}", input.display());
        }
    }
}
