//! Answers over a real document with the real embedding model: support scores separate a
//! faithful sentence from an invented one, and relevance refuses an off-topic question.

use std::cell::RefCell;
use std::time::Duration;

use edgerag_core::answer::{AnswerMode, Answerer, AskOptions, WarningKind};
use edgerag_core::bundle::lazy::{DEFAULT_BUDGET, Layout};
use edgerag_core::bundle::paged::InMemory;
use edgerag_core::llm::{
    HttpRequest, HttpResponse, LlmClient, LlmConfig, ResponseBody, Transport, TransportError,
};
use edgerag_core::query::{Corpus, LazySearcher};
use edgerag_core::{BuildOptions, BundleBuilder, Searcher, load};

use crate::common::{fixture, now};
use crate::embed::minilm_boxed;

/// A provider replying with the given chat contents in turn, recording each request body.
struct Scripted {
    replies: RefCell<Vec<String>>,
    requests: RefCell<Vec<serde_json::Value>>,
}

struct Body(Option<Vec<u8>>);

impl ResponseBody for Body {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        Ok(self.0.take())
    }
}

impl Transport for &Scripted {
    type Body = Body;
    async fn post(&self, request: HttpRequest) -> Result<HttpResponse<Body>, TransportError> {
        self.requests.borrow_mut().push(serde_json::from_str(&request.body).unwrap());
        let content = self.replies.borrow_mut().remove(0);
        let reply = serde_json::json!({"choices": [{"message": {"content": content}}]});
        Ok(HttpResponse {
            status: 200,
            retry_after: None,
            body: Body(Some(reply.to_string().into_bytes())),
        })
    }
    async fn sleep(&self, _: Duration) {}
}

fn scripted(replies: &[&str]) -> Scripted {
    Scripted {
        replies: RefCell::new(replies.iter().map(|r| (*r).to_owned()).collect()),
        requests: RefCell::default(),
    }
}

pub(crate) fn searcher() -> Searcher {
    let options = BuildOptions { corpus: "normans".into(), created: 1, ..Default::default() };
    let mut builder = BundleBuilder::new(options).unwrap();
    builder.embed_with(minilm_boxed());
    builder.add(load("normans.md", &fixture("normans.md")).unwrap());
    let bundle = builder.finish(&mut |_| {}).unwrap();
    Searcher::new(bundle).with_embedder(minilm_boxed()).unwrap()
}

const QUESTION: &str = "Where did the Norse raiders who became the Normans come from?";

#[test]
fn support_tells_a_faithful_sentence_from_an_invented_one() {
    let searcher = searcher();
    assert!(searcher.embedder().is_some_and(|e| e.spec().dimension == 384));
    let answerer = Answerer::new(&searcher, AskOptions::default());
    // Where the retrieval puts the chunk that holds the answer.
    let offline = answerer.extractive(QUESTION).unwrap();
    let source =
        offline.sources.iter().find(|s| s.hit.text.contains("Denmark, Iceland and Norway"));
    let marker = &source.expect("the answer's chunk is retrieved").marker;

    let faithful =
        format!("The Normans descended from raiders from Denmark, Iceland and Norway [{marker}].");
    let invented =
        format!("The Normans were led by Napoleon Bonaparte to conquer Egypt [{marker}].");
    let provider = scripted(&[&invented, &faithful]);
    let client = LlmClient::new(LlmConfig::default(), &provider).unwrap();
    let answer = now(answerer.ask(&client, QUESTION, None)).unwrap();

    // The invented reply drew a stricter retry at temperature 0; the faithful one stands.
    let requests = provider.requests.borrow();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1]["temperature"], 0.0);
    assert_eq!(answer.mode, AnswerMode::Llm);
    assert_eq!(answer.answer, faithful);
    assert!(answer.warnings.iter().any(|w| w.kind == WarningKind::Retried));
    let support = answer.sentences[0].support;
    assert!(support >= 0.5, "faithful support {support}");
    assert_eq!(answer.citations[0].marker, *marker);

    // The same invented sentence, when no retry is left to make, keeps its low score.
    let provider = scripted(&[&invented, &invented]);
    let client = LlmClient::new(LlmConfig::default(), &provider).unwrap();
    let answer = now(answerer.ask(&client, QUESTION, None)).unwrap();
    let low = answer.sentences[0].support;
    assert!(low < 0.5 && low + 0.2 < support, "invented {low} vs faithful {support}");
    assert!(answer.warnings.iter().any(|w| w.kind == WarningKind::LowSupport));
    assert!(answer.confidence < 0.6, "{}", answer.confidence);
}

