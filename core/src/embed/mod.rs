//! Sentence embeddings: text in, one unit-length vector per text out.
//!
//! An [`Embedder`] runs a BERT-family encoder (candle, on the CPU, in `f32`) over texts
//! tokenized with the model's own `tokenizer.json`, pools the last layer's token vectors
//! ([`Pooling::Mean`] weighted by the attention mask, or [`Pooling::Cls`]) and normalises the
//! result. It is built from the bytes of three files — `config.json`, `tokenizer.json` and
//! `model.safetensors` — which hosts fetch and cache; nothing here does I/O, so the same code
//! runs natively and in WebAssembly.
//!
//! With [`EmbedderOptions::minilm`] the vectors match sentence-transformers'
//! `all-MiniLM-L6-v2` (cosine ≥ 0.999, checked against reference vectors in the tests).
//!
//! Texts are embedded in batches of [`EmbedderOptions::batch_size`] texts of similar length,
//! each padded to its longest member and truncated at [`EmbedderOptions::max_tokens`]; padding
//! does not change a vector.
//! [`TokenSizer`] counts tokens with the same tokenizer so chunks can be sized to the window.
//!
//! The same model also comes as one compact file: [`quantize`] turns the three files into a
//! GGUF file of `q8_0` weights (about 25 MB for MiniLM instead of 87 MB), and
//! [`Embedder::from_gguf`] runs it holding only the quantized weights in memory and multiplying
//! them in integers. Its vectors have the same [`crate::bundle::EmbeddingSpec`] as the `f32`
//! model's, so either model searches bundles embedded by the other (see [`quantized`]).

mod options;
mod pool;
pub mod quantized;
mod sizer;
mod tokenizer;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};
use tokenizers::Tokenizer;

pub use options::{EmbedderOptions, Pooling};
pub use quantized::quantize;
pub use sizer::TokenSizer;

use crate::{Error, Result};

/// The encoder that turns token ids into token vectors.
enum Encoder {
    /// candle-transformers' BERT on `f32` weights.
    F32(BertModel),
    /// The BERT of [`quantized`], on `q8_0` weights.
    Quantized(quantized::Bert),
}

impl Encoder {
    /// The last layer's token vectors (batch × tokens × hidden).
    fn forward(&self, ids: &Tensor, types: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Encoder::F32(model) => model.forward(ids, types, Some(mask)),
            Encoder::Quantized(model) => model.forward(ids, types, mask),
        }
    }
}

/// A sentence-embedding model ready to embed documents and queries.
pub struct Embedder {
    encoder: Encoder,
    /// Bytes of the weights held in memory.
    weight_bytes: usize,
    /// Configured for embedding: truncation at `options.max_tokens`, padding per batch.
    tokenizer: Tokenizer,
    /// The tokenizer as loaded (for [`TokenSizer`]).
    raw_tokenizer: Tokenizer,
    options: EmbedderOptions,
    dimension: usize,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("options", &self.options)
            .field("dimension", &self.dimension)
            .field("quantized", &self.is_quantized())
            .field("weight_bytes", &self.weight_bytes)
            .finish_non_exhaustive()
    }
}

impl Embedder {
    /// Loads a BERT-family model from the bytes of its `config.json`, `tokenizer.json` and
    /// `model.safetensors` (weights are converted to `f32`).
    ///
    /// `options.max_tokens` is capped at the model's `max_position_embeddings`.
    ///
    /// # Errors
    /// [`Error::Model`] naming the file that cannot be parsed or does not fit the
    /// configuration (a missing tensor, a wrong shape); [`Error::Config`] if `max_tokens` is
    /// below 3 or `batch_size` is 0.
    pub fn from_bytes(
        config_json: &[u8],
        tokenizer_json: &[u8],
        safetensors: &[u8],
        options: EmbedderOptions,
    ) -> Result<Self> {
        let config = parse_config(config_json)?;
        let prepared = Prepared::new(&config, tokenizer_json, options)?;
        let weights = VarBuilder::from_slice_safetensors(safetensors, DType::F32, &Device::Cpu)
            .map_err(|e| Error::Model(format!("model.safetensors: {}", candle_message(&e))))?;
        let model = BertModel::load(weights, &config).map_err(|e| {
            let e = candle_message(&e);
            Error::Model(format!("model.safetensors does not match config.json: {e}"))
        })?;
        let weight_bytes = quantized::tensors::all(&config)
            .iter()
            .map(|t| t.elements() * std::mem::size_of::<f32>())
            .sum();
        Ok(prepared.embedder(Encoder::F32(model), weight_bytes, &config))
    }

