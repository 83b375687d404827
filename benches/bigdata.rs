//! Bigger than RAM: whole-file scans, fills and conversions of float32 files larger
//! than the machine's memory, cold, against the device's floor, in one run. By hand,
//! never in CI:
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
//!
//! `RASTORE_BIG_PART` picks `scan`, `fill`, `convert` or `read` (default: all four):
//! - fills of a new `RASTORE_BIG_GIB` file against `dd oflag=direct` from `/dev/zero`:
//!   `par_fill_slabs` (which writes behind itself), the same fill through the mapping
//!   with nothing written behind (as before), and two `open_slab` workers;
//! - conversions at `RASTORE_BIG_CONV_GIB` (default 24: two files of it must fit on
//!   the disk) against `cp`: C-order `.npy` → `.ra`, `.ra` → `.npy`, Fortran-order
//!   `.npy` → `.ra`, and `ra stack` of 256 MiB inputs against
//!   `cat` of them.
//!
//! - reads of two files of half `RASTORE_BIG_GIB` each (together larger than memory,
//!   each one small enough to load): `ra diff` of the two (equal) against `cmp` of
//!   them, `rastore::read` of one whole, and `ra slice` of half of one against `dd`
//!   of those bytes into a file.
//!
//! - gathers (`RASTORE_BIG_PART=gather`): shuffled batches of samples of the
//!   `RASTORE_BIG_GIB` file (`[1024, 1024, 256·GiB]` float32): `[:, j, k]` (4 KiB),
//!   `[:, j:j+4, k]` (16 KiB) and `[:, j:j+256, k]` (1 MiB) blocks at random `j` and
//!   `k`, 20,000 of each (2,000 of 1 MiB) in batches of `RASTORE_GATHER_BATCH` (500),
//!   sorted and in random order, read by `DataReader::read_many_into_with` with each
//!   engine (io_uring, threads), buffered and `O_DIRECT`, at several queue depths,
//!   against `fio --rw=randread --ioengine=libaio --iodepth=32 --direct=1` of as
//!   many reads of the same size over the same file (the device's floor).
//!
//! `RASTORE_BIG_ONLY` (a part of a case's name) runs the floors and the cases whose
//! names hold it; a conversion stage none of whose cases it picks is skipped whole,
//! its input not made.
//!
//! Besides times, each case reports the peak anonymous memory (of this process, or of
//! the `ra` it runs), the peak of dirty and writeback pages (`/proc/meminfo`), and the
//! share of CPU time spent waiting on I/O (`/proc/stat`, as `vmstat`'s `wa`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
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

/// The value in KiB of the line `key` of a `/proc` file, in bytes.
fn proc_kib(file: &str, key: &str) -> u64 {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib << 10)
}

fn rss_anon() -> u64 {
    proc_kib("/proc/self/status", "RssAnon:")
}

/// `f()`, and the most each of `probes` read, sampled `every` while `f` ran and once
/// after it: the peaks of memory during a case.
fn peaks_during<T, const N: usize>(
    every: std::time::Duration,
    probes: [&(dyn Fn() -> u64 + Sync); N],
    f: impl FnOnce() -> T,
) -> (T, [u64; N]) {
    let peaks: [AtomicU64; N] = std::array::from_fn(|_| AtomicU64::new(0));
    let sample = || {
        for (peak, probe) in peaks.iter().zip(&probes) {
            peak.fetch_max(probe(), Ordering::Relaxed);
        }
    };
    let done = AtomicBool::new(false);
    let out = std::thread::scope(|s| {
        s.spawn(|| {
            while !done.load(Ordering::Relaxed) {
                sample();
                std::thread::sleep(every);
            }
        });
        let out = f();
        done.store(true, Ordering::Relaxed);
        out
    });
    sample();
    (out, peaks.map(AtomicU64::into_inner))
}

/// The `ra` (or other program) a case is running now, for its anonymous memory.
static CHILD: AtomicU32 = AtomicU32::new(0);

fn child_anon() -> u64 {
    match CHILD.load(Ordering::Relaxed) {
        0 => 0,
        pid => proc_kib(&format!("/proc/{pid}/status"), "RssAnon:"),
    }
}

