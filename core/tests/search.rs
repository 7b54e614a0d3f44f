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

#[test]
fn filters_restrict_every_mode_before_ranking() {
    use edgerag_core::query::Filter;
    let searcher = Searcher::new(common::bundle());
    let by_doc =
        Filter { documents: vec!["computational-complexity.html".into()], ..Filter::default() };
    let by_pages = Filter { pages: Some((4, 5)), ..Filter::default() };
    let by_section = Filter { section: Some("etymology".into()), ..Filter::default() };
    for mode in [Mode::Bm25, Mode::Graph, Mode::Hybrid] {
        let search = |filter: &Filter, query: &str| {
            let options =
                SearchOptions { k: 5, mode, filter: filter.clone(), ..Default::default() };
            searcher.search(query, &options).unwrap()
        };
        // The Normans query would rank normans.md first; the filter leaves only the other file.
        let hits = search(&by_doc, "Normans Rollo problem complexity");
        assert!(!hits.is_empty(), "{mode}");
        assert!(hits.iter().all(|h| h.document == "computational-complexity.html"), "{mode}");
        let hits = search(&by_pages, "MIME type glob pattern magic");
        assert!(!hits.is_empty(), "{mode}");
        assert!(hits.iter().all(|h| matches!(h.page, Some(4 | 5))), "{mode}: {hits:?}");
        let hits = search(&by_section, "Normans French name Normant");
        assert!(!hits.is_empty(), "{mode}");
        assert!(hits.iter().all(|h| h.section.iter().any(|s| s == "Etymology")), "{mode}");
    }
}
