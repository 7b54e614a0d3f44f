//! The BM25 index of a paged bundle (format version 4): a query reads the dictionary entries
//! of its terms and, of each term's postings, only the best until the result cannot change.
//!
//! # Layout
//!
//! - **Dictionary** (section `dictionary`): the terms in order, each entry whole in one slot:
//!   the term, its document frequency and its blocks of postings. The first term of every
//!   slot routes a term to its entry: one slot read, after one of the routes for large
//!   dictionaries ([`Lexicon::routes`]).
//! - **Blocks**: a term's postings sorted by their score, best first, cut into blocks of
//!   [`FIRST_BLOCK`] postings, then twice as many each time. Each block lists its postings by
//!   chunk address (varint gaps), each with its term frequency and chunk length (varints),
//!   so scores are computed exactly as [`Bm25Index`] computes them. An entry records each
//!   block's best term score (without the idf) and where it lies: inline in the entry when the
//!   term has at most [`INLINE`] postings, else in the postings section (`postings`), a byte
//!   stream cut into slots.
//!
//! # Search
//!
//! No-random-access top-k (Fagin, Lotem & Naor 2003): blocks are read a round at a time,
//! the next block of every term still open, the blocks that could add most first; each chunk
//! seen has a lower bound (its known shares) and an upper bound (plus the best score each
//! other open term could still add). Reading stops when `k` chunks have lower bounds that no
//! other chunk's upper bound, and no unseen chunk's, can pass, and none of the `k` can pass
//! the one ranked above it. The `k` chunks are then exactly BM25's `k` best, in its order; a
//! score misses only the shares of terms whose lists were not read to the end (none when
//! every list fits in the blocks read, as in small corpora, where results equal
//! [`Bm25Index`]'s).
//!
//! A search reads at most a budget of postings bytes ([`BUDGET`]), so that its cost does not
//! grow with the corpus: a block that would pass it is not read, and when no block fits, the
//! chunks are ranked by the shares read (as anytime, score-at-a-time ranking does; Lin &
//! Trotman 2015). [`Ranked::complete`] tells which of the two ended a search.
//!
//! # Measured
//!
//! SciFact (5,183 abstracts, 4 KB slots), its first 100 queries, `k = 10`: the ten are
//! BM25's ten, in its order, for every query, all settled within the budget. At
//! this size a term's whole list fits in a slot or two, so a query reads about what its full
//! lists take (at most 63 KB for the 809 training queries at `k = 100`); and chunks seen in
//! one list but not yet in another keep their upper bounds high, so the stop comes late.
//!
//! The bench's synthetic corpora (`edgerag-bench`, search at scale: Zipf-distributed words,
//! queries of 2–5 words drawn from a chunk, so mostly common ones; `k = 100`, as every mode
//! asks), recall@10 against the whole index, and per query the bytes read cold and the warm
//! p50, on 2 shared cores: 10k chunks 1.000, 97 KB, 0.9 ms; 100k 0.958, 232 KB, 8.5 ms; 1M
//! 0.704, 305 KB, 16 ms (without the budget: 2.1 MB and 351 ms). A warm query now runs right
//! after a first run of itself, its pages cached: 1M 7.2 ms, on 2 quiet cores. At 1M most
//! searches end on the budget: chunk lengths there are nearly equal, so most postings score
//! alike and a common term's best blocks tell little; telling which chunks hold two such
//! terms takes their lists whole (0.9 MB a query on average).
//!
//! The work of a round goes to the chunks that could still matter: each chunk's shares are
//! summed as they come, and only the chunks whose sums come near the `k`-th best are scored
//! and bounded exactly; the final ranking keeps a heap of `k`. At 100k chunks (the bench's
//! bundle, 20 of its queries, pages cached, counted by callgrind) that took a warm BM25
//! search from 41.3 to 14.5 million instructions, and a hybrid one without its embedding
//! from 50.6 to 24.3 million, the results unchanged (recall@10 0.958 as before).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::paged::routes::Routes;
use super::paged::{PagedFile, PagedWriter, RangeSource};
use super::varint;
use crate::index::bm25::{self, Bm25Index, Bm25Params, TermScore};
use crate::index::{FastMap, Scored, top_k};
use crate::{Error, Result};

