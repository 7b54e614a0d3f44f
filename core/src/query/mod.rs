//! Querying a bundle: BM25, dense, graph and hybrid retrieval, with explanations.
//!
//! A [`Searcher`] owns a decoded bundle, the petgraph graph built from it and, for dense
//! retrieval, an embedder of the bundle's model. Query embeddings and rankings are kept in
//! small LRU caches, so repeating a query (paging, re-rendering) costs nothing.

mod cache;
mod lazy;
mod opened;
mod rank;

use std::collections::HashMap;
use std::future::Future;
use std::str::FromStr;

use self::cache::Lru;
pub use self::lazy::LazySearcher;
pub use self::opened::{Inspected, Opened};
use self::rank::{Allow, Rankings, Retrieve, no_vectors, rank};
use serde::{Deserialize, Serialize};

use crate::bundle::{Bundle, Embed, Manifest};
use crate::graph::data::GraphData;
use crate::graph::{GraphIndex, GraphSearch, GraphView, view};
use crate::index::Scored;
use crate::index::bm25::TermScore;
use crate::index::fusion::Fusion;
use crate::load::DocKind;
use crate::text::Analyzer;
use crate::{Error, Result};

/// Which retrievers answer a query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Lexical BM25 over chunk text.
    Bm25,
    /// Nearest chunk embeddings to the query's embedding.
    Dense,
    /// The keyword graph: matched keywords, then expansion through shared keywords.
    Graph,
    /// BM25, dense (when the bundle has vectors and a model is loaded) and graph, fused.
    #[default]
    Hybrid,
}

impl Mode {
    /// The mode's name as the CLI and JSON spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bm25 => "bm25",
            Self::Dense => "dense",
            Self::Graph => "graph",
            Self::Hybrid => "hybrid",
        }
    }
}

impl FromStr for Mode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "bm25" => Ok(Self::Bm25),
            "dense" => Ok(Self::Dense),
            "graph" => Ok(Self::Graph),
            "hybrid" => Ok(Self::Hybrid),
            other => {
                Err(Error::Query(format!("unknown mode {other:?} (bm25, dense, graph or hybrid)")))
            }
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a search runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchOptions {
    /// Number of results.
    pub k: usize,
    /// Retrievers to use.
    pub mode: Mode,
    /// Candidates each retriever contributes before fusion (at least `k`).
    pub depth: usize,
    /// Fusion of the retrievers' lists in hybrid mode.
    pub fusion: Fusion,
    /// Weight of the dense list in hybrid mode (BM25 has weight 1).
    pub dense_weight: f32,
    /// Weight of the graph list in hybrid mode (BM25 has weight 1).
    pub graph_weight: f32,
    /// Weight of multi-hop expansion in hybrid mode: chunks sharing a bridge entity with the
    /// best [`GraphSearch::bridge_seeds`] fused results ([`GraphIndex::bridge`]) are fused in
    /// with this weight (the first fusion weighs 1), below the first fusion's best result,
    /// which stays first; 0 turns it off.
    pub bridge_weight: f32,
    /// Graph retrieval settings.
    pub graph: GraphSearch,
    /// Whether to explain each result (matched terms and keywords, per-signal scores).
    pub explain: bool,
    /// Metadata restrictions, applied before ranking.
    pub filter: Filter,
    /// Keywords (indices into the bundle's [`KeywordGraph::keywords`]) graph retrieval starts
    /// from instead of matching the query itself, e.g. chosen by an LLM among
    /// [`Searcher::keyword_candidates`].
    ///
    /// [`KeywordGraph::keywords`]: crate::graph::KeywordGraph::keywords
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph_keywords: Option<Vec<u32>>,
    /// Partitions a dense search of a bundle read by range probes (when `None`, those within
    /// [`ivf::REACH`] of the query, from a quarter to twice the bundle's [`ivf::PROBE`]): more
    /// find more of the exact nearest, for more bytes a query. Bundles in memory search their
    /// whole HNSW graph and ignore it.
    ///
    /// [`ivf::REACH`]: crate::bundle::ivf::REACH
    /// [`ivf::PROBE`]: crate::bundle::ivf::PROBE
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<u32>,
    /// Bytes of postings a BM25 search of a bundle read by range may read
    /// ([`lexicon::BUDGET`] when `None`): more find BM25's exact best more often in a large
    /// corpus, for more bytes a query. Bundles in memory always rank exactly.
    ///
    /// [`lexicon::BUDGET`]: crate::bundle::lexicon::BUDGET
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bm25_budget: Option<u64>,
}

