//! The corpus bundle: everything a runtime needs to answer queries, in one versioned file.
//!
//! # File layout (format version 3)
//!
//! All integers little-endian. The header is fixed-size so a reader can reject a file before
//! decoding anything:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 8  | magic `b"EDGERAG\0"` |
//! | 8  | 2  | `version`: format version the file was written with |
//! | 10 | 2  | `min_reader`: oldest format version a reader must support to read the file |
//! | 12 | 4  | flags a reader must understand (it refuses a file with a bit it does not define): none in versions 1–3; see [`paged::ROUTED`], [`paged::NAMED`], [`paged::CODED`] |
//! | 16 | 8  | payload length in bytes |
//! | 24 | 32 | BLAKE3 hash of the payload |
//! | 56 | …  | payload: [`Bundle`] encoded with postcard |
//!
//! A reader accepts a file when `min_reader <= CURRENT_VERSION` (otherwise
//! [`Error::TooNew`]) and `version >= OLDEST_READABLE_VERSION` (otherwise [`Error::TooOld`]),
//! and decodes the payload with the struct layout of `version`. A writer of a newer version
//! that leaves `min_reader` at an older version promises that the older layout is a prefix of
//! its payload (new fields are only appended); such trailing bytes are then ignored.
//!
//! **Postcard encodes structs by field order, without names.** Adding, removing or reordering a
//! field of any type reachable from [`Bundle`] changes the format: bump [`FORMAT_VERSION`] (and
//! [`MIN_READER_VERSION`] unless fields were only appended), keep a decoder for the previous
//! layout that converts into the next one (old layouts are read a version at a time, v1 → v2 →
//! current; or raise [`OLDEST_READABLE_VERSION`]), and keep a bundle of every readable version
//! under `core/tests/fixtures/` with a test that loads it.
//!
//! # Versions
//!
//! - 1: manifest, documents, chunks, keyword graph, BM25 index.
//! - 2: adds the embedding model's description to the manifest (replacing the model-id
//!   string), dense-index parameters and a vector count, and the dense index after the BM25
//!   index. Version-1 files are still read ([`v1`]); they have no vectors.
//! - 3: adds the semantic keyword-similarity settings (`semantic_threshold`,
//!   `semantic_keywords`) to the graph parameters. Version-2 files are still read ([`v2`]).
//! - 4: one file read by byte range, a query reading only the pages it touches ([`lazy`]
//!   lays out the whole; its container, [`paged`], has a header of this shape, a directory,
//!   and sections of fixed-size slots, each read alone and checked against its section's hash
//!   tree). Builds write it unless asked for version 3 ([`Bundle::encode`]: `edgerag build`,
//!   the in-tab builder; `edgerag convert` rewrites older files as it), and it is read by
//!   range only ([`crate::query::LazySearcher`]): [`Bundle::from_bytes`] refuses
//!   it with [`Error::ReadByRange`]. Files of large corpora set the header flag
//!   [`paged::ROUTED`]: some of their routes lie in sections of their own
//!   ([`paged::routes`]), which readers that predate it would misread, so they refuse them.
//!   Files written since the links of each chunk name its keywords that are names set
//!   [`paged::NAMED`], which older readers refuse likewise; and those whose dense index
//!   keeps a binary code of each vector in its lists, its rows apart, [`paged::CODED`].

mod build;
pub mod documents;
pub mod filters;
pub mod graph;
pub mod ids;
pub mod ivf;
pub mod lazy;
pub mod lexicon;
pub mod paged;
mod store;
mod v1;
mod v2;
mod varint;

use serde::{Deserialize, Serialize};

pub use build::{BuildFailure, BuildOptions, BuildSummary, BundleBuilder, Progress, Stage};
pub use lexicon::Lexicon;
pub use store::{ChunkStore, DocumentHead, StoredChunk};

