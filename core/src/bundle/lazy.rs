//! A whole bundle of format version 4: written from a bundle in memory
//! ([`Bundle::to_paged_bytes`]) and opened by range ([`open`]), its indexes then read a slot
//! at a time by [`crate::query::LazySearcher`].
//!
//! # Layout
//!
//! A [`paged`](super::paged) file whose directory body is a [`Body`]: the manifest, then
//! where each part lies and the small indexes that route a query to its slots. Its sections,
//! in file order:
//!
//! | section | what | module |
//! |---|---|---|
//! | `chunks` | chunk text and metadata, with their documents' heads | [`ChunkStore`] |
//! | `dictionary`, `postings` | BM25 terms and their impact-ordered postings | [`Lexicon`] |
//! | `keywords`, `appearances`, `words`, `word data`, `links` | the keyword graph | [`PagedGraph`] |
//! | `centroids`, `lists` | the dense index's partitions (with vectors only) | [`Ivf`] |
//! | `filters` | what metadata filters ask of each document and chunk | [`filters`] |
//! | `chunk ids` | where the chunk with a given id lies in the store | [`ids`] |
//! | `documents` | what listing the documents shows of each | [`documents`] |
//!
//! The directory names every section but `filters`, `chunk ids` and `documents`, which readers
//! find by name: bundles written before them lack them, and are searched as before but not
//! filtered, cannot find a chunk by its id, and list no documents. Large
//! corpora add a section `"<name> routes"` for each index whose routes would not fit the
//! directory ([`routes`](super::paged::routes)), also found by name.
//!
//! Every index names a chunk by its *address* in the store, not by its index in the
//! corpus, so a hit is read from the store without a lookup.
//!
//! **Postcard encodes [`Body`] by field order**: as for every version, adding, removing or
//! reordering a field changes the format.

use serde::{Deserialize, Serialize};

use super::graph::PagedGraph;
use super::ivf::{Ivf, IvfParams};
use super::lexicon::{self, Lexicon};
use super::paged::routes::INLINE_ROUTES;
use super::paged::{PagedFile, PagedWriter, RangeSource, VERSION};
use super::{Bundle, ChunkStore, DocumentSummary, Manifest};
use super::{documents, filters, ids};
use crate::graph::GraphIndex;
use crate::{Error, Result};

/// What the directory of a bundle of format version 4 holds besides its sections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Body {
    /// Name, provenance, parameters, counts (`format_version` 4).
    pub manifest: Manifest,
    /// The chunk store.
    pub store: ChunkStore,
    /// The BM25 index.
    pub lexicon: Lexicon,
    /// The keyword graph.
    pub graph: PagedGraph,
    /// The dense index; `None` for bundles built without embeddings.
    pub dense: Option<Ivf>,
}

/// A bundle of format version 4 opened by range.
pub type LazyBundle<S> = PagedFile<S, Body>;

/// How a bundle is laid out in pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Bytes of a slot of the chunk store, the BM25 index and the graph (more where a record
    /// needs them).
    pub slot: u32,
    /// Bytes of a slot of the dense index.
    pub dense_slot: u32,
    /// How the dense index is partitioned.
    pub ivf: IvfParams,
    /// Seed of the partitioning's k-means.
    pub seed: u64,
    /// Bytes of the longest route list the directory keeps; longer ones lie in sections of
    /// their own ([`routes`](super::paged::routes)).
    pub inline_routes: usize,
}

impl Default for Layout {
    /// 4 KB slots for text and graph (a cold SciFact graph search reads 262 KB in 49 ranges
    /// with them), 16 KB for vectors (a probed partition of 256 MiniLM rows is about 100 KB),
    /// and [`INLINE_ROUTES`].
    fn default() -> Self {
        Self {
            slot: 4 << 10,
            dense_slot: 16 << 10,
            ivf: IvfParams::default(),
            seed: 42,
            inline_routes: INLINE_ROUTES,
        }
    }
}

/// The page cache budget readers use unless told otherwise.
pub const DEFAULT_BUDGET: usize = 32 << 20;

