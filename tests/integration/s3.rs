//! Object storage (issue 13) against a real S3-protocol server (s3s-fs), with our
//! fault-injecting proxy between client and server where the test needs to count or
//! to fail requests.

use std::process::{Command, Stdio};

use ndarray::{ArrayD, Axis, Dimension, IxDyn, ShapeBuilder, Slice};
use rastore::remote::{upload_bytes, upload_file, FillToken, RemoteOptions, RemoteRa, Stride};
use rastore::{DType, Header, WriteOptions};

use crate::cli::ra;
use crate::common::{noise, tmp};
use crate::s3_server::{Fault, Proxy, Server, BUCKET};

const MIB: u64 = 1 << 20;

fn url(key: &str) -> String {
    format!("s3://{BUCKET}/{key}")
}

/// A float32 array of `dims` whose every element says where it is.
fn cube(dims: &[usize]) -> ArrayD<f32> {
    ArrayD::from_shape_fn(IxDyn(dims).f(), |ix| {
        ix.slice()
            .iter()
            .enumerate()
            .map(|(d, &i)| (i * (d * 97 + 1)) as f32)
            .sum()
    })
}

fn fortran_bytes(a: &ArrayD<f32>) -> Vec<u8> {
    let f = a.t().as_standard_layout().into_owned();
    bytemuck::cast_slice(f.as_slice().unwrap()).to_vec()
}

fn small_parts(endpoint: &str) -> RemoteOptions {
    RemoteOptions {
        part_bytes: 5 * MIB,
        range_bytes: MIB,
        concurrency: 4,
        ..Server::options(endpoint, 4)
    }
}

#[test]
fn an_array_round_trips_and_reads_fetch_only_the_bytes_asked_for() {
    let Some(server) = Server::start() else {
        return;
    };
    let proxy = Proxy::start(server.port);
    let options = small_parts(&proxy.endpoint());
    let a = cube(&[256, 256, 48]); // 12 MiB: three parts
    let header = Header::new(DType::F32, &[256, 256, 48]).unwrap();
    let trailer = b"---\nunits: counts\n";
    upload_bytes(&url("a.ra"), &header, &fortran_bytes(&a), trailer, &options).unwrap();
    let parts = proxy
        .take()
        .iter()
        .filter(|s| s.target.contains("partNumber"))
        .count();
    assert_eq!(parts, 3);
    // The object is byte for byte the file the local writer makes.
    let d = tmp();
    WriteOptions::new()
        .metadata(trailer.to_vec())
        .write(d.path().join("a.ra"), &a)
        .unwrap();
    assert_eq!(
        std::fs::read(server.object("a.ra")).unwrap(),
        std::fs::read(d.path().join("a.ra")).unwrap()
    );

    let r = RemoteRa::open_with(&url("a.ra"), options.clone()).unwrap();
    let seen = proxy.take();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].range.as_deref(), Some("bytes=0-4095"));
    assert_eq!(r.header().dims(), &[256, 256, 48]);

    assert_eq!(r.read::<f32>().unwrap(), a);
    let seen = proxy.take();
    let fetched: u64 = seen.iter().map(|s| s.body_bytes).sum();
    assert_eq!(
        fetched,
        r.len() - 4096,
        "the open's 4 KiB are not fetched again"
    );
    assert_eq!(seen.len() as u64, (r.len() - 4096).div_ceil(MIB));

    let slab = r.read_slab::<f32>(10..13).unwrap();
    assert_eq!(slab, a.slice_axis(Axis(2), (10..13).into()));
    let seen = proxy.take();
    assert_eq!(
        seen.iter().map(|s| s.body_bytes).sum::<u64>(),
        3 * 256 * 256 * 4
    );
    assert_eq!(seen.len(), 1);

    assert_eq!(r.metadata().unwrap(), trailer);
    let seen = proxy.take();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].range.as_deref(),
        Some(format!("bytes=-{}", trailer.len()).as_str())
    );
}

