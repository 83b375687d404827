//! The `print` target's body: `ra cat`, `ra diff` and `ra describe` over arbitrary
//! *valid* headers (no elements, huge elements, reserved types, every encoding).
//! Included with `#[path]` by `fuzz/fuzz_targets/print.rs` (nightly) and by
//! `tests/fuzz_replay.rs` (stable), next to the tool's own `slice.rs` and
//! `elements.rs`, which it exercises as the tool runs them.

use arbitrary::{Arbitrary, Unstructured};
use rastore::{DType, Header, WriteOptions};

use crate::input::Input;
use crate::{elements, slice};

/// A valid file: any element type and size that the header rules allow.
#[derive(Debug)]
struct ValidFile {
    bytes: Vec<u8>,
    spec: String,
    limit: u64,
}

impl<'a> Arbitrary<'a> for ValidFile {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let eltype = u.int_in_range(0..=9u64)?;
        let ndims = u.int_in_range(0..=4usize)?;
        let dims: Vec<u64> = (0..ndims)
            .map(|_| u.int_in_range(0..=6u64))
            .collect::<arbitrary::Result<_>>()?;
        let count: u64 = dims.iter().product();
        let elbyte = if count == 0 && u.ratio(1, 2)? {
            // No elements: any elbyte is valid, up to the largest.
            *u.choose(&[1 << 62, u64::MAX, 1 << 40, 3])?
        } else {
            *u.choose(&[1u64, 2, 4, 8, 16, 3, 5, 12, 32])?
        };
        let dtype = DType { eltype, elbyte };
        let Ok(header) = Header::new(dtype, &dims) else {
            return Err(arbitrary::Error::IncorrectFormat);
        };
        let data = u.bytes(header.nbytes() as usize)?.to_vec();
        if data.len() as u64 != header.nbytes() {
            return Err(arbitrary::Error::NotEnoughData);
        }
        let mut bytes = Vec::new();
        let trailer: Vec<u8> = u.arbitrary::<&[u8]>()?.iter().take(64).copied().collect();
        WriteOptions::new()
            .compress(u.arbitrary()?)
            .metadata(trailer)
            .write_bytes_to(
                &mut bytes,
                &header.clone().with_storage(0, header.nbytes()),
                &data,
            )
            .map_err(|_| arbitrary::Error::IncorrectFormat)?;
        if u.ratio(1, 4)? && header.dtype().swap_unit().is_some() {
            // The big-endian flag: same bytes, read as the other order.
            bytes[8] |= 1;
        }
        let spec = String::arbitrary(u)?.chars().take(24).collect();
        let limit = u.int_in_range(0..=64u64)?;
        Ok(ValidFile { bytes, spec, limit })
    }
}

pub fn print(data: &[u8]) {
    let Ok(f) = ValidFile::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let h = Header::parse(&f.bytes).expect("the builder makes valid files");
    let path = rastore::fuzzing::scratch_dir().join("print.ra");
    std::fs::write(&path, &f.bytes).expect("write the fuzz input");
    // Decoding holds the data, a Bool check and the printed lines.
    rastore::fuzzing::within_peak("print", &f.bytes, 8, || run(&f, &h, &path));
}

fn run(f: &ValidFile, h: &Header, path: &std::path::Path) {
    let mut out = Vec::new();
    // A Bool file with bytes other than 0 and 1 is for the error path.
    if let (Ok(input), Ok(sels)) = (Input::open(path), slice::parse(&f.spec, h.dims())) {
        elements::cat(&input, &sels, f.limit, &mut out).expect("cat into a Vec");
        let printed = out.iter().filter(|&&b| b == b'\n').count() as u64;
        assert!(
            printed <= f.limit + 1,
            "cat printed {printed} lines, limit {}",
            f.limit
        );
        if slice::walk(&sels, h.dims(), 0, |_, _| ()) <= 4096 {
            out.clear();
            elements::cat_json(&input, &sels, &mut out).expect("cat --json into a Vec");
        }
    }
    if let Ok(input) = Input::open(path) {
        out.clear();
        // NaN differs from NaN, as in NumPy, unless equal_nan.
        let tol = rastore::values::Tolerance {
            equal_nan: true,
            ..Default::default()
        };
        let differs = elements::diff_elements(&input, &input, tol, &mut out, &mut |_| ())
            .expect("diff into a Vec");
        assert!(
            !differs,
            "a file differs from itself: {}",
            String::from_utf8_lossy(&out)
        );
    }
    let trailer = rastore::read_metadata(path).expect("a valid file's trailer");
    let text = rastore::ndl::describe("print.ra", h, &trailer);
    assert!(text.starts_with("---"), "{text}");
}
