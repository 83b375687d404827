//! The engine's entry points: [`open`] any input by its contents, [`create`] any output
//! by its name, and [`convert()`] one into the other; with [`ConvertOptions`] saying
//! how, and [`Format`] telling the formats apart.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::{Converted, Desc, Progress, Sink, Source};
use crate::error::{io_at, Error, ErrorKind, Result};
use crate::owned::WriteOptions;
use crate::replace::{check_folder, refuse_existing, Placement};

/// A format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// RawArray, `.ra`.
    Ra,
    /// NumPy, `.npy`.
    Npy,
    /// PNG, `.png`.
    Png,
    /// NumPy's archive of `.npy` members, `.npz` (an input: a folder of `.ra` out).
    Npz,
    /// A Zarr array: a folder (or `s3://` prefix) holding `zarr.json` or `.zarray`,
    /// or named `.zarr`.
    Zarr,
}

impl Format {
    /// The format of the input `path` by its contents (a `.ra` named `ct.dat` is a
    /// RawArray, a folder holding `zarr.json` is Zarr); by its extension only when its
    /// first bytes are none of the formats (then that format's reader says what is
    /// wrong).
    pub fn of(path: &Path) -> Result<Format> {
        if path.is_dir() {
            return if is_zarr(path) {
                Ok(Format::Zarr)
            } else {
                Err(Error::from(ErrorKind::Unsupported(
                    "a folder that is no Zarr array (no zarr.json or .zarray in it)".into(),
                ))
                .at(path))
            };
        }
        let mut head = [0u8; 8];
        let mut file = File::open(path).map_err(io_at("open", path))?;
        let n = crate::owned::read_full(&mut file, &mut head).map_err(|e| e.at(path))?;
        if let Some(f) = Self::by_content(&head[..n]) {
            return Ok(f);
        }
        Self::by_extension(path).ok_or_else(|| {
            Error::from(ErrorKind::NotRawArray {
                magic: u64::from_le_bytes(head),
                found: crate::formats::sniff::what(&head[..n]),
            })
            .at(path)
        })
    }

    /// The format whose magic number `head` starts with.
    fn by_content(head: &[u8]) -> Option<Format> {
        let starts = |m: &[u8]| head.starts_with(m);
        if starts(&crate::MAGIC.to_le_bytes()) || starts(&crate::MAGIC.to_be_bytes()) {
            Some(Format::Ra)
        } else if crate::formats::sniff::is_npy(head) {
            Some(Format::Npy)
        } else if starts(b"\x89PNG\r\n\x1a\n") {
            Some(Format::Png)
        } else if starts(b"PK\x03\x04") || starts(b"PK\x05\x06") {
            Some(Format::Npz)
        } else {
            None
        }
    }

    /// The format of an output `path` by its name (an `.npz` is never one).
    pub fn of_output(path: &Path) -> Result<Format> {
        match Self::by_extension(path) {
            Some(Format::Npz) | None => Err(ErrorKind::InvalidArgument(format!(
                "{}: unknown extension for an output (it is written as .ra, .npy, .png or \
                 .zarr, by its extension; a file, not standard output)",
                path.display()
            ))
            .into()),
            Some(f) => Ok(f),
        }
    }

    fn by_extension(path: &Path) -> Option<Format> {
        let name = path.to_str()?.trim_end_matches(['/', '\\']);
        let ext = Path::new(name).extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "ra" => Some(Format::Ra),
            "npy" => Some(Format::Npy),
            "png" => Some(Format::Png),
            "npz" => Some(Format::Npz),
            "zarr" => Some(Format::Zarr),
            _ => None,
        }
    }
}

/// Whether `path` names a Zarr array: named `.zarr` (a folder, or `s3://…/x.zarr`), or
/// a folder holding `zarr.json` or `.zarray`.
pub fn is_zarr(path: &Path) -> bool {
    Format::by_extension(path) == Some(Format::Zarr)
        || path.join("zarr.json").is_file()
        || path.join(".zarray").is_file()
}

/// How to convert: compression, how an output may replace what exists, the chunks of
/// a Zarr output, and how to reach object storage.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    compress: bool,
    nan_gray: Option<u8>,
    overwrite: bool,
    split_links: bool,
    #[cfg(feature = "zarr")]
    zarr: crate::formats::zarr::ZarrOptions,
    #[cfg(feature = "s3")]
    remote: crate::remote::RemoteOptions,
}

