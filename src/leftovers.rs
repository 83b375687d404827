//! Temporary outputs, and what becomes of them when their writer stops before it is
//! done. Every hidden name an output is built under beside its final one (a Zarr
//! store's folder, a file where the platform has no unnamed files, a scratch `.npy`)
//! is a `Temporary`:
//!
//! - Beside it, a lock file (its name and `.lock`) says what it is and is locked by
//!   the writer (`flock`, `LockFileEx`: the append lock's) for as long as the writer
//!   lives. The operating system drops the lock when the process ends, however it
//!   ends: a `kill -9`, a crash, a power loss.
//! - The first temporary a process makes in a folder first removes those there whose
//!   lock it can take (`remove_stale`): their writers are dead. No process id is
//!   read, so a reused one fools nothing; a live writer's lock is refused.
//! - The process lists its temporaries while they live: on an interrupt,
//!   [`exit_removing_temporaries`] removes them all and ends the process (`ra` does
//!   so on SIGINT and SIGTERM: `exit_on_interrupt`, feature `signals`). A writer that
//!   makes or writes a temporary by its name does so under `writing`, so that the
//!   removal waits for the writes under way and no write starts after it: none makes
//!   the folder again.
//!
//! Where the file system has no locks (some network file systems), temporaries are
//! made unlocked and no process removes another's.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::hash::{BuildHasher, Hasher};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, OnceLock, PoisonError, RwLock, RwLockReadGuard};

use crate::sys;

/// What a lock file's name adds to its temporary's.
const LOCK: &str = ".lock";

/// A lock file's contents: what it is, for whoever finds it, and the mark that tells
/// rastore's lock files from other programs' files of such a name.
const MARK: &[u8] = b"rastore: while this file is locked, a process is writing the \
temporary output named as this file without .lock; unlocked, both may be removed\n";

/// Held shared by every write to a temporary by its name, and exclusively by the
/// removal of them all ([`exit_removing_temporaries`]).
static GATE: RwLock<()> = RwLock::new(());

/// The temporaries of this process.
static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());

/// The folders this process has removed stale temporaries from.
static SWEPT: LazyLock<Mutex<HashSet<PathBuf>>> = LazyLock::new(Mutex::default);

/// Numbers the temporaries of this process.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// One temporary of this process: its path and its lock file's.
struct Live {
    id: u64,
    path: PathBuf,
    lock: PathBuf,
}

/// Held while making or writing a temporary by its name (a Zarr chunk, which makes
/// the folders above it): an interrupt's removal waits for it, and once the removal
/// has begun, taking it waits until the process ends. Never held twice by one thread.
pub(crate) fn writing() -> RwLockReadGuard<'static, ()> {
    GATE.read().unwrap_or_else(PoisonError::into_inner)
}

/// A number for a new temporary, and the part of its name that makes it unique: the
/// process id (for a person reading the folder), a number random to this process (so
/// that a later process given the same id picks other names than a dead one's) and
/// the temporary's number in it.
fn unique() -> (u64, String) {
    static NONCE: OnceLock<u32> = OnceLock::new();
    let nonce = NONCE.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.finish() as u32
    });
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    (n, format!("{:x}-{nonce:08x}-{n:x}", std::process::id()))
}

/// The lock file of the temporary `path`.
fn lock_of(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(LOCK);
    PathBuf::from(name)
}

/// Removes the file or folder `path`; one already gone is no error.
fn remove(path: &Path) -> io::Result<()> {
    let r = match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) => Err(e),
    };
    match r {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        r => r,
    }
}

/// A hidden name an output is built under, with its lock held and listed with this
/// process's temporaries. Dropped, it is removed (whatever is still under the name:
/// nothing once the output was renamed to its own), and so is its lock file.
pub(crate) struct Temporary {
    id: u64,
    path: PathBuf,
    lock: PathBuf,
    /// The open lock file, locked (where the file system locks).
    _held: File,
}

