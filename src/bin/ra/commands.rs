//! The subcommands other than `demo`.

use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use rastore::convert::{decoded, ConvertOptions};
use rastore::{DType, Encoding, Header, WriteOptions};

use crate::{elements, slice, term, Fail, Outcome};

#[derive(clap::Args)]
pub struct CreateArgs {
    /// The file to create.
    file: PathBuf,
    /// Element type: a name (float32, int16, complex64, user<12>) or a short code (f32, i16, c64).
    #[arg(long)]
    dtype: DType,
    /// Dims, first fastest, comma-separated: 4096,4096,16 (`--shape ''` for a 0-d scalar).
    #[arg(long, required = true, value_delimiter = ',', num_args = 0..)]
    shape: Vec<u64>,
    /// Replace an existing file.
    #[arg(long)]
    overwrite: bool,
    /// With --overwrite, replace a file that has other hard links (they keep the old one).
    #[arg(long)]
    split_links: bool,
    /// A file whose bytes become the metadata trailer.
    #[arg(long)]
    metadata: Option<PathBuf>,
}

#[derive(clap::Args)]
pub struct InfoArgs {
    /// Files to inspect.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// One JSON object per line, keys: path, dtype, eltype, elbyte, dims, size, flags
    /// {big_endian, compressed, bits}, header_bytes, data_offset, metadata_bytes.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct FileArg {
    /// The file.
    file: PathBuf,
}

#[derive(clap::Args)]
pub struct FilesArg {
    /// The files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

#[derive(clap::Args)]
pub struct CatArgs {
    /// The file.
    file: PathBuf,
    /// NumPy-style selection in RawArray dim order, e.g. 0:10,:,3 (negative indices count from the end).
    #[arg(long)]
    slice: Option<String>,
    /// Print at most this many elements.
    #[arg(long, default_value_t = 10_000)]
    limit: u64,
}

#[derive(clap::Args)]
pub struct MetaArgs {
    /// The file.
    file: PathBuf,
    /// Replace the trailer with the bytes of this file (- for standard input); the data is untouched.
    #[arg(long, value_name = "SRC")]
    set: Option<PathBuf>,
    /// Replace a file that has other hard links (they keep the old one).
    #[arg(long)]
    split_links: bool,
}

#[derive(clap::Args)]
pub struct DiffArgs {
    /// First file.
    a: PathBuf,
    /// Second file.
    b: PathBuf,
}

#[derive(clap::Args)]
pub struct ReshapeArgs {
    /// The file.
    file: PathBuf,
    /// New dims, comma-separated, with the same element count.
    #[arg(value_delimiter = ',', num_args = 1..)]
    dims: Vec<u64>,
    /// Replace a file that has other hard links (they keep the old one).
    #[arg(long)]
    split_links: bool,
}

#[derive(clap::Args)]
pub struct ConvertArgs {
    /// Input: .ra, .npy or .png.
    input: PathBuf,
    /// Output: .ra, .npy or .png.
    output: PathBuf,
    /// Store the output .ra as one LZ4 block (held in memory while compressing).
    #[arg(long)]
    compress: bool,
    /// Replace an existing output.
    #[arg(long)]
    overwrite: bool,
    /// With --overwrite, replace an output that has other hard links (they keep the old one).
    #[arg(long)]
    split_links: bool,
}

fn read_input(src: &Path) -> Result<Vec<u8>, Fail> {
    let mut buf = Vec::new();
    if src == Path::new("-") {
        io::stdin().read_to_end(&mut buf)?;
    } else {
        File::open(src)
            .and_then(|mut f| f.read_to_end(&mut buf))
            .map_err(|e| Fail::Data(format!("{}: {e}", term::path(src))))?;
    }
    Ok(buf)
}

pub fn create(a: &CreateArgs) -> Outcome {
    let metadata = match &a.metadata {
        Some(p) => read_input(p)?,
        None => Vec::new(),
    };
    let h = rastore::CreateOptions::new()
        .overwrite(a.overwrite)
        .split_links(a.split_links)
        .metadata(metadata)
        .create_file(&a.file, a.dtype, &a.shape)?;
    writeln!(
        io::stdout(),
        "{}: {} {:?}, {} data bytes reserved",
        term::path(&a.file),
        h.dtype(),
        h.dims(),
        h.size()
    )?;
    Ok(())
}

/// The type as shown to people: BitArrays are bools.
fn type_name(h: &Header) -> String {
    if h.encoding() == Encoding::Bits {
        "bool (BitArray)".into()
    } else {
        h.dtype().name()
    }
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn info_line(path: &Path, h: &Header, trailer: u64, json: bool) -> String {
    let f = h.flags();
    if json {
        let dims: Vec<String> = h.dims().iter().map(u64::to_string).collect();
        format!(
            "{{\"path\": {}, \"dtype\": {}, \"eltype\": {}, \"elbyte\": {}, \"dims\": [{}], \"size\": {}, \
             \"flags\": {{\"big_endian\": {}, \"compressed\": {}, \"bits\": {}}}, \"header_bytes\": {}, \
             \"data_offset\": {}, \"metadata_bytes\": {}}}",
            json_str(&path.to_string_lossy()),
            json_str(&type_name(h)),
            h.dtype().eltype,
            h.dtype().elbyte,
            dims.join(", "),
            h.size(),
            h.data_big_endian(),
            f.compressed(),
            f.bits(),
            h.data_offset(),
            h.data_offset(),
            trailer
        )
    } else {
        let mut notes = Vec::new();
        if h.data_big_endian() {
            notes.push("big-endian");
        }
        notes.extend(h.encoding().filter_name());
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join(", "))
        };
        format!(
            "{}: {} {:?} size {} flags {:#x}{notes} trailer {trailer}",
            term::path(path),
            type_name(h),
            h.dims(),
            h.size(),
            f.0
        )
    }
}

