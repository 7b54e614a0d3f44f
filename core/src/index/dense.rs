//! Dense retrieval: nearest neighbours of a query embedding among the chunk embeddings.
//!
//! Vectors are L2-normalised sentence embeddings (384 dimensions for all-MiniLM-L6-v2), one
//! per chunk, chunk `i` at position `i`; the score is the dot product, which for unit vectors
//! is the cosine similarity.
//!
//! # Algorithm
//!
//! - **Exact search** below [`DenseParams::exact_below`] vectors: every vector is scored with
//!   a dot-product loop of eight independent lanes, which the compiler turns into SIMD (SSE/AVX
//!   natively, simd128 on wasm32). No graph is built or stored for such corpora.
//! - **HNSW** (hierarchical navigable small world graph, Malkov & Yashunin 2018) from that
//!   size on: built by `instant-distance` with a fixed seed and simple neighbour selection (the
//!   `2·M = 64` nearest candidates in layer 0, `M = 32` above), then copied into a plain
//!   adjacency-list form that the bundle stores (`dense/build.rs` explains how). Search descends
//!   greedily through the upper layers and runs a beam of width `ef_search` in layer 0;
//!   every candidate is scored against the stored vectors, so the returned scores are exact.
//! - **int8 storage** ([`Quantization::Int8`]): per dimension `d`, `scale_d = max|x_d| / 127`
//!   and `x_d ≈ scale_d · round(x_d / scale_d)` (error at most `scale_d / 2`). A query is
//!   multiplied by the scales once, so scoring a vector is a plain i8 × f32 dot product.
//! - **Filters** are applied before results are cut to `k`: exact search skips disallowed
//!   chunks; HNSW search keeps the allowed ones among its `max(ef_search, k)` candidates and,
//!   if fewer than `k` remain (a selective filter), answers with an exact search over the
//!   allowed chunks instead, which is then both correct and cheap.
//!
//! # Serialised form
//!
//! Parameters, the dimension, the vectors as one byte string (little-endian f32, or i8 after
//! `dim` f32 scales) and, for HNSW, the node order and per-layer adjacency lists as postcard
//! varint lists. Nothing from `instant-distance` is stored. [`DenseIndex::validate`] checks
//! every offset and id after decoding.
//!
//! # Measurements and defaults
//!
//! 384-d unit vectors, release build, x86-64 without `target-cpu` flags, 2 cores shared with
//! other builds (load 4–8, so absolute times are pessimistic), 200 queries, recall@10 against
//! exact search of the same index. "Random" is uniform on the sphere (no neighbourhood
//! structure: a worst case); "low-rank" is a stand-in for sentence embeddings until real ones
//! are measured: a 24-d Gaussian through a fixed random 384×24 map plus isotropic noise.
//!
//! | data | n | storage | build | bytes/vector (vectors only) | decode + validate |
//! |---|---|---|---|---|---|
//! | low-rank | 10k | f32 | 4.9 s | 1,692 (1,536) | 6.3 ms |
//! | low-rank | 10k | int8 | 6.6 s | 540 (384) | 2.3 ms |
//! | low-rank | 100k | f32 | 311 s | 1,747 (1,536) | 150 ms (73 ms) |
//! | low-rank | 100k | int8 | 339 s | 595 (384) | 92 ms (24 ms) |
//!
//! | data | n | storage | exact | ef 16 | ef 32 | ef 64 | ef 128 | ef 256 |
//! |---|---|---|---|---|---|---|---|---|
//! | random | 10k | int8 | 0.79 ms | 0.27 / 0.14 ms | 0.43 / 0.24 ms | 0.62 / 0.38 ms | 0.81 / 0.70 ms | 0.94 / 0.96 ms |
//! | low-rank | 10k | int8 | 1.0 ms | 0.89 / 0.17 ms | 0.97 / 0.25 ms | 0.997 / 0.41 ms | 1.000 / 0.52 ms | 1.000 / 0.72 ms |
//! | low-rank | 100k | f32 | 24 ms | 0.74 / 0.82 ms | 0.88 / 1.2 ms | 0.957 / 1.8 ms | 0.991 / 2.9 ms | 0.998 / 5.0 ms |
//! | low-rank | 100k | int8 | 26 ms | 0.74 / 0.84 ms | 0.87 / 1.2 ms | 0.953 / 1.7 ms | 0.988 / 3.4 ms | 0.999 / 5.7 ms |
//!
//! (recall@10 / latency per query.) Hence the [defaults](DenseParams::default):
//!
//! - `ef_search = 128`: the smallest beam with recall@10 ≈ 0.99 at 100k low-rank vectors
//!   (0.957 at 64); about 10× faster than exact search there.
//! - `exact_below = 10_000`: exact search costs about 0.1 µs per vector (1 ms at 10k), close to
//!   HNSW at `ef_search = 128` (0.5 ms) while being exact, building instantly and saving the
//!   graph's ~156 bytes per vector (40 % of an int8 index). Random 384-d vectors show that the
//!   graph can even lose at 10k (recall 0.94 at `ef = 256`, slower than exact).
//! - `ef_construction = 128`, simple neighbour selection: `instant-distance`'s heuristic
//!   selection did not finish a 10k build in 8 CPU-minutes.
//! - `Int8`: the same recall as f32 (its ranking agrees with f32 on ≥ 9 of the top 10, see the
//!   tests), a quarter of the vector bytes and a third of the decode time.
//! - Layer 0 keeps all 64 neighbours: cutting it to 32 (or 24) saved 63 (85) bytes per vector
//!   at 10k but needed `ef = 128` (`256`) for the recall that 64 neighbours reach at 64.
//!
//! Building uses rayon threads inside `instant-distance`; with more than one thread the
//! insertion order, and so the graph, can vary between runs (searches stay correct). Set
//! `RAYON_NUM_THREADS=1` for byte-identical bundles.

