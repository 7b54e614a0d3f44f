//! A bundle of any format ready to query, as a host holds one: read whole (formats 1 to 3,
//! a [`Searcher`]) or by range (format 4, a [`LazySearcher`]), behind one set of calls.

use serde::Serialize;

use super::{Corpus, Hit, KeywordCandidate, LazySearcher, SearchOptions, Searcher};
use crate::bundle::lazy::{self, DEFAULT_BUDGET, PagedInspection};
use crate::bundle::paged::{InMemory, RangeSource, Reads, ready_now};
use crate::bundle::{Embed, Inspection, Manifest};
use crate::graph::GraphView;
use crate::index::Scored;
use crate::{Error, Result};

/// A bundle ready to query, whatever its format.
///
/// ```
/// use edgerag_core::bundle::lazy::Layout;
/// use edgerag_core::bundle::paged::ready_now;
/// use edgerag_core::query::{Corpus, Opened, SearchOptions};
/// use edgerag_core::{BuildOptions, BundleBuilder};
///
/// # fn main() -> edgerag_core::Result<()> {
/// let mut builder = BundleBuilder::new(BuildOptions::default())?;
/// builder.add(edgerag_core::load("normans.md", b"# Normans\n\nRollo led the Norse raiders.")?);
/// let bundle = builder.finish(&mut |_progress| {})?;
///
/// // Format 4 is read by range, here from memory; an older format would be decoded whole.
/// let opened = Opened::from_bytes(bundle.to_paged_bytes(&Layout::default())?)?;
/// let options = SearchOptions::default();
/// let hits = ready_now(opened.search("Rollo", &options)).expect("reads from memory are ready")?;
/// assert_eq!(hits[0].title, "Normans");
/// assert!(opened.reads().is_some_and(|reads| reads.total.bytes > 0));
/// # Ok(())
/// # }
/// ```
pub enum Opened<S> {
    /// A bundle of format 1 to 3, decoded whole.
    Whole(Searcher),
    /// A bundle of format 4, read by range.
    ByRange(LazySearcher<S>),
}

impl<S: RangeSource> std::fmt::Debug for Opened<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Whole(searcher) => f.debug_tuple("Whole").field(searcher).finish(),
            Self::ByRange(searcher) => f.debug_tuple("ByRange").field(searcher).finish(),
        }
    }
}

impl Opened<InMemory> {
    /// The bundle in `bytes`: of format 4, read by range from them; older, decoded whole.
    ///
    /// # Errors
    /// As [`Searcher::from_bytes`] and [`LazySearcher::open`].
    pub fn from_bytes(bytes: Vec<u8>) -> Result<Self> {
        match Searcher::from_bytes(&bytes) {
            Err(Error::ReadByRange) => {
                let open = LazySearcher::open(InMemory(bytes), DEFAULT_BUDGET);
                // Reads from memory are ready at once.
                let opened = ready_now(open).unwrap_or_else(|| {
                    Err(Error::Read("a read from memory did not complete at once".into()))
                });
                opened.map(Self::ByRange)
            }
            whole => whole.map(Self::Whole),
        }
    }
}

impl<S: RangeSource> Opened<S> {
    /// The bundle's manifest.
    pub fn manifest(&self) -> &Manifest {
        match self {
            Self::Whole(searcher) => &searcher.bundle().manifest,
            Self::ByRange(searcher) => searcher.manifest(),
        }
    }

    /// Adds the embedder that turns queries into vectors, enabling dense retrieval.
    ///
    /// # Errors
    /// As [`Searcher::set_embedder`].
    pub fn set_embedder(&mut self, embedder: Box<dyn Embed>) -> Result<()> {
        match self {
            Self::Whole(searcher) => searcher.set_embedder(embedder),
            Self::ByRange(searcher) => searcher.set_embedder(embedder),
        }
    }

    /// What reading the bundle has cost, opening included, and each section's share: `None`
    /// for a bundle read whole.
    pub fn reads(&self) -> Option<Reads> {
        match self {
            Self::Whole(_) => None,
            Self::ByRange(searcher) => Some(searcher.reads()),
        }
    }

    /// What inspecting the bundle shows: its manifest and documents, and the size of each
    /// part (read whole) or its sections (read by range: the directory and the document table).
    ///
    /// # Errors
    /// As [`lazy::inspect`].
    pub async fn inspect(&self) -> Result<Inspected<'_>> {
        Ok(match self {
            Self::Whole(searcher) => Inspected::Whole(searcher.bundle().inspect()),
            Self::ByRange(searcher) => Inspected::ByRange(lazy::inspect(searcher.bundle()).await?),
        })
    }

    /// The keyword graph around the chunks named by `chunk_ids`, with at most `limit`
    /// keywords (see [`Searcher::graph_view`]).
    ///
    /// # Errors
    /// As [`Searcher::graph_view`] and [`LazySearcher::graph_view`].
    pub async fn graph_view(&self, chunk_ids: &[String], limit: usize) -> Result<GraphView> {
        match self {
            Self::Whole(searcher) => searcher.graph_view(chunk_ids, limit),
            Self::ByRange(searcher) => searcher.graph_view(chunk_ids, limit).await,
        }
    }
}

/// What inspecting an [`Opened`] bundle shows, as its format allows.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum Inspected<'a> {
    /// A bundle read whole.
    Whole(Inspection<'a>),
    /// A bundle read by range.
    ByRange(PagedInspection<'a>),
}

impl<S: RangeSource> Corpus for Opened<S> {
    async fn search(&self, query: &str, options: &SearchOptions) -> Result<Vec<Hit>> {
        match self {
            Self::Whole(searcher) => searcher.search(query, options),
            Self::ByRange(searcher) => searcher.search(query, options).await,
        }
    }

    async fn rank_chunks(&self, query: &str, options: &SearchOptions) -> Result<Vec<Scored>> {
        match self {
            Self::Whole(searcher) => searcher.rank_chunks(query, options),
            Self::ByRange(searcher) => searcher.rank_chunks(query, options).await,
        }
    }

    async fn sources(&self, chunks: &[u32]) -> Result<Vec<String>> {
        match self {
            Self::Whole(searcher) => Corpus::sources(searcher, chunks).await,
            Self::ByRange(searcher) => Corpus::sources(searcher, chunks).await,
        }
    }

    fn dense_ready(&self) -> bool {
        match self {
            Self::Whole(searcher) => searcher.dense_ready(),
            Self::ByRange(searcher) => searcher.dense_ready(),
        }
    }

    async fn keyword_candidates(&self, query: &str, limit: usize) -> Result<Vec<KeywordCandidate>> {
        match self {
            Self::Whole(searcher) => searcher.keyword_candidates(query, limit),
            Self::ByRange(searcher) => searcher.keyword_candidates(query, limit).await,
        }
    }

    fn embedder(&self) -> Option<&dyn Embed> {
        match self {
            Self::Whole(searcher) => searcher.embedder(),
            Self::ByRange(searcher) => Corpus::embedder(searcher),
        }
    }

    fn query_embedding(&self, query: &str) -> Result<Option<Vec<f32>>> {
        match self {
            Self::Whole(searcher) => searcher.query_embedding(query),
            Self::ByRange(searcher) => Corpus::query_embedding(searcher, query),
        }
    }
}