/// Runs `each` over `files`, reporting failures on stderr; fails if any did.
fn per_file(files: &[PathBuf], mut each: impl FnMut(&Path) -> Outcome) -> Outcome {
    let mut bad = false;
    for p in files {
        match each(p) {
            Ok(()) => {}
            Err(Fail::Pipe) => return Err(Fail::Pipe),
            Err(Fail::Data(m) | Fail::Usage(m)) => {
                bad = true;
                eprintln!("{}", term::line(&m));
            }
            Err(Fail::Reported) => bad = true,
        }
    }
    if bad {
        Err(Fail::Reported)
    } else {
        Ok(())
    }
}

pub fn info(a: &InfoArgs) -> Outcome {
    let mut out = io::stdout().lock();
    per_file(&a.files, |p| {
        let (h, len) = rastore::read_header_at(p)?;
        // Only a header that fits LZ4 and LEB128 alike needs its data decoded to know
        // (data that decodes as neither is for `verify` to report: no trailer).
        let trailer = if h.encoding() == Encoding::Lz4OrLeb128 {
            rastore::read_metadata(p).map_or(0, |t| t.len() as u64)
        } else {
            len - h.data_end(len)
        };
        writeln!(out, "{}", info_line(p, &h, trailer, a.json))?;
        Ok(())
    })
}

pub fn describe(a: &FileArg) -> Outcome {
    let (h, _) = rastore::read_header_at(&a.file)?;
    let trailer = rastore::read_metadata(&a.file)?;
    let doc = rastore::ndl::describe(&a.file.to_string_lossy(), &h, &trailer);
    io::stdout().write_all(doc.as_bytes())?;
    Ok(())
}

pub fn cat(a: &CatArgs) -> Outcome {
    let (h, _) = rastore::read_header_at(&a.file)?;
    let sels = slice::parse(a.slice.as_deref().unwrap_or(""), h.dims()).map_err(Fail::Usage)?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    elements::cat(&a.file, &h, &sels, a.limit, &mut out)?;
    out.flush()?;
    Ok(())
}

pub fn verify(a: &FilesArg) -> Outcome {
    let mut out = io::stdout().lock();
    per_file(&a.files, |p| {
        let raw = decoded(p)?;
        writeln!(
            out,
            "{}: ok ({} {:?}, {} data bytes decoded)",
            term::path(p),
            raw.header.dtype(),
            raw.header.dims(),
            raw.data.len()
        )?;
        Ok(())
    })
}

pub fn meta(a: &MetaArgs) -> Outcome {
    match &a.set {
        None => {
            let trailer = rastore::read_metadata(&a.file)?;
            let mut out = io::stdout();
            if out.is_terminal() {
                out.write_all(term::text(&trailer).as_bytes())?;
            } else {
                out.write_all(&trailer)?;
            }
        }
        Some(src) => {
            let bytes = read_input(src)?;
            WriteOptions::new()
                .split_links(a.split_links)
                .replace_metadata(&a.file, &bytes)?;
        }
    }
    Ok(())
}

pub fn diff(a: &DiffArgs) -> Outcome {
    let (ra, rb) = (decoded(&a.a)?, decoded(&a.b)?);
    let mut out = io::stdout().lock();
    if elements::diff(&ra, &rb, &mut out)? {
        Err(Fail::Reported)
    } else {
        writeln!(out, "same: {} {:?}", ra.header.dtype(), ra.header.dims())?;
        Ok(())
    }
}

pub fn reshape(a: &ReshapeArgs) -> Outcome {
    let h = WriteOptions::new()
        .split_links(a.split_links)
        .reshape(&a.file, &a.dims)?;
    writeln!(io::stdout(), "{}: now {:?}", term::path(&a.file), h.dims())?;
    Ok(())
}

/// Inputs larger than this get a progress bar on a terminal.
const PROGRESS_BYTES: u64 = 64 << 20;

pub fn convert(a: &ConvertArgs) -> Outcome {
    let size = std::fs::metadata(&a.input)
        .map_err(|e| Fail::Data(format!("{}: {e}", term::path(&a.input))))?
        .len();
    let bar = (size > PROGRESS_BYTES && io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(size);
        b.set_style(
            indicatif::ProgressStyle::with_template(
                "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    });
    let mut progress = |done: u64, total: u64| {
        if let Some(b) = &bar {
            b.set_length(total);
            b.set_position(done);
        }
    };
    let options = ConvertOptions::new()
        .compress(a.compress)
        .overwrite(a.overwrite)
        .split_links(a.split_links);
    let result = rastore::convert::convert(&a.input, &a.output, &options, &mut progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if result?.stored_raw {
        eprintln!(
            "ra: {}: stored uncompressed (LZ4 would not have made it smaller)",
            term::path(&a.output)
        );
    }
    Ok(())
}
