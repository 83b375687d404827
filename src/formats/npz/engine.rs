//! The members of NumPy's `.npz` archives as sources: a stored member (`np.savez`) is
//! a `.npy` at an offset of the archive, read in place; a deflated one
//! (`np.savez_compressed`) is inflated into a scratch file first (beside the output),
//! in bounded memory, and the scratch file goes with the source.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::convert::{Block, Desc, Grain, Source};
use crate::error::{io_at, Error, Result, ResultExt};
use crate::formats::npy::NpySource;
use crate::formats::npz::{self, Member};
use crate::leftovers::Temporary;

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
    _scratch: Option<Temporary>,
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
            let start = npz::data_start(&file, len, m, path).at(path)?;
            // A stored member's size is the archive's word: its bytes must be there.
            if start.checked_add(m.size).is_none_or(|end| end > len) {
                return Err(in_member(Error::from(crate::ErrorKind::Malformed {
                    format: "ZIP",
                    field: format!("the size of member {}", m.name),
                    detail: format!(
                        "{} bytes from byte {start} run past the end of the {len}-byte archive",
                        m.size
                    ),
                })));
            }
            let npy = NpySource::at(path, file, start, m.size).map_err(in_member)?;
            return Ok(MemberSource {
                npy,
                _scratch: None,
            });
        }
        let (temporary, out) = self::scratch(scratch, "npy", |p| File::create_new(p))
            .map_err(io_at("create a scratch file", scratch))?;
        let scratch = temporary.path();
        let mut w = std::io::BufWriter::new(out);
        npz::extract(&file, len, m, path, &mut w).at(path)?;
        w.flush().map_err(io_at("write", scratch))?;
        drop(w);
        let npy = NpySource::open(scratch).map_err(|e| in_member(e.shown_as(scratch, path)))?;
        Ok(MemberSource {
            npy,
            _scratch: Some(temporary),
        })
    }
}

/// A new scratch file in the folder `dir` (hidden, its name ending `.ext`), made by
/// `make` (or left for a writer to make): a [`Temporary`], removed when dropped.
pub(crate) fn scratch<T>(
    dir: &Path,
    ext: &str,
    make: impl FnMut(&Path) -> std::io::Result<T>,
) -> std::io::Result<(Temporary, T)> {
    Temporary::create(dir, |unique| format!(".rastore-npz-{unique}.{ext}"), make)
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