/// Dirty pages and pages being written back, machine-wide.
fn dirty() -> u64 {
    proc_kib("/proc/meminfo", "Dirty:") + proc_kib("/proc/meminfo", "Writeback:")
}

/// CPU ticks: (waiting on I/O, all).
fn cpu_ticks() -> (u64, u64) {
    let s = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let v: Vec<u64> = s
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    (v.get(4).copied().unwrap_or(0), v.iter().sum())
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
    peak_dirty: u64,
    /// Share of CPU time waiting on I/O over all runs, in percent.
    wait: f64,
}

/// Runs `body` `runs` times (cold: after dropping the cache), `tidy` after each run,
/// untimed (removing its output).
fn run(name: &str, runs: usize, cold: bool, body: &dyn Fn(), tidy: &dyn Fn()) -> Case {
    let mut times = Vec::new();
    let (mut peak_anon, mut peak_dirty) = (0, 0);
    let (mut wait, mut all) = (0, 0);
    for _ in 0..runs {
        if cold {
            drop_cache();
        }
        let base = rss_anon();
        let (w0, a0) = cpu_ticks();
        let anon = || rss_anon().saturating_sub(base).max(child_anon());
        let every = std::time::Duration::from_millis(20);
        let (t, [a, d]) = peaks_during(every, [&anon, &dirty], || {
            let t = Instant::now();
            body();
            t.elapsed().as_secs_f64()
        });
        (peak_anon, peak_dirty) = (peak_anon.max(a), peak_dirty.max(d));
        let (w1, a1) = cpu_ticks();
        (wait, all) = (wait + w1 - w0, all + a1 - a0);
        times.push(t);
        tidy();
    }
    times.sort_by(f64::total_cmp);
    Case {
        name: name.into(),
        times,
        peak_anon,
        peak_dirty,
        wait: 100.0 * wait as f64 / all.max(1) as f64,
    }
}

