//! WebAssembly bindings for edgerag-core: a thin `#[wasm_bindgen]` layer, no logic of its own.
//!
//! ```js
//! import init, { Edgerag } from "./edgerag_wasm.js";
//! await init();
//! const rag = new Edgerag(new Uint8Array(await (await fetch("demo.bundle")).arrayBuffer()));
//! const hits = rag.search("who designed the ISS?", { k: 5, mode: "hybrid" });
//! ```

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
