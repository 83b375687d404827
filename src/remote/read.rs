//! Reading `.ra` objects by byte ranges.

use std::ops::Range;
use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use ndarray::ArrayD;
use object_store::aws::AmazonS3;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};

use super::client::{get_exact, remote_err, runtime, store, RemoteOptions, S3Url};
use crate::dtype::Element;
use crate::error::{Error, ErrorKind, Result, ResultExt};
use crate::header::{Encoding, Header};
use crate::read::RawData;
use crate::selection::fit;

/// Bytes asked for by the first GET of an open: the header of up to 58 dims, and the
/// data of a small object.
const FIRST_GET: u64 = 4096;

/// An opened `.ra` object: its validated header and length, and a client.
pub struct RemoteRa {
    url: S3Url,
    pub(super) store: Arc<AmazonS3>,
    pub(super) options: RemoteOptions,
    header: Header,
    len: u64,
    /// The object's ETag, when the server gave one.
    etag: Option<String>,
    /// The object's first bytes, from the open (the header, and more).
    first: Vec<u8>,
}

impl std::fmt::Debug for RemoteRa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteRa")
            .field("url", &self.url.to_string())
            .field("header", &self.header)
            .field("len", &self.len)
            .finish()
    }
}

impl RemoteRa {
    /// Opens `url` (`s3://bucket/key`) with default options.
    pub fn open(url: &str) -> Result<RemoteRa> {
        Self::open_with(url, RemoteOptions::default())
    }

    /// Opens `url`: one ranged GET of the first 4 KiB (which also gives the object's
    /// length), a second only for a header longer than that, validated by
    /// [`Header::parse_prefix`] as a local file's is.
    pub fn open_with(url: &str, options: RemoteOptions) -> Result<RemoteRa> {
        let url = S3Url::parse(url)?;
        let store = store(&url, &options)?;
        let path = url.path();
        let (mut first, len, etag) = runtime()?
            .block_on(async {
                let opts = GetOptions {
                    range: Some(GetRange::Bounded(0..FIRST_GET)),
                    ..GetOptions::default()
                };
                match store.get_opts(&path, opts).await {
                    Ok(r) => {
                        let (len, etag) = (r.meta.size, r.meta.e_tag.clone());
                        Ok((r.bytes().await?.to_vec(), len, etag))
                    }
                    // An empty object has no first byte to ask for.
                    Err(e) => match store.head(&path).await {
                        Ok(meta) if meta.size == 0 => Ok((Vec::new(), 0, meta.e_tag)),
                        _ => Err(e),
                    },
                }
            })
            .map_err(remote_err("get", &url))?;
        let need = Header::required_len(&first, len).at(&url.shown())?;
        if need > first.len() as u64 {
            let rest = runtime()?
                .block_on(store.get_range(&path, first.len() as u64..need))
                .map_err(remote_err("get", &url))?;
            first.extend_from_slice(&rest);
        }
        let header = Header::parse_prefix(&first, len).at(&url.shown())?;
        Ok(RemoteRa {
            url,
            store,
            options,
            header,
            len,
            etag,
            first,
        })
    }

    /// The object's ETag, when the server gave one: it changes when the object does.
    pub fn etag(&self) -> Option<&str> {
        self.etag.as_deref()
    }

    /// The validated header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The object's length in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the object is empty (never, for a valid one).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The URL.
    pub fn url(&self) -> &S3Url {
        &self.url
    }

    /// Bytes `range` of the object, with concurrent ranged GETs of at most
    /// `range_bytes` each; bytes already fetched by the open are not asked again.
    pub fn read_bytes(&self, range: Range<u64>) -> Result<Vec<u8>> {
        let n = usize::try_from(range.end.saturating_sub(range.start)).map_err(|_| {
            ErrorKind::TooLarge {
                what: "bytes to read",
                value: (range.end - range.start).into(),
            }
        })?;
        let mut out = vec![0u8; n];
        self.read_into(range, &mut out)?;
        Ok(out)
    }

