//! Answers with citations: grounded LLM answers, checked sentence by sentence, and extractive
//! answers that need no LLM at all.
//!
//! An [`Answerer`] retrieves the question's best chunks and numbers them as sources `S1`,
//! `S2`, … within a token budget. When the best of them is not relevant enough it refuses
//! ([`prompt::REFUSAL`]) without calling anything. Otherwise:
//!
//! - [`Answerer::ask`] sends the sources and the question to the LLM, then checks the reply
//!   ([`verify`]): every sentence's `[S#]` citations are mapped to chunks and scored for
//!   support, and warnings name uncited sentences, unknown or unused sources and numbers
//!   that no cited source contains. A poorly supported reply is asked again once, with
//!   stricter rules at temperature 0; the second reply is returned with its warnings. All of
//!   it runs under one deadline ([`AskOptions::deadline`], raced against the host's timer),
//!   past which the answer is extractive; a reply that streamed in part and then failed is
//!   discarded, and a warning says so ([`WarningKind::StreamDiscarded`]).
//! - [`Answerer::extractive`] picks the sources' sentences closest to the question
//!   ([`extractive`]) and cites them: a useful answer offline.
//!
//! **Relevance** of the retrieval is, over the sources, the best of the cosine similarity
//! between question and chunk (when the bundle has vectors and the model is loaded) and the
//! fraction of the question's terms the chunk contains. **Support** of a sentence is the best
//! cosine similarity between the sentence and a sentence of a source it cites (the share of
//! its terms found in the cited sources when no model is loaded); an uncited sentence has
//! support 0. **Confidence** is the geometric mean of relevance and the sentences' mean
//! support, so it is high only when both are (0 for a refusal; for an extractive answer, the
//! chosen sentences' mean score stands for support).

mod extractive;
pub mod prompt;
mod verify;

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::{Pin, pin};
use std::rc::Rc;
use std::task::Poll;
use std::time::Duration;

use serde::Serialize;

use self::prompt::REFUSAL;
use crate::bundle::Embed;
use crate::llm::{ChatModel, seconds};
use crate::query::{Corpus, Hit, Mode, SearchOptions, Searcher};
use crate::text::Analyzer;
use crate::{Error, Result};

/// The sources' default token budget for models running in the process: small models read a
/// few thousand tokens at most, and a CPU processes prompts at about a hundred tokens a second.
pub const LOCAL_CONTEXT_TOKENS: usize = 1024;

/// How answers are made.
#[derive(Debug, Clone, PartialEq)]
pub struct AskOptions {
    /// Retrieval of the sources (`k` is the most sources).
    pub search: SearchOptions,
    /// Token budget of the sources in the prompt ([`prompt::estimate_tokens`]).
    pub context_tokens: usize,
    /// Below this relevance (see the module docs) the answer is a refusal, made without the
    /// LLM.
    pub min_relevance: f32,
    /// A sentence supported less than this draws a warning, and the LLM is asked again.
    pub min_support: f32,
    /// Sentences in an extractive answer.
    pub sentences: usize,
    /// Whether the LLM chooses the graph's keywords among local candidates.
    pub llm_keywords: bool,
    /// Candidates offered to the LLM for keyword matching.
    pub keyword_candidates: usize,
    /// Cite, for each sentence the model left uncited, the source that supports it best,
    /// when it does at least [`AskOptions::min_support`] (a
    /// [`WarningKind::AttributedCitation`] says so). For small local models, which seldom
    /// write citations themselves.
    pub attribute: bool,
    /// Ask the LLM again, with stricter rules, when a sentence of its reply is poorly
    /// supported. Off for small local models: the second reply is seldom better, and they
    /// take as long again to write it.
    pub retry: bool,
    /// Longest wait for the LLM over a whole answer (keyword choice, reply and stricter
    /// retry, every attempt and model included), measured with the model's own timer
    /// ([`ChatModel::sleep`]). Past it, the answer is extractive with a
    /// [`WarningKind::LlmDeadline`] warning (or, when only the stricter retry was cut, the
    /// first reply stands). A model running in the process has no timer and is bounded by
    /// its most tokens instead. Default [`DEFAULT_DEADLINE`].
    pub deadline: Duration,
}

