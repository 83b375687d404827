//! What an interrupted or killed `ra` leaves beside its output (issue 37): nothing
//! once it is interrupted (SIGINT, SIGTERM: Unix only, where tests can send them), and
//! nothing once the next writer in the folder has run after a kill (every platform:
//! `Child::kill` is SIGKILL on Unix, `TerminateProcess` on Windows).
//!
//! The conversions are slow on purpose (gzip at level 9 of bytes that do not
//! compress, or a transpose) and each test waits, with a generous deadline and no
//! timing of its own, until `ra` is writing before it interrupts it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::common::{noise, tmp};
use crate::tool::{ok, s};

/// How long `ra` may take to start writing on a busy machine (or under Wine).
const DEADLINE: Duration = Duration::from_secs(300);

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A `.ra` of 64 MiB of bytes no compressor shrinks, `[1024, 1024, 64]`: gzip at
/// level 9 takes seconds over it.
fn noisy_input(dir: &Path) -> PathBuf {
    let p = dir.join("t.ra");
    let a = rastore::ndarray::Array3::from_shape_vec((64, 1024, 1024), noise(64 << 20, 37))
        .unwrap()
        .reversed_axes();
    rastore::write(&p, &a).unwrap();
    p
}

/// The arguments of a Zarr conversion of `input` into `big.zarr` beside it that
/// takes seconds.
fn slow_zarr(input: &Path) -> (PathBuf, Vec<String>) {
    let out = input.with_file_name("big.zarr");
    let args = vec![
        "convert".into(),
        s(input).into(),
        s(&out).into(),
        "--codec".into(),
        "gzip:9".into(),
    ];
    (out, args)
}

/// The hidden temporary folder of `big.zarr` in `dir` (`.big.zarr.ID.tmp`), if there
/// is one.
fn zarr_temporary(dir: &Path) -> Option<String> {
    names(dir)
        .into_iter()
        .find(|n| n.starts_with(".big.zarr.") && n.ends_with(".tmp"))
}

