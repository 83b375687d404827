//! The fill-in writer: preallocated files, mutable mappings, parallel and
//! multi-process fills.

use std::process::Command;

use rastore::ndarray::{ArrayD, Axis, IxDyn, ShapeBuilder};
use rastore::{CreateOptions, DType, ErrorKind, MappedRa, MappedRaMut};

use crate::common::{tmp, words, MAGIC};

/// Dims of the multi-process array: slabs of 12 × 10 × 8 = 960 bytes, so slab
/// offsets are not page-aligned.
const DIMS: [u64; 3] = [12, 10, 37];

/// The value of element (i, j, k) in every fill test.
fn value(i: usize, j: usize, k: usize) -> f64 {
    (i + 100 * j + 10_000 * k) as f64 + 0.5
}

fn fill_slab_range(path: &std::path::Path, start: u64, end: u64) {
    // SAFETY: each process maps a disjoint slab; nobody truncates the file.
    let mut slab = unsafe { MappedRaMut::open_slab(path, start..end) }.unwrap();
    assert_eq!(
        slab.view_mut::<f64>().unwrap().shape(),
        &[12, 10, (end - start) as usize]
    );
    slab.par_fill_slabs(|range, mut s| {
        for (k, mut plane) in range.zip(s.axis_iter_mut(Axis(2))) {
            plane
                .indexed_iter_mut()
                .for_each(|(ix, x)| *x = value(ix[0], ix[1], k));
        }
    })
    .unwrap();
    slab.flush().unwrap();
}

/// Run as a child process by `many_processes_fill_disjoint_slabs`.
#[test]
#[ignore = "a child process of many_processes_fill_disjoint_slabs"]
fn child_fill_slab() {
    let path = std::env::var("RASTORE_CHILD_PATH").expect("RASTORE_CHILD_PATH");
    let range = std::env::var("RASTORE_CHILD_RANGE").expect("RASTORE_CHILD_RANGE");
    let (a, b) = range.split_once("..").unwrap();
    fill_slab_range(path.as_ref(), a.parse().unwrap(), b.parse().unwrap());
}

#[test]
fn many_processes_fill_disjoint_slabs() {
    let dir = tmp();
    let path = dir.path().join("multi.ra");
    rastore::create_file(&path, DType::F64, &DIMS).unwrap();
    let bounds = [0u64, 7, 15, 16, 29, 37];
    let children: Vec<_> = bounds
        .windows(2)
        .map(|w| {
            Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "writer::child_fill_slab",
                    "--ignored",
                    "--test-threads=1",
                ])
                .env("RASTORE_CHILD_PATH", &path)
                .env("RASTORE_CHILD_RANGE", format!("{}..{}", w[0], w[1]))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    assert_eq!(children.len(), 5);
    for c in children {
        let out = c.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("1 passed"),
            "the child really ran: {stdout}"
        );
    }
    // SAFETY: all writers have exited; nobody modifies the file now.
    let file = unsafe { MappedRa::open(&path) }.unwrap();
    let v = file.view_ix::<f64, rastore::ndarray::Ix3>().unwrap();
    for ((i, j, k), &x) in v.indexed_iter() {
        assert_eq!(x, value(i, j, k), "element ({i}, {j}, {k})");
    }
    // The same fill in one process, through the whole mapping, gives the same bytes.
    let single = dir.path().join("single.ra");
    {
        // SAFETY: a fresh private file.
        let mut m = unsafe { MappedRaMut::create(&single, DType::F64, &DIMS) }.unwrap();
        let mut w = m.view_mut::<f64>().unwrap();
        w.indexed_iter_mut()
            .for_each(|(ix, x)| *x = value(ix[0], ix[1], ix[2]));
        m.flush().unwrap();
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        std::fs::read(&single).unwrap()
    );
}

