//! Graph retrieval.
//!
//! 1. **Match**: the query is analysed like a chunk ([`query_keys`]); its n-grams, dates and
//!    numbers that equal a keyword key match with quality 1. Loose matches get
//!    `FUZZY · worth / words in the keyword` ([`FUZZY`]): keywords containing a query word
//!    (worth 1), or a word sharing a prefix of at least [`PREFIX`] characters with it (worth
//!    [`PREFIX_WORTH`]; stemming misses such as "immunolog" ~ "immunology").
//! 2. **Score**: a chunk scores `Σ idf(k) · weight(k, chunk) · quality(k)` over the exactly
//!    matched keywords `k` it contains, plus, per query word, the best such term among its
//!    loosely matched keywords; `idf(k) = ln(1 + chunks / chunk frequency)`.
//! 3. **Primary**: the best `primary` chunks, at hop 0.
//! 4. **Expand**: breadth-first for up to `max_depth` hops, from each chunk to the chunks
//!    sharing a matched keyword (or a SIMILAR_TO neighbour of one, scaled by the similarity),
//!    scaled by the keyword's weight in the reached chunk, and to the chunks before and after
//!    it in its document; each hop multiplies the score by `decay`. A chunk keeps its best
//!    score. Fan-out is bounded: at most [`FAN_OUT`] chunks per keyword and the best
//!    `max(primary, k)` chunks of a hop go on to the next.
//!
//! Expansion through the query's own keywords finds more about what the query names. A
//! multi-hop question ("when was the university that publishes The Collegian founded?") also
//! needs the chunk about an entity the query does not name but a first-hop chunk does
//! ("Houston Baptist University"). [`GraphIndex::bridge`] follows such bridge entities from
//! the best chunks of a first retrieval (see its docs); hybrid search fuses its scores in.

use std::collections::HashMap;

use super::{GraphIndex, GraphSearch, KeywordGraph, similar};
use crate::index::Scored;
use crate::keywords::{KeywordKind, query_keys};
use crate::text::Analyzer;

/// Highest quality of a loose (non-exact) keyword match.
const FUZZY: f32 = 0.5;

/// Shortest shared prefix, in characters, for two different words to match loosely.
const PREFIX: usize = 5;

/// Relative worth of a prefix match of a word against an exact word match.
const PREFIX_WORTH: f32 = 0.6;

/// Most keywords matched loosely through one query word; a word contained in more keywords
/// than this is too common to match loosely.
const MAX_LOOSE: usize = 256;

/// Most chunks followed from one keyword during expansion (the ones it weighs most in).
const FAN_OUT: usize = 32;

/// A chunk found by graph retrieval.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphHit {
    /// Chunk index.
    pub chunk: u32,
    /// Graph score (higher is better).
    pub score: f32,
    /// Indices of the query-matched keywords that led to this chunk.
    pub keywords: Vec<u32>,
    /// Hops from a primary chunk (0 = primary).
    pub hops: u8,
}

/// The keywords a query matched.
#[derive(Debug, Default)]
struct Matches {
    /// Keyword → quality 1 (the key equals a query n-gram, date or number).
    exact: HashMap<u32, f32>,
    /// Keywords sharing a query word (or a long prefix of one).
    loose: Vec<LooseMatch>,
}

/// A keyword matched through one query word.
#[derive(Debug)]
struct LooseMatch {
    /// Index of the query word.
    query_word: u32,
    keyword: u32,
    /// `FUZZY · worth / words in the keyword`.
    quality: f32,
}

impl GraphIndex {
    /// Chunks for `query`, best first, at most `k`, among the chunks `allow` accepts (others
    /// may still be passed through during expansion). A query matching no keyword finds
    /// nothing.
    pub fn search(
        &self,
        graph: &KeywordGraph,
        query: &str,
        analyzer: &Analyzer,
        k: usize,
        options: &GraphSearch,
        allow: &dyn Fn(u32) -> bool,
    ) -> Vec<GraphHit> {
        let matches = self.match_keywords(graph, query, analyzer);
        self.search_matches(graph, &matches, k, options, allow)
    }

