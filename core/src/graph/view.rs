//! A small piece of the keyword graph around some chunks, for people to look at (the demo
//! site draws the graph around an answer's sources).
//!
//! The seed chunks' keywords are ranked by how much they characterise the seeds (their weight
//! in each seed times their inverse chunk frequency, summed over the seeds, so keywords the
//! seeds share rise); the best are kept, with the keywords SIMILAR_TO them and the other
//! chunks that hold the most of them, so the view shows where the graph leads from the answer.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::{GraphIndex, KeywordGraph, KeywordNode};
use crate::keywords::KeywordKind;

/// What a node of a [`GraphView`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewNodeKind {
    /// A chunk (a seed, or another chunk sharing the seeds' keywords).
    Chunk,
    /// A keyword.
    Keyword,
}

/// A node of a [`GraphView`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViewNode {
    /// Stable id within the view: `chunk:<chunk id>` or `keyword:<index>`.
    pub id: String,
    /// Chunk or keyword.
    pub kind: ViewNodeKind,
    /// What to print: the keyword's display form, or the chunk's label given by the host.
    pub label: String,
    /// The chunk's content id (chunks only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunk_id: Option<String>,
    /// The keyword's kind (keywords only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keyword_kind: Option<KeywordKind>,
    /// Importance in `(0, 1]`: 1 for the seeds and the best keyword.
    pub weight: f32,
    /// Whether the node is one of the chunks the view was asked around.
    pub seed: bool,
}

/// What an edge of a [`GraphView`] stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewEdgeKind {
    /// Keyword → a chunk it appears in.
    AppearsIn,
    /// Keyword ↔ a similar keyword.
    SimilarTo,
}

/// An edge of a [`GraphView`], between node ids.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ViewEdge {
    /// Source node id.
    pub source: String,
    /// Target node id.
    pub target: String,
    /// Edge type.
    pub kind: ViewEdgeKind,
    /// The keyword's weight in the chunk, or the keywords' similarity.
    pub weight: f32,
}

/// Nodes and edges around some chunks, ready to draw.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GraphView {
    /// Seed chunks first, then keywords (best first), then the other chunks.
    pub nodes: Vec<ViewNode>,
    /// APPEARS_IN and SIMILAR_TO edges between the nodes.
    pub edges: Vec<ViewEdge>,
}

/// A chunk as the host shows it: its content id and a label.
pub type ChunkLabel = (String, String);

impl GraphIndex {
    /// The keyword graph around the chunks `around` (indices; unknown ones are ignored): at most
    /// `limit` keywords ranked as the module docs say, plus up to `limit / 4` keywords
    /// SIMILAR_TO them and the `limit / 4` other chunks holding the most of them.
    /// `chunk_label` names a chunk. Dates and numbers are left out: they connect little.
    pub fn view(
        &self,
        graph: &KeywordGraph,
        around: &[u32],
        limit: usize,
        chunk_label: impl Fn(u32) -> ChunkLabel,
    ) -> GraphView {
        let mut seeds: Vec<u32> = Vec::new();
        for &chunk in around.iter().filter(|&&c| (c as usize) < self.chunks) {
            if !seeds.contains(&chunk) {
                seeds.push(chunk);
            }
        }
        let shown = |k: u32| {
            graph
                .keywords
                .get(k as usize)
                .filter(|n| !matches!(n.kind, KeywordKind::Date | KeywordKind::Number))
        };
        let mut keywords = self.characteristic_keywords(&seeds, limit, shown);
        let similar = self.add_similar(&mut keywords, limit / 4, |k| shown(k).is_some());
        let others = self.sharing_chunks(&keywords, &seeds, limit / 4);

        let mut view = GraphView::default();
        let mut chunk_nodes: HashMap<u32, String> = HashMap::new();
        let mut add_chunk = |view: &mut GraphView, chunk: u32, weight: f32, seed: bool| {
            let (chunk_id, label) = chunk_label(chunk);
            let id = format!("chunk:{chunk_id}");
            chunk_nodes.insert(chunk, id.clone());
            let kind = ViewNodeKind::Chunk;
            let chunk_id = Some(chunk_id);
            view.nodes.push(ViewNode {
                id,
                kind,
                label,
                chunk_id,
                keyword_kind: None,
                weight,
                seed,
            });
        };
        seeds.iter().for_each(|&c| add_chunk(&mut view, c, 1.0, true));
        others.iter().for_each(|&(c, weight)| add_chunk(&mut view, c, weight, false));
        for &(k, weight) in &keywords {
            let node = &graph.keywords[k as usize];
            view.nodes.push(ViewNode {
                id: keyword_id(k),
                kind: ViewNodeKind::Keyword,
                label: node.display.clone(),
                chunk_id: None,
                keyword_kind: Some(node.kind),
                weight,
                seed: false,
            });
            for (chunk, weight) in self.chunks_of(k) {
                if let Some(target) = chunk_nodes.get(&chunk) {
                    let (source, target) = (keyword_id(k), target.clone());
                    let kind = ViewEdgeKind::AppearsIn;
                    view.edges.push(ViewEdge { source, target, kind, weight });
                }
            }
        }
        let in_view = |k: u32| keywords.iter().any(|&(x, _)| x == k);
        let mut linked = BTreeSet::new();
        for &(a, b, weight, _) in &similar {
            if in_view(a) && in_view(b) && linked.insert((a.min(b), a.max(b))) {
                let (source, target, kind) =
                    (keyword_id(a), keyword_id(b), ViewEdgeKind::SimilarTo);
                view.edges.push(ViewEdge { source, target, kind, weight });
            }
        }
        view
    }

