//! Embedding throughput on the same texts: edgerag natively and in wasm (under Node), and the
//! peers a user would pick instead in JavaScript: onnxruntime-web (int8 and f32 ONNX) and
//! transformers.js, all on all-MiniLM-L6-v2 and one wasm thread. Every run also returns its
//! vector of the first text, compared with edgerag's native one, so a run computing something
//! else cannot pass for faster.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use edgerag_cli::models::{Format, ModelFiles};
use edgerag_cli::output;
use edgerag_core::Bundle;
use edgerag_core::embed::{Embedder, quantize};
use serde::{Deserialize, Serialize};

use crate::retrieval::SciFact;
use crate::{Args, Peers, SEED, script, synthetic};

/// Texts to embed and where they came from.
pub(super) struct Inputs {
    source: String,
    texts: Vec<String>,
}

/// The first `--texts` chunks of SciFact, else of `--bundle`, else synthetic texts.
pub(super) fn inputs(args: &Args, scifact: Option<&SciFact>, bundle: Option<&Bundle>) -> Inputs {
    let chunks = |bundle: &Bundle| -> Vec<String> {
        bundle.chunks.iter().take(args.texts).map(|c| c.text.clone()).collect()
    };
    match (scifact, bundle, &args.bundle) {
        (Some(scifact), _, _) => {
            Inputs { source: "SciFact chunks".to_owned(), texts: chunks(scifact.searcher.bundle()) }
        }
        (None, Some(bundle), Some(path)) => {
            Inputs { source: format!("chunks of {}", path.display()), texts: chunks(bundle) }
        }
        _ => Inputs {
            source: "synthetic texts".to_owned(),
            texts: synthetic::corpus(args.texts, 0, SEED).texts,
        },
    }
}

/// Every embedder's throughput on the same texts.
#[derive(Debug, Serialize)]
pub(super) struct EmbeddingReport {
    pub(super) model: String,
    /// Where the texts came from.
    pub(super) inputs: String,
    pub(super) texts: usize,
    pub(super) mean_characters: f64,
    pub(super) runs: Vec<EmbeddingRun>,
    /// Runs not made, and why.
    pub(super) skipped: Vec<String>,
}

/// One embedder's measurement.
#[derive(Debug, Serialize)]
pub(super) struct EmbeddingRun {
    /// What ran, e.g. "edgerag wasm" or "onnxruntime-web 1.30.0".
    pub(super) name: String,
    /// How: platform, threads, weights.
    pub(super) setup: String,
    pub(super) load_seconds: f64,
    pub(super) batches: Vec<Throughput>,
    /// Cosine similarity of its vector of the first text with edgerag's native one.
    pub(super) cosine_to_native: f64,
    /// Peak resident memory of its process (not measured for the native run, which shares
    /// the benchmark's process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) peak_memory_bytes: Option<u64>,
}

/// Throughput at one batch size.
#[derive(Debug, Serialize)]
pub(super) struct Throughput {
    pub(super) batch: usize,
    pub(super) sentences_per_second: f64,
    pub(super) ms_per_sentence: f64,
}

/// What a script prints: the wasm one and the peers share this shape.
#[derive(Debug, Deserialize)]
struct Measured {
    #[serde(default)]
    runtime: Option<String>,
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    backend: Option<String>,
    load_seconds: f64,
    batches: Vec<Timed>,
    vector: Vec<f32>,
    peak_rss_bytes: u64,
}

/// Seconds to embed every text, `batch` at a time.
#[derive(Debug, Deserialize)]
struct Timed {
    batch: usize,
    seconds: f64,
}

/// Measures every embedder available on `inputs`.
pub(super) fn measure(
    args: &Args,
    files: &ModelFiles,
    inputs: Inputs,
    peers: Option<&Peers>,
) -> Result<EmbeddingReport> {
    let texts = &inputs.texts;
    let batches = [1, args.batch.min(texts.len()).max(1)];
    let count = texts.len();
    // The model as given and, from safetensors, the q8_0 file `edgerag models quantize` makes.
    let (given, quantized) = match &files.format {
        Format::Safetensors { config, tokenizer, weights } => {
            ("f32", Some(quantize(config, tokenizer, weights)?))
        }
        Format::Gguf(_) => ("q8_0", None),
    };
    let forms: Vec<(&str, Option<&[u8]>)> = std::iter::once((given, None))
        .chain(quantized.as_deref().map(|q| ("q8_0", Some(q))))
        .collect();
    let (mut runs, reference) = native_runs(args, files, texts, &batches, &forms)?;
    let mut skipped = Vec::new();
    let mut measured = Vec::new();
    match &args.wasm_pkg {
        None => skipped.push(format!("edgerag wasm: {}", script::WASM_SKIPPED)),
        Some(pkg) => measured.extend(wasm_runs(pkg, files, texts, &batches, &forms, args.json)?),
    }
    match peers {
        None => skipped.push("onnxruntime-web, transformers.js: pass --peers".to_owned()),
        Some(peers) => measured.extend(peer_runs(peers, texts, &batches, args.json)?),
    }
    runs.extend(measured.into_iter().map(|(measured, name, setup)| EmbeddingRun {
        name,
        setup,
        load_seconds: measured.load_seconds,
        batches: measured.batches.iter().map(|t| throughput(t.batch, count, t.seconds)).collect(),
        cosine_to_native: cosine(&measured.vector, &reference),
        peak_memory_bytes: Some(measured.peak_rss_bytes),
    }));
    let characters: usize = texts.iter().map(|t| t.chars().count()).sum();
    Ok(EmbeddingReport {
        model: files.options().model_id,
        inputs: inputs.source,
        texts: count,
        mean_characters: characters as f64 / count.max(1) as f64,
        runs,
        skipped,
    })
}

