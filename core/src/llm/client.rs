//! The chat client: one request, retried and passed down the model list as the module docs
//! describe.

use std::time::Duration;

use super::protocol::{self, ChatRequest, ChatResponse, Message, StreamChunk};
use super::sse::SseDecoder;
use super::{HttpRequest, LlmConfig, MAX_REPLY_BYTES, ResponseBody, Transport, TransportError};
use crate::{Error, Result};

/// A reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// The reply's text.
    pub text: String,
    /// The model of [`LlmConfig::models`] that gave it.
    pub model: String,
    /// Models that failed before it, each with why (`"m: HTTP 503: overloaded"`).
    pub failed: Vec<String>,
}

/// A chat-completions client over a host's [`Transport`].
#[derive(Debug)]
pub struct LlmClient<T> {
    config: LlmConfig,
    transport: T,
}

/// How one attempt failed.
enum Failure {
    /// Worth retrying (after the provider's `Retry-After`, if it gave one).
    Transient { reason: String, retry_after: Option<Duration> },
    /// Final: retrying cannot help.
    Fatal(Error),
}

impl<T: Transport> LlmClient<T> {
    /// A client for `config`, sending through `transport`.
    ///
    /// # Errors
    /// [`Error::Config`] when `config` is invalid ([`LlmConfig::validate`]).
    pub fn new(config: LlmConfig, transport: T) -> Result<Self> {
        config.validate()?;
        Ok(Self { config, transport })
    }

    /// The configuration.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    /// The host's transport.
    pub fn transport(&self) -> &T {
        &self.transport
    }

    /// Sends `messages` and returns the reply. With `on_token`, the reply is streamed and each
    /// piece of text is passed to it as it arrives.
    ///
    /// # Errors
    /// [`Error::LlmRejected`] for a 4xx other than 429; [`Error::LlmUnavailable`] when every
    /// model failed transiently; [`Error::LlmResponse`] for a reply that breaks the protocol,
    /// or a stream that breaks after text was already passed on.
    pub async fn chat(
        &self,
        messages: &[Message],
        temperature: f32,
        mut on_token: Option<&mut dyn FnMut(&str)>,
    ) -> Result<Completion> {
        let mut failed = Vec::new();
        for model in self.config.models.iter().filter(|m| !m.trim().is_empty()) {
            let mut attempt = 0;
            let reason = loop {
                match self.attempt(model, messages, temperature, on_token.as_deref_mut()).await {
                    Ok(text) => {
                        return Ok(Completion { text, model: model.clone(), failed });
                    }
                    Err(Failure::Fatal(error)) => return Err(error),
                    Err(Failure::Transient { reason, retry_after }) => {
                        let wait = retry_after.unwrap_or_else(|| {
                            self.config.backoff.saturating_mul(2u32.saturating_pow(attempt))
                        });
                        if attempt >= self.config.retries || wait > self.config.max_wait {
                            break reason;
                        }
                        self.transport.sleep(wait).await;
                        attempt += 1;
                    }
                }
            };
            failed.push(format!("{model}: {reason}"));
        }
        Err(Error::LlmUnavailable(failed.join("; ")))
    }

