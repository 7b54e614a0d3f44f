//! Format 4 at scale: each synthetic bundle of the search benchmark ([`super::scale`])
//! converted to format 4 and read by range from a local file, and over HTTP from `edgerag
//! serve` on loopback. What opening it reads and takes, what each mode's queries read and take
//! with an empty cache (a searcher opened afresh, as on a first visit) and with a warm one, and
//! what the reader then holds.
//!
//! Queries are embedded by the real model in dense and hybrid mode, cold and warm alike (warm
//! means the pages are cached, not the query vectors).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::rc::Rc;
use std::time::Instant;

use anyhow::{Context, Result};
use edgerag_cli::output;
use edgerag_cli::source::{self, BundleSource, FileSource};
use edgerag_core::bundle::Embed;
use edgerag_core::bundle::lazy::{DEFAULT_BUDGET, Layout};
use edgerag_core::bundle::lexicon;
use edgerag_core::bundle::paged::RangeSource;
use edgerag_core::index::Scored;
use edgerag_core::query::LazySearcher;
use edgerag_core::text::Analyzer;
use edgerag_core::{Bundle, Mode, SearchOptions};
use serde::Serialize;

use crate::{ColdReads, Latency, cold_searches, cold_start, live_heap, ready};

/// Times each synthetic bundle of format 4 is opened afresh to time opening.
const OPENS: usize = 20;

/// A synthetic bundle of format 4, read from a file.
#[derive(Debug, Serialize)]
pub(super) struct PagedScale {
    /// Seconds to write it from the bundle in memory (dense partitions included).
    pub(super) convert_seconds: f64,
    /// Bytes of the file.
    pub(super) bytes: usize,
    /// What opening reads (header and directory) and takes.
    pub(super) open_requests: u64,
    pub(super) open_bytes: u64,
    pub(super) open: Latency,
    /// Share of the exact top 10 (dense search of the vectors in memory) that dense search of
    /// the partitions finds at the default probe.
    pub(super) dense_recall_at_10: f64,
    /// Share of the BM25 top 10 of the whole index in memory that BM25 search of the
    /// dictionary and postings finds (its reads within [`lexicon::BUDGET`]).
    pub(super) bm25_recall_at_10: f64,
    pub(super) modes: Vec<PagedMode>,
    /// The same queries over HTTP, from `edgerag serve` on loopback (the same reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) http: Option<Vec<PagedMode>>,
    /// Bytes of pages the reader holds after the warm queries of every mode (the page cache,
    /// within its default budget).
    pub(super) held_bytes: usize,
    /// Heap bytes the opened reader holds then: directory, pages and whatever else it keeps.
    pub(super) memory_bytes: usize,
}

/// One mode's queries on a bundle of format 4.
#[derive(Debug, Serialize)]
pub(super) struct PagedMode {
    pub(super) mode: Mode,
    /// What a query reads with an empty cache, opening excluded.
    #[serde(flatten)]
    pub(super) reads: ColdReads,
    /// A query with an empty cache, and with the pages every query of the mode read cached.
    pub(super) cold: Latency,
    pub(super) warm: Latency,
}

