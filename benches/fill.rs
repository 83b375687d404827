//! Filling a 1 GiB float32 array: the fill-in writer against plain `write()` and an
//! in-memory fill, in one run. Each iteration makes a new file (or buffer), so every
//! figure includes first-touch page faults, as a real fill of a new file does.
//!
//! (a) `par_fill_slabs` through the mapping, (b) one thread through the mapping,
//! (c) one `write()` of a filled in-memory buffer to a new file, (c2) the same then
//! `fsync`, (d) filling a fresh anonymous buffer in parallel; (a) and (b) also with
//! `flush` (msync + fsync). Files go to `$RASTORE_BENCH_DIR`, else the temp dir.
//! `RASTORE_BENCH_GIB` changes the size (default 1).

use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rastore::{DType, MappedRaMut};

fn value(i: usize) -> f32 {
    (i & 0xffff) as f32 * 0.5
}

fn fill(offset: usize, chunk: &mut [f32]) {
    chunk
        .iter_mut()
        .enumerate()
        .for_each(|(i, x)| *x = value(offset + i));
}

struct Setup {
    dir: PathBuf,
    dims: [u64; 3],
    bytes: u64,
}

impl Setup {
    fn new() -> Setup {
        let gib: f64 = std::env::var("RASTORE_BENCH_GIB")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1.0);
        let planes = ((gib * 256.0).round() as u64).max(1);
        let dir = std::env::var_os("RASTORE_BENCH_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(std::env::temp_dir);
        Setup {
            dir,
            dims: [1024, 1024, planes],
            bytes: 4 * 1024 * 1024 * planes,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir
            .join(format!("rastore-bench-{}-{name}.ra", std::process::id()))
    }

    /// Times `iters` runs of `body` on a fresh path each, removing the file untimed.
    fn timed(&self, name: &str, iters: u64, body: impl Fn(&PathBuf)) -> Duration {
        let path = self.path(name);
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let _ = std::fs::remove_file(&path);
            let t = Instant::now();
            body(&path);
            total += t.elapsed();
        }
        let _ = std::fs::remove_file(&path);
        total
    }
}

fn mapped(s: &Setup, path: &PathBuf) -> MappedRaMut {
    // SAFETY: the bench file is private to this process and never truncated.
    unsafe { MappedRaMut::create(path, DType::F32, &s.dims) }.expect("create")
}

fn bench_fill(c: &mut Criterion) {
    let s = Setup::new();
    let mut g = c.benchmark_group("fill");
    g.throughput(Throughput::Bytes(s.bytes));
    g.sample_size(10);
    g.warm_up_time(Duration::from_millis(1));
    g.measurement_time(Duration::from_secs(20));

    for flush in [false, true] {
        let tag = if flush { "+flush" } else { "" };
        g.bench_function(format!("a_par_fill_slabs{tag}"), |b| {
            b.iter_custom(|iters| {
                s.timed("a", iters, |p| {
                    let mut m = mapped(&s, p);
                    let per = (s.dims[0] * s.dims[1]) as usize;
                    m.par_fill_slabs(|range, mut slab| {
                        let data = slab.as_slice_memory_order_mut().expect("contiguous");
                        fill(range.start * per, data);
                    })
                    .expect("fill");
                    if flush {
                        m.flush().expect("flush");
                    }
                })
            })
        });
        g.bench_function(format!("b_one_thread_mapping{tag}"), |b| {
            b.iter_custom(|iters| {
                s.timed("b", iters, |p| {
                    let mut m = mapped(&s, p);
                    let mut v = m.view_mut::<f32>().expect("view");
                    fill(0, v.as_slice_memory_order_mut().expect("contiguous"));
                    if flush {
                        m.flush().expect("flush");
                    }
                })
            })
        });
        let buf: Vec<u8> = {
            let mut v = vec![0f32; (s.bytes / 4) as usize];
            fill(0, &mut v);
            bytemuck::cast_slice(&v).to_vec()
        };
        let name = if flush { "c2_write+fsync" } else { "c_write" };
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                s.timed("c", iters, |p| {
                    let mut f = File::create(p).expect("create");
                    f.write_all(&buf).expect("write");
                    if flush {
                        f.sync_all().expect("fsync");
                    }
                })
            })
        });
    }
    g.bench_function("d_anon_par_fill", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let t = Instant::now();
                let mut v: Vec<f32> = bytemuck::zeroed_vec((s.bytes / 4) as usize);
                rastore::fill::par_fill_flat(&mut v, 0, fill);
                total += t.elapsed();
                drop(std::hint::black_box(v));
            }
            total
        })
    });
    g.finish();
}

criterion_group!(benches, bench_fill);
criterion_main!(benches);
