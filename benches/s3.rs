//! RawArrays in object storage (issue 13), against bare requests, in one run, on a
//! local s3s-fs server (started here, root under `$RASTORE_BENCH_DIR`, default
//! `target/bench-data`).
//!
//! - s1: reading a whole 1 GiB float32 object with concurrent ranged GETs, at several
//!   concurrencies and range sizes, against one single-stream GET of the object;
//! - s2: reading a slab of 1% of it (10 of 1024 frames) from an opened object, against
//!   one bare ranged GET of exactly those bytes;
//! - s3: 4 processes (`ra fill put`) filling it as 16 MiB parts, against one process
//!   uploading the finished local file (`upload_file`);
//! - s4: a gather of 2,000 random 1 MiB frames of a 4 GiB object
//!   (`RemoteRa::take_into`), against as many ranged GETs of those frames made by
//!   object_store directly, as many at once as the client makes (8).
//!
//! `cargo bench --bench s3`. Medians of `RASTORE_BENCH_RUNS` (default 5) runs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::ObjectStoreExt;
use rastore::remote::{upload_file, FillToken, RemoteOptions, RemoteRa};
use rastore::DType;

const KEY: &str = "bench";
const SECRET: &str = "bench-secret";
const DIMS: [u64; 3] = [512, 512, 1024];

fn runs() -> usize {
    std::env::var("RASTORE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
}

fn median(mut f: impl FnMut() -> Duration) -> (Duration, Duration, Duration) {
    let mut t: Vec<Duration> = (0..runs()).map(|_| f()).collect();
    t.sort();
    (t[t.len() / 2], t[0], t[t.len() - 1])
}

fn show(name: &str, (m, lo, hi): (Duration, Duration, Duration), base: Option<Duration>) {
    let ratio = base.map_or(String::new(), |b| {
        format!(
            "  {:.2}x the baseline's speed",
            b.as_secs_f64() / m.as_secs_f64()
        )
    });
    println!(
        "{name:<52} {:>9.2} ms ({:.2}..{:.2}){ratio}",
        ms(m),
        ms(lo),
        ms(hi)
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let dir = std::env::var_os("RASTORE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data"));
    let root = dir.join("s3root");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("bkt")).expect("root");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let _server = Server(
        Command::new("s3s-fs")
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .args(["--access-key", KEY, "--secret-key", SECRET])
            .arg(&root)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect(
                "s3s-fs on PATH (cargo install s3s-fs --version 0.14.1 --features binary --locked)",
            ),
    );
    std::thread::sleep(Duration::from_millis(500));
    let endpoint = format!("http://127.0.0.1:{port}");
    let opts = RemoteOptions::for_endpoint(&endpoint, KEY, SECRET);
    let local = dir.join("s3-bench.ra");
    let n: u64 = DIMS.iter().product();
    rastore::CreateOptions::new()
        .overwrite(true)
        .create_filled(&local, DType::F32, &DIMS, |m| {
            m.par_fill::<f32, _>(|start, chunk| {
                for (k, x) in chunk.iter_mut().enumerate() {
                    *x = (start + k) as f32;
                }
            })
        })
        .expect("local file");
    println!(
        "s3s-fs 0.14.1 on 127.0.0.1, root {}; object of {} MiB",
        root.display(),
        (4 * n) >> 20
    );
    let url = "s3://bkt/big.ra";
    upload_file(&local, url, &opts).expect("upload");

    let store = AmazonS3Builder::new()
        .with_endpoint(&endpoint)
        .with_region("us-east-1")
        .with_bucket_name("bkt")
        .with_access_key_id(KEY)
        .with_secret_access_key(SECRET)
        .with_allow_http(true)
        .build()
        .expect("store");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("rt");
    let path = ObjectPath::from("big.ra");

    let only = std::env::var("RASTORE_BENCH_ONLY").unwrap_or_default();
    let want = |s: &str| only.is_empty() || only.split(',').any(|o| o == s);
    if want("s1") {
        s1(&rt, &store, &path, url, &opts, n);
    }
    if want("s2") {
        s2(&rt, &store, &path, url, &opts);
    }
    if want("s3") {
        s3(&dir, &local, &endpoint, &opts);
    }
    if want("s4") {
        s4(&rt, &store, &dir, &opts);
    }
    let _ = std::fs::remove_file(&local);
    let _ = std::fs::remove_dir_all(&root);
}

