//! SIMILAR_TO edges: keywords whose key words overlap, or whose embeddings are close.
//!
//! Similarity is the Dice coefficient of the two keys' word sets, `2·|A∩B| / (|A|+|B|)`:
//! "vitamin d" ~ "vitamin d defici" 0.8, "vitamin" ~ "vitamin d" 0.67. Candidates come from an
//! index word → keywords, so only keywords sharing a word are compared; words shared by more
//! than [`MAX_SHARED`] keywords ("cell", "patient") are too common to say two keywords are
//! alike and are skipped. Dates and numbers take no part. Each keyword keeps at most
//! `max_similar` edges: candidate pairs are taken best first while both ends have room.
//!
//! Semantic similarity ([`semantic`]) is the cosine of the keywords' embeddings; neighbours
//! come from a [`DenseIndex`] over the keyword vectors (exact search, or HNSW for many).

use std::collections::HashMap;

use super::{GraphConfig, KeywordNode, Similarity};
use crate::index::dense::{DenseIndex, DenseParams, Quantization};
use crate::keywords::KeywordKind;
use crate::{Error, Result};

/// Seed of the keyword vectors' HNSW layer assignment (fixed for reproducible builds).
const SEMANTIC_SEED: u64 = 0x6b65_7977_6f72_6473;

/// Words contained in more keywords than this do not make keywords similar.
const MAX_SHARED: usize = 256;

/// The distinct words of a key.
pub(super) fn key_words(key: &str) -> Vec<&str> {
    let mut words: Vec<&str> = key.split(' ').filter(|w| !w.is_empty()).collect();
    words.sort_unstable();
    words.dedup();
    words
}

/// The SIMILAR_TO edges of `keywords`, sorted by `(a, b)`.
pub(super) fn similarities(keywords: &[KeywordNode], config: &GraphConfig) -> Vec<Similarity> {
    let words: Vec<Vec<&str>> = keywords
        .iter()
        .map(|k| match k.kind {
            KeywordKind::Date | KeywordKind::Number => Vec::new(),
            _ => key_words(&k.key),
        })
        .collect();
    let mut postings: HashMap<&str, Vec<u32>> = HashMap::new();
    for (i, ws) in words.iter().enumerate() {
        for w in ws {
            postings.entry(w).or_default().push(i as u32);
        }
    }
    postings.retain(|_, ids| ids.len() <= MAX_SHARED);
    let mut candidates = Vec::new();
    let mut shared = vec![0u32; keywords.len()];
    for a in 0..words.len() {
        candidates.extend(best_partners(a as u32, &words, &postings, &mut shared, config));
    }
    limit_degree(candidates, keywords.len(), config.max_similar)
}

/// The up to `max_similar` most similar keywords of `a` at or above the threshold, as pairs
/// with the smaller index first. `shared` is a zeroed scratch counter per keyword, left zeroed.
fn best_partners(
    a: u32,
    words: &[Vec<&str>],
    postings: &HashMap<&str, Vec<u32>>,
    shared: &mut [u32],
    config: &GraphConfig,
) -> Vec<Similarity> {
    let mut touched: Vec<u32> = Vec::new();
    for w in &words[a as usize] {
        for &b in postings.get(w).into_iter().flatten().filter(|&&b| b != a) {
            if shared[b as usize] == 0 {
                touched.push(b);
            }
            shared[b as usize] += 1;
        }
    }
    let size_a = words[a as usize].len();
    let mut found: Vec<Similarity> = touched
        .into_iter()
        .filter_map(|b| {
            let common = std::mem::take(&mut shared[b as usize]);
            let score = 2.0 * common as f32 / (size_a + words[b as usize].len()) as f32;
            (score >= config.similar_threshold).then(|| Similarity {
                a: a.min(b),
                b: a.max(b),
                score,
            })
        })
        .collect();
    found.sort_by(|x, y| y.score.total_cmp(&x.score).then_with(|| (x.a, x.b).cmp(&(y.a, y.b))));
    found.truncate(config.max_similar);
    found
}

/// For each keyword of `ids`, its up to `max_similar` nearest other keywords of `ids` whose
/// embeddings (`vectors`, row `i` belonging to `ids[i]`) have a cosine of at least
/// `threshold`, as pairs with the smaller index first (a pair may appear twice).
pub(super) fn semantic(
    ids: &[u32],
    vectors: &[f32],
    threshold: f32,
    max_similar: usize,
) -> Result<Vec<Similarity>> {
    if ids.is_empty() || max_similar == 0 {
        return Ok(Vec::new());
    }
    if !vectors.len().is_multiple_of(ids.len()) {
        return Err(Error::Config(format!(
            "{} keyword vector values are not one row per keyword ({})",
            vectors.len(),
            ids.len()
        )));
    }
    let dim = vectors.len() / ids.len();
    let params = DenseParams { quantization: Quantization::F32, ..DenseParams::default() };
    let index = DenseIndex::build(vectors, dim, params, SEMANTIC_SEED)?;
    let mut found = Vec::new();
    for (row, &a) in ids.iter().enumerate() {
        let query = &vectors[row * dim..(row + 1) * dim];
        for hit in index.search(query, max_similar + 1, |_| true)? {
            let b = ids[hit.chunk as usize];
            if b != a && hit.score >= threshold {
                let score = hit.score.min(1.0);
                found.push(Similarity { a: a.min(b), b: a.max(b), score });
            }
        }
    }
    Ok(found)
}

/// Keeps candidate pairs best first while both keywords have fewer than `max` edges.
/// A pair listed more than once counts with its best score.
pub(super) fn limit_degree(
    mut candidates: Vec<Similarity>,
    keywords: usize,
    max: usize,
) -> Vec<Similarity> {
    candidates.sort_by(|x, y| (x.a, x.b).cmp(&(y.a, y.b)).then(y.score.total_cmp(&x.score)));
    candidates.dedup_by_key(|s| (s.a, s.b));
    candidates
        .sort_by(|x, y| y.score.total_cmp(&x.score).then_with(|| (x.a, x.b).cmp(&(y.a, y.b))));
    let mut degree = vec![0usize; keywords];
    let mut kept: Vec<Similarity> = candidates
        .into_iter()
        .filter(|s| {
            let room = degree[s.a as usize] < max && degree[s.b as usize] < max;
            if room {
                degree[s.a as usize] += 1;
                degree[s.b as usize] += 1;
            }
            room
        })
        .collect();
    kept.sort_by_key(|s| (s.a, s.b));
    kept
}
