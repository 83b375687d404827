//! One `ra` session, the same on every platform: its commands' exit codes, output and
//! output files (by MD5) must match `tests/golden/session.txt` exactly, on Linux and
//! under Wine for Windows alike. `RASTORE_BLESS=1` writes the file anew (on Linux).

use std::path::Path;

use md5::{Digest, Md5};

use crate::cli::ra;
use crate::common::tmp;

/// The session: each command's arguments (paths relative to one folder) and its input.
fn steps() -> Vec<(Vec<&'static str>, Vec<u8>)> {
    let frames: Vec<u8> = (0u16..18).flat_map(|v| (v * 37).to_le_bytes()).collect();
    let none = Vec::new;
    vec![
        (
            vec!["create", "c.ra", "--dtype", "f32", "--shape", "3,4"],
            none(),
        ),
        (
            vec!["append", "grow.ra", "-", "--dtype", "u16", "--frame", "2,3"],
            frames,
        ),
        (vec!["info", "grow.ra"], none()),
        (vec!["info", "--json", "grow.ra"], none()),
        (vec!["cat", "grow.ra", "--slice", ":,:,1"], none()),
        (vec!["cat", "grow.ra", "--json"], none()),
        (vec!["stats", "grow.ra", "--json"], none()),
        (
            vec!["meta", "grow.ra", "--set-attr", "units=counts"],
            none(),
        ),
        (vec!["meta", "grow.ra"], none()),
        (vec!["describe", "grow.ra"], none()),
        (vec!["convert", "grow.ra", "grow.npy"], none()),
        (vec!["info", "grow.npy"], none()),
        (vec!["diff", "grow.ra", "grow.npy"], none()),
        (vec!["convert", "grow.npy", "grow.png"], none()),
        (vec!["stack", "st.ra", "grow.npy", "grow.ra"], none()),
        (
            vec!["slice", "st.ra", "plane.npy", "--slice", ":,:,0,1"],
            none(),
        ),
        (
            vec!["convert", "st.ra", "st.ra", "--compress", "--overwrite"],
            none(),
        ),
        (vec!["info", "st.ra"], none()),
        (vec!["reshape", "grow.ra", "6,-1"], none()),
        (vec!["describe", "grow.ra"], none()),
        (vec!["verify", "st.ra", "grow.ra", "grow.npy"], none()),
        (vec!["diff", "grow.ra", "st.ra"], none()),
        (
            vec!["create", "c.ra", "--dtype", "f32", "--shape", "2"],
            none(),
        ),
        (vec!["cat", "grow.ra", "--slice", "9"], none()),
        (vec!["stats", "grow.png"], none()),
    ]
}

fn run_session(dir: &Path) -> String {
    let mut said = String::new();
    for (args, input) in steps() {
        let mut child = ra()
            .args(&args)
            .current_dir(dir)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        std::io::Write::write_all(&mut stdin, &input).unwrap();
        drop(stdin);
        let o = child.wait_with_output().unwrap();
        said += &format!(
            "$ ra {}\nexit {:?}\n{}{}",
            args.join(" "),
            o.status.code(),
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
    for name in [
        "c.ra",
        "grow.ra",
        "grow.npy",
        "grow.png",
        "st.ra",
        "plane.npy",
    ] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        said += &format!(
            "{name} {} bytes md5 {:x}\n",
            bytes.len(),
            Md5::digest(&bytes)
        );
    }
    said
}

#[test]
fn a_session_gives_the_same_output_and_files_on_every_platform() {
    let d = tmp();
    let said = run_session(d.path());
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/session.txt");
    if std::env::var_os("RASTORE_BLESS").is_some() {
        std::fs::write(&golden, &said).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap();
    // Line by line, for a readable failure.
    for (i, (got, want)) in said.lines().zip(want.lines()).enumerate() {
        assert_eq!(got, want, "line {} of {}", i + 1, golden.display());
    }
    assert_eq!(said.lines().count(), want.lines().count(), "{said}");
}
