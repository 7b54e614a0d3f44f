//! `edgerag eval`: retrieval quality on judged data sets.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, Result, bail};
use edgerag_cli::source::blocking;
use edgerag_core::answer::Answerer;
use edgerag_core::bundle::FORMAT_VERSION;
use edgerag_core::bundle::lazy::{DEFAULT_BUDGET, Layout};
use edgerag_core::bundle::paged::InMemory;
use edgerag_core::eval::Judgments;
use edgerag_core::eval::beir;
use edgerag_core::eval::judge::{self, JudgeReport, JudgeScores};
use edgerag_core::eval::{multihop, squad};
use edgerag_core::llm::LlmClient;
use edgerag_core::load::from_text;
use edgerag_core::query::{Corpus, LazySearcher};
use edgerag_core::{Bundle, Mode, Searcher};
use serde::Serialize;

use crate::ask::AnswerArgs;
use crate::beir::{BeirData, load_bundle, read_beir};
use crate::build::Settings;
use crate::files::file_name;
use crate::flags::llm::LlmArgs;
use crate::flags::retrieval::{FusionArgs, parse_modes};
use crate::transport::{self, NativeTransport};
use crate::{files, indexing, output};

/// Data-set layouts `edgerag eval` reads.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// A BEIR directory: corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv.
    Beir(BeirArgs),
    /// Multi-hop QA in HippoRAG's MuSiQue layout: <name>_corpus.json and <name>.json.
    Multihop(MultihopArgs),
    /// Answers on a SQuAD v1.1 file: answer recall@k of retrieval, exact match and F1
    /// (extractive offline; with the LLM when one is configured).
    Squad(SquadArgs),
    /// Judge answers with an LLM: faithfulness, answer relevancy, contextual relevancy
    /// (RAGAS/DeepEval definitions), on the questions of a SQuAD v1.1 file.
    Answers(Box<AnswersArgs>),
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
    #[command(flatten)]
    format: FormatArg,
}

/// Arguments of `edgerag eval multihop`.
#[derive(Debug, clap::Args)]
pub(crate) struct MultihopArgs {
    /// The directory holding <name>_corpus.json and <name>.json (e.g. musique_train).
    dir: PathBuf,
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    format: FormatArg,
}

/// How a retrieval evaluation reads the bundle.
#[derive(Debug, clap::Args)]
pub(crate) struct FormatArg {
    /// Evaluate the bundle in format 3 (in memory) or 4 (written as format 4 and read by
    /// range, from memory: the reader of `search` and `ask` on a bundle of format 4).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(3..=4))]
    format: u16,
}

/// Arguments of `edgerag eval squad`.
#[derive(Debug, clap::Args)]
pub(crate) struct SquadArgs {
    /// A SQuAD v1.1 JSON file (.json or .json.gz); its paragraphs are the corpus.
    file: PathBuf,
    /// Ask only the first N questions.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    answer: AnswerArgs,
    #[command(flatten)]
    llm: LlmArgs,
}

/// Arguments of `edgerag eval answers`.
#[derive(Debug, clap::Args)]
pub(crate) struct AnswersArgs {
    /// A SQuAD v1.1 JSON file (.json or .json.gz); its paragraphs are the corpus, its
    /// questions are answered and the answers judged.
    file: PathBuf,
    /// Judge only the first N questions.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Questions judged at once, each by its own connection to the judge.
    #[arg(long, value_name = "N", default_value_t = 4)]
    concurrency: usize,
    /// The judge's model [default: the first --llm-model, else the default model].
    #[arg(long, value_name = "MODEL")]
    judge_model: Option<String>,
    /// Base URL of the judge's OpenAI-compatible API [default: the LLM base URL].
    #[arg(long, value_name = "URL")]
    judge_base_url: Option<String>,
    #[command(flatten)]
    common: Common,
    #[command(flatten)]
    answer: AnswerArgs,
    #[command(flatten)]
    llm: LlmArgs,
}

pub(crate) fn run(command: Command) -> Result<()> {
    match command {
        Command::Beir(args) => beir(args),
        Command::Multihop(args) => multihop(args),
        Command::Squad(args) => squad(args),
        Command::Answers(args) => answers(*args),
    }
}