    /// [`read_bytes`](Self::read_bytes) into `out`, which is `range`'s length: each GET
    /// lands in its place, with no buffer of the whole between.
    pub fn read_into(&self, range: Range<u64>, out: &mut [u8]) -> Result<()> {
        if range.end > self.len || range.start > range.end {
            return Err(Error::from(ErrorKind::InvalidArgument(format!(
                "bytes {range:?} of an object of {} bytes",
                self.len
            )))
            .at(self.url.shown()));
        }
        fit(out, range.end - range.start)?;
        let have = self.first.len() as u64;
        let mut start = range.start;
        if start < have {
            let end = range.end.min(have);
            out[..(end - start) as usize]
                .copy_from_slice(&self.first[start as usize..end as usize]);
            start = end;
        }
        ranged_into(
            &self.store,
            &self.url,
            start..range.end,
            &self.options,
            &mut out[(start - range.start) as usize..],
        )
    }

    /// What `ra info` says of the object (the trailer is fetched only where its
    /// length cannot be told from the header and the object's length).
    pub fn info(&self) -> crate::info::file::FileInfo {
        crate::info::file::FileInfo::of(&self.url.shown(), self.header.clone(), self.len, || {
            self.metadata()
        })
    }

    /// The metadata trailer, with one suffix-range GET.
    pub fn metadata(&self) -> Result<Vec<u8>> {
        let start = self.header.trailer_start(self.len);
        if self.header.encoding() == Encoding::Lz4OrLeb128 {
            // Only decoding tells where such data ends.
            return Ok(self.decoded()?.metadata);
        }
        let n = self.len - start;
        if n == 0 {
            return Ok(Vec::new());
        }
        let opts = GetOptions {
            range: Some(GetRange::Suffix(n)),
            ..GetOptions::default()
        };
        let path = self.url.path();
        let bytes = runtime()?
            .block_on(async { self.store.get_opts(&path, opts).await?.bytes().await })
            .map_err(remote_err("get trailer", &self.url))?;
        Ok(bytes.to_vec())
    }

    /// The whole object, read as a local file would be (any encoding or byte order):
    /// plain data by concurrent ranges, compressed data fetched whole, then decoded.
    pub fn read_raw(&self) -> Result<RawData> {
        let all = self.read_bytes(0..self.len)?;
        crate::read_raw_from(&all[..]).at(&self.url.shown())
    }

    /// [`read_raw`](Self::read_raw), decoded as `ra` reads files
    /// ([`decode`](crate::decode)): BitArrays unpacked, Bools checked.
    pub fn decoded(&self) -> Result<RawData> {
        crate::decode(self.read_raw()?).at(&self.url.shown())
    }

    /// The whole array.
    pub fn read<T: Element>(&self) -> Result<ArrayD<T>> {
        let all = self.read_bytes(0..self.len)?;
        crate::read_from(&all[..]).at(&self.url.shown())
    }

    /// The range `frames` of the last axis of plain data, as native column-major bytes,
    /// fetching exactly those bytes; returns the slab's header too. Compressed and
    /// packed objects are fetched whole and decoded first.
    pub fn read_slab_bytes(&self, frames: Range<u64>) -> Result<(Header, Vec<u8>)> {
        if self.header.encoding() != Encoding::Raw {
            let raw = self.decoded()?;
            let (slab, at) = raw.header.slab(frames).at(&self.url.shown())?;
            let start = (at - raw.header.data_offset()) as usize;
            let data = raw.data[start..start + slab.nbytes() as usize].to_vec();
            return Ok((slab, data));
        }
        let (slab, _) = self.header.slab(frames.clone()).at(&self.url.shown())?;
        let mut data = vec![0u8; slab.size() as usize];
        self.read_slab_into(frames, &mut data)?;
        Ok((slab, data))
    }

