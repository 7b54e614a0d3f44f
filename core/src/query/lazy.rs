//! Querying a bundle of format version 4 read by range: the pipeline of [`super::Searcher`],
//! its reads going to the bundle's pages, so a query costs what it touches.

use std::collections::HashMap;
use std::future::Future;

use super::rank::{self, Allow, Retrieve, no_vectors, rank};
use super::{Corpus, Explanation, Hit, KeywordCandidate, QueryModel, Rankings, SearchOptions};
use crate::bundle::lazy::{self, LazyBundle};
use crate::bundle::paged::{Io, RangeSource, Reads};
use crate::bundle::{Embed, Manifest, StoredChunk};
use crate::bundle::{filters, ids, lexicon};
use crate::graph::data::GraphData;
use crate::graph::{GraphView, view};
use crate::index::Scored;
use crate::text::Analyzer;
use crate::{Error, Result};

/// A bundle of format version 4, opened by range and ready to query. Chunks are named by
/// their address in the bundle's chunk store ([`Hit::chunk`], [`Scored::chunk`]).
///
/// Every query reads through the bundle's page cache, so what one query read, the next
/// finds there; [`io`](Self::io) tells what reading has cost so far.
pub struct LazySearcher<S> {
    bundle: LazyBundle<S>,
    analyzer: Analyzer,
    model: Option<QueryModel>,
}

impl<S: RangeSource> std::fmt::Debug for LazySearcher<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazySearcher")
            .field("corpus", &self.bundle.body().manifest.corpus)
            .field("dense", &self.model.is_some())
            .finish_non_exhaustive()
    }
}

impl<S: RangeSource> LazySearcher<S> {
    /// Opens the bundle `source` reads, keeping up to `budget` bytes of its pages
    /// ([`lazy::DEFAULT_BUDGET`] is a sensible default).
    ///
    /// # Errors
    /// As [`lazy::open`].
    pub async fn open(source: S, budget: usize) -> Result<Self> {
        let bundle = lazy::open(source, budget).await?;
        Ok(Self { bundle, analyzer: Analyzer::new(), model: None })
    }

    /// Adds the embedder that turns queries into vectors, enabling dense retrieval.
    ///
    /// # Errors
    /// As [`super::Searcher::with_embedder`].
    pub fn with_embedder(mut self, embedder: Box<dyn Embed>) -> Result<Self> {
        self.set_embedder(embedder)?;
        Ok(self)
    }

    /// Sets the embedder that turns queries into vectors, as
    /// [`with_embedder`](Self::with_embedder) does.
    ///
    /// # Errors
    /// As [`super::Searcher::with_embedder`].
    pub fn set_embedder(&mut self, embedder: Box<dyn Embed>) -> Result<()> {
        self.model = Some(QueryModel::new(self.manifest(), embedder)?);
        Ok(())
    }

