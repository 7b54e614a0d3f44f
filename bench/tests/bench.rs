//! `edgerag-bench`: the report's shape, the figures that must hold whatever the machine, and
//! the JSON and Markdown written from the same run.

use crate::run::{edgerag_bench, fixture, json, one_error_line, path, scifact_slice};

#[test]
fn bench_reports_latency_per_mode_and_exact_recall_at_small_scale() {
    let out = json(&["--sizes", "120", "--queries", "6", "--skip-embedding", "--json"]);
    assert!(out["machine"]["cpus"].as_u64().unwrap() >= 1);
    assert!(out.get("embedding").is_none());
    let [scale] = out["search"].as_array().unwrap().as_slice() else { panic!("{out}") };
    assert_eq!(scale["chunks"], 120);
    // Loaded whole (format 3) at this size, and read by range (format 4).
    let whole = &scale["whole"];
    let bytes = &whole["bytes"];
    assert!(bytes["total"].as_u64().unwrap() > bytes["source_text"].as_u64().unwrap());
    for part in ["text_per_chunk", "graph_per_chunk", "bm25_per_chunk"] {
        assert!(bytes[part].as_f64().unwrap() > 0.0, "{bytes}");
    }
    // 384 f32 per vector, and int8 a quarter of it (plus scales), before the graph.
    let (f32_bytes, int8_bytes) = (
        bytes["vectors_f32_per_chunk"].as_f64().unwrap(),
        bytes["vectors_int8_per_chunk"].as_f64().unwrap(),
    );
    assert!(f32_bytes >= 1536.0 && int8_bytes >= 384.0 && int8_bytes < f32_bytes / 2.0, "{bytes}");
    // Below `exact_below` dense search is exact, so it finds the exact top 10.
    assert_eq!(whole["hnsw"], false);
    assert_eq!(whole["dense_recall_at_10"], 1.0);
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
        whole["native"].as_array().unwrap().iter().map(|m| m["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["bm25", "dense", "graph", "hybrid"]);
    for m in whole["native"].as_array().unwrap() {
        let (p50, p99) = (m["p50_ms"].as_f64().unwrap(), m["p99_ms"].as_f64().unwrap());
        assert!(p50 > 0.0 && p50 <= p99, "{m}");
    }
    assert!(whole.get("wasm").is_none(), "no --wasm-pkg, no wasm row");
    // The reader of format 4 holds its pages and a little more; opening read one range.
    let paged = &scale["paged"];
    let (held, memory) =
        (paged["held_bytes"].as_u64().unwrap(), paged["memory_bytes"].as_u64().unwrap());
    assert!(held > 0 && memory >= held, "{paged}");
    assert_eq!(paged["open_requests"], 1);
    // What each section's slots cost a cold query adds up to what the query read.
    for m in paged["modes"].as_array().unwrap() {
        let sections = m["sections"].as_array().unwrap();
        let sum = |field| sections.iter().map(|s| s[field].as_f64().unwrap()).sum::<f64>();
        assert!((sum("ranges") - m["cold_ranges"].as_f64().unwrap()).abs() < 1e-6, "{m}");
        assert!((sum("bytes") - m["cold_bytes"].as_f64().unwrap()).abs() < 1e-3, "{m}");
        assert!(sections.iter().any(|s| s["section"] == "chunks"), "results are read: {m}");
    }
}

#[test]
fn bench_embeds_real_chunks_and_measures_hnsw_on_real_vectors() {
    let bundle = fixture("bundle-v3.bundle");
    let args = ["--bundle", path(&bundle), "--skip-search", "--texts", "2", "--batch", "2"];
    let out = json(&[&args[..], &["--json"]].concat());
    let embedding = &out["embedding"];
    assert_eq!(embedding["model"], "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(embedding["texts"], 2);
    // The model as fetched (f32), and the q8_0 file quantized from it.
    let runs = embedding["runs"].as_array().unwrap();
    let [float, q8] = runs.as_slice() else { panic!("{embedding}") };
    assert_eq!(float["name"], "edgerag native (f32)");
    assert_eq!(q8["name"], "edgerag native (q8_0)");
    let itself = float["cosine_to_native"].as_f64().unwrap();
    assert!((1.0 - itself).abs() < 1e-9 && itself <= 1.0, "f32 against itself: {itself}");
    let cosine = q8["cosine_to_native"].as_f64().unwrap();
    assert!((0.999..1.0).contains(&cosine), "q8_0 against f32: {cosine}");
    for run in runs {
        let batches: Vec<u64> = run["batches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["batch"].as_u64().unwrap())
            .collect();
        assert_eq!(batches, [1, 2], "{run}");
    }
    let skipped = embedding["skipped"].to_string();
    assert!(skipped.contains("--wasm-pkg") && skipped.contains("--peers"), "{skipped}");
    // 12 chunk vectors: 11 indexed, 1 held out as the query; a graph that small is exact.
    let [real] = out["real_vectors"].as_array().unwrap().as_slice() else { panic!("{out}") };
    assert_eq!((real["vectors"].as_u64(), real["queries"].as_u64()), (Some(11), Some(1)));
    for h in real["hnsw"].as_array().unwrap() {
        assert_eq!(h["recall_at_10"], 1.0, "{h}");
    }
    let [bytes] = out["bundles"].as_array().unwrap().as_slice() else { panic!("{out}") };
    assert_eq!(bytes["chunks"], 12);
    assert_eq!(bytes["total"].as_u64(), Some(std::fs::metadata(&bundle).unwrap().len()));
    let missing = edgerag_bench(&["--bundle", "/nonexistent.bundle", "--skip-search"]);
    assert!(one_error_line(&missing).contains("/nonexistent.bundle"));
    let no_peers = edgerag_bench(&["--site", "www/dist", "--skip-search"]);
    assert!(one_error_line(&no_peers).contains("--site needs --peers"));
}

#[test]
fn bench_compares_bm25_on_scifact_and_writes_one_report_as_json_and_markdown() {
    let data = tempfile::tempdir().unwrap();
    let Some(queries) = scifact_slice(data.path(), 400) else {
        eprintln!("skipped: SciFact data not found (set EDGERAG_DATA)");
        return;
    };
    let report = tempfile::tempdir().unwrap();
    let out = json(&[
        "--scifact",
        path(data.path()),
        "--skip-search",
        "--skip-embedding",
        "--report",
        path(report.path()),
        "--json",
    ]);
    let retrieval = &out["retrieval"];
    assert_eq!(
        (retrieval["documents"].as_u64(), retrieval["queries"].as_u64()),
        (Some(400), Some(queries as u64))
    );
    let systems: Vec<&str> = retrieval["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["system"].as_str().unwrap())
        .collect();
    assert_eq!(systems, ["edgerag bundle", "edgerag Bm25Index"]);
    for run in retrieval["runs"].as_array().unwrap() {
        // On 400 documents the task is easier than on the full corpus (0.64+ for BM25).
        let ndcg = run["ndcg_at_10"].as_f64().unwrap();
        assert!(ndcg > 0.6 && run["recall_at_100"].as_f64().unwrap() >= ndcg, "{run}");
        assert!(run["queries_per_second"].as_f64().unwrap() > 0.0, "{run}");
    }
    assert!(retrieval["skipped"].as_str().unwrap().contains("--peers"));
    // The SciFact bundle's bytes are reported against its source text.
    let [bytes] = out["bundles"].as_array().unwrap().as_slice() else { panic!("{out}") };
    assert_eq!(bytes["name"], "SciFact");
    assert!(bytes["source_text"].as_u64().unwrap() > 0);
    // One run, two renderings: the JSON file is what was printed, the Markdown shows its numbers.
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(report.path().join("benchmarks.json")).unwrap())
            .unwrap();
    assert_eq!(written, out);
    let markdown = std::fs::read_to_string(report.path().join("BENCHMARKS.md")).unwrap();
    assert!(markdown.starts_with("# edgerag benchmarks"), "{markdown}");
    let bundle_ndcg = retrieval["runs"][0]["ndcg_at_10"].as_f64().unwrap();
    assert!(
        markdown.contains("## BM25 on SciFact") && markdown.contains(&format!("{bundle_ndcg:.4}")),
        "{markdown}"
    );
    assert!(markdown.contains("## Bundle bytes"), "{markdown}");
}
