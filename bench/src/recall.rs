//! HNSW (instant-distance) against exact search on a bundle's real vectors: an index over all
//! but `queries` of them (forced to HNSW whatever its size), queried with the held-out ones.

use std::time::Instant;

use anyhow::{Result, bail};
use edgerag_cli::output;
use edgerag_core::Bundle;
use edgerag_core::index::dense::{DenseIndex, DenseParams};
use serde::Serialize;

use crate::{Latency, SEED, recall, timed_searches};

/// The HNSW beam widths whose recall is reported.
const EF_SEARCH: [usize; 4] = [32, 64, 128, 256];

#[derive(Debug, Serialize)]
pub(super) struct RecallReport {
    pub(super) bundle: String,
    /// Vectors indexed (the rest of the bundle's vectors are the queries).
    pub(super) vectors: usize,
    pub(super) dimension: usize,
    pub(super) queries: usize,
    pub(super) build_seconds: f64,
    /// Exact (brute-force) search.
    pub(super) exact: Latency,
    pub(super) hnsw: Vec<RecallAt>,
}

#[derive(Debug, Serialize)]
pub(super) struct RecallAt {
    pub(super) ef_search: usize,
    pub(super) recall_at_10: f64,
    #[serde(flatten)]
    pub(super) latency: Latency,
}

/// Measures recall@10 and speed of HNSW against exact search on `bundle`'s vectors.
pub(super) fn measure(
    name: &str,
    bundle: &Bundle,
    queries: usize,
    quiet: bool,
) -> Result<RecallReport> {
    let Some(dense) = &bundle.dense else { bail!("{name}: the bundle has no vectors") };
    let dim = dense.dimension();
    let all: Vec<f32> = (0..dense.len() as u32).filter_map(|c| dense.vector(c)).flatten().collect();
    let held_out = queries.min(dense.len() / 10);
    if held_out == 0 {
        bail!("{name}: too few vectors ({}) to measure recall", dense.len());
    }
    let (indexed, query_rows) = all.split_at(all.len() - held_out * dim);
    let bar = output::progress(1, "HNSW build", quiet);
    let start = Instant::now();
    let params = DenseParams { exact_below: 0, ..dense.params() };
    let mut index = DenseIndex::build(indexed, dim, params, SEED)?;
    let build_seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let queries: Vec<&[f32]> = query_rows.chunks_exact(dim).collect();
    let (exact, exact_ms) = timed_searches(&queries, |q| index.search_exact(q, 10, |_| true))?;
    let mut hnsw = Vec::new();
    for ef_search in EF_SEARCH {
        index.set_ef_search(ef_search);
        let (found, ms) = timed_searches(&queries, |q| index.search(q, 10, |_| true))?;
        hnsw.push(RecallAt {
            ef_search,
            recall_at_10: recall(&found, &exact),
            latency: Latency::of(&ms),
        });
    }
    Ok(RecallReport {
        bundle: name.to_owned(),
        vectors: index.len(),
        dimension: dim,
        queries: queries.len(),
        build_seconds,
        exact: Latency::of(&exact_ms),
        hnsw,
    })
}

/// The section of the Markdown report.
pub(super) fn markdown(reports: &[RecallReport]) -> String {
    use crate::format::{ms, ratio, table};
    let mut out = String::from("## HNSW against exact search (real vectors)\n");
    for r in reports {
        let row = |name: String, recall: f64, l: &Latency| {
            vec![
                name,
                format!("{recall:.3}"),
                ms(l.p50_ms),
                ms(l.p99_ms),
                format!("{:.0}", l.queries_per_second),
                ratio(l.queries_per_second, r.exact.queries_per_second),
            ]
        };
        let mut rows = vec![row("exact (brute force)".to_owned(), 1.0, &r.exact)];
        for h in &r.hnsw {
            rows.push(row(format!("HNSW, ef_search {}", h.ef_search), h.recall_at_10, &h.latency));
        }
        out.push_str(&format!(
            "\n{}: {} vectors of {} dimensions indexed (HNSW built in {:.1} s), queried with {} \
             held-out ones; recall@10 is the share of the exact top 10 found.\n\n",
            r.bundle, r.vectors, r.dimension, r.build_seconds, r.queries
        ));
        let header = ["search", "recall@10", "p50", "p99", "queries/s", "speed-up over exact"];
        out.push_str(&table(&header, &rows));
    }
    out
}
