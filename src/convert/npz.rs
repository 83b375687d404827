//! The members of NumPy's `.npz` archives as sources: a stored member (`np.savez`) is
//! a `.npy` at an offset of the archive, read in place; a deflated one
//! (`np.savez_compressed`) is inflated into a scratch file first (beside the output),
//! in bounded memory, and the scratch file goes with the source.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::npy::NpySource;
use super::{Block, Desc, Grain, Source};
use crate::error::{io_at, Error, Result, ResultExt};
use crate::formats::npz::{self, Member};

/// The members of the archive `path`, each with the name its array was saved under
/// (`x` for `x.npy`): a plain name, or the archive is refused.
pub fn members(path: &Path) -> Result<Vec<(String, Member)>> {
    let file = File::open(path).map_err(io_at("open", path))?;
    let len = file.metadata().map_err(io_at("stat", path))?.len();
    let members = npz::members(&file, len, path).at(path)?;
    members
        .into_iter()
        .map(|m| {
            let name = match m.name.strip_suffix(".npy") {
                Some(s) if !s.is_empty() && !s.starts_with('.') && !s.contains(['/', '\\']) => {
                    s.to_string()
                }
                _ => {
                    return Err(Error::decode(
                        "npz",
                        format!("member {:?} is not NAME.npy with a plain NAME", m.name),
                    )
                    .at(path))
                }
            };
            Ok((name, m))
        })
        .collect()
}

/// One member of an archive, read as a `.npy`.
pub struct MemberSource {
    npy: NpySource,
    /// The inflated copy of a deflated member, removed with the source (after `npy`,
    /// which holds it open, is dropped).
    _scratch: Option<Removed>,
}

impl MemberSource {
    /// Opens member `m` of the archive `path`; a deflated one is inflated into a
    /// scratch file in the folder `scratch` (the output's, where there is room for
    /// it).
    pub fn open(path: &Path, m: &Member, scratch: &Path) -> Result<MemberSource> {
        let file = File::open(path).map_err(io_at("open", path))?;
        let len = file.metadata().map_err(io_at("stat", path))?.len();
        let in_member = |e: Error| Error::decode("npz", format!("member {}: {e}", m.name)).at(path);
        if m.is_stored() {
            let start = npz::data_start(&file, len, m, path)?;
            let npy = NpySource::at(path, file, start, m.size).map_err(in_member)?;
            return Ok(MemberSource {
                npy,
                _scratch: None,
            });
        }
        let (scratch, removed) = self::scratch(scratch, "npy");
        let mut w =
            std::io::BufWriter::new(File::create(&scratch).map_err(io_at("create", &scratch))?);
        npz::extract(&file, len, m, path, &mut w).at(path)?;
        w.flush().map_err(io_at("write", &scratch))?;
        drop(w);
        let npy = NpySource::open(&scratch).map_err(|e| in_member(e.shown_as(&scratch, path)))?;
        Ok(MemberSource {
            npy,
            _scratch: Some(removed),
        })
    }
}

static SCRATCH: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A new scratch file's name in the folder `dir` (hidden, this process's), ending
/// `.ext`, and the guard that removes it.
pub(super) fn scratch(dir: &Path, ext: &str) -> (PathBuf, Removed) {
    let path = dir.join(format!(
        ".rastore-npz-{:x}-{:x}.{ext}",
        std::process::id(),
        SCRATCH.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    (path.clone(), Removed(path))
}

/// Removes a file when dropped.
pub(super) struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl Source for MemberSource {
    fn desc(&self) -> &Desc {
        self.npy.desc()
    }

    fn grain(&self) -> Grain {
        self.npy.grain()
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        self.npy.read_box(block, out)
    }

    fn read_selection(&self, sel: &[crate::Stride], out: &mut [u8]) -> Result<()> {
        self.npy.read_selection(sel, out)
    }

    fn shown(&self) -> &Path {
        self.npy.shown()
    }
}
