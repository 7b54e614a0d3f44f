//! Multi-head self-attention in plain `f32` arithmetic, read straight from the rows the query,
//! key and value layers write (sequences × tokens × hidden, each head's values side by side).
//!
//! Every sum runs over one sequence's own tokens, in order: padding keys are skipped rather
//! than masked, and padding rows are left at zero (later layers work row by row, attention
//! skips them again and pooling weights them 0). A text's vector is therefore the same bits
//! whatever it is batched with, and a batch of mixed lengths does none of its padding's
//! attention work.

use super::activation::exp;

/// The attention context of `query`, `key` and `value`, in their layout: sequences × tokens
/// × (`heads` · `head_size`). `mask` (sequences × `tokens`) is 0 at padding.
pub(super) fn attend(
    query: &[f32],
    key: &[f32],
    value: &[f32],
    mask: &[u32],
    tokens: usize,
    heads: usize,
    head_size: usize,
) -> candle_core::Result<Vec<f32>> {
    let hidden = heads * head_size;
    let expected = mask.len() * hidden;
    if tokens == 0
        || !mask.len().is_multiple_of(tokens)
        || [query, key, value].iter().any(|m| m.len() != expected)
    {
        return Err(candle_core::Error::Msg(format!(
            "attention over {} values per token got {}, {} and {} values for a mask of {} tokens",
            hidden,
            query.len(),
            key.len(),
            value.len(),
            mask.len()
        )));
    }
    let scale = 1.0 / (head_size as f32).sqrt();
    let mut context = vec![0f32; expected];
    let mut scores = Vec::with_capacity(tokens);
    for (sequence, mask) in mask.chunks_exact(tokens).enumerate() {
        let real: Vec<usize> = (0..tokens).filter(|&t| mask[t] != 0).collect();
        let start = sequence * tokens * hidden;
        for head in 0..heads {
            let at = |token: usize| start + token * hidden + head * head_size..;
            for &row in &real {
                let q = &query[at(row)][..head_size];
                scores.clear();
                scores.extend(real.iter().map(|&t| dot(q, &key[at(t)][..head_size]) * scale));
                softmax(&mut scores);
                let out = &mut context[at(row)][..head_size];
                for (&t, &p) in real.iter().zip(&scores) {
                    for (out, v) in out.iter_mut().zip(&value[at(t)][..head_size]) {
                        *out += p * v;
                    }
                }
            }
        }
    }
    Ok(context)
}

/// `a · b` in eight interleaved partial sums (vectorisable, and one fixed order).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a_tail, b_tail) = (a.chunks_exact(8).remainder(), b.chunks_exact(8).remainder());
    for (a, b) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        for ((lane, a), b) in lanes.iter_mut().zip(a).zip(b) {
            *lane += a * b;
        }
    }
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(a, b)| a * b).sum();
    let [l0, l1, l2, l3, l4, l5, l6, l7] = lanes;
    ((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7)) + tail
}

/// Softmax in place.
fn softmax(scores: &mut [f32]) {
    let largest = scores.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    for x in scores.iter_mut() {
        *x = exp(*x - largest);
    }
    let inverse = 1.0 / scores.iter().sum::<f32>();
    for x in scores {
        *x *= inverse;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// Attention as written in the textbook: f64, every key scored, padding masked out.
    fn reference(
        q: &[f32],
        k: &[f32],
        v: &[f32],
        mask: &[u32],
        tokens: usize,
        heads: usize,
        size: usize,
    ) -> Vec<f64> {
        let hidden = heads * size;
        let mut out = vec![0f64; q.len()];
        for s in 0..mask.len() / tokens {
            for h in 0..heads {
                let at = |t: usize, d: usize| (s * tokens + t) * hidden + h * size + d;
                for i in 0..tokens {
                    let scores: Vec<f64> = (0..tokens)
                        .map(|j| {
                            let dot: f64 = (0..size)
                                .map(|d| f64::from(q[at(i, d)]) * f64::from(k[at(j, d)]))
                                .sum();
                            if mask[s * tokens + j] == 0 {
                                f64::NEG_INFINITY
                            } else {
                                dot / (size as f64).sqrt()
                            }
                        })
                        .collect();
                    let largest = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let weights: Vec<f64> = scores.iter().map(|x| (x - largest).exp()).collect();
                    let total: f64 = weights.iter().sum();
                    for d in 0..size {
                        out[at(i, d)] =
                            (0..tokens).map(|j| weights[j] / total * f64::from(v[at(j, d)])).sum();
                    }
                }
            }
        }
        out
    }

    /// Deterministic values in [-2, 2).
    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut state = seed;
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (state >> 8) as f32 / (1 << 24) as f32 * 4.0 - 2.0
            })
            .collect()
    }

    #[test]
    fn matches_masked_attention_on_real_tokens() {
        let (tokens, heads, size) = (7, 3, 12);
        let mask = [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0];
        let n = mask.len() * heads * size;
        let (q, k, v) = (values(n, 1), values(n, 2), values(n, 3));
        let got = attend(&q, &k, &v, &mask, tokens, heads, size).unwrap();
        let want = reference(&q, &k, &v, &mask, tokens, heads, size);
        for (i, (got, want)) in got.iter().zip(&want).enumerate() {
            let (token, padding) = (i / (heads * size), mask[i / (heads * size)] == 0);
            if padding {
                assert_eq!(*got, 0.0, "padding row {token}");
            } else {
                assert!((f64::from(*got) - want).abs() < 1e-5, "value {i}: {got}, not {want}");
            }
        }
    }

    #[test]
    fn padding_changes_no_bit_of_a_sequence() {
        let (heads, size) = (2, 16);
        let hidden = heads * size;
        let (q, k, v) = (values(3 * hidden, 4), values(3 * hidden, 5), values(3 * hidden, 6));
        let alone = attend(&q, &k, &v, &[1, 1, 1], 3, heads, size).unwrap();
        // The same three tokens padded to eight, after a sequence of eight real ones.
        let pad = |m: &[f32], seed| {
            [values(8 * hidden, seed), m.to_vec(), vec![9.0; 5 * hidden]].concat()
        };
        let mask = [[1; 8], [1, 1, 1, 0, 0, 0, 0, 0]].concat();
        let batched = attend(&pad(&q, 7), &pad(&k, 8), &pad(&v, 9), &mask, 8, heads, size).unwrap();
        assert_eq!(batched[8 * hidden..11 * hidden], alone[..]);
        assert!(batched[11 * hidden..].iter().all(|&x| x == 0.0));
    }

    #[test]
    fn refuses_mismatched_sizes() {
        let q = values(64, 1);
        assert!(attend(&q, &q, &q, &[1, 1], 2, 2, 16).is_ok());
        assert!(attend(&q, &q[..32], &q, &[1, 1], 2, 2, 16).is_err());
        assert!(attend(&q, &q, &q, &[1, 1], 3, 2, 16).is_err());
        assert!(attend(&q, &q, &q, &[1, 1], 0, 2, 16).is_err());
    }
}
