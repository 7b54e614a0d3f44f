//! The keyword knowledge graph: Document, Chunk and Keyword nodes; APPEARS_IN, NEXT,
//! PART_OF and SIMILAR_TO edges; and graph retrieval over it.
//!
//! [`KeywordGraph::build`] merges the chunks' keywords by key into nodes and links lexically
//! similar keywords: the Dice coefficient of their key words (`2·|A∩B| / (|A|+|B|)`), found
//! through an index from key word to keywords, never by comparing all pairs. [`GraphIndex`]
//! loads the stored lists into a petgraph graph for [`GraphIndex::search`], which matches the
//! query to keywords, scores chunks by the IDF of the keywords they contain and expands from
//! the best chunks breadth-first. With an embedding model, [`KeywordGraph::link_semantic`]
//! also links keywords whose embeddings are close ("heart attack" ~ "myocardial infarction").
//!
//! Retrieval reads the graph through one trait (`data::GraphData`), a batch at a time, so the
//! same search runs over the graph in memory and over a paged bundle's graph sections
//! ([`crate::bundle::graph`]).

pub(crate) mod data;
pub(crate) mod search;
mod similar;
pub(crate) mod view;

use std::collections::{BTreeMap, HashMap};

use petgraph::Direction;
use petgraph::graph::{Graph, NodeIndex};
use petgraph::visit::EdgeRef;
use serde::{Deserialize, Serialize};

pub use self::search::GraphHit;
pub(crate) use self::search::MAX_LOOSE;
pub use self::view::{ChunkLabel, GraphView, ViewEdge, ViewEdgeKind, ViewNode, ViewNodeKind};
use crate::chunk::Chunk;
use crate::keywords::{Keyword, KeywordKind};
use crate::{Error, Result};

/// A keyword node as stored in a bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeywordNode {
    /// Matching form (see [`Keyword::key`]).
    pub key: String,
    /// Display form.
    pub display: String,
    /// What the keyword is.
    pub kind: KeywordKind,
    /// Number of chunks the keyword appears in.
    pub chunks: u32,
}

/// APPEARS_IN: keyword → chunk, with the keyword's weight in that chunk.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Appearance {
    /// Keyword index.
    pub keyword: u32,
    /// Chunk index.
    pub chunk: u32,
    /// Weight of the keyword in the chunk, in `(0, 1]`.
    pub weight: f32,
}

/// SIMILAR_TO: an undirected keyword ↔ keyword edge with a similarity in `(0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Similarity {
    /// One keyword index (the smaller).
    pub a: u32,
    /// The other keyword index.
    pub b: u32,
    /// Similarity score.
    pub score: f32,
}

/// Graph build settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphConfig {
    /// Minimum lexical similarity for a SIMILAR_TO edge.
    pub similar_threshold: f32,
    /// Most SIMILAR_TO edges kept per keyword, best first.
    pub max_similar: usize,
    /// Minimum cosine similarity of two keywords' embeddings for a SIMILAR_TO edge, used when
    /// the bundle is built with an embedding model; `None` links keywords lexically only.
    pub semantic_threshold: Option<f32>,
    /// Most keywords embedded for semantic SIMILAR_TO edges: the ones in the most chunks.
    pub semantic_keywords: u32,
}

impl Default for GraphConfig {
    fn default() -> Self {
        Self {
            similar_threshold: 0.5,
            max_similar: 5,
            semantic_threshold: Some(SEMANTIC_THRESHOLD),
            semantic_keywords: 20_000,
        }
    }
}

/// Default [`GraphConfig::semantic_threshold`].
pub const SEMANTIC_THRESHOLD: f32 = 0.8;

impl GraphConfig {
    /// Checks that the thresholds are in `(0, 1]`.
    ///
    /// # Errors
    /// [`Error::Config`] naming the bad value.
    pub fn validate(&self) -> Result<()> {
        let in_range = |x: f32| x > 0.0 && x <= 1.0;
        if !in_range(self.similar_threshold) {
            return Err(Error::Config(format!(
                "the lexical keyword similarity threshold must be in (0, 1] (got {})",
                self.similar_threshold
            )));
        }
        match self.semantic_threshold {
            Some(t) if !in_range(t) => Err(Error::Config(format!(
                "the keyword similarity threshold must be in (0, 1] (got {t})"
            ))),
            _ => Ok(()),
        }
    }
}

/// The graph as stored in a bundle: plain lists, independent of petgraph's own layout.
/// NEXT and PART_OF edges are implied by the chunks' `doc` and `seq` and rebuilt on load.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KeywordGraph {
    /// Keyword nodes, sorted by key.
    pub keywords: Vec<KeywordNode>,
    /// APPEARS_IN edges, sorted by (keyword, chunk).
    pub appears_in: Vec<Appearance>,
    /// SIMILAR_TO edges, sorted by (a, b), `a < b`.
    pub similar: Vec<Similarity>,
}

