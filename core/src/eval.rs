//! Retrieval evaluation: ranking metrics and the BEIR data-set layout.
//!
//! Metrics follow `trec_eval`/`pytrec_eval` as BEIR reports them: nDCG@k with linear gains
//! (`rel / log2(rank + 1)`), Recall@k as the fraction of relevant documents retrieved in the
//! top k, and MRR@k as the reciprocal rank of the first relevant document. Queries without
//! relevance judgments are not evaluated.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::query::{Mode, SearchOptions, Searcher};
use crate::{Error, Result};

/// Relevance grades of one query: document id → grade (> 0 is relevant).
pub type Judgments = HashMap<String, u32>;

/// nDCG@k of a ranked list of document ids.
pub fn ndcg_at(ranked: &[&str], judged: &Judgments, k: usize) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, id)| f64::from(judged.get(*id).copied().unwrap_or(0)) / (i as f64 + 2.0).log2())
        .sum();
    let mut ideal: Vec<u32> = judged.values().copied().filter(|&g| g > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, &g)| f64::from(g) / (i as f64 + 2.0).log2())
        .sum();
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

/// Recall@k: relevant documents in the top k over all relevant documents.
pub fn recall_at(ranked: &[&str], judged: &Judgments, k: usize) -> f64 {
    let relevant = judged.values().filter(|&&g| g > 0).count();
    if relevant == 0 {
        return 0.0;
    }
    let found = ranked.iter().take(k).filter(|id| judged.get(**id).is_some_and(|&g| g > 0)).count();
    found as f64 / relevant as f64
}

/// MRR@k: reciprocal rank of the first relevant document in the top k, else 0.
pub fn mrr_at(ranked: &[&str], judged: &Judgments, k: usize) -> f64 {
    ranked
        .iter()
        .take(k)
        .position(|id| judged.get(*id).is_some_and(|&g| g > 0))
        .map_or(0.0, |i| 1.0 / (i as f64 + 1.0))
}

/// A BEIR corpus record.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BeirDoc {
    /// Document id.
    #[serde(rename = "_id")]
    pub id: String,
    /// Title (may be empty).
    #[serde(default)]
    pub title: String,
    /// Body text.
    pub text: String,
}

/// A BEIR query.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct BeirQuery {
    /// Query id.
    #[serde(rename = "_id")]
    pub id: String,
    /// Query text.
    pub text: String,
}

/// Parses a BEIR JSON-lines file (`corpus.jsonl` or `queries.jsonl`); `file` names it in errors.
///
/// # Errors
/// [`Error::Dataset`] with the line number of the first malformed line.
pub fn parse_jsonl<T: for<'de> Deserialize<'de>>(file: &str, text: &str) -> Result<Vec<T>> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| Error::Dataset {
                file: file.to_owned(),
                line: i + 1,
                message: e.to_string(),
            })
        })
        .collect()
}

/// Parses BEIR relevance judgments (`qrels/<split>.tsv`: `query-id corpus-id score`, with a
/// header line) into query id → judgments.
///
/// # Errors
/// [`Error::Dataset`] for a line without three tab-separated fields or with a bad score.
pub fn parse_qrels(file: &str, text: &str) -> Result<HashMap<String, Judgments>> {
    let mut qrels: HashMap<String, Judgments> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split('\t').map(str::trim).collect();
        if line.trim().is_empty() || (i == 0 && fields.first() == Some(&"query-id")) {
            continue;
        }
        let bad = |message: String| Error::Dataset { file: file.to_owned(), line: i + 1, message };
        let [query, doc, score] = fields[..] else {
            return Err(bad(format!("expected 3 tab-separated fields, found {}", fields.len())));
        };
        let score: i64 = score.parse().map_err(|_| bad(format!("bad score {score:?}")))?;
        qrels.entry(query.to_owned()).or_default().insert(doc.to_owned(), score.max(0) as u32);
    }
    Ok(qrels)
}

/// Scores averaged over the evaluated queries.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvalReport {
    /// Retrieval mode evaluated.
    pub mode: Mode,
    /// Number of queries evaluated (those with judgments).
    pub queries: usize,
    /// Mean nDCG@10.
    #[serde(rename = "ndcg@10")]
    pub ndcg_10: f64,
    /// Mean Recall@100.
    #[serde(rename = "recall@100")]
    pub recall_100: f64,
    /// Mean MRR@10.
    #[serde(rename = "mrr@10")]
    pub mrr_10: f64,
}

