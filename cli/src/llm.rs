//! The LLM from the command line: flags, the API key from the environment, the native
//! transport (a blocking HTTP client on tokio's blocking threads, raced against tokio's timer),
//! or a local GGUF model.

use std::future::Future;
use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use edgerag_core::generate::{GenerateOptions, LocalModel};
use edgerag_core::llm::{
    API_KEY_VARIABLES, ApiKey, ChatModel, Completion, HttpRequest, HttpResponse, LlmClient,
    LlmConfig, MAX_TIMEOUT, Message, ResponseBody, Transport, TransportError,
};
use edgerag_core::request::LlmRequest;
use ureq::Agent;
use ureq::tls::{RootCerts, TlsConfig};

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

/// HTTP over a blocking client. Each exchange and each read of a body runs on a thread of the
/// runtime's blocking pool and waits run on its timer, so the futures can be raced: an answer's
/// deadline (`--ask-timeout`) ends a request that is still waiting for its server.
#[derive(Debug)]
pub(crate) struct NativeTransport {
    agent: Agent,
}

impl NativeTransport {
    fn new(timeout: Duration) -> Self {
        let tls = TlsConfig::builder().root_certs(RootCerts::PlatformVerifier).build();
        let agent = Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .tls_config(tls)
            .user_agent(concat!("edgerag/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Self { agent }
    }
}

/// A response body read from the blocking client, one read at a time on the blocking pool;
/// `None` once a read was abandoned (its future dropped) or failed.
pub(crate) struct NativeBody(Option<Box<dyn Read + Send>>);

impl ResponseBody for NativeBody {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        let mut reader = self
            .0
            .take()
            .ok_or_else(|| TransportError::Failed("the response was abandoned".into()))?;
        let (reader, read) = blocking(move || {
            let mut buffer = vec![0; 8192];
            let read = reader.read(&mut buffer).map(|n| {
                buffer.truncate(n);
                buffer
            });
            (reader, read)
        })
        .await?;
        self.0 = Some(reader);
        match read {
            Ok(buffer) if buffer.is_empty() => Ok(None),
            Ok(buffer) => Ok(Some(buffer)),
            Err(e) => Err(transport_error(&e.to_string())),
        }
    }
}

impl Transport for NativeTransport {
    type Body = NativeBody;

    async fn post(&self, request: HttpRequest) -> Result<HttpResponse<NativeBody>, TransportError> {
        let agent = self.agent.clone();
        blocking(move || {
            let mut call = agent.post(&request.url);
            for (name, value) in &request.headers {
                call = call.header(name, value);
            }
            let response = call.send(request.body.as_bytes()).map_err(|e| match e {
                ureq::Error::Timeout(_) => TransportError::Timeout,
                // The message names the host and the failure; it never holds headers.
                other => TransportError::Failed(other.to_string()),
            })?;
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = NativeBody(Some(Box::new(response.into_body().into_reader())));
            Ok(HttpResponse { status, retry_after, body })
        })
        .await?
    }

    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }
}

/// Runs blocking `work` on the runtime's blocking pool. Dropping the future abandons the
/// result (the work runs to its end, bounded by the HTTP client's timeout).
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, TransportError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| TransportError::Failed(format!("the HTTP thread failed: {e}")))
}

/// A read error: ureq reports its timeout through the reader as an I/O error.
fn transport_error(message: &str) -> TransportError {
    if message.contains("timeout") || message.contains("timed out") {
        TransportError::Timeout
    } else {
        TransportError::Failed(message.to_owned())
    }
}

/// Runs a future on this thread's runtime (one per thread, made on first use): the native
/// transport's exchanges run on its blocking pool and its waits on its timer. Returns as soon
/// as the future is done: an exchange the future stopped waiting for (past the answer's
/// deadline) is left to end on its own, not waited for, then or when the thread ends.
///
/// # Panics
/// When the runtime cannot start (the system refuses it threads or timers).
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    /// A runtime that does not wait for abandoned exchanges when its thread ends.
    struct Local(Option<tokio::runtime::Runtime>);
    impl Drop for Local {
        fn drop(&mut self) {
            if let Some(runtime) = self.0.take() {
                runtime.shutdown_background();
            }
        }
    }
    thread_local! {
        #[allow(clippy::expect_used)]
        static RUNTIME: Local = Local(Some(
            tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .build()
                .expect("a runtime for the LLM client"),
        ));
    }
    RUNTIME.with(|local| match &local.0 {
        Some(runtime) => runtime.block_on(future),
        None => unreachable!("the runtime is taken only when its thread ends"),
    })
}
