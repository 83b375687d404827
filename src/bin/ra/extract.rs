//! `ra slice` (a sub-array to a new file) and `ra stack` (many arrays into one), both
//! through the conversion engine ([`rastore::convert`]): any input format it reads,
//! any output it writes, named only when complete.

use std::path::{Path, PathBuf};

use rastore::convert::{Block, ConvertOptions, Pick, Sink, Source};
use rastore::DType;

use crate::bar::progress_bar;
use crate::folder::no_folder;
use crate::slice::{self, Sel};
use crate::{term, Fail, Outcome};

#[derive(clap::Args)]
pub struct SliceArgs {
    /// Input: .ra, .npy, .png, .npz (of one array), Zarr; a file, a folder or s3://.
    input: PathBuf,
    /// Output: .ra, .npy, .png, .tif or .zarr, by its name.
    output: PathBuf,
    /// The selection, as for cat; dims an integer index selects are dropped, as NumPy drops them.
    #[arg(long, allow_hyphen_values = true)]
    slice: String,
    /// For a PNG output scaled to gray: the gray level (0 to 255) of NaN elements, which are refused without it.
    #[arg(long, value_name = "GRAY")]
    nan_gray: Option<u8>,
    /// Replace an existing output.
    #[arg(long)]
    overwrite: bool,
}

#[derive(clap::Args)]
pub struct StackArgs {
    /// The output (.ra, .npy, .png, .tif or .zarr, by its name): dims of the inputs plus one last axis of their count.
    output: PathBuf,
    /// Inputs of one shape and type, of any format ra convert reads.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Replace an existing output.
    #[arg(long)]
    overwrite: bool,
}

/// Refuses a folder that is no Zarr array given as an input of `ra cmd` (`slice`,
/// `stack`, `append`), which reads any one array the engine reads per input.
pub fn engine_input(path: &Path, cmd: &str) -> Outcome {
    if rastore::convert::is_zarr(path) {
        return Ok(());
    }
    no_folder(path, cmd, "one array per input (a file or a Zarr array)")
}

/// The selection `sels` as the engine's picks.
fn picks(sels: &[Sel]) -> Vec<Pick> {
    sels.iter()
        .map(|s| match *s {
            Sel::Index(i) => Pick::Index(i),
            Sel::Range { start, step, count } => Pick::Range { start, step, count },
        })
        .collect()
}

/// Copies `source` into `sink` with a progress bar on a terminal.
fn copy_with_bar(source: Box<dyn Source>, sink: Box<dyn Sink>) -> rastore::Result<()> {
    let bar = progress_bar(source.desc().nbytes());
    let result = rastore::convert::copy(source, sink, &mut |done, _| {
        if let Some(b) = &bar {
            b.set_position(done);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result.map(drop)
}

pub fn slice(a: &SliceArgs) -> Outcome {
    let options = ConvertOptions::new()
        .overwrite(a.overwrite)
        .nan_gray(a.nan_gray);
    engine_input(&a.input, "slice")?;
    let source = rastore::convert::open(&a.input, &options)?;
    let sels = slice::parse(&a.slice, &source.desc().dims).map_err(Fail::Usage)?;
    let part = rastore::convert::select(source, &picks(&sels))?;
    let sink = rastore::convert::create(&a.output, part.desc().clone(), &options)?;
    copy_with_bar(part, sink)?;
    Ok(())
}

/// An input of `ra append` or `ra fill put`, any format the engine reads: element type,
/// dims and column-major native bytes.
pub fn load(path: &Path) -> rastore::Result<(DType, Vec<u64>, Vec<u8>)> {
    let source = rastore::convert::open(path, &ConvertOptions::new())?;
    let d = source.desc().clone();
    let n = usize::try_from(d.nbytes()).map_err(|_| rastore::ErrorKind::TooLarge {
        what: "data bytes held in memory",
        value: d.nbytes().into(),
    })?;
    let mut data = vec![0u8; n];
    source.read_box(&Block::all(&d.dims), &mut data)?;
    Ok((d.dtype, d.dims, data))
}

pub fn stack(a: &StackArgs) -> Outcome {
    let options = ConvertOptions::new().overwrite(a.overwrite);
    for input in &a.inputs {
        engine_input(input, "stack")?;
    }
    let source = rastore::convert::stack(&a.inputs, &options)?;
    let desc = source.desc().clone();
    let sink = rastore::convert::create(&a.output, desc.clone(), &options)?;
    copy_with_bar(source, sink)?;
    let n = a.inputs.len();
    println!(
        "{}: {} {:?} from {n} input{}",
        term::path(&a.output),
        desc.dtype,
        desc.dims,
        if n == 1 { "" } else { "s" }
    );
    Ok(())
}
