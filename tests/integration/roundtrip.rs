//! write → read / read_from / MappedRa::view give back the same logical array, for
//! every element type, 0 to 5 dims, C, Fortran and strided inputs.

use std::fmt::Debug;

use proptest::prelude::*;
use rastore::half::{bf16, f16};
use rastore::ndarray::{ArrayD, Axis, IxDyn, ShapeBuilder, Slice};
use rastore::num_complex::Complex;
use rastore::{Element, ErrorKind, MappedRa, ViewRefusal, WriteOptions};

use crate::common::tmp;

#[derive(Debug, Clone, Copy)]
enum Layout {
    C,
    F,
    Strided,
}

/// Logical element-by-element equality, by bytes (so NaNs compare).
fn same<T: Element>(a: impl IntoIterator<Item = T>, b: impl IntoIterator<Item = T>) -> bool {
    let a: Vec<T> = a.into_iter().collect();
    let b: Vec<T> = b.into_iter().collect();
    bytemuck::cast_slice::<T, u8>(&a) == bytemuck::cast_slice::<T, u8>(&b)
}

/// Builds an array from arbitrary bytes: `dims` in C or Fortran order, or for
/// `Strided` a C-order array twice as long (plus one) in axis 0, to be sliced.
fn build<T: Element>(dims: &[usize], layout: Layout, bytes: &[u8]) -> ArrayD<T> {
    let size = std::mem::size_of::<T>();
    let mut extended = dims.to_vec();
    if let (Layout::Strided, Some(d0)) = (layout, extended.first_mut()) {
        *d0 = 2 * *d0 + 1;
    }
    let m: usize = extended.iter().product();
    let vals: Vec<T> = (0..m)
        .map(|i| {
            let mut e = T::zeroed();
            let eb = bytemuck::bytes_of_mut(&mut e);
            for (k, b) in eb.iter_mut().enumerate() {
                *b = bytes[(i * size + k) % bytes.len()] ^ (i as u8).wrapping_mul(31);
            }
            e
        })
        .collect();
    match layout {
        Layout::C | Layout::Strided => ArrayD::from_shape_vec(IxDyn(&extended), vals).unwrap(),
        Layout::F => ArrayD::from_shape_vec(IxDyn(&extended).f(), vals).unwrap(),
    }
}

fn round_trip<T: Element + Debug>(dims: &[usize], layout: Layout, bytes: &[u8]) {
    let base = build::<T>(dims, layout, bytes);
    let src = match layout {
        Layout::Strided if !dims.is_empty() => base.slice_axis(Axis(0), Slice::new(1, None, 2)),
        _ => base.view(),
    };
    assert_eq!(src.shape(), dims);
    let a = src.to_owned();
    let dir = tmp();
    let path = dir.path().join("a.ra");
    rastore::write(&path, &src).unwrap();
    let back: ArrayD<T> = rastore::read(&path).unwrap();
    assert_eq!(back.shape(), a.shape());
    assert!(same(back.iter().copied(), a.iter().copied()), "read");

    let mut stream = Vec::new();
    rastore::write_to(&mut stream, &src).unwrap();
    assert_eq!(stream, std::fs::read(&path).unwrap(), "write_to == write");
    let from: ArrayD<T> = rastore::read_from(&stream[..]).unwrap();
    assert!(same(from.iter().copied(), a.iter().copied()), "read_from");

    // SAFETY: the file is private to this test and not modified while mapped.
    let file = unsafe { MappedRa::open(&path) }.unwrap();
    // i128/u128 sit at 48 + 8·ndims: 16-aligned only for even ndims. Empty data is
    // always viewable.
    let aligned_ok = std::mem::align_of::<T>() <= 8 || dims.len().is_multiple_of(2) || a.is_empty();
    match file.view::<T>() {
        Ok(v) => {
            assert!(aligned_ok);
            assert_eq!(v.shape(), a.shape());
            assert!(same(v.iter().copied(), a.iter().copied()), "view");
        }
        Err(e) => {
            assert!(!aligned_ok, "{e}");
            assert!(matches!(
                e.kind(),
                ErrorKind::NotViewable {
                    reason: ViewRefusal::Misaligned { align: 16 }
                }
            ));
        }
    }

    let zpath = dir.path().join("z.ra");
    WriteOptions::new()
        .compress(true)
        .metadata(b"trailer".to_vec())
        .write(&zpath, &src)
        .unwrap();
    let z: ArrayD<T> = rastore::read(&zpath).unwrap();
    assert!(same(z.iter().copied(), a.iter().copied()), "lz4");
    assert_eq!(rastore::read_raw(&zpath).unwrap().metadata, b"trailer");
}

fn dims_strategy() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..5, 0..=5)
        .prop_filter("small", |d| d.iter().product::<usize>() <= 512)
}

fn layout_strategy() -> impl Strategy<Value = Layout> {
    prop_oneof![Just(Layout::C), Just(Layout::F), Just(Layout::Strided)]
}

