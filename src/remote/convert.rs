//! `ra convert` with an object on either side: a Zarr array is read and written where
//! it is (a folder or `s3://`); a `.ra` object input is downloaded in pieces, and an
//! object output (`.ra`, `.npy` or `.png`, by its key's extension) converted, to a
//! scratch file in the system's temporary folder, removed when the conversion ends
//! however it ends.

use std::io::Write;
use std::path::{Path, PathBuf};

use object_store::ObjectStoreExt;

use super::client::{remote_err, runtime, store as client_store, S3Url};
use super::read::ranged_into;
use super::upload::upload_any;
use super::{is_remote, upload_file, RemoteOptions};
use crate::error::{io_at, Result};
use crate::formats::convert::{self, is_zarr, ConvertOptions, Format};

/// Bytes of an object downloaded at once (with concurrent ranged GETs).
const DOWNLOAD_PIECE: u64 = 64 << 20;

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

/// Downloads the object `url` (a `.ra`, `.npy`, `.png` or `.npz`: the conversion
/// tells them apart by their contents) into the scratch folder, a piece at a time:
/// memory is one piece whatever the object's size.
fn download(url: &str, scratch: &Scratch, remote: &RemoteOptions) -> Result<PathBuf> {
    let u = S3Url::parse(url)?;
    let store = client_store(&u, remote)?;
    let len = runtime()?
        .block_on(store.head(&u.path()))
        .map_err(remote_err("head", &u))?
        .size;
    let p = scratch.path("download")?;
    let mut file = std::fs::File::create(&p).map_err(io_at("create", &p))?;
    let mut buf = vec![0u8; len.min(DOWNLOAD_PIECE) as usize];
    for start in (0..len).step_by(DOWNLOAD_PIECE as usize) {
        let n = (len - start).min(DOWNLOAD_PIECE) as usize;
        ranged_into(&store, &u, start..start + n as u64, remote, &mut buf[..n])?;
        file.write_all(&buf[..n]).map_err(io_at("write", &p))?;
    }
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
    // Errors name the user's paths, not the scratch files.
    let shown = |e: crate::Error| e.shown_as(&source, input);
    let Some(url) = url_of(output).filter(|_| !is_zarr(output)) else {
        convert::convert(&source, output, options, &mut |_, _| ()).map_err(shown)?;
        return Ok(());
    };
    // The object is what its key's extension says: a .ra, a .npy or a .png.
    let format = Format::of_output(output)?;
    let plain_ra = format == Format::Ra
        && Format::of(&source).ok() == Some(Format::Ra)
        && !options.compresses();
    if plain_ra {
        upload_file(&source, url, remote).map_err(shown)?;
        return Ok(());
    }
    let ext = output.extension().unwrap_or_default().to_string_lossy();
    let p = scratch.path(&format!("upload.{ext}"))?;
    let o = options.clone().overwrite(true);
    convert::convert(&source, &p, &o, &mut |_, _| ()).map_err(|e| shown(e).shown_as(&p, output))?;
    upload_any(&p, url, remote)?;
    Ok(())
}