    /// The bundle's manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.bundle.body().manifest
    }

    /// The bundle as opened.
    pub fn bundle(&self) -> &LazyBundle<S> {
        &self.bundle
    }

    /// What reading has cost since the bundle was opened, opening included.
    pub fn io(&self) -> Io {
        self.bundle.io()
    }

    /// What reading has cost since the bundle was opened, opening included, and each
    /// section's share of it.
    pub fn reads(&self) -> Reads {
        self.bundle.reads()
    }

    /// Whether dense retrieval is available (the bundle has vectors and a model is loaded).
    pub fn dense_ready(&self) -> bool {
        self.model.is_some() && self.bundle.body().dense.is_some()
    }

    /// Chunk addresses and scores, best first, up to `options.depth`.
    ///
    /// # Errors
    /// As [`search`](Self::search).
    pub async fn rank_chunks(&self, query: &str, options: &SearchOptions) -> Result<Vec<Scored>> {
        Ok(self.rank(query, options).await?.fused)
    }

    /// The best `options.k` chunks for `query`, as [`super::Searcher::search`] finds them in
    /// the same bundle in memory, explained alike.
    ///
    /// # Errors
    /// [`Error::Query`](crate::Error::Query) when the query has no searchable words, or for a
    /// metadata filter on a bundle written without a filter table;
    /// [`Error::NoVectors`](crate::Error::NoVectors) for dense retrieval without vectors or a
    /// model; errors of reading the bundle.
    pub async fn search(&self, query: &str, options: &SearchOptions) -> Result<Vec<Hit>> {
        let r = self.rank(query, options).await?;
        let top = &r.fused[..r.fused.len().min(options.k)];
        let addresses: Vec<u32> = top.iter().map(|s| s.chunk).collect();
        let stored = self.bundle.body().store.read(&self.bundle, &addresses).await?;
        let explained: Vec<Option<Explanation>> = match options.explain {
            true => self.explain(&r, &stored).await?.into_iter().map(Some).collect(),
            false => vec![None; top.len()],
        };
        let hits = top.iter().zip(stored).zip(explained).zip(1..);
        let hits = hits.map(|(((s, stored), explain), rank)| Hit {
            rank,
            chunk: s.chunk,
            chunk_id: stored.chunk.id,
            document: stored.document.source.clone(),
            title: stored.document.title.clone(),
            page: stored.chunk.page,
            section: stored.section,
            score: s.score,
            text: stored.chunk.text,
            explain,
        });
        Ok(hits.collect())
    }

    /// Up to `limit` keywords worth matching `query` against, as
    /// [`super::Searcher::keyword_candidates`] gives them.
    ///
    /// # Errors
    /// As [`search`](Self::search).
    pub async fn keyword_candidates(
        &self,
        query: &str,
        limit: usize,
    ) -> Result<Vec<KeywordCandidate>> {
        let model = self.model.as_ref();
        let paged = Paged::new(&self.bundle, &SearchOptions::default());
        rank::keyword_candidates(&paged, &self.analyzer, query, model, limit).await
    }

    /// Every chunk's id with its vector (none without vectors), for a rebuild of the corpus
    /// that reuses them ([`BundleBuilder::reuse_vectors_of`]). It reads the dense index and
    /// the chunk store whole.
    ///
    /// [`BundleBuilder::reuse_vectors_of`]: crate::BundleBuilder::reuse_vectors_of
    ///
    /// # Errors
    /// Errors of reading the bundle.
    pub async fn vectors(&self) -> Result<Vec<(String, Vec<f32>)>> {
        let Some(ivf) = &self.bundle.body().dense else {
            return Ok(Vec::new());
        };
        let vectors = ivf.vectors(&self.bundle).await?;
        let addresses: Vec<u32> = vectors.iter().map(|&(address, _)| address).collect();
        let stored = self.bundle.body().store.read(&self.bundle, &addresses).await?;
        Ok(stored.into_iter().zip(vectors).map(|(s, (_, vector))| (s.chunk.id, vector)).collect())
    }

    /// The addresses of the chunks with ids `chunk_ids`, in order, from the bundle's index of
    /// chunk ids.
    ///
    /// # Errors
    /// [`Error::Query`] naming an id the bundle does not have, or when the bundle was written
    /// without an index of chunk ids; errors of reading the bundle.
    pub async fn addresses(&self, chunk_ids: &[String]) -> Result<Vec<u32>> {
        let candidates = ids::lookup(&self.bundle, chunk_ids).await?.ok_or_else(|| {
            Error::Query(
                "this bundle was written without an index of chunk ids: convert it again \
                 (edgerag convert) to find its chunks by id"
                    .into(),
            )
        })?;
        let mut read: Vec<u32> = candidates.concat();
        read.sort_unstable();
        read.dedup();
        let stored = self.bundle.body().store.read(&self.bundle, &read).await?;
        let has = |address: &u32, id: &str| {
            read.binary_search(address).is_ok_and(|at| stored[at].chunk.id == id)
        };
        let found = chunk_ids.iter().zip(&candidates).map(|(id, candidates)| {
            candidates
                .iter()
                .copied()
                .find(|address| has(address, id))
                .ok_or_else(|| Error::Query(format!("no chunk {id:?} in the bundle")))
        });
        found.collect()
    }

    /// The keyword graph around the chunks named by `chunk_ids` (e.g. an answer's sources),
    /// with at most `limit` keywords, as [`super::Searcher::graph_view`] draws it around the
    /// same chunks of the bundle in memory.
    ///
    /// # Errors
    /// As [`addresses`](Self::addresses).
    pub async fn graph_view(&self, chunk_ids: &[String], limit: usize) -> Result<GraphView> {
        let addresses = self.addresses(chunk_ids).await?;
        let body = self.bundle.body();
        let sketch = view::sketch(&body.graph.reader(&self.bundle), &addresses, limit).await?;
        let chunks = sketch.chunks();
        let stored = body.store.read(&self.bundle, &chunks).await?;
        let label =
            |s: &StoredChunk| view::label(&s.chunk.id, &s.document.title, &s.section, s.chunk.page);
        let labels = chunks.iter().copied().zip(stored.iter().map(label)).collect();
        let displays = body.graph.displays(&self.bundle, &sketch.keyword_ids()).await?;
        Ok(sketch.draw(&labels, &displays))
    }

    /// Why each of the `stored` chunks of `r.fused` was found: the signals, the query terms
    /// counted in its text, the display forms of the keywords that led the graph to it.
    async fn explain(&self, r: &Rankings, stored: &[StoredChunk]) -> Result<Vec<Explanation>> {
        let body = self.bundle.body();
        let texts: Vec<Vec<String>> =
            stored.iter().map(|s| self.analyzer.terms(&s.chunk.text)).collect();
        let terms = body.lexicon.explain(&self.bundle, &r.terms, &texts).await?;
        let led: Vec<&[u32]> = r.fused[..stored.len()]
            .iter()
            .map(|s| r.graph.iter().find(|h| h.chunk == s.chunk).map_or(&[][..], |h| &h.keywords))
            .collect();
        let mut keywords = led.concat();
        keywords.sort_unstable();
        keywords.dedup();
        let displays = body.graph.displays(&self.bundle, &keywords).await?;
        let explained = r.fused.iter().zip(terms).zip(led).map(|((s, terms), led)| Explanation {
            terms,
            keywords: led.iter().filter_map(|k| displays.get(k).cloned()).collect(),
            ..r.signals(s.chunk)
        });
        Ok(explained.collect())
    }

    async fn rank(&self, query: &str, options: &SearchOptions) -> Result<Rankings> {
        let filter = &options.filter;
        let allowed = if filter.is_empty() {
            None
        } else {
            let chunks = self.manifest().counts.chunks;
            let allows = filter.allows();
            let document = |id: &str, source: &str, kind| allows.document(id, source, kind);
            let chunk = |page, path: &dyn Fn() -> Vec<String>| allows.chunk(page, path);
            Some(filters::allowed(&self.bundle, chunks, document, chunk).await?)
        };
        let allow = |chunk: u32| allowed.as_ref().is_none_or(|a| a.binary_search(&chunk).is_ok());
        let model = self.model.as_ref();
        let paged = Paged::new(&self.bundle, options);
        rank(&paged, &self.analyzer, query, model, options, &allow).await
    }
}

