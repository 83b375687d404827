//! `s3://` objects in `ra`: reading commands over ranged GETs, `convert` to and from
//! object storage, and `ra fill` for many nodes filling one object.

use std::io::{self, BufRead, Read};
use std::ops::Range;
use std::path::{Path, PathBuf};

use rastore::remote::{FillToken, RemoteOptions, RemoteRa};
use rastore::DType;

use crate::dims::Dims;
use crate::input::Input;
use crate::slice::Sel;
use crate::{term, Fail, Outcome};

/// Whether a command-line path names an object.
pub fn is_remote(p: &Path) -> bool {
    p.to_str().is_some_and(rastore::remote::is_remote)
}

fn url(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}

/// `ra info` of an object.
pub fn info(p: &Path) -> rastore::Result<rastore::info::FileInfo> {
    Ok(RemoteRa::open(url(p))?.info())
}

/// `ra describe` of an object: the header and the trailer (a suffix GET).
pub fn describe(p: &Path) -> rastore::Result<String> {
    let r = RemoteRa::open(url(p))?;
    Ok(rastore::ndl::describe(url(p), r.header(), &r.metadata()?))
}

/// The variables of the dataset under the prefix `p` (`s3://bucket/run/`): its `.ra`
/// objects, every level; a prefix with none is no dataset.
pub fn variables(p: &Path) -> rastore::Result<Vec<PathBuf>> {
    let found = rastore::remote::objects::variables(url(p), &RemoteOptions::default())?;
    rastore::dataset::refuse_empty(p, &found)?;
    Ok(found.into_iter().map(|(_, u)| PathBuf::from(u)).collect())
}

/// `ra describe` of the dataset under the prefix `p`: each variable's header and
/// trailer (two ranged GETs), and its `dataset.yaml`.
pub fn describe_dataset(p: &Path) -> rastore::Result<String> {
    let options = RemoteOptions::default();
    let mut entries = Vec::new();
    let found = rastore::remote::objects::variables(url(p), &options)?;
    rastore::dataset::refuse_empty(p, &found)?;
    for (name, u) in found {
        let r = RemoteRa::open(&u)?;
        entries.push((name, u, r.header().clone(), r.metadata()?));
    }
    let yaml = format!(
        "{}/{}",
        url(p).trim_end_matches('/'),
        rastore::dataset::ATTRIBUTES
    );
    let attributes = rastore::remote::objects::dataset_attributes(&yaml, &options)?;
    Ok(rastore::dataset::describe_entries(entries, attributes))
}

/// `ra verify` of an object: fetched whole and decoded.
pub fn decoded(p: &Path) -> rastore::Result<rastore::RawData> {
    RemoteRa::open(url(p))?.decoded()
}

/// The range of the last axis that `sels` touch (empty when they select nothing).
fn last_range(sels: &[Sel]) -> Option<Range<u64>> {
    let last = sels.last()?;
    let n = last.count();
    Some(if n == 0 {
        0..0
    } else {
        let (a, b) = (last.at(0), last.at(n - 1));
        a.min(b)..a.max(b) + 1
    })
}

/// An object as an [`Input`] for `cat` and `stats`: with a selection, only the range
/// of the last axis it touches is fetched.
pub fn input(p: &Path, spec: Option<&str>) -> Result<(Input, Vec<Sel>), Fail> {
    let r = RemoteRa::open(url(p))?;
    let dims = r.header().dims().to_vec();
    let sels = crate::slice::parse(spec.unwrap_or(""), &dims).map_err(Fail::Usage)?;
    let range = match (spec, last_range(&sels)) {
        (Some(_), Some(range)) => range,
        _ => 0..dims.last().copied().unwrap_or(1),
    };
    let input = if dims.is_empty() {
        let raw = r.decoded()?;
        Input::owned(raw.header.dtype(), dims, 0, raw.data)
    } else {
        let (slab, data) = r.read_slab_bytes(range.clone())?;
        let dtype = if slab.encoding() == rastore::Encoding::Bits {
            DType::BOOL
        } else {
            slab.dtype()
        };
        Input::owned(dtype, dims, range.start, data)
    };
    Ok((input, sels))
}

#[derive(clap::Subcommand)]
pub enum FillCommand {
    /// Begin the upload of an array to s3://BUCKET/KEY and print the token (JSON) on stdout, the part plan on stderr.
    Begin {
        /// The object: s3://bucket/key.
        url: String,
        /// Element type, as for `ra create`.
        #[arg(long)]
        dtype: DType,
        /// Dims, first fastest, comma-separated: the last axis is cut into parts.
        #[arg(long, allow_hyphen_values = true)]
        shape: Dims,
        /// A file whose bytes become the trailer (at the end of the last part).
        #[arg(long)]
        metadata: Option<PathBuf>,
        /// Least data per part, MiB (S3 needs 5 for every part but the last).
        #[arg(long, default_value_t = 16)]
        part_mib: u64,
    },
    /// Print the plan: one line per part, `PART FIRST_FRAME END_FRAME`.
    Plan {
        /// The token, or @FILE holding it.
        token: String,
    },
    /// Upload parts from local .ra or .npy slabs holding exactly their frames; prints `PART ETAG` for each.
    Put {
        /// The token, or @FILE holding it.
        token: String,
        /// PART SLAB pairs: the part's number (from 1), and a file of a frame's dims plus the part's frame count.
        #[arg(required = true, num_args = 2..)]
        parts: Vec<String>,
        /// Parts uploaded at once.
        #[arg(long, default_value_t = 4)]
        jobs: usize,
    },
    /// Complete the upload with every part's `PART ETAG` line (from files, or - for stdin).
    Complete {
        /// The token, or @FILE holding it.
        token: String,
        /// Files of `PART ETAG` lines, as `put` prints them (- for stdin).
        #[arg(required = true)]
        etags: Vec<PathBuf>,
    },
    /// Abort the upload: nothing appears under the key, the parts are discarded.
    Abort {
        /// The token, or @FILE holding it.
        token: String,
    },
}

