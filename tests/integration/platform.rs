//! What differs by platform, tested where it runs: Windows (under Wine in CI) refuses
//! to shrink or replace a mapped file, keeps the read-only attribute on a rewrite, has
//! its own rules for appending while readers map the file, and has no blosc for Zarr;
//! every platform escapes what reaches a terminal.

use crate::common::tmp;
use crate::tool::{fails, s};

#[test]
fn messages_reach_the_terminal_escaped_on_every_platform() {
    let d = tmp();
    let p = d.path().join("x.ra");
    rastore::write(&p, &rastore::ndarray::Array1::<u8>::zeros(3)).unwrap();
    let e = fails(&["cat", s(&p), "--slice", "\x1b[31m\u{9b}2J"], 2);
    assert!(
        !e.trim_end().chars().any(char::is_control),
        "a control character reached the terminal: {e:?}"
    );
    assert!(e.contains("[31m") && e.contains("\\u{9b}2J"), "{e}");
}

#[cfg(windows)]
mod windows {
    use rastore::ndarray::Array1;
    use rastore::{AppendOptions, DType, MappedRa};

    use crate::common::tmp;
    use crate::tool::{fails, ok, s};

    /// Zarr's blosc codec is not in Windows builds (c-blosc's pthreads clash with
    /// MinGW's): asking for it is an error that names it, and leaves nothing; zstd,
    /// the same array, works.
    #[test]
    fn windows_has_no_blosc_and_says_so() {
        let d = tmp();
        let p = d.path().join("a.ra");
        rastore::write(&p, &Array1::<u32>::from_elem(64, 7)).unwrap();
        let z = d.path().join("a.zarr");
        let e = fails(&["convert", s(&p), s(&z), "--codec", "blosc"], 1);
        assert!(e.contains("blosc"), "{e}");
        assert!(!z.exists());
        ok(&["convert", s(&p), s(&z), "--codec", "zstd"]);
        ok(&["convert", s(&z), s(&d.path().join("b.ra"))]);
        assert_eq!(
            std::fs::read(&p).unwrap(),
            std::fs::read(d.path().join("b.ra")).unwrap()
        );
    }

    /// The refusal names the mapping (never a bare OS code), and once it is closed the
    /// same rewrite goes through.
    #[test]
    fn windows_refuses_to_replace_a_mapped_file_and_says_why() {
        let d = tmp();
        let p = d.path().join("m.ra");
        rastore::write(&p, &Array1::<u32>::from_elem(64, 7)).unwrap();
        // SAFETY: the file is only ever replaced below, which Windows refuses.
        let map = unsafe { MappedRa::open(&p) }.unwrap();
        let e = rastore::write(&p, &Array1::<u32>::from_elem(64, 9)).unwrap_err();
        let said = e.to_string();
        assert!(said.contains("mapped") && said.contains("m.ra"), "{said}");
        assert!(rastore::reshape(&p, &[8, 8])
            .unwrap_err()
            .to_string()
            .contains("mapp"));
        let cli = fails(&["meta", s(&p), "--set-attr", "units=m"], 1);
        assert!(cli.contains("mapped"), "{cli}");
        assert!(
            map.view::<u32>().unwrap().iter().all(|&x| x == 7),
            "untouched"
        );
        drop(map);
        rastore::write(&p, &Array1::<u32>::from_elem(64, 9)).unwrap();
        ok(&["meta", s(&p), "--set-attr", "units=m"]);
        assert_eq!(rastore::read::<u32>(&p).unwrap()[[0]], 9);
    }

    /// A rewrite of a read-only file replaces it and keeps it read-only (Unix keeps
    /// the mode bits instead; Windows files have none).
    #[test]
    fn windows_keeps_the_read_only_attribute() {
        let d = tmp();
        let p = d.path().join("ro.ra");
        rastore::write(&p, &Array1::<u8>::zeros(4)).unwrap();
        let read_only = |yes: bool| {
            let mut perm = std::fs::metadata(&p).unwrap().permissions();
            perm.set_readonly(yes);
            std::fs::set_permissions(&p, perm).unwrap();
        };
        read_only(true);
        ok(&["meta", s(&p), "--set-attr", "units=m"]);
        assert!(std::fs::metadata(&p).unwrap().permissions().readonly());
        rastore::write(&p, &Array1::<u8>::from_elem(4, 3)).unwrap();
        assert!(std::fs::metadata(&p).unwrap().permissions().readonly());
        assert_eq!(rastore::read::<u8>(&p).unwrap()[[2]], 3);
        read_only(false);
    }

    /// Appending while a reader maps the file works: frames grow the file and commits
    /// are seen by new readers, and finishing (which only grows it) works. Dropping
    /// uncommitted frames would shrink it, which Windows refuses while it is mapped:
    /// the file stays open for appending, readable with its committed frames, until
    /// `recover` runs with no mapping left.
    #[test]
    fn appending_while_a_reader_maps_the_file() {
        let d = tmp();
        let p = d.path().join("a.ra");
        let frame = |t: u8| Array1::<u8>::from_elem(4, t);
        let mut out = AppendOptions::new().create(&p, DType::U8, &[4]).unwrap();
        out.append(&frame(1)).unwrap();
        out.commit().unwrap();
        // SAFETY: the appender only writes past the committed data and grows the file.
        let reader = unsafe { MappedRa::open(&p) }.unwrap();
        out.append(&frame(2)).unwrap();
        out.commit().unwrap();
        out.append(&frame(3)).unwrap();
        drop(out); // the pending frame cannot be cut while `reader` maps the file
        assert_eq!(reader.view::<u8>().unwrap().shape(), &[4, 1]);
        let (h, _) = rastore::read_header_at(&p).unwrap();
        assert!(h.flags().appending() && h.dims() == [4, 2], "{h:?}");
        drop(reader);
        let r = rastore::recover(&p).unwrap();
        assert!(r.repaired && r.frames == 2 && r.dropped_bytes == 4, "{r:?}");
        // And a finish while a reader maps the file.
        let mut out = AppendOptions::new().open(&p).unwrap();
        // SAFETY: as above.
        let reader = unsafe { MappedRa::open(&p) }.unwrap();
        out.append(&frame(4)).unwrap();
        let h = out.finish().unwrap();
        assert_eq!(h.dims(), [4, 3]);
        assert_eq!(reader.view::<u8>().unwrap().shape(), &[4, 2]);
        assert_eq!(rastore::read::<u8>(&p).unwrap()[[0, 2]], 4);
    }
}
