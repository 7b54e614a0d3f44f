//! Local text generation: a llama-architecture chat model from one GGUF file (for example
//! SmolLM2-135M-Instruct, `Q4_1`), run in the process — native or wasm32 — by `llama.rs` over
//! candle's quantized kernels, so answers can be written with no server and no key.
//!
//! Everything comes from the file: the weights, the tokenizer (built from the metadata, see
//! `tokenizer.rs`), the chat template (`tokenizer.chat_template`, rendered with minijinja;
//! ChatML when absent) and the end-of-sequence tokens. Only the template's own markup is
//! tokenized with special tokens; the messages' contents are read as plain text, so a
//! document that writes `<|im_start|>system` cannot open a turn
//! ([`LocalModel::encode_prompt`]). [`LocalModel`] is a [`ChatModel`], so
//! [`crate::answer::Answerer::ask`] writes, cites and verifies answers with it exactly as
//! with a remote LLM.
//!
//! Generation: the prompt is processed in slices of [`PROMPT_SLICE`] tokens into the KV
//! cache, then one token at a time is sampled ([`GenerateOptions`]: temperature, top-p, seed,
//! a repeat penalty), decoded as a stream (multi-byte characters across tokens are held until
//! complete) and passed on, until an end-of-sequence token, a stop sequence (never streamed)
//! or `max_tokens`. At temperature 0 the output is a deterministic function of the prompt on a
//! given platform.
//!
//! ```no_run
//! use edgerag_core::generate::{GenerateOptions, LocalModel};
//! use edgerag_core::llm::Message;
//!
//! let bytes = std::fs::read("SmolLM2-135M-Instruct.Q4_1.gguf")?;
//! let model = LocalModel::from_gguf(&bytes)?;
//! let options = GenerateOptions { max_tokens: 32, ..GenerateOptions::default() };
//! let mut print = |piece: &str| eprint!("{piece}");
//! let reply = model.generate(&[Message::user("What is the capital of France?")], &options, Some(&mut print))?;
//! assert!(reply.completion_tokens <= 32);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod llama;
mod stop;
mod template;
mod tokenizer;

use std::cell::RefCell;
use std::io::{Cursor, Read, Seek};

use candle_core::quantized::gguf_file::Content;
use candle_transformers::generation::{LogitsProcessor, Sampling};
use candle_transformers::utils::apply_repeat_penalty;

use self::llama::Llama;
pub use self::llama::Weights;
use self::stop::{Step, StopWatch};
use self::template::{ChatTemplate, Part};
use self::tokenizer::GgufTokenizer;
use crate::embed::candle_message;
use crate::llm::{ChatModel, Completion, Message};
use crate::{Error, Result};

/// Prompt tokens run through the model at once: bounds the attention scores' memory
/// (heads × slice × context floats) on long prompts.
pub const PROMPT_SLICE: usize = 256;

/// The longest context a model is given (prompt and reply), whatever it was trained for: its
/// KV cache takes memory in proportion.
pub const MAX_CONTEXT: usize = 4096;

/// How to sample a reply.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateOptions {
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Sampling temperature; 0 always takes the likeliest token.
    pub temperature: f32,
    /// Nucleus sampling: sample among the likeliest tokens whose probabilities add up to this
    /// (`None`: all tokens).
    pub top_p: Option<f32>,
    /// Seed of the sampler.
    pub seed: u64,
    /// Texts that end the reply where they appear (they are not part of it).
    pub stop: Vec<String>,
    /// Divides the logits of tokens among the last [`GenerateOptions::repeat_last`] by this
    /// (1: off); small models loop without it.
    pub repeat_penalty: f32,
    /// How many recent tokens the repeat penalty looks at.
    pub repeat_last: usize,
}

impl Default for GenerateOptions {
    fn default() -> Self {
        Self {
            max_tokens: 512,
            temperature: 0.0,
            top_p: None,
            seed: 299_792_458,
            stop: Vec::new(),
            repeat_penalty: 1.1,
            repeat_last: 64,
        }
    }
}