    /// Loads a model from the bytes of a quantized GGUF file made by [`quantize`], which holds
    /// its configuration, tokenizer and `q8_0` weights. Only the quantized weights are kept in
    /// memory (see [`Embedder::weight_bytes`]); `gguf` can be dropped afterwards.
    ///
    /// With the same `options`, the embedder has the same [`crate::bundle::EmbeddingSpec`] as
    /// the `f32` model it was made from.
    ///
    /// # Errors
    /// [`Error::Model`] if the bytes are not such a file (another GGUF file, another format
    /// version, a missing tensor, a wrong shape or type, a truncated file) or its tokenizer or
    /// configuration cannot be parsed; [`Error::Config`] as for [`Embedder::from_bytes`].
    pub fn from_gguf(gguf: &[u8], options: EmbedderOptions) -> Result<Self> {
        Self::from_gguf_reader(&mut std::io::Cursor::new(gguf), options)
    }

    /// [`Embedder::from_gguf`] reading the file from `reader`, so that it need not be in
    /// memory as a whole: a host can read it from wherever its bytes are (a JavaScript buffer,
    /// a file). Only the quantized weights, one tensor at a time, are copied.
    ///
    /// # Errors
    /// As [`Embedder::from_gguf`]; a failing read is a truncated file.
    pub fn from_gguf_reader<R: std::io::Read + std::io::Seek>(
        reader: &mut R,
        options: EmbedderOptions,
    ) -> Result<Self> {
        let (content, config, tokenizer_json) = quantized::read_header(reader)?;
        let prepared = Prepared::new(&config, tokenizer_json.as_bytes(), options)?;
        let model = quantized::read_weights(reader, &content, &config)?;
        let weight_bytes = model.weight_bytes();
        Ok(prepared.embedder(Encoder::Quantized(model), weight_bytes, &config))
    }

    /// Whether the weights are quantized (loaded with [`Embedder::from_gguf`]).
    pub fn is_quantized(&self) -> bool {
        matches!(self.encoder, Encoder::Quantized(_))
    }

    /// Bytes of the model's weights held in memory: `f32` tensors count 4 bytes a value,
    /// the quantized matrices 36 bytes per 32 values (`q8_0` with `f32` scales, packed for the
    /// integer products), the `q8_0` word embeddings 34. The tokenizer is not counted.
    pub fn weight_bytes(&self) -> usize {
        self.weight_bytes
    }

    /// Length of every vector.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// Name of the model ([`EmbedderOptions::model_id`]).
    pub fn model_id(&self) -> &str {
        &self.options.model_id
    }

    /// The options in effect (`max_tokens` possibly capped by the model).
    pub fn options(&self) -> &EmbedderOptions {
        &self.options
    }

    /// A [`TokenSizer`] counting tokens with this model's tokenizer.
    pub fn token_sizer(&self) -> TokenSizer {
        TokenSizer::new(self.raw_tokenizer.clone())
    }

    /// Embeds documents (chunks), each prefixed with [`EmbedderOptions::document_prefix`]: one
    /// vector per text, in order.
    ///
    /// # Errors
    /// [`Error::Model`] if tokenization or the model fails.
    pub fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.embed_prefixed(&self.options.document_prefix, texts)
    }

    /// Embeds one query, prefixed with [`EmbedderOptions::query_prefix`].
    ///
    /// # Errors
    /// [`Error::Model`] if tokenization or the model fails.
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let mut vectors = self.embed_prefixed(&self.options.query_prefix, &[text])?;
        vectors.pop().ok_or_else(|| Error::Model("the model returned no vector".to_owned()))
    }

    /// Embeds `texts` in batches of similar length (longest first, like sentence-transformers),
    /// so little compute goes to padding; returns the vectors in the order of `texts`.
    fn embed_prefixed(&self, prefix: &str, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(texts[i].chars().count()));
        let mut vectors = vec![Vec::new(); texts.len()];
        for batch in order.chunks(self.options.batch_size) {
            let inputs: Vec<String> =
                batch.iter().map(|&i| format!("{prefix}{}", texts[i])).collect();
            for (&i, vector) in batch.iter().zip(self.embed_batch(inputs)?) {
                vectors[i] = vector;
            }
        }
        Ok(vectors)
    }

    /// Runs one padded batch through the model.
    fn embed_batch(&self, inputs: Vec<String>) -> Result<Vec<Vec<f32>>> {
        let encodings = self
            .tokenizer
            .encode_batch(inputs, true)
            .map_err(|e| Error::Model(format!("tokenization failed: {e}")))?;
        let rows = encodings.len();
        let width = encodings.first().map_or(0, tokenizers::Encoding::len);
        let mut ids = Vec::with_capacity(rows * width);
        let mut mask = Vec::with_capacity(rows * width);
        for encoding in &encodings {
            if encoding.len() != width {
                return Err(Error::Model("tokenizer returned a ragged batch".to_owned()));
            }
            ids.extend_from_slice(encoding.get_ids());
            mask.extend_from_slice(encoding.get_attention_mask());
        }
        let run = || -> candle_core::Result<Vec<Vec<f32>>> {
            let ids = Tensor::from_vec(ids, (rows, width), &Device::Cpu)?;
            let mask = Tensor::from_vec(mask, (rows, width), &Device::Cpu)?;
            let types = ids.zeros_like()?;
            let hidden = self.encoder.forward(&ids, &types, &mask)?;
            let mut pooled = pool::pool(&hidden, &mask, self.options.pooling)?;
            if self.options.normalize {
                pooled = pool::normalize(&pooled)?;
            }
            pooled.to_vec2::<f32>()
        };
        run().map_err(|e| Error::Model(format!("embedding failed: {}", candle_message(&e))))
    }
}