fn s1(
    rt: &tokio::runtime::Runtime,
    store: &AmazonS3,
    path: &ObjectPath,
    url: &str,
    opts: &RemoteOptions,
    n: u64,
) {
    println!("== s1: the whole object");
    let single = median(|| {
        let t = Instant::now();
        let b = rt
            .block_on(async { store.get(path).await?.bytes().await })
            .expect("get");
        assert_eq!(b.len() as u64, 4 * n + 72);
        t.elapsed()
    });
    show("one single-stream GET (baseline)", single, None);
    for (conc, range_mib) in [(4, 8), (8, 8), (16, 8), (8, 4), (8, 16), (8, 32)] {
        let o = RemoteOptions {
            concurrency: conc,
            range_bytes: range_mib << 20,
            ..opts.clone()
        };
        let t = median(|| {
            let t = Instant::now();
            let r = RemoteRa::open_with(url, o.clone()).expect("open");
            let data = r.read_bytes(0..r.len()).expect("read");
            assert_eq!(data.len() as u64, r.len());
            t.elapsed()
        });
        show(
            &format!("open + concurrent ranges: {conc} x {range_mib} MiB"),
            t,
            Some(single.0),
        );
    }
}

fn s2(
    rt: &tokio::runtime::Runtime,
    store: &AmazonS3,
    path: &ObjectPath,
    url: &str,
    opts: &RemoteOptions,
) {
    println!("== s2: a slab of 1% (10 of 1024 frames), from an opened object");
    let frame = 4 * DIMS[0] * DIMS[1];
    let at = 72 + 500 * frame;
    let bare = median(|| {
        let t = Instant::now();
        let b = rt
            .block_on(store.get_range(path, at..at + 10 * frame))
            .expect("get");
        assert_eq!(b.len() as u64, 10 * frame);
        t.elapsed()
    });
    show("one bare ranged GET of those bytes (baseline)", bare, None);
    let r = RemoteRa::open_with(url, opts.clone()).expect("open");
    let ours = median(|| {
        let t = Instant::now();
        let (_, data) = r.read_slab_bytes(500..510).expect("slab");
        assert_eq!(data.len() as u64, 10 * frame);
        t.elapsed()
    });
    show("RemoteRa::read_slab_bytes(500..510)", ours, Some(bare.0));
}

fn s4(rt: &tokio::runtime::Runtime, store: &AmazonS3, dir: &Path, opts: &RemoteOptions) {
    use futures::{StreamExt, TryStreamExt};
    const FRAMES: u64 = 4096;
    let dims = [DIMS[0], DIMS[1], FRAMES];
    let frame = 4 * DIMS[0] * DIMS[1];
    let local = dir.join("s4-bench.ra");
    rastore::CreateOptions::new()
        .overwrite(true)
        .create_filled(&local, DType::F32, &dims, |m| {
            m.par_fill::<f32, _>(|start, chunk| {
                for (k, x) in chunk.iter_mut().enumerate() {
                    *x = ((start + k) % 1000) as f32;
                }
            })
        })
        .expect("local file");
    upload_file(&local, "s3://bkt/four.ra", opts).expect("upload");
    let _ = std::fs::remove_file(&local);
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let picked: Vec<u64> = (0..2000)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % FRAMES
        })
        .collect();
    println!("== s4: 2,000 random 1 MiB frames of a 4 GiB object");
    let path = ObjectPath::from("four.ra");
    let bare = median(|| {
        let t = Instant::now();
        let n: usize = rt
            .block_on(async {
                futures::stream::iter(picked.iter().map(|&k| 72 + k * frame))
                    .map(|at| store.get_range(&path, at..at + frame))
                    .buffer_unordered(opts.concurrency)
                    .map_ok(|b| b.len())
                    .try_fold(0, |a, n| async move { Ok(a + n) })
                    .await
            })
            .expect("gets");
        assert_eq!(n as u64, 2000 * frame);
        t.elapsed()
    });
    show(
        &format!(
            "{} concurrent ranged GETs by object_store (baseline)",
            opts.concurrency
        ),
        bare,
        None,
    );
    let r = RemoteRa::open_with("s3://bkt/four.ra", opts.clone()).expect("open");
    let mut out = vec![0u8; 2000 * frame as usize];
    let ours = median(|| {
        let t = Instant::now();
        r.take_into(&picked, &mut out).expect("take");
        t.elapsed()
    });
    show(
        "RemoteRa::take_into (coalesced, concurrent)",
        ours,
        Some(bare.0),
    );
    let k = picked[1234];
    let at = 1234 * frame as usize;
    assert_eq!(
        f32::from_le_bytes(out[at..at + 4].try_into().expect("4 bytes")),
        ((k * DIMS[0] * DIMS[1]) % 1000) as f32
    );
}

