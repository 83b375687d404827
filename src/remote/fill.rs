//! The distributed fill: a coordinator begins a multipart upload and hands out a token;
//! workers anywhere each upload whole parts of it; the coordinator completes it.
//!
//! The part plan cuts the last axis into ranges of whole frames, each of at least
//! `part_bytes` of data (5 MiB at least, as S3 requires of every part but the last) and
//! at most 10,000 parts. Part 1 carries the header in front of its frames, the last
//! part the trailer after them: no byte is written twice, no part needs two writers.

use std::ops::Range;

use bytes::Bytes;
use object_store::multipart::{MultipartStore, PartId};
use object_store::PutPayload;
use yaml_rust2::{Yaml, YamlLoader};

use super::client::{remote_err, runtime, upload_store, RemoteOptions, S3Url, MIN_PART_BYTES};
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result, ResultExt};
use crate::header::Header;
use crate::json::string as json_str;
use crate::padding::Padding;

/// S3's limits: parts per upload, bytes per part.
const MAX_PARTS: u64 = 10_000;
const MAX_PART_BYTES: u64 = 5 << 30;

/// What a worker needs to upload its parts, as one JSON string (see the module).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillToken {
    /// The object.
    pub url: String,
    /// The multipart upload's id.
    pub upload_id: String,
    /// The element type.
    pub dtype: DType,
    /// The whole array's dims.
    pub dims: Vec<u64>,
    /// Frames per part (the last part may have fewer).
    pub frames_per_part: u64,
    /// The trailer, at the end of the last part.
    pub trailer: Vec<u8>,
}

fn bad_token(why: impl std::fmt::Display) -> Error {
    ErrorKind::InvalidArgument(format!("not a fill token: {why}")).into()
}

impl FillToken {
    /// Begins the upload of an array of `dtype` and `dims` (with `trailer`) to `url`
    /// and plans its parts: [`plan`](Self::plan), then [`start`](Self::start). Nothing
    /// is visible under the key until [`complete`](Self::complete).
    pub fn begin(
        url: &str,
        dtype: DType,
        dims: &[u64],
        trailer: &[u8],
        options: &RemoteOptions,
    ) -> Result<FillToken> {
        Self::plan(url, dtype, dims, trailer, options)?.start(options)
    }

    /// Plans the parts of an upload without beginning it (no request is made): a
    /// token with no upload id yet, whose [`frames`](Self::frames) already hold. A
    /// job can be laid out first and begin its upload only when it runs.
    pub fn plan(
        url: &str,
        dtype: DType,
        dims: &[u64],
        trailer: &[u8],
        options: &RemoteOptions,
    ) -> Result<FillToken> {
        let header = Header::new(dtype, dims)?;
        if dims.is_empty() {
            return Err(ErrorKind::InvalidArgument(
                "a 0-d array has no last axis to cut into parts".into(),
            )
            .into());
        }
        let frames = dims[dims.len() - 1];
        let frame_bytes = header.nbytes().checked_div(frames).unwrap_or(0);
        let target = options.part_bytes.max(MIN_PART_BYTES);
        let fpp = if frame_bytes == 0 {
            frames.max(1)
        } else {
            target
                .div_ceil(frame_bytes)
                .max(frames.div_ceil(MAX_PARTS))
                .clamp(1, frames.max(1))
        };
        if fpp.saturating_mul(frame_bytes) > MAX_PART_BYTES {
            return Err(ErrorKind::InvalidArgument(format!(
                "parts of {fpp} frames of {frame_bytes} bytes exceed S3's 5 GiB per part"
            ))
            .into());
        }
        Ok(FillToken {
            url: S3Url::parse(url)?.to_string(),
            upload_id: String::new(),
            dtype,
            dims: dims.to_vec(),
            frames_per_part: fpp,
            trailer: trailer.to_vec(),
        })
    }

    /// Begins the multipart upload a [`plan`](Self::plan) describes: the same token
    /// with the upload's id.
    pub fn start(mut self, options: &RemoteOptions) -> Result<FillToken> {
        let u = S3Url::parse(&self.url)?;
        let store = upload_store(&u, options)?;
        self.upload_id = runtime()?
            .block_on(store.create_multipart(&u.path()))
            .map_err(remote_err("create multipart upload", &u))?;
        Ok(self)
    }