use crate::chunk::{Chunk, ChunkConfig, SizeUnit};
use crate::graph::{Appearance, GraphConfig, KeywordGraph, Similarity};
use crate::index::bm25::{Bm25Index, Bm25Params};
use crate::index::dense::{DenseIndex, DenseParams};
use crate::keywords::KeywordConfig;
use crate::load::{DocKind, Section};
use crate::{Error, Result};

/// Magic bytes at the start of every bundle.
pub const MAGIC: [u8; 8] = *b"EDGERAG\0";
/// The format version this build writes.
pub const FORMAT_VERSION: u16 = 3;
/// Written as `min_reader`: the oldest format version whose readers can decode what this build
/// writes. The layout last changed incompatibly in version 3 (it equals [`FORMAT_VERSION`]
/// unless a version only appends fields).
pub const MIN_READER_VERSION: u16 = 3;
/// The oldest format version this build reads.
pub const OLDEST_READABLE_VERSION: u16 = 1;
/// Size of the fixed header.
pub const HEADER_LEN: usize = 56;

/// Build parameters recorded in the manifest, so a bundle says how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildParams {
    /// Chunk size limits.
    pub chunk: ChunkConfig,
    /// Unit of the chunk sizes.
    pub size_unit: SizeUnit,
    /// Keyword extraction and filtering.
    pub keywords: KeywordConfig,
    /// Keyword graph construction.
    pub graph: GraphConfig,
    /// BM25 parameters.
    pub bm25: Bm25Params,
    /// Dense index parameters.
    pub dense: DenseParams,
}

/// How the token vectors of a model's last layer become one text vector.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Pooling {
    /// Mean of the token vectors, weighted by the attention mask (sentence-transformers'
    /// MiniLM, mpnet, e5).
    #[default]
    Mean,
    /// The vector of the first (`[CLS]`) token (bge).
    Cls,
}

/// The embedding model a bundle's vectors come from. Queries must be embedded the same way:
/// a runtime refuses dense search with a model whose id or dimension differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbeddingSpec {
    /// Model id, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    pub model: String,
    /// Vector dimension.
    pub dimension: u32,
    /// Pooling of token vectors.
    pub pooling: Pooling,
    /// Text put before each query (e5/bge-style instructions; empty for MiniLM).
    pub query_prefix: String,
    /// Text put before each chunk when it is embedded.
    pub document_prefix: String,
    /// Longest input in tokens; longer texts are truncated.
    pub max_tokens: u32,
}

/// Turns text into vectors: what a build and a dense search need from an embedding model.
/// [`crate::embed::Embedder`] implements it with candle; a host may bring another.
pub trait Embed {
    /// How this embedder embeds (model id, dimension, pooling, prefixes).
    fn spec(&self) -> EmbeddingSpec;
    /// Vectors of chunk texts (the document prefix applied), one per text, L2-normalised.
    ///
    /// # Errors
    /// When the model fails on the input.
    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>>;
    /// Vector of a query (the query prefix applied), L2-normalised.
    ///
    /// # Errors
    /// When the model fails on the input.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>>;
}

/// A shared embedder embeds like the one it shares, so one loaded model can serve a build and
/// a [`Searcher`](crate::Searcher) (the browser loads the model once for both).
impl<E: Embed + ?Sized> Embed for std::rc::Rc<E> {
    fn spec(&self) -> EmbeddingSpec {
        (**self).spec()
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        (**self).embed_documents(texts)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        (**self).embed_query(text)
    }
}

impl EmbeddingSpec {
    /// Checks that vectors made as `other` describes can be compared with these.
    ///
    /// # Errors
    /// [`Error::ModelMismatch`] naming both models.
    pub fn check_compatible(&self, other: &EmbeddingSpec) -> Result<()> {
        let same = self.model == other.model
            && self.dimension == other.dimension
            && self.pooling == other.pooling
            && self.query_prefix == other.query_prefix
            && self.document_prefix == other.document_prefix;
        if same {
            return Ok(());
        }
        Err(Error::ModelMismatch {
            bundle: format!("{:?} ({}-d)", self.model, self.dimension),
            given: format!("{:?} ({}-d)", other.model, other.dimension),
        })
    }
}