/// Uploads one part from its slab file, checked against the plan.
fn put_one(
    t: &FillToken,
    part: u64,
    slab: &Path,
    options: &RemoteOptions,
) -> Result<(u64, String), Fail> {
    let frames = t.frames(part)?;
    // Any format the engine reads, as column-major native bytes.
    let (dtype, dims, data) = crate::extract::load(slab)?;
    let mut want = t.dims.clone();
    if let Some(last) = want.last_mut() {
        *last = frames.end - frames.start;
    }
    if dtype != t.dtype || dims != want {
        return Err(Fail::Data(format!(
            "{}: {dtype} {dims:?}, but part {part} is {} {want:?} (frames {frames:?})",
            term::path(slab),
            t.dtype
        )));
    }
    let etag = t.put_part(part, data, options)?;
    Ok((part, etag))
}

fn token(arg: &str) -> Result<FillToken, Fail> {
    let text = match arg.strip_prefix('@') {
        Some(f) => std::fs::read_to_string(f).map_err(|e| Fail::Data(format!("{f}: {e}")))?,
        None => arg.to_string(),
    };
    Ok(FillToken::from_json(&text)?)
}

pub fn fill(c: &FillCommand) -> Outcome {
    let options = RemoteOptions::default();
    match c {
        FillCommand::Begin {
            url,
            dtype,
            shape,
            metadata,
            part_mib,
        } => {
            let trailer = match metadata {
                Some(f) => {
                    std::fs::read(f).map_err(|e| Fail::Data(format!("{}: {e}", term::path(f))))?
                }
                None => Vec::new(),
            };
            let options = RemoteOptions {
                part_bytes: part_mib << 20,
                ..options
            };
            let t = FillToken::begin(url, *dtype, &shape.0, &trailer, &options)?;
            eprintln!(
                "{}: {} parts of {} frames (the last may have fewer); upload id {}",
                t.url,
                t.parts(),
                t.frames_per_part,
                term::line(&t.upload_id)
            );
            println!("{}", t.to_json());
        }
        FillCommand::Plan { token: arg } => {
            let t = token(arg)?;
            for p in 1..=t.parts() {
                let f = t.frames(p)?;
                println!("{p} {} {}", f.start, f.end);
            }
        }
        FillCommand::Put {
            token: arg,
            parts,
            jobs,
        } => {
            let t = token(arg)?;
            if parts.len() % 2 != 0 {
                return Err(Fail::Usage("put takes PART SLAB pairs".into()));
            }
            let pairs = parts
                .chunks(2)
                .map(|c| {
                    let n = c[0]
                        .parse::<u64>()
                        .map_err(|_| Fail::Usage(format!("{:?} is not a part number", c[0])))?;
                    Ok((n, PathBuf::from(&c[1])))
                })
                .collect::<Result<Vec<_>, Fail>>()?;
            let next = std::sync::atomic::AtomicUsize::new(0);
            let results: Vec<Result<(u64, String), Fail>> = std::thread::scope(|s| {
                let workers: Vec<_> = (0..(*jobs).clamp(1, pairs.len()))
                    .map(|_| {
                        s.spawn(|| {
                            let mut done = Vec::new();
                            loop {
                                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                let Some((part, slab)) = pairs.get(i) else {
                                    break;
                                };
                                done.push(put_one(&t, *part, slab, &options));
                            }
                            done
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .flat_map(|w| w.join().unwrap_or_default())
                    .collect()
            });
            let mut failed = None;
            for r in results {
                match r {
                    Ok((part, etag)) => println!("{part} {etag}"),
                    Err(e) => failed = failed.or(Some(e)),
                }
            }
            if let Some(e) = failed {
                return Err(e);
            }
        }
        FillCommand::Complete { token: arg, etags } => {
            let t = token(arg)?;
            let mut list = Vec::new();
            for f in etags {
                let text = if f.as_os_str() == "-" {
                    let mut s = String::new();
                    io::stdin().read_to_string(&mut s)?;
                    s
                } else {
                    std::fs::read_to_string(f)
                        .map_err(|e| Fail::Data(format!("{}: {e}", term::path(f))))?
                };
                for line in io::Cursor::new(text).lines() {
                    let line = line?;
                    let line = line.trim();
                    if line.is_empty() {
                        continue;
                    }
                    let (n, etag) = line
                        .split_once(' ')
                        .and_then(|(n, e)| Some((n.parse::<u64>().ok()?, e.to_string())))
                        .ok_or_else(|| {
                            Fail::Data(format!("{}: {line:?} is not `PART ETAG`", term::path(f)))
                        })?;
                    list.push((n, etag));
                }
            }
            t.complete(&list, &options)?;
            println!("{}: complete, {} parts", t.url, list.len());
        }
        FillCommand::Abort { token: arg } => {
            let t = token(arg)?;
            t.abort(&options)?;
            println!("{}: aborted", t.url);
        }
    }
    Ok(())
}
