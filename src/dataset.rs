//! Datasets: a folder of `.ra` files, one variable per file, each sub-folder a group
//! ([FORMAT.md §10](https://github.com/rastore/rastore/blob/main/docs/FORMAT.md)): the
//! variables a folder holds, and the whole dataset's NDL, as `ra info`, `ra verify` and
//! `ra describe` give them for a folder. Python's `rastore.write(folder, ds)` and
//! xarray's `engine="rastore"` write and read datasets.

use std::path::{Path, PathBuf};

use yaml_rust2::yaml::Hash;
use yaml_rust2::Yaml;

use crate::error::{io_at, Error, ErrorKind, Result};

/// The dataset's own attributes, an NDL document beside its variables.
pub const ATTRIBUTES: &str = "dataset.yaml";

/// Makes `folder` (which has no variables) an empty dataset: a [`ATTRIBUTES`] of no
/// attributes, as a tree of no arrays is written.
pub fn write_empty(folder: &Path) -> Result<()> {
    let mut doc = Hash::new();
    doc.insert(Yaml::String("attributes".into()), Yaml::Hash(Hash::new()));
    std::fs::write(
        folder.join(ATTRIBUTES),
        crate::ndl::to_text(&Yaml::Hash(doc)),
    )
    .map_err(io_at("write", folder))
}

/// A dataset's variable: its name (a sub-group's as `group/name`) and its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// The file's name without `.ra`, under the names of its groups.
    pub name: String,
    /// The file.
    pub path: PathBuf,
}

/// The variables of the dataset at `folder` and of its sub-groups, sorted by name.
/// Names starting with `.` (writers' work in progress) are not part of it, nor are
/// symbolic links to folders (no loops).
pub fn variables(folder: &Path) -> Result<Vec<Variable>> {
    let mut out = Vec::new();
    walk(folder, "", &mut out)?;
    Ok(out)
}

/// The variables of the dataset at `folder`, as [`variables`], refusing a folder that
/// has none ([`ErrorKind::NoDataset`]): what `ra info`, `ra verify` and `ra describe`
/// take a folder to be.
pub fn require_variables(folder: &Path) -> Result<Vec<Variable>> {
    let found = variables(folder)?;
    refuse_empty(folder, &found)?;
    Ok(found)
}

/// Refuses `found`, the variables of the dataset at `at` (a folder, or a prefix in
/// object storage), when there are none: `at` is no dataset.
pub fn refuse_empty<T>(at: &Path, found: &[T]) -> Result<()> {
    match found.is_empty() {
        true => Err(Error::from(ErrorKind::NoDataset).at(at)),
        false => Ok(()),
    }
}

fn walk(folder: &Path, group: &str, out: &mut Vec<Variable>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(folder)
        .map_err(io_at("read the folder", folder))?
        .collect::<std::io::Result<_>>()
        .map_err(io_at("read the folder", folder))?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = e.path();
        let kind = e.file_type().map_err(io_at("stat", &path))?;
        if kind.is_dir() {
            walk(&path, &format!("{group}{name}/"), out)?;
        } else if let Some(stem) = name.strip_suffix(".ra").filter(|_| path.is_file()) {
            out.push(Variable {
                name: format!("{group}{stem}"),
                path,
            });
        }
    }
    Ok(())
}

/// Refuses a folder that is no dataset: one with no `.ra` files and no `dataset.yaml`,
/// in it or in a sub-folder (`ra info` and `ra convert` refuse it; xarray's
/// `engine="rastore"` too, rather than open it as an empty Dataset). A bad
/// `dataset.yaml` is named.
pub fn check(folder: &Path) -> Result<()> {
    if variables(folder)?.is_empty() && attribute_files(folder)?.is_empty() {
        return Err(Error::from(ErrorKind::InvalidArgument(format!(
            "not a dataset: a folder with no .ra files and no {ATTRIBUTES}, in it or below"
        )))
        .at(folder));
    }
    Ok(())
}

/// The dataset at `folder` as one NDL document: its `attributes` (from
/// `dataset.yaml`) and, under `ndarrays`, each variable's entry as `ra describe` gives
/// it for the file alone, with the `file` it is in. A folder with no variables is
/// refused ([`require_variables`]).
pub fn describe(folder: &Path) -> Result<String> {
    let mut entries = Vec::new();
    for v in require_variables(folder)? {
        let (header, trailer) = crate::read::read_header_and_metadata(&v.path)?;
        entries.push((
            v.name,
            v.path.to_string_lossy().into_owned(),
            header,
            trailer,
        ));
    }
    Ok(describe_entries(entries, attributes(folder)?))
}

/// A dataset's NDL document from its variables, each `(name, file, header, trailer)`,
/// and its attributes (a dataset in object storage is described from these).
pub fn describe_entries(
    entries: Vec<(String, String, crate::Header, Vec<u8>)>,
    attributes: Option<Yaml>,
) -> String {
    let mut arrays = Hash::new();
    for (name, file, header, trailer) in entries {
        let mut entity = crate::ndl::describe_entity(&header, &trailer);
        if let Yaml::Hash(h) = &mut entity {
            h.insert(Yaml::String("file".into()), Yaml::String(file));
        }
        arrays.insert(Yaml::String(name), entity);
    }
    let mut top = Hash::new();
    if let Some(attributes) = attributes {
        top.insert(Yaml::String("attributes".into()), attributes);
    }
    top.insert(Yaml::String("ndarrays".into()), Yaml::Hash(arrays));
    crate::ndl::to_text(&Yaml::Hash(top))
}

