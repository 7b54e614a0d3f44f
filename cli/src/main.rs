//! `edgerag`: build, inspect, search, evaluate and serve corpus bundles from the command line.

mod ask;
mod build;
mod convert;
mod embed;
mod eval;
mod flags;
mod inspect;
mod open;
mod search;
mod serve;
mod transport;

use std::process::ExitCode;

use edgerag_cli::{beir, files, indexing, models, output};

use clap::{Parser, Subcommand};

/// Retrieval over prebuilt corpus bundles, anywhere WebAssembly runs.
#[derive(Debug, Parser)]
#[command(name = "edgerag", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build a corpus bundle from files and directories (.txt, .md, .html, .pdf).
    Build(build::Args),
    /// Rewrite a bundle of format 1-3 as format 4, read by range (vectors kept as they are).
    Convert(convert::Args),
    /// Show a bundle's manifest and statistics.
    Inspect(inspect::Args),
    /// Search a bundle.
    Search(search::Args),
    /// Answer a question from a bundle, with citations (an LLM if configured, else extractive).
    Ask(ask::Args),
    /// Embed texts with the embedding model (vectors as JSON for parity checks).
    Embed(embed::Args),
    /// Evaluate retrieval quality on a judged data set.
    #[command(subcommand)]
    Eval(eval::Command),
    /// Manage the embedding model (download it into the cache, show where it is).
    #[command(subcommand)]
    Models(models::Command),
    /// Serve the demo site and bundles on 127.0.0.1 (with /edgerag.json and the embedding
    /// model) until killed.
    Serve(serve::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Build(args) => build::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Inspect(args) => inspect::run(args),
        Command::Search(args) => search::run(args),
        Command::Ask(args) => ask::run(args),
        Command::Embed(args) => embed::run(args),
        Command::Eval(command) => eval::run(command),
        Command::Models(command) => models::run(command),
        Command::Serve(args) => serve::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            output::error_line(&error);
            ExitCode::FAILURE
        }
    }
}
