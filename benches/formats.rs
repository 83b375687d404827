//! rastore against the formats users would pick instead, in one run (criterion).
//!
//! - b1 open latency: open + validate + typed view, for 1 KiB, 1 MiB, 1 GiB and 64 GiB
//!   (sparse) files: rastore, ndarray-npy over a mapping, safetensors over a mapping, and
//!   the floor (open + fstat + mmap + munmap + close, no parsing).
//! - b2 scan: summing a 1 GiB f32 view (warm page cache) against a `Vec<f32>` in RAM.
//! - b3 the RawArray paper's figures 1-2: write then read back arrays of 10 f32
//!   (100,000 of them), 10x10 images (10,000) and one 10x100,000 matrix, one file per
//!   array: rastore, NPY (ndarray-npy), the floor (`fs::write` + `fs::read`). Timed per
//!   array; multiply by the count for the paper's totals.
//! - b4 the paper's figure 3: read one 28x28 (MNIST-like) or 32x32x3 (CIFAR-like) u8
//!   image per file, .ra against .png (png crate) and the floor (`fs::read` of the raw
//!   bytes), and from one stacked .ra of 50,000 images opened once. Timed per image.
//! - b5 the write path: a 4096x4096 f32 array in C order (transposed on the way) and in
//!   Fortran order (a straight copy) against `fs::write` of the same bytes; and the
//!   transpose alone in RAM against a memcpy.
//!
//! b3 and b4 run on the disk (`$RASTORE_BENCH_DIR`, default `target/bench-data`) and
//! on tmpfs (`/dev/shm`). `RASTORE_BENCH_QUICK=1` shortens measurement for a smoke run.

use std::fs::{self, File};
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::measurement::WallTime;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use memmap2::{Mmap, MmapOptions};
use ndarray::{Array2, Array3, ArrayD, ArrayView1, ArrayViewD, IxDyn, ShapeBuilder};
use ndarray_npy::ViewNpyExt;
use rastore::MappedRa;

fn disk_dir() -> PathBuf {
    let d = std::env::var_os("RASTORE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data"));
    fs::create_dir_all(&d).expect("bench dir");
    d
}

fn shm_dir() -> Option<PathBuf> {
    let d = PathBuf::from("/dev/shm/rastore-bench");
    fs::create_dir_all(&d).ok().map(|_| d)
}

/// Writes back every dirty page before a writing benchmark, so that none pays for the
/// write-back of the one before it (on this disk that once swung a 4 MB write by 40%).
fn settle() {
    rustix::fs::sync();
}

fn quick() -> bool {
    std::env::var_os("RASTORE_BENCH_QUICK").is_some()
}

fn tune(g: &mut BenchmarkGroup<'_, WallTime>) {
    g.sample_size(if quick() { 10 } else { 30 });
    g.warm_up_time(Duration::from_millis(if quick() { 100 } else { 500 }));
    g.measurement_time(Duration::from_secs(if quick() { 1 } else { 4 }));
}

// ---------------------------------------------------------------- b1: open latency

/// A file of `n` f32 in each format: rastore, NPY (Fortran order), safetensors. Files
/// over 1 GiB are made sparse (header written, length set), as is the 64 GiB case.
fn b1_files(dir: &Path, label: &str, n: u64) -> [PathBuf; 3] {
    let ra = dir.join(format!("b1-{label}.ra"));
    let npy = dir.join(format!("b1-{label}.npy"));
    let st = dir.join(format!("b1-{label}.safetensors"));
    let nbytes = 4 * n;
    let ra_header = rastore::Header::new(rastore::DType::F32, &[n])
        .expect("header")
        .encode();
    let npy_header = rastore::formats::npy::NpyHeader::encode(
        &rastore::formats::npy::Descr::for_dtype(rastore::DType::F32).expect("f32"),
        true,
        &[n],
    );
    let json =
        format!("{{\"x\":{{\"dtype\":\"F32\",\"shape\":[{n}],\"data_offsets\":[0,{nbytes}]}}}}");
    let mut json = json.into_bytes();
    json.resize(json.len().div_ceil(8) * 8, b' ');
    let mut st_header = (json.len() as u64).to_le_bytes().to_vec();
    st_header.extend(json);
    for (path, header) in [(&ra, ra_header), (&npy, npy_header), (&st, st_header)] {
        let want = header.len() as u64 + nbytes;
        if fs::metadata(path).ok().map(|m| m.len()) == Some(want) {
            continue;
        }
        let mut f = File::create(path).expect("create");
        f.write_all(&header).expect("header");
        if nbytes <= 1 << 20 {
            let data: Vec<u8> = (0..n).flat_map(|i| (i as f32).to_le_bytes()).collect();
            f.write_all(&data).expect("data");
        } else {
            f.set_len(want).expect("sparse length");
        }
    }
    [ra, npy, st]
}