/// Postings of a term's first block by default; each next block holds twice as many.
pub const FIRST_BLOCK: usize = 1024;
/// Bytes of postings blocks a search reads at most, besides those inline in the dictionary
/// (see the [module docs](self)).
pub const BUDGET: u64 = 256 << 10;
/// Terms with at most this many postings keep them in their dictionary entry.
pub const INLINE: usize = 16;
/// The longest postings block a reader accepts.
const MAX_BLOCK: u64 = 16 << 20;
/// The most postings a block holds: each takes at most 15 bytes, so a block stays within
/// [`MAX_BLOCK`].
const MAX_BLOCK_POSTINGS: usize = 1 << 20;
/// The most blocks a term has: sizes double from 1 to [`MAX_BLOCK_POSTINGS`], which then
/// cover any `u32` count of postings.
const MAX_BLOCKS: usize = 21 + (1 << 12);

/// Where the BM25 index lies in a paged file, and what its directory holds of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lexicon {
    /// BM25 parameters.
    pub params: Bm25Params,
    /// Chunks indexed.
    pub chunks: u32,
    /// Mean chunk length in terms.
    pub avgdl: f32,
    /// The section of the dictionary.
    pub dictionary: u32,
    /// The section of the postings blocks.
    pub postings: u32,
    /// The first term of each dictionary slot, or of each slot of their own section
    /// ([`routes`](super::paged::routes)).
    pub routes: Vec<String>,
}

/// What a search found, and what it read to find it.
#[derive(Debug, Clone, PartialEq)]
pub struct Ranked {
    /// The best chunks by address, best first.
    pub hits: Vec<Scored>,
    /// Bytes of postings blocks read, besides those inline in the dictionary.
    pub read: u64,
    /// Whether the hits are BM25's `k` best: the reads settled them within the budget.
    pub complete: bool,
}

/// A dictionary entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    term: String,
    df: u32,
    blocks: Vec<Block>,
}

/// A block of a term's postings.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Block {
    /// The best term score in it, idf left out.
    best: f32,
    place: Place,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
enum Place {
    /// The encoded postings.
    Inline(Vec<u8>),
    /// Where the encoded postings lie in the postings stream.
    Stream { start: u64, len: u32 },
}

impl Lexicon {
    /// Writes `index` into new sections `dictionary` and `postings` of `writer`, in slots of
    /// `slot` bytes (more where an entry needs them), chunk `i` being at `addresses[i]`, each
    /// term's first block holding `first_block` postings (builds use [`FIRST_BLOCK`]).
    ///
    /// # Errors
    /// [`Error::Config`] when `addresses` does not cover the index's chunks; as
    /// [`PagedWriter::section`].
    pub fn write(
        writer: &mut PagedWriter,
        index: &Bm25Index,
        addresses: &[u32],
        slot: u32,
        first_block: usize,
    ) -> Result<Self> {
        if addresses.len() != index.len() {
            return Err(Error::Config(format!(
                "{} chunk addresses for a BM25 index of {} chunks",
                addresses.len(),
                index.len()
            )));
        }
        let (params, avgdl, lengths) = (index.params(), index.avg_length(), index.lengths());
        let mut stream = Vec::new();
        let mut entries = Vec::with_capacity(index.terms().len());
        for (t, term) in index.terms().iter().enumerate() {
            let mut postings: Vec<(f32, u32, u32, u32)> = index
                .postings(t)
                .map(|(chunk, tf)| {
                    let length = lengths[chunk as usize];
                    let score = bm25::term_score(params, 1.0, tf, length, avgdl);
                    (score, addresses[chunk as usize], tf, length)
                })
                .collect();
            postings.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let df = postings.len() as u32;
            let mut blocks = Vec::new();
            let mut rest = postings.as_slice();
            let mut size = if rest.len() <= INLINE {
                INLINE
            } else {
                first_block.clamp(1, MAX_BLOCK_POSTINGS)
            };
            while !rest.is_empty() {
                let (block, next) = rest.split_at(size.min(rest.len()));
                let encoded = encode(block);
                let place = if df as usize <= INLINE {
                    Place::Inline(encoded)
                } else {
                    let start = stream.len() as u64;
                    stream.extend_from_slice(&encoded);
                    // At most MAX_BLOCK_POSTINGS of at most 15 bytes.
                    Place::Stream { start, len: encoded.len() as u32 }
                };
                blocks.push(Block { best: block[0].0, place });
                (rest, size) = (next, (size * 2).min(MAX_BLOCK_POSTINGS));
            }
            entries.push(Entry { term: term.clone(), df, blocks });
        }
        let (dictionary, firsts) = writer.records("dictionary", slot, &entries)?;
        let routes = firsts.into_iter().map(|first| entries[first].term.clone()).collect();
        let routes = writer.routes(dictionary, slot, routes)?;
        let postings = writer.stream("postings", slot, &stream)?;
        let chunks = u32::try_from(index.len())
            .map_err(|_| Error::Config("more chunks than addresses".into()))?;
        Ok(Self { params, chunks, avgdl, dictionary, postings, routes })
    }