impl Temporary {
    /// A new temporary in `dir`, named `name(unique)`, made by `make` (a folder, a
    /// file, or nothing yet: a name for a writer to make under [`writing`]), after the
    /// stale temporaries of `dir` are removed ([`remove_stale`], once per folder and
    /// process). A name that is taken is passed over. `make`'s error, or the lock
    /// file's, is the error (a missing folder, one not writable).
    pub(crate) fn create<T>(
        dir: &Path,
        name: impl Fn(&str) -> String,
        mut make: impl FnMut(&Path) -> io::Result<T>,
    ) -> io::Result<(Temporary, T)> {
        sweep_once(dir);
        let mut taken = 0;
        loop {
            let (id, unique) = unique();
            let path = dir.join(name(&unique));
            let lock = lock_of(&path);
            let _writing = writing();
            let held = match claim(&lock) {
                Ok(Some(held)) => held,
                Ok(None) if taken < 8 => {
                    taken += 1;
                    continue;
                }
                Ok(None) => return Err(io::ErrorKind::AlreadyExists.into()),
                Err(e) => return Err(e),
            };
            match make(&path) {
                Ok(made) => {
                    LIVE.lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(Live {
                            id,
                            path: path.clone(),
                            lock: lock.clone(),
                        });
                    let temporary = Temporary {
                        id,
                        path,
                        lock,
                        _held: held,
                    };
                    return Ok((temporary, made));
                }
                Err(e) => {
                    let _ = fs::remove_file(&lock);
                    if e.kind() != io::ErrorKind::AlreadyExists || taken >= 8 {
                        return Err(e);
                    }
                    taken += 1;
                }
            }
        }
    }

    /// Its name.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for Temporary {
    /// Removes the temporary, and then its lock file; one that cannot be removed
    /// (Windows: a file open elsewhere) keeps its lock file, for the next writer in the
    /// folder to remove both once this process has ended.
    fn drop(&mut self) {
        let _writing = writing();
        let removed = remove(&self.path).is_ok();
        LIVE.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|l| l.id != self.id);
        if removed {
            let _ = fs::remove_file(&self.lock);
        }
    }
}

/// Makes the lock file `lock`, marked and locked: `None` when the name is taken, or
/// when a process removing stale temporaries took it before the lock was held.
fn claim(lock: &Path) -> io::Result<Option<File>> {
    let mut file = match OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(lock)
    {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(None),
        Err(e) => return Err(e),
    };
    if let Err(e) = file.write_all(MARK) {
        let _ = fs::remove_file(lock);
        return Err(e);
    }
    match sys::try_lock(&file, true) {
        // A remover holds it, and removes it.
        Ok(false) => return Ok(None),
        Ok(true) => {}
        // No locks here: the temporary is not guarded, and no remover takes it.
        Err(_) => return Ok(Some(file)),
    }
    // A remover that locked and removed it between its making and our lock left us
    // the lock of a file without a name.
    if fs::symlink_metadata(lock).is_err() {
        return Ok(None);
    }
    Ok(Some(file))
}

/// [`remove_stale`] of `dir`, the first time this process makes a temporary there.
fn sweep_once(dir: &Path) {
    let first = SWEPT
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(dir.to_path_buf());
    if first {
        let _ = remove_stale(dir);
    }
}

/// Removes the temporaries in `dir` whose writers are dead: each that has a lock file
/// of rastore's whose lock can be taken, and then that lock file. The temporaries of
/// live writers, this process's among them, and files that merely end in `.lock`
/// are left. Gives the temporaries removed.
pub(crate) fn remove_stale(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    for entry in fs::read_dir(dir)?.flatten() {
        let name = entry.file_name();
        let Some(temporary) = name
            .to_str()
            .and_then(|n| n.strip_suffix(LOCK))
            .filter(|t| t.starts_with('.'))
        else {
            continue;
        };
        let lock = entry.path();
        let Ok(mut file) = File::open(&lock) else {
            continue;
        };
        let mut mark = vec![0u8; MARK.len()];
        if file.read_exact(&mut mark).is_err() || mark != MARK {
            continue;
        }
        if !matches!(sys::try_lock(&file, true), Ok(true)) {
            continue;
        }
        let temporary = dir.join(temporary);
        if remove(&temporary).is_ok() {
            let _ = fs::remove_file(&lock);
            removed.push(temporary);
        }
    }
    Ok(removed)
}

