//! `edgerag eval answers`: extractive answers on real SQuAD paragraphs, judged by a scripted
//! OpenAI-compatible server on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::cli::{one_error_line, path, shared_data};
use crate::llm_server::{Reply, Server, edgerag_llm};

/// A SQuAD file in `dir` with the first article's first two paragraphs, one question each.
#[allow(clippy::print_stderr)] // The note says why the test did nothing.
fn tiny_squad(dir: &Path) -> Option<PathBuf> {
    let Some(source) = shared_data("squad/dev-v1.1-articles-00-11.json.gz") else {
        eprintln!("note: SQuAD dev data not found; skipping the eval answers test");
        return None;
    };
    let gz = flate2::read::GzDecoder::new(std::fs::File::open(source).unwrap());
    let mut data: serde_json::Value = serde_json::from_reader(gz).unwrap();
    let article = &mut data["data"][0];
    let paragraphs: Vec<serde_json::Value> = article["paragraphs"].as_array().unwrap()[..2]
        .iter()
        .map(|p| serde_json::json!({"context": p["context"], "qas": [p["qas"][0].clone()]}))
        .collect();
    let tiny = serde_json::json!({
        "version": "1.1",
        "data": [{"title": article["title"], "paragraphs": paragraphs}],
    });
    let file = dir.join("tiny-squad.json");
    std::fs::write(&file, tiny.to_string()).unwrap();
    Some(file)
}

/// Runs `edgerag eval answers FILE ARGS` with no LLM in the environment (and `server` as the
/// LLM when given).
fn eval_answers(file: &Path, server: Option<&Server>, args: &[&str]) -> Output {
    edgerag_llm(&[&["eval", "answers", path(file)], args].concat(), server, None)
}

/// One extractive answer (bm25, one source) judged through `script`; the JSON report.
fn judged(script: Vec<Reply>) -> Option<(serde_json::Value, Server)> {
    let dir = tempfile::tempdir().unwrap();
    let file = tiny_squad(dir.path())?;
    let server = Server::start(script);
    let args = [
        "--no-embed",
        "--extractive",
        "--mode",
        "bm25",
        "-k",
        "1",
        "--concurrency",
        "1",
        "--limit",
        "1",
        "--json",
    ];
    let out = eval_answers(&file, Some(&server), &args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "eval answers failed: {stderr}");
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("not JSON ({e}): {}", String::from_utf8_lossy(&out.stdout));
    });
    Some((report, server))
}

#[test]
fn judged_scores_follow_the_verdicts() {
    let script = vec![
        Reply::chat(r#"{"claims": ["The Broncos played.", "They lost."]}"#),
        Reply::chat(
            "```json\n{\"verdicts\": [{\"verdict\": \"yes\", \"reason\": \"said\"}, \
             {\"verdict\": \"no\", \"reason\": \"contradicted\"}]}\n```",
        ),
        Reply::chat(
            r#"{"verdicts": [{"statement": "a", "verdict": "yes"}, {"statement": "b", "verdict": "idk"},
                {"statement": "c", "verdict": "no"}, {"statement": "d", "verdict": "no"}]}"#,
        ),
        Reply::chat(
            r#"Sure. {"verdicts": [{"statement": "a", "verdict": "yes"}, {"statement": "b", "verdict": "no"},
                {"statement": "c", "verdict": "no"}, {"statement": "d", "verdict": "no"}]}"#,
        ),
    ];
    let Some((report, server)) = judged(script) else { return };
    assert_eq!(report["mode"], "bm25");
    assert_eq!(report["answers"], "extractive");
    assert_eq!(report["questions"], 1);
    assert_eq!(report["faithfulness"], 0.5);
    assert_eq!(report["answer_relevancy"], 0.5);
    assert_eq!(report["contextual_relevancy"], 0.25);
    assert_eq!(report["failed"], 0);
    assert!(report["problem"].is_null(), "{report}");
    let received = server.received();
    assert_eq!(received.len(), 4, "one request per step and source");
    assert!(received.iter().all(|r| r.path == "/v1/chat/completions"));
    assert!(received.iter().all(|r| r.body["temperature"] == 0.0));
    // The verdict request quotes the claims and the retrieved paragraph.
    let verdicts = received[1].body["messages"][1]["content"].as_str().unwrap();
    assert!(verdicts.contains("1. The Broncos played.\n2. They lost."), "{verdicts}");
    assert!(verdicts.contains("Super Bowl"), "{verdicts}");
}

#[test]
fn an_unreadable_reply_is_a_failed_question_not_a_crash() {
    let script = vec![
        Reply::chat("Sorry, I cannot list claims for this answer."),
        Reply::chat(r#"{"verdicts": ["yes"]}"#),
        Reply::chat(r#"{"verdicts": [{"verdict": "yes"}, {"verdict": "no"}]}"#),
    ];
    let Some((report, server)) = judged(script) else { return };
    assert_eq!(report["questions"], 1);
    assert!(report["faithfulness"].is_null(), "{report}");
    assert_eq!(report["answer_relevancy"], 1.0);
    assert_eq!(report["contextual_relevancy"], 0.5);
    assert_eq!(report["failed"], 1);
    let problem = report["problem"].as_str().unwrap();
    assert!(problem.contains("unreadable judge reply"), "{problem}");
    assert_eq!(server.received().len(), 3, "no verdicts are asked without claims");
}

#[test]
fn judging_without_an_llm_fails_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("missing.json");
    let out = eval_answers(&file, None, &["--extractive"]);
    let line = one_error_line(&out);
    assert!(line.contains("EDGERAG_LLM_API_KEY") && line.contains("--llm-base-url"), "{line}");
}
