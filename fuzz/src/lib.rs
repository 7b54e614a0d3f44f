//! What the fuzz targets share: the properties a loaded document must have, the whole build of
//! one file, a bundle header made valid around fuzzed bytes, and the queries run on a decoded
//! bundle. A target fails (and libFuzzer keeps the input) when one of these panics.

use edgerag_core::answer::{Answerer, AskOptions};
use edgerag_core::bundle::graph::PagedGraph;
use edgerag_core::bundle::ivf::Ivf;
use edgerag_core::bundle::paged::{self, merkle};
use edgerag_core::bundle::{ChunkStore, HEADER_LEN, Lexicon, lazy, lexicon};
use edgerag_core::chunk::{self, CharSizer};
use edgerag_core::graph::{GraphHit, GraphSearch};
use edgerag_core::index::Scored;
use edgerag_core::load::BlockKind;
use edgerag_core::query::{Filter, LazySearcher};
use edgerag_core::text::Analyzer;
use edgerag_core::{
    BuildOptions, Bundle, BundleBuilder, DocKind, Document, Error, Mode, SearchOptions, Searcher,
    limits,
};

/// Loads `bytes` as `kind`, checks the document and chunks it. For one input in
/// [`BUILD_ONE_IN`] (chosen by a hash of the bytes, so the same input always takes the same
/// path) it then builds a bundle of it as `edgerag build` does (chunks, keywords, graph, BM25; no
/// embeddings), encodes it, decodes it again and queries it: building and querying cost tens of
/// times what loading does, so loading would otherwise get a few percent of the fuzzer's time.
/// Any refusal is fine; a panic, a broken document or a bundle that does not read back is not.
pub fn load_and_build(kind: DocKind, name: &str, bytes: &[u8]) {
    let doc = match edgerag_core::load::load_as(kind, name, bytes) {
        Ok(doc) => doc,
        Err(error) => return check_refusal(&error),
    };
    check_document(&doc, kind);
    let options = BuildOptions::default();
    if !fnv1a(bytes).is_multiple_of(BUILD_ONE_IN) {
        chunk::chunk_document(&doc, 0, &options.chunk, &CharSizer);
        return;
    }
    let Ok(mut builder) = BundleBuilder::new(options) else {
        panic!("the default build options are refused");
    };
    builder.add(doc);
    let bundle = match builder.finish(&mut |_| {}) {
        Ok(bundle) => bundle,
        Err(error) => return check_refusal(&error),
    };
    let encoded = bundle.to_bytes().expect("a built bundle encodes");
    let searcher = Searcher::from_bytes(&encoded).expect("a built bundle decodes");
    query(&searcher, false);
}

/// One input in this many goes through the whole build in [`load_and_build`].
pub const BUILD_ONE_IN: u64 = 16;

/// FNV-1a, 64 bits: a cheap, stable hash of an input.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A refusal's message is one line (the CLI prints it after the file's name in `failed`).
pub fn check_refusal(error: &Error) {
    let message = error.to_string();
    assert!(!message.is_empty(), "empty error message: {error:?}");
    assert!(!message.contains('\n'), "error message of several lines: {message:?}");
}

