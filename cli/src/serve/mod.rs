//! `edgerag serve`: the demo site, bundles and the embedding model over HTTP on 127.0.0.1.
//!
//! Routes (`GET` and `HEAD`; any other method gets 405):
//! - `/edgerag.json`: the bundles and the model served, with their sizes and SHA-256
//!   ([`assets::Index`]).
//! - `/bundles/<file name>`: a bundle given on the command line.
//! - `/models/<dir>/<config.json|tokenizer.json|model.safetensors>`: the embedding model.
//! - with `--local-model`, the OpenAI protocol over that chat model ([`chat`]):
//!   `GET /v1/models` and `POST /v1/chat/completions`; and its GGUF file, for generation in
//!   the tab, at `/chat-models/<file name>`.
//! - anything else: a file under the site directory ([`static_files`]).
//!
//! Bundles and model files carry a strong ETag (their SHA-256), site files one made of their
//! length and modification time; every cacheable reply says `Cache-Control: no-cache` and
//! answers a matching `If-None-Match` with 304. HTTP/1.1 with keep-alive is spoken by
//! [`server`], one event loop for every connection and a few blocking threads for routing,
//! file reads and generation, so neither a large download, an idle kept-alive connection nor
//! a client that trickles its request ever holds up another; every connection is bounded in
//! time and size ([`server::Config`]). The request-head parser is in the library face of the
//! crate (`edgerag_cli::serve::request`), where fuzz targets reach it. [`route`] is the one
//! place that maps requests to replies; new endpoints are added there.

mod assets;
mod chat;
mod http;
mod range;
mod response;
mod server;
mod static_files;
mod system;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use edgerag_cli::serve::request;
use serde::Serialize;

use self::assets::{BundleInfo, Index, ModelInfo, ServedBundle, ServedChatModel, ServedModel};
use self::http::{Incoming, Method, Reply};
use self::static_files::Site;
use crate::output;

/// Arguments of `edgerag serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Bundles to serve, under /bundles/<file name>.
    #[arg(value_name = "BUNDLE")]
    bundles: Vec<PathBuf>,
    /// The static site to serve (built by `make www`).
    #[arg(long, value_name = "DIR", default_value = "www/dist")]
    site: PathBuf,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 8080)]
    port: u16,
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    host: IpAddr,
    /// Serve the embedding model in DIR (config.json, tokenizer.json, model.safetensors)
    /// instead of the default model from the cache.
    #[arg(long, value_name = "DIR", conflicts_with = "no_model")]
    model: Option<PathBuf>,
    /// Serve no embedding model.
    #[arg(long)]
    no_model: bool,
    /// Serve this GGUF chat model over the OpenAI protocol (/v1/models,
    /// /v1/chat/completions); `local` for the default one (SmolLM2-135M-Instruct, fetched
    /// into the cache on first use).
    #[arg(long, value_name = "FILE.gguf|local")]
    local_model: Option<PathBuf>,
    /// Print the startup line as JSON.
    #[arg(long)]
    json: bool,
    /// Log every request on stderr.
    #[arg(long, short)]
    verbose: bool,
    /// Connections served at once (hidden: for tests).
    #[arg(long, hide = true, value_parser = places)]
    #[arg(default_value_t = server::Config::DEFAULT.max_connections)]
    max_connections: usize,
    /// Connections waiting for a place when all are taken (hidden: for tests).
    #[arg(long, hide = true, value_parser = waiting)]
    #[arg(default_value_t = server::Config::DEFAULT.queue)]
    queue: usize,
    /// Seconds from a request's first byte to the end of its header fields (hidden: for
    /// tests).
    #[arg(long, hide = true, value_name = "SECONDS", value_parser = seconds)]
    head_timeout: Option<Duration>,
    /// Seconds from the end of a request's header fields to the end of its body (hidden: for
    /// tests).
    #[arg(long, hide = true, value_name = "SECONDS", value_parser = seconds)]
    body_timeout: Option<Duration>,
    /// Seconds a kept-alive connection may wait for its next request (hidden: for tests).
    #[arg(long, hide = true, value_name = "SECONDS", value_parser = seconds)]
    idle_timeout: Option<Duration>,
}

/// Parses a number of connections served at once: at least one, and no more than the
/// server can count.
fn places(text: &str) -> Result<usize, String> {
    count(text, 1)
}

/// Parses a number of connections that may wait for a place.
fn waiting(text: &str) -> Result<usize, String> {
    count(text, 0)
}

/// Parses a number from `least` to [`server::MAX_COUNT`].
fn count(text: &str, least: usize) -> Result<usize, String> {
    let most = server::MAX_COUNT;
    match text.parse::<usize>() {
        Ok(n) if (least..=most).contains(&n) => Ok(n),
        _ => Err(format!("{text:?} is not a number from {least} to {most}")),
    }
}

/// Parses a positive number of seconds.
fn seconds(text: &str) -> Result<Duration, String> {
    match text.parse::<f64>().ok().and_then(|s| Duration::try_from_secs_f64(s).ok()) {
        Some(duration) if !duration.is_zero() => Ok(duration),
        _ => Err(format!("{text:?} is not a positive number of seconds")),
    }
}

/// Everything the router serves from, loaded at startup.
struct State {
    /// The static site.
    site: Site,
    /// The bundles.
    bundles: Vec<ServedBundle>,
    /// The embedding model, if served.
    model: Option<ServedModel>,
    /// The chat model, if served: over the OpenAI protocol, and its file.
    chat: Option<(chat::Chat, ServedChatModel)>,
    /// The body of `/edgerag.json`.
    index: Vec<u8>,
    /// Its entity tag.
    index_etag: String,
    /// Log requests on stderr.
    verbose: bool,
}