/// Removes every temporary of this process, then ends it with the exit status `code`:
/// for a process being interrupted. Writes to them under way are waited for, and no
/// other starts. Outputs already complete and named stay. A temporary that cannot be
/// removed keeps its lock file, for the next writer in its folder.
pub fn exit_removing_temporaries(code: i32) -> ! {
    let _closed = GATE.write().unwrap_or_else(PoisonError::into_inner);
    let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(PoisonError::into_inner));
    // The last made first: a temporary inside another goes before it.
    for l in live.iter().rev() {
        if remove(&l.path).is_ok() {
            let _ = fs::remove_file(&l.lock);
        }
    }
    std::process::exit(code)
}

/// Makes SIGINT, SIGTERM and SIGHUP (Ctrl-C, Ctrl-Break, and a console closed, logged
/// off or shut down on Windows) end the process through [`exit_removing_temporaries`],
/// with the status shells give a process those signals end: 130, 143, 129 (on
/// Windows, `STATUS_CONTROL_C_EXIT`, `0xC000013A`). A signal the process was started
/// ignoring (`nohup`, a background job) stays ignored. A second signal while the
/// first one's removal runs ends the process at once. For programs (such as `ra`):
/// a library leaves signals to the program it is in.
#[cfg(feature = "signals")]
pub fn exit_on_interrupt() -> crate::Result<()> {
    sys::on_interrupt(interrupted).map_err(|e| crate::Error::io("handle signals", e))
}

/// A signal's handling (on a thread of its own): the first removes the temporaries
/// and ends the process, a later one ends it at once.
#[cfg(feature = "signals")]
fn interrupted(code: i32) {
    static STARTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if STARTED.swap(true, Ordering::SeqCst) {
        std::process::exit(code);
    }
    exit_removing_temporaries(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listing(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// A dead writer's temporary (its lock file marked, unlocked) goes with its lock
    /// file; a live one's (locked) stays, and so do other programs' `.lock` files.
    #[test]
    fn stale_temporaries_go_and_live_ones_stay() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        // A dead writer's folder with a chunk in it.
        let dead = dir.join(".out.zarr.1-2-3.tmp");
        fs::create_dir_all(dead.join("c/0")).unwrap();
        fs::write(dead.join("c/0/0"), b"chunk").unwrap();
        fs::write(lock_of(&dead), MARK).unwrap();
        // A dead writer's lock whose temporary it never made.
        fs::write(dir.join(".ra-1-2-4.tmp.lock"), MARK).unwrap();
        // Another program's.
        fs::create_dir(dir.join(".theirs.tmp")).unwrap();
        fs::write(dir.join(".theirs.tmp.lock"), b"pid 77\n").unwrap();
        // A live one (this process's, held).
        let (live, ()) =
            Temporary::create(dir, |u| format!(".out.zarr.{u}.tmp"), |p| fs::create_dir(p))
                .unwrap();
        let live_name = live
            .path()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        // Its making removed the stale ones of the folder.
        let mut want = vec![
            ".theirs.tmp".to_string(),
            ".theirs.tmp.lock".to_string(),
            live_name.clone(),
            format!("{live_name}.lock"),
        ];
        want.sort();
        assert_eq!(listing(dir), want);
        assert_eq!(remove_stale(dir).unwrap(), Vec::<PathBuf>::new());
        assert_eq!(listing(dir), want);
        // Dropped, it leaves nothing.
        drop(live);
        assert_eq!(listing(dir), [".theirs.tmp", ".theirs.tmp.lock"]);
    }

    /// A name taken, its lock file's or its own (by files of a dead process's that
    /// were never locked, say), is passed over.
    #[test]
    fn a_taken_name_is_passed_over() {
        let d = tempfile::tempdir().unwrap();
        fs::write(d.path().join(".x.a.tmp.lock"), b"").unwrap();
        fs::write(d.path().join(".x.b.tmp"), b"").unwrap();
        let tries = std::cell::Cell::new(0);
        let name = |u: &str| {
            tries.set(tries.get() + 1);
            match tries.get() {
                1 => ".x.a.tmp".to_string(),
                2 => ".x.b.tmp".to_string(),
                _ => format!(".x.{u}.tmp"),
            }
        };
        let (t, ()) = Temporary::create(d.path(), name, |p| File::create_new(p).map(drop)).unwrap();
        assert_eq!(tries.get(), 3);
        assert!(t.path().is_file());
        drop(t);
        assert_eq!(listing(d.path()), [".x.a.tmp.lock", ".x.b.tmp"]);
    }
}
