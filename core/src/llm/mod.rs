//! Talking to an OpenAI-compatible chat-completions API (Groq by default), without doing I/O.
//!
//! The protocol's logic lives here: request and response types and the JSON in replies
//! ([`protocol`]), server-sent events ([`sse`]), and retries with backoff and fallback
//! through models ([`LlmClient`]). What is asked (the answer prompts) is the answerer's
//! (`answer::prompt`), and answering as an OpenAI-compatible model is [`crate::completions`].
//! Moving bytes is the host's job: it implements [`Transport`] over
//! its HTTP stack (the CLI with a blocking client, the browser with `fetch`, the edge worker
//! with its `Fetch`) and its timer.
//!
//! Transient failures (HTTP 429, 5xx, timeouts, dropped connections) are retried up to
//! [`LlmConfig::retries`] times per model, waiting as the provider's `Retry-After` asks or
//! else `backoff · 2^attempt`; then the next model of [`LlmConfig::models`] is tried. Any
//! other 4xx fails at once with the provider's message ([`Error::LlmRejected`]). The API key
//! never appears in errors, debug output or serialised values: [`ApiKey`] hides it, and
//! provider messages are scrubbed of it.

mod client;
pub mod protocol;
pub mod sse;

use std::time::Duration;

pub(crate) use self::client::seconds;
pub use self::client::{Completion, LlmClient};
pub use self::protocol::{Message, Role, first_json};
use crate::{Error, Result};

/// A chat model that answers can be written with: a remote API through [`LlmClient`], or a
/// model running in the process (`edgerag_core::generate::LocalModel`, feature `generate`).
/// The futures are not `Send`: hosts drive them on one thread (the browser's, an isolate's).
#[allow(async_fn_in_trait)]
pub trait ChatModel {
    /// The temperature answers are written at.
    fn temperature(&self) -> f32;

    /// The reply to `messages`. With `on_token`, it is streamed and each piece of text is
    /// passed to it as it is produced.
    ///
    /// # Errors
    /// [`Error::LlmRejected`] when retrying cannot help (a bad key or model); other errors
    /// (nothing answered, a broken reply, a failed local model) leave the answer extractive.
    async fn chat(
        &self,
        messages: &[Message],
        temperature: f32,
        on_token: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Completion>;

    /// Waits for `duration`: the host's timer, which the answer's deadline
    /// (`AskOptions::deadline`) is raced against. A remote model waits with its
    /// [`Transport::sleep`]; by default (a model running in the process, whose replies are
    /// computed as they are polled) it never completes, so there is no deadline.
    async fn sleep(&self, duration: Duration) {
        let _ = duration;
        std::future::pending::<()>().await;
    }
}

impl<T: Transport> ChatModel for LlmClient<T> {
    fn temperature(&self) -> f32 {
        self.config().temperature
    }

    async fn chat(
        &self,
        messages: &[Message],
        temperature: f32,
        on_token: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Completion> {
        LlmClient::chat(self, messages, temperature, on_token).await
    }

    async fn sleep(&self, duration: Duration) {
        self.transport().sleep(duration).await;
    }
}

/// Groq's OpenAI-compatible endpoint, the default [`LlmConfig::base_url`].
pub const GROQ_BASE_URL: &str = "https://api.groq.com/openai/v1";

/// Default models, tried in this order: a strong model, then a fast one with its own limits.
pub const DEFAULT_MODELS: [&str; 2] = ["llama-3.3-70b-versatile", "llama-3.1-8b-instant"];

/// Longest [`LlmConfig::timeout`]: an hour (JavaScript timers cannot wait much longer than
/// 24 days, and no answer is worth waiting an hour for).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);

/// Most bytes of one reply from the LLM (a streamed one counted whole, events and all): real
/// replies are a few KiB; a server past it is answering something else, and the reply is
/// refused rather than held in memory.
pub const MAX_REPLY_BYTES: usize = 8 << 20;

/// Environment variables a host reads the API key from, in order of preference.
pub const API_KEY_VARIABLES: [&str; 3] = ["EDGERAG_LLM_API_KEY", "GROQ_API_KEY", "OPENAI_API_KEY"];

/// An API key. Its `Debug` output is redacted and it cannot be serialised, so it does not end
/// up in logs, errors, bundles or JSON.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key; `None` if it is empty or only whitespace.
    pub fn new(key: impl Into<String>) -> Option<Self> {
        let key = key.into().trim().to_owned();
        (!key.is_empty()).then_some(Self(key))
    }