impl Bundle {
    /// Encodes the bundle as format version 4, laid out as `layout` says (the dense index is
    /// re-partitioned; vectors are kept as they are, int8 or f32 stored as int8).
    ///
    /// # Errors
    /// [`Error::Config`] when a part cannot be laid out (more chunks than 32-bit addresses);
    /// [`Error::Decode`] when the directory cannot be encoded.
    pub fn to_paged_bytes(&self, layout: &Layout) -> Result<Vec<u8>> {
        let mut writer = PagedWriter::new().with_inline_routes(layout.inline_routes);
        let (store, addresses) =
            ChunkStore::write(&mut writer, &self.documents, &self.chunks, layout.slot)?;
        let lexicon =
            Lexicon::write(&mut writer, &self.bm25, &addresses, layout.slot, lexicon::FIRST_BLOCK)?;
        let index = GraphIndex::new(&self.graph, &self.chunks, self.documents.len());
        let graph = PagedGraph::write(&mut writer, &index, &self.graph, &addresses, layout.slot)?;
        let dense = match &self.dense {
            Some(dense) => Some(Ivf::write(
                &mut writer,
                dense,
                &addresses,
                layout.dense_slot,
                layout.ivf,
                layout.seed,
            )?),
            None => None,
        };
        filters::write(&mut writer, &self.documents, &self.chunks, &addresses, layout.slot)?;
        ids::write(&mut writer, &self.chunks, &addresses, layout.slot)?;
        documents::write(&mut writer, &self.documents, &self.chunks, layout.slot)?;
        let manifest = Manifest { format_version: VERSION, ..self.manifest.clone() };
        writer.finish(Body { manifest, store, lexicon, graph, dense }, VERSION, VERSION)
    }
}

/// What inspecting a bundle of format 4 shows: its manifest and sections, from its directory,
/// and its documents, from its document table. The CLI's `inspect --json` and the browser's
/// `inspect()` print this.
#[derive(Debug, Clone, Serialize)]
pub struct PagedInspection<'a> {
    /// The manifest.
    pub manifest: &'a Manifest,
    /// The sections, in file order.
    pub sections: Vec<SectionSummary<'a>>,
    /// The documents, in bundle order; `None` for a bundle written without a document table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub documents: Option<Vec<DocumentSummary>>,
}

/// One section of a [`PagedInspection`].
#[derive(Debug, Clone, Serialize)]
pub struct SectionSummary<'a> {
    /// What it holds.
    pub name: &'a str,
    /// Bytes of each slot, its proof included.
    pub slot: u32,
    /// Its slot count.
    pub slots: u32,
}

/// The sections of `bundle`, from its directory.
pub fn sections<S: RangeSource>(bundle: &LazyBundle<S>) -> Vec<SectionSummary<'_>> {
    let sections = bundle.sections().iter();
    sections.map(|s| SectionSummary { name: &s.name, slot: s.slot, slots: s.slots }).collect()
}

/// What inspecting `bundle` shows: the directory, and the document table read whole.
///
/// # Errors
/// As [`documents::read`].
pub async fn inspect<S: RangeSource>(bundle: &LazyBundle<S>) -> Result<PagedInspection<'_>> {
    let manifest = &bundle.body().manifest;
    let documents = documents::read(bundle, manifest.counts.documents).await?;
    Ok(PagedInspection { manifest, sections: sections(bundle), documents })
}

/// Opens the bundle of format version 4 that `source` reads, keeping up to `budget` bytes of
/// pages: one read for the header and directory of any but the largest corpora.
///
/// # Errors
/// As [`PagedFile::open`]; [`Error::Decode`] when the directory's parts disagree (the dense
/// index with the manifest's model, or the store with the indexes on the chunk count).
pub async fn open<S: RangeSource>(source: S, budget: usize) -> Result<LazyBundle<S>> {
    let file: LazyBundle<S> = PagedFile::open(source, budget).await?;
    let body = file.body();
    let chunks = body.manifest.counts.chunks;
    let dimension = body.manifest.embedding.as_ref().map(|e| e.dimension);
    let bad = |what: String| Err(Error::Decode(format!("directory: {what}")));
    if body.graph.chunks != chunks || body.lexicon.chunks != chunks {
        return bad(format!(
            "a graph of {} chunks and a BM25 index of {} in a bundle of {chunks}",
            body.graph.chunks, body.lexicon.chunks
        ));
    }
    match &body.dense {
        Some(dense) if Some(dense.dim) != dimension || dense.chunks != chunks => bad(format!(
            "a dense index of {} vectors of dimension {}, where the manifest has {chunks} of {:?}",
            dense.chunks, dense.dim, dimension
        )),
        None if dimension.is_some() => {
            bad("the manifest names a model but there are no vectors".into())
        }
        _ => Ok(file),
    }
}