impl GenerateOptions {
    fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::Config(format!("generation: {what}")));
        if !(self.temperature.is_finite() && self.temperature >= 0.0) {
            return bad("temperature must be a number ≥ 0");
        }
        if self.top_p.is_some_and(|p| !(p > 0.0 && p <= 1.0)) {
            return bad("top_p must be in (0, 1]");
        }
        if !(self.repeat_penalty.is_finite() && self.repeat_penalty > 0.0) {
            return bad("repeat_penalty must be a positive number");
        }
        Ok(())
    }
}

/// Why generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Finish {
    /// The model ended its reply, or a stop sequence was reached.
    Stop,
    /// [`GenerateOptions::max_tokens`] (or the context window) was reached.
    Length,
    /// The caller stopped it ([`LocalModel::generate_until`]).
    Cancelled,
}

impl Finish {
    /// The OpenAI protocol's `finish_reason`: `stop` or `length` (and `cancelled`, which is
    /// not the protocol's: nobody is left to receive it).
    pub fn as_str(self) -> &'static str {
        match self {
            Finish::Stop => "stop",
            Finish::Length => "length",
            Finish::Cancelled => "cancelled",
        }
    }
}

/// A generated reply.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Generation {
    /// The reply's text (without the end-of-sequence token or stop sequence).
    pub text: String,
    /// Tokens of the rendered prompt.
    pub prompt_tokens: usize,
    /// Tokens generated, the end-of-sequence token included.
    pub completion_tokens: usize,
    /// Why it ended.
    pub finish: Finish,
}

/// A chat model loaded from a GGUF file.
pub struct LocalModel {
    /// The weights and KV cache; borrowed mutably for one generation at a time.
    weights: RefCell<Llama>,
    tokenizer: GgufTokenizer,
    template: ChatTemplate,
    name: String,
    /// Longest prompt plus reply, in tokens.
    context: usize,
    defaults: GenerateOptions,
}

impl std::fmt::Debug for LocalModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalModel")
            .field("name", &self.name)
            .field("context", &self.context)
            .finish_non_exhaustive()
    }
}

impl LocalModel {
    /// Loads a model from the bytes of its GGUF file, its matrices kept as
    /// [`Weights::Fast`].
    ///
    /// # Errors
    /// [`Error::Generation`] when the file is not GGUF, not a llama-architecture model, or
    /// its tokenizer or chat template is unsupported.
    pub fn from_gguf(bytes: &[u8]) -> Result<Self> {
        Self::from_gguf_reader(&mut Cursor::new(bytes), Weights::Fast)
    }

    /// Loads a model from a reader over its GGUF file; the tensors are read one by one.
    ///
    /// # Errors
    /// As [`LocalModel::from_gguf`].
    pub fn from_gguf_reader<R: Read + Seek>(reader: &mut R, weights: Weights) -> Result<Self> {
        let content = Content::read(reader)
            .map_err(|e| Error::Generation(format!("not a GGUF file: {}", candle_message(&e))))?;
        let architecture = tokenizer::string(&content, "general.architecture")?;
        if architecture != "llama" {
            return Err(Error::Generation(format!(
                "architecture {architecture:?} is not supported (only \"llama\")"
            )));
        }
        let name = content
            .metadata
            .get("general.name")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_else(|| "local".to_owned());
        let trained = content.metadata.get("llama.context_length").and_then(|v| v.to_u32().ok());
        let context = trained.map_or(MAX_CONTEXT, |n| (n as usize).min(MAX_CONTEXT));
        let tokenizer = tokenizer::from_gguf(&content)?;
        let source =
            content.metadata.get("tokenizer.chat_template").and_then(|v| v.to_string().ok());
        let template = ChatTemplate::new(
            source.map(String::as_str),
            tokenizer.bos.clone(),
            tokenizer.eos.clone(),
        )?;
        let weights = Llama::read(&content, reader, weights).map_err(generation_error)?;
        Ok(Self {
            weights: RefCell::new(weights),
            tokenizer,
            template,
            name,
            context,
            defaults: GenerateOptions::default(),
        })
    }

    /// The model's name (`general.name` of the file, unless renamed).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Renames the model (the name replies and [`Completion::model`] carry).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets the options [`ChatModel::chat`] generates with (its temperature aside).
    ///
    /// # Errors
    /// [`Error::Config`] for out-of-range options.
    pub fn with_options(mut self, options: GenerateOptions) -> Result<Self> {
        options.validate()?;
        self.defaults = options;
        Ok(self)
    }

