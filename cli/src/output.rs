//! Terminal output: JSON, progress bars and the one-line error report.

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

/// Prints `value` as pretty JSON on stdout.
pub(crate) fn json<T: Serialize>(value: &T) -> anyhow::Result<()> {
    #[allow(clippy::print_stdout)]
    {
        println!("{}", serde_json::to_string_pretty(value)?);
    }
    Ok(())
}

/// Prints `value` as compact JSON on one line of stdout and flushes it, so that a parent
/// process reading the pipe sees it at once.
pub(crate) fn json_line<T: Serialize>(value: &T) -> anyhow::Result<()> {
    let text = serde_json::to_string(value)?;
    line(&text);
    flush()?;
    Ok(())
}

/// Flushes stdout.
pub(crate) fn flush() -> std::io::Result<()> {
    std::io::Write::flush(&mut std::io::stdout())
}

pub(crate) use edgerag_core::answer::place;

/// Prints a line of human-readable output on stdout.
#[allow(clippy::print_stdout)]
pub(crate) fn line(text: &str) {
    println!("{text}");
}

/// Prints a warning on stderr (above any progress bar).
#[allow(clippy::print_stderr)]
pub(crate) fn warn(bar: Option<&ProgressBar>, text: &str) {
    match bar {
        Some(bar) => bar.suspend(|| eprintln!("warning: {text}")),
        None => eprintln!("warning: {text}"),
    }
}

/// Prints a line of diagnostics (e.g. a request log) on stderr.
#[allow(clippy::print_stderr)]
pub(crate) fn note(text: &str) {
    eprintln!("{text}");
}

/// Prints an error and its causes on one line of stderr.
#[allow(clippy::print_stderr)]
pub(crate) fn error_line(error: &anyhow::Error) {
    eprintln!("error: {}", one_line(error));
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
pub(crate) fn progress(total: u64, what: &str, quiet: bool) -> ProgressBar {
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
