//! YAKE word and candidate scores (Campos et al., "YAKE! Keyword extraction from single
//! documents using multiple local features", Information Sciences 2020).
//!
//! Each word `w` (by key) gets five features from the chunk alone:
//! casing `max(TF_caps, TF_capitalised) / (1 + ln TF)`, position `ln(ln(3 + median
//! sentence))`, frequency `TF / (mean TF + sd TF)`, relatedness `1 + (DL + DR) · TF / max TF`
//! (DL, DR: distinct left/right neighbours over all neighbours) and sentence spread
//! `sentences with w / sentences`, combined as
//! `S(w) = rel · pos / (casing + freq / rel + spread / rel)`. A candidate scores
//! `S(kw) = ∏ S(w) / (TF(kw) · (1 + Σ S(w)))` over its non-stop words; lower is better.
//! Stop words inside a candidate are ignored (the paper's bigram-probability term is left out).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::tokens::{Casing, Token, casing, is_acronym};

/// Occurrence counts of one word.
#[derive(Debug, Default)]
struct WordCounts<'a> {
    tf: u32,
    capitalised: u32,
    acronym: u32,
    sentences: Vec<usize>,
    left: Vec<&'a str>,
    right: Vec<&'a str>,
}

/// `S(w)` for every word key of the chunk; `keys[i]` is the key of `tokens[i]` (`None` for
/// stop words, numbers and dates, which only serve as context).
pub(crate) fn word_scores(tokens: &[Token<'_>], keys: &[Option<String>]) -> HashMap<String, f32> {
    let counts = count_words(tokens, keys);
    let n_sentences = tokens.last().map_or(1, |t| t.sentence + 1) as f32;
    let tfs: Vec<f32> = counts.values().map(|c| c.tf as f32).collect();
    let mean = tfs.iter().sum::<f32>() / tfs.len().max(1) as f32;
    let sd =
        (tfs.iter().map(|tf| (tf - mean).powi(2)).sum::<f32>() / tfs.len().max(1) as f32).sqrt();
    let max_tf = tfs.iter().copied().fold(1.0, f32::max);
    counts
        .into_iter()
        .map(|(key, c)| {
            let tf = c.tf as f32;
            let casing = c.capitalised.max(c.acronym) as f32 / (1.0 + ln(tf));
            let position = ln(ln(3.0 + median(&c.sentences)));
            let frequency = tf / (mean + sd);
            let relatedness = 1.0 + (diversity(&c.left) + diversity(&c.right)) * tf / max_tf;
            let spread = distinct(&c.sentences) as f32 / n_sentences;
            let score =
                relatedness * position / (casing + frequency / relatedness + spread / relatedness);
            (key.to_owned(), score)
        })
        .collect()
}

/// The score of a candidate with non-stop word scores `words` occurring `tf` times.
pub(crate) fn candidate_score(words: &[f32], tf: usize) -> f32 {
    let product: f32 = words.iter().product();
    let sum: f32 = words.iter().sum();
    product / (tf.max(1) as f32 * (1.0 + sum))
}

/// Converts a YAKE score (lower is better, > 0) to a weight in `(0, 1]` relative to the best
/// score of the chunk: `1 / (1 + log10(score / best) / 2)`. The best candidate weighs 1, one
/// scoring 10× worse 2/3, 100× worse 1/2 (scores of a chunk span several orders of magnitude).
pub(crate) fn weight(score: f32, best: f32) -> f32 {
    let ratio = (score / best).max(1.0);
    if ratio.is_finite() { 1.0 / (1.0 + libm::log10f(ratio) / 2.0) } else { f32::MIN_POSITIVE }
}

/// The natural logarithm, computed the same way on every target: the platform's `ln` may
/// differ in the last bit (glibc natively, Rust's libm on wasm32), and keyword weights are
/// stored in the bundle, which must come out byte-identical wherever it is built.
fn ln(x: f32) -> f32 {
    libm::logf(x)
}

/// Counts per word key, in key order (so sums over them are reproducible).
fn count_words<'a>(
    tokens: &[Token<'a>],
    keys: &'a [Option<String>],
) -> BTreeMap<&'a str, WordCounts<'a>> {
    let mut counts: BTreeMap<&str, WordCounts<'_>> = BTreeMap::new();
    for (i, (token, key)) in tokens.iter().zip(keys).enumerate() {
        let Some(key) = key else { continue };
        let c = counts.entry(key.as_str()).or_default();
        c.tf += 1;
        c.sentences.push(token.sentence);
        if is_acronym(token.text) {
            c.acronym += 1;
        } else if casing(token.text) == Casing::Title && !token.first {
            c.capitalised += 1;
        }
        if i > 0 && !token.broken() {
            c.left.push(tokens[i - 1].text);
        }
        if let Some(next) = tokens.get(i + 1).filter(|t| !t.broken()) {
            c.right.push(next.text);
        }
    }
    counts
}

/// Distinct neighbours over all neighbours (0 without neighbours).
fn diversity(neighbours: &[&str]) -> f32 {
    if neighbours.is_empty() {
        return 0.0;
    }
    let distinct: HashSet<String> = neighbours.iter().map(|w| w.to_lowercase()).collect();
    distinct.len() as f32 / neighbours.len() as f32
}

fn distinct(sentences: &[usize]) -> usize {
    sentences.iter().collect::<HashSet<_>>().len()
}

/// Median of the (ascending) sentence indices.
fn median(sentences: &[usize]) -> f32 {
    match sentences.len() {
        0 => 0.0,
        n if n % 2 == 1 => sentences[n / 2] as f32,
        n => (sentences[n / 2 - 1] + sentences[n / 2]) as f32 / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_scores_prefer_frequent_and_good_words() {
        assert!(candidate_score(&[0.1], 3) < candidate_score(&[0.1], 1));
        assert!(candidate_score(&[0.1, 0.2], 1) < candidate_score(&[0.5, 0.2], 1));
        assert!((weight(0.01, 0.01) - 1.0).abs() < f32::EPSILON);
        assert!((weight(1.0, 0.01) - 0.5).abs() < 1e-6);
        assert!(weight(1e30, 1e-30) > 0.0);
    }
}
