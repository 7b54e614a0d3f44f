//! The sections of a paged bundle (format version 4) on real documents: what they give back,
//! and what reading them costs.

use edgerag_core::bundle::graph::PagedGraph;
use edgerag_core::bundle::ivf::{Ivf, IvfParams, MIN_RESCORED, PROBE};
use edgerag_core::bundle::lazy::{DEFAULT_BUDGET, Layout};
use edgerag_core::bundle::lexicon::{BUDGET, FIRST_BLOCK, Ranked};
use edgerag_core::bundle::paged::{
    CODED, InMemory, NAMED, PagedFile, PagedWriter, ROUTED, VERSION,
};
use edgerag_core::bundle::{ChunkStore, HEADER_LEN, Lexicon};
use edgerag_core::graph::{GraphHit, GraphIndex, GraphSearch};
use edgerag_core::index::Scored;
use edgerag_core::index::bm25::{Bm25Index, Bm25Params};
use edgerag_core::index::dense::DenseParams;
use edgerag_core::query::{Filter, LazySearcher};
use edgerag_core::text::Analyzer;
use edgerag_core::{
    BuildOptions, Bundle, BundleBuilder, Document, Error, Hit, Mode, SearchOptions, Searcher, load,
};

use crate::common::{self, now};
use crate::embed::minilm_boxed;

type Paged = PagedFile<InMemory, (ChunkStore, Lexicon)>;

/// `bundle`'s chunk store and BM25 index in a paged file of `slot`-byte slots, postings in
/// blocks of `first_block`, then twice as many each time; and each chunk's address.
fn paged(bundle: &Bundle, slot: u32, first_block: usize) -> (Vec<u8>, Vec<u32>) {
    let mut writer = PagedWriter::new();
    let (store, addresses) =
        ChunkStore::write(&mut writer, &bundle.documents, &bundle.chunks, slot).unwrap();
    let lexicon = Lexicon::write(&mut writer, &bundle.bm25, &addresses, slot, first_block).unwrap();
    (writer.finish((store, lexicon), VERSION, VERSION).unwrap(), addresses)
}

fn open(file: &[u8]) -> Paged {
    now(PagedFile::open(InMemory(file.to_vec()), 8 << 20)).unwrap()
}

/// The BM25 index's `k` best for `terms`, by chunk address.
fn whole(bundle: &Bundle, addresses: &[u32], terms: &[String], k: usize) -> Vec<Scored> {
    let hits = bundle.bm25.search(terms, k, |_| true).into_iter();
    hits.map(|s| Scored { chunk: addresses[s.chunk as usize], score: s.score }).collect()
}

/// The demo's queries, and some with repeated, unknown and stop words.
fn queries() -> impl Iterator<Item = &'static str> {
    let more = ["normans normans conquest", "zyzzyva", "the type of the file", "mime type glob"];
    include_str!("../../demo/queries.txt").lines().chain(more)
}

#[test]
fn a_small_bundle_searches_and_shows_its_results_as_when_read_whole() {
    let bundle = common::bundle();
    let (bytes, addresses) = paged(&bundle, 16 << 10, FIRST_BLOCK);
    let file = open(&bytes);
    let (store, lexicon) = file.body();
    let analyzer = Analyzer::new();
    for query in queries() {
        let terms = analyzer.terms(query);
        for k in [10, 100] {
            let got = now(lexicon.search(&file, &terms, k, BUDGET, |_| true)).unwrap().hits;
            assert_eq!(got, whole(&bundle, &addresses, &terms, k), "{query:?}, k {k}");
            let hits: Vec<u32> = got.iter().map(|s| s.chunk).collect();
            let shown = now(store.read(&file, &hits)).unwrap();
            let expected = bundle.bm25.search(&terms, k, |_| true);
            for (shown, hit) in shown.iter().zip(expected) {
                assert_eq!(shown.chunk, bundle.chunks[hit.chunk as usize], "{query:?}");
            }
        }
    }
    // A filter applies before ranking; a query asked again is read from the cache.
    let terms = analyzer.terms("the complexity of problems");
    let odd = |address: u32| address % 2 == 1;
    let got = now(lexicon.search(&file, &terms, 3, BUDGET, odd)).unwrap().hits;
    let hits = bundle.bm25.search(&terms, 3, |c| odd(addresses[c as usize])).into_iter();
    let expected: Vec<Scored> =
        hits.map(|s| Scored { chunk: addresses[s.chunk as usize], score: s.score }).collect();
    assert_eq!((got.len(), &got), (3, &expected));
    let io = file.io();
    now(lexicon.search(&file, &terms, 3, BUDGET, odd)).unwrap();
    assert_eq!(file.io(), io);
}

/// The demo corpus as a bundle, with all-MiniLM-L6-v2 vectors when `embed`.
fn demo(embed: bool) -> Bundle {
    let options = BuildOptions { corpus: "demo".into(), created: 1, ..Default::default() };
    let mut builder = BundleBuilder::new(options).unwrap();
    if embed {
        builder.embed_with(minilm_boxed());
    }
    add_demo(builder)
}

/// The demo corpus added to `builder`, built.
fn add_demo(mut builder: BundleBuilder) -> Bundle {
    demo_documents().into_iter().for_each(|doc| _ = builder.add(doc));
    builder.finish(&mut |_| {}).unwrap()
}