#[test]
fn par_fill_slabs_and_flat_fill_match_the_obvious_loop() {
    let dir = tmp();
    let dims = [33u64, 17, 301];
    let naive = ArrayD::from_shape_fn(IxDyn(&[33, 17, 301]).f(), |ix| {
        (ix[0] + 33 * (ix[1] + 17 * ix[2])) as u32
    });
    let p = dir.path().join("slabs.ra");
    // SAFETY: a fresh private file.
    let mut m = unsafe { MappedRaMut::create(&p, DType::U32, &dims) }.unwrap();
    m.par_fill_slabs(|range, mut slab| {
        for (k, mut plane) in range.zip(slab.axis_iter_mut(Axis(2))) {
            plane
                .indexed_iter_mut()
                .for_each(|(ix, x)| *x = (ix[0] + 33 * (ix[1] + 17 * k)) as u32);
        }
    })
    .unwrap();
    assert_eq!(m.view::<u32>().unwrap(), naive);
    drop(m);
    let q = dir.path().join("flat.ra");
    // SAFETY: a fresh private file.
    let mut m = unsafe { MappedRaMut::create(&q, DType::U32, &dims) }.unwrap();
    m.par_fill(|off, chunk: &mut [u32]| {
        chunk
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = (off + i) as u32)
    })
    .unwrap();
    drop(m);
    assert_eq!(std::fs::read(&p).unwrap(), std::fs::read(&q).unwrap());
    // A slab's flat fill counts offsets in the whole file.
    // SAFETY: private file, no other mapping writes it now.
    let mut s = unsafe { MappedRaMut::open_slab(&q, 100..101) }.unwrap();
    s.par_fill(|off, chunk: &mut [u32]| {
        chunk
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = (off + i) as u32 * 2)
    })
    .unwrap();
    drop(s);
    let back: ArrayD<u32> = rastore::read(&q).unwrap();
    assert_eq!(back[[0, 0, 100]], 2 * 33 * 17 * 100);
    assert_eq!(back[[0, 0, 101]], 33 * 17 * 101);
}

#[test]
fn create_refuses_existing_paths_unless_asked() {
    let dir = tmp();
    let p = dir.path().join("x.ra");
    rastore::create_file(&p, DType::I16, &[4, 4]).unwrap();
    std::fs::write(&p, b"precious").unwrap();
    let e = rastore::create_file(&p, DType::I16, &[4, 4]).unwrap_err();
    assert!(e.to_string().contains("file exists"), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), b"precious");
    let h = CreateOptions::new()
        .overwrite(true)
        .metadata(b"---\nnote: hi\n".to_vec())
        .create_file(&p, DType::I16, &[4, 4])
        .unwrap();
    assert_eq!(h.dims(), &[4, 4]);
    // SAFETY: private file.
    let f = unsafe { MappedRa::open(&p) }.unwrap();
    assert_eq!(f.metadata(), b"---\nnote: hi\n");
    assert!(f.view::<i16>().unwrap().iter().all(|&x| x == 0));
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temp files left"
    );
}

#[test]
fn a_size_no_filesystem_holds_fails_at_create_and_leaves_nothing() {
    let dir = tmp();
    let p = dir.path().join("huge.ra");
    // 2^62 bytes.
    let e = rastore::create_file(&p, DType::U8, &[1 << 31, 1 << 31]).unwrap_err();
    assert!(
        matches!(
            e.kind(),
            ErrorKind::Io {
                op: "reserve space",
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("huge.ra"), "{e}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing left behind"
    );
}

#[test]
fn slab_ranges_types_and_bad_files_are_clear_errors() {
    let dir = tmp();
    let p = dir.path().join("s.ra");
    rastore::create_file(&p, DType::F32, &[4, 5]).unwrap();
    let open = |r: std::ops::Range<u64>| {
        // SAFETY: private file.
        unsafe { MappedRaMut::open_slab(&p, r) }
            .map(drop)
            .unwrap_err()
    };
    for (r, msg) in [(3..3, "3..3"), (4..6, "4..6"), (5..5, "5..5")] {
        let e = open(r);
        assert!(matches!(e.kind(), ErrorKind::InvalidArgument(_)), "{e}");
        assert!(
            e.to_string().contains(msg) && e.to_string().contains("0..5"),
            "{e}"
        );
    }
    // SAFETY: private file.
    let mut m = unsafe { MappedRaMut::open(&p) }.unwrap();
    assert!(matches!(
        m.view_mut::<f64>().unwrap_err().kind(),
        ErrorKind::TypeMismatch { .. }
    ));
    assert!(m
        .par_fill_slabs(|_, _: rastore::ndarray::ArrayViewMutD<'_, i32>| ())
        .is_err());
    drop(m);

    let bad = dir.path().join("bad.ra");
    std::fs::write(
        &bad,
        b"not a rawarray file at all, but long enough for the header",
    )
    .unwrap();
    // SAFETY: private file.
    let e = unsafe { MappedRaMut::open(&bad) }.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::NotRawArray { .. }), "{e}");
    let mut t = words(&[MAGIC, 0, 3, 4, 400, 1, 100]);
    t.extend([0; 10]);
    std::fs::write(&bad, &t).unwrap();
    // SAFETY: private file.
    let e = unsafe { MappedRaMut::open_slab(&bad, 0..1) }.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::TruncatedData { .. }), "{e}");
    let z = dir.path().join("z.ra");
    rastore::WriteOptions::new()
        .compress(true)
        .write(&z, &rastore::ndarray::Array2::<f32>::zeros((64, 4)))
        .unwrap();
    // SAFETY: private file.
    let e = unsafe { MappedRaMut::open_slab(&z, 0..1) }.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Unsupported(_)), "{e}");
    // A 0-d file has no slabs.
    let s0 = dir.path().join("s0.ra");
    rastore::create_file(&s0, DType::F32, &[]).unwrap();
    // SAFETY: private file.
    assert!(unsafe { MappedRaMut::open_slab(&s0, 0..1) }.is_err());
    // SAFETY: private file.
    let mut m0 = unsafe { MappedRaMut::open(&s0) }.unwrap();
    m0.view_mut::<f32>().unwrap()[[]] = 4.5;
    drop(m0);
    assert_eq!(rastore::read::<f32>(&s0).unwrap()[[]], 4.5);
}