impl ConvertOptions {
    /// Defaults: a plain output, and an existing output is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Store a `.ra` output as one LZ4 block (held in memory while compressing), unless
    /// that would not be smaller: then it is stored plain, and [`convert()`] returns
    /// [`Converted::stored_raw`]. A Zarr output without a codec named is zstd.
    pub fn compress(mut self, yes: bool) -> Self {
        self.compress = yes;
        self
    }

    /// The gray level of NaN elements in a PNG output scaled to 8-bit gray; without
    /// it, NaNs are refused (see [`encode`](crate::formats::png::encode)).
    pub fn nan_gray(mut self, gray: Option<u8>) -> Self {
        self.nan_gray = gray;
        self
    }

    /// Replace an existing output (a symbolic link is followed, permissions kept).
    pub fn overwrite(mut self, yes: bool) -> Self {
        self.overwrite = yes;
        self
    }

    /// Replace an output that has other hard links (see
    /// [`WriteOptions::split_links`]).
    pub fn split_links(mut self, yes: bool) -> Self {
        self.split_links = yes;
        self
    }

    /// The chunk shape of a Zarr output (default: whole frames of about 16 MiB).
    #[cfg(feature = "zarr")]
    pub fn chunks(mut self, chunks: Option<Vec<u64>>) -> Self {
        self.zarr.chunks = chunks;
        self
    }

    /// The codec of a Zarr output (with [`compress`](Self::compress) and none named:
    /// zstd).
    #[cfg(feature = "zarr")]
    pub fn zarr_codec(mut self, codec: crate::formats::zarr::Codec) -> Self {
        self.zarr.codec = codec;
        self
    }

    /// How to reach `s3://` inputs and outputs (`.ra` objects and Zarr arrays alike):
    /// endpoint, credentials, concurrency.
    #[cfg(feature = "s3")]
    pub fn remote(mut self, remote: crate::remote::RemoteOptions) -> Self {
        self.remote = remote;
        self
    }

    /// How `s3://` inputs and outputs are reached.
    #[cfg(feature = "s3")]
    pub(crate) fn remote_options(&self) -> &crate::remote::RemoteOptions {
        &self.remote
    }

    /// Whether a `.ra` output is to be compressed.
    pub fn compresses(&self) -> bool {
        self.compress
    }

    /// The gray level of NaNs in a scaled PNG, if given.
    pub fn nan_gray_level(&self) -> Option<u8> {
        self.nan_gray
    }

    /// Refuses, before any work is done, a local `output` whose folder does not exist,
    /// and an existing one unless overwriting.
    pub fn check_output(&self, output: &Path) -> Result<()> {
        check_folder(output)?;
        refuse_existing(output, self.placement())
    }

    pub(crate) fn placement(&self) -> Placement {
        Placement {
            overwrite: self.overwrite,
            durable: false,
            split_links: self.split_links,
        }
    }

    pub(crate) fn write_options(&self) -> WriteOptions {
        WriteOptions::new()
            .compress(self.compress)
            .overwrite(self.overwrite)
            .split_links(self.split_links)
    }

    /// A Zarr output's options: its chunks, its codec (zstd when compressing and none
    /// is named), replacing as these options say.
    #[cfg(feature = "zarr")]
    pub(crate) fn zarr_options(&self) -> crate::formats::zarr::ZarrOptions {
        use crate::formats::zarr::Codec;
        let mut z = self.zarr.clone();
        z.overwrite = self.overwrite;
        if self.compress && z.codec == Codec::None {
            z.codec = Codec::Zstd(3);
        }
        z
    }

    /// Where a Zarr array named `path` lives, with these options' object-store
    /// settings.
    #[cfg(feature = "zarr")]
    fn zarr_at(&self, path: &Path) -> crate::formats::zarr::Location {
        let at = crate::formats::zarr::Location::of(path);
        #[cfg(feature = "s3")]
        let at = at.with_settings(self.remote.settings.clone());
        at
    }
}

/// The `s3://` URL `path` is, if it is one.
fn url_of(path: &Path) -> Option<&str> {
    path.to_str().filter(|s| s.starts_with("s3://"))
}

/// Refuses a Zarr array in a build without the `zarr` feature.
#[cfg(not(feature = "zarr"))]
fn no_zarr(path: &Path) -> Error {
    Error::from(ErrorKind::Unsupported(
        "a Zarr array, in a build without the `zarr` feature".into(),
    ))
    .at(path)
}

