//! NIfTI-1 and NIfTI-2 through the real `ra`, judged by nibabel: images of every
//! datatype nibabel writes, ranks 1 to 7, both byte orders, `.nii`, `.nii.gz` and
//! pairs, converted to `.ra` and back (and through `.npy` and Zarr), header field by
//! field; hostile headers refused naming the file and the field, nothing left behind.

use std::path::Path;

use ndarray::ShapeBuilder;
use rastore::formats::nifti::header::NiftiHeader;

use crate::cli::ra;
use crate::common::{python, python_has, tmp};

const JUDGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/nifti_judge.py");

fn convert(a: &Path, b: &Path) {
    let out = ra().arg("convert").arg(a).arg(b).output().unwrap();
    assert!(
        out.status.success(),
        "ra convert {} {}: {}",
        a.display(),
        b.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn nibabel_images_convert_to_ra_and_back_unchanged() {
    if !python_has("nibabel, numpy") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    python(&[JUDGE, "make", d.to_str().unwrap()]);
    let cases = std::fs::read_to_string(d.join("cases.txt")).unwrap();
    let mut n = 0;
    for (k, line) in cases.lines().enumerate() {
        let (name, file) = line.split_once(' ').unwrap();
        let ra_path = d.join(format!("{name}.ra"));
        convert(&d.join(file), &ra_path);
        // Back to NIfTI: from the .ra, or through Zarr (the attributes as JSON).
        let back = d.join(format!(
            "{name}.back.nii{}",
            if k % 2 == 0 { "" } else { ".gz" }
        ));
        if k % 3 == 0 {
            let z = d.join(format!("{name}.zarr"));
            convert(&ra_path, &z);
            convert(&z, &back);
        } else {
            convert(&ra_path, &back);
        }
        convert(&ra_path, &d.join(format!("{name}.npy")));
        // The .ra holds the raw values, column-major, as the image stores them.
        let raw = rastore::read_raw(&ra_path).unwrap();
        assert!(!raw.header.dims().is_empty(), "{name}");
        n += 1;
    }
    assert_eq!(n, 100, "every case ran");
    let report = python(&[JUDGE, "check", d.to_str().unwrap()]);
    assert!(report.contains("200 checked; 0 mismatches"), "{report}");
}

/// A valid little-endian NIfTI-1 `.nii` of int16 `[2, 3, 4]`: the header, then 48
/// bytes of data.
fn valid() -> Vec<u8> {
    let h = NiftiHeader::new(1, 4, &[2, 3, 4]);
    let mut b = h.encode(&[]);
    b.extend((0..24i16).flat_map(|v| v.to_le_bytes()));
    b
}

fn set(b: &mut [u8], at: usize, bytes: &[u8]) {
    b[at..at + bytes.len()].copy_from_slice(bytes);
}

/// Each hostile image: `ra convert` exits 1 naming the file and the field, and
/// leaves nothing.
#[test]
fn hostile_headers_are_refused_naming_file_and_field() {
    let mut cases: Vec<(&str, Vec<u8>, &str)> = Vec::new();
    let mut b = valid();
    set(&mut b, 108, &1.0e9f32.to_le_bytes());
    cases.push(("vox_offset_past_end.nii", b, "vox_offset"));
    let mut b = valid();
    set(&mut b, 108, &100f32.to_le_bytes());
    cases.push(("vox_offset_in_header.nii", b, "vox_offset"));
    let mut b = valid();
    set(&mut b, 46, &4000i16.to_le_bytes());
    cases.push(("dims_lie.nii", b, "dim"));
    let mut b = valid();
    set(&mut b, 44, &(-3i16).to_le_bytes());
    cases.push(("negative_dim.nii", b, "dim[2]"));
    let mut b = valid();
    set(&mut b, 40, &9i16.to_le_bytes());
    cases.push(("nine_axes.nii", b, "dim[0]"));
    let mut b = valid();
    b.truncate(352 + 10);
    cases.push(("truncated.nii", b, "dim"));
    let mut b = valid();
    set(&mut b, 70, &3i16.to_le_bytes());
    cases.push(("unknown_datatype.nii", b, "datatype"));
    let mut b = valid();
    set(&mut b, 70, &1536i16.to_le_bytes());
    cases.push(("float128.nii", b, "float128"));
    let mut b = valid();
    set(&mut b, 70, &2048i16.to_le_bytes());
    cases.push(("complex256.nii", b, "complex256"));
    let mut b = valid();
    set(&mut b, 344, b"n+3\0");
    cases.push(("bad_magic.nii", b, "magic"));
    let mut b = valid();
    set(&mut b, 0, &349i32.to_le_bytes());
    cases.push(("sizeof_hdr.nii", b, "sizeof_hdr"));
    // An extension whose size runs past the data's offset.
    let mut b = valid();
    b.splice(352..352, vec![0u8; 32]);
    set(&mut b, 108, &384f32.to_le_bytes());
    set(&mut b, 348, &[1, 0, 0, 0]);
    set(&mut b, 352, &4096i32.to_le_bytes());
    cases.push(("extension.nii", b, "extension 0 esize"));
    // NIfTI-2 claiming 2^60 × 2^4 voxels, and 2^60 in a file of a few bytes.
    let mut h = NiftiHeader::new(2, 2, &[1 << 60, 1 << 4]);
    h.pixdim = [1.0; 8];
    let mut b = h.encode(&[]);
    b.extend([0u8; 16]);
    cases.push(("overflow.nii", b, "dim"));
    let h = NiftiHeader::new(2, 2, &[1 << 60]);
    let mut b = h.encode(&[]);
    b.extend([0u8; 16]);
    cases.push(("claims_2_60.nii", b, "dim"));
    // A .nii.gz whose stream stops inside the data.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &valid()[..380]).unwrap();
    cases.push(("short.nii.gz", gz.finish().unwrap(), "dim"));

    for (name, bytes, field) in cases {
        let dir = tmp();
        let input = dir.path().join(name);
        std::fs::write(&input, &bytes).unwrap();
        for out_name in ["out.ra", "out.nii", "out.npy"] {
            let output = dir.path().join(out_name);
            let o = ra()
                .arg("convert")
                .arg(&input)
                .arg(&output)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(1), "{name}: {err}");
            assert!(err.contains(name), "{name}: names the file: {err}");
            assert!(err.contains(field), "{name}: names {field}: {err}");
            assert!(!err.contains("panicked"), "{name}: {err}");
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(left.len(), 1, "{name}: nothing left behind");
        }
    }
}

#[test]
fn an_array_without_nifti_attributes_gets_nibabels_defaults() {
    if !python_has("nibabel, numpy") {
        return;
    }
    let dir = tmp();
    let d = dir.path();
    let data: Vec<f32> = (0..24).map(|v| v as f32 * 0.5).collect();
    rastore::write(
        d.join("a.ra"),
        &ndarray::Array3::from_shape_vec((2, 3, 4).f(), data).unwrap(),
    )
    .unwrap();
    convert(&d.join("a.ra"), &d.join("a.nii"));
    let script = format!(
        "import nibabel as nib, numpy as np\n\
         i = nib.load({:?}); h = i.header\n\
         want = np.arange(24, dtype=np.float32).reshape(2, 3, 4, order='F') * 0.5\n\
         assert i.shape == (2, 3, 4) and i.get_data_dtype() == np.float32\n\
         assert np.array_equal(i.get_fdata(), want)\n\
         assert h['sform_code'] == 0 and h['qform_code'] == 0\n\
         assert list(h['pixdim']) == [1.0] * 8\n\
         base = nib.Nifti1Image(want, None).header.get_base_affine()\n\
         assert np.array_equal(i.affine, base), i.affine\n\
         print('ok')",
        d.join("a.nii")
    );
    assert!(python(&["-c", &script]).contains("ok"));
}

/// `.nii` and `.nii.gz` to and from object storage: uploaded whole, and downloaded
/// (a `.nii.gz` told by its inflated header, whatever the download is named).
#[test]
fn nifti_goes_to_and_from_object_storage() {
    let Some(server) = crate::s3_server::Server::start() else {
        return;
    };
    let options = rastore::convert::ConvertOptions::new()
        .remote(crate::s3_server::Server::options(&server.endpoint(), 0))
        .overwrite(true);
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    let a = ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[6, 5, 4]).f(), |i| {
        (i[0] * 7 + i[1] * 3 + i[2] * 100) as i16
    });
    rastore::write(p("a.ra"), &a).unwrap();
    for ext in ["nii", "nii.gz"] {
        let url = format!("s3://{}/a.{ext}", crate::s3_server::BUCKET);
        let url = Path::new(&url);
        rastore::convert::convert(&p("a.ra"), url, &options, &mut |_, _| ()).unwrap();
        let back = p("back.ra");
        rastore::convert::convert(url, &back, &options, &mut |_, _| ()).unwrap();
        assert_eq!(rastore::read::<i16>(&back).unwrap(), a, "{}", url.display());
    }
}

