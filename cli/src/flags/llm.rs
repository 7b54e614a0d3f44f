//! The LLM flags: the API (its key from the environment, reached through the native
//! [`transport`](crate::transport)) or a local GGUF model.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use edgerag_core::generate::{GenerateOptions, LocalModel};
use edgerag_core::llm::{
    API_KEY_VARIABLES, ApiKey, ChatModel, Completion, LlmClient, LlmConfig, MAX_TIMEOUT, Message,
};
use edgerag_core::request::LlmRequest;

use crate::transport::NativeTransport;

/// LLM flags shared by `ask` and `eval`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LlmArgs {
    /// Write answers with a model in this process instead of an API: `local` for the default
    /// chat model (SmolLM2-135M-Instruct, fetched into the cache on first use), or
    /// `local:FILE.gguf` for a llama-architecture GGUF chat model. No key or server needed.
    #[arg(long, value_name = "local[:FILE.gguf]", value_parser = parse_local, conflicts_with = "llm_base_url")]
    llm: Option<Local>,
    /// Base URL of an OpenAI-compatible API [default: Groq's; a local server needs no key].
    #[arg(long, value_name = "URL", env = "EDGERAG_LLM_BASE_URL")]
    llm_base_url: Option<String>,
    /// Model to use; repeat to give fallbacks, tried in order [default: llama-3.3-70b-versatile,
    /// then llama-3.1-8b-instant].
    #[arg(long = "llm-model", value_name = "MODEL")]
    llm_models: Vec<String>,
    /// Sampling temperature of answers.
    #[arg(long, default_value_t = LlmConfig::default().temperature)]
    llm_temperature: f32,
    /// Most tokens per answer.
    #[arg(long, default_value_t = LlmConfig::default().max_tokens)]
    llm_max_tokens: u32,
    /// Seconds one request may take, streaming included.
    #[arg(long, value_name = "SECONDS", value_parser = |v: &str| seconds(v, "the LLM timeout"),
          default_value_t = LlmConfig::default().timeout.as_secs_f64())]
    llm_timeout: f64,
    /// Retries per model after a rate limit, server error or timeout.
    #[arg(long, default_value_t = LlmConfig::default().retries)]
    llm_retries: u32,
}

/// A flag's seconds: above 0 and at most [`MAX_TIMEOUT`]; `what` names them in the error.
pub(crate) fn seconds(value: &str, what: &str) -> Result<f64, String> {
    let seconds: f64 =
        value.parse().map_err(|_| format!("{value:?} is not a number of seconds"))?;
    let most = MAX_TIMEOUT.as_secs_f64();
    if !(seconds > 0.0 && seconds <= most) {
        return Err(format!("{what} must be above 0 and at most {most} seconds"));
    }
    Ok(seconds)
}

/// Seconds as the milliseconds requests take, at least 1.
pub(crate) fn millis(seconds: f64) -> u64 {
    (seconds * 1000.0).round().max(1.0) as u64
}

/// `--llm local[:FILE]`.
#[derive(Debug, Clone)]
pub(crate) struct Local(Option<PathBuf>);

fn parse_local(value: &str) -> Result<Local, String> {
    match value.split_once(':') {
        None if value == "local" => Ok(Local(None)),
        Some(("local", path)) if !path.is_empty() => Ok(Local(Some(PathBuf::from(path)))),
        _ => Err("expected `local` or `local:FILE.gguf`".to_owned()),
    }
}

/// The model answers are written with.
pub(crate) enum Llm {
    /// An OpenAI-compatible API.
    Remote(LlmClient<NativeTransport>),
    /// A GGUF model in this process.
    Local(Box<LocalModel>),
}

impl ChatModel for Llm {
    fn temperature(&self) -> f32 {
        match self {
            Self::Remote(client) => client.config().temperature,
            Self::Local(model) => ChatModel::temperature(model.as_ref()),
        }
    }

    async fn chat(
        &self,
        messages: &[Message],
        temperature: f32,
        on_token: Option<&mut dyn FnMut(&str)>,
    ) -> edgerag_core::Result<Completion> {
        match self {
            Self::Remote(client) => client.chat(messages, temperature, on_token).await,
            Self::Local(model) => model.chat(messages, temperature, on_token).await,
        }
    }

    async fn sleep(&self, duration: Duration) {
        match self {
            Self::Remote(client) => ChatModel::sleep(client, duration).await,
            Self::Local(model) => ChatModel::sleep(model.as_ref(), duration).await,
        }
    }
}

impl LlmArgs {
    /// The model answers are written with, if any: the local model of `--llm local`, else
    /// the API [`LlmArgs::client`] configures. `quiet` hides the chat model's download
    /// progress.
    pub(crate) fn model(&self, quiet: bool) -> Result<Option<Llm>> {
        let Some(Local(path)) = &self.llm else {
            return Ok(self.client()?.map(Llm::Remote));
        };
        let options = GenerateOptions {
            temperature: self.llm_temperature,
            max_tokens: self.llm_max_tokens,
            ..GenerateOptions::default()
        };
        let model = crate::models::chat::load(path.as_deref(), quiet)?.with_options(options)?;
        Ok(Some(Llm::Local(Box::new(model))))
    }

    /// The client, when an LLM is configured: an API key in the environment
    /// (`EDGERAG_LLM_API_KEY`, `GROQ_API_KEY` or `OPENAI_API_KEY`), or a base URL given.
    pub(crate) fn client(&self) -> Result<Option<LlmClient<NativeTransport>>> {
        let api_key = API_KEY_VARIABLES
            .iter()
            .find_map(|name| std::env::var(name).ok().and_then(ApiKey::new));
        if api_key.is_none() && self.llm_base_url.is_none() {
            return Ok(None);
        }
        let config = LlmRequest {
            base_url: self.llm_base_url.clone(),
            api_key,
            models: self.llm_models.clone(),
            temperature: Some(self.llm_temperature),
            max_tokens: Some(self.llm_max_tokens),
            timeout_ms: Some(millis(self.llm_timeout)),
            retries: Some(self.llm_retries),
        }
        .config()?;
        let transport = NativeTransport::new(config.timeout);
        Ok(Some(LlmClient::new(config, transport)?))
    }

    /// The judge's client, when an LLM is configured: these flags with `model` as the only
    /// model (default: the first `--llm-model`, else the first default model) and `base_url`
    /// (default: `--llm-base-url`; giving it configures an LLM, as `--llm-base-url` does).
    pub(crate) fn judge_client(
        &self,
        model: Option<&str>,
        base_url: Option<&str>,
    ) -> Result<Option<LlmClient<NativeTransport>>> {
        let mut args = self.clone();
        if let Some(url) = base_url {
            args.llm_base_url = Some(url.to_owned());
        }
        let model = model
            .or_else(|| self.llm_models.first().map(String::as_str))
            .unwrap_or(edgerag_core::llm::DEFAULT_MODELS[0]);
        args.llm_models = vec![model.to_owned()];
        args.client()
    }
}
