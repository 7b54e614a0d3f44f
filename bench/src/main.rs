//! `edgerag-bench`: edgerag measured side by side with what users would pick instead, in one
//! run and on the same inputs, rendered as one JSON and one Markdown report.
//!
//! - embedding: native and wasm against onnxruntime-web and transformers.js ([`embedding`]);
//! - BM25 on SciFact against bm25s and tantivy ([`retrieval`]);
//! - HNSW against exact search on real vectors ([`recall`]);
//! - synthetic corpora of 1k–100k chunks: build, bundle bytes, load time, latency natively and
//!   in wasm ([`scale`]);
//! - page load to first answer in Chromium ([`cold_start`]);
//! - local generation, native and wasm ([`chat`]).
//!
//! The peers are scripts in the repository's `bench/` directory (`--peers`), run as
//! subprocesses that print JSON ([`script`]). A benchmark, not a test: it measures and
//! reports; nothing here passes or fails on a time.

mod chat;
mod cold_start;
mod embedding;
mod format;
mod graph_io;
mod lazy;
mod machine;
mod partitions;
mod recall;
mod report;
mod retrieval;
mod scale;
mod scale_paged;
mod script;
mod synthetic;

use std::alloc::System;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use edgerag_cli::flags::model::ModelArgs;
use edgerag_cli::source::blocking as ready;
use edgerag_cli::{files, models, output};
use edgerag_core::bundle::paged::{Io, RangeSource};
use edgerag_core::index::Scored;
use edgerag_core::query::LazySearcher;
use edgerag_core::{Bundle, SearchOptions};
use serde::Serialize;
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

/// The system allocator, counting what is allocated and freed ([`live_heap`]).
#[global_allocator]
static HEAP: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Bytes live on the heap now: what a part holds is the growth of this while it lives. (A
/// reallocation counts its growth as allocated and its shrinking as deallocated.)
fn live_heap() -> usize {
    let stats = HEAP.stats();
    stats.bytes_allocated.wrapping_sub(stats.bytes_deallocated)
}

/// Seed of the synthetic corpora and of every HNSW build here.
const SEED: u64 = 20_261_122;

/// Benchmark embedding (native and wasm), search latency at scale and HNSW recall, side by side
/// with the alternatives.
#[derive(Debug, clap::Parser)]
#[command(name = "edgerag-bench", version)]
struct Args {
    /// Synthetic corpus sizes, in chunks, for the search benchmark.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
    sizes: Vec<usize>,
    /// Queries timed per mode and size (and HNSW recall queries).
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// A bundle with vectors: HNSW recall is measured on its real vectors, and it is the
    /// bundle of the cold-start benchmark.
    #[arg(long, value_name = "FILE")]
    bundle: Option<PathBuf>,
    /// SciFact in the BEIR layout (corpus.jsonl.gz, queries.jsonl, qrels/train.tsv): BM25
    /// against the peers, and its chunks are the embedding inputs [default inputs: the
    /// chunks of --bundle, else synthetic texts].
    #[arg(long, value_name = "DIR")]
    scifact: Option<PathBuf>,
    /// A bundle of SciFact saved by `edgerag eval beir --save-bundle` (with vectors: HNSW
    /// recall is also measured on them) instead of building one without vectors.
    #[arg(long, value_name = "FILE", requires = "scifact")]
    scifact_bundle: Option<PathBuf>,
    /// The repository's `bench/` directory, set up by `scripts/setup.sh bench`: also run the
    /// peers (onnxruntime-web, transformers.js, bm25s, tantivy) and, with --site, the cold
    /// start in Chromium.
    #[arg(long, value_name = "DIR")]
    peers: Option<PathBuf>,
    /// The Python packages of the peers [default: $EDGERAG_CACHE/bench/python].
    #[arg(long, value_name = "DIR")]
    peers_python: Option<PathBuf>,
    /// The ONNX all-MiniLM-L6-v2 of the embedding peers [default:
    /// $EDGERAG_CACHE/bench/all-MiniLM-L6-v2].
    #[arg(long, value_name = "DIR")]
    peers_model: Option<PathBuf>,
    /// The built demo site (www/dist): time page load to first answer in Chromium, with the
    /// model uncached and cached (needs --peers, --bundle and --question).
    #[arg(long, value_name = "DIR")]
    site: Option<PathBuf>,
    /// The question of the cold-start benchmark (one the bundle answers).
    #[arg(long)]
    question: Option<String>,
    /// Texts embedded per measurement.
    #[arg(long, default_value_t = 64)]
    texts: usize,
    /// Batch size of the batched embedding measurement (the other is 1).
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// wasm-bindgen output for Node (`make bench` makes it): also time the wasm module, with
    /// `node`: embedding, loading bundles, search, local generation.
    #[arg(long, value_name = "DIR")]
    wasm_pkg: Option<PathBuf>,
    /// Skip the embedding benchmark.
    #[arg(long)]
    skip_embedding: bool,
    /// Skip the synthetic search benchmark.
    #[arg(long)]
    skip_search: bool,
    /// Also time this GGUF chat model (`local`: the default, SmolLM2-135M-Instruct): prompt
    /// and generation tokens per second, natively and (with --wasm-pkg) in wasm, and memory.
    #[arg(long, value_name = "FILE.gguf|local")]
    chat_model: Option<PathBuf>,
    /// Prompt length, in tokens, of the chat model benchmark.
    #[arg(long, default_value_t = 512)]
    prompt_tokens: usize,
    /// Most tokens generated in the chat model benchmark.
    #[arg(long, default_value_t = 128)]
    generate_tokens: u32,
    /// Write the report into DIR as benchmarks.json and BENCHMARKS.md (replacing them only
    /// once the run has finished).
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    #[command(flatten)]
    model: ModelArgs,
    /// Print JSON instead of the Markdown report (and no progress bars).
    #[arg(long)]
    json: bool,
}

/// Everything one run measured.
#[derive(Debug, Serialize)]
struct Report {
    edgerag: &'static str,
    machine: machine::Machine,
    /// The command line of the run.
    command: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    embedding: Option<embedding::EmbeddingReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    retrieval: Option<retrieval::RetrievalReport>,
    /// HNSW against exact search on each bundle with real vectors.
    real_vectors: Vec<recall::RecallReport>,
    /// The v4 dense index against exact search on SciFact's vectors and queries.
    #[serde(skip_serializing_if = "Option::is_none")]
    partitions: Option<partitions::PartitionsReport>,
    graph_io: Option<graph_io::GraphIoReport>,
    /// SciFact's bundle in format 4 against it in memory.
    lazy: Option<lazy::LazyReport>,
    search: Vec<scale::ScaleReport>,
    /// Bytes per chunk of the real bundles (the synthetic ones' are in `search`).
    bundles: Vec<NamedBytes>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cold_start: Option<cold_start::ColdStartReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    generation: Option<chat::ChatReport>,
}

/// A bundle's bytes per chunk, named.
#[derive(Debug, Serialize)]
struct NamedBytes {
    name: String,
    #[serde(flatten)]
    bytes: scale::BundleBytes,
}

/// Where the peers are, when they are run.
struct Peers {
    /// The `bench/` directory (scripts and their npm packages).
    dir: PathBuf,
    /// The Python packages (`PYTHONPATH`).
    python: PathBuf,
    /// The ONNX model directory (transformers.js layout).
    model: PathBuf,
}

fn main() -> std::process::ExitCode {
    match run(<Args as clap::Parser>::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            output::error_line(&error);
            std::process::ExitCode::FAILURE
        }
    }
}

