//! `edgerag models quantize` and `--model FILE.gguf`. These need the default model (`make
//! models` fetches it; `EDGERAG_MODEL_DIR` overrides).

use std::path::Path;

use crate::cli::{edgerag, fixture, json, one_error_line, path, sha256_hex};

const MINILM: &str = "sentence-transformers/all-MiniLM-L6-v2";

/// Quantizes the default model into `file` and returns `--json`'s output.
fn quantize(file: &Path) -> serde_json::Value {
    json(&["models", "quantize", "-o", path(file), "--json"])
}

/// The vector of `text` (as a document) under the model at `model` (the default if `None`).
fn vector(text: &str, model: Option<&Path>) -> Vec<f64> {
    let mut args = vec!["embed", text, "--json"];
    if let Some(model) = model {
        args.extend(["--model", path(model)]);
    }
    let out = json(&args);
    assert_eq!(out["model"], MINILM, "{out}");
    out["vectors"][0].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect()
}

#[test]
fn quantized_file_is_reported_written_once_and_searches_an_f32_bundle() {
    let dir = tempfile::tempdir().unwrap();
    let gguf = dir.path().join("minilm-q8_0.gguf");
    let first = quantize(&gguf);
    let bytes = std::fs::read(&gguf).unwrap();
    assert_eq!(first["path"], path(&gguf), "{first}");
    assert_eq!(first["bytes"], bytes.len(), "{first}");
    assert_eq!(first["sha256"], sha256_hex(&bytes), "{first}");
    assert_eq!(first["changed"], true, "{first}");
    // The file is recognised by its hash: if the core's quantize changed its bytes, add the
    // new hash to PINNED_QUANTIZED in cli/src/models/mod.rs.
    assert_eq!(first["model"], MINILM, "{first}");
    let size = bytes.len();
    assert!((20_000_000..30_000_000).contains(&size), "{size} bytes");
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 5, "{first}");

    let second = quantize(&gguf);
    assert_eq!(second["changed"], false, "{second}");
    assert_eq!(second["sha256"], first["sha256"], "{second}");
    let human = edgerag(&["models", "quantize", "-o", path(&gguf)]);
    assert!(human.status.success(), "{}", String::from_utf8_lossy(&human.stderr));
    let stdout = String::from_utf8_lossy(&human.stdout);
    assert!(stdout.contains(path(&gguf)) && stdout.contains("unchanged"), "{stdout}");
    assert!(stdout.contains("90.9 MB of weights in model.safetensors"), "{stdout}");
    let names: Vec<_> =
        std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, ["minilm-q8_0.gguf"], "no temporary files left");

    let text = "Vitamin D deficiency and the risk of fractures.";
    let (f32, q8) = (vector(text, None), vector(text, Some(&gguf)));
    let cosine: f64 = f32.iter().zip(&q8).map(|(a, b)| a * b).sum();
    assert!(cosine > 0.99, "cosine {cosine}");

    // A bundle embedded with the f32 model, searched with the quantized one.
    let bundle = dir.path().join("f32.bundle");
    let (normans, html) = (fixture("normans.md"), fixture("computational-complexity.html"));
    let built = json(&["build", path(&normans), path(&html), "-o", path(&bundle), "--json"]);
    assert_eq!(built["vectors"], built["chunks"], "{built}");
    let query = "Scandinavian seafarers who raided the French coast";
    let search = |model: &[&str]| {
        let args = ["search", path(&bundle), query, "--mode", "dense", "-k", "3", "--json"];
        json(&[&args[..], model].concat())
    };
    let (with_f32, with_q8) = (search(&[]), search(&["--model", path(&gguf)]));
    assert_eq!(with_q8["results"][0]["title"], "Normans", "{with_q8}");
    assert_eq!(with_q8["results"][0]["chunk_id"], with_f32["results"][0]["chunk_id"], "{with_q8}");
}

#[test]
fn a_bad_output_directory_is_a_clear_error_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing").join("model.gguf");
    let line = one_error_line(&edgerag(&["models", "quantize", "-o", path(&missing)]));
    assert!(line.contains("does not exist") && line.contains(path(&missing)), "{line}");

    let line = one_error_line(&edgerag(&["models", "quantize", "-o", path(dir.path())]));
    assert!(line.contains("is a directory"), "{line}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "no file left behind");
}

#[test]
fn broken_model_files_are_clear_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let gguf = dir.path().join("model-q8_0.gguf");
    quantize(&gguf);
    // A download cut short: the header is there, the weights are not.
    let bytes = std::fs::read(&gguf).unwrap();
    let truncated = dir.path().join("truncated.gguf");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    // Another kind of file under a .gguf name.
    let markdown = dir.path().join("normans.gguf");
    std::fs::copy(fixture("normans.md"), &markdown).unwrap();
    for broken in [&truncated, &markdown] {
        let line = one_error_line(&edgerag(&["embed", "Rollo", "--model", path(broken)]));
        assert!(line.contains(path(broken)) && line.contains("GGUF"), "{line}");
    }

    let missing = dir.path().join("missing.gguf");
    let line = one_error_line(&edgerag(&["embed", "Rollo", "--model", path(&missing)]));
    assert!(line.contains(path(&missing)), "{line}");

    // A file that is neither a model directory nor a .gguf file.
    let normans = fixture("normans.md");
    let line = one_error_line(&edgerag(&["embed", "Rollo", "--model", path(&normans)]));
    assert!(line.contains("normans.md") && line.contains(".gguf"), "{line}");

    // Quantizing needs the f32 model.
    let again = dir.path().join("again.gguf");
    let args = ["models", "quantize", "--model", path(&gguf), "-o", path(&again)];
    let line = one_error_line(&edgerag(&args));
    assert!(line.contains("already quantized"), "{line}");
    assert!(!again.exists());
}
