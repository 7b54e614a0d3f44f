//! `edgerag bench`: embedding throughput (native and wasm on the same texts), search latency
//! per mode at synthetic corpus sizes, HNSW recall against exact search, and (with
//! `--chat-model`) local generation speed, native and wasm.
//!
//! A benchmark, not a test: it measures and reports; nothing here passes or fails on a time.

mod chat;
mod synthetic;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use edgerag_core::bundle::Embed;
use edgerag_core::index::Scored;
use edgerag_core::index::dense::{DenseIndex, DenseParams};
use edgerag_core::load::from_text;
use edgerag_core::{BuildOptions, Bundle, BundleBuilder, Mode, SearchOptions, Searcher};
use serde::{Deserialize, Serialize};

use crate::embedding::ModelArgs;
use crate::{build, files, output};

/// Seed of the synthetic corpora and of every HNSW build here.
const SEED: u64 = 20_261_122;
/// The HNSW beam widths whose recall is reported for real vectors.
const EF_SEARCH: [usize; 4] = [32, 64, 128, 256];

/// Arguments of `edgerag bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Synthetic corpus sizes, in chunks, for the search benchmark.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    sizes: Vec<usize>,
    /// Queries timed per mode and size (and HNSW recall queries).
    #[arg(long, default_value_t = 200)]
    queries: usize,
    /// A bundle with vectors: its chunk texts are the embedding inputs, and HNSW recall is
    /// also measured on its real vectors [default inputs: synthetic texts].
    #[arg(long, value_name = "FILE")]
    bundle: Option<PathBuf>,
    /// Texts embedded per measurement.
    #[arg(long, default_value_t = 64)]
    texts: usize,
    /// Batch size of the batched embedding measurement (the other is 1).
    #[arg(long, default_value_t = 32)]
    batch: usize,
    /// wasm-bindgen output for Node (`make bench` makes it): also time the wasm embedder, with
    /// `node`, on the same texts.
    #[arg(long, value_name = "DIR")]
    wasm_pkg: Option<PathBuf>,
    /// Skip the embedding benchmark (no model needed).
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
    #[command(flatten)]
    model: ModelArgs,
    /// Print JSON instead of text (and no progress bars).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Report {
    edgerag: &'static str,
    machine: Machine,
    #[serde(skip_serializing_if = "Option::is_none")]
    embedding: Option<EmbeddingReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    real_vectors: Option<RecallReport>,
    search: Vec<ScaleReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    generation: Option<chat::ChatReport>,
}

#[derive(Debug, Serialize)]
struct Machine {
    os: &'static str,
    arch: &'static str,
    cpus: usize,
}

#[derive(Debug, Serialize)]
struct EmbeddingReport {
    model: String,
    /// Where the texts came from.
    inputs: String,
    texts: usize,
    mean_characters: f64,
    native: Vec<Throughput>,
    wasm: Option<Vec<Throughput>>,
    /// Why wasm was not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    wasm_skipped: Option<String>,
}

#[derive(Debug, Serialize)]
struct Throughput {
    batch: usize,
    sentences_per_second: f64,
    ms_per_sentence: f64,
}

/// What the wasm timing script prints per batch size.
#[derive(Debug, Deserialize)]
struct Timed {
    batch: usize,
    seconds: f64,
}

#[derive(Debug, Serialize)]
struct RecallReport {
    bundle: String,
    /// Vectors indexed (the rest of the bundle's vectors are the queries).
    vectors: usize,
    queries: usize,
    build_seconds: f64,
    exact_p50_ms: f64,
    hnsw: Vec<RecallAt>,
}

#[derive(Debug, Serialize)]
struct RecallAt {
    ef_search: usize,
    recall_at_10: f64,
    p50_ms: f64,
}

#[derive(Debug, Serialize)]
struct ScaleReport {
    chunks: usize,
    build_seconds: f64,
    /// Seconds per build step, in order.
    build_steps: Vec<Step>,
    bundle_bytes: usize,
    load_ms: f64,
    /// Whether dense search used the HNSW graph (else exact search).
    hnsw: bool,
    /// Share of the exact top 10 that dense search found (1 for exact search).
    dense_recall_at_10: f64,
    modes: Vec<Latency>,
}