fn bench_b1(c: &mut Criterion) {
    let dir = disk_dir();
    let mut g = c.benchmark_group("b1_open");
    tune(&mut g);
    for (label, n) in [
        ("1KiB", 256u64),
        ("1MiB", 1 << 18),
        ("1GiB", 1 << 28),
        ("64GiB", 1 << 34),
    ] {
        let [ra, npy, st] = b1_files(&dir, label, n);
        g.bench_function(format!("{label}/rastore"), |b| {
            b.iter(|| {
                // SAFETY: bench files are private and never modified while mapped.
                let f = unsafe { MappedRa::open(&ra) }.expect("open");
                let v = f.view::<f32>().expect("view");
                black_box(v.len());
            })
        });
        g.bench_function(format!("{label}/npy"), |b| {
            b.iter(|| {
                let file = File::open(&npy).expect("open");
                // SAFETY: as above.
                let map = unsafe { Mmap::map(&file) }.expect("mmap");
                let v = ArrayViewD::<f32>::view_npy(&map).expect("view");
                black_box(v.len());
            })
        });
        g.bench_function(format!("{label}/safetensors"), |b| {
            b.iter(|| {
                let file = File::open(&st).expect("open");
                // SAFETY: as above.
                let map = unsafe { Mmap::map(&file) }.expect("mmap");
                let t = safetensors::SafeTensors::deserialize(&map).expect("parse");
                let x = t.tensor("x").expect("tensor");
                let v: &[f32] = bytemuck::try_cast_slice(x.data()).expect("aligned");
                black_box(ArrayView1::from(v).len());
            })
        });
        g.bench_function(format!("{label}/floor"), |b| {
            b.iter(|| {
                let file = File::open(&ra).expect("open");
                let len = file.metadata().expect("fstat").len();
                // One fstat in all: the length is passed, so memmap2 does not stat again.
                // SAFETY: as above.
                let map = unsafe { MmapOptions::new().len(len as usize).map(&file) }.expect("mmap");
                black_box((len, map.len()));
            })
        });
    }
    g.finish();
}

// ---------------------------------------------------------------- b2: scan

fn sum(x: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let chunks = x.chunks_exact(16);
    let rest: f32 = chunks.remainder().iter().sum();
    for c in chunks {
        for k in 0..16 {
            acc[k] += c[k];
        }
    }
    acc.iter().sum::<f32>() + rest
}

fn bench_b2(c: &mut Criterion) {
    let path = disk_dir().join("b2-1GiB.ra");
    let n = 1usize << 28;
    if fs::metadata(&path).ok().map(|m| m.len()) != Some(56 + 4 * n as u64) {
        let a = ndarray::Array1::from_iter((0..n).map(|i| (i % 7) as f32));
        rastore::write(&path, &a).expect("write");
    }
    let ram: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    // SAFETY: a private bench file, not modified while mapped.
    let file = unsafe { MappedRa::open(&path) }.expect("open");
    let view = file.view::<f32>().expect("view");
    let mapped = view.as_slice_memory_order().expect("contiguous");
    black_box(sum(mapped)); // warm the page cache and the page tables
    let mut g = c.benchmark_group("b2_scan_1GiB");
    tune(&mut g);
    g.sample_size(10);
    g.bench_function("mapped_view", |b| {
        b.iter(|| black_box(sum(black_box(mapped))))
    });
    g.bench_function("vec_in_ram", |b| b.iter(|| black_box(sum(black_box(&ram)))));
    g.finish();
}

// ---------------------------------------------------------------- b3: paper figs 1-2

