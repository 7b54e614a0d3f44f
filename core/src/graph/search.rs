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

use std::collections::{HashMap, HashSet};
use std::future::Future;

use super::data::{ChunkLinks, GraphData, KeywordInfo, WordEntry, WordProbe};
use super::similar;
use super::{GraphIndex, GraphSearch, KeywordGraph};
use crate::Result;
use crate::index::{FastMap, Scored};
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
pub(crate) const MAX_LOOSE: usize = 256;

/// Most chunks followed from one keyword during expansion (the ones it weighs most in).
const FAN_OUT: usize = 32;

/// A chunk found by graph retrieval.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphHit {
    /// Chunk: its index in memory, its address in a paged bundle.
    pub chunk: u32,
    /// Graph score (higher is better).
    pub score: f32,
    /// Indices of the query-matched keywords that led to this chunk.
    pub keywords: Vec<u32>,
    /// Hops from a primary chunk (0 = primary).
    pub hops: u8,
}

/// What a graph search starts from.
#[derive(Clone, Copy)]
pub(crate) enum Start<'a> {
    /// The keywords a query matches.
    Query(&'a str, &'a Analyzer),
    /// Given keywords, as exact matches.
    Keywords(&'a [u32]),
}

/// The keywords a query matched.
#[derive(Debug, Default)]
struct Matches {
    /// Keyword → quality 1 (the key equals a query n-gram, date or number).
    exact: HashMap<u32, f32>,
    /// Keywords sharing a query word (or a long prefix of one).
    loose: Vec<LooseMatch>,
    /// The nodes of the matched keywords.
    nodes: HashMap<u32, KeywordInfo>,
}

impl Matches {
    fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.loose.is_empty()
    }

    fn contains(&self, keyword: u32) -> bool {
        self.exact.contains_key(&keyword) || self.loose.iter().any(|m| m.keyword == keyword)
    }

    /// The matched keywords, each once, by index.
    fn keywords(&self) -> Vec<u32> {
        let loose = self.loose.iter().map(|m| m.keyword);
        sorted_unique(self.exact.keys().copied().chain(loose))
    }
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

/// The APPEARS_IN lists read so far, each sorted by weight (best first), then chunk.
type Lists = HashMap<u32, Vec<(u32, f32)>>;

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
        let start = Start::Query(query, analyzer);
        in_memory(search(&self.data(graph), start, k, options, allow))
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
        in_memory(search(&self.data(graph), Start::Keywords(keywords), k, options, allow))
    }

    /// The keywords `query` matches, best first: exact matches (quality 1), then loose ones
    /// by quality; ties by index.
    pub fn matched_keywords(
        &self,
        graph: &KeywordGraph,
        query: &str,
        analyzer: &Analyzer,
    ) -> Vec<(u32, f32)> {
        in_memory(matched_keywords(&self.data(graph), query, analyzer))
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
        in_memory(bridge(&self.data(graph), query, analyzer, seeds, allow))
    }
}

/// The output of a search over the graph in memory, whose reads are ready at once and never
/// fail ([`super::data::InMemory`]).
fn in_memory<T>(search: impl Future<Output = Result<T>>) -> T {
    match crate::bundle::paged::ready_now(search) {
        Some(Ok(output)) => output,
        _ => unreachable!("reads of the graph in memory are ready at once and never fail"),
    }
}

/// Graph retrieval over `data` (see the [module docs](self)): chunks best first, at most `k`,
/// among the chunks `allow` accepts.
pub(crate) async fn search<D: GraphData>(
    data: &D,
    start: Start<'_>,
    k: usize,
    options: &GraphSearch,
    allow: &dyn Fn(u32) -> bool,
) -> Result<Vec<GraphHit>> {
    let matches = match start {
        Start::Query(query, analyzer) => match_keywords(data, query, analyzer).await?,
        Start::Keywords(keywords) => {
            let nodes = data.keywords(&sorted_unique(keywords.iter().copied())).await?;
            let exact = nodes.keys().map(|&k| (k, 1.0)).collect();
            Matches { exact, loose: Vec::new(), nodes }
        }
    };
    if k == 0 || matches.is_empty() {
        return Ok(Vec::new());
    }
    let mut lists = Lists::new();
    read_lists(data, &mut lists, &matches.keywords()).await?;
    let direct = direct_scores(data.chunk_count(), &matches, &lists);
    let mut primary: Vec<GraphHit> = direct
        .into_iter()
        .filter(|(chunk, _)| allow(*chunk))
        .map(|(chunk, (score, keywords))| GraphHit { chunk, score, keywords, hops: 0 })
        .collect();
    sort_hits(&mut primary);
    primary.truncate(options.primary);
    let related = related_keywords(&matches);
    let mut hits = expand(data, &mut lists, primary, &related, options, k).await?;
    hits.retain(|h| allow(h.chunk));
    sort_hits(&mut hits);
    hits.truncate(k);
    Ok(hits)
}