/// Counts of what the bundle holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Documents.
    pub documents: u32,
    /// Chunks after de-duplication.
    pub chunks: u32,
    /// Chunks removed as duplicates or contained in another chunk.
    pub duplicates_removed: u32,
    /// Keyword nodes.
    pub keywords: u32,
    /// Graph edges (APPEARS_IN, NEXT, PART_OF, SIMILAR_TO).
    pub edges: u32,
    /// Distinct BM25 terms.
    pub terms: u32,
    /// Chunk vectors (0 without embeddings).
    pub vectors: u32,
}

/// What a bundle is: its name, provenance, parameters and counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Format version of the payload.
    pub format_version: u16,
    /// Name of the corpus.
    pub corpus: String,
    /// Version of edgerag that built it.
    pub edgerag_version: String,
    /// Creation time, seconds since the Unix epoch (supplied by the host).
    pub created: u64,
    /// The embedding model of the vectors; `None` when the bundle has none.
    pub embedding: Option<EmbeddingSpec>,
    /// How the bundle was built.
    pub params: BuildParams,
    /// What it holds.
    pub counts: Counts,
}

/// A document as kept in a bundle (its text lives in its chunks).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DocumentInfo {
    /// Content hash of the source bytes.
    pub id: String,
    /// Source name (file path or data-set id).
    pub source: String,
    /// Title.
    pub title: String,
    /// Format it was loaded from.
    pub kind: DocKind,
    /// Page count (PDF), else 0.
    pub pages: u32,
    /// Heading tree; `sections[0]` is the root.
    pub sections: Vec<Section>,
    /// Length of the document's extracted text in bytes.
    pub text_bytes: u64,
}

impl DocumentInfo {
    /// Heading titles from the top down to `section` (the root left out).
    pub fn section_path(&self, section: u32) -> Vec<String> {
        crate::load::section_path(&self.sections, section as usize)
    }
}

/// A corpus bundle: manifest, documents, chunks, keyword graph and BM25 index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    /// Name, provenance, parameters, counts.
    pub manifest: Manifest,
    /// Documents, referenced by index from chunks.
    pub documents: Vec<DocumentInfo>,
    /// Chunks, referenced by index from the graph and the indexes.
    pub chunks: Vec<Chunk>,
    /// Keyword graph.
    pub graph: KeywordGraph,
    /// BM25 index over the chunks.
    pub bm25: Bm25Index,
    /// Chunk vectors and their index; `None` for bundles built without embeddings.
    pub dense: Option<DenseIndex>,
}

/// Encoded size of each part of a bundle's payload, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PartSizes {
    /// Manifest.
    pub manifest: usize,
    /// Document table.
    pub documents: usize,
    /// Chunks (text and metadata).
    pub chunks: usize,
    /// Keyword graph.
    pub graph: usize,
    /// BM25 index.
    pub bm25: usize,
    /// Dense index (vectors and graph).
    pub dense: usize,
}

/// What inspecting a bundle shows: its manifest, the size of each part, and its documents.
/// The CLI's `inspect --json` and the browser's `inspect()` print this.
#[derive(Debug, Clone, Serialize)]
pub struct Inspection<'a> {
    /// The manifest.
    pub manifest: &'a Manifest,
    /// Encoded size of each part.
    pub part_bytes: PartSizes,
    /// The documents, in bundle order.
    pub documents: Vec<DocumentSummary>,
}

/// One document of an [`Inspection`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DocumentSummary {
    /// Source name.
    pub source: String,
    /// Title.
    pub title: String,
    /// Format it was loaded from.
    pub kind: DocKind,
    /// Page count (PDF), else 0.
    pub pages: u32,
    /// Number of headings.
    pub sections: usize,
    /// Number of chunks.
    pub chunks: usize,
}

