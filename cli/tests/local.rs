//! Local generation with the real SmolLM2-135M-Instruct: `edgerag serve --local-model` speaking
//! the OpenAI protocol, `edgerag ask` talking to it over HTTP as to any remote LLM (streaming,
//! no stub in the path), and `ask --llm local` with no server at all.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{Value, json};

use crate::cli::path;
use crate::serve::{Response, Serving, make_site, read_head, small_bundle};

/// The chat model: `$EDGERAG_CHAT_MODEL`, or the file `edgerag models fetch --chat` caches.
fn chat_model() -> PathBuf {
    let path = std::env::var_os("EDGERAG_CHAT_MODEL").map(PathBuf::from).unwrap_or_else(|| {
        let cache = std::env::var_os("EDGERAG_CACHE").map(PathBuf::from).unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/edgerag")
        });
        cache.join("models/SmolLM2-135M-Instruct.Q4_1.gguf")
    });
    assert!(
        path.is_file(),
        "{}: the local generation tests need SmolLM2-135M-Instruct: run `edgerag models fetch \
         --chat` (or `make models`), or set EDGERAG_CHAT_MODEL",
        path.display()
    );
    path
}

const NAME: &str = "SmolLM2-135M-Instruct.Q4_1";
const CAPITAL: &str = "What is the capital of France? Answer in one sentence.";

