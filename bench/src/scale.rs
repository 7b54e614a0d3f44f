//! Search at sizes no judged data set here reaches: a synthetic corpus (see [`synthetic`]) of
//! each size goes through the real build, then is loaded and queried natively and, with
//! `--wasm-pkg`, by the wasm module under Node (`wasm-search.mjs`).
//!
//! Queries are embedded by the real model (all-MiniLM-L6-v2) on both sides, so dense and
//! hybrid latencies are end to end; the chunks' vectors are synthetic stand-ins of the model's
//! dimension, so the HNSW graph, the bytes and the search work are those of a real bundle of
//! that size, while dense rankings mean nothing.

use std::rc::Rc;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use edgerag_cli::models::ModelFiles;
use edgerag_cli::{indexing, output};
use edgerag_core::bundle::{Embed, encoded_len};
use edgerag_core::index::dense::Quantization;
use edgerag_core::load::from_text;
use edgerag_core::{BuildOptions, Bundle, BundleBuilder, Mode, SearchOptions, Searcher};
use serde::{Deserialize, Serialize};

use crate::scale_paged::{self, PagedScale};
use crate::{Args, Latency, SEED, recall, script, synthetic, timed_searches};

/// The modes timed in wasm (the others are parts of hybrid).
const WASM_MODES: [Mode; 2] = [Mode::Bm25, Mode::Hybrid];
/// Corpora of more chunks are measured in format 4 only: built without the HNSW graph (which
/// format 4 does not keep) and never loaded whole.
pub(super) const WHOLE_UP_TO: usize = 100_000;

/// One corpus size's measurements.
#[derive(Debug, Serialize)]
pub(super) struct ScaleReport {
    pub(super) chunks: usize,
    pub(super) build_seconds: f64,
    /// Seconds per build step, in order.
    pub(super) build_steps: Vec<Step>,
    /// The bundle in format 3, loaded whole (up to [`WHOLE_UP_TO`] chunks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) whole: Option<WholeScale>,
    /// The same bundle in format 4, read by range from a file.
    pub(super) paged: PagedScale,
}

/// A synthetic bundle of format 3, loaded whole.
#[derive(Debug, Serialize)]
pub(super) struct WholeScale {
    pub(super) bytes: BundleBytes,
    /// Native load (bytes to a ready searcher).
    pub(super) load_ms: f64,
    /// Whether dense search used the HNSW graph (else exact search).
    pub(super) hnsw: bool,
    /// Share of the exact top 10 that dense search found (1 for exact search).
    pub(super) dense_recall_at_10: f64,
    /// Vector search alone (query vectors given): exact, and as dense search runs it.
    pub(super) vectors_exact: Latency,
    pub(super) vectors_dense: Latency,
    pub(super) native: Vec<ModeLatency>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) wasm: Option<WasmSearch>,
}

#[derive(Debug, Serialize)]
pub(super) struct Step {
    pub(super) step: &'static str,
    pub(super) seconds: f64,
}

#[derive(Debug, Serialize)]
pub(super) struct ModeLatency {
    pub(super) mode: Mode,
    #[serde(flatten)]
    pub(super) latency: Latency,
}

/// The wasm module under Node on one bundle.
#[derive(Debug, Serialize)]
pub(super) struct WasmSearch {
    /// Bytes to a ready runtime (`new Edgerag(bytes)`), the model's vectors excluded.
    pub(super) load_ms: f64,
    /// The wasm instance's memory once the bundle is loaded and queried.
    pub(super) memory_bytes: u64,
    /// Peak resident memory of the Node process.
    pub(super) peak_rss_bytes: u64,
    pub(super) modes: Vec<ModeLatency>,
}

/// What `wasm-search.mjs` prints.
#[derive(Deserialize)]
struct WasmTimed {
    load_ms: f64,
    memory_bytes: u64,
    peak_rss_bytes: u64,
    modes: Vec<WasmMode>,
}

#[derive(Deserialize)]
struct WasmMode {
    mode: Mode,
    ms: Vec<f64>,
}

