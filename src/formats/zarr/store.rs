//! Where a Zarr array lives: a folder, or (feature `s3`) a prefix in S3-protocol
//! storage, as one zarrs store and the array's path in it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use zarrs::storage::{ReadableWritableStorage, StoreKey};

use crate::error::{Error, ErrorKind, Result};

/// A Zarr array's location: a local folder (`x.zarr`) or an object prefix
/// (`s3://bucket/x.zarr`, with the `s3` feature).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A folder holding `zarr.json` (v3) or `.zarray` (v2).
    Local(PathBuf),
    /// `s3://bucket/prefix`, with object_store settings (`aws_endpoint`, ...) over
    /// the AWS environment's.
    Object {
        /// The URL.
        url: String,
        /// Settings by object_store's AWS names, as in `RemoteOptions::settings`.
        settings: Vec<(String, String)>,
    },
}

impl Location {
    /// The location named by `path`: an `s3://` URL or a folder.
    pub fn of(path: &Path) -> Location {
        match path.to_str() {
            Some(s) if s.starts_with("s3://") => Location::Object {
                url: s.trim_end_matches('/').into(),
                settings: Vec::new(),
            },
            _ => Location::Local(path.to_path_buf()),
        }
    }

    /// The location with object_store `settings` for an object (a folder has none).
    pub fn with_settings(self, settings: Vec<(String, String)>) -> Location {
        match self {
            Location::Object { url, .. } => Location::Object { url, settings },
            local => local,
        }
    }

    /// The location as given, for messages.
    pub fn shown(&self) -> PathBuf {
        match self {
            Location::Local(p) => p.clone(),
            Location::Object { url, .. } => url.into(),
        }
    }
}

/// An opened store: the storage, and the array's node path in it (`/` or `/prefix`).
pub(super) struct Store {
    pub storage: ReadableWritableStorage,
    pub node: String,
}

impl Store {
    /// The key of `name` (`zarr.json`, `.zarray`) beside the array.
    pub fn key(&self, name: &str) -> Result<StoreKey> {
        let key = format!("{}/{name}", self.node.trim_matches('/'));
        StoreKey::new(key.trim_start_matches('/'))
            .map_err(|e| ErrorKind::InvalidArgument(format!("store key {name}: {e}")).into())
    }
}

fn store_err(e: impl std::fmt::Display) -> Error {
    Error::decode("zarr", e.to_string())
}

/// Opens the store at `location` (for a local folder, the folder `dir`, which may be
/// a temporary one the output is built in).
pub(super) fn open(location: &Location, dir: Option<&Path>) -> Result<Store> {
    match location {
        Location::Local(p) => {
            let dir = dir.unwrap_or(p);
            let fs = zarrs::filesystem::FilesystemStore::new(dir).map_err(store_err)?;
            Ok(Store {
                storage: Arc::new(fs),
                node: "/".into(),
            })
        }
        Location::Object { url, settings } => object(url, settings),
    }
}

#[cfg(feature = "s3")]
fn object(url: &str, settings: &[(String, String)]) -> Result<Store> {
    use zarrs::storage::storage_adapter::async_to_sync::{
        AsyncToSyncBlockOn, AsyncToSyncStorageAdapter,
    };

    /// zarrs' synchronous calls run on the runtime the S3 client already keeps.
    struct BlockOn(&'static tokio::runtime::Runtime);

    impl AsyncToSyncBlockOn for BlockOn {
        fn block_on<F: std::future::Future>(&self, future: F) -> F::Output {
            self.0.block_on(future)
        }
    }

    // `s3://bucket/prefix`: the bucket's store, and the prefix as the node.
    let rest = url.strip_prefix("s3://").unwrap_or(url);
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    if bucket.is_empty() || prefix.is_empty() {
        return Err(ErrorKind::InvalidArgument(format!(
            "{url:?}: a Zarr array in object storage is s3://bucket/prefix"
        ))
        .into());
    }
    let s3 = crate::remote::S3Url::parse(&format!("s3://{bucket}/{prefix}"))?;
    let options = crate::remote::RemoteOptions::with_settings(settings.to_vec());
    let client = crate::remote::client::store(&s3, &options)?;
    let adapter = AsyncToSyncStorageAdapter::new(
        Arc::new(zarrs_object_store::AsyncObjectStore::new(client)),
        BlockOn(crate::remote::client::runtime()?),
    );
    Ok(Store {
        storage: Arc::new(adapter),
        node: format!("/{prefix}"),
    })
}

#[cfg(not(feature = "s3"))]
fn object(url: &str, _settings: &[(String, String)]) -> Result<Store> {
    Err(ErrorKind::Unsupported(format!(
        "{url}: object storage needs rastore's `s3` feature"
    ))
    .into())
}
