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
//!   adjacency-list form that the bundle stores ([`build`] explains how). Search descends
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

mod build;
mod graph;
mod vectors;

use serde::{Deserialize, Serialize};

pub use self::vectors::Quantization;
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

impl Default for DenseParams {
    fn default() -> Self {
        Self {
            ef_construction: 128,
            ef_search: 64,
            quantization: Quantization::Int8,
            exact_below: 5_000,
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
    if vectors.len() % dim != 0 {
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