    /// The range `frames` of the last axis of plain data, as native column-major
    /// bytes, fetched straight into `out` (the slab's length); compressed and packed
    /// objects are fetched whole and decoded first.
    pub fn read_slab_into(&self, frames: Range<u64>, out: &mut [u8]) -> Result<()> {
        if self.header.encoding() != Encoding::Raw {
            let (_, data) = self.read_slab_bytes(frames)?;
            fit(out, data.len() as u64)?;
            out.copy_from_slice(&data);
            return Ok(());
        }
        let (slab, offset) = self.header.slab(frames).at(&self.url.shown())?;
        self.read_into(offset..offset + slab.size(), out)?;
        // The slab's first element, for a message naming a bad one.
        let first = (offset - self.header.data_offset()) / self.header.dtype().elbyte.max(1);
        native_checked(&self.header, out, first).at(&self.url.shown())
    }

    /// The range `frames` of the last axis, as an array.
    pub fn read_slab<T: Element>(&self, frames: Range<u64>) -> Result<ArrayD<T>> {
        let (slab, data) = self.read_slab_bytes(frames)?;
        let mut image = Header::new(slab.dtype(), slab.dims())?.encode();
        image.extend_from_slice(&data);
        crate::read_from(&image[..]).at(&self.url.shown())
    }
}

/// Bytes of an object downloaded at once (with concurrent ranged GETs).
const DOWNLOAD_PIECE: u64 = 64 << 20;

/// Downloads the object `url` (any bytes) into the new file `to`, a piece at a time:
/// memory is one piece whatever the object's size.
pub fn download(url: &str, to: &std::path::Path, options: &RemoteOptions) -> Result<u64> {
    use object_store::ObjectStoreExt;
    use std::io::Write;
    let u = S3Url::parse(url)?;
    let store = store(&u, options)?;
    let len = runtime()?
        .block_on(store.head(&u.path()))
        .map_err(remote_err("head", &u))?
        .size;
    let io = |op| crate::error::io_at(op, to);
    let mut file = std::fs::File::create(to).map_err(io("create"))?;
    let mut buf = vec![0u8; len.min(DOWNLOAD_PIECE) as usize];
    for start in (0..len).step_by(DOWNLOAD_PIECE as usize) {
        let n = (len - start).min(DOWNLOAD_PIECE) as usize;
        ranged_into(&store, &u, start..start + n as u64, options, &mut buf[..n])?;
        file.write_all(&buf[..n]).map_err(io("write"))?;
    }
    Ok(len)
}

/// Bytes `range` of the object at `url` into `out` (the range's length), with
/// concurrent ranged GETs of at most `range_bytes` each, each landing in its place.
pub(super) fn ranged_into(
    store: &AmazonS3,
    url: &S3Url,
    range: Range<u64>,
    options: &RemoteOptions,
    out: &mut [u8],
) -> Result<()> {
    let step = options.range_bytes.max(1);
    let pieces: Vec<Range<u64>> = (range.start..range.end)
        .step_by(step as usize)
        .map(|a| a..(a + step).min(range.end))
        .collect();
    let path = url.path();
    let base = range.start;
    runtime()?
        .block_on(async {
            futures::stream::iter(pieces)
                .map(|r| {
                    let path = &path;
                    async move { Ok((get_exact(store, path, r.clone()).await?, r)) }
                })
                .buffer_unordered(options.concurrency.max(1))
                .try_for_each(|(bytes, r)| {
                    let at = (r.start - base) as usize;
                    out[at..at + bytes.len()].copy_from_slice(&bytes);
                    async { Ok(()) }
                })
                .await
        })
        .map_err(remote_err("get", url))
}

/// `out`, fetched from plain data of `header`, as a local reader gives it: in native
/// byte order, and Julia Bools checked to be 0 or 1 (`first`: the index of its first
/// element, for the message).
pub(super) fn native_checked(header: &Header, out: &mut [u8], first: u64) -> Result<()> {
    if !header.native_endian() {
        if let Some(unit) = header.dtype().swap_unit() {
            crate::codec::swap_bytes(out, unit);
        }
    }
    if header.dtype() == crate::DType::BOOL {
        crate::codec::check_bools(out, first)?;
    }
    Ok(())
}
