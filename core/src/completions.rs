//! The server side of the chat-completions protocol: edgerag answering as an OpenAI-compatible
//! model, so any OpenAI client can talk to a corpus.
//!
//! A host reads the body into a [`CompletionRequest`], answers its [`question`] from a bundle
//! (the model name chooses the bundle), and replies with [`completion`] or, streaming, a
//! sequence of [`chunk`]s ended by [`DONE`]. The reply's text is the answer with its `[S#]`
//! markers followed by the list of sources they point at ([`with_references`]); the
//! non-streamed reply also carries the whole answer under `edgerag`.
//!
//! A host serving a local model as it is (`edgerag serve --local-model`) generates from the
//! [`CompletionRequest::conversation`] with the request's sampling fields and replies with
//! [`text_completion`] or [`chunk`]s.
//!
//! [`question`]: CompletionRequest::question

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::answer::{Answer, place};
use crate::llm::{Message, Role};
use crate::{Error, Result};

/// The `data:` of the server-sent event that ends a streamed reply.
pub const DONE: &str = "[DONE]";

/// The parts of a `POST /chat/completions` body edgerag uses. Other fields OpenAI clients
/// send (`user`, `n`, tools, …) are accepted and ignored, as are the sampling fields when
/// answering from a bundle.
#[derive(Debug, Clone, Deserialize)]
pub struct CompletionRequest {
    /// The model asked for; a host maps it to a bundle.
    #[serde(default)]
    pub model: Option<String>,
    /// The conversation; the last user message is the question.
    pub messages: Vec<IncomingMessage>,
    /// Whether to stream the reply as server-sent events.
    #[serde(default)]
    pub stream: bool,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Nucleus sampling mass.
    #[serde(default)]
    pub top_p: Option<f32>,
    /// Most tokens to generate (the older name).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Most tokens to generate.
    #[serde(default)]
    pub max_completion_tokens: Option<u32>,
    /// Texts that end the reply: one, or a list.
    #[serde(default)]
    pub stop: Option<Stop>,
    /// Seed of the sampler.
    #[serde(default)]
    pub seed: Option<u64>,
}

/// The `stop` field: one string or several.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    /// One stop sequence.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Stop {
    /// The stop sequences.
    pub fn sequences(&self) -> Vec<String> {
        match self {
            Stop::One(one) => vec![one.clone()],
            Stop::Many(many) => many.clone(),
        }
    }
}

/// A message of the conversation.
#[derive(Debug, Clone, Deserialize)]
pub struct IncomingMessage {
    /// `system`, `user`, `assistant`, `tool`, …
    pub role: String,
    /// Its text, as a string or as content parts.
    #[serde(default)]
    pub content: Option<Content>,
}

/// A message's content: a string, or parts of which the `text` ones count.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Content {
    /// Plain text.
    Text(String),
    /// Content parts (`{"type": "text", "text": …}`, images, …).
    Parts(Vec<Value>),
}

