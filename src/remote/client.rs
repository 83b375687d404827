//! The S3 client: URLs, configuration from the environment, retries, the runtime,
//! and the one ranged GET every read is made of.

use std::ops::Range;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path as ObjectPath;
use object_store::{BackoffConfig, ClientConfigKey, ClientOptions, ObjectStoreExt, RetryConfig};

use crate::error::{Error, ErrorKind, Result};

/// An `s3://bucket/key` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct S3Url {
    /// The bucket.
    pub bucket: String,
    /// The object's key.
    pub key: String,
}

/// Whether `s` names an object (`s3://...`) rather than a local path.
pub fn is_remote(s: &str) -> bool {
    s.starts_with("s3://")
}

impl S3Url {
    /// Parses `s3://bucket/key`.
    pub fn parse(url: &str) -> Result<S3Url> {
        let bad = |why: &str| {
            Error::from(ErrorKind::InvalidArgument(format!(
                "{url:?} is not an object URL: {why} (expected s3://bucket/key)"
            )))
        };
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| bad("no s3:// scheme"))?;
        let (bucket, key) = rest.split_once('/').ok_or_else(|| bad("no key"))?;
        if bucket.is_empty() || key.is_empty() || key.ends_with('/') {
            return Err(bad("empty bucket or key"));
        }
        Ok(S3Url {
            bucket: bucket.to_string(),
            key: key.to_string(),
        })
    }

    /// The URL as a path, for error messages.
    pub(crate) fn shown(&self) -> std::path::PathBuf {
        self.to_string().into()
    }

    pub(crate) fn path(&self) -> ObjectPath {
        ObjectPath::from(self.key.as_str())
    }
}

impl std::fmt::Display for S3Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "s3://{}/{}", self.bucket, self.key)
    }
}

/// How the client reads and writes: concurrency, request sizes, retries.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// Requests in flight at once.
    pub concurrency: usize,
    /// Bytes per ranged GET when a read is split (16 MiB, with 8 in flight, read a
    /// 1 GiB object fastest of the sizes and counts measured, see docs/PERFORMANCE.md).
    pub range_bytes: u64,
    /// Bytes per part of an upload (S3 needs at least 5 MiB for every part but the
    /// last) and the least data per part of a distributed fill.
    pub part_bytes: u64,
    /// Retries of a failed request (5xx, dropped connection, timeout), with backoff.
    pub retries: usize,
    /// Time allowed for one request, but for those of an upload, which wait for their
    /// answer (see `upload_store`).
    pub timeout: Duration,
    /// AWS settings that override the environment's, by object_store's names:
    /// `("aws_endpoint", "http://127.0.0.1:9000")`, `("aws_access_key_id", ..)`,
    /// `("aws_secret_access_key", ..)`, `("aws_region", ..)`, `("allow_http", "true")`.
    pub settings: Vec<(String, String)>,
}

impl RemoteOptions {
    /// Options for a server at `endpoint` with static credentials, overriding the
    /// environment: a local or private server (plain HTTP is allowed for `http://`).
    pub fn for_endpoint(endpoint: &str, key_id: &str, secret: &str) -> RemoteOptions {
        let mut settings = vec![
            ("aws_endpoint", endpoint),
            ("aws_access_key_id", key_id),
            ("aws_secret_access_key", secret),
        ];
        if std::env::var_os("AWS_REGION").is_none()
            && std::env::var_os("AWS_DEFAULT_REGION").is_none()
        {
            settings.push(("aws_region", "us-east-1"));
        }
        Self::with_settings(
            settings
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    /// Default options with `settings` (object_store's AWS names) over the
    /// environment's; an `aws_endpoint` of `http://` allows plain HTTP unless
    /// `allow_http` says otherwise.
    pub fn with_settings(mut settings: Vec<(String, String)>) -> RemoteOptions {
        let plain = settings
            .iter()
            .any(|(k, v)| k == "aws_endpoint" && v.starts_with("http://"));
        if plain && !settings.iter().any(|(k, _)| k == "allow_http") {
            settings.push(("allow_http".into(), "true".into()));
        }
        RemoteOptions {
            settings,
            ..RemoteOptions::default()
        }
    }
}

/// The smallest part S3 accepts, but for the last.
pub const MIN_PART_BYTES: u64 = 5 << 20;

impl Default for RemoteOptions {
    fn default() -> Self {
        RemoteOptions {
            concurrency: 8,
            range_bytes: 16 << 20,
            part_bytes: 16 << 20,
            retries: 6,
            timeout: Duration::from_secs(60),
            settings: Vec::new(),
        }
    }
}

/// The runtime the async client runs on, shared by every call.
pub(crate) fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| {
        ErrorKind::Remote {
            op: "start the I/O runtime",
            detail: e.clone(),
        }
        .into()
    })
}

