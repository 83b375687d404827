//! Appending along the last axis (issue 14): frames in every layout, refusals, the
//! trailer's round trip, `ra append`/`ra recover`, an appender killed at random points
//! and a reader process re-opening while frames arrive.
//!
//! The child processes are this test binary, re-run on one ignored test with an
//! environment variable naming the file: `append_child_appends` and
//! `append_child_reads`.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ndarray::{Array2, Array3, ArrayD, Axis, IxDyn, ShapeBuilder};
use rastore::{AppendOptions, DType, ErrorKind, MappedRa, WriteOptions};

use crate::cli::ra;
use crate::common::tmp;

/// The frames of the crash and reader tests: 16 × 8 u32, each element a function of
/// its frame and position, so that a frame from anywhere else is caught.
const FRAME: [u64; 2] = [16, 8];

fn value(frame: u64, j: u64) -> u32 {
    (frame.wrapping_mul(1_000_003) ^ j.wrapping_mul(7919)) as u32
}

fn frame_of(t: u64) -> Array2<u32> {
    Array2::from_shape_fn((16, 8).f(), |(i, j)| value(t, (i + 16 * j) as u64))
}

/// Checks that every frame the file names holds its values; returns the frame count.
fn check_frames(path: &Path) -> Result<u64, String> {
    // SAFETY: the appender only writes past the data a header names, and rewrites the
    // header in place; nothing truncates what a reader may look at.
    let map = unsafe { MappedRa::open(path) }.map_err(|e| e.to_string())?;
    let v = map.view::<u32>().map_err(|e| e.to_string())?;
    let n = *map.header().dims().last().unwrap();
    if map.header().dims()[..2] != FRAME {
        return Err(format!("dims {:?}", map.header().dims()));
    }
    for t in 0..n {
        let f = v.index_axis(Axis(2), t as usize);
        for ((i, j), &x) in f.indexed_iter().map(|(ix, x)| ((ix[0], ix[1]), x)) {
            if x != value(t, (i + 16 * j) as u64) {
                return Err(format!("frame {t} element ({i}, {j}) = {x}"));
            }
        }
    }
    Ok(n)
}

/// A file of no frames yet, with an NDL trailer.
fn no_frames_with_trailer(p: &Path) {
    let empty = ArrayD::<u32>::zeros(IxDyn(&[16, 8, 0]).f());
    WriteOptions::new()
        .metadata(trailer_doc())
        .write(p, &empty)
        .unwrap();
}

fn trailer_doc() -> Vec<u8> {
    let h = rastore::Header::new(DType::U32, &[16, 8, 0]).unwrap();
    rastore::ndl::edit_attributes(&h, b"", &[("units".into(), "counts".into())], &[]).unwrap()
}

#[test]
fn frames_in_every_layout_read_back_as_one_array() {
    let d = tmp();
    let p = d.path().join("a.ra");
    let mut out = AppendOptions::new()
        .create(&p, DType::F64, &[3, 4])
        .unwrap();
    let c = Array2::from_shape_fn((3, 4), |(i, j)| (i * 10 + j) as f64);
    let f = Array2::from_shape_fn((3, 4).f(), |(i, j)| (100 + i * 10 + j) as f64);
    let wide = Array2::from_shape_fn((3, 8), |(i, j)| (200 + i * 10 + j) as f64);
    let strided = wide.slice(ndarray::s![.., ..;2]);
    let two = Array3::from_shape_fn((3, 4, 2), |(i, j, k)| (300 + 100 * k + i * 10 + j) as f64);
    assert_eq!(out.append(&c).unwrap(), 1);
    assert_eq!(out.append(&f).unwrap(), 1);
    assert_eq!(out.append(&strided).unwrap(), 1);
    assert_eq!(out.append(&two).unwrap(), 2);
    assert_eq!((out.frames(), out.pending()), (0, 5));
    assert_eq!(out.commit().unwrap(), 5);
    let h = out.finish().unwrap();
    assert_eq!(h.dims(), &[3, 4, 5]);
    assert_eq!(h.flags().0, 0);
    let back: ArrayD<f64> = rastore::read(&p).unwrap();
    let expect = ndarray::stack(
        Axis(2),
        &[
            c.view(),
            f.view(),
            strided,
            two.index_axis(Axis(2), 0),
            two.index_axis(Axis(2), 1),
        ],
    )
    .unwrap();
    assert_eq!(back, expect.into_dyn());
    assert_eq!(std::fs::metadata(&p).unwrap().len(), 72 + 5 * 96);
}