#[test]
fn empty_arrays_create_and_view() {
    let dir = tmp();
    let p = dir.path().join("e.ra");
    // SAFETY: a fresh private file.
    let mut m = unsafe { MappedRaMut::create(&p, DType::F64, &[3, 0, 2]) }.unwrap();
    assert_eq!(m.view_mut::<f64>().unwrap().shape(), &[3, 0, 2]);
    m.par_fill_slabs(|_, s: rastore::ndarray::ArrayViewMutD<'_, f64>| assert_eq!(s.len(), 0))
        .unwrap();
    m.flush().unwrap();
    assert_eq!(std::fs::metadata(&p).unwrap().len(), 48 + 24);
}

#[test]
fn ra_create_makes_a_preallocated_zeroed_file() {
    let dir = tmp();
    let p = dir.path().join("c.ra");
    let ra = env!("CARGO_BIN_EXE_ra");
    let out = Command::new(ra)
        .args(["create"])
        .arg(&p)
        .args(["--dtype", "f32", "--shape", "64,32,3"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // SAFETY: private file.
    let f = unsafe { MappedRa::open(&p) }.unwrap();
    assert_eq!(f.header().dims(), &[64, 32, 3]);
    assert_eq!(f.header().dtype(), DType::F32);
    assert!(f.view::<f32>().unwrap().iter().all(|&x| x == 0.0));
    drop(f); // replaced next: Windows refuses that while mapped
             // Space is reserved, not sparse (Unix reports the blocks).
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        assert!(std::fs::metadata(&p).unwrap().blocks() * 512 >= 64 * 32 * 3 * 4);
    }
    let again = Command::new(ra)
        .args(["create"])
        .arg(&p)
        .args(["--dtype", "f32", "--shape", "2"])
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("file exists"));
    let forced = Command::new(ra)
        .args(["create", "--overwrite"])
        .arg(&p)
        .args(["--dtype", "c64", "--shape", "2"])
        .output()
        .unwrap();
    assert!(forced.status.success());
    assert_eq!(rastore::read_raw(&p).unwrap().header.dtype(), DType::C64);
    let bad = Command::new(ra)
        .args(["create"])
        .arg(dir.path().join("d.ra"))
        .args(["--dtype", "f7", "--shape", "2"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// Below half the memory `finished` writes nothing behind (the page cache keeps the
/// file); what it does past that is tested in src/writeback.rs. Here: the calls from
/// the pool's threads leave a fill that reads back whole.
#[test]
fn a_fill_written_behind_by_its_threads_reads_back_whole() {
    use rayon::prelude::*;
    let dir = tmp();
    let p = dir.path().join("behind.ra");
    let dims = [1000u64, 3, 700];
    // SAFETY: a fresh private file.
    let mut m = unsafe { MappedRaMut::create(&p, DType::U32, &dims) }.unwrap();
    let (data, behind) = m.data_mut_with_writeback();
    // Pieces not page-aligned, finished from the pool's threads as each is filled.
    let piece = 4 * 12_345;
    data.par_chunks_mut(piece).enumerate().for_each(|(k, c)| {
        for (i, x) in c.chunks_exact_mut(4).enumerate() {
            x.copy_from_slice(&((k * piece / 4 + i) as u32).to_ne_bytes());
        }
        behind.finished(k * piece..k * piece + c.len());
    });
    m.flush().unwrap();
    drop(m);
    let got: ArrayD<u32> = rastore::read(&p).unwrap();
    let want: Vec<u32> = (0..2_100_000u32).collect();
    assert_eq!(got.shape(), &[1000, 3, 700]);
    assert_eq!(got.t().iter().copied().collect::<Vec<_>>(), want);
}