#[test]
fn uncited_sentences_cite_their_best_source_only_when_it_supports_them() {
    let searcher = searcher();
    let faithful = "The Normans descended from raiders from Denmark, Iceland and Norway.";
    let invented = "They were led by Napoleon Bonaparte to conquer Egypt.";
    let reply = format!("{faithful}\n{invented}");
    let ask = |attribute: bool| {
        let options = AskOptions { attribute, ..AskOptions::default() };
        let answerer = Answerer::new(&searcher, options);
        let provider = scripted(&[&reply, &reply]);
        let client = LlmClient::new(LlmConfig::default(), &provider).unwrap();
        now(answerer.ask(&client, QUESTION, None)).unwrap()
    };

    let plain = ask(false);
    assert!(plain.citations.is_empty());
    assert_eq!(plain.answer, reply);
    let uncited = plain.warnings.iter().filter(|w| w.kind == WarningKind::UncitedSentence);
    assert_eq!(uncited.count(), 2);

    let attributed = ask(true);
    let source =
        attributed.sources.iter().find(|s| s.hit.text.contains("Denmark, Iceland and Norway"));
    let marker = &source.expect("the answer's chunk is retrieved").marker;
    let cited = faithful.replace("Norway.", &format!("Norway [{marker}]."));
    assert_eq!(attributed.answer, format!("{cited}\n{invented}"));
    assert_eq!(attributed.sentences[0].text, cited);
    assert_eq!(attributed.sentences[0].cites, std::slice::from_ref(marker));
    assert!(attributed.sentences[0].support >= 0.5, "{:?}", attributed.sentences[0]);
    assert_eq!(attributed.citations.len(), 1);
    assert_eq!(attributed.citations[0].marker, *marker);
    let kinds: Vec<WarningKind> = attributed.warnings.iter().map(|w| w.kind).collect();
    assert!(kinds.contains(&WarningKind::AttributedCitation), "{kinds:?}");
    // Nothing supports the invented sentence: it stays uncited, and says so.
    assert!(attributed.sentences[1].cites.is_empty());
    assert!(kinds.contains(&WarningKind::UncitedSentence), "{kinds:?}");
}

#[test]
fn off_topic_questions_are_refused_and_on_topic_ones_answered_offline() {
    let searcher = searcher();
    let answerer = Answerer::new(&searcher, AskOptions::default());
    let refused = answerer.extractive("What is the boiling point of liquid nitrogen?").unwrap();
    assert_eq!(refused.mode, AnswerMode::Refused, "relevance {}", refused.relevance);
    let answered = answerer.extractive(QUESTION).unwrap();
    assert_eq!(answered.mode, AnswerMode::Extractive);
    assert!(answered.relevance > refused.relevance + 0.2);
    assert!(answered.answer.contains("Denmark, Iceland and Norway"), "{}", answered.answer);
}

/// How a [`Flaky`] provider answers one request.
enum Turn {
    /// A complete (not streamed) reply with this content.
    Chat(&'static str),
    /// A streamed reply: these pieces of text, then the connection breaks.
    Breaks(&'static [&'static str]),
    /// These pieces of text, then nothing more, ever.
    Stalls(&'static [&'static str]),
    /// No response at all, ever.
    Silent,
}

/// A provider scripted turn by turn whose timer fires as soon as it is awaited: the answer's
/// deadline has always passed by the time a request is left waiting.
struct Flaky {
    turns: RefCell<Vec<Turn>>,
    requests: RefCell<usize>,
}

/// How a [`FlakyBody`] ends.
#[derive(Clone, Copy)]
enum End {
    Done,
    Breaks,
    Stalls,
}

/// A body that yields its pieces, then ends as told.
struct FlakyBody {
    pieces: Vec<Vec<u8>>,
    end: End,
}

impl ResponseBody for FlakyBody {
    async fn chunk(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        if !self.pieces.is_empty() {
            return Ok(Some(self.pieces.remove(0)));
        }
        match self.end {
            End::Done => Ok(None),
            End::Breaks => Err(TransportError::Failed("connection reset".into())),
            End::Stalls => std::future::pending().await,
        }
    }
}

