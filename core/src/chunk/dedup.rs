//! Corpus-wide removal of duplicate chunks and of chunks contained in another.
//!
//! Exact duplicates are found by id. For containment, every chunk is indexed by a hash of its
//! leading [`KEY_BYTES`] bytes (fewer for short chunks, see [`key_len`]); a rolling hash then
//! slides over every longer chunk, and only chunks whose key hash matches at some position are
//! compared byte by byte. That is linear in the corpus size (plus the matches), not quadratic.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::Chunk;

/// Length of the leading key chunks are indexed by.
const KEY_BYTES: usize = 32;

/// Key length of chunks shorter than [`KEY_BYTES`].
const SHORT_KEY_BYTES: usize = 8;

/// Multiplier of the polynomial rolling hash (the 64-bit FNV prime).
const BASE: u64 = 0x0000_0100_0000_01b3;

/// Removes exact duplicates (same id) and chunks whose text lies wholly inside another
/// chunk's text, keeping the first of equal chunks and the container of contained ones.
/// Order is otherwise preserved. Returns how many were removed.
pub fn dedup(chunks: &mut Vec<Chunk>) -> usize {
    let mut keep = first_occurrences(chunks);
    mark_contained(chunks, &mut keep);
    let before = chunks.len();
    let mut flags = keep.into_iter();
    chunks.retain(|_| flags.next().unwrap_or(true));
    before - chunks.len()
}

/// `true` for the first chunk of each id.
fn first_occurrences(chunks: &[Chunk]) -> Vec<bool> {
    let mut seen = HashSet::with_capacity(chunks.len());
    chunks.iter().map(|c| seen.insert(c.id.as_str())).collect()
}

/// Clears `keep` for every kept chunk whose text occurs inside a longer kept chunk.
fn mark_contained(chunks: &[Chunk], keep: &mut [bool]) {
    for (key_len, index) in key_indexes(chunks, keep) {
        for (y, container) in chunks.iter().enumerate() {
            let bytes = container.text.as_bytes();
            if !keep[y] || bytes.len() <= key_len {
                continue;
            }
            for (pos, hash) in RollingHash::new(bytes, key_len) {
                for &x in index.get(hash) {
                    let inner = chunks[x].text.as_bytes();
                    if keep[x] && inner.len() < bytes.len() && bytes[pos..].starts_with(inner) {
                        keep[x] = false;
                    }
                }
            }
        }
    }
}

/// Kept chunks by key length, then by the hash of their key.
fn key_indexes(chunks: &[Chunk], keep: &[bool]) -> BTreeMap<usize, KeyIndex> {
    let mut indexes: BTreeMap<usize, KeyIndex> = BTreeMap::new();
    for (i, chunk) in chunks.iter().enumerate().filter(|(i, _)| keep[*i]) {
        let bytes = chunk.text.as_bytes();
        let key = &bytes[..key_len(bytes.len())];
        if !key.is_empty() {
            indexes.entry(key.len()).or_insert_with(KeyIndex::new).insert(hash(key), i);
        }
    }
    indexes
}

/// Chunks by key hash, behind a bit filter that answers most misses without a map lookup
/// (nearly every position of the corpus is a miss).
struct KeyIndex {
    filter: Vec<u64>,
    chunks: HashMap<u64, Vec<usize>>,
}

impl KeyIndex {
    /// Bits in the filter, as a power of two (128 KiB).
    const FILTER_BITS: u32 = 20;

    fn new() -> Self {
        Self { filter: vec![0; 1 << (Self::FILTER_BITS - 6)], chunks: HashMap::new() }
    }

    /// Word and bit of `hash` in the filter, from its top bits (the best mixed ones).
    fn bit(hash: u64) -> (usize, u64) {
        let bit = (hash >> (64 - Self::FILTER_BITS)) as usize;
        (bit >> 6, 1 << (bit & 63))
    }

    fn insert(&mut self, hash: u64, chunk: usize) {
        let (word, mask) = Self::bit(hash);
        self.filter[word] |= mask;
        self.chunks.entry(hash).or_default().push(chunk);
    }

    fn get(&self, hash: u64) -> &[usize] {
        let (word, mask) = Self::bit(hash);
        if self.filter[word] & mask == 0 {
            return &[];
        }
        self.chunks.get(&hash).map_or(&[], Vec::as_slice)
    }
}

/// Length of the key of a text of `len` bytes: [`KEY_BYTES`], or [`SHORT_KEY_BYTES`] for
/// shorter texts, or the whole text. Every distinct key length costs a pass over the corpus, so
/// the few short chunks share one length instead of bringing one each.
fn key_len(len: usize) -> usize {
    match len {
        KEY_BYTES.. => KEY_BYTES,
        SHORT_KEY_BYTES.. => SHORT_KEY_BYTES,
        _ => len,
    }
}

fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |h, &b| h.wrapping_mul(BASE).wrapping_add(u64::from(b)))
}

/// Hashes of every window of `len` bytes, with the window's start, in O(1) per step.
struct RollingHash<'a> {
    bytes: &'a [u8],
    len: usize,
    /// Start of the next window to yield.
    pos: usize,
    hash: u64,
    /// `BASE^(len - 1)`: the weight of the byte leaving the window.
    top: u64,
}

impl<'a> RollingHash<'a> {
    fn new(bytes: &'a [u8], len: usize) -> Self {
        let top = (1..len).fold(1u64, |p, _| p.wrapping_mul(BASE));
        Self { bytes, len, pos: 0, hash: hash(&bytes[..len.min(bytes.len())]), top }
    }
}

impl Iterator for RollingHash<'_> {
    type Item = (usize, u64);

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos + self.len > self.bytes.len() {
            return None;
        }
        let item = (self.pos, self.hash);
        if let Some(&incoming) = self.bytes.get(self.pos + self.len) {
            let outgoing = u64::from(self.bytes[self.pos]);
            self.hash = self
                .hash
                .wrapping_sub(outgoing.wrapping_mul(self.top))
                .wrapping_mul(BASE)
                .wrapping_add(u64::from(incoming));
        }
        self.pos += 1;
        Some(item)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn chunk(doc: u32, text: &str) -> Chunk {
        Chunk {
            id: crate::content_id(text.as_bytes()),
            doc,
            seq: 0,
            section: 0,
            page: None,
            start: 0,
            end: text.len() as u32,
            text: text.to_owned(),
        }
    }

    fn texts(chunks: &[Chunk]) -> Vec<&str> {
        chunks.iter().map(|c| c.text.as_str()).collect()
    }

    const TESLA: &str = "Nikola Tesla was a Serbian American inventor, electrical engineer, \
                         mechanical engineer, physicist, and futurist best known for his \
                         contributions to the design of the modern alternating current system.";

    #[test]
    fn exact_duplicates_across_documents_keep_the_first() {
        let mut chunks =
            vec![chunk(0, TESLA), chunk(1, "Something else entirely."), chunk(2, TESLA)];
        assert_eq!(dedup(&mut chunks), 1);
        assert_eq!(texts(&chunks), [TESLA, "Something else entirely."]);
        assert_eq!(chunks[0].doc, 0);
    }

    #[test]
    fn contained_chunks_are_removed_wherever_they_come() {
        let inner = "electrical engineer, mechanical engineer, physicist, and futurist";
        let short = "Serbian";
        let mut chunks = vec![chunk(0, inner), chunk(1, TESLA), chunk(2, short)];
        assert_eq!(dedup(&mut chunks), 2);
        assert_eq!(texts(&chunks), [TESLA]);
    }

    #[test]
    fn near_duplicates_are_kept() {
        let edited = TESLA.replace("modern", "contemporary");
        let prefix_only = format!("{} He was born in 1856.", &TESLA[..60]);
        let mut chunks = vec![chunk(0, TESLA), chunk(1, &edited), chunk(2, &prefix_only)];
        assert_eq!(dedup(&mut chunks), 0);
        assert_eq!(chunks.len(), 3);
    }

    #[test]
    fn rolling_hash_matches_direct_hash() {
        let bytes = TESLA.as_bytes();
        for len in [1, 7, KEY_BYTES] {
            let rolled: Vec<(usize, u64)> = RollingHash::new(bytes, len).collect();
            assert_eq!(rolled.len(), bytes.len() - len + 1);
            for (pos, h) in rolled {
                assert_eq!(h, hash(&bytes[pos..pos + len]));
            }
        }
    }

    proptest! {
        /// Agrees with the quadratic definition on texts with many shared pieces.
        #[test]
        fn agrees_with_naive_dedup(picks in prop::collection::vec(
            prop::collection::vec(0..6usize, 1..6), 1..30)) {
            const WORDS: [&str; 6] =
                ["alpha ", "beta ", "gamma delta ", "the quick brown fox jumps ", "é ", "over "];
            let all: Vec<String> = picks.iter().map(|p| p.iter().map(|&w| WORDS[w]).collect()).collect();
            let mut expected: Vec<&str> = Vec::new();
            for (i, t) in all.iter().enumerate() {
                let duplicate = all[..i].contains(t);
                let contained = all.iter().any(|o| o.len() > t.len() && o.contains(t.as_str()));
                if !duplicate && !contained {
                    expected.push(t);
                }
            }
            let mut chunks: Vec<Chunk> = all.iter().map(|t| chunk(0, t)).collect();
            let removed = dedup(&mut chunks);
            prop_assert_eq!(texts(&chunks), expected);
            prop_assert_eq!(removed, all.len() - chunks.len());
        }
    }
}
