//! `edgerag serve`: the real binary on a free port, spoken to over raw HTTP/1.1 (a URL client
//! would normalise the `..` paths these tests must send as they are).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::cli::{self, json as run_json, one_error_line, path, sha256_hex};

/// A running `edgerag serve`, killed when dropped.
pub(crate) struct Serving {
    child: Child,
    pub(crate) port: u16,
    /// The JSON line it printed on start.
    pub(crate) started: Value,
}

impl Serving {
    /// Starts `edgerag serve ARGS --port 0 --json` with the model cache in `cache` (none
    /// when `cache` is empty) and waits for its startup line.
    pub(crate) fn start(args: &[&str], cache: Option<&Path>) -> Self {
        Self::spawn(serve_command(args, cache), args)
    }

    /// Starts `edgerag serve ARGS` like [`Serving::start`] (no model cache), with its limit on
    /// open files set to `soft` and `hard` by prlimit(1), from util-linux.
    #[cfg(target_os = "linux")]
    fn start_with_open_files(soft: u64, hard: u64, args: &[&str]) -> Self {
        let mut command = Command::new("prlimit");
        command.arg(format!("--nofile={soft}:{hard}")).arg(env!("CARGO_BIN_EXE_edgerag"));
        command.arg("serve").args(args).env_remove("EDGERAG_MODEL_DIR");
        Self::spawn(command, args)
    }

    /// Starts `command` (`edgerag serve ARGS`) on a free port and reads its startup line.
    fn spawn(mut command: Command, args: &[&str]) -> Self {
        command.args(["--port", "0", "--json"]).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().expect("start edgerag serve");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).expect("read the startup line");
        if line.is_empty() {
            let out = child.wait_with_output().expect("wait");
            panic!("serve {args:?} exited: {}", String::from_utf8_lossy(&out.stderr));
        }
        let started: Value = serde_json::from_str(&line).expect("the startup line is JSON");
        let url = started["url"].as_str().expect("url").to_owned();
        let port = url
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix('/'))
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("url {url}"));
        Self { child, port, started }
    }

    /// `METHOD path` with extra request headers.
    fn request(&self, method: &str, target: &str, headers: &[(&str, &str)]) -> Response {
        request(self.port, method, target, headers)
    }

    /// `GET path`.
    pub(crate) fn get(&self, target: &str) -> Response {
        self.request("GET", target, &[])
    }

    /// The threads of the server process, where the system tells (Linux).
    fn threads(&self) -> Option<usize> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|n| n.trim().parse().ok())
    }

    /// The server's limit on open files (soft), where the system tells (Linux).
    #[cfg(target_os = "linux")]
    fn open_files_limit(&self) -> Option<u64> {
        let limits = std::fs::read_to_string(format!("/proc/{}/limits", self.child.id())).ok()?;
        let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse().ok()
    }

    /// Stops the server and returns what it wrote on stderr.
    pub(crate) fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            pipe.read_to_string(&mut stderr).expect("read stderr");
        }
        stderr
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `edgerag serve ARGS` with the model cache in `cache` and no model directory from the
/// environment.
fn serve_command(args: &[&str], cache: Option<&Path>) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_edgerag"));
    command.arg("serve").args(args).env_remove("EDGERAG_MODEL_DIR");
    if let Some(cache) = cache {
        command.env("EDGERAG_CACHE", cache);
    }
    command
}

/// Runs `edgerag serve ARGS` that is expected to fail at startup; kills it after a minute.
fn serve_failing(args: &[&str], cache: &Path) -> Output {
    let mut child = serve_command(args, Some(cache))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start edgerag serve");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("poll").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve {args:?} kept running");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("wait")
}

/// A response as read off the socket.
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Vec<u8>,
}

impl Response {
    /// The value of header `name` (case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }
}

/// Sends one request on a new connection (`Connection: close`) and reads the whole response.
fn request(port: u16, method: &str, target: &str, headers: &[(&str, &str)]) -> Response {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    let mut head = format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if method == "POST" {
        head.push_str("Content-Length: 2\r\n\r\n{}");
    } else {
        head.push_str("Connection: close\r\n\r\n");
    }
    stream.write_all(head.as_bytes()).expect("send");
    let mut raw = Vec::new();
    if method == "POST" {
        // The server may keep the connection open: read the head, then Content-Length bytes.
        let mut reader = BufReader::new(stream);
        let response = read_head(&mut reader);
        let len: usize = response.header("Content-Length").map_or(0, |l| l.parse().unwrap());
        let mut body = vec![0; len];
        reader.read_exact(&mut body).expect("read body");
        return Response { body, ..response };
    }
    stream.read_to_end(&mut raw).expect("read response");
    let mut reader = BufReader::new(&raw[..]);
    let response = read_head(&mut reader);
    let mut body = Vec::new();
    reader.read_to_end(&mut body).expect("read body");
    assert_ne!(
        response.header("Transfer-Encoding"),
        Some("chunked"),
        "{target}: files are sent with a length"
    );
    Response { body, ..response }
}