/// Documents retrieved per query, as in the BEIR protocol.
pub const EVAL_DEPTH: usize = 100;

/// Evaluates `searcher` on `queries` against `qrels`, in `options.mode`. Documents are scored by
/// their best chunk; a bundle built with [`BeirDoc`]s as documents uses their ids as sources.
/// `progress` is called after each query with (done, total).
///
/// # Errors
/// [`Error::Query`] if no query has judgments.
pub fn evaluate(
    searcher: &Searcher,
    queries: &[BeirQuery],
    qrels: &HashMap<String, Judgments>,
    options: &SearchOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<EvalReport> {
    let judged: Vec<(&BeirQuery, &Judgments)> =
        queries.iter().filter_map(|q| qrels.get(&q.id).map(|j| (q, j))).collect();
    if judged.is_empty() {
        return Err(Error::Query("no query has relevance judgments".into()));
    }
    let options = SearchOptions { depth: options.depth.max(EVAL_DEPTH * 3), ..options.clone() };
    let bundle = searcher.bundle();
    let (mut ndcg, mut recall, mut mrr) = (0.0, 0.0, 0.0);
    for (i, (query, judgments)) in judged.iter().enumerate() {
        let ranked_chunks = match searcher.rank_chunks(&query.text, &options) {
            Ok(r) => r,
            Err(Error::Query(_)) => Vec::new(),
            Err(e) => return Err(e),
        };
        let mut docs: Vec<&str> = Vec::with_capacity(EVAL_DEPTH);
        for scored in ranked_chunks {
            let chunk = &bundle.chunks[scored.chunk as usize];
            let source = bundle.document_of(chunk).source.as_str();
            if !docs.contains(&source) {
                docs.push(source);
                if docs.len() == EVAL_DEPTH {
                    break;
                }
            }
        }
        ndcg += ndcg_at(&docs, judgments, 10);
        recall += recall_at(&docs, judgments, 100);
        mrr += mrr_at(&docs, judgments, 10);
        progress(i + 1, judged.len());
    }
    let n = judged.len() as f64;
    Ok(EvalReport {
        mode: options.mode,
        queries: judged.len(),
        ndcg_10: ndcg / n,
        recall_100: recall / n,
        mrr_10: mrr / n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(pairs: &[(&str, u32)]) -> Judgments {
        pairs.iter().map(|&(d, g)| (d.to_owned(), g)).collect()
    }

    #[test]
    fn metrics_match_hand_computed_values() {
        let j = judged(&[("a", 1), ("c", 1)]);
        let ranked = ["b", "a", "c", "d"];
        let dcg = 1.0 / 3f64.log2() + 1.0 / 4f64.log2();
        let idcg = 1.0 + 1.0 / 3f64.log2();
        assert!((ndcg_at(&ranked, &j, 10) - dcg / idcg).abs() < 1e-12);
        assert!((ndcg_at(&ranked, &j, 2) - (1.0 / 3f64.log2()) / idcg).abs() < 1e-12);
        assert_eq!(recall_at(&ranked, &j, 2), 0.5);
        assert_eq!(recall_at(&ranked, &j, 100), 1.0);
        assert_eq!(mrr_at(&ranked, &j, 10), 0.5);
        assert_eq!(mrr_at(&["x"], &j, 10), 0.0);
        assert_eq!(ndcg_at(&["a", "c"], &j, 10), 1.0);
    }

    #[test]
    fn beir_files_parse_and_report_bad_lines() {
        let corpus = "{\"_id\": \"4983\", \"title\": \"T\", \"text\": \"Body.\"}\n\n";
        let docs: Vec<BeirDoc> = parse_jsonl("corpus.jsonl", corpus).unwrap();
        assert_eq!(docs[0].id, "4983");
        let err = parse_jsonl::<BeirDoc>("corpus.jsonl", "{}\n{").unwrap_err();
        assert!(err.to_string().starts_with("corpus.jsonl line 1:"), "{err}");
        let qrels =
            parse_qrels("train.tsv", "query-id\tcorpus-id\tscore\n0\t31715818\t1\n").unwrap();
        assert_eq!(qrels["0"]["31715818"], 1);
        let err = parse_qrels("train.tsv", "query-id\tcorpus-id\tscore\n0 1 1\n").unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
    }
}
