//! `ChatModel`: a GGUF chat model generating text in the tab, and answering with it.

use std::rc::Rc;

use edgerag_core::completions::CompletionRequest;
use edgerag_core::generate::LocalModel;
use js_sys::Function;
use wasm_bindgen::prelude::*;

use crate::{parse_js, stream_to, to_js};

/// A llama-architecture chat model (for example SmolLM2-135M-Instruct) loaded from the bytes
/// of its GGUF file, generating in WebAssembly. Generation runs on the calling thread: call it
/// from a Web Worker.
#[wasm_bindgen]
pub struct ChatModel {
    model: Rc<LocalModel>,
}

#[wasm_bindgen]
impl ChatModel {
    /// Loads the model from its GGUF file's bytes, named `name` (default: the file's
    /// `general.name`). Throws if they are not a supported chat model.
    #[wasm_bindgen(constructor)]
    pub fn new(gguf: &[u8], name: Option<String>) -> Result<ChatModel, JsError> {
        let model = LocalModel::from_gguf(gguf)?;
        let model = match name {
            Some(name) => model.with_name(name),
            None => model,
        };
        Ok(Self { model: Rc::new(model) })
    }

    /// The model's name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.model.name().to_owned()
    }

    /// Longest prompt plus reply, in tokens.
    #[wasm_bindgen(getter, js_name = contextTokens)]
    pub fn context_tokens(&self) -> usize {
        self.model.context_tokens()
    }

    /// Generates a reply to an OpenAI-style chat request, `{ messages: [{ role, content }],
    /// max_tokens, temperature, top_p, seed, stop }`, passing each piece of text to `onToken`
    /// as it is decoded. Returns `{ text, prompt_tokens, completion_tokens, finish }`
    /// (`finish`: `"stop"` or `"length"`).
    pub fn generate(
        &self,
        request: JsValue,
        on_token: Option<Function>,
    ) -> Result<JsValue, JsError> {
        let request: CompletionRequest = parse_js(request)?;
        let options = request.generate_options(self.model.options());
        let mut forward = stream_to(on_token.as_ref());
        let streaming = on_token.is_some().then_some(&mut forward as &mut dyn FnMut(&str));
        to_js(&self.model.generate(&request.conversation()?, &options, streaming)?)
    }
}

impl ChatModel {
    /// The model, shared with answers in progress.
    pub(crate) fn shared(&self) -> Rc<LocalModel> {
        Rc::clone(&self.model)
    }
}