fn shell(cmd: &[&str]) {
    let mut child = Command::new(cmd[0])
        .args(&cmd[1..])
        .stderr(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    CHILD.store(child.id(), Ordering::Relaxed);
    let ok = child.wait().is_ok_and(|s| s.success());
    CHILD.store(0, Ordering::Relaxed);
    assert!(ok, "{cmd:?} failed");
}

/// Cases: a name, the timed body, and what to do after each run, untimed.
type Cases = Vec<(String, Box<dyn Fn()>, Box<dyn Fn()>)>;

fn nothing() -> Box<dyn Fn()> {
    Box::new(|| {})
}

fn remove(path: &Path) -> Box<dyn Fn()> {
    let path = path.to_path_buf();
    Box::new(move || {
        let _ = std::fs::remove_file(&path);
    })
}

/// Prints the cases' figures, each against the first case's median (the floor).
fn report(title: &str, len: u64, runs: usize, cold: bool, only: &str, cases: &Cases) {
    println!("{title} ({len} bytes), {runs} runs each, cold: {cold}");
    println!("case\tmedian s\tmin s\tmax s\tGB/s\tvs floor\tpeak anon MiB\tpeak dirty MiB\twa %");
    let mut floor = None;
    for (name, body, tidy) in cases {
        if !only.is_empty() && !name.contains(only) && floor.is_some() {
            continue;
        }
        let c = run(name, runs, cold, body.as_ref(), tidy.as_ref());
        let median = c.times[c.times.len() / 2];
        let floor_s = *floor.get_or_insert(median);
        println!(
            "{}\t{:.1}\t{:.1}\t{:.1}\t{:.2}\t{:.2}\t{}\t{}\t{:.0}",
            c.name,
            median,
            c.times[0],
            c.times[c.times.len() - 1],
            len as f64 / median / 1e9,
            floor_s / median,
            c.peak_anon >> 20,
            c.peak_dirty >> 20,
            c.wait,
        );
    }
}

/// Writes a float32 `.npy` of `shape` (C or Fortran order) at memory speed.
fn make_npy(path: &Path, shape: &[u64], fortran: bool) {
    use std::io::Write;
    if path.exists() {
        return;
    }
    eprintln!("making {}", path.display());
    let descr = rastore::formats::npy::Descr::for_dtype(DType::F32).expect("f32");
    let head = rastore::formats::npy::NpyHeader::encode(&descr, fortran, shape);
    let mut w =
        std::io::BufWriter::with_capacity(64 << 20, std::fs::File::create(path).expect("create"));
    w.write_all(&head).expect("write");
    let total: u64 = shape.iter().product();
    let piece: Vec<f32> = (0..(16u64 << 20)).map(|i| (i % 251) as f32).collect();
    let mut left = total;
    while left > 0 {
        let n = left.min(piece.len() as u64) as usize;
        w.write_all(bytemuck::cast_slice(&piece[..n]))
            .expect("write");
        left -= n as u64;
    }
    w.flush().expect("flush");
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let Some(dir) = std::env::var_os("RASTORE_BIG_DIR").map(PathBuf::from) else {
        // `cargo bench` runs every bench: this one only when asked, being 32 GiB.
        println!("bigdata: skipped (set RASTORE_BIG_DIR to a folder with 64 GiB free)");
        return;
    };
    let gib: u64 = env_or("RASTORE_BIG_GIB", 32);
    let runs: usize = env_or("RASTORE_BIG_RUNS", 3);
    let only = std::env::var("RASTORE_BIG_ONLY").unwrap_or_default();
    let cold = drop_cache();
    if !cold {
        eprintln!("cannot drop the page cache (not root?): the figures below are NOT cold");
    }
    let ra = std::env::var("RASTORE_RA").unwrap_or_else(|_| "target/release/ra".into());
    let b = Bench {
        dir,
        ra,
        runs,
        cold,
        only,
    };
    let part = std::env::var("RASTORE_BIG_PART").unwrap_or_default();
    let path = b.dir.join("big.ra");
    if part.is_empty() || part == "scan" {
        scans(&b, &path, gib);
    }
    // The fills and conversions write files as large: the scans' input goes first.
    if part.is_empty() || part == "fill" {
        let _ = std::fs::remove_file(&path);
        fills(&b, gib);
    }
    if part.is_empty() || part == "convert" {
        let _ = std::fs::remove_file(&path);
        conversions(&b, env_or("RASTORE_BIG_CONV_GIB", 24));
    }
    if part.is_empty() || part == "read" {
        let _ = std::fs::remove_file(&path);
        reads(&b, (gib / 2).max(1));
    }
    if part == "gather" {
        gathers(&b, &path, gib);
    }
}

/// Where and how the cases run.
struct Bench {
    dir: PathBuf,
    ra: String,
    runs: usize,
    cold: bool,
    only: String,
}

impl Bench {
    fn report(&self, title: &str, len: u64, cases: &Cases) {
        report(title, len, self.runs, self.cold, &self.only, cases);
    }

    /// Whether `RASTORE_BIG_ONLY` (a part of a case's name) picks the case `name`.
    fn wants(&self, name: &str) -> bool {
        self.only.is_empty() || name.contains(&self.only)
    }

    fn at(&self, name: &str) -> String {
        self.dir
            .join(name)
            .to_str()
            .expect("a UTF-8 path")
            .to_string()
    }
}

fn scans(b: &Bench, path: &Path, gib: u64) {
    make(path, gib);
    let p = path.to_str().expect("a UTF-8 path").to_string();
    let len = std::fs::metadata(path).expect("stat").len();
    let header = rastore::info::info(path).expect("info").header;
    let data = header.data_offset()..header.data_offset() + header.nbytes();
    let mut cases: Cases = Vec::new();
    for (name, direct) in [
        ("dd iflag=direct bs=16M (floor)", true),
        ("dd bs=16M (buffered)", false),
    ] {
        cases.push((name.into(), dd(&p, "/dev/null", direct, None), nothing()));
    }
    for (name, advice) in [
        ("mapping, no advice", None),
        ("mapping, MADV_SEQUENTIAL", Some(Advice::Sequential)),
    ] {
        let path = path.to_path_buf();
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
            nothing(),
        ));
    }
    for (method, slab_mib, readers) in [
        (ScanMethod::Buffered, 8, 2),
        (ScanMethod::Direct, 8, 1),
        (ScanMethod::Direct, 8, 2),
        (ScanMethod::Direct, 16, 4),
    ] {
        let (path, data) = (path.to_path_buf(), data.clone());
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
            nothing(),
        ));
    }
    for sub in ["stats", "verify"] {
        let (ra, p) = (b.ra.clone(), p.clone());
        cases.push((
            format!("ra {sub}"),
            Box::new(move || shell(&[&ra, sub, &p])),
            nothing(),
        ));
    }
    b.report(&format!("scans of a {gib} GiB file"), len, &cases);
}

