//! BM25 (Okapi) over chunk texts: an inverted index with delta-coded postings.
//!
//! Score of chunk *d* for query *q* (Robertson/Lucene form):
//!
//! ```text
//! score(d, q) = Σ_{t ∈ q} idf(t) · tf(t,d)·(k1 + 1) / (tf(t,d) + k1·(1 − b + b·|d|/avgdl))
//! idf(t)      = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
//! ```
//!
//! A query term repeated in the query counts once per occurrence, as in Lucene. Terms come from
//! [`Analyzer`](crate::text::Analyzer): lower-cased, stop words removed, Snowball-stemmed.

use serde::{Deserialize, Serialize};

use super::{Scored, top_k};
use crate::{Error, Result};

/// BM25 parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bm25Params {
    /// Term-frequency saturation (default 0.9, as Anserini/Pyserini).
    pub k1: f32,
    /// Length normalisation in `[0, 1]` (default 0.4, as Anserini/Pyserini).
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Self { k1: 0.9, b: 0.4 }
    }
}

impl Bm25Params {
    /// Checks `k1 >= 0` and `0 <= b <= 1`.
    ///
    /// # Errors
    /// [`Error::Config`] naming the bad value.
    pub fn validate(&self) -> Result<()> {
        let k1_ok = self.k1 >= 0.0 && self.k1.is_finite();
        if !k1_ok || !(0.0..=1.0).contains(&self.b) {
            return Err(Error::Config(format!(
                "BM25 needs k1 >= 0 and 0 <= b <= 1 (got k1 {}, b {})",
                self.k1, self.b
            )));
        }
        Ok(())
    }
}

/// An inverted index: sorted term dictionary, postings (delta-coded chunk ids + term
/// frequencies), and chunk lengths.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bm25Index {
    params: Bm25Params,
    /// Sorted, distinct terms.
    terms: Vec<String>,
    /// `offsets[i]..offsets[i + 1]` are term `i`'s postings; `terms.len() + 1` entries.
    offsets: Vec<u32>,
    /// Chunk ids of each posting list, delta-coded (first absolute).
    chunks: Vec<u32>,
    /// Term frequencies, parallel to `chunks`.
    freqs: Vec<u32>,
    /// Length of each chunk in terms.
    lengths: Vec<u32>,
}

/// One query term's contribution to a chunk's score (for `--explain`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermScore {
    /// The analysed term.
    pub term: String,
    /// Its share of the BM25 score.
    pub score: f32,
}

