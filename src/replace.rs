//! Placing a new file under its final name (FORMAT.md section 8): every whole-file
//! writer builds the file out of sight and gives it its name only when it is complete.
//!
//! - On Linux the new file is created unnamed (`O_TMPFILE`), so a process killed while
//!   writing leaves nothing behind. Elsewhere, and where the file system does not
//!   support that, it is a named temporary file with a short name (`.ra-ID.tmp`, a
//!   [`Temporary`]), removed on any error or unwind, on an interrupt, and by the next
//!   writer in its folder if its own was killed.
//! - A target that is a symbolic link is followed: the file it points to is replaced
//!   and the link stays.
//! - A target that exists keeps its permission bits, and its owner and group where the
//!   process may set them (Unix); its read-only attribute (Windows).
//! - A target with other hard links is refused unless splitting them was asked for:
//!   replacing it would leave the other names holding the old contents.
//! - Errors name the target, never the temporary file.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use crate::error::{io_at, Error, ErrorKind, Result};
use crate::leftovers::{writing, Temporary};
use crate::sys;

/// How a new file takes its name.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Placement {
    /// Replace an existing file (else refuse it, atomically).
    pub overwrite: bool,
    /// Sync the file before it is named and the directory after.
    pub durable: bool,
    /// Replace a file that has other hard links (only this name gets the new file).
    pub split_links: bool,
}

/// A folder under construction beside its `target`, under a hidden name (a
/// [`Temporary`]), to be named `target` by [`NewFolder::place`]; dropped unplaced, it
/// is removed with all it holds. (Zarr stores and groups are its folders.)
#[cfg(feature = "zarr")]
pub(crate) struct NewFolder {
    tmp: Temporary,
    target: PathBuf,
    overwrite: bool,
}

#[cfg(feature = "zarr")]
impl NewFolder {
    /// Starts the folder `target`: refused if its folder is missing, or if it exists
    /// and `overwrite` is not asked for.
    pub fn create(target: &Path, overwrite: bool) -> Result<NewFolder> {
        check_folder(target)?;
        if !overwrite && fs::symlink_metadata(target).is_ok() {
            return Err(exists(target));
        }
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (tmp, ()) = Temporary::create(
            parent_dir(target),
            |unique| format!(".{name}.{unique}.tmp"),
            |tmp| fs::create_dir(tmp),
        )
        .map_err(io_at("create folder", target))?;
        Ok(NewFolder {
            tmp,
            target: target.to_path_buf(),
            overwrite,
        })
    }

    /// Where it is being built.
    pub fn path(&self) -> &Path {
        self.tmp.path()
    }

    /// Names it `target`. What is there (when overwriting) is swapped out in one step
    /// where the file system can ([`sys::exchange`]), else moved aside first and
    /// removed after, or put back if the rename fails. Once renamed, the hidden name
    /// holds nothing of ours (or the old output, which goes with it).
    pub fn place(self) -> Result<()> {
        let _writing = writing();
        place_folder(self.tmp.path(), &self.target, self.overwrite, false)
    }
}

/// Names the complete folder `tmp` `to`. What is at `to` (when `overwrite`) is swapped
/// out in one step where the file system can ([`sys::exchange`]: the target is never
/// missing), else moved aside first and removed after, or put back if the rename
/// fails. With `durable`, the folders of `tmp` are synced before (their files were as
/// they were written), and `to`'s folder after.
pub(crate) fn place_folder(tmp: &Path, to: &Path, overwrite: bool, durable: bool) -> Result<()> {
    if durable {
        sync_tree(tmp)?;
    }
    let parent = parent_dir(to);
    let synced = |r: Result<()>| match r {
        Ok(()) if durable => sys::sync_dir(parent).map_err(io_at("sync the folder", parent)),
        r => r,
    };
    let remove = |p: &Path| {
        match fs::symlink_metadata(p) {
            Ok(m) if m.is_dir() => fs::remove_dir_all(p),
            _ => fs::remove_file(p),
        }
        .map_err(io_at("remove the replaced output", p))
    };
    let replacing = overwrite && fs::symlink_metadata(to).is_ok();
    if replacing && sys::exchange(tmp, to).map_err(io_at("exchange", to))? {
        return synced(remove(tmp));
    }
    let old = tmp.with_extension("old");
    if replacing {
        fs::rename(to, &old).map_err(io_at("rename", to))?;
    }
    if let Err(e) = fs::rename(tmp, to) {
        if replacing {
            let _ = fs::rename(&old, to);
        }
        return Err(Error::io("rename", e).at(to));
    }
    synced(if replacing { remove(&old) } else { Ok(()) })
}

