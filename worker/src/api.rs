//! The endpoints. Each reads its JSON body, resolves the bundle, and hands the work to
//! edgerag-core: search and answers are computed exactly as the CLI and the browser compute
//! them, and come out in the same JSON shapes.

use std::cell::{Cell, RefCell};

use edgerag_core::bundle::Manifest;
use edgerag_core::completions::{self, CompletionRequest, DONE};
use edgerag_core::llm::sse;
use edgerag_core::query::{Corpus, Mode, SearchOptions, SearchResults};
use edgerag_core::request::{AskRequest, SearchRequest};
use futures_channel::mpsc::{self, UnboundedSender};
use futures_util::{StreamExt, stream};
use serde::Serialize;
use serde_json::{Value, json};
use worker::{Date, Env, Request, Response};

use crate::config::{BundleEntry, Config};
use crate::http::{self, ApiError, json_response};
use crate::store::{self, Loaded};
use crate::transport::WorkerTransport;

type Reply = Result<Response, ApiError>;

/// `GET /v1/health`: liveness, what is configured and loaded, and the module's memory.
pub(crate) fn health(config: &Config) -> Reply {
    let bundles: Vec<Value> = config
        .bundles
        .iter()
        .map(|entry| {
            let loaded = store::loaded(&entry.name);
            json!({
                "name": entry.name,
                "loaded": loaded.is_some(),
                "dense": loaded.as_ref().map(|l| l.searcher.dense_ready()),
            })
        })
        .collect();
    let model = match (&config.model, store::model_state()) {
        (None, _) => json!({"configured": false}),
        (Some(source), None) => {
            json!({"configured": true, "source": source.to_string(), "loaded": false})
        }
        (Some(source), Some(Ok(()))) => {
            json!({"configured": true, "source": source.to_string(), "loaded": true})
        }
        (Some(source), Some(Err(reason))) => {
            json!({"configured": true, "source": source.to_string(), "loaded": false, "error": reason})
        }
    };
    Ok(json_response(
        200,
        &json!({
            "status": "ok",
            "version": env!("CARGO_PKG_VERSION"),
            "bundles": bundles,
            "model": model,
            "llm": config.llm.is_some(),
            "memory": {"wasm_bytes": store::memory_bytes()},
        }),
    )?)
}

/// `GET /v1/bundles`: every bundle with its manifest (loading those not loaded yet), and
/// whether dense retrieval is on for it.
pub(crate) async fn bundles(env: &Env, config: &Config) -> Reply {
    #[derive(Serialize)]
    struct Listed<'a> {
        name: &'a str,
        default: bool,
        manifest: &'a Manifest,
        dense: Value,
    }
    let mut loaded = Vec::new();
    for entry in &config.bundles {
        loaded.push(store::bundle(env, config, entry).await?);
    }
    let list: Vec<Listed<'_>> = config
        .bundles
        .iter()
        .zip(&loaded)
        .enumerate()
        .map(|(i, (entry, bundle))| Listed {
            name: &entry.name,
            default: i == 0,
            manifest: bundle.searcher.manifest(),
            dense: dense_status(bundle),
        })
        .collect();
    #[derive(Serialize)]
    struct Bundles<'a> {
        bundles: Vec<Listed<'a>>,
    }
    Ok(json_response(200, &Bundles { bundles: list })?)
}

/// `GET /v1/models`: the bundles as OpenAI model ids, for `/v1/chat/completions`.
pub(crate) fn models(config: &Config) -> Reply {
    let data: Vec<Value> = config
        .bundles
        .iter()
        .map(|b| json!({"id": b.name, "object": "model", "created": 0, "owned_by": "edgerag"}))
        .collect();
    Ok(json_response(200, &json!({"object": "list", "data": data}))?)
}

