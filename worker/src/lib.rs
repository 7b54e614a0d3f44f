//! edgerag at the edge: a Cloudflare Worker (workers-rs) serving search and answers from
//! corpus bundles, with query embeddings computed in the isolate. A thin host over
//! edgerag-core: it reads requests and configuration, loads bundles from static assets or R2,
//! and reaches the LLM with the runtime's `fetch`.
//!
//! | endpoint | body | reply |
//! |----------|------|-------|
//! | `GET /v1/health` | | status, bundles loaded, model, wasm memory |
//! | `GET /v1/bundles` | | every bundle's manifest, and whether dense retrieval is on |
//! | `POST /v1/search` | `{"query", "bundle", "k", "mode", "filters", …}` | as `edgerag search --json` |
//! | `POST /v1/ask` | `{"question", "bundle", "stream", …}` | as `edgerag ask --json`, or server-sent events |
//! | `GET /v1/models` | | the bundles, as OpenAI models |
//! | `POST /v1/chat/completions` | OpenAI's | OpenAI's, answered from the bundle the model names |
//!
//! Errors are JSON, `{"error": {"code", "message"}}`, with a 4xx status for the client's
//! mistakes (bad JSON, unknown bundle or field, a body over the limit, a missing token) and
//! never an internal detail. Configuration: see [`config`].

mod api;
mod config;
mod http;
mod store;
mod transport;

use std::cell::OnceCell;
use std::rc::Rc;

use worker::{Context, Env, Method, Request, Response, console_error, event};

use crate::config::Config;
use crate::http::ApiError;

thread_local! {
    /// The configuration, read on the first request: vars and secrets are fixed for the life
    /// of an isolate (changing them deploys a new one).
    static CONFIG: OnceCell<Result<Rc<Config>, String>> = const { OnceCell::new() };
}

/// Handles every request.
#[event(fetch)]
pub async fn fetch(request: Request, env: Env, _ctx: Context) -> worker::Result<Response> {
    let config = CONFIG.with(|cell| {
        cell.get_or_init(|| {
            Config::read(|name| {
                env.var(name)
                    .map(|v| v.to_string())
                    .or_else(|_| env.secret(name).map(|s| s.to_string()))
                    .ok()
            })
            .map(Rc::new)
        })
        .clone()
    });
    let config = match config {
        Ok(config) => config,
        Err(problem) => {
            console_error!("edgerag: the worker's configuration is invalid: {problem}");
            let error = ApiError::new(
                500,
                "misconfigured",
                "the worker's configuration is invalid; see its log",
            );
            return error.response();
        }
    };
    let origin = request.headers().get("origin").ok().flatten();
    let response = match route(request, &env, &config).await {
        Ok(response) => response,
        Err(error) => error.response()?,
    };
    Ok(http::with_cors(response, origin.as_deref(), &config))
}

async fn route(request: Request, env: &Env, config: &Config) -> Result<Response, ApiError> {
    let path = request.path();
    let method = request.method();
    if method == Method::Options {
        return http::preflight(&request, config);
    }
    if path != "/v1/health" {
        http::authorize(&request, config)?;
    }
    match (path.as_str(), method) {
        ("/v1/health", Method::Get) => api::health(config),
        ("/v1/bundles", Method::Get) => api::bundles(env, config).await,
        ("/v1/models", Method::Get) => api::models(config),
        ("/v1/search", Method::Post) => api::search(request, env, config).await,
        ("/v1/ask", Method::Post) => api::ask(request, env, config).await,
        ("/v1/chat/completions", Method::Post) => api::chat(request, env, config).await,
        ("/v1/health" | "/v1/bundles" | "/v1/models", _) => Err(wrong_method(&path, Method::Get)),
        ("/v1/search" | "/v1/ask" | "/v1/chat/completions", _) => {
            Err(wrong_method(&path, Method::Post))
        }
        _ => Err(ApiError::new(404, "not_found", format!("no endpoint {path}"))),
    }
}

fn wrong_method(path: &str, allowed: Method) -> ApiError {
    ApiError::new(405, "method_not_allowed", format!("{path} takes {allowed}"))
}
