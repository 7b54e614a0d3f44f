//! Retrieval indexes over a bundle's chunks: sparse (BM25), dense (exact or HNSW), and the
//! fusion of their ranked lists.

pub mod bm25;
pub mod dense;
pub mod fusion;
pub(crate) mod kmeans;

/// A hash map of the query path, keyed by chunk or keyword numbers: foldhash hashes an
/// integer several times faster than std's SipHash, and seeds itself per process without a
/// random source (so in wasm too). A search may fill one with every posting it reads.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

/// A chunk index with its score from one retriever, best first in result lists.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// Chunk index in the bundle.
    pub chunk: u32,
    /// Retriever score (higher is better; scales differ between retrievers).
    pub score: f32,
}

/// The `k` best of `scores` (ties broken by lower chunk index), best first.
pub(crate) fn top_k(scores: impl IntoIterator<Item = Scored>, k: usize) -> Vec<Scored> {
    use std::cmp::{Ordering, Reverse};
    use std::collections::BinaryHeap;

    /// Heap entry ordered by score, then by *lower* chunk index as the better one.
    #[derive(PartialEq)]
    struct Entry(Scored);
    impl Eq for Entry {}
    impl Ord for Entry {
        fn cmp(&self, other: &Self) -> Ordering {
            self.0.score.total_cmp(&other.0.score).then_with(|| other.0.chunk.cmp(&self.0.chunk))
        }
    }
    impl PartialOrd for Entry {
        fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
            Some(self.cmp(other))
        }
    }

    if k == 0 {
        return Vec::new();
    }
    let scores = scores.into_iter();
    // Room for what there is, not for any `k` a caller asks.
    let mut heap = BinaryHeap::with_capacity(k.min(scores.size_hint().0).saturating_add(1));
    for s in scores {
        if heap.len() < k {
            heap.push(Reverse(Entry(s)));
        } else if let Some(mut worst) = heap.peek_mut()
            && Entry(s) > worst.0
        {
            // Only what beats the worst of a full heap gets in (most scores do not).
            *worst = Reverse(Entry(s));
        }
    }
    let mut out: Vec<Scored> = heap.into_iter().map(|Reverse(Entry(s))| s).collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.chunk.cmp(&b.chunk)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_keeps_the_best_and_breaks_ties_by_index() {
        let scores = [(0, 1.0), (1, 3.0), (2, 2.0), (3, 3.0), (4, 0.5)]
            .map(|(chunk, score)| Scored { chunk, score });
        let got: Vec<u32> = top_k(scores, 3).iter().map(|s| s.chunk).collect();
        assert_eq!(got, [1, 3, 2]);
        assert!(top_k(scores, 0).is_empty());
        assert_eq!(top_k(scores, 10).len(), 5);
    }
}