macro_rules! round_trips {
    ($($name:ident: $t:ty),* $(,)?) => {
        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]
            $(
                #[test]
                fn $name(dims in dims_strategy(), layout in layout_strategy(),
                         bytes in prop::collection::vec(any::<u8>(), 1..64)) {
                    round_trip::<$t>(&dims, layout, &bytes);
                }
            )*
        }
    };
}

round_trips! {
    rt_i8: i8, rt_i16: i16, rt_i32: i32, rt_i64: i64, rt_i128: i128,
    rt_u8: u8, rt_u16: u16, rt_u32: u32, rt_u64: u64, rt_u128: u128,
    rt_f16: f16, rt_bf16: bf16, rt_f32: f32, rt_f64: f64,
    rt_c32: Complex<f16>, rt_c64: Complex<f32>, rt_c128: Complex<f64>,
    rt_user: [u8; 3],
}

/// A user composite type (eltype 0).
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
struct Point {
    x: f32,
    y: f32,
    id: u32,
}

impl Element for Point {
    const DTYPE: rastore::DType = rastore::DType::user(12);
}

#[test]
fn user_struct_round_trips_and_views() {
    let a = ArrayD::from_shape_fn(IxDyn(&[3, 2]), |ix| Point {
        x: ix[0] as f32,
        y: ix[1] as f32,
        id: (10 * ix[0] + ix[1]) as u32,
    });
    let dir = tmp();
    let path = dir.path().join("p.ra");
    rastore::write(&path, &a).unwrap();
    // SAFETY: private file.
    let file = unsafe { MappedRa::open(&path) }.unwrap();
    assert_eq!(file.header().dtype().name(), "user<12>");
    assert_eq!(file.view::<Point>().unwrap(), a);
    assert_eq!(file.view::<[u8; 12]>().unwrap().len(), 6);
    assert!(file.view::<[u8; 8]>().is_err());
}

#[test]
fn bytes_are_column_major_one_by_one() {
    // Logical [[1, 2, 3], [4, 5, 6]] in C order: column-major bytes are 1 4 2 5 3 6.
    let a = rastore::ndarray::arr2(&[[1u16, 2, 3], [4, 5, 6]]);
    let mut out = Vec::new();
    rastore::write_to(&mut out, &a).unwrap();
    let mut want = crate::common::words(&[rastore::MAGIC, 0, 2, 2, 12, 2, 2, 3]);
    for v in [1u16, 4, 2, 5, 3, 6] {
        want.extend(v.to_le_bytes());
    }
    assert_eq!(out, want);
    // The transposed view is Fortran-contiguous: a straight copy, same logical rule.
    let mut out_t = Vec::new();
    rastore::write_to(&mut out_t, &a.t()).unwrap();
    assert_eq!(&out_t[40..64], &crate::common::words(&[2, 3, 2])[..]);
    let body: Vec<u16> = out_t[64..]
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    assert_eq!(body, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn view_points_into_the_mapping() {
    let a = ArrayD::from_shape_fn(IxDyn(&[64, 32]), |ix| (ix[0] * 100 + ix[1]) as f64);
    let dir = tmp();
    let path = dir.path().join("zc.ra");
    rastore::write(&path, &a).unwrap();
    // SAFETY: private file.
    let file = unsafe { MappedRa::open(&path) }.unwrap();
    let v = file.view::<f64>().unwrap();
    let map = file.as_bytes().as_ptr_range();
    let data = file.data_bytes().as_ptr();
    let p = v.as_ptr() as *const u8;
    assert!(map.contains(&p));
    assert_eq!(p, data);
    assert_eq!(data as usize - map.start as usize, 64);
    assert_eq!(v.strides(), &[1, 64]);
    assert_eq!(v[[5, 7]], 507.0);
}

#[test]
fn view_ix_checks_the_dimensionality() {
    let a = rastore::ndarray::Array3::<i32>::zeros((2, 3, 4));
    let dir = tmp();
    let path = dir.path().join("d.ra");
    rastore::write(&path, &a).unwrap();
    // SAFETY: private file.
    let file = unsafe { MappedRa::open(&path) }.unwrap();
    assert_eq!(
        file.view_ix::<i32, rastore::ndarray::Ix3>().unwrap().dim(),
        (2, 3, 4)
    );
    let e = file.view_ix::<i32, rastore::ndarray::Ix2>().unwrap_err();
    assert!(matches!(
        e.kind(),
        ErrorKind::DimMismatch {
            expected: 2,
            actual: 3
        }
    ));
}

/// Unix: Windows refuses to replace a mapped file (see `platform`).
#[cfg(unix)]
#[test]
fn write_replaces_by_rename_and_a_live_mapping_keeps_its_data() {
    let dir = tmp();
    let path = dir.path().join("live.ra");
    rastore::write(&path, &rastore::ndarray::Array1::<u32>::from_elem(1000, 7)).unwrap();
    // SAFETY: the file is replaced by rename below, never modified in place; that is
    // exactly the property under test.
    let old = unsafe { MappedRa::open(&path) }.unwrap();
    WriteOptions::new()
        .durable(true)
        .write(&path, &rastore::ndarray::Array1::<u32>::from_elem(1000, 9))
        .unwrap();
    assert!(old.view::<u32>().unwrap().iter().all(|&x| x == 7));
    let new: ArrayD<u32> = rastore::read(&path).unwrap();
    assert!(new.iter().all(|&x| x == 9));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["live.ra"], "no temporary file left behind");
}

#[test]
fn failed_write_names_the_path_and_leaves_nothing() {
    let dir = tmp();
    let path = dir.path().join("missing-dir").join("x.ra");
    let e = rastore::write(&path, &rastore::ndarray::Array1::<u8>::zeros(3)).unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Io { op: "create", .. }),
        "{e}"
    );
    assert!(e.to_string().contains("missing-dir"), "{e}");
}