/// Measures everything asked for, then publishes the report.
fn run(args: Args) -> Result<()> {
    check(&args)?;
    let machine = machine::Machine::now();
    let peers = peers(&args)?;
    // First, so that the peak memory measured is the chat model's.
    let generation = match &args.chat_model {
        Some(path) => {
            let path = models::chat::named(path);
            let (tokens, generate) = (args.prompt_tokens, args.generate_tokens);
            Some(chat::measure(path, tokens, generate, args.wasm_pkg.as_deref(), args.json)?)
        }
        None => None,
    };
    let bundle = match &args.bundle {
        Some(path) => {
            let bytes = files::read(path)?;
            let bundle =
                Bundle::from_bytes(&bytes).with_context(|| format!("{}", path.display()))?;
            Some((bundle, bytes.len()))
        }
        None => None,
    };
    let scifact = match &args.scifact {
        Some(dir) => {
            Some(retrieval::SciFact::load(dir, args.scifact_bundle.as_deref(), args.json)?)
        }
        None => None,
    };
    let retrieval = match &scifact {
        Some(scifact) => Some(retrieval::measure(scifact, peers.as_ref(), args.json)?),
        None => None,
    };
    // Read (and checked) once for the embedding, search and partitions benchmarks.
    let scifact_vectors = scifact.as_ref().is_some_and(|s| s.searcher.bundle().dense.is_some());
    let model = if args.skip_embedding && args.skip_search && !scifact_vectors {
        None
    } else {
        Some(models::resolve(args.model.model.as_deref(), args.json)?)
    };
    let embedding = match (&model, args.skip_embedding) {
        (Some(model), false) => {
            let inputs = embedding::inputs(&args, scifact.as_ref(), bundle.as_ref().map(|b| &b.0));
            Some(embedding::measure(&args, model, inputs, peers.as_ref())?)
        }
        _ => None,
    };
    let (real_vectors, bundles) = real_bundles(&args, scifact.as_ref(), bundle.as_ref())?;
    let partitions = match (&scifact, &model) {
        (Some(scifact), Some(model)) if scifact_vectors => {
            Some(partitions::measure(scifact, model, args.json)?)
        }
        _ => None,
    };
    let graph_io = scifact.as_ref().map(graph_io::measure).transpose()?;
    let lazy = scifact.as_ref().map(lazy::measure).transpose()?;
    let search = match (&model, args.skip_search) {
        (Some(model), false) => args
            .sizes
            .iter()
            .map(|&size| scale::measure(size, args.queries, model, &args))
            .collect::<Result<_>>()?,
        _ => Vec::new(),
    };
    let cold_start = match (&args.site, &peers, &args.bundle, &args.question) {
        (Some(site), Some(peers), Some(bundle), Some(question)) => {
            Some(cold_start::measure(peers, site, bundle, question, args.json)?)
        }
        _ => None,
    };
    let report = Report {
        edgerag: env!("CARGO_PKG_VERSION"),
        machine,
        command: command_line(),
        embedding,
        retrieval,
        real_vectors,
        partitions,
        graph_io,
        lazy,
        search,
        bundles,
        cold_start,
        generation,
    };
    publish(&report, &args)
}

