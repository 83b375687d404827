//! `rastore::scan`: every byte of the range, in order, in slabs of whole units, by
//! every method, with bounded buffers; errors end it without a hang.

use proptest::prelude::*;
use rastore::scan::{scan, ScanMethod, ScanOptions};

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
