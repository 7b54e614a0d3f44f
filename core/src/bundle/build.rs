//! Building a bundle: documents in; chunks, keywords, graph and BM25 index out.

use serde::{Deserialize, Serialize};

use std::collections::HashMap;

use super::{
    BuildParams, Bundle, Counts, DocumentInfo, Embed, EmbeddingSpec, FORMAT_VERSION, Manifest,
};
use crate::chunk::{self, CharSizer, Chunk, ChunkConfig, Sizer};
use crate::graph::{GraphConfig, GraphIndex, KeywordGraph};
use crate::index::bm25::{Bm25Index, Bm25Params};
use crate::index::dense::{DenseIndex, DenseParams};
use crate::keywords::{self, KeywordConfig};
use crate::text::Analyzer;
use crate::{Document, Error, Result};

/// Everything that decides what a build produces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildOptions {
    /// Name of the corpus, recorded in the manifest.
    pub corpus: String,
    /// Creation time to record, seconds since the Unix epoch (core has no clock: the host
    /// passes it; a fixed value makes builds reproducible).
    pub created: u64,
    /// Chunk size limits.
    pub chunk: ChunkConfig,
    /// Keyword extraction and filtering.
    pub keywords: KeywordConfig,
    /// Keyword graph construction.
    pub graph: GraphConfig,
    /// BM25 parameters.
    pub bm25: Bm25Params,
    /// Dense index parameters (used when an embedder is given).
    pub dense: DenseParams,
}

impl Default for BuildOptions {
    fn default() -> Self {
        Self {
            corpus: "corpus".to_owned(),
            created: 0,
            chunk: ChunkConfig::default(),
            keywords: KeywordConfig::default(),
            graph: GraphConfig::default(),
            bm25: Bm25Params::default(),
            dense: DenseParams::default(),
        }
    }
}

/// A step of [`BundleBuilder::finish`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// Embedding chunks (items are chunks).
    Embed,
    /// Building the dense index.
    Dense,
    /// Extracting keywords from each chunk.
    Keywords,
    /// Building the keyword graph.
    Graph,
    /// Embedding keywords to link similar ones (items are keywords).
    KeywordVectors,
    /// Building the BM25 index.
    Bm25,
}

impl Stage {
    /// The step's name for people (a progress bar's label).
    pub fn label(self) -> &'static str {
        match self {
            Self::Embed => "embedding",
            Self::Dense => "dense",
            Self::Keywords => "keywords",
            Self::Graph => "graph",
            Self::KeywordVectors => "keyword vectors",
            Self::Bm25 => "bm25",
        }
    }
}

/// What a build made, as every host reports it (`edgerag build --json`, wasm's `build`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BuildSummary {
    /// What the bundle holds.
    #[serde(flatten)]
    pub counts: Counts,
    /// Size of the bundle file.
    pub bytes: usize,
    /// Chunk vectors taken from an earlier build instead of being embedded again.
    pub reused_vectors: usize,
    /// Files that could not be loaded, skipped.
    pub failed: Vec<BuildFailure>,
}

/// A file a build skipped, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BuildFailure {
    /// The document's name, as it was given to [`crate::load()`].
    pub source: String,
    /// Why it could not be loaded.
    pub error: String,
}

/// Progress of a long step, reported to the host (for a progress bar).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Progress {
    /// Current step.
    pub stage: Stage,
    /// Items done in this step.
    pub done: usize,
    /// Items in this step.
    pub total: usize,
}

/// Accumulates documents, chunking each as it is added, then builds the [`Bundle`].
///
/// Documents' full texts are not kept: each is reduced to its chunks on [`add`](Self::add).
pub struct BundleBuilder {
    options: BuildOptions,
    sizer: Box<dyn Sizer>,
    analyzer: Analyzer,
    documents: Vec<DocumentInfo>,
    chunks: Vec<Chunk>,
    embedder: Option<Box<dyn Embed>>,
    /// Vectors of an earlier build by chunk id, reused for unchanged chunks.
    reusable: HashMap<String, Vec<f32>>,
    /// Whether the dense index gets its HNSW graph (above `exact_below` vectors).
    hnsw: bool,
}

