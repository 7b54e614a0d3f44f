//! The payload layout of format version 2, kept so version-2 bundles stay readable.
//!
//! Version 3 added the semantic keyword-similarity settings to [`GraphConfig`]; the types that
//! reach it are copied here with their version-2 layout, the others are shared.

use serde::Deserialize;

use super::v1::GraphConfig;
use super::{Counts, DocumentInfo, EmbeddingSpec};
use crate::chunk::{Chunk, ChunkConfig, SizeUnit};
use crate::graph::KeywordGraph;
use crate::index::bm25::{Bm25Index, Bm25Params};
use crate::index::dense::{DenseIndex, DenseParams};
use crate::keywords::KeywordConfig;

/// A version-2 bundle.
#[derive(Deserialize)]
pub(super) struct Bundle {
    pub(super) manifest: Manifest,
    pub(super) documents: Vec<DocumentInfo>,
    pub(super) chunks: Vec<Chunk>,
    pub(super) graph: KeywordGraph,
    pub(super) bm25: Bm25Index,
    pub(super) dense: Option<DenseIndex>,
}

/// A version-2 manifest.
#[derive(Deserialize)]
pub(super) struct Manifest {
    pub(super) format_version: u16,
    pub(super) corpus: String,
    pub(super) edgerag_version: String,
    pub(super) created: u64,
    pub(super) embedding: Option<EmbeddingSpec>,
    pub(super) params: BuildParams,
    pub(super) counts: Counts,
}

/// Version-2 build parameters.
#[derive(Deserialize)]
pub(super) struct BuildParams {
    pub(super) chunk: ChunkConfig,
    pub(super) size_unit: SizeUnit,
    pub(super) keywords: KeywordConfig,
    pub(super) graph: GraphConfig,
    pub(super) bm25: Bm25Params,
    pub(super) dense: DenseParams,
}

/// Version 2 read as version 3: the semantic keyword-similarity settings off.
impl From<Bundle> for super::Bundle {
    fn from(old: Bundle) -> Self {
        let m = old.manifest;
        let p = m.params;
        let manifest = super::Manifest {
            format_version: m.format_version,
            corpus: m.corpus,
            edgerag_version: m.edgerag_version,
            created: m.created,
            embedding: m.embedding,
            params: super::BuildParams {
                chunk: p.chunk,
                size_unit: p.size_unit,
                keywords: p.keywords,
                graph: p.graph.into(),
                bm25: p.bm25,
                dense: p.dense,
            },
            counts: m.counts,
        };
        Self {
            manifest,
            documents: old.documents,
            chunks: old.chunks,
            graph: old.graph,
            bm25: old.bm25,
            dense: old.dense,
        }
    }
}
