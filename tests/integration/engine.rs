//! The conversion engine (issue 30): every pair of formats through the real `ra`,
//! judged by NumPy, Pillow and zarr-python; a sink dropped midway leaves nothing, in
//! every place; any box read from any source is ndarray's slice of the whole array.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ndarray::{ArrayD, IxDyn, ShapeBuilder, Slice};
use proptest::prelude::*;
use rastore::convert::{self, Block, ConvertOptions, Desc, Grain, Source};
use rastore::DType;

use crate::common::{python, python_has, tmp, words, MAGIC};
use crate::tool::{fails, ok, s};

/// The files under `dir` (in its folders too), sorted.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The names of a folder's entries, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// NumPy, Pillow and zarr-python make every input; `ra convert` turns each into every
/// output; they read every output back and compare it with the array they made.
#[test]
fn every_pair_of_formats_converts_as_the_peers_read_it() {
    if !python_has("numpy, PIL, zarr") {
        return;
    }
    let d = tmp();
    let made = python(&[
        "-c",
        r#"
import numpy as np, sys, zarr
from PIL import Image
d = sys.argv[1]
rng = np.random.default_rng(30)
arrays = {
    'img': rng.integers(0, 256, (12, 9, 3), dtype=np.uint8),
    'g16': rng.integers(0, 65536, (10, 11), dtype=np.uint16),
    'vol': rng.standard_normal((7, 5, 6)).astype(np.float32),
}
for name, a in arrays.items():
    np.save(f'{d}/{name}.npy', a)
    np.save(f'{d}/{name}.c.npy', a)
    np.save(f'{d}/{name}.f.npy', np.asfortranarray(a))
    np.savez(f'{d}/{name}.s.npz', a=a)
    np.savez_compressed(f'{d}/{name}.d.npz', a=a)
    chunks = tuple(max(1, n // 2) for n in a.shape)
    z = zarr.create_array(f'{d}/{name}.v3.zarr', shape=a.shape, dtype=a.dtype, chunks=chunks, zarr_format=3)
    z[...] = a
    z = zarr.create_array(f'{d}/{name}.v2.zarr', shape=a.shape, dtype=a.dtype, chunks=chunks, zarr_format=2)
    z[...] = a
    if name != 'vol':
        Image.fromarray(a).save(f'{d}/{name}.p.png')
print('made')
"#,
        s(d.path()),
    ]);
    assert!(made.contains("made"), "{made}");
    let mut outputs = Vec::new();
    for name in ["img", "g16", "vol"] {
        // The .ra input, from NumPy's file.
        let ra = d.path().join(format!("{name}.r.ra"));
        ok(&["convert", s(&d.path().join(format!("{name}.npy"))), s(&ra)]);
        let mut inputs = vec![
            "r.ra", "c.npy", "f.npy", "s.npz", "d.npz", "v3.zarr", "v2.zarr",
        ];
        if name != "vol" {
            inputs.push("p.png");
        }
        for input in inputs {
            let from = d.path().join(format!("{name}.{input}"));
            for ext in ["ra", "npy", "png", "zarr"] {
                let to = d.path().join(format!("{name}.{input}.to.{ext}"));
                if name == "vol" && ext == "png" {
                    let e = fails(&["convert", s(&from), s(&to)], 1);
                    assert!(e.contains("a PNG needs dims"), "{e}");
                    assert!(!to.exists());
                    continue;
                }
                ok(&["convert", s(&from), s(&to)]);
                outputs.push(to);
            }
        }
    }
    let mut args = vec![
        "-c",
        r#"
import numpy as np, sys, zarr
from PIL import Image
d, outs = sys.argv[1], sys.argv[2:]
def read_ra(p):
    b = open(p, 'rb').read()
    magic, flags, eltype, elbyte, size, ndims = np.frombuffer(b[:48], '<u8')
    assert flags == 0, (p, flags)
    dims = tuple(int(x) for x in np.frombuffer(b[48:48 + 8 * int(ndims)], '<u8'))
    kind = {1: 'i', 2: 'u', 3: 'f'}[int(eltype)]
    dt = np.dtype(f'<{kind}{int(elbyte)}')
    start = 48 + 8 * int(ndims)
    return np.frombuffer(b[start:start + int(size)], dt).reshape(dims, order='F')
checked = 0
for p in outs:
    name = p.split('/')[-1].split('.')[0]
    want = np.load(f'{d}/{name}.npy')
    if p.endswith('.ra'): got = read_ra(p)
    elif p.endswith('.npy'): got = np.load(p)
    elif p.endswith('.zarr'):
        # A group of the one array, named after the input (an archive's: its member).
        g = zarr.open_group(p, mode='r')
        (key,) = g.array_keys()
        assert key == ('a' if '.s.npz' in p or '.d.npz' in p else p.split('/')[-1].split('.to.')[0].rsplit('.', 1)[0]), (p, key)
        got = g[key][...]
    else: got = np.asarray(Image.open(p))
    assert got.dtype == want.dtype, (p, got.dtype, want.dtype)
    assert got.shape == want.shape, (p, got.shape, want.shape)
    assert np.array_equal(got, want), p
    checked += 1
print('checked', checked)
"#,
        s(d.path()),
    ];
    args.extend(outputs.iter().map(|p| s(p)));
    let out = python(&args);
    // img and g16: 8 inputs × 4 outputs; vol: 7 × 3.
    assert!(out.contains("checked 85"), "{out}");
}

/// A source of `dims` u16 zeros that fails on its `fail_at`-th box.
struct Failing {
    desc: Desc,
    boxes: AtomicUsize,
    fail_at: usize,
    shown: PathBuf,
}

impl Failing {
    fn new(dims: &[u64], fail_at: usize) -> Failing {
        Failing {
            desc: Desc {
                dtype: DType::U16,
                dims: dims.to_vec(),
                trailer: Vec::new(),
            },
            boxes: AtomicUsize::new(0),
            fail_at,
            shown: "failing".into(),
        }
    }
}

impl Source for Failing {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        // One frame a box: many boxes, written before the failure.
        let mut c = self.desc.dims.clone();
        *c.last_mut().unwrap() = 1;
        Grain::Chunks(c)
    }

    fn read_box(&self, _block: &Block, out: &mut [u8]) -> rastore::Result<()> {
        if self.boxes.fetch_add(1, Ordering::SeqCst) == self.fail_at {
            return Err(rastore::ErrorKind::InvalidArgument("the source failed".into()).into());
        }
        out.fill(7);
        Ok(())
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

/// Every local sink: a copy that fails midway leaves the folder as it was (no output,
/// no hidden file or folder), and a sink dropped after some boxes does too.
#[test]
fn a_sink_aborted_midway_leaves_nothing_locally() {
    let d = tmp();
    std::fs::write(d.path().join("keep"), b"x").unwrap();
    let before = listing(d.path());
    let dims = [64u64, 48, 40];
    for (name, options) in [
        ("a.ra", ConvertOptions::new()),
        ("c.ra", ConvertOptions::new().compress(true)),
        ("a.npy", ConvertOptions::new()),
        (
            "a.zarr",
            ConvertOptions::new().chunks(Some(vec![64, 48, 1])),
        ),
        ("z.zarr", ConvertOptions::new().compress(true)),
    ] {
        let out = d.path().join(name);
        // A Zarr array of frames is many boxes, a file one (of 240 KiB).
        let source = Failing::new(&dims, if name == "a.zarr" { 17 } else { 0 });
        let sink = convert::create(&out, source.desc().clone(), &options).unwrap();
        let e = convert::copy(Box::new(source), sink, &mut |_, _| ()).unwrap_err();
        assert!(e.to_string().contains("the source failed"), "{name}: {e}");
        assert_eq!(listing(d.path()), before, "{name} left something");
        // The same with boxes written by hand, then the sink dropped.
        let desc = Failing::new(&dims, 0).desc.clone();
        let sink = convert::create(&out, desc, &options).unwrap();
        let shape = match sink.grain() {
            Grain::Chunks(c) => c,
            _ => vec![64, 48, 1],
        };
        let frame = Block {
            origin: vec![0; 3],
            shape,
        };
        sink.write_box(&frame, &vec![1u8; frame.count() as usize * 2])
            .unwrap();
        drop(sink);
        assert_eq!(listing(d.path()), before, "{name} dropped left something");
    }
    // A PNG (gathered in memory) too.
    let out = d.path().join("a.png");
    let source = Failing::new(&[30, 20], 0);
    let sink = convert::create(&out, source.desc().clone(), &ConvertOptions::new()).unwrap();
    assert!(convert::copy(Box::new(source), sink, &mut |_, _| ()).is_err());
    assert_eq!(listing(d.path()), before);
}

/// In object storage: a `.ra` upload aborted (no object, no pending multipart upload),
/// a Zarr array's chunks removed, a `.npy` never uploaded.
#[test]
fn a_sink_aborted_midway_leaves_nothing_in_object_storage() {
    let Some(server) = crate::s3_server::Server::start() else {
        return;
    };
    let remote = rastore::remote::RemoteOptions {
        part_bytes: 5 << 20,
        ..crate::s3_server::Server::options(&server.endpoint(), 0)
    };
    let options = ConvertOptions::new()
        .remote(remote)
        .chunks(Some(vec![64, 48, 1]));
    let bucket = server.object("");
    let before = files_under(&bucket);
    // Frames of 12 KiB, parts of 5 MiB: the failure comes after a part is up.
    let dims = [64u64, 96, 1000];
    // Parts of 426 frames (the second fails), chunks of one, a file in one box.
    for (key, fail_at) in [("a.ra", 1), ("a.zarr", 5), ("a.npy", 0)] {
        let url = format!("s3://{}/{key}", crate::s3_server::BUCKET);
        let source = Failing::new(&dims, fail_at);
        let sink = convert::create(Path::new(&url), source.desc().clone(), &options).unwrap();
        let e = convert::copy(Box::new(source), sink, &mut |_, _| ()).unwrap_err();
        assert!(e.to_string().contains("the source failed"), "{key}: {e}");
        assert_eq!(files_under(&bucket), before, "{key} left objects");
        assert!(
            server.pending_uploads().is_empty(),
            "{key}: {:?}",
            server.pending_uploads()
        );
    }
    // And a whole one lands.
    let url = format!("s3://{}/whole.ra", crate::s3_server::BUCKET);
    let source = Failing::new(&dims, usize::MAX);
    let sink = convert::create(Path::new(&url), source.desc().clone(), &options).unwrap();
    convert::copy(Box::new(source), sink, &mut |_, _| ()).unwrap();
    let got = std::fs::read(server.object("whole.ra")).unwrap();
    assert_eq!(got.len(), 48 + 24 + 64 * 96 * 1000 * 2);
    assert!(got[72..].iter().all(|&b| b == 7));
}

/// Every format to and from object storage: each local input to an object of each
/// format, each object back to a local `.ra`, the same array every time.
#[test]
fn every_format_goes_to_and_from_object_storage() {
    let Some(server) = crate::s3_server::Server::start() else {
        return;
    };
    let options = ConvertOptions::new()
        .remote(crate::s3_server::Server::options(&server.endpoint(), 0))
        .overwrite(true);
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    let a = ArrayD::from_shape_fn(IxDyn(&[40, 30]).f(), |i| (i[0] * 7 + i[1] * 3) as u16);
    rastore::write(p("a.ra"), &a).unwrap();
    for ext in ["npy", "png", "zarr"] {
        convert::convert(
            &p("a.ra"),
            &p(&format!("a.{ext}")),
            &options,
            &mut |_, _| (),
        )
        .unwrap();
    }
    for input in ["a.ra", "a.npy", "a.png", "a.zarr"] {
        for ext in ["ra", "npy", "png", "zarr"] {
            let url = format!("s3://{}/{input}.{ext}", crate::s3_server::BUCKET);
            let url = Path::new(&url);
            convert::convert(&p(input), url, &options, &mut |_, _| ()).unwrap();
            let back = p("back.ra");
            convert::convert(url, &back, &options, &mut |_, _| ()).unwrap();
            let got = rastore::read::<u16>(&back).unwrap();
            assert_eq!(got, a, "{input} -> {}", url.display());
        }
    }
}

/// Boxes written into a file made for filling, from several threads in any order (as
/// Dask's workers write), make the array; boxes outside it and encoded files are
/// refused.
#[test]
fn boxes_written_into_a_created_file_make_the_array() {
    let d = tmp();
    let path = d.path().join("f.ra");
    rastore::create_file(&path, DType::U16, &[9, 7, 5]).unwrap();
    let want = ArrayD::from_shape_fn(IxDyn(&[9, 7, 5]).f(), |i| {
        (i[0] + 10 * i[1] + 100 * i[2]) as u16
    });
    let boxes: Vec<Block> = (0..5u64)
        .rev()
        .flat_map(|k| {
            [(0u64, 4u64), (4, 5)].map(|(o, n)| Block {
                origin: vec![o, 0, k],
                shape: vec![n, 7, 1],
            })
        })
        .collect();
    std::thread::scope(|s| {
        for b in &boxes {
            let (path, want) = (&path, &want);
            s.spawn(move || {
                let mut view = want.view();
                for (k, (&o, &n)) in b.origin.iter().zip(&b.shape).enumerate() {
                    view.slice_axis_inplace(
                        ndarray::Axis(k),
                        Slice::from(o as usize..(o + n) as usize),
                    );
                }
                let bytes: Vec<u8> = view.t().iter().flat_map(|v| v.to_ne_bytes()).collect();
                convert::write_box(path, b, &bytes).unwrap();
            });
        }
    });
    assert_eq!(rastore::read::<u16>(&path).unwrap(), want);
    let outside = Block {
        origin: vec![5, 0, 0],
        shape: vec![5, 7, 1],
    };
    let e = convert::write_box(&path, &outside, &[0; 70]).unwrap_err();
    assert!(
        e.to_string()
            .contains("a box at [5, 0, 0] of [5, 7, 1] in an array of [9, 7, 5]"),
        "{e}"
    );
    let lz4 = d.path().join("c.ra");
    let zeros = ArrayD::<u16>::zeros(IxDyn(&[64, 64, 8]));
    rastore::WriteOptions::new()
        .compress(true)
        .write(&lz4, &zeros)
        .unwrap();
    let e = convert::write_box(&lz4, &boxes[0], &[0; 56]).unwrap_err();
    assert!(e.to_string().contains("plain native-order data"), "{e}");
}

/// An array's file in each format the property test reads boxes from.
fn write_all_formats(dir: &Path, a: &ArrayD<u16>, chunk: &[u64]) -> Vec<PathBuf> {
    let dims: Vec<u64> = a.shape().iter().map(|&n| n as u64).collect();
    let column_major: Vec<u16> = a.t().iter().copied().collect();
    let le: Vec<u8> = column_major.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut files = Vec::new();
    let p = |n: &str| dir.join(n);
    rastore::write(p("plain.ra"), a).unwrap();
    files.push(p("plain.ra"));
    rastore::WriteOptions::new()
        .compress(true)
        .write(p("lz4.ra"), a)
        .unwrap();
    files.push(p("lz4.ra"));
    // Big-endian data after a little-endian header (flags bit 0).
    let mut be = words(&[MAGIC, 1, 2, 2, le.len() as u64, dims.len() as u64]);
    be.extend(words(&dims));
    be.extend(column_major.iter().flat_map(|v| v.to_be_bytes()));
    std::fs::write(p("be.ra"), be).unwrap();
    files.push(p("be.ra"));
    // NumPy's C order and Fortran order, by hand.
    let shape: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
    let shape = match shape.len() {
        1 => format!("{},", shape[0]),
        _ => shape.join(", "),
    };
    for (name, fortran) in [("c.npy", false), ("f.npy", true)] {
        let dict = format!(
            "{{'descr': '<u2', 'fortran_order': {}, 'shape': ({}), }}",
            if fortran { "True" } else { "False" },
            shape
        );
        let mut head = format!("{dict:<117}");
        head.truncate(117);
        head.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((head.len() as u16).to_le_bytes());
        bytes.extend(head.as_bytes());
        if fortran {
            bytes.extend(&le);
        } else {
            bytes.extend(a.iter().flat_map(|v| v.to_le_bytes()));
        }
        std::fs::write(p(name), bytes).unwrap();
        files.push(p(name));
    }
    let options = ConvertOptions::new().chunks(Some(chunk.to_vec()));
    convert::convert(&p("plain.ra"), &p("a.zarr"), &options, &mut |_, _| ()).unwrap();
    files.push(p("a.zarr"));
    if dims.len() == 2 {
        convert::convert(&p("plain.ra"), &p("a.png"), &options, &mut |_, _| ()).unwrap();
        files.push(p("a.png"));
    }
    files
}

/// A box: its origin and its extents.
type Boxed = (Vec<u64>, Vec<u64>);

/// Dims, a chunk shape within them, boxes within them, and a seed for the values.
fn case() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, Vec<Boxed>, u64)> {
    prop::collection::vec(1u64..9, 1..5).prop_flat_map(|dims| {
        let chunk: Vec<_> = dims.iter().map(|&d| 1..=d).collect();
        let boxes = prop::collection::vec(
            dims.iter()
                .map(|&d| (0..d).prop_flat_map(move |o| (Just(o), 1..=d - o)))
                .collect::<Vec<_>>(),
            1..6,
        )
        .prop_map(|bs| {
            bs.into_iter()
                .map(|b| b.into_iter().unzip::<u64, u64, Vec<u64>, Vec<u64>>())
                .collect::<Vec<_>>()
        });
        (Just(dims), chunk, boxes, any::<u64>())
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Any box of any source (`.ra` plain, LZ4 and big-endian, `.npy` in C and
    /// Fortran order, Zarr, PNG) is ndarray's slice of the whole array, in column-major
    /// order.
    #[test]
    fn any_box_of_any_source_is_the_ndarray_slice((dims, chunk, boxes, seed) in case()) {
        let shape: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
        let n: usize = shape.iter().product();
        let values: Vec<u16> = (0..n as u64)
            .map(|i| (i.wrapping_mul(seed | 1) >> 7) as u16 % 40)
            .collect();
        let a = ArrayD::from_shape_vec(IxDyn(&shape).f(), values).unwrap();
        let d = tmp();
        for file in write_all_formats(d.path(), &a, &chunk) {
            let source = convert::open(&file, &ConvertOptions::new()).unwrap();
            prop_assert_eq!(&source.desc().dims, &dims);
            for (origin, extent) in &boxes {
                let block = Block { origin: origin.clone(), shape: extent.clone() };
                let mut got = vec![0u8; block.count() as usize * 2];
                source.read_box(&block, &mut got).unwrap();
                let got: Vec<u16> = got.chunks(2).map(|b| u16::from_ne_bytes([b[0], b[1]])).collect();
                let mut view = a.view();
                for (k, (&o, &e)) in origin.iter().zip(extent).enumerate() {
                    view.slice_axis_inplace(ndarray::Axis(k), Slice::from(o as usize..(o + e) as usize));
                }
                let want: Vec<u16> = view.t().iter().copied().collect();
                prop_assert_eq!(got, want, "{} {:?}", file.display(), block);
            }
        }
    }
}
