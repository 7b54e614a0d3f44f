//! Loading and configuring the `tokenizer.json` of a model.

use tokenizers::{
    PaddingDirection, PaddingParams, PaddingStrategy, Tokenizer, TruncationDirection,
    TruncationParams, TruncationStrategy,
};

use crate::{Error, Result};

/// Parses a `tokenizer.json`.
pub(super) fn parse(tokenizer_json: &[u8]) -> Result<Tokenizer> {
    Tokenizer::from_bytes(tokenizer_json)
        .map_err(|e| Error::Model(format!("tokenizer.json: {}", crate::one_line(&e.to_string()))))
}

/// Configures `tokenizer` for embedding: truncation to `max_tokens` (special tokens included)
/// and padding to the longest input of each batch, with the tokenizer's own pad token.
///
/// `tokenizer.json` files often carry settings of their own (MiniLM's pads every input to 128
/// tokens and truncates there); these are replaced.
pub(super) fn configure(tokenizer: &mut Tokenizer, max_tokens: usize) -> Result<()> {
    let (pad_id, pad_type_id, pad_token) = match tokenizer.get_padding() {
        Some(p) => (p.pad_id, p.pad_type_id, p.pad_token.clone()),
        None => {
            let token = "[PAD]";
            let id = tokenizer.token_to_id(token).ok_or_else(|| {
                Error::Model(
                    "tokenizer.json: no padding configured and no [PAD] token in the vocabulary"
                        .to_owned(),
                )
            })?;
            (id, 0, token.to_owned())
        }
    };
    tokenizer.with_padding(Some(PaddingParams {
        strategy: PaddingStrategy::BatchLongest,
        direction: PaddingDirection::Right,
        pad_to_multiple_of: None,
        pad_id,
        pad_type_id,
        pad_token,
    }));
    tokenizer
        .with_truncation(Some(TruncationParams {
            direction: TruncationDirection::Right,
            max_length: max_tokens,
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
        }))
        .map_err(|e| {
            Error::Model(format!("tokenizer.json: cannot truncate at {max_tokens} tokens: {e}"))
        })?;
    Ok(())
}