/// The conventions of `edgerag_core::load` every loader promises the chunker: the text is the
/// blocks' texts joined by blank lines, each block is non-blank and on character boundaries,
/// prose blocks are trimmed and hold no line breaks (code and tables keep their lines and
/// indentation), the section tree is rooted and points backwards, and the text stays under
/// the documented limit.
pub fn check_document(doc: &Document, kind: DocKind) {
    assert_eq!(doc.kind, kind, "document kind");
    assert!(doc.text.len() <= limits::MAX_TEXT_BYTES, "text of {} bytes", doc.text.len());
    let root = doc.sections.first().expect("sections[0] is the root");
    assert_eq!((root.level, root.parent), (0, None), "root section {root:?}");
    for (i, section) in doc.sections.iter().enumerate().skip(1) {
        let parent = section.parent.expect("only the root has no parent") as usize;
        assert!(parent < i, "section {i}'s parent {parent} does not precede it");
        let parent_level = doc.sections[parent].level;
        assert!(
            (1..=6).contains(&section.level) && parent_level < section.level,
            "section {i} of level {} under a section of level {parent_level}",
            section.level
        );
        assert!(!section.title.contains('\n'), "section title with a line break");
    }
    let mut expected_start = 0;
    for (i, block) in doc.blocks.iter().enumerate() {
        assert_eq!(block.range.start, expected_start, "block {i} does not follow a blank line");
        let text = doc.text.get(block.range.clone()).unwrap_or_else(|| {
            panic!("block {i}'s range {:?} is outside the text or splits a character", block.range)
        });
        assert!(!text.trim().is_empty(), "block {i} is blank");
        if matches!(block.kind, BlockKind::Code | BlockKind::Table) {
            // Kept as lines, their indentation included (DocumentBuilder::block).
            assert!(!text.starts_with(['\n', '\r']), "block {i} starts with a blank line");
            assert_eq!(text, text.trim_end(), "block {i} ends with white space");
        } else {
            assert_eq!(text, text.trim(), "block {i} is not trimmed");
            assert!(!text.contains('\n'), "{:?} block {i} holds a line break", block.kind);
        }
        assert!(block.section < doc.sections.len(), "block {i} in a missing section");
        match (kind, block.page) {
            (DocKind::Pdf, Some(page)) => {
                assert!((1..=doc.pages).contains(&page), "block {i} on page {page}")
            }
            (DocKind::Pdf, None) => panic!("PDF block {i} without a page"),
            (_, page) => assert_eq!(page, None, "block {i} of a {kind:?} document has a page"),
        }
        expected_start = block.range.end + 2;
        if i + 1 < doc.blocks.len() {
            assert_eq!(doc.text.get(block.range.end..expected_start), Some("\n\n"));
        }
    }
    let end = doc.blocks.last().map_or(0, |b| b.range.end);
    assert_eq!(end, doc.text.len(), "text after the last block");
}

/// `bytes` with a valid header: when they start with the bundle magic, the payload length and
/// its BLAKE3 hash are rewritten, so the fuzzer's changes reach the decoder instead of
/// stopping at the checksum. Other bytes are returned as they are.
pub fn with_valid_header(bytes: &[u8]) -> Vec<u8> {
    let mut bytes = bytes.to_vec();
    if bytes.len() >= HEADER_LEN && bytes.starts_with(&edgerag_core::bundle::MAGIC) {
        let payload_len = (bytes.len() - HEADER_LEN) as u64;
        bytes[16..24].copy_from_slice(&payload_len.to_le_bytes());
        let hash = blake3::hash(&bytes[HEADER_LEN..]);
        bytes[24..HEADER_LEN].copy_from_slice(hash.as_bytes());
    }
    bytes
}

/// Decodes `bytes` as a bundle; when it decodes, encoding it again and decoding that gives
/// the same bytes (a decoded bundle is a bundle the writer can write).
pub fn decode_round_trip(bytes: &[u8]) -> Option<Bundle> {
    let bundle = match Bundle::from_bytes(bytes) {
        Ok(bundle) => bundle,
        Err(error) => {
            check_refusal(&error);
            return None;
        }
    };
    let encoded = bundle.to_bytes().expect("a decoded bundle encodes");
    let again = Bundle::from_bytes(&encoded).expect("a re-encoded bundle decodes");
    assert!(again.to_bytes().ok() == Some(encoded), "decoding is not stable");
    Some(bundle)
}

