//! A scripted OpenAI-compatible server on 127.0.0.1 for the `ask` tests: each request gets
//! the next scripted reply, and every request is recorded.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

/// Runs `edgerag ARGS` with no LLM in the environment, or with `server` as the LLM (and
/// `key`, when given, as the API key).
pub(crate) fn edgerag_llm(args: &[&str], server: Option<&Server>, key: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_edgerag"));
    command.args(args);
    for name in ["EDGERAG_LLM_API_KEY", "GROQ_API_KEY", "OPENAI_API_KEY", "EDGERAG_LLM_BASE_URL"] {
        command.env_remove(name);
    }
    if let Some(server) = server {
        command.args(["--llm-base-url", &server.url]);
    }
    if let Some(key) = key {
        command.env("EDGERAG_LLM_API_KEY", key);
    }
    command.output().expect("run edgerag")
}

/// What the server answers one request with.
#[derive(Debug, Clone)]
pub(crate) enum Reply {
    /// A status, extra headers and a JSON body.
    Json(u16, Vec<(&'static str, &'static str)>, String),
    /// A 200 event stream: each piece is written and flushed, with a pause between.
    Stream(Vec<String>),
    /// Nothing for this long, then the connection closes.
    Hang(Duration),
    /// A 200 event stream of these events that stops short (no `[DONE]`, no finish reason):
    /// after the last one, nothing for this long, then the connection closes.
    Cut(Vec<String>, Duration),
}

impl Reply {
    /// A complete chat reply whose message is `content`.
    pub(crate) fn chat(content: &str) -> Self {
        let body = serde_json::json!({
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "model": "served",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                         "finish_reason": "stop"}],
        });
        Self::Json(200, vec![], body.to_string())
    }

    /// An error reply with the provider's usual JSON body.
    pub(crate) fn error(
        status: u16,
        headers: Vec<(&'static str, &'static str)>,
        message: &str,
    ) -> Self {
        let body = serde_json::json!({"error": {"message": message, "type": "test_error"}});
        Self::Json(status, headers, body.to_string())
    }

    /// A streamed reply of `pieces`, as chat-completion chunks, then `[DONE]`.
    pub(crate) fn stream(pieces: &[&str]) -> Self {
        let mut events: Vec<String> = pieces
            .iter()
            .map(|p| {
                let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": p}}]});
                format!("data: {chunk}\n\n")
            })
            .collect();
        events.push("data: [DONE]\n\n".to_owned());
        Self::Stream(events)
    }

    /// `pieces` streamed as [`Reply::stream`] streams them, then silence for `then`, and the
    /// connection closes before the reply is complete.
    pub(crate) fn cut(pieces: &[&str], then: Duration) -> Self {
        let Self::Stream(mut events) = Self::stream(pieces) else { unreachable!() };
        events.pop();
        Self::Cut(events, then)
    }
}

/// A request as the server received it.
#[derive(Debug, Clone)]
pub(crate) struct Received {
    pub(crate) path: String,
    pub(crate) authorization: Option<String>,
    pub(crate) body: serde_json::Value,
}

/// The running server.
pub(crate) struct Server {
    pub(crate) url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Server {
    /// Starts serving `script` on a free port of 127.0.0.1; requests beyond it get a 400.
    pub(crate) fn start(script: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let script = Arc::new(Mutex::new(script.into_iter()));
        let log = Arc::clone(&received);
        thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, script) = (Arc::clone(&log), Arc::clone(&script));
                thread::spawn(move || serve(stream, &log, &script));
            }
        });
        Self { url, received }
    }

    /// The requests received so far.
    pub(crate) fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// The `model` of each request received.
    pub(crate) fn models(&self) -> Vec<String> {
        self.received().iter().map(|r| r.body["model"].as_str().unwrap_or("").to_owned()).collect()
    }
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Received>>, script: &Mutex<std::vec::IntoIter<Reply>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
        return;
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("").to_owned();
    let (mut length, mut authorization) = (0, None);
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').unwrap();
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap(),
            "authorization" => authorization = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let body = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
    log.lock().unwrap().push(Received { path, authorization, body });
    let reply = script.lock().unwrap().next();
    let mut out = stream;
    match reply {
        Some(Reply::Json(status, headers, body)) => {
            let mut head = format!(
                "HTTP/1.1 {status} Test\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
                body.len()
            );
            for (name, value) in headers {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            _ = write!(out, "{head}\r\n{body}");
        }
        Some(Reply::Stream(events)) => write_events(&mut out, &events, Duration::from_millis(20)),
        Some(Reply::Hang(duration)) => thread::sleep(duration),
        Some(Reply::Cut(events, then)) => {
            write_events(&mut out, &events, Duration::ZERO);
            thread::sleep(then);
        }
        None => {
            let body = "{\"error\":{\"message\":\"unscripted request\"}}";
            _ = write!(
                out,
                "HTTP/1.1 400 Unscripted\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    }
}

/// Writes an event-stream response head, then each event, pausing `pause` after each.
fn write_events(out: &mut TcpStream, events: &[String], pause: Duration) {
    _ = write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
    );
    for event in events {
        _ = out.write_all(event.as_bytes());
        _ = out.flush();
        thread::sleep(pause);
    }
}
