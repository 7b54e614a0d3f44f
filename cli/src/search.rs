//! `edgerag search`: ranked chunks for a query.

use anyhow::{Context, Result};
use edgerag_cli::source::blocking;
use edgerag_core::query::{Corpus, Filter, SearchResults};
use edgerag_core::{DocKind, Hit, Mode};

use crate::flags::model::ModelArgs;
use crate::flags::retrieval::FusionArgs;
use crate::open::{WithIo, open};
use crate::output;

/// Arguments of `edgerag search`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The bundle: a file, or the http(s):// URL of one of format 4 (read by range).
    bundle: String,
    /// The query.
    query: String,
    /// Number of results.
    #[arg(short, default_value_t = 10)]
    k: usize,
    /// Retrieval mode: bm25, dense, graph or hybrid.
    #[arg(long, default_value_t = Mode::default())]
    mode: Mode,
    #[command(flatten)]
    fusion: FusionArgs,
    #[command(flatten)]
    model: ModelArgs,
    /// Only search this document (source path, file name or id; repeatable).
    #[arg(long = "document", value_name = "NAME")]
    documents: Vec<String>,
    /// Only search chunks under a heading containing this text.
    #[arg(long)]
    section: Option<String>,
    /// Only search chunks starting on these pages, e.g. `3-7` or `4` (PDF).
    #[arg(long, value_parser = parse_pages)]
    pages: Option<(u32, u32)>,
    /// Only search documents of this format: text, markdown, html or pdf (repeatable).
    #[arg(long = "kind", value_parser = parse_kind)]
    kinds: Vec<DocKind>,
    /// Show why each result matched (terms, keywords, per-signal scores).
    #[arg(long)]
    explain: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(args: Args) -> Result<()> {
    let mut request = args.fusion.request(args.mode, args.k, args.explain);
    request.filter = Filter {
        documents: args.documents.clone(),
        section: args.section.clone(),
        pages: args.pages,
        kinds: args.kinds.clone(),
    };
    let options = request.options(args.k).context("search")?;
    let opened = open(&args.bundle, &args.model, args.mode, args.json)?;
    let hits = blocking(opened.search(&args.query, &options))
        .with_context(|| format!("search {}", args.bundle))?;
    if args.json {
        let results = SearchResults { query: &args.query, mode: options.mode, results: hits };
        return output::json(&WithIo { output: &results, io: opened.reads() });
    }
    print(&hits)
}

fn print(hits: &[Hit]) -> Result<()> {
    if hits.is_empty() {
        output::line("no results");
    }
    for hit in hits {
        print_hit(hit);
    }
    Ok(())
}

fn print_hit(hit: &Hit) {
    let place = output::place(&hit.title, &hit.section, hit.page);
    output::line(&format!("{:>2}. {:.4}  {place}  [{}]", hit.rank, hit.score, hit.document));
    output::line(&format!("    {}", snippet(&hit.text, 300)));
    if let Some(e) = &hit.explain {
        let signal = |s: Option<edgerag_core::query::Signal>| {
            s.map_or("-".to_owned(), |s| format!("{:.3} (#{})", s.score, s.rank))
        };
        output::line(&format!(
            "    bm25 {}  dense {}  graph {}  bridge {}",
            signal(e.bm25),
            signal(e.dense),
            signal(e.graph),
            signal(e.bridge)
        ));
        if !e.terms.is_empty() {
            let terms: Vec<String> =
                e.terms.iter().map(|t| format!("{} {:.2}", t.term, t.score)).collect();
            output::line(&format!("    terms: {}", terms.join(", ")));
        }
        if !e.keywords.is_empty() {
            let hops = e.graph_hops.map_or(String::new(), |h| format!(" ({h} hops)"));
            output::line(&format!("    keywords: {}{hops}", e.keywords.join(", ")));
        }
    }
}

/// The first `max` characters of `text` on one line, cut at a word boundary.
fn snippet(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max).collect();
    let cut = cut.rsplit_once(' ').map_or(cut.as_str(), |(head, _)| head);
    format!("{cut} …")
}

fn parse_pages(arg: &str) -> Result<(u32, u32), String> {
    let (from, to) = arg.split_once('-').unwrap_or((arg, arg));
    let page = |s: &str| {
        s.trim().parse::<u32>().map_err(|_| format!("{arg:?} is not a page range like 3-7"))
    };
    let (from, to) = (page(from)?, page(to)?);
    if from == 0 || from > to {
        return Err(format!("{arg:?}: pages count from 1 and the range must not be reversed"));
    }
    Ok((from, to))
}

fn parse_kind(arg: &str) -> Result<DocKind, String> {
    DocKind::from_path(&format!("x.{arg}"))
        .or_else(|| if arg.eq_ignore_ascii_case("text") { Some(DocKind::Text) } else { None })
        .ok_or_else(|| format!("unknown kind {arg:?} (text, markdown, html or pdf)"))
}
