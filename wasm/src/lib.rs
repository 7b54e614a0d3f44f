//! WebAssembly bindings for edgerag-core: a thin `#[wasm_bindgen]` layer, no logic of its own.
//!
//! ```js
//! import init, { Edgerag } from "./edgerag_wasm.js";
//! await init();
//! const rag = new Edgerag(new Uint8Array(await (await fetch("demo.bundle")).arrayBuffer()));
//! const hits = rag.search("who designed the ISS?", { k: 5, mode: "hybrid" });
//! ```

use edgerag_core::bundle::Embed;
use edgerag_core::embed::{Embedder as CoreEmbedder, EmbedderOptions};
use edgerag_core::{SearchOptions, Searcher};
use serde::{Deserialize, Serialize};
use wasm_bindgen::prelude::*;

/// A corpus bundle loaded in memory, ready to search.
#[wasm_bindgen]
pub struct Edgerag {
    searcher: Searcher,
}

/// Search options as JavaScript passes them; every field is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct JsSearchOptions {
    k: Option<usize>,
    mode: Option<String>,
    explain: bool,
}

#[wasm_bindgen]
impl Edgerag {
    /// Loads a bundle from its bytes. Throws if the bytes are not a valid bundle.
    #[wasm_bindgen(constructor)]
    pub fn new(bundle: &[u8]) -> Result<Edgerag, JsError> {
        console_error_panic_hook::set_once();
        Ok(Self { searcher: Searcher::from_bytes(bundle)? })
    }

    /// The bundle's manifest (name, version, parameters, counts).
    pub fn manifest(&self) -> Result<JsValue, JsError> {
        to_js(&self.searcher.bundle().manifest)
    }

    /// Searches the bundle: `options` is `{ k?, mode?: "bm25" | "graph" | "hybrid", explain? }`.
    /// Returns the results as plain objects (the shape of `edgerag search --json`).
    pub fn search(&self, query: &str, options: JsValue) -> Result<JsValue, JsError> {
        let given: JsSearchOptions = if options.is_undefined() || options.is_null() {
            JsSearchOptions::default()
        } else {
            serde_wasm_bindgen::from_value(options)?
        };
        let mut options = SearchOptions { explain: given.explain, ..SearchOptions::default() };
        if let Some(k) = given.k {
            options.k = k;
        }
        if let Some(mode) = given.mode {
            options.mode = mode.parse()?;
        }
        to_js(&self.searcher.search(query, &options)?)
    }
}

fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    let serializer = serde_wasm_bindgen::Serializer::json_compatible();
    Ok(value.serialize(&serializer)?)
}

/// The sentence embedder (all-MiniLM-L6-v2 settings) running in WebAssembly with SIMD128.
#[wasm_bindgen]
pub struct Embedder {
    inner: CoreEmbedder,
}

#[wasm_bindgen]
impl Embedder {
    /// Loads the model from the bytes of `config.json`, `tokenizer.json` and
    /// `model.safetensors`. Throws if the files do not make a model.
    #[wasm_bindgen(constructor)]
    pub fn new(config: &[u8], tokenizer: &[u8], weights: &[u8]) -> Result<Embedder, JsError> {
        console_error_panic_hook::set_once();
        let inner =
            CoreEmbedder::from_bytes(config, tokenizer, weights, EmbedderOptions::minilm())?;
        Ok(Self { inner })
    }

    /// Vector dimension.
    pub fn dimension(&self) -> usize {
        self.inner.dimension()
    }

    /// Embeds documents; returns the vectors one after another in one `Float32Array`.
    #[wasm_bindgen(js_name = embedDocuments)]
    pub fn embed_documents(&self, texts: Vec<String>) -> Result<Vec<f32>, JsError> {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        Ok(Embed::embed_documents(&self.inner, &texts)?.concat())
    }

    /// Embeds one query.
    #[wasm_bindgen(js_name = embedQuery)]
    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>, JsError> {
        Ok(Embed::embed_query(&self.inner, text)?)
    }
}
