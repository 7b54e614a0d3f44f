//! The dense index of format version 4 (IVF partitions read by range) against exact search,
//! on SciFact's real vectors queried with its real queries: recall@10 and what a cold query
//! reads, per number of partitions probed.

use anyhow::{Result, bail};
use edgerag_cli::models::ModelFiles;
use edgerag_cli::output;
use edgerag_core::bundle::ivf::{Ivf, IvfParams, PROBE};
use edgerag_core::bundle::paged::{InMemory, PagedFile, PagedWriter, VERSION};
use serde::Serialize;

use crate::{Latency, SEED, ready, recall, retrieval::SciFact, timed_searches};

/// Partitions probed, the default among them.
const PROBES: [u32; 5] = [4, 8, PROBE, 32, 64];
/// Slots of the lists, as builds write them.
const SLOT: u32 = 16 << 10;

#[derive(Debug, Serialize)]
pub(super) struct PartitionsReport {
    pub(super) vectors: usize,
    pub(super) queries: usize,
    pub(super) partitions: u32,
    pub(super) build_seconds: f64,
    /// Bytes of the centroids and the lists.
    pub(super) bytes: usize,
    pub(super) probes: Vec<ProbeRun>,
}

#[derive(Debug, Serialize)]
pub(super) struct ProbeRun {
    pub(super) probe: u32,
    pub(super) recall_at_10: f64,
    /// Mean ranges and bytes a query reads with an empty cache (the centroids included).
    pub(super) cold_ranges: f64,
    pub(super) cold_bytes: f64,
    /// Searches over a warm cache, in memory.
    #[serde(flatten)]
    pub(super) warm: Latency,
}

/// Writes SciFact's vectors as a v4 dense index and searches it with its judged queries,
/// embedded by `model`.
pub(super) fn measure(
    scifact: &SciFact,
    model: &ModelFiles,
    quiet: bool,
) -> Result<PartitionsReport> {
    let Some(dense) = &scifact.searcher.bundle().dense else {
        bail!("the SciFact bundle has no vectors (build it with --save-bundle and a model)")
    };
    let embedder = model.load()?;
    let texts: Vec<&str> = scifact.query_texts().collect();
    let bar = output::progress(texts.len() as u64, "embedding SciFact queries", quiet);
    let mut queries = Vec::with_capacity(texts.len());
    for text in texts {
        queries.push(embedder.embed_query(text)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let queries: Vec<&[f32]> = queries.iter().map(Vec::as_slice).collect();
    let addresses: Vec<u32> = (0..dense.len() as u32).collect();
    let start = std::time::Instant::now();
    let mut writer = PagedWriter::new();
    let ivf = Ivf::write(&mut writer, dense, &addresses, SLOT, IvfParams::default(), SEED)?;
    let build_seconds = start.elapsed().as_secs_f64();
    let bytes = writer.finish(ivf, VERSION, VERSION)?;
    let open = || ready(PagedFile::<_, Ivf>::open(InMemory(bytes.clone()), 64 << 20));
    let (exact, _) = timed_searches(&queries, |q| dense.search_exact(q, 10, |_| true))?;
    let warm = open()?;
    let mut probes = Vec::new();
    for probe in PROBES {
        let search = |file: &PagedFile<InMemory, Ivf>, q: &[f32]| {
            ready(file.body().search(file, q, 10, Some(probe), |_| true))
        };
        let (mut ranges, mut read) = (0u64, 0u64);
        for &q in &queries {
            let cold = open()?;
            let opened = cold.io();
            search(&cold, q)?;
            ranges += cold.io().requests - opened.requests;
            read += cold.io().bytes - opened.bytes;
        }
        let (found, ms) = timed_searches(&queries, |q| search(&warm, q))?;
        let n = queries.len().max(1) as f64;
        probes.push(ProbeRun {
            probe,
            recall_at_10: recall(&found, &exact),
            cold_ranges: ranges as f64 / n,
            cold_bytes: read as f64 / n,
            warm: Latency::of(&ms),
        });
    }
    Ok(PartitionsReport {
        vectors: dense.len(),
        queries: queries.len(),
        partitions: warm.body().partitions,
        build_seconds,
        bytes: bytes.len(),
        probes,
    })
}

/// The section of the Markdown report.
pub(super) fn markdown(r: &PartitionsReport) -> String {
    use crate::format::{bytes, ms, table};
    let rows: Vec<Vec<String>> = r
        .probes
        .iter()
        .map(|p| {
            vec![
                format!("{}{}", p.probe, if p.probe == PROBE { " (default)" } else { "" }),
                format!("{:.3}", p.recall_at_10),
                format!("{:.1}", p.cold_ranges),
                bytes(p.cold_bytes),
                ms(p.warm.p50_ms),
                ms(p.warm.p99_ms),
            ]
        })
        .collect();
    let header = ["probed", "recall@10", "ranges (cold)", "bytes (cold)", "p50 (warm)", "p99"];
    format!(
        "## Dense partitions of format 4 against exact search (SciFact, real queries)\n\n\
         {} int8 vectors in {} partitions (written in {:.1} s, {} with the centroids), queried \
         with SciFact's {} judged queries embedded; recall@10 is the share of the exact top \
         10 found. A cold query opens the file afresh: it reads the centroids and the lists it \
         probes, in ranges of whole 16 KB slots.\n\n{}",
        r.vectors,
        r.partitions,
        r.build_seconds,
        bytes(r.bytes as f64),
        r.queries,
        table(&header, &rows)
    )
}
