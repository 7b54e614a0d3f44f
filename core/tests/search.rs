//! Searching bundles built from real documents.

use edgerag_core::{Mode, SearchOptions, Searcher};

use crate::common;

fn top_document(searcher: &Searcher, query: &str, mode: Mode) -> String {
    let options = SearchOptions { k: 3, mode, ..Default::default() };
    let hits = searcher.search(query, &options).unwrap();
    assert!(!hits.is_empty(), "{mode}: no results for {query:?}");
    hits[0].text.clone()
}

#[test]
fn every_mode_finds_the_passage_that_answers() {
    let searcher = Searcher::new(common::bundle());
    for mode in [Mode::Bm25, Mode::Graph, Mode::Hybrid] {
        let text = top_document(&searcher, "Who was the leader of the Norse raiders?", mode);
        assert!(text.contains("Rollo"), "{mode}: {text}");
    }
}

#[test]
fn explain_names_terms_and_signals() {
    let searcher = Searcher::new(common::bundle());
    let options = SearchOptions { k: 1, explain: true, ..Default::default() };
    let hits = searcher.search("Rollo West Francia fealty", &options).unwrap();
    let e = hits[0].explain.as_ref().unwrap();
    assert!(e.bm25.is_some());
    assert!(e.terms.iter().any(|t| t.term == "rollo"), "{e:?}");
}

#[test]
fn empty_queries_are_errors_not_panics() {
    let searcher = Searcher::new(common::bundle());
    for query in ["", "   ", "the of and"] {
        assert!(searcher.search(query, &SearchOptions::default()).is_err(), "{query:?}");
    }
}
