//! The OpenAI chat-completions wire format: the parts edgerag sends and reads.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions.
    System,
    /// The question and its context.
    User,
    /// The model's reply.
    Assistant,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Author.
    pub role: Role,
    /// Text.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: Role::System, content: content.into() }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: Role::User, content: content.into() }
    }
}

/// Body of `POST /chat/completions`.
#[derive(Debug, Clone, Serialize)]
pub struct ChatRequest<'a> {
    /// Model id.
    pub model: &'a str,
    /// The conversation.
    pub messages: &'a [Message],
    /// Sampling temperature.
    pub temperature: f32,
    /// Most tokens to generate.
    pub max_tokens: u32,
    /// Whether to stream the reply as server-sent events.
    pub stream: bool,
}

/// A complete (non-streamed) reply.
#[derive(Debug, Clone, Deserialize)]
pub struct ChatResponse {
    /// The model that answered, as the provider names it.
    #[serde(default)]
    pub model: Option<String>,
    /// Candidate replies (edgerag asks for one).
    pub choices: Vec<Choice>,
}

/// One candidate of a complete reply.
#[derive(Debug, Clone, Deserialize)]
pub struct Choice {
    /// The reply.
    pub message: ReplyMessage,
}

/// The reply's message.
#[derive(Debug, Clone, Deserialize)]
pub struct ReplyMessage {
    /// Text (absent for tool calls, which edgerag does not use).
    #[serde(default)]
    pub content: Option<String>,
}

/// One server-sent event of a streamed reply.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamChunk {
    /// Increments, one per candidate.
    #[serde(default)]
    pub choices: Vec<StreamChoice>,
    /// Set when the provider reports an error mid-stream.
    #[serde(default)]
    pub error: Option<ErrorDetail>,
}

/// One candidate's increment.
#[derive(Debug, Clone, Deserialize)]
pub struct StreamChoice {
    /// The new text.
    #[serde(default)]
    pub delta: Delta,
    /// Why the reply ended (`stop`, `length`, …), in its last increment.
    #[serde(default)]
    pub finish_reason: Option<String>,
}

/// New text of a streamed reply.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Delta {
    /// Text, absent in role-only or final events.
    #[serde(default)]
    pub content: Option<String>,
}

/// Body of an error response.
#[derive(Debug, Clone, Deserialize)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorDetail,
}

/// The provider's description of an error.
#[derive(Debug, Clone, Deserialize)]
pub struct ErrorDetail {
    /// Message for people.
    #[serde(default)]
    pub message: String,
}

/// The provider's message in an error response body: `error.message` when the body is the
/// usual JSON, else the body itself; either on one line and shortened to 300 characters.
pub fn error_message(body: &str) -> String {
    match serde_json::from_str::<ErrorBody>(body) {
        Ok(parsed) if !parsed.error.message.is_empty() => flat(&parsed.error.message),
        _ => flat(body),
    }
}

/// A provider's text on one line (each run of whitespace one space, control characters
/// escaped) and shortened to 300 characters; "no message" when blank.
pub(crate) fn flat(text: &str) -> String {
    let flat = crate::one_line(&text.split_whitespace().collect::<Vec<_>>().join(" "));
    match flat.char_indices().nth(300) {
        Some((cut, _)) => format!("{} …", &flat[..cut]),
        None if flat.is_empty() => "no message".to_owned(),
        None => flat,
    }
}

/// The first JSON object or array in `text`: models wrap JSON in code fences or prose.
pub fn first_json(text: &str) -> Option<serde_json::Value> {
    text.char_indices().filter(|(_, c)| *c == '{' || *c == '[').find_map(|(start, _)| {
        let mut values =
            serde_json::Deserializer::from_str(&text[start..]).into_iter::<serde_json::Value>();
        match values.next() {
            Some(Ok(value)) if value.is_object() || value.is_array() => Some(value),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_messages_come_from_the_json_or_the_raw_body() {
        let body = r#"{"error":{"message":"Invalid API Key","type":"invalid_request_error"}}"#;
        assert_eq!(error_message(body), "Invalid API Key");
        assert_eq!(error_message("upstream\n connect error"), "upstream connect error");
        assert_eq!(error_message(""), "no message");
        assert!(error_message(&"x".repeat(1000)).ends_with(" …"));
        // The provider's JSON message too stays on one line, its control characters escaped.
        let body = r#"{"error": {"message": "bad\nkey\u001b[31m"}}"#;
        assert_eq!(error_message(body), "bad key\\u{1b}[31m");
    }

    #[test]
    fn requests_serialise_as_the_api_expects() -> serde_json::Result<()> {
        let messages = [Message::system("rules"), Message::user("question")];
        let request = ChatRequest {
            model: "m",
            messages: &messages,
            temperature: 0.1,
            max_tokens: 64,
            stream: true,
        };
        let json: serde_json::Value = serde_json::to_value(&request)?;
        assert_eq!(json["messages"][0]["role"], "system");
        assert_eq!(json["messages"][1]["content"], "question");
        assert_eq!(json["stream"], true);
        assert_eq!(json["max_tokens"], 64);
        Ok(())
    }
}
