//! `s3://` in an `ra` built without the `s3` feature: every command that meets an
//! object URL says how to get a build that reads it.

use std::path::Path;

use crate::input::Input;
use crate::slice::Sel;
use crate::Fail;

/// Whether a command-line path names an object.
pub fn is_remote(p: &Path) -> bool {
    p.to_str().is_some_and(|s| s.starts_with("s3://"))
}

fn unsupported<T>(p: &Path) -> Result<T, Fail> {
    Err(Fail::Usage(format!(
        "{}: this ra was built without S3 support (build it with the `s3` feature, a default one)",
        crate::term::path(p)
    )))
}

pub fn info(p: &Path) -> Result<rastore::info::FileInfo, Fail> {
    unsupported(p)
}

pub fn describe(p: &Path) -> Result<String, Fail> {
    unsupported(p)
}

pub fn decoded(p: &Path) -> Result<rastore::RawData, Fail> {
    unsupported(p)
}

pub fn input(p: &Path, _spec: Option<&str>) -> Result<(Input, Vec<Sel>), Fail> {
    unsupported(p)
}

pub fn describe_dataset(p: &Path) -> Result<String, Fail> {
    unsupported(p)
}

pub fn variables(p: &Path) -> rastore::Result<Vec<std::path::PathBuf>> {
    Err(rastore::Error::from(rastore::ErrorKind::Unsupported(
        "an s3:// dataset, in an ra built without the `s3` feature".into(),
    ))
    .at(p))
}