/// `a` sliced as `sel` says, as column-major bytes.
fn selected(a: &ArrayD<f32>, sel: &[Stride]) -> Vec<u8> {
    let s = a.slice_each_axis(|ax| {
        let x = sel[ax.axis.index()];
        let end = x.start + x.count.saturating_sub(1) * x.step + 1;
        let end = if x.count == 0 { x.start } else { end };
        Slice::new(x.start as isize, Some(end as isize), x.step as isize)
    });
    fortran_bytes(&s.to_owned())
}

fn read_selection(r: &RemoteRa, a: &ArrayD<f32>, sel: &[Stride]) -> Vec<u8> {
    let mut out = vec![0u8; selected(a, sel).len()];
    r.read_selection_into(sel, &mut out).unwrap();
    out
}

#[test]
fn a_selection_fetches_only_the_runs_that_hold_it() {
    let Some(server) = Server::start() else {
        return;
    };
    let proxy = Proxy::start(server.port);
    let options = small_parts(&proxy.endpoint());
    let a = cube(&[256, 256, 48]); // frames of 256 KiB
    let header = Header::new(DType::F32, &[256, 256, 48]).unwrap();
    upload_bytes(&url("s.ra"), &header, &fortran_bytes(&a), b"", &options).unwrap();
    let r = RemoteRa::open_with(&url("s.ra"), options).unwrap();
    proxy.take();
    let frame = 256 * 256 * 4;
    let at = |x: u64, y: u64, t: u64| header.data_offset() + 4 * x + 1024 * y + frame * t;

    // Rows 10..30 of every 8th frame: runs of 20 KiB, 2 MiB apart, a GET each.
    let sel = [
        Stride::all(256),
        Stride::new(10, 1, 20),
        Stride::new(0, 8, 6),
    ];
    assert_eq!(read_selection(&r, &a, &sel), selected(&a, &sel));
    let mut seen: Vec<String> = proxy.take().into_iter().filter_map(|s| s.range).collect();
    seen.sort();
    let mut want: Vec<String> = (0..6)
        .map(|t| format!("bytes={}-{}", at(0, 10, 8 * t), at(0, 30, 8 * t) - 1))
        .collect();
    want.sort();
    assert_eq!(seen, want);

    // Every other element of 5 in a column, in one frame: 4-byte runs a few bytes
    // apart, merged into one GET from the first to the last.
    let sel = [
        Stride::new(3, 2, 5),
        Stride::all(256),
        Stride::new(40, 1, 1),
    ];
    assert_eq!(read_selection(&r, &a, &sel), selected(&a, &sel));
    let seen: Vec<String> = proxy.take().into_iter().filter_map(|s| s.range).collect();
    assert_eq!(
        seen,
        [format!("bytes={}-{}", at(3, 0, 40), at(11, 255, 40) + 3)]
    );

    // Out of bounds, a zero step, or the wrong buffer: refused before any GET.
    let mut out = vec![0u8; 4];
    for sel in [
        [Stride::all(256), Stride::all(256), Stride::new(47, 1, 2)],
        [Stride::all(256), Stride::all(256), Stride::new(0, 0, 1)],
        [Stride::all(256), Stride::all(256), Stride::new(0, 1, 1)],
    ] {
        let e = r
            .read_selection_into(&sel, &mut out)
            .unwrap_err()
            .to_string();
        assert!(e.contains("axis 2") || e.contains("bytes of buffer"), "{e}");
    }
    assert!(proxy.take().is_empty());

    // Random selections agree with ndarray's slicing.
    let dims = [256u64, 256, 48];
    for (i, bytes) in noise(40 * 9, 7).chunks(9).enumerate() {
        let sel: Vec<Stride> = dims
            .iter()
            .zip(bytes.chunks(3))
            .map(|(&d, b)| {
                let start = u64::from(b[0]) % d;
                let step = 1 + u64::from(b[1]) % 9;
                let count = (u64::from(b[2]) % 12).min((d - 1 - start) / step + 1);
                Stride::new(start, step, count)
            })
            .collect();
        assert_eq!(
            read_selection(&r, &a, &sel),
            selected(&a, &sel),
            "case {i}: {sel:?}"
        );
    }
}