    /// The header of the finished object.
    pub fn header(&self) -> Result<Header> {
        Header::new(self.dtype, &self.dims)
    }

    fn frame_count(&self) -> u64 {
        self.dims.last().copied().unwrap_or(0)
    }

    /// How many parts the plan has (at least 1).
    pub fn parts(&self) -> u64 {
        self.frame_count()
            .div_ceil(self.frames_per_part.max(1))
            .max(1)
    }

    /// The frames of part `part` (numbered from 1).
    pub fn frames(&self, part: u64) -> Result<Range<u64>> {
        if part == 0 || part > self.parts() {
            return Err(ErrorKind::InvalidArgument(format!(
                "part {part} of a plan of parts 1 to {}",
                self.parts()
            ))
            .into());
        }
        let start = (part - 1) * self.frames_per_part;
        Ok(start.min(self.frame_count())..(start + self.frames_per_part).min(self.frame_count()))
    }

    /// Uploads part `part` from `data`, the plain column-major bytes of its frames
    /// (taken, not copied); returns the part's ETag, for [`complete`](Self::complete).
    /// Parts may be put from many threads or processes at once.
    pub fn put_part(
        &self,
        part: u64,
        mut data: Vec<u8>,
        options: &RemoteOptions,
    ) -> Result<String> {
        let frames = self.frames(part)?;
        let header = self.header()?;
        let frame_bytes = header.nbytes().checked_div(self.frame_count()).unwrap_or(0);
        let want = (frames.end - frames.start) * frame_bytes;
        if data.len() as u64 != want {
            return Err(ErrorKind::InvalidArgument(format!(
                "part {part} holds frames {frames:?}: {want} bytes, given {}",
                data.len()
            ))
            .into());
        }
        if let Some(pad) = Padding::of_trailer(&self.trailer, self.dtype) {
            pad.zero(&mut data, frames.start * frame_bytes);
        }
        let mut pieces: Vec<Bytes> = Vec::new();
        if part == 1 {
            pieces.push(Bytes::from(header.encode()));
        }
        pieces.push(Bytes::from(data));
        if part == self.parts() {
            pieces.push(Bytes::from(self.trailer.clone()));
        }
        let u = S3Url::parse(&self.url)?;
        let store = upload_store(&u, options)?;
        let payload: PutPayload = pieces.into_iter().collect();
        let id = runtime()?
            .block_on(store.put_part(&u.path(), &self.upload_id, (part - 1) as usize, payload))
            .map_err(remote_err("put part", &u))?;
        Ok(id.content_id)
    }

    /// Completes the upload with every part's ETag, `(part, etag)` in any order. Each
    /// part 1 to N must be given once. A failed completion aborts the upload.
    pub fn complete(&self, etags: &[(u64, String)], options: &RemoteOptions) -> Result<()> {
        let n = self.parts();
        let mut sorted = etags.to_vec();
        sorted.sort_by_key(|(p, _)| *p);
        let numbers: Vec<u64> = sorted.iter().map(|(p, _)| *p).collect();
        if numbers != (1..=n).collect::<Vec<u64>>() {
            let missing: Vec<u64> = (1..=n).filter(|p| !numbers.contains(p)).collect();
            return Err(ErrorKind::InvalidArgument(format!(
                "the plan has parts 1 to {n}; given {} ETags, missing parts {missing:?}",
                etags.len()
            ))
            .into());
        }
        let u = S3Url::parse(&self.url)?;
        let store = upload_store(&u, options)?;
        let parts: Vec<PartId> = sorted
            .into_iter()
            .map(|(_, e)| PartId { content_id: e })
            .collect();
        let rt = runtime()?;
        let done = rt.block_on(store.complete_multipart(&u.path(), &self.upload_id, parts));
        if let Err(e) = done {
            let _ = rt.block_on(store.abort_multipart(&u.path(), &self.upload_id));
            return Err(remote_err("complete multipart upload", &u)(e));
        }
        Ok(())
    }

