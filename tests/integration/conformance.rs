//! Every reference file opens and agrees with MANIFEST.md.

use std::path::Path;

use md5::{Digest, Md5};
use rastore::ndarray::ArrayD;
use rastore::num_complex::Complex;
use rastore::{DType, Element, MappedRa};

use crate::common::conformance_dir;

struct Row {
    file: String,
    dtype: String,
    dims: Vec<u64>,
    flags: u64,
    size: u64,
    trailer: usize,
    md5: String,
}

fn manifest(dir: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(dir.join("MANIFEST.md")).unwrap();
    text.lines()
        .filter(|l| l.starts_with("| ") && l.contains(".ra"))
        .map(|l| {
            let c: Vec<&str> = l.split('|').map(str::trim).collect();
            Row {
                file: c[1].to_string(),
                dtype: c[2].to_string(),
                dims: c[3]
                    .trim_matches(|ch| ch == '[' || ch == ']')
                    .split(',')
                    .map(|d| d.trim().parse().unwrap())
                    .collect(),
                flags: c[4].parse().unwrap(),
                size: c[5].parse().unwrap(),
                trailer: c[6].parse().unwrap(),
                md5: c[7].to_string(),
            }
        })
        .collect()
}

/// The view (where possible) and the owned read agree; returns the owned array.
fn both<T: Element + PartialEq + std::fmt::Debug>(file: &MappedRa, path: &Path) -> ArrayD<T> {
    let owned: ArrayD<T> = rastore::read(path).unwrap();
    let dims: Vec<usize> = file.header().dims().iter().map(|&d| d as usize).collect();
    assert_eq!(owned.shape(), &dims[..]);
    if file.header().encoding() == rastore::Encoding::Raw {
        let v = file.view::<T>().unwrap();
        assert_eq!(v, owned, "{}", path.display());
    } else {
        assert!(matches!(
            file.view::<T>().unwrap_err().kind(),
            rastore::ErrorKind::NotViewable { .. }
        ));
    }
    assert_eq!(file.to_owned::<T>().unwrap(), owned);
    owned
}

#[test]
fn every_file_agrees_with_the_manifest() {
    let Some(dir) = conformance_dir() else { return };
    let rows = manifest(&dir);
    assert_eq!(rows.len(), 16, "manifest rows");
    for row in &rows {
        let path = dir.join(&row.file);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(
            format!("{:x}", Md5::digest(&bytes)),
            row.md5,
            "{}",
            row.file
        );
        // SAFETY: the conformance files are read-only inputs; nothing modifies them.
        let file = unsafe { MappedRa::open(&path) }.unwrap();
        let h = file.header();
        assert_eq!(h.dtype().name(), row.dtype, "{}", row.file);
        assert_eq!(h.dtype(), row.dtype.parse::<DType>().unwrap());
        assert_eq!(h.dims(), &row.dims[..], "{}", row.file);
        assert_eq!(h.flags().0, row.flags, "{}", row.file);
        assert_eq!(h.size(), row.size, "{}", row.file);
        assert_eq!(file.metadata().len(), row.trailer, "{}", row.file);
        assert_eq!(file.as_bytes(), &bytes[..]);
        let raw = rastore::read_raw(&path).unwrap();
        assert_eq!(raw.data.len() as u64, h.nbytes());
        match h.dtype() {
            DType::U8 => drop(both::<u8>(&file, &path)),
            DType::I8 => drop(both::<i8>(&file, &path)),
            DType::I32 => drop(both::<i32>(&file, &path)),
            DType::U32 => drop(both::<u32>(&file, &path)),
            DType::I64 => drop(both::<i64>(&file, &path)),
            DType::F16 => drop(both::<rastore::half::f16>(&file, &path)),
            DType::F32 => drop(both::<f32>(&file, &path)),
            DType::F64 => drop(both::<f64>(&file, &path)),
            DType::C64 => drop(both::<Complex<f32>>(&file, &path)),
            DType::C128 => drop(both::<Complex<f64>>(&file, &path)),
            other => panic!("{}: unexpected type {other}", row.file),
        }
    }
}

#[test]
fn compressed_twins_decode_to_their_twins() {
    let Some(dir) = conformance_dir() else { return };
    let mut pairs = 0;
    for row in manifest(&dir).iter().filter(|r| r.file.ends_with("_z.ra")) {
        let z: ArrayD<u8> = rastore::read(dir.join(&row.file)).unwrap();
        let twin: ArrayD<u8> = rastore::read(dir.join(row.file.replace("_z.ra", ".ra"))).unwrap();
        assert_eq!(z, twin, "{}", row.file);
        let raw = rastore::read_raw(dir.join(&row.file)).unwrap();
        assert_eq!(raw.header.encoding(), rastore::Encoding::Lz4);
        pairs += 1;
    }
    assert_eq!(pairs, 2);
}

#[test]
fn test_ra_holds_k_minus_i_over_k() {
    let Some(dir) = conformance_dir() else { return };
    let path = dir.join("test.ra");
    // SAFETY: read-only input.
    let file = unsafe { MappedRa::open(&path) }.unwrap();
    let v = file.view::<Complex<f32>>().unwrap();
    assert_eq!(v.shape(), &[3, 4]);
    // File order is column-major: element k is at [k % 3, k / 3].
    for k in 0..12usize {
        let z = v[[k % 3, k / 3]];
        assert_eq!(z.re, k as f32, "re of {k}");
        assert_eq!(z.im, -1.0 / k as f32, "im of {k}");
    }
    assert_eq!(v[[0, 0]].im, f32::NEG_INFINITY);
    let flat: Vec<Complex<f32>> = v.t().iter().copied().collect();
    assert_eq!(flat[11], Complex::new(11.0, -1.0 / 11.0));
}

#[test]
fn shepp_logan_is_a_phantom_in_unit_range() {
    let Some(dir) = conformance_dir() else { return };
    // SAFETY: read-only input.
    let file = unsafe { MappedRa::open(dir.join("shepplogan.ra")) }.unwrap();
    let v = file.view_ix::<f64, rastore::ndarray::Ix2>().unwrap();
    let (min, max) = v
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    // Background is 2^-23 (single-precision epsilon), the skull 1.0, tissue in steps of 0.1.
    assert_eq!(min, f64::from(f32::EPSILON));
    assert_eq!(max, 1.0);
    assert_eq!(v[[0, 0]], min, "outside the head");
    assert!(
        (v[[128, 128]] - 0.2).abs() < 1e-12,
        "inside the head: {}",
        v[[128, 128]]
    );
}