    /// The `k` best chunks (by address) for analysed query `terms`, among those for which
    /// `allow` holds, reading at most `budget` bytes of postings blocks besides those in the
    /// dictionary entries (see the [module docs](self); searches use [`BUDGET`]).
    ///
    /// # Errors
    /// [`Error::Decode`] for an entry or a block that does not decode; as
    /// [`PagedFile::slots`].
    pub async fn search<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        terms: &[String],
        k: usize,
        budget: u64,
        allow: impl Fn(u32) -> bool,
    ) -> Result<Ranked> {
        let mut lists = self.lists(file, terms).await?;
        // Each occurrence of a query term, by its place in `lists`: shares add up in this
        // order, as `Bm25Index::search` adds them, so that full lists give its very scores.
        let order: Vec<usize> = terms
            .iter()
            .filter_map(|term| lists.iter().position(|list| list.term == *term))
            .collect();
        // Room for the chunks the reads can show: at most all of each list, and at most a
        // posting per 3 bytes of the budget besides the inline ones.
        let postings = lists.iter().map(|list| u64::from(list.df)).sum::<u64>();
        let affordable = budget / 3 + (INLINE * lists.len()) as u64;
        let room = postings.min(affordable).min(1 << 16) as usize;
        let mut found = Found::new(lists.len(), order, room);
        let mut spent = 0u64;
        let complete = loop {
            let mut inline: Vec<(usize, Vec<u8>)> = Vec::new();
            let mut wanted: Vec<(usize, u64, u32)> = Vec::new();
            for i in next_blocks(&lists) {
                let list = &mut lists[i];
                match &list.blocks[list.next].place {
                    Place::Inline(bytes) => inline.push((i, bytes.clone())),
                    &Place::Stream { start, len }
                        if spent.saturating_add(u64::from(len)) <= budget =>
                    {
                        spent += u64::from(len);
                        wanted.push((i, start, len));
                    }
                    Place::Stream { .. } => {
                        list.stopped = true;
                        continue;
                    }
                }
                list.next += 1;
            }
            if inline.is_empty() && wanted.is_empty() {
                // Every list read to its end (the best are BM25's), or the budget spent.
                break lists.iter().all(|list| list.next == list.blocks.len());
            }
            let spans: Vec<(u64, u64)> =
                wanted.iter().map(|&(_, start, len)| (start, u64::from(len))).collect();
            let read = file.stream(self.postings, &spans, MAX_BLOCK).await?;
            let blocks = inline.into_iter().chain(wanted.iter().map(|w| w.0).zip(read));
            for (i, bytes) in blocks {
                let postings = decode(&bytes)?;
                let list = &mut lists[i];
                list.read += postings.len() as u64;
                if list.read > u64::from(list.df) {
                    return Err(Error::Decode(format!(
                        "the postings of {:?} hold more than its {} chunks",
                        list.term, list.df
                    )));
                }
                for (address, tf, length) in postings {
                    let share = bm25::term_score(self.params, list.idf, tf, length, self.avgdl);
                    found.add(address, i, share);
                }
            }
            if found.settled(&lists, k, &allow) {
                break true;
            }
        };
        let hits = found.best(k, &allow);
        Ok(Ranked { hits, read: spent, complete })
    }

    /// What each query term adds to the BM25 score of each chunk of `chunks` (a chunk's
    /// analysed terms), as [`Bm25Index::explain`] gives them: the chunk's term frequency and
    /// length are counted in its terms, so only the terms' dictionary entries are read (those
    /// a search of `terms` has read already).
    ///
    /// # Errors
    /// As [`search`](Self::search).
    pub async fn explain<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        terms: &[String],
        chunks: &[Vec<String>],
    ) -> Result<Vec<Vec<TermScore>>> {
        let lists = self.lists(file, terms).await?;
        let explain = |chunk: &Vec<String>| {
            let length = u32::try_from(chunk.len()).unwrap_or(u32::MAX);
            let mut out: Vec<TermScore> = Vec::new();
            for term in terms {
                let Some(list) = lists.iter().find(|list| list.term == *term) else { continue };
                let tf = chunk.iter().filter(|t| *t == term).count();
                if tf == 0 {
                    continue;
                }
                let tf = u32::try_from(tf).unwrap_or(u32::MAX);
                let score = bm25::term_score(self.params, list.idf, tf, length, self.avgdl);
                match out.iter_mut().find(|s| s.term == *term) {
                    Some(existing) => existing.score += score,
                    None => out.push(TermScore { term: term.clone(), score }),
                }
            }
            out
        };
        Ok(chunks.iter().map(explain).collect())
    }

    /// The distinct known terms of `terms`, with their entries, idf and occurrences.
    async fn lists<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        terms: &[String],
    ) -> Result<Vec<List>> {
        let routes = Routes::of(file, self.dictionary, &self.routes);
        let located = routes.locate(terms, |term, first| first <= term).await?;
        let mut routed: BTreeMap<u32, Vec<&String>> = BTreeMap::new();
        for (term, found) in terms.iter().zip(located) {
            if let Some((slot, _)) = found {
                routed.entry(slot).or_default().push(term);
            }
        }
        let slots: Vec<u32> = routed.keys().copied().collect();
        let payloads = file.slots(self.dictionary, &slots).await?;
        let mut lists: Vec<List> = Vec::new();
        for ((slot, wanted), payload) in routed.into_iter().zip(payloads) {
            let (entries, _padding): (Vec<Entry>, _) = postcard::take_from_bytes(&payload)
                .map_err(|e| {
                    Error::Decode(format!("slot {slot} of the dictionary: {e}").to_lowercase())
                })?;
            for term in wanted {
                let Some(entry) = entries.iter().find(|entry| entry.term == *term) else {
                    continue;
                };
                // An honest entry's blocks follow one another in the stream: reading them all
                // reads no byte twice.
                let mut end = 0u64;
                let consecutive = entry.blocks.iter().all(|block| match block.place {
                    Place::Inline(_) => true,
                    Place::Stream { start, len } => {
                        let ordered = start >= end;
                        end = start.saturating_add(u64::from(len));
                        ordered
                    }
                });
                if !consecutive || entry.df > self.chunks || entry.blocks.len() > MAX_BLOCKS {
                    return Err(Error::Decode(format!(
                        "the dictionary entry of {term:?} does not add up ({} blocks for {} \
                         chunks)",
                        entry.blocks.len(),
                        entry.df
                    )));
                }
                match lists.iter_mut().find(|list| list.term == *term) {
                    Some(list) => list.occurrences += 1,
                    None => lists.push(List {
                        term: term.clone(),
                        df: entry.df,
                        idf: bm25::idf(self.chunks as usize, entry.df as usize),
                        occurrences: 1,
                        blocks: entry.blocks.clone(),
                        next: 0,
                        read: 0,
                        stopped: false,
                    }),
                }
            }
        }
        Ok(lists)
    }
}

