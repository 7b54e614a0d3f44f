//! The dense index of format version 4 (IVF partitions read by range) against exact search,
//! on SciFact's real vectors queried with its real queries: recall@10 and what a cold query
//! reads, per number of partitions probed; and, at partitions small enough that there are
//! more than [`FLAT_UP_TO`], partitions grouped in two levels against one.

use anyhow::{Result, bail};
use edgerag_cli::models::ModelFiles;
use edgerag_cli::output;
use edgerag_core::bundle::ivf::{FLAT_UP_TO, Ivf, IvfParams, MIN_RESCORED, PROBE, REACH, RESCORE};
use edgerag_core::bundle::paged::{InMemory, PagedFile, PagedWriter, VERSION};
use serde::Serialize;

use crate::{Latency, SEED, ready, recall, retrieval::SciFact, timed_searches};

/// Partitions probed; `None`, the default: those within reach of the query ([`REACH`]).
const PROBES: [Option<u32>; 6] = [Some(4), Some(8), Some(PROBE), Some(32), Some(64), None];
/// Vectors a partition where one level and two are compared: SciFact then has more than
/// [`FLAT_UP_TO`] partitions.
const SMALL: usize = 32;
/// Partitions probed where one level and two are compared.
const SMALL_PROBES: [Option<u32>; 5] = [Some(16), Some(32), Some(64), Some(128), None];
/// Slots of the lists, as builds write them.
const SLOT: u32 = 16 << 10;

#[derive(Debug, Serialize)]
pub(super) struct PartitionsReport {
    pub(super) vectors: usize,
    pub(super) queries: usize,
    /// The index as builds write it: coded lists, rows apart.
    pub(super) default: IndexRun,
    /// The same with its rows in its lists.
    pub(super) rows: IndexRun,
    /// Partitions of about [`SMALL`] vectors in one level, then in two.
    pub(super) one_level: IndexRun,
    pub(super) two_levels: IndexRun,
}

#[derive(Debug, Serialize)]
pub(super) struct IndexRun {
    pub(super) partitions: u32,
    pub(super) build_seconds: f64,
    /// Bytes of the centroids (and their groups) and the lists.
    pub(super) bytes: usize,
    pub(super) probes: Vec<ProbeRun>,
}

#[derive(Debug, Serialize)]
pub(super) struct ProbeRun {
    /// Partitions probed; `None`: the default, those within reach of the query.
    pub(super) probe: Option<u32>,
    pub(super) recall_at_10: f64,
    /// Mean ranges and bytes a query for 10 reads with an empty cache (the centroids
    /// included).
    pub(super) cold_ranges: f64,
    pub(super) cold_bytes: f64,
    /// The same for a query for 100 (as hybrid search asks): its recall of the exact 100,
    /// and what it reads.
    pub(super) recall_at_100: f64,
    pub(super) cold_bytes_at_100: f64,
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
    let (exact, _) = timed_searches(&queries, |q| dense.search_exact(q, 10, |_| true))?;
    let (exact_100, _) = timed_searches(&queries, |q| dense.search_exact(q, 100, |_| true))?;
    let run = |params: IvfParams, probes: &[Option<u32>]| -> Result<IndexRun> {
        let addresses: Vec<u32> = (0..dense.len() as u32).collect();
        let start = std::time::Instant::now();
        let mut writer = PagedWriter::new();
        let ivf = Ivf::write(&mut writer, dense, &addresses, SLOT, params, SEED)?;
        let build_seconds = start.elapsed().as_secs_f64();
        let bytes = writer.finish(ivf, VERSION, VERSION)?;
        let open = || ready(PagedFile::<_, Ivf>::open(InMemory(bytes.clone()), 64 << 20));
        let warm = open()?;
        let mut runs = Vec::new();
        for &probe in probes {
            let search = |file: &PagedFile<InMemory, Ivf>, q: &[f32], k| {
                ready(file.body().search(file, q, k, probe, |_| true))
            };
            let (mut ranges, mut read, mut read_100) = (0u64, 0u64, 0u64);
            let mut found_100 = Vec::with_capacity(queries.len());
            for &q in &queries {
                let cold = open()?;
                let opened = cold.io();
                search(&cold, q, 10)?;
                ranges += cold.io().requests - opened.requests;
                read += cold.io().bytes - opened.bytes;
                let cold = open()?;
                let opened = cold.io();
                found_100.push(search(&cold, q, 100)?);
                read_100 += cold.io().bytes - opened.bytes;
            }
            let (found, ms) = timed_searches(&queries, |q| search(&warm, q, 10))?;
            let n = queries.len().max(1) as f64;
            runs.push(ProbeRun {
                probe,
                recall_at_10: recall(&found, &exact),
                cold_ranges: ranges as f64 / n,
                cold_bytes: read as f64 / n,
                recall_at_100: recall(&found_100, &exact_100),
                cold_bytes_at_100: read_100 as f64 / n,
                warm: Latency::of(&ms),
            });
        }
        let partitions = warm.body().partitions;
        Ok(IndexRun { partitions, build_seconds, bytes: bytes.len(), probes: runs })
    };
    let small = |flat_up_to| IvfParams { partition: SMALL, flat_up_to, ..IvfParams::default() };
    Ok(PartitionsReport {
        vectors: dense.len(),
        queries: queries.len(),
        default: run(IvfParams::default(), &PROBES)?,
        rows: run(IvfParams { coded: false, ..IvfParams::default() }, &PROBES)?,
        one_level: run(small(usize::MAX), &SMALL_PROBES)?,
        two_levels: run(small(FLAT_UP_TO), &SMALL_PROBES)?,
    })
}