fn s3(dir: &Path, local: &Path, endpoint: &str, opts: &RemoteOptions) {
    println!("== s3: 1 GiB as 16 MiB parts");
    let up = median(|| {
        let t = Instant::now();
        upload_file(local, "s3://bkt/up.ra", opts).expect("upload");
        t.elapsed()
    });
    show(
        "one process: upload_file of the local file (baseline)",
        up,
        None,
    );
    let filled = median(|| fill_with_4(dir, endpoint, opts));
    show(
        "4 processes: one `ra fill put` each, of its 16 parts",
        filled,
        Some(up.0),
    );
}

/// Begin, 4 worker processes putting their parts from local slab files, complete.
/// The slab files are written first, untimed.
fn fill_with_4(dir: &Path, endpoint: &str, opts: &RemoteOptions) -> Duration {
    let t0 = Instant::now();
    let token =
        FillToken::begin("s3://bkt/filled.ra", DType::F32, &DIMS, b"", opts).expect("begin");
    let begin = t0.elapsed();
    let slabs = dir.join("s3-slabs");
    let _ = std::fs::create_dir_all(&slabs);
    for p in 1..=token.parts() {
        let f = token.frames(p).expect("plan");
        let mut dims = DIMS.to_vec();
        dims[2] = f.end - f.start;
        rastore::CreateOptions::new()
            .overwrite(true)
            .create_filled(slabs.join(format!("{p}.ra")), DType::F32, &dims, |m| {
                m.par_fill::<f32, _>(|start, chunk| {
                    for (k, x) in chunk.iter_mut().enumerate() {
                        *x = (start + k) as f32;
                    }
                })
            })
            .expect("slab");
    }
    let token_file = slabs.join("token.json");
    std::fs::write(&token_file, token.to_json()).expect("token");
    rustix::fs::sync();
    let t1 = Instant::now();
    let ra = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/ra");
    let workers: Vec<Child> = (0..4)
        .map(|w| {
            let mut c = Command::new(&ra);
            c.args(["fill", "put"])
                .arg(format!("@{}", token_file.display()));
            for p in (1..=token.parts()).filter(|p| (p - 1) % 4 == w) {
                c.arg(p.to_string()).arg(slabs.join(format!("{p}.ra")));
            }
            c.env("AWS_ENDPOINT_URL", endpoint)
                .env("AWS_REGION", "us-east-1")
                .env("AWS_ACCESS_KEY_ID", KEY)
                .env("AWS_SECRET_ACCESS_KEY", SECRET)
                .env("AWS_ALLOW_HTTP", "true")
                .stdout(Stdio::piped())
                .spawn()
                .expect("worker")
        })
        .collect();
    let mut etags = Vec::new();
    for w in workers {
        let o = w.wait_with_output().expect("worker");
        assert!(o.status.success());
        for line in String::from_utf8_lossy(&o.stdout).lines() {
            let (p, e) = line.split_once(' ').expect("PART ETAG");
            etags.push((p.parse::<u64>().expect("part"), e.to_string()));
        }
    }
    token.complete(&etags, opts).expect("complete");
    let t = begin + t1.elapsed();
    let _ = std::fs::remove_dir_all(&slabs);
    t
}
