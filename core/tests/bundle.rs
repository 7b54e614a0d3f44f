//! Bundle format: round trip, header checks, corruption, truncation, the stored fixture.

use edgerag_core::bundle::lazy::{self, DEFAULT_BUDGET, Layout};
use edgerag_core::bundle::paged::{InMemory, NAMED};
use edgerag_core::bundle::{
    FORMAT_VERSION, HEADER_LEN, MAGIC, MIN_READER_VERSION, Manifest, paged,
};
use edgerag_core::query::{Filter, LazySearcher};
use edgerag_core::{Bundle, Error, Hit, Mode, SearchOptions, Searcher};

use crate::common::{self, now};

#[test]
fn round_trip_preserves_everything() {
    let bundle = common::bundle();
    let bytes = bundle.to_bytes().unwrap();
    assert_eq!(&bytes[..8], &MAGIC);
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), FORMAT_VERSION);
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), MIN_READER_VERSION);
    let decoded = Bundle::from_bytes(&bytes).unwrap();
    assert_eq!(decoded, bundle);
    assert_eq!(decoded.manifest.format_version, FORMAT_VERSION);
    assert_eq!(decoded.manifest.counts.chunks as usize, decoded.chunks.len());
    assert!(decoded.manifest.counts.keywords > 0);
    // Encoding is deterministic: the same build gives the same bytes.
    assert_eq!(common::bundle().to_bytes().unwrap(), bytes);
}

#[test]
fn every_truncation_is_a_typed_error() {
    let bytes = common::bundle().to_bytes().unwrap();
    for len in 0..bytes.len() {
        match Bundle::from_bytes(&bytes[..len]) {
            Err(Error::Truncated { found, .. }) => assert_eq!(found, len as u64),
            Err(Error::NotABundle) => assert_eq!(len, 0),
            other => panic!("truncated to {len} bytes: {other:?}"),
        }
    }
}