/// The documents of the demo corpus, in file name order.
fn demo_documents() -> Vec<Document> {
    let corpus = concat!(env!("CARGO_MANIFEST_DIR"), "/../demo/corpus");
    let mut paths: Vec<_> = std::fs::read_dir(corpus).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    let load_path = |path: &std::path::PathBuf| {
        load(path.file_name().unwrap().to_str().unwrap(), &std::fs::read(path).unwrap()).unwrap()
    };
    paths.iter().map(load_path).collect()
}

/// The demo corpus with vectors, built once for the tests that need it (embedding it takes
/// most of their time).
fn embedded_demo() -> &'static Bundle {
    static DEMO: std::sync::OnceLock<Bundle> = std::sync::OnceLock::new();
    DEMO.get_or_init(|| demo(true))
}

#[test]
fn a_rebuild_reuses_the_vectors_of_a_bundle_of_format_4_as_of_the_bundle_in_memory() {
    let bundle = embedded_demo();
    // Partitions of about 8 vectors: every list is read.
    let ivf = IvfParams { partition: 8, ..IvfParams::default() };
    let bytes = bundle.to_paged_bytes(&Layout { ivf, ..Layout::default() }).unwrap();
    let lazy = now(LazySearcher::open(InMemory(bytes), DEFAULT_BUDGET)).unwrap();
    assert!(lazy.bundle().body().dense.as_ref().unwrap().partitions > 2);
    let mut vectors = now(lazy.vectors()).unwrap();
    vectors.sort_by(|a, b| a.0.cmp(&b.0));
    let dense = bundle.dense.as_ref().unwrap();
    let vector = |(i, chunk): (usize, &edgerag_core::chunk::Chunk)| {
        (chunk.id.clone(), dense.vector(i as u32).unwrap())
    };
    let mut expected: Vec<(String, Vec<f32>)> =
        bundle.chunks.iter().enumerate().map(vector).collect();
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(vectors, expected);
    // A rebuild of the same corpus embeds nothing.
    let options = BuildOptions { corpus: "demo".into(), created: 1, ..Default::default() };
    let mut builder = BundleBuilder::new(options).unwrap();
    builder.embed_with(minilm_boxed());
    let spec = lazy.manifest().embedding.as_ref().unwrap();
    builder.reuse_vectors_of(spec, vectors).unwrap();
    demo_documents().into_iter().for_each(|doc| _ = builder.add(doc));
    assert_eq!(builder.reused_vectors(), bundle.chunks.len());
}

#[test]
fn a_bundle_encodes_in_the_format_asked() {
    let bundle = demo(false);
    assert_eq!(bundle.encode(4).unwrap(), bundle.to_paged_bytes(&Layout::default()).unwrap());
    assert_eq!(bundle.encode(3).unwrap(), bundle.to_bytes().unwrap());
    let error = bundle.encode(5).unwrap_err().to_string();
    assert!(error.contains("bundles are written in format 3 or 4, not 5"), "{error}");
}

#[test]
fn lists_of_many_blocks_give_the_best_as_the_whole_index() {
    let bundle = demo(false);
    // Blocks of 2, 4, 8… postings: the lists of the demo's terms run over many blocks.
    let (bytes, addresses) = paged(&bundle, 4 << 10, 2);
    let file = open(&bytes);
    let analyzer = Analyzer::new();
    let (mut exact, mut cut) = (0, 0);
    for query in queries() {
        let terms = analyzer.terms(query);
        let got = now(file.body().1.search(&file, &terms, 10, BUDGET, |_| true)).unwrap().hits;
        let expected = whole(&bundle, &addresses, &terms, 10);
        assert_same_best(&got, &expected, query);
        exact += usize::from(got == expected);
        // A budget of a few blocks cuts most searches short, never past it.
        let ranked = now(file.body().1.search(&file, &terms, 10, 256, |_| true)).unwrap();
        cut += usize::from(!assert_within(&ranked, 256, &expected, query));
    }
    assert!(exact > 0 && cut > 0, "{exact} exact, {cut} cut short");
}

/// Asserts that a search within `budget` read no more than it, and that it found `expected`
/// when its reads settled the best; returns whether they did.
fn assert_within(ranked: &Ranked, budget: u64, expected: &[Scored], query: &str) -> bool {
    assert!(ranked.read <= budget, "{query:?}: {} bytes read", ranked.read);
    if ranked.complete {
        assert_same_best(&ranked.hits, expected, query);
    }
    ranked.complete
}

/// Asserts that `got` holds the chunks of `expected`, in its order, each scored at most as it
/// scores them.
fn assert_same_best(got: &[Scored], expected: &[Scored], query: &str) {
    let chunks = |list: &[Scored]| list.iter().map(|s| s.chunk).collect::<Vec<u32>>();
    assert_eq!(chunks(got), chunks(expected), "{query:?}");
    for hit in got {
        let full = expected.iter().find(|s| s.chunk == hit.chunk).unwrap().score;
        assert!(hit.score <= full * (1.0 + 1e-6), "{query:?}: {} > {full}", hit.score);
    }
}

