//! `edgerag inspect`: a bundle's manifest and statistics.

use std::path::PathBuf;

use anyhow::Result;
use edgerag_core::bundle::Inspection;
use serde::Serialize;

use crate::{files, output};

/// Arguments of `edgerag inspect`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The bundle file.
    bundle: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Report<'a> {
    bundle: String,
    bytes: u64,
    #[serde(flatten)]
    inspection: Inspection<'a>,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let searcher = files::open_bundle(&args.bundle)?;
    let report = Report {
        bundle: args.bundle.display().to_string(),
        bytes: std::fs::metadata(&args.bundle)?.len(),
        inspection: searcher.bundle().inspect(),
    };
    if args.json {
        return output::json(&report);
    }
    let m = report.inspection.manifest;
    let c = m.counts;
    let p = &m.params;
    let s = report.inspection.part_bytes;
    output::line(&format!("bundle      {} ({} bytes)", report.bundle, report.bytes));
    output::line(&format!("corpus      {}", m.corpus));
    output::line(&format!("format      v{} (edgerag {})", m.format_version, m.edgerag_version));
    output::line(&format!("created     {} (unix seconds)", m.created));
    let model = m.embedding.as_ref().map_or("none".to_owned(), |e| {
        format!(
            "{} ({}-d, {:?} pooling, max {} tokens)",
            e.model, e.dimension, e.pooling, e.max_tokens
        )
    });
    output::line(&format!("embeddings  {model}"));
    output::line(&format!(
        "contents    {} documents, {} chunks ({} duplicates removed), {} keywords, {} edges, {} terms",
        c.documents, c.chunks, c.duplicates_removed, c.keywords, c.edges, c.terms
    ));
    output::line(&format!(
        "chunking    target {} / max {} / min {} {:?}, overlap {}",
        p.chunk.target, p.chunk.max, p.chunk.min, p.size_unit, p.chunk.overlap
    ));
    output::line(&format!(
        "keywords    max_df {}, {} per chunk; bm25 k1 {} b {}",
        p.keywords.max_df, p.keywords.max_per_chunk, p.bm25.k1, p.bm25.b
    ));
    let semantic = p.graph.semantic_threshold.map_or_else(
        || "off".to_owned(),
        |t| format!("cosine >= {t} over {} keywords", p.graph.semantic_keywords),
    );
    output::line(&format!(
        "similar_to  lexical >= {}, semantic {semantic}, at most {} per keyword",
        p.graph.similar_threshold, p.graph.max_similar
    ));
    output::line(&format!(
        "dense       {} vectors, {:?}, ef_construction {}, ef_search {}, exact below {}",
        c.vectors,
        p.dense.quantization,
        p.dense.ef_construction,
        p.dense.ef_search,
        p.dense.exact_below
    ));
    output::line(&format!(
        "bytes       chunks {}, graph {}, bm25 {}, dense {}, documents {}, manifest {}",
        s.chunks, s.graph, s.bm25, s.dense, s.documents, s.manifest
    ));
    for d in &report.inspection.documents {
        let pages = if d.pages > 0 { format!(", {} pages", d.pages) } else { String::new() };
        output::line(&format!(
            "  {:<40} {:?}, {} chunks{pages}  {}",
            d.source, d.kind, d.chunks, d.title
        ));
    }
    Ok(())
}