impl std::fmt::Debug for BundleBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BundleBuilder")
            .field("options", &self.options)
            .field("documents", &self.documents.len())
            .field("chunks", &self.chunks.len())
            .field("embedder", &self.embedder.as_ref().map(|e| e.spec().model))
            .finish_non_exhaustive()
    }
}

/// How often (in items) progress is reported.
const PROGRESS_EVERY: usize = 256;

/// Chunks embedded per call of the embedder.
const EMBED_BATCH: usize = 32;

/// Keywords embedded per call of the embedder (they are short).
const KEYWORD_BATCH: usize = 128;

/// Seed of the HNSW layer assignment: fixed, so the same input builds the same bundle.
const DENSE_SEED: u64 = 0x6564_6765_7261_6721;

impl BundleBuilder {
    /// A builder measuring chunk sizes in characters.
    ///
    /// # Errors
    /// [`Error::Config`] if an option is out of range.
    pub fn new(options: BuildOptions) -> Result<Self> {
        Self::with_sizer(options, Box::new(CharSizer))
    }

    /// A builder measuring chunk sizes with `sizer` (e.g. a tokenizer).
    ///
    /// # Errors
    /// [`Error::Config`] if an option is out of range.
    pub fn with_sizer(options: BuildOptions, sizer: Box<dyn Sizer>) -> Result<Self> {
        options.chunk.validate()?;
        options.bm25.validate()?;
        options.dense.validate()?;
        options.graph.validate()?;
        if !(options.keywords.max_df > 0.0 && options.keywords.max_df <= 1.0) {
            return Err(Error::Config(format!(
                "keyword max_df must be in (0, 1] (got {})",
                options.keywords.max_df
            )));
        }
        Ok(Self {
            options,
            sizer,
            analyzer: Analyzer::new(),
            documents: Vec::new(),
            chunks: Vec::new(),
            embedder: None,
            reusable: HashMap::new(),
            hnsw: true,
        })
    }

    /// Builds the dense index without its HNSW graph, whatever its size: for a bundle written
    /// as format 4 ([`Bundle::to_paged_bytes`]), which partitions the vectors itself and keeps
    /// no graph (the graph is most of a large build's time). The build parameters stay as
    /// given, so the file is the one converting a full build writes; a bundle built so and
    /// written as format 3 searches its vectors exactly.
    pub fn without_hnsw(&mut self) {
        self.hnsw = false;
    }

    /// Embeds the chunks with `embedder`, so the bundle supports dense retrieval.
    pub fn embed_with(&mut self, embedder: Box<dyn Embed>) {
        self.embedder = Some(embedder);
    }

    /// Reuses the vectors of `previous` (an earlier build of the same corpus) for chunks whose
    /// text did not change, so only new chunks are embedded (incremental update).
    ///
    /// # Errors
    /// [`Error::ModelMismatch`] if `previous` was embedded with another model than the one
    /// given to [`embed_with`](Self::embed_with) (call that first); nothing happens when
    /// `previous` has no vectors or no embedder is set.
    pub fn reuse_vectors(&mut self, previous: &Bundle) -> Result<()> {
        let (Some(spec), Some(dense)) = (&previous.manifest.embedding, &previous.dense) else {
            return Ok(());
        };
        let vectors = previous.chunks.iter().enumerate();
        let vectors =
            vectors.filter_map(|(i, chunk)| Some((chunk.id.clone(), dense.vector(i as u32)?)));
        self.reuse_vectors_of(spec, vectors)
    }

    /// Reuses `vectors` (chunk ids with their vectors, made by the model `spec` describes) as
    /// [`reuse_vectors`](Self::reuse_vectors) does: the vectors of an earlier build read by
    /// range, from [`LazySearcher::vectors`](crate::query::LazySearcher::vectors).
    ///
    /// # Errors
    /// As [`reuse_vectors`](Self::reuse_vectors).
    pub fn reuse_vectors_of(
        &mut self,
        spec: &EmbeddingSpec,
        vectors: impl IntoIterator<Item = (String, Vec<f32>)>,
    ) -> Result<()> {
        let Some(embedder) = &self.embedder else {
            return Ok(());
        };
        spec.check_compatible(&embedder.spec())?;
        self.reusable.extend(vectors);
        Ok(())
    }