impl Transport for &Flaky {
    type Body = FlakyBody;
    async fn post(&self, _: HttpRequest) -> Result<HttpResponse<FlakyBody>, TransportError> {
        *self.requests.borrow_mut() += 1;
        let turn = self.turns.borrow_mut().remove(0);
        let event = |text: &str| {
            let chunk = serde_json::json!({"choices": [{"delta": {"content": text}}]});
            format!("data: {chunk}\n\n").into_bytes()
        };
        let (pieces, end) = match turn {
            Turn::Chat(content) => {
                let reply = serde_json::json!({"choices": [{"message": {"content": content}}]});
                (vec![reply.to_string().into_bytes()], End::Done)
            }
            Turn::Breaks(pieces) => (pieces.iter().map(|p| event(p)).collect(), End::Breaks),
            Turn::Stalls(pieces) => (pieces.iter().map(|p| event(p)).collect(), End::Stalls),
            Turn::Silent => std::future::pending().await,
        };
        let body = FlakyBody { pieces, end };
        Ok(HttpResponse { status: 200, retry_after: None, body })
    }
    async fn sleep(&self, _: Duration) {}
}

fn flaky(turns: Vec<Turn>) -> Flaky {
    Flaky { turns: RefCell::new(turns), requests: RefCell::default() }
}

fn kinds(answer: &edgerag_core::answer::Answer) -> Vec<WarningKind> {
    answer.warnings.iter().map(|w| w.kind).collect()
}

#[test]
fn a_stream_that_breaks_off_is_discarded_and_the_answer_says_so() {
    let searcher = searcher();
    let answerer = Answerer::new(&searcher, AskOptions::default());
    let provider = flaky(vec![Turn::Breaks(&["The Normans came ", "from"])]);
    let config = LlmConfig { models: vec!["m".into()], ..LlmConfig::default() };
    let client = LlmClient::new(config, &provider).unwrap();
    let mut streamed = String::new();
    let mut on_token = |piece: &str| streamed.push_str(piece);
    let answer = now(answerer.ask(&client, QUESTION, Some(&mut on_token))).unwrap();
    assert_eq!(streamed, "The Normans came from");
    assert_eq!(answer.mode, AnswerMode::Extractive);
    assert!(answer.answer.contains("Denmark, Iceland and Norway"), "{}", answer.answer);
    assert_eq!(kinds(&answer), [WarningKind::LlmFailed, WarningKind::StreamDiscarded]);
    assert!(answer.stream_discarded());
    assert!(answer.warnings[0].message.contains("stream broke"), "{:?}", answer.warnings);
    // Text already shown is never retried (it would be shown twice).
    assert_eq!(*provider.requests.borrow(), 1);
    // Hosts read it from the JSON too.
    let json = serde_json::to_value(&answer).unwrap();
    assert_eq!(json["warnings"][1]["kind"], "stream_discarded");

    // Without streaming, the same failure leaves nothing to discard.
    let provider = flaky(vec![Turn::Breaks(&["The Normans"])]);
    let config = LlmConfig { models: vec!["m".into()], retries: 0, ..LlmConfig::default() };
    let client = LlmClient::new(config, &provider).unwrap();
    let answer = now(answerer.ask(&client, QUESTION, None)).unwrap();
    assert_eq!(kinds(&answer), [WarningKind::LlmFailed]);
    assert!(!answer.stream_discarded());
}

#[test]
fn past_the_deadline_the_answer_is_extractive_whatever_the_llm_is_doing() {
    let searcher = searcher();
    let options = AskOptions { deadline: Duration::from_secs(7), ..AskOptions::default() };
    let answerer = Answerer::new(&searcher, options.clone());
    let client = |provider| LlmClient::new(LlmConfig::default(), provider).unwrap();

    // A server that never answers: one request, then the deadline.
    let provider = flaky(vec![Turn::Silent]);
    let answer = now(answerer.ask(&client(&provider), QUESTION, None)).unwrap();
    assert_eq!(answer.mode, AnswerMode::Extractive);
    assert_eq!(kinds(&answer), [WarningKind::LlmDeadline]);
    assert_eq!(
        answer.warnings[0].message,
        "the LLM was still writing the answer when the deadline of 7 s passed; answered \
         extractively instead"
    );
    assert_eq!(*provider.requests.borrow(), 1);

    // A stream that stalls after some text: discarded too.
    let provider = flaky(vec![Turn::Stalls(&["The Normans"])]);
    let mut streamed = String::new();
    let mut on_token = |piece: &str| streamed.push_str(piece);
    let answer = now(answerer.ask(&client(&provider), QUESTION, Some(&mut on_token))).unwrap();
    assert_eq!(streamed, "The Normans");
    assert_eq!(answer.mode, AnswerMode::Extractive);
    assert_eq!(kinds(&answer), [WarningKind::LlmDeadline, WarningKind::StreamDiscarded]);

    // Keyword choice that never ends.
    let keywords = AskOptions { llm_keywords: true, ..options };
    let provider = flaky(vec![Turn::Silent]);
    let answerer = Answerer::new(&searcher, keywords);
    let answer = now(answerer.ask(&client(&provider), QUESTION, None)).unwrap();
    assert_eq!(answer.mode, AnswerMode::Extractive);
    assert_eq!(kinds(&answer), [WarningKind::LlmDeadline]);
    assert!(answer.warnings[0].message.contains("choosing keywords"), "{:?}", answer.warnings);
}

