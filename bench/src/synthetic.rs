//! A synthetic corpus for search benchmarks at sizes no real judged data set here reaches.
//!
//! Texts are sentences of pseudo-words drawn from a Zipf distribution (as word frequencies in
//! real text are), each chunk naming one two-word proper name, so keyword extraction, the
//! graph and BM25 see realistic statistics. [`HashEmbedder`] gives every word a fixed random
//! vector and a text the normalised, rarity-weighted sum of its words' vectors: stand-in chunk
//! vectors of a model's dimension at no model cost.

use std::collections::HashMap;

use edgerag_core::bundle::{Embed, EmbeddingSpec};

/// Seeded splitmix64: the same corpus on every run.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.unit() * n as f64) as usize
    }
}

const SYLLABLES: [&str; 24] = [
    "ka", "ri", "to", "me", "sa", "lu", "ne", "po", "di", "ga", "vo", "ze", "bi", "fa", "mo",
    "tel", "ran", "dor", "vik", "sul", "pen", "mar", "lis", "qua",
];

/// Distinct vocabulary words, rank order (rank 0 is the most frequent).
const VOCABULARY: usize = 30_000;
/// Words per chunk (about 400 characters).
const WORDS_PER_CHUNK: usize = 60;
/// Proper names to draw from (two vocabulary words, capitalised).
const NAMES: usize = 2_000;
/// Vector dimension of [`HashEmbedder`] (that of all-MiniLM-L6-v2).
pub(super) const DIMENSION: usize = 384;

/// The `i`-th pseudo-word: syllables spelling `i` in base 24, so every word is distinct.
fn word(mut i: usize) -> String {
    let mut out = String::new();
    loop {
        out.push_str(SYLLABLES[i % SYLLABLES.len()]);
        i /= SYLLABLES.len();
        if i == 0 {
            break;
        }
    }
    // Two letters at least and never a stop word.
    out.push('n');
    out
}

fn capitalised(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |c| c.to_uppercase().chain(chars).collect())
}

/// Chunk texts and queries.
pub(super) struct Corpus {
    pub(super) texts: Vec<String>,
    pub(super) queries: Vec<String>,
}

/// `size` chunk texts and `queries` queries of 2–5 words taken from random chunks.
pub(super) fn corpus(size: usize, queries: usize, seed: u64) -> Corpus {
    let mut rng = Rng::new(seed);
    let words: Vec<String> = (0..VOCABULARY).map(word).collect();
    // Zipf (s = 1): P(rank r) ∝ 1 / (r + 1).
    let mut cdf = Vec::with_capacity(VOCABULARY);
    let mut total = 0.0;
    for rank in 0..VOCABULARY {
        total += 1.0 / (rank + 1) as f64;
        cdf.push(total);
    }
    let draw = |rng: &mut Rng| {
        let x = rng.unit() * total;
        cdf.partition_point(|&c| c < x).min(VOCABULARY - 1)
    };
    let names: Vec<String> = (0..NAMES)
        .map(|_| {
            let (a, b) = (rng.below(VOCABULARY), rng.below(VOCABULARY));
            format!("{} {}", capitalised(&words[a]), capitalised(&words[b]))
        })
        .collect();
    let mut chunk_words: Vec<Vec<usize>> = Vec::with_capacity(size);
    let mut texts = Vec::with_capacity(size);
    for _ in 0..size {
        let ranks: Vec<usize> = (0..WORDS_PER_CHUNK).map(|_| draw(&mut rng)).collect();
        let mut text = String::new();
        for (i, sentence) in ranks.chunks(15).enumerate() {
            let mut sentence: Vec<String> = sentence.iter().map(|&r| words[r].clone()).collect();
            sentence[0] = capitalised(&sentence[0]);
            if i == 1 {
                sentence.insert(3, names[rng.below(NAMES)].clone());
            }
            text.push_str(&sentence.join(" "));
            text.push_str(". ");
        }
        texts.push(text.trim_end().to_owned());
        chunk_words.push(ranks);
    }
    let queries = (0..queries)
        .map(|_| {
            let ranks = &chunk_words[rng.below(size.max(1))];
            let n = 2 + rng.below(4);
            (0..n)
                .map(|_| words[ranks[rng.below(ranks.len())]].as_str())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    Corpus { texts, queries }
}

/// Bag-of-words random-projection embedder over the synthetic vocabulary, standing in for the
/// model whose spec it is given: the bundle it builds takes queries embedded by that model.
pub(super) struct HashEmbedder {
    vectors: HashMap<String, Vec<f32>>,
    spec: EmbeddingSpec,
}

impl HashEmbedder {
    pub(super) fn new(seed: u64, spec: EmbeddingSpec) -> Self {
        let mut rng = Rng::new(seed ^ 0x5eed);
        let vectors = (0..VOCABULARY)
            .map(|rank| {
                // Rarer words weigh more, like IDF.
                let weight = ((rank + 2) as f32).ln();
                let vector =
                    (0..DIMENSION).map(|_| weight * (rng.unit() as f32 * 2.0 - 1.0)).collect();
                (word(rank), vector)
            })
            .collect();
        Self { vectors, spec }
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        let mut sum = vec![0f32; DIMENSION];
        for token in text.split(|c: char| !c.is_alphanumeric()) {
            if let Some(v) = self.vectors.get(&token.to_lowercase()) {
                sum.iter_mut().zip(v).for_each(|(s, x)| *s += x);
            }
        }
        let norm = sum.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm > 0.0 {
            sum.iter_mut().for_each(|x| *x /= norm);
        } else {
            sum[0] = 1.0;
        }
        sum
    }
}

impl Embed for HashEmbedder {
    fn spec(&self) -> EmbeddingSpec {
        self.spec.clone()
    }

    fn embed_documents(&self, texts: &[&str]) -> edgerag_core::Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| self.embed(t)).collect())
    }

    fn embed_query(&self, text: &str) -> edgerag_core::Result<Vec<f32>> {
        Ok(self.embed(text))
    }
}