impl DocumentSummary {
    /// The summary of each of `documents`, whose chunks are `chunks`; `None` when a chunk
    /// points to a missing document.
    pub(crate) fn of(documents: &[DocumentInfo], chunks: &[Chunk]) -> Option<Vec<Self>> {
        let mut counts = vec![0usize; documents.len()];
        for chunk in chunks {
            *counts.get_mut(chunk.doc as usize)? += 1;
        }
        let summaries = documents.iter().zip(counts).map(|(d, chunks)| Self {
            source: d.source.clone(),
            title: d.title.clone(),
            kind: d.kind,
            pages: d.pages,
            sections: d.sections.len().saturating_sub(1),
            chunks,
        });
        Some(summaries.collect())
    }
}

impl Bundle {
    /// The manifest, part sizes and per-document counts.
    pub fn inspect(&self) -> Inspection<'_> {
        // A decoded bundle's chunks point to its documents (validated on decoding).
        let documents = DocumentSummary::of(&self.documents, &self.chunks).unwrap_or_default();
        Inspection { manifest: &self.manifest, part_bytes: self.part_sizes(), documents }
    }

    /// Encodes the bundle in format `format`: 4, read by range, laid out as
    /// [`lazy::Layout::default`] says; or 3, read whole ([`to_bytes`](Self::to_bytes)).
    ///
    /// # Errors
    /// [`Error::Config`] for another format; as [`to_paged_bytes`](Self::to_paged_bytes) and
    /// [`to_bytes`](Self::to_bytes).
    pub fn encode(&self, format: u16) -> Result<Vec<u8>> {
        match format {
            paged::VERSION => self.to_paged_bytes(&lazy::Layout::default()),
            FORMAT_VERSION => self.to_bytes(),
            other => Err(Error::Config(format!(
                "bundles are written in format {FORMAT_VERSION} or {}, not {other}",
                paged::VERSION
            ))),
        }
    }

    /// Encodes the bundle: header followed by the postcard payload.
    ///
    /// # Errors
    /// [`Error::Decode`] if serialisation fails (it does not for well-formed bundles).
    pub fn to_bytes(&self) -> Result<Vec<u8>> {
        let payload = postcard::to_allocvec(self).map_err(|e| Error::Decode(e.to_string()))?;
        let mut out = header(FORMAT_VERSION, MIN_READER_VERSION, 0, &payload);
        out.extend_from_slice(&payload);
        Ok(out)
    }

    /// Decodes and validates a bundle.
    ///
    /// # Errors
    /// [`Error::NotABundle`], [`Error::Truncated`], [`Error::TooNew`], [`Error::TooOld`],
    /// [`Error::ReadByRange`] (format 4), [`Error::Corrupted`] or [`Error::Decode`]; never
    /// panics, whatever the bytes.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let (version, payload) = check_header(bytes)?;
        let (bundle, rest): (Bundle, &[u8]) = match version {
            // Old layouts convert a version at a time: v1 → v2 → current.
            1 => decode::<v1::Bundle>(payload).map(|(b, r)| (v2::Bundle::from(b).into(), r)),
            2 => decode::<v2::Bundle>(payload).map(|(b, r)| (b.into(), r)),
            _ => decode::<Bundle>(payload),
        }?;
        // A newer writer that still admits this reader (`min_reader`) may append fields.
        if !rest.is_empty() && version <= FORMAT_VERSION {
            return Err(Error::Decode(format!(
                "{} unexpected bytes after the payload",
                rest.len()
            )));
        }
        bundle.validate()?;
        Ok(bundle)
    }

    /// Checks that every cross-reference (chunk → document, graph → chunk/keyword, BM25 →
    /// chunk) is in range, so that queries on a decoded bundle cannot fail on bad indices.
    ///
    /// # Errors
    /// [`Error::Decode`] naming the first inconsistency.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::Decode(what));
        let (documents, chunks) = (self.documents.len(), self.chunks.len());
        if let Some(c) = self.chunks.iter().find(|c| c.doc as usize >= documents) {
            return bad(format!("chunk {:?} points to a missing document", c.id));
        }
        if let Some(c) = self.chunks.iter().find(|c| {
            self.documents[c.doc as usize].sections.len() <= c.section as usize || c.start > c.end
        }) {
            return bad(format!("chunk {:?} has an invalid section or range", c.id));
        }
        if let Some(d) = self.documents.iter().find(|d| {
            d.sections.iter().any(|s| s.parent.is_some_and(|p| p as usize >= d.sections.len()))
        }) {
            return bad(format!("document {:?} has a broken section tree", d.source));
        }
        validate_graph(&self.graph, chunks)?;
        if self.bm25.len() != chunks {
            return bad(format!("BM25 covers {} chunks, bundle has {chunks}", self.bm25.len()));
        }
        self.bm25.validate()?;
        if let Some(dense) = &self.dense {
            let expected = self.manifest.embedding.as_ref().map(|e| e.dimension as usize);
            if dense.len() != chunks || Some(dense.dimension()) != expected {
                return bad(format!(
                    "dense index holds {} vectors of dimension {}, manifest expects {chunks} of {:?}",
                    dense.len(),
                    dense.dimension(),
                    expected
                ));
            }
            dense.validate()?;
        }
        Ok(())
    }

    /// Encoded size of each part of the payload.
    pub fn part_sizes(&self) -> PartSizes {
        PartSizes {
            manifest: encoded_len(&self.manifest),
            documents: encoded_len(&self.documents),
            chunks: encoded_len(&self.chunks),
            graph: encoded_len(&self.graph),
            bm25: encoded_len(&self.bm25),
            dense: encoded_len(&self.dense),
        }
    }

    /// The document a chunk belongs to.
    pub fn document_of(&self, chunk: &Chunk) -> &DocumentInfo {
        &self.documents[chunk.doc as usize]
    }
}