impl KeywordGraph {
    /// Those of `keywords` that are names (the bridges of multi-hop expansion), ascending.
    pub(crate) fn names(&self, keywords: impl IntoIterator<Item = u32>) -> Vec<u32> {
        let is_name =
            |k: &u32| self.keywords.get(*k as usize).is_some_and(|n| n.kind == KeywordKind::Name);
        let mut names: Vec<u32> = keywords.into_iter().filter(is_name).collect();
        names.sort_unstable();
        names
    }

    /// Builds the stored graph from each chunk's keywords (`per_chunk[i]` belongs to chunk `i`).
    ///
    /// A keyword node takes the display form and kind of the key's first occurrence; a name,
    /// acronym, date or number seen later replaces a phrase (the more specific reading wins).
    /// A key listed twice in one chunk counts once, with its best weight.
    pub fn build(per_chunk: &[Vec<Keyword>], config: &GraphConfig) -> Self {
        let mut nodes: BTreeMap<&str, KeywordNode> = BTreeMap::new();
        let mut weights: Vec<HashMap<&str, f32>> = Vec::with_capacity(per_chunk.len());
        for chunk in per_chunk {
            let mut best: HashMap<&str, f32> = HashMap::new();
            for keyword in chunk {
                let weight = best.entry(&keyword.key).or_insert(keyword.weight);
                *weight = weight.max(keyword.weight);
                merge_node(&mut nodes, keyword);
            }
            for key in best.keys() {
                if let Some(node) = nodes.get_mut(key) {
                    node.chunks += 1;
                }
            }
            weights.push(best);
        }
        let index: HashMap<&str, u32> = nodes.keys().zip(0..).map(|(&k, i)| (k, i)).collect();
        let index = &index;
        let mut appears_in: Vec<Appearance> = weights
            .iter()
            .zip(0..)
            .flat_map(|(best, chunk)| {
                best.iter().filter_map(move |(key, &weight)| {
                    let keyword = *index.get(key)?;
                    Some(Appearance { keyword, chunk, weight })
                })
            })
            .collect();
        appears_in.sort_by_key(|a| (a.keyword, a.chunk));
        let keywords: Vec<KeywordNode> = nodes.into_values().collect();
        let similar = similar::similarities(&keywords, config);
        Self { keywords, appears_in, similar }
    }

    /// The keywords whose embeddings can link them semantically (phrases, names and acronyms;
    /// not dates or numbers): the `limit` in the most chunks, in index order.
    pub fn semantic_candidates(&self, limit: usize) -> Vec<u32> {
        let mut ids: Vec<u32> = (0..self.keywords.len() as u32)
            .filter(|&k| {
                !matches!(self.keywords[k as usize].kind, KeywordKind::Date | KeywordKind::Number)
            })
            .collect();
        ids.sort_by_key(|&k| (std::cmp::Reverse(self.keywords[k as usize].chunks), k));
        ids.truncate(limit);
        ids.sort_unstable();
        ids
    }

    /// Adds SIMILAR_TO edges between the keywords `ids` whose embeddings (`vectors`, row `i`
    /// belonging to `ids[i]`, unit length) have a cosine similarity of at least `threshold`.
    /// Each keyword then keeps its `max_similar` best edges, lexical or semantic.
    ///
    /// # Errors
    /// [`Error::Config`] if `vectors` are not `ids.len()` finite rows.
    pub fn link_semantic(
        &mut self,
        ids: &[u32],
        vectors: &[f32],
        threshold: f32,
        max_similar: usize,
    ) -> Result<()> {
        let mut candidates = similar::semantic(ids, vectors, threshold, max_similar)?;
        candidates.append(&mut self.similar);
        self.similar = similar::limit_degree(candidates, self.keywords.len(), max_similar);
        Ok(())
    }
}

/// Adds `keyword` to its node, creating the node on first sight.
fn merge_node<'a>(nodes: &mut BTreeMap<&'a str, KeywordNode>, keyword: &'a Keyword) {
    let node = nodes.entry(&keyword.key).or_insert_with(|| KeywordNode {
        key: keyword.key.clone(),
        display: keyword.display.clone(),
        kind: keyword.kind,
        chunks: 0,
    });
    if node.kind == KeywordKind::Phrase && keyword.kind != KeywordKind::Phrase {
        node.kind = keyword.kind;
        node.display.clone_from(&keyword.display);
    }
}

/// Graph retrieval settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphSearch {
    /// Chunks scored directly from matched keywords that seed the expansion.
    pub primary: usize,
    /// Hops of breadth-first expansion through shared keywords and SIMILAR_TO.
    pub max_depth: u8,
    /// Score multiplier per hop, in `(0, 1)`.
    pub decay: f32,
    /// Best results of the first fusion that multi-hop expansion starts from (hybrid mode).
    pub bridge_seeds: usize,
}

