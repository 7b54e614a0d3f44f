//! The one retrieval pipeline: BM25, dense and graph lists, their fusion and multi-hop
//! expansion, written over [`Retrieve`], which a bundle in memory ([`super::Searcher`]) and a
//! bundle read by range ([`super::LazySearcher`]) implement.

use std::collections::HashMap;

use crate::graph::GraphHit;
use crate::graph::data::GraphData;
use crate::graph::search::{self, Start};
use crate::index::Scored;
use crate::index::fusion::{self, Ranked};
use crate::text::Analyzer;
use crate::{Error, Result};

use super::{Explanation, KeywordCandidate, Mode, QueryModel, SearchOptions, Signal};

/// What the pipeline reads of a bundle: each retriever's best chunks among those `allow`
/// accepts. Chunks are named as the bundle names them (an index in memory, an address in a
/// bundle read by range).
pub(crate) trait Retrieve {
    /// Whether the bundle has vectors.
    fn has_vectors(&self) -> bool;

    /// BM25's `k` best for analysed query `terms`.
    async fn bm25(&self, terms: &[String], k: usize, allow: Allow<'_>) -> Result<Vec<Scored>>;

    /// The `k` chunks nearest the query's embedding `vector`.
    async fn dense(&self, vector: &[f32], k: usize, allow: Allow<'_>) -> Result<Vec<Scored>>;

    /// The keyword graph as graph retrieval reads it. One reader serves a whole query, so
    /// what its search read, its bridge finds.
    fn graph(&self) -> impl GraphData + '_;

    /// The display forms of `keywords`; unknown ones are left out.
    async fn displays(&self, keywords: &[u32]) -> Result<HashMap<u32, String>>;
}

/// Which chunks a search may return.
pub(crate) type Allow<'a> = &'a dyn Fn(u32) -> bool;

/// Ranked lists of one query, per retriever, and their fusion.
#[derive(Debug, Clone)]
pub(crate) struct Rankings {
    pub(crate) terms: Vec<String>,
    pub(crate) bm25: Vec<Scored>,
    pub(crate) dense: Vec<Scored>,
    pub(crate) graph: Vec<GraphHit>,
    pub(crate) bridge: Vec<Scored>,
    pub(crate) fused: Vec<Scored>,
}

/// Ranks the chunks of `data` for `query` as `options` say, embedding it with `model` (when
/// one is loaded) for dense retrieval.
pub(crate) async fn rank(
    data: &impl Retrieve,
    analyzer: &Analyzer,
    query: &str,
    model: Option<&QueryModel>,
    options: &SearchOptions,
    allow: Allow<'_>,
) -> Result<Rankings> {
    let terms = analyzer.terms(query);
    let use_dense = match options.mode {
        Mode::Dense if !data.has_vectors() => return Err(no_vectors()),
        Mode::Dense => true,
        Mode::Hybrid => data.has_vectors() && model.is_some(),
        Mode::Bm25 | Mode::Graph => false,
    };
    let lexical = !terms.is_empty() || query.chars().any(char::is_numeric);
    if query.trim().is_empty() || (!lexical && !use_dense) {
        return Err(Error::Query(format!("{query:?} has no searchable words")));
    }
    let depth = options.depth.max(options.k);
    let use_bm25 = matches!(options.mode, Mode::Bm25 | Mode::Hybrid);
    let use_graph = matches!(options.mode, Mode::Graph | Mode::Hybrid);
    let bm25 = async {
        match use_bm25 {
            true => data.bm25(&terms, depth, allow).await,
            false => Ok(Vec::new()),
        }
    };
    let dense = async {
        match (use_dense, model) {
            (true, Some(model)) => data.dense(&model.embed(query)?, depth, allow).await,
            (true, None) => Err(no_model()),
            (false, _) => Ok(Vec::new()),
        }
    };
    let reader = data.graph();
    let start = match &options.graph_keywords {
        Some(keywords) => Start::Keywords(keywords),
        None => Start::Query(query, analyzer),
    };
    let graph = async {
        match use_graph {
            true => search::search(&reader, start, depth, &options.graph, allow).await,
            false => Ok(Vec::new()),
        }
    };
    // The three run together, so that a bundle read by range reads their steps together: a
    // round trip for a step of each, not one for each step of each.
    let (bm25, dense, graph) = futures_util::future::join3(bm25, dense, graph).await;
    let (bm25, dense, graph) = (bm25?, dense?, graph?);
    let graph_scored: Vec<Scored> =
        graph.iter().map(|h| Scored { chunk: h.chunk, score: h.score }).collect();
    let mut bridge = Vec::new();
    let fused = match options.mode {
        Mode::Bm25 => bm25.clone(),
        Mode::Dense => dense.clone(),
        Mode::Graph => graph_scored,
        Mode::Hybrid => {
            let mut lists = vec![
                Ranked { hits: &bm25, weight: 1.0 },
                Ranked { hits: &graph_scored, weight: options.graph_weight },
            ];
            if use_dense {
                lists.push(Ranked { hits: &dense, weight: options.dense_weight });
            }
            let first = fusion::fuse(&lists, options.fusion, depth);
            if options.bridge_weight > 0.0 {
                let seeds = &first[..first.len().min(options.graph.bridge_seeds)];
                bridge = search::bridge(&reader, query, analyzer, seeds, allow).await?;
            }
            if bridge.is_empty() {
                first
            } else {
                let lists = [
                    Ranked { hits: &first, weight: 1.0 },
                    Ranked { hits: &bridge, weight: options.bridge_weight },
                ];
                // Expansion adds second hops; it never displaces the first retrieval's best
                // result (SQuAD answer recall@1 0.743 → 0.823, SciFact nDCG@10 0.717 →
                // 0.726, MuSiQue Recall@2 0.479 → 0.493; see docs/evaluation.md).
                let mut fused = fusion::fuse(&lists, options.fusion, depth);
                if let Some(best) = first.first() {
                    pin_first(&mut fused, best.chunk);
                }
                fused
            }
        }
    };
    Ok(Rankings { terms, bm25, dense, graph, bridge, fused })
}

/// Up to `limit` keywords of the graph of `data` worth matching `query` against, for a host
/// (an LLM) to choose from: see [`super::Searcher::keyword_candidates`].
pub(crate) async fn keyword_candidates(
    data: &impl Retrieve,
    analyzer: &Analyzer,
    query: &str,
    model: Option<&QueryModel>,
    limit: usize,
) -> Result<Vec<KeywordCandidate>> {
    let reader = data.graph();
    let matched = search::matched_keywords(&reader, query, analyzer).await?;
    let lexical: Vec<u32> = matched.into_iter().map(|(k, _)| k).collect();
    // The five chunks nearest the query, and the keywords they hold.
    let mode = if model.is_some() && data.has_vectors() { Mode::Dense } else { Mode::Bm25 };
    let options = SearchOptions { k: 5, mode, ..SearchOptions::default() };
    let near: Vec<u32> = match rank(data, analyzer, query, model, &options, &|_| true).await {
        Ok(r) => r.fused.iter().take(5).map(|s| s.chunk).collect(),
        Err(Error::Query(_)) => Vec::new(),
        Err(error) => return Err(error),
    };
    let links = reader.links(&near).await?;
    let held: Vec<&[(u32, f32)]> =
        near.iter().filter_map(|c| links.get(c)).map(|l| l.keywords.as_slice()).collect();
    let mut ids: Vec<u32> = held.iter().flat_map(|k| k.iter().map(|&(k, _)| k)).collect();
    ids.sort_unstable();
    ids.dedup();
    let nodes = reader.keywords(&ids).await?;
    let total = reader.chunk_count().max(1) as f32;
    // Each keyword's best weight × idf in those chunks.
    let mut semantic: Vec<(u32, f32)> = Vec::new();
    for &(k, weight) in held.into_iter().flatten() {
        let frequency = nodes.get(&k).map_or(1, |n| n.chunks.max(1)) as f32;
        let value = weight * (1.0 + total / frequency).ln();
        match semantic.iter_mut().find(|(x, _)| *x == k) {
            Some(found) => found.1 = found.1.max(value),
            None => semantic.push((k, value)),
        }
    }
    semantic.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    // Half the list for lexical matches at most, so that keywords the query does not spell
    // out (the point of asking an LLM) get their share.
    let mut chosen: Vec<(u32, bool)> =
        lexical.iter().take(limit.div_ceil(2)).map(|&k| (k, true)).collect();
    let rest = semantic.into_iter().map(|(k, _)| (k, lexical.contains(&k)));
    for (k, is_lexical) in rest.chain(lexical.iter().map(|&k| (k, true))) {
        if chosen.len() >= limit {
            break;
        }
        if !chosen.iter().any(|c| c.0 == k) {
            chosen.push((k, is_lexical));
        }
    }
    let ids: Vec<u32> = chosen.iter().map(|c| c.0).collect();
    let displays = data.displays(&ids).await?;
    let candidate = |(keyword, lexical)| {
        let display = displays.get(&keyword)?.clone();
        Some(KeywordCandidate { keyword, display, lexical })
    };
    Ok(chosen.into_iter().filter_map(candidate).collect())
}

impl Rankings {
    /// How each retriever ranked `chunk`: its explanation without the matched terms and
    /// keywords, which only the bundle can name.
    pub(crate) fn signals(&self, chunk: u32) -> Explanation {
        let rank_of = |list: &[Scored]| {
            let i = list.iter().position(|s| s.chunk == chunk)?;
            Some(Signal { score: list[i].score, rank: i as u32 + 1 })
        };
        let graph = self.graph.iter().position(|h| h.chunk == chunk);
        Explanation {
            bm25: rank_of(&self.bm25),
            dense: rank_of(&self.dense),
            graph: graph.map(|i| Signal { score: self.graph[i].score, rank: i as u32 + 1 }),
            graph_hops: graph.map(|i| self.graph[i].hops),
            bridge: rank_of(&self.bridge),
            terms: Vec::new(),
            keywords: Vec::new(),
        }
    }
}

/// The error of dense retrieval on a bundle without vectors.
pub(crate) fn no_vectors() -> Error {
    Error::NoVectors(
        "this bundle has no vectors (it was built without embeddings): use bm25, graph or \
         hybrid mode, or rebuild it with a model"
            .into(),
    )
}

/// The error of dense retrieval without the bundle's model.
fn no_model() -> Error {
    Error::NoVectors("dense retrieval needs the bundle's embedding model to be loaded".into())
}

/// Moves `chunk` to the front of `list`, raising its score to the best one.
fn pin_first(list: &mut Vec<Scored>, chunk: u32) {
    if let Some(i) = list.iter().position(|s| s.chunk == chunk).filter(|&i| i > 0) {
        let mut top = list.remove(i);
        top.score = top.score.max(list[0].score);
        list.insert(0, top);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinning_moves_a_chunk_to_the_front_and_keeps_scores_descending() {
        let list = |pairs: &[(u32, f32)]| -> Vec<Scored> {
            pairs.iter().map(|&(chunk, score)| Scored { chunk, score }).collect()
        };
        let mut fused = list(&[(4, 1.4), (7, 1.0), (2, 0.9)]);
        pin_first(&mut fused, 2);
        assert_eq!(fused, list(&[(2, 1.4), (4, 1.4), (7, 1.0)]));
        pin_first(&mut fused, 2);
        pin_first(&mut fused, 99);
        assert_eq!(fused, list(&[(2, 1.4), (4, 1.4), (7, 1.0)]));
    }
}
