//! How to convert ([`ConvertOptions`]: compression, replacing, Zarr chunks and codec,
//! object storage), and which format a path is ([`Format`]: an input by its contents,
//! an output by its name).

use std::fs::File;
use std::path::Path;

use crate::error::{io_at, Error, ErrorKind, Result};
use crate::replace::{check_folder, refuse_existing, Placement};
use crate::write::WriteOptions;

/// A format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// RawArray, `.ra`.
    Ra,
    /// NumPy, `.npy`.
    Npy,
    /// PNG, `.png`.
    Png,
    /// TIFF or BigTIFF, `.tif`, `.tiff`.
    Tiff,
    /// NumPy's archive of `.npy` members, `.npz` (an input: a folder of `.ra` out).
    Npz,
    /// A Zarr array: a folder (or `s3://` prefix) holding `zarr.json` or `.zarray`,
    /// or named `.zarr`.
    Zarr,
    /// safetensors, `.safetensors`: named tensors (a dataset), or one of them as
    /// `m.safetensors/NAME`.
    Safetensors,
    /// NIfTI-1 or NIfTI-2: `.nii`, `.nii.gz`, a `.hdr`/`.img` pair.
    Nifti,
    /// NetCDF-3 classic (CDF-1, CDF-2, CDF-5), `.nc`: named variables (a dataset), or
    /// one of them as `x.nc/NAME`. An input only. (An `.nc` that is NetCDF-4 is HDF5,
    /// told by its contents.)
    NetCdf3,
    /// HDF5: `.h5`, `.hdf5`, `.he5`, and NetCDF-4 `.nc` and MATLAB v7.3 `.mat` files,
    /// which are HDF5 inside (an input only): a tree of datasets, or one as
    /// `x.h5/grp/dset`.
    Hdf5,
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
        let mut head = [0u8; 9];
        let mut file = File::open(path).map_err(io_at("open", path))?;
        let n = crate::read::read_full(&mut file, &mut head).map_err(|e| e.at(path))?;
        if let Some(f) = Self::by_content(&head[..n]) {
            return Ok(f);
        }
        if head.starts_with(b"\x1f\x8b") && crate::formats::nifti::gzipped(path) {
            return Ok(Format::Nifti);
        }
        let len = file.metadata().map_err(io_at("stat", path))?.len();
        if crate::sniff::is_hdf5_file(&file, len) {
            return Ok(Format::Hdf5);
        }
        // An `.nc` is NetCDF-3 by its contents only (`CDF`, its version for the reader
        // to judge): NetCDF-4 is HDF5, told above.
        let ext = Self::by_extension(path)
            .filter(|f| *f != Format::NetCdf3 || head[..n].starts_with(b"CDF"));
        ext.ok_or_else(|| {
            let mut magic = [0u8; 8];
            magic.copy_from_slice(&head[..8]);
            Error::from(ErrorKind::NotRawArray {
                magic: u64::from_le_bytes(magic),
                found: crate::sniff::what(&head[..n]),
            })
            .at(path)
        })
    }

    /// The format whose magic number `head` starts with.
    fn by_content(head: &[u8]) -> Option<Format> {
        let starts = |m: &[u8]| head.starts_with(m);
        if starts(&crate::MAGIC.to_le_bytes()) || starts(&crate::MAGIC.to_be_bytes()) {
            Some(Format::Ra)
        } else if crate::sniff::is_npy(head) {
            Some(Format::Npy)
        } else if starts(b"\x89PNG\r\n\x1a\n") {
            Some(Format::Png)
        } else if [b"II*\0", b"MM\0*", b"II+\0", b"MM\0+"]
            .iter()
            .any(|m| starts(*m))
        {
            Some(Format::Tiff)
        } else if starts(b"PK\x03\x04") || starts(b"PK\x05\x06") {
            Some(Format::Npz)
        } else if crate::sniff::is_safetensors(head) {
            Some(Format::Safetensors)
        } else if crate::formats::nifti::looks_like(head) {
            Some(Format::Nifti)
        } else if crate::formats::netcdf3::looks_like(head) {
            Some(Format::NetCdf3)
        } else if starts(crate::sniff::HDF5_MAGIC) {
            Some(Format::Hdf5)
        } else {
            None
        }
    }

    /// The format of an output `path` by its name (an `.npz` is never one, nor an
    /// `.nc`).
    pub fn of_output(path: &Path) -> Result<Format> {
        match Self::by_extension(path) {
            Some(Format::Npz) | None => Err(Error::from(ErrorKind::UnknownOutput).at(path)),
            Some(Format::NetCdf3 | Format::Hdf5) => Err(Error::from(ErrorKind::Unsupported(
                "an HDF5, NetCDF or MATLAB output: rastore reads them, and does not write \
                 them; convert into a folder, which h5py or xarray's to_netcdf writes out \
                 (xr.open_dataset(folder, engine=\"rastore\").to_netcdf(...); docs/HDF5.md)"
                    .into(),
            ))
            .at(path)),
            Some(f) => Ok(f),
        }
    }

    /// The format `path`'s extension names (`.ra`, `.npy`, `.png`, `.tif`, `.tiff`, `.npz`,
    /// `.zarr`, `.safetensors`, `.nii`, `.nii.gz`, `.hdr`, `.img`, `.nc`, `.h5`, `.hdf5`,
    /// `.he5`, `.mat`, in any case; a trailing `/` ignored), if any.
    pub fn by_extension(path: &Path) -> Option<Format> {
        let name = path.to_str()?.trim_end_matches(['/', '\\']);
        let ext = Path::new(name).extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "ra" => Some(Format::Ra),
            "npy" => Some(Format::Npy),
            "png" => Some(Format::Png),
            "tif" | "tiff" => Some(Format::Tiff),
            "npz" => Some(Format::Npz),
            "zarr" => Some(Format::Zarr),
            "safetensors" => Some(Format::Safetensors),
            "nii" | "hdr" | "img" => Some(Format::Nifti),
            "nc" => Some(Format::NetCdf3),
            "h5" | "hdf5" | "he5" | "mat" => Some(Format::Hdf5),
            "gz" if crate::formats::nifti::gz_named(Path::new(name)) => Some(Format::Nifti),
            _ => None,
        }
    }
}

