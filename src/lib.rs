//! # rastore: RawArray (`.ra`) files, zero-copy
//!
//! RawArray is a 48-byte header of u64s (magic, flags, eltype, elbyte, size, ndims),
//! the dims, the raw column-major data and an optional metadata trailer. rastore reads
//! and writes it, maps it and hands out `ndarray` views straight over the file's bytes.
//!
//! | task | entry point |
//! |---|---|
//! | open a file of any size in constant time and view it | [`MappedRa::open`], [`MappedRa::view`], [`MappedRa::view_ix`] |
//! | read a whole file into memory, any encoding or byte order | [`read`], [`read_from`], [`read_bool`], [`read_raw`] |
//! | write an array of any layout, atomically | [`write()`], [`WriteOptions`], [`write_to`] |
//! | create a huge file and fill it in place, in parallel, dirty pages written behind | [`MappedRaMut::create`], [`MappedRaMut::par_fill_slabs`], [`MappedRaMut::data_mut_with_writeback`], [`MappedRaMut::flush`] |
//! | many processes filling disjoint slabs of one file | [`create_file`], [`MappedRaMut::open_slab`] |
//! | read and write `.ra` objects in S3-protocol storage, fill one from many nodes (feature `s3`) | `remote::RemoteRa`, `remote::upload_file`, `remote::FillToken` |
//! | read a strided selection of a file: only the byte runs that hold it, into your buffer | [`DataReader::read_selection_into`], [`Stride`] |
//! | read a shuffled batch of samples (many selections, or frames) from a file bigger than RAM, at the device's queue depth | [`DataReader::read_many_into`], [`DataReader::take_into`], [`gather::GatherOptions`] |
//! | read a whole file (or a range) at the disk's speed, in slabs, with bounded memory | [`scan::scan`], [`scan::scan_many`], [`scan::read_into`], [`scan::ScanOptions`] |
//! | convert any format into any other (`.ra`, `.npy`, `.npz`, PNG, Zarr; local or `s3://`), in bounded memory | [`convert::convert`], [`convert::ConvertOptions`] |
//! | read any format by boxes, write any by boxes: sources and sinks of your own | [`convert::open`], [`convert::create`], [`convert::copy`], [`convert::Source`], [`convert::Sink`] |
//! | what `ra info` says of a file | [`info::info`], [`info::FileInfo`] |
//! | the variables of a dataset (a folder of `.ra` files) and its NDL | [`dataset::variables`], [`dataset::describe`] |
//! | grow a file frame by frame, readable and intact at every moment | [`AppendOptions`], [`Appender::append`], [`Appender::commit`], [`recover`] |
//! | parse or build a header without I/O | [`Header::parse`], [`Header::new`], [`Header::encode`] |
//! | name an element type | [`DType`], [`Element`] |
//! | view a file image you already hold in memory | [`view_bytes`] |
//!
//! Column-major means: a file with dims `[d0, d1, d2]` is viewed with shape
//! `[d0, d1, d2]` and Fortran strides, so `v[[i, j, k]]` is the element Julia or MATLAB
//! calls `A[i+1, j+1, k+1]`. Writing any ndarray stores its logical shape as the dims
//! and its elements in column-major order, so reading gives back the same array.
//!
//! ```no_run
//! use ndarray::Array3;
//! let a = Array3::<f32>::from_shape_fn((64, 64, 8), |(i, j, k)| (i + j * k) as f32);
//! rastore::write("cube.ra", &a)?;
//! // SAFETY: nothing modifies cube.ra while it is mapped.
//! let file = unsafe { rastore::MappedRa::open("cube.ra")? };
//! let v = file.view_ix::<f32, ndarray::Ix3>()?;
//! assert_eq!(v, a);
//! # Ok::<(), rastore::Error>(())
//! ```
#![forbid(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

mod append;
pub mod cdm;
pub mod codec;
pub mod convert;
mod create;
pub mod dataset;
mod descr;
mod dtype;
mod edit;
mod error;
pub mod fill;
pub mod formats;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod gather;
mod header;
pub mod info;
pub mod json;
mod layout;
pub mod leftovers;
mod mapped;
pub mod ndl;
pub mod padding;
mod read;
mod reader;
#[cfg(feature = "s3")]
pub mod remote;
mod replace;
pub mod scan;
mod selection;
pub mod sniff;
mod sys;
pub mod values;
mod view;
mod write;
mod writeback;

pub use append::{
    append_state, recover, trailer_sidecar, AppendOptions, AppendState, Appender, Recovery,
    MAX_APPEND_DIMS,
};
pub use create::{create_file, CreateOptions};
pub use dtype::{DType, Element, Kind};
pub use edit::{replace_metadata, reshape};
pub use error::{Error, ErrorKind, Result, ViewRefusal};
pub use formats::npy::MappedNpy;
pub use header::{checked_bytes, header_len, Encoding, Flags, Header, FIXED_LEN, MAGIC};
pub use layout::{copy_to_fortran, transpose_c_to_f, Progress};
pub use mapped::{MappedRa, MappedRaMut};
pub use read::{
    decode, decoded, read, read_bool, read_bool_from, read_from, read_header_and_metadata,
    read_header_at, read_metadata, read_raw, read_raw_from, RawData,
};
pub use reader::DataReader;
pub use selection::Stride;
pub use sys::Advice;
pub use view::{view_bytes, view_data, view_data_mut};
pub use write::{write, write_to, WriteOptions};
pub use writeback::Writeback;

/// The README's Rust example, compiled and run as a doc test (it makes its own file).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// docs/RUST.md's examples, compiled as doc tests (`no_run`: compiled, not run, since
/// they name files that are not there).
#[cfg(doctest)]
#[doc = include_str!("../docs/RUST.md")]
struct RustPageDoctests;

pub use half;
pub use ndarray;
pub use num_complex;