    /// Chunks [`finish`](Self::finish) will take the vectors of from the earlier build given to
    /// [`reuse_vectors`](Self::reuse_vectors) instead of embedding them.
    pub fn reused_vectors(&self) -> usize {
        let Some(embedder) = &self.embedder else {
            return 0;
        };
        let dim = embedder.spec().dimension as usize;
        self.chunks.iter().filter(|chunk| self.reusable_vector(chunk, dim).is_some()).count()
    }

    /// The earlier build's vector of `chunk`, if it has one of `dim` dimensions.
    fn reusable_vector(&self, chunk: &Chunk, dim: usize) -> Option<&[f32]> {
        self.reusable.get(&chunk.id).map(Vec::as_slice).filter(|v| v.len() == dim)
    }

    /// Adds a document: chunks it and keeps its metadata. Returns its number of chunks.
    pub fn add(&mut self, doc: Document) -> usize {
        let index = self.documents.len() as u32;
        let chunks = chunk::chunk_document(&doc, index, &self.options.chunk, self.sizer.as_ref());
        let added = chunks.len();
        self.chunks.extend(chunks);
        self.documents.push(DocumentInfo {
            id: doc.id,
            source: doc.source,
            title: doc.title,
            kind: doc.kind,
            pages: doc.pages,
            sections: doc.sections,
            text_bytes: doc.text.len() as u64,
        });
        added
    }

    /// Number of documents added so far.
    pub fn documents(&self) -> usize {
        self.documents.len()
    }

    /// De-duplicates the chunks and builds keywords, graph and BM25 index, reporting progress.
    ///
    /// # Errors
    /// [`Error::NoDocuments`] if nothing was added (or nothing produced a chunk).
    pub fn finish(mut self, progress: &mut dyn FnMut(Progress)) -> Result<Bundle> {
        let duplicates_removed = chunk::dedup(&mut self.chunks) as u32;
        if self.chunks.is_empty() {
            return Err(Error::NoDocuments);
        }
        let total = self.chunks.len();
        let vectors = self.embed_chunks(progress)?;
        let mut per_chunk = Vec::with_capacity(total);
        for (i, c) in self.chunks.iter().enumerate() {
            per_chunk.push(keywords::extract(&c.text, &self.options.keywords, &self.analyzer));
            report(progress, Stage::Keywords, i + 1, total);
        }
        keywords::filter_frequent(&mut per_chunk, &self.options.keywords);

        progress(Progress { stage: Stage::Graph, done: 0, total: 1 });
        let mut graph = KeywordGraph::build(&per_chunk, &self.options.graph);
        progress(Progress { stage: Stage::Graph, done: 1, total: 1 });
        self.link_keywords_semantically(&mut graph, progress)?;
        let edges = GraphIndex::new(&graph, &self.chunks, self.documents.len()).edge_count();

        let mut terms = Vec::with_capacity(total);
        for (i, c) in self.chunks.iter().enumerate() {
            terms.push(self.analyzer.terms(&c.text));
            report(progress, Stage::Bm25, i + 1, total);
        }
        let bm25 = Bm25Index::build(terms.iter().map(Vec::as_slice), self.options.bm25);

        let embedding = self.embedder.as_ref().map(|e| e.spec());
        let dense = match (&embedding, vectors) {
            (Some(spec), Some(flat)) => {
                progress(Progress { stage: Stage::Dense, done: 0, total: 1 });
                let dim = spec.dimension as usize;
                let mut params = self.options.dense;
                if !self.hnsw {
                    params.exact_below = usize::MAX;
                }
                let index = DenseIndex::build(&flat, dim, params, DENSE_SEED)?;
                progress(Progress { stage: Stage::Dense, done: 1, total: 1 });
                Some(index)
            }
            _ => None,
        };

        let counts = Counts {
            documents: self.documents.len() as u32,
            chunks: total as u32,
            duplicates_removed,
            keywords: graph.keywords.len() as u32,
            edges: edges as u32,
            terms: bm25.vocabulary() as u32,
            vectors: dense.as_ref().map_or(0, |d| d.len() as u32),
        };
        let manifest = Manifest {
            format_version: FORMAT_VERSION,
            corpus: self.options.corpus,
            edgerag_version: env!("CARGO_PKG_VERSION").to_owned(),
            created: self.options.created,
            embedding,
            params: BuildParams {
                chunk: self.options.chunk,
                size_unit: self.sizer.unit(),
                keywords: self.options.keywords,
                graph: self.options.graph,
                bm25: self.options.bm25,
                dense: self.options.dense,
            },
            counts,
        };
        Ok(Bundle { manifest, documents: self.documents, chunks: self.chunks, graph, bm25, dense })
    }