/// Searches `searcher` in every mode that needs no model with a query made of the bundle's own
/// words (so there are hits), answers it extractively and draws the graph around the hits;
/// `thoroughly`, also with fixed queries, with a filter, and asks for keyword candidates.
/// Errors are fine; panics are not.
pub fn query(searcher: &Searcher, thoroughly: bool) {
    let bundle = searcher.bundle();
    let own: String = bundle
        .chunks
        .first()
        .map(|c| c.text.split_whitespace().take(6).collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let section = bundle.documents.first().and_then(|d| d.sections.get(1)).map(|s| s.title.clone());
    let filters = [
        Filter::default(),
        Filter {
            documents: bundle.documents.iter().take(1).map(|d| d.source.clone()).collect(),
            section,
            pages: Some((1, 3)),
            kinds: vec![DocKind::Pdf, DocKind::Markdown],
        },
    ];
    let queries = [own.as_str(), "who improved the steam engine in 1781?", "a"];
    let (queries, filters) =
        if thoroughly { (&queries[..], &filters[..]) } else { (&queries[..1], &filters[..1]) };
    for &query in queries {
        for mode in [Mode::Bm25, Mode::Graph, Mode::Hybrid] {
            for filter in filters {
                let options = SearchOptions {
                    k: 5,
                    mode,
                    explain: true,
                    filter: filter.clone(),
                    ..SearchOptions::default()
                };
                if let Ok(hits) = searcher.search(query, &options) {
                    let ids: Vec<String> = hits.iter().map(|h| h.chunk_id.clone()).collect();
                    let _ = searcher.graph_view(&ids, 20);
                }
            }
        }
        if thoroughly {
            let _ = searcher.keyword_candidates(query, 10);
        }
        let _ = Answerer::new(searcher, AskOptions::default()).extractive(query);
    }
}

/// Opens `bytes` as a paged file (format version 4): as one holding a chunk store and a BM25
/// index, searched for [`PAGED_TERMS`] and its hits read from the store; with a chunk store and
/// a dense index, searched by vector ([`search_dense`]); with a chunk store and a keyword
/// graph, searched every way the graph is ([`search_graph`]); as a whole bundle, searched in
/// every mode ([`search_whole`]); else as any paged
/// file, its first [`SLOTS_READ`] slots of every section read. Any refusal is fine; a panic,
/// or slots or chunks that are not the ones asked for, is not.
pub fn read_paged(bytes: &[u8]) {
    let source = || paged::InMemory(bytes.to_vec());
    // A directory may decode as both bodies (postcard leaves trailing bytes): each is tried.
    let sections = ready(paged::PagedFile::<_, Sections>::open(source(), 64 << 10));
    if let Ok(file) = &sections {
        search_paged(file);
    }
    let dense = ready(paged::PagedFile::<_, Dense>::open(source(), 64 << 10));
    if let Ok(file) = &dense {
        search_dense(file);
    }
    let graph = ready(paged::PagedFile::<_, Graph>::open(source(), 64 << 10));
    if let Ok(file) = &graph {
        search_graph(file);
    }
    let whole = ready(LazySearcher::open(source(), 64 << 10));
    if let Ok(searcher) = &whole {
        search_whole(searcher);
    }
    if sections.is_ok() || dense.is_ok() || graph.is_ok() || whole.is_ok() {
        return;
    }
    let file = match ready(paged::PagedFile::<_, ()>::open(source(), 64 << 10)) {
        Ok(file) => file,
        Err(error) => return check_refusal(&error),
    };
    for (section, listed) in (0..).zip(file.sections()) {
        let slots: Vec<u32> = (0..listed.slots.min(SLOTS_READ)).collect();
        match ready(file.slots(section, &slots)) {
            Ok(read) => {
                assert_eq!(read.len(), slots.len(), "slots read");
                assert!(read.iter().all(|payload| payload.len() == listed.capacity()));
            }
            Err(error) => check_refusal(&error),
        }
    }
}

/// What the directory of a paged bundle's sections holds.
type Sections = (ChunkStore, Lexicon);

/// What the directory of a paged file of a chunk store and a dense index holds.
type Dense = (ChunkStore, Ivf);

/// Searches a paged dense index with a unit query of its dimension (at most 4,096), probing
/// its default, then one partition and then every one with a filter.
fn search_dense(file: &paged::PagedFile<paged::InMemory, Dense>) {
    let ivf = &file.body().1;
    let dim = (ivf.dim as usize).min(4096);
    let query = vec![1.0 / (dim.max(1) as f32).sqrt(); dim];
    for (probe, k) in [(None, 10), (Some(1), 3), (Some(u32::MAX), 1000)] {
        match ready(ivf.search(file, &query, k, probe, |address| address % 3 != 0)) {
            Ok(hits) => {
                assert!(hits.len() <= k, "{} hits for {k}", hits.len());
                assert!(hits.iter().all(|hit| hit.chunk % 3 != 0), "a hit the filter refuses");
            }
            Err(error) => check_refusal(&error),
        }
    }
}

/// What the directory of a paged file of a chunk store and a keyword graph holds.
type Graph = (ChunkStore, PagedGraph);

/// Searches a paged keyword graph from a query and from keywords, with and without a filter,
/// bridges from two chunks and lists the query's keywords.
fn search_graph(file: &paged::PagedFile<paged::InMemory, Graph>) {
    let graph = &file.body().1;
    let analyzer = Analyzer::new();
    let query = "When did the Normans conquer England in 1066?";
    let deep = GraphSearch { primary: 20, max_depth: 3, ..GraphSearch::default() };
    let some = |address: u32| address % 3 != 0;
    let checked = |hits: Result<Vec<GraphHit>, Error>, k: usize| match hits {
        Ok(hits) => {
            assert!(hits.len() <= k, "{} hits for {k}", hits.len());
            assert!(hits.iter().all(|hit| some(hit.chunk)), "a hit the filter refuses");
        }
        Err(error) => check_refusal(&error),
    };
    checked(ready(graph.search(file, query, &analyzer, 10, &deep, &some)), 10);
    checked(ready(graph.search_keywords(file, &[0, 1, 7, u32::MAX], 5, &deep, &some)), 5);
    let seeds = [Scored { chunk: 0, score: 2.0 }, Scored { chunk: 1, score: 1.0 }];
    match ready(graph.bridge(file, query, &analyzer, &seeds, &some)) {
        Ok(hits) => assert!(hits.iter().all(|hit| some(hit.chunk)), "a bridge the filter refuses"),
        Err(error) => check_refusal(&error),
    }
    if let Err(error) = ready(graph.matched_keywords(file, query, &analyzer)) {
        check_refusal(&error);
    }
}

/// Searches a whole bundle of format 4 in every mode that needs no model, explained; in
/// dense mode, which has none to use; and filtered.
fn search_whole(searcher: &LazySearcher<paged::InMemory>) {
    let query = "When did the Normans conquer England in 1066?";
    for mode in [Mode::Bm25, Mode::Graph, Mode::Hybrid, Mode::Dense] {
        let options = SearchOptions { mode, k: 5, explain: true, ..SearchOptions::default() };
        match ready(searcher.search(query, &options)) {
            Ok(hits) => {
                assert!(hits.len() <= 5, "{} hits for 5", hits.len());
                // The graph around the hits, found by id through the index of chunk ids, and
                // around an id the bundle does not have.
                let mut ids: Vec<String> = hits.into_iter().map(|hit| hit.chunk_id).collect();
                if let Err(error) = ready(searcher.graph_view(&ids, 20)) {
                    check_refusal(&error);
                }
                ids.push("0123456789abcdef0123456789abcdef".into());
                if let Err(error) = ready(searcher.graph_view(&ids, 20)) {
                    check_refusal(&error);
                }
            }
            Err(error) => check_refusal(&error),
        }
    }
    // Filtered, which reads the filter table.
    let filter = Filter {
        documents: vec!["normans.md".into()],
        section: Some("norman".into()),
        ..Filter::default()
    };
    let options = SearchOptions { k: 5, filter, ..SearchOptions::default() };
    match ready(searcher.search(query, &options)) {
        Ok(hits) => assert!(hits.len() <= 5, "{} hits for 5", hits.len()),
        Err(error) => check_refusal(&error),
    }
    // Inspected, which reads the document table.
    let counted = searcher.manifest().counts.documents as usize;
    match ready(edgerag_core::bundle::lazy::inspect(searcher.bundle())) {
        Ok(inspection) => {
            let listed = inspection.documents.map_or(counted, |documents| documents.len());
            assert_eq!(listed, counted, "documents listed against the manifest's count");
        }
        Err(error) => check_refusal(&error),
    }
}

/// Terms [`read_paged`] searches for: some in the seed, one in none.
pub const PAGED_TERMS: [&str; 4] = ["norman", "normandi", "franc", "zyzzyva"];

/// Searches a paged bundle and reads its hits, and a few addresses besides.
fn search_paged(file: &paged::PagedFile<paged::InMemory, Sections>) {
    let (store, index) = file.body();
    let terms: Vec<String> = PAGED_TERMS.iter().map(|&t| t.to_owned()).collect();
    let ranked = match ready(index.search(file, &terms, 10, lexicon::BUDGET, |_| true)) {
        Ok(ranked) => ranked,
        Err(error) => return check_refusal(&error),
    };
    let hits = ranked.hits;
    assert!(hits.len() <= 10, "{} hits for 10", hits.len());
    assert!(ranked.read <= lexicon::BUDGET, "{} bytes of postings read", ranked.read);
    let mut addresses: Vec<u32> = hits.iter().map(|hit| hit.chunk).collect();
    addresses.extend([0, 1, u32::MAX]);
    match ready(store.read(file, &addresses)) {
        Ok(chunks) => assert_eq!(chunks.len(), addresses.len(), "chunks read"),
        Err(error) => check_refusal(&error),
    }
}

/// Slots [`read_paged`] reads of each section.
pub const SLOTS_READ: u32 = 256;

/// `bytes` with every hash a paged file holds made to match what it names, so that a fuzzed
/// file reaches what lies behind the hashes: the directory's (in the header), and each
/// section's root (in the directory) and slot proofs, for the sections that lie in the file.
/// Bytes that do not have a paged file's shape come back unchanged.
pub fn with_valid_hashes(bytes: &[u8]) -> Vec<u8> {
    fixed::<lazy::Body>(bytes)
        .or_else(|| fixed::<Sections>(bytes))
        .or_else(|| fixed::<Dense>(bytes))
        .or_else(|| fixed::<Graph>(bytes))
        .or_else(|| fixed::<()>(bytes))
        .unwrap_or_else(|| bytes.to_vec())
}

/// [`with_valid_hashes`] for a directory whose body is a `B`; `None` when it does not decode.
fn fixed<B: serde::Serialize + serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<Vec<u8>> {
    let (directory, data) = directory_of(bytes)?;
    let (mut directory, trailing) =
        postcard::take_from_bytes::<paged::Directory<B>>(directory).ok()?;
    if !trailing.is_empty() {
        return None;
    }
    let mut rest = bytes[data..].to_vec();
    let mut start = 0usize;
    for section in &mut directory.sections {
        let (slot, capacity) = (section.slot as usize, section.capacity());
        let Some(end) =
            slot.checked_mul(section.slots as usize).and_then(|len| start.checked_add(len))
        else {
            break;
        };
        if end <= rest.len() && capacity > 0 && !section.is_empty() {
            let stored = || rest[start..end].chunks_exact(slot);
            let tree = merkle::Tree::new(stored().map(|s| merkle::leaf(&s[..capacity])).collect());
            for (i, stored) in rest[start..end].chunks_exact_mut(slot).enumerate() {
                stored[capacity..].copy_from_slice(&tree.proof(i));
            }
            section.root = tree.root();
        }
        start = end;
    }
    let directory = postcard::to_allocvec(&directory).ok()?;
    let mut out = bytes[..HEADER_LEN].to_vec();
    out[16..24].copy_from_slice(&(directory.len() as u64).to_le_bytes());
    out[24..HEADER_LEN].copy_from_slice(blake3::hash(&directory).as_bytes());
    out.extend_from_slice(&directory);
    out.extend_from_slice(&rest);
    Some(out)
}

/// The directory of a paged file and where its data starts, if the file is that long.
fn directory_of(bytes: &[u8]) -> Option<(&[u8], usize)> {
    let len = u64::from_le_bytes(bytes.get(16..24)?.try_into().ok()?);
    let end = HEADER_LEN.checked_add(usize::try_from(len).ok()?)?;
    Some((bytes.get(HEADER_LEN..end)?, end))
}

/// The output of a future that is ready at once, as reading from memory is.
fn ready<F: std::future::Future>(future: F) -> F::Output {
    paged::ready_now(future).expect("a read from memory is ready at once")
}