#[derive(Debug, Serialize)]
struct Step {
    step: &'static str,
    seconds: f64,
}

#[derive(Debug, Serialize)]
struct Latency {
    mode: Mode,
    p50_ms: f64,
    p99_ms: f64,
    queries_per_second: f64,
}

/// `edgerag bench`.
pub(crate) fn run(args: Args) -> Result<()> {
    if args.texts == 0 || args.batch == 0 || args.queries == 0 {
        bail!("--texts, --batch and --queries must be at least 1");
    }
    // First, so that the peak memory measured is the chat model's.
    let generation = match &args.chat_model {
        Some(path) => {
            let path = crate::models::chat::named(path);
            let (tokens, generate) = (args.prompt_tokens, args.generate_tokens);
            Some(chat::measure(path, tokens, generate, args.wasm_pkg.as_deref(), args.json)?)
        }
        None => None,
    };
    let bundle = match &args.bundle {
        Some(path) => Some(
            Bundle::from_bytes(&files::read(path)?)
                .with_context(|| format!("{}", path.display()))?,
        ),
        None => None,
    };
    let embedding =
        if args.skip_embedding { None } else { Some(embedding(&args, bundle.as_ref())?) };
    let real_vectors = match (&args.bundle, &bundle) {
        (Some(path), Some(bundle)) if bundle.dense.is_some() => {
            Some(real_recall(&path.display().to_string(), bundle, args.queries, args.json)?)
        }
        _ => None,
    };
    let search = if args.skip_search {
        Vec::new()
    } else {
        args.sizes
            .iter()
            .map(|&size| scale(size, args.queries, args.json))
            .collect::<Result<_>>()?
    };
    let report = Report {
        edgerag: env!("CARGO_PKG_VERSION"),
        machine: Machine {
            os: std::env::consts::OS,
            arch: std::env::consts::ARCH,
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
        },
        embedding,
        real_vectors,
        search,
        generation,
    };
    if args.json { output::json(&report) } else { print(&report) }
}

fn embedding(args: &Args, bundle: Option<&Bundle>) -> Result<EmbeddingReport> {
    let (inputs, texts): (String, Vec<String>) = match bundle {
        Some(bundle) => {
            let path = args.bundle.as_deref().unwrap_or(Path::new("bundle"));
            let texts = bundle.chunks.iter().take(args.texts).map(|c| c.text.clone()).collect();
            (format!("chunks of {}", path.display()), texts)
        }
        None => ("synthetic texts".to_owned(), synthetic::corpus(args.texts, 0, SEED).texts),
    };
    let files = crate::models::resolve(args.model.model.as_deref(), args.json)?;
    let embedder = files.load()?;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let batches = [1, args.batch.min(texts.len()).max(1)];
    let mut native = Vec::new();
    for &batch in &batches {
        let bar = output::progress(texts.len() as u64, &format!("native ×{batch}"), args.json);
        embedder.embed_documents(&refs[..batch])?;
        let start = Instant::now();
        for group in refs.chunks(batch) {
            embedder.embed_documents(group)?;
            bar.inc(group.len() as u64);
        }
        bar.finish_and_clear();
        native.push(throughput(batch, texts.len(), start.elapsed().as_secs_f64()));
    }
    let (wasm, wasm_skipped) = match &args.wasm_pkg {
        None => (None, Some(WASM_SKIPPED.to_owned())),
        Some(pkg) => {
            let timed = wasm_embedding(pkg, &files.dir, &texts, &batches)?;
            let rows = timed.iter().map(|t| throughput(t.batch, texts.len(), t.seconds)).collect();
            (Some(rows), None)
        }
    };
    let characters: usize = texts.iter().map(|t| t.chars().count()).sum();
    Ok(EmbeddingReport {
        model: embedder.spec().model,
        inputs,
        texts: texts.len(),
        mean_characters: characters as f64 / texts.len().max(1) as f64,
        native,
        wasm,
        wasm_skipped,
    })
}

fn throughput(batch: usize, texts: usize, seconds: f64) -> Throughput {
    let seconds = seconds.max(f64::EPSILON);
    Throughput {
        batch,
        sentences_per_second: texts as f64 / seconds,
        ms_per_sentence: seconds * 1e3 / texts as f64,
    }
}