#[test]
fn compressed_and_bad_objects_read_as_local_files_do() {
    let Some(server) = Server::start() else {
        return;
    };
    let options = Server::options(&server.endpoint(), 2);
    let d = tmp();
    let a = cube(&[64, 33]).mapv(|x| (x as i32 % 7) as f32);
    let z = d.path().join("z.ra");
    WriteOptions::new().compress(true).write(&z, &a).unwrap();
    upload_file(&z, &url("z.ra"), &options).unwrap();
    let r = RemoteRa::open_with(&url("z.ra"), options.clone()).unwrap();
    assert!(r.header().flags().compressed());
    assert_eq!(r.read::<f32>().unwrap(), a);
    assert_eq!(
        r.read_slab::<f32>(5..7).unwrap(),
        a.slice_axis(Axis(1), (5..7).into())
    );

    // Objects are plain files under the server's root: bad ones are written there.
    let good = std::fs::read(d.path().join("z.ra")).unwrap();
    let plain = d.path().join("p.ra");
    rastore::write(&plain, &a).unwrap();
    let plain = std::fs::read(plain).unwrap();
    let mut lying = plain.clone();
    lying[32] ^= 4; // size
    let cases: [(&str, Vec<u8>); 4] = [
        ("truncated.ra", plain[..plain.len() - 10].to_vec()),
        ("lying.ra", lying),
        ("short.ra", good[..20].to_vec()),
        ("empty.ra", Vec::new()),
    ];
    for (key, bytes) in cases {
        std::fs::write(server.object(key), &bytes).unwrap();
        let local = d.path().join(key);
        std::fs::write(&local, &bytes).unwrap();
        let want = rastore::read_header_at(&local).unwrap_err();
        let got = RemoteRa::open_with(&url(key), options.clone()).unwrap_err();
        assert_eq!(got.kind().to_string(), want.kind().to_string(), "{key}");
        assert_eq!(
            got.to_string(),
            format!("{}: {}", url(key), want.kind()),
            "{key}"
        );
    }
    let e = RemoteRa::open_with(&url("missing.ra"), options).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}: get: no such object", url("missing.ra"))
    );
}

#[test]
fn reads_retry_through_500s_and_dropped_connections() {
    let Some(server) = Server::start() else {
        return;
    };
    let proxy = Proxy::start(server.port);
    let options = RemoteOptions {
        range_bytes: 64 * 1024,
        ..small_parts(&proxy.endpoint())
    };
    let a = cube(&[128, 128, 8]);
    let header = Header::new(DType::F32, &[128, 128, 8]).unwrap();
    upload_bytes(&url("r.ra"), &header, &fortran_bytes(&a), b"", &options).unwrap();
    proxy.take();
    // Every request (each range of each read) fails twice, once with a 500 and once
    // with a dropped connection, then succeeds.
    let mut tries = std::collections::HashMap::<String, usize>::new();
    proxy.set_rule(move |_, method, target, range| {
        let k = tries
            .entry(format!("{method} {target} {range:?}"))
            .or_default();
        *k += 1;
        match *k {
            1 => Some(Fault::Status500),
            2 => Some(Fault::Drop),
            _ => None,
        }
    });
    let r = RemoteRa::open_with(&url("r.ra"), options).unwrap();
    assert_eq!(r.read::<f32>().unwrap(), a);
    let seen = proxy.take();
    let faults = seen.iter().filter(|s| s.fault.is_some()).count();
    let served = seen.len() - faults;
    // The open, then 8 frames of 64 KiB less the open's first 4 KiB: 9 ranges.
    assert_eq!((served, faults), (9, 18), "{seen:?}");
}