/// The lists whose next block a round reads (those not read to their end nor stopped by the
/// budget), best bound first: the budget goes to the blocks that could add the most.
fn next_blocks(lists: &[List]) -> Vec<usize> {
    let mut next: Vec<usize> = (0..lists.len())
        .filter(|&i| !lists[i].stopped && lists[i].next < lists[i].blocks.len())
        .collect();
    next.sort_by(|&a, &b| lists[b].bound().total_cmp(&lists[a].bound()));
    next
}

/// A chunk's lower bound (its shares found), what its missing shares could add, and its
/// address.
type Bounds = (f32, f32, u32);

/// How far apart two sums of the same shares in different orders may lie, relative to them:
/// far more than rounding makes of a query's few terms.
const ROUNDING: f32 = 1e-4;

/// A little less than `sum`: less than any sum of the same shares in another order.
fn below(sum: f32) -> f32 {
    sum - sum.abs() * ROUNDING
}

/// A little more than `sum`: more than any sum of the same shares in another order.
fn above(sum: f32) -> f32 {
    sum + sum.abs() * ROUNDING
}

/// The chunks a search has seen, each with the share of each term (by its place in the
/// lists) found so far.
struct Found {
    terms: usize,
    /// Each occurrence of a query term, by its place in the lists.
    order: Vec<usize>,
    /// Each chunk's place in `addresses`.
    places: FastMap<u32, u32>,
    addresses: Vec<u32>,
    /// `terms` shares a chunk, in the order of `addresses`.
    shares: Vec<Option<f32>>,
    /// Times each term occurs in the query.
    times: Vec<f32>,
    /// Each chunk's shares (times their term's occurrences) summed as they came: its score
    /// but for rounding, kept so that [`settled`](Self::settled) and [`best`](Self::best)
    /// pass over most chunks without scoring them.
    sums: Vec<f32>,
    /// The sums of the allowed chunks, a buffer [`kth_sum`](Self::kth_sum) reuses.
    allowed: Vec<f32>,
}

