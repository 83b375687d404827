//! Gathers (issue 29): random batches of selections (repeats, unsorted, single
//! elements, whole frames, runs close together and far apart) read by
//! `DataReader::read_many_into` and `RemoteRa::read_many_into` equal ndarray's slicing
//! of the whole array, for plain, big-endian and compressed files, locally with every
//! engine and on a real S3 server; indices out of range are refused before any read;
//! a file cut short under the reader is an error, never a short read.

use proptest::prelude::*;
use rastore::gather::{Engine, GatherOptions};
use rastore::ndarray::{Array3, ArrayD, Axis, ShapeBuilder, Slice};
use rastore::remote::RemoteRa;
use rastore::{DataReader, ErrorKind, Stride, WriteOptions};

use crate::common::{tmp, words, MAGIC};
use crate::s3_server::Server;

/// A float32 volume of frames of 8 KiB ([32, 64, frames]): frames 4 apart (24 KiB
/// between them) are farther than a gather merges (16 KiB), neighbours closer. Low
/// entropy, so that LZ4 makes it smaller and the compressed file is really compressed.
fn volume(frames: usize) -> ArrayD<f32> {
    Array3::from_shape_fn((32, 64, frames).f(), |(i, j, k)| {
        ((i * 7 + j * 3 + k * 11) % 50) as f32 - 0.5
    })
    .into_dyn()
}

/// Column-major bytes of `a` sliced by `sel`: what a gather gives for it.
fn expected(a: &ArrayD<f32>, sel: &[Stride]) -> Vec<u8> {
    let mut v = a.view();
    for (axis, s) in sel.iter().enumerate() {
        let end = s.start + s.step * s.count.saturating_sub(1) + 1;
        let slice = if s.count == 0 {
            Slice::new(0, Some(0), 1)
        } else {
            Slice::new(s.start as isize, Some(end as isize), s.step as isize)
        };
        v.slice_axis_inplace(Axis(axis), slice);
    }
    v.reversed_axes()
        .iter()
        .flat_map(|x| x.to_ne_bytes())
        .collect()
}

/// The same volume stored three ways: plain, big-endian (data and header), LZ4.
fn stored(dir: &std::path::Path, a: &ArrayD<f32>) -> Vec<std::path::PathBuf> {
    let plain = dir.join("plain.ra");
    rastore::write(&plain, a).unwrap();
    let bytes = std::fs::read(&plain).unwrap();
    let ndims = a.ndim();
    let head = 48 + 8 * ndims;
    let mut big: Vec<u8> = bytes[..head]
        .chunks(8)
        .enumerate()
        .flat_map(|(i, w)| {
            let mut v = u64::from_le_bytes(w.try_into().unwrap());
            if i == 1 {
                v |= 1;
            }
            v.to_be_bytes()
        })
        .collect();
    big.extend(bytes[head..].chunks(4).flat_map(|c| {
        let mut c = c.to_vec();
        c.reverse();
        c
    }));
    let big_path = dir.join("big.ra");
    std::fs::write(&big_path, big).unwrap();
    let lz4 = dir.join("lz4.ra");
    WriteOptions::new().compress(true).write(&lz4, a).unwrap();
    let h = rastore::read_header_at(&lz4).unwrap().0;
    assert!(h.flags().compressed(), "the test's LZ4 file is compressed");
    vec![plain, big_path, lz4]
}

/// Drops `files` from the page cache (GNU dd's `nocache`; Linux), so that gathers read
/// them from the device: around the cache when direct.
fn evict(files: &[std::path::PathBuf]) {
    if !cfg!(target_os = "linux") {
        return;
    }
    for f in files {
        let _ = std::process::Command::new("dd")
            .arg(format!("if={}", f.display()))
            .args(["iflag=nocache", "count=0", "status=none"])
            .status();
    }
}

fn stride(dim: u64) -> impl Strategy<Value = Stride> {
    prop_oneof![
        Just(Stride::all(dim)),
        (0..dim).prop_map(|i| Stride::new(i, 1, 1)),
        (0..dim, 1..4u64, 0..6u64).prop_map(move |(start, step, count)| {
            let most = (dim - 1 - start) / step + 1;
            Stride::new(start, step, count.min(most))
        }),
    ]
}

fn selection(frames: u64) -> impl Strategy<Value = Vec<Stride>> {
    (stride(32), stride(64), stride(frames)).prop_map(|(a, b, c)| vec![a, b, c])
}

