//! `Searcher::from_bytes` on bundles whose header is made valid, then every query that needs
//! no model (BM25, graph, hybrid; filters; explanations; keyword candidates; the graph view;
//! extractive answers): `Bundle::validate` promises that a decoded bundle cannot make a query
//! fail on a bad index.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match edgerag_core::Searcher::from_bytes(&edgerag_fuzz::with_valid_header(data)) {
        Ok(searcher) => edgerag_fuzz::query(&searcher, true),
        Err(error) => edgerag_fuzz::check_refusal(&error),
    }
});