    /// The key itself, for the `Authorization` header.
    fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the key replaced by `[redacted]`.
    fn scrub(&self, text: &str) -> String {
        text.replace(&self.0, "[redacted]")
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

/// Where and how to reach the LLM.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmConfig {
    /// Base URL of the OpenAI-compatible API (`…/v1`); requests go to
    /// `{base_url}/chat/completions`.
    pub base_url: String,
    /// Bearer token; `None` for local servers that need none.
    pub api_key: Option<ApiKey>,
    /// Models to try, in order: the next is used when one keeps failing transiently.
    pub models: Vec<String>,
    /// Sampling temperature of answers.
    pub temperature: f32,
    /// Most tokens generated per answer.
    pub max_tokens: u32,
    /// Limit on one request, from sending it to the last byte of the answer (streaming
    /// included).
    pub timeout: Duration,
    /// Retries per model after a transient failure.
    pub retries: u32,
    /// First wait between retries when the provider does not say how long (doubled each time).
    pub backoff: Duration,
    /// Longest wait honoured from a `Retry-After` header; a longer one moves on to the next
    /// model.
    pub max_wait: Duration,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            base_url: GROQ_BASE_URL.to_owned(),
            api_key: None,
            models: DEFAULT_MODELS.iter().map(|m| (*m).to_owned()).collect(),
            temperature: 0.1,
            max_tokens: 1024,
            timeout: Duration::from_secs(60),
            retries: 2,
            backoff: Duration::from_millis(500),
            max_wait: Duration::from_secs(30),
        }
    }
}

impl LlmConfig {
    /// Checks the values a request needs.
    ///
    /// # Errors
    /// [`Error::Config`] for an empty model list, a base URL that is not http(s), a
    /// temperature outside `[0, 2]`, zero max tokens or timeout, or a timeout over
    /// [`MAX_TIMEOUT`].
    pub fn validate(&self) -> Result<()> {
        let problem = if self.models.iter().all(|m| m.trim().is_empty()) {
            "no LLM model given".to_owned()
        } else if let Some(model) = self.models.iter().find(|m| m.chars().any(char::is_control)) {
            // Messages name the model: it must not break them over lines.
            format!("an LLM model name holds a control character (got {model:?})")
        } else if !(self.base_url.starts_with("http://") || self.base_url.starts_with("https://")) {
            format!(
                "the LLM base URL must start with http:// or https:// (got {:?})",
                self.base_url
            )
        } else if !(0.0..=2.0).contains(&self.temperature) {
            format!("the LLM temperature must be in [0, 2] (got {})", self.temperature)
        } else if self.max_tokens == 0 || self.timeout.is_zero() {
            "the LLM max tokens and timeout must be above zero".to_owned()
        } else if self.timeout > MAX_TIMEOUT {
            format!("the LLM timeout must be at most {} s", MAX_TIMEOUT.as_secs())
        } else {
            return Ok(());
        };
        Err(Error::Config(problem))
    }

    /// The chat-completions endpoint.
    fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

/// An HTTP POST for the host to send.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    /// Full URL.
    pub url: String,
    /// Headers, the `Authorization` one included: hosts must not log them.
    pub headers: Vec<(String, String)>,
    /// JSON body.
    pub body: String,
    /// Limit on the whole exchange, body included.
    pub timeout: Duration,
}

/// The head of an HTTP response, and its body to read.
#[derive(Debug)]
pub struct HttpResponse<B> {
    /// Status code.
    pub status: u16,
    /// The `Retry-After` header, if present.
    pub retry_after: Option<String>,
    /// The body, read piece by piece.
    pub body: B,
}

/// Why the host could not complete an exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// The request's timeout passed.
    Timeout,
    /// Anything else: DNS, connection, TLS, a dropped stream. The message is for people.
    Failed(String),
}

impl std::fmt::Display for TransportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Timeout => f.write_str("timed out"),
            Self::Failed(message) => f.write_str(message),
        }
    }
}

/// What a host provides to reach the LLM: HTTP POST with a streamed body, and a timer.
///
/// The futures need not be `Send` (browser and worker futures are not), hence `async fn`.
#[allow(async_fn_in_trait)]
pub trait Transport {
    /// The response body.
    type Body: ResponseBody;
    /// Sends `request` and returns the response head once it arrives.
    ///
    /// # Errors
    /// When no response head arrives (timeout, connection failure).
    async fn post(
        &self,
        request: HttpRequest,
    ) -> std::result::Result<HttpResponse<Self::Body>, TransportError>;
    /// Waits for `duration` (between retries).
    async fn sleep(&self, duration: Duration);
}

/// A response body, read as it arrives.
#[allow(async_fn_in_trait)]
pub trait ResponseBody {
    /// The next bytes, or `None` at the end.
    ///
    /// # Errors
    /// When the stream breaks or the timeout passes.
    async fn chunk(&mut self) -> std::result::Result<Option<Vec<u8>>, TransportError>;
}
