//! The keyword graph of format version 4 (sections read by range) against the graph in memory,
//! on SciFact with its real queries: whether graph retrieval finds the same, and what a cold
//! search reads.

use anyhow::Result;
use edgerag_core::bundle::graph::PagedGraph;
use edgerag_core::bundle::paged::{InMemory, PagedFile, PagedWriter, VERSION};
use edgerag_core::graph::{GraphIndex, GraphSearch};
use edgerag_core::index::Scored;
use edgerag_core::text::Analyzer;
use serde::Serialize;

use crate::{ColdReads, Latency, ready, retrieval::SciFact, timed_searches};

/// Slots of the graph's sections: a search reads about a third of the bytes it reads in
/// slots of 16 KB (SciFact: 262 KB against 814 KB), in a few more ranges (49 against 41).
const SLOT: u32 = 4 << 10;

#[derive(Debug, Serialize)]
pub(super) struct GraphIoReport {
    pub(super) chunks: usize,
    pub(super) keywords: usize,
    pub(super) queries: usize,
    /// Bytes of each section.
    pub(super) sections: Vec<(String, u64)>,
    /// Queries whose ten results (chunks and scores) are those of the graph in memory.
    pub(super) identical: usize,
    /// What a search reads with an empty cache.
    #[serde(flatten)]
    pub(super) cold: ColdReads,
    /// Searches over a warm cache, and over the graph in memory.
    pub(super) warm: Latency,
    pub(super) in_memory: Latency,
}

/// Writes SciFact's keyword graph in the sections of format 4 and searches it with SciFact's
/// judged queries, cold and warm, against the graph in memory.
pub(super) fn measure(scifact: &SciFact) -> Result<GraphIoReport> {
    let bundle = scifact.searcher.bundle();
    let index = GraphIndex::new(&bundle.graph, &bundle.chunks, bundle.documents.len());
    let addresses: Vec<u32> = (0..bundle.chunks.len() as u32).collect();
    let mut writer = PagedWriter::new();
    let graph = PagedGraph::write(&mut writer, &index, &bundle.graph, &addresses, SLOT)?;
    let bytes = writer.finish(graph, VERSION, VERSION)?;
    let open = || ready(PagedFile::<_, PagedGraph>::open(InMemory(bytes.clone()), 64 << 20));
    let (analyzer, options) = (Analyzer::new(), GraphSearch::default());
    let queries: Vec<&str> = scifact.query_texts().collect();
    let scored = |hits: Vec<edgerag_core::graph::GraphHit>| -> Vec<Scored> {
        hits.into_iter().map(|h| Scored { chunk: h.chunk, score: h.score }).collect()
    };
    let search = |file: &PagedFile<InMemory, PagedGraph>, q: &str| {
        ready(file.body().search(file, q, &analyzer, 10, &options, &|_| true)).map(scored)
    };
    let mut reads = Vec::new();
    for &q in &queries {
        let cold = open()?;
        let opened = cold.io();
        search(&cold, q)?;
        reads.push(cold.io() - opened);
    }
    let warm = open()?;
    let (found, warm_ms) = timed_searches(&queries, |q| search(&warm, q))?;
    let (expected, memory_ms) = timed_searches(&queries, |q| {
        Ok(scored(index.search(&bundle.graph, q, &analyzer, 10, &options, &|_| true)))
    })?;
    let sections = warm.sections().iter().map(|s| (s.name.clone(), s.len())).collect();
    Ok(GraphIoReport {
        chunks: bundle.chunks.len(),
        keywords: bundle.graph.keywords.len(),
        queries: queries.len(),
        sections,
        identical: found.iter().zip(&expected).filter(|(a, b)| a == b).count(),
        cold: ColdReads::of(&reads),
        warm: Latency::of(&warm_ms),
        in_memory: Latency::of(&memory_ms),
    })
}

/// The section of the Markdown report.
pub(super) fn markdown(r: &GraphIoReport) -> String {
    use crate::format::{bytes, ms, table};
    let sections: Vec<String> =
        r.sections.iter().map(|(name, len)| format!("{name} {}", bytes(*len as f64))).collect();
    let rows = vec![
        vec![
            "cold".to_owned(),
            r.cold.ranges(),
            format!("{} (max {})", bytes(r.cold.cold_bytes), bytes(r.cold.cold_bytes_max as f64)),
            ms(r.warm.p50_ms),
            ms(r.warm.p99_ms),
        ],
        vec![
            "in memory".to_owned(),
            "–".to_owned(),
            "–".to_owned(),
            ms(r.in_memory.p50_ms),
            ms(r.in_memory.p99_ms),
        ],
    ];
    let header = ["graph", "ranges in round trips (cold)", "bytes (cold)", "p50 (warm)", "p99"];
    format!(
        "## Keyword graph of format 4 against the graph in memory (SciFact, real queries)\n\n\
         {} chunks, {} keywords, in 4 KB slots: {}. Graph retrieval (default settings, top \
         10) for SciFact's {} judged queries gives the results of the graph in memory for {} \
         of them. A cold search opens the file afresh and reads whole slots.\n\n{}",
        r.chunks,
        r.keywords,
        sections.join(", "),
        r.queries,
        r.identical,
        table(&header, &rows)
    )
}
