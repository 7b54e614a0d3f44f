//! Chunking: a [`Document`] in, retrievable [`Chunk`]s out.
//!
//! Every chunk is a contiguous slice of the document text, so it can always be shown in place.
//! [`chunk_document`] works in four steps:
//!
//! 1. **Units.** Each block becomes units measured once with the [`Sizer`]: a heading, each
//!    sentence of prose ([`crate::text::sentences`]), or a code block or table whole. A unit
//!    larger than `max` is cut: a sentence at word boundaries, a code block or table at line
//!    boundaries (then words, then characters, for a line that is still too long).
//! 2. **Regions.** Consecutive units of the same section and page form a region; a heading
//!    belongs to the region of the content after it, so it opens that content's chunk.
//!    Neighbouring regions that are each below `min` are joined into one chunk while the result
//!    fits `max`; that is the only way a chunk spans sections or pages.
//! 3. **Packing.** Within a region, units accumulate while the chunk stays within `target`
//!    (or within `max` while it is still below `min` or holds only headings). A chunk left
//!    below `min` is then merged into a neighbour in the region if the result fits `max`.
//!    Sizes of runs of units are estimated as the sum of their parts (exact for characters);
//!    every chunk is then measured once, and one that exceeds `max` is cut between units.
//! 4. **Overlap.** Each chunk but the first of a region starts with whole prose sentences from
//!    the end of the previous chunk, at most `overlap × target` in size, trimmed so that the
//!    chunk still fits `max`. Headings, code, tables and pieces of sentences are never
//!    carried, and a chunk never takes all of its predecessor.
//!
//! [`dedup`] then removes duplicate and contained chunks across the corpus.

use serde::{Deserialize, Serialize};

use crate::{Document, Error, Result};

mod dedup;
mod pack;
mod units;

pub use dedup::dedup;
use pack::Draft;
use units::{Unit, UnitKind};

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

/// Splits `doc` (the corpus' document number `doc_index`) into chunks, in reading order (see
/// the module docs). The same input always gives the same chunks.
///
/// `config` should be [validated](ChunkConfig::validate); other values do not panic but give
/// chunks of unspecified sizes.
pub fn chunk_document(
    doc: &Document,
    doc_index: u32,
    config: &ChunkConfig,
    sizer: &dyn Sizer,
) -> Vec<Chunk> {
    let units = units::document_units(doc, config.max, sizer);
    pack::plan(&doc.text, &units, config, sizer)
        .iter()
        .enumerate()
        .map(|(seq, draft)| to_chunk(doc, doc_index, seq, &units, draft))
        .collect()
}

fn to_chunk(doc: &Document, doc_index: u32, seq: usize, units: &[Unit], draft: &Draft) -> Chunk {
    let own = &units[draft.first..draft.end];
    let opening = own.iter().find(|u| u.kind != UnitKind::Heading).or(own.first());
    let first = &units[draft.carry];
    let start = first.range.start;
    let end = units[draft.end - 1].range.end;
    let text = doc.text[start..end].to_owned();
    Chunk {
        id: crate::content_id(text.as_bytes()),
        doc: doc_index,
        seq: to_u32(seq),
        section: to_u32(opening.map_or(0, |u| u.section)),
        page: first.page,
        start: to_u32(start),
        end: to_u32(end),
        text,
    }
}

/// Offsets and counts beyond `u32` (a 4 GiB document) saturate.
fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests;