/// The default [`AskOptions::deadline`]: two minutes, time for a slow provider to answer once
/// or twice, not for every retry of every model to time out.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(120);

impl Default for AskOptions {
    fn default() -> Self {
        Self {
            search: SearchOptions { k: 5, mode: Mode::Hybrid, ..SearchOptions::default() },
            context_tokens: 4096,
            min_relevance: 0.3,
            min_support: 0.5,
            sentences: 3,
            llm_keywords: false,
            keyword_candidates: 50,
            attribute: false,
            retry: true,
            deadline: DEFAULT_DEADLINE,
        }
    }
}

impl AskOptions {
    /// The defaults for answers written by a small model running in the process: sources'
    /// budget [`LOCAL_CONTEXT_TOKENS`], uncited sentences attributed, no stricter retry.
    pub fn local() -> Self {
        Self {
            context_tokens: LOCAL_CONTEXT_TOKENS,
            attribute: true,
            retry: false,
            ..Self::default()
        }
    }
}

/// How an answer was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerMode {
    /// Written by the LLM from the sources.
    Llm,
    /// Sentences taken from the sources.
    Extractive,
    /// No answer: the sources do not hold one.
    Refused,
}

/// A retrieved chunk given to the answer as source `S<n>`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Source {
    /// `S1`, `S2`, … in retrieval order.
    pub marker: String,
    /// The search result it is (its `explain` only when the search options ask for it).
    #[serde(flatten)]
    pub hit: Hit,
}

impl Source {
    /// The citation of this source.
    pub fn citation(&self) -> Citation {
        Citation {
            marker: self.marker.clone(),
            chunk_id: self.hit.chunk_id.clone(),
            document: self.hit.document.clone(),
            page: self.hit.page,
        }
    }
}

/// A source cited by the answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Citation {
    /// The marker as written, without brackets (`S2`).
    pub marker: String,
    /// The cited chunk.
    pub chunk_id: String,
    /// Its document.
    pub document: String,
    /// Its page (PDF).
    pub page: Option<u32>,
}

/// One sentence of the answer and how well its sources back it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sentence {
    /// The sentence, citation markers included.
    pub text: String,
    /// Markers it cites.
    pub cites: Vec<String>,
    /// Support, in `[0, 1]` (see the module docs).
    pub support: f32,
}

/// What a warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// A sentence cites no source.
    UncitedSentence,
    /// A sentence cited no source; its best-supporting source was cited for it
    /// ([`AskOptions::attribute`]).
    AttributedCitation,
    /// A citation names a source that was not given.
    UnknownSource,
    /// Sources given but not cited.
    UnusedSources,
    /// A number in the answer appears in no source the sentence cites.
    UnsupportedNumber,
    /// A sentence's support is below the threshold.
    LowSupport,
    /// The first reply was poorly supported; this one came from the stricter retry.
    Retried,
    /// The LLM could not be used; the answer was made another way.
    LlmFailed,
    /// The LLM had not answered when [`AskOptions::deadline`] passed: the answer is
    /// extractive (or the first reply, when the stricter retry was cut).
    LlmDeadline,
    /// The reply was streamed in part, then failed (the stream broke, or the deadline
    /// passed): what streamed is not the answer, and hosts that showed it should say so.
    StreamDiscarded,
    /// Keyword matching by the LLM fell back to the local candidates.
    Keywords,
}

/// A problem found in an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// What it is about.
    pub kind: WarningKind,
    /// Details for people.
    pub message: String,
}

impl Warning {
    fn new(kind: WarningKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into() }
    }
}

/// An answer, ready to show or serialise.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Answer {
    /// The answer text, with `[S#]` markers.
    pub answer: String,
    /// How it was made.
    pub mode: AnswerMode,
    /// The LLM model that wrote it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sources cited, in order of first citation.
    pub citations: Vec<Citation>,
    /// Every source given, in retrieval order.
    pub sources: Vec<Source>,
    /// The answer's sentences with their support.
    pub sentences: Vec<Sentence>,
    /// Problems found.
    pub warnings: Vec<Warning>,
    /// Retrieval relevance, in `[0, 1]`.
    pub relevance: f32,
    /// Overall confidence, in `[0, 1]`.
    pub confidence: f32,
    /// Keywords the LLM chose for graph retrieval (with `llm_keywords`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keywords: Option<Vec<String>>,
}