/// Waits until `ready` says `ra` is writing; panics with what it said if it ends
/// first, or past [`DEADLINE`].
fn wait_until(child: &mut Child, what: &str, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        if let Some(status) = child.try_wait().unwrap() {
            let mut said = String::new();
            if let Some(e) = child.stderr.as_mut() {
                let _ = std::io::Read::read_to_string(e, &mut said);
            }
            panic!("ra ended ({status:?}) before {what}: {said}");
        }
        assert!(start.elapsed() < DEADLINE, "no {what} after {DEADLINE:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `ra args` with stderr piped, starting it again when Windows (Wine) fails to
/// start it (see `until_started`).
fn start(cmd: impl Fn() -> Command) -> Child {
    for _ in 0..3 {
        match cmd().stderr(std::process::Stdio::piped()).spawn() {
            Ok(child) => return child,
            Err(e) if e.raw_os_error() == Some(1359) => {}
            Err(e) => panic!("ra did not start: {e}"),
        }
    }
    panic!("Windows failed to start ra three times");
}

/// A writer killed outright (no handler runs) leaves its hidden folder and its lock;
/// the next writer in the folder, of the same output here, finds the lock free (its
/// owner is dead) and removes both, then writes its own output.
#[test]
fn a_killed_writers_folder_goes_with_the_next_writer() {
    let d = tmp();
    let input = noisy_input(d.path());
    let (out, args) = slow_zarr(&input);
    let mut child = start(|| {
        let mut c = crate::cli::ra();
        c.args(&args);
        c
    });
    wait_until(&mut child, "the hidden folder", || {
        zarr_temporary(d.path()).is_some()
    });
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed: {status:?}");
    let left = zarr_temporary(d.path()).expect("a killed writer leaves its folder");
    assert_eq!(
        names(d.path()),
        [left.clone(), format!("{left}.lock"), "t.ra".to_string()],
        "the folder and its lock, nothing else"
    );
    // The next conversion into the same output: a small one.
    let small = d.path().join("small.ra");
    rastore::write(&small, &rastore::ndarray::Array1::<u16>::from_elem(5, 9)).unwrap();
    ok(&["convert", s(&small), s(&out)]);
    assert_eq!(names(d.path()), ["big.zarr", "small.ra", "t.ra"]);
    let back = d.path().join("back.ra");
    ok(&["convert", s(&out), s(&back)]);
    assert_eq!(
        rastore::read::<u16>(&back)
            .unwrap()
            .into_raw_vec_and_offset()
            .0,
        [9; 5]
    );
}

#[cfg(unix)]
mod unix {
    use std::os::unix::process::CommandExt;
    use std::os::unix::process::ExitStatusExt;
    use std::path::Path;
    use std::process::Command;

    use super::{names, noisy_input, slow_zarr, start, wait_until, zarr_temporary};
    use crate::common::tmp;
    use crate::tool::s;

    /// `ra args` with SIGINT and SIGTERM at their defaults, as a terminal gives them
    /// (a test run started as a shell's background job would pass SIGINT on ignored,
    /// and `ra`, as it should, would keep ignoring it).
    fn ra(args: &[String]) -> Command {
        let mut c = crate::cli::ra();
        c.args(args);
        // SAFETY: between fork and exec the child calls only signal(), which is
        // async-signal-safe.
        unsafe {
            c.pre_exec(|| {
                libc::signal(libc::SIGINT, libc::SIG_DFL);
                libc::signal(libc::SIGTERM, libc::SIG_DFL);
                Ok(())
            });
        }
        c
    }

    /// Sends `signal` (`INT`, `TERM`) to the process `pid`.
    fn send(signal: &str, pid: u32) {
        let sent = Command::new("kill")
            .args([format!("-{signal}"), pid.to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -{signal} {pid}: {sent:?}");
    }

    /// Interrupts a Zarr conversion with `signal` once its hidden folder is there:
    /// `ra` exits with `code`, having removed the folder (and the member array's folder
    /// inside it) and their locks.
    fn zarr_interrupted(signal: &str, code: i32) {
        let d = tmp();
        let input = noisy_input(d.path());
        let (_, args) = slow_zarr(&input);
        let mut child = start(|| ra(&args));
        wait_until(&mut child, "the hidden folder", || {
            zarr_temporary(d.path()).is_some()
        });
        send(signal, child.id());
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "ra after SIGINT: {:?} {}",
            out.status.signal(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(names(d.path()), ["t.ra"], "nothing left beside the input");
    }

    #[test]
    fn sigint_during_a_zarr_conversion_removes_its_folder_and_exits_130() {
        zarr_interrupted("INT", 130);
    }

    #[test]
    fn sigterm_during_a_zarr_conversion_removes_its_folder_and_exits_143() {
        zarr_interrupted("TERM", 143);
    }

    /// Whether the process `pid` has a file open in `dir` other than `input`: its new
    /// file, unnamed on Linux (`/proc/PID/fd` shows it as `DIR/#INODE (deleted)`), or
    /// named (`.ra-ID.tmp`) where there are no unnamed files.
    fn writing_into(dir: &Path, input: &Path, pid: u32) -> bool {
        if names(dir).iter().any(|n| n.starts_with(".ra-")) {
            return true;
        }
        let dir = dir.canonicalize().unwrap();
        let input = input.canonicalize().unwrap();
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            return false;
        };
        fds.flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .any(|to| to.starts_with(&dir) && to != input)
    }

    /// A `.ra` output interrupted while it is written (a C-order `.npy` transposed):
    /// exit 143, no output, nothing beside the input.
    #[test]
    fn sigterm_during_a_ra_conversion_leaves_no_file_and_exits_143() {
        let d = tmp();
        let input = d.path().join("c.npy");
        crate::common::slow_npy(&input, &[4096, 4096, 4]);
        let args: Vec<String> = vec![
            "convert".into(),
            s(&input).into(),
            s(&d.path().join("out.ra")).into(),
        ];
        let mut child = start(|| ra(&args));
        let pid = child.id();
        wait_until(&mut child, "the new file", || {
            writing_into(d.path(), &input, pid)
        });
        send("TERM", pid);
        let out = child.wait_with_output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(143),
            "ra after SIGTERM: {:?} {}",
            out.status.signal(),
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(names(d.path()), ["c.npy"], "nothing left beside the input");
    }
}
