//! Tokens of a chunk: words with their sentence, the gap before them and their casing.

use crate::text;

/// One word of the text, hyphenated compounds with a letter (`IL-6`, `COVID-19`,
/// `diet-induced`) joined into one token.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Token<'a> {
    /// The word as written.
    pub(crate) text: &'a str,
    /// Byte offset of the word's start.
    pub(crate) start: usize,
    /// Byte offset of the word's end.
    pub(crate) end: usize,
    /// The text between the previous token and this one (empty for the first token).
    pub(crate) gap: &'a str,
    /// Index of the token's sentence.
    pub(crate) sentence: usize,
    /// Whether the token opens its sentence.
    pub(crate) first: bool,
}

impl Token<'_> {
    /// Whether punctuation or a sentence start separates this token from the previous one,
    /// so no phrase or name may span it.
    pub(crate) fn broken(&self) -> bool {
        self.first || !self.gap.trim().is_empty()
    }

    /// Whether the token contains a letter.
    pub(crate) fn has_letter(&self) -> bool {
        self.text.chars().any(char::is_alphabetic)
    }
}

/// How a word is capitalised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Casing {
    /// No letters at all (`2016`).
    NoLetters,
    /// Only lower-case letters.
    Lower,
    /// One capital followed by lower-case letters (`Warsaw`).
    Title,
    /// Only capitals (`NASA`, `D`, `COVID-19`).
    Caps,
    /// Anything else (`mRNA`, `GSCs`, `McDonald`).
    Mixed,
}

/// The casing class of `word`.
pub(crate) fn casing(word: &str) -> Casing {
    let mut letters = word.chars().filter(|c| c.is_alphabetic());
    let Some(first) = letters.next() else {
        return Casing::NoLetters;
    };
    let (mut upper, mut lower) = (0, 0);
    for c in letters {
        if c.is_uppercase() {
            upper += 1;
        } else {
            lower += 1;
        }
    }
    match (first.is_uppercase(), upper, lower) {
        (true, _, 0) => Casing::Caps,
        (true, 0, _) => Casing::Title,
        (false, 0, _) => Casing::Lower,
        _ => Casing::Mixed,
    }
}

/// Whether `word` is an acronym: all capitals with 2–6 letters (`NASA`, `IL-6`, `COVID-19`),
/// or mixed case with more capitals than lower-case letters and at most 8 letters (`mRNA`,
/// `GSCs`). Longer all-capital words are headings (`BACKGROUND`), not acronyms.
pub(crate) fn is_acronym(word: &str) -> bool {
    let letters = word.chars().filter(|c| c.is_alphabetic()).count();
    let upper = word.chars().filter(|c| c.is_uppercase()).count();
    match casing(word) {
        Casing::Caps => (2..=6).contains(&letters),
        Casing::Mixed => upper >= 2 && upper * 2 > letters && letters <= 8,
        _ => false,
    }
}

/// Whether `word` is an all-capitals heading such as `BACKGROUND` or `METHODS` (more than 6
/// letters), after which the next word is treated like a sentence start.
pub(crate) fn is_heading(word: &str) -> bool {
    casing(word) == Casing::Caps && word.chars().filter(|c| c.is_alphabetic()).count() > 6
}

/// Splits `text` into tokens, in order.
pub(crate) fn tokenize(text: &str) -> Vec<Token<'_>> {
    let sentences = text::sentences(text);
    let mut tokens: Vec<Token<'_>> = Vec::new();
    let mut sentence = 0;
    for (start, word) in text::words(text) {
        while sentences.get(sentence).is_some_and(|s| s.end <= start) {
            sentence += 1;
        }
        let prev_end = tokens.last().map_or(0, |t| t.end);
        let gap = &text[prev_end..start];
        if let Some(last) = tokens.last_mut().filter(|t| joins(t.text, gap, word)) {
            last.end = start + word.len();
            last.text = &text[last.start..last.end];
            continue;
        }
        let first = tokens.last().is_none_or(|t| t.sentence != sentence);
        tokens.push(Token { text: word, start, end: start + word.len(), gap, sentence, first });
    }
    tokens
}

/// Whether `next` continues the hyphenated compound `prev` (`IL` `-` `6`): a bare hyphen
/// between them and a letter on at least one side, so number ranges stay apart.
fn joins(prev: &str, gap: &str, next: &str) -> bool {
    let has_letter = |s: &str| s.chars().any(char::is_alphabetic);
    gap == "-" && (has_letter(prev) || has_letter(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compounds_are_joined_and_ranges_are_not() {
        // SciFact 164985 (shortened) and a number range.
        let text = "the cytokine IL-6 in RAW264.7 cells, 1939-1945.";
        let words: Vec<&str> = tokenize(text).iter().map(|t| t.text).collect();
        assert_eq!(words, ["the", "cytokine", "IL-6", "in", "RAW264.7", "cells", "1939", "1945"]);
    }

    #[test]
    fn casing_classes() {
        assert_eq!(casing("Warsaw"), Casing::Title);
        assert_eq!(casing("NASA"), Casing::Caps);
        assert_eq!(casing("mRNA"), Casing::Mixed);
        assert_eq!(casing("2016"), Casing::NoLetters);
        assert!(is_acronym("mRNA") && is_acronym("COVID-19") && is_acronym("IL-6"));
        assert!(is_acronym("GSCs") && !is_acronym("McDonald") && !is_acronym("BACKGROUND"));
        assert!(!is_acronym("D") && is_heading("BACKGROUND"));
    }
}
