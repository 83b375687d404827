//! `rastore::scan`: every byte of the range, in order, in slabs of whole units, by
//! every method, with bounded buffers; errors end it without a hang.

use ndarray::ShapeBuilder;
use proptest::prelude::*;
use rastore::scan::{read_into, scan, scan_many, ScanMethod, ScanOptions};
use rastore::Stride;

use crate::common::{noise, tmp};

fn method(i: u8) -> ScanMethod {
    [ScanMethod::Buffered, ScanMethod::Direct][usize::from(i % 2)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_scan_gives_back_the_range_in_order_in_whole_units(
        len in 0usize..300_000,
        start_frac in 0.0f64..1.0,
        end_frac in 0.0f64..1.0,
        unit in 1usize..40,
        slab in 1usize..70_000,
        readers in 1usize..5,
        m in 0u8..2,
    ) {
        let d = tmp();
        let path = d.path().join("f.bin");
        let bytes = noise(len, len as u64 + 1);
        std::fs::write(&path, &bytes).unwrap();
        let a = (start_frac * len as f64) as usize;
        let b = a + ((end_frac * (len - a) as f64) as usize);
        let options = ScanOptions { method: method(m), slab_bytes: slab, readers };
        let mut got = Vec::new();
        let mut slabs = Vec::new();
        scan(&path, a as u64..b as u64, unit, &options, |offset, s| {
            assert_eq!(offset as usize, got.len(), "slabs in order, back to back");
            got.extend_from_slice(s);
            slabs.push(s.len());
            Ok(())
        })
        .unwrap();
        prop_assert_eq!(&got[..], &bytes[a..b]);
        if let Some((_, whole)) = slabs.split_last() {
            prop_assert!(whole.iter().all(|n| n % unit == 0 && n % 4096 == 0), "{:?}", slabs);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Two files in lockstep: each call gets the same offset of both, in order.
    #[test]
    fn a_lockstep_scan_gives_both_ranges_slab_for_slab(
        len in 0usize..200_000,
        lead_a in 0usize..5000,
        lead_b in 0usize..5000,
        unit in 1usize..20,
        slab in 1usize..50_000,
        readers in 1usize..4,
        m in 0u8..2,
    ) {
        let d = tmp();
        let (pa, pb) = (d.path().join("a.bin"), d.path().join("b.bin"));
        let (a, b) = (noise(lead_a + len, 5), noise(lead_b + len, 6));
        std::fs::write(&pa, &a).unwrap();
        std::fs::write(&pb, &b).unwrap();
        let options = ScanOptions { method: method(m), slab_bytes: slab, readers };
        let (mut got_a, mut got_b) = (Vec::new(), Vec::new());
        let sources = [
            (pa.as_path(), lead_a as u64..(lead_a + len) as u64),
            (pb.as_path(), lead_b as u64..(lead_b + len) as u64),
        ];
        scan_many(&sources, unit, &options, |offset, slabs| {
            assert_eq!(offset as usize, got_a.len());
            assert_eq!(slabs[0].len(), slabs[1].len());
            got_a.extend_from_slice(slabs[0]);
            got_b.extend_from_slice(slabs[1]);
            Ok(())
        })
        .unwrap();
        prop_assert_eq!(&got_a[..], &a[lead_a..]);
        prop_assert_eq!(&got_b[..], &b[lead_b..]);
    }

    /// Straight into the caller's buffer: exactly the bytes at the offset.
    #[test]
    fn read_into_fills_the_buffer_with_the_range(
        len in 0usize..300_000,
        at in 0usize..9000,
        slab in 1usize..70_000,
        readers in 1usize..5,
    ) {
        let d = tmp();
        let path = d.path().join("f.bin");
        let bytes = noise(at + len, 9);
        std::fs::write(&path, &bytes).unwrap();
        let options = ScanOptions { method: ScanMethod::Buffered, slab_bytes: slab, readers };
        let mut buf = vec![0u8; len];
        read_into(&path, at as u64, &mut buf, &options).unwrap();
        prop_assert_eq!(&buf[..], &bytes[at..]);
    }
}

#[test]
fn scans_refuse_what_is_not_there() {
    let d = tmp();
    let (pa, pb) = (d.path().join("a.bin"), d.path().join("b.bin"));
    std::fs::write(&pa, noise(10_000, 1)).unwrap();
    std::fs::write(&pb, noise(10_000, 2)).unwrap();
    let options = ScanOptions::default();
    // Ranges of two lengths cannot go in lockstep: refused before any read.
    let e = scan_many(&[(&pa, 0..100), (&pb, 0..99)], 1, &options, |_, _| {
        panic!("no slab for ranges of two lengths")
    })
    .unwrap_err();
    assert!(e.to_string().contains("b.bin"), "{e}");
    // A read past the end of the file is an error naming it.
    let mut buf = vec![0u8; 20_000];
    let e = read_into(&pa, 0, &mut buf, &options).unwrap_err();
    assert!(e.to_string().contains("a.bin"), "{e}");
}

#[test]
fn an_error_from_the_caller_ends_the_scan() {
    let d = tmp();
    let path = d.path().join("f.bin");
    std::fs::write(&path, noise(1 << 20, 3)).unwrap();
    let options = ScanOptions {
        method: ScanMethod::Buffered,
        slab_bytes: 4096,
        readers: 3,
    };
    let mut seen = 0;
    let e = scan(&path, 0..1 << 20, 1, &options, |offset, _| {
        seen += 1;
        if offset >= 3 * 4096 {
            return Err(rastore::ErrorKind::InvalidArgument("stop here".into()).into());
        }
        Ok(())
    })
    .unwrap_err();
    assert!(e.to_string().contains("stop here"), "{e}");
    assert_eq!(seen, 4);
}

#[test]
fn a_range_past_the_end_is_an_error_naming_the_file() {
    let d = tmp();
    let path = d.path().join("short.bin");
    std::fs::write(&path, noise(10_000, 4)).unwrap();
    for m in 0..2 {
        let options = ScanOptions {
            method: method(m),
            slab_bytes: 4096,
            readers: 2,
        };
        let e = scan(&path, 100..20_000, 4, &options, |_, _| Ok(())).unwrap_err();
        assert!(e.to_string().contains("short.bin"), "{e}");
    }
    let e = scan(
        &d.path().join("none"),
        0..1,
        1,
        &ScanOptions::default(),
        |_, _| Ok(()),
    );
    assert!(e.unwrap_err().to_string().contains("none"));
}

/// The elements `sel` picks from `a`, in column-major order, as native bytes.
fn picked<T: Copy + bytemuck::Pod>(a: &ndarray::ArrayD<T>, sel: &[Stride]) -> Vec<u8> {
    let part = a.slice_each_axis(|ax| {
        let s = sel[ax.axis.index()];
        let end = (s.start + s.count.saturating_sub(1) * s.step + 1) as isize;
        let end = if s.count == 0 { s.start as isize } else { end };
        ndarray::Slice::new(s.start as isize, Some(end), s.step as isize)
    });
    let values: Vec<T> = part.t().iter().copied().collect();
    bytemuck::cast_slice(&values).to_vec()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Any selection of any file, plain or compressed: what NumPy-style slicing picks.
    #[test]
    fn read_selection_into_gives_what_slicing_picks(
        dims in proptest::collection::vec(1u64..9, 1..5),
        picks in proptest::collection::vec((0.0f64..1.0, 1u64..4, 0.0f64..1.0), 4),
        compress in any::<bool>(),
    ) {
        let d = tmp();
        let p = d.path().join("a.ra");
        let shape: Vec<usize> = dims.iter().map(|&x| x as usize).collect();
        let n: usize = shape.iter().product();
        let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape).f(), (0..n as u32).collect()).unwrap();
        rastore::WriteOptions::new().compress(compress).write(&p, &a).unwrap();
        let sel: Vec<Stride> = dims.iter().zip(&picks).map(|(&n, &(f, step, g))| {
            let start = ((f * n as f64) as u64).min(n - 1);
            let most = (n - 1 - start) / step + 1;
            Stride::new(start, step, ((g * (most + 1) as f64) as u64).min(most))
        }).collect();
        let want = picked(&a, &sel);
        let mut got = vec![0xAAu8; want.len()];
        rastore::DataReader::open(&p).unwrap().read_selection_into(&sel, &mut got).unwrap();
        prop_assert_eq!(got, want);
    }
}

/// Long runs cut into slabs, runs far apart read apart, runs close together read as
/// one: all give the picked elements; wrong selections and buffers are refused,
/// naming the file.
#[test]
fn read_selection_into_reads_long_and_gapped_runs() {
    let d = tmp();
    let p = d.path().join("big.ra");
    let shape = [1024usize, 1024, 12];
    let n: usize = shape.iter().product();
    let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape).f(), (0..n as u32).collect())
        .unwrap();
    rastore::write(&p, &a).unwrap();
    let r = rastore::DataReader::open(&p).unwrap();
    for sel in [
        // One run of 16 MiB: two slabs.
        [Stride::all(1024), Stride::all(1024), Stride::new(2, 1, 4)],
        // Runs of 4 MiB, 16 MiB apart.
        [Stride::all(1024), Stride::all(1024), Stride::new(0, 5, 3)],
        // Runs of 8 bytes, 4 KiB apart: read together.
        [
            Stride::new(7, 1, 2),
            Stride::new(0, 1, 1024),
            Stride::new(11, 1, 1),
        ],
        // Single elements 4 MiB apart.
        [
            Stride::new(3, 1, 1),
            Stride::new(5, 1, 1),
            Stride::new(0, 1, 12),
        ],
    ] {
        let want = picked(&a, &sel);
        let mut got = vec![0u8; want.len()];
        r.read_selection_into(&sel, &mut got).unwrap();
        assert!(got == want, "{sel:?}");
    }
    let e = r
        .read_selection_into(
            &[Stride::all(1024), Stride::all(1024), Stride::new(10, 2, 2)],
            &mut [],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("big.ra") && e.contains("axis 2"), "{e}");
    let e = r
        .read_selection_into(
            &[Stride::all(1024), Stride::all(1024), Stride::new(0, 1, 1)],
            &mut [0u8; 4],
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("big.ra") && e.contains("4 bytes of buffer"),
        "{e}"
    );
}