impl Found {
    /// Room for `room` chunks of `terms` terms, in query order `order`.
    fn new(terms: usize, order: Vec<usize>, room: usize) -> Self {
        let mut times = vec![0.0; terms];
        order.iter().for_each(|&term| times[term] += 1.0);
        Self {
            terms,
            order,
            times,
            places: FastMap::with_capacity_and_hasher(room, Default::default()),
            addresses: Vec::with_capacity(room),
            shares: Vec::with_capacity(room.saturating_mul(terms)),
            sums: Vec::with_capacity(room),
            allowed: Vec::new(),
        }
    }

    /// Records that term `term` adds `share` to the score of the chunk at `address`.
    fn add(&mut self, address: u32, term: usize, share: f32) {
        let place = *self.places.entry(address).or_insert_with(|| {
            self.addresses.push(address);
            self.shares.resize(self.shares.len() + self.terms, None);
            self.sums.push(0.0);
            // As many chunks as postings, and blocks hold at most `u32::MAX` in all.
            (self.addresses.len() - 1) as u32
        }) as usize;
        // A hostile block may list a chunk twice: the later share replaces the earlier.
        let before = self.shares[place * self.terms + term].replace(share);
        self.sums[place] += (share - before.unwrap_or(0.0)) * self.times[term];
    }

    /// The shares of the chunk at `place`.
    fn of(&self, place: usize) -> &[Option<f32>] {
        &self.shares[place * self.terms..(place + 1) * self.terms]
    }

    /// The score of the chunk at `place`: the sum of the shares found, in query order.
    fn score(&self, place: usize) -> f32 {
        let shares = self.of(place);
        self.order.iter().filter_map(|&i| shares[i]).fold(0.0, |sum, share| sum + share)
    }

