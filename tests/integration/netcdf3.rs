//! NetCDF-3 through the real `ra`, judged by netCDF4-python, SciPy and xarray: files of
//! every type, ranks 0 to 4, record and fixed variables, CDF-1, CDF-2 and CDF-5 (and a
//! STREAMING one) convert into dataset folders that xarray reads identically (read by
//! the judge as FORMAT.md §10 says, not by rastore), into `.npz`, Zarr groups and back;
//! one variable is `x.nc/NAME` in every read command and `ra refs`. Hostile files exit
//! 1 naming the file and the field, and leave nothing.

use std::ffi::OsStr;
use std::path::Path;

use crate::cli::ra;
use crate::common::{python, python_has, tmp};

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/scripts/netcdf3_fixtures.py"
);

/// `ra args`, which must succeed: its stdout.
fn ok<S: AsRef<OsStr>>(args: &[S]) -> String {
    let out = ra().args(args).output().unwrap();
    let shown: Vec<_> = args.iter().map(|a| a.as_ref().to_string_lossy()).collect();
    assert!(
        out.status.success(),
        "ra {shown:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn judge(args: &[&Path]) -> String {
    let mut all = vec![SCRIPT];
    all.extend(args.iter().map(|p| p.to_str().unwrap()));
    python(&all)
}

#[test]
fn files_of_every_version_convert_to_folders_xarray_reads_identically() {
    if !python_has("numpy, scipy, netCDF4, xarray, yaml, zarr, fsspec") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    python(&[SCRIPT, "make", d.to_str().unwrap()]);
    let cases = std::fs::read_to_string(d.join("cases.txt")).unwrap();
    let mut n = 0;
    for line in cases.lines() {
        let mut words = line.split(' ');
        let (name, file) = (words.next().unwrap(), words.next().unwrap());
        let judges: Vec<&str> = words.collect();
        let nc = d.join(file);
        // The STREAMING file is judged by the file it was made from (no peer reads it).
        let reference = match judges.as_slice() {
            [j] if j.ends_with(".nc") => d.join(j),
            _ => nc.clone(),
        };
        let first = match judges[0].ends_with(".nc") {
            true => "netcdf4",
            false => judges[0],
        };
        let folder = d.join(name);
        ok(&[OsStr::new("convert"), nc.as_os_str(), folder.as_os_str()]);
        let mut args = vec![
            SCRIPT,
            "folder",
            nc.to_str().unwrap(),
            folder.to_str().unwrap(),
        ];
        args.extend(&judges);
        let text = python(&args);
        assert!(text.contains("identical: "), "{text}");
        // Into NumPy's archive, a Zarr group (from the file, and from the folder), and
        // from the Zarr group back into a folder.
        let npz = d.join(format!("{name}.npz"));
        ok(&[OsStr::new("convert"), nc.as_os_str(), npz.as_os_str()]);
        assert!(judge(&[Path::new("npz"), &reference, &npz]).contains("equal: "));
        let zarr = d.join(format!("{name}.zarr"));
        ok(&[OsStr::new("convert"), nc.as_os_str(), zarr.as_os_str()]);
        assert!(judge(&[Path::new("zarr"), &reference, &zarr]).contains("equal: "));
        let zarr2 = d.join(format!("{name}.2.zarr"));
        ok(&[OsStr::new("convert"), folder.as_os_str(), zarr2.as_os_str()]);
        let back = d.join(format!("{name}.back"));
        ok(&[OsStr::new("convert"), zarr2.as_os_str(), back.as_os_str()]);
        let text = judge(&[Path::new("back"), &reference, &back, Path::new(first)]);
        assert!(text.contains("identical but attribute types"), "{text}");
        // The whole file in place: kerchunk references read by fsspec.
        let refs = d.join(format!("{name}.json"));
        ok(&[
            OsStr::new("refs"),
            nc.as_os_str(),
            OsStr::new("-o"),
            refs.as_os_str(),
        ]);
        assert!(judge(&[Path::new("refs"), &reference, &refs]).contains("equal: "));
        n += 1;
    }
    assert_eq!(n, 6, "every case ran");
}

#[test]
fn one_variable_is_named_in_every_read_command() {
    if !python_has("numpy, scipy, netCDF4, xarray, yaml, zarr, fsspec") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    python(&[SCRIPT, "make", d.to_str().unwrap()]);
    let nc = d.join("n4_64bit_offset.nc");
    // `packed` is a record variable interleaved with others; `lat` a fixed one; the
    // file's info first, then a line per variable, the record dimension said.
    let info = ok(&[OsStr::new("info"), nc.as_os_str()]);
    assert!(
        info.contains("netcdf3 CDF-2 56 variables, 3 records of"),
        "{info}"
    );
    assert!(
        info.contains("packed: int16 [3, 2, 3] bytes 36 netcdf3 CDF-2 NC_SHORT dims [time (record), x, y] C-order records of 12 bytes every"),
        "{info}"
    );
    let json = ok(&[
        OsStr::new("info"),
        OsStr::new("--json"),
        nc.join("lat").as_os_str(),
    ]);
    assert!(
        json.contains("\"dim_names\": [\"x\", \"y\"], \"record\": false"),
        "{json}"
    );
    for var in ["packed", "lat", "i1_1d_rec", "S1_3d_rec", "f8_0d_fix"] {
        let v = nc.join(var);
        let described = ok(&[OsStr::new("describe"), v.as_os_str()]);
        assert!(described.contains("format: netcdf3"), "{described}");
        assert!(described.contains("dimcoords:"), "{described}");
        let verified = ok(&[OsStr::new("verify"), v.as_os_str()]);
        assert!(verified.contains(": ok ("), "{verified}");
        let npy = d.join(format!("{var}.npy"));
        ok(&[OsStr::new("convert"), v.as_os_str(), npy.as_os_str()]);
        let text = judge(&[Path::new("npy"), &nc, Path::new(var), &npy]);
        assert!(text.contains("equal: "), "{text}");
    }
    let v = nc.join("packed");
    let described = ok(&[OsStr::new("describe"), v.as_os_str()]);
    assert!(described.contains("scale_factor: 0.25"), "{described}");
    assert!(described.contains("record_stride:"), "{described}");
    let stats = ok(&[OsStr::new("stats"), v.as_os_str()]);
    assert!(stats.starts_with("count 18 min -32767"), "{stats}");
    let cat = ok(&[OsStr::new("cat"), OsStr::new("--json"), v.as_os_str()]);
    assert!(cat.starts_with('['), "{cat}");
    // The variable against its converted .ra: equal; one plane of it sliced by name.
    let folder = d.join("f");
    ok(&[OsStr::new("convert"), nc.as_os_str(), folder.as_os_str()]);
    let same = ok(&[
        OsStr::new("diff"),
        v.as_os_str(),
        folder.join("packed.ra").as_os_str(),
    ]);
    assert!(same.contains("same: int16 [3, 2, 3]"), "{same}");
    let plane = d.join("plane.ra");
    ok(&[
        OsStr::new("slice"),
        OsStr::new("--slice"),
        OsStr::new("1,:,:"),
        v.as_os_str(),
        plane.as_os_str(),
    ]);
    assert_eq!(rastore::read_raw(&plane).unwrap().header.dims(), [2, 3]);
    // Whole files: a folder of the file's variables, and `ra verify` of each.
    let verified = ok(&[OsStr::new("verify"), nc.as_os_str()]);
    assert_eq!(verified.lines().count(), 56, "{verified}");
    // In place: one variable's references, a record variable a chunk per record.
    let refs = ok(&[OsStr::new("refs"), v.as_os_str()]);
    assert!(refs.contains("\"packed/2.0.0\""), "{refs}");
    // Not an output: NetCDF is written by xarray from a folder.
    let out = ra()
        .args([
            OsStr::new("convert"),
            folder.as_os_str(),
            d.join("x.nc").as_os_str(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("to_netcdf"));
    assert!(!d.join("x.nc").exists());
}

/// Each hostile file: `ra convert` and `ra info` exit 1 naming the file and the field,
/// and leave nothing.
#[test]
fn hostile_files_are_refused_naming_file_and_field() {
    if !python_has("numpy, netCDF4") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    python(&[SCRIPT, "hostile", d.to_str().unwrap()]);
    let list = std::fs::read_to_string(d.join("hostile.txt")).unwrap();
    let mut n = 0;
    for line in list.lines() {
        let (file, field) = line.split_once(' ').unwrap_or((line, ""));
        let path = d.join(file);
        let out_dir = d.join(format!("{file}.out"));
        for args in [
            vec![OsStr::new("convert"), path.as_os_str(), out_dir.as_os_str()],
            vec![OsStr::new("info"), path.as_os_str()],
        ] {
            let out = ra().args(&args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{file}: {err}");
            assert!(
                err.contains(file) && err.contains(field),
                "{file} [{field}]: {err}"
            );
            assert!(!err.contains("panicked"), "{file}: {err}");
        }
        assert!(
            !out_dir.exists(),
            "{file}: a failed conversion left its output"
        );
        n += 1;
    }
    assert_eq!(n, 24, "every hostile file ran");
    let left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(left.is_empty(), "scratch files left: {left:?}");
}

/// A NetCDF-3 file of no dimensions, attributes or variables converts into an empty
/// dataset (a `dataset.yaml` of no attributes, FORMAT.md §10), which converts on (into
/// an empty Zarr group), not into an empty folder that is no dataset.
#[test]
fn a_file_of_no_variables_is_an_empty_dataset() {
    let dir = tmp();
    let nc = dir.path().join("empty.nc");
    // Magic, no records, and the three lists ABSENT (a zero tag and a zero count each).
    let mut bytes = b"CDF\x01".to_vec();
    bytes.extend_from_slice(&[0u8; 4 + 3 * 8]);
    std::fs::write(&nc, bytes).unwrap();
    let out = dir.path().join("out");
    ok(&[OsStr::new("convert"), nc.as_os_str(), out.as_os_str()]);
    let yaml = std::fs::read_to_string(out.join("dataset.yaml")).unwrap();
    assert!(yaml.contains("attributes: {}"), "{yaml}");
    let zarr = dir.path().join("out.zarr");
    ok(&[OsStr::new("convert"), out.as_os_str(), zarr.as_os_str()]);
    assert!(zarr.join("zarr.json").is_file());
}