/// A value for each element, cheap to make (the fills measure the writing).
fn value(i: usize) -> f32 {
    (i % 251) as f32
}

/// Fills a mapping (a whole file or a slab) with `par_fill_slabs`, then flushes it.
fn fill_slabs(m: &mut MappedRaMut) {
    m.par_fill_slabs(|range, mut slab: ndarray::ArrayViewMutD<'_, f32>| {
        let per = slab.len() / range.len().max(1);
        let first = range.start * per;
        if let Some(s) = slab.as_slice_memory_order_mut() {
            s.iter_mut()
                .enumerate()
                .for_each(|(i, x)| *x = value(first + i));
        }
    })
    .expect("fill");
    m.flush().expect("flush");
}

fn fills(b: &Bench, gib: u64) {
    let dims = [1024, 1024, gib * 256];
    let len = gib << 30;
    let out = b.dir.join("fill.ra");
    let o = b.at("fill.ra");
    let mut cases: Cases = vec![(
        "dd if=/dev/zero oflag=direct bs=16M (floor)".into(),
        Box::new(move || {
            let count = format!("count={}", gib * 64);
            shell(&[
                "dd",
                "if=/dev/zero",
                &format!("of={o}"),
                "oflag=direct",
                "bs=16M",
                &count,
            ]);
        }),
        remove(&out),
    )];
    {
        let out_ = out.clone();
        cases.push((
            "par_fill_slabs, written behind, flush".into(),
            Box::new(move || {
                // SAFETY: the file is new and this process alone writes it.
                let mut m =
                    unsafe { MappedRaMut::create(&out_, DType::F32, &dims) }.expect("create");
                fill_slabs(&mut m);
            }),
            remove(&out),
        ));
    }
    {
        let out_ = out.clone();
        cases.push((
            "the mapping filled in parallel, nothing written behind, flush".into(),
            Box::new(move || {
                // SAFETY: the file is new and this process alone writes it.
                let mut m =
                    unsafe { MappedRaMut::create(&out_, DType::F32, &dims) }.expect("create");
                let data: &mut [f32] = bytemuck::cast_slice_mut(m.data_mut());
                data.par_chunks_mut(2 << 20).enumerate().for_each(|(k, c)| {
                    c.iter_mut()
                        .enumerate()
                        .for_each(|(i, x)| *x = value(k * (2 << 20) + i));
                });
                m.flush().expect("flush");
            }),
            remove(&out),
        ));
    }
    {
        let out_ = out.clone();
        cases.push((
            "2 open_slab workers, par_fill_slabs each, flush".into(),
            Box::new(move || {
                rastore::create_file(&out_, DType::F32, &dims).expect("create");
                let half = dims[2] / 2;
                std::thread::scope(|s| {
                    for range in [0..half, half..dims[2]] {
                        let out = &out_;
                        s.spawn(move || {
                            // SAFETY: each worker maps a disjoint slab; nothing else writes.
                            let mut m =
                                unsafe { MappedRaMut::open_slab(out, range) }.expect("open_slab");
                            fill_slabs(&mut m);
                        });
                    }
                });
            }),
            remove(&out),
        ));
    }
    b.report(&format!("fills of a new {gib} GiB file"), len, &cases);
}