/// Encoded bytes of a bundle's parts, per chunk.
#[derive(Debug, Serialize)]
pub(super) struct BundleBytes {
    pub(super) chunks: usize,
    /// The whole file.
    pub(super) total: usize,
    /// Bytes of the source text, where known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) source_text: Option<usize>,
    /// Per chunk: text and metadata (chunks, documents and manifest).
    pub(super) text_per_chunk: f64,
    pub(super) graph_per_chunk: f64,
    pub(super) bm25_per_chunk: f64,
    /// Per chunk: the dense index as stored (vectors and HNSW graph), and requantized to the
    /// other precision.
    pub(super) vectors_f32_per_chunk: Option<f64>,
    pub(super) vectors_int8_per_chunk: Option<f64>,
}

impl BundleBytes {
    pub(super) fn of(bundle: &Bundle, total: usize, source_text: Option<usize>) -> Self {
        let parts = bundle.part_sizes();
        let chunks = bundle.chunks.len().max(1) as f64;
        let per = |bytes: usize| bytes as f64 / chunks;
        let (mut f32_bytes, mut int8_bytes) = (None, None);
        if let Some(dense) = &bundle.dense {
            let mut other = dense.clone();
            let stored = Some(per(parts.dense));
            if dense.params().quantization == Quantization::Int8 {
                other.requantize(Quantization::F32);
                (int8_bytes, f32_bytes) = (stored, Some(per(encoded_len(&other))));
            } else {
                other.requantize(Quantization::Int8);
                (f32_bytes, int8_bytes) = (stored, Some(per(encoded_len(&other))));
            }
        }
        Self {
            chunks: bundle.chunks.len(),
            total,
            source_text,
            text_per_chunk: per(parts.chunks + parts.documents + parts.manifest),
            graph_per_chunk: per(parts.graph),
            bm25_per_chunk: per(parts.bm25),
            vectors_f32_per_chunk: f32_bytes,
            vectors_int8_per_chunk: int8_bytes,
        }
    }
}

