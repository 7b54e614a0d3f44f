//! The quantized model (one GGUF file, `q8_0` weights) against sentence-transformers'
//! reference vectors and the `f32` model it is made from. Needs the model files, as
//! `embed.rs` says.

use std::sync::OnceLock;
use std::time::Instant;

use edgerag_core::bundle::Embed;
use edgerag_core::embed::{Embedder, EmbedderOptions, quantize};
use edgerag_core::{BuildOptions, BundleBuilder, Error, Mode, SearchOptions, Searcher, load};

use crate::common::fixture;
use crate::embed::{Sentence, cosine, minilm, minilm_boxed, model_files, reference};

/// The quantized file of all-MiniLM-L6-v2, made once.
fn gguf() -> &'static [u8] {
    static GGUF: OnceLock<Vec<u8>> = OnceLock::new();
    GGUF.get_or_init(|| {
        let [config, tokenizer, weights] = model_files();
        quantize(config, tokenizer, weights).unwrap()
    })
}

fn q8_with(options: EmbedderOptions) -> Embedder {
    Embedder::from_gguf(gguf(), options).unwrap()
}

/// The quantized embedder with default options, loaded once.
fn q8() -> &'static Embedder {
    static EMBEDDER: OnceLock<Embedder> = OnceLock::new();
    EMBEDDER.get_or_init(|| q8_with(EmbedderOptions::minilm()))
}

#[test]
#[allow(clippy::print_stderr)] // The numbers are worth seeing with --nocapture.
fn quantizing_is_deterministic_and_the_file_and_weights_are_compact() {
    let [config, tokenizer, weights] = model_files();
    let again = quantize(config, tokenizer, weights).unwrap();
    assert!(again == gguf(), "the same files quantize to different bytes");

    let file = gguf().len();
    let (quantized, float) = (q8().weight_bytes(), minilm().weight_bytes());
    eprintln!(
        "quantized file {file} B (safetensors {} B); weights in memory: q8 {quantized} B, \
         f32 {float} B",
        weights.len()
    );
    assert!((24_000_000..30_000_000).contains(&file), "file of {file} bytes");
    // What the quantized encoder holds: q8_0 matrices and word embeddings, f32 vectors.
    assert!((24_000_000..27_000_000).contains(&quantized), "{quantized} bytes of weights");
    assert!(quantized * 3 < float, "q8 {quantized} B against f32 {float} B");
    assert!(q8().is_quantized() && !minilm().is_quantized());
}

/// Cosine of each vector with its reference: (smallest, mean).
fn against_reference(sentences: &[&Sentence], vectors: &[Vec<f32>]) -> (f32, f32) {
    assert_eq!(vectors.len(), sentences.len());
    let cosines: Vec<f32> = sentences
        .iter()
        .zip(vectors)
        .map(|(sentence, vector)| {
            assert_eq!(vector.len(), 384);
            let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
            cosine(&sentence.vector, vector)
        })
        .collect();
    let min = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    (min, cosines.iter().sum::<f32>() / cosines.len() as f32)
}

/// The smallest cosine to sentence-transformers' vectors that the quantized model must keep.
/// Measured: 0.9997 (mean 0.9998) batched and one at a time; the `f32` model reaches 0.9999.
/// (With the activations rounded to 8 bits, as GGML's `q8_0 × q8_0` products do, 0.9938; the
/// integer products round them to 16 bits.)
const MIN_COSINE: f32 = 0.999;

#[test]
#[allow(clippy::print_stderr)]
fn matches_sentence_transformers_in_batches_and_one_at_a_time() {
    // Interleaved as in embed.rs, so every batch of 16 mixes lengths and pads most texts.
    let all = &reference().sentences;
    let sentences: Vec<&Sentence> = (0..all.len()).map(|i| &all[i * 17 % all.len()]).collect();
    let texts: Vec<&str> = sentences.iter().map(|s| s.text.as_str()).collect();
    let start = Instant::now();
    let batched = q8().embed_documents(&texts).unwrap();
    let seconds = start.elapsed().as_secs_f64();
    let (min, mean) = against_reference(&sentences, &batched);
    eprintln!(
        "q8 batch 16: {} texts, cosine to sentence-transformers min {min:.4} mean {mean:.4}, \
         {:.1} texts/s (unoptimised test build)",
        texts.len(),
        texts.len() as f64 / seconds
    );
    assert!(min >= MIN_COSINE, "min cosine {min}");
    assert!(mean >= 0.9995, "mean cosine {mean}");

    let one = q8_with(EmbedderOptions { batch_size: 1, ..EmbedderOptions::minilm() });
    let single: Vec<Vec<f32>> =
        texts.iter().map(|t| one.embed_documents(&[t]).unwrap().remove(0)).collect();
    let (min_single, _) = against_reference(&sentences, &single);
    assert!(min_single >= MIN_COSINE, "min cosine {min_single} one at a time");
    // Batching changes nothing but padding, which attention skips: not a bit.
    assert_eq!(batched, single, "batched and single vectors differ");

    // And against the f32 model on the same texts.
    let float = minilm().embed_documents(&texts).unwrap();
    let to_float = float.iter().zip(&batched).map(|(a, b)| cosine(a, b));
    let min_float = to_float.fold(f32::INFINITY, f32::min);
    eprintln!("q8 against f32: min cosine {min_float:.4}");
    assert!(min_float >= MIN_COSINE, "min cosine {min_float} to the f32 model");
}

