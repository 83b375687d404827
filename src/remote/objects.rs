//! Objects as a folder holds files, for datasets in object storage: the objects under a
//! prefix (`s3://bucket/run/`), a small object read whole, one put whole, and objects
//! removed.

use futures::TryStreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload};

use super::client::{remote_err, runtime, store, RemoteOptions, S3Url};
use crate::error::{Error, ErrorKind, Result};

/// An object under a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// Its key below the prefix (`temp.ra`, `coils/c0.ra`).
    pub name: String,
    /// Its length in bytes.
    pub size: u64,
}

/// The bucket and prefix of `s3://bucket/prefix/` (the `/` optional), as a URL of
/// the prefix without it.
fn prefix_of(url: &str) -> Result<S3Url> {
    S3Url::parse(url.trim_end_matches('/')).map_err(|_| {
        Error::from(ErrorKind::InvalidArgument(format!(
            "{url:?}: a folder in object storage is s3://bucket/prefix/"
        )))
    })
}

/// Every object under the prefix `url` (`s3://bucket/run/`), at every level, sorted by
/// name.
pub fn list(url: &str, options: &RemoteOptions) -> Result<Vec<Listed>> {
    list_where(url, options, |_| true)
}

/// The objects under the prefix `url` whose names below it `keep` keeps, sorted by
/// name: only those are held, however many the prefix has.
pub fn list_where(
    url: &str,
    options: &RemoteOptions,
    keep: impl Fn(&str) -> bool,
) -> Result<Vec<Listed>> {
    let at = prefix_of(url)?;
    let store = store(&at, options)?;
    let prefix = ObjectPath::from(at.key.as_str());
    let start = format!("{}/", prefix.as_ref());
    let mut out: Vec<Listed> = runtime()?
        .block_on(
            store
                .list(Some(&prefix))
                .try_filter_map(|m| {
                    let name = m.location.as_ref().strip_prefix(&start);
                    let kept = name.filter(|n| keep(n)).map(|n| Listed {
                        name: n.to_string(),
                        size: m.size,
                    });
                    std::future::ready(Ok(kept))
                })
                .try_collect(),
        )
        .map_err(remote_err("list", &at))?;
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The attributes in the `dataset.yaml` object `url` (`None` without one); one that is
/// no NDL document of attributes is an error naming it.
pub fn dataset_attributes(url: &str, options: &RemoteOptions) -> Result<Option<yaml_rust2::Yaml>> {
    match get_small(url, crate::dataset::MAX_ATTRIBUTES, options)? {
        Some(text) => crate::dataset::attributes_in(&text).map_err(|e| e.at(url)),
        None => Ok(None),
    }
}

/// Refuses a key below a prefix that is no plain relative path on every platform (a
/// segment empty, `.` or `..`, or holding `\` or `:`): it would name a file outside
/// the folder a tree is converted into.
pub fn check_name(name: &str, url: &str) -> Result<()> {
    let plain = |c: &str| !c.is_empty() && c != "." && c != ".." && !c.contains(['\\', ':']);
    if name.split('/').all(plain) {
        return Ok(());
    }
    Err(Error::from(ErrorKind::InvalidArgument(format!(
        "the key {name:?} below it is no plain relative path"
    )))
    .at(url))
}

/// Whether a key below a dataset's prefix is hidden (a writer's work in progress).
pub fn hidden(name: &str) -> bool {
    name.split('/').any(|c| c.starts_with('.'))
}

/// The variables of the dataset under the prefix `url` (`s3://bucket/run/`), every
/// level: each one's name (`temp`, `coils/c0`) and URL, sorted; hidden keys are not
/// part of it.
pub fn variables(url: &str, options: &RemoteOptions) -> Result<Vec<(String, String)>> {
    let found = list_where(url, options, |n| !hidden(n) && n.ends_with(".ra"))?;
    variables_in(&found, url)
}

/// The variables among `listed` (a listing of the prefix `url`, hidden names left
/// out), as [`variables`] gives them: for a caller that lists the prefix once for
/// more than its variables.
pub fn variables_in(listed: &[Listed], url: &str) -> Result<Vec<(String, String)>> {
    let base = url.trim_end_matches('/');
    listed
        .iter()
        .filter(|l| l.name.ends_with(".ra"))
        .map(|l| {
            check_name(&l.name, url)?;
            let stem = l.name.strip_suffix(".ra").unwrap_or(&l.name).to_string();
            Ok((stem, format!("{base}/{}", l.name)))
        })
        .collect()
}

/// The bytes of the object `url`, or `None` if there is none; one longer than `max`
/// bytes is an error.
pub fn get_small(url: &str, max: u64, options: &RemoteOptions) -> Result<Option<Vec<u8>>> {
    let at = S3Url::parse(url)?;
    let store = store(&at, options)?;
    // One ranged GET: the document, or a byte more than may be, which says so.
    let opts = GetOptions {
        range: Some(GetRange::Bounded(0..max + 1)),
        ..GetOptions::default()
    };
    let got = runtime()?.block_on(async {
        match store.get_opts(&at.path(), opts).await {
            Ok(r) => Ok(Some(r.bytes().await?.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            // An empty object has no first byte to ask for.
            Err(e) => match store.head(&at.path()).await {
                Ok(meta) if meta.size == 0 => Ok(Some(Vec::new())),
                _ => Err(e),
            },
        }
    });
    let bytes = got.map_err(remote_err("get", &at))?;
    if bytes.as_ref().is_some_and(|b| b.len() as u64 > max) {
        return Err(Error::from(ErrorKind::InvalidArgument(format!(
            "more than the {max} bytes such a document may have"
        )))
        .at(at.shown()));
    }
    Ok(bytes)
}

/// Stores `bytes` as the object `url`, whole.
pub fn put(url: &str, bytes: Vec<u8>, options: &RemoteOptions) -> Result<()> {
    let at = S3Url::parse(url)?;
    let store = store(&at, options)?;
    runtime()?
        .block_on(store.put(&at.path(), PutPayload::from(bytes)))
        .map_err(remote_err("put", &at))?;
    Ok(())
}

/// Removes the objects `urls` (one missing is no error).
pub fn delete(urls: &[String], options: &RemoteOptions) -> Result<()> {
    for url in urls {
        let at = S3Url::parse(url)?;
        let store = store(&at, options)?;
        match runtime()?.block_on(store.delete(&at.path())) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(remote_err("delete", &at)(e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_listings_are_plain_relative_paths() {
        for ok in ["temp.ra", "coils/c0.ra", "a b/ü.ra"] {
            assert!(check_name(ok, "s3://b/run/").is_ok(), "{ok}");
        }
        for bad in [
            "a\\..\\..\\evil.ra",
            "C:x.ra",
            "a//b.ra",
            "../x.ra",
            "a/./b.ra",
            "",
        ] {
            let e = check_name(bad, "s3://b/run/").unwrap_err().to_string();
            assert!(e.contains("no plain relative path"), "{bad}: {e}");
        }
    }
}