    /// The `limit` keywords of `seeds` that `shown` lets through, by weight × idf summed over
    /// the seeds, best first, the best weighing 1.
    fn characteristic_keywords<'g>(
        &self,
        seeds: &[u32],
        limit: usize,
        shown: impl Fn(u32) -> Option<&'g KeywordNode>,
    ) -> Vec<(u32, f32)> {
        let total = self.chunks.max(1) as f32;
        let mut scores: BTreeMap<u32, f32> = BTreeMap::new();
        for &chunk in seeds {
            for (k, weight) in self.keywords_of(chunk) {
                if let Some(node) = shown(k) {
                    let idf = (1.0 + total / node.chunks.max(1) as f32).ln();
                    *scores.entry(k).or_default() += weight * idf;
                }
            }
        }
        let mut keywords: Vec<(u32, f32)> = scores.into_iter().collect();
        keywords.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        keywords.truncate(limit);
        let best = keywords.first().map_or(1.0, |k| k.1.max(f32::MIN_POSITIVE));
        keywords.iter_mut().for_each(|k| k.1 /= best);
        keywords
    }

    /// Adds to `keywords` up to `most` keywords SIMILAR_TO them that `shown` lets through, most
    /// similar first, weighted by similarity × the weight of the keyword they are similar to.
    /// Returns every similarity found: (keyword, similar keyword, similarity, weight).
    fn add_similar(
        &self,
        keywords: &mut Vec<(u32, f32)>,
        most: usize,
        shown: impl Fn(u32) -> bool,
    ) -> Vec<(u32, u32, f32, f32)> {
        let mut similar: Vec<(u32, u32, f32, f32)> = Vec::new();
        for &(k, weight) in keywords.iter() {
            for (other, s) in self.similar_to(k).filter(|&(o, _)| shown(o)) {
                similar.push((k, other, s, s * weight));
            }
        }
        similar.sort_by(|a, b| b.3.total_cmp(&a.3).then(a.1.cmp(&b.1)));
        let direct = keywords.len();
        for &(_, other, _, weight) in &similar {
            if keywords.len() - direct >= most {
                break;
            }
            if !keywords.iter().any(|&(k, _)| k == other) {
                keywords.push((other, weight.max(f32::MIN_POSITIVE)));
            }
        }
        similar
    }

    /// The `most` chunks other than `seeds` holding the most of `keywords`, with their share
    /// of the best one's count.
    fn sharing_chunks(
        &self,
        keywords: &[(u32, f32)],
        seeds: &[u32],
        most: usize,
    ) -> Vec<(u32, f32)> {
        let mut shared: BTreeMap<u32, usize> = BTreeMap::new();
        for &(k, _) in keywords {
            for (chunk, _) in self.chunks_of(k).filter(|(c, _)| !seeds.contains(c)) {
                *shared.entry(chunk).or_default() += 1;
            }
        }
        let mut others: Vec<(u32, usize)> = shared.into_iter().collect();
        others.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        others.truncate(most);
        let most_shared = others.first().map_or(1, |o| o.1) as f32;
        others.into_iter().map(|(c, n)| (c, n as f32 / most_shared)).collect()
    }
}

fn keyword_id(keyword: u32) -> String {
    format!("keyword:{keyword}")
}