#[test]
fn same_spec_as_the_f32_model_so_each_searches_the_others_bundles() {
    assert_eq!(Embed::spec(q8()), Embed::spec(minilm()));
    assert_eq!(q8().model_id(), EmbedderOptions::MINILM_ID);
    let sizer = q8().token_sizer();
    let text = &reference().sentences[0].text;
    use edgerag_core::chunk::Sizer;
    assert_eq!(sizer.size(text), minilm().token_sizer().size(text));

    let build = |embedder: Box<dyn Embed>| {
        let options = BuildOptions { corpus: "normans".into(), created: 1, ..Default::default() };
        let mut builder = BundleBuilder::new(options).unwrap();
        builder.embed_with(embedder);
        builder.add(load("normans.md", &fixture("normans.md")).unwrap());
        builder.finish(&mut |_| {}).unwrap()
    };
    let q8_boxed = || -> Box<dyn Embed> { Box::new(q8_with(EmbedderOptions::minilm())) };
    let options = SearchOptions { k: 3, mode: Mode::Dense, ..SearchOptions::default() };
    // No query word occurs in the answer: only the embedding connects them.
    let query = "Scandinavian seafarers who raided the French coast";
    let top = |searcher: &Searcher| -> Vec<String> {
        searcher.search(query, &options).unwrap().into_iter().map(|h| h.chunk_id).collect()
    };
    for bundle in [build(minilm_boxed()), build(q8_boxed())] {
        let by_float = top(&Searcher::new(bundle.clone()).with_embedder(minilm_boxed()).unwrap());
        let by_q8 = top(&Searcher::new(bundle).with_embedder(q8_boxed()).unwrap());
        assert_eq!(by_float[0], by_q8[0], "the best chunk differs");
        assert_eq!(by_float.len(), 3);
    }
}

#[test]
fn padding_does_not_change_a_vector() {
    let sentences = &reference().sentences;
    let short = sentences.iter().min_by_key(|s| s.tokens).unwrap();
    let long = sentences.iter().max_by_key(|s| s.tokens).unwrap();
    let alone = q8().embed_documents(&[&short.text]).unwrap().remove(0);
    let padded = q8().embed_documents(&[&long.text, &short.text]).unwrap().remove(1);
    // Attention sums over a text's own tokens only, and every other step works token by
    // token: padding changes no bit.
    assert_eq!(alone, padded);
}

fn model_error<T>(result: Result<T, Error>) -> String {
    match result {
        Ok(_) => panic!("accepted unusable input"),
        Err(e @ Error::Model(_)) => e.to_string(),
        Err(other) => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn unusable_files_are_errors_naming_the_problem() {
    let options = EmbedderOptions::minilm;
    let gguf = gguf();
    let prefix = "embedding model: quantized model (GGUF): ";
    for bytes in [&b""[..], b"GGUF", &model_files()[2][..4096], &gguf[..1000]] {
        let m = model_error(Embedder::from_gguf(bytes, options()));
        assert!(m.starts_with(prefix), "{m}");
    }
    let m = model_error(Embedder::from_gguf(&gguf[..gguf.len() - 100], options()));
    assert!(m.starts_with(prefix) && m.contains("tensor encoder.layer.5"), "{m}");

    // A file of another format version is refused, naming both versions.
    let key = b"edgerag.format_version";
    let at = gguf.windows(key.len()).position(|w| w == key).unwrap() + key.len();
    assert_eq!(gguf[at..at + 8], [4, 0, 0, 0, 1, 0, 0, 0], "u32 type tag, then 1");
    let mut newer = gguf.to_vec();
    newer[at + 4] = 2;
    let m = model_error(Embedder::from_gguf(&newer, options()));
    assert!(m.contains("format version 2") && m.contains("reads version 1"), "{m}");

    let zero = EmbedderOptions { batch_size: 0, ..options() };
    assert!(matches!(Embedder::from_gguf(gguf, zero), Err(Error::Config(_))));

    let [config, tokenizer, weights] = model_files();
    let m = model_error(quantize(b"{", tokenizer, weights));
    assert!(m.starts_with("embedding model: config.json: "), "{m}");
    let m = model_error(quantize(config, b"not json", weights));
    assert!(m.starts_with("embedding model: tokenizer.json: "), "{m}");
    let m = model_error(quantize(config, tokenizer, &weights[..1000]));
    assert!(m.starts_with("embedding model: model.safetensors: "), "{m}");
    let odd = String::from_utf8(config.clone())
        .unwrap()
        .replace("\"hidden_size\": 384", "\"hidden_size\": 390");
    let m = model_error(quantize(odd.as_bytes(), tokenizer, weights));
    assert!(m.contains("multiples of 32"), "{m}");
}
