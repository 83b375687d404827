//! `ra demo`: the main job end to end, timed.

use std::path::PathBuf;
use std::time::Instant;

use rastore::ndarray::{Array3, ShapeBuilder};
use rastore::{MappedRa, Result};

#[derive(clap::Args)]
pub struct Args {
    /// Directory for the demo file (default: the system temporary directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Size of the array in GiB.
    #[arg(long, default_value_t = 1.0)]
    gib: f64,
    /// Keep the file afterwards instead of deleting it.
    #[arg(long)]
    keep: bool,
}

/// The value stored at column-major position `i`: cheap, and not constant.
fn value(i: usize) -> f32 {
    (i % 1024) as f32 * 0.25
}

fn mib_s(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64 / secs
}

pub fn run(args: &Args) -> Result<()> {
    let (d0, d1) = (1024usize, 1024usize);
    let bytes_per_plane = (d0 * d1 * 4) as f64;
    let d2 = ((args.gib * (1u64 << 30) as f64) / bytes_per_plane)
        .ceil()
        .max(1.0) as usize;
    let n = d0 * d1 * d2;
    let nbytes = (n * 4) as u64;
    let dir = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let path = dir.join(format!("rastore-demo-{}.ra", std::process::id()));
    println!(
        "array: float32 [{d0}, {d1}, {d2}] = {n} elements, {:.2} GiB -> {}",
        nbytes as f64 / (1u64 << 30) as f64,
        path.display()
    );

    let t = Instant::now();
    let data: Vec<f32> = (0..n).map(value).collect();
    let array = Array3::from_shape_vec((d0, d1, d2).f(), data)
        .map_err(|e| rastore::ErrorKind::InvalidArgument(e.to_string()))?;
    let s = t.elapsed().as_secs_f64();
    println!(
        "fill in RAM   {:>9.3} s  {:>8.0} MiB/s",
        s,
        mib_s(nbytes, s)
    );

    let t = Instant::now();
    rastore::write(&path, &array)?;
    let s = t.elapsed().as_secs_f64();
    println!(
        "write         {:>9.3} s  {:>8.0} MiB/s  (atomic: temp file + rename)",
        s,
        mib_s(nbytes, s)
    );
    drop(array);

    let t = Instant::now();
    // SAFETY: the demo file was just written by this process and nothing else knows
    // its name; it is not modified while mapped.
    let file = unsafe { MappedRa::open(&path)? };
    let view = file.view_ix::<f32, rastore::ndarray::Ix3>()?;
    let open_us = t.elapsed().as_secs_f64() * 1e6;
    println!(
        "open + view   {:>9.1} µs  (header checked in place, shape {:?}, {} bytes of trailer)",
        open_us,
        view.shape(),
        file.metadata().len()
    );

    file.advise_sequential();
    let t = Instant::now();
    let (sum, max) = sum_max(view.as_slice_memory_order().unwrap_or(&[]));
    let s = t.elapsed().as_secs_f64();
    println!(
        "sum, max      {:>9.3} s  {:>8.0} MiB/s  (first touch: pages come from the page cache or disk)",
        s,
        mib_s(nbytes, s)
    );
    let t = Instant::now();
    let (sum2, _) = sum_max(view.as_slice_memory_order().unwrap_or(&[]));
    let s = t.elapsed().as_secs_f64();
    println!(
        "sum again     {:>9.3} s  {:>8.0} MiB/s  (pages already mapped)",
        s,
        mib_s(nbytes, s)
    );

    let expected: f64 = (0..n).map(|i| f64::from(value(i))).sum();
    let corner = view[[d0 - 1, d1 - 1, d2 - 1]];
    println!(
        "sum = {sum:.0} (expected {expected:.0}), max = {max}, v[{}, {}, {}] = {corner}",
        d0 - 1,
        d1 - 1,
        d2 - 1
    );
    let ok = sum == expected && sum2 == sum && max == value(1023) && corner == value(n - 1);
    drop(file);
    if !args.keep {
        std::fs::remove_file(&path).map_err(|source| {
            rastore::Error::from(rastore::ErrorKind::Io {
                op: "remove",
                source,
            })
            .at(&path)
        })?;
    }
    if ok {
        println!("ok: values read through the mapping match what was written");
        Ok(())
    } else {
        Err(rastore::ErrorKind::Decode {
            codec: "demo",
            detail: "values read back differ from those written".into(),
        }
        .into())
    }
}

/// Sum (in f64, 8 lanes) and maximum of a slice.
fn sum_max(x: &[f32]) -> (f64, f32) {
    let mut acc = [0f64; 8];
    let mut mx = [f32::NEG_INFINITY; 8];
    let chunks = x.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for k in 0..8 {
            acc[k] += f64::from(c[k]);
            mx[k] = mx[k].max(c[k]);
        }
    }
    for &r in rest {
        acc[0] += f64::from(r);
        mx[0] = mx[0].max(r);
    }
    (
        acc.iter().sum(),
        mx.iter().copied().fold(f32::NEG_INFINITY, f32::max),
    )
}
