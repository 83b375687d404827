//! The `npz` target: NumPy archives end to end. An archive of one to three members
//! (drawn `.npy` files, or any bytes), stored, then cut short or changed at a few
//! bytes (the local headers, the central directory, the members' headers), goes
//! through every conversion [`engine_outputs`](super::engine_outputs) makes: one
//! array into every sink, or several into a folder whose members must read back. A
//! folder it made goes back into an `.npz`, which must hold the same arrays.

use arbitrary::{Arbitrary, Unstructured};

use super::{engine_npy, scratch_dir, scratch_file, EXTENTS};
use crate::convert::{convert, ConvertOptions};
use crate::error::ErrorKind;

/// A drawn archive's bytes.
struct NpzInput(Vec<u8>);

impl<'a> Arbitrary<'a> for NpzInput {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let path = scratch_dir().join("build.npz");
        let file = std::fs::File::create(&path).expect("scratch npz");
        let mut w = crate::formats::npz::NpzWriter::new(&file, &path);
        let names = ["a.npy", "b.npy", "c", "d/e.npy", "a.npy"];
        for name in names.iter().take(u.int_in_range(1..=3usize)?) {
            let member = if u.ratio(3, 4)? {
                let ndims = u.int_in_range(0..=3usize)?;
                let dims: Vec<u64> = (0..ndims)
                    .map(|_| u.choose(&EXTENTS).copied())
                    .collect::<arbitrary::Result<_>>()?;
                engine_npy(u, &dims)?
            } else {
                let n = u.int_in_range(0..=64usize)?;
                u.bytes(u.len().min(n))?.to_vec()
            };
            w.add(name, member.as_slice(), member.len() as u64)
                .expect("add a member");
        }
        w.finish().expect("finish the npz");
        drop(file);
        let mut bytes = std::fs::read(&path).expect("read the npz back");
        if u.ratio(1, 8)? {
            let keep = u.choose_index(bytes.len().max(1))?;
            bytes.truncate(keep);
        }
        for _ in 0..u.int_in_range(0..=4u8)? {
            if bytes.is_empty() {
                break;
            }
            let at = u.choose_index(bytes.len())?;
            bytes[at] = u.arbitrary()?;
        }
        Ok(NpzInput(bytes))
    }
}

/// See the module's documentation.
pub fn npz(data: &[u8]) {
    let Ok(NpzInput(bytes)) = NpzInput::arbitrary_take_rest(Unstructured::new(data)) else {
        return;
    };
    let input = scratch_file("in.npz", &bytes);
    let outs = scratch_dir().join("npz");
    let _ = std::fs::remove_dir_all(&outs);
    std::fs::create_dir_all(&outs).expect("scratch output folder");
    let peak = super::peak_during(|| {
        super::engine_outputs(&input, &outs);
        round_trip(&input, &outs);
    });
    super::check_peak_beyond(
        "npz",
        &bytes,
        peak,
        8,
        8 * super::ENGINE_BYTES as usize + (24 << 20),
    );
}

/// The archive into a folder, the folder into an `.npz`, that into a folder again:
/// the same arrays, byte for byte, or the first conversion is refused.
fn round_trip(input: &std::path::Path, outs: &std::path::Path) {
    let options = ConvertOptions::new();
    let (first, back, second) = (outs.join("f1"), outs.join("back.npz"), outs.join("f2"));
    if convert(input, &first, &options, &mut |_, _| ()).is_err() {
        assert!(!first.exists(), "a failed conversion left {first:?}");
        return;
    }
    let listing = |dir: &std::path::Path| {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .expect("a folder convert made")
            .map(|e| e.expect("an entry").file_name())
            .collect();
        names.sort();
        names
    };
    let names = listing(&first);
    if let Err(e) = convert(&first, &back, &options, &mut |_, _| ()) {
        // A .npy read with an extent NumPy cannot hold (no elements) is no .npy member.
        let numpy =
            matches!(e.kind(), ErrorKind::Unsupported(m) if m.starts_with("NumPy cannot hold"));
        assert!(numpy, "a folder we wrote into .npz: {e}");
        assert!(!back.exists(), "a failed conversion left {back:?}");
        return;
    }
    convert(&back, &second, &options, &mut |_, _| ()).expect("an .npz we wrote into a folder");
    assert_eq!(names, listing(&second), "the members after a round trip");
    for n in names {
        let (a, b) = (first.join(&n), second.join(&n));
        if a.is_file() && n.to_string_lossy().ends_with(".ra") {
            let (x, y) = (crate::read_raw(&a), crate::read_raw(&b));
            let (x, y) = (x.expect("a member reads"), y.expect("its copy reads"));
            assert_eq!(x.header.dims(), y.header.dims(), "{n:?}: dims");
            assert_eq!(x.data, y.data, "{n:?}: data");
        }
    }
}