#[test]
fn a_retry_cut_by_the_deadline_leaves_the_first_reply() {
    let searcher = searcher();
    let answerer = Answerer::new(&searcher, AskOptions::default());
    let invented = "The Normans were led by Napoleon Bonaparte to conquer Egypt [S1].";
    let provider = flaky(vec![Turn::Chat(invented), Turn::Silent]);
    let client = LlmClient::new(LlmConfig::default(), &provider).unwrap();
    let answer = now(answerer.ask(&client, QUESTION, None)).unwrap();
    assert_eq!(*provider.requests.borrow(), 2, "the stricter retry was asked");
    assert_eq!(answer.mode, AnswerMode::Llm);
    assert_eq!(answer.answer, invented);
    let kinds = kinds(&answer);
    assert!(kinds.contains(&WarningKind::LowSupport), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&WarningKind::LlmDeadline), "{kinds:?}");
    assert!(!kinds.contains(&WarningKind::Retried), "{kinds:?}");
}

#[test]
fn a_bundle_read_by_range_answers_as_the_bundle_in_memory() {
    let memory = searcher();
    let bytes = memory.bundle().to_paged_bytes(&Layout::default()).unwrap();
    let lazy = now(LazySearcher::open(InMemory(bytes), DEFAULT_BUDGET)).unwrap();
    let lazy = lazy.with_embedder(minilm_boxed()).unwrap();
    // The keywords offered to an LLM, with and without a model.
    for question in [QUESTION, "Rollo and Charles the Simple", "zyzzyva"] {
        let expected = memory.keyword_candidates(question, 12).unwrap();
        assert_eq!(now(lazy.keyword_candidates(question, 12)).unwrap(), expected, "{question:?}");
    }
    let offered = memory.keyword_candidates(QUESTION, 12).unwrap();
    assert!(offered.iter().any(|c| c.lexical) && offered.iter().any(|c| !c.lexical));
    // An extractive answer, and one written after choosing keywords: the same sources, the
    // same prompts, the same checks.
    let got = extracted(&lazy);
    assert_eq!(got["mode"], "extractive");
    let cited = |field: &str| got[field].as_array().map_or(0, Vec::len);
    assert!(cited("sources") > 0 && cited("citations") > 0, "{got}");
    assert_eq!(got, extracted(&memory));
    let chosen = format!("{{\"keywords\": [{:?}]}}", offered[0].display);
    let got = written(&lazy, &chosen);
    assert_eq!((&got.0["mode"], got.1.len()), (&"llm".into(), 2), "keywords, then the answer");
    assert_eq!(got, written(&memory, &chosen));
}

/// The answer `corpus` gives to [`QUESTION`] without an LLM, as JSON.
fn extracted<C: Corpus>(corpus: &C) -> serde_json::Value {
    let none: Option<&LlmClient<&Scripted>> = None;
    let answerer = Answerer::new(corpus, AskOptions::default());
    serde_json::to_value(now(answerer.answer(none, QUESTION, None)).unwrap()).unwrap()
}

/// The answer `corpus` gives to [`QUESTION`] when the LLM chooses keywords with reply
/// `chosen`, as JSON, and the requests the LLM was sent.
fn written<C: Corpus>(corpus: &C, chosen: &str) -> (serde_json::Value, Vec<serde_json::Value>) {
    let options = AskOptions { llm_keywords: true, ..AskOptions::default() };
    let provider = scripted(&[chosen, "The Normans descended from Norse raiders [S1]."]);
    let client = LlmClient::new(LlmConfig::default(), &provider).unwrap();
    let answer = now(Answerer::new(corpus, options).answer(Some(&client), QUESTION, None));
    (serde_json::to_value(answer.unwrap()).unwrap(), provider.requests.into_inner())
}
