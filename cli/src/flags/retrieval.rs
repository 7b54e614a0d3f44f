//! Retrieval flags shared by `search`, `ask` and `eval`.

use anyhow::{Context, Result, bail};
use edgerag_core::index::fusion::Fusion;
use edgerag_core::request::SearchRequest;
use edgerag_core::{Mode, SearchOptions};

/// How hybrid mode fuses its signals.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct FusionArgs {
    /// Fusion in hybrid mode: convex (normalised scores) or rrf (reciprocal rank fusion, k = 60).
    #[arg(long, default_value = "convex", value_parser = parse_fusion)]
    fusion: Fusion,
    /// Weight of the graph signal in hybrid mode (BM25 weighs 1).
    #[arg(long, default_value_t = SearchOptions::default().graph_weight)]
    graph_weight: f32,
    /// Weight of the dense signal in hybrid mode (BM25 weighs 1).
    #[arg(long, default_value_t = SearchOptions::default().dense_weight)]
    dense_weight: f32,
    /// Weight of multi-hop expansion in hybrid mode (chunks sharing an entity with the best
    /// results; the first fusion weighs 1); 0 turns it off.
    #[arg(long, default_value_t = SearchOptions::default().bridge_weight)]
    bridge_weight: f32,
    /// Best results that multi-hop expansion starts from.
    #[arg(long, default_value_t = SearchOptions::default().graph.bridge_seeds)]
    bridge_seeds: usize,
    /// Dense partitions probed in a bundle read by range (format 4; default: those near the
    /// query, 4 to 32): more find more of the exact nearest, for more bytes a query.
    #[arg(long, value_name = "PARTITIONS")]
    probe: Option<u32>,
    /// Bytes of postings BM25 may read in a bundle read by range (format 4; default 262144):
    /// more find BM25's exact best more often in a large corpus, for more bytes a query.
    #[arg(long, value_name = "BYTES")]
    bm25_budget: Option<u64>,
}

fn parse_fusion(name: &str) -> Result<Fusion, String> {
    name.parse().map_err(|e: edgerag_core::Error| e.to_string())
}

impl FusionArgs {
    /// The search request for `mode` and `k` results.
    pub(crate) fn request(&self, mode: Mode, k: usize, explain: bool) -> SearchRequest {
        SearchRequest {
            k: Some(k),
            mode: Some(mode),
            explain,
            dense_weight: Some(self.dense_weight),
            graph_weight: Some(self.graph_weight),
            bridge_weight: Some(self.bridge_weight),
            bridge_seeds: Some(self.bridge_seeds),
            fusion: Some(self.fusion),
            probe: self.probe,
            bm25_budget: self.bm25_budget,
            ..SearchRequest::default()
        }
    }

    /// The search options for `mode` and `k` results, checked as every host's are.
    pub(crate) fn options(&self, mode: Mode, k: usize, explain: bool) -> Result<SearchOptions> {
        self.request(mode, k, explain).options(k).context("search options")
    }
}

/// Every retrieval mode, in the order reports list them.
pub(crate) const ALL_MODES: [Mode; 4] = [Mode::Bm25, Mode::Dense, Mode::Graph, Mode::Hybrid];

/// Parses an evaluation `--mode`: one mode, or `all`.
pub(crate) fn parse_modes(arg: &str) -> Result<Vec<Mode>> {
    if arg.eq_ignore_ascii_case("all") {
        return Ok(ALL_MODES.to_vec());
    }
    match arg.parse() {
        Ok(mode) => Ok(vec![mode]),
        Err(_) => bail!("unknown mode {arg:?} (bm25, dense, graph, hybrid or all)"),
    }
}
