//! The quantized model file: a BERT-family encoder (all-MiniLM-L6-v2: 87 MB of `f32`
//! safetensors) as one GGUF file of about 25 MB that holds the weights, the configuration and
//! the tokenizer, and stays that small in memory while it runs.
//!
//! [`quantize`] writes it from the model's three files; [`super::Embedder::from_gguf`] loads it.
//! The matrices stay `q8_0` in memory and are multiplied in integers, with the activations
//! rounded to 16 bits (`matmul.rs`): as accurate as the `f32` product on the same weights and
//! the same bits on every platform. Attention (`attention.rs`) sums over each text's own
//! tokens only and the softmax and GELU are plain `f32` arithmetic (`activation.rs`), so a
//! vector is the same bits batched or alone, and natively and in WebAssembly it differs only
//! in last bits, where candle's layer norm and sums use each architecture's vector code
//! (both tested). The
//! word-embedding table stays `q8_0` too and only the rows of a batch's tokens are expanded. Vectors keep the model's identity: a bundle
//! embedded with the `f32` model is searched with the quantized one and vice versa (cosine
//! ≥ 0.999 to the `f32` vectors; measured in the tests).
//!
//! # File layout (format version 1)
//!
//! A GGUF file, container version 2 as candle writes it (little-endian, tensor data aligned
//! to 32 bytes). Metadata, in this order:
//!
//! | key | type | value |
//! |-----|------|-------|
//! | `general.architecture` | string | `bert` |
//! | `edgerag.format_version` | u32 | [`FORMAT_VERSION`]; a reader refuses any other |
//! | `edgerag.config_json` | string | the model's `config.json`, verbatim |
//! | `edgerag.tokenizer_json` | string | the model's `tokenizer.json`, verbatim |
//!
//! Tensors, in this order, named as in Hugging Face's `BertModel` (without a `bert.` prefix);
//! `L` runs over the layers, and `V`, `P`, `T`, `H`, `I` are the configuration's
//! `vocab_size`, `max_position_embeddings`, `type_vocab_size`, `hidden_size` and
//! `intermediate_size`. Shapes are given rows × columns (GGUF lists dimensions the other way
//! round):
//!
//! | tensor | shape | type |
//! |--------|-------|------|
//! | `embeddings.word_embeddings.weight` | V × H | q8_0 |
//! | `embeddings.position_embeddings.weight` | P × H | f32 |
//! | `embeddings.token_type_embeddings.weight` | T × H | f32 |
//! | `embeddings.LayerNorm.{weight,bias}` | H | f32 |
//! | `encoder.layer.L.attention.self.{query,key,value}.weight` | H × H | q8_0 |
//! | `encoder.layer.L.attention.self.{query,key,value}.bias` | H | f32 |
//! | `encoder.layer.L.attention.output.dense.weight` | H × H | q8_0 |
//! | `encoder.layer.L.attention.output.dense.bias` | H | f32 |
//! | `encoder.layer.L.attention.output.LayerNorm.{weight,bias}` | H | f32 |
//! | `encoder.layer.L.intermediate.dense.weight` | I × H | q8_0 |
//! | `encoder.layer.L.intermediate.dense.bias` | I | f32 |
//! | `encoder.layer.L.output.dense.weight` | H × I | q8_0 |
//! | `encoder.layer.L.output.dense.bias` | H | f32 |
//! | `encoder.layer.L.output.LayerNorm.{weight,bias}` | H | f32 |
//!
//! (within a layer: query, key and value each weight then bias, then the attention output's
//! dense weight, bias and LayerNorm, the intermediate dense, the output dense and LayerNorm).
//! `q8_0` is GGML's: each row in blocks of 32 values, a block being an `f16` scale `d` and 32
//! `i8` `q` (34 bytes; value = `d · q`, `d` = the block's largest magnitude / 127), so `H` and
//! `I` must be multiples of 32. The pooler is left out: sentence embeddings pool the last
//! layer themselves. The reader accepts exactly this list (names, shapes and types).
//!
//! Writing is deterministic: the same three files give the same bytes, on every platform.
//!
//! # Versions
//!
//! - 1: the layout above.

mod activation;
mod attention;
mod bert;
mod matmul;
pub(crate) mod tensors;

use std::collections::HashMap;
use std::io::{Cursor, Read, Seek};

use candle_core::quantized::QTensor;
use candle_core::quantized::gguf_file::{self, Content, Value};
use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::Config;

pub(crate) use bert::Bert;

use super::candle_message;
use crate::{Error, Result};

/// Version of the layout [`quantize`] writes and [`super::Embedder::from_gguf`] reads.
pub const FORMAT_VERSION: u32 = 1;

/// Metadata key of the architecture (`bert`).
pub const ARCHITECTURE_KEY: &str = "general.architecture";
/// Metadata key of the format version (u32).
pub const VERSION_KEY: &str = "edgerag.format_version";
/// Metadata key of the model's `config.json` (string).
pub const CONFIG_KEY: &str = "edgerag.config_json";
/// Metadata key of the model's `tokenizer.json` (string).
pub const TOKENIZER_KEY: &str = "edgerag.tokenizer_json";

/// Values of one `q8_0` block.
const BLOCK: usize = 32;