#[test]
fn real_long_lists_give_the_best_as_the_whole_index() {
    let Some(scifact) = common::shared_data("scifact") else { return };
    let analyzer = Analyzer::new();
    let json = |line: std::io::Result<String>| -> serde_json::Value {
        serde_json::from_str(&line.unwrap()).unwrap()
    };
    let gz = std::fs::File::open(scifact.join("corpus.jsonl.gz")).unwrap();
    let corpus = std::io::BufReader::new(flate2::read::GzDecoder::new(gz));
    let documents: Vec<Vec<String>> = std::io::BufRead::lines(corpus)
        .map(|line| {
            let value = json(line);
            let (title, text) = (value["title"].as_str(), value["text"].as_str());
            analyzer.terms(&format!("{} {}", title.unwrap(), text.unwrap()))
        })
        .collect();
    let index = Bm25Index::build(documents.iter().map(Vec::as_slice), Bm25Params::default());
    let addresses: Vec<u32> = (0..documents.len() as u32).collect();
    let mut writer = PagedWriter::new();
    let lexicon = Lexicon::write(&mut writer, &index, &addresses, 4 << 10, FIRST_BLOCK).unwrap();
    let file =
        now(PagedFile::open(InMemory(writer.finish(lexicon, VERSION, VERSION).unwrap()), 8 << 20));
    let file: PagedFile<_, Lexicon> = file.unwrap();
    let queries = std::fs::File::open(scifact.join("queries.jsonl")).unwrap();
    let (mut exact, mut cut, mut found) = (0, 0, 0);
    let small = 4 << 10;
    for line in std::io::BufRead::lines(std::io::BufReader::new(queries)).take(100) {
        let query = json(line)["text"].as_str().unwrap().to_owned();
        let terms = analyzer.terms(&query);
        let ranked = now(file.body().search(&file, &terms, 10, BUDGET, |_| true)).unwrap();
        let expected = index.search(&terms, 10, |_| true);
        assert!(ranked.complete && ranked.read <= BUDGET, "{query:?}");
        assert_same_best(&ranked.hits, &expected, &query);
        exact += usize::from(ranked.hits == expected);
        // Within a small budget, a search reads no more than it, and finds most of the best
        // (all of them when its reads settled them; 789 of 1,000 in 93 searches cut short).
        let ranked = now(file.body().search(&file, &terms, 10, small, |_| true)).unwrap();
        cut += usize::from(!assert_within(&ranked, small, &expected, &query));
        found += expected.iter().filter(|e| ranked.hits.iter().any(|h| h.chunk == e.chunk)).count();
    }
    assert!(exact >= 90, "{exact} of 100 ranked and scored as the whole index does");
    assert!(cut >= 50 && found >= 750, "{cut} searches cut short, {found} of 1000 found");
}

#[test]
fn a_directory_that_points_the_lexicon_elsewhere_never_panics() {
    let bundle = common::bundle();
    let (bytes, _) = paged(&bundle, 16 << 10, FIRST_BLOCK);
    let file = open(&bytes);
    let (store, lexicon) = file.body().clone();
    let terms = Analyzer::new().terms("the Norman conquest of England");
    let hostile = [
        Lexicon { dictionary: store.section, ..lexicon.clone() },
        Lexicon { dictionary: 9, ..lexicon.clone() },
        Lexicon { postings: lexicon.dictionary, ..lexicon.clone() },
        Lexicon { routes: vec![String::new(); 3], ..lexicon.clone() },
    ];
    // Another section's slots may even decode: any answer but a panic will do, and an error
    // is one line.
    for lexicon in &hostile {
        if let Err(error) = now(lexicon.search(&file, &terms, 10, BUDGET, |_| true)) {
            assert!(!error.to_string().contains('\n'), "{error}");
        }
    }
    let error = now(hostile[1].search(&file, &terms, 10, BUDGET, |_| true)).unwrap_err();
    assert_eq!(error.to_string(), "malformed bundle payload: the bundle has no section 9");
    let store = ChunkStore { section: lexicon.postings, ..store };
    assert!(now(store.read(&file, &[0])).is_err());
}

/// `bundle`'s chunk store and dense index in a paged file, partitioned as `params` say, in
/// slots of `slot` bytes; and each chunk's address.
fn paged_dense(bundle: &Bundle, params: IvfParams, slot: u32) -> (Vec<u8>, Vec<u32>) {
    let mut writer = PagedWriter::new();
    let (store, addresses) =
        ChunkStore::write(&mut writer, &bundle.documents, &bundle.chunks, 16 << 10).unwrap();
    let dense = bundle.dense.as_ref().unwrap();
    let ivf = Ivf::write(&mut writer, dense, &addresses, slot, params, 7).unwrap();
    (writer.finish((store, ivf), VERSION, VERSION).unwrap(), addresses)
}

/// `hits` of a bundle in memory named by their addresses in a paged file (`addresses`).
fn by_address(addresses: &[u32], hits: Vec<Scored>) -> Vec<Scored> {
    hits.into_iter().map(|s| Scored { chunk: addresses[s.chunk as usize], ..s }).collect()
}

