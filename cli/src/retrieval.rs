//! Retrieval flags shared by `search` and `eval`.

use edgerag_core::index::fusion::Fusion;
use edgerag_core::{Mode, SearchOptions};

/// How results are retrieved and fused.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RetrievalArgs {
    /// Retrieval mode: bm25, graph or hybrid.
    #[arg(long, default_value_t = Mode::default())]
    pub(crate) mode: Mode,
    /// Fusion in hybrid mode: rrf (reciprocal rank fusion, k = 60) or convex (normalised scores).
    #[arg(long, default_value = "convex", value_parser = ["rrf", "convex"])]
    fusion: String,
    /// Weight of the graph signal in hybrid mode (BM25 weighs 1).
    #[arg(long, default_value_t = SearchOptions::default().graph_weight)]
    graph_weight: f32,
}

impl RetrievalArgs {
    /// Search options for `k` results.
    pub(crate) fn options(&self, k: usize, explain: bool) -> SearchOptions {
        let fusion = if self.fusion == "rrf" { Fusion::Rrf { k: 60.0 } } else { Fusion::Convex };
        SearchOptions {
            k,
            mode: self.mode,
            fusion,
            graph_weight: self.graph_weight,
            explain,
            ..SearchOptions::default()
        }
    }
}
