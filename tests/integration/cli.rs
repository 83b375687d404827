//! The real `ra` binary.

use std::process::Command;

fn ra() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ra"))
}

#[test]
fn demo_runs_end_to_end_on_a_small_array() {
    let dir = crate::common::tmp();
    let out = ra()
        .args(["demo", "--gib", "0.01", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("float32 [1024, 1024, 3]"), "{stdout}");
    assert!(stdout.contains("open + view"), "{stdout}");
    assert!(
        stdout.contains("ok: values read through the mapping match"),
        "{stdout}"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "demo file removed"
    );
}

#[test]
fn unknown_subcommand_is_a_usage_error() {
    let out = ra().arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}