    /// As [`GraphIndex::search`], starting from the given keywords (indices into
    /// [`KeywordGraph::keywords`], for instance chosen by an LLM) as exact matches instead of
    /// the query's own. Unknown indices are ignored.
    pub fn search_keywords(
        &self,
        graph: &KeywordGraph,
        keywords: &[u32],
        k: usize,
        options: &GraphSearch,
        allow: &dyn Fn(u32) -> bool,
    ) -> Vec<GraphHit> {
        let known = keywords.iter().filter(|&&kw| (kw as usize) < graph.keywords.len());
        let matches = Matches { exact: known.map(|&kw| (kw, 1.0)).collect(), loose: Vec::new() };
        self.search_matches(graph, &matches, k, options, allow)
    }

    /// The keywords `query` matches, best first: exact matches (quality 1), then loose ones
    /// by quality; ties by index.
    pub fn matched_keywords(
        &self,
        graph: &KeywordGraph,
        query: &str,
        analyzer: &Analyzer,
    ) -> Vec<(u32, f32)> {
        let matches = self.match_keywords(graph, query, analyzer);
        let mut all: Vec<(u32, f32)> = matches.exact.into_iter().collect();
        for m in matches.loose {
            match all.iter_mut().find(|(k, _)| *k == m.keyword) {
                Some(found) => found.1 = found.1.max(m.quality),
                None => all.push((m.keyword, m.quality)),
            }
        }
        all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all
    }

    fn search_matches(
        &self,
        graph: &KeywordGraph,
        matches: &Matches,
        k: usize,
        options: &GraphSearch,
        allow: &dyn Fn(u32) -> bool,
    ) -> Vec<GraphHit> {
        if k == 0 || (matches.exact.is_empty() && matches.loose.is_empty()) {
            return Vec::new();
        }
        let direct = self.direct_scores(graph, matches);
        let mut primary: Vec<GraphHit> = direct
            .into_iter()
            .filter(|(chunk, _)| allow(*chunk))
            .map(|(chunk, (score, keywords))| GraphHit { chunk, score, keywords, hops: 0 })
            .collect();
        sort_hits(&mut primary);
        primary.truncate(options.primary);
        let related = self.related_keywords(matches);
        let mut hits = self.expand(primary, &related, options, k);
        hits.retain(|h| allow(h.chunk));
        sort_hits(&mut hits);
        hits.truncate(k);
        hits
    }