#[test]
fn readers_see_committed_frames_only_and_a_dropped_appender_discards_the_rest() {
    let d = tmp();
    let p = d.path().join("a.ra");
    let mut out = AppendOptions::new()
        .durable(false)
        .create(&p, DType::U32, &FRAME)
        .unwrap();
    out.append(&frame_of(0)).unwrap();
    // Written, not committed: a reader sees no frames, and no trailer.
    // SAFETY: see check_frames.
    let m = unsafe { MappedRa::open(&p) }.unwrap();
    assert_eq!(m.header().dims(), &[16, 8, 0]);
    assert!(m.header().flags().appending());
    assert_eq!(m.metadata(), b"");
    assert_eq!(rastore::read_metadata(&p).unwrap(), b"");
    out.commit().unwrap();
    assert_eq!(check_frames(&p), Ok(1));
    out.append(&frame_of(1)).unwrap();
    // Unmapped first: Windows refuses to cut a mapped file (see `platform`).
    drop(m);
    drop(out);
    assert_eq!(check_frames(&p), Ok(1));
    let (h, len) = rastore::read_header_at(&p).unwrap();
    assert_eq!((h.flags().0, len), (0, 72 + 512));
}

#[test]
fn the_trailer_survives_appends_with_its_shape_brought_up_to_date() {
    let d = tmp();
    let p = d.path().join("a.ra");
    no_frames_with_trailer(&p);
    let mut out = AppendOptions::new().open(&p).unwrap();
    let sidecar = rastore::trailer_sidecar(&p);
    assert_eq!(std::fs::read(&sidecar).unwrap(), trailer_doc());
    for t in 0..3 {
        out.append(&frame_of(t)).unwrap();
    }
    out.finish().unwrap();
    assert!(!sidecar.exists());
    assert_eq!(check_frames(&p), Ok(3));
    let meta = String::from_utf8(rastore::read_metadata(&p).unwrap()).unwrap();
    assert!(meta.contains("units: counts"), "{meta}");
    assert!(meta.contains("- 16\n      - 8\n      - 3\n"), "{meta}");
    assert!(meta.contains("size: 1536"), "{meta}");
}

#[test]
fn files_that_cannot_grow_in_place_and_wrong_frames_are_refused() {
    let d = tmp();
    let a = Array2::<i16>::zeros((4, 2));
    let z = d.path().join("z.ra");
    WriteOptions::new().compress(true).write(&z, &a).unwrap();
    let e = AppendOptions::new().open(&z).err().unwrap().to_string();
    assert!(e.contains("cannot append: the data is lz4"), "{e}");
    let big = d.path().join("big.ra");
    rastore::write(&big, &a).unwrap();
    let mut bytes = std::fs::read(&big).unwrap();
    bytes[8] |= 1; // the big-endian flag
    std::fs::write(&big, &bytes).unwrap();
    let e = AppendOptions::new().open(&big).err().unwrap().to_string();
    assert!(e.contains("big-endian"), "{e}");

    let p = d.path().join("p.ra");
    rastore::write(&p, &a).unwrap();
    let mut out = AppendOptions::new().open(&p).unwrap();
    let e = out.append(&Array2::<i16>::zeros((2, 4))).unwrap_err();
    assert!(
        e.to_string()
            .contains("frame shape mismatch: the file's frames are [4]"),
        "{e}"
    );
    let e = out.append(&ndarray::Array1::<f32>::zeros(4)).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::TypeMismatch { .. }), "{e}");
    assert_eq!(out.append(&ndarray::Array1::<i16>::ones(4)).unwrap(), 1);
    out.finish().unwrap();
    assert_eq!(rastore::read_header_at(&p).unwrap().0.dims(), &[4, 3]);
    // A second appender, while one holds the file, is refused.
    let _one = AppendOptions::new().open(&p).unwrap();
    let e = AppendOptions::new().open(&p).err().unwrap().to_string();
    assert!(e.contains("another process is appending"), "{e}");
    // So is rewriting it underneath the appender.
    let e = rastore::replace_metadata(&p, b"x").unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Appending { frames: 3, .. }),
        "{e}"
    );
    let e = rastore::reshape(&p, &[12]).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Appending { .. }), "{e}");
}

