//! Datasets, folders of `.ra` files (issue 31), in the tool: `ra info`, `ra verify` and
//! `ra describe` of a folder go through its variables, its sub-groups' too.

use crate::common::{tmp, words, MAGIC};
use crate::tool::{fails, ok, s};

/// A float32 variable of `n` elements at `path`.
fn variable(path: &std::path::Path, n: u64) {
    let mut bytes = words(&[MAGIC, 0, 3, 4, 4 * n, 1, n]);
    bytes.resize(bytes.len() + 4 * n as usize, 0);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn the_tool_reads_a_folder_as_its_variables() {
    let d = tmp();
    let run = d.path().join("run");
    std::fs::create_dir_all(run.join("coils")).unwrap();
    variable(&run.join("temp.ra"), 6);
    variable(&run.join("lat.ra"), 2);
    variable(&run.join("coils/c0.ra"), 3);
    variable(&run.join(".temp.ra.rastore-1.tmp"), 1);
    std::fs::write(run.join("notes.txt"), "not a variable").unwrap();
    std::fs::write(
        run.join("dataset.yaml"),
        "---\nattributes:\n  title: a run\n",
    )
    .unwrap();
    let info = ok(&["info", s(&run)]);
    let lines: Vec<&str> = info.lines().collect();
    assert_eq!(lines.len(), 3, "{info}");
    assert!(
        lines[0].contains("c0.ra") && lines[0].contains("[3]"),
        "{info}"
    );
    assert!(
        lines[1].contains("lat.ra") && lines[2].contains("temp.ra"),
        "{info}"
    );
    assert_eq!(ok(&["verify", s(&run)]).lines().count(), 3);
    let doc = ok(&["describe", s(&run)]);
    assert!(doc.contains("attributes:\n  title: a run"), "{doc}");
    assert!(doc.contains("coils/c0:") && doc.contains("temp:"), "{doc}");
    assert!(!doc.contains(".rastore"), "{doc}");
    // A bad variable is named; the others are still checked.
    std::fs::write(run.join("lat.ra"), b"short").unwrap();
    let err = fails(&["verify", s(&run)], 1);
    assert!(err.contains("lat.ra"), "{err}");
    let empty = d.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert!(fails(&["info", s(&empty)], 1).contains("no .ra files"));
}
