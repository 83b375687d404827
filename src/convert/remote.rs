//! Objects in S3-protocol storage as sources and sinks. A `.ra` object is read by
//! boxes with ranged GETs ([`RemoteRa`]) and written as a multipart upload whose parts
//! are boxes of whole frames ([`FillToken`]): nothing appears under the key until it
//! is committed, and a dropped sink aborts the upload. Objects of the other formats are
//! downloaded whole to a scratch file (read as that format), or written to one and
//! uploaded when committed; the scratch file goes with the source or the sink.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::options::ConvertOptions;
use super::{Block, Converted, Desc, Grain, Sink, Source};
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result};
use crate::header::Encoding;
use crate::remote::{download, upload_any, upload_bytes, FillToken, RemoteOptions, RemoteRa};

/// A `.ra` object, read by boxes.
pub struct RemoteRaSource {
    ra: RemoteRa,
    desc: Desc,
    shown: PathBuf,
}

impl RemoteRaSource {
    /// Opens the object `url` (one ranged GET) and fetches its trailer.
    pub fn open(url: &str, options: &RemoteOptions) -> Result<RemoteRaSource> {
        let ra = RemoteRa::open_with(url, options.clone())?;
        let h = ra.header();
        let dtype = if h.encoding() == Encoding::Bits {
            DType::BOOL
        } else {
            h.dtype()
        };
        let desc = Desc {
            dtype,
            dims: h.dims().to_vec(),
            trailer: ra.metadata()?,
        };
        Ok(RemoteRaSource {
            shown: url.into(),
            ra,
            desc,
        })
    }
}

impl Source for RemoteRaSource {
    fn desc(&self) -> &Desc {
        &self.desc
    }

    fn grain(&self) -> Grain {
        Grain::ColumnMajor
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        self.ra.read_selection_into(&block.strides(), out)
    }

