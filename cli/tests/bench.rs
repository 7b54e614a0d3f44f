//! `edgerag bench`: the report's shape and the figures that must hold whatever the machine.

use std::path::PathBuf;

use crate::cli::{edgerag, json, one_error_line};

#[test]
fn bench_reports_latency_per_mode_and_exact_recall_at_small_scale() {
    let out = json(&["bench", "--sizes", "120", "--queries", "6", "--skip-embedding", "--json"]);
    assert!(out["machine"]["cpus"].as_u64().unwrap() >= 1);
    assert!(out.get("embedding").is_none());
    let [scale] = out["search"].as_array().unwrap().as_slice() else { panic!("{out}") };
    assert_eq!(scale["chunks"], 120);
    assert!(scale["bundle_bytes"].as_u64().unwrap() > 0);
    // Below `exact_below` dense search is exact, so it finds the exact top 10.
    assert_eq!(scale["hnsw"], false);
    assert_eq!(scale["dense_recall_at_10"], 1.0);
    let steps: Vec<&str> = scale["build_steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["step"].as_str().unwrap())
        .collect();
    for step in ["embedding", "keywords", "graph", "keyword vectors", "bm25", "dense"] {
        assert!(steps.contains(&step), "{steps:?}");
    }
    let modes: Vec<&str> =
        scale["modes"].as_array().unwrap().iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["bm25", "dense", "graph", "hybrid"]);
    for m in scale["modes"].as_array().unwrap() {
        let (p50, p99) = (m["p50_ms"].as_f64().unwrap(), m["p99_ms"].as_f64().unwrap());
        assert!(p50 > 0.0 && p50 <= p99, "{m}");
    }
}

#[test]
fn bench_embeds_real_chunks_and_measures_hnsw_on_real_vectors() {
    let bundle = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../core/tests/fixtures/bundle-v3.bundle")
        .display()
        .to_string();
    let args = ["bench", "--bundle", &bundle, "--skip-search", "--texts", "2", "--batch", "2"];
    let out = json(&[&args[..], &["--json"]].concat());
    let embedding = &out["embedding"];
    assert_eq!(embedding["model"], "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(embedding["texts"], 2);
    let batches: Vec<u64> = embedding["native"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["batch"].as_u64().unwrap())
        .collect();
    assert_eq!(batches, [1, 2]);
    assert!(embedding["wasm"].is_null() && embedding["wasm_skipped"].is_string());
    // 12 chunk vectors: 11 indexed, 1 held out as the query; a graph that small is exact.
    let real = &out["real_vectors"];
    assert_eq!((real["vectors"].as_u64(), real["queries"].as_u64()), (Some(11), Some(1)));
    for h in real["hnsw"].as_array().unwrap() {
        assert_eq!(h["recall_at_10"], 1.0, "{h}");
    }
    let missing = edgerag(&["bench", "--bundle", "/nonexistent.bundle", "--skip-search"]);
    assert!(one_error_line(&missing).contains("/nonexistent.bundle"));
}