fn b3_case(g: &mut BenchmarkGroup<'_, WallTime>, dir: &Path, name: &str, shape: &[usize]) {
    let n: usize = shape.iter().product();
    let a = ArrayD::from_shape_vec(IxDyn(shape).f(), (0..n).map(|i| i as f32 * 0.5).collect())
        .expect("shape");
    let bytes: Vec<u8> =
        bytemuck::cast_slice(a.as_slice_memory_order().expect("contiguous")).to_vec();
    let pool = 64;
    let paths = |ext: &str| -> Vec<PathBuf> {
        (0..pool)
            .map(|i| dir.join(format!("b3-{name}-{i}.{ext}")))
            .collect()
    };
    let (ra, npy, raw) = (paths("ra"), paths("npy"), paths("bin"));
    let mut k = 0;
    g.bench_function(format!("{name}/rastore"), |b| {
        settle();
        b.iter(|| {
            let p = &ra[k % pool];
            k += 1;
            rastore::write(p, &a).expect("write");
            black_box(rastore::read::<f32>(p).expect("read"));
        })
    });
    g.bench_function(format!("{name}/npy"), |b| {
        settle();
        b.iter(|| {
            let p = &npy[k % pool];
            k += 1;
            ndarray_npy::write_npy(p, &a).expect("write");
            let back: ArrayD<f32> = ndarray_npy::read_npy(p).expect("read");
            black_box(back);
        })
    });
    g.bench_function(format!("{name}/floor"), |b| {
        settle();
        b.iter(|| {
            let p = &raw[k % pool];
            k += 1;
            fs::write(p, &bytes).expect("write");
            black_box(fs::read(p).expect("read"));
        })
    });
    #[cfg(feature = "bench-hdf5")]
    {
        // HDF5 stores C order: give it a C-order array of the same logical shape.
        let c_order = a.as_standard_layout().into_owned();
        let h5 = paths("h5");
        g.bench_function(format!("{name}/hdf5_file_per_array"), |b| {
            settle();
            b.iter(|| {
                let p = &h5[k % pool];
                k += 1;
                let f = hdf5_metno::File::create(p).expect("create");
                f.new_dataset_builder()
                    .with_data(&c_order)
                    .create("x")
                    .expect("write");
                drop(f);
                let f = hdf5_metno::File::open(p).expect("open");
                black_box(
                    f.dataset("x")
                        .expect("dataset")
                        .read_dyn::<f32>()
                        .expect("read"),
                );
            })
        });
        let all_path = dir.join(format!("b3-{name}-all.h5"));
        let one = hdf5_metno::File::create(&all_path).expect("create");
        g.bench_function(format!("{name}/hdf5_dataset_per_array"), |b| {
            settle();
            b.iter(|| {
                k += 1;
                let ds = format!("x{k}");
                one.new_dataset_builder()
                    .with_data(&c_order)
                    .create(ds.as_str())
                    .expect("write");
                black_box(
                    one.dataset(&ds)
                        .expect("dataset")
                        .read_dyn::<f32>()
                        .expect("read"),
                );
            })
        });
        // It grows by one array per iteration: do not leave gigabytes on tmpfs.
        drop(one);
        let _ = fs::remove_file(&all_path);
    }
}

fn bench_b3(c: &mut Criterion) {
    for (fs_name, dir) in [("disk", Some(disk_dir())), ("tmpfs", shm_dir())] {
        let Some(dir) = dir else { continue };
        let mut g = c.benchmark_group(format!("b3_{fs_name}"));
        tune(&mut g);
        b3_case(&mut g, &dir, "a_vec10", &[10]);
        b3_case(&mut g, &dir, "b_img10x10", &[10, 10]);
        b3_case(&mut g, &dir, "c_mat10x100000", &[10, 100_000]);
        g.finish();
    }
}

// ---------------------------------------------------------------- b4: paper fig 3

/// Smooth structure plus noise, so PNG compresses it as it does real photographs.
fn image(seed: usize, channels: usize, w: usize, h: usize) -> Array3<u8> {
    let mut state = seed as u64 * 0x9e37_79b9_7f4a_7c15 + 1;
    Array3::from_shape_fn((channels, w, h).f(), |(c, x, y)| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let smooth =
            128.0 + 60.0 * ((x + seed) as f64 / 5.0).sin() * ((y + 3 * c) as f64 / 7.0).cos();
        (smooth + (state % 17) as f64 - 8.0).clamp(0.0, 255.0) as u8
    })
}

fn png_bytes(img: &Array3<u8>) -> Vec<u8> {
    let (c, w, h) = img.dim();
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w as u32, h as u32);
    enc.set_color(if c == 1 {
        png::ColorType::Grayscale
    } else {
        png::ColorType::Rgb
    });
    enc.set_depth(png::BitDepth::Eight);
    let mut wr = enc.write_header().expect("png header");
    wr.write_image_data(img.as_slice_memory_order().expect("contiguous"))
        .expect("png data");
    wr.finish().expect("png");
    out
}

