//! `ra slice` (a sub-array to a new file) and `ra stack` (many arrays into one), both
//! through the fill-in writer: the output is preallocated, filled through a mapping
//! and named only when complete.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rastore::formats::convert::{ConvertOptions, Format};
use rastore::{CreateOptions, DType, Header, Kind, Stride};
use rayon::prelude::*;

use crate::commands::progress_bar;
use crate::input::Input;
use crate::slice::{self, Sel};
use crate::{term, Fail, Outcome};

#[derive(clap::Args)]
pub struct SliceArgs {
    /// Input: .ra or .npy.
    input: PathBuf,
    /// Output: .ra, .npy or .png, by extension.
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
    /// The output .ra: dims of the inputs plus one last axis of their count.
    output: PathBuf,
    /// Inputs of one shape and type: .ra, .npy or .png.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Replace an existing output.
    #[arg(long)]
    overwrite: bool,
}

/// The trailer that keeps a structured type's fields, when the input has one.
fn fields_trailer(input: &Input, path: &Path, dims: &[u64]) -> rastore::Result<Vec<u8>> {
    if input.dtype.kind() != Kind::User {
        return Ok(Vec::new());
    }
    let descr = match &input.npy {
        Some(nh) => Some(nh.descr.clone()),
        None => {
            rastore::formats::ndl::numpy_descr(&rastore::read_metadata(path)?, input.dtype.elbyte)
        }
    };
    let header = Header::new(input.dtype, dims)?;
    Ok(descr.map_or_else(Vec::new, |d| {
        rastore::formats::ndl::descr_trailer(&header, &d)
    }))
}

/// Removes a file when dropped (the intermediate `.ra` of a slice to `.npy`/`.png`).
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn slice(a: &SliceArgs) -> Outcome {
    let input = Input::open(&a.input)?;
    let sels = slice::parse(&a.slice, &input.dims).map_err(Fail::Usage)?;
    let dims: Vec<u64> = sels
        .iter()
        .filter(|s| matches!(s, Sel::Range { .. }))
        .map(Sel::count)
        .collect();
    let w = input.dtype.elbyte as usize;
    let trailer = fields_trailer(&input, &a.input, &dims)?;
    // From a plain .ra, only the byte runs holding the selection are read, several at
    // once; from a .npy (perhaps C order), or a compressed .ra already decoded by
    // `Input::open`, element by element from its bytes.
    let plain_ra = Format::of(&a.input).ok() == Some(Format::Ra) && input.source().is_some();
    // Descending ranges are read ascending, then flipped in place.
    let strides: Option<Vec<Stride>> = plain_ra.then(|| {
        sels.iter()
            .map(|s| {
                let ((first, step, count), _) = s.ascending();
                Stride::new(first, step, count)
            })
            .collect()
    });
    let counts: Vec<u64> = sels.iter().map(Sel::count).collect();
    let fill = |out: &mut rastore::MappedRaMut| -> rastore::Result<()> {
        let data = out.data_mut();
        if let Some(strides) = &strides {
            read_selection(&a.input, strides, data)?;
            for (axis, s) in sels.iter().enumerate() {
                if s.ascending().1 {
                    slice::flip(data, &counts, w, axis);
                }
            }
            return Ok(());
        }
        let mut pos = 0;
        slice::walk(&sels, &input.dims, u64::MAX, |ix, _| {
            data[pos..pos + w].copy_from_slice(input.element(ix));
            pos += w;
        });
        Ok(())
    };
    let format = Format::of_output(&a.output)?;
    if format == Format::Ra {
        CreateOptions::new()
            .overwrite(a.overwrite)
            .metadata(trailer)
            .create_filled(&a.output, input.dtype, &dims, fill)?;
        return Ok(());
    }
    let options = ConvertOptions::new()
        .overwrite(a.overwrite)
        .nan_gray(a.nan_gray);
    options.check_output(&a.output)?;
    // A .npy or .png: the sub-array as a .ra beside it first, converted piece by piece.
    let name = a
        .output
        .file_name()
        .map(|n| n.to_string_lossy().len())
        .unwrap_or(0);
    let tmp = a
        .output
        .with_file_name(format!(".ra-slice-{}-{name}.ra", std::process::id()));
    let tmp = Removed(tmp);
    // Errors name the output, not the file on the way to it.
    let shown = |e: rastore::Error| e.shown_as(&tmp.0, &a.output);
    CreateOptions::new()
        .overwrite(true)
        .metadata(trailer)
        .create_filled(&tmp.0, input.dtype, &dims, fill)
        .map_err(shown)?;
    rastore::formats::convert::convert(&tmp.0, &a.output, &options, &mut |_, _| ())
        .map_err(shown)?;
    Ok(())
}

/// Bytes of a slice read between updates of the progress bar, at most ...
const SLICE_PIECE: usize = 256 << 20;
/// ... and at least this many updates, where the last axis has as many indices.
const SLICE_STEPS: usize = 16;

