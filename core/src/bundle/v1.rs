//! The payload layout of format version 1, kept so version-1 bundles stay readable: read
//! into version 2's layout ([`super::v2`]), which is read into the current one, so each new
//! version only converts from the one before it.
//!
//! Only the types whose layout changed since are copied here; the others (documents, chunks,
//! keyword graph, BM25 index and their parameters) are shared with the current layout. When
//! one of those changes, copy its version-1 layout into this module first.

use serde::Deserialize;

use crate::chunk::{Chunk, ChunkConfig, SizeUnit};
use crate::graph::KeywordGraph;
use crate::index::bm25::{Bm25Index, Bm25Params};
use crate::index::dense::DenseParams;
use crate::keywords::KeywordConfig;

use super::DocumentInfo;

/// A version-1 bundle.
#[derive(Deserialize)]
pub(super) struct Bundle {
    manifest: Manifest,
    documents: Vec<DocumentInfo>,
    chunks: Vec<Chunk>,
    graph: KeywordGraph,
    bm25: Bm25Index,
}

#[derive(Deserialize)]
struct Manifest {
    format_version: u16,
    corpus: String,
    edgerag_version: String,
    created: u64,
    #[expect(dead_code, reason = "always empty in version 1, which had no embeddings")]
    embedding_model: String,
    params: BuildParams,
    counts: Counts,
}

#[derive(Deserialize)]
struct BuildParams {
    chunk: ChunkConfig,
    size_unit: SizeUnit,
    keywords: KeywordConfig,
    graph: GraphConfig,
    bm25: Bm25Params,
}

/// Keyword graph settings of versions 1 and 2 (lexical SIMILAR_TO edges only).
#[derive(Deserialize)]
pub(super) struct GraphConfig {
    similar_threshold: f32,
    max_similar: usize,
}

impl From<GraphConfig> for crate::graph::GraphConfig {
    fn from(old: GraphConfig) -> Self {
        Self {
            similar_threshold: old.similar_threshold,
            max_similar: old.max_similar,
            semantic_threshold: None,
            semantic_keywords: 0,
        }
    }
}

#[derive(Deserialize)]
struct Counts {
    documents: u32,
    chunks: u32,
    duplicates_removed: u32,
    keywords: u32,
    edges: u32,
    terms: u32,
}

/// Version 1 read as version 2: no embeddings.
impl From<Bundle> for super::v2::Bundle {
    fn from(old: Bundle) -> Self {
        let m = old.manifest;
        let c = m.counts;
        let p = m.params;
        let manifest = super::v2::Manifest {
            format_version: m.format_version,
            corpus: m.corpus,
            edgerag_version: m.edgerag_version,
            created: m.created,
            embedding: None,
            params: super::v2::BuildParams {
                chunk: p.chunk,
                size_unit: p.size_unit,
                keywords: p.keywords,
                graph: p.graph,
                bm25: p.bm25,
                dense: DenseParams::default(),
            },
            counts: super::Counts {
                documents: c.documents,
                chunks: c.chunks,
                duplicates_removed: c.duplicates_removed,
                keywords: c.keywords,
                edges: c.edges,
                terms: c.terms,
                vectors: 0,
            },
        };
        Self {
            manifest,
            documents: old.documents,
            chunks: old.chunks,
            graph: old.graph,
            bm25: old.bm25,
            dense: None,
        }
    }
}