/// The read commands take a `.nii` (mapped) and a `.nii.gz` (inflated) as they take the
/// `.ra` converted from them.
#[test]
fn read_commands_take_nifti_images() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    let a = ndarray::ArrayD::from_shape_fn(ndarray::IxDyn(&[5, 4, 3]).f(), |i| {
        (i[0] as f32) - 1.5 * (i[1] as f32) + 10.0 * (i[2] as f32)
    });
    rastore::write(p("a.ra"), &a).unwrap();
    convert(&p("a.ra"), &p("a.nii"));
    convert(&p("a.ra"), &p("a.nii.gz"));
    let run = |args: &[&Path]| {
        let o = ra().args(args).output().unwrap();
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        text
    };
    // The .ra of the image keeps its header as attributes: the same metadata.
    convert(&p("a.nii"), &p("b.ra"));
    let stats = run(&[Path::new("stats"), &p("a.ra")]);
    for f in ["a.nii", "a.nii.gz"] {
        let info = run(&[Path::new("info"), &p(f)]);
        assert!(
            info.ends_with("float32 [5, 4, 3] bytes 240 nifti-1\n"),
            "{info}"
        );
        assert!(run(&[Path::new("describe"), &p(f)]).contains("sform_code: 0"));
        assert!(
            run(&[Path::new("verify"), &p(f)]).contains("ok (float32 [5, 4, 3], 240 data bytes")
        );
        assert_eq!(run(&[Path::new("stats"), &p(f)]), stats, "{f}");
        assert!(run(&[Path::new("diff"), &p(f), &p("b.ra")]).starts_with("same"));
    }
}