    fn read_selection(&self, sel: &[crate::Stride], out: &mut [u8]) -> Result<()> {
        self.ra.read_selection_into(sel, out)
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

/// A scratch file in the system's temporary folder, removed when dropped.
pub(crate) struct Scratch(pub(crate) PathBuf);

impl Scratch {
    pub(crate) fn new(ext: &str) -> Scratch {
        static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Scratch(
            std::env::temp_dir().join(format!("rastore-s3-{:x}-{n:x}.{ext}", std::process::id())),
        )
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// An object of another format than `.ra`, downloaded to a scratch file and read as
/// that format.
struct Downloaded {
    inner: Box<dyn Source>,
    shown: PathBuf,
    /// After `inner`, which holds it open.
    _scratch: Scratch,
}

/// The object `url` downloaded into a scratch file named `.ext`, removed when dropped.
pub(crate) fn downloaded(url: &str, ext: &str, options: &ConvertOptions) -> Result<Scratch> {
    let scratch = Scratch::new(ext);
    download(url, &scratch.0, options.remote_options())?;
    Ok(scratch)
}

/// Uploads the scratch file `scratch` (complete) as the object `url`.
pub(crate) fn upload_scratch(scratch: &Scratch, url: &str, options: &ConvertOptions) -> Result<()> {
    upload_any(&scratch.0, url, options.remote_options()).map(drop)
}

/// Downloads the object `url` and opens it by its contents.
pub fn open_downloaded(url: &str, options: &ConvertOptions) -> Result<Box<dyn Source>> {
    let scratch = Scratch::new("download");
    download(url, &scratch.0, options.remote_options())?;
    let shown: PathBuf = url.into();
    let inner = super::local::open_local(&scratch.0, &std::env::temp_dir(), options)
        .map_err(|e| e.shown_as(&scratch.0, &shown))?;
    Ok(Box::new(Downloaded {
        inner,
        shown,
        _scratch: scratch,
    }))
}

impl Source for Downloaded {
    fn desc(&self) -> &Desc {
        self.inner.desc()
    }

    fn grain(&self) -> Grain {
        self.inner.grain()
    }

    fn read_box(&self, block: &Block, out: &mut [u8]) -> Result<()> {
        self.inner.read_box(block, out)
    }

    fn read_selection(&self, sel: &[crate::Stride], out: &mut [u8]) -> Result<()> {
        self.inner.read_selection(sel, out)
    }

    fn lend(&self) -> Option<&[u8]> {
        self.inner.lend()
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

/// A `.ra` object written as a multipart upload, a part per box of whole frames.
struct Upload {
    token: FillToken,
    options: RemoteOptions,
    etags: Mutex<Vec<(u64, String)>>,
    shown: PathBuf,
    done: bool,
}

/// A new `.ra` object of `desc` at `url`: a multipart upload (one object written whole,
/// when it has no last axis to cut into parts, or is compressed).
pub fn create_ra(url: &str, desc: Desc, options: &ConvertOptions) -> Result<Box<dyn Sink>> {
    let remote = options.remote_options();
    if options.compresses() {
        return scratch_then_upload(url, "ra", desc, options);
    }
    if desc.dims.is_empty() || desc.dims.contains(&0) {
        let shown: PathBuf = url.into();
        let (url, remote) = (url.to_string(), remote.clone());
        let header = crate::Header::new(desc.dtype, &desc.dims)?;
        let finish = Box::new(move |d: &Desc, data: Vec<u8>| {
            upload_bytes(&url, &header, &data, &d.trailer, &remote)?;
            Ok(Converted::default())
        });
        return Ok(Box::new(super::memory::MemorySink::new(
            desc, &shown, finish,
        )?));
    }
    let token = FillToken::begin(url, desc.dtype, &desc.dims, &desc.trailer, remote)?;
    Ok(Box::new(Upload {
        token,
        options: remote.clone(),
        etags: Mutex::new(Vec::new()),
        shown: url.into(),
        done: false,
    }))
}

impl Sink for Upload {
    fn grain(&self) -> Grain {
        let mut part = self.token.dims.clone();
        if let Some(last) = part.last_mut() {
            *last = self.token.frames_per_part;
        }
        Grain::Chunks(part)
    }

    fn write_box(&self, block: &Block, data: &[u8]) -> Result<()> {
        let first = block.origin.last().copied().unwrap_or(0);
        let part = first / self.token.frames_per_part + 1;
        if self.token.frames(part)?.start != first {
            return Err(Error::from(ErrorKind::InvalidArgument(format!(
                "a box from frame {first} is not a part of {} frames",
                self.token.frames_per_part
            )))
            .at(&self.shown));
        }
        let etag = self.token.put_part(part, data.to_vec(), &self.options)?;
        if let Ok(mut e) = self.etags.lock() {
            e.push((part, etag));
        }
        Ok(())
    }

    fn commit(mut self: Box<Self>) -> Result<Converted> {
        let etags = self.etags.lock().map(|e| e.clone()).unwrap_or_default();
        self.done = true;
        self.token.complete(&etags, &self.options)?;
        Ok(Converted::default())
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}

impl Drop for Upload {
    /// Not committed: the upload is aborted, its parts dropped by the server.
    fn drop(&mut self) {
        if !self.done {
            let _ = self.token.abort(&self.options);
        }
    }
}

/// A sink of another format (or a compressed `.ra`) into a scratch file, uploaded when
/// committed.
struct ScratchUpload {
    inner: Box<dyn Sink>,
    url: String,
    remote: RemoteOptions,
    shown: PathBuf,
    scratch: Scratch,
}

/// A new object at `url` of the format `ext` names, written locally first.
pub fn scratch_then_upload(
    url: &str,
    ext: &str,
    desc: Desc,
    options: &ConvertOptions,
) -> Result<Box<dyn Sink>> {
    let remote = options.remote_options();
    let scratch = Scratch::new(ext);
    let shown: PathBuf = url.into();
    let inner = super::local::create_local(&scratch.0, desc, &options.clone().overwrite(true))
        .map_err(|e| e.shown_as(&scratch.0, &shown))?;
    Ok(Box::new(ScratchUpload {
        inner,
        url: url.into(),
        remote: remote.clone(),
        shown,
        scratch,
    }))
}

impl Sink for ScratchUpload {
    fn grain(&self) -> Grain {
        self.inner.grain()
    }

    fn write_box(&self, block: &Block, data: &[u8]) -> Result<()> {
        self.inner
            .write_box(block, data)
            .map_err(|e| e.shown_as(&self.scratch.0, &self.shown))
    }

    fn commit(self: Box<Self>) -> Result<Converted> {
        let ScratchUpload {
            inner,
            url,
            remote,
            shown,
            scratch,
        } = *self;
        let done = inner.commit().map_err(|e| e.shown_as(&scratch.0, &shown))?;
        upload_any(&scratch.0, &url, &remote)?;
        Ok(done)
    }

    fn shown(&self) -> &Path {
        &self.shown
    }
}