/// The startup report of `--json`.
#[derive(Serialize)]
struct Started<'a> {
    url: String,
    site: String,
    bundles: Vec<&'a BundleInfo>,
    model: Option<&'a ModelInfo>,
    chat_model: Option<&'a str>,
}

/// Runs `edgerag serve` until the process is killed.
pub(crate) fn run(args: Args) -> Result<()> {
    let open_files = system::raise_open_files();
    let site = Site::open(&args.site)?;
    let bundles = assets::open_bundles(&args.bundles)?;
    let model =
        assets::open_model(args.model.as_deref(), args.no_model, |text| output::warn(None, text))?;
    let chat = match &args.local_model {
        Some(path) => {
            let path = crate::models::chat::named(path);
            let (path, _, bytes) = crate::models::chat::resolve(path, args.json)?;
            let model = crate::models::chat::open(&path, &bytes)?;
            let file = ServedChatModel::open(&path, model.name())?;
            Some((chat::Chat::new(model), file))
        }
        None => None,
    };
    let index = Index {
        bundles: bundles.iter().map(|b| &b.info).collect(),
        model: model.as_ref().map(|m| &m.info),
        chat_model: chat.as_ref().map(|(_, file)| &file.info),
    };
    let index = serde_json::to_vec_pretty(&index)?;
    let index_etag = format!("\"{}\"", crate::models::sha256_hex(&index));

    let address = SocketAddr::new(args.host, args.port);
    let listener =
        TcpListener::bind(address).with_context(|| format!("cannot listen on {address}"))?;
    let local = listener.local_addr().with_context(|| format!("cannot listen on {address}"))?;

    let url = format!("http://{local}/");
    if args.json {
        output::json_line(&Started {
            url,
            site: site.shown.display().to_string(),
            bundles: bundles.iter().map(|b| &b.info).collect(),
            model: model.as_ref().map(|m| &m.info),
            chat_model: chat.as_ref().map(|(chat, _)| chat.name()),
        })?;
    } else {
        let names: Vec<&str> = bundles.iter().map(|b| b.file_name.as_str()).collect();
        let names = if names.is_empty() { "none".to_owned() } else { names.join(", ") };
        let model = model.as_ref().map_or("none", |m| m.info.id.as_str());
        let chat = chat.as_ref().map_or(String::new(), |(chat, _)| {
            format!("; chat model {} at {url}v1/chat/completions", chat.name())
        });
        output::line(&format!(
            "serving {url} (site {}; bundles: {names}; model: {model}{chat})",
            site.shown.display()
        ));
        output::flush()?;
    }

    let defaults = server::Config::DEFAULT;
    let mut config = server::Config {
        max_connections: args.max_connections,
        queue: args.queue,
        head_time: args.head_timeout.unwrap_or(defaults.head_time),
        body_time: args.body_timeout.unwrap_or(defaults.body_time),
        idle: args.idle_timeout.unwrap_or(defaults.idle),
        ..defaults
    };
    if let Some(limit) = open_files {
        let within = config.within_open_files(limit, system::open_files());
        if within != config && args.verbose {
            output::note(&format!(
                "{} connections at once and {} waiting at most: {limit} open files allowed",
                within.max_connections, within.queue
            ));
        }
        config = within;
    }
    let state =
        Arc::new(State { site, bundles, model, chat, index, index_etag, verbose: args.verbose });
    server::run(listener, state, config, |text| output::warn(None, text))
}

impl server::Handler for State {
    fn handle(&self, request: &Incoming) -> Reply {
        route(self, request)
    }

    fn log(&self, text: &str) {
        if self.verbose {
            output::note(text);
        }
    }
}

/// Maps a request to its reply.
fn route(state: &State, request: &Incoming) -> Reply {
    if let Some((chat, _)) = &state.chat {
        match (request.path.as_deref(), &request.method) {
            (Some("/v1/chat/completions"), Method::Other(post)) if post == "POST" => {
                return chat.complete(request);
            }
            (Some("/v1/chat/completions"), _) => return Reply::method_not_allowed("POST"),
            (Some("/v1/models"), Method::Get | Method::Head) => return chat.models(),
            _ => {}
        }
    }
    if !matches!(request.method, Method::Get | Method::Head) {
        return Reply::method_not_allowed("GET, HEAD");
    }
    let Some(path) = request.path.as_deref() else {
        return Reply::text(400, "bad request: the path is not a valid percent-encoded path\n");
    };
    if path == "/edgerag.json" {
        return Reply::cached(request, &state.index_etag, || {
            Reply::bytes(200, http::JSON, state.index.clone())
        });
    }
    if let Some(name) = path.strip_prefix("/bundles/")
        && let Some(bundle) = state.bundles.iter().find(|b| b.file_name == name)
    {
        return asset(request, &bundle.asset, http::OCTET_STREAM);
    }
    if let Some(name) = path.strip_prefix("/chat-models/")
        && let Some((_, file)) = &state.chat
        && name == file.file_name
    {
        return asset(request, &file.asset, http::OCTET_STREAM);
    }
    if let Some(rest) = path.strip_prefix("/models/")
        && let Some(model) = &state.model
        && let Some((dir, name)) = rest.split_once('/')
        && dir == model.dir_name
        && let Some(file) = model.file(name)
    {
        return asset(request, file, static_files::mime(name));
    }
    state.site.serve(request, path)
}

/// A bundle or model file, streamed (whole or a byte range) from its handle, with its SHA-256
/// as ETag.
fn asset(request: &Incoming, asset: &assets::Asset, content_type: &str) -> Reply {
    Reply::file(request, &asset.etag(), content_type, Arc::clone(&asset.file), asset.len)
}