/// The native embedder on each of `forms` (weights' name, and the GGUF file for quantized
/// ones), at each batch size; with the first form's vector of the first text, which the
/// other runs are compared with.
fn native_runs(
    args: &Args,
    files: &ModelFiles,
    texts: &[String],
    batches: &[usize],
    forms: &[(&str, Option<&[u8]>)],
) -> Result<(Vec<EmbeddingRun>, Vec<f32>)> {
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let mut runs = Vec::new();
    let mut reference = Vec::new();
    for &(weights, gguf) in forms {
        let start = Instant::now();
        let embedder = match gguf {
            None => files.load()?,
            Some(bytes) => Embedder::from_gguf(bytes, files.options())?,
        };
        let load_seconds = start.elapsed().as_secs_f64();
        let mut native = Vec::new();
        for &batch in batches {
            let label = format!("native {weights} ×{batch}");
            let bar = output::progress(texts.len() as u64, &label, args.json);
            embedder.embed_documents(&refs[..batch])?;
            let start = Instant::now();
            for group in refs.chunks(batch) {
                embedder.embed_documents(group)?;
                bar.inc(group.len() as u64);
            }
            bar.finish_and_clear();
            native.push(throughput(batch, texts.len(), start.elapsed().as_secs_f64()));
        }
        let vector = embedder.embed_documents(&refs[..1])?.remove(0);
        if reference.is_empty() {
            reference = vector.clone();
        }
        runs.push(EmbeddingRun {
            name: format!("edgerag native ({weights})"),
            setup: match weights {
                "q8_0" => format!(
                    "{}, 1 thread for the products and {threads} for the rest",
                    weights_setup(weights)
                ),
                _ => format!("{}, {threads} threads", weights_setup(weights)),
            },
            load_seconds,
            batches: native,
            cosine_to_native: cosine(&vector, &reference),
            peak_memory_bytes: None,
        });
    }
    Ok((runs, reference))
}

/// The wasm embedder (the package `pkg`) under Node on each of `forms`: what each measured,
/// with its name and setup.
fn wasm_runs(
    pkg: &Path,
    files: &ModelFiles,
    texts: &[String],
    batches: &[usize],
    forms: &[(&str, Option<&[u8]>)],
    quiet: bool,
) -> Result<Vec<(Measured, String, String)>> {
    let mut runs = Vec::new();
    for &(weights, gguf) in forms {
        // The script reads the model from a path: the quantized form goes to a file.
        let file = match gguf {
            Some(bytes) => {
                let file = tempfile::Builder::new().suffix(".gguf").tempfile()?;
                std::fs::write(file.path(), bytes)?;
                Some(file)
            }
            None => None,
        };
        let model = file.as_ref().map_or_else(|| files.dir.clone(), |f| f.path().to_path_buf());
        let bar = output::progress(1, &format!("wasm embedding, {weights}"), quiet);
        let input = serde_json::json!({
            "model": script::absolute(&model), "texts": texts, "batches": batches,
        });
        let source = ("wasm-embed.mjs", include_str!("wasm-embed.mjs"));
        let measured: Measured = script::run_wasm(pkg, source, input, "the wasm embedder")?;
        bar.finish_and_clear();
        let setup = format!("wasm32 + simd128 under Node, {}, 1 thread", weights_setup(weights));
        runs.push((measured, format!("edgerag wasm ({weights})"), setup));
    }
    Ok(runs)
}