#[test]
fn a_failing_upload_is_aborted_and_leaves_no_object_and_no_pending_upload() {
    let Some(server) = Server::start() else {
        return;
    };
    let proxy = Proxy::start(server.port);
    let options = RemoteOptions {
        retries: 2,
        ..small_parts(&proxy.endpoint())
    };
    proxy.set_rule(|_, method, target, _| {
        (method == "PUT" && target.contains("partNumber=2")).then_some(Fault::Status500)
    });
    let a = cube(&[256, 256, 48]);
    let header = Header::new(DType::F32, &[256, 256, 48]).unwrap();
    let e = upload_bytes(&url("f.ra"), &header, &fortran_bytes(&a), b"", &options).unwrap_err();
    assert!(e.to_string().contains("put part: part 2"), "{e}");
    let seen = proxy.take();
    assert_eq!(
        seen.iter()
            .filter(|s| s.target.contains("partNumber=2"))
            .count(),
        3
    );
    assert!(seen
        .iter()
        .any(|s| s.method == "DELETE" && s.target.contains("uploadId")));
    assert!(!server.object("f.ra").exists());
    assert_eq!(server.pending_uploads(), Vec::<String>::new());
}

#[test]
fn an_aborted_fill_leaves_nothing_and_a_complete_needs_every_part() {
    let Some(server) = Server::start() else {
        return;
    };
    let options = small_parts(&server.endpoint());
    let dims = [512u64, 512, 12]; // 1 MiB frames, parts of 5 frames: 3 parts
    let t = FillToken::begin(&url("g.ra"), DType::F32, &dims, b"", &options).unwrap();
    assert_eq!((t.parts(), t.frames_per_part), (3, 5));
    assert_eq!(server.pending_uploads().len(), 1);
    let frames = vec![0u8; (5 * MIB) as usize];
    let one = t.put_part(1, frames.clone(), &options).unwrap();
    let e = t.put_part(3, frames, &options).unwrap_err();
    assert!(
        e.to_string()
            .contains("part 3 holds frames 10..12: 2097152 bytes, given 5242880"),
        "{e}"
    );
    let e = t.complete(&[(1, one)], &options).unwrap_err();
    assert!(e.to_string().contains("missing parts [2, 3]"), "{e}");
    t.abort(&options).unwrap();
    assert!(!server.object("g.ra").exists());
    assert_eq!(server.pending_uploads(), Vec::<String>::new());
    let e = RemoteRa::open_with(&url("g.ra"), options).unwrap_err();
    assert!(e.to_string().ends_with("get: no such object"), "{e}");
}

fn ra_env(endpoint: &str) -> Command {
    let mut c = ra();
    c.envs(Server::env(endpoint));
    c
}