impl Answer {
    /// The answer text without its citation markers.
    pub fn plain_text(&self) -> String {
        verify::strip_markers(&self.answer)
    }

    /// Whether text was streamed, then discarded: the reply broke off or ran past the
    /// deadline, and this answer was made another way ([`WarningKind::StreamDiscarded`]).
    pub fn stream_discarded(&self) -> bool {
        self.warnings.iter().any(|w| w.kind == WarningKind::StreamDiscarded)
    }
}

/// Where a chunk is, for people: `Title › Section › Subsection (p. N)`. The title is not
/// repeated when the section path starts with it.
pub fn place(title: &str, section: &[String], page: Option<u32>) -> String {
    let mut place = title.to_owned();
    let section = match section.split_first() {
        Some((first, rest)) if first == title => rest,
        _ => section,
    };
    if !section.is_empty() {
        place = format!("{place} › {}", section.join(" › "));
    }
    if let Some(page) = page {
        place = format!("{place} (p. {page})");
    }
    place
}

/// Most chunks whose sentence vectors are kept between questions.
const SENTENCE_CACHE: usize = 4096;

/// Sentences of a chunk with their vectors (vectors empty without a model).
type ChunkSentences = Rc<Vec<(String, Vec<f32>)>>;

/// Answers questions over one [`Corpus`]: a bundle in memory ([`Searcher`]) or read by range
/// ([`LazySearcher`](crate::query::LazySearcher)).
pub struct Answerer<'a, C = Searcher> {
    searcher: &'a C,
    options: AskOptions,
    analyzer: Analyzer,
    sentences: RefCell<HashMap<u32, ChunkSentences>>,
}

impl<C> std::fmt::Debug for Answerer<'_, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answerer").field("options", &self.options).finish_non_exhaustive()
    }
}

/// Sources of one question and how relevant they are.
struct Retrieval {
    sources: Vec<Source>,
    relevance: f32,
}

impl Answerer<'_> {
    /// An extractive answer: the sources' sentences closest to `question`, cited.
    ///
    /// # Errors
    /// [`Error::Query`] for a question without searchable words; model errors.
    pub fn extractive(&self, question: &str) -> Result<Answer> {
        crate::bundle::paged::ready_now(self.extractive_with(question, Vec::new()))
            .unwrap_or_else(|| unreachable!("a bundle in memory answers at once"))
    }
}

impl<'a, C: Corpus> Answerer<'a, C> {
    /// An answerer over `searcher`.
    pub fn new(searcher: &'a C, options: AskOptions) -> Self {
        Self { searcher, options, analyzer: Analyzer::new(), sentences: RefCell::default() }
    }

    /// The options.
    pub fn options(&self) -> &AskOptions {
        &self.options
    }

    /// [`Answerer::extractive`], carrying `warnings`.
    async fn extractive_with(&self, question: &str, warnings: Vec<Warning>) -> Result<Answer> {
        let retrieval = self.retrieve(question, &self.options.search).await?;
        if retrieval.relevance < self.options.min_relevance {
            return Ok(refusal(retrieval, warnings));
        }
        self.extract(question, retrieval, warnings)
    }