    /// The `k`-th best sum of the allowed chunks; `None` when fewer are seen (or `k` is 0).
    fn kth_sum(&mut self, k: usize, allow: &impl Fn(u32) -> bool) -> Option<f32> {
        let allowed = self.addresses.iter().zip(&self.sums).filter(|(a, _)| allow(**a));
        self.allowed.clear();
        self.allowed.extend(allowed.map(|(_, &sum)| sum));
        if k == 0 || self.allowed.len() < k {
            return None;
        }
        Some(*self.allowed.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a)).1)
    }

    /// The `k` best allowed chunks seen, scored by the shares found: only those whose sums
    /// come near the `k`-th best need their score.
    fn best(&mut self, k: usize, allow: &impl Fn(u32) -> bool) -> Vec<Scored> {
        let floor = self.kth_sum(k, allow).map_or(f32::NEG_INFINITY, below);
        let near = (0..self.addresses.len())
            .filter(|&place| self.sums[place] >= floor && allow(self.addresses[place]));
        let scored = |place| Scored { chunk: self.addresses[place], score: self.score(place) };
        top_k(near.map(scored), k)
    }

    /// Whether the `k` best allowed chunks found so far are the `k` best there are, in their
    /// order: no other chunk, seen or not, could still reach the `k`-th one's score, nor any of
    /// the `k` the score of the one ranked above it (nor tie with it, unless both scores are
    /// complete and ties then fall as the whole index breaks them, by address).
    fn settled(&mut self, lists: &[List], k: usize, allow: &impl Fn(u32) -> bool) -> bool {
        let open: Vec<f32> = lists.iter().map(List::bound).collect();
        let unseen: f32 = open.iter().sum();
        if unseen == 0.0 || k == 0 {
            return true;
        }
        // First by the sums, but for rounding: too few chunks, or a `k`-th that an unseen one
        // could still pass, and it is not settled.
        let Some(kth) = self.kth_sum(k, allow).filter(|&kth| above(kth) > unseen) else {
            return false;
        };
        // Chunks whose sum and every open bound stay below the `k`-th sum stay behind the
        // `k`-th chunk: the exact test below needs only the others.
        let behind_kth = below(kth) - unseen;
        // The bounds of every allowed chunk seen that could reach the `k` best.
        let mut bounds: Vec<Bounds> = (0..self.addresses.len())
            .filter(|&place| self.sums[place] >= behind_kth && allow(self.addresses[place]))
            .map(|place| {
                let shares = self.of(place).iter().zip(&open);
                let missing = shares.filter(|(s, _)| s.is_none()).map(|(_, o)| o).sum::<f32>();
                (self.score(place), missing, self.addresses[place])
            })
            .collect();
        if bounds.len() < k {
            return false;
        }
        let ranked = |a: &Bounds, b: &Bounds| b.0.total_cmp(&a.0).then(a.2.cmp(&b.2));
        // Whether a chunk of bounds `(lower, missing, _)` stays below one ranked above it.
        let behind = |&(lower, missing, _): &Bounds, &(above, above_missing, _): &Bounds| {
            let upper = lower + missing;
            upper < above || (upper == above && missing == 0.0 && above_missing == 0.0)
        };
        bounds.select_nth_unstable_by(k - 1, ranked);
        let kth = bounds[k - 1];
        if kth.0 <= unseen || !bounds[k..].iter().all(|b| behind(b, &kth)) {
            return false;
        }
        let best = &mut bounds[..k];
        best.sort_unstable_by(ranked);
        best.windows(2).all(|pair| behind(&pair[1], &pair[0]))
    }
}

/// A query term's postings as a search reads them.
#[derive(Debug)]
struct List {
    term: String,
    /// Chunks the term is in.
    df: u32,
    idf: f32,
    /// Times the term occurs in the query.
    occurrences: usize,
    blocks: Vec<Block>,
    /// The next block to read.
    next: usize,
    /// Postings read so far.
    read: u64,
    /// Whether the budget left no room for the next block.
    stopped: bool,
}

impl List {
    /// The most the blocks not read yet could add to a chunk's score (a little more, for
    /// rounding); 0 once every block is read.
    fn bound(&self) -> f32 {
        self.blocks.get(self.next).map_or(0.0, |block| {
            let best = self.idf * block.best * self.occurrences as f32;
            best * (1.0 + 1e-5) + f32::EPSILON
        })
    }
}

/// Postings (score, address, tf, length) sorted by address, as varints: the gap from the
/// previous address, tf, length.
fn encode(block: &[(f32, u32, u32, u32)]) -> Vec<u8> {
    let mut sorted: Vec<(u32, u32, u32)> = block.iter().map(|&(_, a, tf, l)| (a, tf, l)).collect();
    sorted.sort_unstable();
    let mut out = Vec::with_capacity(sorted.len() * 6 + 5);
    varint::push(&mut out, sorted.len() as u64);
    let mut previous = 0;
    for (address, tf, length) in sorted {
        varint::push(&mut out, u64::from(address - previous));
        varint::push(&mut out, u64::from(tf));
        varint::push(&mut out, u64::from(length));
        previous = address;
    }
    out
}