#[test]
fn dense_partitions_score_as_the_whole_index_and_read_what_they_probe() {
    let bundle = embedded_demo();
    let dense = bundle.dense.as_ref().unwrap();
    let embedder = minilm_boxed();
    // Lists of rows: every member scored exactly (coded lists are tested below).
    let params = IvfParams { partition: 8, coded: false, ..IvfParams::default() };
    let (bytes, addresses) = paged_dense(bundle, params, 4 << 10);
    let open = || now(PagedFile::open(InMemory(bytes.clone()), 8 << 20)).unwrap();
    let file: PagedFile<InMemory, (ChunkStore, Ivf)> = open();
    let ivf = &file.body().1;
    assert!(ivf.partitions >= 4, "{} partitions of 64 chunks", ivf.partitions);
    assert_eq!(file.flags() & CODED, 0);
    let at = |hits| by_address(&addresses, hits);
    let (mut found, mut wanted) = (0, 0);
    for query in queries() {
        let vector = embedder.embed_query(query).unwrap();
        let exact = at(dense.search_exact(&vector, 10, |_| true).unwrap());
        // Every partition probed: exact search, the very same scores.
        let all = now(ivf.search(&file, &vector, 10, Some(ivf.partitions), |_| true)).unwrap();
        assert_eq!(all, exact, "{query:?}");
        // Two probed: what is found is scored exactly, and it is most of the best.
        let two = now(ivf.search(&file, &vector, 10, Some(2), |_| true)).unwrap();
        assert_eq!(two.len(), 10);
        for hit in &two {
            let chunk = addresses.iter().position(|&a| a == hit.chunk).unwrap();
            let whole = dense.search_exact(&vector, 64, |c| c as usize == chunk).unwrap();
            assert_eq!(whole[0].score, hit.score, "{query:?}");
        }
        found += two.iter().filter(|hit| exact.contains(hit)).count();
        wanted += exact.len();
    }
    assert!(found * 10 >= wanted * 6, "probing 2 of {} found {found} of {wanted}", ivf.partitions);
    // A cold search reads the centroids and the lists it probes, not the others.
    let query = embedder.embed_query("How do you find the MIME type of a file?").unwrap();
    let cost = |probe| {
        let file: PagedFile<InMemory, (ChunkStore, Ivf)> = open();
        let before = file.io();
        now(file.body().1.search(&file, &query, 10, Some(probe), |_| true)).unwrap();
        file.io().bytes - before.bytes
    };
    let (one, every) = (cost(1), cost(ivf.partitions));
    assert!(one * 2 < every, "probing 1 read {one} bytes, probing all {every}");
    // A filter applies before the cut: when the probed partitions hold too few allowed chunks,
    // more are probed, until every one is.
    let few: Vec<u32> = [3, 30, 60].map(|c| addresses[c]).to_vec();
    let got = now(ivf.search(&file, &query, 10, Some(1), |a| few.contains(&a))).unwrap();
    let expected = at(dense.search_exact(&query, 10, |c| [3, 30, 60].contains(&c)).unwrap());
    assert_eq!(got, expected);
    let odd = now(ivf.search(&file, &query, 5, Some(1), |a| a % 2 == 1)).unwrap();
    assert!(odd.len() == 5 && odd.iter().all(|hit| hit.chunk % 2 == 1), "{odd:?}");
    // A query of another dimension is refused.
    let short = now(ivf.search(&file, &query[..100], 10, None, |_| true)).unwrap_err();
    assert_eq!(
        short.to_string(),
        "invalid query: the query embedding has 100 dimensions, the index 384"
    );
}