/// Restricts a search to chunks whose metadata match. Every retriever ranks only the allowed
/// chunks, so a filter never empties a result list that the corpus could fill.
/// (Graph expansion may still pass *through* other chunks to reach allowed ones.)
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Filter {
    /// Only chunks of these documents, named by source (exact, or as a path suffix such as
    /// `normans.md`) or by id; empty means every document.
    pub documents: Vec<String>,
    /// Only chunks under a heading containing this text (case-insensitive).
    pub section: Option<String>,
    /// Only chunks starting on a page in this inclusive range (PDF).
    pub pages: Option<(u32, u32)>,
    /// Only documents of these formats; empty means every format.
    pub kinds: Vec<DocKind>,
}

impl Filter {
    /// Whether the filter lets everything through.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }

    /// The filter ready to test documents and chunks (its heading text lowercased once).
    pub(crate) fn allows(&self) -> Allows<'_> {
        Allows { filter: self, section: self.section.as_ref().map(|s| s.to_lowercase()) }
    }

    /// Which chunks of `bundle` pass, by chunk index; `None` when all do.
    fn mask(&self, bundle: &Bundle) -> Option<Vec<bool>> {
        if self.is_empty() {
            return None;
        }
        let allows = self.allows();
        let documents: Vec<bool> =
            bundle.documents.iter().map(|d| allows.document(&d.id, &d.source, d.kind)).collect();
        let allowed = bundle.chunks.iter().map(|c| {
            documents[c.doc as usize]
                && allows.chunk(c.page, || bundle.documents[c.doc as usize].section_path(c.section))
        });
        Some(allowed.collect())
    }
}

/// A [`Filter`] ready to test documents and chunks: the one definition of what passes, for a
/// bundle in memory and for one read by range.
pub(crate) struct Allows<'a> {
    filter: &'a Filter,
    /// The heading text, lowercased.
    section: Option<String>,
}

impl Allows<'_> {
    /// Whether chunks of the document with `id`, `source` and `kind` may pass.
    pub(crate) fn document(&self, id: &str, source: &str, kind: DocKind) -> bool {
        let Filter { documents, kinds, .. } = self.filter;
        let named = documents.is_empty()
            || documents.iter().any(|n| {
                n == id
                    || n == source
                    || source.strip_suffix(n.as_str()).is_some_and(|s| s.ends_with('/'))
            });
        named && (kinds.is_empty() || kinds.contains(&kind))
    }

    /// Whether a chunk (of an allowed document) starting on `page` passes, `path` giving its
    /// headings from the top when the filter needs them.
    pub(crate) fn chunk(&self, page: Option<u32>, path: impl FnOnce() -> Vec<String>) -> bool {
        let in_pages = self
            .filter
            .pages
            .is_none_or(|(from, to)| page.is_some_and(|p| (from..=to).contains(&p)));
        in_pages
            && self.section.as_ref().is_none_or(|wanted| {
                path().iter().any(|h| h.to_lowercase().contains(wanted.as_str()))
            })
    }
}

impl Default for SearchOptions {
    fn default() -> Self {
        Self {
            k: 10,
            mode: Mode::default(),
            depth: 100,
            // Measured on SciFact (train): convex 0.2 gives nDCG@10 0.684 against 0.573 for
            // RRF at 0.5 and 0.623 for RRF at 0.2; BM25 alone 0.681 (see docs/evaluation.md).
            fusion: Fusion::Convex,
            graph_weight: 0.2,
            dense_weight: 1.0,
            bridge_weight: 0.5,
            graph: GraphSearch::default(),
            explain: false,
            filter: Filter::default(),
            graph_keywords: None,
            probe: None,
            bm25_budget: None,
        }
    }
}

/// One signal's view of a result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Signal {
    /// The retriever's own score.
    pub score: f32,
    /// 1-based rank in that retriever's list.
    pub rank: u32,
}

/// Why a chunk was returned.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// BM25's score and rank, if BM25 found the chunk.
    pub bm25: Option<Signal>,
    /// Dense retrieval's score (cosine similarity) and rank, if it found the chunk.
    pub dense: Option<Signal>,
    /// The graph's score and rank, if the graph found the chunk.
    pub graph: Option<Signal>,
    /// Hops from a primary graph chunk (0 = matched directly).
    pub graph_hops: Option<u8>,
    /// Multi-hop expansion's score and rank, if it reached the chunk through a bridge entity.
    pub bridge: Option<Signal>,
    /// Query terms found in the chunk, with their BM25 contributions.
    pub terms: Vec<TermScore>,
    /// Keywords that matched the query and led the graph to this chunk (display forms).
    pub keywords: Vec<String>,
}

