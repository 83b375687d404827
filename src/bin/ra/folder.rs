//! A folder given where one array is wanted: said what it is, and what to give instead.

use std::path::Path;

use crate::{term, Fail};

/// Refuses a folder given to `ra cmd`, which takes `takes` (`one array, a .ra or .npy
/// file`), saying what the folder is and what to give instead: a dataset's is named
/// with one of its files, a Zarr store is to be converted first.
pub fn no_folder(path: &Path, cmd: &str, takes: &str) -> Result<(), Fail> {
    if !path.is_dir() {
        return Ok(());
    }
    let name = term::path(path);
    let what = if rastore::convert::is_zarr(path) {
        format!("{name}: a Zarr store (a folder); `ra {cmd}` takes {takes}: `ra convert` it to .ra first")
    } else {
        let vars = rastore::dataset::require_variables(path)
            .map_err(|e| Fail::Data(format!("{}; `ra {cmd}` takes {takes}", crate::message(&e))))?;
        format!(
            "{name}: a dataset folder of {} array{}; `ra {cmd}` takes {takes}: name one of its files, as {}",
            vars.len(),
            if vars.len() == 1 { "" } else { "s" },
            term::path(&vars[0].path)
        )
    };
    Err(Fail::Data(what))
}