/// Converts a BERT-family model — the bytes of its `config.json`, `tokenizer.json` and
/// `model.safetensors` (`f32`, `f16` or `bf16`) — into the quantized GGUF file described in
/// the [module documentation](self).
///
/// # Errors
/// [`Error::Model`] naming the file that cannot be parsed or does not fit the configuration
/// (a missing tensor, a wrong shape), or a configuration the format cannot hold (hidden or
/// intermediate size not a multiple of 32).
pub fn quantize(config_json: &[u8], tokenizer_json: &[u8], safetensors: &[u8]) -> Result<Vec<u8>> {
    let config = super::parse_config(config_json)?;
    check(&config)?;
    let text = |bytes: &[u8], name: &str| {
        std::str::from_utf8(bytes)
            .map(str::to_owned)
            .map_err(|e| Error::Model(format!("{name}: not UTF-8: {e}")))
    };
    let config_text = text(config_json, "config.json")?;
    let tokenizer_text = text(tokenizer_json, "tokenizer.json")?;
    super::tokenizer::parse(tokenizer_json)?;

    let weights_error =
        |e: candle_core::Error| Error::Model(format!("model.safetensors: {}", candle_message(&e)));
    let weights = VarBuilder::from_slice_safetensors(safetensors, DType::F32, &Device::Cpu)
        .map_err(weights_error)?;
    let weights = root(weights, &config);
    let mut quantized = Vec::new();
    for spec in tensors::all(&config) {
        let tensor = weights.get(spec.shape.as_slice(), &spec.name).map_err(weights_error)?;
        let tensor = QTensor::quantize(&tensor, spec.kind.dtype()).map_err(weights_error)?;
        quantized.push((spec.name, tensor));
    }

    let metadata = [
        (ARCHITECTURE_KEY, Value::String("bert".to_owned())),
        (VERSION_KEY, Value::U32(FORMAT_VERSION)),
        (CONFIG_KEY, Value::String(config_text)),
        (TOKENIZER_KEY, Value::String(tokenizer_text)),
    ];
    let metadata: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (*k, v)).collect();
    let tensors: Vec<(&str, &QTensor)> = quantized.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &metadata, &tensors)
        .map_err(|e| Error::Model(format!("writing the GGUF file: {e}")))?;
    Ok(out.into_inner())
}

/// The weights of a checkpoint whose tensor names may carry a prefix (`bert.`, or the model
/// type, as candle's `BertModel` accepts).
fn root<'a>(weights: VarBuilder<'a>, config: &Config) -> VarBuilder<'a> {
    let probe = "embeddings.word_embeddings.weight";
    if weights.contains_tensor(probe) {
        return weights;
    }
    let prefixes = ["bert"].into_iter().chain(config.model_type.as_deref());
    for prefix in prefixes {
        if weights.contains_tensor(&format!("{prefix}.{probe}")) {
            return weights.pp(prefix);
        }
    }
    weights
}

/// Checks that the format can hold a model of this configuration.
fn check(config: &Config) -> Result<()> {
    let (h, i, heads) = (config.hidden_size, config.intermediate_size, config.num_attention_heads);
    if h == 0 || h % BLOCK != 0 || i == 0 || i % BLOCK != 0 {
        return Err(Error::Model(format!(
            "config.json: hidden_size ({h}) and intermediate_size ({i}) must be multiples of \
             {BLOCK} for q8_0"
        )));
    }
    if heads == 0 || h % heads != 0 {
        return Err(Error::Model(format!(
            "config.json: hidden_size ({h}) is not a multiple of num_attention_heads ({heads})"
        )));
    }
    Ok(())
}

/// Reads the configuration and tokenizer of a quantized file: the first step of loading it,
/// so that option and tokenizer errors come before the weights are read.
pub(super) fn read_header<R: Read + Seek>(reader: &mut R) -> Result<(Content, Config, String)> {
    let content = Content::read(reader).map_err(|e| invalid(&candle_message(&e)))?;
    let string = |key: &str| match content.metadata.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(invalid(&format!("metadata {key} is not a string"))),
        None => Err(invalid(&format!("no metadata {key}"))),
    };
    let architecture = string(ARCHITECTURE_KEY)?;
    match content.metadata.get(VERSION_KEY) {
        Some(Value::U32(FORMAT_VERSION)) => {}
        Some(Value::U32(found)) => {
            return Err(invalid(&format!(
                "format version {found}, but this edgerag reads version {FORMAT_VERSION}: \
                 quantize the model again"
            )));
        }
        _ => return Err(invalid(&format!("no u32 metadata {VERSION_KEY}: not an edgerag model"))),
    }
    if architecture != "bert" {
        return Err(invalid(&format!("architecture {architecture:?}, expected \"bert\"")));
    }
    let config = super::parse_config(string(CONFIG_KEY)?.as_bytes())?;
    check(&config)?;
    let tokenizer = string(TOKENIZER_KEY)?;
    Ok((content, config, tokenizer))
}

/// Reads the weights listed by [`tensors::all`], checking each one's shape and type, into the
/// encoder.
pub(super) fn read_weights<R: Read + Seek>(
    reader: &mut R,
    content: &Content,
    config: &Config,
) -> Result<Bert> {
    let mut weights = HashMap::new();
    for spec in tensors::all(config) {
        let info = content
            .tensor_infos
            .get(&spec.name)
            .ok_or_else(|| invalid(&format!("no tensor {}", spec.name)))?;
        if info.shape.dims() != spec.shape.as_slice() || info.ggml_dtype != spec.kind.dtype() {
            return Err(invalid(&format!(
                "tensor {} is {:?} {:?}, expected {:?} {:?}",
                spec.name,
                info.ggml_dtype,
                info.shape.dims(),
                spec.kind.dtype(),
                spec.shape
            )));
        }
        let tensor = content
            .tensor(reader, &spec.name, &Device::Cpu)
            .map_err(|e| invalid(&format!("tensor {}: {}", spec.name, candle_message(&e))))?;
        weights.insert(spec.name, tensor);
    }
    Bert::load(config, &mut bert::Weights::new(weights))
        .map_err(|e| invalid(&format!("cannot assemble the encoder: {}", candle_message(&e))))
}

fn invalid(message: &str) -> Error {
    Error::Model(format!("quantized model (GGUF): {message}"))
}
