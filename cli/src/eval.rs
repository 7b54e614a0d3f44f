//! `edgerag eval`: retrieval quality on judged data sets.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use edgerag_core::eval::beir::{self, BeirDoc, BeirQuery};
use edgerag_core::eval::multihop;
use edgerag_core::load::from_text;
use edgerag_core::{Bundle, Mode, Searcher};
use serde::Serialize;

use crate::build::{self, Settings};
use crate::retrieval::{FusionArgs, parse_modes};
use crate::{files, output};

/// Data-set layouts `edgerag eval` reads.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// A BEIR directory: corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv.
    Beir(BeirArgs),
    /// Multi-hop QA in HippoRAG's MuSiQue layout: <name>_corpus.json and <name>.json.
    Multihop(MultihopArgs),
}

/// Options every evaluation takes.
#[derive(Debug, clap::Args)]
pub(crate) struct Common {
    /// Retrieval mode: bm25, dense, graph, hybrid, or all (one row per mode).
    #[arg(long, default_value = "all")]
    mode: String,
    #[command(flatten)]
    fusion: FusionArgs,
    #[command(flatten)]
    settings: Settings,
    /// Evaluate this bundle of the data set (written by --save-bundle) instead of building one
    /// (--vectors then re-stores its vectors: an f32 bundle evaluates as int8 too).
    #[arg(long, value_name = "FILE")]
    bundle: Option<PathBuf>,
    /// Also write the bundle built from the data set to FILE, to evaluate it again quickly.
    #[arg(long, value_name = "FILE", conflicts_with = "bundle")]
    save_bundle: Option<PathBuf>,
    /// Print JSON instead of text (an object for one mode, an array for all).
    #[arg(long)]
    json: bool,
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
    common: Common,
}

/// Arguments of `edgerag eval multihop`.
#[derive(Debug, clap::Args)]
pub(crate) struct MultihopArgs {
    /// The directory holding <name>_corpus.json and <name>.json (e.g. musique_train).
    dir: PathBuf,
    #[command(flatten)]
    common: Common,
}

pub(crate) fn run(command: Command) -> Result<()> {
    match command {
        Command::Beir(args) => beir(args),
        Command::Multihop(args) => multihop(args),
    }
}

