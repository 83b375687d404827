//! `ra`: the RawArray command-line tool. Argument parsing, printing and exit codes
//! only; the work is done by the `rastore` library.

mod demo;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Inspect, create and convert RawArray (.ra) files.
#[derive(Parser)]
#[command(name = "ra", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a large float32 array, map it back and compute over the view, timing each step.
    Demo(demo::Args),
    /// Create a zeroed file at full size, space reserved, ready to be filled in place.
    Create(CreateArgs),
}

#[derive(clap::Args)]
struct CreateArgs {
    /// The file to create.
    file: PathBuf,
    /// Element type: a name (float32, int16, complex64, user<12>) or a short code (f32, i16, c64).
    #[arg(long)]
    dtype: rastore::DType,
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

fn create(args: &CreateArgs) -> rastore::Result<()> {
    let metadata = match &args.metadata {
        Some(p) => std::fs::read(p).map_err(|source| {
            rastore::Error::from(rastore::ErrorKind::Io { op: "read", source }).at(p)
        })?,
        None => Vec::new(),
    };
    let h = rastore::CreateOptions::new()
        .overwrite(args.overwrite)
        .metadata(metadata)
        .create_file(&args.file, args.dtype, &args.shape)?;
    println!(
        "{}: {} {:?}, {} data bytes reserved",
        args.file.display(),
        h.dtype(),
        h.dims(),
        h.size()
    );
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
        Command::Create(args) => create(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ra: {e}");
            ExitCode::from(1)
        }
    }
}