/// Refuses flags that cannot work together.
fn check(args: &Args) -> Result<()> {
    if args.texts == 0 || args.batch == 0 || args.queries == 0 {
        bail!("--texts, --batch and --queries must be at least 1");
    }
    if args.site.is_some()
        && (args.peers.is_none() || args.bundle.is_none() || args.question.is_none())
    {
        bail!(
            "--site needs --peers (the cold-start script), --bundle (what the page loads) and \
             --question (what it is asked)"
        );
    }
    Ok(())
}

/// HNSW recall on the real bundles' vectors (SciFact's, and `--bundle`'s with its encoded
/// size), and what each bundle's bytes are made of.
fn real_bundles(
    args: &Args,
    scifact: Option<&retrieval::SciFact>,
    bundle: Option<&(Bundle, usize)>,
) -> Result<(Vec<recall::RecallReport>, Vec<NamedBytes>)> {
    // (name, bundle, its encoded bytes, its source text's bytes where known)
    let mut named: Vec<(String, &Bundle, usize, Option<usize>)> = Vec::new();
    if let Some(scifact) = scifact {
        let text = Some(scifact.text_bytes());
        named.push(("SciFact".to_owned(), scifact.searcher.bundle(), scifact.bundle_bytes, text));
    }
    if let (Some(path), Some((bundle, bytes))) = (&args.bundle, bundle) {
        let name = path
            .file_name()
            .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        named.push((name, bundle, *bytes, None));
    }
    let mut real_vectors = Vec::new();
    let mut bundles = Vec::new();
    for (name, bundle, total, text) in named {
        if bundle.dense.is_some() {
            real_vectors.push(recall::measure(&name, bundle, args.queries, args.json)?);
        }
        bundles.push(NamedBytes { name, bytes: scale::BundleBytes::of(bundle, total, text) });
    }
    Ok((real_vectors, bundles))
}

/// Prints the report (Markdown, or JSON with `--json`) and writes both to `--report`'s
/// directory when given.
fn publish(report: &Report, args: &Args) -> Result<()> {
    let markdown = report::markdown(report);
    if let Some(dir) = &args.report {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let json = serde_json::to_vec_pretty(report)?;
        files::write_atomic(&dir.join("benchmarks.json"), &json)?;
        files::write_atomic(&dir.join("BENCHMARKS.md"), markdown.as_bytes())?;
    }
    if args.json {
        output::json(report)
    } else {
        output::line(&markdown);
        Ok(())
    }
}

/// The peers' locations, checked, when `--peers` is given.
fn peers(args: &Args) -> Result<Option<Peers>> {
    let Some(dir) = &args.peers else { return Ok(None) };
    let bench = models::cache_dir()?.join("bench");
    let peers = Peers {
        dir: script::absolute(dir),
        python: script::absolute(
            &args.peers_python.clone().unwrap_or_else(|| bench.join("python")),
        ),
        model: script::absolute(
            &args.peers_model.clone().unwrap_or_else(|| bench.join("all-MiniLM-L6-v2")),
        ),
    };
    let setup = "run `scripts/setup.sh bench` (make bench does)";
    if !peers.dir.join("node_modules").is_dir() {
        bail!("{}: no node_modules: {setup}", peers.dir.display());
    }
    if !peers.python.is_dir() || !peers.model.join("onnx").is_dir() {
        bail!("{} or {}: missing: {setup}", peers.python.display(), peers.model.display());
    }
    Ok(Some(peers))
}