impl Default for GraphSearch {
    fn default() -> Self {
        Self { primary: 10, max_depth: 2, decay: 0.5, bridge_seeds: 3 }
    }
}

/// A node of the in-memory graph; the numbers are indices into the corpus' documents, chunks
/// and [`KeywordGraph::keywords`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Node {
    Document(u32),
    Chunk(u32),
    Keyword(u32),
}

/// An edge of the in-memory graph.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Edge {
    /// Keyword → chunk, with the keyword's weight in the chunk.
    AppearsIn(f32),
    /// Chunk → the next chunk of the same document.
    Next,
    /// Chunk → its document.
    PartOf,
    /// Keyword → keyword (stored once, from the smaller index), with the similarity.
    SimilarTo(f32),
}

/// The in-memory graph (petgraph) built from a [`KeywordGraph`] and its chunks, for retrieval.
///
/// Nodes are laid out as all documents, then all chunks, then all keywords, so a document,
/// chunk or keyword index maps to its node without a lookup table.
#[derive(Debug)]
pub struct GraphIndex {
    graph: Graph<Node, Edge>,
    documents: usize,
    chunks: usize,
    /// Key word → keywords whose key contains it, sorted by word (dates and numbers left out).
    words: Vec<(String, Vec<u32>)>,
}

impl GraphIndex {
    /// Builds the petgraph graph: one node per document, chunk and keyword.
    ///
    /// `documents` is raised if a chunk names a later document; appearances and similarities
    /// naming a missing chunk or keyword are skipped.
    pub fn new(graph: &KeywordGraph, chunks: &[Chunk], documents: usize) -> Self {
        let documents = chunks.iter().map(|c| c.doc as usize + 1).fold(documents, usize::max);
        let mut index =
            Self { graph: Graph::new(), documents, chunks: chunks.len(), words: Vec::new() };
        let g = &mut index.graph;
        (0..documents).for_each(|d| _ = g.add_node(Node::Document(d as u32)));
        (0..chunks.len()).for_each(|c| _ = g.add_node(Node::Chunk(c as u32)));
        (0..graph.keywords.len()).for_each(|k| _ = g.add_node(Node::Keyword(k as u32)));
        index.link_chunks(chunks);
        index.link_keywords(graph);
        index.words = word_index(&graph.keywords);
        index
    }

    /// Number of chunks.
    pub(crate) fn chunk_count(&self) -> usize {
        self.chunks
    }

    /// Key word → keywords whose key contains it, sorted by word.
    pub(crate) fn words(&self) -> &[(String, Vec<u32>)] {
        &self.words
    }

    /// Number of edges (APPEARS_IN, NEXT, PART_OF, SIMILAR_TO).
    pub fn edge_count(&self) -> usize {
        self.graph.edge_count()
    }

    /// PART_OF for every chunk and NEXT between consecutive chunks (by `seq`) of a document.
    fn link_chunks(&mut self, chunks: &[Chunk]) {
        let mut order: Vec<(u32, u32, usize)> =
            chunks.iter().enumerate().map(|(i, c)| (c.doc, c.seq, i)).collect();
        order.sort_unstable();
        for (i, chunk) in chunks.iter().enumerate() {
            let (from, to) = (self.chunk_node(i as u32), NodeIndex::new(chunk.doc as usize));
            self.graph.add_edge(from, to, Edge::PartOf);
        }
        for pair in order.windows(2) {
            let ((doc_a, _, a), (doc_b, _, b)) = (pair[0], pair[1]);
            if doc_a == doc_b {
                let (from, to) = (self.chunk_node(a as u32), self.chunk_node(b as u32));
                self.graph.add_edge(from, to, Edge::Next);
            }
        }
    }

    /// APPEARS_IN and SIMILAR_TO edges.
    fn link_keywords(&mut self, graph: &KeywordGraph) {
        let keywords = graph.keywords.len() as u32;
        for a in graph
            .appears_in
            .iter()
            .filter(|a| a.keyword < keywords && (a.chunk as usize) < self.chunks)
        {
            let (from, to) = (self.keyword_node(a.keyword), self.chunk_node(a.chunk));
            self.graph.add_edge(from, to, Edge::AppearsIn(a.weight));
        }
        for s in graph.similar.iter().filter(|s| s.a < keywords && s.b < keywords) {
            let (from, to) = (self.keyword_node(s.a), self.keyword_node(s.b));
            self.graph.add_edge(from, to, Edge::SimilarTo(s.score));
        }
    }

    /// The graph in memory as graph retrieval reads it.
    /// The graph `self` was built from, read as graph retrieval reads it.
    pub(crate) fn data<'a>(&'a self, graph: &'a KeywordGraph) -> data::InMemory<'a> {
        data::InMemory { index: self, graph }
    }

    fn chunk_node(&self, chunk: u32) -> NodeIndex {
        NodeIndex::new(self.documents + chunk as usize)
    }