/// A keyword offered for matching a query ([`Searcher::keyword_candidates`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeywordCandidate {
    /// Index into the bundle's keywords.
    pub keyword: u32,
    /// Display form.
    pub display: String,
    /// Whether the query matches it lexically (else it comes from the nearest chunks).
    pub lexical: bool,
}

/// A search result, ready to show or serialise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// 1-based rank.
    pub rank: u32,
    /// Chunk index in the bundle.
    #[serde(skip)]
    pub chunk: u32,
    /// Content-hash id of the chunk.
    pub chunk_id: String,
    /// Source of the chunk's document.
    pub document: String,
    /// Title of the chunk's document.
    pub title: String,
    /// Page the chunk starts on (PDF).
    pub page: Option<u32>,
    /// Section path, top-level heading first.
    pub section: Vec<String>,
    /// Final score in the chosen mode.
    pub score: f32,
    /// Chunk text.
    pub text: String,
    /// Per-signal explanation, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Explanation>,
}

/// A query with its results, as every host prints them (`edgerag search --json`, the browser,
/// the edge worker).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResults<'a> {
    /// The query as given.
    pub query: &'a str,
    /// The mode it ran in.
    pub mode: Mode,
    /// The hits, best first.
    pub results: Vec<Hit>,
}

/// A bundle ready to query: the bundle plus the in-memory structures built from it once.
pub struct Searcher {
    bundle: Bundle,
    graph: GraphIndex,
    analyzer: Analyzer,
    model: Option<QueryModel>,
    rankings: Lru<Rankings>,
}

impl std::fmt::Debug for Searcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Searcher")
            .field("corpus", &self.bundle.manifest.corpus)
            .field("chunks", &self.bundle.chunks.len())
            .field("dense", &self.dense_ready())
            .finish_non_exhaustive()
    }
}

/// Entries kept in each cache.
const CACHE_ENTRIES: usize = 256;

impl Searcher {
    /// Prepares `bundle` for queries (builds the petgraph graph).
    pub fn new(bundle: Bundle) -> Self {
        let graph = GraphIndex::new(&bundle.graph, &bundle.chunks, bundle.documents.len());
        Self {
            bundle,
            graph,
            analyzer: Analyzer::new(),
            model: None,
            rankings: Lru::new(CACHE_ENTRIES),
        }
    }

    /// Adds the embedder that turns queries into vectors, enabling dense retrieval.
    ///
    /// # Errors
    /// [`Error::NoVectors`] if the bundle has no vectors; [`Error::ModelMismatch`] if
    /// `embedder` is not the model the bundle was embedded with.
    pub fn with_embedder(mut self, embedder: Box<dyn Embed>) -> Result<Self> {
        self.set_embedder(embedder)?;
        Ok(self)
    }

    /// [`with_embedder`](Self::with_embedder) in place, for hosts that keep the searcher
    /// while a model arrives later (a browser downloading it). Cached query vectors and
    /// rankings made without the model are dropped.
    ///
    /// # Errors
    /// As [`with_embedder`](Self::with_embedder); the searcher is unchanged then.
    pub fn set_embedder(&mut self, embedder: Box<dyn Embed>) -> Result<()> {
        self.model = Some(QueryModel::new(&self.bundle.manifest, embedder)?);
        self.rankings = Lru::new(CACHE_ENTRIES);
        Ok(())
    }

    /// Whether dense retrieval is available (the bundle has vectors and a model is loaded).
    pub fn dense_ready(&self) -> bool {
        self.model.is_some() && self.bundle.dense.is_some()
    }

    /// The embedding model, when one is loaded.
    pub fn embedder(&self) -> Option<&dyn Embed> {
        self.model.as_ref().map(|model| &*model.embedder)
    }

    /// The query's embedding (cached), or `None` when no model is loaded.
    ///
    /// # Errors
    /// When the model fails.
    pub fn query_embedding(&self, query: &str) -> Result<Option<Vec<f32>>> {
        self.model.as_ref().map(|model| model.embed(query)).transpose()
    }

    /// Up to `limit` keywords of the graph worth matching `query` against, for a host (an
    /// LLM) to choose from: the best keywords the query matches
    /// ([`GraphIndex::matched_keywords`], at most half the list), then the keywords weighing
    /// most in the five chunks nearest the query (dense retrieval with a model loaded, else
    /// BM25) by weight × idf, then the other matched keywords.
    ///
    /// # Errors
    /// As [`Searcher::search`].
    pub fn keyword_candidates(&self, query: &str, limit: usize) -> Result<Vec<KeywordCandidate>> {
        let data = Memory { bundle: &self.bundle, graph: &self.graph };
        in_memory(rank::keyword_candidates(
            &data,
            &self.analyzer,
            query,
            self.model.as_ref(),
            limit,
        ))
    }

