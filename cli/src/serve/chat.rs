//! The local chat model over the OpenAI protocol: `GET /v1/models` and
//! `POST /v1/chat/completions` (streamed as server-sent events, or not), so any OpenAI client
//! — edgerag's own `ask --llm-base-url` included — can use it. One reply is generated at a
//! time; up to [`WAITING`] more requests wait for the model, and past that a request gets 503
//! with `Retry-After` rather than holding one of the server's threads in the queue.

use std::cell::Cell;
use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use edgerag_core::completions::{self, CompletionRequest, DONE};
use edgerag_core::generate::{Finish, GenerateOptions, LocalModel};
use edgerag_core::llm::Message;
use edgerag_core::llm::sse;
use serde_json::{Value, json};

use super::http::{self, Incoming, Reply};

/// Requests that may wait for the model while it writes another reply.
pub(super) const WAITING: usize = 4;

/// The served model.
pub(super) struct Chat {
    model: Arc<Mutex<LocalModel>>,
    name: String,
    /// The options replies are generated with, unless a request sets them.
    defaults: GenerateOptions,
    /// Replies being generated or waiting for the model.
    pending: Arc<AtomicUsize>,
}

/// A reply's place among those generated or waiting; given back when dropped.
struct Ticket(Arc<AtomicUsize>);

impl Ticket {
    /// A place, unless one reply is being generated and [`WAITING`] more wait already.
    fn take(pending: &Arc<AtomicUsize>) -> Option<Self> {
        pending
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n <= WAITING).then_some(n + 1))
            .ok()
            .map(|_| Self(Arc::clone(pending)))
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Chat {
    /// Serves `model`.
    pub(super) fn new(model: LocalModel) -> Self {
        let (name, defaults) = (model.name().to_owned(), model.options().clone());
        Self {
            model: Arc::new(Mutex::new(model)),
            name,
            defaults,
            pending: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// The model's name, as `/v1/models` lists it.
    pub(super) fn name(&self) -> &str {
        &self.name
    }

    /// `GET /v1/models`.
    pub(super) fn models(&self) -> Reply {
        let created = now();
        let list = json!({
            "object": "list",
            "data": [{"id": self.name, "object": "model", "created": created, "owned_by": "edgerag"}],
        });
        json_reply(200, &list)
    }

    /// `POST /v1/chat/completions`.
    pub(super) fn complete(&self, request: &Incoming) -> Reply {
        let completion: CompletionRequest = match serde_json::from_slice(&request.body) {
            Ok(completion) => completion,
            Err(e) => {
                return error(400, &format!("the body is not a chat completions request: {e}"));
            }
        };
        if let Some(model) = completion.model.as_deref().filter(|m| *m != self.name) {
            return error(
                404,
                &format!("unknown model {model:?}; this server has {:?}", self.name),
            );
        }
        let messages = match completion.conversation() {
            Ok(messages) => messages,
            Err(e) => return error(400, &e.to_string()),
        };
        let options = completion.generate_options(&self.defaults);
        let Some(ticket) = Ticket::take(&self.pending) else {
            let busy = format!("the model is busy with {} other replies; retry later", WAITING + 1);
            return error(503, &busy).header("Retry-After", "5");
        };
        let (id, created) = (format!("chatcmpl-{:x}", nanos()), now());
        if !completion.stream {
            let _ticket = ticket;
            let model = self.model.lock().unwrap_or_else(PoisonError::into_inner);
            return match model.generate(&messages, &options, None) {
                Ok(reply) => json_reply(
                    200,
                    &completions::text_completion(
                        &id,
                        &self.name,
                        created,
                        &reply.text,
                        reply.finish.as_str(),
                        (reply.prompt_tokens, reply.completion_tokens),
                    ),
                ),
                Err(e) => error(400, &e.to_string()),
            };
        }
        self.stream(ticket, messages, options, (id, created))
    }

    /// The reply to `messages` as server-sent events, a chunk per token, generated while the
    /// client reads them; `ticket` holds the reply's place until it ends.
    fn stream(
        &self,
        ticket: Ticket,
        messages: Vec<Message>,
        options: GenerateOptions,
        (id, created): (String, u64),
    ) -> Reply {
        let (model, name) = (Arc::clone(&self.model), self.name.clone());
        Reply::streamed(200, "text/event-stream", move |out: &mut dyn Write| {
            let _ticket = ticket;
            let chunk = |content: Option<&str>, finish: Option<&str>| {
                sse::event(
                    None,
                    &completions::chunk(&id, &name, created, content, finish).to_string(),
                )
            };
            out.write_all(chunk(Some(""), None).as_bytes())?;
            out.flush()?;
            let model = model.lock().unwrap_or_else(PoisonError::into_inner);
            // Generation stops at the first token a client that went away cannot receive.
            let gone = Cell::new(false);
            let mut send = |piece: &str| {
                let sent = out.write_all(chunk(Some(piece), None).as_bytes());
                if sent.and_then(|()| out.flush()).is_err() {
                    gone.set(true);
                }
            };
            let result = model.generate_until(&messages, &options, Some(&mut send), &|| gone.get());
            if let Ok(reply) = &result
                && reply.finish == Finish::Cancelled
            {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    format!(
                        "the client went away; generation stopped after {} tokens",
                        reply.completion_tokens
                    ),
                ));
            }
            let end = match result {
                Ok(reply) => chunk(None, Some(reply.finish.as_str())),
                Err(e) => sse::event(None, &error_body(&e.to_string()).to_string()),
            };
            out.write_all(end.as_bytes())?;
            out.write_all(sse::event(None, DONE).as_bytes())?;
            out.flush()
        })
        .header("Cache-Control", "no-store")
    }
}

/// An OpenAI-style error reply.
fn error(status: u16, message: &str) -> Reply {
    json_reply(status, &error_body(message))
}

fn error_body(message: &str) -> Value {
    json!({"error": {"message": message, "type": "invalid_request_error"}})
}

fn json_reply(status: u16, value: &Value) -> Reply {
    Reply::bytes(status, http::JSON, value.to_string().into_bytes())
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

fn nanos() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos())
}