    fn keyword_node(&self, keyword: u32) -> NodeIndex {
        NodeIndex::new(self.documents + self.chunks + keyword as usize)
    }

    /// The chunks `keyword` appears in, with its weight there.
    pub(crate) fn chunks_of(&self, keyword: u32) -> impl Iterator<Item = (u32, f32)> + '_ {
        self.graph.edges_directed(self.keyword_node(keyword), Direction::Outgoing).filter_map(|e| {
            match (*e.weight(), self.graph[e.target()]) {
                (Edge::AppearsIn(w), Node::Chunk(c)) => Some((c, w)),
                _ => None,
            }
        })
    }

    /// The keywords of chunk `chunk` with their weights in it (none for an unknown chunk).
    pub fn chunk_keywords(&self, chunk: u32) -> Vec<(u32, f32)> {
        if (chunk as usize) >= self.chunks {
            return Vec::new();
        }
        self.keywords_of(chunk).collect()
    }

    /// The keywords of `chunk`, with their weight there.
    pub(crate) fn keywords_of(&self, chunk: u32) -> impl Iterator<Item = (u32, f32)> + '_ {
        self.graph.edges_directed(self.chunk_node(chunk), Direction::Incoming).filter_map(
            |e| match (*e.weight(), self.graph[e.source()]) {
                (Edge::AppearsIn(w), Node::Keyword(k)) => Some((k, w)),
                _ => None,
            },
        )
    }

    /// The SIMILAR_TO neighbours of `keyword`, with the similarity.
    pub(crate) fn similar_to(&self, keyword: u32) -> impl Iterator<Item = (u32, f32)> + '_ {
        let node = self.keyword_node(keyword);
        [Direction::Outgoing, Direction::Incoming].into_iter().flat_map(move |dir| {
            self.graph.edges_directed(node, dir).filter_map(move |e| {
                let other = if dir == Direction::Outgoing { e.target() } else { e.source() };
                match (*e.weight(), self.graph[other]) {
                    (Edge::SimilarTo(s), Node::Keyword(k)) => Some((k, s)),
                    _ => None,
                }
            })
        })
    }

    /// The chunks before and after `chunk` in its document.
    pub(crate) fn neighbours_in_document(&self, chunk: u32) -> impl Iterator<Item = u32> + '_ {
        let node = self.chunk_node(chunk);
        [Direction::Outgoing, Direction::Incoming].into_iter().flat_map(move |dir| {
            self.graph.edges_directed(node, dir).filter_map(move |e| {
                let other = if dir == Direction::Outgoing { e.target() } else { e.source() };
                match (*e.weight(), self.graph[other]) {
                    (Edge::Next, Node::Chunk(c)) => Some(c),
                    _ => None,
                }
            })
        })
    }
}