/// Reads a status line and headers.
pub(crate) fn read_head(reader: &mut impl BufRead) -> Response {
    let mut status_line = String::new();
    reader.read_line(&mut status_line).expect("status line");
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("status line {status_line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').expect("header");
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    Response { status, headers, body: Vec::new() }
}

/// A small site: index pages, a script, a stylesheet, a wasm module; and a file beside it
/// that must stay unreachable.
pub(crate) fn make_site(dir: &Path) -> PathBuf {
    let site = dir.join("site");
    std::fs::create_dir_all(site.join("sub")).unwrap();
    std::fs::write(site.join("index.html"), "<!doctype html><title>edgerag</title>").unwrap();
    std::fs::write(site.join("sub/index.html"), "<p>sub</p>").unwrap();
    std::fs::write(site.join("app.js"), "export const x = 1;\n").unwrap();
    std::fs::write(site.join("style.css"), "body { margin: 0 }\n").unwrap();
    std::fs::write(site.join("edgerag_wasm_bg.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(site.join(".env"), "SECRET=1").unwrap();
    std::fs::write(dir.join("secret.txt"), "outside the site").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.join("secret.txt"), site.join("link.txt")).unwrap();
    site
}

/// A bundle of one real document (no embeddings) at `dir/normans.bundle`.
pub(crate) fn small_bundle(dir: &Path) -> PathBuf {
    let bundle = dir.join("normans.bundle");
    let doc = cli::demo_corpus().join("normans.md");
    run_json(&["build", path(&doc), "-o", path(&bundle), "--no-embed", "--json"]);
    bundle
}

/// A server of the site and the small bundle in `dir` (no model), and the bundle's bytes.
fn serving_bundle(dir: &Path, cache: Option<&Path>) -> (Serving, Vec<u8>) {
    let site = make_site(dir);
    let bundle = small_bundle(dir);
    let bytes = std::fs::read(&bundle).unwrap();
    (Serving::start(&[path(&bundle), "--site", path(&site), "--no-model"], cache), bytes)
}

#[test]
fn bundles_and_site_files_answer_byte_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let (server, bytes) = serving_bundle(dir.path(), None);
    let len = bytes.len();
    let url = "/bundles/normans.bundle";
    let whole = server.get(url);
    assert_eq!((whole.status, whole.header("Accept-Ranges")), (200, Some("bytes")));
    let etag = whole.header("ETag").unwrap().to_owned();

    // The header, a page from the middle and the tail, each exactly.
    let middle = format!("bytes={}-{}", len / 2, len / 2 + 99);
    for (range, start, end) in [
        ("bytes=0-55", 0, 56),
        (middle.as_str(), len / 2, len / 2 + 100),
        ("bytes=-10", len - 10, len),
    ] {
        let got = server.request("GET", url, &[("Range", range)]);
        assert_eq!(got.status, 206, "{range}");
        let content_range = format!("bytes {start}-{}/{len}", end - 1);
        assert_eq!(got.header("Content-Range"), Some(content_range.as_str()));
        assert_eq!(got.header("Content-Length"), Some((end - start).to_string().as_str()));
        assert_eq!(
            (got.header("ETag"), got.header("Accept-Ranges")),
            (Some(etag.as_str()), Some("bytes"))
        );
        assert!(got.body == bytes[start..end], "{range}: other bytes");
    }
    // A range is served only of the version the client names, else the whole file.
    let same = server.request("GET", url, &[("Range", "bytes=0-7"), ("If-Range", &etag)]);
    assert_eq!((same.status, same.body.as_slice()), (206, &b"EDGERAG\0"[..]));
    let changed = server.request("GET", url, &[("Range", "bytes=0-7"), ("If-Range", "\"old\"")]);
    assert!(changed.status == 200 && changed.body == bytes);
    // A range past the end is refused with the length; several ranges come in one multipart
    // body, joined where they meet.
    let past = server.request("GET", url, &[("Range", &format!("bytes={len}-"))]);
    assert_eq!(past.status, 416);
    assert_eq!(past.header("Content-Range"), Some(format!("bytes */{len}").as_str()));
    let several = server.request("GET", url, &[("Range", "bytes=4-5,0-1,1-2")]);
    assert_eq!(several.status, 206);
    let content_type = several.header("Content-Type").unwrap();
    let boundary = edgerag_cli::byteranges::boundary(content_type).expect(content_type);
    let parts = edgerag_cli::byteranges::parse(&several.body, boundary).unwrap();
    let parts: Vec<_> = parts.into_iter().map(|p| (p.range, p.bytes.to_vec())).collect();
    assert_eq!(parts, [(0..3, bytes[0..3].to_vec()), (4..6, bytes[4..6].to_vec())]);
    // A version the client holds is still 304, and HEAD ignores ranges.
    let held = server.request("GET", url, &[("Range", "bytes=0-7"), ("If-None-Match", &etag)]);
    assert_eq!(held.status, 304);
    let head = server.request("HEAD", url, &[("Range", "bytes=0-7")]);
    assert_eq!(head.header("Content-Length"), Some(len.to_string().as_str()));

    // Site files too, and the connection carries on after a part and a refusal.
    let mut connection = Connection::open(server.port, Duration::from_secs(10));
    let part = connection.exchange("GET", "/app.js", "Range: bytes=7-11\r\n");
    assert_eq!((part.status, part.body.as_slice()), (206, &b"const"[..]));
    assert_eq!(connection.exchange("GET", "/app.js", "Range: bytes=99-\r\n").status, 416);
    assert_eq!(connection.exchange("GET", "/app.js", "").body, b"export const x = 1;\n");
}

#[test]
fn a_bundle_of_format_4_is_served_and_listed_and_searched_by_range_through_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let doc = cli::demo_corpus().join("normans.md");
    let bundle = dir.path().join("paged.bundle");
    let args = ["build", path(&doc), "-o", path(&bundle), "--no-embed", "--format", "4", "--json"];
    run_json(&args);
    let site = make_site(dir.path());
    let server = Serving::start(&[path(&bundle), "--site", path(&site), "--no-model"], None);
    let listed = &server.get("/edgerag.json").json()["bundles"][0];
    let inspected = run_json(&["inspect", path(&bundle), "--json"]);
    assert_eq!(listed["chunks"], inspected["manifest"]["counts"]["chunks"], "{listed}");
    assert_eq!(listed["corpus"], "paged");
    let url = format!("http://127.0.0.1:{}/bundles/paged.bundle", server.port);
    let search = |bundle: &str| run_json(&["search", bundle, "Rollo", "--json"])["results"].clone();
    let found = search(&url);
    assert!(found.as_array().is_some_and(|hits| !hits.is_empty()), "{found}");
    assert_eq!(found, search(path(&bundle)));
}