    /// Decodes a bundle and prepares it for queries.
    ///
    /// # Errors
    /// As [`Bundle::from_bytes`].
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Ok(Self::new(Bundle::from_bytes(bytes)?))
    }

    /// The bundle being searched.
    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }

    /// The keyword graph around the chunks named by `chunk_ids` (e.g. an answer's sources),
    /// with at most `limit` keywords: see [`GraphIndex::view`]. Chunks are labelled with
    /// their document's title and their innermost heading or page.
    ///
    /// # Errors
    /// [`Error::Query`] naming a chunk id the bundle does not have.
    pub fn graph_view(&self, chunk_ids: &[String], limit: usize) -> Result<GraphView> {
        let chunks = &self.bundle.chunks;
        let mut seeds = Vec::with_capacity(chunk_ids.len());
        for id in chunk_ids {
            let index = chunks.iter().position(|c| &c.id == id);
            seeds
                .push(index.ok_or_else(|| Error::Query(format!("no chunk {id:?} in the bundle")))?
                    as u32);
        }
        let label = |chunk: u32| {
            let chunk = &chunks[chunk as usize];
            let doc = self.bundle.document_of(chunk);
            view::label(&chunk.id, &doc.title, &doc.section_path(chunk.section), chunk.page)
        };
        Ok(self.graph.view(&self.bundle.graph, &seeds, limit, label))
    }

    /// The best `options.k` chunks for `query`.
    ///
    /// # Errors
    /// [`Error::Query`] when the query has no searchable words (empty, or only stop words).
    pub fn search(&self, query: &str, options: &SearchOptions) -> Result<Vec<Hit>> {
        let r = self.rank(query, options)?;
        let hits = r.fused.iter().take(options.k).enumerate().map(|(i, s)| {
            let chunk = &self.bundle.chunks[s.chunk as usize];
            let doc = self.bundle.document_of(chunk);
            Hit {
                rank: i as u32 + 1,
                chunk: s.chunk,
                chunk_id: chunk.id.clone(),
                document: doc.source.clone(),
                title: doc.title.clone(),
                page: chunk.page,
                section: doc.section_path(chunk.section),
                score: s.score,
                text: chunk.text.clone(),
                explain: options.explain.then(|| self.explain(&r, s.chunk)),
            }
        });
        Ok(hits.collect())
    }

    /// Chunk indices and scores, best first, up to `options.depth` (for evaluation).
    ///
    /// # Errors
    /// As [`Searcher::search`].
    pub fn rank_chunks(&self, query: &str, options: &SearchOptions) -> Result<Vec<Scored>> {
        Ok(self.rank(query, options)?.fused)
    }

    fn rank(&self, query: &str, options: &SearchOptions) -> Result<Rankings> {
        let key = format!("{query}\u{0}{options:?}");
        if let Some(cached) = self.rankings.get(&key) {
            return Ok(cached);
        }
        let rankings = self.rank_uncached(query, options)?;
        self.rankings.put(key, rankings.clone());
        Ok(rankings)
    }

    fn rank_uncached(&self, query: &str, options: &SearchOptions) -> Result<Rankings> {
        let mask = options.filter.mask(&self.bundle);
        let allow = |chunk: u32| mask.as_ref().is_none_or(|m| m[chunk as usize]);
        let data = Memory { bundle: &self.bundle, graph: &self.graph };
        in_memory(rank(&data, &self.analyzer, query, self.model.as_ref(), options, &allow))
    }

    fn explain(&self, r: &Rankings, chunk: u32) -> Explanation {
        let keywords = r.graph.iter().find(|h| h.chunk == chunk).map(|hit| {
            let nodes =
                hit.keywords.iter().filter_map(|&k| self.bundle.graph.keywords.get(k as usize));
            nodes.map(|k| k.display.clone()).collect()
        });
        Explanation {
            terms: self.bundle.bm25.explain(&r.terms, chunk),
            keywords: keywords.unwrap_or_default(),
            ..r.signals(chunk)
        }
    }
}