    /// One request to `model`; the reply's text.
    async fn attempt(
        &self,
        model: &str,
        messages: &[Message],
        temperature: f32,
        on_token: Option<&mut (dyn FnMut(&str) + '_)>,
    ) -> std::result::Result<String, Failure> {
        let stream = on_token.is_some();
        let body = ChatRequest {
            model,
            messages,
            temperature,
            max_tokens: self.config.max_tokens,
            stream,
        };
        let body = serde_json::to_string(&body)
            .map_err(|e| Failure::Fatal(Error::Config(format!("unencodable request: {e}"))))?;
        let mut headers = vec![("Content-Type".to_owned(), "application/json".to_owned())];
        if stream {
            headers.push(("Accept".to_owned(), "text/event-stream".to_owned()));
        }
        if let Some(key) = &self.config.api_key {
            headers.push(("Authorization".to_owned(), format!("Bearer {}", key.expose())));
        }
        let request = HttpRequest {
            url: self.config.endpoint(),
            headers,
            body,
            timeout: self.config.timeout,
        };
        let response = self.transport.post(request).await.map_err(|e| self.transient(&e))?;
        let mut body = response.body;
        if response.status != 200 {
            let (text, _) = read_all(&mut body).await.unwrap_or_default();
            let message = self.scrub(&protocol::error_message(&text));
            let reason = format!("HTTP {}: {message}", response.status);
            return Err(match response.status {
                429 | 500..=599 => Failure::Transient {
                    reason,
                    retry_after: response.retry_after.as_deref().and_then(parse_retry_after),
                },
                status => {
                    Failure::Fatal(Error::LlmRejected { model: model.to_owned(), status, message })
                }
            });
        }
        match on_token {
            Some(on_token) => self.read_stream(model, &mut body, on_token).await,
            None => {
                let (text, whole) = read_all(&mut body).await.map_err(|e| self.transient(&e))?;
                if !whole {
                    return Err(Failure::Fatal(self.bad_reply(model, &too_large())));
                }
                self.reply_text(model, &text)
            }
        }
    }

    /// Reads a streamed reply, passing on each piece of text. A provider that answers a
    /// streaming request with one JSON reply is understood too.
    async fn read_stream<B: ResponseBody>(
        &self,
        model: &str,
        body: &mut B,
        on_token: &mut (dyn FnMut(&str) + '_),
    ) -> std::result::Result<String, Failure> {
        let mut decoder = SseDecoder::new();
        let (mut text, mut raw, mut events_seen) = (String::new(), Vec::new(), false);
        // A complete stream ends with `[DONE]` or says why its reply finished; one that just
        // stops was cut.
        let mut finished = false;
        let mut received = 0usize;
        loop {
            let piece = match body.chunk().await {
                Ok(piece) => piece,
                // Text already shown cannot be taken back: a retry would repeat it.
                Err(e) if !text.is_empty() => {
                    return Err(Failure::Fatal(
                        self.bad_reply(model, &format!("stream broke: {e}")),
                    ));
                }
                Err(e) => return Err(self.transient(&e)),
            };
            let events = match &piece {
                Some(bytes) => {
                    received = received.saturating_add(bytes.len());
                    if received > MAX_REPLY_BYTES {
                        return Err(Failure::Fatal(self.bad_reply(model, &too_large())));
                    }
                    if !events_seen {
                        raw.extend_from_slice(bytes);
                    }
                    decoder.feed(bytes)
                }
                None => decoder.finish(),
            };
            for event in events {
                events_seen = true;
                if event.trim() == "[DONE]" {
                    return Ok(text);
                }
                let chunk: StreamChunk = serde_json::from_str(&event)
                    .map_err(|e| Failure::Fatal(self.bad_reply(model, &format!("event: {e}"))))?;
                if let Some(error) = chunk.error {
                    let message = self.scrub(&protocol::flat(&error.message));
                    return Err(Failure::Fatal(self.bad_reply(model, &message)));
                }
                for choice in chunk.choices.iter().take(1) {
                    if let Some(delta) = choice.delta.content.as_deref().filter(|d| !d.is_empty()) {
                        on_token(delta);
                        text.push_str(delta);
                    }
                    finished |= choice.finish_reason.is_some();
                }
            }
            if piece.is_none() {
                return match (events_seen, finished) {
                    (false, _) => self.reply_text(model, &String::from_utf8_lossy(&raw)),
                    (true, true) => Ok(text),
                    // Nothing shown yet: another attempt may get the whole reply.
                    (true, false) if text.is_empty() => Err(Failure::Transient {
                        reason: "the stream ended before the reply".to_owned(),
                        retry_after: None,
                    }),
                    (true, false) => Err(Failure::Fatal(self.bad_reply(
                        model,
                        "the stream ended before the reply was complete (no [DONE])",
                    ))),
                };
            }
        }
    }

    /// The text of a complete JSON reply.
    fn reply_text(&self, model: &str, body: &str) -> std::result::Result<String, Failure> {
        let reply: ChatResponse = serde_json::from_str(body).map_err(|e| {
            Failure::Fatal(self.bad_reply(model, &format!("not a chat reply: {e}")))
        })?;
        reply
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .ok_or_else(|| Failure::Fatal(self.bad_reply(model, "the reply holds no text")))
    }

    fn bad_reply(&self, model: &str, message: &str) -> Error {
        Error::LlmResponse { model: model.to_owned(), message: self.scrub(message) }
    }

    fn transient(&self, error: &TransportError) -> Failure {
        let reason = match error {
            TransportError::Timeout => {
                format!("timed out after {}", seconds(self.config.timeout))
            }
            TransportError::Failed(message) => self.scrub(message),
        };
        Failure::Transient { reason, retry_after: None }
    }

    fn scrub(&self, text: &str) -> String {
        match &self.config.api_key {
            Some(key) => key.scrub(text),
            None => text.to_owned(),
        }
    }
}

/// The body as text, and whether it is whole: reading stops past [`MAX_REPLY_BYTES`].
async fn read_all<B: ResponseBody>(
    body: &mut B,
) -> std::result::Result<(String, bool), TransportError> {
    let mut bytes = Vec::new();
    while let Some(piece) = body.chunk().await? {
        if bytes.len().saturating_add(piece.len()) > MAX_REPLY_BYTES {
            return Ok((String::from_utf8_lossy(&bytes).into_owned(), false));
        }
        bytes.extend_from_slice(&piece);
    }
    Ok((String::from_utf8_lossy(&bytes).into_owned(), true))
}

/// Why a reply past [`MAX_REPLY_BYTES`] is refused.
fn too_large() -> String {
    format!("the reply is larger than the {} limit", crate::limits::size(MAX_REPLY_BYTES))
}

/// A `Retry-After` given in seconds (the HTTP-date form is left to the backoff).
fn parse_retry_after(value: &str) -> Option<Duration> {
    let seconds: f64 = value.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// `1.5 s`, `30 s`.
/// A duration as people read it in messages: `2.5 s`.
pub(crate) fn seconds(duration: Duration) -> String {
    format!("{} s", duration.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::VecDeque;

    use super::super::{ApiKey, HttpResponse};
    use super::*;

    /// A scripted reply: status, `Retry-After` and body pieces, or a transport failure.
    type Reply =
        std::result::Result<(u16, Option<&'static str>, Vec<&'static str>), TransportError>;

    /// A scripted provider: each request takes the next reply; waits are recorded, not slept.
    #[derive(Default)]
    struct Script {
        replies: RefCell<VecDeque<Reply>>,
        models: RefCell<Vec<String>>,
        waits: RefCell<Vec<Duration>>,
        headers: RefCell<Vec<Vec<(String, String)>>>,
    }

    struct Body(VecDeque<&'static str>);

    impl ResponseBody for Body {
        async fn chunk(&mut self) -> std::result::Result<Option<Vec<u8>>, TransportError> {
            Ok(self.0.pop_front().map(|s| s.as_bytes().to_vec()))
        }
    }

    impl Transport for &Script {
        type Body = Body;
        async fn post(
            &self,
            request: HttpRequest,
        ) -> std::result::Result<HttpResponse<Body>, TransportError> {
            let json: serde_json::Value = serde_json::from_str(&request.body)
                .map_err(|e| TransportError::Failed(e.to_string()))?;
            self.models.borrow_mut().push(json["model"].as_str().unwrap_or_default().to_owned());
            self.headers.borrow_mut().push(request.headers);
            let (status, retry_after, body) =
                self.replies.borrow_mut().pop_front().expect("a scripted reply")?;
            Ok(HttpResponse {
                status,
                retry_after: retry_after.map(str::to_owned),
                body: Body(body.into_iter().collect()),
            })
        }
        async fn sleep(&self, duration: Duration) {
            self.waits.borrow_mut().push(duration);
        }
    }

    fn script(replies: Vec<Reply>) -> Script {
        Script { replies: RefCell::new(replies.into()), ..Script::default() }
    }

    fn config() -> LlmConfig {
        LlmConfig {
            models: vec!["big".into(), "small".into()],
            api_key: ApiKey::new("sk-secret-123"),
            ..LlmConfig::default()
        }
    }

    const OK: &str =
        r#"{"model":"big","choices":[{"message":{"role":"assistant","content":"Paris [S1]."}}]}"#;

    fn run<F: std::future::Future>(future: F) -> F::Output {
        // Scripted transports never wait, so one poll completes the future.
        let mut future = std::pin::pin!(future);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(output) => output,
            std::task::Poll::Pending => panic!("a scripted exchange never waits"),
        }
    }

    #[test]
    fn a_reply_is_read_and_the_key_is_sent_as_a_bearer_token() {
        let s = script(vec![Ok((200, None, vec![OK]))]);
        let client = LlmClient::new(config(), &s).unwrap();
        let reply = run(client.chat(&[Message::user("q")], 0.1, None)).unwrap();
        assert_eq!(
            reply,
            Completion { text: "Paris [S1].".into(), model: "big".into(), failed: vec![] }
        );
        let headers = s.headers.borrow();
        assert!(headers[0].contains(&("Authorization".into(), "Bearer sk-secret-123".into())));
    }

    #[test]
    fn rate_limits_wait_as_told_then_backoff_doubles_then_the_next_model_answers() {
        let s = script(vec![
            Ok((429, Some("3"), vec![r#"{"error":{"message":"slow down"}}"#])),
            Ok((503, None, vec!["overloaded"])),
            Ok((500, None, vec![])),
            Ok((200, None, vec![OK])),
        ]);
        let client = LlmClient::new(config(), &s).unwrap();
        let reply = run(client.chat(&[Message::user("q")], 0.1, None)).unwrap();
        assert_eq!(reply.model, "small");
        assert_eq!(reply.failed, ["big: HTTP 500: no message"]);
        assert_eq!(*s.models.borrow(), ["big", "big", "big", "small"]);
        let waits = s.waits.borrow();
        assert_eq!(*waits, [Duration::from_secs(3), Duration::from_secs(1)]);
    }

    #[test]
    fn client_errors_fail_at_once_with_the_provider_message_and_no_key() {
        let s = script(vec![Ok((
            401,
            None,
            vec![r#"{"error":{"message":"Invalid API Key: sk-secret-123"}}"#],
        ))]);
        let client = LlmClient::new(config(), &s).unwrap();
        let error = run(client.chat(&[Message::user("q")], 0.1, None)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the LLM provider rejected the request to big (HTTP 401): Invalid API Key: [redacted]"
        );
        assert_eq!(s.models.borrow().len(), 1);
        assert!(!format!("{:?}", client.config()).contains("sk-secret"));
    }

    #[test]
    fn streams_pass_on_each_piece_and_stop_at_done() {
        let s = script(vec![Ok((
            200,
            None,
            vec![
                "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\nda",
                "ta: {\"choices\":[{\"delta\":{\"content\":\"Par\"}}]}\n\n",
                "data: {\"choices\":[{\"delta\":{\"content\":\"is\"}}]}\n\ndata: [DONE]\n\n",
            ],
        ))]);
        let client = LlmClient::new(config(), &s).unwrap();
        let mut pieces = Vec::new();
        let mut sink = |t: &str| pieces.push(t.to_owned());
        let reply = run(client.chat(&[Message::user("q")], 0.1, Some(&mut sink))).unwrap();
        assert_eq!(reply.text, "Paris");
        assert_eq!(pieces, ["Par", "is"]);
    }

    #[test]
    fn a_model_name_that_would_break_messages_over_lines_is_refused() {
        let config = LlmConfig { models: vec!["llama\nfake".into()], ..config() };
        let error = LlmClient::new(config, &Script::default()).err().map(|e| e.to_string());
        let error = error.expect("refused");
        assert!(error.contains(r#"(got "llama\nfake")"#) && !error.contains('\n'), "{error}");
    }

    #[test]
    fn a_reply_past_the_size_limit_is_refused_not_held() {
        let mebibyte: &'static str = "x".repeat(1 << 20).leak();
        let many = vec![mebibyte; MAX_REPLY_BYTES / mebibyte.len() + 1];
        let streamed = "data: {\"choices\":[{\"delta\":{\"content\":\"";
        for (pieces, stream) in [(many.clone(), false), ([vec![streamed], many].concat(), true)] {
            let s = script(vec![Ok((200, None, pieces))]);
            let client = LlmClient::new(config(), &s).unwrap();
            let mut sink = |_: &str| {};
            let on_token: Option<&mut dyn FnMut(&str)> =
                if stream { Some(&mut sink) } else { None };
            let error = run(client.chat(&[Message::user("q")], 0.1, on_token)).unwrap_err();
            assert_eq!(
                error.to_string(),
                "unexpected reply from the LLM (big): the reply is larger than the 8 MiB limit",
                "stream: {stream}"
            );
        }
    }

    #[test]
    fn a_stream_that_stops_without_finishing_is_cut() {
        let event = |text: &str| {
            format!("data: {{\"choices\":[{{\"delta\":{{\"content\":\"{text}\"}}}}]}}\n\n")
        };
        let started: &'static str = event("Par").leak();
        // Cut after some text: an error (the text was shown), never a short answer.
        let s = script(vec![Ok((200, None, vec![started]))]);
        let client = LlmClient::new(config(), &s).unwrap();
        let mut pieces = Vec::new();
        let mut sink = |t: &str| pieces.push(t.to_owned());
        let error = run(client.chat(&[Message::user("q")], 0.1, Some(&mut sink))).unwrap_err();
        assert!(matches!(error, Error::LlmResponse { .. }), "{error}");
        assert!(error.to_string().contains("ended before the reply was complete"), "{error}");
        assert_eq!(pieces, ["Par"]);
        // Cut before any text: retried. A finish reason ends a stream without `[DONE]`.
        let finished =
            "data: {\"choices\":[{\"delta\":{\"content\":\"is\"},\"finish_reason\":\"stop\"}]}\n\n";
        let role = "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n";
        let s = script(vec![Ok((200, None, vec![role])), Ok((200, None, vec![started, finished]))]);
        let client = LlmClient::new(config(), &s).unwrap();
        let mut sink = |_: &str| {};
        let reply = run(client.chat(&[Message::user("q")], 0.1, Some(&mut sink))).unwrap();
        assert_eq!(reply.text, "Paris");
        assert_eq!(*s.models.borrow(), ["big", "big"]);
    }

    #[test]
    fn timeouts_and_long_retry_afters_move_on_and_all_failures_are_named() {
        let config = LlmConfig { retries: 1, ..config() };
        let s = script(vec![
            Err(TransportError::Timeout),
            Err(TransportError::Timeout),
            Ok((429, Some("600"), vec![])),
        ]);
        let client = LlmClient::new(config, &s).unwrap();
        let error = run(client.chat(&[Message::user("q")], 0.1, None)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no LLM answered: big: timed out after 60 s; small: HTTP 429: no message"
        );
        assert_eq!(*s.waits.borrow(), [Duration::from_millis(500)]);
    }

    #[test]
    fn malformed_replies_are_errors_not_panics() {
        let s = script(vec![Ok((200, None, vec!["<html>gateway</html>"]))]);
        let client = LlmClient::new(config(), &s).unwrap();
        let error = run(client.chat(&[Message::user("q")], 0.1, None)).unwrap_err();
        assert!(matches!(error, Error::LlmResponse { .. }), "{error}");
    }
}