    /// Chunks one bridge entity away from `seeds` (the best chunks of a first retrieval, best
    /// first, scores higher-is-better), best first, among the chunks `allow` accepts.
    ///
    /// A bridge is a name in a seed chunk that the query did not match; it leads to the chunks
    /// containing it or a keyword SIMILAR_TO it ("University of Warsaw" → "Warsaw"). Acronyms
    /// are not bridges: in abstracts they are mostly shared jargon ("BMI", "RCT"), and following
    /// them cost SciFact 0.005 nDCG@10 without helping MuSiQue.
    /// Through bridge `b` in seed `s` and keyword `n` (`b` itself, similarity 1), chunk `c`
    /// scores `seed(s) · w(b, s) · sim(b, n) · w(n, c) · idf(n)`, with `seed(s)` the seed's
    /// score relative to the best seed and `w` a keyword's weight in a chunk; a chunk keeps its
    /// best path. At most [`FAN_OUT`] chunks are followed per keyword.
    pub fn bridge(
        &self,
        graph: &KeywordGraph,
        query: &str,
        analyzer: &Analyzer,
        seeds: &[Scored],
        allow: &dyn Fn(u32) -> bool,
    ) -> Vec<Scored> {
        let matches = self.match_keywords(graph, query, analyzer);
        let named =
            |k: u32| matches.exact.contains_key(&k) || matches.loose.iter().any(|m| m.keyword == k);
        let kind = |k: u32| graph.keywords.get(k as usize).map(|node| node.kind);
        let best = seeds.iter().map(|s| s.score).fold(f32::NEG_INFINITY, f32::max);
        let total = self.chunks.max(1) as f32;
        let mut reached: HashMap<u32, f32> = HashMap::new();
        for seed in seeds {
            let relative = if best > 0.0 { (seed.score / best).max(0.0) } else { 1.0 };
            for (bridge, weight) in self.keywords_of(seed.chunk) {
                if kind(bridge) != Some(KeywordKind::Name) || named(bridge) {
                    continue;
                }
                let leads = std::iter::once((bridge, 1.0)).chain(self.similar_to(bridge).filter(
                    |&(n, _)| {
                        !named(n)
                            && !matches!(kind(n), Some(KeywordKind::Date | KeywordKind::Number))
                    },
                ));
                for (keyword, similarity) in leads {
                    let chunks = graph.keywords[keyword as usize].chunks.max(1) as f32;
                    let idf = (1.0 + total / chunks).ln();
                    let mut targets: Vec<(u32, f32)> = self
                        .chunks_of(keyword)
                        .filter(|&(c, _)| c != seed.chunk && allow(c))
                        .collect();
                    targets.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                    for (chunk, there) in targets.into_iter().take(FAN_OUT) {
                        let score = relative * weight * similarity * there * idf;
                        let entry = reached.entry(chunk).or_default();
                        *entry = entry.max(score);
                    }
                }
            }
        }
        let mut hits: Vec<Scored> =
            reached.into_iter().map(|(chunk, score)| Scored { chunk, score }).collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk)));
        hits
    }

    /// The query's keyword matches.
    fn match_keywords(&self, graph: &KeywordGraph, query: &str, analyzer: &Analyzer) -> Matches {
        let query = query_keys(query, analyzer);
        let mut matches = Matches::default();
        for key in &query.exact {
            if let Ok(i) = graph.keywords.binary_search_by(|k| k.key.as_str().cmp(key)) {
                matches.exact.insert(i as u32, 1.0);
            }
        }
        for (word, query_word) in query.words.iter().zip(0..) {
            for (keyword, worth) in self.loose_matches(word) {
                if matches.exact.contains_key(&keyword) {
                    continue;
                }
                let Some(node) = graph.keywords.get(keyword as usize) else {
                    continue;
                };
                let quality = FUZZY * worth / similar::key_words(&node.key).len().max(1) as f32;
                matches.loose.push(LooseMatch { query_word, keyword, quality });
            }
        }
        matches
    }

    /// Keywords containing `word` (worth 1), then keywords with a word sharing a long prefix
    /// with it (worth [`PREFIX_WORTH`]); at most [`MAX_LOOSE`], and none through a word in
    /// more keywords than that.
    fn loose_matches(&self, word: &str) -> Vec<(u32, f32)> {
        let mut found: Vec<(u32, f32)> = self.postings(word).iter().map(|&k| (k, 1.0)).collect();
        let prefix: String = word.chars().take(PREFIX).collect();
        if prefix.chars().count() == PREFIX {
            let start = self.words.partition_point(|(w, _)| w.as_str() < prefix.as_str());
            let similar = self.words[start..]
                .iter()
                .take_while(|(w, _)| w.starts_with(&prefix))
                .filter(|(w, ids)| w != word && ids.len() <= MAX_LOOSE)
                .flat_map(|(_, ids)| ids.iter().map(|&k| (k, PREFIX_WORTH)));
            found.extend(similar.take(MAX_LOOSE.saturating_sub(found.len())));
        }
        found
    }

    /// The keywords containing exactly `word` (none when it is in too many).
    fn postings(&self, word: &str) -> &[u32] {
        match self.words.binary_search_by(|(w, _)| w.as_str().cmp(word)) {
            Ok(i) if self.words[i].1.len() <= MAX_LOOSE => &self.words[i].1,
            _ => &[],
        }
    }

    /// Chunk → (score, matched keywords it contains). Exact matches add up; loose matches
    /// count once per query word and chunk (the best), so a chunk full of keywords sharing
    /// one query word does not outscore a chunk matching several.
    fn direct_scores(
        &self,
        graph: &KeywordGraph,
        matches: &Matches,
    ) -> HashMap<u32, (f32, Vec<u32>)> {
        let total = self.chunks.max(1) as f32;
        let idf = |keyword: u32| {
            let frequency = graph.keywords.get(keyword as usize).map_or(1, |k| k.chunks.max(1));
            (1.0 + total / frequency as f32).ln()
        };
        let mut scores: HashMap<u32, (f32, Vec<u32>)> = HashMap::new();
        let mut exact: Vec<(u32, f32)> = matches.exact.iter().map(|(&k, &q)| (k, q)).collect();
        exact.sort_unstable_by_key(|&(k, _)| k);
        for (keyword, quality) in exact {
            for (chunk, weight) in self.chunks_of(keyword) {
                let entry = scores.entry(chunk).or_default();
                entry.0 += idf(keyword) * weight * quality;
                entry.1.push(keyword);
            }
        }
        // Matches come grouped by query word, in query order; each word adds its best term
        // once per chunk, so the additions to a chunk happen in a reproducible order.
        for group in matches.loose.chunk_by(|x, y| x.query_word == y.query_word) {
            let mut best: HashMap<u32, f32> = HashMap::new();
            for m in group {
                for (chunk, weight) in self.chunks_of(m.keyword) {
                    let score = best.entry(chunk).or_default();
                    *score = score.max(idf(m.keyword) * weight * m.quality);
                    let entry = scores.entry(chunk).or_default();
                    if !entry.1.contains(&m.keyword) {
                        entry.1.push(m.keyword);
                    }
                }
            }
            for (chunk, score) in best {
                scores.entry(chunk).or_default().0 += score;
            }
        }
        scores
    }

    /// Keywords expansion may pass through, with a strength: the matched ones (their match
    /// quality) and their SIMILAR_TO neighbours (quality × similarity).
    fn related_keywords(&self, matches: &Matches) -> HashMap<u32, f32> {
        let mut related = matches.exact.clone();
        for m in &matches.loose {
            let entry = related.entry(m.keyword).or_insert(m.quality);
            *entry = entry.max(m.quality);
        }
        let matched: Vec<(u32, f32)> = related.iter().map(|(&k, &q)| (k, q)).collect();
        for (keyword, quality) in matched {
            for (other, similarity) in self.similar_to(keyword) {
                let strength = quality * similarity;
                let entry = related.entry(other).or_insert(strength);
                *entry = entry.max(strength);
            }
        }
        related
    }

    /// Breadth-first expansion from the primary hits; returns every reached chunk.
    fn expand(
        &self,
        primary: Vec<GraphHit>,
        related: &HashMap<u32, f32>,
        options: &GraphSearch,
        k: usize,
    ) -> Vec<GraphHit> {
        let width = options.primary.max(k);
        let mut frontier: Vec<u32> = primary.iter().map(|h| h.chunk).collect();
        let mut reached: HashMap<u32, GraphHit> =
            primary.into_iter().map(|h| (h.chunk, h)).collect();
        for hop in 1..=options.max_depth {
            let mut next: Vec<(f32, u32)> = Vec::new();
            for chunk in frontier {
                let Some(from) = reached.get(&chunk).cloned() else {
                    continue;
                };
                for (to, strength) in self.links(chunk, related) {
                    let score = from.score * options.decay * strength;
                    let better = reached.get(&to).is_none_or(|hit| score > hit.score);
                    if better {
                        let keywords = from.keywords.clone();
                        reached.insert(to, GraphHit { chunk: to, score, keywords, hops: hop });
                        next.push((score, to));
                    }
                }
            }
            next.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            next.dedup_by_key(|n| n.1);
            // Not `into_iter()`: rustc 1.95 (LLVM) vectorises that in-place collect of
            // `(f32, u32)` into `u32` with a load past the end of the buffer (found by fuzzing).
            frontier = next.iter().take(width).map(|&(_, c)| c).collect();
        }
        reached.into_values().collect()
    }

    /// The chunks one hop from `chunk`, with the link strength: through each related keyword
    /// of the chunk to the [`FAN_OUT`] chunks it weighs most in (strength × weight there), and
    /// to the chunks before and after it (strength 1).
    fn links(&self, chunk: u32, related: &HashMap<u32, f32>) -> Vec<(u32, f32)> {
        let mut links: Vec<(u32, f32)> =
            self.neighbours_in_document(chunk).map(|c| (c, 1.0)).collect();
        for (keyword, _) in self.keywords_of(chunk) {
            let Some(&strength) = related.get(&keyword) else {
                continue;
            };
            let mut targets: Vec<(u32, f32)> =
                self.chunks_of(keyword).filter(|&(c, _)| c != chunk).collect();
            targets.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            links.extend(targets.into_iter().take(FAN_OUT).map(|(c, w)| (c, strength * w)));
        }
        links
    }
}

/// Best score first, then lower chunk index.
fn sort_hits(hits: &mut [GraphHit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk)));
}
