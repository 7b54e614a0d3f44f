//! BM25 on SciFact against the BM25 a user would pick instead: the Python package bm25s and
//! tantivy (`bench/bm25_peers.py`). Every system ranks the same documents for the same 809
//! judged queries; the rankings come back here and are scored by the same nDCG@10 and
//! Recall@100 code. The peers run twice: with their own tokeniser, and on edgerag's analyzer
//! terms, so that scoring is compared apart from tokenisation.

use std::collections::HashMap;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use edgerag_cli::beir::{BeirData, load_bundle, read_beir};
use edgerag_cli::{files, indexing, output};
use edgerag_core::eval::beir::{self, BeirQuery, EVAL_DEPTH};
use edgerag_core::eval::{Judgments, ndcg_at, recall_at};
use edgerag_core::index::bm25::{Bm25Index, Bm25Params};
use edgerag_core::load::from_text;
use edgerag_core::text::Analyzer;
use edgerag_core::{BuildOptions, BundleBuilder, Mode, SearchOptions, Searcher};
use serde::{Deserialize, Serialize};

use crate::{Peers, ready, script};

/// SciFact loaded, and built into a bundle the way `edgerag build` would (without vectors).
pub(super) struct SciFact {
    /// `title + " " + text` per document, with its id.
    documents: Vec<(String, String)>,
    /// The judged queries.
    queries: Vec<BeirQuery>,
    qrels: HashMap<String, Judgments>,
    pub(super) searcher: Searcher,
    /// Encoded size of the bundle.
    pub(super) bundle_bytes: usize,
}

impl SciFact {
    /// Reads SciFact from `dir` (BEIR layout, train split) and its bundle: `saved`, else one
    /// built without vectors.
    pub(super) fn load(dir: &Path, saved: Option<&Path>, quiet: bool) -> Result<Self> {
        let BeirData { corpus, queries, qrels } = read_beir(dir, "train")?;
        let queries: Vec<BeirQuery> =
            queries.into_iter().filter(|q| qrels.contains_key(&q.id)).collect();
        if corpus.is_empty() || queries.is_empty() {
            bail!("{}: no documents or no judged queries", dir.display());
        }
        let records = || corpus.iter().map(|d| (d.id.clone(), d.title.as_str(), d.text.as_str()));
        let (bundle, bundle_bytes) = match saved {
            Some(path) => (load_bundle(path, records())?, files::size(path)?),
            None => {
                let options =
                    BuildOptions { corpus: "scifact".to_owned(), ..BuildOptions::default() };
                let mut builder = BundleBuilder::new(options)?;
                for (id, title, text) in records() {
                    let text = format!("{title}\n\n{text}");
                    builder.add(from_text(&id, title, &text).with_context(|| id.clone())?);
                }
                let bundle = indexing::finish(builder, quiet)?;
                let bytes = bundle.to_bytes()?.len();
                (bundle, bytes)
            }
        };
        let documents =
            corpus.into_iter().map(|d| (d.id, format!("{} {}", d.title, d.text))).collect();
        Ok(Self { documents, queries, qrels, searcher: Searcher::new(bundle), bundle_bytes })
    }

    /// The judged queries' texts.
    pub(super) fn query_texts(&self) -> impl Iterator<Item = &str> {
        self.queries.iter().map(|q| q.text.as_str())
    }

    /// Bytes of the documents' text (`title + " " + text`).
    pub(super) fn text_bytes(&self) -> usize {
        self.documents.iter().map(|(_, text)| text.len()).sum()
    }
}

/// Every BM25 system's quality and speed on SciFact.
#[derive(Debug, Serialize)]
pub(super) struct RetrievalReport {
    pub(super) documents: usize,
    pub(super) queries: usize,
    pub(super) runs: Vec<Bm25Run>,
    /// Runs not made, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) skipped: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) python: Option<String>,
}

/// One system's run.
#[derive(Debug, Serialize)]
pub(super) struct Bm25Run {
    pub(super) system: String,
    pub(super) version: String,
    /// What is indexed: chunks (a document scores by its best chunk) or whole documents.
    pub(super) unit: &'static str,
    pub(super) tokenisation: String,
    pub(super) k1: f64,
    pub(super) b: f64,
    /// Indexing time, when measured apart from anything else.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) index_seconds: Option<f64>,
    /// One query at a time, single-threaded, query analysis included.
    pub(super) queries_per_second: f64,
    /// All queries in one call (bm25s' own API), single-threaded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) queries_per_second_batched: Option<f64>,
    pub(super) ndcg_at_10: f64,
    pub(super) recall_at_100: f64,
}