/// Reads the elements `strides` pick from the `.ra` `input` into `data`, in pieces
/// along the last axis, with progress.
fn read_selection(input: &Path, strides: &[Stride], data: &mut [u8]) -> rastore::Result<()> {
    let reader = rastore::DataReader::open(input)?;
    let Some((last, lead)) = strides.split_last().filter(|_| !data.is_empty()) else {
        return reader.read_selection_into(strides, data);
    };
    // Bytes per index of the last axis: the data is `last.count` of them.
    let per = data.len() / last.count as usize;
    let indices = (SLICE_PIECE / per)
        .min((last.count as usize).div_ceil(SLICE_STEPS))
        .max(1);
    let bar = progress_bar(data.len() as u64);
    for (k, piece) in data.chunks_mut(per * indices).enumerate() {
        let first = last.start + (k * indices) as u64 * last.step;
        let count = (piece.len() / per) as u64;
        let mut sel = lead.to_vec();
        sel.push(Stride::new(first, last.step, count));
        reader.read_selection_into(&sel, piece)?;
        if let Some(b) = &bar {
            b.inc(piece.len() as u64);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    Ok(())
}

/// An input of `ra stack` and `ra append`: element type, dims and column-major native bytes.
pub fn load(path: &Path) -> rastore::Result<(DType, Vec<u64>, Vec<u8>)> {
    if Format::of(path).ok() == Some(Format::Png) {
        let img = rastore::formats::png::decode_file(path)?;
        return Ok((img.dtype, img.dims, img.data));
    }
    let input = Input::open(path)?;
    let bytes = input.fortran_bytes();
    Ok((input.dtype, input.dims, bytes))
}

/// An input of a stack: a PNG decoded, anything else opened (mapped where it can be).
enum Layer {
    Png(DType, Vec<u64>, Vec<u8>),
    File(Box<Input>),
}

impl Layer {
    fn open(path: &Path) -> rastore::Result<Layer> {
        if Format::of(path).ok() == Some(Format::Png) {
            let (t, d, bytes) = load(path)?;
            return Ok(Layer::Png(t, d, bytes));
        }
        Input::open(path).map(|i| Layer::File(Box::new(i)))
    }

    fn kind(&self) -> (DType, &[u64]) {
        match self {
            Layer::Png(t, d, _) => (*t, d),
            Layer::File(i) => (i.dtype, &i.dims),
        }
    }

    /// Puts the column-major bytes into `dst`: a plain file in column-major order read
    /// straight into it in large reads (no copy in memory), anything else decoded.
    fn place(&self, dst: &mut [u8]) -> rastore::Result<()> {
        match self {
            Layer::Png(_, _, bytes) => dst.copy_from_slice(bytes),
            Layer::File(input) => match input.source() {
                Some((file, range)) if input.is_fortran() => {
                    let options = rastore::scan::ScanOptions::default();
                    rastore::scan::read_into(file, range.start, dst, &options)?;
                }
                _ => dst.copy_from_slice(&input.fortran_bytes()),
            },
        }
        Ok(())
    }
}

pub fn stack(a: &StackArgs) -> Outcome {
    let (dtype, dims) = {
        let first = Layer::open(&a.inputs[0])?;
        let (t, d) = first.kind();
        (t, d.to_vec())
    };
    let slab = (dims.iter().product::<u64>() * dtype.elbyte) as usize;
    let mut out_dims = dims.clone();
    out_dims.push(a.inputs.len() as u64);
    let trailer = if dtype.kind() == Kind::User {
        fields_trailer(&Input::open(&a.inputs[0])?, &a.inputs[0], &out_dims)?
    } else {
        Vec::new()
    };
    let bar = progress_bar((slab * a.inputs.len()) as u64);
    // The first failure in input order, whichever thread meets it first.
    let failed: Mutex<Option<(usize, Fail)>> = Mutex::new(None);
    let result = CreateOptions::new()
        .overwrite(a.overwrite)
        .metadata(trailer)
        .create_filled(&a.output, dtype, &out_dims, |out| {
            let (data, behind) = out.data_mut_with_writeback();
            if slab == 0 {
                return Ok(());
            }
            data.par_chunks_mut(slab)
                .zip(a.inputs.par_iter())
                .enumerate()
                .for_each(|(i, (dst, path))| {
                    let placed = Layer::open(path).and_then(|layer| {
                        let (t, d) = layer.kind();
                        if t != dtype || d != dims {
                            return Ok(Err((t, d.to_vec())));
                        }
                        layer.place(dst).map(Ok)
                    });
                    let done = match placed {
                        Ok(Ok(())) => {
                            // Queued for the disk as each input lands, not when the
                            // kernel reaches its dirty limit.
                            behind.finished(i * slab..(i + 1) * slab);
                            if let Some(b) = &bar {
                                b.inc(slab as u64);
                            }
                            return;
                        }
                        Ok(Err((t, d))) => Fail::Data(format!(
                            "{}: {t} {d:?} differs from {}: {dtype} {dims:?}",
                            term::path(path),
                            term::path(&a.inputs[0])
                        )),
                        Err(e) => Fail::from(e),
                    };
                    let mut f = failed.lock().unwrap_or_else(|p| p.into_inner());
                    if f.as_ref().is_none_or(|(j, _)| i < *j) {
                        *f = Some((i, done));
                    }
                });
            match failed.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                Some(_) => {
                    Err(rastore::ErrorKind::InvalidArgument("an input failed".into()).into())
                }
                None => Ok(()),
            }
        });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if let Some((_, fail)) = failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(fail);
    }
    let h = result?;
    let n = a.inputs.len();
    println!(
        "{}: {} {:?} from {n} input{}",
        term::path(&a.output),
        h.dtype(),
        h.dims(),
        if n == 1 { "" } else { "s" }
    );
    Ok(())
}
