//! The tokenizer of a GGUF chat model, built from its metadata when no `tokenizer.json` comes
//! with it: the vocabulary (`tokenizer.ggml.tokens`), the merges (`tokenizer.ggml.merges`), the
//! control and user-defined tokens (`tokenizer.ggml.token_type`) and the pre-tokenizer that
//! `tokenizer.ggml.pre` names, as llama.cpp reads them.
//!
//! Supported: byte-level BPE (`tokenizer.ggml.model` = `gpt2`), the family of GPT-2, StarCoder,
//! SmolLM, Llama 3 and Qwen 2. SentencePiece models (`llama`) are refused with a message.

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::{BPE, Vocab};
use tokenizers::normalizers::unicode::NFC;
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, SplitDelimiterBehavior, Tokenizer};

use crate::{Error, Result};

/// GGUF token types (llama.cpp's `llama_token_type`) that are never split: control tokens such
/// as `<|im_start|>` and user-defined ones.
const CONTROL: i32 = 3;
const USER_DEFINED: i32 = 4;

/// Llama 3's split: contractions, words with one leading non-letter, numbers of up to three
/// digits, punctuation runs, newlines, spaces.
const LLAMA3_SPLIT: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Qwen 2's: as Llama 3's with single digits.
const QWEN2_SPLIT: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// The model's tokenizer and its special tokens.
pub(super) struct GgufTokenizer {
    /// The tokenizer; special tokens in text are recognised as themselves (for the chat
    /// template's markup).
    pub(super) tokenizer: Tokenizer,
    /// The same tokenizer, reading special tokens' text as plain text: for message contents,
    /// which must never become special tokens.
    pub(super) plain: Tokenizer,
    /// The text of every special token, longest first.
    pub(super) specials: Vec<String>,
    /// The tokens `tokenizer.ggml.eos_token_id` and `eot_token_id` name.
    pub(super) end_ids: Vec<u32>,
    /// Text of the beginning- and end-of-sequence tokens, for chat templates.
    pub(super) bos: String,
    pub(super) eos: String,
}

/// Builds the tokenizer of `content`.
pub(super) fn from_gguf(content: &Content) -> Result<GgufTokenizer> {
    let model = string(content, "tokenizer.ggml.model")?;
    if model != "gpt2" {
        return Err(Error::Generation(format!(
            "tokenizer {model:?} is not supported (only byte-level BPE, \"gpt2\")"
        )));
    }
    let tokens = strings(content, "tokenizer.ggml.tokens")?;
    let merges = strings(content, "tokenizer.ggml.merges")?
        .into_iter()
        .map(|merge| {
            merge
                .split_once(' ')
                .map(|(a, b)| (a.to_owned(), b.to_owned()))
                .ok_or_else(|| Error::Generation(format!("merge {merge:?} is not two tokens")))
        })
        .collect::<Result<Vec<_>>>()?;
    let vocab: Vocab = tokens.iter().cloned().zip(0u32..).collect();
    let bpe = BPE::builder().vocab_and_merges(vocab, merges).build().map_err(|e| {
        Error::Generation(format!("tokenizer: {}", crate::one_line(&e.to_string())))
    })?;
    let mut tokenizer = Tokenizer::new(bpe);
    let pre = content.metadata.get("tokenizer.ggml.pre").and_then(|v| v.to_string().ok());
    tokenizer.with_pre_tokenizer(Some(pre_tokenizer(pre.map_or("default", String::as_str))?));
    if matches!(pre.map(String::as_str), Some("qwen2")) {
        tokenizer.with_normalizer(Some(NFC)).map_err(|e| Error::Generation(e.to_string()))?;
    }
    tokenizer.with_decoder(Some(ByteLevelDecoder::default()));

    let types = match content.metadata.get("tokenizer.ggml.token_type") {
        Some(value) => integers(value, "tokenizer.ggml.token_type")?,
        None => Vec::new(),
    };
    let mut specials: Vec<String> = tokens
        .iter()
        .zip(&types)
        .filter(|&(_, &kind)| kind == CONTROL || kind == USER_DEFINED)
        .map(|(token, _)| token.clone())
        .collect();
    let added: Vec<AddedToken> =
        specials.iter().map(|token| AddedToken::from(token.clone(), true)).collect();
    tokenizer.add_special_tokens(added).map_err(|e| {
        Error::Generation(format!("tokenizer: {}", crate::one_line(&e.to_string())))
    })?;
    specials.sort_by_key(|token| std::cmp::Reverse(token.len()));
    // Every added token is special, so none is matched in text this one reads.
    let mut plain = tokenizer.clone();
    plain.set_encode_special_tokens(true);

    let token = |key: &str| -> Result<Option<u32>> {
        let Some(value) = content.metadata.get(key) else { return Ok(None) };
        let id = integer(value).ok_or_else(|| Error::Generation(format!("{key} is not an id")))?;
        match u32::try_from(id).ok().filter(|&id| (id as usize) < tokens.len()) {
            Some(id) => Ok(Some(id)),
            None => Err(Error::Generation(format!("{key} {id} is not a token"))),
        }
    };
    let eos = token("tokenizer.ggml.eos_token_id")?
        .ok_or_else(|| Error::Generation("the file names no end-of-sequence token".into()))?;
    let mut end_ids = vec![eos];
    end_ids.extend(token("tokenizer.ggml.eot_token_id")?.filter(|&id| id != eos));
    let text = |id: Option<u32>| id.map(|id| tokens[id as usize].clone()).unwrap_or_default();
    Ok(GgufTokenizer {
        tokenizer,
        plain,
        specials,
        end_ids,
        bos: text(token("tokenizer.ggml.bos_token_id")?),
        eos: text(Some(eos)),
    })
}