/// An error of the object store, for an operation on `url`.
pub(crate) fn remote_err<'a>(
    op: &'static str,
    url: &'a S3Url,
) -> impl Fn(object_store::Error) -> Error + 'a {
    move |e| {
        let kind = match &e {
            object_store::Error::NotFound { .. } => ErrorKind::NoSuchObject { op },
            e => ErrorKind::Remote {
                op,
                detail: chain(e),
            },
        };
        Error::from(kind).at(url.to_string())
    }
}

/// An error and its causes, one after another: the HTTP client's own messages
/// ("builder error") say little without what caused them.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let s = c.to_string();
        if !out.contains(&s) {
            out.push_str(": ");
            out.push_str(&s);
        }
        cause = c.source();
    }
    out
}

/// Makes ring the process's TLS crypto provider, once, unless the program chose one
/// (the HTTP client finds no provider otherwise: only ring is built in).
fn install_tls_provider() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // An error means a provider is installed already: the program's choice stands.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// The bucket's store, configured from the environment, with `options`' retries and
/// timeout.
pub(crate) fn store(url: &S3Url, options: &RemoteOptions) -> Result<Arc<AmazonS3>> {
    build_store(url, options, Some(options.timeout))
}

/// The store for the requests of an upload (its beginning, parts, completion, abort):
/// as [`store`], but no request is given up on once it may have reached the server.
/// A request the client abandons (a timeout) may still be carried out: a part whose
/// bytes were on their way is stored after the upload was aborted, and stays (S3 asks
/// for the abort to be repeated; s3s-fs keeps it for good), a beginning leaves an
/// upload whose id nobody knows. So these requests have no request or read timeout (a
/// `timeout` or `read_timeout` setting is not applied to them): each ends with the
/// server's answer, or with its connection failing. Connecting still times out (then
/// nothing was sent), and failures the server answered are retried as elsewhere.
pub(crate) fn upload_store(url: &S3Url, options: &RemoteOptions) -> Result<Arc<AmazonS3>> {
    build_store(url, options, None)
}

/// A store whose requests time out after `timeout`, or wait for their answer if None.
fn build_store(
    url: &S3Url,
    options: &RemoteOptions,
    timeout: Option<Duration>,
) -> Result<Arc<AmazonS3>> {
    install_tls_provider();
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(5),
            base: 2.0,
        },
        max_retries: options.retries,
        retry_timeout: Duration::from_secs(180),
    };
    // These client options replace those from_env read: AWS_ALLOW_HTTP is read again.
    let allow_http = options
        .settings
        .iter()
        .rev()
        .find(|(k, _)| k == "allow_http" || k == "aws_allow_http")
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var("AWS_ALLOW_HTTP").ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let client = ClientOptions::new()
        .with_connect_timeout(Duration::from_secs(10))
        .with_allow_http(allow_http);
    let client = match timeout {
        Some(t) => client.with_timeout(t),
        None => client.with_timeout_disabled(),
    };
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(&url.bucket)
        .with_retry(retry)
        .with_client_options(client);
    // AWS_REGION is the AWS CLI's name; object_store reads AWS_DEFAULT_REGION too.
    if let Ok(region) = std::env::var("AWS_REGION") {
        builder = builder.with_region(region);
    }
    for (k, v) in &options.settings {
        let key: AmazonS3ConfigKey = k.parse().map_err(|e: object_store::Error| {
            Error::from(ErrorKind::InvalidArgument(format!("S3 setting {k:?}: {e}")))
        })?;
        let gives_up = matches!(
            key,
            AmazonS3ConfigKey::Client(ClientConfigKey::Timeout | ClientConfigKey::ReadTimeout)
        );
        if gives_up && timeout.is_none() {
            continue;
        }
        builder = builder.with_config(key, v);
    }
    builder.build().map(Arc::new).map_err(|e| {
        Error::from(ErrorKind::Remote {
            op: "configure S3",
            detail: e.to_string(),
        })
        .at(url.to_string())
    })
}

/// One ranged GET of `range`, refused when the answer has another length (the object
/// changed between requests).
pub(super) async fn get_exact(
    store: &AmazonS3,
    path: &object_store::path::Path,
    range: Range<u64>,
) -> object_store::Result<bytes::Bytes> {
    let bytes = store.get_range(path, range.clone()).await?;
    if bytes.len() as u64 != range.end - range.start {
        return Err(object_store::Error::Generic {
            store: "S3",
            source: format!(
                "asked for bytes {range:?}, got {} bytes (the object changed?)",
                bytes.len()
            )
            .into(),
        });
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = S3Url::parse("s3://b/dir/x.ra").unwrap();
        assert_eq!((u.bucket.as_str(), u.key.as_str()), ("b", "dir/x.ra"));
        assert_eq!(u.to_string(), "s3://b/dir/x.ra");
        for bad in [
            "s3://b",
            "s3:///x",
            "s3://b/",
            "http://b/x",
            "b/x",
            "s3://b/dir/",
        ] {
            assert!(S3Url::parse(bad).is_err(), "{bad}");
        }
    }
}