/// The postings (address, tf, length) of an encoded block.
fn decode(bytes: &[u8]) -> Result<Vec<(u32, u32, u32)>> {
    let bad = || Error::Decode("a postings block does not decode".into());
    let mut at = bytes;
    let count = varint::take(&mut at).ok_or_else(bad)?;
    // Each posting takes at least three bytes.
    let mut out = Vec::with_capacity((count as usize).min(at.len() / 3));
    let mut address = 0u32;
    for _ in 0..count {
        address = varint::take_gap(&mut at, address).ok_or_else(bad)?;
        let tf = u32::try_from(varint::take(&mut at).ok_or_else(bad)?).map_err(|_| bad())?;
        let length = u32::try_from(varint::take(&mut at).ok_or_else(bad)?).map_err(|_| bad())?;
        out.push((address, tf, length));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::paged::{InMemory, VERSION, now};

    /// A file whose dictionary holds `a` (in 4 of 10 chunks) with the blocks `blocks` makes
    /// of a block's length, and whose postings stream holds that block of 4 postings, twice.
    fn file_with(blocks: impl Fn(u64) -> Vec<Block>) -> PagedFile<InMemory, Lexicon> {
        let block = encode(&[(2.0, 1, 3, 9), (1.5, 4, 2, 9), (1.0, 7, 1, 9), (0.5, 9, 1, 30)]);
        let entry = Entry { term: "a".into(), df: 4, blocks: blocks(block.len() as u64) };
        let mut writer = PagedWriter::new();
        let slots = |_| Ok(vec![postcard::to_allocvec(&vec![entry.clone()]).unwrap()]);
        let dictionary = writer.section("dictionary", 1 << 16, slots).unwrap();
        let stream = [block.clone(), block].concat();
        let postings = writer.section("postings", 4096, |_| Ok(vec![stream.clone()])).unwrap();
        let params = Bm25Params::default();
        let routes = vec!["a".to_owned()];
        let lexicon = Lexicon { params, chunks: 10, avgdl: 10.0, dictionary, postings, routes };
        let bytes = writer.finish(lexicon, VERSION, VERSION).unwrap();
        now(PagedFile::open(InMemory(bytes), 1 << 20)).unwrap()
    }

    fn search(file: &PagedFile<InMemory, Lexicon>) -> Result<Vec<u32>> {
        let hits = now(file.body().search(file, &["a".to_owned()], 10, BUDGET, |_| true))?;
        Ok(hits.hits.iter().map(|hit| hit.chunk).collect())
    }

    fn stream(start: u64, len: u64) -> Block {
        Block { best: 2.0, place: Place::Stream { start, len: len as u32 } }
    }

    #[test]
    fn running_sums_count_each_occurrence_and_a_share_found_again_replaces_the_first() {
        // Term 1 twice in the query.
        let mut found = Found::new(2, vec![1, 0, 1], 4);
        found.add(7, 0, 1.0);
        found.add(9, 1, 0.25);
        found.add(7, 1, 0.5);
        // A hostile block listing chunk 7 again for term 0.
        found.add(7, 0, 2.0);
        assert_eq!(found.sums, [3.0, 0.5]);
        let best = [Scored { chunk: 7, score: 3.0 }, Scored { chunk: 9, score: 0.5 }];
        assert_eq!(found.best(2, &|_| true), best);
        assert_eq!(found.best(1, &|chunk| chunk == 9), best[1..]);
    }

    #[test]
    fn entries_whose_blocks_do_not_add_up_are_refused() {
        assert_eq!(search(&file_with(|len| vec![stream(0, len)])).unwrap(), [1, 4, 7, 9]);
        // The same block listed again and again (each would be read and decoded anew), or
        // more blocks than any list needs.
        let again = search(&file_with(|len| vec![stream(0, len), stream(0, len)]));
        assert!(again.unwrap_err().to_string().contains("does not add up"));
        let many = search(&file_with(|_| (0..=MAX_BLOCKS as u64).map(|i| stream(i, 1)).collect()));
        assert!(many.unwrap_err().to_string().contains("does not add up"));
        // Blocks holding more postings than the term's chunks.
        let more = search(&file_with(|len| vec![stream(0, len), stream(len, len)]));
        let expected =
            "malformed bundle payload: the postings of \"a\" hold more than its 4 chunks";
        assert_eq!(more.unwrap_err().to_string(), expected);
    }
}