#[test]
fn serves_the_site_the_bundles_and_edgerag_json() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let site = make_site(dir.path());
    let bundle = small_bundle(dir.path());
    let bytes = std::fs::read(&bundle).unwrap();
    let inspected = run_json(&["inspect", path(&bundle), "--json"]);
    let server =
        Serving::start(&[path(&bundle), "--site", path(&site), "--no-model"], Some(&cache));

    let expected_bundle = json!({
        "name": "normans", "url": "bundles/normans.bundle", "bytes": bytes.len(),
        "sha256": sha256_hex(&bytes), "corpus": inspected["manifest"]["corpus"],
        "chunks": inspected["manifest"]["counts"]["chunks"], "embedding": null,
    });
    assert_eq!(server.started["site"], path(&site));
    assert_eq!(server.started["bundles"], json!([expected_bundle]));
    assert_eq!(server.started["model"], Value::Null);

    let index = server.get("/edgerag.json");
    assert_eq!(index.status, 200);
    assert_eq!(index.header("Content-Type"), Some("application/json"));
    assert_eq!(index.header("Cache-Control"), Some("no-cache"));
    let expected_index = json!({"bundles": [expected_bundle], "model": null, "chat_model": null});
    assert_eq!(index.json(), expected_index);

    // The bundle: its exact bytes, a strong ETag of its SHA-256, revalidated with 304.
    let got = server.get("/bundles/normans.bundle");
    assert_eq!(got.status, 200);
    assert!(got.body == bytes, "the bundle bytes differ");
    let etag = format!("\"{}\"", sha256_hex(&bytes));
    assert_eq!(got.header("ETag"), Some(etag.as_str()));
    assert_eq!(got.header("Content-Type"), Some("application/octet-stream"));
    assert_eq!(got.header("Cache-Control"), Some("no-cache"));
    assert_eq!(got.header("X-Content-Type-Options"), Some("nosniff"));
    assert_eq!(got.header("Content-Length"), Some(bytes.len().to_string().as_str()));
    let again = server.request("GET", "/bundles/normans.bundle", &[("If-None-Match", &etag)]);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("ETag"), Some(etag.as_str()));
    let stale = server.request("GET", "/bundles/normans.bundle", &[("If-None-Match", "\"x\"")]);
    assert_eq!(stale.status, 200);
    assert_eq!(stale.body.len(), bytes.len());
    let head = server.request("HEAD", "/bundles/normans.bundle", &[]);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty(), "HEAD has no body");
    assert_eq!(head.header("Content-Length"), Some(bytes.len().to_string().as_str()));
    assert_eq!(head.header("ETag"), Some(etag.as_str()));

    // Site files, with their MIME types, ETags and 304s.
    let root = server.get("/");
    assert_eq!(root.status, 200);
    assert_eq!(root.body, std::fs::read(site.join("index.html")).unwrap());
    assert_eq!(root.header("Content-Type"), Some("text/html; charset=utf-8"));
    assert_eq!(root.header("Cache-Control"), Some("no-cache"));
    let site_etag = root.header("ETag").expect("site ETag").to_owned();
    let revalidated = server.request("GET", "/", &[("If-None-Match", &site_etag)]);
    assert_eq!(revalidated.status, 304);
    assert!(revalidated.body.is_empty());
    for (file, mime) in [
        ("/index.html", "text/html; charset=utf-8"),
        ("/app.js?v=1", "text/javascript"),
        ("/style.css", "text/css"),
        ("/edgerag_wasm_bg.wasm", "application/wasm"),
    ] {
        let got = server.get(file);
        assert_eq!(got.status, 200, "{file}");
        assert_eq!(got.header("Content-Type"), Some(mime), "{file}");
        assert_eq!(got.header("X-Content-Type-Options"), Some("nosniff"), "{file}");
    }
    assert_eq!(server.get("/sub/").body, b"<p>sub</p>");
    let redirect = server.get("/sub");
    assert_eq!(redirect.status, 301);
    assert_eq!(redirect.header("Location"), Some("/sub/"));
    let head = server.request("HEAD", "/app.js", &[]);
    assert_eq!((head.status, head.body.len()), (200, 0));
    assert_eq!(head.header("Content-Length"), Some("20"));

    // Nothing outside the site, nothing that is not there.
    for target in [
        "/missing.js",
        "/bundles/other.bundle",
        "/../Cargo.toml",
        "/%2e%2e/Cargo.toml",
        "/%2E%2E/%2e%2e/Cargo.toml",
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2e%2e%2fsecret.txt",
        "/sub/../../secret.txt",
        "/bundles/../../secret.txt",
        "/.env",
        "/link.txt",
        "//etc/passwd",
        "/models/all-MiniLM-L6-v2/config.json",
    ] {
        let got = server.get(target);
        assert_eq!(got.status, 404, "{target}");
        assert_eq!(got.header("Content-Type"), Some("text/plain; charset=utf-8"), "{target}");
        assert!(!String::from_utf8_lossy(&got.body).contains("outside"), "{target}");
    }
    assert_eq!(server.get("/%zz").status, 400);
    let post = server.request("POST", "/edgerag.json", &[]);
    assert_eq!(post.status, 405);
    assert!(post.header("Allow").unwrap().contains("GET"), "{post:?}");
}