/// A bundle ready to answer from, in memory ([`Searcher`]) or read by range
/// ([`LazySearcher`]): what an [`Answerer`](crate::answer::Answerer) reads its sources
/// through.
pub trait Corpus {
    /// The best chunks for `query`, as [`Searcher::search`] finds them.
    fn search(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> impl Future<Output = Result<Vec<Hit>>>;

    /// Chunks and scores, best first, as [`Searcher::rank_chunks`] gives them.
    fn rank_chunks(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> impl Future<Output = Result<Vec<Scored>>>;

    /// The source names of the documents of `chunks` (as ranked), in order.
    fn sources(&self, chunks: &[u32]) -> impl Future<Output = Result<Vec<String>>>;

    /// Whether dense retrieval is available (the bundle has vectors and a model is loaded).
    fn dense_ready(&self) -> bool;

    /// Keywords worth matching `query` against, as [`Searcher::keyword_candidates`] gives them.
    fn keyword_candidates(
        &self,
        query: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<KeywordCandidate>>>;

    /// The query embedder, when one is loaded.
    fn embedder(&self) -> Option<&dyn Embed>;

    /// The query's embedding (cached), or `None` when no model is loaded.
    ///
    /// # Errors
    /// Model errors.
    fn query_embedding(&self, query: &str) -> Result<Option<Vec<f32>>>;
}

impl Corpus for Searcher {
    fn rank_chunks(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> impl Future<Output = Result<Vec<Scored>>> {
        std::future::ready(Searcher::rank_chunks(self, query, options))
    }

    fn sources(&self, chunks: &[u32]) -> impl Future<Output = Result<Vec<String>>> {
        let source = |&chunk: &u32| {
            let found = self.bundle.chunks.get(chunk as usize);
            let document = found.and_then(|c| self.bundle.documents.get(c.doc as usize));
            let missing = || Error::Query(format!("the bundle has no chunk {chunk}"));
            document.map(|d| d.source.clone()).ok_or_else(missing)
        };
        std::future::ready(chunks.iter().map(source).collect())
    }

    fn dense_ready(&self) -> bool {
        Searcher::dense_ready(self)
    }

    fn search(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> impl Future<Output = Result<Vec<Hit>>> {
        std::future::ready(Searcher::search(self, query, options))
    }

    fn keyword_candidates(
        &self,
        query: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<KeywordCandidate>>> {
        std::future::ready(Searcher::keyword_candidates(self, query, limit))
    }

    fn embedder(&self) -> Option<&dyn Embed> {
        Searcher::embedder(self)
    }

    fn query_embedding(&self, query: &str) -> Result<Option<Vec<f32>>> {
        Searcher::query_embedding(self, query)
    }
}

/// The embedding model a searcher turns queries into vectors with, and the vectors of recent
/// queries.
struct QueryModel {
    embedder: Box<dyn Embed>,
    vectors: Lru<Vec<f32>>,
}

impl QueryModel {
    /// The model `embedder`, if it is the one the bundle of `manifest` was embedded with.
    fn new(manifest: &Manifest, embedder: Box<dyn Embed>) -> Result<Self> {
        let spec = manifest.embedding.as_ref().ok_or_else(no_vectors)?;
        spec.check_compatible(&embedder.spec())?;
        Ok(Self { embedder, vectors: Lru::new(CACHE_ENTRIES) })
    }

    /// The query's embedding, from the cache when it was asked before.
    fn embed(&self, query: &str) -> Result<Vec<f32>> {
        if let Some(vector) = self.vectors.get(query) {
            return Ok(vector);
        }
        let vector = self.embedder.embed_query(query)?;
        self.vectors.put(query.to_owned(), vector.clone());
        Ok(vector)
    }
}

/// A bundle in memory, as the retrieval pipeline reads it.
struct Memory<'a> {
    bundle: &'a Bundle,
    graph: &'a GraphIndex,
}

impl Retrieve for Memory<'_> {
    fn has_vectors(&self) -> bool {
        self.bundle.dense.is_some()
    }

    async fn bm25(&self, terms: &[String], k: usize, allow: Allow<'_>) -> Result<Vec<Scored>> {
        Ok(self.bundle.bm25.search(terms, k, allow))
    }

    async fn dense(&self, vector: &[f32], k: usize, allow: Allow<'_>) -> Result<Vec<Scored>> {
        match &self.bundle.dense {
            Some(index) => index.search(vector, k, allow),
            None => Err(no_vectors()),
        }
    }

    fn graph(&self) -> impl GraphData + '_ {
        self.graph.data(&self.bundle.graph)
    }

    async fn displays(&self, keywords: &[u32]) -> Result<HashMap<u32, String>> {
        let nodes = &self.bundle.graph.keywords;
        let display = |&k: &u32| Some((k, nodes.get(k as usize)?.display.clone()));
        Ok(keywords.iter().filter_map(display).collect())
    }
}

/// The output of a ranking of a bundle in memory, whose reads are ready at once.
fn in_memory<T>(ranking: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    crate::bundle::paged::ready_now(ranking)
        .unwrap_or_else(|| unreachable!("reads of a bundle in memory are ready at once"))
}
