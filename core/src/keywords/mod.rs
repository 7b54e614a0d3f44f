//! Keyword extraction per chunk: names, acronyms, YAKE-scored phrases, dates, numbers.
//!
//! Everything runs on the chunk's own text (no model, no corpus statistics), so it works the
//! same natively and in wasm:
//!
//! - **Names**: runs of capitalised words with connectors ("University of Warsaw"), not a
//!   lone sentence-initial word.
//! - **Acronyms**: `NASA`, `IL-6`, `COVID-19`, `mRNA`.
//! - **Phrases**: n-grams of up to [`KeywordConfig::max_words`] words inside one sentence, with
//!   no punctuation inside, not starting or ending with a stop word (inside only "of", "of
//!   the"), not cutting through a name, scored with YAKE.
//! - **Dates** and **numbers**, normalised (`2016-02-07`, `12345`); numbers are kept from 10
//!   up (at least two significant digits), `1,234.5` → `1234.5`.
//!
//! Names, acronyms and phrases share the YAKE score `S`, converted to a weight
//! `1 / (1 + log10(S / S_best) / 2)` relative to the chunk's best candidate.
//! Dates weigh [`DATE_WEIGHT`] and numbers [`NUMBER_WEIGHT`]: they carry no statistical
//! evidence, and numbers are the noisier of the two.
//!
//! A keyword's key is its words' analyzer terms (lower-cased, stemmed, stop words dropped)
//! joined by one space; hyphenated compounds count as their parts (`IL-6` → `il 6`); a single
//! letter other than "a" and "i" is kept as a word ("vitamin D" → `vitamin d`), although the
//! stop-word list contains some letters. When one kept key is a contiguous word sequence of
//! another with an equal or better weight, the contained one is dropped ("vitamin d" goes when
//! "vitamin d deficiency" scores better; both stay otherwise), except that a phrase never
//! removes a name or an acronym.

mod dates;
mod names;
mod tokens;
mod yake;

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use serde::{Deserialize, Serialize};

use self::tokens::{Token, is_acronym, tokenize};
use crate::text::Analyzer;

/// Weight of a date keyword.
pub const DATE_WEIGHT: f32 = 0.5;

/// Weight of a number keyword.
pub const NUMBER_WEIGHT: f32 = 0.3;

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
    /// Keywords found in more than this fraction of chunks are dropped (see
    /// [`filter_frequent`]). The default 0.03 comes from the seed design and is to be tuned
    /// on real corpora.
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
pub fn extract(text: &str, config: &KeywordConfig, analyzer: &Analyzer) -> Vec<Keyword> {
    let tokens = tokenize(text);
    let mut found = Vec::new();
    let excluded = literals(text, &tokens, &mut found);
    let keys: Vec<Option<String>> = tokens
        .iter()
        .zip(&excluded)
        .map(|(t, &skip)| (!skip && t.has_letter()).then(|| word_key(t.text, analyzer)).flatten())
        .collect();
    let mut candidates = Candidates::new(text, &tokens, &keys);
    let runs = names::name_runs(&tokens, &excluded);
    add_phrases(&mut candidates, &excluded, &runs, config.max_words);
    for run in runs {
        candidates.add(run, KeywordKind::Name);
    }
    for (i, token) in tokens.iter().enumerate() {
        if !excluded[i] && is_acronym(token.text) {
            candidates.add(i..i + 1, KeywordKind::Acronym);
        }
    }
    found.extend(candidates.score(&tokens, &keys));
    best_distinct(found, config.max_per_chunk)
}