    /// An answer written by `llm` from the sources, checked and cited. With `on_token`, the
    /// first reply is streamed to it.
    ///
    /// When every model fails transiently, or replies against the protocol, the answer is
    /// extractive and says why in a [`WarningKind::LlmFailed`] warning; when
    /// [`AskOptions::deadline`] passes first, in a [`WarningKind::LlmDeadline`] one. If part of
    /// the reply had streamed, a [`WarningKind::StreamDiscarded`] warning says it is not the
    /// answer.
    ///
    /// # Errors
    /// [`Error::LlmRejected`] (a bad key or model: retrying elsewhere cannot help); as
    /// [`Answerer::extractive`].
    pub async fn ask<M: ChatModel>(
        &self,
        llm: &M,
        question: &str,
        mut on_token: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Answer> {
        // One timer for the whole answer, started with the first LLM call.
        let mut deadline = pin!(llm.sleep(self.options.deadline));
        let mut warnings = Vec::new();
        let mut search = self.options.search.clone();
        let mut keywords = None;
        if self.options.llm_keywords {
            let chosen = self.choose_keywords(llm, question, &mut warnings);
            let Some(chosen) = before(chosen, deadline.as_mut()).await else {
                warnings.push(self.deadline_warning("choosing keywords"));
                return self.extractive_with(question, warnings).await;
            };
            let (ids, names) = chosen?;
            search.graph_keywords = Some(ids);
            keywords = Some(names);
        }
        let retrieval = self.retrieve(question, &search).await?;
        if retrieval.relevance < self.options.min_relevance {
            let mut answer = refusal(retrieval, warnings);
            answer.keywords = keywords;
            return Ok(answer);
        }
        let messages = prompt::answer_messages(question, &retrieval.sources, false);
        let temperature = llm.temperature();
        let streamed = Cell::new(false);
        let streaming = on_token.is_some();
        let mut forward = |piece: &str| {
            streamed.set(true);
            if let Some(on_token) = on_token.as_deref_mut() {
                on_token(piece);
            }
        };
        let sink = streaming.then_some(&mut forward as &mut dyn FnMut(&str));
        let outcome = match before(llm.chat(&messages, temperature, sink), deadline.as_mut()).await
        {
            Some(Ok(reply)) => Ok(reply),
            Some(Err(error @ Error::LlmRejected { .. })) => return Err(error),
            Some(Err(error)) => Err(Warning::new(
                WarningKind::LlmFailed,
                format!("{error}; answered extractively instead"),
            )),
            None => Err(self.deadline_warning("writing the answer")),
        };
        let first = match outcome {
            Ok(reply) => reply,
            Err(warning) => {
                warnings.push(warning);
                if streamed.get() {
                    warnings.push(Warning::new(
                        WarningKind::StreamDiscarded,
                        "the streamed reply broke off and is discarded: this answer is \
                         extracted from the sources",
                    ));
                }
                return self.extract(question, retrieval, warnings);
            }
        };
        let answer = self.written(first, &retrieval, warnings.clone())?;
        let mut answer =
            self.retry_if_poor(llm, question, &retrieval, answer, warnings, deadline).await?;
        answer.keywords = keywords;
        Ok(answer)
    }

    /// `answer` again, from a stricter prompt at temperature 0, when it was written by the LLM
    /// but poorly supported and [`AskOptions::retry`] is on; `answer` itself when the retry
    /// fails or `deadline` passes first. `warnings` are those of the first reply.
    async fn retry_if_poor<M: ChatModel>(
        &self,
        llm: &M,
        question: &str,
        retrieval: &Retrieval,
        mut answer: Answer,
        mut warnings: Vec<Warning>,
        deadline: Pin<&mut impl Future>,
    ) -> Result<Answer> {
        if !self.options.retry || answer.mode != AnswerMode::Llm || !self.poorly_supported(&answer)
        {
            return Ok(answer);
        }
        let messages = prompt::answer_messages(question, &retrieval.sources, true);
        match before(llm.chat(&messages, 0.0, None), deadline).await {
            Some(Ok(second)) => {
                warnings.push(Warning::new(
                    WarningKind::Retried,
                    format!(
                        "the first reply was poorly supported (confidence {:.2}); this is \
                         the reply to a stricter prompt at temperature 0",
                        answer.confidence
                    ),
                ));
                return self.written(second, retrieval, warnings);
            }
            Some(Err(_)) => {}
            None => answer.warnings.push(Warning::new(
                WarningKind::LlmDeadline,
                format!(
                    "the deadline of {} passed during the stricter retry; this is the first \
                     reply",
                    seconds(self.options.deadline)
                ),
            )),
        }
        Ok(answer)
    }

    /// The warning of an answer made without the LLM because the deadline passed while it
    /// was `doing` something.
    fn deadline_warning(&self, doing: &str) -> Warning {
        Warning::new(
            WarningKind::LlmDeadline,
            format!(
                "the LLM was still {doing} when the deadline of {} passed; answered \
                 extractively instead",
                seconds(self.options.deadline)
            ),
        )
    }

    /// The answer every host gives: written by `llm` when there is one ([`Answerer::ask`],
    /// its first reply streamed to `on_token`), else extractive ([`Answerer::extractive`]).
    ///
    /// # Errors
    /// As [`Answerer::ask`] and [`Answerer::extractive`].
    pub async fn answer<M: ChatModel>(
        &self,
        llm: Option<&M>,
        question: &str,
        on_token: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Answer> {
        match llm {
            Some(llm) => self.ask(llm, question, on_token).await,
            None => self.extractive_with(question, Vec::new()).await,
        }
    }

    /// Whether any sentence of `answer` is supported below the threshold.
    fn poorly_supported(&self, answer: &Answer) -> bool {
        answer.sentences.iter().any(|s| s.support < self.options.min_support)
    }

    /// Asks `llm` which local keyword candidates matter; the chosen keyword indices and names.
    /// A reply without usable JSON, or an LLM failure other than a rejection, falls back to
    /// the candidates the question matches lexically.
    async fn choose_keywords<M: ChatModel>(
        &self,
        llm: &M,
        question: &str,
        warnings: &mut Vec<Warning>,
    ) -> Result<(Vec<u32>, Vec<String>)> {
        let limit = self.options.keyword_candidates;
        let candidates = self.searcher.keyword_candidates(question, limit).await?;
        if candidates.is_empty() {
            return Ok((Vec::new(), Vec::new()));
        }
        let names: Vec<String> = candidates.iter().map(|c| c.display.clone()).collect();
        let messages = prompt::keyword_messages(question, &names);
        let chosen = match llm.chat(&messages, 0.0, None).await {
            Ok(reply) => prompt::parse_keywords(&reply.text, &names)
                .ok_or_else(|| "the LLM's keyword reply is not the JSON asked for".to_owned()),
            Err(error @ Error::LlmRejected { .. }) => return Err(error),
            Err(error) => Err(error.to_string()),
        };
        let chosen = chosen.unwrap_or_else(|problem| {
            warnings.push(Warning::new(
                WarningKind::Keywords,
                format!("{problem}; using the keywords the question matches"),
            ));
            (0..candidates.len()).filter(|&i| candidates[i].lexical).collect()
        });
        let ids = chosen.iter().map(|&i| candidates[i].keyword).collect();
        Ok((ids, chosen.into_iter().map(|i| names[i].clone()).collect()))
    }

    /// The question's sources within the token budget, and their relevance.
    async fn retrieve(&self, question: &str, search: &SearchOptions) -> Result<Retrieval> {
        let explained = search.explain;
        let search = SearchOptions { explain: true, ..search.clone() };
        let hits = self.searcher.search(question, &search).await?;
        let terms: Vec<String> = {
            let mut t = self.analyzer.terms(question);
            t.sort_unstable();
            t.dedup();
            t
        };
        let relevance = hits.iter().map(|hit| hit_relevance(hit, &terms)).fold(0.0, f32::max);
        let question_tokens = prompt::estimate_tokens(question) + 200;
        let mut budget = self.options.context_tokens.saturating_sub(question_tokens);
        let mut sources = Vec::new();
        for hit in hits {
            let explain = if explained { hit.explain } else { None };
            let marker = format!("S{}", sources.len() + 1);
            let mut source = Source { marker, hit: Hit { explain, ..hit } };
            let cost = prompt::estimate_tokens(&prompt::source_block(&source));
            if cost > budget {
                if sources.is_empty() {
                    // A chunk larger than the whole budget is cut rather than dropped.
                    let keep = budget.saturating_mul(4).saturating_sub(200);
                    source.hit.text = source.hit.text.chars().take(keep).collect();
                    sources.push(source);
                }
                break;
            }
            budget -= cost;
            sources.push(source);
        }
        Ok(Retrieval { sources, relevance })
    }

    /// Checks an LLM reply against the sources.
    fn written(
        &self,
        reply: crate::llm::Completion,
        retrieval: &Retrieval,
        mut warnings: Vec<Warning>,
    ) -> Result<Answer> {
        for failure in &reply.failed {
            warnings.push(Warning::new(WarningKind::LlmFailed, format!("{failure}; next model")));
        }
        if verify::is_refusal(&reply.text) {
            let mut answer = refusal(
                Retrieval { sources: retrieval.sources.clone(), relevance: retrieval.relevance },
                warnings,
            );
            answer.model = Some(reply.model);
            return Ok(answer);
        }
        let checked = verify::check(self, &reply.text, &retrieval.sources)?;
        warnings.extend(checked.warnings);
        let support = mean(checked.sentences.iter().map(|s| s.support));
        Ok(Answer {
            answer: checked.text.trim().to_owned(),
            mode: AnswerMode::Llm,
            model: Some(reply.model),
            citations: checked.citations,
            sources: retrieval.sources.clone(),
            sentences: checked.sentences,
            warnings,
            relevance: retrieval.relevance,
            confidence: (retrieval.relevance * support).sqrt(),
            keywords: None,
        })
    }

    /// Sentences of chunk `chunk`, with vectors when a model is loaded (cached).
    fn chunk_sentences(&self, chunk: u32, text: &str) -> Result<ChunkSentences> {
        if let Some(found) = self.sentences.borrow().get(&chunk) {
            return Ok(Rc::clone(found));
        }
        let sentences: Vec<String> =
            crate::text::sentences(text).into_iter().map(|r| text[r].to_owned()).collect();
        let vectors = match self.embedder() {
            Some(embedder) => {
                let refs: Vec<&str> = sentences.iter().map(String::as_str).collect();
                embedder.embed_documents(&refs)?
            }
            None => vec![Vec::new(); sentences.len()],
        };
        let entry: ChunkSentences = Rc::new(sentences.into_iter().zip(vectors).collect());
        let mut cache = self.sentences.borrow_mut();
        if cache.len() >= SENTENCE_CACHE {
            cache.clear();
        }
        cache.insert(chunk, Rc::clone(&entry));
        Ok(entry)
    }

    fn embedder(&self) -> Option<&dyn Embed> {
        self.searcher.embedder()
    }
}

/// A hit's relevance: its dense cosine similarity or its share of the question's terms.
fn hit_relevance(hit: &Hit, terms: &[String]) -> f32 {
    let Some(explain) = &hit.explain else {
        return 0.0;
    };
    let dense = explain.dense.map_or(0.0, |d| d.score);
    let coverage = if terms.is_empty() {
        0.0
    } else {
        let found = terms.iter().filter(|t| explain.terms.iter().any(|m| &m.term == *t)).count();
        found as f32 / terms.len() as f32
    };
    dense.max(coverage).clamp(0.0, 1.0)
}

/// The refusal, with the sources that were found (none cited).
fn refusal(retrieval: Retrieval, warnings: Vec<Warning>) -> Answer {
    Answer {
        answer: REFUSAL.to_owned(),
        mode: AnswerMode::Refused,
        model: None,
        citations: Vec::new(),
        sources: retrieval.sources,
        sentences: Vec::new(),
        warnings,
        relevance: retrieval.relevance,
        confidence: 0.0,
        keywords: None,
    }
}

/// The output of `work`, unless `deadline` completes first (`None`). `work` is polled first,
/// so work that completes when first polled (a model running in the process) always counts.
/// A no-runtime select over two futures: hosts provide the timer, and core has no clock.
async fn before<W: Future>(work: W, mut deadline: Pin<&mut impl Future>) -> Option<W::Output> {
    let mut work = pin!(work);
    std::future::poll_fn(|context| {
        if let Poll::Ready(output) = work.as_mut().poll(context) {
            return Poll::Ready(Some(output));
        }
        deadline.as_mut().poll(context).map(|_| None)
    })
    .await
}

/// The mean of `values` (0 for none).
fn mean(values: impl Iterator<Item = f32>) -> f32 {
    let (sum, n) = values.fold((0.0, 0u32), |(s, n), v| (s + v, n + 1));
    if n == 0 { 0.0 } else { sum / n as f32 }
}

/// Cosine similarity of two L2-normalised vectors (0 when either is missing).
fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}