/// The pre-tokenizer llama.cpp uses for `pre` (`tokenizer.ggml.pre`), then byte-level mapping
/// (never with a space added in front).
fn pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper> {
    let byte_level = ByteLevel::new(false, false, true);
    let split = |pattern: &str| -> Result<PreTokenizerWrapper> {
        let split = Split::new(
            SplitPattern::Regex(pattern.to_owned()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|e| Error::Generation(format!("pre-tokenizer: {e}")))?;
        Ok(Sequence::new(vec![split.into(), ByteLevel::new(false, false, false).into()]).into())
    };
    match pre {
        // Every digit on its own, then GPT-2's split.
        "smollm" | "starcoder" | "refact" | "codeshell" | "command-r" => {
            Ok(Sequence::new(vec![Digits::new(true).into(), byte_level.into()]).into())
        }
        "llama3" | "llama-bpe" | "smaug-bpe" => split(LLAMA3_SPLIT),
        "qwen2" => split(QWEN2_SPLIT),
        "default" | "gpt2" | "gpt-2" => Ok(byte_level.into()),
        other => Err(Error::Generation(format!(
            "pre-tokenizer {other:?} is not supported (supported: smollm, starcoder, refact, \
             codeshell, command-r, llama3, llama-bpe, smaug-bpe, qwen2, gpt2)"
        ))),
    }
}

/// The string at `key`.
pub(super) fn string<'a>(content: &'a Content, key: &str) -> Result<&'a String> {
    content
        .metadata
        .get(key)
        .and_then(|v| v.to_string().ok())
        .ok_or_else(|| Error::Generation(format!("the file has no {key}")))
}

fn strings(content: &Content, key: &str) -> Result<Vec<String>> {
    let values = content
        .metadata
        .get(key)
        .and_then(|v| v.to_vec().ok())
        .ok_or_else(|| Error::Generation(format!("the file has no {key}")))?;
    values
        .iter()
        .map(|v| v.to_string().cloned())
        .collect::<candle_core::Result<_>>()
        .map_err(|_| Error::Generation(format!("{key} holds a value that is not text")))
}

fn integers(value: &Value, key: &str) -> Result<Vec<i32>> {
    let fail = || Error::Generation(format!("{key} is not a list of integers"));
    value
        .to_vec()
        .map_err(|_| fail())?
        .iter()
        .map(|v| integer(v).and_then(|i| i32::try_from(i).ok()).ok_or_else(fail))
        .collect()
}

/// An integer of any GGUF integer type.
fn integer(value: &Value) -> Option<i64> {
    match *value {
        Value::U8(v) => Some(v.into()),
        Value::I8(v) => Some(v.into()),
        Value::U16(v) => Some(v.into()),
        Value::I16(v) => Some(v.into()),
        Value::U32(v) => Some(v.into()),
        Value::I32(v) => Some(v.into()),
        Value::U64(v) => i64::try_from(v).ok(),
        Value::I64(v) => Some(v),
        _ => None,
    }
}