/// A batch: selections in any order, some repeated.
fn batch(frames: u64) -> impl Strategy<Value = Vec<Vec<Stride>>> {
    (
        prop::collection::vec(selection(frames), 1..12),
        prop::collection::vec(0..12usize, 0..4),
    )
        .prop_map(|(mut sels, repeats)| {
            for r in repeats {
                let again = sels[r % sels.len()].clone();
                sels.push(again);
            }
            sels
        })
}

const FRAMES: u64 = 40;

fn options(engine: u8, direct: bool, depth: usize) -> GatherOptions {
    GatherOptions {
        engine: [Engine::Auto, Engine::Uring, Engine::Threads][engine as usize % 3],
        depth,
        direct,
    }
}

#[test]
fn gathers_equal_ndarray_slicing_for_every_encoding_and_engine() {
    let d = tmp();
    let a = volume(FRAMES as usize);
    let files = stored(d.path(), &a);
    let _ = std::process::Command::new("sync").status();
    let readers: Vec<DataReader> = files.iter().map(|f| DataReader::open(f).unwrap()).collect();
    proptest!(ProptestConfig::with_cases(64), |(sels in batch(FRAMES), engine in 0u8..3, direct in any::<bool>(), depth in 1usize..40, cold in any::<bool>())| {
        if cold {
            evict(&files);
        }
        let want: Vec<u8> = sels.iter().flat_map(|s| expected(&a, s)).collect();
        for r in &readers {
            let mut out = vec![0xa5u8; want.len()];
            r.read_many_into_with(&sels, &mut out, &options(engine, direct, depth)).unwrap();
            prop_assert!(out == want, "{sels:?}");
        }
        // take_into: whole frames, in the given order, repeats included.
        let frames: Vec<u64> = sels.iter().map(|s| s[2].start).collect();
        let want: Vec<u8> = frames
            .iter()
            .flat_map(|&k| expected(&a, &[Stride::all(32), Stride::all(64), Stride::new(k, 1, 1)]))
            .collect();
        for r in &readers {
            let mut out = vec![0u8; want.len()];
            r.take_into(&frames, &mut out).unwrap();
            prop_assert!(out == want);
        }
    });
}

#[test]
fn object_gathers_equal_ndarray_slicing() {
    let Some(server) = Server::start() else {
        return;
    };
    let d = tmp();
    let a = volume(FRAMES as usize);
    let files = stored(d.path(), &a);
    let objects: Vec<RemoteRa> = files
        .iter()
        .map(|f| {
            let key = f.file_name().unwrap().to_str().unwrap().to_string();
            std::fs::copy(f, server.object(&key)).unwrap();
            let mut options = Server::options(&server.endpoint(), 2);
            // Small GETs, so that batches are cut and coalesced across many.
            options.range_bytes = 40 << 10;
            RemoteRa::open_with(&format!("s3://bkt/{key}"), options).unwrap()
        })
        .collect();
    proptest!(ProptestConfig::with_cases(24), |(sels in batch(FRAMES))| {
        let want: Vec<u8> = sels.iter().flat_map(|s| expected(&a, s)).collect();
        for o in &objects {
            let mut out = vec![0u8; want.len()];
            o.read_many_into(&sels, &mut out).unwrap();
            prop_assert!(out == want, "{sels:?}");
        }
        let frames: Vec<u64> = sels.iter().map(|s| s[2].start).collect();
        let want: Vec<u8> = frames
            .iter()
            .flat_map(|&k| expected(&a, &[Stride::all(32), Stride::all(64), Stride::new(k, 1, 1)]))
            .collect();
        let mut out = vec![0u8; want.len()];
        objects[0].take_into(&frames, &mut out).unwrap();
        prop_assert!(out == want);
    });
    // An index past the end is refused before anything is fetched.
    let mut out = vec![0u8; 2 * 32 * 64 * 4];
    let e = objects[0].take_into(&[3, FRAMES], &mut out).unwrap_err();
    let bound =
        format!("index {FRAMES} (at 1 of 2) is out of bounds for axis 2 with size {FRAMES}");
    assert!(e.to_string().contains(&bound), "{e}");
    assert!(out.iter().all(|&b| b == 0), "nothing was fetched");
}

/// Residency as the page cache says (Linux): a file just written is resident, one
/// dropped from the cache is not.
#[test]
fn residency_follows_the_page_cache() {
    let d = tmp();
    let p = d.path().join("v.ra");
    rastore::write(&p, &volume(8)).unwrap();
    let _ = std::process::Command::new("sync").status();
    let r = DataReader::open(&p).unwrap();
    let sels: Vec<Vec<Stride>> = (0..8)
        .map(|k| vec![Stride::all(32), Stride::all(64), Stride::new(k, 1, 1)])
        .collect();
    if !cfg!(target_os = "linux") {
        assert!(
            !r.resident(&sels).unwrap(),
            "no platform but Linux can tell"
        );
        return;
    }
    let mut out = vec![0u8; 8 * 32 * 64 * 4];
    r.read_many_into(&sels, &mut out).unwrap();
    assert!(r.resident(&sels).unwrap());
    evict(std::slice::from_ref(&p));
    assert!(!r.resident(&sels).unwrap());
}