#[test]
fn a_model_directory_is_served_with_its_hashes_and_never_blocks_other_requests() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let site = make_site(dir.path());
    let model = dir.path().join("tiny-model");
    std::fs::create_dir_all(&model).unwrap();
    // Serve does not parse the model; big enough weights to fill the socket buffers.
    let weights: Vec<u8> = (0..24u32 << 20).map(|i| (i % 251) as u8).collect();
    let files: [(&str, &[u8]); 3] = [
        ("config.json", br#"{"hidden_size": 8}"#),
        ("tokenizer.json", br#"{"model": {}}"#),
        ("model.safetensors", &weights),
    ];
    for (name, bytes) in files {
        std::fs::write(model.join(name), bytes).unwrap();
    }
    let server = Serving::start(&["--site", path(&site), "--model", path(&model)], Some(&cache));

    let expected = json!({
        "id": "tiny-model", "url": "models/tiny-model/",
        "files": {
            "config.json": {"bytes": files[0].1.len(), "sha256": sha256_hex(files[0].1)},
            "tokenizer.json": {"bytes": files[1].1.len(), "sha256": sha256_hex(files[1].1)},
            "model.safetensors": {"bytes": weights.len(), "sha256": sha256_hex(&weights)},
        },
    });
    assert_eq!(server.started["model"], expected);
    assert_eq!(server.started["bundles"], json!([]));
    assert_eq!(server.get("/edgerag.json").json()["model"], expected);

    let config = server.get("/models/tiny-model/config.json");
    assert_eq!(config.status, 200);
    assert_eq!(config.body, files[0].1);
    assert_eq!(config.header("Content-Type"), Some("application/json"));
    let etag = format!("\"{}\"", sha256_hex(files[0].1));
    assert_eq!(config.header("ETag"), Some(etag.as_str()));
    let cached =
        server.request("GET", "/models/tiny-model/config.json", &[("If-None-Match", &etag)]);
    assert_eq!(cached.status, 304);
    assert_eq!(server.get("/models/tiny-model/other.bin").status, 404);
    assert_eq!(server.get("/models/other/config.json").status, 404);

    // A client that does not read the weights holds one connection, not the server.
    let mut stalled = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let head = "GET /models/tiny-model/model.safetensors HTTP/1.1\r\nHost: x\r\n\r\n";
    stalled.write_all(head.as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    assert_eq!(server.get("/edgerag.json").status, 200);
    assert_eq!(server.get("/app.js").status, 200);
    assert!(started.elapsed() < Duration::from_secs(10), "blocked: {:?}", started.elapsed());
    drop(stalled);

    let got = server.get("/models/tiny-model/model.safetensors");
    assert_eq!(got.status, 200);
    assert!(got.body == weights, "the weights differ");
    assert_eq!(got.header("Content-Type"), Some("application/octet-stream"));
}

#[test]
fn without_a_cached_model_it_warns_and_serves_none() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("empty-cache");
    let site = make_site(dir.path());
    let server = Serving::start(&["--site", path(&site)], Some(&cache));
    assert_eq!(server.started["model"], Value::Null);
    assert_eq!(server.get("/edgerag.json").json()["model"], Value::Null);
    let stderr = server.stop();
    assert!(stderr.contains("edgerag models fetch"), "{stderr}");

    let server = Serving::start(&["--site", path(&site), "--no-model"], None);
    assert_eq!(server.started["model"], Value::Null);
    assert_eq!(server.stop(), "", "--no-model is quiet");
}

#[test]
fn the_cached_default_model_is_served_as_all_minilm() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    // Serve looks in the cache (EDGERAG_MODEL_DIR is removed for it), where `make models` puts
    // the model before the tests run.
    let output = Command::new(env!("CARGO_BIN_EXE_edgerag"))
        .args(["models", "path", "--json"])
        .env_remove("EDGERAG_MODEL_DIR")
        .output()
        .expect("run edgerag");
    let located: Value = serde_json::from_slice(&output.stdout).expect("models path --json");
    assert_eq!(
        located["present"], true,
        "the default model is not in the cache: run `make models`"
    );
    let server = Serving::start(&["--site", path(&site)], None);
    let model = &server.started["model"];
    assert_eq!(model["id"], "sentence-transformers/all-MiniLM-L6-v2");
    assert_eq!(model["url"], "models/all-MiniLM-L6-v2/");
    let weights = &model["files"]["model.safetensors"];
    let head = server.request("HEAD", "/models/all-MiniLM-L6-v2/model.safetensors", &[]);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("Content-Length"), Some(weights["bytes"].to_string().as_str()));
    let etag = format!("\"{}\"", weights["sha256"].as_str().unwrap());
    assert_eq!(head.header("ETag"), Some(etag.as_str()));
    assert_eq!(
        weights["sha256"], "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
        "the pinned weights"
    );
}

#[test]
fn bad_arguments_fail_with_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let site = make_site(dir.path());

    let missing_site = dir.path().join("no-such-site");
    let line = one_error_line(&serve_failing(&["--site", path(&missing_site)], &cache));
    assert!(
        line.contains("no-such-site") && line.contains("make www") && line.contains("--site"),
        "{line}"
    );

    let not_bundle = cli::demo_corpus().join("normans.md");
    let out = serve_failing(&[path(&not_bundle), "--site", path(&site)], &cache);
    let line = one_error_line(&out);
    assert!(line.contains("normans.md") && line.contains("not an edgerag bundle"), "{line}");

    let missing = dir.path().join("missing.bundle");
    let line = one_error_line(&serve_failing(&[path(&missing), "--site", path(&site)], &cache));
    assert!(line.contains("missing.bundle"), "{line}");

    let bundle = small_bundle(dir.path());
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::copy(&bundle, other.join("normans.bundle")).unwrap();
    let twice = other.join("normans.bundle");
    let out = serve_failing(&[path(&bundle), path(&twice), "--site", path(&site)], &cache);
    let line = one_error_line(&out);
    assert!(line.contains("same file name") && line.contains("normans.bundle"), "{line}");

    let model = dir.path().join("half-model");
    std::fs::create_dir_all(&model).unwrap();
    std::fs::write(model.join("config.json"), "{}").unwrap();
    let out = serve_failing(&["--site", path(&site), "--model", path(&model)], &cache);
    let line = one_error_line(&out);
    assert!(line.contains("tokenizer.json") && line.contains("half-model"), "{line}");

    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = serve_failing(&["--site", path(&site), "--no-model", "--port", &port], &cache);
    let line = one_error_line(&out);
    assert!(line.contains("cannot listen") && line.contains(&port), "{line}");
}

#[test]
fn connection_counts_the_server_cannot_hold_are_refused_at_startup() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let site = make_site(dir.path());
    let huge = u64::MAX.to_string();
    for (flag, value) in
        [("--max-connections", huge.as_str()), ("--queue", &huge), ("--max-connections", "0")]
    {
        let out = serve_failing(&["--site", path(&site), "--no-model", flag, value], &cache);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(flag) && stderr.contains("is not a number from"), "{stderr}");
    }
}

