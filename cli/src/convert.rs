//! `edgerag convert`: a bundle of an older format rewritten as format 4, read by range, its
//! vectors kept as they are (nothing is embedded again).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use edgerag_cli::source;
use edgerag_core::bundle::lazy::{self, Layout, SectionSummary};
use edgerag_core::{Bundle, Error};
use serde::Serialize;

use crate::inspect::print_sections;
use crate::{files, output};

/// Arguments of `edgerag convert`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The bundle to convert (format 1, 2 or 3).
    input: PathBuf,
    /// Where to write the bundle of format 4.
    output: PathBuf,
    /// Print a JSON summary instead of text.
    #[arg(long)]
    json: bool,
}

/// What a conversion wrote.
#[derive(Debug, Serialize)]
struct Summary<'a> {
    bundle: String,
    /// Format of the input.
    from_format: u16,
    /// Bytes of the input.
    input_bytes: u64,
    /// Bytes written.
    bytes: u64,
    /// Bytes a reader fetches on opening it (the header and directory, in one read).
    open_bytes: u64,
    sections: Vec<SectionSummary<'a>>,
    seconds: f64,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let started = Instant::now();
    let input = files::read(&args.input)?;
    let bundle = match Bundle::from_bytes(&input) {
        Err(Error::ReadByRange) => bail!("{}: already a bundle of format 4", args.input.display()),
        bundle => bundle.with_context(|| args.input.display().to_string())?,
    };
    let bytes = bundle.to_paged_bytes(&Layout::default()).context("convert")?;
    files::write_atomic(&args.output, &bytes)?;
    // The summary is what a reader finds on opening what was written.
    let output = args.output.display().to_string();
    let written = source::open_lazy(&output).with_context(|| output.clone())?;
    let summary = Summary {
        bundle: output,
        // The header, which the input has since it decoded.
        from_format: u16::from_le_bytes([input[8], input[9]]),
        input_bytes: input.len() as u64,
        bytes: bytes.len() as u64,
        open_bytes: written.io().bytes,
        sections: lazy::sections(written.bundle()),
        seconds: started.elapsed().as_secs_f64(),
    };
    if args.json {
        return output::json(&summary);
    }
    output::line(&format!(
        "wrote {} ({} bytes, format 4, from format {} of {} bytes) in {:.1}s; opening it reads {} bytes",
        summary.bundle,
        summary.bytes,
        summary.from_format,
        summary.input_bytes,
        summary.seconds,
        summary.open_bytes
    ));
    print_sections(&summary.sections);
    Ok(())
}