    /// Aborts the upload: its parts are discarded and nothing appears under the key.
    pub fn abort(&self, options: &RemoteOptions) -> Result<()> {
        let u = S3Url::parse(&self.url)?;
        let store = upload_store(&u, options)?;
        runtime()?
            .block_on(store.abort_multipart(&u.path(), &self.upload_id))
            .map_err(remote_err("abort multipart upload", &u))
    }

    /// The token as one line of JSON.
    pub fn to_json(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(u64::to_string).collect();
        let hex: String = self.trailer.iter().map(|b| format!("{b:02x}")).collect();
        format!(
            "{{\"url\": {}, \"upload_id\": {}, \"eltype\": {}, \"elbyte\": {}, \"dims\": [{}], \
             \"frames_per_part\": {}, \"trailer_hex\": \"{hex}\"}}",
            json_str(&self.url),
            json_str(&self.upload_id),
            self.dtype.eltype,
            self.dtype.elbyte,
            dims.join(", "),
            self.frames_per_part
        )
    }

    /// Reads a token written by [`to_json`](Self::to_json).
    pub fn from_json(text: &str) -> Result<FillToken> {
        // JSON is YAML: the YAML reader the crate has reads it.
        let docs = YamlLoader::load_from_str(text).map_err(bad_token)?;
        let doc = docs.first().ok_or_else(|| bad_token("empty"))?;
        let string = |k: &str| {
            doc[k]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| bad_token(format!("no string {k:?}")))
        };
        let number = |y: &Yaml, k: &str| {
            y.as_i64()
                .and_then(|v| u64::try_from(v).ok())
                .ok_or_else(|| bad_token(format!("no number {k:?}")))
        };
        let dims = doc["dims"]
            .as_vec()
            .ok_or_else(|| bad_token("no dims"))?
            .iter()
            .map(|d| number(d, "dims"))
            .collect::<Result<Vec<u64>>>()?;
        let hex = string("trailer_hex")?;
        let trailer = (0..hex.len() / 2)
            .map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2).unwrap_or("x"), 16))
            .collect::<std::result::Result<Vec<u8>, _>>()
            .map_err(|_| bad_token("trailer_hex is not hex"))?;
        let token = FillToken {
            url: string("url")?,
            upload_id: string("upload_id")?,
            dtype: DType {
                eltype: number(&doc["eltype"], "eltype")?,
                elbyte: number(&doc["elbyte"], "elbyte")?,
            },
            dims,
            frames_per_part: number(&doc["frames_per_part"], "frames_per_part")?,
            trailer,
        };
        token.header().at(std::path::Path::new(&token.url))?;
        if token.frames_per_part == 0 || hex.len() % 2 != 0 {
            return Err(bad_token("frames_per_part is 0, or trailer_hex is odd"));
        }
        Ok(token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(dims: &[u64], fpp: u64) -> FillToken {
        FillToken {
            url: "s3://b/x \"q\".ra".into(),
            upload_id: "id+/=\\".into(),
            dtype: DType::F32,
            dims: dims.to_vec(),
            frames_per_part: fpp,
            trailer: b"---\n".to_vec(),
        }
    }

    #[test]
    fn the_token_round_trips_through_json() {
        let t = token(&[1024, 1024, 10], 2);
        assert_eq!(FillToken::from_json(&t.to_json()).unwrap(), t);
        assert!(FillToken::from_json("{\"url\": 3}").is_err());
    }

    #[test]
    fn the_plan_covers_every_frame_once() {
        let t = token(&[1024, 1024, 10], 3);
        assert_eq!(t.parts(), 4);
        let all: Vec<Range<u64>> = (1..=4).map(|p| t.frames(p).unwrap()).collect();
        assert_eq!(all, vec![0..3, 3..6, 6..9, 9..10]);
        assert!(t.frames(0).is_err() && t.frames(5).is_err());
        let empty = token(&[4, 0], 1);
        assert_eq!((empty.parts(), empty.frames(1).unwrap()), (1, 0..0));
    }
}