fn beir(args: BeirArgs) -> Result<()> {
    let modes = parse_modes(&args.common.mode)?;
    let BeirData { corpus, queries, qrels } = read_beir(&args.dir, &args.split)?;

    // The BEIR protocol indexes title + text; the title is the first paragraph.
    let documents = corpus.iter().map(|d| (d.id.clone(), d.title.as_str(), d.text.as_str()));
    let searcher = index(&args.dir, documents, corpus.len(), &args.common)?;
    let common = &args.common;
    let reports = match args.format.format {
        4 => beir_reports(&by_range(&searcher, common)?, modes, &queries, &qrels, common)?,
        _ => beir_reports(&searcher, modes, &queries, &qrels, common)?,
    };
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
    let common = &args.common;
    let reports = match args.format.format {
        4 => multihop_reports(&by_range(&searcher, common)?, modes, &questions, common)?,
        _ => multihop_reports(&searcher, modes, &questions, common)?,
    };
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

/// Each mode's BEIR report on `corpus`.
fn beir_reports<C: Corpus>(
    corpus: &C,
    modes: Vec<Mode>,
    queries: &[beir::BeirQuery],
    qrels: &HashMap<String, Judgments>,
    common: &Common,
) -> Result<Vec<beir::EvalReport>> {
    per_mode(modes, corpus, common.json, |mode, progress| {
        let options = common.fusion.options(mode, 10, false)?;
        Ok(blocking(beir::evaluate(corpus, queries, qrels, &options, progress))?)
    })
}

/// Each mode's multi-hop report on `corpus`.
fn multihop_reports<C: Corpus>(
    corpus: &C,
    modes: Vec<Mode>,
    questions: &[multihop::Question],
    common: &Common,
) -> Result<Vec<multihop::MultihopReport>> {
    per_mode(modes, corpus, common.json, |mode, progress| {
        let options = common.fusion.options(mode, 5, false)?;
        Ok(blocking(multihop::evaluate(corpus, questions, &options, progress))?)
    })
}

/// `searcher`'s bundle written as format 4 and opened by range from memory, with its model.
fn by_range(searcher: &Searcher, common: &Common) -> Result<LazySearcher<InMemory>> {
    let bundle = searcher.bundle();
    let bytes = bundle.to_paged_bytes(&Layout::default())?;
    let paged = blocking(LazySearcher::open(InMemory(bytes), DEFAULT_BUDGET))?;
    match &bundle.manifest.embedding {
        Some(spec) if searcher.dense_ready() => {
            let embedder = common.settings.model().load_for(spec, common.json)?;
            Ok(paged.with_embedder(Box::new(embedder))?)
        }
        _ => Ok(paged),
    }
}

fn squad(args: SquadArgs) -> Result<()> {
    let modes = parse_modes(&args.common.mode)?;
    let (searcher, questions) = squad_index(&args.file, args.limit, &args.common)?;
    let client = args.answer.model(&args.llm, args.common.json)?;
    let how = if client.is_some() { "llm" } else { "extractive" };
    let reports = per_mode(modes, &searcher, args.common.json, |mode, progress| {
        let options = args.answer.options(&args.common.fusion, mode, client.as_ref())?;
        let answerer = Answerer::new(&searcher, options);
        let mut answer =
            |question: &str| transport::block_on(answerer.answer(client.as_ref(), question, None));
        Ok(squad::evaluate(&questions, mode, how, &mut answer, progress)?)
    })?;
    print(
        &format!("{} ({how} answers)", args.file.display()),
        &reports,
        args.common.json,
        |r| {
            let row = format!(
                "{:.4}  {:.4}  {:.4}  {:.4}  {:.4}    {:.4}",
                r.recall_1, r.recall_5, r.exact_match, r.f1, r.contains, r.refused
            );
            (r.mode, r.questions, row)
        },
        "AnsR@1  AnsR@5  EM      F1      contains refused",
    )
}

fn answers(args: AnswersArgs) -> Result<()> {
    if args.concurrency == 0 {
        bail!("--concurrency must be at least 1");
    }
    let modes = parse_modes(&args.common.mode)?;
    let judge_client =
        || args.llm.judge_client(args.judge_model.as_deref(), args.judge_base_url.as_deref());
    if judge_client()?.is_none() {
        bail!(
            "judging answers needs an LLM: set EDGERAG_LLM_API_KEY (or GROQ_API_KEY, \
             OPENAI_API_KEY) or pass --llm-base-url"
        );
    }
    let (searcher, questions) = squad_index(&args.file, args.limit, &args.common)?;
    let workers = args.concurrency.min(questions.len()).max(1);
    let judges = (0..workers)
        .map(|_| judge_client()?.context("no judge LLM configured"))
        .collect::<Result<Vec<_>>>()?;
    let client = args.answer.model(&args.llm, args.common.json)?;
    let how = if client.is_some() { "llm" } else { "extractive" };
    let mut reports = Vec::new();
    for mode in available(modes, &searcher)? {
        // Answers first, here: the answerer is not `Send`. Judging only needs their text.
        let options = args.answer.options(&args.common.fusion, mode, client.as_ref())?;
        let answerer = Answerer::new(&searcher, options);
        let bar = output::progress(questions.len() as u64, "answering", args.common.json);
        let mut answered = Vec::with_capacity(questions.len());
        for q in &questions {
            let answer = transport::block_on(answerer.answer(client.as_ref(), &q.question, None))
                .with_context(|| format!("question {}", q.id))?;
            let contexts = answer.sources.iter().map(|s| s.hit.text.clone()).collect();
            answered.push(Answered {
                question: q.question.clone(),
                answer: answer.plain_text(),
                contexts,
            });
            bar.inc(1);
        }
        bar.finish_and_clear();
        let bar = output::progress(answered.len() as u64, "judging", args.common.json);
        let scores = judge_all(&judges, &answered, &bar);
        bar.finish_and_clear();
        reports.push(JudgeReport::new(mode, how, &scores));
    }
    if !args.common.json {
        for report in reports.iter().filter(|r| r.failed > 0) {
            let problem = report.problem.as_deref().unwrap_or("unknown problem");
            output::warn(
                None,
                &format!(
                    "{}: {} of {} questions not fully judged (first problem: {problem})",
                    report.mode.as_str(),
                    report.failed,
                    report.questions
                ),
            );
        }
    }
    let score = |x: Option<f64>| x.map_or_else(|| "  -   ".to_owned(), |x| format!("{x:.4}"));
    print(
        &format!("{} ({how} answers, judged by an LLM)", args.file.display()),
        &reports,
        args.common.json,
        |r| {
            let row = format!(
                "{}    {}     {}     {}",
                score(r.faithfulness),
                score(r.answer_relevancy),
                score(r.contextual_relevancy),
                r.failed
            );
            (r.mode, r.questions, row)
        },
        "faithful  ans-rel    ctx-rel    failed",
    )
}

/// A question answered, ready to judge.
struct Answered {
    question: String,
    answer: String,
    contexts: Vec<String>,
}

/// Judges `answered` with one thread per client, each taking the next unjudged question.
fn judge_all(
    judges: &[LlmClient<NativeTransport>],
    answered: &[Answered],
    bar: &indicatif::ProgressBar,
) -> Vec<JudgeScores> {
    let next = AtomicUsize::new(0);
    let unjudged = JudgeScores {
        problem: Some("a judging thread failed".to_owned()),
        ..JudgeScores::default()
    };
    let mut scores = vec![unjudged; answered.len()];
    std::thread::scope(|scope| {
        let workers: Vec<_> = judges
            .iter()
            .map(|client| {
                let next = &next;
                scope.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(a) = answered.get(i) else { break };
                        let judged = judge::judge(client, &a.question, &a.answer, &a.contexts);
                        done.push((i, transport::block_on(judged)));
                        bar.inc(1);
                    }
                    done
                })
            })
            .collect();
        for worker in workers {
            for (i, judged) in worker.join().unwrap_or_default() {
                scores[i] = judged;
            }
        }
    });
    scores
}

