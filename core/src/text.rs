//! Text analysis shared by every stage: words, sentences, stop words and stemming.
//!
//! One analyzer is used for BM25 terms, keyword matching and graph lookups, so a word is
//! normalised the same way wherever it is compared.

use std::ops::Range;

use rust_stemmers::{Algorithm, Stemmer};
use unicode_segmentation::UnicodeSegmentation;

/// English stop words: the NLTK list without the fragments of contractions (`don`, `ll`, `s`,
/// single letters), which Unicode word segmentation never produces and which would drop real
/// terms such as the `D` of "vitamin D". Sorted for binary search.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether a lower-cased word is an English stop word.
pub fn is_stop_word(lower: &str) -> bool {
    STOP_WORDS.binary_search(&lower).is_ok()
}

/// The words of `text` with their byte offsets (Unicode word boundaries, UAX #29).
///
/// Punctuation and whitespace are skipped; `don't`, `3.14` and `COVID-19`'s parts come out as
/// the standard segmentation defines them.
pub fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.unicode_word_indices()
}

/// Abbreviations after which a period does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "al", "approx", "cf", "co", "corp", "dept", "dr", "e.g", "eg", "eq", "est", "et", "etc", "fig",
    "figs", "i.e", "ie", "inc", "jr", "ltd", "mr", "mrs", "ms", "no", "nos", "p", "pp", "prof",
    "ref", "refs", "sr", "st", "vol", "vs",
];

/// Sentence byte ranges of `text`, trimmed of surrounding whitespace, in order.
///
/// Based on Unicode sentence boundaries (UAX #29), then re-joined where a boundary follows a
/// common abbreviation (`e.g.`, `Fig.`, `et al.`) or a single-letter initial (`J. Smith`),
/// which the Unicode rules cannot know about.
pub fn sentences(text: &str) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut glue = false;
    for (start, segment) in text.split_sentence_bound_indices() {
        let trimmed_start = segment.len() - segment.trim_start().len();
        let body = segment.trim();
        if body.is_empty() {
            continue;
        }
        let range = start + trimmed_start..start + trimmed_start + body.len();
        match out.last_mut() {
            Some(last) if glue => last.end = range.end,
            _ => out.push(range),
        }
        glue = ends_with_abbreviation(body);
    }
    out
}

fn ends_with_abbreviation(sentence: &str) -> bool {
    let Some(stem) = sentence.strip_suffix('.') else {
        return false;
    };
    let last = stem.rsplit(|c: char| c.is_whitespace() || c == '(').next().unwrap_or(stem);
    let mut letters = last.chars();
    if let (Some(c), None) = (letters.next(), letters.next()) {
        return c.is_uppercase();
    }
    let lower = last.to_lowercase();
    ABBREVIATIONS.binary_search(&lower.as_str()).is_ok()
}

/// Turns text into index terms: lower-cased, stop words removed, stemmed (Snowball English).
///
/// The analyzer is cheap to create and to clone; it is `Send + Sync`.
pub struct Analyzer {
    stemmer: Stemmer,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Analyzer(english)")
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Self { stemmer: Stemmer::create(Algorithm::English) }
    }
}

impl Analyzer {
    /// Creates the English analyzer.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stems one lower-cased word.
    pub fn stem(&self, lower: &str) -> String {
        self.stemmer.stem(lower).into_owned()
    }

    /// Normalises one word for matching: lower-case, possessive `'s` removed, stemmed.
    /// Returns `None` for stop words.
    pub fn term(&self, word: &str) -> Option<String> {
        let lower = word.to_lowercase();
        let lower = lower.strip_suffix("'s").or_else(|| lower.strip_suffix("’s")).unwrap_or(&lower);
        if lower.is_empty() || is_stop_word(lower) {
            return None;
        }
        Some(self.stem(lower))
    }

    /// The index terms of `text`, in order, duplicates kept.
    pub fn terms(&self, text: &str) -> Vec<String> {
        words(text).filter_map(|(_, w)| self.term(w)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_lists_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(ABBREVIATIONS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn terms_drop_stop_words_and_stem() {
        let a = Analyzer::new();
        assert_eq!(
            a.terms("The cats were running to the Hospital's doors."),
            ["cat", "run", "hospit", "door"]
        );
    }

    #[test]
    fn sentences_respect_abbreviations_and_initials() {
        let text = "Vitamin D was studied by J. Smith et al. in 2004. Results, e.g. in Fig. 2, were \
                    mixed.  A third sentence?  Yes!";
        let got: Vec<&str> = sentences(text).into_iter().map(|r| &text[r]).collect();
        assert_eq!(
            got,
            [
                "Vitamin D was studied by J. Smith et al. in 2004.",
                "Results, e.g. in Fig. 2, were mixed.",
                "A third sentence?",
                "Yes!",
            ]
        );
    }

    #[test]
    fn sentences_of_blank_text_are_empty() {
        assert!(sentences(" \n\t ").is_empty());
    }
}