#[test]
fn an_index_past_the_end_is_refused_before_any_read() {
    let d = tmp();
    let p = d.path().join("v.ra");
    rastore::write(&p, &volume(8)).unwrap();
    let r = DataReader::open(&p).unwrap();
    let mut out = vec![0u8; 3 * 32 * 64 * 4];
    let e = r.take_into(&[0, 8, 1], &mut out).unwrap_err();
    assert!(
        e.to_string()
            .contains("index 8 (at 1 of 3) is out of bounds for axis 2 with size 8"),
        "{e}"
    );
    assert!(out.iter().all(|&b| b == 0), "nothing was read");
    let good = vec![Stride::all(32), Stride::all(64), Stride::new(0, 1, 1)];
    let bad = vec![Stride::all(32), Stride::new(60, 2, 3), Stride::new(0, 1, 1)];
    let e = r
        .read_many_into(&[good.clone(), good, bad], &mut out)
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("selection 2 of 3: axis 1: 3 indices from 60 by 2"),
        "{e}"
    );
    assert!(out.iter().all(|&b| b == 0), "nothing was read");
}

#[test]
fn a_file_cut_short_under_the_reader_is_an_error_not_a_short_read() {
    let d = tmp();
    let p = d.path().join("v.ra");
    rastore::write(&p, &volume(8)).unwrap();
    let r = DataReader::open(&p).unwrap();
    let frame = 32 * 64 * 4;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&p)
        .unwrap()
        .set_len((72 + 5 * frame) as u64)
        .unwrap();
    // Through the page cache too (`direct: false`), so that every read goes to the
    // engine (cached data is otherwise copied from the cache). A frame wholly past the
    // new end, and a read that starts before it and ends past it (its first bytes
    // come, then none: the end falls inside a block of a direct read).
    let frames = |start, count| {
        [vec![
            Stride::all(32),
            Stride::all(64),
            Stride::new(start, 1, count),
        ]]
    };
    for sels in [frames(7, 1), frames(4, 2), frames(3, 3)] {
        for (engine, direct) in [
            (Engine::Uring, true),
            (Engine::Threads, true),
            (Engine::Uring, false),
            (Engine::Threads, false),
        ] {
            let mut out = vec![0u8; sels[0][2].count as usize * frame];
            let o = GatherOptions {
                engine,
                direct,
                ..GatherOptions::default()
            };
            let e = r.read_many_into_with(&sels, &mut out, &o).unwrap_err();
            assert!(
                matches!(e.kind(), ErrorKind::TruncatedData { .. }),
                "{engine:?}, direct {direct}, {:?}: {e}",
                sels[0][2]
            );
            assert!(e.to_string().starts_with(&p.display().to_string()), "{e}");
            // The reader's ring and buffers, kept from the failed batch, serve the next.
            let whole = [vec![Stride::all(32), Stride::all(64), Stride::new(0, 1, 4)]];
            let mut four = vec![0u8; 4 * frame];
            r.read_many_into_with(&whole, &mut four, &o).unwrap();
            assert!(four == expected(&volume(8), &whole[0]), "{engine:?}");
        }
    }
}

/// A reader reads the file it opened after its name is given to another file (as
/// `ra edit` and every atomic write do): what it reads around the page cache comes
/// from the same file as what it reads through the cache.
#[cfg(target_os = "linux")]
#[test]
fn a_reader_reads_the_file_it_opened_after_its_name_moves() {
    use std::os::fd::AsRawFd;
    let d = tmp();
    let p = d.path().join("v.ra");
    let a = volume(FRAMES as usize);
    rastore::write(&p, &a).unwrap();
    let r = DataReader::open(&p).unwrap();
    let opened = std::fs::File::open(&p).unwrap();
    let other = d.path().join("other.ra");
    rastore::write(&other, &a.mapv(|x| -x - 1.0)).unwrap();
    std::fs::rename(&other, &p).unwrap();
    let _ = std::process::Command::new("sync").status();
    // The opened file, out of the cache through a descriptor of it (its name is gone).
    let by_fd = format!("/proc/{}/fd/{}", std::process::id(), opened.as_raw_fd());
    evict(&[by_fd.into()]);
    let sels: Vec<Vec<Stride>> = (0..FRAMES)
        .map(|k| vec![Stride::all(32), Stride::new(3, 2, 20), Stride::new(k, 1, 1)])
        .collect();
    let want: Vec<u8> = sels.iter().flat_map(|s| expected(&a, s)).collect();
    assert!(
        !r.resident(&sels).unwrap(),
        "the test reads around the cache"
    );
    let mut out = vec![0u8; want.len()];
    r.read_many_into(&sels, &mut out).unwrap();
    assert!(
        out == want,
        "the file the reader opened, not the one now at its name"
    );
}