impl<S: RangeSource> Corpus for LazySearcher<S> {
    fn rank_chunks(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> impl Future<Output = Result<Vec<Scored>>> {
        LazySearcher::rank_chunks(self, query, options)
    }

    async fn sources(&self, chunks: &[u32]) -> Result<Vec<String>> {
        let stored = self.bundle.body().store.read(&self.bundle, chunks).await?;
        Ok(stored.into_iter().map(|s| s.document.source.clone()).collect())
    }

    fn dense_ready(&self) -> bool {
        LazySearcher::dense_ready(self)
    }

    fn search(
        &self,
        query: &str,
        options: &SearchOptions,
    ) -> impl Future<Output = Result<Vec<Hit>>> {
        LazySearcher::search(self, query, options)
    }

    fn keyword_candidates(
        &self,
        query: &str,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<KeywordCandidate>>> {
        LazySearcher::keyword_candidates(self, query, limit)
    }

    fn embedder(&self) -> Option<&dyn Embed> {
        self.model.as_ref().map(|model| &*model.embedder)
    }

    fn query_embedding(&self, query: &str) -> Result<Option<Vec<f32>>> {
        self.model.as_ref().map(|model| model.embed(query)).transpose()
    }
}

/// A bundle read by range, as the retrieval pipeline reads it, within what a search may
/// read ([`SearchOptions::probe`], [`SearchOptions::bm25_budget`]).
struct Paged<'a, S> {
    bundle: &'a LazyBundle<S>,
    probe: Option<u32>,
    bm25_budget: u64,
}

impl<'a, S> Paged<'a, S> {
    /// `bundle`, read as `options` allow.
    fn new(bundle: &'a LazyBundle<S>, options: &SearchOptions) -> Self {
        let bm25_budget = options.bm25_budget.unwrap_or(lexicon::BUDGET);
        Self { bundle, probe: options.probe, bm25_budget }
    }
}

impl<S: RangeSource> Retrieve for Paged<'_, S> {
    fn has_vectors(&self) -> bool {
        self.bundle.body().dense.is_some()
    }

    async fn bm25(&self, terms: &[String], k: usize, allow: Allow<'_>) -> Result<Vec<Scored>> {
        let lexicon = &self.bundle.body().lexicon;
        Ok(lexicon.search(self.bundle, terms, k, self.bm25_budget, allow).await?.hits)
    }

    async fn dense(&self, vector: &[f32], k: usize, allow: Allow<'_>) -> Result<Vec<Scored>> {
        match &self.bundle.body().dense {
            Some(ivf) => ivf.search(self.bundle, vector, k, self.probe, allow).await,
            None => Err(no_vectors()),
        }
    }

    fn graph(&self) -> impl GraphData + '_ {
        self.bundle.body().graph.reader(self.bundle)
    }

    async fn displays(&self, keywords: &[u32]) -> Result<HashMap<u32, String>> {
        self.bundle.body().graph.displays(self.bundle, keywords).await
    }
}