/// What `bench/bm25_peers.py` reads.
#[derive(Serialize)]
struct PeerInput<'a> {
    docs: Vec<Text<'a>>,
    queries: Vec<Text<'a>>,
    k: usize,
    k1: f32,
    b: f32,
}

#[derive(Serialize)]
struct Text<'a> {
    id: &'a str,
    text: &'a str,
    terms: Vec<String>,
}

/// What it prints.
#[derive(Deserialize)]
struct PeerOutput {
    python: String,
    runs: Vec<PeerRun>,
}

#[derive(Deserialize)]
struct PeerRun {
    system: String,
    version: String,
    tokenisation: String,
    k1: f64,
    b: f64,
    index_seconds: f64,
    queries_per_second: f64,
    #[serde(default)]
    queries_per_second_batched: Option<f64>,
    rankings: HashMap<String, Vec<String>>,
}

const EDGERAG_TERMS: &str = "edgerag's analyzer: Unicode words, lower-cased, English stop words dropped, Snowball English stemmer";

/// Runs edgerag's BM25 (the bundle as built, and the bare index over whole documents) and,
/// with `peers`, bm25s and tantivy.
pub(super) fn measure(
    scifact: &SciFact,
    peers: Option<&Peers>,
    quiet: bool,
) -> Result<RetrievalReport> {
    let params = Bm25Params::default();
    let mut runs = vec![bundle_run(scifact, quiet)?];
    let analyzer = Analyzer::new();
    let start = Instant::now();
    let doc_terms: Vec<Vec<String>> =
        scifact.documents.iter().map(|(_, text)| analyzer.terms(text)).collect();
    let index = Bm25Index::build(doc_terms.iter().map(Vec::as_slice), params);
    let index_seconds = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let rankings: Vec<Vec<&str>> = scifact
        .queries
        .iter()
        .map(|q| {
            let hits = index.search(&analyzer.terms(&q.text), EVAL_DEPTH, |_| true);
            hits.iter().map(|h| scifact.documents[h.chunk as usize].0.as_str()).collect()
        })
        .collect();
    let seconds = start.elapsed().as_secs_f64();
    let (ndcg_at_10, recall_at_100) = score(scifact, &rankings);
    runs.push(Bm25Run {
        system: "edgerag Bm25Index".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        unit: "documents",
        tokenisation: EDGERAG_TERMS.to_owned(),
        k1: f64::from(params.k1),
        b: f64::from(params.b),
        index_seconds: Some(index_seconds),
        queries_per_second: scifact.queries.len() as f64 / seconds.max(f64::EPSILON),
        queries_per_second_batched: None,
        ndcg_at_10,
        recall_at_100,
    });
    let (skipped, python) = match peers {
        None => (Some("bm25s, tantivy: pass --peers".to_owned()), None),
        Some(peers) => {
            let bar = output::progress(1, "bm25s and tantivy", quiet);
            let output = run_peers(scifact, peers, params, &doc_terms, &analyzer)?;
            bar.finish_and_clear();
            for run in output.runs {
                let rankings: Vec<Vec<&str>> = scifact
                    .queries
                    .iter()
                    .map(|q| {
                        let ranked = run.rankings.get(&q.id).map_or(&[][..], Vec::as_slice);
                        ranked.iter().map(String::as_str).collect()
                    })
                    .collect();
                let (ndcg_at_10, recall_at_100) = score(scifact, &rankings);
                runs.push(Bm25Run {
                    system: run.system,
                    version: run.version,
                    unit: "documents",
                    tokenisation: run.tokenisation,
                    k1: run.k1,
                    b: run.b,
                    index_seconds: Some(run.index_seconds),
                    queries_per_second: run.queries_per_second,
                    queries_per_second_batched: run.queries_per_second_batched,
                    ndcg_at_10,
                    recall_at_100,
                });
            }
            (None, Some(output.python))
        }
    };
    Ok(RetrievalReport {
        documents: scifact.documents.len(),
        queries: scifact.queries.len(),
        runs,
        skipped,
        python,
    })
}