fn bench_b4(c: &mut Criterion) {
    let count = 50_000usize;
    let pool = if quick() { 500 } else { 5_000 };
    for (fs_name, dir) in [("disk", Some(disk_dir())), ("tmpfs", shm_dir())] {
        let Some(dir) = dir else { continue };
        let mut g = c.benchmark_group(format!("b4_{fs_name}"));
        tune(&mut g);
        for (name, ch, w, h) in [
            ("mnist28x28", 1usize, 28usize, 28usize),
            ("cifar32x32x3", 3, 32, 32),
        ] {
            let sub = dir.join(format!("b4-{name}"));
            fs::create_dir_all(&sub).expect("dir");
            let marker = sub.join(format!("ready-{pool}"));
            if !marker.exists() {
                for i in 0..pool {
                    let img = image(i, ch, w, h);
                    let view = if ch == 1 {
                        img.index_axis(ndarray::Axis(0), 0).into_dyn()
                    } else {
                        img.view().into_dyn()
                    };
                    rastore::write(sub.join(format!("{i}.ra")), &view).expect("ra");
                    fs::write(sub.join(format!("{i}.png")), png_bytes(&img)).expect("png");
                    fs::write(
                        sub.join(format!("{i}.bin")),
                        img.as_slice_memory_order().expect("contiguous"),
                    )
                    .expect("bin");
                }
                fs::write(&marker, b"").expect("marker");
            }
            let stacked = sub.join("stacked.ra");
            if !stacked.exists() {
                // SAFETY: a new private file, filled here before anything else maps it.
                let mut m = unsafe {
                    rastore::MappedRaMut::create(
                        &stacked,
                        rastore::DType::U8,
                        &[ch as u64, w as u64, h as u64, count as u64],
                    )
                }
                .expect("create");
                m.par_fill_slabs(|range, mut slab| {
                    for (i, mut one) in range.zip(slab.axis_iter_mut(ndarray::Axis(3))) {
                        one.assign(&image(i, ch, w, h));
                    }
                })
                .expect("fill");
                drop(m);
            }
            settle();
            let names: Vec<[PathBuf; 3]> = (0..pool)
                .map(|i| ["ra", "png", "bin"].map(|e| sub.join(format!("{i}.{e}"))))
                .collect();
            let mut k = 0;
            g.bench_function(format!("{name}/ra_file"), |b| {
                b.iter(|| {
                    k += 1;
                    black_box(rastore::read::<u8>(&names[k % pool][0]).expect("read"))
                })
            });
            g.bench_function(format!("{name}/png_file"), |b| {
                b.iter(|| {
                    k += 1;
                    let f = File::open(&names[k % pool][1]).expect("open");
                    let len = f.metadata().expect("stat").len();
                    let r = std::io::BufReader::new(f);
                    black_box(rastore::formats::png::decode(r, len).expect("decode"))
                })
            });
            g.bench_function(format!("{name}/floor_fs_read"), |b| {
                b.iter(|| {
                    k += 1;
                    black_box(fs::read(&names[k % pool][2]).expect("read"))
                })
            });
            // SAFETY: the stacked file is private and not modified while mapped.
            let file = unsafe { MappedRa::open(&stacked) }.expect("open");
            let all = file.view_ix::<u8, ndarray::Ix4>().expect("view");
            let mut sink = vec![0u8; ch * w * h];
            g.bench_function(format!("{name}/stacked_ra"), |b| {
                b.iter(|| {
                    k += 1;
                    let one = all.index_axis(ndarray::Axis(3), k % count);
                    sink.copy_from_slice(one.as_slice_memory_order().expect("contiguous"));
                    black_box(&sink);
                })
            });
        }
        g.finish();
    }
}

// ---------------------------------------------------------------- b5: the write path

fn bench_b5(c: &mut Criterion) {
    let dir = disk_dir();
    let n = 4096;
    let c_order = Array2::from_shape_fn((n, n), |(i, j)| (i * n + j) as f32);
    let mut f_order = Array2::<f32>::zeros((n, n).f());
    f_order.assign(&c_order);
    assert!(f_order.t().is_standard_layout() && f_order == c_order);
    let bytes: Vec<u8> = bytemuck::cast_slice(c_order.as_slice().expect("contiguous")).to_vec();
    let mut g = c.benchmark_group("b5_write_64MiB");
    tune(&mut g);
    g.sample_size(10);
    let p = dir.join("b5.ra");
    g.bench_function("c_order_transposed", |b| {
        settle();
        b.iter(|| rastore::write(&p, &c_order).expect("write"))
    });
    g.bench_function("fortran_straight_copy", |b| {
        settle();
        b.iter(|| rastore::write(&p, &f_order).expect("write"))
    });
    let q = dir.join("b5.bin");
    g.bench_function("fs_write_floor", |b| {
        settle();
        b.iter(|| fs::write(&q, &bytes).expect("write"))
    });
    // The reordering alone, in memory, against a copy of the same bytes.
    let mut out = vec![0f32; n * n];
    let c_dyn = c_order.view().into_dyn();
    g.bench_function("transpose_in_ram", |b| {
        b.iter(|| rastore::copy_to_fortran(black_box(&c_dyn), &mut out))
    });
    let flat = c_order.as_slice().expect("contiguous");
    g.bench_function("memcpy_in_ram", |b| {
        b.iter(|| out.copy_from_slice(black_box(flat)))
    });
    g.finish();
}

criterion_group!(benches, bench_b1, bench_b2, bench_b3, bench_b4, bench_b5);
criterion_main!(benches);