#[test]
fn corruption_is_detected() {
    let bytes = common::bundle().to_bytes().unwrap();
    for at in [HEADER_LEN, HEADER_LEN + 1, bytes.len() / 2, bytes.len() - 1] {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x40;
        assert!(matches!(Bundle::from_bytes(&flipped), Err(Error::Corrupted)), "flip at {at}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(matches!(Bundle::from_bytes(&longer), Err(Error::Corrupted)));
    let mut magic = bytes.clone();
    magic[0] = b'X';
    assert!(matches!(Bundle::from_bytes(&magic), Err(Error::NotABundle)));
}

#[test]
fn versions_outside_the_readable_range_are_refused() {
    let bytes = common::bundle().to_bytes().unwrap();
    let mut too_new = bytes.clone();
    too_new[10..12].copy_from_slice(&(paged::VERSION + 1).to_le_bytes());
    let err = Bundle::from_bytes(&too_new).unwrap_err();
    assert!(matches!(err, Error::TooNew { found, .. } if found == paged::VERSION + 1));
    assert!(err.to_string().contains("newer edgerag"), "{err}");
    // A bundle of format 4 is read by range: reading it whole says so.
    let paged = common::bundle().to_paged_bytes(&Layout::default()).unwrap();
    assert!(matches!(Bundle::from_bytes(&paged), Err(Error::ReadByRange)));
    let mut too_old = bytes;
    too_old[8..10].copy_from_slice(&0u16.to_le_bytes());
    assert!(matches!(Bundle::from_bytes(&too_old), Err(Error::TooOld { found: 0, .. })));
}

#[test]
fn random_bytes_never_panic() {
    // xorshift: deterministic pseudo-random inputs, with and without a valid header.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let valid = common::bundle().to_bytes().unwrap();
    for round in 0..2000 {
        let len = (next() % 512) as usize;
        let mut bytes: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if round % 2 == 0 && bytes.len() >= HEADER_LEN {
            bytes[..HEADER_LEN].copy_from_slice(&valid[..HEADER_LEN]);
        }
        assert!(Bundle::from_bytes(&bytes).is_err());
    }
}

#[test]
fn payload_with_a_valid_checksum_but_bad_indices_is_refused() {
    let mut bundle = common::bundle();
    bundle.chunks[0].doc = 999;
    // The message quotes the chunk's id, escaped: the file chose it, line breaks and all.
    bundle.chunks[0].id = "a\nb".into();
    let bytes = bundle.to_bytes().unwrap();
    let err = Bundle::from_bytes(&bytes).unwrap_err();
    assert!(matches!(err, Error::Decode(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        r#"malformed bundle payload: chunk "a\nb" points to a missing document"#
    );
}

/// `bytes` with its payload replaced by `payload`, length and checksum set to match.
fn with_payload(bytes: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = bytes[..HEADER_LEN].to_vec();
    out[16..24].copy_from_slice(&(payload.len() as u64).to_le_bytes());
    out[24..HEADER_LEN].copy_from_slice(blake3::hash(payload).as_bytes());
    out.extend_from_slice(payload);
    out
}

#[test]
fn reserved_header_flags_are_refused() {
    let bytes = common::bundle().to_bytes().unwrap();
    for bit in [0, 7, 31] {
        let mut flagged = bytes.clone();
        flagged[12..16].copy_from_slice(&(1u32 << bit).to_le_bytes());
        let err = Bundle::from_bytes(&flagged).unwrap_err();
        assert!(matches!(err, Error::Decode(_)), "{err:?}");
        assert!(err.to_string().contains("does not define"), "{err}");
    }
}

#[test]
fn a_payload_that_does_not_decode_names_the_part_that_failed() {
    let bundle = common::bundle();
    let bytes = bundle.to_bytes().unwrap();
    let payload = &bytes[HEADER_LEN..];

    // Invalid UTF-8 inside the text of the third chunk.
    let text = bundle.chunks[2].text.as_bytes();
    let at = payload.windows(text.len()).position(|w| w == text).unwrap();
    let mut broken = payload.to_vec();
    broken[at] = 0xff;
    let err = Bundle::from_bytes(&with_payload(&bytes, &broken)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "malformed bundle payload: chunks[2]: tried to parse invalid utf-8"
    );

    // A payload cut short fails in its last part, and says so.
    let err = Bundle::from_bytes(&with_payload(&bytes, &payload[..payload.len() - 3])).unwrap_err();
    let message = err.to_string();
    assert!(message.starts_with("malformed bundle payload: bm25"), "{message}");
    assert!(message.ends_with("hit the end of buffer, expected more data"), "{message}");
}

/// A bundle written by format version 1, kept to prove that old bundles stay readable.
/// Made with `edgerag build core/tests/fixtures/normans.md
/// core/tests/fixtures/computational-complexity.html -o core/tests/fixtures/bundle-v1.bundle
/// --name fixtures --created 1700000000`; never regenerate it for a new format version, add one.
#[test]
fn stored_v1_bundle_still_loads_and_answers() {
    let bytes = common::fixture("bundle-v1.bundle");
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 1);
    let searcher = edgerag_core::Searcher::from_bytes(&bytes).unwrap();
    let manifest = &searcher.bundle().manifest;
    assert_eq!(manifest.corpus, "fixtures");
    assert_eq!(manifest.created, 1_700_000_000);
    assert_eq!(manifest.counts.documents, 2);
    assert_eq!(manifest.counts.chunks as usize, searcher.bundle().chunks.len());
    let options = edgerag_core::SearchOptions { k: 1, ..Default::default() };
    let hits = searcher.search("Rollo swore fealty to King Charles III", &options).unwrap();
    assert_eq!(hits[0].title, "Normans");
    assert!(hits[0].text.contains("Rollo"));
}

/// A bundle written by format version 2, with all-MiniLM-L6-v2 vectors. Made with
/// `edgerag build core/tests/fixtures/normans.md core/tests/fixtures/computational-complexity.html
/// -o core/tests/fixtures/bundle-v2.bundle --name fixtures --created 1700000000`.
#[test]
fn stored_v2_bundle_loads_with_its_vectors() {
    let bytes = common::fixture("bundle-v2.bundle");
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 2);
    let bundle = Bundle::from_bytes(&bytes).unwrap();
    let spec = bundle.manifest.embedding.as_ref().unwrap();
    assert_eq!(spec.model, "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(spec.dimension, 384);
    // Version 2 had no semantic keyword similarity: its edges are lexical.
    assert_eq!(bundle.manifest.params.graph.semantic_threshold, None);
    let dense = bundle.dense.as_ref().unwrap();
    assert_eq!(dense.len(), bundle.chunks.len());
    assert_eq!(bundle.manifest.counts.vectors as usize, bundle.chunks.len());
    // A chunk's own (dequantised) vector finds that chunk first.
    let query = dense.vector(3).unwrap();
    let hits = dense.search(&query, 3, |_| true).unwrap();
    assert_eq!(hits[0].chunk, 3);
    assert!(hits[0].score > 0.99, "{hits:?}");
}

/// A bundle written by format version 3: vectors and semantic SIMILAR_TO edges. Made with
/// `edgerag build core/tests/fixtures/normans.md core/tests/fixtures/computational-complexity.html
/// -o core/tests/fixtures/bundle-v3.bundle --name fixtures --created 1700000000`.
#[test]
fn stored_v3_bundle_loads_with_semantic_keyword_edges() {
    let bytes = common::fixture("bundle-v3.bundle");
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 3);
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 3);
    let bundle = Bundle::from_bytes(&bytes).unwrap();
    let graph = &bundle.manifest.params.graph;
    assert_eq!(graph.semantic_threshold, Some(0.8));
    assert_eq!(graph.semantic_keywords, 20_000);
    assert_eq!(bundle.dense.as_ref().map(|d| d.len()), Some(bundle.chunks.len()));
    // Some SIMILAR_TO edges score above the lexical (Dice) similarity of their keys' words:
    // embeddings made those ("algorithm" ~ "analysis of algorithms").
    let words = |k: u32| bundle.graph.keywords[k as usize].key.split(' ').collect::<Vec<_>>();
    let semantic = bundle
        .graph
        .similar
        .iter()
        .filter(|s| {
            let (a, b) = (words(s.a), words(s.b));
            let shared = a.iter().filter(|w| b.contains(w)).count();
            s.score > 2.0 * shared as f32 / (a.len() + b.len()) as f32 + 1e-6
        })
        .inspect(|s| assert!(s.score >= 0.8, "{s:?}"))
        .count();
    assert!(semantic > 0);
}

/// A bundle of format version 4, made from `bundle-v3.bundle` with `edgerag convert
/// core/tests/fixtures/bundle-v3.bundle core/tests/fixtures/bundle-v4.bundle`.
#[test]
fn stored_v4_bundle_searches_as_the_v3_bundle_it_was_made_from() {
    let bytes = common::fixture("bundle-v4.bundle");
    assert_eq!(u16::from_le_bytes([bytes[8], bytes[9]]), 4);
    assert_eq!(u16::from_le_bytes([bytes[10], bytes[11]]), 4);
    let open = |bytes: &[u8]| now(LazySearcher::open(InMemory(bytes.to_vec()), DEFAULT_BUDGET));
    let lazy = open(&bytes).unwrap();
    let whole = Searcher::from_bytes(&common::fixture("bundle-v3.bundle")).unwrap();
    let manifest = &whole.bundle().manifest;
    assert_eq!(lazy.manifest(), &Manifest { format_version: 4, ..manifest.clone() });
    let shown = |hits: Vec<Hit>| -> Vec<(String, f32, String, String)> {
        hits.into_iter().map(|h| (h.chunk_id, h.score, h.title, h.text)).collect()
    };
    for mode in [Mode::Bm25, Mode::Graph, Mode::Hybrid] {
        for query in ["Rollo swore fealty to King Charles III", "complexity classes", "Normandy"] {
            let options = SearchOptions { mode, k: 5, ..SearchOptions::default() };
            let expected = shown(whole.search(query, &options).unwrap());
            assert!(!expected.is_empty(), "{query:?}, {mode}");
            assert_eq!(shown(now(lazy.search(query, &options)).unwrap()), expected);
        }
    }
    // Written before bundles kept a filter table, it refuses filters, saying why; written
    // now, the same bundle filters as in memory.
    let filter = Filter { documents: vec!["normans.md".into()], ..Filter::default() };
    let filtered = SearchOptions { filter, ..SearchOptions::default() };
    let error = now(lazy.search("conquest", &filtered)).unwrap_err();
    assert!(error.to_string().contains("no filter table"), "{error}");
    let named = whole.bundle().to_paged_bytes(&Layout::default()).unwrap();
    let rewritten = open(&named).unwrap();
    for query in ["conquest", "Rollo swore fealty"] {
        let expected = shown(whole.search(query, &filtered).unwrap());
        assert!(!expected.is_empty() && expected.iter().all(|(_, _, title, _)| title == "Normans"));
        assert_eq!(shown(now(rewritten.search(query, &filtered)).unwrap()), expected);
    }
    // Written now, its links name the keywords that are names (see the graph's tests), it
    // finds chunks by id, lists its documents as the bundle in memory does, and it is the
    // stored fixture of that layout.
    assert_eq!((lazy.bundle().flags() & NAMED, rewritten.bundle().flags() & NAMED), (0, NAMED));
    let documents = now(lazy::inspect(rewritten.bundle())).unwrap().documents;
    assert_eq!(documents, Some(whole.bundle().inspect().documents));
    let fixture = common::fixture("bundle-v4-documents.bundle");
    assert!(named == fixture, "the layout changed: see README");
    let ids: Vec<String> = whole.bundle().chunks.iter().map(|c| c.id.clone()).collect();
    let addresses = now(rewritten.addresses(&ids)).unwrap();
    let stored = now(rewritten.bundle().body().store.read(rewritten.bundle(), &addresses));
    let stored: Vec<String> = stored.unwrap().into_iter().map(|s| s.chunk.id).collect();
    assert_eq!(stored, ids);
    let view = now(rewritten.graph_view(&ids[..2], 16)).unwrap();
    assert_eq!(view, whole.graph_view(&ids[..2], 16).unwrap());
    let unknown = ["0123456789abcdef0123456789abcdef".to_owned()];
    let error = now(rewritten.addresses(&unknown)).unwrap_err();
    assert!(error.to_string().contains("no chunk \"0123456789abcdef"), "{error}");
    // The layout before, without an index of chunk ids, searches and filters as this one but
    // cannot find a chunk by id, and says so.
    let older = open(&common::fixture("bundle-v4-named.bundle")).unwrap();
    for query in ["conquest", "Rollo swore fealty"] {
        let expected = shown(now(rewritten.search(query, &filtered)).unwrap());
        assert_eq!(shown(now(older.search(query, &filtered)).unwrap()), expected);
    }
    let error = now(older.graph_view(&ids[..2], 16)).unwrap_err();
    assert!(error.to_string().contains("without an index of chunk ids"), "{error}");
    // The layout before the document table finds chunks by id but lists no documents.
    let older = open(&common::fixture("bundle-v4-ids.bundle")).unwrap();
    assert_eq!(now(older.graph_view(&ids[..2], 16)).unwrap(), view);
    assert_eq!(now(lazy::inspect(older.bundle())).unwrap().documents, None);
    // A changed byte in a slot is refused, naming the slot and its section; so is a slot the
    // file ends before.
    let store = lazy.bundle().body().store;
    let data = HEADER_LEN + u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let mut changed = bytes.clone();
    changed[data + 20] ^= 1;
    let error = now(open(&changed).unwrap().bundle().slots(store.section, &[0])).unwrap_err();
    assert!(matches!(error, Error::CorruptedPage(_)), "{error}");
    assert!(error.to_string().contains("slot 0 of section \"chunks\""), "{error}");
    let cut = open(&bytes[..bytes.len() - 1]).unwrap();
    let last = cut.bundle().sections().len() - 1;
    let slots = cut.bundle().sections()[last].slots;
    let error = now(cut.bundle().slots(last as u32, &[slots - 1])).unwrap_err();
    assert!(matches!(error, Error::TruncatedPage(_)), "{error}");
}
