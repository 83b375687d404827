//! RawArrays in S3-protocol object storage (feature `s3`): read by byte ranges, written
//! by parallel multipart uploads, and filled part by part by many nodes.
//!
//! A `.ra` object is one contiguous column-major blob, so any range of its last axis is
//! one byte range: reads fetch exactly the bytes asked for, with concurrent ranged GETs.
//! The library stays synchronous: the async client runs on a runtime kept inside.
//!
//! | task | entry point |
//! |---|---|
//! | open an object, read its header (one ranged GET), its trailer (a suffix range) | [`RemoteRa::open`], [`RemoteRa::metadata`] |
//! | read the whole array, or a range of its last axis | [`RemoteRa::read`], [`RemoteRa::read_slab`], [`RemoteRa::decoded`] |
//! | read a strided selection (the byte runs that hold it) | [`RemoteRa::read_selection_into`], [`Stride`] |
//! | upload a local file or an array in memory | [`upload_file`], [`upload_bytes`] |
//! | download or upload an object of any format whole | [`download`], [`upload_any`] |
//! | list the objects under a prefix (a dataset), get, put or remove small objects | [`objects`] |
//! | many nodes filling one object, a part each | [`FillToken::begin`], [`FillToken::put_part`], [`FillToken::complete`], [`FillToken::abort`] |
//!
//! Configuration is the AWS one, from the environment: `AWS_ENDPOINT_URL` (or
//! `AWS_ENDPOINT`), `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, and
//! `AWS_ALLOW_HTTP=true` for a server without TLS. Requests are retried with backoff on
//! 5xx answers and dropped connections ([`RemoteOptions`]).

pub(crate) mod client;
mod fill;
pub mod objects;
mod read;
mod select;
mod upload;

pub use crate::selection::Stride;
pub use client::{is_remote, RemoteOptions, S3Url};
pub use fill::FillToken;
pub use read::{download, RemoteRa};
pub use upload::{upload_any, upload_bytes, upload_file};