/// A kept-alive connection: a request at a time, each response read by its `Content-Length`.
struct Connection {
    reader: BufReader<TcpStream>,
}

impl Connection {
    /// Connects to `port`; any read waiting longer than `timeout` fails the test.
    fn open(port: u16, timeout: Duration) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_read_timeout(Some(timeout)).expect("timeout");
        Self { reader: BufReader::new(stream) }
    }

    /// Sends raw bytes.
    fn send(&mut self, raw: &[u8]) {
        self.reader.get_mut().write_all(raw).expect("send");
    }

    /// Sends `METHOD target` with extra header lines (each ending in CRLF) and reads the
    /// response.
    fn exchange(&mut self, method: &str, target: &str, extra: &str) -> Response {
        self.send(format!("{method} {target} HTTP/1.1\r\nHost: x\r\n{extra}\r\n").as_bytes());
        self.response(method == "HEAD")
    }

    /// Reads one response: its head, then `Content-Length` bytes of body (none for `HEAD`).
    fn response(&mut self, head_only: bool) -> Response {
        let response = read_head(&mut self.reader);
        assert_eq!(response.header("Transfer-Encoding"), None, "{response:?}");
        let len: usize = match response.header("Content-Length") {
            Some(len) => len.parse().expect("Content-Length"),
            None => 0,
        };
        let mut body = vec![0; if head_only { 0 } else { len }];
        self.reader.read_exact(&mut body).expect("read the body");
        Response { body, ..response }
    }

    /// Whether the server has closed the connection (end of stream, or a reset).
    fn closed(&mut self) -> bool {
        let mut byte = [0; 1];
        match self.reader.read(&mut byte) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

#[test]
fn idle_keep_alive_connections_never_starve_a_new_one() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let server = Serving::start(&["--site", path(&site), "--no-model"], None);
    let timeout = Duration::from_secs(2);
    // What a browser does on a first load: several connections at once, some of them opened
    // ahead of need and never used; the others stay open and idle after their response.
    let unused: Vec<Connection> = (0..4).map(|_| Connection::open(server.port, timeout)).collect();
    let mut idle: Vec<Connection> =
        (0..10).map(|_| Connection::open(server.port, timeout)).collect();
    for connection in &mut idle {
        connection.send(b"GET /app.js HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    for connection in &mut idle {
        let response = connection.response(false);
        assert_eq!(
            (response.status, response.body.as_slice()),
            (200, &b"export const x = 1;\n"[..])
        );
        assert_eq!(response.header("Connection"), None, "kept alive");
    }
    // New connections are answered at once (a 2 s read timeout fails instead of hanging).
    for round in 0..3 {
        let started = Instant::now();
        let mut fresh = Connection::open(server.port, timeout);
        let response = fresh.exchange("GET", "/edgerag.json", "");
        assert_eq!(response.status, 200, "round {round}");
        assert!(started.elapsed() < timeout, "round {round}: {:?}", started.elapsed());
    }
    // The idle connections still serve.
    for connection in &mut idle {
        assert_eq!(connection.exchange("GET", "/style.css", "").status, 200);
    }
    drop(unused);
}

#[test]
fn a_keep_alive_connection_answers_request_after_request() {
    let dir = tempfile::tempdir().unwrap();
    let (server, bytes) = serving_bundle(dir.path(), None);
    let mut connection = Connection::open(server.port, Duration::from_secs(10));

    let index = connection.exchange("GET", "/edgerag.json", "");
    assert_eq!(index.status, 200);
    assert_eq!(index.json()["bundles"][0]["bytes"], bytes.len());
    assert!(index.header("Date").is_some_and(|d| d.ends_with(" GMT")), "{index:?}");
    // HEAD: the length, and no body (else the next response would not parse).
    let head = connection.exchange("HEAD", "/bundles/normans.bundle", "");
    assert_eq!(head.status, 200);
    assert_eq!(head.header("Content-Length"), Some(bytes.len().to_string().as_str()));
    let got = connection.exchange("GET", "/bundles/normans.bundle", "");
    assert_eq!(got.status, 200);
    assert!(got.body == bytes, "the bundle bytes differ");
    let etag = got.header("ETag").expect("ETag").to_owned();
    let cached = connection.exchange(
        "GET",
        "/bundles/normans.bundle",
        &format!("If-None-Match: {etag}\r\n"),
    );
    assert_eq!((cached.status, cached.body.len()), (304, 0));
    assert_eq!(connection.exchange("GET", "/missing.js", "").status, 404);
    assert_eq!(connection.exchange("GET", "/sub", "").status, 301);

    // A body is read by its length, whatever the reply, so the next request is intact.
    connection.send(b"POST /edgerag.json HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello");
    assert_eq!(connection.response(false).status, 405);
    // A client that expects 100 Continue gets it before it sends the body.
    connection.send(
        b"POST /edgerag.json HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n",
    );
    assert_eq!(read_head(&mut connection.reader).status, 100);
    connection.send(b"{}");
    assert_eq!(connection.response(false).status, 405);

    // Pipelined requests are answered in order.
    connection
        .send(b"GET /app.js HTTP/1.1\r\nHost: x\r\n\r\nGET /style.css HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(connection.response(false).body, b"export const x = 1;\n");
    assert_eq!(connection.response(false).body, b"body { margin: 0 }\n");

    // An HTTP/1.0 request closes the connection unless it asks for keep-alive.
    connection.send(b"GET /app.js HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    let kept = connection.response(false);
    assert_eq!((kept.status, kept.header("Connection")), (200, Some("keep-alive")));
    connection.send(b"GET /app.js HTTP/1.0\r\n\r\n");
    let last = connection.response(false);
    assert_eq!((last.status, last.header("Connection")), (200, Some("close")));
    assert!(connection.closed());
}

#[test]
fn connection_close_is_honoured_and_idle_connections_time_out() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let server = Serving::start(&["--site", path(&site), "--no-model"], None);

    let mut closing = Connection::open(server.port, Duration::from_secs(10));
    let response = closing.exchange("GET", "/app.js", "Connection: close\r\n");
    assert_eq!(response.status, 200);
    assert_eq!(response.body, b"export const x = 1;\n");
    assert_eq!(response.header("Connection"), Some("close"));
    assert!(closing.closed(), "the server closes after the response");

    // A kept-alive connection is closed after a few idle seconds.
    let mut idle = Connection::open(server.port, Duration::from_secs(20));
    assert_eq!(idle.exchange("GET", "/app.js", "").status, 200);
    let started = Instant::now();
    assert!(idle.closed(), "closed when idle");
    let waited = started.elapsed();
    assert!(waited > Duration::from_secs(2) && waited < Duration::from_secs(15), "{waited:?}");
}

#[test]
fn malformed_and_oversized_requests_are_refused_and_closed() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let server = Serving::start(&["--site", path(&site), "--no-model"], None);
    let cookie = "a".repeat(20 << 10);
    let many: String = (0..150).map(|i| format!("X-{i}: y\r\n")).collect();
    let cases: [(&str, String, &[u16]); 8] = [
        (
            "a 20 KiB header",
            format!("GET / HTTP/1.1\r\nHost: x\r\nCookie: {cookie}\r\n\r\n"),
            &[431, 400],
        ),
        ("150 header fields", format!("GET / HTTP/1.1\r\nHost: x\r\n{many}\r\n"), &[431, 400]),
        ("a bad request line", "GET /\r\n\r\n".to_owned(), &[400]),
        ("no Host", "GET / HTTP/1.1\r\n\r\n".to_owned(), &[400]),
        ("a bad header", "GET / HTTP/1.1\r\nHost: x\r\nBad header\r\n\r\n".to_owned(), &[400]),
        ("HTTP/2", "GET / HTTP/2.0\r\nHost: x\r\n\r\n".to_owned(), &[505]),
        (
            "a chunked body",
            "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
                .to_owned(),
            &[411, 400],
        ),
        (
            "a 2 MiB body",
            format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", 2 << 20),
            &[413],
        ),
    ];
    for (what, raw, statuses) in cases {
        let mut connection = Connection::open(server.port, Duration::from_secs(10));
        connection.send(raw.as_bytes());
        let response = connection.response(false);
        assert!(statuses.contains(&response.status), "{what}: {response:?}");
        assert_eq!(response.header("Connection"), Some("close"), "{what}");
        assert!(connection.closed(), "{what}: closed after the refusal");
    }
    assert_eq!(server.get("/app.js").status, 200, "the server goes on");
}

/// Connections that send a request line, a `Host` and then the start of one more header
/// field, a byte at a time on each every 50 ms, from a thread, until stopped: slow clients
/// that keep a request open as long as they can.
struct Trickler {
    /// The connections, to read the server's answer from.
    connections: Vec<Connection>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<TcpStream>>>,
}

impl Trickler {
    /// Opens `count` trickling connections to `port`.
    fn start(port: u16, count: usize) -> Self {
        let mut connections = Vec::new();
        let mut writers = Vec::new();
        for _ in 0..count {
            let mut connection = Connection::open(port, Duration::from_secs(60));
            connection.send(b"GET /app.js HTTP/1.1\r\nHost: x\r\nX-Slow: ");
            writers.push(connection.reader.get_ref().try_clone().expect("clone"));
            connections.push(connection);
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !stopping.load(Ordering::Relaxed) {
                for writer in &mut writers {
                    // The server may have cut it: errors are expected then.
                    let _ = writer.write_all(b"a");
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            writers
        });
        Self { connections, stop, thread: Some(thread) }
    }

    /// Stops trickling.
    fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the trickling thread");
        }
    }
}

