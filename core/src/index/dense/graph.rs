//! The HNSW graph in a plain, stable form, and its search (greedy descent through the upper
//! layers, then a beam search of width `ef` in layer 0; Malkov & Yashunin, 2018, algorithm 2).

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use crate::index::Scored;

/// A layered proximity graph over the vectors.
///
/// Nodes are numbered in insertion order; `chunks[node]` is the vector (chunk) a node stands
/// for. Layer `l` holds nodes `0..layers[l].nodes()`, so every layer is a prefix of the one
/// below and node 0, the entry point, is in all of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Graph {
    /// Chunk of each node, a permutation of `0..len`.
    pub(super) chunks: Vec<u32>,
    /// Adjacency lists, layer 0 (every node) first.
    pub(super) layers: Vec<Links>,
}

/// One layer's adjacency lists in compressed-row form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct Links {
    /// `offsets[n]..offsets[n + 1]` index node `n`'s neighbours; `nodes + 1` entries.
    pub(super) offsets: Vec<u32>,
    /// Neighbour node ids, nearest first.
    pub(super) targets: Vec<u32>,
}

impl Links {
    /// Number of nodes in this layer.
    fn nodes(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }

    fn neighbours(&self, node: u32) -> &[u32] {
        let n = node as usize;
        match (self.offsets.get(n), self.offsets.get(n + 1)) {
            (Some(&start), Some(&end)) => self.targets.get(start as usize..end as usize),
            _ => None,
        }
        .unwrap_or_default()
    }

    /// Why these lists are inconsistent, if they are (`offsets` not monotonic from 0 to
    /// `targets.len()`, or a neighbour outside the layer).
    fn problem(&self) -> Option<&'static str> {
        if self.offsets.first() != Some(&0)
            || self.offsets.last().map(|&o| o as usize) != Some(self.targets.len())
            || self.offsets.windows(2).any(|w| w[0] > w[1])
        {
            Some("HNSW adjacency offsets are inconsistent")
        } else if self.targets.iter().any(|&t| t as usize >= self.nodes()) {
            Some("HNSW neighbour outside its layer")
        } else {
            None
        }
    }
}

/// A node with its similarity to the query, ordered by similarity then by lower node id.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Candidate {
    node: u32,
    score: f32,
}

impl Eq for Candidate {}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score.total_cmp(&other.score).then_with(|| other.node.cmp(&self.node))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Nodes already scored during one search (a bit set).
struct Visited(Vec<u64>);

impl Visited {
    fn new(nodes: usize) -> Self {
        Self(vec![0; nodes.div_ceil(64)])
    }

    /// Marks `node`; whether it was new.
    fn insert(&mut self, node: u32) -> bool {
        let (word, bit) = (node as usize / 64, 1u64 << (node % 64));
        match self.0.get_mut(word) {
            Some(w) if *w & bit == 0 => {
                *w |= bit;
                true
            }
            _ => false,
        }
    }
}

impl Graph {
    /// Why the graph is inconsistent for `len` vectors, if it is: so that a search of a
    /// decoded graph can never index out of bounds or loop forever.
    pub(super) fn problem(&self, len: usize) -> Option<&'static str> {
        let mut seen = Visited::new(len);
        if self.chunks.len() != len || !self.chunks.iter().all(|&c| seen.insert(c)) {
            return Some("HNSW nodes are not a permutation of the vectors");
        }
        let sizes_ok = self.layers.first().is_some_and(|l| l.nodes() == len)
            && self.layers.iter().all(|l| l.nodes() >= 1)
            && self.layers.windows(2).all(|w| w[0].nodes() >= w[1].nodes());
        if !sizes_ok {
            return Some("HNSW layer sizes are inconsistent");
        }
        self.layers.iter().find_map(Links::problem)
    }

    /// The `ef` nodes nearest the query (approximately), as chunks with their `score`, best
    /// first. `score(chunk)` is the similarity of a chunk's vector to the query.
    pub(super) fn search(&self, ef: usize, score: impl Fn(u32) -> f32) -> Vec<Scored> {
        let Some((bottom, upper)) = self.layers.split_first() else {
            return Vec::new();
        };
        let similarity = |node: u32| self.chunks.get(node as usize).map_or(f32::MIN, |&c| score(c));
        let mut entry = Candidate { node: 0, score: similarity(0) };
        for layer in upper.iter().rev() {
            entry = greedy(layer, entry, similarity);
        }
        let found = beam(bottom, entry, ef.max(1), similarity);
        found
            .into_iter()
            .filter_map(|c| {
                Some(Scored { chunk: *self.chunks.get(c.node as usize)?, score: c.score })
            })
            .collect()
    }
}

/// Moves from `current` to better neighbours until none is better (search with `ef = 1`).
fn greedy(layer: &Links, mut current: Candidate, similarity: impl Fn(u32) -> f32) -> Candidate {
    loop {
        let mut best = current;
        for &node in layer.neighbours(current.node) {
            let candidate = Candidate { node, score: similarity(node) };
            best = best.max(candidate);
        }
        if best == current {
            return current;
        }
        current = best;
    }
}

/// Best-first search of one layer keeping the `ef` best nodes seen; returns them best first.
fn beam(
    layer: &Links,
    entry: Candidate,
    ef: usize,
    similarity: impl Fn(u32) -> f32,
) -> Vec<Candidate> {
    let mut visited = Visited::new(layer.nodes());
    visited.insert(entry.node);
    let mut frontier = BinaryHeap::from([entry]);
    let mut found = BinaryHeap::from([Reverse(entry)]);
    while let Some(next) = frontier.pop() {
        let worst = found.peek().map_or(f32::MIN, |Reverse(c)| c.score);
        if found.len() >= ef && next.score < worst {
            break;
        }
        for &node in layer.neighbours(next.node) {
            if !visited.insert(node) {
                continue;
            }
            let candidate = Candidate { node, score: similarity(node) };
            let worst = found.peek().map_or(f32::MIN, |Reverse(c)| c.score);
            if found.len() < ef || candidate.score > worst {
                frontier.push(candidate);
                found.push(Reverse(candidate));
                if found.len() > ef {
                    found.pop();
                }
            }
        }
    }
    found.into_sorted_vec().into_iter().map(|Reverse(c)| c).collect()
}