fn conversions(b: &Bench, gib: u64) {
    // A stack of 1024x1024 frames, as a C-order .npy holds it.
    let shape = [gib * 256, 1024, 1024];
    let len = gib << 30;
    let (c_npy, ra_out, f_npy, ra_back) = (
        b.at("c.npy"),
        b.at("out.ra"),
        b.at("f.npy"),
        b.at("back.ra"),
    );
    let copy = b.at("copy");
    // One stage: `cp` of `input` (the floor), then `ra convert input output`; only
    // when `RASTORE_BIG_ONLY` picks it, its input made untimed first, alone on the
    // disk with its output, and removed after.
    let stage = |title: &str, name: &str, make: &dyn Fn(&Path), input: &String, output: &String| {
        if !b.wants(name) {
            return;
        }
        make(Path::new(input));
        let cases: Cases = vec![
            (
                "cp (floor)".into(),
                cmd(&["cp", input, &copy]),
                remove(Path::new(&copy)),
            ),
            (
                name.into(),
                cmd(&[&b.ra, "convert", input, output]),
                remove(Path::new(output)),
            ),
        ];
        b.report(&format!("conversions of {gib} GiB, {title}"), len, &cases);
        let _ = std::fs::remove_file(input);
    };
    let c_order = |p: &Path| make_npy(p, &shape, false);
    let fortran = |p: &Path| make_npy(p, &shape, true);
    stage(
        "C order",
        "ra convert C-order .npy -> .ra",
        &c_order,
        &c_npy,
        &ra_out,
    );
    stage(
        "to .npy",
        "ra convert .ra -> .npy",
        &|p| make(p, gib),
        &ra_out,
        &f_npy,
    );
    stage(
        "Fortran order",
        "ra convert Fortran-order .npy -> .ra",
        &fortran,
        &f_npy,
        &ra_back,
    );
    if !b.wants("ra stack") {
        return;
    }
    // ra stack of 256 MiB frames against cat of them.
    let inputs: Vec<String> = (0..gib * 4)
        .map(|i| b.at(&format!("frame{i:04}.ra")))
        .collect();
    for (i, p) in inputs.iter().enumerate() {
        if !Path::new(p).exists() {
            // SAFETY: the file is new and this process alone writes it.
            let mut m =
                unsafe { MappedRaMut::create(p, DType::F32, &[8192, 8192]) }.expect("create");
            m.par_fill(|at, c: &mut [f32]| {
                c.iter_mut()
                    .enumerate()
                    .for_each(|(k, x)| *x = value(i + at + k));
            })
            .expect("fill");
        }
    }
    let stacked = b.at("stacked.ra");
    let cat = format!("cat {} > {}", inputs.join(" "), copy);
    let mut stack = vec![b.ra.as_str(), "stack", &stacked, "--overwrite"];
    stack.extend(inputs.iter().map(String::as_str));
    let cases: Cases = vec![
        (
            "cat of the inputs (floor)".into(),
            cmd(&["sh", "-c", &cat]),
            remove(Path::new(&copy)),
        ),
        (
            format!("ra stack of {} 256 MiB inputs", inputs.len()),
            cmd(&stack),
            remove(Path::new(&stacked)),
        ),
    ];
    b.report(&format!("stack into {gib} GiB"), len, &cases);
    for p in &inputs {
        let _ = std::fs::remove_file(p);
    }
}

/// `dd` of `count` 16 MiB blocks of `input` (all of it when `None`), directly or
/// through the cache, to `output`.
fn dd(input: &str, output: &str, direct: bool, count: Option<u64>) -> Box<dyn Fn()> {
    let mut cmd = vec![
        "dd".to_string(),
        format!("if={input}"),
        format!("of={output}"),
        "bs=16M".into(),
    ];
    if direct {
        cmd.push("iflag=direct".into());
    }
    if let Some(n) = count {
        cmd.push(format!("count={n}"));
    }
    Box::new(move || shell(&cmd.iter().map(String::as_str).collect::<Vec<_>>()))
}

