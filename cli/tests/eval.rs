//! `edgerag eval` on real data: a SciFact slice (BEIR), MuSiQue (multi-hop) and SQuAD (answers).

use std::path::Path;

use crate::cli::{edgerag, json, one_error_line, path, shared_data};
pub(crate) use crate::support::{scifact, scifact_slice};

#[test]
fn beir_eval_reports_metrics_on_real_scifact_data() {
    let dir = tempfile::tempdir().unwrap();
    let Some(queries) = scifact_slice(dir.path(), 400) else {
        eprintln!("skipped: SciFact data not found (set EDGERAG_DATA)");
        return;
    };
    assert!(queries > 50, "{queries} judged queries in the slice");
    // One build (embedding ~900 chunks when the model is cached), one row per mode.
    let saved = dir.path().join("scifact.bundle");
    let beir = ["eval", "beir", path(dir.path()), "--split", "train", "--mode", "all", "--json"];
    let reports = json(&[&beir[..], &["--save-bundle", path(&saved)]].concat());
    let reports = reports.as_array().unwrap();
    // Read by range (format 4), the same bundle scores as in memory, every mode within the
    // tolerance the format promises (dense search probes partitions instead of HNSW).
    let paged = json(&[&beir[..], &["--bundle", path(&saved), "--format", "4"]].concat());
    let paged = paged.as_array().unwrap();
    assert_eq!(paged.len(), reports.len());
    for (paged, whole) in paged.iter().zip(reports) {
        assert_eq!(paged["mode"], whole["mode"]);
        let ndcg = |r: &serde_json::Value| r["ndcg@10"].as_f64().unwrap();
        assert!((ndcg(paged) - ndcg(whole)).abs() <= 0.005, "{paged} against {whole}");
    }
    let modes: Vec<&str> = reports.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert!(modes.starts_with(&["bm25"]) && modes.contains(&"hybrid"), "{modes:?}");
    for report in reports {
        let mode = report["mode"].as_str().unwrap();
        assert_eq!(report["queries"], queries);
        let ndcg = report["ndcg@10"].as_f64().unwrap();
        let recall = report["recall@100"].as_f64().unwrap();
        let mrr = report["mrr@10"].as_f64().unwrap();
        // On 400 documents the task is easier than on the full corpus (0.64+ for BM25).
        let floor = if mode == "graph" { 0.3 } else { 0.6 };
        assert!(ndcg > floor && ndcg <= 1.0, "{mode}: {report}");
        assert!(recall >= ndcg && recall <= 1.0, "{mode}: {report}");
        assert!(mrr > 0.0 && mrr <= 1.0, "{mode}: {report}");
    }
}

#[test]
fn eval_errors_name_the_missing_file() {
    let dir = tempfile::tempdir().unwrap();
    let line = one_error_line(&edgerag(&["eval", "beir", path(dir.path()), "--no-embed"]));
    assert!(line.contains("corpus.jsonl"), "{line}");
}

#[test]
fn multihop_eval_reports_recall_for_every_mode() {
    let Some(scifact) = scifact() else {
        eprintln!("skipped: shared data not found (set EDGERAG_DATA)");
        return;
    };
    let musique = scifact.with_file_name("musique");
    let dir = tempfile::tempdir().unwrap();
    let saved = dir.path().join("musique.bundle");
    let reports = json(&[
        "eval",
        "multihop",
        path(&musique),
        "--mode",
        "all",
        "--no-embed",
        "--save-bundle",
        path(&saved),
        "--json",
    ]);
    let reports = reports.as_array().unwrap();
    assert_eq!(reports.len(), 3);
    // The saved bundle evaluates to the same figures without being rebuilt.
    let again = json(&["eval", "multihop", path(&musique), "--bundle", path(&saved), "--json"]);
    assert_eq!(again.as_array().unwrap(), reports);
    // Read by range (format 4), it scores within the tolerance the format promises.
    let args = ["eval", "multihop", path(&musique), "--bundle", path(&saved), "--json"];
    let paged = json(&[&args[..], &["--format", "4"]].concat());
    for (paged, whole) in paged.as_array().unwrap().iter().zip(reports) {
        assert_eq!(paged["mode"], whole["mode"]);
        for metric in ["recall@2", "recall@5", "all@5"] {
            let (p, w) = (paged[metric].as_f64().unwrap(), whole[metric].as_f64().unwrap());
            assert!((p - w).abs() <= 0.02, "{metric}: {paged} against {whole}");
        }
    }
    // A bundle of other documents is refused.
    let other = dir.path().join("other.bundle");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../core/tests/fixtures/normans.md");
    json(&["build", path(&fixture), "-o", path(&other), "--no-embed", "--format", "3", "--json"]);
    let line =
        one_error_line(&edgerag(&["eval", "multihop", path(&musique), "--bundle", path(&other)]));
    assert!(line.contains("not a bundle of this data set"), "{line}");
    for r in reports {
        assert_eq!(r["questions"], 100, "{r}");
        let (r2, r5, all5) = (
            r["recall@2"].as_f64().unwrap(),
            r["recall@5"].as_f64().unwrap(),
            r["all@5"].as_f64().unwrap(),
        );
        assert!(r2 > 0.2 && r2 <= r5 && r5 <= 1.0 && all5 <= r5, "{r}");
    }
}

#[test]
fn squad_eval_answers_offline_and_scores_retrieval_and_answers() {
    let Some(file) = shared_data("squad/dev-v1.1-articles-00-11.json.gz") else {
        eprintln!("skipped: shared data not found (set EDGERAG_DATA)");
        return;
    };
    let args = ["eval", "squad", path(&file), "--limit", "200", "--no-embed", "--json"];
    let reports = json(&[&args[..], &["--mode", "all"]].concat());
    let reports = reports.as_array().unwrap();
    let modes: Vec<&str> = reports.iter().map(|r| r["mode"].as_str().unwrap()).collect();
    assert_eq!(modes, ["bm25", "graph", "hybrid"]);
    for r in reports {
        assert_eq!(r["questions"], 200, "{r}");
        assert_eq!(r["answers"], "extractive", "{r}");
        let metric = |name: &str| r[name].as_f64().unwrap();
        assert!(metric("answer_recall@1") <= metric("answer_recall@5"), "{r}");
        // Whole sentences rarely equal a short gold span, but often contain it.
        assert!(metric("exact_match") < metric("f1") && metric("f1") < metric("contains"), "{r}");
    }
    let hybrid = &reports[2];
    let recall = hybrid["answer_recall@5"].as_f64().unwrap();
    assert!(recall > 0.85, "hybrid answer recall@5 {recall}");
    assert!(hybrid["contains"].as_f64().unwrap() > 0.5, "{hybrid}");
    assert!(hybrid["refused"].as_f64().unwrap() < 0.05, "{hybrid}");

    // One sentence per answer: shorter answers, higher F1, fewer containing the gold span.
    let one = json(&[&args[..], &["--mode", "hybrid", "--sentences", "1"]].concat());
    assert!(one["f1"].as_f64() > hybrid["f1"].as_f64(), "{one} vs {hybrid}");
    assert!(one["contains"].as_f64() < hybrid["contains"].as_f64(), "{one} vs {hybrid}");
    // A file that is not SQuAD is named in a one-line error.
    let bad = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(bad.path(), "{\"data\": 1}").unwrap();
    let line = one_error_line(&edgerag(&["eval", "squad", path(bad.path())]));
    assert!(line.contains("not SQuAD JSON"), "{line}");
}