/// Names the complete dataset folder `tmp` (built beside it, under a hidden name)
/// `folder`, replacing one there: swapped in one step where the file system can (Linux,
/// macOS), so that `folder` is never missing; else the old one is moved aside first
/// (Windows). With `durable`, the folders are synced. Python's `rastore.write` of a
/// Dataset places its folders so.
pub fn place(tmp: &Path, folder: &Path, durable: bool) -> Result<()> {
    crate::replace::place_folder(tmp, folder, true, durable)
}

/// Each `dataset.yaml` of the dataset at `folder` and of its sub-groups, with the
/// attributes it holds (a mapping), sorted by path; the first that is no NDL document
/// of attributes is an error naming it.
pub fn attribute_files(folder: &Path) -> Result<Vec<(PathBuf, Yaml)>> {
    let mut out = Vec::new();
    let mut folders = vec![folder.to_path_buf()];
    while let Some(dir) = folders.pop() {
        if let Some(a) = attributes(&dir)? {
            out.push((dir.join(ATTRIBUTES), a));
        }
        let entries = std::fs::read_dir(&dir).map_err(io_at("read the folder", &dir))?;
        for e in entries.flatten() {
            let hidden = e.file_name().to_string_lossy().starts_with('.');
            if !hidden && e.file_type().is_ok_and(|t| t.is_dir()) {
                folders.push(e.path());
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The attributes in the folder's `dataset.yaml`, if it has one.
pub fn attributes(folder: &Path) -> Result<Option<Yaml>> {
    let path = folder.join(ATTRIBUTES);
    if !path.is_file() {
        return Ok(None);
    }
    let text = std::fs::read(&path).map_err(io_at("read", &path))?;
    attributes_in(&text).map_err(|e| e.at(&path))
}

/// The attributes in the folder's `dataset.yaml` ([`attributes`]), and its text when
/// it names their types too (`attribute_types`, as a NetCDF file's converted are),
/// which a copy keeps whole: the file read and parsed once.
pub fn attributes_and_text(folder: &Path) -> Result<(Option<Yaml>, Option<String>)> {
    let path = folder.join(ATTRIBUTES);
    if !path.is_file() {
        return Ok((None, None));
    }
    let text = std::fs::read(&path).map_err(io_at("read", &path))?;
    let doc = document(&text).map_err(|e| e.at(&path))?;
    let attributes = attributes_of(&doc).map_err(|e| e.at(&path))?;
    let typed = doc[crate::cdm::TYPES_KEY].as_hash().is_some();
    Ok((
        attributes,
        typed.then(|| String::from_utf8_lossy(&text).into_owned()),
    ))
}

/// Largest `dataset.yaml` read (as an NDL trailer).
pub const MAX_ATTRIBUTES: u64 = 1 << 20;

/// The attributes of the `dataset.yaml` document `text` (`None` if it has none); a
/// document that is no NDL, or whose attributes are no mapping, is an error.
pub fn attributes_in(text: &[u8]) -> Result<Option<Yaml>> {
    attributes_of(&document(text)?)
}

/// The NDL document `text`, or why it is none.
fn document(text: &[u8]) -> Result<Yaml> {
    crate::ndl::parse_trailer(text).ok_or_else(|| {
        Error::from(ErrorKind::InvalidArgument(
            "not an NDL document (YAML starting ---, at most 1 MiB, no aliases)".into(),
        ))
    })
}

/// The attributes of the `dataset.yaml` document `doc` ([`attributes_in`]).
fn attributes_of(doc: &Yaml) -> Result<Option<Yaml>> {
    match &doc["attributes"] {
        Yaml::BadValue => Ok(None),
        a @ Yaml::Hash(_) => Ok(Some(a.clone())),
        _ => Err(Error::from(ErrorKind::InvalidArgument(
            "its attributes are not a mapping of names to values".into(),
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_with_no_variables_and_no_attributes_is_no_dataset() {
        let d = tempfile::tempdir().unwrap();
        let run = d.path().join("run");
        std::fs::create_dir_all(run.join("sub")).unwrap();
        std::fs::write(run.join("notes.txt"), b"mine").unwrap();
        let err = check(&run).unwrap_err().to_string();
        assert!(
            err.contains("not a dataset") && err.contains("run"),
            "{err}"
        );
        std::fs::write(run.join("sub").join(ATTRIBUTES), "---\nattributes: {}\n").unwrap();
        check(&run).unwrap();
    }

    #[test]
    fn place_puts_a_new_dataset_over_the_old_and_leaves_no_hidden_folder() {
        let d = tempfile::tempdir().unwrap();
        let (run, tmp) = (d.path().join("run"), d.path().join(".run.new.tmp"));
        for (dir, file) in [(&run, "old.ra"), (&tmp, "new.ra")] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join(file), b"x").unwrap();
        }
        place(&tmp, &run, true).unwrap();
        assert!(run.join("new.ra").is_file() && !run.join("old.ra").exists());
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "{left:?}");
    }
}