#[test]
fn coded_lists_find_the_best_by_estimate_and_score_them_with_their_rows() {
    let bundle = embedded_demo();
    let dense = bundle.dense.as_ref().unwrap();
    let embedder = minilm_boxed();
    let coded = IvfParams { partition: 8, ..IvfParams::default() };
    let (bytes, addresses) = paged_dense(bundle, coded, 4 << 10);
    let (rows, _) = paged_dense(bundle, IvfParams { coded: false, ..coded }, 4 << 10);
    let open = |bytes: &[u8]| -> PagedFile<InMemory, (ChunkStore, Ivf)> {
        now(PagedFile::open(InMemory(bytes.to_vec()), 8 << 20)).unwrap()
    };
    let file = open(&bytes);
    assert_eq!(file.flags(), CODED);
    let ivf = &file.body().1;
    let vectors: Vec<Vec<f32>> =
        queries().map(|query| embedder.embed_query(query).unwrap()).collect();
    // Every partition probed: the best by estimate, each scored exactly with its row, are
    // nearly all the exact best.
    let (mut found, mut wanted) = (0, 0);
    for vector in &vectors {
        let exact = by_address(&addresses, dense.search_exact(vector, 10, |_| true).unwrap());
        let all = now(ivf.search(&file, vector, 10, Some(ivf.partitions), |_| true)).unwrap();
        assert_eq!(all.len(), 10);
        for hit in &all {
            let chunk = addresses.iter().position(|&a| a == hit.chunk).unwrap();
            let whole = dense.search_exact(vector, 1, |c| c as usize == chunk).unwrap();
            assert_eq!(whole[0].score, hit.score);
        }
        found += all.iter().filter(|hit| exact.contains(hit)).count();
        wanted += exact.len();
    }
    assert!(found * 100 >= wanted * 95, "found {found} of the exact {wanted}");
    // A cold search reads a fraction of the lists of rows, then the rows of the candidates it
    // rescores (the MIN_RESCORED best estimates, for 10), each alone.
    let cost = |bytes: &[u8]| {
        let file = open(bytes);
        let ivf = &file.body().1;
        let hits = now(ivf.search(&file, &vectors[0], 10, Some(ivf.partitions), |_| true));
        let io = |name: &str| file.reads().sections.get(name).copied().unwrap_or_default();
        (hits.unwrap(), io("lists"), io("rows"))
    };
    let ((coded, lists, read), (plain, plain_lists, _)) = (cost(&bytes), cost(&rows));
    assert_eq!(coded, plain);
    assert!(lists.bytes * 4 < plain_lists.bytes, "{lists:?} against {plain_lists:?}");
    let rescored = MIN_RESCORED as u64;
    assert_eq!((read.requests, read.bytes), (rescored, rescored * 384), "{read:?}");
    // Rows are read back whole when the index is rebuilt.
    let sorted = |file: &PagedFile<InMemory, (ChunkStore, Ivf)>| {
        let mut vectors = now(file.body().1.vectors(file)).unwrap();
        vectors.sort_by_key(|(address, _)| *address);
        vectors
    };
    let back = sorted(&file);
    assert!(back.len() == addresses.len() && back == sorted(&open(&rows)));
    // A changed byte in each row is refused, naming the row read.
    let sections = file.sections();
    let directory = u64::from_le_bytes(bytes[16..24].try_into().unwrap()) as usize;
    let at = file.section("rows").unwrap() as usize;
    let start =
        HEADER_LEN + directory + sections[..at].iter().map(|s| s.len() as usize).sum::<usize>();
    let per_slot = sections[at].capacity() / 384;
    let mut changed = bytes.clone();
    for slot in 0..sections[at].slots as usize {
        for row in 0..per_slot {
            changed[start + slot * sections[at].slot as usize + row * 384] ^= 1;
        }
    }
    let file = open(&changed);
    let ivf = &file.body().1;
    let error = now(ivf.search(&file, &vectors[0], 10, None, |_| true)).unwrap_err();
    assert!(matches!(error, Error::CorruptedPage(_)), "{error}");
    assert!(error.to_string().contains("of section \"rows\" does not match"), "{error}");
    // So is a file cut short of its rows.
    let file = open(&bytes[..start + 10]);
    let ivf = &file.body().1;
    let error = now(ivf.search(&file, &vectors[0], 10, None, |_| true)).unwrap_err();
    assert!(matches!(error, Error::TruncatedPage(_)), "{error}");
}

#[test]
fn grouped_partitions_read_the_centroids_of_the_groups_nearest_only() {
    let bundle = embedded_demo();
    let dense = bundle.dense.as_ref().unwrap();
    let embedder = minilm_boxed();
    // A partition a chunk, in two levels: 8 groups of about 8, 4 records a 2 KB slot.
    let params = IvfParams { partition: 1, flat_up_to: 1, coded: false, ..IvfParams::default() };
    let (bytes, addresses) = paged_dense(bundle, params, 2 << 10);
    let open = || now(PagedFile::open(InMemory(bytes.clone()), 8 << 20)).unwrap();
    let file: PagedFile<InMemory, (ChunkStore, Ivf)> = open();
    let ivf = &file.body().1;
    let section = |name| file.sections()[file.section(name).unwrap() as usize].clone();
    let centroids = section("centroids");
    let table = u64::from(centroids.slot) * u64::from(centroids.slots);
    assert!(centroids.slots >= 8 && section("centroid groups").slots >= 1, "{centroids:?}");
    let at = |hits| by_address(&addresses, hits);
    for query in queries() {
        let vector = embedder.embed_query(query).unwrap();
        let exact = at(dense.search_exact(&vector, 10, |_| true).unwrap());
        // Every partition probed: every group read, exact search.
        let all = now(ivf.search(&file, &vector, 10, Some(ivf.partitions), |_| true)).unwrap();
        assert_eq!(all, exact, "{query:?}");
        // A cold search probing a few reads part of the centroid table, less as it probes less.
        let cost = |probe| {
            let file: PagedFile<InMemory, (ChunkStore, Ivf)> = open();
            let opened = file.io().bytes;
            let hits = now(file.body().1.search(&file, &vector, 10, Some(probe), |_| true));
            assert_eq!(hits.unwrap().len(), 10);
            file.io().bytes - opened
        };
        let (one, every) = (cost(1), cost(ivf.partitions));
        assert!(one < table && one < every, "probing 1 read {one} bytes, of a table of {table}");
        // A filter still applies before the cut: more groups are read until enough are found.
        let few = [3u32, 30, 60];
        let allowed: Vec<u32> = few.map(|c| addresses[c as usize]).to_vec();
        let got = now(ivf.search(&file, &vector, 10, Some(1), |a| allowed.contains(&a))).unwrap();
        assert_eq!(got, at(dense.search_exact(&vector, 10, |c| few.contains(&c)).unwrap()));
    }
}

