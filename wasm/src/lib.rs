//! WebAssembly bindings for edgerag-core: a thin `#[wasm_bindgen]` layer, no logic of its own.
//!
//! - [`Edgerag`]: a bundle loaded from its bytes: `search`, `ask` (extractive, or an
//!   OpenAI-compatible LLM reached with `fetch`, streaming through a callback), `inspect`,
//!   `graph`, and `useModel` to enable dense retrieval.
//! - [`Model`]: the embedding model from the bytes of its files: `embed`, and `build` to make
//!   a bundle from files in memory ([`build`] makes one without embeddings).
//! - [`ChatModel`]: a GGUF chat model generating in the module (`generate`), which
//!   `Edgerag.askWith` answers with — no server, no key.
//!
//! Plain data crosses the boundary as JSON, parsed on the other side: options come in as
//! plain objects ([`edgerag_core::request`]: every field optional, camelCase or snake_case,
//! unknown fields refused), results go out as plain objects equal to what the CLI's `--json`
//! prints. (serde-wasm-bindgen reads only the fields a type declares, so it cannot refuse a
//! misspelt option, and it widens an `f32` 0.4 to 0.4000000059604645.) Errors are thrown as
//! `Error`s carrying core's message.
//!
//! ```js
//! import init, { Edgerag, Model } from "./edgerag_wasm.js";
//! await init();
//! const rag = new Edgerag(new Uint8Array(await (await fetch("demo.bundle")).arrayBuffer()));
//! const { results } = rag.search("who designed the ISS?", { k: 5, mode: "bm25" });
//! const answer = await rag.ask("Who was Rollo?");          // extractive, cited
//! ```

mod build;
mod chat;
mod model;
mod runtime;
mod transport;

use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;

pub use build::build;
pub use chat::ChatModel;
pub use model::Model;
pub use runtime::Edgerag;

/// Installs the panic hook, so a panic's message reaches the console before the module aborts.
#[wasm_bindgen(start)]
pub fn start() {
    console_error_panic_hook::set_once();
}

/// The edgerag version of this module.
#[wasm_bindgen]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// Panics, aborting this instance as any panic in the core would: it exists so that tests of
/// the hosts can exercise their crash recovery on a real abort. Nothing else calls it.
#[doc(hidden)]
#[wasm_bindgen(js_name = crashForTests)]
pub fn crash_for_tests() {
    panic!("crashForTests: a panic asked for by a test");
}

/// `value` as a plain JavaScript value, made through JSON so that it is exactly what the CLI's
/// `--json` prints: an `f32` such as 0.4 arrives as 0.4, not as its widened 0.4000000059604645.
fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsError> {
    let json = serde_json::to_string(value)?;
    js_sys::JSON::parse(&json)
        .map_err(|_| JsError::new("a result could not be passed to JavaScript"))
}

/// Passes each piece of streamed text to `callback`, if any. A throwing callback does not end
/// the stream: the error is the caller's.
fn stream_to(callback: Option<&js_sys::Function>) -> impl FnMut(&str) + '_ {
    move |text| {
        if let Some(callback) = callback {
            _ = callback.call1(&JsValue::NULL, &JsValue::from_str(text));
        }
    }
}

/// Options from JavaScript; `undefined` and `null` mean all defaults. They are read through
/// JSON, which sees every key of the object, so that unknown (misspelt) options are refused.
fn from_js<T: DeserializeOwned + Default>(value: JsValue) -> Result<T, JsError> {
    if value.is_undefined() || value.is_null() {
        return Ok(T::default());
    }
    parse_js(value)
}

/// A value from JavaScript read through JSON, as [`from_js`] but required.
fn parse_js<T: DeserializeOwned>(value: JsValue) -> Result<T, JsError> {
    let json = js_sys::JSON::stringify(&value)
        .ok()
        .and_then(|json| json.as_string())
        .and_then(|json| serde_json::from_str(&json).ok())
        .ok_or_else(|| JsError::new("options must be a plain object"))?;
    Ok(edgerag_core::request::from_json(json)?)
}
