//! Bundles and the embedding model, loaded once per isolate and shared by its requests.
//!
//! Loads are futures shared between the requests that wait for them, so concurrent first
//! requests read a bundle once. A failed load is forgotten (the next request tries again).
//! The model is loaded before the first bundle that has vectors; when it cannot be (not
//! configured, missing, another model than the bundle's), that bundle is served without dense
//! retrieval and says why.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::rc::Rc;

use edgerag_core::bundle::paged::InMemory;
use edgerag_core::embed::{Embedder, EmbedderOptions};
use edgerag_core::query::Opened;
use futures_util::FutureExt;
use futures_util::future::{LocalBoxFuture, Shared};
use worker::js_sys::Uint8Array;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Env, ResponseBody, console_log, web_sys};

use crate::config::{ASSETS_BINDING, BundleEntry, Config, R2_BINDING, Source};
use crate::http::ApiError;

/// A bundle ready to serve.
pub(crate) struct Loaded {
    /// Read whole, or of format 4 by range from its bytes in memory.
    pub(crate) searcher: Opened<InMemory>,
    /// Why dense retrieval is off, when the bundle has vectors but no model to query them.
    pub(crate) dense_off: Option<String>,
}

type Load<T> = Shared<LocalBoxFuture<'static, Result<Rc<T>, String>>>;

#[derive(Default)]
struct Store {
    model: Option<Load<Embedder>>,
    bundles: HashMap<String, Load<Loaded>>,
}

thread_local! {
    static STORE: RefCell<Store> = RefCell::default();
}

/// The bundle `entry`, loading it on first use.
///
/// # Errors
/// 503 when its bytes cannot be read or are not a bundle (the operator's problem; the
/// details are logged).
pub(crate) async fn bundle(
    env: &Env,
    config: &Config,
    entry: &BundleEntry,
) -> Result<Rc<Loaded>, ApiError> {
    let load = STORE.with(|store| {
        let mut store = store.borrow_mut();
        store
            .bundles
            .entry(entry.name.clone())
            .or_insert_with(|| {
                load_bundle(env.clone(), config.clone(), entry.clone()).boxed_local().shared()
            })
            .clone()
    });
    load.await.map_err(|detail| {
        STORE.with(|store| store.borrow_mut().bundles.remove(&entry.name));
        worker::console_error!("edgerag: bundle {}: {detail}", entry.name);
        ApiError::new(
            503,
            "bundle_unavailable",
            format!("bundle {:?} cannot be loaded", entry.name),
        )
    })
}

/// The bundle `name` if it is loaded already.
pub(crate) fn loaded(name: &str) -> Option<Rc<Loaded>> {
    let load = STORE.with(|store| store.borrow().bundles.get(name).cloned())?;
    load.peek().and_then(|result| result.as_ref().ok()).cloned()
}

/// The state of the model: `None` not loaded yet, else its outcome.
pub(crate) fn model_state() -> Option<Result<(), String>> {
    let load = STORE.with(|store| store.borrow().model.clone())?;
    load.peek().map(|result| result.as_ref().map(|_| ()).map_err(Clone::clone))
}

async fn load_bundle(env: Env, config: Config, entry: BundleEntry) -> Result<Rc<Loaded>, String> {
    let bytes = read(&env, &entry.source).await?.to_vec();
    let mut searcher = Opened::from_bytes(bytes).map_err(|e| format!("{}: {e}", entry.source))?;
    let mut dense_off = None;
    if let Some(spec) = searcher.manifest().embedding.clone() {
        dense_off = match model(&env, &config).await {
            Err(reason) => Some(reason),
            Ok(embedder) => searcher.set_embedder(Box::new(embedder)).err().map(|e| e.to_string()),
        };
        if let Some(reason) = &dense_off {
            console_log!(
                "edgerag: bundle {} ({}) served without dense retrieval: {reason}",
                entry.name,
                spec.model
            );
        }
    }
    console_log!(
        "edgerag: bundle {} loaded from {}; wasm memory {} bytes",
        entry.name,
        entry.source,
        memory_bytes()
    );
    Ok(Rc::new(Loaded { searcher, dense_off }))
}

