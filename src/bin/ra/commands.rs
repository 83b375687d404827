//! The subcommands other than `demo`.

use std::fs::File;
use std::io::{self, IsTerminal, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rastore::convert::decoded;
use rastore::values::Value;
use rastore::{DType, Encoding, Header};

use crate::slice;
use crate::{one_line, Fail, Outcome};

#[derive(clap::Args)]
pub struct CreateArgs {
    /// The file to create.
    file: PathBuf,
    /// Element type: a name (float32, int16, complex64, user<12>) or a short code (f32, i16, c64).
    #[arg(long)]
    dtype: DType,
    /// Dims, first fastest, comma-separated: 4096,4096,16 (empty for a 0-d scalar).
    #[arg(long, value_delimiter = ',', num_args = 0..)]
    shape: Vec<u64>,
    /// Replace an existing file.
    #[arg(long)]
    overwrite: bool,
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
}

fn read_input(src: &Path) -> Result<Vec<u8>, Fail> {
    let mut buf = Vec::new();
    if src == Path::new("-") {
        io::stdin().read_to_end(&mut buf)?;
    } else {
        File::open(src)
            .and_then(|mut f| f.read_to_end(&mut buf))
            .map_err(|e| Fail::Data(format!("{}: {e}", src.display())))?;
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
        .metadata(metadata)
        .create_file(&a.file, a.dtype, &a.shape)?;
    writeln!(
        io::stdout(),
        "{}: {} {:?}, {} data bytes reserved",
        a.file.display(),
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

fn info_line(path: &Path, h: &Header, len: u64, json: bool) -> String {
    let trailer = len - h.data_end(len);
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
            path.display(),
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
                eprintln!("{}", one_line(&m));
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
        writeln!(out, "{}", info_line(p, &h, len, a.json))?;
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

/// Element `linear` of a plain file, read with one `pread`, in native order.
fn pread_element(f: &File, h: &Header, linear: u64, buf: &mut [u8]) -> io::Result<()> {
    f.read_exact_at(buf, h.data_offset() + linear * h.dtype().elbyte)?;
    if !h.native_endian() {
        if let Some(unit) = h.dtype().swap_unit() {
            rastore::codec::swap_bytes(buf, unit);
        }
    }
    Ok(())
}

pub fn cat(a: &CatArgs) -> Outcome {
    let (h, _) = rastore::read_header_at(&a.file)?;
    let sels = slice::parse(a.slice.as_deref().unwrap_or(""), h.dims()).map_err(Fail::Usage)?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut result = Ok(());
    let (total, dtype) = if h.encoding() == Encoding::Raw {
        // Plain data: read only the selected elements, never the whole file.
        let f =
            File::open(&a.file).map_err(|e| Fail::Data(format!("{}: {e}", a.file.display())))?;
        let mut buf = vec![0u8; h.dtype().elbyte as usize];
        let n = slice::walk(&sels, h.dims(), a.limit, |ix, lin| {
            if result.is_ok() {
                result = pread_element(&f, &h, lin, &mut buf)
                    .map_err(|e| Fail::Data(format!("{}: read: {e}", a.file.display())))
                    .and_then(|()| {
                        writeln!(out, "{ix:?} {}", Value::decode(h.dtype(), &buf))
                            .map_err(Fail::from)
                    });
            }
        });
        (n, h.dtype())
    } else {
        let raw = decoded(&a.file)?;
        let dtype = raw.header.dtype();
        let w = dtype.elbyte as usize;
        let n = slice::walk(&sels, h.dims(), a.limit, |ix, lin| {
            if result.is_ok() {
                let b = &raw.data[lin as usize * w..][..w];
                result = writeln!(out, "{ix:?} {}", Value::decode(dtype, b)).map_err(Fail::from);
            }
        });
        (n, dtype)
    };
    result?;
    if total > a.limit {
        writeln!(
            out,
            "... {} more {dtype} elements (raise --limit)",
            total - a.limit
        )?;
    }
    out.flush()?;
    Ok(())
}

pub fn verify(a: &FilesArg) -> Outcome {
    let mut out = io::stdout().lock();
    per_file(&a.files, |p| {
        let raw = decoded(p)?;
        if raw.header.dtype() == DType::BOOL {
            rastore::codec::check_bools(&raw.data).map_err(|e| e.at(p))?;
        }
        writeln!(
            out,
            "{}: ok ({} {:?}, {} data bytes decoded)",
            p.display(),
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
            io::stdout().write_all(&trailer)?;
        }
        Some(src) => {
            let bytes = read_input(src)?;
            rastore::replace_metadata(&a.file, &bytes)?;
        }
    }
    Ok(())
}

pub fn diff(a: &DiffArgs) -> Outcome {
    let (ra, rb) = (decoded(&a.a)?, decoded(&a.b)?);
    let mut out = io::stdout().lock();
    let (ha, hb) = (&ra.header, &rb.header);
    let mut differs = false;
    if ha.dtype() != hb.dtype() {
        writeln!(out, "dtype: {} vs {}", ha.dtype(), hb.dtype())?;
        differs = true;
    }
    if ha.dims() != hb.dims() {
        writeln!(out, "dims: {:?} vs {:?}", ha.dims(), hb.dims())?;
        differs = true;
    }
    if !differs {
        let w = ha.dtype().elbyte as usize;
        let mut first = None;
        let mut count = 0u64;
        let mut max = None::<f64>;
        for (i, (x, y)) in ra
            .data
            .chunks_exact(w)
            .zip(rb.data.chunks_exact(w))
            .enumerate()
        {
            if x != y {
                count += 1;
                let (va, vb) = (Value::decode(ha.dtype(), x), Value::decode(hb.dtype(), y));
                if let Some(d) = va.abs_diff(&vb) {
                    max = Some(max.map_or(d, |m: f64| m.max(d)));
                }
                first.get_or_insert((i, va, vb));
            }
        }
        if let Some((i, va, vb)) = first {
            let ix = unravel(i as u64, ha.dims());
            writeln!(out, "first difference at {ix:?}: {va} vs {vb}")?;
            write!(out, "{count} of {} elements differ", ha.count())?;
            match max {
                Some(m) => writeln!(out, ", largest |a - b| = {m}")?,
                None => writeln!(out)?,
            }
            differs = true;
        }
    }
    if ra.metadata != rb.metadata {
        writeln!(
            out,
            "metadata: {} bytes vs {} bytes, contents differ",
            ra.metadata.len(),
            rb.metadata.len()
        )?;
        differs = true;
    }
    if differs {
        Err(Fail::Reported)
    } else {
        writeln!(out, "same: {} {:?}", ha.dtype(), ha.dims())?;
        Ok(())
    }
}

/// Column-major linear index → multi-index.
fn unravel(mut i: u64, dims: &[u64]) -> Vec<u64> {
    dims.iter()
        .map(|&d| {
            let r = i % d.max(1);
            i /= d.max(1);
            r
        })
        .collect()
}

pub fn reshape(a: &ReshapeArgs) -> Outcome {
    let h = rastore::reshape(&a.file, &a.dims)?;
    writeln!(io::stdout(), "{}: now {:?}", a.file.display(), h.dims())?;
    Ok(())
}

/// Inputs larger than this get a progress bar on a terminal.
const PROGRESS_BYTES: u64 = 64 << 20;

pub fn convert(a: &ConvertArgs) -> Outcome {
    let size = std::fs::metadata(&a.input)
        .map_err(|e| Fail::Data(format!("{}: {e}", a.input.display())))?
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
    let result = rastore::convert::convert(&a.input, &a.output, a.compress, &mut progress);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result?;
    Ok(())
}
