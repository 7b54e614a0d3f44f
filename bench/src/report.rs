//! The Markdown report: every section rendered from the run's [`Report`], nothing typed by
//! hand, ratios computed from numbers of the same run.

use std::fmt::Write as _;

use crate::Report;

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
        report.partitions.as_ref().map(crate::partitions::markdown),
        report.graph_io.as_ref().map(crate::graph_io::markdown),
        report.lazy.as_ref().map(crate::lazy::markdown),
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
