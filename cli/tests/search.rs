//! `edgerag search`.

use crate::cli::{self, edgerag, json, one_error_line, path};

#[test]
fn search_json_has_the_documented_shape_and_finds_the_answer() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = cli::demo_bundle(dir.path());
    for mode in ["bm25", "graph", "hybrid"] {
        let query = "Which team won Super Bowl 50?";
        let out = json(&["search", path(&bundle), query, "-k", "3", "--mode", mode, "--json"]);
        assert_eq!(out["query"], query);
        let results = out["results"].as_array().unwrap();
        assert!(!results.is_empty() && results.len() <= 3, "{mode}: {out}");
        let top = &results[0];
        for key in ["rank", "chunk_id", "document", "title", "page", "section", "score", "text"] {
            assert!(top.get(key).is_some(), "{mode}: missing {key}: {top}");
        }
        assert_eq!(top["rank"], 1);
        assert!(top["document"].as_str().unwrap().ends_with("super-bowl-50.md"), "{mode}: {top}");
        assert!(top.get("explain").is_none());
    }
}

#[test]
fn explain_adds_signals_and_pdf_hits_carry_pages() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = cli::demo_bundle(dir.path());
    let query = "glob patterns for MIME type detection";
    let out = json(&["search", path(&bundle), query, "--mode", "bm25", "--explain", "--json"]);
    let top = &out["results"][0];
    assert!(top["document"].as_str().unwrap().ends_with(".pdf"), "{top}");
    assert!(top["page"].as_u64().unwrap() >= 1, "{top}");
    assert!(top["explain"]["bm25"]["rank"] == 1, "{top}");
    assert!(!top["explain"]["terms"].as_array().unwrap().is_empty(), "{top}");

    let text = edgerag(&["search", path(&bundle), query, "-k", "2", "--explain"]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains(" 1. ") && stdout.contains("terms:"), "{stdout}");
}

#[test]
fn bad_mode_and_empty_query_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = cli::demo_bundle(dir.path());
    let out = edgerag(&["search", path(&bundle), "steam", "--mode", "sparse"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("sparse"));
    let line = one_error_line(&edgerag(&["search", path(&bundle), "the of"]));
    assert!(line.contains("no searchable words"), "{line}");
}

#[test]
fn filters_narrow_results_and_bad_ranges_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = cli::demo_bundle(dir.path());
    let out = json(&[
        "search",
        path(&bundle),
        "MIME type database",
        "--kind",
        "pdf",
        "--pages",
        "2-3",
        "--json",
    ]);
    let results = out["results"].as_array().unwrap();
    assert!(!results.is_empty(), "{out}");
    for r in results {
        assert!(r["document"].as_str().unwrap().ends_with(".pdf"), "{r}");
        assert!((2..=3).contains(&r["page"].as_u64().unwrap()), "{r}");
    }
    let out = json(&["search", path(&bundle), "steam", "--document", "normans.md", "--json"]);
    let results = out["results"].as_array().unwrap();
    assert!(
        results.iter().all(|r| r["document"].as_str().unwrap().ends_with("normans.md")),
        "{out}"
    );
    let bad = edgerag(&["search", path(&bundle), "steam", "--pages", "5-2"]);
    assert!(!bad.status.success());
}