impl Bm25Index {
    /// Indexes documents given as their analysed terms (`docs[i]` is chunk `i`).
    pub fn build<'a>(docs: impl IntoIterator<Item = &'a [String]>, params: Bm25Params) -> Self {
        let mut postings: std::collections::BTreeMap<&'a str, Vec<(u32, u32)>> =
            std::collections::BTreeMap::new();
        let mut lengths = Vec::new();
        for (chunk, terms) in docs.into_iter().enumerate() {
            let chunk = chunk as u32;
            lengths.push(terms.len() as u32);
            let mut sorted: Vec<&str> = terms.iter().map(String::as_str).collect();
            sorted.sort_unstable();
            for run in sorted.chunk_by(|a, b| a == b) {
                postings.entry(run[0]).or_default().push((chunk, run.len() as u32));
            }
        }
        let mut index = Self {
            params,
            terms: Vec::with_capacity(postings.len()),
            offsets: Vec::with_capacity(postings.len() + 1),
            chunks: Vec::new(),
            freqs: Vec::new(),
            lengths,
        };
        index.offsets.push(0);
        for (term, list) in postings {
            index.terms.push(term.to_owned());
            let mut previous = 0;
            for (chunk, freq) in list {
                index.chunks.push(chunk - previous);
                index.freqs.push(freq);
                previous = chunk;
            }
            index.offsets.push(index.chunks.len() as u32);
        }
        index
    }

    /// The parameters the index scores with.
    pub fn params(&self) -> Bm25Params {
        self.params
    }

    /// Number of indexed chunks.
    pub fn len(&self) -> usize {
        self.lengths.len()
    }

    /// Whether no chunk is indexed.
    pub fn is_empty(&self) -> bool {
        self.lengths.is_empty()
    }

    /// Number of distinct terms.
    pub fn vocabulary(&self) -> usize {
        self.terms.len()
    }

    /// Checks internal consistency (offsets monotonic and in range, chunk ids in range), so
    /// that searching a decoded index can never index out of bounds.
    ///
    /// # Errors
    /// [`Error::Decode`] describing the first inconsistency.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::Decode(format!("BM25 index: {what}")));
        if self.offsets.len() != self.terms.len() + 1 || self.offsets.first() != Some(&0) {
            return bad("offsets do not match the dictionary");
        }
        if self.chunks.len() != self.freqs.len()
            || self.offsets.last().map(|&o| o as usize) != Some(self.chunks.len())
            || self.offsets.windows(2).any(|w| w[0] > w[1])
        {
            return bad("postings do not match their offsets");
        }
        if self.terms.windows(2).any(|w| w[0] >= w[1]) {
            return bad("dictionary is not sorted");
        }
        for i in 0..self.terms.len() {
            let mut chunk = 0u64;
            for &delta in self.postings_raw(i) {
                chunk += u64::from(delta);
                if chunk >= self.lengths.len() as u64 {
                    return bad("posting points past the last chunk");
                }
            }
        }
        Ok(())
    }

    fn postings_raw(&self, term: usize) -> &[u32] {
        &self.chunks[self.offsets[term] as usize..self.offsets[term + 1] as usize]
    }

    /// The dictionary: sorted, distinct terms.
    pub(crate) fn terms(&self) -> &[String] {
        &self.terms
    }

    /// Length in terms of each chunk.
    pub(crate) fn lengths(&self) -> &[u32] {
        &self.lengths
    }

    /// `(chunk, tf)` postings of dictionary entry `term`, by chunk.
    pub(crate) fn postings(&self, term: usize) -> impl Iterator<Item = (u32, u32)> + '_ {
        let range = self.offsets[term] as usize..self.offsets[term + 1] as usize;
        let mut chunk = 0u32;
        self.chunks[range.clone()].iter().zip(&self.freqs[range]).map(move |(&delta, &tf)| {
            chunk = chunk.wrapping_add(delta);
            (chunk, tf)
        })
    }

    fn lookup(&self, term: &str) -> Option<usize> {
        self.terms.binary_search_by(|t| t.as_str().cmp(term)).ok()
    }

    /// The mean chunk length (at least 1).
    pub(crate) fn avg_length(&self) -> f32 {
        let total: u64 = self.lengths.iter().map(|&l| u64::from(l)).sum();
        (total as f32 / self.lengths.len().max(1) as f32).max(1.0)
    }

    fn idf(&self, df: usize) -> f32 {
        idf(self.lengths.len(), df)
    }

    fn term_score(&self, idf: f32, tf: u32, length: u32, avgdl: f32) -> f32 {
        term_score(self.params, idf, tf, length, avgdl)
    }

    /// The `k` best chunks for analysed query `terms`, among chunks for which `allow` holds.
    pub fn search(&self, terms: &[String], k: usize, allow: impl Fn(u32) -> bool) -> Vec<Scored> {
        let avgdl = self.avg_length();
        let mut scores = vec![0f32; self.lengths.len()];
        let mut touched = Vec::new();
        for term in terms {
            let Some(t) = self.lookup(term) else { continue };
            let idf = self.idf(self.postings_raw(t).len());
            for (chunk, tf) in self.postings(t) {
                let slot = &mut scores[chunk as usize];
                if *slot == 0.0 {
                    touched.push(chunk);
                }
                *slot += self.term_score(idf, tf, self.lengths[chunk as usize], avgdl);
            }
        }
        let candidates = touched
            .into_iter()
            .filter(|&c| allow(c))
            .map(|chunk| Scored { chunk, score: scores[chunk as usize] });
        top_k(candidates, k)
    }

    /// Each query term's contribution to `chunk`'s score (terms absent from it are left out).
    pub fn explain(&self, terms: &[String], chunk: u32) -> Vec<TermScore> {
        let Some(&length) = self.lengths.get(chunk as usize) else {
            return Vec::new();
        };
        let avgdl = self.avg_length();
        let mut out: Vec<TermScore> = Vec::new();
        for term in terms {
            let Some(t) = self.lookup(term) else { continue };
            let Some((_, tf)) = self.postings(t).find(|&(c, _)| c == chunk) else { continue };
            let score = self.term_score(self.idf(self.postings_raw(t).len()), tf, length, avgdl);
            match out.iter_mut().find(|s| s.term == *term) {
                Some(existing) => existing.score += score,
                None => out.push(TermScore { term: term.clone(), score }),
            }
        }
        out
    }
}

