//! A 64 GiB sparse file opens in constant time and memory: `MappedRa` reads the header
//! and the one page it is asked for. Its own test binary, so the resident-memory
//! figure is this test's alone. Linux: the figure is `VmRSS` of `/proc/self/status`.
#![cfg(target_os = "linux")]

use std::fs::OpenOptions;
use std::io::Write;

use rastore::MappedRa;

fn vm_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS line")
}

#[test]
fn sixty_four_gib_sparse_file_maps_in_constant_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.ra");
    let n: u64 = 1 << 34; // float32 elements: 64 GiB of data
    let header: Vec<u8> = [rastore::MAGIC, 0, 3, 4, 4 * n, 1, n]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let mut f = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&path)
        .unwrap();
    f.write_all(&header).unwrap();
    if let Err(e) = f.set_len(56 + 4 * n) {
        println!("SKIPPED: the file system refuses a 64 GiB sparse file: {e}");
        return;
    }
    // The last element: 7.5.
    use std::os::unix::fs::FileExt;
    f.write_all_at(&7.5f32.to_le_bytes(), 56 + 4 * (n - 1))
        .unwrap();
    drop(f);
    let before = vm_rss_kib();
    // SAFETY: a private file, not modified while mapped.
    let file = unsafe { MappedRa::open(&path) }.unwrap();
    let v = file.view::<f32>().unwrap();
    assert_eq!(v.len() as u64, n);
    assert_eq!(v[[n as usize - 1]], 7.5);
    assert_eq!(v[[n as usize / 2]], 0.0);
    let after = vm_rss_kib();
    println!("VmRSS before open {before} KiB, after reading two elements {after} KiB");
    assert!(
        after < 64 * 1024,
        "resident memory {after} KiB must stay under 64 MiB"
    );
    assert!(
        after - before.min(after) < 8 * 1024,
        "open + view + two reads cost {} KiB",
        after - before
    );
}