/// `bundle`'s chunk store and keyword graph (`index` built from it) in a paged file of 4 KB
/// slots; and each chunk's address.
fn paged_graph(bundle: &Bundle, index: &GraphIndex) -> (Vec<u8>, Vec<u32>) {
    let mut writer = PagedWriter::new();
    let (store, addresses) =
        ChunkStore::write(&mut writer, &bundle.documents, &bundle.chunks, 16 << 10).unwrap();
    let graph = PagedGraph::write(&mut writer, index, &bundle.graph, &addresses, 4 << 10).unwrap();
    (writer.finish((store, graph), VERSION, VERSION).unwrap(), addresses)
}

#[test]
fn the_paged_graph_finds_what_the_graph_in_memory_finds() {
    let bundle = embedded_demo();
    let index = GraphIndex::new(&bundle.graph, &bundle.chunks, bundle.documents.len());
    let (bytes, addresses) = paged_graph(bundle, &index);
    let open = || now(PagedFile::open(InMemory(bytes.clone()), 8 << 20)).unwrap();
    let file: PagedFile<InMemory, (ChunkStore, PagedGraph)> = open();
    let graph = &file.body().1;
    let analyzer = Analyzer::new();
    let at = |chunk: u32| addresses[chunk as usize];
    let hits_at = |hits: Vec<GraphHit>| -> Vec<GraphHit> {
        hits.into_iter().map(|hit| GraphHit { chunk: at(hit.chunk), ..hit }).collect()
    };
    let scored_at = |hits: Vec<Scored>| -> Vec<Scored> {
        hits.into_iter().map(|hit| Scored { chunk: at(hit.chunk), ..hit }).collect()
    };
    let deep = GraphSearch { primary: 20, max_depth: 3, ..GraphSearch::default() };
    let odd = |address: u32| address % 2 == 1;
    let (mut hops, mut bridged) = (0, 0);
    for query in queries() {
        for options in [&GraphSearch::default(), &deep] {
            let expected = index.search(&bundle.graph, query, &analyzer, 10, options, &|_| true);
            let got = now(graph.search(&file, query, &analyzer, 10, options, &|_| true)).unwrap();
            hops += expected.iter().filter(|hit| hit.hops > 0).count();
            assert_eq!(got, hits_at(expected), "{query:?}");
        }
        let only_odd = |chunk: u32| odd(at(chunk));
        let expected = index.search(&bundle.graph, query, &analyzer, 5, &deep, &only_odd);
        let got = now(graph.search(&file, query, &analyzer, 5, &deep, &odd)).unwrap();
        assert_eq!(got, hits_at(expected), "{query:?}, odd addresses");

        let matched = index.matched_keywords(&bundle.graph, query, &analyzer);
        assert_eq!(now(graph.matched_keywords(&file, query, &analyzer)).unwrap(), matched);
        let chosen: Vec<u32> = matched.iter().take(3).map(|m| m.0).chain([u32::MAX]).collect();
        let expected = index.search_keywords(&bundle.graph, &chosen, 10, &deep, &|_| true);
        let got = now(graph.search_keywords(&file, &chosen, 10, &deep, &|_| true)).unwrap();
        assert_eq!(got, hits_at(expected), "{query:?}, keywords {chosen:?}");

        let seeds: Vec<Scored> = bundle.bm25.search(&analyzer.terms(query), 3, |_| true);
        let expected = index.bridge(&bundle.graph, query, &analyzer, &seeds, &|_| true);
        let got = now(graph.bridge(&file, query, &analyzer, &scored_at(seeds), &|_| true));
        bridged += expected.len();
        assert_eq!(got.unwrap(), scored_at(expected), "{query:?}, bridge");
    }
    assert!(hops > 0 && bridged > 0, "{hops} chunks reached by expansion, {bridged} by bridges");

    // A cold search reads what it touches: from one keyword without expansion, its node and
    // its list (which may cross a slot boundary), one round of reads each.
    let keyword = index.matched_keywords(&bundle.graph, "Nikola Tesla", &analyzer)[0].0;
    let cold = open();
    let opened = cold.io();
    let shallow = GraphSearch { max_depth: 0, ..GraphSearch::default() };
    let hits = now(cold.body().1.search_keywords(&cold, &[keyword], 10, &shallow, &|_| true));
    assert!(!hits.unwrap().is_empty());
    let (requests, read) = (cold.io().requests - opened.requests, cold.io().bytes - opened.bytes);
    assert_eq!(requests, 2);
    assert!(read <= 3 * 4096, "{read} bytes");
}

#[test]
fn a_bundle_of_format_4_answers_every_mode_as_the_bundle_in_memory() {
    answers_as_in_memory(&Layout::default(), NAMED);
}

#[test]
fn routes_in_sections_of_their_own_answer_as_routes_in_the_directory() {
    answers_as_in_memory(&Layout { inline_routes: 0, ..Layout::default() }, ROUTED | NAMED);
}

