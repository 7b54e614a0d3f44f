//! The keyword knowledge graph: Document, Chunk and Keyword nodes; APPEARS_IN, NEXT,
//! PART_OF and SIMILAR_TO edges; and graph retrieval over it.

use serde::{Deserialize, Serialize};

use crate::chunk::Chunk;
use crate::keywords::{Keyword, KeywordKind};
use crate::text::Analyzer;

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
}

impl Default for GraphConfig {
    fn default() -> Self {
        Self { similar_threshold: 0.5, max_similar: 5 }
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
    /// Builds the stored graph from each chunk's keywords (`per_chunk[i]` belongs to chunk `i`).
    pub fn build(_per_chunk: &[Vec<Keyword>], _config: &GraphConfig) -> Self {
        unimplemented!("in progress")
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
}

impl Default for GraphSearch {
    fn default() -> Self {
        Self { primary: 10, max_depth: 2, decay: 0.5 }
    }
}

/// A chunk found by graph retrieval.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphHit {
    /// Chunk index.
    pub chunk: u32,
    /// Graph score (higher is better).
    pub score: f32,
    /// Indices of the query-matched keywords that led to this chunk.
    pub keywords: Vec<u32>,
    /// Hops from a primary chunk (0 = primary).
    pub hops: u8,
}

/// The in-memory graph (petgraph) built from a [`KeywordGraph`] and its chunks, for retrieval.
#[derive(Debug)]
pub struct GraphIndex {}

impl GraphIndex {
    /// Builds the petgraph graph: one node per document, chunk and keyword.
    pub fn new(_graph: &KeywordGraph, _chunks: &[Chunk], _documents: usize) -> Self {
        unimplemented!("in progress")
    }

    /// Number of edges (APPEARS_IN, NEXT, PART_OF, SIMILAR_TO).
    pub fn edge_count(&self) -> usize {
        unimplemented!("in progress")
    }

    /// Chunks for `query`, best first, at most `k`.
    pub fn search(
        &self,
        _graph: &KeywordGraph,
        _query: &str,
        _analyzer: &Analyzer,
        _k: usize,
        _options: &GraphSearch,
    ) -> Vec<GraphHit> {
        unimplemented!("in progress")
    }
}
