//! The closing summary of `cargo test`: how many tests skipped because what judges
//! them is missing on this machine (NumPy and Pillow, zarr-python, the S3 test server,
//! the conformance files), and the one command that installs it all and runs them.
//! The last test binary of a run (the binaries run in name order); libtest would show
//! a skipping test as passed. Runs without the harness so that its lines are shown.

#[allow(dead_code)]
#[path = "integration/common.rs"]
mod common;

fn main() {
    let log = std::fs::read_to_string(common::skip_log()).unwrap_or_default();
    let mut reasons: Vec<(String, usize)> = Vec::new();
    for line in log.lines() {
        let why = line
            .split_once('\t')
            .map_or(line, |(_, why)| why)
            .to_string();
        match reasons.iter_mut().find(|(r, _)| *r == why) {
            Some((_, n)) => *n += 1,
            None => reasons.push((why, 1)),
        }
    }
    let total: usize = reasons.iter().map(|(_, n)| n).sum();
    if total == 0 {
        println!("summary: every test ran (none skipped for want of a judge)");
        return;
    }
    let rule = "=".repeat(78);
    println!("\n{rule}");
    println!("SKIPPED: {total} tests did not run here; libtest counted them as passed:");
    for (why, n) in &reasons {
        println!("  {n:>4}  {why}");
    }
    if std::env::var_os("RASTORE_TEST_ALL").is_none() {
        println!("Run them all: scripts/test-all (scripts/test-setup installs NumPy, Pillow,");
        println!("zarr-python and s3s-fs; then it runs cargo test and the Python tests).");
    }
    println!("{rule}\n");
}