/// Opens the input `path` (a file or folder, or an `s3://` object or Zarr prefix),
/// telling its format by its contents. An archive of several arrays is refused
/// (convert it to a folder: [`convert()`]).
pub fn open(path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>> {
    if let Some(url) = url_of(path) {
        return open_remote(url, path, options);
    }
    open_local(path, &std::env::temp_dir(), options)
}

#[cfg(feature = "s3")]
fn open_remote(url: &str, path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>> {
    use super::remote::{open_downloaded, RemoteRaSource};
    if is_zarr(path) {
        return open_zarr(path, options);
    }
    match RemoteRaSource::open(url, &options.remote) {
        Ok(s) => Ok(Box::new(s)),
        // Another format: downloaded, and read as what its contents say.
        Err(e) if matches!(e.kind(), ErrorKind::NotRawArray { .. }) => {
            open_downloaded(url, options)
        }
        Err(e) => Err(e),
    }
}

/// Refuses an object in a build without the `s3` feature.
#[cfg(not(feature = "s3"))]
fn no_s3(path: &Path) -> Error {
    Error::from(ErrorKind::Unsupported(
        "an s3:// object, in a build without the `s3` feature".into(),
    ))
    .at(path)
}

#[cfg(not(feature = "s3"))]
fn open_remote(_url: &str, path: &Path, _options: &ConvertOptions) -> Result<Box<dyn Source>> {
    Err(no_s3(path))
}

#[cfg(feature = "zarr")]
fn open_zarr(path: &Path, options: &ConvertOptions) -> Result<Box<dyn Source>> {
    Ok(Box::new(super::zarr::ZarrSource::open(
        &options.zarr_at(path),
    )?))
}

#[cfg(not(feature = "zarr"))]
fn open_zarr(path: &Path, _options: &ConvertOptions) -> Result<Box<dyn Source>> {
    Err(no_zarr(path))
}

/// Opens the local input `path` by its contents; an archive's deflated member is
/// inflated into `scratch` (a folder).
pub(crate) fn open_local(
    path: &Path,
    scratch: &Path,
    options: &ConvertOptions,
) -> Result<Box<dyn Source>> {
    Ok(match Format::of(path)? {
        Format::Ra => Box::new(super::ra::RaSource::open(path)?),
        Format::Npy => Box::new(super::npy::NpySource::open(path)?),
        Format::Png => super::png::open(path)?,
        Format::Zarr => open_zarr(path, options)?,
        Format::Npz => {
            let members = super::npz::members(path)?;
            match members.as_slice() {
                [(_, m)] => Box::new(super::npz::MemberSource::open(path, m, scratch)?),
                _ => return Err(several(path, &members, None)),
            }
        }
    })
}

/// Refuses to take one array from an archive of `members`, saying what to do.
fn several(
    path: &Path,
    members: &[(String, crate::formats::npz::Member)],
    to: Option<&Path>,
) -> Error {
    let names: Vec<&str> = members.iter().map(|(n, _)| n.as_str()).collect();
    Error::from(ErrorKind::InvalidArgument(format!(
        "{} holds {} arrays ({}): give a folder as the output, for one NAME.ra each{}",
        path.display(),
        members.len(),
        names.join(", "),
        if members.len() == 1 {
            "; or a .ra file"
        } else {
            ""
        }
    )))
    .at(to.unwrap_or(path))
}

/// Creates the output `path` for an array `desc` describes, in the format its name
/// says (a file or a Zarr folder, or an `s3://` object or Zarr prefix). Nothing is
/// visible there until the sink commits; an existing output is refused unless
/// overwriting, as is a local one whose folder does not exist.
pub fn create(path: &Path, desc: Desc, options: &ConvertOptions) -> Result<Box<dyn Sink>> {
    if let Some(url) = url_of(path) {
        return create_remote(url, path, desc, options);
    }
    options.check_output(path)?;
    create_local(path, desc, options)
}

#[cfg(feature = "s3")]
fn create_remote(
    url: &str,
    path: &Path,
    desc: Desc,
    options: &ConvertOptions,
) -> Result<Box<dyn Sink>> {
    use super::remote::{create_ra, scratch_then_upload};
    match Format::of_output(path)? {
        Format::Zarr => create_zarr(path, desc, options),
        Format::Ra => create_ra(url, desc, options),
        f => {
            check_fits(f, &desc).map_err(|e| e.at(path))?;
            let ext = path.extension().unwrap_or_default().to_string_lossy();
            scratch_then_upload(url, &ext, desc, options)
        }
    }
}

#[cfg(not(feature = "s3"))]
fn create_remote(
    _url: &str,
    path: &Path,
    _desc: Desc,
    _options: &ConvertOptions,
) -> Result<Box<dyn Sink>> {
    Err(no_s3(path))
}

#[cfg(feature = "zarr")]
fn create_zarr(path: &Path, desc: Desc, options: &ConvertOptions) -> Result<Box<dyn Sink>> {
    super::zarr::create(&options.zarr_at(path), desc, options)
}

#[cfg(not(feature = "zarr"))]
fn create_zarr(path: &Path, _desc: Desc, _options: &ConvertOptions) -> Result<Box<dyn Sink>> {
    Err(no_zarr(path))
}

/// Refuses, before any data is read, an array the format `f` cannot hold.
fn check_fits(f: Format, desc: &Desc) -> Result<()> {
    match f {
        Format::Png => crate::formats::png::check(desc.dtype, &desc.dims).map(drop),
        Format::Npy => {
            let descr = super::npy::descr_of(desc)?;
            crate::formats::npy::check_numpy_shape(&desc.dims, descr.itemsize()?)
        }
        _ => Ok(()),
    }
}

/// [`create`] for a local `path`, already checked.
pub(crate) fn create_local(
    path: &Path,
    desc: Desc,
    options: &ConvertOptions,
) -> Result<Box<dyn Sink>> {
    let f = Format::of_output(path)?;
    check_fits(f, &desc).map_err(|e| e.at(path))?;
    match f {
        Format::Ra => super::ra::create(path, desc, options),
        Format::Npy => super::npy::create(path, desc, options),
        Format::Png => super::png::create(path, desc, options),
        _ => create_zarr(path, desc, options),
    }
}

/// Converts `input` into `output`: any format into any other, the input told by its
/// contents and the output by its name ([`Format`]), either or both in object storage
/// (`s3://`), box by box in bounded memory ([`copy`](super::copy)). An `.npz`
/// archive becomes a folder `output` of one `NAME.ra` per member (made if missing);
/// one of a single array converts to any output. The logical array is kept (FORMAT.md
/// section 7): its shape, its values, and the labels and attributes its format can
/// carry. Nothing is left at `output` when the conversion fails.
pub fn convert(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    if url_of(input).is_none() && !input.is_dir() && Format::of(input)? == Format::Npz {
        return npz_to_folder(input, output, options, progress);
    }
    if url_of(output).is_none() {
        options.check_output(output)?;
    }
    let source = open(input, options)?;
    let sink = create(output, source.desc().clone(), options)?;
    super::copy(source, sink, progress)
}

/// Each member of the archive `input` as `out/NAME.ra` (or its one member as the output
/// `out` names, of any format), converted in turn; a deflated member is inflated
/// beside the output first.
fn npz_to_folder(
    input: &Path,
    out: &Path,
    options: &ConvertOptions,
    progress: Progress,
) -> Result<Converted> {
    let members = super::npz::members(input)?;
    match (Format::by_extension(out), members.as_slice()) {
        (Some(Format::Npz), _) => return Format::of_output(out).map(|_| Converted::default()),
        (Some(_), [(_, m)]) => {
            // One array: into any output, anywhere.
            let scratch = match url_of(out) {
                Some(_) => std::env::temp_dir(),
                None => {
                    options.check_output(out)?;
                    crate::replace::parent_dir(out).to_path_buf()
                }
            };
            let source = super::npz::MemberSource::open(input, m, &scratch)?;
            let sink = create(out, source.desc().clone(), options)?;
            return super::copy(Box::new(source), sink, progress);
        }
        (Some(_), _) => return Err(several(input, &members, Some(out))),
        (None, _) => {}
    }
    if url_of(out).is_some() {
        return Err(Error::from(ErrorKind::Unsupported(
            "an .npz of several arrays into object storage: convert it to a local folder, \
             then upload each .ra"
                .into(),
        ))
        .at(out));
    }
    check_folder(out)?;
    let outputs: Vec<PathBuf> = members
        .iter()
        .map(|(name, _)| out.join(format!("{name}.ra")))
        .collect();
    for o in &outputs {
        refuse_existing(o, options.placement())?;
    }
    if !out.is_dir() {
        std::fs::create_dir(out).map_err(io_at("create folder", out))?;
    }
    let mut result = Converted::default();
    for ((_, m), o) in members.iter().zip(&outputs) {
        let source = super::npz::MemberSource::open(input, m, out)?;
        let sink = create_local(o, source.desc().clone(), options)?;
        let done = super::copy(Box::new(source), sink, progress)?;
        result.stored_raw |= done.stored_raw;
    }
    Ok(result)
}
