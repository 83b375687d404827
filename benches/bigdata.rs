//! Bigger than RAM: whole-file scans of a float32 file larger than the machine's
//! memory, cold, against the device's floor, in one run. By hand, never in CI:
//!
//! ```text
//! RASTORE_BIG_DIR=/work/big cargo bench --bench bigdata
//! ```
//!
//! It makes `$RASTORE_BIG_DIR/big.ra` (`RASTORE_BIG_GIB`, default 32; kept for the
//! next run) and, when run as root, drops the page cache before every run (it says so
//! when it cannot: then the figures are not cold). Each case runs `RASTORE_BIG_RUNS`
//! times (default 3) and prints its median, min and max, the ratio of the median to
//! the floor's, and the peak anonymous memory of the process during the case:
//! - `dd iflag=direct bs=16M`: the device's floor; `dd bs=16M`: buffered;
//! - the mapping, summed in parallel as `ra stats` did (no advice, and
//!   `MADV_SEQUENTIAL`);
//! - [`rastore::scan`], buffered (fadvise, cache dropped behind) and direct
//!   (`O_DIRECT`), slab sizes and reader counts;
//! - the real `ra stats` and `ra verify` (`target/release/ra`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use rastore::scan::{scan, ScanMethod, ScanOptions};
use rastore::{Advice, DType, MappedRa, MappedRaMut};
use rayon::prelude::*;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The sum of the float32 elements of `bytes`, folded on the thread pool.
fn sum(bytes: &[u8]) -> f64 {
    bytes
        .par_chunks(1 << 20)
        .map(|c| {
            c.chunks_exact(4)
                .map(|x| f64::from(f32::from_ne_bytes([x[0], x[1], x[2], x[3]])))
                .sum::<f64>()
        })
        .sum()
}

fn rss_anon() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("RssAnon:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib << 10)
}

/// Drops the page cache (root only); says whether it could.
fn drop_cache() -> bool {
    let _ = Command::new("sync").status();
    std::fs::write("/proc/sys/vm/drop_caches", "3").is_ok()
}

fn make(path: &Path, gib: u64) {
    if rastore::info::info(path).is_ok_and(|i| i.header.dims()[2] == gib * 256) {
        return;
    }
    eprintln!("making {} ({gib} GiB)", path.display());
    // SAFETY: the file is new and this process alone writes it.
    let mut m = unsafe { MappedRaMut::create(path, DType::F32, &[1024, 1024, gib * 256]) }
        .expect("create the big file");
    m.par_fill(|offset, chunk: &mut [f32]| {
        for (i, x) in chunk.iter_mut().enumerate() {
            *x = ((offset + i) % 251) as f32;
        }
    })
    .expect("fill");
    m.flush().expect("flush");
}

struct Case {
    name: String,
    times: Vec<f64>,
    peak_anon: u64,
}

fn run(name: &str, runs: usize, cold: bool, body: &dyn Fn()) -> Case {
    let mut times = Vec::new();
    let peak = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    for _ in 0..runs {
        if cold {
            drop_cache();
        }
        let base = rss_anon();
        done.store(false, Ordering::Relaxed);
        let t = std::thread::scope(|s| {
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    peak.fetch_max(rss_anon().saturating_sub(base), Ordering::Relaxed);
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
            });
            let t = Instant::now();
            body();
            let t = t.elapsed().as_secs_f64();
            done.store(true, Ordering::Relaxed);
            t
        });
        times.push(t);
    }
    times.sort_by(f64::total_cmp);
    Case {
        name: name.into(),
        times,
        peak_anon: peak.into_inner(),
    }
}

