//! The one retrieval pipeline: BM25, dense and graph lists, their fusion and multi-hop
//! expansion, written over [`Retrieve`], which a bundle in memory ([`super::Searcher`]) and a
//! bundle read by range ([`super::LazySearcher`]) implement.

use crate::graph::GraphHit;
use crate::graph::data::GraphData;
use crate::graph::search::{self, Start};
use crate::index::Scored;
use crate::index::fusion::{self, Ranked};
use crate::text::Analyzer;
use crate::{Error, Result};

use super::{Explanation, Mode, QueryModel, SearchOptions, Signal};

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
    let bm25 = match use_bm25 {
        true => data.bm25(&terms, depth, allow).await?,
        false => Vec::new(),
    };
    let dense = match (use_dense, model) {
        (true, Some(model)) => data.dense(&model.embed(query)?, depth, allow).await?,
        (true, None) => return Err(no_model()),
        (false, _) => Vec::new(),
    };
    let reader = data.graph();
    let start = match &options.graph_keywords {
        Some(keywords) => Start::Keywords(keywords),
        None => Start::Query(query, analyzer),
    };
    let graph = match use_graph {
        true => search::search(&reader, start, depth, &options.graph, allow).await?,
        false => Vec::new(),
    };
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
