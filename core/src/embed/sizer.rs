//! [`TokenSizer`]: chunk sizes in tokens of the embedding model's tokenizer.

use std::sync::Arc;

use tokenizers::Tokenizer;

use crate::Result;
use crate::chunk::{SizeUnit, Sizer};

/// Counts tokens with the embedding model's tokenizer (special tokens such as `[CLS]` and
/// `[SEP]` not counted), so chunks can be sized to fit the model's window.
///
/// Made by [`super::Embedder::token_sizer`] or [`TokenSizer::from_bytes`]. Cheap to clone.
#[derive(Clone)]
pub struct TokenSizer {
    tokenizer: Arc<Tokenizer>,
}

impl TokenSizer {
    /// A sizer from the bytes of a `tokenizer.json`.
    ///
    /// # Errors
    /// [`crate::Error::Model`] if the tokenizer cannot be parsed.
    pub fn from_bytes(tokenizer_json: &[u8]) -> Result<Self> {
        Ok(Self::new(super::tokenizer::parse(tokenizer_json)?))
    }

    /// Wraps a tokenizer; its truncation and padding are switched off so every token counts.
    pub(super) fn new(mut tokenizer: Tokenizer) -> Self {
        tokenizer.with_padding(None);
        // Removing truncation cannot fail (only setting a too-small maximum can).
        let _ = tokenizer.with_truncation(None);
        Self { tokenizer: Arc::new(tokenizer) }
    }
}

impl std::fmt::Debug for TokenSizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenSizer").finish_non_exhaustive()
    }
}

impl Sizer for TokenSizer {
    /// Number of tokens of `text`. Should the tokenizer fail on some input, the number of
    /// characters is returned instead: never fewer than the tokens of normal text, so chunks
    /// stay within the window.
    fn size(&self, text: &str) -> usize {
        match self.tokenizer.encode_fast(text, false) {
            Ok(encoding) => encoding.len(),
            Err(_) => text.chars().count(),
        }
    }

    fn unit(&self) -> SizeUnit {
        SizeUnit::Tokens
    }
}