fn run_ok(c: &mut Command) -> String {
    let o = c.output().unwrap();
    assert!(
        o.status.success(),
        "{c:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn four_workers_putting_parts_out_of_order_make_the_object_a_local_fill_makes() {
    let Some(server) = Server::start() else {
        return;
    };
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    let a = cube(&[512, 512, 23]); // 23 frames of 1 MiB: parts of 5, 5, 5, 5 and 3
    std::fs::write(p("meta.yaml"), "---\nsource: four workers\n").unwrap();
    let token = run_ok(
        ra_env(&server.endpoint())
            .args([
                "fill",
                "begin",
                &url("w.ra"),
                "--dtype",
                "f32",
                "--shape",
                "512,512,23",
            ])
            .args(["--part-mib", "5", "--metadata"])
            .arg(p("meta.yaml")),
    );
    std::fs::write(p("token.json"), token.trim()).unwrap();
    let at_token = format!("@{}", p("token.json").display());
    let plan = run_ok(ra().args(["fill", "plan", &at_token]));
    let plan: Vec<(u64, usize, usize)> = plan
        .lines()
        .map(|l| {
            let v: Vec<u64> = l.split(' ').map(|x| x.parse().unwrap()).collect();
            (v[0], v[1] as usize, v[2] as usize)
        })
        .collect();
    assert_eq!(plan.len(), 5);
    // Each part's slab as a local file; a worker takes parts 5, 4, 3, ... round robin.
    for &(part, lo, hi) in &plan {
        let slab = a.slice_axis(Axis(2), (lo..hi).into()).to_owned();
        rastore::write(p(&format!("slab{part}.ra")), &slab).unwrap();
    }
    let mut order: Vec<u64> = plan.iter().map(|x| x.0).collect();
    order.reverse();
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let mut c = ra_env(&server.endpoint());
            c.args(["fill", "put", &at_token, "--jobs", "2"]);
            for part in order.iter().skip(w).step_by(4) {
                c.arg(part.to_string()).arg(p(&format!("slab{part}.ra")));
            }
            c.stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut etags = String::new();
    for w in workers {
        let o = w.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        etags.push_str(&String::from_utf8_lossy(&o.stdout));
    }
    assert_eq!(etags.lines().count(), 5);
    assert!(
        !server.object("w.ra").exists(),
        "nothing is visible before complete"
    );
    std::fs::write(p("etags.txt"), &etags).unwrap();
    let said = run_ok(
        ra_env(&server.endpoint())
            .args(["fill", "complete", &at_token])
            .arg(p("etags.txt")),
    );
    assert_eq!(said, format!("{}: complete, 5 parts\n", url("w.ra")));
    WriteOptions::new()
        .metadata(std::fs::read(p("meta.yaml")).unwrap())
        .write(p("local.ra"), &a)
        .unwrap();
    assert!(std::fs::read(server.object("w.ra")).unwrap() == std::fs::read(p("local.ra")).unwrap());
    assert_eq!(server.pending_uploads(), Vec::<String>::new());
}

#[test]
fn ra_reads_objects_by_range_and_converts_both_ways() {
    let Some(server) = Server::start() else {
        return;
    };
    let proxy = Proxy::start(server.port);
    let d = tmp();
    let p = |n: &str| d.path().join(n);
    let a = cube(&[100, 30, 40]);
    rastore::write(p("c.ra"), &a).unwrap();
    rastore::convert::convert(&p("c.ra"), &p("c.npy"), &Default::default(), &mut |_, _| ())
        .unwrap();
    let endpoint = proxy.endpoint();
    run_ok(
        ra_env(&endpoint)
            .args(["convert"])
            .arg(p("c.npy"))
            .arg(url("c.ra")),
    );
    assert_eq!(
        std::fs::read(server.object("c.ra")).unwrap(),
        std::fs::read(p("c.ra")).unwrap()
    );
    let info = run_ok(ra_env(&endpoint).args(["info", &url("c.ra")]));
    assert_eq!(
        info,
        format!(
            "{}: float32 [100, 30, 40] bytes 480000 flags 0x0 trailer 0\n",
            url("c.ra")
        )
    );
    proxy.take();
    // Two elements of plane 37: the open's GET, then that plane's bytes only.
    let cat = run_ok(ra_env(&endpoint).args(["cat", &url("c.ra"), "--slice", "5:7,2,37"]));
    assert_eq!(
        cat,
        format!(
            "[5, 2, 37] {}\n[6, 2, 37] {}\n",
            a[[5, 2, 37]],
            a[[6, 2, 37]]
        )
    );
    let seen = proxy.take();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[1].body_bytes, 100 * 30 * 4);
    let local_stats = run_ok(ra().args(["stats", "--json"]).arg(p("c.ra")));
    let remote_stats = run_ok(ra_env(&endpoint).args(["stats", "--json", &url("c.ra")]));
    assert_eq!(local_stats, remote_stats);
    let verify = run_ok(ra_env(&endpoint).args(["verify", &url("c.ra")]));
    assert_eq!(
        verify,
        format!(
            "{}: ok (float32 [100, 30, 40], 480000 data bytes decoded)\n",
            url("c.ra")
        )
    );
    assert!(run_ok(ra_env(&endpoint).args(["describe", &url("c.ra")])).contains("- 40\n"));
    run_ok(
        ra_env(&endpoint)
            .args(["convert", &url("c.ra")])
            .arg(p("back.npy")),
    );
    assert_eq!(
        std::fs::read(p("back.npy")).unwrap(),
        std::fs::read(p("c.npy")).unwrap()
    );
    let o = ra_env(&endpoint)
        .args(["convert", &url("c.ra")])
        .arg(p("back.npy"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("file exists; pass --overwrite"));
    let o = ra_env(&endpoint)
        .args(["info", &url("nope.ra")])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&o.stderr).contains("s3://bkt/nope.ra: get: no such object"));
}