impl Drop for Trickler {
    fn drop(&mut self) {
        self.stop();
    }
}

#[test]
fn idle_and_trickling_clients_never_delay_another() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    // Deadlines far away: nothing here may be cut, and nothing may wait for a cut.
    let args = ["--site", path(&site), "--no-model", "--head-timeout", "300"];
    let server = Serving::start(&[&args[..], &["--idle-timeout", "300"]].concat(), None);
    // More than the old server's 256 threads: 150 connections that send nothing, and 150
    // that trickle a header field.
    let mut idle: Vec<Connection> =
        (0..150).map(|_| Connection::open(server.port, Duration::from_secs(60))).collect();
    let mut slow = Trickler::start(server.port, 150);

    // A new client is answered while all of them are held (a 60 s read timeout rather than
    // a measured time: it fails if the request has to wait for a slot).
    for round in 0..3 {
        let got = server.get("/app.js");
        assert_eq!(
            (got.status, got.body.as_slice()),
            (200, &b"export const x = 1;\n"[..]),
            "{round}"
        );
    }
    if let Some(threads) = server.threads() {
        assert!(threads < 40, "{threads} threads for 300 connections");
    }
    // They were held all along: each is still served.
    for connection in idle.iter_mut() {
        assert_eq!(connection.exchange("GET", "/style.css", "").status, 200);
    }
    slow.stop();
    for connection in &mut slow.connections {
        connection.send(b"\r\n\r\n");
        let response = connection.response(false);
        assert_eq!(
            (response.status, response.body.as_slice()),
            (200, &b"export const x = 1;\n"[..])
        );
    }
}