/// Times the wasm embedder under Node on `texts` (see `wasm-embed.mjs`).
fn wasm_embedding(
    pkg: &Path,
    model: &Path,
    texts: &[String],
    batches: &[usize],
) -> Result<Vec<Timed>> {
    let input = serde_json::json!({
        "model": absolute(model), "texts": texts, "batches": batches,
    });
    run_node(pkg, ("wasm-embed.mjs", include_str!("wasm-embed.mjs")), input, "the wasm embedder")
}

/// Why a wasm measurement was skipped.
const WASM_SKIPPED: &str = "pass --wasm-pkg DIR (make bench does)";

/// Runs one of the benchmark's Node scripts (`(file name, source)`) on the wasm module `pkg`
/// with `input` (plus `pkg`) as its JSON input file, and reads the JSON it prints; `what` is
/// measured, for errors.
fn run_node<T: serde::de::DeserializeOwned>(
    pkg: &Path,
    (name, source): (&str, &str),
    mut input: serde_json::Value,
    what: &str,
) -> Result<T> {
    if !pkg.join("edgerag_wasm.js").is_file() {
        bail!("{}: no edgerag_wasm.js (make the Node bindings with `make bench`)", pkg.display());
    }
    input["pkg"] = serde_json::json!(absolute(pkg));
    let dir = tempfile::tempdir()?;
    let script = dir.path().join(name);
    std::fs::write(&script, source)?;
    let input_file = dir.path().join("input.json");
    std::fs::write(&input_file, serde_json::to_vec(&input)?)?;
    let out = Command::new("node")
        .arg(&script)
        .arg(&input_file)
        .output()
        .context("running node (needed for the wasm measurement)")?;
    if !out.status.success() {
        bail!("{what} failed under node: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    serde_json::from_slice(&out.stdout).context("reading the wasm timings")
}

/// `path` made absolute (the Node scripts run in a temporary directory).
fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}

/// HNSW recall@10 on the bundle's real vectors: an index over all but `queries` of them
/// (forced to HNSW whatever its size), queried with the held-out ones.
fn real_recall(name: &str, bundle: &Bundle, queries: usize, quiet: bool) -> Result<RecallReport> {
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
            p50_ms: percentile(&ms, 0.5),
        });
    }
    Ok(RecallReport {
        bundle: name.to_owned(),
        vectors: index.len(),
        queries: queries.len(),
        build_seconds,
        exact_p50_ms: percentile(&exact_ms, 0.5),
        hnsw,
    })
}

/// Runs `search` per query: the results and each query's milliseconds.
fn timed_searches<Q: Copy>(
    queries: &[Q],
    search: impl Fn(Q) -> edgerag_core::Result<Vec<Scored>>,
) -> Result<(Vec<Vec<Scored>>, Vec<f64>)> {
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

/// The `p` quantile (nearest rank) of `values`.
fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).copied().unwrap_or(0.0)
}

