//! Chunking: a [`Document`] in, retrievable [`Chunk`]s out.
//!
//! (Implementation in progress: see the module plan in ARCHITECTURE.md.)

use serde::{Deserialize, Serialize};

use crate::{Document, Error, Result};

/// The unit chunk sizes are measured in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SizeUnit {
    /// Unicode scalar values.
    Chars,
    /// Tokens of the embedding model's tokenizer.
    Tokens,
}

/// Measures text in the unit chunk sizes are given in.
pub trait Sizer {
    /// Size of `text`.
    fn size(&self, text: &str) -> usize;
    /// The unit [`Sizer::size`] counts.
    fn unit(&self) -> SizeUnit;
}

/// Counts characters (Unicode scalar values); used when no tokenizer is present.
#[derive(Debug, Clone, Copy, Default)]
pub struct CharSizer;

impl Sizer for CharSizer {
    fn size(&self, text: &str) -> usize {
        text.chars().count()
    }
    fn unit(&self) -> SizeUnit {
        SizeUnit::Chars
    }
}

/// Chunk size limits, in the [`Sizer`]'s unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkConfig {
    /// Size a chunk grows to before it is closed at the next sentence end.
    pub target: usize,
    /// Hard maximum; only a single sentence longer than this is split (at a word boundary).
    pub max: usize,
    /// Chunks smaller than this are merged with a neighbour where structure allows.
    pub min: usize,
    /// Fraction of `target` carried over from the previous chunk, as whole sentences.
    pub overlap: f32,
}

impl ChunkConfig {
    /// Defaults for sizes in characters.
    pub fn chars() -> Self {
        Self { target: 800, max: 1200, min: 160, overlap: 0.15 }
    }

    /// Defaults for sizes in tokens (fits a 256-token embedding window).
    pub fn tokens() -> Self {
        Self { target: 200, max: 256, min: 40, overlap: 0.15 }
    }

    /// Checks that `0 < min <= target <= max` and `0 <= overlap < 0.5`.
    ///
    /// # Errors
    /// [`Error::Config`] naming the offending value.
    pub fn validate(&self) -> Result<()> {
        if self.min == 0 || self.min > self.target || self.target > self.max {
            return Err(Error::Config(format!(
                "chunk sizes must satisfy 0 < min <= target <= max (got min {}, target {}, max {})",
                self.min, self.target, self.max
            )));
        }
        if !(0.0..0.5).contains(&self.overlap) {
            return Err(Error::Config(format!(
                "chunk overlap must be in [0, 0.5) (got {})",
                self.overlap
            )));
        }
        Ok(())
    }
}

impl Default for ChunkConfig {
    fn default() -> Self {
        Self::chars()
    }
}

/// A retrievable piece of a document. `text` is exactly `document.text[start..end]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chunk {
    /// Content hash of `text` ([`crate::content_id`]); equal texts have equal ids.
    pub id: String,
    /// Index of the chunk's document in the corpus.
    pub doc: u32,
    /// Position of the chunk within its document, from 0.
    pub seq: u32,
    /// Index of the chunk's section in the document's section tree.
    pub section: u32,
    /// 1-based page the chunk starts on (PDF).
    pub page: Option<u32>,
    /// Byte offset of the chunk's start in the document text.
    pub start: u32,
    /// Byte offset of the chunk's end in the document text.
    pub end: u32,
    /// The chunk's text.
    pub text: String,
}

/// Splits `doc` (the corpus' document number `doc_index`) into chunks.
pub fn chunk_document(
    _doc: &Document,
    _doc_index: u32,
    _config: &ChunkConfig,
    _sizer: &dyn Sizer,
) -> Vec<Chunk> {
    unimplemented!("in progress")
}

/// Removes exact duplicates and chunks wholly contained in another chunk, keeping the first
/// occurrence in corpus order. Returns how many were removed.
pub fn dedup(_chunks: &mut Vec<Chunk>) -> usize {
    unimplemented!("in progress")
}
