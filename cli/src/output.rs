//! Terminal output: JSON, progress bars and the one-line error report.

use std::io::Write;

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

/// Prints `value` as pretty JSON on stdout.
pub fn json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    line(&serde_json::to_string_pretty(value)?);
    Ok(())
}

/// Prints `value` as compact JSON on one line of stdout and flushes it, so that a parent
/// process reading the pipe sees it at once.
pub fn json_line<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string(value)?;
    line(&text);
    flush()?;
    Ok(())
}

/// Flushes stdout.
pub fn flush() -> std::io::Result<()> {
    std::io::Write::flush(&mut std::io::stdout()).or_else(closed_pipe_ends)
}

pub use edgerag_core::answer::place;

/// Prints a line of human-readable output on stdout.
pub fn line(text: &str) {
    let mut out = std::io::stdout().lock();
    written(writeln!(out, "{text}"));
}

/// Writes text as it comes (a streamed reply) and flushes it.
pub fn stream(text: &str) {
    let mut out = std::io::stdout().lock();
    written(out.write_all(text.as_bytes()).and_then(|()| out.flush()));
}

/// The end of a write to stdout: a closed pipe ends the command quietly, any other error
/// (a full disk) with the error.
fn written(result: std::io::Result<()>) {
    if let Err(error) = result.or_else(closed_pipe_ends) {
        error_line(&anyhow::Error::new(error).context("writing to standard output"));
        std::process::exit(1);
    }
}

/// A closed standard output (`edgerag … | head`) ends the command quietly and successfully, as
/// it does for other Unix tools: whoever read the output has what they wanted. Other write
/// errors are passed on.
fn closed_pipe_ends(error: std::io::Error) -> std::io::Result<()> {
    if error.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    Err(error)
}

/// Prints a warning on stderr (above any progress bar).
pub fn warn(bar: Option<&ProgressBar>, text: &str) {
    // What a warning quotes (a walked file's name) may hold a line break.
    let line = format!("warning: {}", edgerag_core::one_line(text));
    match bar {
        Some(bar) => bar.suspend(|| to_stderr(&line)),
        None => to_stderr(&line),
    }
}

/// Prints a line of diagnostics (e.g. a request log) on stderr.
pub fn note(text: &str) {
    to_stderr(text);
}

/// Prints an error and its causes on one line of stderr.
pub fn error_line(error: &anyhow::Error) {
    to_stderr(&format!("error: {}", one_line(error)));
}

/// Writes a line on stderr. A stderr that cannot be written (closed) loses the line: nothing
/// else can be told about it, and a server must keep serving.
fn to_stderr(line: &str) {
    _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// An error and its causes, `: `-separated, each cut to its first line: candle appends a
/// backtrace to its errors when `RUST_BACKTRACE` is set, and the core passes them on in its
/// messages.
fn one_line(error: &anyhow::Error) -> String {
    let causes: Vec<String> = error
        .chain()
        .map(|cause| cause.to_string().lines().next().unwrap_or_default().to_owned())
        .collect();
    causes.join(": ")
}

/// A progress bar on stderr; hidden when `quiet` (e.g. `--json`) or when stderr is not a terminal.
pub fn progress(total: u64, what: &str, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(total);
    let style = ProgressStyle::with_template(
        "{msg:>10} [{bar:30}] {pos}/{len} {elapsed_precise} eta {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_owned());
    bar
}

#[cfg(test)]
mod tests {
    use anyhow::Context;

    use super::one_line;

    #[test]
    fn model_errors_keep_their_first_line() {
        let error = edgerag_core::Error::Model("file.gguf: broken\n   0: backtrace".to_owned());
        let error = Err::<(), _>(error).context("model file m.gguf").unwrap_err();
        assert_eq!(one_line(&error), "model file m.gguf: embedding model: file.gguf: broken");
    }
}