fn reads(b: &Bench, gib: u64) {
    let a = b.dir.join("a.ra");
    make(&a, gib);
    let pa = b.at("a.ra");
    let len = std::fs::metadata(&a).expect("stat").len();
    if b.wants("ra diff") {
        let (c, pc) = (b.dir.join("b.ra"), b.at("b.ra"));
        std::fs::copy(&a, &c).expect("copy");
        let (first, second) = (
            dd(&pa, "/dev/null", true, None),
            dd(&pc, "/dev/null", true, None),
        );
        let cases: Cases = vec![
            (
                "dd iflag=direct of each (floor)".into(),
                Box::new(move || {
                    first();
                    second();
                }),
                nothing(),
            ),
            ("cmp".into(), cmd(&["cmp", &pa, &pc]), nothing()),
            ("ra diff".into(), cmd(&[&b.ra, "diff", &pa, &pc]), nothing()),
        ];
        b.report(
            &format!("two equal {gib} GiB files compared"),
            2 * len,
            &cases,
        );
        let _ = std::fs::remove_file(&c);
    }
    if b.wants("rastore::read") {
        let path = a.clone();
        let cases: Cases = vec![
            (
                "dd iflag=direct (floor)".into(),
                dd(&pa, "/dev/null", true, None),
                nothing(),
            ),
            (
                "rastore::read::<f32>".into(),
                Box::new(move || {
                    let x: ndarray::ArrayD<f32> = rastore::read(&path).expect("read");
                    std::hint::black_box(x.iter().next().copied());
                }),
                nothing(),
            ),
        ];
        b.report(
            &format!("a {gib} GiB file read whole into memory"),
            len,
            &cases,
        );
    }
    if b.wants("ra slice") {
        let (copy, out) = (b.at("copy"), b.at("slice.ra"));
        // The first half of the frames: one contiguous half of the data.
        let half = format!(":,:,0:{}", gib * 128);
        let cases: Cases = vec![
            (
                "dd of those bytes into a file (floor)".into(),
                dd(&pa, &copy, false, Some(gib * 32)),
                remove(Path::new(&copy)),
            ),
            (
                "ra slice".into(),
                cmd(&[&b.ra, "slice", "--slice", &half, &pa, &out]),
                remove(Path::new(&out)),
            ),
        ];
        b.report(
            &format!("half of a {gib} GiB file sliced out"),
            len / 2,
            &cases,
        );
    }
}

fn cmd(args: &[&str]) -> Box<dyn Fn()> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    Box::new(move || shell(&args.iter().map(String::as_str).collect::<Vec<_>>()))
}

/// `n` random `(j, k)` sample origins of a `[1024, 1024, frames]` array, `width`
/// indices of `j` each (xorshift from `seed`), sorted by where they lie, or not.
fn samples(n: usize, width: u64, frames: u64, sorted: bool, mut seed: u64) -> Vec<(u64, u64)> {
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut v: Vec<(u64, u64)> = (0..n)
        .map(|_| (next() % (1024 - width + 1), next() % frames))
        .collect();
    if sorted {
        v.sort_by_key(|&(j, k)| (k, j));
    }
    v
}

/// fio's own count of IOPS for `n` random reads of `block` bytes (at multiples of
/// 4 KiB) of `path` at queue depth 32, `O_DIRECT` (its start and end, a few hundred
/// milliseconds, left out).
fn fio_iops(path: &str, block: u64, n: usize) -> f64 {
    fio_terse(&[
        "--name=floor".into(),
        format!("--filename={path}"),
        "--rw=randread".into(),
        format!("--bs={block}"),
        "--blockalign=4096".into(),
        "--iodepth=32".into(),
        format!("--io_size={}", block * n as u64),
        "--norandommap".into(),
        "--randrepeat=0".into(),
    ])
}

/// fio's own read IOPS for a job of `args`, `O_DIRECT` through libaio.
fn fio_terse(args: &[String]) -> f64 {
    let out = Command::new("fio")
        .args(args)
        .args([
            "--direct=1",
            "--ioengine=libaio",
            "--output-format=terse",
            "--terse-version=3",
        ])
        .output()
        .expect("fio (apt-get install fio)");
    let text = String::from_utf8_lossy(&out.stdout);
    text.split(';')
        .nth(7)
        .and_then(|f| f.parse().ok())
        .expect("fio's IOPS")
}

/// What the offsets and lengths of `path`'s direct reads are multiples of, as rastore
/// finds it (`statx`'s `STATX_DIOALIGN`, else 4 KiB).
fn direct_align(path: &Path) -> u64 {
    use rustix::fs::{statx, AtFlags, StatxFlags, CWD};
    match statx(CWD, path, AtFlags::empty(), StatxFlags::DIOALIGN) {
        Ok(st) if st.stx_dio_offset_align.is_power_of_two() && st.stx_dio_offset_align <= 4096 => {
            u64::from(st.stx_dio_offset_align)
        }
        _ => 4096,
    }
}