/// The section of the Markdown report.
pub(super) fn markdown(r: &PartitionsReport) -> String {
    use crate::format::{bytes, ms, table};
    let rows = |runs: &[(&str, &IndexRun)]| -> Vec<Vec<String>> {
        let mut rows = Vec::new();
        for (levels, run) in runs {
            for p in &run.probes {
                let probed =
                    p.probe.map_or(format!("within {REACH}× (default)"), |p| p.to_string());
                rows.push(vec![
                    levels.to_string(),
                    probed,
                    format!("{:.3}", p.recall_at_10),
                    format!("{:.1}", p.cold_ranges),
                    bytes(p.cold_bytes),
                    format!("{:.3}", p.recall_at_100),
                    bytes(p.cold_bytes_at_100),
                    ms(p.warm.p50_ms),
                    ms(p.warm.p99_ms),
                ]);
            }
        }
        rows
    };
    let header = [
        "lists",
        "probed",
        "recall@10",
        "ranges (cold)",
        "bytes (cold)",
        "recall@100",
        "bytes (cold, 100)",
        "p50 (warm)",
        "p99",
    ];
    let (one, two) = (&r.one_level, &r.two_levels);
    format!(
        "## Dense partitions of format 4 against exact search (SciFact, real queries)\n\n\
         {} int8 vectors in {} partitions (written in {:.1} s, {} with the centroids), queried \
         with SciFact's {} judged queries embedded; recall@10 is the share of the exact top \
         10 found. A cold query opens the file afresh: it reads the centroids and the lists it \
         probes, in ranges of whole 16 KB slots, and, of coded lists (as builds write them), \
         the rows of the candidates it rescores ({RESCORE} times what it returns, at least \
         {MIN_RESCORED}), each alone. By default a query probes the partitions \
         whose centroid lies within {REACH} times its distance to the nearest one, from a \
         quarter to twice {PROBE}.\n\n{}\n\n\
         Above {FLAT_UP_TO} partitions, they are grouped in two levels, and a query reads the \
         centroids of the groups nearest it only. The same vectors in partitions of about \
         {SMALL}: {} partitions in one level ({}) against {} in two ({}):\n\n{}",
        r.vectors,
        r.default.partitions,
        r.default.build_seconds,
        bytes(r.default.bytes as f64),
        r.queries,
        table(&header, &rows(&[("coded", &r.default), ("rows", &r.rows)])),
        one.partitions,
        bytes(one.bytes as f64),
        two.partitions,
        bytes(two.bytes as f64),
        table(&header, &rows(&[("coded, 1 level", one), ("coded, 2 levels", two)])),
    )
}
