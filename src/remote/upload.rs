//! Uploading a local file, or an array in memory, with a parallel multipart upload.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use object_store::aws::AmazonS3;
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt, PutPayload};

use super::client::{
    remote_err, runtime, store, upload_store, RemoteOptions, S3Url, MIN_PART_BYTES,
};
use crate::error::{io_at, Error, ErrorKind, Result};
use crate::header::Header;

/// Where an upload's bytes come from.
trait Source: Sync {
    fn len(&self) -> Result<u64>;
    fn read(&self, at: u64, buf: &mut [u8]) -> Result<()>;
}

impl Source for (&File, &Path) {
    fn len(&self) -> Result<u64> {
        Ok(self.0.metadata().map_err(io_at("stat", self.1))?.len())
    }
    fn read(&self, at: u64, buf: &mut [u8]) -> Result<()> {
        // Each part in large reads on several threads, as every whole-file pass reads.
        let options = crate::scan::ScanOptions::default();
        crate::scan::read_file_into(self.0, self.1, at, buf, &options)
    }
}

/// Header, data and trailer, one after another.
struct Pieces<'a>(&'a [&'a [u8]]);

impl Source for Pieces<'_> {
    fn len(&self) -> Result<u64> {
        Ok(self.0.iter().map(|p| p.len() as u64).sum())
    }
    fn read(&self, mut at: u64, mut buf: &mut [u8]) -> Result<()> {
        for p in self.0 {
            let n = p.len() as u64;
            if at >= n {
                at -= n;
                continue;
            }
            let take = ((n - at) as usize).min(buf.len());
            buf[..take].copy_from_slice(&p[at as usize..at as usize + take]);
            buf = &mut buf[take..];
            at = 0;
            if buf.is_empty() {
                break;
            }
        }
        Ok(())
    }
}

/// Uploads the local file `path` (any file; a `.ra` is checked first) to `url`, with
/// `concurrency` parts of `part_bytes` in flight. Nothing is visible under the key
/// until the upload completes; a failed upload is aborted.
pub fn upload_file(path: impl AsRef<Path>, url: &str, options: &RemoteOptions) -> Result<u64> {
    let path = path.as_ref();
    crate::read_header_at(path)?;
    upload_any(path, url, options)
}

/// Uploads the local file `path`, whatever it holds (a `.npy` or `.png` a conversion
/// made), as [`upload_file`] does.
pub fn upload_any(path: &Path, url: &str, options: &RemoteOptions) -> Result<u64> {
    let file = File::open(path).map_err(io_at("open", path))?;
    upload(&(&file, path), url, options)
}

/// Uploads plain column-major `data` described by `header`, then `trailer`, to `url`
/// (as [`upload_file`] does).
pub fn upload_bytes(
    url: &str,
    header: &Header,
    data: &[u8],
    trailer: &[u8],
    options: &RemoteOptions,
) -> Result<u64> {
    if data.len() as u64 != header.size() {
        return Err(ErrorKind::InvalidArgument(format!(
            "{} data bytes for a header of size {}",
            data.len(),
            header.size()
        ))
        .into());
    }
    let head = header.encode();
    upload(&Pieces(&[&head, data, trailer]), url, options)
}

fn upload(src: &dyn Source, url: &str, options: &RemoteOptions) -> Result<u64> {
    let url = S3Url::parse(url)?;
    let path = url.path();
    let len = src.len()?;
    let part = options.part_bytes.max(MIN_PART_BYTES);
    let rt = runtime()?;
    if len <= part {
        let mut buf = vec![0u8; len as usize];
        src.read(0, &mut buf)?;
        rt.block_on(store(&url, options)?.put(&path, PutPayload::from(buf)))
            .map_err(remote_err("put", &url))?;
        return Ok(len);
    }
    let store = upload_store(&url, options)?;
    let id = rt
        .block_on(store.create_multipart(&path))
        .map_err(remote_err("create multipart upload", &url))?;
    let parts = len.div_ceil(part);
    let result = rt.block_on(put_parts(
        &store, &path, &id, src, len, part, parts, options,
    ));
    match result {
        Ok(ids) => rt
            .block_on(store.complete_multipart(&path, &id, ids))
            .map(|_| len)
            .map_err(remote_err("complete multipart upload", &url)),
        Err(e) => {
            // No part is in flight any more (put_parts waited for them all), and none
            // is sent after. Best effort: the error that stopped the upload is the one
            // to report.
            let _ = rt.block_on(store.abort_multipart(&path, &id));
            Err(e.at(url.shown()))
        }
    }
}

/// Puts every part, `concurrency` at a time; their ids in order. After a part fails no
/// other part begins, and those being sent are waited for, so that the caller aborts the
/// upload when none is in flight: a part that reached the server after the abort would
/// stay there. The error is the first part's to fail.
#[allow(clippy::too_many_arguments)]
async fn put_parts(
    store: &Arc<AmazonS3>,
    path: &ObjectPath,
    id: &String,
    src: &dyn Source,
    len: u64,
    part: u64,
    parts: u64,
    options: &RemoteOptions,
) -> Result<Vec<PartId>> {
    let failed = &AtomicBool::new(false);
    let done: Vec<Result<Option<(usize, PartId)>>> = futures::stream::iter(0..parts)
        .map(|i| async move {
            if failed.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let put = async {
                let at = i * part;
                let mut buf = vec![0u8; (len - at).min(part) as usize];
                src.read(at, &mut buf)?;
                store
                    .put_part(path, id, i as usize, PutPayload::from(buf))
                    .await
                    .map_err(|e| {
                        Error::from(ErrorKind::Remote {
                            op: "put part",
                            detail: format!("part {}: {e}", i + 1),
                        })
                    })
            };
            match put.await {
                Ok(pid) => Ok(Some((i as usize, pid))),
                Err(e) => {
                    failed.store(true, Ordering::SeqCst);
                    Err(e)
                }
            }
        })
        .buffer_unordered(options.concurrency.max(1))
        .collect()
        .await;
    let mut ids = Vec::with_capacity(done.len());
    for d in done {
        ids.extend(d?);
    }
    ids.sort_by_key(|(i, _)| *i);
    Ok(ids.into_iter().map(|(_, p)| p).collect())
}