/// The keywords `query` matches in `data`, as [`GraphIndex::matched_keywords`] lists them.
pub(crate) async fn matched_keywords<D: GraphData>(
    data: &D,
    query: &str,
    analyzer: &Analyzer,
) -> Result<Vec<(u32, f32)>> {
    let matches = match_keywords(data, query, analyzer).await?;
    let mut all: Vec<(u32, f32)> = matches.exact.into_iter().collect();
    for m in matches.loose {
        match all.iter_mut().find(|(k, _)| *k == m.keyword) {
            Some(found) => found.1 = found.1.max(m.quality),
            None => all.push((m.keyword, m.quality)),
        }
    }
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    Ok(all)
}

/// Chunks one bridge entity away from `seeds`, as [`GraphIndex::bridge`] finds them.
pub(crate) async fn bridge<D: GraphData>(
    data: &D,
    query: &str,
    analyzer: &Analyzer,
    seeds: &[Scored],
    allow: &dyn Fn(u32) -> bool,
) -> Result<Vec<Scored>> {
    let matches = match_keywords(data, query, analyzer).await?;
    let links = data.links(&sorted_unique(seeds.iter().map(|s| s.chunk))).await?;
    // The keywords of the seeds that may be bridges: their names, where the links tell them.
    let mut in_seeds: Vec<u32> = Vec::new();
    for link in links.values() {
        match &link.names {
            Some(names) => in_seeds.extend(names),
            None => in_seeds.extend(link.keywords.iter().map(|&(k, _)| k)),
        }
    }
    in_seeds.retain(|&k| !matches.contains(k));
    let mut nodes = data.keywords(&sorted_unique(in_seeds)).await?;
    let is_bridge = |k: u32, nodes: &HashMap<u32, KeywordInfo>| {
        nodes.get(&k).is_some_and(|n| n.kind == KeywordKind::Name) && !matches.contains(k)
    };
    let similar =
        nodes.iter().filter(|&(&k, _)| is_bridge(k, &nodes)).flat_map(|(_, n)| &n.similar);
    let unread: Vec<u32> = similar.map(|&(n, _)| n).filter(|n| !nodes.contains_key(n)).collect();
    nodes.extend(data.keywords(&sorted_unique(unread)).await?);
    let leads_of = |bridge: u32| {
        let similar = nodes[&bridge].similar.iter().copied().filter(|&(n, _)| {
            let kind = nodes.get(&n).map(|node| node.kind);
            !matches.contains(n) && !matches!(kind, Some(KeywordKind::Date | KeywordKind::Number))
        });
        std::iter::once((bridge, 1.0)).chain(similar).filter(|(n, _)| nodes.contains_key(n))
    };
    let mut leads: Vec<u32> = Vec::new();
    for link in links.values() {
        for &(k, _) in link.keywords.iter().filter(|&&(k, _)| is_bridge(k, &nodes)) {
            leads.extend(leads_of(k).map(|(n, _)| n));
        }
    }
    let mut lists = Lists::new();
    read_lists(data, &mut lists, &sorted_unique(leads)).await?;

    let best = seeds.iter().map(|s| s.score).fold(f32::NEG_INFINITY, f32::max);
    let total = data.chunk_count().max(1) as f32;
    let mut reached: FastMap<u32, f32> = FastMap::default();
    for seed in seeds {
        let relative = if best > 0.0 { (seed.score / best).max(0.0) } else { 1.0 };
        let Some(link) = links.get(&seed.chunk) else {
            continue;
        };
        for &(bridge, weight) in link.keywords.iter().filter(|&&(k, _)| is_bridge(k, &nodes)) {
            for (keyword, similarity) in leads_of(bridge) {
                let idf = (1.0 + total / nodes[&keyword].chunks.max(1) as f32).ln();
                let targets = lists.get(&keyword).into_iter().flatten();
                let targets = targets.filter(|&&(c, _)| c != seed.chunk && allow(c));
                for &(chunk, there) in targets.take(FAN_OUT) {
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
    Ok(hits)
}

/// The query's keyword matches, with the matched keywords' nodes.
async fn match_keywords<D: GraphData>(
    data: &D,
    query: &str,
    analyzer: &Analyzer,
) -> Result<Matches> {
    let query = query_keys(query, analyzer);
    let prefixes: Vec<String> =
        query.words.iter().map(|w| w.chars().take(PREFIX).collect()).collect();
    let probes: Vec<WordProbe<'_>> = query
        .words
        .iter()
        .zip(&prefixes)
        .map(|(word, prefix)| match prefix.chars().count() == PREFIX {
            true => WordProbe { text: prefix, prefix: true },
            false => WordProbe { text: word, prefix: false },
        })
        .collect();
    // Read together: the keys the query names and the words it holds.
    let (exact, entries) =
        futures_util::future::join(data.find(&query.exact), data.words(&probes, MAX_LOOSE)).await;
    let exact: HashMap<u32, f32> = exact?.into_iter().map(|k| (k, 1.0)).collect();
    let entries = entries?;
    let mut loose: Vec<(u32, u32, f32)> = Vec::new();
    for ((word, query_word), entries) in query.words.iter().zip(0..).zip(&entries) {
        for (keyword, worth) in loose_matches(word, entries) {
            if !exact.contains_key(&keyword) {
                loose.push((query_word, keyword, worth));
            }
        }
    }
    let matched = exact.keys().copied().chain(loose.iter().map(|m| m.1));
    let nodes = data.keywords(&sorted_unique(matched)).await?;
    let loose = loose
        .into_iter()
        .filter_map(|(query_word, keyword, worth)| {
            let words = similar::key_words(&nodes.get(&keyword)?.key).len().max(1);
            Some(LooseMatch { query_word, keyword, quality: FUZZY * worth / words as f32 })
        })
        .collect();
    Ok(Matches { exact, loose, nodes })
}

/// Keywords containing `word` (worth 1), then keywords with a word sharing a long prefix with
/// it (worth [`PREFIX_WORTH`]); at most [`MAX_LOOSE`], and none through a word in more
/// keywords than that. `entries` are the word index's entries of `word`'s probe.
fn loose_matches(word: &str, entries: &[WordEntry]) -> Vec<(u32, f32)> {
    let usable = |ids: &Vec<u32>| ids.len() <= MAX_LOOSE;
    let exact = entries.iter().find(|(w, ids)| w == word && usable(ids));
    let mut found: Vec<(u32, f32)> =
        exact.into_iter().flat_map(|(_, ids)| ids.iter().map(|&k| (k, 1.0))).collect();
    let prefix: String = word.chars().take(PREFIX).collect();
    if prefix.chars().count() == PREFIX {
        let similar = entries
            .iter()
            .filter(|(w, ids)| w != word && w.starts_with(&prefix) && usable(ids))
            .flat_map(|(_, ids)| ids.iter().map(|&k| (k, PREFIX_WORTH)));
        found.extend(similar.take(MAX_LOOSE.saturating_sub(found.len())));
    }
    found
}

/// Reads the APPEARS_IN lists of those of `keywords` not in `lists` yet, sorted as [`Lists`].
async fn read_lists<D: GraphData>(data: &D, lists: &mut Lists, keywords: &[u32]) -> Result<()> {
    let unread: Vec<u32> = keywords.iter().copied().filter(|k| !lists.contains_key(k)).collect();
    if unread.is_empty() {
        return Ok(());
    }
    for (keyword, mut list) in data.appearances(&unread).await? {
        list.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        lists.insert(keyword, list);
    }
    Ok(())
}

/// Chunk → (score, matched keywords it contains). Exact matches add up; loose matches count
/// once per query word and chunk (the best), so a chunk full of keywords sharing one query
/// word does not outscore a chunk matching several.
fn direct_scores(chunks: u32, matches: &Matches, lists: &Lists) -> FastMap<u32, (f32, Vec<u32>)> {
    let total = chunks.max(1) as f32;
    let idf = |keyword: u32| {
        let frequency = matches.nodes.get(&keyword).map_or(1, |k| k.chunks.max(1));
        (1.0 + total / frequency as f32).ln()
    };
    let list = |keyword: u32| lists.get(&keyword).into_iter().flatten().copied();
    let mut scores: FastMap<u32, (f32, Vec<u32>)> = FastMap::default();
    let mut exact: Vec<(u32, f32)> = matches.exact.iter().map(|(&k, &q)| (k, q)).collect();
    exact.sort_unstable_by_key(|&(k, _)| k);
    for (keyword, quality) in exact {
        for (chunk, weight) in list(keyword) {
            let entry = scores.entry(chunk).or_default();
            entry.0 += idf(keyword) * weight * quality;
            entry.1.push(keyword);
        }
    }
    // Matches come grouped by query word, in query order; each word adds its best term once
    // per chunk, so the additions to a chunk happen in a reproducible order.
    for group in matches.loose.chunk_by(|x, y| x.query_word == y.query_word) {
        let mut best: FastMap<u32, f32> = FastMap::default();
        for m in group {
            for (chunk, weight) in list(m.keyword) {
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
fn related_keywords(matches: &Matches) -> HashMap<u32, f32> {
    let mut related = matches.exact.clone();
    for m in &matches.loose {
        let entry = related.entry(m.keyword).or_insert(m.quality);
        *entry = entry.max(m.quality);
    }
    let matched: Vec<(u32, f32)> = related.iter().map(|(&k, &q)| (k, q)).collect();
    for (keyword, quality) in matched {
        let similar = matches.nodes.get(&keyword).into_iter().flat_map(|n| &n.similar);
        for &(other, similarity) in similar {
            let strength = quality * similarity;
            let entry = related.entry(other).or_insert(strength);
            *entry = entry.max(strength);
        }
    }
    related
}

/// Breadth-first expansion from the primary hits; returns every reached chunk.
async fn expand<D: GraphData>(
    data: &D,
    lists: &mut Lists,
    primary: Vec<GraphHit>,
    related: &HashMap<u32, f32>,
    options: &GraphSearch,
    k: usize,
) -> Result<Vec<GraphHit>> {
    let width = options.primary.max(k);
    let mut frontier: Vec<u32> = primary.iter().map(|h| h.chunk).collect();
    let mut reached: FastMap<u32, GraphHit> = primary.into_iter().map(|h| (h.chunk, h)).collect();
    for hop in 1..=options.max_depth {
        if frontier.is_empty() {
            break;
        }
        let links = data.links(&sorted_unique(frontier.iter().copied())).await?;
        let followed = links.values().flat_map(|l| l.keywords.iter().map(|&(k, _)| k));
        read_lists(data, lists, &sorted_unique(followed.filter(|k| related.contains_key(k))))
            .await?;
        let mut next: Vec<(f32, u32)> = Vec::new();
        for chunk in frontier {
            let (Some(from), Some(link)) = (reached.get(&chunk).cloned(), links.get(&chunk)) else {
                continue;
            };
            for (to, strength) in links_of(chunk, link, lists, related) {
                let score = from.score * options.decay * strength;
                let better = reached.get(&to).is_none_or(|hit| score > hit.score);
                if better {
                    let keywords = from.keywords.clone();
                    reached.insert(to, GraphHit { chunk: to, score, keywords, hops: hop });
                    next.push((score, to));
                }
            }
        }
        // Each chunk once, at its best score: which of a chunk's links improved it first
        // (the order of its keywords) changes nothing.
        next.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut taken = HashSet::new();
        next.retain(|&(_, chunk)| taken.insert(chunk));
        // Not `into_iter()`: rustc 1.95 (LLVM) vectorises that in-place collect of
        // `(f32, u32)` into `u32` with a load past the end of the buffer (found by fuzzing).
        frontier = next.iter().take(width).map(|&(_, c)| c).collect();
    }
    Ok(reached.into_values().collect())
}

/// The chunks one hop from `chunk`, with the link strength: through each related keyword of
/// the chunk to the [`FAN_OUT`] chunks it weighs most in (strength × weight there), and to the
/// chunks before and after it (strength 1).
fn links_of(
    chunk: u32,
    link: &ChunkLinks,
    lists: &Lists,
    related: &HashMap<u32, f32>,
) -> Vec<(u32, f32)> {
    let mut out: Vec<(u32, f32)> = link.neighbours.iter().map(|&c| (c, 1.0)).collect();
    for (keyword, _) in &link.keywords {
        let (Some(&strength), Some(list)) = (related.get(keyword), lists.get(keyword)) else {
            continue;
        };
        let targets = list.iter().filter(|&&(c, _)| c != chunk).take(FAN_OUT);
        out.extend(targets.map(|&(c, w)| (c, strength * w)));
    }
    out
}

/// Best score first, then lower chunk index.
fn sort_hits(hits: &mut [GraphHit]) {
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.chunk.cmp(&b.chunk)));
}

/// `items` sorted, each once.
fn sorted_unique(items: impl IntoIterator<Item = u32>) -> Vec<u32> {
    let mut items: Vec<u32> = items.into_iter().collect();
    items.sort_unstable();
    items.dedup();
    items
}
