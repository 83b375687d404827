//! `ra append` (frames onto a growing file, from files or stdin) and `ra recover`
//! (the repair after a crash while appending).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rastore::{AppendOptions, Appender, DType};

use crate::dims::Dims;
use crate::extract::{engine_input, load};
use crate::folder::no_folder;
use crate::{term, Fail, Outcome};

#[derive(clap::Args)]
pub struct AppendArgs {
    /// The file to grow along its last axis; created when missing.
    file: PathBuf,
    /// Inputs (.ra, .npy, .png), each one frame, or k frames when its last extent is k;
    /// or `-` for raw column-major frames from stdin.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Commit (make visible, and durable) every N frames; the rest at the end.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    commit_every: u64,
    /// With `-` and no FILE yet: the element type of the frames.
    #[arg(long, requires = "frame")]
    dtype: Option<DType>,
    /// With `-` and no FILE yet: the frame's dims, first fastest, comma-separated.
    #[arg(long, allow_hyphen_values = true, requires = "dtype")]
    frame: Option<Dims>,
    /// Commit without syncing to disk: visible at once and safe from a crash of this
    /// process, not from a power loss.
    #[arg(long)]
    no_sync: bool,
}

#[derive(clap::Args)]
pub struct RecoverArgs {
    /// Files left open for appending by a crash.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

/// Commits when `every` frames are pending.
fn maybe_commit(out: &mut Appender, every: u64) -> rastore::Result<()> {
    if out.pending() >= every {
        out.commit()?;
    }
    Ok(())
}

pub fn append(a: &AppendArgs) -> Outcome {
    let options = AppendOptions::new().durable(!a.no_sync);
    no_folder(
        &a.file,
        "append",
        "one .ra file to grow (created when missing)",
    )?;
    let stdin = a.inputs.iter().any(|p| p.as_os_str() == "-");
    if stdin && a.inputs.len() > 1 {
        return Err(Fail::Usage("`-` (stdin) must be the only input".into()));
    }
    let (out, before) = if stdin {
        let mut out = match (&a.dtype, &a.frame) {
            (Some(t), Some(f)) => options.open_or_create(&a.file, *t, &f.0)?,
            _ if !a.file.exists() => {
                return Err(Fail::Usage(format!(
                    "{} does not exist: give --dtype and --frame to create it",
                    term::path(&a.file)
                )))
            }
            _ => options.open(&a.file)?,
        };
        let before = out.frames();
        from_stdin(&mut out, a.commit_every)?;
        (out, before)
    } else {
        let mut out: Option<(Appender, u64)> = None;
        for input in &a.inputs {
            engine_input(input, "append")?;
            let (dtype, dims, bytes) = load(input)?;
            let o = match &mut out {
                Some((o, _)) => o,
                None => {
                    let o = options.open_or_create(&a.file, dtype, &dims)?;
                    let before = o.frames();
                    &mut out.insert((o, before)).0
                }
            };
            frames_of(o, dtype, &dims, &bytes).map_err(|e| {
                Fail::Data(format!(
                    "{}: {}",
                    term::path(input),
                    term::line(&crate::message(&e))
                ))
            })?;
            maybe_commit(o, a.commit_every)?;
        }
        match out {
            Some(o) => o,
            None => return Err(Fail::Usage("no inputs".into())),
        }
    };
    let added = out.frames() + out.pending() - before;
    let h = out.finish()?;
    println!(
        "{}: appended {added} frames; {} {:?}",
        term::path(&a.file),
        h.dtype(),
        h.dims()
    );
    Ok(())
}

/// Appends an input's column-major bytes of `dims`: one frame, or frames along its
/// last axis.
fn frames_of(out: &mut Appender, dtype: DType, dims: &[u64], bytes: &[u8]) -> rastore::Result<u64> {
    out.frames_in(dtype, dims)?;
    out.append_bytes(bytes)
}

fn from_stdin(out: &mut Appender, every: u64) -> Outcome {
    let frame = rastore::checked_bytes(out.dtype().elbyte, out.frame_dims()).unwrap_or(u64::MAX);
    if frame == 0 {
        return Err(Fail::Usage(
            "frames of 0 bytes cannot be read from stdin".into(),
        ));
    }
    // Read up to about 8 MiB of whole frames at a time.
    let want = ((8 << 20) / frame).clamp(1, every) * frame;
    let mut buf = Vec::with_capacity(want as usize);
    let mut stdin = io::stdin().lock();
    loop {
        buf.clear();
        // Until the batch is full or input ends (`take` + `read_to_end` retry
        // interrupted reads).
        let got = (&mut stdin).take(want).read_to_end(&mut buf)?;
        let whole = got - got % frame as usize;
        if whole > 0 {
            out.append_bytes(&buf[..whole])?;
            maybe_commit(out, every)?;
        }
        if (got as u64) < want {
            if got > whole {
                out.commit()?;
                return Err(Fail::Data(format!(
                    "stdin ended inside a frame: {} bytes of a {frame}-byte frame were not appended; \
                     {} frames are committed",
                    got - whole,
                    out.frames()
                )));
            }
            return Ok(());
        }
    }
}

pub fn recover(a: &RecoverArgs) -> Outcome {
    let mut bad = false;
    for p in &a.files {
        if let Err(Fail::Data(m)) = no_folder(p, "recover", ".ra files") {
            bad = true;
            eprintln!("ra: {}", term::line(&m));
            continue;
        }
        match rastore::recover(p) {
            Ok(r) => println!("{}", recovery_line(p, &r)),
            Err(e) => {
                bad = true;
                eprintln!("ra: {}", term::line(&crate::message(&e)));
            }
        }
    }
    if bad {
        Err(Fail::Reported)
    } else {
        Ok(())
    }
}

fn recovery_line(p: &Path, r: &rastore::Recovery) -> String {
    let name = term::path(p);
    if !r.repaired {
        let stale = if r.stale_sidecar_removed {
            format!(
                "; removed a stale {} (the file's trailer is intact)",
                term::path(&rastore::trailer_sidecar(p))
            )
        } else {
            String::new()
        };
        return format!("{name}: nothing to repair ({} frames){stale}", r.frames);
    }
    let trailer = if r.trailer_restored > 0 {
        format!("restored the {}-byte trailer", r.trailer_restored)
    } else {
        "no trailer".to_string()
    };
    format!(
        "{name}: repaired: {} frames committed; dropped {} uncommitted bytes; {trailer}; appending flag cleared",
        r.frames, r.dropped_bytes
    )
}