/// `POST target` with a JSON body on a new connection (`Connection: close`); a chunked body
/// is decoded.
fn post(port: u16, target: &str, body: &Value) -> Response {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(300))).expect("timeout");
    let body = body.to_string();
    let head = format!(
        "POST {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).unwrap();
    let mut reader = BufReader::new(stream);
    let response = read_head(&mut reader);
    let mut raw = Vec::new();
    reader.read_to_end(&mut raw).expect("read body");
    let body =
        if response.header("Transfer-Encoding") == Some("chunked") { dechunk(&raw) } else { raw };
    Response { body, ..response }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let mut size = String::new();
        (&mut raw).read_line(&mut size).expect("chunk size");
        let size = usize::from_str_radix(size.trim(), 16).expect("hex chunk size");
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

/// The `data:` payloads of a server-sent event stream.
fn events(body: &[u8]) -> Vec<String> {
    let text = String::from_utf8(body.to_vec()).expect("UTF-8 stream");
    text.split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(str::to_owned)
        .collect()
}

#[test]
fn serve_speaks_openai_chat_completions_over_the_local_model() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let model = chat_model();
    let server =
        Serving::start(&["--site", path(&site), "--no-model", "--local-model", path(&model)], None);
    assert_eq!(server.started["chat_model"], NAME);
    let models = server.get("/v1/models").json();
    assert_eq!(models["data"][0]["id"], NAME);

    // The file itself, for generation in the tab, listed in /edgerag.json.
    let bytes = std::fs::read(&model).unwrap();
    let sha256 = crate::cli::sha256_hex(&bytes);
    let listed = server.get("/edgerag.json").json()["chat_model"].clone();
    let file_name = model.file_name().unwrap().to_str().unwrap();
    let expected = json!({
        "name": NAME, "url": format!("chat-models/{file_name}"), "bytes": bytes.len(), "sha256": sha256,
    });
    assert_eq!(listed, expected);
    let file = server.get(&format!("/chat-models/{file_name}"));
    assert_eq!(file.status, 200);
    assert_eq!(file.header("etag"), Some(format!("\"{sha256}\"").as_str()));
    assert!(file.body == bytes, "the served file is the model's");
    assert_eq!(server.get("/chat-models/other.gguf").status, 404);

    // Non-streamed, greedy.
    let request = json!({
        "model": NAME,
        "messages": [{"role": "user", "content": CAPITAL}],
        "max_tokens": 32,
        "temperature": 0,
    });
    let reply = post(server.port, "/v1/chat/completions", &request);
    assert_eq!(reply.status, 200, "{}", String::from_utf8_lossy(&reply.body));
    let reply = reply.json();
    let text = reply["choices"][0]["message"]["content"].as_str().unwrap().to_owned();
    assert!(text.contains("Paris"), "{text:?}");
    assert_eq!(reply["object"], "chat.completion");
    assert_eq!(reply["choices"][0]["finish_reason"], "stop");
    let usage = &reply["usage"];
    assert!(usage["prompt_tokens"].as_u64().unwrap() > 20);
    assert_eq!(
        usage["total_tokens"].as_u64(),
        Some(
            usage["prompt_tokens"].as_u64().unwrap() + usage["completion_tokens"].as_u64().unwrap()
        )
    );

    // Streamed: the same greedy reply, piece by piece, then the finish and [DONE].
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let response = post(server.port, "/v1/chat/completions", &streamed);
    assert_eq!(response.status, 200);
    assert_eq!(response.header("Content-Type"), Some("text/event-stream"));
    let events = events(&response.body);
    assert_eq!(events.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> =
        events[..events.len() - 1].iter().map(|e| serde_json::from_str(e).unwrap()).collect();
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    assert!(chunks.len() > 4, "{} chunks", chunks.len());
    let joined: String =
        chunks.iter().filter_map(|c| c["choices"][0]["delta"]["content"].as_str()).collect();
    assert_eq!(joined, text);
    assert_eq!(chunks.last().unwrap()["choices"][0]["finish_reason"], "stop");

    // A length limit ends with "length".
    let short = json!({"messages": [{"role": "user", "content": CAPITAL}], "max_tokens": 2});
    let short = post(server.port, "/v1/chat/completions", &short).json();
    assert_eq!(short["choices"][0]["finish_reason"], "length");
    assert_eq!(short["usage"]["completion_tokens"], 2);

    // Mistakes are OpenAI-style JSON errors.
    let cases = [
        (json!({"messages": []}), 400, "empty"),
        (json!({"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]}), 404, "gpt-4"),
        (json!({"messages": [{"role": "tool", "content": "x"}]}), 400, "\"tool\""),
        (json!({"messages": [{"role": "user", "content": "x"}], "top_p": 2}), 400, "top_p"),
        (json!({"messages": "no"}), 400, "not a chat completions request"),
    ];
    for (body, status, needle) in cases {
        let response = post(server.port, "/v1/chat/completions", &body);
        assert_eq!(response.status, status, "{body}");
        let message = response.json()["error"]["message"].as_str().unwrap().to_owned();
        assert!(message.contains(needle), "{body}: {message}");
    }
    assert_eq!(server.get("/v1/chat/completions").status, 405);
}

#[test]
fn a_streamed_reply_stops_when_its_client_leaves() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let model = chat_model();
    let args = ["--site", path(&site), "--no-model", "--local-model", path(&model), "--verbose"];
    let server = Serving::start(&args, None);
    let body = json!({
        "messages": [{"role": "user", "content": "Count from 1 to 1000, separated by commas."}],
        "stream": true, "max_tokens": 3000,
    })
    .to_string();
    let mut stream = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body.as_bytes())).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let response = read_head(&mut reader);
    assert_eq!(response.status, 200);
    // Leave once a few tokens have arrived.
    let mut events = 0;
    let mut line = String::new();
    while events < 4 && reader.read_line(&mut line).unwrap() > 0 {
        events += usize::from(line.starts_with("data: "));
        line.clear();
    }
    stream.shutdown(std::net::Shutdown::Both).unwrap();
    drop((reader, stream));

    // The model is free again (the next reply waits for it), and the server says why.
    let short = json!({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2});
    assert_eq!(post(server.port, "/v1/chat/completions", &short).status, 200);
    std::thread::sleep(Duration::from_millis(500)); // the log line follows the model's release
    let stderr = server.stop();
    assert!(stderr.contains("the client went away; generation stopped after"), "{stderr}");
}

#[test]
fn ask_streams_an_answer_from_serve_local_model_as_from_any_openai_server() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let bundle = small_bundle(dir.path());
    let model = chat_model();
    let server =
        Serving::start(&["--site", path(&site), "--no-model", "--local-model", path(&model)], None);
    let base = format!("http://127.0.0.1:{}/v1", server.port);
    let out = Command::new(env!("CARGO_BIN_EXE_edgerag"))
        .args(["ask", path(&bundle), "Who was Rollo?", "--mode", "bm25", "--stream"])
        .args(["--llm-base-url", &base, "--llm-model", NAME, "--llm-max-tokens", "60"])
        // Unoptimised test builds on a busy machine are slow; the default minute may not do.
        .args(["--llm-timeout", "900"])
        .args(["--context-tokens", "600"])
        .env_remove("EDGERAG_LLM_API_KEY")
        .env_remove("GROQ_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains(&format!("written by {NAME}")), "{stdout}\n{stderr}");
    let answer = stdout.split("\n\n").next().unwrap();
    assert!(answer.split_whitespace().count() > 3, "{stdout}");
    assert!(stdout.contains("[S1] Normans"), "the sources are listed: {stdout}");
}

#[test]
fn ask_with_llm_local_writes_the_answer_in_process() {
    let dir = tempfile::tempdir().unwrap();
    let bundle = small_bundle(dir.path());
    let model = chat_model();
    let local = format!("local:{}", model.display());
    let out = Command::new(env!("CARGO_BIN_EXE_edgerag"))
        .args(["ask", path(&bundle), "Who was Rollo?", "--mode", "bm25", "--json"])
        .args(["--llm", &local, "--llm-max-tokens", "60", "--context-tokens", "600"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["mode"], "llm", "{answer}");
    assert_eq!(answer["model"], NAME);
    assert!(answer["sources"].as_array().is_some_and(|s| !s.is_empty()));
    // Sentences it leaves uncited cite their best-supporting source, saying so.
    let attributed = answer["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["kind"] == "attributed_citation");
    for warning in attributed {
        let marker = warning["message"].as_str().unwrap().split_whitespace().nth(5).unwrap();
        assert!(answer["answer"].as_str().unwrap().contains(&format!("[{marker}]")), "{answer}");
    }

    let missing = Command::new(env!("CARGO_BIN_EXE_edgerag"))
        .args(["ask", path(&bundle), "Who was Rollo?", "--llm", "local:/nonexistent.gguf"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    let stderr = String::from_utf8_lossy(&missing.stderr);
    assert!(stderr.contains("/nonexistent.gguf: cannot read the chat model"), "{stderr}");
    let bad = Command::new(env!("CARGO_BIN_EXE_edgerag"))
        .args(["ask", path(&bundle), "Who was Rollo?", "--llm", "remote"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&bad.stderr).contains("expected `local` or `local:FILE.gguf`"));
}
