//! The BEIR layout: `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`.
//!
//! Protocol: every document (title + text) is indexed, the top 100 documents are retrieved per
//! judged query (a document scores as its best chunk), and nDCG@10, Recall@100 and MRR@10 are
//! averaged over the queries that have judgments.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{Judgments, mrr_at, ndcg_at, rank_documents, recall_at};
use crate::query::{Corpus, Mode, SearchOptions};
use crate::{Error, Result};

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

/// Evaluates `searcher` (a bundle in memory or read by range) on `queries` against `qrels`, in `options.mode`. Documents are scored by
/// their best chunk; a bundle built with [`BeirDoc`]s as documents uses their ids as sources.
/// `progress` is called after each query with (done, total).
///
/// # Errors
/// [`Error::Query`] if no query has judgments.
pub async fn evaluate<C: Corpus>(
    searcher: &C,
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
    let (mut ndcg, mut recall, mut mrr) = (0.0, 0.0, 0.0);
    for (i, (query, judgments)) in judged.iter().enumerate() {
        let docs = rank_documents(searcher, &query.text, &options, EVAL_DEPTH).await?;
        let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
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