/// The embedding model, loaded on first use; `Err` says why dense retrieval is off.
async fn model(env: &Env, config: &Config) -> Result<Rc<Embedder>, String> {
    let Some(source) = config.model.clone() else {
        return Err("no embedding model configured (EDGERAG_MODEL)".to_owned());
    };
    let load = STORE.with(|store| {
        let mut store = store.borrow_mut();
        let (env, model_id) = (env.clone(), config.model_id.clone());
        store
            .model
            .get_or_insert_with(|| {
                async move {
                    let data = read(&env, &source).await?;
                    let options = EmbedderOptions { model_id, ..EmbedderOptions::minilm() };
                    // Buffered: the header is read a few bytes at a time.
                    let mut file =
                        BufReader::with_capacity(1 << 16, JsReader { data, position: 0 });
                    let embedder = Embedder::from_gguf_reader(&mut file, options)
                        .map_err(|e| format!("the model at {source}: {e}"))?;
                    Ok(Rc::new(embedder))
                }
                .boxed_local()
                .shared()
            })
            .clone()
    });
    load.await
}

/// A file of the assets or of the R2 bucket, as a JavaScript buffer: outside the module's
/// memory, which never shrinks, so a file read once does not keep its size there.
async fn read(env: &Env, source: &Source) -> Result<Uint8Array, String> {
    let failed = |e: worker::Error| format!("{source}: {e}");
    let response: web_sys::Response = match source {
        Source::Assets(path) => {
            let assets = env.assets(ASSETS_BINDING).map_err(failed)?;
            // The assets binding serves by path; the host is ignored.
            let url = format!("https://assets.local{path}");
            let response = assets.fetch(url, None).await.map_err(failed)?;
            if response.status_code() != 200 {
                let status = response.status_code();
                return Err(format!("{source}: not in the static assets (HTTP {status})"));
            }
            response.into()
        }
        Source::R2(key) => {
            let bucket = env.bucket(R2_BINDING).map_err(failed)?;
            let object = bucket.get(key).execute().await.map_err(failed)?;
            let object =
                object.ok_or_else(|| format!("{source}: no such object in the R2 bucket"))?;
            let body = object.body().ok_or_else(|| format!("{source}: the object has no body"))?;
            let ResponseBody::Stream(stream) = body.response_body().map_err(failed)? else {
                return Err(format!("{source}: the object's body is not a stream"));
            };
            web_sys::Response::new_with_opt_readable_stream(Some(&stream))
                .map_err(|e| failed(e.into()))?
        }
    };
    let buffer = response.array_buffer().map_err(|e| failed(e.into()))?;
    let buffer = JsFuture::from(buffer).await.map_err(|e| failed(e.into()))?;
    Ok(Uint8Array::new(&buffer))
}

/// Reads a JavaScript buffer as a file, copying only what is read into the module's memory.
struct JsReader {
    data: Uint8Array,
    position: u64,
}

impl Read for JsReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let length = u64::from(self.data.length());
        let start = self.position.min(length);
        let end = (start + buf.len() as u64).min(length);
        let n = (end - start) as usize;
        // Buffers are under 4 GiB (u32 lengths), so the casts are exact.
        self.data.subarray(start as u32, end as u32).copy_to(&mut buf[..n]);
        self.position = end;
        Ok(n)
    }
}

impl Seek for JsReader {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let base = match to {
            SeekFrom::Start(offset) => Some(offset),
            SeekFrom::End(delta) => u64::from(self.data.length()).checked_add_signed(delta),
            SeekFrom::Current(delta) => self.position.checked_add_signed(delta),
        };
        self.position = base.ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "seek before the start of the file")
        })?;
        Ok(self.position)
    }
}

/// Bytes of the wasm linear memory: what the module holds (it grows, never shrinks).
pub(crate) fn memory_bytes() -> usize {
    #[cfg(target_arch = "wasm32")]
    {
        core::arch::wasm32::memory_size::<0>() * 65536
    }
    #[cfg(not(target_arch = "wasm32"))]
    {
        0
    }
}
