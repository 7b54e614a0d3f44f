//! A whole bundle of format version 4 (read by range) against the same bundle in memory, on
//! SciFact with its real queries: whether each mode finds the same, and what a cold query
//! reads.

use anyhow::Result;
use edgerag_core::bundle::lazy::{DEFAULT_BUDGET, Layout};
use edgerag_core::bundle::paged::InMemory;
use edgerag_core::query::{Filter, LazySearcher};
use edgerag_core::{Hit, Mode, SearchOptions};
use serde::Serialize;

use crate::{ColdReads, Latency, cold_searches, ready, retrieval::SciFact, timed_searches};

#[derive(Debug, Serialize)]
pub(super) struct LazyReport {
    pub(super) chunks: usize,
    pub(super) queries: usize,
    /// Bytes of the bundle in format 3 and in format 4.
    pub(super) v3_bytes: usize,
    pub(super) v4_bytes: usize,
    /// Bytes read to open it.
    pub(super) open_bytes: u64,
    pub(super) modes: Vec<ModeReport>,
}

/// One mode's queries.
#[derive(Debug, Serialize)]
pub(super) struct ModeReport {
    pub(super) mode: Mode,
    /// Whether each query searched within one document (that of its best chunk in memory).
    pub(super) filtered: bool,
    /// Queries whose ten results (chunk ids and scores) are those of the bundle in memory.
    pub(super) identical: usize,
    /// What a query reads with an empty cache, opening excluded.
    #[serde(flatten)]
    pub(super) cold: ColdReads,
    /// Queries over a warm cache, and over the bundle in memory (results shown included).
    pub(super) warm: Latency,
    pub(super) in_memory: Latency,
}

/// Converts SciFact's bundle to format 4 and runs its judged queries in each mode that needs
/// no model, cold and warm, against the bundle in memory.
pub(super) fn measure(scifact: &SciFact) -> Result<LazyReport> {
    let bundle = scifact.searcher.bundle();
    let bytes = bundle.to_paged_bytes(&Layout::default())?;
    let open = || Ok(ready(LazySearcher::open(InMemory(bytes.clone()), DEFAULT_BUDGET))?);
    let queries: Vec<&str> = scifact.query_texts().collect();
    let shown = |hits: Vec<Hit>| -> Vec<(String, f32)> {
        hits.into_iter().map(|hit| (hit.chunk_id, hit.score)).collect()
    };
    // A search within one document: the document of the query's best chunk in memory.
    let within = |q: &str| -> Result<Filter> {
        let options = SearchOptions { mode: Mode::Hybrid, k: 1, ..SearchOptions::default() };
        let documents = scifact.searcher.search(q, &options)?.into_iter().map(|h| h.document);
        Ok(Filter { documents: documents.collect(), ..Filter::default() })
    };
    let filters: Vec<Filter> = queries.iter().map(|q| within(q)).collect::<Result<_>>()?;
    let mut modes = Vec::new();
    for (mode, filtered) in
        [(Mode::Bm25, false), (Mode::Graph, false), (Mode::Hybrid, false), (Mode::Hybrid, true)]
    {
        let options: Vec<SearchOptions> = filters
            .iter()
            .map(|filter| {
                let filter = if filtered { filter.clone() } else { Filter::default() };
                SearchOptions { mode, filter, ..SearchOptions::default() }
            })
            .collect();
        let runs: Vec<(&str, &SearchOptions)> = queries.iter().copied().zip(&options).collect();
        let (reads, _) = cold_searches(&open, &runs, &|| {})?;
        let warm = open()?;
        let (found, warm_ms) = timed_searches(&runs, |(q, o)| ready(warm.search(q, o)).map(shown))?;
        let (expected, memory_ms) =
            timed_searches(&runs, |(q, o)| scifact.searcher.search(q, o).map(shown))?;
        modes.push(ModeReport {
            mode,
            filtered,
            identical: found.iter().zip(&expected).filter(|(a, b)| a == b).count(),
            cold: reads,
            warm: Latency::of(&warm_ms),
            in_memory: Latency::of(&memory_ms),
        });
    }
    Ok(LazyReport {
        chunks: bundle.chunks.len(),
        queries: queries.len(),
        v3_bytes: scifact.bundle_bytes,
        v4_bytes: bytes.len(),
        open_bytes: open()?.io().bytes,
        modes,
    })
}

/// The section of the Markdown report.
pub(super) fn markdown(r: &LazyReport) -> String {
    use crate::format::{bytes, ms, table};
    let rows: Vec<Vec<String>> = r
        .modes
        .iter()
        .map(|m| {
            vec![
                if m.filtered {
                    format!("{}, in one document", m.mode)
                } else {
                    m.mode.to_string()
                },
                format!("{} / {}", m.identical, r.queries),
                m.cold.ranges(),
                format!(
                    "{} (max {})",
                    bytes(m.cold.cold_bytes),
                    bytes(m.cold.cold_bytes_max as f64)
                ),
                format!("{} / {}", ms(m.warm.p50_ms), ms(m.warm.p99_ms)),
                format!("{} / {}", ms(m.in_memory.p50_ms), ms(m.in_memory.p99_ms)),
            ]
        })
        .collect();
    let header = [
        "mode",
        "identical",
        "ranges in round trips (cold)",
        "bytes (cold)",
        "p50 / p99 (warm)",
        "in memory",
    ];
    format!(
        "## Bundle of format 4 against the bundle in memory (SciFact, real queries)\n\n\
         SciFact's bundle ({} chunks, {} in format 3) converted to format 4 ({}, default \
         layout); opening it reads {}. Each of the {} judged queries runs cold (the bundle \
         opened afresh; what opening reads is left out) and warm, top 10, results shown \
         (texts read); *identical* counts the queries whose ten chunks and scores are those \
         of the bundle in memory. Modes that need no model (dense retrieval by range: the \
         partitions section); *in one document* filters each query to the document of its \
         best chunk in memory, which reads the filter table.\n\n{}",
        r.chunks,
        bytes(r.v3_bytes as f64),
        bytes(r.v4_bytes as f64),
        bytes(r.open_bytes as f64),
        r.queries,
        table(&header, &rows)
    )
}