mod build;
mod graph;
mod vectors;

use serde::{Deserialize, Serialize};

pub use self::vectors::Quantization;
pub(crate) use self::vectors::{Int8Rows, dequantized, dot, dot_i8, dot_i8_bytes, scaled};
use self::{graph::Graph, vectors::Vectors};
use super::{Scored, top_k};
use crate::{Error, Result};

/// Build and search parameters of a [`DenseIndex`] (recorded in the bundle manifest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DenseParams {
    /// Candidate list size while inserting into the HNSW graph (larger: better graph, slower
    /// build).
    pub ef_construction: usize,
    /// Beam width of an HNSW search (at least `k` is used).
    pub ef_search: usize,
    /// Storage of the vectors.
    pub quantization: Quantization,
    /// Corpora with fewer vectors are searched exactly and get no graph.
    pub exact_below: usize,
}

/// `ef_construction` 128, `ef_search` 128, int8, exact below 10,000 vectors (measured: see
/// the [module docs](self)).
impl Default for DenseParams {
    fn default() -> Self {
        Self {
            ef_construction: 128,
            ef_search: 128,
            quantization: Quantization::Int8,
            exact_below: 10_000,
        }
    }
}

impl DenseParams {
    /// Checks `ef_construction >= 1` and `ef_search >= 1`.
    ///
    /// # Errors
    /// [`Error::Config`] naming the bad value.
    pub fn validate(&self) -> Result<()> {
        if self.ef_construction == 0 || self.ef_search == 0 {
            return Err(Error::Config(format!(
                "dense index needs ef_construction >= 1 and ef_search >= 1 (got {} and {})",
                self.ef_construction, self.ef_search
            )));
        }
        Ok(())
    }
}

/// Chunk embeddings with an optional HNSW graph over them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DenseIndex {
    params: DenseParams,
    vectors: Vectors,
    /// Present when the index was built with at least `exact_below` vectors.
    graph: Option<Graph>,
}

impl DenseIndex {
    /// Indexes `vectors`, `len × dim` values row-major (row `i` is chunk `i`), with `params`;
    /// `seed` fixes the HNSW layer assignment.
    ///
    /// # Errors
    /// [`Error::Config`] for bad parameters, a dimension of 0, data that is not a whole number
    /// of rows, non-finite values or more than `u32::MAX` rows; [`Error::Index`] if the HNSW
    /// graph cannot be read back from the builder.
    pub fn build(vectors: &[f32], dim: usize, params: DenseParams, seed: u64) -> Result<Self> {
        params.validate()?;
        check_input(vectors, dim)?;
        let len = vectors.len() / dim;
        let graph = if len >= params.exact_below.max(1) {
            Some(build::hnsw(vectors, dim, params.ef_construction, seed)?)
        } else {
            None
        };
        let stored = Vectors::new(vectors, dim as u32, params.quantization);
        Ok(Self { params, vectors: stored, graph })
    }

    /// The parameters the index was built with (and searches with).
    pub fn params(&self) -> DenseParams {
        self.params
    }

    /// Sets the HNSW beam width used by [`search`](Self::search) (clamped to at least 1).
    pub fn set_ef_search(&mut self, ef_search: usize) {
        self.params.ef_search = ef_search.max(1);
    }

