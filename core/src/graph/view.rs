//! A small piece of the keyword graph around some chunks, for people to look at (the demo
//! site draws the graph around an answer's sources).
//!
//! The seed chunks' keywords are ranked by how much they characterise the seeds (their weight
//! in each seed times their inverse chunk frequency, summed over the seeds, so keywords the
//! seeds share rise); the best are kept, with the keywords SIMILAR_TO them and the other
//! chunks that hold the most of them, so the view shows where the graph leads from the answer.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::data::{GraphData, InMemory, KeywordInfo};
use super::{GraphIndex, KeywordGraph};
use crate::Result;
use crate::bundle::paged::ready_now;
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

/// How a chunk is labelled: its document's title, with its page, or with its innermost
/// heading (`section`, from the top) when that is not the title.
pub(crate) fn label(
    chunk_id: &str,
    title: &str,
    section: &[String],
    page: Option<u32>,
) -> ChunkLabel {
    let label = match (section.last(), page) {
        (_, Some(page)) => format!("{title}, p. {page}"),
        (Some(heading), None) if heading != title => format!("{title} › {heading}"),
        _ => title.to_owned(),
    };
    (chunk_id.to_owned(), label)
}

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
        let sketch = match ready_now(sketch(&InMemory { index: self, graph }, around, limit)) {
            Some(Ok(sketch)) => sketch,
            _ => unreachable!("reads of a graph in memory are ready at once and never fail"),
        };
        let labels = sketch.chunks().into_iter().map(|c| (c, chunk_label(c))).collect();
        let display = |&k: &u32| Some((k, graph.keywords.get(k as usize)?.display.clone()));
        let displays = sketch.keyword_ids().iter().filter_map(display).collect();
        sketch.draw(&labels, &displays)
    }
}

/// What a view shows before its chunks are labelled and its keywords named, read through
/// [`GraphData`], so that the graph in memory and a graph read by range give the same view.
pub(crate) struct Sketch {
    seeds: Vec<u32>,
    /// The keywords shown, best first, with their weight.
    keywords: Vec<(u32, f32)>,
    /// Their kinds.
    kinds: HashMap<u32, KeywordKind>,
    /// Every similarity found: (keyword, similar keyword, similarity, weight).
    similar: Vec<(u32, u32, f32, f32)>,
    /// The other chunks shown, with their weight.
    others: Vec<(u32, f32)>,
    /// The chunks each keyword shown appears in, with its weight there, in chunk order.
    appearances: HashMap<u32, Vec<(u32, f32)>>,
}

/// The view around `around` (chunks as `data` numbers them; unknown ones are ignored) with
/// at most `limit` keywords, as [`GraphIndex::view`] describes it.
pub(crate) async fn sketch(data: &impl GraphData, around: &[u32], limit: usize) -> Result<Sketch> {
    let total = data.chunk_count();
    let mut seeds: Vec<u32> = Vec::new();
    for &chunk in around {
        if !seeds.contains(&chunk) {
            seeds.push(chunk);
        }
    }
    let links = data.links(&seeds).await?;
    seeds.retain(|chunk| links.contains_key(chunk));
    let held = |chunk: &u32| links.get(chunk).map_or(&[][..], |l| &l.keywords[..]);
    let mut ids: Vec<u32> = seeds.iter().flat_map(held).map(|&(k, _)| k).collect();
    ids.sort_unstable();
    ids.dedup();
    let mut nodes = data.keywords(&ids).await?;
    let shown = |nodes: &HashMap<u32, KeywordInfo>, k: u32| {
        nodes.get(&k).is_some_and(|n| !matches!(n.kind, KeywordKind::Date | KeywordKind::Number))
    };

    // The seeds' keywords, by weight × idf summed over the seeds, the best weighing 1.
    let mut scores: BTreeMap<u32, f32> = BTreeMap::new();
    for &(k, weight) in seeds.iter().flat_map(held) {
        if let Some(node) = nodes.get(&k).filter(|_| shown(&nodes, k)) {
            let idf = (1.0 + total.max(1) as f32 / node.chunks.max(1) as f32).ln();
            *scores.entry(k).or_default() += weight * idf;
        }
    }
    let mut keywords: Vec<(u32, f32)> = scores.into_iter().collect();
    keywords.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    keywords.truncate(limit);
    let best = keywords.first().map_or(1.0, |k| k.1.max(f32::MIN_POSITIVE));
    keywords.iter_mut().for_each(|k| k.1 /= best);

    // Up to limit / 4 keywords SIMILAR_TO them, most similar first, weighted by similarity ×
    // the weight of the keyword they are similar to.
    let mut unread: Vec<u32> = keywords
        .iter()
        .filter_map(|(k, _)| nodes.get(k))
        .flat_map(|node| node.similar.iter().map(|&(other, _)| other))
        .filter(|other| !nodes.contains_key(other))
        .collect();
    unread.sort_unstable();
    unread.dedup();
    nodes.extend(data.keywords(&unread).await?);
    let mut similar: Vec<(u32, u32, f32, f32)> = Vec::new();
    for &(k, weight) in &keywords {
        let Some(node) = nodes.get(&k) else { continue };
        for &(other, s) in node.similar.iter().filter(|&&(o, _)| shown(&nodes, o)) {
            similar.push((k, other, s, s * weight));
        }
    }
    similar.sort_by(|a, b| b.3.total_cmp(&a.3).then(a.1.cmp(&b.1)));
    let direct = keywords.len();
    for &(_, other, _, weight) in &similar {
        if keywords.len() - direct >= limit / 4 {
            break;
        }
        if !keywords.iter().any(|&(k, _)| k == other) {
            keywords.push((other, weight.max(f32::MIN_POSITIVE)));
        }
    }

    // The limit / 4 other chunks holding the most of them, with their share of the best
    // one's count.
    let ids: Vec<u32> = keywords.iter().map(|&(k, _)| k).collect();
    let mut appearances = data.appearances(&ids).await?;
    // In chunk order, which both numberings of chunks keep, so that edges come alike.
    appearances.values_mut().for_each(|list| list.sort_by_key(|&(chunk, _)| chunk));
    let mut shared: BTreeMap<u32, usize> = BTreeMap::new();
    for list in ids.iter().filter_map(|k| appearances.get(k)) {
        for &(chunk, _) in list.iter().filter(|(c, _)| !seeds.contains(c)) {
            *shared.entry(chunk).or_default() += 1;
        }
    }
    let mut others: Vec<(u32, usize)> = shared.into_iter().collect();
    others.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    others.truncate(limit / 4);
    let most_shared = others.first().map_or(1, |o| o.1) as f32;
    let others = others.into_iter().map(|(c, n)| (c, n as f32 / most_shared)).collect();

    let kinds = ids.iter().filter_map(|&k| Some((k, nodes.get(&k)?.kind))).collect();
    Ok(Sketch { seeds, keywords, kinds, similar, others, appearances })
}

