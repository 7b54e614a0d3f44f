//! The embedder against sentence-transformers: real sentences, reference vectors computed by
//! `scripts/reference-embeddings.py` (`fixtures/minilm-reference.json`).
//!
//! Needs the model files (`config.json`, `tokenizer.json`, `model.safetensors`) in
//! `$EDGERAG_MODEL_DIR`, or else in `$EDGERAG_CACHE/models/all-MiniLM-L6-v2` (the cache root
//! defaults to `~/.cache/edgerag`); `edgerag models fetch` or `make models` puts them there.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Instant;

use edgerag_core::Error;
use edgerag_core::chunk::{SizeUnit, Sizer};
use edgerag_core::embed::{Embedder, EmbedderOptions, Pooling};
use serde::Deserialize;

use crate::common::fixture;

#[derive(Deserialize)]
pub(crate) struct Reference {
    pub(crate) sentences: Vec<Sentence>,
}

#[derive(Deserialize)]
pub(crate) struct Sentence {
    pub(crate) text: String,
    pub(crate) tokens: usize,
    pub(crate) vector: Vec<f32>,
}

/// The sentence-transformers reference: 70 texts (short claims, sentences, 300+ token texts).
pub(crate) fn reference() -> &'static Reference {
    static REFERENCE: OnceLock<Reference> = OnceLock::new();
    REFERENCE.get_or_init(|| serde_json::from_slice(&fixture("minilm-reference.json")).unwrap())
}

fn model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("EDGERAG_MODEL_DIR") {
        return dir.into();
    }
    let cache = std::env::var_os("EDGERAG_CACHE").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/edgerag")
    });
    cache.join("models/all-MiniLM-L6-v2")
}

/// The three model files; fails (does not skip) when they are missing.
pub(crate) fn model_files() -> &'static [Vec<u8>; 3] {
    static FILES: OnceLock<[Vec<u8>; 3]> = OnceLock::new();
    FILES.get_or_init(|| {
        let dir = model_dir();
        ["config.json", "tokenizer.json", "model.safetensors"].map(|name| {
            let path = dir.join(name);
            std::fs::read(&path).unwrap_or_else(|e| {
                panic!(
                    "{}: {e}\nThe embedding tests need all-MiniLM-L6-v2: run `edgerag models \
                     fetch` (or `make models`), or point EDGERAG_MODEL_DIR at a directory \
                     holding config.json, tokenizer.json and model.safetensors.",
                    path.display()
                )
            })
        })
    })
}

fn embedder(options: EmbedderOptions) -> Embedder {
    let [config, tokenizer, weights] = model_files();
    Embedder::from_bytes(config, tokenizer, weights, options).unwrap()
}

/// A fresh MiniLM embedder with default options, boxed for builders and searchers.
pub(crate) fn minilm_boxed() -> Box<dyn edgerag_core::bundle::Embed> {
    Box::new(embedder(EmbedderOptions::minilm()))
}

/// The MiniLM embedder with default options, loaded once.
pub(crate) fn minilm() -> &'static Embedder {
    static EMBEDDER: OnceLock<Embedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| embedder(EmbedderOptions::minilm()))
}

pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

/// Checks every vector against the reference; returns the smallest cosine.
fn check(texts: &[&Sentence], vectors: &[Vec<f32>]) -> f32 {
    assert_eq!(vectors.len(), texts.len());
    let mut min = f32::INFINITY;
    for (sentence, vector) in texts.iter().zip(vectors) {
        assert_eq!(vector.len(), 384);
        let similarity = cosine(&sentence.vector, vector);
        assert!(
            similarity >= 0.999,
            "cosine {similarity} < 0.999 for ({} tokens) {:?}",
            sentence.tokens,
            sentence.text
        );
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
        min = min.min(similarity);
    }
    min
}

