//! Proper names: runs of capitalised words, possibly joined by connectors ("University of
//! Warsaw", "Ludwig van Beethoven"), within a sentence and without punctuation inside.
//!
//! A run may not start with a stop word ("The Broncos" → "Broncos") or a single letter, and a
//! single word that opens a sentence (or follows an all-capitals heading such as `BACKGROUND`)
//! is not a name: it is capitalised because of its position. All-capitals headings are never
//! part of a name.

use std::ops::Range;

use super::tokens::{Casing, Token, casing, is_acronym, is_heading};
use crate::text::is_stop_word;

/// Lower-case words allowed inside a name, before another capitalised word.
const CONNECTORS: &[&str] =
    &["da", "de", "del", "della", "der", "di", "du", "la", "le", "of", "the", "van", "von"];

/// At most this many connectors in a row ("of the").
const MAX_CONNECTORS: usize = 2;

/// Longest name, in tokens (connectors included).
const MAX_NAME_TOKENS: usize = 8;

/// The token ranges of the names in `tokens`; `excluded[i]` marks tokens already used
/// (dates). Single-token acronyms are left to the acronym rule.
pub(crate) fn name_runs(tokens: &[Token<'_>], excluded: &[bool]) -> Vec<Range<usize>> {
    let usable = |i: usize| excluded.get(i) == Some(&false) && !tokens[i].broken();
    let mut runs = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if excluded[i] || !can_start(tokens[i].text) {
            i += 1;
            continue;
        }
        let mut end = i + 1;
        while end - i < MAX_NAME_TOKENS {
            match continuation(tokens, end, &usable) {
                Some(next) => end = next,
                None => break,
            }
        }
        if is_name(tokens, i..end) {
            runs.push(i..end);
        }
        i = end;
    }
    runs
}

/// The end of the name part starting at `tokens[at]` (a capitalised word, or connectors
/// followed by one), if the name continues there.
fn continuation(tokens: &[Token<'_>], at: usize, usable: &impl Fn(usize) -> bool) -> Option<usize> {
    let mut j = at;
    while j - at < MAX_CONNECTORS && usable(j) && CONNECTORS.contains(&tokens[j].text) {
        j += 1;
    }
    (usable(j) && is_name_part(tokens[j].text)).then_some(j + 1)
}

/// Whether a run is kept: several words, or one word not capitalised by its position.
fn is_name(tokens: &[Token<'_>], run: Range<usize>) -> bool {
    if run.len() > 1 {
        return true;
    }
    let i = run.start;
    let after_heading = i > 0 && is_heading(tokens[i - 1].text);
    !is_acronym(tokens[i].text) && !tokens[i].first && !after_heading
}

/// Whether `word` may start a name: a name part of two letters or more, not a stop word.
fn can_start(word: &str) -> bool {
    is_name_part(word)
        && word.chars().filter(|c| c.is_alphabetic()).count() >= 2
        && !is_stop_word(&word.to_lowercase())
}

/// Whether `word` may be part of a name: TitleCase, capitals (not a heading), or an acronym.
fn is_name_part(word: &str) -> bool {
    match casing(word) {
        Casing::Title => true,
        Casing::Caps => !is_heading(word),
        Casing::Mixed => is_acronym(word),
        Casing::Lower | Casing::NoLetters => false,
    }
}

#[cfg(test)]
mod tests {
    use super::super::tokens::tokenize;
    use super::*;

    fn names(text: &str) -> Vec<&str> {
        let tokens = tokenize(text);
        let excluded = vec![false; tokens.len()];
        name_runs(&tokens, &excluded)
            .into_iter()
            .map(|r| &text[tokens[r.start].start..tokens[r.end - 1].end])
            .collect()
    }

    #[test]
    fn names_with_connectors() {
        // SQuAD "Warsaw".
        let text = "The University of Warsaw was established in 1816, when the partitions of \
                    Poland separated Warsaw from the oldest and most influential Polish academic \
                    center, in Kraków.";
        assert_eq!(names(text), ["University of Warsaw", "Poland", "Warsaw", "Polish", "Kraków"]);
        let text = "most notably the Polish Academy of Sciences and the University of Warsaw";
        assert_eq!(names(text), ["Polish Academy of Sciences", "University of Warsaw"]);
    }

    #[test]
    fn sentence_initial_single_words_and_headings_are_not_names() {
        // SciFact 3034412.
        let text = "BACKGROUND Calcium absorption is generally considered to be impaired under \
                    conditions of vitamin D deficiency. Pro Bowl quarterback Cam Newton had one \
                    of his best seasons.";
        assert_eq!(names(text), ["Pro Bowl", "Cam Newton"]);
    }
}
