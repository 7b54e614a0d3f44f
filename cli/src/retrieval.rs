//! Retrieval flags shared by `search` and `eval`.

use anyhow::{Result, bail};
use edgerag_core::graph::GraphSearch;
use edgerag_core::index::fusion::Fusion;
use edgerag_core::{Mode, SearchOptions};

/// How hybrid mode fuses its signals.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct FusionArgs {
    /// Fusion in hybrid mode: convex (normalised scores) or rrf (reciprocal rank fusion, k = 60).
    #[arg(long, default_value = "convex", value_parser = ["rrf", "convex"])]
    fusion: String,
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
}

impl FusionArgs {
    /// Search options for `mode` and `k` results.
    pub(crate) fn options(&self, mode: Mode, k: usize, explain: bool) -> SearchOptions {
        let fusion = if self.fusion == "rrf" { Fusion::Rrf { k: 60.0 } } else { Fusion::Convex };
        let defaults = SearchOptions::default();
        SearchOptions {
            k,
            mode,
            fusion,
            graph_weight: self.graph_weight,
            dense_weight: self.dense_weight,
            bridge_weight: self.bridge_weight,
            graph: GraphSearch { bridge_seeds: self.bridge_seeds, ..defaults.graph.clone() },
            explain,
            ..defaults
        }
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
