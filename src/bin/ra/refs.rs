//! `ra refs`: kerchunk references to a `.ra` (or `.npy`) file or `s3://` object read in place, so
//! that every Zarr reader (fsspec's `ReferenceFileSystem`, xarray, GDAL) reads it with
//! no copy.

use std::io::Write;
use std::path::PathBuf;

use rastore::convert::{refs, ConvertOptions};

use crate::dims::Dims;
use crate::Outcome;

#[derive(clap::Args)]
pub struct RefsArgs {
    /// The .ra (or uncompressed .npy) file, or s3:// object.
    input: PathBuf,
    /// Write the references (JSON) to this file instead of stdout.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Frames per chunk (e.g. 4), or a chunk shape of whole frames (e.g. 512,512,4);
    /// default: the largest frame count that divides the frames within about 16 MiB.
    #[arg(long)]
    chunks: Option<Dims>,
    /// Where readers will find the file (default: its absolute path, or its s3:// URL).
    #[arg(long)]
    url: Option<String>,
    /// Replace --output if it exists.
    #[arg(long)]
    overwrite: bool,
}

pub fn refs(a: &RefsArgs) -> Outcome {
    let options = ConvertOptions::new().overwrite(a.overwrite);
    let chunks = a.chunks.as_ref().map(|d| d.0.as_slice());
    let url = a.url.as_deref();
    match &a.output {
        Some(out) => refs::write_references(&a.input, out, chunks, url, &options)?,
        None => {
            let refs = refs::references(&a.input, chunks, url, &options)?;
            writeln!(std::io::stdout().lock(), "{refs}")?;
        }
    }
    Ok(())
}