/// Bytes `value` takes when encoded in a bundle's payload (postcard), e.g. a dense index
/// requantized to see what it would weigh.
pub fn encoded_len<T: Serialize>(value: &T) -> usize {
    postcard::serialize_with_flavor(value, postcard::ser_flavors::Size::default()).unwrap_or(0)
}

fn validate_graph(graph: &KeywordGraph, chunks: usize) -> Result<()> {
    let keywords = graph.keywords.len();
    let appearance_ok =
        |a: &Appearance| (a.keyword as usize) < keywords && (a.chunk as usize) < chunks;
    let similarity_ok = |s: &Similarity| (s.a as usize) < keywords && (s.b as usize) < keywords;
    if !graph.appears_in.iter().all(appearance_ok) || !graph.similar.iter().all(similarity_ok) {
        return Err(Error::Decode("keyword graph points to a missing chunk or keyword".into()));
    }
    Ok(())
}

/// The parts of a payload, in the order every format version encodes them.
const PARTS: [&str; 6] = ["manifest", "documents", "chunks", "graph", "bm25", "dense"];

/// Decodes a payload of type `T`. When that fails it is decoded once more, tracking the path
/// to the failing value, so the error names the part and, in the document and chunk tables,
/// the entry (`chunks[12]: …`), at no cost to payloads that decode.
fn decode<'a, T: Deserialize<'a>>(payload: &'a [u8]) -> Result<(T, &'a [u8])> {
    postcard::take_from_bytes(payload).map_err(|error| {
        let mut tracked = postcard::Deserializer::from_bytes(payload);
        let path = serde_path_to_error::deserialize::<_, T>(&mut tracked).err();
        // postcard encodes structs as sequences: the path is made of indices.
        let mut indices = path.iter().flat_map(|e| e.path().iter()).map(|segment| match segment {
            serde_path_to_error::Segment::Seq { index } => Some(*index),
            _ => None,
        });
        let part = indices.next().flatten().and_then(|i| PARTS.get(i));
        let place = match (part, indices.next().flatten()) {
            (Some(&table @ ("documents" | "chunks")), Some(entry)) => format!("{table}[{entry}]: "),
            (Some(part), _) => format!("{part}: "),
            (None, _) => String::new(),
        };
        let problem = match error {
            // postcard drops the message of errors raised by the types themselves.
            postcard::Error::SerdeDeCustom => {
                "an invalid value (out of range or malformed)".to_owned()
            }
            other => other.to_string().to_lowercase(),
        };
        Error::Decode(format!("{place}{problem}"))
    })
}

