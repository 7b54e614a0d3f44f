//! Building a bundle in memory from files handed over by JavaScript.

use std::rc::Rc;

use edgerag_core::bundle::{BuildFailure, BuildSummary, Progress};
use edgerag_core::embed::Embedder;
use edgerag_core::request::BuildRequest;
use js_sys::{Array, Function, Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;

use crate::{from_js, to_js};

/// Builds a bundle, without embeddings, from `files`: an array of `{ name, bytes }` (the name's
/// extension picks the format: .txt, .md, .html, .pdf). `options` (all optional): `{ name,
/// created, chunkTarget, chunkMax, chunkMin, chunkOverlap, maxDf, keep, keywordSimilarity,
/// vectors, format }` (`format`: 4, the default, or 3). `onProgress` receives `{ stage, done, total, file }` while files load
/// (`stage: "load"`) and then for each indexing step. Returns `{ bytes, summary }`; files that
/// cannot be loaded are skipped and listed in `summary.failed`. Throws if none can be.
///
/// Use `Model.build` to embed the chunks too. A PDF that crashes the PDF parser aborts the
/// module (WebAssembly cannot catch a panic): the host must then start a fresh instance.
#[wasm_bindgen]
pub fn build(
    files: Array,
    options: JsValue,
    on_progress: Option<Function>,
) -> Result<Object, JsError> {
    run(&files, options, None, on_progress.as_ref())
}

/// [`build`], embedding with `model` when there is one.
pub(crate) fn run(
    files: &Array,
    options: JsValue,
    model: Option<Rc<Embedder>>,
    on_progress: Option<&Function>,
) -> Result<Object, JsError> {
    let request: BuildRequest = from_js(options)?;
    let now = (js_sys::Date::now() / 1000.0) as u64;
    let mut builder = request.builder(model, now)?;
    let report = |stage: &JsValue, done: usize, total: usize, file: Option<&str>| {
        if let Some(callback) = on_progress {
            let progress = Object::new();
            set(&progress, "stage", stage);
            set(&progress, "done", &(done as f64).into());
            set(&progress, "total", &(total as f64).into());
            if let Some(file) = file {
                set(&progress, "file", &file.into());
            }
            // A throwing callback must not end the build; the error is the caller's.
            _ = callback.call1(&JsValue::NULL, &progress);
        }
    };
    let load = JsValue::from_str("load");

    let total = files.length() as usize;
    let mut failed = Vec::new();
    for (i, file) in files.iter().enumerate() {
        let name = Reflect::get(&file, &"name".into())
            .ok()
            .and_then(|name| name.as_string())
            .ok_or_else(|| JsError::new(&format!("file {i}: `name` must be a string")))?;
        report(&load, i, total, Some(&name));
        let bytes = Reflect::get(&file, &"bytes".into())
            .ok()
            .and_then(|bytes| bytes.dyn_into::<Uint8Array>().ok())
            .ok_or_else(|| JsError::new(&format!("{name}: `bytes` must be a Uint8Array")))?
            .to_vec();
        match edgerag_core::load(&name, &bytes) {
            Ok(doc) => _ = builder.add(doc),
            Err(error) => failed.push(BuildFailure { source: name, error: error.to_string() }),
        }
    }
    report(&load, total, total, None);
    if builder.documents() == 0 {
        let reasons: Vec<String> =
            failed.iter().map(|f| format!("{}: {}", f.source, f.error)).collect();
        return Err(JsError::new(&format!(
            "none of the {total} files could be loaded ({})",
            reasons.join("; ")
        )));
    }

    let reused_vectors = builder.reused_vectors();
    let bundle = builder.finish(&mut |p: Progress| {
        if let Ok(stage) = to_js(&p.stage) {
            report(&stage, p.done, p.total, None);
        }
    })?;
    let bytes = bundle.encode(request.format()?)?;
    let summary =
        BuildSummary { counts: bundle.manifest.counts, bytes: bytes.len(), reused_vectors, failed };
    let result = Object::new();
    set(&result, "summary", &to_js(&summary)?);
    set(&result, "bytes", &Uint8Array::from(bytes.as_slice()));
    Ok(result)
}

/// Sets a property of an object the module just made (which cannot fail).
fn set(target: &Object, key: &str, value: &JsValue) {
    _ = Reflect::set(target, &JsValue::from_str(key), value);
}