impl Sketch {
    /// The chunks the view shows: the seeds, then the others.
    pub(crate) fn chunks(&self) -> Vec<u32> {
        self.seeds.iter().copied().chain(self.others.iter().map(|&(c, _)| c)).collect()
    }

    /// The keywords the view shows.
    pub(crate) fn keyword_ids(&self) -> Vec<u32> {
        self.keywords.iter().map(|&(k, _)| k).collect()
    }

    /// The view, its chunks labelled by `labels` and its keywords named by `displays`.
    pub(crate) fn draw(
        &self,
        labels: &HashMap<u32, ChunkLabel>,
        displays: &HashMap<u32, String>,
    ) -> GraphView {
        let mut view = GraphView::default();
        let mut chunk_nodes: HashMap<u32, String> = HashMap::new();
        let chunks = self.seeds.iter().map(|&c| (c, 1.0, true));
        for (chunk, weight, seed) in chunks.chain(self.others.iter().map(|&(c, w)| (c, w, false))) {
            let Some((chunk_id, label)) = labels.get(&chunk).cloned() else { continue };
            let id = format!("chunk:{chunk_id}");
            chunk_nodes.insert(chunk, id.clone());
            let (kind, chunk_id) = (ViewNodeKind::Chunk, Some(chunk_id));
            view.nodes.push(ViewNode {
                id,
                kind,
                label,
                chunk_id,
                keyword_kind: None,
                weight,
                seed,
            });
        }
        for &(k, weight) in &self.keywords {
            view.nodes.push(ViewNode {
                id: keyword_id(k),
                kind: ViewNodeKind::Keyword,
                label: displays.get(&k).cloned().unwrap_or_default(),
                chunk_id: None,
                keyword_kind: self.kinds.get(&k).copied(),
                weight,
                seed: false,
            });
            for &(chunk, weight) in self.appearances.get(&k).map_or(&[][..], |a| &a[..]) {
                if let Some(target) = chunk_nodes.get(&chunk) {
                    let (source, target) = (keyword_id(k), target.clone());
                    let kind = ViewEdgeKind::AppearsIn;
                    view.edges.push(ViewEdge { source, target, kind, weight });
                }
            }
        }
        let in_view = |k: u32| self.keywords.iter().any(|&(x, _)| x == k);
        let mut linked = BTreeSet::new();
        for &(a, b, weight, _) in &self.similar {
            if in_view(a) && in_view(b) && linked.insert((a.min(b), a.max(b))) {
                let (source, target, kind) =
                    (keyword_id(a), keyword_id(b), ViewEdgeKind::SimilarTo);
                view.edges.push(ViewEdge { source, target, kind, weight });
            }
        }
        view
    }
}

fn keyword_id(keyword: u32) -> String {
    format!("keyword:{keyword}")
}
