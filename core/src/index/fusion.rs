//! Fusing ranked lists from several retrievers into one ranking.
//!
//! - [`reciprocal_rank`]: reciprocal rank fusion (Cormack et al., 2009),
//!   `score(d) = Σ_lists weight / (k + rank(d))` with ranks from 1 and `k = 60` by default.
//!   Uses ranks only, so retrievers with incomparable score scales combine safely.
//! - [`convex`]: a weighted sum of min–max normalised scores; uses the score gaps too.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{Scored, top_k};

/// How ranked lists are combined.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Fusion {
    /// Reciprocal rank fusion with constant `k`.
    Rrf {
        /// Rank offset (60 in the original paper).
        k: f32,
    },
    /// Weighted sum of min–max normalised scores.
    Convex,
}

impl Default for Fusion {
    fn default() -> Self {
        Self::Rrf { k: 60.0 }
    }
}

impl std::str::FromStr for Fusion {
    type Err = crate::Error;

    /// A fusion by name, as hosts take it: `convex`, or `rrf` (with `k = 60`).
    fn from_str(name: &str) -> crate::Result<Self> {
        match name {
            "convex" => Ok(Self::Convex),
            "rrf" => Ok(Self::default()),
            other => Err(crate::Error::Query(format!("unknown fusion {other:?} (convex or rrf)"))),
        }
    }
}

/// One retriever's ranked list (best first) and its weight in the fusion.
#[derive(Debug, Clone, Copy)]
pub struct Ranked<'a> {
    /// Results, best first.
    pub hits: &'a [Scored],
    /// Weight of this list.
    pub weight: f32,
}

/// Fuses `lists` with `fusion` and returns the best `n`.
pub fn fuse(lists: &[Ranked<'_>], fusion: Fusion, n: usize) -> Vec<Scored> {
    match fusion {
        Fusion::Rrf { k } => reciprocal_rank(lists, k, n),
        Fusion::Convex => convex(lists, n),
    }
}

/// Reciprocal rank fusion of `lists` with rank offset `k`; the best `n` results.
pub fn reciprocal_rank(lists: &[Ranked<'_>], k: f32, n: usize) -> Vec<Scored> {
    let mut scores: HashMap<u32, f32> = HashMap::new();
    for list in lists {
        for (rank, hit) in list.hits.iter().enumerate() {
            *scores.entry(hit.chunk).or_default() += list.weight / (k + rank as f32 + 1.0);
        }
    }
    top_k(scores.into_iter().map(|(chunk, score)| Scored { chunk, score }), n)
}

/// Convex combination of min–max normalised scores of `lists`; the best `n` results.
/// A list whose scores are all equal contributes its full weight to each of its hits.
pub fn convex(lists: &[Ranked<'_>], n: usize) -> Vec<Scored> {
    let total: f32 = lists.iter().map(|l| l.weight).sum::<f32>().max(f32::EPSILON);
    let mut scores: HashMap<u32, f32> = HashMap::new();
    for list in lists {
        let (lo, hi) = list.hits.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), h| {
            (lo.min(h.score), hi.max(h.score))
        });
        let span = hi - lo;
        for hit in list.hits {
            let normalised = if span > 0.0 { (hit.score - lo) / span } else { 1.0 };
            *scores.entry(hit.chunk).or_default() += list.weight * normalised / total;
        }
    }
    top_k(scores.into_iter().map(|(chunk, score)| Scored { chunk, score }), n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[(u32, f32)]) -> Vec<Scored> {
        items.iter().map(|&(chunk, score)| Scored { chunk, score }).collect()
    }

    #[test]
    fn rrf_rewards_agreement_between_lists() {
        let a = list(&[(1, 9.0), (2, 8.0), (3, 1.0)]);
        let b = list(&[(2, 0.9), (3, 0.8), (4, 0.1)]);
        let lists = [Ranked { hits: &a, weight: 1.0 }, Ranked { hits: &b, weight: 1.0 }];
        let fused = reciprocal_rank(&lists, 60.0, 10);
        assert_eq!(fused[0].chunk, 2);
        assert!((fused[0].score - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-7);
        assert_eq!(fused.len(), 4);
        assert_eq!(fused.last().map(|s| s.chunk), Some(4));
    }

    #[test]
    fn convex_uses_normalised_score_gaps() {
        let a = list(&[(1, 10.0), (2, 1.1), (3, 1.0)]);
        let b = list(&[(2, 1.0), (1, 0.9), (3, 0.0)]);
        let lists = [Ranked { hits: &a, weight: 0.5 }, Ranked { hits: &b, weight: 0.5 }];
        let fused = convex(&lists, 2);
        assert_eq!(fused.iter().map(|s| s.chunk).collect::<Vec<_>>(), [1, 2]);
        assert!((fused[0].score - 0.95).abs() < 1e-6);
    }
}