fn beir(args: BeirArgs) -> Result<()> {
    let modes = parse_modes(&args.common.mode)?;
    let corpus_path = first_existing(&args.dir, &["corpus.jsonl", "corpus.jsonl.gz"])?;
    let corpus: Vec<BeirDoc> =
        beir::parse_jsonl(&file_name(&corpus_path), &files::read_text_maybe_gz(&corpus_path)?)?;
    let queries_path = first_existing(&args.dir, &["queries.jsonl", "queries.jsonl.gz"])?;
    let queries: Vec<BeirQuery> =
        beir::parse_jsonl(&file_name(&queries_path), &files::read_text_maybe_gz(&queries_path)?)?;
    let qrels_path = args.dir.join("qrels").join(format!("{}.tsv", args.split));
    let qrels_text = files::read_text_maybe_gz(&qrels_path)?;
    let qrels = beir::parse_qrels(&format!("qrels/{}.tsv", args.split), &qrels_text)?;

    // The BEIR protocol indexes title + text; the title is the first paragraph.
    let documents = corpus.iter().map(|d| (d.id.clone(), d.title.as_str(), d.text.as_str()));
    let searcher = index(&args.dir, documents, corpus.len(), &args.common)?;
    let mut reports = Vec::new();
    for mode in available(modes, &searcher)? {
        let options = args.common.fusion.options(mode, 10, false);
        let bar = output::progress(queries.len() as u64, mode.as_str(), args.common.json);
        let report = beir::evaluate(&searcher, &queries, &qrels, &options, &mut |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?;
        bar.finish_and_clear();
        reports.push(report);
    }
    let title = format!("{} ({} split)", args.dir.display(), args.split);
    print(
        &title,
        &reports,
        args.common.json,
        |r| (r.mode, r.queries, format!("{:.4}  {:.4}  {:.4}", r.ndcg_10, r.recall_100, r.mrr_10)),
        "nDCG@10 Recall@100 MRR@10",
    )
}

fn multihop(args: MultihopArgs) -> Result<()> {
    let modes = parse_modes(&args.common.mode)?;
    let (corpus_path, questions_path) = multihop_files(&args.dir)?;
    let corpus_text = files::read_text_maybe_gz(&corpus_path)?;
    let questions_text = files::read_text_maybe_gz(&questions_path)?;
    let (passages, questions) = multihop::parse(&corpus_text, &questions_text)
        .with_context(|| format!("{}", args.dir.display()))?;
    let documents = passages
        .iter()
        .enumerate()
        .map(|(i, p)| (i.to_string(), p.title.as_str(), p.text.as_str()));
    let searcher = index(&args.dir, documents, passages.len(), &args.common)?;
    let mut reports = Vec::new();
    for mode in available(modes, &searcher)? {
        let options = args.common.fusion.options(mode, 5, false);
        let bar = output::progress(questions.len() as u64, mode.as_str(), args.common.json);
        let report = multihop::evaluate(&searcher, &questions, &options, &mut |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?;
        bar.finish_and_clear();
        reports.push(report);
    }
    print(
        &args.dir.display().to_string(),
        &reports,
        args.common.json,
        |r| {
            (
                r.mode,
                r.questions,
                format!("{:.4}    {:.4}    {:.4}", r.recall_2, r.recall_5, r.all_5),
            )
        },
        "Recall@2 Recall@5 all@5",
    )
}

/// The modes the searcher can run: dense only with vectors (it is left out of `all` without).
fn available(modes: Vec<Mode>, searcher: &Searcher) -> Result<Vec<Mode>> {
    if modes == [Mode::Dense] && !searcher.dense_ready() {
        bail!("dense mode needs embeddings: drop --no-embed");
    }
    Ok(modes.into_iter().filter(|&m| m != Mode::Dense || searcher.dense_ready()).collect())
}

/// A searcher over the `(source, title, text)` records: the bundle given with `--bundle`
/// (checked to hold only these sources), else one built in memory (and saved if asked).
fn index<'a>(
    dir: &Path,
    documents: impl Iterator<Item = (String, &'a str, &'a str)>,
    count: usize,
    common: &Common,
) -> Result<Searcher> {
    let bundle = match &common.bundle {
        Some(path) => {
            let mut bundle = load_bundle(path, documents)?;
            if let Some(dense) = &mut bundle.dense {
                dense.requantize(common.settings.quantization());
            }
            bundle
        }
        None => build_bundle(dir, documents, count, common)?,
    };
    if let Some(path) = &common.save_bundle {
        files::write_atomic(path, &bundle.to_bytes()?)?;
    }
    let searcher = Searcher::new(bundle);
    match &searcher.bundle().manifest.embedding {
        Some(spec) => {
            let embedder = common.settings.model().load_for(spec, common.json)?;
            Ok(searcher.with_embedder(Box::new(embedder))?)
        }
        None => Ok(searcher),
    }
}

/// Reads a bundle saved by `--save-bundle` and checks that its documents are the records'.
fn load_bundle<'a>(
    path: &Path,
    documents: impl Iterator<Item = (String, &'a str, &'a str)>,
) -> Result<Bundle> {
    let bundle =
        Bundle::from_bytes(&files::read(path)?).with_context(|| format!("{}", path.display()))?;
    let sources: HashSet<String> = documents.map(|(source, _, _)| source).collect();
    if let Some(stranger) = bundle.documents.iter().find(|d| !sources.contains(&d.source)) {
        bail!(
            "{}: not a bundle of this data set (it holds document {:?})",
            path.display(),
            stranger.source
        );
    }
    Ok(bundle)
}

/// Builds a bundle of the records in memory.
fn build_bundle<'a>(
    dir: &Path,
    documents: impl Iterator<Item = (String, &'a str, &'a str)>,
    count: usize,
    common: &Common,
) -> Result<Bundle> {
    let mut builder = common.settings.builder(file_name(dir), common.json)?;
    let bar = output::progress(count as u64, "chunking", common.json);
    for (source, title, text) in documents {
        match from_text(&source, title, &format!("{title}\n\n{text}")) {
            Ok(doc) => {
                builder.add(doc);
            }
            Err(e) => output::warn(Some(&bar), &format!("document {source}: {e} (skipped)")),
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    build::finish(builder, common.json)
}

/// Prints reports as JSON (one object, or an array for several modes) or as a table.
fn print<R: Serialize>(
    title: &str,
    reports: &[R],
    json: bool,
    row: impl Fn(&R) -> (Mode, usize, String),
    header: &str,
) -> Result<()> {
    if json {
        return match reports {
            [one] => output::json(one),
            many => output::json(&many),
        };
    }
    output::line(title);
    output::line(&format!("  {:<8} {:>8}  {header}", "mode", "queries"));
    for report in reports {
        let (mode, queries, values) = row(report);
        output::line(&format!("  {:<8} {queries:>8}  {values}", mode.as_str()));
    }
    Ok(())
}

fn multihop_files(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let entries = std::fs::read_dir(dir).with_context(|| format!("{}", dir.display()))?;
    let mut corpora: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with("_corpus.json"))
        .collect();
    corpora.sort();
    let [corpus] = &corpora[..] else {
        bail!(
            "{}: expected exactly one *_corpus.json file, found {}",
            dir.display(),
            corpora.len()
        );
    };
    let questions = PathBuf::from(corpus.to_string_lossy().replace("_corpus.json", ".json"));
    if !questions.is_file() {
        bail!("{}: not found (the questions beside {})", questions.display(), corpus.display());
    }
    Ok((corpus.clone(), questions))
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
