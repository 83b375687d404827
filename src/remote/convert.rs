//! `ra convert` with an object on either side: a Zarr array is read and written where
//! it is (a folder or `s3://`); a `.ra` object goes through a scratch file in the
//! system's temporary folder, removed when the conversion ends however it ends.

use std::path::{Path, PathBuf};

use super::{is_remote, upload_file, RemoteOptions, RemoteRa};
use crate::error::{io_at, Result};
use crate::formats::convert::{self, is_zarr, ConvertOptions, Format};

/// A scratch folder, removed with everything in it when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        Scratch(std::env::temp_dir().join(format!("rastore-s3-{}", std::process::id())))
    }

    fn path(&self, name: &str) -> Result<PathBuf> {
        std::fs::create_dir_all(&self.0).map_err(io_at("create folder", &self.0))?;
        Ok(self.0.join(name))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn url_of(p: &Path) -> Option<&str> {
    p.to_str().filter(|s| is_remote(s))
}

/// Downloads the `.ra` object `url` into the scratch folder.
fn download(url: &str, scratch: &Scratch, remote: &RemoteOptions) -> Result<PathBuf> {
    let r = RemoteRa::open_with(url, remote.clone())?;
    let p = scratch.path("download.ra")?;
    std::fs::write(&p, r.read_bytes(0..r.len())?).map_err(io_at("write", &p))?;
    Ok(p)
}

/// Converts `input` to `output` as [`convert::convert`] does, either or both being
/// `s3://bucket/key` (a `.ra` object, or a Zarr array).
pub fn convert(
    input: &Path,
    output: &Path,
    options: &ConvertOptions,
    remote: &RemoteOptions,
) -> Result<()> {
    #[cfg(feature = "zarr")]
    let options = &options.clone().store_settings(remote.settings.clone());
    let scratch = Scratch::new();
    let source = match url_of(input) {
        Some(url) if !is_zarr(input) => download(url, &scratch, remote)?,
        _ => input.to_path_buf(),
    };
    let Some(url) = url_of(output).filter(|_| !is_zarr(output)) else {
        convert::convert(&source, output, options, &mut |_, _| ())?;
        return Ok(());
    };
    let plain_ra = Format::of(&source).ok() == Some(Format::Ra) && !options.compresses();
    let upload = if plain_ra {
        source
    } else {
        let p = scratch.path("upload.ra")?;
        let o = ConvertOptions::new().compress(options.compresses());
        convert::convert(&source, &p, &o, &mut |_, _| ())?;
        p
    };
    upload_file(&upload, url, remote)?;
    Ok(())
}