/// Builds a synthetic bundle of `size` chunks and times every mode on it.
fn scale(size: usize, queries: usize, quiet: bool) -> Result<ScaleReport> {
    let corpus = synthetic::corpus(size, queries, SEED);
    let options = BuildOptions { corpus: format!("synthetic-{size}"), ..BuildOptions::default() };
    let mut builder = BundleBuilder::new(options)?;
    builder.embed_with(Box::new(synthetic::HashEmbedder::new(SEED)));
    let bar = output::progress(size as u64, &format!("{size} chunks"), quiet);
    for (i, text) in corpus.texts.iter().enumerate() {
        builder.add(from_text(&format!("synthetic/{i}"), "", text)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let start = Instant::now();
    let (bundle, steps) = build::finish_timed(builder, quiet)?;
    let build_seconds = start.elapsed().as_secs_f64();
    let bytes = bundle.to_bytes()?;
    let start = Instant::now();
    let searcher = Searcher::from_bytes(&bytes)?;
    let load_ms = start.elapsed().as_secs_f64() * 1e3;
    let embedder = synthetic::HashEmbedder::new(SEED);
    let vectors: Vec<Vec<f32>> = corpus
        .queries
        .iter()
        .map(|q| embedder.embed_query(q))
        .collect::<edgerag_core::Result<_>>()?;
    let searcher = searcher.with_embedder(Box::new(embedder))?;
    let dense = searcher.bundle().dense.as_ref().context("the synthetic bundle has no vectors")?;
    let rows: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
    let (found, _) = timed_searches(&rows, |q| dense.search(q, 10, |_| true))?;
    let (exact, _) = timed_searches(&rows, |q| dense.search_exact(q, 10, |_| true))?;
    let mut modes = Vec::new();
    for mode in [Mode::Bm25, Mode::Dense, Mode::Graph, Mode::Hybrid] {
        let options = SearchOptions { mode, k: 10, ..SearchOptions::default() };
        let bar = output::progress(queries as u64, &format!("{size} {mode}"), quiet);
        let mut ms = Vec::with_capacity(queries);
        for query in &corpus.queries {
            let start = Instant::now();
            searcher.search(query, &options)?;
            ms.push(start.elapsed().as_secs_f64() * 1e3);
            bar.inc(1);
        }
        bar.finish_and_clear();
        let total: f64 = ms.iter().sum();
        modes.push(Latency {
            mode,
            p50_ms: percentile(&ms, 0.5),
            p99_ms: percentile(&ms, 0.99),
            queries_per_second: ms.len() as f64 * 1e3 / total.max(f64::EPSILON),
        });
    }
    Ok(ScaleReport {
        chunks: searcher.bundle().chunks.len(),
        build_seconds,
        build_steps: steps.into_iter().map(|(step, seconds)| Step { step, seconds }).collect(),
        bundle_bytes: bytes.len(),
        load_ms,
        hnsw: dense.has_graph(),
        dense_recall_at_10: recall(&found, &exact),
        modes,
    })
}

fn print(report: &Report) -> Result<()> {
    let m = &report.machine;
    output::line(&format!("edgerag {} on {} {} ({} cpus)", report.edgerag, m.os, m.arch, m.cpus));
    if let Some(e) = &report.embedding {
        output::line(&format!(
            "\nembedding  {}: {} texts ({}, {:.0} characters on average)",
            e.model, e.texts, e.inputs, e.mean_characters
        ));
        let rows = |name: &str, rows: &[Throughput]| {
            for t in rows {
                output::line(&format!(
                    "  {name:<7} batch {:>3}  {:>8.1} sentences/s  {:>8.2} ms/sentence",
                    t.batch, t.sentences_per_second, t.ms_per_sentence
                ));
            }
        };
        rows("native", &e.native);
        match (&e.wasm, &e.wasm_skipped) {
            (Some(wasm), _) => rows("wasm", wasm),
            (None, Some(why)) => output::line(&format!("  wasm    skipped: {why}")),
            (None, None) => {}
        }
    }
    if let Some(r) = &report.real_vectors {
        output::line(&format!(
            "\nHNSW on {} ({} vectors, {} held-out queries; build {:.1} s; exact {:.2} ms)",
            r.bundle, r.vectors, r.queries, r.build_seconds, r.exact_p50_ms
        ));
        for h in &r.hnsw {
            output::line(&format!(
                "  ef_search {:>3}  recall@10 {:.3}  p50 {:.2} ms",
                h.ef_search, h.recall_at_10, h.p50_ms
            ));
        }
    }
    for s in &report.search {
        output::line(&format!(
            "\n{} synthetic chunks: build {:.1} s, {} bytes, load {:.1} ms, dense {} (recall@10 {:.3})",
            s.chunks,
            s.build_seconds,
            s.bundle_bytes,
            s.load_ms,
            if s.hnsw { "HNSW" } else { "exact" },
            s.dense_recall_at_10
        ));
        let steps: Vec<String> =
            s.build_steps.iter().map(|t| format!("{} {:.1} s", t.step, t.seconds)).collect();
        output::line(&format!("  build steps: {}", steps.join(", ")));
        for l in &s.modes {
            output::line(&format!(
                "  {:<7} p50 {:>7.2} ms  p99 {:>7.2} ms  {:>8.1} queries/s",
                l.mode.as_str(),
                l.p50_ms,
                l.p99_ms,
                l.queries_per_second
            ));
        }
    }
    if let Some(generation) = &report.generation {
        chat::print(generation);
    }
    Ok(())
}
