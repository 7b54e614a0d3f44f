//! `edgerag inspect`: a bundle's manifest and statistics.

use std::path::PathBuf;

use anyhow::{Context, Result};
use edgerag_cli::source::{BundleSource, blocking};
use edgerag_core::bundle::lazy::{self, PagedInspection, SectionSummary};
use edgerag_core::bundle::{DocumentSummary, Inspection, Manifest};
use edgerag_core::query::LazySearcher;
use serde::Serialize;

use crate::open::{self, Opened};
use crate::output;

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

/// What inspecting a bundle of format 4 shows: its manifest, sections and documents, read by
/// range.
#[derive(Debug, Serialize)]
struct PagedReport<'a> {
    bundle: String,
    bytes: u64,
    /// Bytes read to open it (the header and directory).
    open_bytes: u64,
    #[serde(flatten)]
    inspection: PagedInspection<'a>,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let bytes = std::fs::metadata(&args.bundle)
        .with_context(|| format!("reading {}", args.bundle.display()))?
        .len();
    let bundle = args.bundle.display().to_string();
    // A bundle of format 4 is inspected from its directory, without reading the rest; only an
    // older format is read whole.
    let searcher = match open::open_any(&bundle)? {
        Opened::ByRange(paged) => return inspect_paged(&paged, bundle, bytes, args.json),
        Opened::Whole(searcher) => searcher,
    };
    let report = Report { bundle, bytes, inspection: searcher.bundle().inspect() };
    if args.json {
        return output::json(&report);
    }
    output::line(&format!("bundle      {} ({} bytes)", report.bundle, report.bytes));
    print_manifest(report.inspection.manifest);
    let s = report.inspection.part_bytes;
    output::line(&format!(
        "bytes       chunks {}, graph {}, bm25 {}, dense {}, documents {}, manifest {}",
        s.chunks, s.graph, s.bm25, s.dense, s.documents, s.manifest
    ));
    print_documents(&report.inspection.documents);
    Ok(())
}

/// Prints the documents for people, a line each.
fn print_documents(documents: &[DocumentSummary]) {
    for d in documents {
        let pages = if d.pages > 0 { format!(", {} pages", d.pages) } else { String::new() };
        output::line(&format!(
            "  {:<40} {:?}, {} chunks{pages}  {}",
            d.source, d.kind, d.chunks, d.title
        ));
    }
}

/// Inspects the bundle of format 4 at `bundle`, reading its directory and document table.
fn inspect_paged(
    searcher: &LazySearcher<BundleSource>,
    bundle: String,
    bytes: u64,
    json: bool,
) -> Result<()> {
    let open_bytes = searcher.io().bytes;
    let inspection = blocking(lazy::inspect(searcher.bundle())).context(bundle.clone())?;
    let report = PagedReport { open_bytes, inspection, bundle, bytes };
    if json {
        return output::json(&report);
    }
    output::line(&format!(
        "bundle      {} ({} bytes; opening it reads {})",
        report.bundle, report.bytes, report.open_bytes
    ));
    print_manifest(report.inspection.manifest);
    print_sections(&report.inspection.sections);
    print_documents(report.inspection.documents.as_deref().unwrap_or_default());
    Ok(())
}

/// Prints the sections of a bundle of format 4 for people, a line each.
pub(crate) fn print_sections(sections: &[SectionSummary<'_>]) {
    for section in sections {
        output::line(&format!(
            "  {:<12} {:>8} slots of {:>6} bytes",
            section.name, section.slots, section.slot
        ));
    }
}

/// Prints the manifest for people.
fn print_manifest(m: &Manifest) {
    let c = m.counts;
    let p = &m.params;
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
}