/// Key word → keywords containing it, sorted by word; dates and numbers are left out (their
/// keys are values, not words).
fn word_index(keywords: &[KeywordNode]) -> Vec<(String, Vec<u32>)> {
    let mut words: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (i, keyword) in keywords.iter().enumerate() {
        if matches!(keyword.kind, KeywordKind::Date | KeywordKind::Number) {
            continue;
        }
        for word in similar::key_words(&keyword.key) {
            words.entry(word).or_default().push(i as u32);
        }
    }
    words.into_iter().map(|(w, ids)| (w.to_owned(), ids)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::Scored;
    use crate::keywords::{KeywordConfig, extract};
    use crate::text::Analyzer;

    /// (document, text): SQuAD "Warsaw" (3 paragraphs, shortened), SciFact 275294 and 3034412
    /// (sentences), SQuAD "Super_Bowl_50".
    const TEXTS: &[(u32, &str)] = &[
        (
            0,
            "The University of Warsaw was established in 1816, when the partitions of Poland \
             separated Warsaw from the oldest and most influential Polish academic center, in \
             Kraków.",
        ),
        (
            0,
            "There are 13 natural reserves in Warsaw – among others, Bielany Forest, Kabaty Woods, \
             Czerniaków Lake. About 15 kilometres (9 miles) from Warsaw, the Vistula river's \
             environment changes strikingly and features a perfectly preserved ecosystem.",
        ),
        (
            0,
            "One of the most famous people born in Warsaw was Maria Skłodowska-Curie, who achieved \
             international recognition for her research on radioactivity and was the first female \
             recipient of the Nobel Prize. Famous musicians include Władysław Szpilman and \
             Frédéric Chopin.",
        ),
        (
            1,
            "It is now recognized that vitamin D insufficiency and vitamin D deficiency are common \
             in elderly people, especially in those who are infirm and not exposed to sunlight or \
             who live at latitudes that do not provide them with sunlight-mediated \
             cholecalciferol during the winter months.",
        ),
        (
            2,
            "BACKGROUND Calcium absorption is generally considered to be impaired under conditions \
             of vitamin D deficiency, but the vitamin D status that fully normalizes absorption is \
             not known for humans. OBJECTIVE To quantify calcium absorption at two levels of \
             vitamin D repletion.",
        ),
        (
            3,
            "The game was played on February 7, 2016, at Levi's Stadium in the San Francisco Bay \
             Area at Santa Clara, California.",
        ),
    ];

    fn chunks(texts: &[(u32, &str)]) -> Vec<Chunk> {
        let mut seq = 0;
        texts
            .iter()
            .enumerate()
            .map(|(i, &(doc, text))| {
                seq = if i > 0 && texts[i - 1].0 == doc { seq + 1 } else { 0 };
                Chunk {
                    id: format!("c{i}"),
                    doc,
                    seq,
                    section: 0,
                    page: None,
                    start: 0,
                    end: text.len() as u32,
                    text: text.to_owned(),
                }
            })
            .collect()
    }

    struct Fixture {
        per_chunk: Vec<Vec<Keyword>>,
        graph: KeywordGraph,
        index: GraphIndex,
        analyzer: Analyzer,
    }

    fn fixture() -> Fixture {
        fixture_of(TEXTS)
    }

    fn fixture_of(texts: &[(u32, &str)]) -> Fixture {
        let analyzer = Analyzer::new();
        let chunks = chunks(texts);
        let config = KeywordConfig::default();
        let per_chunk: Vec<Vec<Keyword>> =
            chunks.iter().map(|c| extract(&c.text, &config, &analyzer)).collect();
        let graph = KeywordGraph::build(&per_chunk, &GraphConfig::default());
        let index = GraphIndex::new(&graph, &chunks, 0);
        Fixture { per_chunk, graph, index, analyzer }
    }

    fn keyword_index(graph: &KeywordGraph, key: &str) -> u32 {
        let found = graph.keywords.binary_search_by(|k| k.key.as_str().cmp(key));
        found.unwrap_or_else(|_| panic!("no keyword {key}")) as u32
    }

    fn search(f: &Fixture, query: &str, options: &GraphSearch) -> Vec<GraphHit> {
        f.index.search(&f.graph, query, &f.analyzer, 10, options, &|_| true)
    }

    #[test]
    fn build_merges_keys_and_counts_chunks() {
        let f = fixture();
        assert!(f.graph.keywords.windows(2).all(|w| w[0].key < w[1].key));
        let deficiency = keyword_index(&f.graph, "vitamin d defici");
        assert_eq!(f.graph.keywords[deficiency as usize].chunks, 2);
        let warsaw = &f.graph.keywords[keyword_index(&f.graph, "univers warsaw") as usize];
        assert_eq!(
            (warsaw.display.as_str(), warsaw.kind),
            ("University of Warsaw", KeywordKind::Name)
        );
        let listed: usize = f.per_chunk.iter().map(Vec::len).sum();
        assert_eq!(f.graph.appears_in.len(), listed);
        assert!(
            f.graph
                .appears_in
                .windows(2)
                .all(|w| (w[0].keyword, w[0].chunk) < (w[1].keyword, w[1].chunk))
        );
        let in_chunk_4: Vec<u32> = f
            .graph
            .appears_in
            .iter()
            .filter(|a| a.keyword == deficiency)
            .map(|a| a.chunk)
            .collect();
        assert_eq!(in_chunk_4, [3, 4]);
        assert!(f.graph.similar.windows(2).all(|w| (w[0].a, w[0].b) < (w[1].a, w[1].b)));
        assert!(f.graph.similar.iter().all(|s| s.a < s.b && s.score >= 0.5 && s.score <= 1.0));
        let insufficiency = keyword_index(&f.graph, "vitamin d insuffici");
        assert!(f.graph.similar.iter().any(|s| (s.a, s.b) == (deficiency, insufficiency)));
    }

    #[test]
    fn the_view_around_chunks_shows_their_keywords_and_where_they_lead() {
        let f = fixture();
        let label = |c: u32| (format!("id{c}"), format!("chunk {c}"));
        // The SciFact sentence on vitamin D insufficiency (chunk 3).
        let view = f.index.view(&f.graph, &[3, 3, 99], 4, label);
        let seeds: Vec<&str> =
            view.nodes.iter().filter(|n| n.seed).map(|n| n.id.as_str()).collect();
        assert_eq!(seeds, ["chunk:id3"], "duplicates and unknown chunks are dropped");
        let keywords: Vec<&ViewNode> =
            view.nodes.iter().filter(|n| n.kind == ViewNodeKind::Keyword).collect();
        assert!(keywords.len() <= 4 + 1, "{} keywords", keywords.len());
        assert_eq!(keywords[0].weight, 1.0);
        assert!(keywords.windows(2).take(3).all(|w| w[0].weight >= w[1].weight));
        let labels: Vec<&str> = keywords.iter().map(|k| k.label.as_str()).collect();
        assert!(labels.contains(&"vitamin D deficiency"), "{labels:?}");
        // The other abstract on vitamin D deficiency (chunk 4) shares a keyword.
        let other = view.nodes.iter().find(|n| n.id == "chunk:id4").expect("chunk 4 is shown");
        assert!(!other.seed && other.label == "chunk 4");
        let ids: Vec<&str> = view.nodes.iter().map(|n| n.id.as_str()).collect();
        for edge in &view.edges {
            assert!(ids.contains(&edge.source.as_str()) && ids.contains(&edge.target.as_str()));
        }
        let into_4: Vec<&str> = view
            .edges
            .iter()
            .filter(|e| e.target == "chunk:id4")
            .map(|e| e.source.as_str())
            .collect();
        let deficiency = keyword_index(&f.graph, "vitamin d defici");
        assert_eq!(into_4, [format!("keyword:{deficiency}")]);
        assert!(view.edges.iter().any(|e| e.kind == ViewEdgeKind::SimilarTo));
        assert!(f.index.view(&f.graph, &[99], 4, label).nodes.is_empty());
    }

    fn phrase(key: &str) -> Keyword {
        Keyword { key: key.into(), display: key.into(), kind: KeywordKind::Phrase, weight: 1.0 }
    }

    #[test]
    fn similar_to_links_overlapping_keys_within_limits() {
        let number = Keyword { kind: KeywordKind::Number, ..phrase("10") };
        let per_chunk = vec![
            vec![phrase("vitamin d"), phrase("il 10"), number],
            vec![phrase("vitamin d defici"), phrase("calcium absorpt")],
        ];
        let graph = KeywordGraph::build(&per_chunk, &GraphConfig::default());
        let key = |i: u32| graph.keywords[i as usize].key.as_str();
        let pairs: Vec<(&str, &str, f32)> =
            graph.similar.iter().map(|s| (key(s.a), key(s.b), s.score)).collect();
        assert_eq!(pairs, [("vitamin d", "vitamin d defici", 0.8)]);

        // Ten keywords sharing "vitamin": each keeps at most `max_similar` edges.
        let many: Vec<Vec<Keyword>> =
            (0..10).map(|i| vec![phrase(&format!("vitamin x{i}"))]).collect();
        let config = GraphConfig { max_similar: 3, ..GraphConfig::default() };
        let graph = KeywordGraph::build(&many, &config);
        let mut degree = vec![0; graph.keywords.len()];
        for s in &graph.similar {
            degree[s.a as usize] += 1;
            degree[s.b as usize] += 1;
        }
        assert!(!graph.similar.is_empty() && degree.iter().all(|&d| d <= 3));
    }

    #[test]
    fn semantic_edges_join_lexical_ones_within_limits() {
        let date = Keyword { kind: KeywordKind::Date, ..phrase("2016-02-07") };
        let per_chunk = vec![
            vec![phrase("heart attack"), phrase("vitamin d"), date],
            vec![phrase("myocardial infarct"), phrase("vitamin d defici"), phrase("calcium")],
            vec![phrase("vitamin d")],
        ];
        let mut graph = KeywordGraph::build(&per_chunk, &GraphConfig::default());
        let id = |key: &str| keyword_index(&graph, key);
        // Dates and numbers are never embedded; the most frequent keywords come first.
        assert!(!graph.semantic_candidates(10).contains(&id("2016-02-07")));
        assert_eq!(graph.semantic_candidates(1), [id("vitamin d")]);
        let ids = graph.semantic_candidates(10);
        // Unit vectors: heart attack · myocardial infarct = 0.9, vitamin d · vitamin d defici
        // = 0.95 (lexically 0.8), calcium · vitamin d = 0.6 (under the threshold).
        let (a, b) = (0.9f32, (1.0f32 - 0.81).sqrt());
        let vector = |key: &str| match key {
            "heart attack" => [1.0, 0.0, 0.0, 0.0],
            "myocardial infarct" => [a, b, 0.0, 0.0],
            "vitamin d" => [0.0, 0.0, 1.0, 0.0],
            "vitamin d defici" => [0.0, 0.0, 0.95, (1.0f32 - 0.9025).sqrt()],
            "calcium" => [0.0, 0.8, 0.6, 0.0],
            other => panic!("unexpected keyword {other}"),
        };
        let flat: Vec<f32> =
            ids.iter().flat_map(|&k| vector(&graph.keywords[k as usize].key)).collect();
        graph.link_semantic(&ids, &flat, 0.8, 5).unwrap();
        let key = |i: u32| graph.keywords[i as usize].key.as_str();
        let pairs: Vec<(&str, &str, f32)> =
            graph.similar.iter().map(|s| (key(s.a), key(s.b), (s.score * 100.0).round())).collect();
        assert_eq!(
            pairs,
            [("heart attack", "myocardial infarct", 90.0), ("vitamin d", "vitamin d defici", 95.0)]
        );
        assert!(graph.link_semantic(&ids, &flat[1..], 0.8, 5).is_err());
    }

    #[test]
    fn bridge_follows_entities_the_query_does_not_name() {
        let f = fixture();
        let seeds = [Scored { chunk: 0, score: 2.0 }];
        let bridge = |query: &str| f.index.bridge(&f.graph, query, &f.analyzer, &seeds, &|_| true);
        // Chunk 0 names the "University of Warsaw", SIMILAR_TO "Warsaw" of chunks 1 and 2; the
        // vitamin D and Super Bowl chunks share no entity with it.
        let hits = bridge("When was the oldest Polish academic centre established?");
        let mut reached: Vec<u32> = hits.iter().map(|h| h.chunk).collect();
        reached.sort_unstable();
        assert_eq!(reached, [1, 2]);
        let (university, warsaw) =
            (keyword_index(&f.graph, "univers warsaw"), keyword_index(&f.graph, "warsaw"));
        let weight = |chunk: usize, key: &str| {
            f.per_chunk[chunk].iter().find(|k| k.key == key).map_or(0.0, |k| k.weight)
        };
        let similarity = f.index.similar_to(university).find(|&(n, _)| n == warsaw).map(|s| s.1);
        let idf = (1.0 + TEXTS.len() as f32 / f.graph.keywords[warsaw as usize].chunks as f32).ln();
        let expected = weight(0, "univers warsaw")
            * similarity.unwrap_or_default()
            * weight(1, "warsaw")
            * idf;
        let hit_1 = hits.iter().find(|h| h.chunk == 1).map(|h| h.score);
        assert!((hit_1.unwrap_or_default() - expected).abs() < 1e-5, "{hit_1:?} vs {expected}");
        // An entity the query names is not a bridge, and disallowed chunks are never returned.
        assert!(bridge("Which university is in Warsaw, Poland, near Kraków?").is_empty());
        let only_2 = f.index.bridge(&f.graph, "academic centre", &f.analyzer, &seeds, &|c| c == 2);
        assert_eq!(only_2.iter().map(|h| h.chunk).collect::<Vec<_>>(), [2]);
    }

    /// The graph in memory, counting the keyword nodes a search asks for, its chunks' names
    /// hidden when `hide` (as a paged bundle written before its links named them).
    struct Counting<'a> {
        inner: data::InMemory<'a>,
        hide: bool,
        asked: std::cell::RefCell<Vec<u32>>,
    }

    impl data::GraphData for Counting<'_> {
        fn chunk_count(&self) -> u32 {
            self.inner.chunk_count()
        }

        async fn find(&self, keys: &[String]) -> Result<Vec<u32>> {
            self.inner.find(keys).await
        }

        async fn words(
            &self,
            probes: &[data::WordProbe<'_>],
            limit: usize,
        ) -> Result<Vec<Vec<data::WordEntry>>> {
            self.inner.words(probes, limit).await
        }

        async fn keywords(&self, keywords: &[u32]) -> Result<HashMap<u32, data::KeywordInfo>> {
            self.asked.borrow_mut().extend(keywords);
            self.inner.keywords(keywords).await
        }

        async fn appearances(&self, keywords: &[u32]) -> Result<HashMap<u32, Vec<(u32, f32)>>> {
            self.inner.appearances(keywords).await
        }

        async fn links(&self, chunks: &[u32]) -> Result<HashMap<u32, data::ChunkLinks>> {
            let mut links = self.inner.links(chunks).await?;
            if self.hide {
                links.values_mut().for_each(|link| link.names = None);
            }
            Ok(links)
        }
    }

    #[test]
    fn the_bridge_reads_the_nodes_of_the_seeds_names_only_when_their_links_name_them() {
        let f = fixture();
        let seeds = [Scored { chunk: 0, score: 2.0 }, Scored { chunk: 4, score: 1.0 }];
        let query = "When was the oldest Polish academic centre established?";
        let bridge = |hide| {
            let data = Counting { inner: f.index.data(&f.graph), hide, asked: Default::default() };
            let hits = search::bridge(&data, query, &f.analyzer, &seeds, &|_| true);
            let hits = crate::bundle::paged::ready_now(hits).unwrap().unwrap();
            (hits, data.asked.into_inner())
        };
        let ((named, asked), (unnamed, all)) = (bridge(false), bridge(true));
        assert!(!named.is_empty());
        assert_eq!(named, unnamed);
        // Without names, the nodes of every keyword of the seeds; with them, not those of the
        // seeds' keywords that are not names, and nothing else.
        let kind = |k: &u32| f.graph.keywords[*k as usize].kind;
        let in_seeds =
            |k: &u32| seeds.iter().any(|s| f.index.keywords_of(s.chunk).any(|x| x.0 == *k));
        let skipped: Vec<&u32> = all.iter().filter(|k| !asked.contains(k)).collect();
        assert!(!skipped.is_empty() && asked.iter().all(|k| all.contains(k)), "{asked:?} {all:?}");
        assert!(skipped.iter().all(|k| in_seeds(k) && kind(k) != KeywordKind::Name), "{skipped:?}");
    }

    #[test]
    fn bridges_are_names_not_acronyms() {
        let f = fixture_of(&[
            (0, "Brand is a play by Henrik Ibsen, first staged with support from the NTC."),
            (1, "Henrik Ibsen was a Norwegian playwright and theatre director."),
            (2, "The NTC funds touring productions of new plays across the country."),
        ]);
        let ntc = keyword_index(&f.graph, "ntc");
        assert_eq!(f.graph.keywords[ntc as usize].kind, KeywordKind::Acronym);
        assert_eq!(f.graph.keywords[ntc as usize].chunks, 2);
        let seeds = [Scored { chunk: 0, score: 1.0 }];
        let hits = f.index.bridge(&f.graph, "Who wrote Brand?", &f.analyzer, &seeds, &|_| true);
        assert_eq!(hits.iter().map(|h| h.chunk).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn index_has_every_edge_kind() {
        let f = fixture();
        // PART_OF: one per chunk; NEXT: chunks 0 → 1 → 2 of document 0.
        let expected = f.graph.appears_in.len() + f.graph.similar.len() + TEXTS.len() + 2;
        assert_eq!(f.index.edge_count(), expected);
        let mut around_1: Vec<u32> = f.index.neighbours_in_document(1).collect();
        around_1.sort_unstable();
        assert_eq!(around_1, [0, 2]);
        assert_eq!(f.index.neighbours_in_document(3).count(), 0);
        let kraków = keyword_index(&f.graph, "kraków");
        assert_eq!(f.index.chunks_of(kraków).collect::<Vec<_>>().len(), 1);
        assert!(f.index.keywords_of(0).any(|(k, _)| k == kraków));
    }

    #[test]
    fn a_keyword_found_in_one_chunk_finds_that_chunk_first() {
        let f = fixture();
        let options = GraphSearch::default();
        let hits = search(&f, "Where is Kraków?", &options);
        assert_eq!((hits[0].chunk, hits[0].hops), (0, 0));
        assert_eq!(hits[0].keywords, [keyword_index(&f.graph, "kraków")]);
        assert_eq!(search(&f, "Levi's Stadium", &options)[0].chunk, 5);
        assert_eq!(search(&f, "when was the game on February 7, 2016", &options)[0].chunk, 5);
        // Loose matches: a word inside a longer keyword, and a shared prefix ("environment").
        assert_eq!(search(&f, "cholecalciferol", &options)[0].chunk, 3);
        assert_eq!(search(&f, "environmental", &options)[0].chunk, 1);
    }

    #[test]
    fn expansion_reaches_chunks_sharing_a_keyword_with_decay() {
        let f = fixture();
        let options = GraphSearch { primary: 1, max_depth: 1, ..GraphSearch::default() };
        let hits = search(&f, "vitamin D deficiency", &options);
        assert_eq!((hits[0].chunk, hits[0].hops), (3, 0));
        let reached = hits.iter().find(|h| h.chunk == 4).expect("chunk 4 at hop 1");
        let weight = f.per_chunk[4].iter().find(|k| k.key == "vitamin d defici").map(|k| k.weight);
        assert_eq!(reached.hops, 1);
        assert!((reached.score - hits[0].score * 0.5 * weight.unwrap_or_default()).abs() < 1e-5);
        assert_eq!(reached.keywords, hits[0].keywords);
    }

    #[test]
    fn depth_zero_returns_only_primary_chunks() {
        let f = fixture();
        let options = GraphSearch { primary: 1, max_depth: 0, ..GraphSearch::default() };
        let hits = search(&f, "vitamin D deficiency", &options);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].hops, 0);
        let options = GraphSearch { primary: 1, max_depth: 2, ..GraphSearch::default() };
        let hits = search(&f, "Where is Kraków?", &options);
        assert_eq!(
            hits.iter().map(|h| (h.chunk, h.hops)).collect::<Vec<_>>(),
            [(0, 0), (1, 1), (2, 2)]
        );
    }

    #[test]
    fn unknown_queries_find_nothing() {
        let f = fixture();
        let options = GraphSearch::default();
        for query in ["", "   ", "?!", "the of and", "zebra quokka xylophone", "2024-13-45"] {
            assert!(search(&f, query, &options).is_empty(), "{query}");
        }
        let empty = GraphIndex::new(&KeywordGraph::default(), &[], 0);
        assert_eq!(empty.edge_count(), 0);
        assert!(
            empty
                .search(&KeywordGraph::default(), "Warsaw", &f.analyzer, 5, &options, &|_| true)
                .is_empty()
        );
    }
}
