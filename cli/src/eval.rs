//! `edgerag eval`: retrieval quality on judged data sets.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use edgerag_core::eval::{self, BeirDoc, BeirQuery};
use edgerag_core::load::from_text;
use edgerag_core::{BundleBuilder, Searcher};

use crate::build::{self, Settings};
use crate::retrieval::RetrievalArgs;
use crate::{files, output};

/// Data-set layouts `edgerag eval` reads.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// A BEIR directory: corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv.
    Beir(BeirArgs),
}

/// Arguments of `edgerag eval beir`.
#[derive(Debug, clap::Args)]
pub(crate) struct BeirArgs {
    /// The BEIR data-set directory.
    dir: PathBuf,
    /// Which judgments to use (qrels/<split>.tsv).
    #[arg(long, default_value = "test")]
    split: String,
    #[command(flatten)]
    retrieval: RetrievalArgs,
    #[command(flatten)]
    settings: Settings,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(command: Command) -> Result<()> {
    match command {
        Command::Beir(args) => beir(args),
    }
}

fn beir(args: BeirArgs) -> Result<()> {
    let corpus_path = first_existing(&args.dir, &["corpus.jsonl", "corpus.jsonl.gz"])?;
    let corpus_text = files::read_text_maybe_gz(&corpus_path)?;
    let corpus: Vec<BeirDoc> = eval::parse_jsonl(&file_name(&corpus_path), &corpus_text)?;
    let queries_path = first_existing(&args.dir, &["queries.jsonl", "queries.jsonl.gz"])?;
    let queries: Vec<BeirQuery> =
        eval::parse_jsonl(&file_name(&queries_path), &files::read_text_maybe_gz(&queries_path)?)?;
    let qrels_path = args.dir.join("qrels").join(format!("{}.tsv", args.split));
    let qrels_text = files::read_text_maybe_gz(&qrels_path)?;
    let qrels = eval::parse_qrels(&format!("qrels/{}.tsv", args.split), &qrels_text)?;

    let name = file_name(&args.dir);
    let mut builder = BundleBuilder::new(args.settings.options(name))?;
    let bar = output::progress(corpus.len() as u64, "chunking", args.json);
    for doc in &corpus {
        // The BEIR protocol indexes title + text; the title is the first paragraph.
        let text = format!("{}\n\n{}", doc.title, doc.text);
        match from_text(&doc.id, &doc.title, &text) {
            Ok(d) => {
                builder.add(d);
            }
            Err(e) => output::warn(Some(&bar), &format!("document {}: {e} (skipped)", doc.id)),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    let searcher = Searcher::new(build::finish(builder, args.json)?);

    let options = args.retrieval.options(10, false);
    let bar = output::progress(queries.len() as u64, "queries", args.json);
    let report = eval::evaluate(&searcher, &queries, &qrels, &options, &mut |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if args.json {
        return output::json(&report);
    }
    output::line(&format!(
        "{} ({} split, {} mode, {} queries): nDCG@10 {:.4}  Recall@100 {:.4}  MRR@10 {:.4}",
        args.dir.display(),
        args.split,
        report.mode,
        report.queries,
        report.ndcg_10,
        report.recall_100,
        report.mrr_10
    ));
    Ok(())
}

fn first_existing(dir: &Path, names: &[&str]) -> Result<PathBuf> {
    if !dir.is_dir() {
        bail!("{}: not a directory", dir.display());
    }
    names
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
        .with_context(|| format!("{}: none of {} found", dir.display(), names.join(", ")))
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
