//! The JSON requests hosts take from their callers (`edgerag_core::request`: search, ask,
//! build, LLM; and `completions::CompletionRequest`, the body of `POST /chat/completions`),
//! parsed with serde_json as the edge worker and `edgerag serve` parse them. What parses is
//! turned into options and used: a search and an extractive answer on a small bundle, a
//! build of a small document with the requested build options.
#![no_main]

use edgerag_core::answer::Answerer;
use edgerag_core::completions::CompletionRequest;
use edgerag_core::request::{AskRequest, BuildRequest, LlmRequest, SearchRequest};
use edgerag_core::{BundleBuilder, Searcher};
use libfuzzer_sys::fuzz_target;

const QUESTION: &str = "Who was the leader of the Norse raiders who settled Normandy?";

/// A few real paragraphs (the Normans fixture, cut short so that builds stay fast).
fn document() -> edgerag_core::Document {
    let text = include_str!("../../core/tests/fixtures/normans.md");
    let end = text.char_indices().nth(1500).map_or(text.len(), |(i, _)| i);
    edgerag_core::load("normans.md", &text.as_bytes()[..end]).expect("the fixture loads")
}

thread_local! {
    static SEARCHER: Searcher = {
        let mut builder = BundleBuilder::new(Default::default()).expect("default options");
        builder.add(document());
        Searcher::new(builder.finish(&mut |_| {}).expect("the fixture builds"))
    };
}

fuzz_target!(|data: &[u8]| SEARCHER.with(|searcher| {
    if let Ok(request) = serde_json::from_slice::<SearchRequest>(data)
        && let Ok(options) = request.options(10)
    {
        let _ = searcher.search(QUESTION, &options);
    }
    if let Ok(request) = serde_json::from_slice::<AskRequest>(data) {
        if let Ok(options) = request.options() {
            let _ = Answerer::new(searcher, options).extractive(QUESTION);
        }
        let _ = request.llm();
    }
    if let Ok(request) = serde_json::from_slice::<BuildRequest>(data) {
        let _ = request.embeds(true);
        if let Ok(mut builder) = BundleBuilder::new(request.options(false, 0)) {
            builder.add(document());
            if let Ok(bundle) = builder.finish(&mut |_| {}) {
                let bytes = bundle.to_bytes().expect("a built bundle encodes");
                edgerag_core::Bundle::from_bytes(&bytes).expect("a built bundle decodes");
            }
        }
    }
    if let Ok(request) = serde_json::from_slice::<LlmRequest>(data) {
        let _ = request.config();
    }
    if let Ok(request) = serde_json::from_slice::<CompletionRequest>(data) {
        let _ = (request.question(), request.conversation(), request.token_limit());
    }
}));
