//! Evaluation: ranking metrics, and the data-set layouts they run on — [`beir`] (SciFact and
//! the other BEIR sets), [`multihop`] (MuSiQue, HippoRAG's protocol) and [`squad`] (answers:
//! answer recall of retrieval, exact match and F1).
//!
//! Metrics follow `trec_eval`/`pytrec_eval` as BEIR reports them: nDCG@k with linear gains
//! (`rel / log2(rank + 1)`), Recall@k as the fraction of relevant documents retrieved in the
//! top k, and MRR@k as the reciprocal rank of the first relevant document. Queries without
//! relevance judgments are not evaluated.

pub mod beir;
pub mod judge;
pub mod multihop;
pub mod squad;

use std::collections::HashMap;

use crate::query::{Corpus, SearchOptions};
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

/// The sources of the best `n` documents for `query`, each scored by its best chunk.
/// A query with no searchable words ranks nothing.
///
/// # Errors
/// Any search error other than an unusable query.
pub async fn rank_documents<C: Corpus>(
    corpus: &C,
    query: &str,
    options: &SearchOptions,
    n: usize,
) -> Result<Vec<String>> {
    let chunks = match corpus.rank_chunks(query, options).await {
        Ok(chunks) => chunks,
        Err(Error::Query(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let chunks: Vec<u32> = chunks.iter().map(|s| s.chunk).collect();
    let mut docs: Vec<String> = Vec::with_capacity(n);
    for source in corpus.sources(&chunks).await? {
        if !docs.contains(&source) {
            docs.push(source);
            if docs.len() == n {
                break;
            }
        }
    }
    Ok(docs)
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
}