/// Dates and numbers of `tokens`, added to `found`; returns which tokens they use.
fn literals(text: &str, tokens: &[Token<'_>], found: &mut Vec<Keyword>) -> Vec<bool> {
    let mut used = vec![false; tokens.len()];
    let mut i = 0;
    while i < tokens.len() {
        if let Some(date) = dates::date_at(tokens, i) {
            let end = date.start + date.len;
            let display = &text[tokens[i].start..tokens[end - 1].end];
            push_literal(found, date.key, display, KeywordKind::Date);
            used[i..end].fill(true);
            i = end;
            continue;
        }
        if let Some(key) = dates::number_key(tokens[i].text) {
            push_literal(found, key, tokens[i].text, KeywordKind::Number);
            used[i] = true;
        }
        i += 1;
    }
    used
}

/// Adds a date or number unless its key is already there.
fn push_literal(found: &mut Vec<Keyword>, key: String, display: &str, kind: KeywordKind) {
    if found.iter().any(|k| k.key == key) {
        return;
    }
    let weight = if kind == KeywordKind::Date { DATE_WEIGHT } else { NUMBER_WEIGHT };
    found.push(Keyword { key, display: display.to_owned(), kind, weight });
}

/// Adds every phrase n-gram: 1..=`max_words` tokens in one stretch without punctuation, dates
/// or numbers, starting and ending with a non-stop word, with no stop word inside but "of"
/// ("of the"), and not cutting through a name (`runs`).
fn add_phrases(
    candidates: &mut Candidates<'_>,
    excluded: &[bool],
    runs: &[Range<usize>],
    max_words: usize,
) {
    let (tokens, keys) = (candidates.tokens, candidates.keys);
    let inner = |j: usize| {
        let word = tokens[j].text;
        let joins_of = word == "of" || (word == "the" && tokens[j - 1].text == "of");
        !excluded[j]
            && tokens[j].has_letter()
            && !tokens[j].broken()
            && (keys[j].is_some() || joins_of)
    };
    let cuts_name = |span: &Range<usize>| {
        runs.iter().any(|r| {
            let overlaps = r.start < span.end && span.start < r.end;
            overlaps && (r.start < span.start || r.end > span.end)
        })
    };
    for start in 0..tokens.len() {
        if keys[start].is_none() {
            continue;
        }
        for end in start + 1..=(start + max_words).min(tokens.len()) {
            let last = end - 1;
            if last > start && !inner(last) {
                break;
            }
            if keys[last].is_some() && !cuts_name(&(start..end)) {
                candidates.add(start..end, KeywordKind::Phrase);
            }
        }
    }
}

/// The matching form of one word: its parts' analyzer terms joined by a space, `None` when
/// every part is a stop word. A single letter other than "a" and "i" is kept ("vitamin D"),
/// and an acronym's plural `s` is dropped (`GSCs` → `gsc`).
pub(crate) fn word_key(word: &str, analyzer: &Analyzer) -> Option<String> {
    let parts: Vec<String> = word.split('-').filter_map(|part| part_key(part, analyzer)).collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

fn part_key(part: &str, analyzer: &Analyzer) -> Option<String> {
    let mut chars = part.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if c.is_alphabetic() && !matches!(c, 'a' | 'A' | 'i' | 'I') => {
            Some(c.to_lowercase().collect())
        }
        _ => match part.strip_suffix('s') {
            Some(singular)
                if singular.len() >= 2 && tokens::casing(singular) == tokens::Casing::Caps =>
            {
                Some(singular.to_lowercase())
            }
            _ => analyzer.term(part),
        },
    }
}

/// One candidate key being collected: kind, first surface form and occurrences.
#[derive(Debug)]
struct Candidate {
    kind: KeywordKind,
    display: (usize, String),
    /// Token positions where the key occurs (distinct).
    starts: Vec<usize>,
    /// Token indices of the first occurrence.
    span: Range<usize>,
}

/// The candidates of a chunk by key.
struct Candidates<'a> {
    text: &'a str,
    tokens: &'a [Token<'a>],
    keys: &'a [Option<String>],
    by_key: HashMap<String, Candidate>,
}

