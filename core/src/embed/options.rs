//! How an [`super::Embedder`] turns text into vectors: pooling, prefixes, limits.

use serde::{Deserialize, Serialize};

pub use crate::bundle::Pooling;

/// Settings of an [`super::Embedder`]; [`EmbedderOptions::minilm`] matches
/// `sentence-transformers/all-MiniLM-L6-v2`.
///
/// Other BERT-family models work by changing the fields: bge uses [`Pooling::Cls`] and a query
/// prefix such as `"Represent this sentence for searching relevant passages: "`; e5 uses mean
/// pooling with the prefixes `"query: "` and `"passage: "`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmbedderOptions {
    /// Name of the model, recorded with the vectors (for example in a bundle manifest).
    pub model_id: String,
    /// How token vectors are pooled.
    pub pooling: Pooling,
    /// Text put before every query.
    pub query_prefix: String,
    /// Text put before every document (chunk).
    pub document_prefix: String,
    /// Longest input in tokens, special tokens included; longer inputs are truncated. Capped at
    /// the model's `max_position_embeddings`.
    pub max_tokens: usize,
    /// Texts run through the model at once (padded to the longest of the batch).
    pub batch_size: usize,
    /// Scale every vector to unit length (cosine similarity becomes a dot product).
    pub normalize: bool,
}

impl EmbedderOptions {
    /// Identifier of the default model.
    pub const MINILM_ID: &'static str = "sentence-transformers/all-MiniLM-L6-v2";

    /// Defaults of `sentence-transformers/all-MiniLM-L6-v2`: mean pooling, no prefixes, 256
    /// tokens (its `max_seq_length`), batches of 16, normalised vectors.
    pub fn minilm() -> Self {
        Self {
            model_id: Self::MINILM_ID.to_owned(),
            pooling: Pooling::Mean,
            query_prefix: String::new(),
            document_prefix: String::new(),
            max_tokens: 256,
            batch_size: 16,
            normalize: true,
        }
    }
}

impl Default for EmbedderOptions {
    fn default() -> Self {
        Self::minilm()
    }
}