/// The peers (onnxruntime-web int8 and f32, transformers.js int8): what each measured, with
/// its name and setup.
fn peer_runs(
    peers: &Peers,
    texts: &[String],
    batches: &[usize],
    quiet: bool,
) -> Result<Vec<(Measured, String, String)>> {
    let mut runs = Vec::new();
    for (script_name, variant) in
        [("embed-ort.mjs", "int8"), ("embed-ort.mjs", "f32"), ("embed-transformers.mjs", "int8")]
    {
        let bar = output::progress(1, &format!("{script_name} {variant}"), quiet);
        let measured = peer(peers, script_name, variant, texts, batches)?;
        bar.finish_and_clear();
        let name = format!(
            "{} {}",
            measured.runtime.as_deref().unwrap_or(script_name),
            measured.version.as_deref().unwrap_or("")
        );
        let backend = measured.backend.clone().unwrap_or_default();
        runs.push((measured, name, format!("{backend}, {variant} ONNX")));
    }
    Ok(runs)
}

/// How edgerag computes with weights of this kind.
fn weights_setup(weights: &str) -> &'static str {
    if weights == "q8_0" {
        "q8_0 GGUF (integer matrix products)"
    } else {
        "candle, f32 safetensors"
    }
}

/// Runs one embedding peer script on the texts.
fn peer(
    peers: &Peers,
    script_name: &str,
    variant: &str,
    texts: &[String],
    batches: &[usize],
) -> Result<Measured> {
    let input = serde_json::json!({
        "model": peers.model, "variant": variant, "texts": texts, "batches": batches,
    });
    script::run_peer(peers, script_name, &input, &format!("{script_name} ({variant})"))
}

fn throughput(batch: usize, texts: usize, seconds: f64) -> Throughput {
    let seconds = seconds.max(f64::EPSILON);
    Throughput {
        batch,
        sentences_per_second: texts as f64 / seconds,
        ms_per_sentence: seconds * 1e3 / texts as f64,
    }
}

/// Cosine similarity (0 for vectors of different lengths or zero vectors), clamped to
/// [-1, 1]: rounding can put a vector's cosine with itself a hair past 1.
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    if a.len() != b.len() {
        return 0.0;
    }
    let dot: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator == 0.0 { 0.0 } else { (dot / denominator).clamp(-1.0, 1.0) }
}

/// The section of the Markdown report.
pub(super) fn markdown(e: &EmbeddingReport) -> String {
    use crate::format::{bytes, ratio, table};
    let batches: Vec<usize> =
        e.runs.first().map(|r| r.batches.iter().map(|t| t.batch).collect()).unwrap_or_default();
    // The ratios are taken to the faster form of the wasm model where both were measured.
    let wasm = ["edgerag wasm (q8_0)", "edgerag wasm (f32)"]
        .iter()
        .find_map(|name| e.runs.iter().find(|r| r.name == *name));
    let wasm_name = wasm.map_or("edgerag wasm", |w| w.name.as_str());
    let speed = |run: &EmbeddingRun, batch: usize| {
        run.batches.iter().find(|t| t.batch == batch).map_or(0.0, |t| t.sentences_per_second)
    };
    let mut header = vec!["embedder".to_owned(), "setup".to_owned()];
    for batch in &batches {
        header.push(format!("batch {batch}: sentences/s (ms each)"));
    }
    header.extend(["load".to_owned(), "peak memory".to_owned(), "cosine to native".to_owned()]);
    for batch in &batches {
        header.push(format!("{wasm_name} ÷ it, batch {batch}"));
    }
    let rows: Vec<Vec<String>> = e
        .runs
        .iter()
        .map(|run| {
            let mut row = vec![run.name.clone(), run.setup.clone()];
            for t in &run.batches {
                row.push(format!("{:.2} ({:.0} ms)", t.sentences_per_second, t.ms_per_sentence));
            }
            row.push(format!("{:.2} s", run.load_seconds));
            row.push(run.peak_memory_bytes.map_or("–".to_owned(), |b| bytes(b as f64)));
            row.push(format!("{:.4}", run.cosine_to_native));
            for &batch in &batches {
                row.push(
                    wasm.map_or("–".to_owned(), |w| ratio(speed(w, batch), speed(run, batch))),
                );
            }
            row
        })
        .collect();
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut out = format!(
        "## Embedding ({})\n\n{} texts ({}, {:.0} characters on average), embedded one per call and \
         then {} per call, after one warm-up call; tokenising, pooling and normalising included. \
         Each embedder's vector of the first text is compared with edgerag native's (f32). Above \
         1× in the last columns, {wasm_name} is faster. The q8_0 model is the file `edgerag \
         models quantize` makes from the same weights (as the Worker uses).\n\n",
        e.model,
        e.texts,
        e.inputs,
        e.mean_characters,
        batches.last().copied().unwrap_or(1),
    );
    out.push_str(&table(&header, &rows));
    for why in &e.skipped {
        out.push_str(&format!("\nNot measured: {why}.\n"));
    }
    out
}