/// A candle error's message on one line: its first (candle may add a backtrace after it),
/// control characters escaped (it may quote a name the model's file holds).
pub(crate) fn candle_message(error: &candle_core::Error) -> String {
    crate::one_line(error.to_string().lines().next().unwrap_or_default())
}

/// Parses a `config.json`.
pub(crate) fn parse_config(config_json: &[u8]) -> Result<Config> {
    serde_json::from_slice(config_json)
        .map_err(|e| Error::Model(format!("config.json: {}", crate::one_line(&e.to_string()))))
}

/// Options and tokenizers checked and configured for a model, before its weights are read.
struct Prepared {
    options: EmbedderOptions,
    tokenizer: Tokenizer,
    raw_tokenizer: Tokenizer,
}

impl Prepared {
    /// Checks `options` (capping `max_tokens` at the model's positions) and parses the
    /// tokenizer.
    fn new(config: &Config, tokenizer_json: &[u8], mut options: EmbedderOptions) -> Result<Self> {
        if options.batch_size == 0 {
            return Err(Error::Config("embedding batch size must be at least 1".to_owned()));
        }
        options.max_tokens = options.max_tokens.min(config.max_position_embeddings);
        if options.max_tokens < 3 {
            return Err(Error::Config(format!(
                "embedding max_tokens must be at least 3 (got {})",
                options.max_tokens
            )));
        }
        let raw_tokenizer = tokenizer::parse(tokenizer_json)?;
        let mut tokenizer = raw_tokenizer.clone();
        tokenizer::configure(&mut tokenizer, options.max_tokens)?;
        Ok(Self { options, tokenizer, raw_tokenizer })
    }

    fn embedder(self, encoder: Encoder, weight_bytes: usize, config: &Config) -> Embedder {
        Embedder {
            encoder,
            weight_bytes,
            tokenizer: self.tokenizer,
            raw_tokenizer: self.raw_tokenizer,
            options: self.options,
            dimension: config.hidden_size,
        }
    }
}

impl crate::BundleBuilder {
    /// A builder that sizes chunks in the tokens of `embedder`'s model (so `options.chunk`
    /// counts tokens, as [`crate::chunk::ChunkConfig::tokens`]) and embeds them with it. The
    /// model stays shared: the same one can then embed queries.
    ///
    /// # Errors
    /// [`Error::Config`] if an option is out of range.
    pub fn with_model(
        options: crate::BuildOptions,
        embedder: std::rc::Rc<Embedder>,
    ) -> Result<Self> {
        let mut builder = Self::with_sizer(options, Box::new(embedder.token_sizer()))?;
        builder.embed_with(Box::new(embedder));
        Ok(builder)
    }
}

impl crate::bundle::Embed for Embedder {
    fn spec(&self) -> crate::bundle::EmbeddingSpec {
        crate::bundle::EmbeddingSpec {
            model: self.options.model_id.clone(),
            dimension: self.dimension as u32,
            pooling: self.options.pooling,
            query_prefix: self.options.query_prefix.clone(),
            document_prefix: self.options.document_prefix.clone(),
            max_tokens: self.options.max_tokens as u32,
        }
    }

    fn embed_documents(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Embedder::embed_documents(self, texts)
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Embedder::embed_query(self, text)
    }
}
