//! `ra demo`: the main job end to end, timed.

use std::path::{Path, PathBuf};
use std::time::Instant;

use std::io::Write;

use rastore::{DType, MappedRa, MappedRaMut};

use crate::{Fail, Outcome};

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

/// Removes the demo file when the demo ends, however it ends, unless `--keep`.
struct Cleanup<'a>(&'a Path, bool);

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        if !self.1 {
            let _ = std::fs::remove_file(self.0);
        }
    }
}

/// The value stored at column-major position `i`: cheap, and not constant.
fn value(i: usize) -> f32 {
    (i % 1024) as f32 * 0.25
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 30) as f64
}

fn mib_s(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64 / secs
}

pub fn run(args: &Args) -> Outcome {
    let mut say = std::io::stdout().lock();
    let (d0, d1) = (1024usize, 1024usize);
    let bytes_per_plane = (d0 * d1 * 4) as f64;
    let d2 = ((args.gib * (1u64 << 30) as f64) / bytes_per_plane)
        .ceil()
        .max(1.0) as usize;
    let n = d0 * d1 * d2;
    let nbytes = (n * 4) as u64;
    let dir = args.dir.clone().unwrap_or_else(std::env::temp_dir);
    let path = dir.join(format!("rastore-demo-{}.ra", std::process::id()));
    let _cleanup = Cleanup(&path, args.keep);
    writeln!(
        say,
        "array: float32 [{d0}, {d1}, {d2}] = {n} elements, {:.2} GiB -> {}",
        gib(nbytes),
        path.display()
    )?;

    let t = Instant::now();
    // SAFETY: the demo file is created here under a fresh name and nothing else knows
    // it; it is not truncated or written elsewhere while mapped.
    let mut out =
        unsafe { MappedRaMut::create(&path, DType::F32, &[d0 as u64, d1 as u64, d2 as u64])? };
    let s = t.elapsed().as_secs_f64();
    writeln!(
        say,
        "create        {:>9.3} s  (header written, {:.2} GiB of space reserved)",
        s,
        gib(nbytes)
    )?;

    let t = Instant::now();
    out.par_fill(|offset, chunk: &mut [f32]| {
        for (i, x) in chunk.iter_mut().enumerate() {
            *x = value(offset + i);
        }
    })?;
    let s = t.elapsed().as_secs_f64();
    writeln!(
        say,
        "fill          {:>9.3} s  {:>8.0} MiB/s  ({} rayon threads through the mapping)",
        s,
        mib_s(nbytes, s),
        rayon::current_num_threads()
    )?;

    let t = Instant::now();
    out.flush()?;
    drop(out);
    let s = t.elapsed().as_secs_f64();
    writeln!(
        say,
        "flush         {:>9.3} s  {:>8.0} MiB/s  (msync + fsync: on disk)",
        s,
        mib_s(nbytes, s)
    )?;

    let t = Instant::now();
    // SAFETY: the demo file was just filled by this process and nothing else knows
    // its name; it is not modified while mapped.
    let file = unsafe { MappedRa::open(&path)? };
    let view = file.view_ix::<f32, rastore::ndarray::Ix3>()?;
    let open_us = t.elapsed().as_secs_f64() * 1e6;
    writeln!(
        say,
        "open + view   {:>9.1} µs  (header read and checked, shape {:?}, {} bytes of trailer)",
        open_us,
        view.shape(),
        file.metadata().len()
    )?;

    file.advise(rastore::Advice::Sequential);
    let t = Instant::now();
    let (sum, max) = sum_max(view.as_slice_memory_order().unwrap_or(&[]));
    let s = t.elapsed().as_secs_f64();
    writeln!(say,
        "sum, max      {:>9.3} s  {:>8.0} MiB/s  (first touch: pages come from the page cache or disk)",
        s,
        mib_s(nbytes, s)
    )?;
    let t = Instant::now();
    let (sum2, _) = sum_max(view.as_slice_memory_order().unwrap_or(&[]));
    let s = t.elapsed().as_secs_f64();
    writeln!(
        say,
        "sum again     {:>9.3} s  {:>8.0} MiB/s  (pages already mapped)",
        s,
        mib_s(nbytes, s)
    )?;

    let expected: f64 = (0..n).map(|i| f64::from(value(i))).sum();
    let corner = view[[d0 - 1, d1 - 1, d2 - 1]];
    writeln!(
        say,
        "sum = {sum:.0} (expected {expected:.0}), max = {max}, v[{}, {}, {}] = {corner}",
        d0 - 1,
        d1 - 1,
        d2 - 1
    )?;
    let ok = sum == expected && sum2 == sum && max == value(1023) && corner == value(n - 1);
    drop(file);
    if ok {
        writeln!(
            say,
            "ok: values read through the mapping match what was written"
        )?;
        Ok(())
    } else {
        Err(Fail::Data(
            "values read back differ from those written".into(),
        ))
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