/// A searcher over the paragraphs of a SQuAD file, and its first `limit` questions.
fn squad_index(
    file: &Path,
    limit: Option<usize>,
    common: &Common,
) -> Result<(Searcher, Vec<squad::Question>)> {
    let text = files::read_text_maybe_gz(file)?;
    let (paragraphs, mut questions) = squad::parse(&file_name(file), &text)?;
    questions.truncate(limit.unwrap_or(usize::MAX));
    let documents =
        paragraphs.iter().map(|p| (p.source.clone(), p.title.as_str(), p.text.as_str()));
    Ok((index(file, documents, paragraphs.len(), common)?, questions))
}

/// The modes the searcher can run: dense only with vectors (it is left out of `all` without).
/// Runs `evaluate` for each mode the searcher can serve, with a progress bar per mode, and
/// returns the reports in order.
fn per_mode<R>(
    modes: Vec<Mode>,
    searcher: &impl Corpus,
    quiet: bool,
    mut evaluate: impl FnMut(Mode, &mut dyn FnMut(usize, usize)) -> Result<R>,
) -> Result<Vec<R>> {
    let mut reports = Vec::new();
    for mode in available(modes, searcher)? {
        let bar = output::progress(0, mode.as_str(), quiet);
        let report = evaluate(mode, &mut |done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?;
        bar.finish_and_clear();
        reports.push(report);
    }
    Ok(reports)
}

fn available(modes: Vec<Mode>, searcher: &impl Corpus) -> Result<Vec<Mode>> {
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

/// Builds a bundle of the records in memory.
fn build_bundle<'a>(
    dir: &Path,
    documents: impl Iterator<Item = (String, &'a str, &'a str)>,
    count: usize,
    common: &Common,
) -> Result<Bundle> {
    // Built for format 3, with the HNSW graph: evaluations search it in memory, or write it
    // as format 4 when asked.
    let mut builder = common.settings.builder(file_name(dir), FORMAT_VERSION, common.json)?;
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
    indexing::finish(builder, common.json)
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