#[test]
#[allow(clippy::print_stderr)] // The numbers are worth seeing with --nocapture.
fn matches_sentence_transformers_one_at_a_time() {
    let embedder = embedder(EmbedderOptions { batch_size: 1, ..EmbedderOptions::minilm() });
    let sentences: Vec<&Sentence> = reference().sentences.iter().collect();
    assert!(sentences.len() >= 60);
    assert!(sentences.iter().filter(|s| s.tokens > 256).count() >= 6, "long texts present");
    let start = Instant::now();
    let vectors: Vec<Vec<f32>> =
        sentences.iter().map(|s| embedder.embed_documents(&[&s.text]).unwrap().remove(0)).collect();
    let seconds = start.elapsed().as_secs_f64();
    let min = check(&sentences, &vectors);
    eprintln!(
        "batch 1: {} texts, min cosine {min:.7} (1 - min = {:.1e}), {:.1} texts/s",
        sentences.len(),
        1.0 - min,
        sentences.len() as f64 / seconds
    );
}

#[test]
#[allow(clippy::print_stderr)]
fn matches_sentence_transformers_in_batches() {
    // Interleave the fixture (short claims, sentences, 300+ token texts) so every batch of 16
    // mixes lengths and most texts are padded.
    let all = &reference().sentences;
    let sentences: Vec<&Sentence> = (0..all.len()).map(|i| &all[i * 17 % all.len()]).collect();
    assert_ne!(all.len() % 17, 0, "17 is prime: the interleaving is a permutation");
    let texts: Vec<&str> = sentences.iter().map(|s| s.text.as_str()).collect();
    let start = Instant::now();
    let vectors = minilm().embed_documents(&texts).unwrap();
    let seconds = start.elapsed().as_secs_f64();
    let min = check(&sentences, &vectors);
    eprintln!(
        "batch 16: {} texts, min cosine {min:.7} (1 - min = {:.1e}), {:.1} texts/s",
        texts.len(),
        1.0 - min,
        texts.len() as f64 / seconds
    );
}

#[test]
fn padding_does_not_change_a_vector() {
    let sentences = &reference().sentences;
    let short = sentences.iter().min_by_key(|s| s.tokens).unwrap();
    let long = sentences.iter().max_by_key(|s| s.tokens).unwrap();
    let alone = minilm().embed_documents(&[&short.text]).unwrap().remove(0);
    let padded = minilm().embed_documents(&[&long.text, &short.text]).unwrap().remove(1);
    let largest = alone.iter().zip(&padded).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
    assert!(largest < 1e-5, "padding moved a component by {largest}");
}

#[test]
fn token_sizer_counts_like_the_python_tokenizer() {
    let sizer = minilm().token_sizer();
    assert_eq!(sizer.unit(), SizeUnit::Tokens);
    for sentence in &reference().sentences {
        assert_eq!(sizer.size(&sentence.text), sentence.tokens, "{:?}", sentence.text);
    }
    assert_eq!(sizer.size(""), 0);
}

#[test]
fn queries_take_the_query_prefix() {
    let text = "Which drugs lower blood pressure?";
    let plain = minilm().embed_query(text).unwrap();
    assert_eq!(plain, minilm().embed_documents(&[text]).unwrap()[0]);
    let e5_style = embedder(EmbedderOptions {
        query_prefix: "query: ".into(),
        document_prefix: "passage: ".into(),
        ..EmbedderOptions::minilm()
    });
    let prefixed = e5_style.embed_query(text).unwrap();
    assert!(cosine(&prefixed, &plain) < 0.9999, "the prefix changes the vector");
    assert_eq!(prefixed, minilm().embed_query(&format!("query: {text}")).unwrap());
    assert!(minilm().embed_documents(&[]).unwrap().is_empty());
}