/// Converts `bundle` to format 4 in a file and queries it with `queries`, embedded by
/// `embedder`: from the file, then over HTTP when the `edgerag` binary is beside the harness.
pub(super) fn measure(
    bundle: &Bundle,
    queries: &[String],
    embedder: &Rc<dyn Embed>,
    quiet: bool,
) -> Result<PagedScale> {
    let size = bundle.chunks.len();
    let start = Instant::now();
    let bytes = bundle.to_paged_bytes(&Layout::default())?;
    let convert_seconds = start.elapsed().as_secs_f64();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("scale.bundle");
    std::fs::write(&path, &bytes)?;
    let open = || -> Result<LazySearcher<FileSource>> {
        let searcher = ready(LazySearcher::open(FileSource::open(&path)?, DEFAULT_BUDGET))?;
        Ok(searcher.with_embedder(Box::new(Rc::clone(embedder)))?)
    };
    let mut open_ms = Vec::with_capacity(OPENS);
    for _ in 0..OPENS {
        let start = Instant::now();
        open()?;
        open_ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let opened = open()?.io();
    let (dense_recall_at_10, bm25_recall_at_10) = recalls(bundle, queries, &open()?, embedder)?;
    let (modes, held_bytes) = mode_runs(&open, queries, embedder, &format!("{size}, file"), quiet)?;
    let memory_bytes = held_memory(&open, queries, embedder)?;
    // The same over HTTP from `edgerag serve` on loopback, when the binary is at hand.
    let http = match cold_start::edgerag_binary() {
        Ok(edgerag) => {
            let served = Served::start(&edgerag, dir.path())?;
            let url = format!("{}scale.bundle", served.url);
            let open = || -> Result<LazySearcher<BundleSource>> {
                let source = BundleSource::open(&url, source::TIMEOUT)?;
                let searcher = ready(LazySearcher::open(source, DEFAULT_BUDGET))?;
                Ok(searcher.with_embedder(Box::new(Rc::clone(embedder)))?)
            };
            Some(mode_runs(&open, queries, embedder, &format!("{size}, HTTP"), quiet)?.0)
        }
        Err(error) => {
            output::warn(None, &format!("format 4 over HTTP skipped: {error:#}"));
            None
        }
    };
    Ok(PagedScale {
        convert_seconds,
        bytes: bytes.len(),
        open_requests: opened.requests,
        open_bytes: opened.bytes,
        open: Latency::of(&open_ms),
        dense_recall_at_10,
        bm25_recall_at_10,
        modes,
        http,
        held_bytes,
        memory_bytes,
    })
}

/// Each mode's queries on the bundles `open` opens: cold (each on a bundle opened afresh) and
/// warm (on one bundle, each right after a first run of it); and what that bundle's cache
/// then holds.
fn mode_runs<S: RangeSource>(
    open: &dyn Fn() -> Result<LazySearcher<S>>,
    queries: &[String],
    embedder: &Rc<dyn Embed>,
    label: &str,
    quiet: bool,
) -> Result<(Vec<PagedMode>, usize)> {
    let mut warm = open()?;
    let mut modes = Vec::new();
    for mode in [Mode::Bm25, Mode::Dense, Mode::Graph, Mode::Hybrid] {
        let options = SearchOptions { mode, k: 10, ..SearchOptions::default() };
        let bar = output::progress(queries.len() as u64, &format!("{label} {mode}"), quiet);
        let runs: Vec<(&str, &SearchOptions)> =
            queries.iter().map(|q| (q.as_str(), &options)).collect();
        let (reads, cold_ms) = cold_searches(open, &runs, &|| bar.inc(1))?;
        bar.finish_and_clear();
        // Each query once to cache its pages, then again right away with the query vectors
        // dropped (a new model), so that a warm query is embedded but finds its pages. (Run
        // all first and again after, the queries of a large bundle would evict each other's
        // pages: 50 cold hybrid queries at 1M read some 200 MB through a 32 MiB cache.)
        let mut warm_ms = Vec::with_capacity(queries.len());
        for query in queries {
            ready(warm.search(query, &options))?;
            warm = warm.with_embedder(Box::new(Rc::clone(embedder)))?;
            let start = Instant::now();
            ready(warm.search(query, &options))?;
            warm_ms.push(start.elapsed().as_secs_f64() * 1e3);
        }
        modes.push(PagedMode {
            mode,
            reads,
            cold: Latency::of(&cold_ms),
            warm: Latency::of(&warm_ms),
        });
    }
    Ok((modes, warm.bundle().cached_bytes()))
}

/// Heap bytes a bundle `open` opens holds once it answered every query of every mode.
fn held_memory<S: RangeSource>(
    open: &dyn Fn() -> Result<LazySearcher<S>>,
    queries: &[String],
    embedder: &Rc<dyn Embed>,
) -> Result<usize> {
    // What the model allocates on its first queries is the model's, not the reader's.
    for query in queries {
        embedder.embed_query(query)?;
    }
    let heap = live_heap();
    let searcher = open()?;
    for mode in [Mode::Bm25, Mode::Dense, Mode::Graph, Mode::Hybrid] {
        let options = SearchOptions { mode, k: 10, ..SearchOptions::default() };
        for query in queries {
            ready(searcher.search(query, &options))?;
        }
    }
    let held = live_heap().saturating_sub(heap);
    drop(searcher);
    Ok(held)
}

/// `edgerag serve --site DIR` on a free loopback port, stopped when dropped.
struct Served {
    child: Child,
    /// Its base URL, `http://127.0.0.1:PORT/`.
    url: String,
}

impl Served {
    fn start(edgerag: &Path, site: &Path) -> Result<Self> {
        let mut child = Command::new(edgerag)
            .args(["serve", "--site"])
            .arg(site)
            .args(["--no-model", "--port", "0", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {} serve", edgerag.display()))?;
        let mut line = String::new();
        let stdout = child.stdout.take().context("the server's output")?;
        BufReader::new(stdout).read_line(&mut line)?;
        let started: serde_json::Value = serde_json::from_str(&line)
            .with_context(|| format!("edgerag serve started with {line:?}"))?;
        let url = started["url"].as_str().context("edgerag serve named no URL")?.to_owned();
        Ok(Self { child, url })
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The mean share of each query's exact top 10 in memory that `searcher` finds: dense (the
/// query embedded by `embedder`; 0 without vectors) and BM25 (the whole index).
fn recalls(
    bundle: &Bundle,
    queries: &[String],
    searcher: &LazySearcher<FileSource>,
    embedder: &Rc<dyn Embed>,
) -> Result<(f64, f64)> {
    let analyzer = Analyzer::new();
    let (mut dense, mut bm25) = (0.0, 0.0);
    for query in queries {
        let share = |mode, exact: Vec<Scored>| -> Result<f64> {
            let options = SearchOptions { mode, k: 10, ..SearchOptions::default() };
            let found = ready(searcher.search(query, &options))?;
            let id = |chunk: u32| &bundle.chunks[chunk as usize].id;
            let hits = exact.iter().filter(|s| found.iter().any(|h| h.chunk_id == *id(s.chunk)));
            Ok(hits.count() as f64 / exact.len().max(1) as f64)
        };
        if let Some(index) = &bundle.dense {
            dense += share(
                Mode::Dense,
                index.search_exact(&embedder.embed_query(query)?, 10, |_| true)?,
            )?;
        }
        bm25 += share(Mode::Bm25, bundle.bm25.search(&analyzer.terms(query), 10, |_| true))?;
    }
    let n = queries.len().max(1) as f64;
    Ok((dense / n, bm25 / n))
}

/// The format 4 part of the search section of the Markdown report.
pub(super) fn markdown(reports: &[super::scale::ScaleReport]) -> String {
    use crate::format::{bytes, ms, table};
    let pair = |l: &Latency| format!("{} / {}", ms(l.p50_ms), ms(l.p99_ms));
    let files: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            let p = &r.paged;
            vec![
                format!("{}", r.chunks),
                bytes(p.bytes as f64),
                format!("{:.1} s", p.convert_seconds),
                format!("{} in {}", bytes(p.open_bytes as f64), p.open_requests),
                pair(&p.open),
                format!("{:.3}", p.dense_recall_at_10),
                format!("{:.3}", p.bm25_recall_at_10),
                bytes(p.held_bytes as f64),
                bytes(p.memory_bytes as f64),
            ]
        })
        .collect();
    let mut modes = Vec::new();
    for r in reports {
        let http = r.paged.http.iter().flatten().map(|m| (m, "HTTP"));
        for (m, from) in r.paged.modes.iter().map(|m| (m, "file")).chain(http) {
            modes.push(vec![
                format!("{}", r.chunks),
                m.mode.to_string(),
                from.to_owned(),
                m.reads.ranges(),
                format!(
                    "{} (max {})",
                    bytes(m.reads.cold_bytes),
                    bytes(m.reads.cold_bytes_max as f64)
                ),
                pair(&m.cold),
                pair(&m.warm),
            ]);
        }
    }
    // Where the cold queries of the largest bundle, from its file, read.
    let largest = reports.iter().max_by_key(|r| r.chunks);
    let shares: Vec<Vec<String>> = largest
        .into_iter()
        .flat_map(|r| &r.paged.modes)
        .map(|m| {
            let sections = m
                .reads
                .sections
                .iter()
                .map(|s| format!("{} {} in {:.1}", s.section, bytes(s.bytes), s.ranges));
            vec![m.mode.to_string(), sections.collect::<Vec<_>>().join("; ")]
        })
        .collect();
    format!(
        "\n### The same bundles in format 4, read by range\n\n\
         Each bundle converted to format 4 (default layout) and written to a local file, read \
         from the file and over HTTP from `edgerag serve` on loopback. Opening \
         reads the header and directory; *dense recall@10* is dense search of the partitions at \
         the default probe against exact search of the vectors (synthetic vectors hardly \
         cluster, so it falls with size far below what real vectors give: see the dense \
         partitions of SciFact's), *BM25 recall@10* BM25 search \
         of the postings, read within its budget of {}, against the whole index in memory; \
         *held* is what the page cache holds \
         after every mode's warm queries (budget {}), and *memory* what the reader then holds on \
         the heap, cache included.\n\n{}\n\
         A cold query opens the file afresh (what opening reads left out); a warm one runs \
         right after a first run of the same query, and finds the pages it reads cached. Dense \
         and hybrid queries are embedded by the real model either way.\n\n{}\n\
         What a cold query of the largest bundle reads from its file, by section (bytes in \
         ranges, a query on average):\n\n{}",
        bytes(lexicon::BUDGET as f64),
        bytes(DEFAULT_BUDGET as f64),
        table(
            &[
                "chunks",
                "file",
                "convert",
                "open reads",
                "open p50 / p99",
                "dense recall@10",
                "BM25 recall@10",
                "held",
                "memory"
            ],
            &files
        ),
        table(
            &[
                "chunks",
                "mode",
                "ranges in round trips (cold)",
                "bytes (cold)",
                "cold p50 / p99",
                "warm p50 / p99"
            ],
            &modes
        ),
        table(&["mode", "sections"], &shares)
    )
}
