//! The Markdown report: every section rendered from the run's [`Report`], nothing typed by
//! hand, ratios computed from numbers of the same run.

use std::fmt::Write as _;

use serde::Serialize;

use crate::{Report, script};

/// The machine and software a run measured on.
#[derive(Debug, Serialize)]
pub(super) struct Machine {
    /// UTC date of the run (YYYY-MM-DD).
    date: String,
    os: &'static str,
    arch: &'static str,
    cpu: String,
    cpus: usize,
    memory_bytes: u64,
    /// One-minute load average when the run started (other work skews timings).
    load_average: f64,
    node: String,
    python: String,
}

impl Machine {
    /// The machine now (Linux facts from /proc; empty or 0 elsewhere).
    pub(super) fn now() -> Self {
        Self {
            date: today(),
            os: std::env::consts::OS,
            arch: std::env::consts::ARCH,
            cpu: proc_field("/proc/cpuinfo", "model name").unwrap_or_default(),
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            memory_bytes: proc_bytes("/proc/meminfo", "MemTotal"),
            load_average: std::fs::read_to_string("/proc/loadavg")
                .unwrap_or_default()
                .split_whitespace()
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0),
            node: script::version("node"),
            python: script::version("python3"),
        }
    }
}

/// The value of `key` in a `key: value` file of /proc (Linux).
fn proc_field(file: &str, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.trim_start().strip_prefix(':'))
        .map(|v| v.trim().to_owned())
}

/// A `key: N kB` value of a /proc file, in bytes (0 where there is none, as off Linux).
pub(super) fn proc_bytes(file: &str, key: &str) -> u64 {
    proc_field(file, key)
        .and_then(|kib| kib.trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// Today's UTC date as YYYY-MM-DD.
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    // Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm).
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

/// The whole report as Markdown.
pub(super) fn markdown(report: &Report) -> String {
    let m = &report.machine;
    let mut out = String::from("# edgerag benchmarks\n\n");
    let _ = writeln!(
        out,
        "Written by `edgerag-bench` (`make bench` regenerates it, with [benchmarks.json](benchmarks.json)); \
         every number is from the one run described here, and every ratio compares numbers of that run.\n"
    );
    let _ = writeln!(out, "- **Date**: {} · edgerag {}", m.date, report.edgerag);
    let _ = writeln!(
        out,
        "- **Machine**: {} ({} cpus, {:.0} GiB, {} {}), load average {:.2} at the start",
        m.cpu,
        m.cpus,
        m.memory_bytes as f64 / f64::from(1 << 30),
        m.os,
        m.arch,
        m.load_average
    );
    let _ = writeln!(
        out,
        "- **Node** {} · **Python** {}",
        m.node,
        m.python.trim_start_matches("Python ")
    );
    let _ = writeln!(out, "- **Command**: `{}`\n", report.command);
    for section in [
        report.embedding.as_ref().map(crate::embedding::markdown),
        report.retrieval.as_ref().map(crate::retrieval::markdown),
        (!report.real_vectors.is_empty()).then(|| crate::recall::markdown(&report.real_vectors)),
        (!report.search.is_empty()).then(|| crate::scale::markdown(&report.search)),
        (!report.bundles.is_empty())
            .then(|| crate::scale::bytes_markdown(&report.bundles, &report.search)),
        report.cold_start.as_ref().map(crate::cold_start::markdown),
        report.generation.as_ref().map(crate::chat::markdown),
    ]
    .into_iter()
    .flatten()
    {
        out.push_str(&section);
        out.push('\n');
    }
    out
}

/// A Markdown table.
pub(super) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out
}

/// Milliseconds with a precision that suits their size.
pub(super) fn ms(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0} ms")
    } else if value >= 10.0 {
        format!("{value:.1} ms")
    } else {
        format!("{value:.2} ms")
    }
}

/// `n` with a comma between groups of three digits, as the README writes sizes.
pub(super) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() * 4 / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Bytes in MiB (or KiB when small).
pub(super) fn bytes(value: f64) -> String {
    if value >= f64::from(1 << 20) {
        format!("{:.1} MiB", value / f64::from(1 << 20))
    } else if value >= 1024.0 {
        format!("{:.1} KiB", value / 1024.0)
    } else {
        format!("{value:.0} B")
    }
}

/// `a / b` as "1.23×" ("–" when undefined).
pub(super) fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() { format!("{:.2}×", a / b) } else { "–".to_owned() }
}

/// The median of `values` (0 when empty).
pub(super) fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let values: Vec<f64> = values.into_iter().collect();
    crate::percentile(&values, 0.5)
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_groups_three_digits() {
        let cases = [(0, "0"), (999, "999"), (1_000, "1,000"), (6_155_677, "6,155,677")];
        for (n, written) in cases {
            assert_eq!(super::thousands(n), written);
        }
    }
}
