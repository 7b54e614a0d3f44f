//! Embeddings through the CLI: `embed`, builds with vectors, `--update`, dense search.
//! These need the default model (`make models` fetches it; `EDGERAG_MODEL_DIR` overrides).

use crate::cli::{edgerag, fixture, json, one_error_line, path};

#[test]
fn embed_prints_unit_vectors_of_the_model() {
    let out = json(&["embed", "Vitamin D deficiency and fractures.", "The Normans", "--json"]);
    assert_eq!(out["model"], "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(out["dimension"], 384);
    let vectors = out["vectors"].as_array().unwrap();
    assert_eq!(vectors.len(), 2);
    for v in vectors {
        let v: Vec<f64> = v.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(v.len(), 384);
        let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    }
}

#[test]
fn update_reuses_vectors_and_dense_search_finds_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("first.bundle");
    let normans = fixture("normans.md");
    let built = json(&["build", path(&normans), "-o", path(&first), "--json"]);
    assert_eq!(built["vectors"], built["chunks"], "{built}");
    assert_eq!(built["reused_vectors"], 0);

    let second = dir.path().join("second.bundle");
    let html = fixture("computational-complexity.html");
    let args =
        ["build", path(&normans), path(&html), "-o", path(&second), "--update", path(&first)];
    let updated = json(&[&args[..], &["--json"]].concat());
    assert_eq!(updated["reused_vectors"], built["chunks"], "{updated}");
    assert_eq!(updated["vectors"], updated["chunks"], "{updated}");
    // An earlier build of format 3 is reused alike.
    let whole = dir.path().join("first-v3.bundle");
    let args = ["build", path(&normans), "-o", path(&whole), "--format", "3", "--update"];
    let rewritten = json(&[&args[..], &[path(&first), "--json"]].concat());
    assert_eq!(rewritten["reused_vectors"], built["chunks"], "{rewritten}");
    let third = dir.path().join("third.bundle");
    let args = ["build", path(&normans), path(&html), "-o", path(&third), "--update", path(&whole)];
    let from_whole = json(&[&args[..], &["--json"]].concat());
    assert_eq!(from_whole["reused_vectors"], built["chunks"], "{from_whole}");

    // No query word occurs in the answer: only the embedding can connect them.
    let query = "Scandinavian seafarers who raided the French coast";
    let out = json(&["search", path(&second), query, "--mode", "dense", "-k", "1", "--json"]);
    assert_eq!(out["results"][0]["title"], "Normans", "{out}");
    let hybrid = json(&["search", path(&second), query, "--explain", "--json"]);
    assert!(hybrid["results"][0]["explain"]["dense"]["rank"].is_u64(), "{hybrid}");
}

#[test]
fn dense_search_without_vectors_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = dir.path().join("plain.bundle");
    json(&["build", path(&fixture("normans.md")), "-o", path(&bundle), "--no-embed", "--json"]);
    let line = one_error_line(&edgerag(&["search", path(&bundle), "Rollo", "--mode", "dense"]));
    assert!(line.contains("no vectors"), "{line}");
    let hybrid = json(&["search", path(&bundle), "Rollo", "--json"]);
    assert!(!hybrid["results"].as_array().unwrap().is_empty());
}