/// Builds a synthetic bundle of `size` chunks and times it, whole (up to [`WHOLE_UP_TO`]
/// chunks) and in format 4.
pub(super) fn measure(
    size: usize,
    queries: usize,
    model: &ModelFiles,
    args: &Args,
) -> Result<ScaleReport> {
    let quiet = args.json;
    let embedder = model.load()?;
    let spec = embedder.spec();
    if spec.dimension as usize != synthetic::DIMENSION {
        bail!(
            "the synthetic vectors have {} dimensions, the model {}",
            synthetic::DIMENSION,
            spec.dimension
        );
    }
    let corpus = synthetic::corpus(size, queries, SEED);
    let options = BuildOptions { corpus: format!("synthetic-{size}"), ..BuildOptions::default() };
    let mut builder = BundleBuilder::new(options)?;
    if size > WHOLE_UP_TO {
        builder.without_hnsw();
    }
    builder.embed_with(Box::new(synthetic::HashEmbedder::new(SEED, spec)));
    let bar = output::progress(size as u64, &format!("{size} chunks"), quiet);
    for (i, text) in corpus.texts.iter().enumerate() {
        builder.add(from_text(&format!("synthetic/{i}"), "", text)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let start = Instant::now();
    let (bundle, steps) = indexing::finish_timed(builder, quiet)?;
    let build_seconds = start.elapsed().as_secs_f64();
    let whole = match size <= WHOLE_UP_TO {
        true => Some(measure_whole(&bundle, &corpus, model, args)?),
        false => None,
    };
    let embedder: Rc<dyn Embed> = Rc::new(model.load()?);
    let paged = scale_paged::measure(&bundle, &corpus.queries, &embedder, quiet)?;
    Ok(ScaleReport {
        chunks: bundle.chunks.len(),
        build_seconds,
        build_steps: steps.into_iter().map(|(step, seconds)| Step { step, seconds }).collect(),
        whole,
        paged,
    })
}

/// Loads `bundle` (built from `corpus`) whole and times its queries, natively and in wasm.
fn measure_whole(
    bundle: &Bundle,
    corpus: &synthetic::Corpus,
    model: &ModelFiles,
    args: &Args,
) -> Result<WholeScale> {
    let quiet = args.json;
    let size = bundle.chunks.len();
    let bytes = bundle.to_bytes()?;
    let text_bytes = corpus.texts.iter().map(String::len).sum();
    let embedder = model.load()?;
    let vectors: Vec<Vec<f32>> = corpus
        .queries
        .iter()
        .map(|q| embedder.embed_query(q))
        .collect::<edgerag_core::Result<_>>()?;
    let start = Instant::now();
    let mut searcher = Searcher::from_bytes(&bytes)?;
    let load_ms = start.elapsed().as_secs_f64() * 1e3;
    let dense = searcher.bundle().dense.as_ref().context("the synthetic bundle has no vectors")?;
    let rows: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
    let (found, found_ms) = timed_searches(&rows, |q| dense.search(q, 10, |_| true))?;
    let (exact, exact_ms) = timed_searches(&rows, |q| dense.search_exact(q, 10, |_| true))?;
    let hnsw = dense.has_graph();
    let mut native = Vec::new();
    for mode in [Mode::Bm25, Mode::Dense, Mode::Graph, Mode::Hybrid] {
        // A fresh embedder drops the searcher's cached query vectors and rankings, so every
        // mode embeds its queries anew.
        searcher.set_embedder(Box::new(model.load()?))?;
        let options = SearchOptions { mode, k: 10, ..SearchOptions::default() };
        let bar = output::progress(corpus.queries.len() as u64, &format!("{size} {mode}"), quiet);
        let mut ms = Vec::with_capacity(corpus.queries.len());
        for query in &corpus.queries {
            let start = Instant::now();
            searcher.search(query, &options)?;
            ms.push(start.elapsed().as_secs_f64() * 1e3);
            bar.inc(1);
        }
        bar.finish_and_clear();
        native.push(ModeLatency { mode, latency: Latency::of(&ms) });
    }
    let wasm = match &args.wasm_pkg {
        Some(pkg) => Some(wasm_search(pkg, model, &bytes, &corpus.queries, quiet)?),
        None => None,
    };
    Ok(WholeScale {
        bytes: BundleBytes::of(bundle, bytes.len(), Some(text_bytes)),
        load_ms,
        hnsw,
        dense_recall_at_10: recall(&found, &exact),
        vectors_exact: Latency::of(&exact_ms),
        vectors_dense: Latency::of(&found_ms),
        native,
        wasm,
    })
}

/// Loads `bundle` into the wasm module under Node and times [`WASM_MODES`] on `queries`.
fn wasm_search(
    pkg: &std::path::Path,
    model: &ModelFiles,
    bundle: &[u8],
    queries: &[String],
    quiet: bool,
) -> Result<WasmSearch> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("bench.bundle");
    std::fs::write(&path, bundle)?;
    let bar = output::progress(1, "wasm search", quiet);
    let input = serde_json::json!({
        "model": script::absolute(&model.dir), "bundle": path, "queries": queries,
        "modes": WASM_MODES,
    });
    let source = ("wasm-search.mjs", include_str!("wasm-search.mjs"));
    let timed: WasmTimed = script::run_wasm(pkg, source, input, "wasm search")?;
    bar.finish_and_clear();
    Ok(WasmSearch {
        load_ms: timed.load_ms,
        memory_bytes: timed.memory_bytes,
        peak_rss_bytes: timed.peak_rss_bytes,
        modes: timed
            .modes
            .into_iter()
            .map(|m| ModeLatency { mode: m.mode, latency: Latency::of(&m.ms) })
            .collect(),
    })
}

/// The search section of the Markdown report.
pub(super) fn markdown(reports: &[ScaleReport]) -> String {
    use crate::format::{bytes, ms, ratio, table};
    let latency = |modes: &[ModeLatency], mode: Mode| {
        modes.iter().find(|m| m.mode == mode).map_or("–".to_owned(), |m| {
            format!("{} / {}", ms(m.latency.p50_ms), ms(m.latency.p99_ms))
        })
    };
    let wholes = || reports.iter().filter_map(|r| Some((r.chunks, r.whole.as_ref()?)));
    let mut rows = Vec::new();
    for (chunks, r) in wholes() {
        for (platform, modes, load_ms, memory) in [
            ("native", Some(&r.native), Some(r.load_ms), None),
            (
                "wasm",
                r.wasm.as_ref().map(|w| &w.modes),
                r.wasm.as_ref().map(|w| w.load_ms),
                r.wasm.as_ref().map(|w| w.memory_bytes),
            ),
        ] {
            let Some(modes) = modes else { continue };
            let mut row = vec![format!("{chunks}"), platform.to_owned()];
            row.push(load_ms.map_or("–".to_owned(), ms));
            row.push(memory.map_or("–".to_owned(), |b| bytes(b as f64)));
            for mode in [Mode::Bm25, Mode::Dense, Mode::Graph, Mode::Hybrid] {
                row.push(latency(modes, mode));
            }
            rows.push(row);
        }
    }
    let mut out = String::from(
        "## Search at scale (synthetic corpora)\n\nA synthetic corpus of each size (Zipf-distributed \
         pseudo-words, one proper name per chunk) goes through the real build. Queries (2–5 of a \
         chunk's words) are embedded by the real model in dense and hybrid mode, each mode starting \
         with the searcher's caches empty, so those latencies are end to end; the chunks' vectors are synthetic stand-ins of the model's dimension, so \
         the work is a real bundle's while dense rankings mean nothing. wasm is the module under \
         Node on one thread; load is bytes to a ready runtime, memory what loading added to the \
         process.\n\n",
    );
    let header = [
        "chunks",
        "platform",
        "load",
        "memory",
        "bm25 p50 / p99",
        "dense p50 / p99",
        "graph p50 / p99",
        "hybrid p50 / p99",
    ];
    out.push_str(&table(&header, &rows));
    out.push_str("\nVector search alone (given the query vector), HNSW against brute force:\n\n");
    let rows: Vec<Vec<String>> = wholes()
        .map(|(chunks, r)| {
            vec![
                format!("{chunks}"),
                if r.hnsw { "HNSW" } else { "exact (below the HNSW threshold)" }.to_owned(),
                format!("{:.3}", r.dense_recall_at_10),
                format!("{:.0}", r.vectors_dense.queries_per_second),
                format!("{:.0}", r.vectors_exact.queries_per_second),
                ratio(r.vectors_dense.queries_per_second, r.vectors_exact.queries_per_second),
            ]
        })
        .collect();
    let header =
        ["vectors", "dense search", "recall@10", "queries/s", "brute force queries/s", "speed-up"];
    out.push_str(&table(&header, &rows));
    out.push_str(
        "\nRecall on these vectors understates HNSW: sums of random projections are nearly \
         orthogonal, so their exact top 10 is close to arbitrary (see the real vectors above).\n\n",
    );
    let rows: Vec<Vec<String>> = reports
        .iter()
        .map(|r| {
            let steps: Vec<String> =
                r.build_steps.iter().map(|s| format!("{} {:.1} s", s.step, s.seconds)).collect();
            vec![format!("{}", r.chunks), format!("{:.1} s", r.build_seconds), steps.join(", ")]
        })
        .collect();
    out.push_str(&table(&["chunks", "build", "steps"], &rows));
    out.push_str(&scale_paged::markdown(reports));
    out
}

/// The bundle bytes section of the Markdown report: `named` real bundles, then the synthetic
/// ones of `scale`.
pub(super) fn bytes_markdown(named: &[crate::NamedBytes], scale: &[ScaleReport]) -> String {
    use crate::format::{bytes, ratio, table};
    let per = |v: f64| format!("{v:.0} B");
    let rows: Vec<Vec<String>> = named
        .iter()
        .map(|n| (n.name.clone(), &n.bytes))
        .chain(scale.iter().filter_map(|s| {
            Some((format!("synthetic, {} chunks", s.chunks), &s.whole.as_ref()?.bytes))
        }))
        .map(|(name, b)| {
            let chunks = b.chunks.max(1) as f64;
            vec![
                name,
                format!("{}", b.chunks),
                b.source_text.map_or("–".to_owned(), |t| per(t as f64 / chunks)),
                per(b.text_per_chunk),
                per(b.graph_per_chunk),
                per(b.bm25_per_chunk),
                b.vectors_f32_per_chunk.map_or("–".to_owned(), per),
                b.vectors_int8_per_chunk.map_or("–".to_owned(), per),
                bytes(b.total as f64),
                b.source_text.map_or("–".to_owned(), |t| ratio(b.total as f64, t as f64)),
            ]
        })
        .collect();
    let mut out = String::from(
        "## Bundle bytes\n\nEncoded bytes per chunk of each part of the bundle. Text includes the \
         chunks' metadata and the document table; vectors include the HNSW graph, as stored and \
         requantized to the other precision. The file is as stored (f32 vectors where the other \
         column is computed).\n\n",
    );
    let header = [
        "bundle",
        "chunks",
        "source text / chunk",
        "text",
        "graph",
        "BM25",
        "vectors f32",
        "vectors int8",
        "file",
        "file ÷ source text",
    ];
    out.push_str(&table(&header, &rows));
    out
}
