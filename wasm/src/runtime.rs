//! `Edgerag`: a bundle in memory, searched and asked from JavaScript. A bundle of format 4 is
//! read by range from the bytes it was given, older ones decoded whole.

use std::rc::Rc;

use edgerag_core::bundle::paged::{InMemory, ready_now};
use edgerag_core::generate::LocalModel;
use edgerag_core::query::{Corpus, Opened, SearchOptions, SearchResults};
use edgerag_core::request::{AskRequest, SearchRequest};
use js_sys::{Function, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::future_to_promise;

use crate::chat::ChatModel;
use crate::model::Model;
use crate::transport::FetchTransport;
use crate::{from_js, stream_to, to_js};

/// Keywords in the graph view when the caller does not say.
const GRAPH_KEYWORDS: usize = 16;

/// A corpus bundle loaded in memory, ready to search and answer from.
#[wasm_bindgen]
pub struct Edgerag {
    /// Shared with answers in progress, which outlive the call that started them.
    searcher: Rc<Opened<InMemory>>,
}

#[wasm_bindgen]
impl Edgerag {
    /// Loads a bundle from its bytes. Throws if they are not a bundle this version reads
    /// (corrupted, truncated, too new).
    #[wasm_bindgen(constructor)]
    pub fn new(bundle: Vec<u8>) -> Result<Edgerag, JsError> {
        Ok(Self { searcher: Rc::new(Opened::from_bytes(bundle)?) })
    }

    /// Attaches the embedding model, enabling dense and hybrid retrieval with vectors. Throws
    /// if the bundle has no vectors or was embedded with another model. The model stays
    /// usable (it is shared, not moved).
    #[wasm_bindgen(js_name = useModel)]
    pub fn use_model(&mut self, model: &Model) -> Result<(), JsError> {
        let searcher = Rc::get_mut(&mut self.searcher).ok_or_else(|| {
            JsError::new("the model cannot change while an answer is being written")
        })?;
        searcher.set_embedder(Box::new(model.shared()))?;
        Ok(())
    }

    /// Whether dense retrieval is on: the bundle has vectors and its model is attached.
    #[wasm_bindgen(getter, js_name = denseReady)]
    pub fn dense_ready(&self) -> bool {
        self.searcher.dense_ready()
    }

    /// The bundle's manifest.
    pub fn manifest(&self) -> Result<JsValue, JsError> {
        to_js(self.searcher.manifest())
    }

    /// The manifest and the documents, and the encoded size of each part, or for a bundle of
    /// format 4 its sections (as `edgerag inspect --json`, without the file's path and size).
    pub fn inspect(&self) -> Result<JsValue, JsError> {
        to_js(&now(self.searcher.inspect())?)
    }

    /// Searches the bundle. `options`: `{ k, mode, explain, filter: { documents, section,
    /// pages, kinds }, denseWeight, graphWeight, bridgeWeight }`, all optional. Returns
    /// `{ query, mode, results }` (as `edgerag search --json`).
    pub fn search(&self, query: &str, options: JsValue) -> Result<JsValue, JsError> {
        let options = from_js::<SearchRequest>(options)?.options(SearchOptions::default().k)?;
        let results = now(self.searcher.search(query, &options))?;
        to_js(&SearchResults { query, mode: options.mode, results })
    }

    /// Answers a question with citations; resolves to the answer (as `edgerag ask --json`).
    /// `options`: `{ k, mode, filter, extractive, sentences, minRelevance, contextTokens,
    /// llmKeywords, deadlineMs, llm: { baseUrl, apiKey, models, temperature, maxTokens,
    /// timeoutMs, retries } }`. Without `llm` (or with `extractive`) the answer is extractive;
    /// past `deadlineMs` (120 000) it is extractive too, with an `llm_deadline` warning.
    /// `onToken`, if given, receives the LLM's reply as it streams in; a `stream_discarded`
    /// warning says what it received broke off and is not the answer.
    pub fn ask(&self, question: String, options: JsValue, on_token: Option<Function>) -> Promise {
        self.answer(None, question, options, on_token)
    }

    /// Answers a question as [`Edgerag::ask`] does, written by `model` in this module instead
    /// of a remote LLM (`options` without `llm`; `contextTokens` defaults to 1024). `onToken`
    /// receives the model's reply as it is generated.
    #[wasm_bindgen(js_name = askWith)]
    pub fn ask_with(
        &self,
        model: &ChatModel,
        question: String,
        options: JsValue,
        on_token: Option<Function>,
    ) -> Promise {
        self.answer(Some(model.shared()), question, options, on_token)
    }

    /// The keyword graph around the chunks with these ids (e.g. an answer's sources), at most
    /// `limit` keywords (default 16): `{ nodes, edges }`.
    pub fn graph(&self, chunk_ids: Vec<String>, limit: Option<usize>) -> Result<JsValue, JsError> {
        to_js(&now(self.searcher.graph_view(&chunk_ids, limit.unwrap_or(GRAPH_KEYWORDS)))?)
    }
}

impl Edgerag {
    /// The answer, written by `local` when given, else as the request says; settled later, so
    /// it holds its own references to the searcher and the model.
    fn answer(
        &self,
        local: Option<Rc<LocalModel>>,
        question: String,
        options: JsValue,
        on_token: Option<Function>,
    ) -> Promise {
        let searcher = Rc::clone(&self.searcher);
        let request = from_js::<AskRequest>(options);
        future_to_promise(async move {
            let request = request?;
            let mut forward = stream_to(on_token.as_ref());
            let streaming = on_token.is_some().then_some(&mut forward as &mut dyn FnMut(&str));
            let answer = match local {
                Some(model) => request.answer_with(&*searcher, &question, &*model, streaming).await,
                None => request.answer(&*searcher, &question, FetchTransport, streaming).await,
            };
            Ok(to_js(&answer.map_err(JsError::from)?)?)
        })
    }
}

/// The output of `read`, which reads the bundle in memory: it is ready at once.
fn now<T>(read: impl Future<Output = edgerag_core::Result<T>>) -> Result<T, JsError> {
    let output = ready_now(read).ok_or_else(|| JsError::new("a read did not complete at once"))?;
    Ok(output?)
}