/// fio's IOPS replaying `reads` (offset, length; aligned as rastore reads them) of `path` in the
/// order given, from a version 2 iolog, at queue depth 64, `O_DIRECT`: the device doing
/// exactly the reads a gather asks of it.
fn fio_replay_iops(path: &str, reads: &[(u64, u64)]) -> f64 {
    use std::fmt::Write as _;
    let mut log = format!("fio version 2 iolog\n{path} add\n{path} open\n");
    for (offset, len) in reads {
        let _ = writeln!(log, "{path} read {offset} {len}");
    }
    let _ = writeln!(log, "{path} close");
    let iolog = std::env::temp_dir().join(format!("rastore-gather-{}.iolog", std::process::id()));
    std::fs::write(&iolog, log).expect("write the iolog");
    let iops = fio_terse(&[
        "--name=replay".into(),
        format!("--read_iolog={}", iolog.display()),
        "--replay_no_stall=1".into(),
        "--iodepth=64".into(),
    ]);
    let _ = std::fs::remove_file(&iolog);
    iops
}

/// One way a gather bench reads its samples: fio at a block size, or a gather from
/// one reader, or from a new reader for each batch (which keeps nothing from one
/// batch to the next: its ring, buffers and direct file are made for each).
enum Way {
    Fio(u64),
    Replay,
    Gather(rastore::gather::GatherOptions),
    Fresh(rastore::gather::GatherOptions),
}