    /// Vectors of every chunk, row-major (reused where possible, else embedded in batches);
    /// `None` without an embedder.
    fn embed_chunks(&self, progress: &mut dyn FnMut(Progress)) -> Result<Option<Vec<f32>>> {
        let Some(embedder) = &self.embedder else {
            return Ok(None);
        };
        let dim = embedder.spec().dimension as usize;
        let total = self.chunks.len();
        let mut flat = vec![0f32; total * dim];
        let missing: Vec<usize> = (0..total)
            .filter(|&i| match self.reusable_vector(&self.chunks[i], dim) {
                Some(v) => {
                    flat[i * dim..(i + 1) * dim].copy_from_slice(v);
                    false
                }
                None => true,
            })
            .collect();
        let mut done = total - missing.len();
        progress(Progress { stage: Stage::Embed, done, total });
        for batch in missing.chunks(EMBED_BATCH) {
            let texts: Vec<&str> = batch.iter().map(|&i| self.chunks[i].text.as_str()).collect();
            for (&i, vector) in batch.iter().zip(embed(embedder.as_ref(), &texts, dim)?) {
                flat[i * dim..(i + 1) * dim].copy_from_slice(&vector);
            }
            done += batch.len();
            progress(Progress { stage: Stage::Embed, done, total });
        }
        Ok(Some(flat))
    }

    /// Adds semantic SIMILAR_TO edges to `graph` (see [`GraphConfig::semantic_threshold`]),
    /// when there is an embedder.
    fn link_keywords_semantically(
        &self,
        graph: &mut KeywordGraph,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<()> {
        let config = &self.options.graph;
        let (Some(embedder), Some(threshold)) = (&self.embedder, config.semantic_threshold) else {
            return Ok(());
        };
        let ids = graph.semantic_candidates(config.semantic_keywords as usize);
        let dim = embedder.spec().dimension as usize;
        let mut flat = Vec::with_capacity(ids.len() * dim);
        let (mut done, total) = (0, ids.len());
        progress(Progress { stage: Stage::KeywordVectors, done, total });
        for batch in ids.chunks(KEYWORD_BATCH) {
            let texts: Vec<&str> =
                batch.iter().map(|&k| graph.keywords[k as usize].display.as_str()).collect();
            embed(embedder.as_ref(), &texts, dim)?.into_iter().for_each(|v| flat.extend(v));
            done += batch.len();
            progress(Progress { stage: Stage::KeywordVectors, done, total });
        }
        graph.link_semantic(&ids, &flat, threshold, config.max_similar)
    }
}

/// Document vectors of `texts`, checked to be one `dim`-long vector per text.
fn embed(embedder: &dyn Embed, texts: &[&str], dim: usize) -> Result<Vec<Vec<f32>>> {
    let vectors = embedder.embed_documents(texts)?;
    if vectors.len() != texts.len() || vectors.iter().any(|v| v.len() != dim) {
        return Err(Error::Config(format!(
            "the embedder returned vectors of the wrong shape (expected {} × {dim})",
            texts.len()
        )));
    }
    Ok(vectors)
}

fn report(progress: &mut dyn FnMut(Progress), stage: Stage, done: usize, total: usize) {
    if done.is_multiple_of(PROGRESS_EVERY) || done == total {
        progress(Progress { stage, done, total });
    }
}