fn shell(cmd: &[&str]) {
    let ok = Command::new(cmd[0])
        .args(&cmd[1..])
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "{cmd:?} failed");
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let Some(dir) = std::env::var_os("RASTORE_BIG_DIR").map(PathBuf::from) else {
        // `cargo bench` runs every bench: this one only when asked, being 32 GiB.
        println!("bigdata: skipped (set RASTORE_BIG_DIR to a folder with 32 GiB free)");
        return;
    };
    let gib: u64 = env_or("RASTORE_BIG_GIB", 32);
    let runs: usize = env_or("RASTORE_BIG_RUNS", 3);
    let only = std::env::var("RASTORE_BIG_ONLY").unwrap_or_default();
    let path = dir.join("big.ra");
    make(&path, gib);
    let cold = drop_cache();
    if !cold {
        eprintln!("cannot drop the page cache (not root?): the figures below are NOT cold");
    }
    let p = path.to_str().expect("a UTF-8 path").to_string();
    let ra = std::env::var("RASTORE_RA").unwrap_or_else(|_| "target/release/ra".into());
    let len = std::fs::metadata(&path).expect("stat").len();
    let header = rastore::info::info(&path).expect("info").header;
    let data = header.data_offset()..header.data_offset() + header.nbytes();

    let mut cases: Vec<(String, Box<dyn Fn()>)> = vec![
        (
            "dd iflag=direct bs=16M (floor)".into(),
            Box::new(|| {
                shell(&[
                    "dd",
                    &format!("if={p}"),
                    "of=/dev/null",
                    "iflag=direct",
                    "bs=16M",
                ])
            }),
        ),
        (
            "dd bs=16M (buffered)".into(),
            Box::new(|| shell(&["dd", &format!("if={p}"), "of=/dev/null", "bs=16M"])),
        ),
    ];
    for (name, advice) in [
        ("mapping, no advice", None),
        ("mapping, MADV_SEQUENTIAL", Some(Advice::Sequential)),
    ] {
        let path = path.clone();
        cases.push((
            name.into(),
            Box::new(move || {
                // SAFETY: nothing writes the file during the bench.
                let m = unsafe { MappedRa::open(&path) }.expect("map");
                if let Some(a) = advice {
                    m.advise(a);
                }
                std::hint::black_box(sum(m.data_bytes()));
            }),
        ));
    }
    for (method, slab_mib, readers) in [
        (ScanMethod::Buffered, 8, 2),
        (ScanMethod::Direct, 8, 1),
        (ScanMethod::Direct, 8, 2),
        (ScanMethod::Direct, 16, 4),
    ] {
        let (path, data) = (path.clone(), data.clone());
        let options = ScanOptions {
            method,
            slab_bytes: slab_mib << 20,
            readers,
        };
        cases.push((
            format!("scan {method:?}, {slab_mib} MiB x {readers}"),
            Box::new(move || {
                let mut total = 0.0;
                scan(&path, data.clone(), 4, &options, |_, b| {
                    total += sum(b);
                    Ok(())
                })
                .expect("scan");
                std::hint::black_box(total);
            }),
        ));
    }
    for sub in ["stats", "verify"] {
        let (ra, p) = (ra.clone(), p.clone());
        cases.push((
            format!("ra {sub}"),
            Box::new(move || shell(&[&ra, sub, &p])),
        ));
    }

    println!("{gib} GiB file ({len} bytes), {runs} runs each, cold: {cold}");
    println!("case\tmedian s\tmin s\tmax s\tGB/s\tvs floor\tpeak anon MiB");
    let mut floor = None;
    for (name, body) in &cases {
        if !only.is_empty() && !name.contains(&only) && floor.is_some() {
            continue;
        }
        let c = run(name, runs, cold, body.as_ref());
        let median = c.times[c.times.len() / 2];
        let floor_s = *floor.get_or_insert(median);
        println!(
            "{}\t{:.1}\t{:.1}\t{:.1}\t{:.2}\t{:.2}\t{}",
            c.name,
            median,
            c.times[0],
            c.times[c.times.len() - 1],
            len as f64 / median / 1e9,
            floor_s / median,
            c.peak_anon >> 20
        );
    }
}