/// `POST /v1/search` `{"query", "bundle", …}` with the options of
/// [`SearchRequest`]: the results as `edgerag search --json` prints them, plus the bundle
/// and, when hybrid retrieval ran without vectors, why.
pub(crate) async fn search(mut request: Request, env: &Env, config: &Config) -> Reply {
    let mut body = http::json_object(&mut request, config).await?;
    let query = required(http::take_string(&mut body, "query")?, "query")?;
    let entry = bundle_entry(config, http::take_string(&mut body, "bundle")?)?;
    let options = http::rest::<SearchRequest>(body)?.options(SearchOptions::default().k)?;
    let loaded = store::bundle(env, config, entry).await?;
    if options.mode == Mode::Dense && !loaded.searcher.dense_ready() {
        return Err(dense_off(&loaded));
    }
    let results = loaded.searcher.search(&query, &options).await?;
    let mut warnings = Vec::new();
    if options.mode == Mode::Hybrid && !loaded.searcher.dense_ready() {
        warnings.push(format!("dense retrieval off: {}", dense_reason(&loaded)));
    }
    let results = SearchResults { query: &query, mode: options.mode, results };
    Ok(json_response(200, &WithBundle { value: results, bundle: &entry.name, warnings })?)
}

/// A reply as the CLI's `--json` prints it, plus the bundle that answered and any warnings
/// about it. Typed, not built as a `serde_json::Value`, so that numbers print as the CLI
/// prints them (an `f32` 0.4 as 0.4, not widened to 0.4000000059604645).
#[derive(Serialize)]
struct WithBundle<'a, T: Serialize> {
    #[serde(flatten)]
    value: T,
    bundle: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

impl<'a, T: Serialize> WithBundle<'a, T> {
    fn new(value: T, bundle: &'a str) -> Self {
        Self { value, bundle, warnings: Vec::new() }
    }
}

/// `POST /v1/ask` `{"question", "bundle", "stream", …}` with the options of [`AskRequest`]
/// but `llm` (the worker's LLM is configured on the worker): the answer as `edgerag ask
/// --json` prints it, or with `"stream": true` server-sent events — `token` events with the
/// LLM's reply as it is written, then one `answer` event (or an `error` event).
pub(crate) async fn ask(mut request: Request, env: &Env, config: &Config) -> Reply {
    let mut body = http::json_object(&mut request, config).await?;
    let question = required(http::take_string(&mut body, "question")?, "question")?;
    let entry = bundle_entry(config, http::take_string(&mut body, "bundle")?)?;
    let streaming = http::take_bool(&mut body, "stream")?;
    if body.contains_key("llm") {
        return Err(ApiError::bad_request(
            "llm cannot be set per request: the worker's LLM is configured with its \
             EDGERAG_LLM_* variables and secret",
        ));
    }
    let mut ask = http::rest::<AskRequest>(body)?;
    ask.llm.clone_from(&config.llm);
    ask.options()?;
    ask.llm()?;
    let loaded = store::bundle(env, config, entry).await?;
    if !streaming {
        let answer = ask.answer(&loaded.searcher, &question, WorkerTransport, None).await?;
        return Ok(json_response(200, &WithBundle::new(&answer, &entry.name))?);
    }
    let name = entry.name.clone();
    http::event_stream(events(move |tx| async move {
        let mut on_token = |text: &str| send(&tx, Some("token"), &json!({"text": text}));
        match ask.answer(&loaded.searcher, &question, WorkerTransport, Some(&mut on_token)).await {
            Ok(answer) => send(&tx, Some("answer"), &WithBundle::new(&answer, &name)),
            Err(error) => send(&tx, Some("error"), &ApiError::from(error).body()),
        }
    }))
}