#[test]
fn large_c_order_transpose_matches_naive() {
    // Big enough for the blocked path (two 256 × 256 tiles, ragged 8 × 8 blocks).
    let a = ArrayD::from_shape_fn(IxDyn(&[263, 3, 130]), |ix| {
        (ix[0] * 1_000_000 + ix[1] * 1000 + ix[2]) as u32
    });
    let mut out = Vec::new();
    rastore::write_to(&mut out, &a).unwrap();
    let body: &[u8] = &out[48 + 24..];
    let naive: Vec<u32> = a.t().iter().copied().collect();
    assert_eq!(body, bytemuck::cast_slice::<u32, u8>(&naive));
}

#[test]
fn headers_longer_than_the_first_read_open_and_view() {
    // `MappedRa::open` reads 512 bytes first: 58 dims fit, 59 and 70 need a second read.
    let dir = tmp();
    for ndims in [57usize, 58, 59, 70] {
        let mut dims = vec![1usize; ndims];
        dims[0] = 3;
        dims[ndims - 1] = 2;
        let a = ArrayD::from_shape_fn(IxDyn(&dims), |ix| (ix[0] * 10 + ix[ndims - 1]) as i16);
        let path = dir.path().join(format!("d{ndims}.ra"));
        rastore::write(&path, &a).unwrap();
        // SAFETY: private file.
        let file = unsafe { MappedRa::open(&path) }.unwrap();
        assert_eq!(file.header().dims().len(), ndims);
        assert_eq!(file.view::<i16>().unwrap(), a.view(), "{ndims} dims");
    }
}

#[test]
fn large_c_order_write_reorders_on_a_second_thread_and_matches_naive() {
    // 16 MiB of f32: four 4 MiB pieces, enough for the pipelined writer.
    let a = rastore::ndarray::Array2::from_shape_fn((2048, 2048), |(i, j)| (i * 2048 + j) as u32);
    let mut out = Vec::new();
    rastore::write_to(&mut out, &a).unwrap();
    let body: &[u8] = &out[48 + 16..];
    let naive: Vec<u32> = a.t().iter().copied().collect();
    assert_eq!(body.len(), 4 * naive.len());
    assert!(body == bytemuck::cast_slice::<u32, u8>(&naive));
}

/// A writer that fails once `limit` bytes have gone through it.
struct FailAfter {
    written: usize,
    limit: usize,
}

impl std::io::Write for FailAfter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.written + buf.len() > self.limit {
            return Err(std::io::Error::other("disk full (test)"));
        }
        self.written += buf.len();
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_writer_stops_the_pipelined_reorder_with_its_error() {
    let a = rastore::ndarray::Array2::<f32>::zeros((2048, 2048));
    for limit in [0, 100, 5 << 20, 13 << 20] {
        let mut w = FailAfter { written: 0, limit };
        let e = rastore::write_to(&mut w, &a).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Io { op: "write", .. }), "{e}");
        assert!(e.to_string().contains("disk full (test)"), "{e}");
        assert!(w.written <= limit);
    }
}

#[test]
fn a_leb128_file_refuses_a_trailer_and_keeps_its_data_when_rewritten() {
    // Julia's LEB128 (flag 2, size == nbytes): int32 [1, -2], zig-zag coded as 2, 3.
    let mut bytes: Vec<u8> = [rastore::MAGIC, 2, 1, 4, 8, 1, 2]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    bytes.extend([2, 3]);
    let dir = tmp();
    let p = dir.path().join("leb.ra");
    std::fs::write(&p, &bytes).unwrap();
    let e = rastore::replace_metadata(&p, b"---\nx: 1\n").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Unsupported(_)), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), bytes, "refused: file untouched");
    rastore::replace_metadata(&p, b"").unwrap();
    // A new number of dims rewrites the file: the data runs to its end, copied whole.
    let h = rastore::reshape(&p, &[1, 2]).unwrap();
    assert_eq!(h.dims(), &[1, 2]);
    let back: ArrayD<i32> = rastore::read(&p).unwrap();
    assert_eq!(back.shape(), &[1, 2]);
    assert_eq!(back.iter().copied().collect::<Vec<_>>(), [1, -2]);
}