impl<'a> Candidates<'a> {
    fn new(text: &'a str, tokens: &'a [Token<'a>], keys: &'a [Option<String>]) -> Self {
        Self { text, tokens, keys, by_key: HashMap::new() }
    }

    /// Records the tokens `span` as a candidate of `kind`; names and acronyms outrank phrases
    /// with the same key.
    fn add(&mut self, span: Range<usize>, kind: KeywordKind) {
        let words: Vec<&str> =
            self.keys[span.clone()].iter().flatten().map(String::as_str).collect();
        // A lone letter ("K" in "K(D)") is no keyword.
        if words.is_empty() || (words.len() == 1 && words[0].chars().nth(1).is_none()) {
            return;
        }
        let display = &self.text[self.tokens[span.start].start..self.tokens[span.end - 1].end];
        let entry = self.by_key.entry(words.join(" ")).or_insert_with(|| Candidate {
            kind,
            display: (span.start, display.to_owned()),
            starts: Vec::new(),
            span: span.clone(),
        });
        if !entry.starts.contains(&span.start) {
            entry.starts.push(span.start);
        }
        if span.start < entry.display.0 {
            entry.display = (span.start, display.to_owned());
        }
        if entry.kind == KeywordKind::Phrase {
            entry.kind = kind;
        }
    }

    /// The candidates as keywords weighted by their YAKE score relative to the chunk's best.
    fn score(self, tokens: &[Token<'_>], keys: &[Option<String>]) -> Vec<Keyword> {
        let word_scores = yake::word_scores(tokens, keys);
        let scored: Vec<(String, Candidate, f32)> = self
            .by_key
            .into_iter()
            .map(|(key, c)| {
                let words: Vec<f32> = keys[c.span.clone()]
                    .iter()
                    .flatten()
                    .filter_map(|k| word_scores.get(k).copied())
                    .collect();
                let score = yake::candidate_score(&words, c.starts.len());
                (key, c, score)
            })
            .collect();
        let best = scored.iter().map(|(_, _, s)| *s).fold(f32::INFINITY, f32::min);
        scored
            .into_iter()
            .map(|(key, c, score)| Keyword {
                key,
                display: c.display.1,
                kind: c.kind,
                weight: yake::weight(score, best),
            })
            .collect()
    }
}

/// Sorts best first, drops keys contained in a better kept key, keeps at most `max`.
///
/// A phrase never removes a name or an acronym ("quarterback Cam Newton" leaves "Cam Newton").
fn best_distinct(mut found: Vec<Keyword>, max: usize) -> Vec<Keyword> {
    found.sort_by(|a, b| b.weight.total_cmp(&a.weight).then_with(|| a.key.cmp(&b.key)));
    let mut kept: Vec<Keyword> = Vec::new();
    for keyword in found {
        if kept.len() == max {
            break;
        }
        let covered = kept.iter().any(|k| {
            let may_cover = k.kind == keyword.kind || keyword.kind == KeywordKind::Phrase;
            may_cover && contains_words(&k.key, &keyword.key)
        });
        if !covered {
            kept.push(keyword);
        }
    }
    kept
}

/// Whether the words of `inner` occur as a contiguous sequence in `outer`.
fn contains_words(outer: &str, inner: &str) -> bool {
    let outer: Vec<&str> = outer.split(' ').collect();
    let inner: Vec<&str> = inner.split(' ').collect();
    outer.windows(inner.len()).any(|w| w == inner.as_slice())
}

/// Drops, from every chunk's list, keywords whose chunk frequency exceeds `config.max_df`
/// (unless kept by `config.keep`). Returns how many distinct keys were dropped.
///
/// A keyword is dropped when it appears in more than `max(ceil(max_df · chunks), 2)`
/// chunks: the floor of 2 keeps small corpora from losing every keyword that links two chunks.
/// `config.keep` entries match a key or a display form, ignoring case.
pub fn filter_frequent(per_chunk: &mut [Vec<Keyword>], config: &KeywordConfig) -> usize {
    let limit = ((config.max_df * per_chunk.len() as f32).ceil() as usize).max(2);
    let keep: HashSet<String> = config.keep.iter().map(|k| k.to_lowercase()).collect();
    let mut frequency: HashMap<&str, usize> = HashMap::new();
    let mut protected: HashSet<&str> = HashSet::new();
    for chunk in per_chunk.iter() {
        let distinct: HashSet<&str> = chunk.iter().map(|k| k.key.as_str()).collect();
        for key in distinct {
            *frequency.entry(key).or_default() += 1;
        }
        for k in chunk {
            if keep.contains(&k.key.to_lowercase()) || keep.contains(&k.display.to_lowercase()) {
                protected.insert(&k.key);
            }
        }
    }
    let dropped: HashSet<String> = frequency
        .into_iter()
        .filter(|(key, n)| *n > limit && !protected.contains(key))
        .map(|(key, _)| key.to_owned())
        .collect();
    for chunk in per_chunk.iter_mut() {
        chunk.retain(|k| !dropped.contains(&k.key));
    }
    dropped.len()
}

/// The keys a query can match exactly, and its single words for looser matching.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct QueryKeys {
    /// Normalised dates and numbers, and every n-gram (up to [`MAX_QUERY_WORDS`] words) of
    /// the query's non-stop words within a stretch without punctuation.
    pub(crate) exact: Vec<String>,
    /// The distinct word terms of the query.
    pub(crate) words: Vec<String>,
}

/// Longest query n-gram matched against keys.
const MAX_QUERY_WORDS: usize = 6;

/// Analyses a query the way [`extract`] analyses chunks.
pub(crate) fn query_keys(query: &str, analyzer: &Analyzer) -> QueryKeys {
    let tokens = tokenize(query);
    let mut literal = Vec::new();
    let excluded = literals(query, &tokens, &mut literal);
    let mut out =
        QueryKeys { exact: literal.into_iter().map(|k| k.key).collect(), words: Vec::new() };
    let mut stretch: Vec<String> = Vec::new();
    for (token, skip) in tokens.iter().zip(excluded) {
        if token.broken() || skip || !token.has_letter() {
            add_ngrams(&mut out.exact, &stretch);
            stretch.clear();
        }
        if let Some(key) =
            (!skip && token.has_letter()).then(|| word_key(token.text, analyzer)).flatten()
        {
            stretch.push(key);
        }
    }
    add_ngrams(&mut out.exact, &stretch);
    for word in out.exact.iter().flat_map(|k| k.split(' ')) {
        if !out.words.iter().any(|w| w == word) && word.chars().any(char::is_alphabetic) {
            out.words.push(word.to_owned());
        }
    }
    out
}

fn add_ngrams(out: &mut Vec<String>, words: &[String]) {
    for n in 1..=MAX_QUERY_WORDS.min(words.len()) {
        for window in words.windows(n) {
            let key = window.join(" ");
            if !out.contains(&key) {
                out.push(key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keywords(text: &str) -> Vec<Keyword> {
        extract(
            text,
            &KeywordConfig { max_per_chunk: 50, ..KeywordConfig::default() },
            &Analyzer::new(),
        )
    }

    fn find<'a>(found: &'a [Keyword], display: &str) -> Option<&'a Keyword> {
        found.iter().find(|k| k.display == display)
    }

    /// SQuAD "Warsaw".
    const WARSAW: &str = "The University of Warsaw was established in 1816, when the partitions \
        of Poland separated Warsaw from the oldest and most influential Polish academic center, \
        in Kraków. The Warsaw University of Technology is the second academic school of \
        technology in the country, and one of the largest in East-Central Europe, employing \
        2,000 professors.";

    /// SQuAD "Super_Bowl_50".
    const SUPER_BOWL: &str = "The game was played on February 7, 2016, at Levi's Stadium in the \
        San Francisco Bay Area at Santa Clara, California. Pro Bowl quarterback Cam Newton had \
        one of his best seasons, throwing for 3,837 yards and rushing for 636, while recording a \
        career-high and league-leading 45 total touchdowns (35 passing, 10 rushing), a \
        career-low 10 interceptions, and a career-best quarterback rating of 99.4.";

    /// SciFact 275294.
    const VITAMIN_D: &str = "It is now recognized that vitamin D insufficiency and vitamin D \
        deficiency are common in elderly people, especially in those who are infirm and not \
        exposed to sunlight or who live at latitudes that do not provide them with \
        sunlight-mediated cholecalciferol during the winter months.";

    /// SciFact 164985 (first sentence) and 33370 (shortened).
    const CYTOKINES: &str = "The 4T1 cells stimulate de novo overexpression of Fra-1 in \
        RAW264.7 cells, and then Fra-1 binds to the interleukin 6 (IL-6) promoter to increase the \
        production of the cytokine IL-6 in RAW264.7 cells. A20 is overexpressed in GSCs at both \
        the mRNA and protein levels.";

    #[test]
    fn names_keep_connectors_and_skip_sentence_starts() {
        let found = keywords(WARSAW);
        let university = find(&found, "University of Warsaw").expect("name with a connector");
        assert_eq!(
            (university.key.as_str(), university.kind),
            ("univers warsaw", KeywordKind::Name)
        );
        let technology = find(&found, "Warsaw University of Technology").expect("long name");
        assert_eq!(technology.kind, KeywordKind::Name);
        assert_eq!(find(&found, "Kraków").map(|k| k.kind), Some(KeywordKind::Name));
        // "The" opens the sentence: it is neither a name nor part of one.
        assert!(found.iter().all(|k| !k.display.starts_with("The")));
    }

    #[test]
    fn acronyms_plain_mixed_and_hyphenated() {
        let found = keywords(CYTOKINES);
        for (display, key) in [("IL-6", "il 6"), ("mRNA", "mrna"), ("GSCs", "gsc")] {
            let k = find(&found, display).unwrap_or_else(|| panic!("{display} in {found:?}"));
            assert_eq!((k.key.as_str(), k.kind), (key, KeywordKind::Acronym), "{display}");
        }
        // The COVID-19 form, absent from SciFact (2020): written in its style.
        let found = keywords("Patients with COVID-19 had higher IL-6 levels.");
        assert_eq!(find(&found, "COVID-19").map(|k| k.kind), Some(KeywordKind::Acronym));
    }

    #[test]
    fn dates_and_numbers_are_normalised() {
        let found = keywords(SUPER_BOWL);
        let date = find(&found, "February 7, 2016").expect("date");
        assert_eq!(
            (date.key.as_str(), date.kind, date.weight),
            ("2016-02-07", KeywordKind::Date, DATE_WEIGHT)
        );
        // The year inside the date is not a number of its own.
        assert!(found.iter().all(|k| k.key != "2016"));
        let numbers: Vec<&str> = found
            .iter()
            .filter(|k| k.kind == KeywordKind::Number)
            .map(|k| k.key.as_str())
            .collect();
        for n in ["3837", "636", "45", "35", "10", "99.4"] {
            assert!(numbers.contains(&n), "{n} in {numbers:?}");
        }
        let found = keywords(WARSAW);
        assert_eq!(find(&found, "1816").map(|k| k.kind), Some(KeywordKind::Number));
        assert_eq!(find(&found, "2,000").map(|k| k.key.as_str()), Some("2000"));
    }

    #[test]
    fn key_is_stemmed_and_display_is_the_surface_form() {
        let found = keywords(VITAMIN_D);
        let k = find(&found, "vitamin D deficiency").expect("phrase");
        assert_eq!((k.key.as_str(), k.kind), ("vitamin d defici", KeywordKind::Phrase));
        assert_eq!(find(&found, "Levi's Stadium"), None);
        let found = keywords(SUPER_BOWL);
        assert_eq!(find(&found, "Levi's Stadium").map(|k| k.key.as_str()), Some("levi stadium"));
    }

    #[test]
    fn extraction_is_capped_sorted_and_in_range() {
        let config = KeywordConfig::default();
        for text in [WARSAW, SUPER_BOWL, VITAMIN_D, CYTOKINES] {
            let found = extract(text, &config, &Analyzer::new());
            assert!(!found.is_empty() && found.len() <= config.max_per_chunk);
            assert!(found.windows(2).all(|w| w[0].weight >= w[1].weight));
            assert!(found.iter().all(|k| k.weight > 0.0 && k.weight <= 1.0));
        }
        assert!(extract("", &config, &Analyzer::new()).is_empty());
        assert!(extract(" ,;. 7 ", &config, &Analyzer::new()).is_empty());
    }

    fn keyword(key: &str, kind: KeywordKind, weight: f32) -> Keyword {
        Keyword { key: key.into(), display: key.into(), kind, weight }
    }

    #[test]
    fn contained_keys_go_only_when_the_container_is_better() {
        let phrase = KeywordKind::Phrase;
        let kept = best_distinct(
            vec![keyword("vitamin d", phrase, 0.5), keyword("vitamin d defici", phrase, 0.9)],
            10,
        );
        assert_eq!(kept.len(), 1);
        assert_eq!(kept[0].key, "vitamin d defici");
        let kept = best_distinct(
            vec![keyword("vitamin d", phrase, 0.9), keyword("vitamin d defici", phrase, 0.5)],
            10,
        );
        assert_eq!(kept.len(), 2);
        // Words, not characters: "d defici" is contained, "itamin" is not.
        assert!(contains_words("vitamin d defici", "d defici"));
        assert!(!contains_words("vitamin d defici", "itamin"));
        // A phrase does not remove a name.
        let kept = best_distinct(
            vec![
                keyword("quarterback cam newton", phrase, 0.9),
                keyword("cam newton", KeywordKind::Name, 0.5),
            ],
            10,
        );
        assert_eq!(kept.len(), 2);
    }

    #[test]
    fn frequent_keywords_are_dropped_unless_kept() {
        let name = KeywordKind::Name;
        let mut per_chunk: Vec<Vec<Keyword>> = (0..10)
            .map(|i| {
                let mut chunk =
                    vec![keyword("warsaw", name, 0.9), keyword(&format!("topic {i}"), name, 0.8)];
                if i < 3 {
                    chunk.push(keyword("vistula", name, 0.7));
                }
                if i < 2 {
                    chunk.push(keyword("polish academi", name, 0.6));
                }
                chunk
            })
            .collect();
        // 10 chunks: limit max(ceil(0.03 · 10), 2) = 2.
        let config = KeywordConfig { keep: vec!["VISTULA".into()], ..KeywordConfig::default() };
        let mut copy = per_chunk.clone();
        assert_eq!(filter_frequent(&mut copy, &config), 1);
        assert!(copy.iter().all(|c| c.iter().all(|k| k.key != "warsaw")));
        assert_eq!(copy.iter().filter(|c| c.iter().any(|k| k.key == "vistula")).count(), 3);
        assert_eq!(copy.iter().filter(|c| c.iter().any(|k| k.key == "polish academi")).count(), 2);
        assert_eq!(filter_frequent(&mut per_chunk, &KeywordConfig::default()), 2);
    }

    #[test]
    fn queries_are_analysed_like_chunks() {
        let q = query_keys(
            "When did the University of Warsaw open on 15 December 1999?",
            &Analyzer::new(),
        );
        assert!(q.exact.contains(&"univers warsaw".to_owned()));
        assert!(q.exact.contains(&"1999-12-15".to_owned()));
        assert!(q.words.contains(&"warsaw".to_owned()));
    }
}
