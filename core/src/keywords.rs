//! Keyword extraction per chunk: names, acronyms, YAKE-scored phrases, dates, numbers.

use serde::{Deserialize, Serialize};

use crate::text::Analyzer;

/// What kind of keyword a [`Keyword`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum KeywordKind {
    /// A proper name: a TitleCase or ALL-CAPS multi-word sequence.
    Name,
    /// An acronym such as `NASA` or `mRNA`.
    Acronym,
    /// A statistically scored noun-phrase candidate.
    Phrase,
    /// A date, normalised to `YYYY-MM-DD` (or `YYYY-MM`, `YYYY`).
    Date,
    /// A number with at least 4 digits, or between 10 and 999.
    Number,
}

/// A keyword found in a chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Keyword {
    /// Matching form: lower-cased, stemmed words joined by one space (dates and numbers as
    /// normalised). Two keywords are the same node when their keys are equal.
    pub key: String,
    /// Display form as it first appeared in the text.
    pub display: String,
    /// What the keyword is.
    pub kind: KeywordKind,
    /// Relevance of the keyword in this chunk, in `(0, 1]`; higher is more relevant.
    pub weight: f32,
}

/// Keyword extraction and filtering settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeywordConfig {
    /// Keywords kept per chunk, best first.
    pub max_per_chunk: usize,
    /// Longest phrase candidate, in words.
    pub max_words: usize,
    /// Keywords found in more than this fraction of chunks are dropped.
    pub max_df: f32,
    /// Keys (or display forms) never dropped by the frequency filter.
    pub keep: Vec<String>,
}

impl Default for KeywordConfig {
    fn default() -> Self {
        Self { max_per_chunk: 12, max_words: 3, max_df: 0.03, keep: Vec::new() }
    }
}

/// Extracts the keywords of one chunk of text, best first, at most `config.max_per_chunk`.
pub fn extract(_text: &str, _config: &KeywordConfig, _analyzer: &Analyzer) -> Vec<Keyword> {
    unimplemented!("in progress")
}

/// Drops, from every chunk's list, keywords whose chunk frequency exceeds `config.max_df`
/// (unless kept by `config.keep`). Returns how many distinct keys were dropped.
pub fn filter_frequent(_per_chunk: &mut [Vec<Keyword>], _config: &KeywordConfig) -> usize {
    unimplemented!("in progress")
}