/// The inverse document frequency of a term in `df` of `n` chunks.
pub(crate) fn idf(n: usize, df: usize) -> f32 {
    let (n, df) = (n as f32, df as f32);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// A term's share of a chunk's score: `tf` occurrences in a chunk of `length` terms, the
/// corpus' mean length being `avgdl`.
pub(crate) fn term_score(params: Bm25Params, idf: f32, tf: u32, length: u32, avgdl: f32) -> f32 {
    let Bm25Params { k1, b } = params;
    let tf = tf as f32;
    idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * length as f32 / avgdl))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::text::Analyzer;

    fn index(texts: &[&str], params: Bm25Params) -> (Bm25Index, Analyzer) {
        let analyzer = Analyzer::new();
        let docs: Vec<Vec<String>> = texts.iter().map(|t| analyzer.terms(t)).collect();
        (Bm25Index::build(docs.iter().map(Vec::as_slice), params), analyzer)
    }

    #[test]
    fn scores_match_the_okapi_formula() {
        // Three SciFact-style sentences; hand-computed with N = 3, avgdl = 16/3.
        let texts = [
            "Vitamin D deficiency increases fracture risk.",
            "Fracture healing in elderly patients with osteoporosis and fracture history.",
            "Statins lower cholesterol.",
        ];
        let params = Bm25Params { k1: 1.2, b: 0.75 };
        let (idx, analyzer) = index(&texts, params);
        assert_eq!(idx.lengths, [6, 7, 3]);
        let hits = idx.search(&analyzer.terms("fractures"), 10, |_| true);
        let avgdl = 16.0f32 / 3.0;
        let idf = (1.0f32 + (3.0 - 2.0 + 0.5) / (2.0 + 0.5)).ln();
        let expect = |tf: f32, len: f32| idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * len / avgdl));
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].chunk, 1);
        assert!((hits[0].score - expect(2.0, 7.0)).abs() < 1e-6);
        assert!((hits[1].score - expect(1.0, 6.0)).abs() < 1e-6);
    }

    #[test]
    fn rarer_terms_weigh_more_and_filters_apply_before_ranking() {
        let texts = ["insulin resistance", "insulin secretion in mice", "mice and insulin", "mice"];
        let (idx, analyzer) = index(&texts, Bm25Params::default());
        let q = analyzer.terms("insulin secretion");
        let hits = idx.search(&q, 2, |_| true);
        assert_eq!(hits[0].chunk, 1);
        let filtered = idx.search(&q, 2, |c| c != 1);
        assert_eq!(filtered.len(), 2);
        assert!(filtered.iter().all(|h| h.chunk != 1));
        let explained = idx.explain(&q, 1);
        let total: f32 = explained.iter().map(|t| t.score).sum();
        assert!((total - hits[0].score).abs() < 1e-6);
        assert_eq!(explained.len(), 2);
    }

    #[test]
    fn unknown_terms_and_empty_queries_find_nothing() {
        let (idx, analyzer) = index(&["a small corpus"], Bm25Params::default());
        assert!(idx.search(&analyzer.terms("zebra"), 5, |_| true).is_empty());
        assert!(idx.search(&[], 5, |_| true).is_empty());
        idx.validate().unwrap();
    }

    #[test]
    fn validate_rejects_out_of_range_postings() {
        let (mut idx, _) = index(&["one two", "two three"], Bm25Params::default());
        idx.chunks[0] = 7;
        assert!(idx.validate().is_err());
    }
}