#[test]
fn ra_append_builds_a_file_from_inputs_and_stdin_and_refuses_a_partial_frame() {
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    rastore::write(p("f0.ra"), &frame_of(0)).unwrap();
    rastore::write(
        p("f12.ra"),
        &ndarray::stack(Axis(2), &[frame_of(1).view(), frame_of(2).view()]).unwrap(),
    )
    .unwrap();
    let o = ra()
        .args([
            "append",
            p("s.ra").to_str().unwrap(),
            p("f0.ra").to_str().unwrap(),
            p("f12.ra").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!(
            "{}: appended 3 frames; uint32 [16, 8, 3]\n",
            p("s.ra").display()
        )
    );
    assert_eq!(check_frames(&p("s.ra")), Ok(3));
    // Raw frames on stdin, then half a frame: the whole ones are committed.
    let mut raw = Vec::new();
    for t in 3..6 {
        raw.extend(bytemuck::cast_slice::<u32, u8>(
            frame_of(t).t().as_slice().unwrap(),
        ));
    }
    raw.extend([1, 2, 3]);
    let mut child = ra()
        .args([
            "append",
            p("s.ra").to_str().unwrap(),
            "-",
            "--commit-every",
            "2",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&raw).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("stdin ended inside a frame: 3 bytes of a 512-byte frame were not appended; 6 frames are committed"),
        "{err}"
    );
    assert_eq!(check_frames(&p("s.ra")), Ok(6));
    let (h, len) = rastore::read_header_at(p("s.ra")).unwrap();
    assert_eq!((h.flags().0, len), (0, 72 + 6 * 512));
    // A frame of another shape is refused, naming the input.
    rastore::write(p("bad.ra"), &Array2::<u32>::zeros((8, 16))).unwrap();
    let o = ra()
        .args([
            "append",
            p("s.ra").to_str().unwrap(),
            p("f12.ra").to_str().unwrap(),
            p("bad.ra").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.ra: invalid argument: frame shape mismatch"),
        "{err}"
    );
    // The first input went in before the refusal, and is committed.
    let (h, _) = rastore::read_header_at(p("s.ra")).unwrap();
    assert_eq!((h.dims(), h.flags().0), (&[16, 8, 8][..], 0));
}

#[test]
fn ra_info_shows_a_crashed_append_and_ra_recover_repairs_it() {
    let d = tmp();
    let p = d.path().join("a.ra");
    no_frames_with_trailer(&p);
    let mut out = AppendOptions::new().open(&p).unwrap();
    out.append(&frame_of(0)).unwrap();
    out.commit().unwrap();
    out.append(&frame_of(1)).unwrap();
    let info = ra().args(["info", p.to_str().unwrap()]).output().unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(
        info.ends_with("trailer 0; appending: 1 frames committed, 512 bytes uncommitted, an appender is running\n"),
        "{info}"
    );
    // What a crash now leaves: the file and its sidecar as they are, with no
    // appender holding them.
    let copy = d.path().join("crashed.ra");
    std::fs::copy(&p, &copy).unwrap();
    std::fs::copy(
        rastore::trailer_sidecar(&p),
        rastore::trailer_sidecar(&copy),
    )
    .unwrap();
    drop(out);
    let info = ra()
        .args(["info", "--json", copy.to_str().unwrap()])
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(
        info.contains("\"appending\": true}")
            && info.contains("\"append\": {\"frames\": 1, \"uncommitted_bytes\": 512, \"appender_running\": false}"),
        "{info}"
    );
    let o = ra()
        .args(["verify", copy.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let o = ra()
        .args(["recover", copy.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success());
    let n = trailer_doc().len();
    let said = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(said.ends_with(&format!(
        "repaired: 1 frames committed; dropped 512 uncommitted bytes; restored the {n}-byte trailer; appending flag cleared\n"
    )), "{said}");
    assert_eq!(check_frames(&copy), Ok(1));
    let meta = String::from_utf8(rastore::read_metadata(&copy).unwrap()).unwrap();
    assert!(
        meta.contains("units: counts") && meta.contains("size: 512"),
        "{meta}"
    );
    assert!(!rastore::trailer_sidecar(&copy).exists());
    let o = ra()
        .args(["recover", copy.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!("{}: nothing to repair (1 frames)\n", copy.display())
    );
}

/// Frames the reader test appends, one commit each.
const READER_FRAMES: u64 = 20_000;

/// Like [`check_frames`], for the last frame only (a reader looping fast).
fn check_last_frame(path: &Path) -> Result<u64, String> {
    // SAFETY: see check_frames.
    let map = unsafe { MappedRa::open(path) }.map_err(|e| e.to_string())?;
    let v = map.view::<u32>().map_err(|e| e.to_string())?;
    let n = *map.header().dims().last().unwrap();
    if let Some(t) = n.checked_sub(1) {
        let f = v.index_axis(Axis(2), t as usize);
        if f != frame_of(t).into_dyn() {
            return Err(format!("frame {t} of {n} differs"));
        }
    }
    Ok(n)
}

/// Environment variable naming the file a child process appends to or reads.
const CHILD_FILE: &str = "RASTORE_APPEND_CHILD_FILE";

fn child(test: &str, file: &Path) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_FILE, file);
    c
}

/// The appender that `an_appender_killed_at_random_points_leaves_a_valid_prefix`
/// kills: appends 1 to 3 frames at a time, commits, and prints the committed count.
#[test]
#[ignore = "a child process of the kill test"]
fn append_child_appends() {
    let Some(path) = std::env::var_os(CHILD_FILE) else {
        return;
    };
    let mut out = AppendOptions::new()
        .reserve(64 << 10)
        .open_or_create(&path, DType::U32, &FRAME)
        .unwrap();
    let mut t = out.frames();
    let stdout = std::io::stdout();
    for round in 0u64.. {
        for _ in 0..1 + round % 3 {
            out.append(&frame_of(t)).unwrap();
            t += 1;
        }
        let n = out.commit().unwrap();
        writeln!(stdout.lock(), "committed {n}").unwrap();
    }
}

#[test]
fn an_appender_killed_at_random_points_leaves_a_valid_prefix() {
    let kills: u64 = std::env::var("RASTORE_APPEND_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let d = tmp();
    let p = d.path().join("k.ra");
    no_frames_with_trailer(&p);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut most = 0;
    let mut repaired = 0;
    for round in 0..kills {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut c = child("append::append_child_appends", &p)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(c.stdout.take().unwrap()).lines();
        // Often right away (inside open and its repair), else after some commits,
        // counted from the child's first one (a process starts slowly under Wine).
        let mut committed = 0;
        let wait_us = if seed.is_multiple_of(4) {
            seed % 3000
        } else {
            for line in lines.by_ref() {
                if let Some(n) = line.unwrap().strip_prefix("committed ") {
                    committed = n.parse().unwrap();
                    break;
                }
            }
            seed % 30_000
        };
        std::thread::sleep(Duration::from_micros(wait_us));
        c.kill().unwrap();
        for line in lines {
            // libtest's own lines come first, and a killed child may end mid-line.
            let line = line.unwrap();
            if let Some(n) = line
                .rsplit("committed ")
                .next()
                .and_then(|n| n.parse().ok())
            {
                committed = n;
            }
        }
        c.wait().unwrap();
        // Valid at once, before any repair, with every committed frame.
        let n = check_frames(&p).unwrap_or_else(|e| panic!("round {round}: {e}"));
        assert!(
            n >= committed,
            "round {round}: {n} frames, {committed} committed"
        );
        most = most.max(n);
        let o = ra().args(["verify", p.to_str().unwrap()]).output().unwrap();
        assert!(
            o.status.success(),
            "round {round}: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        // Every tenth round `ra recover` repairs; otherwise the next appender does.
        if round % 10 == 9 {
            let r = rastore::recover(&p).unwrap();
            repaired += u64::from(r.repaired);
            assert_eq!(r.frames, n);
            let meta = String::from_utf8(rastore::read_metadata(&p).unwrap()).unwrap();
            assert!(
                meta.contains("units: counts") && meta.contains(&format!("size: {}", n * 512)),
                "round {round}: {meta}"
            );
            assert!(!rastore::trailer_sidecar(&p).exists());
        }
    }
    println!("{kills} kills, {repaired} repairs by recover, {most} frames at most");
    assert!(most > 10, "the appender never got going: {most} frames");
    assert!(repaired > 0);
}

/// The reader of `a_reader_reopening_while_frames_arrive_never_sees_an_invalid_file`:
/// opens and checks the file (its last frame) until it has `READER_FRAMES` frames;
/// prints opens and distinct frame counts seen.
#[test]
#[ignore = "a child process of the reader test"]
fn append_child_reads() {
    let Some(path) = std::env::var_os(CHILD_FILE) else {
        return;
    };
    let path = Path::new(&path);
    let (mut opens, mut seen) = (0u64, std::collections::BTreeSet::new());
    let deadline = Instant::now() + Duration::from_secs(60);
    println!("reading");
    loop {
        let n = check_last_frame(path).unwrap_or_else(|e| {
            eprintln!("invalid after {opens} opens: {e}");
            std::process::exit(3)
        });
        opens += 1;
        seen.insert(n);
        if n >= READER_FRAMES || Instant::now() > deadline {
            break;
        }
    }
    println!("opens {opens} distinct {}", seen.len());
}

#[test]
fn a_reader_reopening_while_frames_arrive_never_sees_an_invalid_file() {
    let d = tmp();
    let p = d.path().join("r.ra");
    let mut out = AppendOptions::new()
        .durable(false)
        .create(&p, DType::U32, &FRAME)
        .unwrap();
    let mut reader = child("append::append_child_reads", &p)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // Frames only once the reader reads (a process starts slowly under Wine).
    let mut said = BufReader::new(reader.stdout.take().unwrap());
    let mut line = String::new();
    while !line.contains("reading") {
        line.clear();
        assert!(said.read_line(&mut line).unwrap() > 0, "the reader ended");
    }
    for t in 0..READER_FRAMES {
        out.append(&frame_of(t)).unwrap();
        out.commit().unwrap();
        // Paced, so that a slow reader (under Wine an open takes milliseconds) still
        // sees the file at many lengths: about a second in all.
        if t % 20 == 19 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    out.finish().unwrap();
    let mut rest = String::new();
    said.read_to_string(&mut rest).unwrap();
    let status = reader.wait().unwrap();
    let said = rest;
    assert!(status.success(), "{said}");
    let line = said.lines().find_map(|l| l.split_once("opens ")).unwrap().1;
    let distinct: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    println!("{line}");
    assert!(
        distinct > 20,
        "the reader saw the file grow only {distinct} times"
    );
}