impl Content {
    /// The text of the content: the string, or the `text` parts joined by newlines.
    pub fn text(&self) -> String {
        match self {
            Content::Text(text) => text.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter(|part| part.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|part| part.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

impl CompletionRequest {
    /// The question: the text of the last `user` message.
    ///
    /// # Errors
    /// [`Error::Query`] when there is no user message or it has no text.
    pub fn question(&self) -> Result<String> {
        let last = self.messages.iter().rev().find(|m| m.role == "user").ok_or_else(|| {
            Error::Query("messages: no message with the role \"user\"".to_owned())
        })?;
        let text = last.content.as_ref().map(Content::text).unwrap_or_default();
        if text.trim().is_empty() {
            return Err(Error::Query("messages: the last user message has no text".to_owned()));
        }
        Ok(text)
    }

    /// The conversation as chat messages (`developer` counts as `system`).
    ///
    /// # Errors
    /// [`Error::Query`] when it is empty or has a role other than system, developer, user or
    /// assistant.
    pub fn conversation(&self) -> Result<Vec<Message>> {
        if self.messages.is_empty() {
            return Err(Error::Query("messages: the conversation is empty".to_owned()));
        }
        self.messages
            .iter()
            .map(|m| {
                let role = match m.role.as_str() {
                    "system" | "developer" => Role::System,
                    "user" => Role::User,
                    "assistant" => Role::Assistant,
                    other => {
                        return Err(Error::Query(format!(
                            "messages: the role {other:?} is not supported (system, developer, \
                             user, assistant)"
                        )));
                    }
                };
                let content = m.content.as_ref().map(Content::text).unwrap_or_default();
                Ok(Message { role, content })
            })
            .collect()
    }

    /// The most tokens to generate the request asks for.
    pub fn token_limit(&self) -> Option<u32> {
        self.max_completion_tokens.or(self.max_tokens)
    }

    /// `defaults` with the sampling fields the request sets.
    #[cfg(feature = "generate")]
    pub fn generate_options(
        &self,
        defaults: &crate::generate::GenerateOptions,
    ) -> crate::generate::GenerateOptions {
        crate::generate::GenerateOptions {
            max_tokens: self.token_limit().unwrap_or(defaults.max_tokens),
            temperature: self.temperature.unwrap_or(defaults.temperature),
            top_p: self.top_p.or(defaults.top_p),
            seed: self.seed.unwrap_or(defaults.seed),
            stop: self.stop.as_ref().map_or_else(|| defaults.stop.clone(), Stop::sequences),
            ..defaults.clone()
        }
    }
}

/// A complete `chat.completion` reply with generated `text`, ended for `finish_reason`
/// (`stop` or `length`), with its token counts.
pub fn text_completion(
    id: &str,
    model: &str,
    created: u64,
    text: &str,
    finish_reason: &str,
    (prompt_tokens, completion_tokens): (usize, usize),
) -> Value {
    json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": finish_reason,
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    })
}

/// The answer's text followed by the sources its markers point at, one per line
/// (`[S1] Title › Section (p. 3)`), or the text alone when it cites none.
pub fn with_references(answer: &Answer) -> String {
    let mut text = answer.answer.clone();
    let cited: Vec<_> = answer
        .citations
        .iter()
        .filter_map(|c| answer.sources.iter().find(|s| s.marker == c.marker))
        .collect();
    if !cited.is_empty() {
        text.push_str("\n\nSources:");
        for source in cited {
            let place = place(&source.hit.title, &source.hit.section, source.hit.page);
            text.push_str(&format!("\n[{}] {place}", source.marker));
        }
    }
    text
}

/// What a streamed reply still owes a client that has seen `streamed` of it, once `answer`
/// is final: the whole text when nothing streamed (an extractive answer), the sources when
/// the stream was the answer, the answer again, marked as revised, when the stricter retry
/// replaced what streamed, and, marked as such, the answer made without the reply when the
/// stream broke off ([`Answer::stream_discarded`]).
pub fn unseen(answer: &Answer, streamed: &str) -> String {
    let full = with_references(answer);
    if streamed.is_empty() {
        full
    } else if answer.stream_discarded() {
        format!("\n\n({STREAM_DISCARDED})\n{full}")
    } else if streamed == answer.answer {
        full.get(answer.answer.len()..).unwrap_or_default().to_owned()
    } else {
        format!("\n\n(Revised answer)\n{full}")
    }
}

/// Said after a streamed reply that broke off, before the answer that replaces it.
pub const STREAM_DISCARDED: &str =
    "The reply above broke off and is discarded. Answer extracted from the sources:";

/// A complete `chat.completion` reply to `model` with the answer (see [`with_references`]);
/// the whole answer, as `edgerag ask --json` prints it, is under `edgerag`.
pub fn completion<'a>(
    answer: &'a Answer,
    id: &'a str,
    model: &'a str,
    created: u64,
) -> Completion<'a> {
    Completion {
        id,
        object: "chat.completion",
        created,
        model,
        choices: [CompletionChoice {
            index: 0,
            message: ReplyMessage { role: Role::Assistant, content: with_references(answer) },
            finish_reason: "stop",
        }],
        edgerag: answer,
    }
}

/// A `chat.completion` reply (typed, so the answer's numbers print as `edgerag ask --json`
/// prints them).
#[derive(Debug, Clone, Serialize)]
pub struct Completion<'a> {
    /// The reply's id.
    pub id: &'a str,
    /// Always `chat.completion`.
    pub object: &'static str,
    /// Unix seconds.
    pub created: u64,
    /// The model (bundle) that answered.
    pub model: &'a str,
    /// The one reply.
    pub choices: [CompletionChoice; 1],
    /// The whole answer.
    pub edgerag: &'a Answer,
}

/// The reply of a [`Completion`].
#[derive(Debug, Clone, Serialize)]
pub struct CompletionChoice {
    /// Always 0.
    pub index: u32,
    /// The assistant's message.
    pub message: ReplyMessage,
    /// Always `stop`.
    pub finish_reason: &'static str,
}

/// The assistant's message of a [`Completion`].
#[derive(Debug, Clone, Serialize)]
pub struct ReplyMessage {
    /// Always the assistant.
    pub role: Role,
    /// The answer with its sources.
    pub content: String,
}