/// The header of a file written as `version`, readable from `min_reader`, with `flags` set,
/// whose payload is `payload`; room is reserved for the payload to follow.
pub(crate) fn header(version: u16, min_reader: u16, flags: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&version.to_le_bytes());
    out.extend_from_slice(&min_reader.to_le_bytes());
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(blake3::hash(payload).as_bytes());
    out
}

/// What a header says of its file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header {
    /// The format version it was written with.
    pub(crate) version: u16,
    /// Its flags (those the reader knows).
    pub(crate) flags: u32,
    /// The payload's length.
    pub(crate) payload_len: u64,
    /// The payload's BLAKE3 hash.
    pub(crate) hash: [u8; 32],
}

/// Reads the header at the start of `bytes` (at least its first [`HEADER_LEN`] bytes of the
/// file, which is `found` bytes long) for a reader of format versions `versions` (oldest,
/// newest) that knows the flags `known`.
pub(crate) fn parse_header(
    bytes: &[u8],
    found: u64,
    versions: (u16, u16),
    known: u32,
) -> Result<Header> {
    if bytes.len() < MAGIC.len() {
        return if MAGIC.starts_with(bytes) && !bytes.is_empty() {
            Err(Error::Truncated { expected: HEADER_LEN as u64, found })
        } else {
            Err(Error::NotABundle)
        };
    }
    if bytes[..MAGIC.len()] != MAGIC {
        return Err(Error::NotABundle);
    }
    if bytes.len() < HEADER_LEN {
        return Err(Error::Truncated { expected: HEADER_LEN as u64, found });
    }
    let u16_at = |i: usize| u16::from_le_bytes([bytes[i], bytes[i + 1]]);
    let (version, min_reader) = (u16_at(8), u16_at(10));
    if min_reader > versions.1 {
        return Err(Error::TooNew { found: min_reader, oldest: versions.0, current: versions.1 });
    }
    if version < versions.0 {
        return Err(Error::TooOld { found: version, oldest: versions.0, current: versions.1 });
    }
    let flags = u32::from_le_bytes([bytes[12], bytes[13], bytes[14], bytes[15]]);
    if flags & !known != 0 {
        return Err(Error::Decode(format!(
            "header: flags {:#010x} are set, which this edgerag does not define (a newer \
             edgerag wrote the file, or it is damaged)",
            flags & !known
        )));
    }
    let mut len = [0u8; 8];
    len.copy_from_slice(&bytes[16..24]);
    let mut hash = [0u8; 32];
    hash.copy_from_slice(&bytes[24..HEADER_LEN]);
    Ok(Header { version, flags, payload_len: u64::from_le_bytes(len), hash })
}

/// Checks the header of a whole file and returns the format version and the payload.
fn check_header(bytes: &[u8]) -> Result<(u16, &[u8])> {
    let found = bytes.len() as u64;
    let header = match parse_header(bytes, found, (OLDEST_READABLE_VERSION, FORMAT_VERSION), 0) {
        Err(Error::TooNew { found: paged::VERSION, .. }) => return Err(Error::ReadByRange),
        header => header?,
    };
    let expected = (HEADER_LEN as u64).saturating_add(header.payload_len);
    if found < expected {
        return Err(Error::Truncated { expected, found });
    }
    if found > expected {
        return Err(Error::Corrupted);
    }
    let payload = &bytes[HEADER_LEN..];
    if blake3::hash(payload).as_bytes() != &header.hash {
        return Err(Error::Corrupted);
    }
    Ok((header.version, payload))
}
