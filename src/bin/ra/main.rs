//! `ra`: the RawArray command-line tool. Argument parsing, printing and exit codes
//! only; the work is done by the `rastore` library.
//!
//! Exit codes: 0 success, 1 bad data or a difference, 2 usage error; interrupted,
//! 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP), or on Windows `STATUS_CONTROL_C_EXIT`,
//! after removing the outputs in progress ([`rastore::leftovers`]).

mod append;
mod bar;
mod commands;
mod demo;
mod dims;
mod elements;
mod extract;
mod folder;
mod hdf5;
mod input;
#[cfg(feature = "zarr")]
mod refs;
#[cfg_attr(not(feature = "s3"), path = "no_remote.rs")]
mod remote;
mod slice;
mod stats;
mod term;

use std::io;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Inspect, create and convert RawArray (.ra) files, and convert between them and NumPy
/// (.npy, .npz), PNG and Zarr (v2 and v3, local or s3://).
#[derive(Parser)]
#[command(name = "ra", version, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write a large float32 array, map it back and compute over the view, timing each step.
    Demo(demo::Args),
    /// Create a zeroed file at full size, space reserved, ready to be filled in place.
    Create(commands::CreateArgs),
    /// One line per file: type, dims, size, flags, trailer bytes.
    Info(commands::InfoArgs),
    /// The file as an NDL (Ndarray Data Language) YAML document.
    Describe(commands::FileArg),
    /// Print elements, one per line with its index, in file (column-major) order, or as JSON.
    Cat(commands::CatArgs),
    /// Count, min, max, mean, std, NaN and infinity counts, in one parallel pass.
    Stats(commands::StatsArgs),
    /// Write a sub-array (one plane of a volume, say) of any input as any output: .ra, .npy, .png, .tif or .zarr, by its name.
    Slice(extract::SliceArgs),
    /// Stack arrays of one shape and type along a new last axis, into any output: .ra, .npy, .png, .tif or .zarr, by its name.
    Stack(extract::StackArgs),
    /// Validate files completely, decoding compressed data; one line per bad file.
    Verify(commands::FilesArg),
    /// Print the metadata trailer, edit its NDL attributes, or replace it with --set.
    Meta(commands::MetaArgs),
    /// Compare two files, exactly or within --rtol/--atol: exit 0 when equal.
    Diff(commands::DiffArgs),
    /// Give a file new dims with the same element count, in column-major order (NumPy's order='F').
    Reshape(commands::ReshapeArgs),
    /// Many nodes filling one s3:// object: begin (prints the token), plan, put a part, complete, abort.
    #[cfg(feature = "s3")]
    #[command(subcommand)]
    Fill(remote::FillCommand),
    /// Append frames along the last axis, committing as it goes; the file is valid at every moment.
    Append(append::AppendArgs),
    /// Repair a file left open for appending by a crash, and say what was done.
    Recover(append::RecoverArgs),
    /// Convert between .ra, .npy, .png and Zarr: the input told by its contents, the output by its name (also .npz → a folder of .ra).
    Convert(commands::ConvertArgs),
    /// kerchunk references to a .ra read in place: every Zarr reader reads it, no copy.
    #[cfg(feature = "zarr")]
    Refs(refs::RefsArgs),
}

/// Why a command stopped.
pub enum Fail {
    /// Bad data, a failed operation or a difference: exit 1, with this message.
    Data(String),
    /// Several files reported already, some bad: exit 1, nothing more to say.
    Reported,
    /// Bad arguments (an output that exists or whose name says no format among
    /// them): exit 2.
    Usage(String),
    /// stdout was closed (e.g. `ra cat | head`): stop quietly.
    Pipe,
}

impl From<rastore::Error> for Fail {
    fn from(e: rastore::Error) -> Self {
        match e.kind() {
            rastore::ErrorKind::Io { source, .. } if source.kind() == io::ErrorKind::BrokenPipe => {
                Fail::Pipe
            }
            // What the arguments can change: an output that exists (--overwrite), an
            // output named with no format's extension.
            rastore::ErrorKind::Exists | rastore::ErrorKind::UnknownOutput => {
                Fail::Usage(message(&e))
            }
            _ => Fail::Data(message(&e)),
        }
    }
}

/// The library's message, and what to do about it in `ra`'s terms.
pub fn message(e: &rastore::Error) -> String {
    use rastore::ErrorKind;
    let hint = match e.kind() {
        ErrorKind::Exists => "; pass --overwrite to replace it",
        ErrorKind::HardLinks { .. } => "; pass --split-links to replace this name only",
        ErrorKind::NotRawArray {
            found: Some(rastore::sniff::NPY_NAME),
            ..
        } => "; this command works on .ra files: `ra convert` the .npy to .ra first",
        ErrorKind::NotRawArray { found: Some(f), .. }
            if rastore::sniff::support(f) == rastore::sniff::Support::Read =>
        {
            "; the read commands take .ra, .npy, NIfTI, TIFF, safetensors and NetCDF-3 files, and `ra convert` \
             turns .png, .npz and Zarr arrays into .ra"
        }
        // No format rastore reads: the message lists those it does.
        ErrorKind::NotRawArray { .. } => "; `ra convert` converts between them",
        _ => "",
    };
    format!("{e}{hint}")
}

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Fail::Pipe
        } else {
            Fail::Data(format!("output: {e}"))
        }
    }
}

/// What a command returns.
pub type Outcome = Result<(), Fail>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // An interrupted `ra` removes what it was writing; without the handler, it would
    // end as before (nothing worse), so a failure to install it is only said.
    if let Err(e) = rastore::leftovers::exit_on_interrupt() {
        eprintln!("ra: {}", term::line(&message(&e)));
    }
    let result = match cli.command {
        Command::Demo(a) => demo::run(&a),
        Command::Create(a) => commands::create(&a),
        Command::Info(a) => commands::info(&a),
        Command::Describe(a) => commands::describe(&a),
        Command::Cat(a) => commands::cat(&a),
        Command::Stats(a) => commands::stats(&a),
        Command::Slice(a) => extract::slice(&a),
        Command::Stack(a) => extract::stack(&a),
        Command::Verify(a) => commands::verify(&a),
        Command::Meta(a) => commands::meta(&a),
        Command::Diff(a) => commands::diff(&a),
        Command::Reshape(a) => commands::reshape(&a),
        Command::Convert(a) => commands::convert(&a),
        Command::Append(a) => append::append(&a),
        #[cfg(feature = "s3")]
        Command::Fill(c) => remote::fill(&c),
        Command::Recover(a) => append::recover(&a),
        #[cfg(feature = "zarr")]
        Command::Refs(a) => refs::refs(&a),
    };
    match result {
        Ok(()) | Err(Fail::Pipe) => ExitCode::SUCCESS,
        Err(Fail::Reported) => ExitCode::from(1),
        Err(Fail::Data(msg)) => {
            eprintln!("ra: {}", term::line(&msg));
            ExitCode::from(1)
        }
        Err(Fail::Usage(msg)) => {
            eprintln!("ra: {}", term::line(&msg));
            ExitCode::from(2)
        }
    }
}
