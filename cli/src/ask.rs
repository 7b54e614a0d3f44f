//! `edgerag ask`: a cited answer to a question, written by an LLM or extracted offline.

use anyhow::{Context, Result, bail};
use edgerag_core::Mode;
use edgerag_core::answer::{
    Answer, AnswerMode, Answerer, AskOptions, DEFAULT_DEADLINE, WarningKind,
};
use edgerag_core::completions::STREAM_DISCARDED;
use edgerag_core::request::AskRequest;

use crate::flags::llm::{self, Llm, LlmArgs};
use crate::flags::model::ModelArgs;
use crate::flags::retrieval::FusionArgs;
use crate::open::{WithIo, open};
use crate::output;
use crate::transport;

/// Arguments of `edgerag ask`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The bundle: a file, or the http(s):// URL of one of format 4 (read by range).
    bundle: String,
    /// The question.
    question: String,
    /// Retrieval mode: bm25, dense, graph or hybrid.
    #[arg(long, default_value_t = Mode::default())]
    mode: Mode,
    #[command(flatten)]
    fusion: FusionArgs,
    #[command(flatten)]
    answer: AnswerArgs,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    llm: LlmArgs,
    /// Print the answer as it is written (text output only).
    #[arg(long, conflicts_with = "json")]
    stream: bool,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// How answers are made: flags shared by `ask` and `eval squad`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct AnswerArgs {
    /// Answer from the sources' sentences, without an LLM (the default when none is
    /// configured).
    #[arg(long)]
    pub(crate) extractive: bool,
    /// Let the LLM choose the graph's keywords among local candidates.
    #[arg(long, conflicts_with = "extractive")]
    llm_keywords: bool,
    /// Most sources given to the answer.
    #[arg(short, default_value_t = AskOptions::default().search.k)]
    pub(crate) k: usize,
    /// Token budget of the sources in the prompt (estimated at four characters per token)
    /// [default: 4096; 1024 with --llm local, whose small models read 4096 tokens at most].
    #[arg(long)]
    context_tokens: Option<usize>,
    /// Refuse, without asking the LLM, when the best source's relevance is below this (0-1).
    #[arg(long, default_value_t = AskOptions::default().min_relevance)]
    min_relevance: f32,
    /// Sentences in an extractive answer.
    #[arg(long, default_value_t = AskOptions::default().sentences)]
    sentences: usize,
    /// Seconds the LLM may take over the whole answer (keyword choice, reply and stricter
    /// retry, every attempt and model included; --llm-timeout limits each request). Past it,
    /// the answer is extractive, with an llm_deadline warning.
    #[arg(long, value_name = "SECONDS", value_parser = |v: &str| llm::seconds(v, "the deadline"),
          default_value_t = DEFAULT_DEADLINE.as_secs_f64())]
    ask_timeout: f64,
}

impl AnswerArgs {
    /// The model answers are written with, unless answers are extractive (asked for, or no
    /// LLM configured). `quiet` hides a local model's download progress.
    pub(crate) fn model(&self, llm: &LlmArgs, quiet: bool) -> Result<Option<Llm>> {
        let model = if self.extractive { None } else { llm.model(quiet)? };
        if self.llm_keywords && model.is_none() {
            bail!(
                "--llm-keywords needs an LLM: set EDGERAG_LLM_API_KEY (or GROQ_API_KEY, \
                 OPENAI_API_KEY), pass --llm-base-url, or --llm local"
            );
        }
        Ok(model)
    }

    /// The request these flags make, retrieving in `mode` as `fusion` says.
    pub(crate) fn request(&self, fusion: &FusionArgs, mode: Mode) -> AskRequest {
        AskRequest {
            extractive: self.extractive,
            sentences: Some(self.sentences),
            min_relevance: Some(self.min_relevance),
            context_tokens: self.context_tokens,
            llm_keywords: self.llm_keywords,
            deadline_ms: Some(llm::millis(self.ask_timeout)),
            search: fusion.request(mode, self.k, false),
            ..AskRequest::default()
        }
    }

    /// The answer options for answers written by `model` (if any), checked as every host's
    /// are; a local model's defaults where the flags say nothing.
    pub(crate) fn options(
        &self,
        fusion: &FusionArgs,
        mode: Mode,
        model: Option<&Llm>,
    ) -> Result<AskOptions> {
        let defaults = match model {
            Some(Llm::Local(_)) => AskOptions::local(),
            _ => AskOptions::default(),
        };
        self.request(fusion, mode).options_from(defaults).context("answer options")
    }
}

pub(crate) fn run(args: Args) -> Result<()> {
    let opened = open(&args.bundle, &args.model, args.mode, args.json)?;
    let client = args.answer.model(&args.llm, args.json)?;
    let options = args.answer.options(&args.fusion, args.mode, client.as_ref())?;
    let mut streamed = false;
    let mut print = |token: &str| {
        streamed = true;
        output::stream(token);
    };
    let on_token = args.stream.then_some(&mut print as &mut dyn FnMut(&str));
    let answerer = Answerer::new(&opened, options);
    let answer = transport::block_on(answerer.answer(client.as_ref(), &args.question, on_token));
    let answer = answer.context("ask")?;
    if args.json {
        return output::json(&WithIo { output: &answer, io: opened.reads() });
    }
    print_answer(&answer, streamed);
    Ok(())
}

/// Said after a streamed reply that a stricter retry replaced.
const STREAM_REVISED: &str =
    "The reply above was poorly supported. The reply to a stricter prompt:";

/// The answer, its sources and its warnings. After a streamed reply, the answer is printed
/// again only if it changed, after a line saying why: the stream broke off (or ran past the
/// deadline) and is discarded, or a stricter retry replaced it.
fn print_answer(answer: &Answer, streamed: bool) {
    let retried = answer.warnings.iter().any(|w| w.kind == WarningKind::Retried);
    let why = if answer.stream_discarded() {
        Some(STREAM_DISCARDED)
    } else {
        retried.then_some(STREAM_REVISED)
    };
    match (streamed, why) {
        (false, _) => output::line(&answer.answer),
        // End the streamed line.
        (true, None) => output::line(""),
        (true, Some(why)) => output::line(&format!("\n\n--- {why} ---\n{}", answer.answer)),
    }
    output::line("");
    let cited: Vec<&str> = answer.citations.iter().map(|c| c.marker.as_str()).collect();
    for source in &answer.sources {
        let place = output::place(&source.hit.title, &source.hit.section, source.hit.page);
        let mark = if cited.contains(&source.marker.as_str()) { "*" } else { " " };
        output::line(&format!("{mark}[{}] {place}  [{}]", source.marker, source.hit.document));
    }
    for warning in &answer.warnings {
        output::warn(None, &warning.message);
    }
    let how = match (&answer.mode, &answer.model) {
        (AnswerMode::Llm, Some(model)) => format!("written by {model}"),
        (AnswerMode::Extractive, _) => "extracted from the sources (no LLM)".to_owned(),
        (AnswerMode::Refused, Some(model)) => format!("refused by {model}"),
        _ => "refused: no relevant source".to_owned(),
    };
    output::line(&format!(
        "\n{how}; relevance {:.2}, confidence {:.2}",
        answer.relevance, answer.confidence
    ));
}