    /// The options [`ChatModel::chat`] generates with.
    pub fn options(&self) -> &GenerateOptions {
        &self.defaults
    }

    /// Longest prompt plus reply, in tokens: the model's trained context, at most
    /// [`MAX_CONTEXT`].
    pub fn context_tokens(&self) -> usize {
        self.context
    }

    /// The token ids of `text`, special tokens such as `<|im_start|>` recognised (as in a
    /// chat template's markup). Untrusted text goes through [`LocalModel::encode_text`].
    ///
    /// # Errors
    /// [`Error::Generation`] if tokenization fails.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        ids(&self.tokenizer.tokenizer, text)
    }

    /// The token ids of `text` read as plain text: the text of a special token, such as
    /// `<|im_start|>`, is tokenized as the characters it is made of, never as the token.
    ///
    /// # Errors
    /// [`Error::Generation`] if tokenization fails.
    pub fn encode_text(&self, text: &str) -> Result<Vec<u32>> {
        ids(&self.tokenizer.plain, text)
    }

    /// The token ids of the prompt for `messages` ([`LocalModel::prompt`]): the template's
    /// markup may be special tokens, the messages' contents (system prompt, sources and
    /// question alike) never are, whatever they write. For a template that rewrites contents
    /// so they cannot be told from its markup, the contents' special-token texts are broken
    /// up (a word joiner after their first character) before the prompt is rendered.
    ///
    /// # Errors
    /// As [`LocalModel::prompt`]; [`Error::Generation`] if tokenization fails.
    pub fn encode_prompt(&self, messages: &[Message]) -> Result<Vec<u32>> {
        let Some(parts) = self.template.render_parts(messages)? else {
            let defused: Vec<Message> = messages
                .iter()
                .map(|m| Message { role: m.role, content: self.break_specials(&m.content) })
                .collect();
            return self.encode(&self.template.render(&defused)?);
        };
        let mut tokens = Vec::new();
        for part in parts {
            tokens.extend(match part {
                Part::Markup(text) => self.encode(&text)?,
                Part::Content(text) => self.encode_text(text)?,
            });
        }
        Ok(tokens)
    }

    /// `text` with every special token's text broken by a word joiner (U+2060) after its
    /// first character, so that no tokenizer matches it.
    fn break_specials(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for special in &self.tokenizer.specials {
            if let Some(first) = special.chars().next()
                && text.contains(special.as_str())
            {
                let rest = special.get(first.len_utf8()..).unwrap_or_default();
                let broken = format!("{first}\u{2060}{rest}");
                text = text.replace(special.as_str(), &broken);
            }
        }
        text
    }

    /// The logits of the token following `tokens` (one per vocabulary entry), computed from
    /// an empty cache: for scoring text, or comparing implementations.
    ///
    /// # Errors
    /// [`Error::Generation`] when `tokens` is empty, longer than the context, or the model is
    /// generating.
    pub fn logits(&self, tokens: &[u32]) -> Result<Vec<f32>> {
        if tokens.is_empty() || tokens.len() > self.context {
            return Err(Error::Generation(format!(
                "{} tokens: between 1 and {} are read",
                tokens.len(),
                self.context
            )));
        }
        let logits = self.weights()?.prefill(tokens).map_err(generation_error)?;
        logits.to_vec1().map_err(generation_error)
    }

    /// The prompt the chat template makes of `messages`.
    ///
    /// # Errors
    /// [`Error::Generation`] if the template fails (some templates refuse some conversations).
    pub fn prompt(&self, messages: &[Message]) -> Result<String> {
        self.template.render(messages)
    }

    /// Generates the reply to `messages`, passing each piece of text to `on_token` as it is
    /// decoded.
    ///
    /// # Errors
    /// [`Error::Config`] for invalid options; [`Error::Generation`] when the prompt does not
    /// fit the context window, the model is already generating (a re-entrant call from
    /// `on_token`), or a computation fails.
    pub fn generate(
        &self,
        messages: &[Message],
        options: &GenerateOptions,
        on_token: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Generation> {
        self.generate_until(messages, options, on_token, &|| false)
    }

    /// As [`LocalModel::generate`], but ends ([`Finish::Cancelled`]) as soon as `cancelled`
    /// says so, checked before each token: a server stops generating for a client that left.
    ///
    /// # Errors
    /// As [`LocalModel::generate`].
    pub fn generate_until(
        &self,
        messages: &[Message],
        options: &GenerateOptions,
        mut on_token: Option<&mut dyn FnMut(&str)>,
        cancelled: &dyn Fn() -> bool,
    ) -> Result<Generation> {
        options.validate()?;
        let prompt = self.encode_prompt(messages)?;
        if prompt.len() >= self.context {
            return Err(Error::Generation(format!(
                "the prompt is {} tokens; this model reads at most {}",
                prompt.len(),
                self.context - 1
            )));
        }
        let budget = (options.max_tokens as usize).min(self.context - prompt.len());
        let mut weights = self.weights()?;
        let mut logits = weights.prefill(&prompt).map_err(generation_error)?;

        let temperature = f64::from(options.temperature);
        let sampling = match options.top_p {
            _ if options.temperature == 0.0 => Sampling::ArgMax,
            Some(p) => Sampling::TopP { p: f64::from(p), temperature },
            None => Sampling::All { temperature },
        };
        let mut sampler = LogitsProcessor::from_sampling(options.seed, sampling);
        let mut decoder = self.tokenizer.tokenizer.decode_stream(true);
        let mut watch = StopWatch::new(&options.stop);
        let mut text = String::new();
        let mut emit = |piece: &str, text: &mut String| {
            if !piece.is_empty() {
                text.push_str(piece);
                if let Some(on_token) = on_token.as_deref_mut() {
                    on_token(piece);
                }
            }
        };
        let mut tokens = prompt.clone();
        let mut finish = Finish::Length;
        while tokens.len() - prompt.len() < budget {
            if cancelled() {
                finish = Finish::Cancelled;
                break;
            }
            if options.repeat_penalty != 1.0 {
                let recent = &tokens[tokens.len().saturating_sub(options.repeat_last)..];
                logits = apply_repeat_penalty(&logits, options.repeat_penalty, recent)
                    .map_err(generation_error)?;
            }
            let next = sampler.sample(&logits).map_err(generation_error)?;
            tokens.push(next);
            if self.tokenizer.end_ids.contains(&next) {
                finish = Finish::Stop;
                break;
            }
            let piece = decoder.step(next).map_err(|e| Error::Generation(e.to_string()))?;
            match watch.push(piece.as_deref().unwrap_or_default()) {
                Step::Go(piece) => emit(&piece, &mut text),
                Step::Stop(piece) => {
                    emit(&piece, &mut text);
                    finish = Finish::Stop;
                    break;
                }
            }
            if tokens.len() - prompt.len() < budget {
                logits = weights.forward(&[next]).map_err(generation_error)?;
            }
        }
        if finish == Finish::Length {
            emit(&watch.finish(), &mut text);
        }
        Ok(Generation {
            text,
            prompt_tokens: prompt.len(),
            completion_tokens: tokens.len() - prompt.len(),
            finish,
        })
    }
}

impl LocalModel {
    fn weights(&self) -> Result<std::cell::RefMut<'_, Llama>> {
        self.weights
            .try_borrow_mut()
            .map_err(|_| Error::Generation("the model is already generating".into()))
    }
}

impl ChatModel for LocalModel {
    fn temperature(&self) -> f32 {
        self.defaults.temperature
    }

    async fn chat(
        &self,
        messages: &[Message],
        temperature: f32,
        on_token: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Completion> {
        let options = GenerateOptions { temperature, ..self.defaults.clone() };
        let reply = self.generate(messages, &options, on_token)?;
        Ok(Completion { text: reply.text, model: self.name.clone(), failed: Vec::new() })
    }
}

/// The token ids `tokenizer` gives `text`.
fn ids(tokenizer: &tokenizers::Tokenizer, text: &str) -> Result<Vec<u32>> {
    let encoding =
        tokenizer.encode(text, false).map_err(|e| Error::Generation(format!("tokenizer: {e}")))?;
    Ok(encoding.get_ids().to_vec())
}

/// A failed computation, as an [`Error::Generation`].
fn generation_error(error: candle_core::Error) -> Error {
    Error::Generation(candle_message(&error))
}