#[test]
fn the_probe_a_search_asks_for_bounds_what_dense_mode_reads() {
    let bundle = embedded_demo();
    let ivf = IvfParams { partition: 8, coded: false, ..IvfParams::default() };
    let layout = Layout { ivf, dense_slot: 4 << 10, ..Layout::default() };
    let bytes = bundle.to_paged_bytes(&layout).unwrap();
    let memory = Searcher::new(bundle.clone()).with_embedder(minilm_boxed()).unwrap();
    let queries = ["How do you find the MIME type of a file?", "Who were the Normans?", "Tesla"];
    let ids = |hits: Vec<Hit>| hits.into_iter().map(|hit| hit.chunk_id).collect::<Vec<_>>();
    // Ten candidates, not a hundred: probing fewer partitions then finds enough.
    let dense = SearchOptions { mode: Mode::Dense, depth: 10, ..SearchOptions::default() };
    // Cold: the hits, and the bytes read for them.
    let search = |query, probe| {
        let lazy = now(LazySearcher::open(InMemory(bytes.clone()), DEFAULT_BUDGET)).unwrap();
        let lazy = lazy.with_embedder(minilm_boxed()).unwrap();
        let before = lazy.io().bytes;
        let options = SearchOptions { probe, ..dense.clone() };
        let hits = now(lazy.search(query, &options)).unwrap();
        (ids(hits), lazy.io().bytes - before)
    };
    let opened = now(LazySearcher::open(InMemory(bytes.clone()), DEFAULT_BUDGET)).unwrap();
    let partitions = opened.bundle().body().dense.as_ref().unwrap().partitions;
    assert!(partitions > 2 * PROBE, "{partitions} partitions");
    // Queries whose default read other than probing PROBE, and less than twice PROBE.
    let (mut other, mut less) = (0, 0);
    for query in queries {
        // Every partition probed: the exact nearest, as in memory.
        let (exact, all) = search(query, Some(partitions));
        assert_eq!(exact, ids(memory.search(query, &dense).unwrap()));
        // By default, the partitions within reach of the query: from a quarter to twice PROBE.
        let (default, probed) = search(query, None);
        let (_, most) = search(query, Some(2 * PROBE));
        let (_, least) = search(query, Some(PROBE / 4));
        assert!(default.len() == 10 && probed < all, "the default read {probed}, all {all}");
        assert!((least..=most).contains(&probed), "the default read {probed}, not {least}..{most}");
        other += usize::from(probed != search(query, Some(PROBE)).1);
        less += usize::from(probed < most);
        let (some, one) = search(query, Some(1));
        assert!(some.len() == 10 && one < least, "probing 1 read {one}, {} {least}", PROBE / 4);
    }
    assert!(other > 0 && less > 0, "the default probes a fixed count: {other}, {less}");
}

#[test]
fn a_hybrid_query_reads_the_steps_of_its_three_retrievers_together() {
    let bytes = embedded_demo().to_paged_bytes(&Layout::default()).unwrap();
    // What a query in `mode` reads, cold.
    let cold = |query, mode| {
        let lazy = now(LazySearcher::open(InMemory(bytes.clone()), DEFAULT_BUDGET)).unwrap();
        let lazy = lazy.with_embedder(minilm_boxed()).unwrap();
        let opened = lazy.io();
        let options = SearchOptions { mode, ..SearchOptions::default() };
        assert!(!now(lazy.search(query, &options)).unwrap().is_empty(), "{query:?}, {mode}");
        lazy.io() - opened
    };
    for query in ["Who gave their name to Normandy?", "How do you find the MIME type of a file?"] {
        let modes = [Mode::Bm25, Mode::Dense, Mode::Graph, Mode::Hybrid];
        let [bm25, dense, graph, hybrid] = modes.map(|mode| cold(query, mode));
        let alone = [bm25, dense, graph].map(|io| io.round_trips);
        // Each alone ends reading its results' chunks, as hybrid does once.
        let one_after_another = alone.iter().sum::<u64>() - 2;
        let longest = alone.iter().copied().max().unwrap();
        eprintln!("{query:?}: {alone:?} alone, hybrid {hybrid:?}");
        assert!(
            hybrid.round_trips < one_after_another && hybrid.round_trips >= longest,
            "{query:?}: {} round trips, {alone:?} alone",
            hybrid.round_trips
        );
    }
}