/// One `chat.completion.chunk` of a streamed reply: new `content`, or (with `finish`, the
/// reason: `stop` or `length`) the end of the reply. The first chunk of a reply should carry
/// the role: pass `Some("")`.
pub fn chunk(
    id: &str,
    model: &str,
    created: u64,
    content: Option<&str>,
    finish: Option<&str>,
) -> Value {
    let delta = match content {
        Some("") => json!({"role": "assistant", "content": ""}),
        Some(text) => json!({"content": text}),
        None => json!({}),
    };
    json!({
        "id": id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "delta": delta,
            "finish_reason": finish,
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::{AnswerMode, Citation, Source};
    use crate::query::Hit;

    fn request(json: &str) -> CompletionRequest {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn the_question_is_the_last_user_message_in_either_content_form() {
        let plain = request(
            r#"{"model": "demo", "temperature": 0.2, "user": "x", "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "First?"},
                {"role": "assistant", "content": "Yes."},
                {"role": "user", "content": "Who was Rollo?"}]}"#,
        );
        assert_eq!(plain.question().unwrap(), "Who was Rollo?");
        assert_eq!(plain.model.as_deref(), Some("demo"));
        assert!(!plain.stream);
        let parts = request(
            r#"{"stream": true, "messages": [{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "x"}},
                {"type": "text", "text": "Who was"}, {"type": "text", "text": "Rollo?"}]}]}"#,
        );
        assert_eq!(parts.question().unwrap(), "Who was\nRollo?");
        assert!(parts.stream);
        for bad in [
            r#"{"messages": []}"#,
            r#"{"messages": [{"role": "system", "content": "hi"}]}"#,
            r#"{"messages": [{"role": "user", "content": "  "}]}"#,
            r#"{"messages": [{"role": "user"}]}"#,
        ] {
            assert!(matches!(request(bad).question(), Err(Error::Query(_))), "{bad}");
        }
        assert!(serde_json::from_str::<CompletionRequest>(r#"{"model": "x"}"#).is_err());
    }

    fn answer() -> Answer {
        let source = |marker: &str, title: &str, page| Source {
            marker: marker.into(),
            hit: Hit {
                rank: 1,
                chunk: 0,
                chunk_id: format!("id-{marker}"),
                document: "doc.md".into(),
                title: title.into(),
                page,
                section: vec![title.into(), "History".into()],
                score: 0.5,
                text: "Rollo led the Vikings.".into(),
                explain: None,
            },
        };
        Answer {
            answer: "Rollo led them [S2].".into(),
            mode: AnswerMode::Extractive,
            model: None,
            citations: vec![Citation {
                marker: "S2".into(),
                chunk_id: "id-S2".into(),
                document: "doc.md".into(),
                page: Some(4),
            }],
            sources: vec![source("S1", "Paris", None), source("S2", "Normans", Some(4))],
            sentences: Vec::new(),
            warnings: Vec::new(),
            relevance: 0.9,
            confidence: 0.8,
            keywords: None,
        }
    }

    #[test]
    fn replies_list_only_the_cited_sources_and_carry_the_answer() {
        let answer = answer();
        let text = with_references(&answer);
        assert_eq!(text, "Rollo led them [S2].\n\nSources:\n[S2] Normans › History (p. 4)");
        let reply = serde_json::to_value(completion(&answer, "chatcmpl-1", "demo", 7)).unwrap();
        assert_eq!(reply["object"], "chat.completion");
        assert_eq!(reply["choices"][0]["message"]["content"], text.as_str());
        assert_eq!(reply["edgerag"]["citations"][0]["chunk_id"], "id-S2");
        assert_eq!(reply["choices"][0]["message"]["role"], "assistant");
        assert_eq!(reply["choices"][0]["finish_reason"], "stop");
        assert_eq!(unseen(&answer, ""), text);
        let json = serde_json::to_string(&completion(&answer, "c", "demo", 7)).unwrap();
        assert!(json.contains(r#""relevance":0.9,"#), "the answer's f32s are widened: {json}");
        assert_eq!(unseen(&answer, &answer.answer), "\n\nSources:\n[S2] Normans › History (p. 4)");
        assert!(unseen(&answer, "Rollo led").starts_with("\n\n(Revised answer)\nRollo led them"));
        let mut cut = answer.clone();
        cut.warnings.push(crate::answer::Warning {
            kind: crate::answer::WarningKind::StreamDiscarded,
            message: "cut".into(),
        });
        assert!(unseen(&cut, "Rollo le").starts_with(&format!("\n\n({STREAM_DISCARDED})\nRollo")));
        let uncited = Answer { citations: Vec::new(), ..answer };
        assert_eq!(with_references(&uncited), "Rollo led them [S2].");

        let first = chunk("c", "demo", 7, Some(""), None);
        assert_eq!(first["choices"][0]["delta"]["role"], "assistant");
        assert!(first["choices"][0]["finish_reason"].is_null());
        let text = chunk("c", "demo", 7, Some("Rollo"), None);
        assert_eq!(text["choices"][0]["delta"], json!({"content": "Rollo"}));
        let last = chunk("c", "demo", 7, None, Some("stop"));
        assert_eq!(last["choices"][0]["finish_reason"], "stop");
        assert_eq!(last["object"], "chat.completion.chunk");
    }
}