/// One reader gathers on several threads at once (a batch that finds the reader's
/// ring and buffers in use makes its own), with every engine and depth, cold and warm.
#[test]
fn one_reader_gathers_on_several_threads_at_once() {
    let d = tmp();
    let p = d.path().join("v.ra");
    let a = volume(FRAMES as usize);
    rastore::write(&p, &a).unwrap();
    let _ = std::process::Command::new("sync").status();
    let r = DataReader::open(&p).unwrap();
    let sels: Vec<Vec<Stride>> = (0..FRAMES)
        .rev()
        .map(|k| vec![Stride::all(32), Stride::new(3, 2, 20), Stride::new(k, 1, 1)])
        .collect();
    let want: Vec<u8> = sels.iter().flat_map(|s| expected(&a, s)).collect();
    std::thread::scope(|s| {
        let (r, sels, want, p) = (&r, &sels, &want, &p);
        let workers: Vec<_> = (0..4)
            .map(|t| {
                s.spawn(move || {
                    for round in 0..6 {
                        if (t + round) % 3 == 0 {
                            evict(std::slice::from_ref(p));
                        }
                        let mut out = vec![0u8; want.len()];
                        let o = options(t as u8, round % 2 == 0, 8 + t * 8);
                        r.read_many_into_with(sels, &mut out, &o).unwrap();
                        assert!(out == *want, "thread {t}, round {round}");
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
    });
}

/// Julia Bools that are neither 0 nor 1 are refused, from an object as from a file,
/// gathered or read as a slab: the same error in either place, naming the element by
/// its place in what was read.
#[test]
fn bools_neither_0_nor_1_are_refused_from_objects_as_from_files() {
    // Bools [4, 3]; element 5 ([1, 1]) holds 7.
    let mut bytes = words(&[MAGIC, 0, 5, 1, 12, 2, 4, 3]);
    bytes.extend([1, 0, 1, 0, 0, 7, 0, 1, 1, 0, 1, 0]);
    let d = tmp();
    let p = d.path().join("b.ra");
    std::fs::write(&p, &bytes).unwrap();
    let frame = |k| [Stride::all(4), Stride::new(k, 1, 1)];
    // Frame 1 third: its 7 lands at place 9 of the output.
    let (good, bad) = ([frame(0), frame(2)], [frame(2), frame(0), frame(1)]);
    let mut out = vec![0u8; 12];
    let r = DataReader::open(&p).unwrap();
    r.read_many_into(&good, &mut out[..8]).unwrap();
    assert_eq!(out[..8], [1, 0, 1, 0, 1, 0, 1, 0]);
    let local = r.read_many_into(&bad, &mut out).unwrap_err().to_string();
    assert!(local.contains("element 9 is 7, not 0 or 1"), "{local}");
    let Some(server) = Server::start() else {
        return;
    };
    std::fs::write(server.object("b.ra"), &bytes).unwrap();
    let o = RemoteRa::open_with("s3://bkt/b.ra", Server::options(&server.endpoint(), 2)).unwrap();
    o.read_many_into(&good, &mut out[..8]).unwrap();
    assert_eq!(out[..8], [1, 0, 1, 0, 1, 0, 1, 0]);
    let e = o.read_many_into(&bad, &mut out).unwrap_err().to_string();
    assert!(e.starts_with("s3://bkt/b.ra"), "{e}");
    let after_path = |m: &str| m.split_once(": ").map(|(_, rest)| rest.to_string());
    assert_eq!(after_path(&e), after_path(&local), "the same error");
    let mut slab = vec![0u8; 8];
    let e = o.read_slab_into(1..3, &mut slab).unwrap_err().to_string();
    assert!(e.contains("element 5 is 7, not 0 or 1"), "{e}");
    o.read_slab_into(2..3, &mut slab[..4]).unwrap();
    assert_eq!(slab[..4], [1, 0, 1, 0]);
}