/// The name of the array a file holds in a group (and of its variable in xarray, when
/// the file names none): its file name without its format's extension (`.ra`, `.npy`,
/// `.png`, `.npz`, `.zarr`, `.safetensors`); `array` for a name that would be empty or hidden.
pub fn array_name(input: &Path) -> String {
    let s = input.to_string_lossy();
    let base = match s.strip_prefix("s3://") {
        Some(key) => key
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string(),
        None => input
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    };
    let known = Format::by_extension(Path::new(&base)).is_some();
    let stem = match base.rsplit_once('.') {
        Some((stem, _)) if known => stem,
        _ => &base,
    };
    let stem = match stem.rsplit_once('.') {
        Some((s, ext)) if known && ext.eq_ignore_ascii_case("nii") => s,
        _ => stem,
    };
    if stem.is_empty() || stem.starts_with('.') {
        "array".into()
    } else {
        stem.into()
    }
}

/// Whether `path` names a Zarr array or group: named `.zarr` (a folder, or
/// `s3://…/x.zarr`), or a folder holding `zarr.json`, `.zarray` or `.zgroup`.
pub fn is_zarr(path: &Path) -> bool {
    Format::by_extension(path) == Some(Format::Zarr)
        || ["zarr.json", ".zarray", ".zgroup"]
            .iter()
            .any(|f| path.join(f).is_file())
}

/// How to convert: compression, how an output may replace what exists, the chunks of
/// a Zarr output, and how to reach object storage.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    compress: bool,
    durable: bool,
    nan_gray: Option<u8>,
    overwrite: bool,
    split_links: bool,
    #[cfg(feature = "zarr")]
    zarr: crate::formats::zarr::ZarrOptions,
    #[cfg(feature = "zarr")]
    zarr_array: bool,
    #[cfg(feature = "s3")]
    remote: crate::remote::RemoteOptions,
}

impl ConvertOptions {
    /// Defaults: a plain output, and an existing output is refused.
    pub fn new() -> Self {
        Self::default()
    }

    /// Store a `.ra` output as one LZ4 block (held in memory while compressing), unless
    /// that would not be smaller: then it is stored plain, and
    /// [`convert()`](super::convert()) returns
    /// [`Converted::stored_raw`](super::Converted::stored_raw). A Zarr output without a
    /// codec named is zstd.
    pub fn compress(mut self, yes: bool) -> Self {
        self.compress = yes;
        self
    }

    /// Sync an output file before naming it, and its folder after, as
    /// [`WriteOptions::durable`] does: files only (`.ra`, `.npy`, `.png`, `.npz`); the
    /// files of a Zarr folder are not synced.
    pub fn durable(mut self, yes: bool) -> Self {
        self.durable = yes;
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

    /// Write one array into Zarr as a bare array, not (the default) as the one member
    /// of a group, which is what xarray's `open_zarr` opens.
    #[cfg(feature = "zarr")]
    pub fn zarr_array(mut self, yes: bool) -> Self {
        self.zarr_array = yes;
        self
    }

    /// These options for an array of a Zarr group: its metadata as xarray reads it.
    /// As a dataset's `variable`, the dims it has no labels for are named after it and
    /// its trailer is kept aside ([`ZarrOptions::trailer_aside`]); one array on its
    /// own (`None`) keeps it among its attributes, as a bare array does.
    ///
    /// [`ZarrOptions::trailer_aside`]: crate::formats::zarr::ZarrOptions::trailer_aside
    #[cfg(feature = "zarr")]
    pub(super) fn zarr_xarray(mut self, variable: Option<&str>) -> Self {
        self.zarr.xarray = true;
        self.zarr.trailer_aside = variable.is_some();
        self.zarr.variable = variable.map(str::to_string);
        self
    }

    /// Whether one array goes into Zarr bare ([`zarr_array`](Self::zarr_array)).
    #[cfg(feature = "zarr")]
    pub(super) fn zarr_bare(&self) -> bool {
        self.zarr_array
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
            durable: self.durable,
            split_links: self.split_links,
        }
    }

    pub(crate) fn write_options(&self) -> WriteOptions {
        WriteOptions::new()
            .compress(self.compress)
            .durable(self.durable)
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
    pub(super) fn zarr_at(&self, path: &Path) -> crate::formats::zarr::Location {
        let at = crate::formats::zarr::Location::of(path);
        #[cfg(feature = "s3")]
        let at = at.with_settings(self.remote.settings.clone());
        at
    }
}