fn gathers(b: &Bench, path: &Path, gib: u64) {
    use rastore::gather::{Engine, GatherOptions};
    use rastore::Stride;
    make(path, gib);
    let p = path.to_str().expect("a UTF-8 path").to_string();
    let frames = gib * 256;
    let batch: usize = env_or("RASTORE_GATHER_BATCH", 500);
    let hybrid = |engine, depth| {
        Way::Gather(GatherOptions {
            engine,
            depth,
            direct: true,
        })
    };
    for (width, n, what) in [
        (1u64, 20_000usize, "4 KiB"),
        (4, 20_000, "16 KiB"),
        (256, 2_000, "1 MiB"),
    ] {
        if !b.only.is_empty() && !what.contains(b.only.as_str()) {
            continue;
        }
        let bytes = width * 1024 * 4;
        for sorted in [true, false] {
            let picked = samples(n, width, frames, sorted, 0x9e37_79b9_7f4a_7c15 ^ width);
            let order = if sorted { "sorted" } else { "unsorted" };
            // Each sample's blocks (it starts 72 bytes past one), in the order a gather
            // reads them: sorted within each batch.
            let align = direct_align(path);
            let blocks: Vec<(u64, u64)> = picked
                .chunks(batch)
                .flat_map(|chunk| {
                    let mut spans: Vec<(u64, u64)> = chunk
                        .iter()
                        .map(|&(j, k)| {
                            let at = 72 + 4 * 1024 * (j + 1024 * k);
                            let from = at / align * align;
                            (from, (at + bytes).div_ceil(align) * align - from)
                        })
                        .collect();
                    spans.sort_unstable();
                    spans
                })
                .collect();
            // A sample starts 72 bytes (the header) past a block boundary: read around
            // the cache, it takes one block (of `align` bytes) more than its size.
            let all = std::env::var_os("RASTORE_GATHER_ALL").is_some();
            let mut ways: Vec<(String, Way)> = vec![
                (
                    "fio randread libaio qd32 direct, the sample's size (floor)".into(),
                    Way::Fio(bytes),
                ),
                (
                    format!("fio, the same at the sample's size + {align} B (a misaligned sample's blocks)"),
                    Way::Fio(bytes + align),
                ),
                (
                    "fio replaying the gather's own blocks, batch by batch, qd64 direct".into(),
                    Way::Replay,
                ),
                (
                    "read_many_into, io_uring, cached or O_DIRECT, depth 64 (the default)".into(),
                    hybrid(Engine::Uring, 64),
                ),
                (
                    "the same, a new reader for each batch (nothing kept between batches)".into(),
                    Way::Fresh(GatherOptions::default()),
                ),
                (
                    "read_many_into, io_uring, cached or O_DIRECT, depth 32".into(),
                    hybrid(Engine::Uring, 32),
                ),
                (
                    "read_many_into, io_uring, cached or O_DIRECT, depth 128".into(),
                    hybrid(Engine::Uring, 128),
                ),
                (
                    "read_many_into, io_uring, buffered, depth 64".into(),
                    Way::Gather(GatherOptions {
                        engine: Engine::Uring,
                        depth: 64,
                        direct: false,
                    }),
                ),
                (
                    "read_many_into, threads, cached or O_DIRECT, depth 64".into(),
                    hybrid(Engine::Threads, 64),
                ),
                (
                    "read_many_into, threads, buffered, depth 64".into(),
                    Way::Gather(GatherOptions {
                        engine: Engine::Threads,
                        depth: 64,
                        direct: false,
                    }),
                ),
            ];
            // By default the floors and the default way; RASTORE_GATHER_ALL: every way.
            if !all {
                ways.truncate(5);
            }
            // The batches' buffer, made (and its pages touched) before any run: each
            // way reads into memory it already has, as fio does.
            let mut out = vec![1u8; batch.min(n) * bytes as usize];
            // Rounds of one cold run of every way, so that each is compared with the
            // floor measured next to it (the VM's disk drifts from minute to minute).
            let mut rates = vec![Vec::new(); ways.len()];
            let mut ratios = vec![Vec::new(); ways.len()];
            let mut peaks = vec![0u64; ways.len()];
            for _ in 0..b.runs {
                let mut floor = 0.0;
                for (w, (_, way)) in ways.iter().enumerate() {
                    drop_cache();
                    let base = rss_anon();
                    let anon = || rss_anon().saturating_sub(base);
                    let every = std::time::Duration::from_millis(2);
                    let (rate, [peak]) = peaks_during(every, [&anon], || match way {
                        Way::Fio(block) => fio_iops(&p, *block, n),
                        Way::Replay => fio_replay_iops(&p, &blocks),
                        Way::Gather(options) | Way::Fresh(options) => {
                            let t = Instant::now();
                            let fresh = matches!(way, Way::Fresh(_));
                            let mut reader = None;
                            for chunk in picked.chunks(batch) {
                                if fresh || reader.is_none() {
                                    reader = Some(rastore::DataReader::open(path).expect("open"));
                                }
                                let r = reader.as_ref().expect("opened");
                                let sels: Vec<[Stride; 3]> = chunk
                                    .iter()
                                    .map(|&(j, k)| {
                                        [
                                            Stride::all(1024),
                                            Stride::new(j, 1, width),
                                            Stride::new(k, 1, 1),
                                        ]
                                    })
                                    .collect();
                                let out = &mut out[..chunk.len() * bytes as usize];
                                r.read_many_into_with(&sels, out, options).expect("gather");
                            }
                            std::hint::black_box(&out);
                            n as f64 / t.elapsed().as_secs_f64()
                        }
                    });
                    peaks[w] = peaks[w].max(peak);
                    if w == 0 {
                        floor = rate;
                    }
                    rates[w].push(rate);
                    ratios[w].push(rate / floor);
                }
            }
            let median = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                (v[v.len() / 2], v[0], v[v.len() - 1])
            };
            println!(
                "\n{n} random {what} samples ({order}), batches of {batch}, {} rounds, cold: {}",
                b.runs, b.cold
            );
            println!("case\tsamples/s median (min-max)\tvs the floor in its round: median (min-max)\tpeak anon MiB (of this process; fio's not counted)");
            for (w, (name, _)) in ways.iter().enumerate() {
                let (r, r0, r1) = median(&mut rates[w]);
                let (q, q0, q1) = median(&mut ratios[w]);
                println!(
                    "{name}\t{r:.0} ({r0:.0}-{r1:.0})\t{q:.2} ({q0:.2}-{q1:.2})\t{}",
                    peaks[w] >> 20
                );
            }
        }
    }
}
