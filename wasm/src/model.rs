//! `Model`: the embedding model, loaded once from its files' bytes and shared by searches and
//! in-tab builds.

use std::rc::Rc;

use edgerag_core::embed::{Embedder, EmbedderOptions};
use js_sys::{Array, Function, Object};
use wasm_bindgen::prelude::*;

/// A sentence-embedding model (all-MiniLM-L6-v2 settings: mean pooling, 256 tokens) running in
/// WebAssembly with SIMD128.
#[wasm_bindgen]
pub struct Model {
    embedder: Rc<Embedder>,
}

#[wasm_bindgen]
impl Model {
    /// Loads the model from the bytes of `config.json`, `tokenizer.json` and
    /// `model.safetensors`, with all-MiniLM-L6-v2's settings (mean pooling, 256 tokens) under
    /// the id `id` (default `sentence-transformers/all-MiniLM-L6-v2`): the id bundles record
    /// and are checked against. Throws, naming the file, if they do not make a model.
    #[wasm_bindgen(constructor)]
    pub fn new(
        config: &[u8],
        tokenizer: &[u8],
        weights: &[u8],
        id: Option<String>,
    ) -> Result<Model, JsError> {
        let embedder = Embedder::from_bytes(config, tokenizer, weights, options(id))?;
        Ok(Self { embedder: Rc::new(embedder) })
    }

    /// Loads the model from the bytes of a quantized `.gguf` file made by `edgerag models
    /// quantize` (about 25 MB for all-MiniLM-L6-v2 instead of 87 MB, and faster: its matrices
    /// are multiplied in integers), with the same settings and id as [`Model::new`]; its
    /// vectors search bundles embedded by the full model. Throws if the bytes are not such a
    /// file.
    #[wasm_bindgen(js_name = fromGguf)]
    pub fn from_gguf(gguf: &[u8], id: Option<String>) -> Result<Model, JsError> {
        let embedder = Embedder::from_gguf(gguf, options(id))?;
        Ok(Self { embedder: Rc::new(embedder) })
    }

    /// The model id, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    #[wasm_bindgen(getter)]
    pub fn id(&self) -> String {
        self.embedder.model_id().to_owned()
    }

    /// Vector dimension.
    #[wasm_bindgen(getter)]
    pub fn dimension(&self) -> usize {
        self.embedder.dimension()
    }

    /// Embeds texts as documents, or as queries when `query` is true; returns the vectors one
    /// after another in one `Float32Array`.
    pub fn embed(&self, texts: Vec<String>, query: Option<bool>) -> Result<Vec<f32>, JsError> {
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = if query == Some(true) {
            texts.iter().map(|t| self.embedder.embed_query(t)).collect::<Result<Vec<_>, _>>()?
        } else {
            self.embedder.embed_documents(&texts)?
        };
        Ok(vectors.concat())
    }

    /// Builds a bundle from files with this model's embeddings (dense retrieval). As the
    /// module's `build` otherwise.
    pub fn build(
        &self,
        files: Array,
        options: JsValue,
        on_progress: Option<Function>,
    ) -> Result<Object, JsError> {
        crate::build::run(&files, options, Some(self.shared()), on_progress.as_ref())
    }
}

/// all-MiniLM-L6-v2's settings under the id `id` (default: all-MiniLM-L6-v2's).
fn options(id: Option<String>) -> EmbedderOptions {
    let defaults = EmbedderOptions::minilm();
    EmbedderOptions { model_id: id.unwrap_or(defaults.model_id.clone()), ..defaults }
}

impl Model {
    /// The embedder, shared.
    pub(crate) fn shared(&self) -> Rc<Embedder> {
        Rc::clone(&self.embedder)
    }
}