/// This process's command line, arguments with spaces or quotes single-quoted for a shell.
fn command_line() -> String {
    let quote = |arg: String| {
        if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
            format!("'{}'", arg.replace('\'', "'\\''"))
        } else {
            arg
        }
    };
    std::env::args().map(quote).collect::<Vec<_>>().join(" ")
}

/// Runs `search` per query: the results and each query's milliseconds.
fn timed_searches<Q: Copy, T>(
    queries: &[Q],
    search: impl Fn(Q) -> edgerag_core::Result<T>,
) -> Result<(Vec<T>, Vec<f64>)> {
    let mut results = Vec::with_capacity(queries.len());
    let mut ms = Vec::with_capacity(queries.len());
    for &q in queries {
        let start = Instant::now();
        results.push(search(q)?);
        ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    Ok((results, ms))
}

/// Mean share of each exact top list found by the approximate one.
fn recall(approx: &[Vec<Scored>], exact: &[Vec<Scored>]) -> f64 {
    let shares = approx.iter().zip(exact).map(|(a, e)| {
        let found = e.iter().filter(|x| a.iter().any(|y| y.chunk == x.chunk)).count();
        found as f64 / e.len().max(1) as f64
    });
    shares.sum::<f64>() / exact.len().max(1) as f64
}

/// What searches from an empty cache read: mean and largest ranges, round trips and bytes a
/// search, and, where known, each section's share (most bytes first).
#[derive(Debug, Clone, Serialize)]
struct ColdReads {
    cold_ranges: f64,
    cold_ranges_max: u64,
    cold_round_trips: f64,
    cold_round_trips_max: u64,
    cold_bytes: f64,
    cold_bytes_max: u64,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sections: Vec<SectionReads>,
}

/// What searches read of one section: mean ranges and bytes a search.
#[derive(Debug, Clone, Serialize)]
struct SectionReads {
    section: String,
    ranges: f64,
    bytes: f64,
}

impl ColdReads {
    /// Of what each search read.
    fn of(reads: &[Io]) -> Self {
        let n = reads.len().max(1) as f64;
        let mean = |field: fn(&Io) -> u64| reads.iter().map(field).sum::<u64>() as f64 / n;
        let max = |field: fn(&Io) -> u64| reads.iter().map(field).max().unwrap_or(0);
        Self {
            cold_ranges: mean(|io| io.requests),
            cold_ranges_max: max(|io| io.requests),
            cold_round_trips: mean(|io| io.round_trips),
            cold_round_trips_max: max(|io| io.round_trips),
            cold_bytes: mean(|io| io.bytes),
            cold_bytes_max: max(|io| io.bytes),
            sections: Vec::new(),
        }
    }

    /// Mean ranges in mean round trips, with the largest of each, for a table.
    fn ranges(&self) -> String {
        format!(
            "{:.1} in {:.1} (max {} in {})",
            self.cold_ranges,
            self.cold_round_trips,
            self.cold_ranges_max,
            self.cold_round_trips_max
        )
    }
}

/// Each search of `runs` on a bundle `open` opens afresh (an empty cache): what they read,
/// opening left out, and each one's milliseconds; `done` is called after each.
fn cold_searches<S: RangeSource>(
    open: &dyn Fn() -> Result<LazySearcher<S>>,
    runs: &[(&str, &SearchOptions)],
    done: &dyn Fn(),
) -> Result<(ColdReads, Vec<f64>)> {
    let (mut reads, mut ms) = (Vec::with_capacity(runs.len()), Vec::with_capacity(runs.len()));
    // What each section cost, over every search (opening reads none).
    let mut sections: BTreeMap<String, Io> = BTreeMap::new();
    for &(query, options) in runs {
        let cold = open()?;
        let before = cold.io();
        let start = Instant::now();
        ready(cold.search(query, options))?;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
        reads.push(cold.io() - before);
        for (section, io) in cold.reads().sections {
            *sections.entry(section).or_default() += io;
        }
        done();
    }
    let n = runs.len().max(1) as f64;
    let mut sections: Vec<SectionReads> = sections
        .into_iter()
        .map(|(section, io)| SectionReads {
            section,
            ranges: io.requests as f64 / n,
            bytes: io.bytes as f64 / n,
        })
        .collect();
    sections.sort_by(|a, b| b.bytes.total_cmp(&a.bytes));
    Ok((ColdReads { sections, ..ColdReads::of(&reads) }, ms))
}

/// Latency percentiles and throughput of per-query milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
struct Latency {
    p50_ms: f64,
    p99_ms: f64,
    queries_per_second: f64,
}

impl Latency {
    fn of(ms: &[f64]) -> Self {
        let total: f64 = ms.iter().sum();
        Self {
            p50_ms: format::percentile(ms, 0.5),
            p99_ms: format::percentile(ms, 0.99),
            queries_per_second: ms.len() as f64 * 1e3 / total.max(f64::EPSILON),
        }
    }
}