/// `POST /v1/chat/completions`: the OpenAI protocol, answering the last user message from the
/// bundle the `model` names (see [`completions`]). Streams `chat.completion.chunk`s with
/// `"stream": true`.
pub(crate) async fn chat(mut request: Request, env: &Env, config: &Config) -> Reply {
    let body = http::json_object(&mut request, config).await?;
    let completion: CompletionRequest = http::rest(body)?;
    let question = completion.question()?;
    let entry = match completion.model.as_deref() {
        None => config.bundle(None),
        Some(model) => config.bundle(Some(model.strip_prefix("edgerag/").unwrap_or(model))),
    }
    .ok_or_else(|| {
        ApiError::new(
            404,
            "model_not_found",
            format!(
                "model {:?} is not a bundle of this worker (models: {})",
                completion.model.as_deref().unwrap_or_default(),
                config.bundle_names()
            ),
        )
    })?;
    let ask = AskRequest { llm: config.llm.clone(), ..AskRequest::default() };
    let loaded = store::bundle(env, config, entry).await?;
    let (id, model, created) =
        (completion_id(), entry.name.clone(), Date::now().as_millis() / 1000);
    if !completion.stream {
        let answer = ask.answer(&loaded.searcher, &question, WorkerTransport, None).await?;
        return Ok(json_response(200, &completions::completion(&answer, &id, &model, created))?);
    }
    http::event_stream(events(move |tx| async move {
        let chunk = |content: Option<&str>, finish: Option<&str>| {
            completions::chunk(&id, &model, created, content, finish)
        };
        send(&tx, None, &chunk(Some(""), None));
        let streamed = RefCell::new(String::new());
        let mut on_token = |text: &str| {
            streamed.borrow_mut().push_str(text);
            send(&tx, None, &chunk(Some(text), None));
        };
        match ask.answer(&loaded.searcher, &question, WorkerTransport, Some(&mut on_token)).await {
            Ok(answer) => {
                let rest = completions::unseen(&answer, &streamed.take());
                if !rest.is_empty() {
                    send(&tx, None, &chunk(Some(&rest), None));
                }
                send(&tx, None, &chunk(None, Some("stop")));
            }
            Err(error) => send(&tx, None, &ApiError::from(error).body()),
        }
        _ = tx.unbounded_send(sse::event(None, DONE).into_bytes());
    }))
}

/// The events `work` sends, in order; the stream ends when `work` is done. Dropping the
/// stream (the client went away) drops `work`, which cancels its LLM request.
fn events<W, F>(work: W) -> impl futures_util::Stream<Item = Vec<u8>> + 'static
where
    W: FnOnce(UnboundedSender<Vec<u8>>) -> F,
    F: Future<Output = ()> + 'static,
{
    let (tx, rx) = mpsc::unbounded();
    let work = stream::once(work(tx)).filter_map(|()| async { None });
    stream::select(rx, work)
}

fn send(tx: &UnboundedSender<Vec<u8>>, name: Option<&str>, data: &impl Serialize) {
    if let Ok(data) = serde_json::to_string(data) {
        _ = tx.unbounded_send(sse::event(name, &data).into_bytes());
    }
}

fn required(value: Option<String>, field: &str) -> Result<String, ApiError> {
    value
        .filter(|v| !v.trim().is_empty())
        .ok_or_else(|| ApiError::bad_request(format!("{field} is required (a non-empty string)")))
}

fn bundle_entry(config: &Config, name: Option<String>) -> Result<&BundleEntry, ApiError> {
    config.bundle(name.as_deref()).ok_or_else(|| {
        ApiError::new(
            404,
            "unknown_bundle",
            format!(
                "no bundle named {:?} (bundles: {})",
                name.unwrap_or_default(),
                config.bundle_names()
            ),
        )
    })
}

fn dense_status(loaded: &Loaded) -> Value {
    if loaded.searcher.dense_ready() {
        json!({"on": true})
    } else {
        json!({"on": false, "reason": dense_reason(loaded)})
    }
}

fn dense_reason(loaded: &Loaded) -> String {
    loaded.dense_off.clone().unwrap_or_else(|| "the bundle has no vectors".to_owned())
}

fn dense_off(loaded: &Loaded) -> ApiError {
    ApiError::new(
        409,
        "dense_unavailable",
        format!("dense retrieval is off: {}", dense_reason(loaded)),
    )
}

thread_local! {
    static COMPLETIONS: Cell<u64> = const { Cell::new(0) };
}

/// A completion id unique within the isolate.
fn completion_id() -> String {
    let n = COMPLETIONS.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    format!("chatcmpl-edgerag-{}-{n}", Date::now().as_millis())
}