/// Checks that the demo bundle laid out as `layout` (which sets header flags `flags`) answers
/// every query, mode and filter as in memory.
fn answers_as_in_memory(layout: &Layout, flags: u32) {
    let bundle = embedded_demo();
    let bytes = bundle.to_paged_bytes(layout).unwrap();
    let memory = Searcher::new(bundle.clone()).with_embedder(minilm_boxed()).unwrap();
    let lazy = now(LazySearcher::open(InMemory(bytes), DEFAULT_BUDGET)).unwrap();
    assert_eq!(lazy.io().requests, 1, "the header and directory in one read");
    assert_eq!(lazy.bundle().flags(), flags);
    let routes = lazy.bundle().sections().iter().filter(|s| s.name.ends_with(" routes")).count();
    assert_eq!(routes, if flags & ROUTED != 0 { 4 } else { 0 }, "{:?}", lazy.bundle().sections());
    let lazy = lazy.with_embedder(minilm_boxed()).unwrap();
    assert!(lazy.dense_ready());
    // What a hit shows, and why it was found: chunks are named by address in one and by
    // index in the other.
    let shown = |hit: &Hit| {
        let place = (hit.document.clone(), hit.title.clone(), hit.page, hit.section.clone());
        (hit.rank, hit.score, hit.chunk_id.clone(), place, hit.text.clone(), hit.explain.clone())
    };
    // Hits found, and hits explained with matched terms and with keywords.
    let (mut found, mut matched) = (0, (0, 0));
    for query in queries() {
        for mode in [Mode::Bm25, Mode::Dense, Mode::Graph, Mode::Hybrid] {
            let options = SearchOptions { mode, explain: true, ..SearchOptions::default() };
            let expected = memory.search(query, &options);
            let got = now(lazy.search(query, &options));
            let (Ok(expected), Ok(got)) = (&expected, &got) else {
                assert_eq!(
                    got.map(|_| ()).map_err(|e| e.to_string()),
                    expected.as_ref().map(|_| ()).map_err(|e| e.to_string()),
                    "{query:?}, {mode}"
                );
                continue;
            };
            found += got.len();
            for explain in got.iter().filter_map(|hit| hit.explain.as_ref()) {
                matched.0 += usize::from(!explain.terms.is_empty());
                matched.1 += usize::from(!explain.keywords.is_empty());
            }
            let got: Vec<_> = got.iter().map(shown).collect();
            assert_eq!(got, expected.iter().map(shown).collect::<Vec<_>>(), "{query:?}, {mode}");
        }
    }
    assert!(found > 0 && matched.0 > 0 && matched.1 > 0, "{found} hits, {matched:?} explained");
    // The keyword graph around a query's best chunks (an answer's sources) is drawn alike.
    let mut drawn = 0;
    for query in queries() {
        let options = SearchOptions::default();
        let (Ok(expected), Ok(got)) =
            (memory.search(query, &options), now(lazy.search(query, &options)))
        else {
            continue;
        };
        let ids: Vec<String> = expected.iter().take(3).map(|hit| hit.chunk_id.clone()).collect();
        let addresses: Vec<u32> = got.iter().take(3).map(|hit| hit.chunk).collect();
        assert_eq!(now(lazy.addresses(&ids)).unwrap(), addresses, "{query:?}");
        let expected = memory.graph_view(&ids, 16).unwrap();
        assert_eq!(now(lazy.graph_view(&ids, 16)).unwrap(), expected, "{query:?}");
        drawn += usize::from(expected.edges.len() > 3);
    }
    assert!(drawn > 0, "no view drew more than three edges");
    // A query asked again reads nothing: its pages are in the cache.
    let options = SearchOptions::default();
    now(lazy.search("Who gave their name to Normandy?", &options)).unwrap();
    let io = lazy.io();
    now(lazy.search("Who gave their name to Normandy?", &options)).unwrap();
    assert_eq!(lazy.io(), io);
    // A filter ranks only the chunks it allows, as in memory: by document, by format and
    // page, by heading; one that allows nothing finds nothing.
    let filters = [
        Filter { documents: vec!["normans.md".into()], ..Filter::default() },
        Filter { kinds: vec![load::DocKind::Pdf], pages: Some((2, 4)), ..Filter::default() },
        Filter { section: Some("TESLA".into()), ..Filter::default() },
        Filter { documents: vec!["elsewhere.md".into()], ..Filter::default() },
    ];
    let mut shown_per_filter = Vec::new();
    for filter in filters {
        let mut found = 0;
        for query in ["Who gave their name to Normandy?", "mime type glob", "alternating current"] {
            for mode in [Mode::Bm25, Mode::Dense, Mode::Graph, Mode::Hybrid] {
                let filter = filter.clone();
                let options = SearchOptions { mode, explain: true, filter, ..Default::default() };
                let expected = memory.search(query, &options).unwrap();
                let got = now(lazy.search(query, &options)).unwrap();
                found += got.len();
                let got: Vec<_> = got.iter().map(shown).collect();
                assert_eq!(
                    got,
                    expected.iter().map(shown).collect::<Vec<_>>(),
                    "{query:?}, {mode}"
                );
            }
        }
        shown_per_filter.push(found);
    }
    assert!(shown_per_filter[..3].iter().all(|&n| n > 0), "{shown_per_filter:?}");
    assert_eq!(shown_per_filter[3], 0);
}

#[test]
fn a_build_for_format_4_skips_the_hnsw_graph_and_writes_the_same_file() {
    // The demo's vectors, reused (nothing is embedded again), in an index that gets an HNSW
    // graph from 2 vectors on, unless the build is for format 4.
    let build = |hnsw: bool| {
        let dense = DenseParams { exact_below: 2, ..DenseParams::default() };
        let options =
            BuildOptions { corpus: "demo".into(), created: 1, dense, ..Default::default() };
        let mut builder = BundleBuilder::new(options).unwrap();
        builder.embed_with(minilm_boxed());
        builder.reuse_vectors(embedded_demo()).unwrap();
        if !hnsw {
            builder.without_hnsw();
        }
        add_demo(builder)
    };
    let (full, lean) = (build(true), build(false));
    assert!(full.dense.as_ref().unwrap().has_graph());
    assert!(!lean.dense.as_ref().unwrap().has_graph());
    assert_eq!(lean.manifest, full.manifest);
    let paged = |bundle: &Bundle| bundle.to_paged_bytes(&Layout::default()).unwrap();
    assert!(paged(&lean) == paged(&full), "a build for format 4 wrote another file");
}
