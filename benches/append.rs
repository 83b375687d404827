//! Appending frames to one growing file (issue 14), against the peers, in one run.
//!
//! - a1: 1 GiB as 256 frames of 1024 × 1024 f32 (4 MiB), committed once at the end,
//!   against a plain `write()` of the same bytes to a new file (both without and with
//!   one fsync at the end).
//! - a2: the same, with a commit per frame, durable and not, against `write()` +
//!   `fdatasync` per frame, and, through `benches/append_peers.py` when the Python in
//!   `.venv` has h5py and npy-append-array: h5py's chunked append with a flush per frame
//!   (compared with commits not synced: neither reaches the disk) and with flush +
//!   fsync (compared with durable commits), and npy-append-array (never synced).
//! - a3: the RawArray paper's figure 1 as appends to one file: 100,000 vectors of 10
//!   f32 and 10,000 10 × 10 f32 images, each appended and committed (visible, not
//!   synced), then each read back from the file opened once; against HDF5 with one
//!   dataset per array in one open file (with `--features bench-hdf5`).
//!
//! Runs on `$RASTORE_BENCH_DIR` (default `target/bench-data`), on the disk. Each case
//! runs `RASTORE_BENCH_RUNS` times (default 3) after a `sync`; the median is reported
//! with the spread. `cargo bench --bench append [--features bench-hdf5]`.

use std::fs::{self, File};
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ndarray::{Array2, ArrayD, Axis, IxDyn, ShapeBuilder};
use rastore::{AppendOptions, DType, MappedRa};

const FRAME: [u64; 2] = [1024, 1024];
const FRAMES: usize = 256;

fn dir() -> PathBuf {
    let d = std::env::var_os("RASTORE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data"));
    fs::create_dir_all(&d).expect("bench dir");
    d
}