#[test]
fn slow_requests_are_cut_at_their_deadline_and_idle_connections_closed() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let args = ["--site", path(&site), "--no-model", "--head-timeout", "1", "--body-timeout", "1"];
    let server = Serving::start(&[&args[..], &["--idle-timeout", "1"]].concat(), None);

    // A head trickled byte by byte past its deadline: 408, then closed, though bytes still come.
    let mut slow = Trickler::start(server.port, 3);
    for connection in &mut slow.connections {
        let response = connection.response(false);
        assert_eq!(response.status, 408, "{response:?}");
        assert_eq!(response.header("Connection"), Some("close"));
        assert!(connection.closed(), "closed after the 408");
    }
    slow.stop();

    // A body that stops halfway: 408 too.
    let mut stalled = Connection::open(server.port, Duration::from_secs(60));
    stalled.send(b"POST /edgerag.json HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
    let response = stalled.response(false);
    assert_eq!((response.status, response.header("Connection")), (408, Some("close")));
    assert!(stalled.closed());

    // Connections without a request, before the first or after one, are closed quietly.
    let mut fresh = Connection::open(server.port, Duration::from_secs(60));
    let mut kept = Connection::open(server.port, Duration::from_secs(60));
    assert_eq!(kept.exchange("GET", "/app.js", "").status, 200);
    assert!(fresh.closed() && kept.closed());
    assert_eq!(server.get("/app.js").status, 200, "the server goes on");
}

#[test]
fn a_stray_empty_line_between_requests_leaves_the_connection_idle() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let args = ["--site", path(&site), "--no-model", "--head-timeout", "1", "--idle-timeout", "1"];
    let server = Serving::start(&args, None);
    let mut connection = Connection::open(server.port, Duration::from_secs(60));
    // Some clients end a body with an extra CRLF: it is skipped before the next request.
    connection.send(b"\r\n");
    assert_eq!(connection.exchange("GET", "/app.js", "").status, 200);
    // One after the last request is no request: the idle connection closes without a 408.
    connection.send(b"\r\n");
    assert!(connection.closed(), "closed quietly");
}

#[test]
fn empty_lines_before_a_request_are_read_as_the_parser_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let server = Serving::start(&["--site", path(&site), "--no-model"], None);
    let request = "GET /app.js HTTP/1.1\r\nHost: x\r\n\r\n";
    let cases = [
        ("a few empty lines", format!("\r\n\n\r\n{request}"), 200),
        ("a bare CR", format!("\r{request}"), 400),
        ("empty lines past the head's 16 KiB", format!("{}{request}", "\r\n".repeat(9 << 10)), 414),
    ];
    for (what, raw, status) in cases {
        let mut connection = Connection::open(server.port, Duration::from_secs(60));
        connection.send(raw.as_bytes());
        assert_eq!(connection.response(false).status, status, "{what}");
    }
}

/// Waits until every byte sent on the TCP connections to or from `port` has been read by the
/// process at the other end (Linux: their queues in /proc/net/tcp are empty).
#[cfg(target_os = "linux")]
fn wait_until_read(port: u16) {
    let port = format!(":{port:04X}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
        let pending = table.lines().skip(1).any(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let ours = fields[1].ends_with(&port) || fields[2].ends_with(&port);
            ours && fields[4] != "00000000:00000000"
        });
        if !pending {
            return;
        }
        assert!(Instant::now() < deadline, "bytes to or from port {port} left unread");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(target_os = "linux")]
#[test]
fn bodies_hold_what_they_sent_and_stalled_ones_make_room() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let args = ["--site", path(&site), "--no-model", "--body-timeout", "300"];
    let server = Serving::start(&args, None);
    let post = |len: usize| {
        format!("POST /edgerag.json HTTP/1.1\r\nHost: x\r\nContent-Length: {len}\r\n\r\n")
    };
    let max = 1 << 20;

    // 32 clients announce the largest body (1 MiB; together, the whole budget), are invited to
    // send it (so the server is reading it), and send one byte.
    let mut stalled: Vec<Connection> = (0..32)
        .map(|_| {
            let mut connection = Connection::open(server.port, Duration::from_secs(60));
            let head = post(max).replace("\r\n\r\n", "\r\nExpect: 100-continue\r\n\r\n");
            connection.send(head.as_bytes());
            assert_eq!(read_head(&mut connection.reader).status, 100);
            connection.send(b"x");
            connection
        })
        .collect();
    // Another body is read all the same: each holds what it sent, not what it announced.
    let mut other = Connection::open(server.port, Duration::from_secs(60));
    other.send(format!("{}{{}}", post(2)).as_bytes());
    assert_eq!(other.response(false).status, 405);

    // They send all but the last byte: together they hold nearly the whole budget. A whole
    // body that needs more room is still read: the stalled ones (arriving for more than a
    // second by then) are cut to make it.
    let rest = vec![b'x'; max - 2];
    for connection in &mut stalled {
        connection.send(&rest);
    }
    wait_until_read(server.port);
    other.send(post(max).as_bytes());
    other.send(&vec![b'y'; max]);
    assert_eq!(other.response(false).status, 405);
    // The first to stall, the oldest, is the first cut.
    let cut = stalled[0].response(false);
    assert_eq!((cut.status, cut.header("Connection")), (408, Some("close")));
    drop(stalled);
    assert_eq!(server.request("POST", "/edgerag.json", &[]).status, 405);
}