    /// Stores the vectors as `quantization` describes, keeping the HNSW graph. Going from f32
    /// to int8 gives the index an int8 build would have made; int8 to f32 keeps the int8
    /// rounding (it only widens the storage).
    pub fn requantize(&mut self, quantization: Quantization) {
        if quantization == self.params.quantization {
            return;
        }
        let flat: Vec<f32> =
            (0..self.len() as u32).filter_map(|row| self.vectors.get(row)).flatten().collect();
        self.vectors = Vectors::new(&flat, self.vectors.dim() as u32, quantization);
        self.params.quantization = quantization;
    }

    /// Dimension of the vectors.
    pub fn dimension(&self) -> usize {
        self.vectors.dim()
    }

    /// Number of vectors (chunks).
    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    /// Whether the index holds no vector.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether searches use the HNSW graph (else they are exact).
    pub fn has_graph(&self) -> bool {
        self.graph.is_some()
    }

    /// The vectors, when they are stored as int8 (a validated index's rows are whole).
    pub(crate) fn int8_rows(&self) -> Option<Int8Rows<'_>> {
        self.vectors.int8()
    }

    /// Vector `chunk` as stored (dequantised for int8), or `None` past the end.
    pub fn vector(&self, chunk: u32) -> Option<Vec<f32>> {
        self.vectors.get(chunk)
    }

    /// Checks internal consistency (vector data a whole number of rows, scales matching the
    /// dimension, the graph a permutation of the vectors with every offset and neighbour id in
    /// range), so that searching a decoded index can never index out of bounds.
    ///
    /// # Errors
    /// [`Error::Decode`] describing the first inconsistency.
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::Decode(format!("dense index: {what}")));
        if let Some(problem) = self.vectors.problem() {
            return bad(problem);
        }
        if self.vectors.quantization() != self.params.quantization {
            return bad("vector storage does not match its parameters");
        }
        match self.graph.as_ref().and_then(|g| g.problem(self.len())) {
            Some(problem) => bad(problem),
            None => Ok(()),
        }
    }

    /// The `k` chunks most similar to `query` among those for which `allow` holds, best first
    /// (HNSW when the index has a graph, else exact; see the [module docs](self)).
    ///
    /// # Errors
    /// [`Error::Query`] if `query` does not have [`dimension`](Self::dimension) values.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        allow: impl Fn(u32) -> bool,
    ) -> Result<Vec<Scored>> {
        self.check_query(query)?;
        let prepared = self.vectors.prepare(query);
        let score = |chunk| self.vectors.score(&prepared, chunk);
        if let Some(graph) = &self.graph
            && k > 0
        {
            let candidates = graph.search(self.params.ef_search.max(k), score);
            let allowed: Vec<Scored> = candidates.into_iter().filter(|s| allow(s.chunk)).collect();
            if allowed.len() >= k {
                return Ok(top_k(allowed, k));
            }
        }
        Ok(self.exact(&prepared, k, allow))
    }

    /// The exact `k` best chunks for `query` among those for which `allow` holds, best first
    /// (scores every allowed vector, ignoring the graph).
    ///
    /// # Errors
    /// [`Error::Query`] if `query` does not have [`dimension`](Self::dimension) values.
    pub fn search_exact(
        &self,
        query: &[f32],
        k: usize,
        allow: impl Fn(u32) -> bool,
    ) -> Result<Vec<Scored>> {
        self.check_query(query)?;
        Ok(self.exact(&self.vectors.prepare(query), k, allow))
    }

    fn exact(&self, prepared: &[f32], k: usize, allow: impl Fn(u32) -> bool) -> Vec<Scored> {
        let chunks = (0..self.len() as u32).filter(|&c| allow(c));
        top_k(chunks.map(|chunk| Scored { chunk, score: self.vectors.score(prepared, chunk) }), k)
    }

    fn check_query(&self, query: &[f32]) -> Result<()> {
        if query.len() != self.dimension() {
            return Err(Error::Query(format!(
                "the query embedding has {} dimensions, the index {}",
                query.len(),
                self.dimension()
            )));
        }
        Ok(())
    }
}

/// Checks that `vectors` are whole rows of `dim` finite values, at most `u32::MAX` of them.
fn check_input(vectors: &[f32], dim: usize) -> Result<()> {
    let bad = |what: String| Err(Error::Config(format!("dense index: {what}")));
    if dim == 0 || dim > u32::MAX as usize {
        return bad(format!("invalid dimension {dim}"));
    }
    if !vectors.len().is_multiple_of(dim) {
        return bad(format!("{} values are not whole vectors of {dim}", vectors.len()));
    }
    if vectors.len() / dim > u32::MAX as usize {
        return bad("more vectors than chunk ids".into());
    }
    if let Some(i) = vectors.iter().position(|x| !x.is_finite()) {
        return bad(format!("vector {} holds a non-finite value", i / dim));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