/// Syncs every folder of `top`.
fn sync_tree(top: &Path) -> Result<()> {
    let mut folders = vec![top.to_path_buf()];
    while let Some(dir) = folders.pop() {
        for e in fs::read_dir(&dir)
            .map_err(io_at("read the folder", &dir))?
            .flatten()
        {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                folders.push(e.path());
            }
        }
        sys::sync_dir(&dir).map_err(io_at("sync the folder", &dir))?;
    }
    Ok(())
}

/// Symbolic links followed before giving up, as the kernel's `ELOOP` limit.
const MAX_LINKS: usize = 40;

/// A file under construction, to be named `target` by [`NewFile::place`].
pub(crate) struct NewFile {
    file: File,
    /// The path as the user gave it, for messages.
    shown: PathBuf,
    /// `shown` with symbolic links followed: the name that is replaced.
    target: PathBuf,
    /// The existing target's metadata, to carry over.
    old: Option<fs::Metadata>,
    /// The temporary name when the file is not unnamed; removed unless placed.
    named: Option<PathBuf>,
    /// The lock and listing of `named` when it is ours (not adopted).
    claim: Option<Temporary>,
    how: Placement,
}

/// `path` with symbolic links followed (a dangling link gives the path it names), and
/// the metadata of the file there, if there is one.
pub(crate) fn resolve_links(path: &Path) -> Result<(PathBuf, Option<fs::Metadata>)> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = fs::read_link(&p).map_err(io_at("read link", path))?;
                p = parent_dir(&p).join(to);
            }
            Ok(m) => return Ok((p, Some(m))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((p, None)),
            Err(e) => return Err(Error::io("stat", e).at(path)),
        }
    }
    let e = io::Error::other(format!("more than {MAX_LINKS} symbolic links"));
    Err(Error::io("follow links", e).at(path))
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A short hidden name beside `target`, made by `make` (any valid target name leaves
/// room for it): `.ra-ID.tmp`.
fn temp_name<T>(
    target: &Path,
    make: impl FnMut(&Path) -> io::Result<T>,
) -> io::Result<(Temporary, T)> {
    Temporary::create(
        parent_dir(target),
        |unique| format!(".ra-{unique}.tmp"),
        make,
    )
}

impl NewFile {
    /// Starts a new file that is to become `path` (read-write, empty), after checking
    /// that `how` allows replacing what is there.
    pub(crate) fn beside(path: &Path, how: Placement) -> Result<NewFile> {
        Self::beside_as(path, how, true)
    }

    /// [`beside`](Self::beside), unnamed only if `unnamed` and the file system can.
    fn beside_as(path: &Path, how: Placement, unnamed: bool) -> Result<NewFile> {
        let (target, old) = replaceable(path, how)?;
        let dir = parent_dir(&target);
        let (file, claim) = match sys::open_unnamed(dir).filter(|_| unnamed) {
            Some(f) => (f, None),
            None => {
                let (tmp, f) = temp_name(&target, |tmp| {
                    OpenOptions::new()
                        .read(true)
                        .write(true)
                        .create_new(true)
                        .open(tmp)
                })
                .map_err(|e| not_created(e, dir).at(path))?;
                (f, Some(tmp))
            }
        };
        Ok(NewFile {
            file,
            shown: path.to_path_buf(),
            target,
            old,
            named: claim.as_ref().map(|t| t.path().to_path_buf()),
            claim,
            how,
        })
    }

    /// Takes `complete`, a finished file under another name in `path`'s folder (one
    /// that many processes filled in place), as the new file that is to become `path`,
    /// after the same checks as [`beside`](Self::beside). Dropped unplaced, it is
    /// removed.
    pub(crate) fn adopt(complete: &Path, path: &Path, how: Placement) -> Result<NewFile> {
        let removed = |e: Error| {
            let _ = fs::remove_file(complete);
            e
        };
        let (target, old) = replaceable(path, how).map_err(removed)?;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(complete)
            .map_err(|e| removed(Error::io("open", e).at(complete)))?;
        Ok(NewFile {
            file,
            shown: path.to_path_buf(),
            target,
            old,
            named: Some(complete.to_path_buf()),
            claim: None,
            how,
        })
    }

    /// The file being built.
    pub(crate) fn file(&self) -> &File {
        &self.file
    }

    /// Names the complete file: carries over the old file's mode and owner, syncs when
    /// durable, then links it (refusing an existing name) or renames it over the target.
    pub(crate) fn place(mut self) -> Result<()> {
        let path = self.shown.clone();
        if let Some(m) = &self.old {
            sys::carry_over(&self.file, m).map_err(io_at("set permissions", &path))?;
        }
        if self.how.durable {
            self.file.sync_all().map_err(io_at("fsync", &path))?;
        }
        let named = match self.named.take() {
            Some(tmp) => tmp,
            None if !self.how.overwrite => {
                let _writing = writing();
                return sys::link_unnamed(&self.file, &self.target).map_err(|e| refused(e, &path));
            }
            None => {
                let (tmp, ()) = temp_name(&self.target, |tmp| sys::link_unnamed(&self.file, tmp))
                    .map_err(io_at("name the new file", &path))?;
                let named = tmp.path().to_path_buf();
                self.claim = Some(tmp);
                named
            }
        };
        let writing = writing();
        let placed = if self.how.overwrite {
            sys::replace(&named, &self.target, self.old.as_ref()).map_err(io_at("rename", &path))
        } else {
            // link() fails if the target exists: an atomic refuse-to-clobber.
            fs::hard_link(&named, &self.target).map_err(|e| refused(e, &path))
        };
        // A rename took the temporary name away; a link, or a failure, left it.
        if placed.is_err() || !self.how.overwrite {
            let _ = fs::remove_file(&named);
        }
        drop(writing);
        placed?;
        if self.how.durable {
            let dir = parent_dir(&self.target);
            sys::sync_dir(dir).map_err(io_at("fsync directory", dir))?;
        }
        Ok(())
    }
}

impl Drop for NewFile {
    /// An unplaced named temporary file is removed, on error and on unwind alike.
    fn drop(&mut self) {
        if let Some(tmp) = &self.named {
            let _ = fs::remove_file(tmp);
        }
    }
}

/// Where a new file for `path` goes (symbolic links followed) and what is there now,
/// after checking that `how` allows replacing it: not a folder, and no other hard
/// links unless they are to be split.
fn replaceable(path: &Path, how: Placement) -> Result<(PathBuf, Option<fs::Metadata>)> {
    let (target, old) = resolve_links(path)?;
    if let Some(m) = &old {
        if !how.overwrite {
            return Err(exists(path));
        }
        if m.is_dir() {
            return Err(Error::from(ErrorKind::InvalidArgument("is a directory".into())).at(path));
        }
        let links = sys::link_count(m, &target).map_err(io_at("stat", path))?;
        if links > 1 && !how.split_links {
            return Err(Error::from(ErrorKind::HardLinks { links }).at(path));
        }
    }
    Ok((target, old))
}

/// Refuses an existing `path` unless `how` overwrites: a check before any work, for
/// writers that would otherwise build the whole file first (placing it refuses
/// atomically too).
pub(crate) fn refuse_existing(path: &Path, how: Placement) -> Result<()> {
    if !how.overwrite && fs::symlink_metadata(path).is_ok() {
        return Err(exists(path));
    }
    Ok(())
}

/// Refuses an output `path` whose folder does not exist: every writer, of a file or of
/// a folder (a Zarr store, an archive's members), makes the output itself and never
/// the folders above it, as `cp` and NumPy do.
pub(crate) fn check_folder(path: &Path) -> Result<()> {
    let dir = parent_dir(path);
    if dir.is_dir() {
        return Ok(());
    }
    Err(missing_folder(dir).at(path))
}

fn missing_folder(dir: &Path) -> Error {
    let why = format!("the folder {} does not exist", dir.display());
    Error::io("create", io::Error::new(io::ErrorKind::NotFound, why))
}

fn exists(path: &Path) -> Error {
    Error::from(ErrorKind::Exists).at(path)
}

/// Why a new file could not be made in `dir`: most often, there is no such folder.
fn not_created(e: io::Error, dir: &Path) -> Error {
    if e.kind() == io::ErrorKind::NotFound && !dir.is_dir() {
        missing_folder(dir)
    } else {
        Error::io("create a file in its folder", e)
    }
}

fn refused(e: io::Error, path: &Path) -> Error {
    if e.kind() == io::ErrorKind::AlreadyExists {
        exists(path)
    } else {
        Error::io("link", e).at(path)
    }
}

/// Builds a file through `build` and places it as `path` (see [`NewFile`]).
pub(crate) fn build_file<R>(
    path: &Path,
    how: Placement,
    build: impl FnOnce(&NewFile) -> Result<R>,
) -> Result<R> {
    let new = NewFile::beside(path, how)?;
    let r = build(&new)?;
    new.place()?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn listing(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Where `O_TMPFILE` is missing: a short named temporary file, placed or removed.
    #[test]
    fn the_named_fallback_places_or_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("rastore-replace-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let target = dir.join("n".repeat(250) + ".ra");
        let how = Placement {
            overwrite: true,
            ..Placement::default()
        };
        let new = NewFile::beside_as(&target, how, false).unwrap();
        let named = new.named.clone().expect("the fallback was taken");
        let name = named.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(".ra-") && name.len() < 40, "{name}");
        assert_eq!(
            listing(&dir),
            [name.clone(), format!("{name}.lock")],
            "one temporary file and its lock while building"
        );
        (&new.file).write_all(b"done").unwrap();
        new.place().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"done");
        assert_eq!(
            listing(&dir),
            [target.file_name().unwrap().to_string_lossy()]
        );
        // Dropped unplaced (an error, or an unwinding panic): removed.
        let new = NewFile::beside_as(&target, how, false).unwrap();
        (&new.file).write_all(b"half").unwrap();
        drop(new);
        assert_eq!(listing(&dir).len(), 1);
        assert_eq!(fs::read(&target).unwrap(), b"done");
        // An unnamed file named through /proc (the way for processes without the
        // privilege to link by descriptor).
        #[cfg(target_os = "linux")]
        if let Some(f) = sys::open_unnamed(&dir) {
            (&f).write_all(b"proc").unwrap();
            let named = dir.join("by-proc.ra");
            sys::link_by_proc(&f, &named).unwrap();
            assert_eq!(fs::read(&named).unwrap(), b"proc");
            let again = sys::link_by_proc(&f, &named).unwrap_err();
            assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
            fs::remove_file(&named).unwrap();
        }
        // Refusing an existing file by link.
        let keep = Placement::default();
        let e = NewFile::beside_as(&target, keep, false).err().unwrap();
        assert!(matches!(e.kind(), ErrorKind::Exists), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