#[test]
fn a_flood_of_connections_is_refused_at_once_and_then_served() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    // A file larger than the socket buffers, so that a client that reads none of it keeps
    // its connection busy.
    let big: Vec<u8> = (0..24u32 << 20).map(|i| (i % 251) as u8).collect();
    std::fs::write(site.join("big.bin"), &big).unwrap();
    let args = ["--site", path(&site), "--no-model", "--max-connections", "4", "--queue", "2"];
    let server = Serving::start(&args, None);

    // Four downloads that stall take every place.
    let mut stalled = Vec::new();
    for _ in 0..4 {
        let mut connection = Connection::open(server.port, Duration::from_secs(60));
        connection.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(read_head(&mut connection.reader).status, 200);
        stalled.push(connection);
    }
    // Every new connection is answered 503 (two after a short wait in the queue, the others
    // at once), with Retry-After, and closed.
    let mut flood: Vec<Connection> =
        (0..24).map(|_| Connection::open(server.port, Duration::from_secs(60))).collect();
    for connection in &mut flood {
        connection.send(b"GET /app.js HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    let mut refused = 0;
    for connection in &mut flood {
        // The busiest of floods may also see its connection closed without a word.
        let mut line = String::new();
        if connection.reader.read_line(&mut line).is_err() || line.is_empty() {
            continue;
        }
        assert!(line.starts_with("HTTP/1.1 503 "), "{line:?}");
        refused += 1;
    }
    assert!(refused >= 20, "{refused} of 24 refused with 503");
    let mut busy = Connection::open(server.port, Duration::from_secs(60));
    busy.send(b"GET /app.js HTTP/1.1\r\nHost: x\r\n\r\n");
    let response = busy.response(false);
    assert_eq!((response.status, response.header("Retry-After")), (503, Some("1")));
    assert_eq!(response.header("Connection"), Some("close"));

    // Once the flood and the downloads go, their places serve again.
    drop((flood, busy, stalled));
    let got = server.get("/app.js");
    assert_eq!((got.status, got.body.as_slice()), (200, &b"export const x = 1;\n"[..]));
}

#[test]
fn a_full_server_gives_a_new_connection_a_moment_to_send_its_request() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let args = ["--site", path(&site), "--no-model", "--max-connections", "2", "--queue", "1"];
    let server = Serving::start(&args, None);
    let timeout = Duration::from_secs(10);
    let get = b"GET /app.js HTTP/1.1\r\nHost: x\r\n\r\n";
    let served = |connection: &mut Connection, which: &str| {
        let response = connection.response(false);
        assert_eq!(
            (response.status, response.body.as_slice()),
            (200, &b"export const x = 1;\n"[..]),
            "{which}"
        );
    };

    // Two new connections take both places, a third waits for one, and a fourth is refused:
    // the server is full, and has said so. The two that have places send their requests only
    // now, as a client under load may: they are served all the same.
    let mut new: Vec<Connection> = (0..3).map(|_| Connection::open(server.port, timeout)).collect();
    let mut refused = Connection::open(server.port, timeout);
    refused.send(get);
    assert_eq!(refused.response(false).status, 503);
    for connection in &mut new[..2] {
        connection.send(get);
        served(connection, "one with a place");
    }
    // Idle after their reply, they make room at once for the one waiting.
    new[2].send(get);
    served(&mut new[2], "the one waiting");
    assert!(new[0].closed() && new[1].closed());
    drop((new, server));

    // Connections that never send a request hold their places only that moment (on a new
    // server: this one may not have seen the last connection go yet).
    let server = Serving::start(&args, None);
    let mut silent: Vec<Connection> =
        (0..2).map(|_| Connection::open(server.port, timeout)).collect();
    let mut waiting = Connection::open(server.port, timeout);
    waiting.send(get);
    served(&mut waiting, "one waiting for silent ones");
    assert!(silent.iter_mut().all(Connection::closed));
}

#[cfg(target_os = "linux")]
#[test]
fn the_limit_on_open_files_is_raised_and_never_costs_a_download_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    let args = ["--site", path(&site), "--no-model"];
    let server = Serving::start_with_open_files(256, 4096, &args);
    assert_eq!(server.open_files_limit(), Some(4096), "the soft limit is raised to the hard one");
    drop(server);

    // A file larger than the socket buffers (sparse): a download that stalls holds its socket
    // and its file. 150 of them need more than 256 descriptors: the server serves the ones it
    // has room for and refuses the others with 503 (or, in the rush, closes them without a
    // word); a file that is there is never answered 404, and no client is left unanswered.
    std::fs::File::create(site.join("big.bin")).unwrap().set_len(24 << 20).unwrap();
    let server = Serving::start_with_open_files(256, 256, &args);
    let mut downloads: Vec<Connection> =
        (0..150).map(|_| Connection::open(server.port, Duration::from_secs(30))).collect();
    for connection in &mut downloads {
        connection.send(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    let (mut served, mut refused) = (0, 0);
    for (i, connection) in downloads.iter_mut().enumerate() {
        let mut line = String::new();
        match connection.reader.read_line(&mut line) {
            Ok(_) if line.starts_with("HTTP/1.1 200 ") => served += 1,
            Ok(_) if line.starts_with("HTTP/1.1 503 ") => refused += 1,
            Ok(0) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            other => panic!("download {i}: {other:?} {line:?}"),
        }
    }
    assert!(served >= 16 && refused >= 16, "{served} served, {refused} refused");
    drop(downloads);
    let got = server.get("/app.js");
    assert_eq!((got.status, got.body.as_slice()), (200, &b"export const x = 1;\n"[..]));
}

#[cfg(unix)]
#[test]
fn links_are_followed_only_to_visible_files_inside_the_site() {
    use std::os::unix::fs::symlink;
    let dir = tempfile::tempdir().unwrap();
    let site = make_site(dir.path());
    std::fs::create_dir_all(site.join(".git")).unwrap();
    std::fs::write(site.join(".git/config"), "[remote \"origin\"]").unwrap();
    symlink(".git/config", site.join("config.txt")).unwrap();
    symlink(".git", site.join("git")).unwrap();
    symlink(".env", site.join("env.txt")).unwrap();
    symlink(site.join(".git/config"), site.join("absolute.txt")).unwrap();
    symlink("app.js", site.join("linked.js")).unwrap();
    symlink("sub", site.join("pages")).unwrap();
    let server = Serving::start(&["--site", path(&site), "--no-model"], None);

    for target in ["/config.txt", "/git/config", "/git/", "/env.txt", "/absolute.txt", "/link.txt"]
    {
        let got = server.get(target);
        assert_eq!(got.status, 404, "{target}");
        let body = String::from_utf8_lossy(&got.body);
        assert!(!body.contains("remote") && !body.contains("SECRET"), "{target}: {body}");
    }
    let linked = server.get("/linked.js");
    assert_eq!((linked.status, linked.body.as_slice()), (200, &b"export const x = 1;\n"[..]));
    assert_eq!(linked.header("Content-Type"), Some("text/javascript"));
    assert_eq!(server.get("/pages/").body, b"<p>sub</p>");
}