fn runs() -> usize {
    std::env::var("RASTORE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
}

/// Median and range of `runs()` timings of `f`, each after a `sync` and with `path`
/// removed first.
fn time(path: &Path, mut f: impl FnMut()) -> (Duration, Duration, Duration) {
    let mut t: Vec<Duration> = (0..runs())
        .map(|_| {
            let _ = fs::remove_file(path);
            rustix::fs::sync();
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    let _ = fs::remove_file(path);
    t.sort();
    (t[t.len() / 2], t[0], t[t.len() - 1])
}

fn report(name: &str, (med, lo, hi): (Duration, Duration, Duration), base: Option<Duration>) {
    let gib_s = (FRAMES as f64 * 4.0 / 1024.0) / med.as_secs_f64();
    let ratio = base.map_or(String::new(), |b| {
        format!(
            "  {:.2}x the baseline's speed",
            b.as_secs_f64() / med.as_secs_f64()
        )
    });
    println!(
        "{name:<46} {:>8.3} s ({:.3}..{:.3})  {gib_s:>5.2} GiB/s{ratio}",
        med.as_secs_f64(),
        lo.as_secs_f64(),
        hi.as_secs_f64()
    );
}

fn frames() -> Vec<Array2<f32>> {
    (0..8)
        .map(|t| Array2::from_shape_fn((1024, 1024).f(), |(i, j)| (t * 7 + i + j) as f32))
        .collect()
}

fn plain_write(path: &Path, frames: &[Array2<f32>], sync_each: bool, sync_end: bool) {
    let mut f = File::create(path).expect("create");
    for t in 0..FRAMES {
        let bytes: &[u8] =
            bytemuck::cast_slice(frames[t % frames.len()].t().to_slice().expect("F order"));
        f.write_all(bytes).expect("write");
        if sync_each {
            f.sync_data().expect("sync");
        }
    }
    if sync_end {
        f.sync_data().expect("sync");
    }
}

fn appended(path: &Path, frames: &[Array2<f32>], durable: bool, commit_each: bool) {
    let mut out = AppendOptions::new()
        .durable(durable)
        .create(path, DType::F32, &FRAME)
        .expect("create");
    for t in 0..FRAMES {
        out.append(&frames[t % frames.len()]).expect("append");
        if commit_each {
            out.commit().expect("commit");
        }
    }
    out.finish().expect("finish");
}

fn a1_a2(dir: &Path) {
    let frames = frames();
    let p = dir.join("a1.ra");
    println!("== a1: 1 GiB as 256 frames of 4 MiB, one commit at the end");
    let base = time(&p, || plain_write(&p, &frames, false, false));
    report("write() to a new file, no fsync", base, None);
    report(
        "append, one commit, not synced",
        time(&p, || appended(&p, &frames, false, false)),
        Some(base.0),
    );
    let base_sync = time(&p, || plain_write(&p, &frames, false, true));
    report("write() to a new file, one fsync", base_sync, None);
    report(
        "append, one durable commit",
        time(&p, || appended(&p, &frames, true, false)),
        Some(base_sync.0),
    );
    println!("== a2: 1 GiB as 256 frames of 4 MiB, a durable commit per frame");
    let base = time(&p, || plain_write(&p, &frames, true, false));
    report("write() + fdatasync per frame", base, None);
    let ours = time(&p, || appended(&p, &frames, true, true));
    report("append + durable commit per frame", ours, Some(base.0));
    let visible = time(&p, || appended(&p, &frames, false, true));
    report(
        "append + commit per frame, not synced",
        visible,
        Some(base.0),
    );
    peers(dir, ours.0, visible.0);
}

/// h5py and npy-append-array, through the script beside this file.
fn peers(dir: &Path, durable: Duration, visible: Duration) {
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python3");
    let python = std::env::var_os("RASTORE_PYTHON").map_or(venv, PathBuf::from);
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("benches/append_peers.py");
    let out = Command::new(&python)
        .arg(&script)
        .arg(dir)
        .arg(runs().to_string())
        .output();
    let out = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        Ok(o) => {
            println!(
                "(peers skipped: {})",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return;
        }
        Err(e) => {
            println!("(peers skipped: {}: {e})", python.display());
            return;
        }
    };
    for line in out.lines() {
        // `name<TAB>median<TAB>min<TAB>max`, seconds.
        let f: Vec<&str> = line.split('\t').collect();
        if let [name, med, lo, hi] = f[..] {
            let s = |x: &str| Duration::from_secs_f64(x.parse().unwrap_or(f64::NAN));
            let t = (s(med), s(lo), s(hi));
            report(name, t, None);
            // A peer that syncs is compared with durable commits, one that does not
            // with commits that are not synced.
            let (ours, how) = if name.contains("fsync") {
                (durable, "durable commit")
            } else {
                (visible, "commit, not synced,")
            };
            println!(
                "{:<46} append + {how} per frame is {:.2}x its speed",
                "",
                t.0.as_secs_f64() / ours.as_secs_f64()
            );
        }
    }
}

/// Figure 1 as appends: `n` arrays of `shape`, each appended and committed, then each
/// read back as an owned array from the file opened once. Per array.
fn a3_ours(path: &Path, shape: &[u64], n: usize) -> Duration {
    let arrays: Vec<ArrayD<f32>> = (0..16)
        .map(|t| {
            ArrayD::from_shape_fn(
                IxDyn(&shape.iter().map(|&d| d as usize).collect::<Vec<_>>()).f(),
                |ix| (t + ix[0]) as f32,
            )
        })
        .collect();
    let _ = fs::remove_file(path);
    rustix::fs::sync();
    let start = Instant::now();
    let mut out = AppendOptions::new()
        .durable(false)
        .create(path, DType::F32, shape)
        .expect("create");
    for k in 0..n {
        out.append(&arrays[k % arrays.len()]).expect("append");
        out.commit().expect("commit");
    }
    out.finish().expect("finish");
    // SAFETY: the file is complete and nothing writes it while it is mapped.
    let file = unsafe { MappedRa::open(path) }.expect("open");
    let all = file.view::<f32>().expect("view");
    let last = all.ndim() - 1;
    for k in 0..n {
        black_box(all.index_axis(Axis(last), k).to_owned());
    }
    let t = start.elapsed();
    let _ = fs::remove_file(path);
    t / n as u32
}

#[cfg(feature = "bench-hdf5")]
fn a3_hdf5(path: &Path, shape: &[u64], n: usize) -> Duration {
    // HDF5 stores C order: C-order arrays of the same logical shape.
    let arrays: Vec<ArrayD<f32>> = (0..16)
        .map(|t| {
            ArrayD::from_shape_fn(
                IxDyn(&shape.iter().map(|&d| d as usize).collect::<Vec<_>>()),
                |ix| (t + ix[0]) as f32,
            )
        })
        .collect();
    let _ = fs::remove_file(path);
    rustix::fs::sync();
    let start = Instant::now();
    let f = hdf5_metno::File::create(path).expect("create");
    for k in 0..n {
        let name = format!("x{k}");
        f.new_dataset_builder()
            .with_data(&arrays[k % arrays.len()])
            .create(name.as_str())
            .expect("write");
    }
    drop(f);
    let f = hdf5_metno::File::open(path).expect("open");
    for k in 0..n {
        black_box(
            f.dataset(&format!("x{k}"))
                .expect("dataset")
                .read_dyn::<f32>()
                .expect("read"),
        );
    }
    drop(f);
    let t = start.elapsed();
    let _ = fs::remove_file(path);
    t / n as u32
}

fn a3(dir: &Path) {
    println!(
        "== a3: the paper's figure 1 as appends to one file, per array (write, commit, read back)"
    );
    for (name, shape, n) in [
        ("vectors of 10 f32", &[10u64][..], 100_000),
        ("10x10 f32 images", &[10, 10][..], 10_000),
    ] {
        let mut ours: Vec<Duration> = (0..runs())
            .map(|_| a3_ours(&dir.join("a3.ra"), shape, n))
            .collect();
        ours.sort();
        let o = ours[ours.len() / 2];
        print!(
            "{name:<20} ({n}): rastore append {:>7.2} µs ({:.2}..{:.2})",
            us(o),
            us(ours[0]),
            us(ours[ours.len() - 1])
        );
        #[cfg(feature = "bench-hdf5")]
        {
            let mut h: Vec<Duration> = (0..runs())
                .map(|_| a3_hdf5(&dir.join("a3.h5"), shape, n))
                .collect();
            h.sort();
            let m = h[h.len() / 2];
            print!(
                ", HDF5 dataset per array {:>7.2} µs ({:.2}..{:.2}): {:.1}x",
                us(m),
                us(h[0]),
                us(h[h.len() - 1]),
                m.as_secs_f64() / o.as_secs_f64()
            );
        }
        println!();
    }
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` passes nothing to run.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = dir();
    println!("bench dir {}", dir.display());
    a3(&dir);
    a1_a2(&dir);
}