#[test]
fn options_and_metadata() {
    let model = minilm();
    assert_eq!(model.dimension(), 384);
    assert_eq!(model.model_id(), "sentence-transformers/all-MiniLM-L6-v2");
    let cls = embedder_with(Pooling::Cls, false);
    let vector = cls.embed_query("The Normans gave their name to Normandy.").unwrap();
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() > 1e-3, "not normalised when normalize is off");
    // max_tokens is capped by the model's 512 positions.
    let wide = embedder(EmbedderOptions { max_tokens: 100_000, ..EmbedderOptions::minilm() });
    assert_eq!(wide.options().max_tokens, 512);
}

fn embedder_with(pooling: Pooling, normalize: bool) -> Embedder {
    embedder(EmbedderOptions { pooling, normalize, ..EmbedderOptions::minilm() })
}

#[test]
fn unusable_files_are_errors_naming_the_file() {
    let [config, tokenizer, weights] = model_files();
    let options = EmbedderOptions::minilm;
    let message = |result: Result<Embedder, Error>| match result {
        Ok(_) => panic!("accepted unusable files"),
        Err(e @ Error::Model(_)) => e.to_string(),
        Err(other) => panic!("unexpected error {other:?}"),
    };
    let m = message(Embedder::from_bytes(b"{", tokenizer, weights, options()));
    assert!(m.starts_with("embedding model: config.json: "), "{m}");
    let m = message(Embedder::from_bytes(config, b"not json", weights, options()));
    assert!(m.starts_with("embedding model: tokenizer.json: "), "{m}");
    let m = message(Embedder::from_bytes(config, tokenizer, &weights[..1000], options()));
    assert!(m.starts_with("embedding model: model.safetensors"), "{m}");
    let m = message(Embedder::from_bytes(config, tokenizer, b"", options()));
    assert!(m.starts_with("embedding model: model.safetensors"), "{m}");
    let zero = EmbedderOptions { batch_size: 0, ..options() };
    assert!(matches!(
        Embedder::from_bytes(config, tokenizer, weights, zero),
        Err(Error::Config(_))
    ));
}

#[test]
fn an_update_reuses_the_vectors_of_unchanged_chunks_only() {
    use edgerag_core::{BuildOptions, BundleBuilder, load};
    let normans = || load("normans.md", &fixture("normans.md")).unwrap();
    let builder = |previous: Option<&edgerag_core::Bundle>| {
        let options = BuildOptions { corpus: "update".into(), created: 1, ..Default::default() };
        let mut builder = BundleBuilder::new(options).unwrap();
        builder.embed_with(minilm_boxed());
        if let Some(previous) = previous {
            builder.reuse_vectors(previous).unwrap();
        }
        builder
    };
    let mut first = builder(None);
    first.add(normans());
    assert_eq!(first.reused_vectors(), 0);
    let first = first.finish(&mut |_| {}).unwrap();

    let mut update = builder(Some(&first));
    update.add(normans());
    let added =
        update.add(load("new.md", b"# Rollo\n\nRollo was the first ruler of Normandy.").unwrap());
    assert_eq!(update.reused_vectors(), first.chunks.len());
    let mut embedding = Vec::new();
    let updated = update
        .finish(&mut |p| {
            if p.stage == edgerag_core::bundle::Stage::Embed {
                embedding.push((p.done, p.total));
            }
        })
        .unwrap();
    // Embedding starts with the reused vectors done; only the new document's are embedded.
    assert_eq!(embedding[0], (first.chunks.len(), updated.chunks.len()));
    assert_eq!(updated.chunks.len(), first.chunks.len() + added);
    let (old, new) = (first.dense.as_ref().unwrap(), updated.dense.as_ref().unwrap());
    for (i, chunk) in first.chunks.iter().enumerate() {
        let at = updated.chunks.iter().position(|c| c.id == chunk.id).unwrap();
        // Taken, not embedded again: equal but for quantizing once more with the new chunks.
        let (old, new) = (old.vector(i as u32).unwrap(), new.vector(at as u32).unwrap());
        assert!(cosine(&old, &new) > 0.9999, "{}", chunk.id);
    }
}