/// edgerag as users run it: the bundle's BM25 over chunks, a document scored by its best chunk.
fn bundle_run(scifact: &SciFact, quiet: bool) -> Result<Bm25Run> {
    let options = SearchOptions { mode: Mode::Bm25, k: 10, ..SearchOptions::default() };
    let bar = output::progress(scifact.queries.len() as u64, "edgerag bm25", quiet);
    let start = Instant::now();
    let (queries, qrels) = (&scifact.queries, &scifact.qrels);
    let report =
        ready(beir::evaluate(&scifact.searcher, queries, qrels, &options, &mut |done, _| {
            bar.set_position(done as u64);
        }))?;
    let seconds = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let params = scifact.searcher.bundle().bm25.params();
    Ok(Bm25Run {
        system: "edgerag bundle".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        unit: "chunks",
        tokenisation: EDGERAG_TERMS.to_owned(),
        k1: f64::from(params.k1),
        b: f64::from(params.b),
        index_seconds: None,
        queries_per_second: scifact.queries.len() as f64 / seconds.max(f64::EPSILON),
        queries_per_second_batched: None,
        ndcg_at_10: report.ndcg_10,
        recall_at_100: report.recall_100,
    })
}

/// Runs `bench/bm25_peers.py` on the documents, the queries and edgerag's terms for both.
fn run_peers(
    scifact: &SciFact,
    peers: &Peers,
    params: Bm25Params,
    doc_terms: &[Vec<String>],
    analyzer: &Analyzer,
) -> Result<PeerOutput> {
    let docs = scifact
        .documents
        .iter()
        .zip(doc_terms)
        .map(|((id, text), terms)| Text { id, text, terms: terms.clone() })
        .collect();
    let queries = scifact
        .queries
        .iter()
        .map(|q| Text { id: &q.id, text: &q.text, terms: analyzer.terms(&q.text) })
        .collect();
    let input = PeerInput { docs, queries, k: EVAL_DEPTH, k1: params.k1, b: params.b };
    script::run_peer(peers, "bm25_peers.py", &input, "bm25s and tantivy")
}

/// Mean nDCG@10 and Recall@100 of `rankings` (one per judged query, in order).
fn score(scifact: &SciFact, rankings: &[Vec<&str>]) -> (f64, f64) {
    let (mut ndcg, mut recall) = (0.0, 0.0);
    for (query, ranked) in scifact.queries.iter().zip(rankings) {
        if let Some(judged) = scifact.qrels.get(&query.id) {
            ndcg += ndcg_at(ranked, judged, 10);
            recall += recall_at(ranked, judged, 100);
        }
    }
    let n = scifact.queries.len().max(1) as f64;
    (ndcg / n, recall / n)
}

/// The section of the Markdown report.
pub(super) fn markdown(r: &RetrievalReport) -> String {
    use crate::format::{ratio, table};
    let ours = r
        .runs
        .iter()
        .find(|run| run.system == "edgerag Bm25Index")
        .map_or(0.0, |run| run.queries_per_second);
    let rows: Vec<Vec<String>> = r
        .runs
        .iter()
        .map(|run| {
            vec![
                format!("{} {}", run.system, run.version),
                run.unit.to_owned(),
                run.tokenisation.clone(),
                format!("{} / {}", round2(run.k1), round2(run.b)),
                format!("{:.4}", run.ndcg_at_10),
                format!("{:.4}", run.recall_at_100),
                format!("{:.0}", run.queries_per_second),
                run.queries_per_second_batched.map_or("–".to_owned(), |q| format!("{q:.0}")),
                run.index_seconds.map_or("–".to_owned(), |s| format!("{s:.2} s")),
                ratio(ours, run.queries_per_second),
            ]
        })
        .collect();
    let mut out = format!(
        "## BM25 on SciFact\n\n{} documents (title + text), the {} judged training queries, top 100 \
         per query; every ranking is scored by the same nDCG@10 and Recall@100 code. Queries run \
         one at a time on one thread, analysing the query included. The edgerag bundle indexes \
         chunks and scores a document by its best chunk (as `edgerag eval beir` does); every other row indexes whole documents. Rows on \"edgerag's \
         analyzer\" score the same terms, so they differ only in scoring; tantivy's k1 and b are \
         fixed.\n\n",
        r.documents, r.queries
    );
    out.push_str(&table(
        &[
            "system",
            "indexes",
            "tokenisation",
            "k1 / b",
            "nDCG@10",
            "Recall@100",
            "queries/s",
            "queries/s, batched",
            "index",
            "edgerag Bm25Index ÷ it (queries/s)",
        ],
        &rows,
    ));
    if let Some(why) = &r.skipped {
        out.push_str(&format!("\nNot measured: {why}.\n"));
    }
    out
}

/// `x` to two decimals (parameters stored as f32 print as 0.8999999761581421 otherwise).
fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}
