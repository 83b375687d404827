//! `ra`: the RawArray command-line tool. Argument parsing, printing and exit codes
//! only; the work is done by the `rastore` library.

mod demo;

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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Demo(args) => demo::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ra: {e}");
            ExitCode::from(1)
        }
    }
}
