//! Reading a paged bundle (format version 4) by range: from a local file, over HTTP from
//! `edgerag serve` and from nginx, and from a server that ignores `Range`.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use edgerag_cli::byteranges;
use edgerag_cli::source::{BundleSource, FileSource, HttpSource};
use edgerag_core::bundle::ivf::IvfParams;
use edgerag_core::bundle::lazy::{Body, DEFAULT_BUDGET, Layout};
use edgerag_core::bundle::paged::{CODED, PagedFile, RangeSource};
use edgerag_core::query::LazySearcher;
use edgerag_core::{Error, SearchOptions};

use crate::cli::{self, edgerag, json as run_json};
use crate::serve::{Serving, make_site};
use crate::support::{fixture, one_error_line, path};

type Paged<S> = PagedFile<S, Body>;

/// The output of a future that is ready at once, as the CLI's reads are.
fn now<F: std::future::Future>(future: F) -> F::Output {
    edgerag_core::bundle::paged::ready_now(future).expect("a CLI read is ready at once")
}

/// A bundle of the demo's documents without vectors, in format 3 at `dir/demo.bundle` and
/// converted to format 4 at `dir/site/demo.paged`, which is returned.
fn paged_file(dir: &Path) -> std::path::PathBuf {
    let whole = dir.join("demo.bundle");
    let corpus = cli::demo_corpus();
    let build = ["build", path(&corpus), "-o", path(&whole), "--no-embed", "--name", "demo"];
    run_json(&[&build[..], &["--created", "1", "--format", "3", "--json"]].concat());
    let file = dir.join("site/demo.paged");
    let converted = run_json(&["convert", path(&whole), path(&file), "--json"]);
    assert_eq!(converted["from_format"], 3);
    assert_eq!(converted["bytes"], std::fs::metadata(&file).unwrap().len());
    file
}

/// A query's results (ids and texts) read through `source`, and what it cost.
fn search<S: RangeSource>(source: S, query: &str) -> (Vec<String>, Vec<String>, u64, u64) {
    let searcher = now(LazySearcher::open(source, DEFAULT_BUDGET)).unwrap();
    let hits = now(searcher.search(query, &SearchOptions::default())).unwrap();
    let io = searcher.io();
    let ids = hits.iter().map(|hit| hit.chunk_id.clone()).collect();
    (ids, hits.into_iter().map(|hit| hit.text).collect(), io.requests, io.bytes)
}

#[test]
fn a_converted_bundle_searches_as_the_bundle_read_whole_and_as_one_built_so() {
    let dir = tempfile::tempdir().unwrap();
    make_site(dir.path());
    let paged = paged_file(dir.path());
    let whole = dir.path().join("demo.bundle");
    let (paged, whole) = (path(&paged), path(&whole));
    // Unfiltered, and filtered by document and by heading.
    let filters: [&[&str]; 3] = [&[], &["--document", "normans.md"], &["--section", "tesla"]];
    for (mode, filter) in ["bm25", "graph", "hybrid"].into_iter().zip(filters.into_iter().cycle()) {
        for query in ["Who gave their name to Normandy?", "time hierarchy theorem"] {
            let search = |bundle: &str| {
                let args = ["search", bundle, query, "--mode", mode, "-k", "5", "--json"];
                run_json(&[&args[..], filter].concat())
            };
            let (mut got, expected) = (search(paged), search(whole));
            let io = got.as_object_mut().unwrap().remove("io").unwrap();
            assert!(io["requests"].as_u64().unwrap() > 1, "{io}");
            assert!(io["bytes"].as_u64().unwrap() < std::fs::metadata(paged).unwrap().len());
            // Each section's share: all but the one read that opened the file.
            let sections = io["sections"].as_object().unwrap();
            let sum = |field| sections.values().map(|s| s[field].as_u64().unwrap()).sum::<u64>();
            assert_eq!(sum("requests") + 1, io["requests"].as_u64().unwrap(), "{io}");
            assert!(sum("bytes") < io["bytes"].as_u64().unwrap(), "{io}");
            assert!(sections.contains_key("chunks"), "the results are read: {io}");
            assert_eq!(got, expected, "{mode}, {query:?}");
            assert!(expected.get("io").is_none());
        }
    }
    // `build` writes what converting its build of format 3 writes.
    let built = dir.path().join("built.paged");
    let corpus = cli::demo_corpus();
    let build = ["build", path(&corpus), "-o", path(&built), "--no-embed", "--name", "demo"];
    run_json(&[&build[..], &["--created", "1", "--json"]].concat());
    let same = std::fs::read(&built).unwrap() == std::fs::read(paged).unwrap();
    assert!(same, "build and convert wrote different files");
    // What cannot be done is said in one line.
    let again = edgerag(&["convert", paged, path(&dir.path().join("x"))]);
    assert_eq!(one_error_line(&again), format!("error: {paged}: already a bundle of format 4"));
    let probe = one_error_line(&edgerag(&["search", paged, "Normandy", "--probe", "0"]));
    assert!(probe.contains("probe must be at least 1 partition (got 0)"), "{probe}");
    // `inspect` reads its directory only; a damaged one is said in one line, naming the file.
    let inspected = run_json(&["inspect", paged, "--json"]);
    assert_eq!(inspected["manifest"]["corpus"], "demo");
    assert!(inspected["open_bytes"].as_u64().unwrap() <= 64 << 10, "{inspected}");
    let mut bytes = std::fs::read(paged).unwrap();
    bytes[100] ^= 0xff;
    let damaged = dir.path().join("damaged.paged");
    std::fs::write(&damaged, bytes).unwrap();
    let line = one_error_line(&edgerag(&["inspect", path(&damaged)]));
    let expected = format!("error: {}: corrupted bundle: checksum mismatch", path(&damaged));
    assert_eq!(line, expected);
    // `ask` answers from it as from the bundle read whole, and says what it read.
    let ask = |bundle: &str| {
        run_json(&["ask", bundle, "Who gave their name to Normandy?", "--extractive", "--json"])
    };
    let (mut got, expected) = (ask(paged), ask(whole));
    let io = got.as_object_mut().unwrap().remove("io").unwrap();
    assert!(io["requests"].as_u64().unwrap() > 1, "{io}");
    assert!(expected["answer"].as_str().unwrap().contains("Norm"), "{expected}");
    assert_eq!(got, expected);
}

#[test]
fn a_bundle_reads_the_same_from_its_file_and_over_http() {
    let dir = tempfile::tempdir().unwrap();
    make_site(dir.path());
    let file = paged_file(dir.path());
    let server = Serving::start(&["--site", path(&dir.path().join("site")), "--no-model"], None);
    let url = format!("http://127.0.0.1:{}/demo.paged", server.port);
    let query = "Who gave their name to Normandy?";

    let local = search(BundleSource::open(path(&file), Duration::from_secs(10)).unwrap(), query);
    let remote = search(BundleSource::open(&url, Duration::from_secs(10)).unwrap(), query);
    assert!(!local.0.is_empty() && local.1.iter().any(|text| text.contains("Normandy")));
    assert_eq!(local, remote, "the same hits, texts, requests and bytes");
    assert!(local.3 < std::fs::metadata(&file).unwrap().len(), "less than the whole file");
    // And so does `edgerag search`, given the URL, from `edgerag serve` and from nginx, a
    // common static server: the same results and the same reads.
    let search = |bundle: &str| run_json(&["search", bundle, query, "--json"]);
    let expected = search(path(&file));
    assert_eq!(search(&url), expected);
    let round_trips = expected["io"]["round_trips"].as_u64().unwrap();
    assert!(round_trips < expected["io"]["requests"].as_u64().unwrap(), "{expected}");
    if let Some(nginx) = Nginx::start(&dir.path().join("site")) {
        assert_eq!(search(&format!("http://127.0.0.1:{}/demo.paged", nginx.port)), expected);
        // A request a round trip: each read's ranges came in one multipart answer.
        assert_eq!(nginx.requests() as u64, round_trips);
    }

    // A slot changed on disk is refused, by name, over HTTP too.
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last - 40] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    let source = HttpSource::new(&url, Duration::from_secs(10));
    let paged: Paged<_> = now(PagedFile::open(source, 1 << 20)).unwrap();
    let section = paged.sections().len() as u32 - 1;
    let last_slot = paged.sections()[section as usize].slots - 1;
    let error = now(paged.slots(section, &[last_slot])).unwrap_err();
    assert!(matches!(error, Error::CorruptedPage(_)), "{error}");
    assert!(error.to_string().contains(&format!("slot {last_slot} of section")), "{error}");

    // A file that is not there is a clear error.
    let missing = format!("http://127.0.0.1:{}/nothing.paged", server.port);
    let source = BundleSource::open(&missing, Duration::from_secs(10)).unwrap();
    let error = now(Paged::open(source, 1 << 20)).unwrap_err();
    assert_eq!(error.to_string(), format!("reading the bundle: GET {missing}: HTTP status 404"));
    let error = BundleSource::open("/nowhere/x.paged", Duration::from_secs(1)).unwrap_err();
    assert!(error.to_string().starts_with("reading the bundle: /nowhere/x.paged: "), "{error}");
}

#[test]
fn a_bundle_of_coded_vector_lists_searches_the_same_over_http_as_from_its_file() {
    // A bundle with vectors (12 chunks), laid out in partitions of 4 so that its lists hold
    // codes and its rows lie apart, as builds lay out a corpus of more than 256 chunks.
    let dir = tempfile::tempdir().unwrap();
    make_site(dir.path());
    let whole = dir.path().join("normans.bundle");
    let [normans, html] = ["normans.md", "computational-complexity.html"].map(fixture);
    let build = ["build", path(&normans), path(&html), "-o", path(&whole), "--format", "3"];
    run_json(&[&build[..], &["--created", "1", "--json"]].concat());
    let bundle = edgerag_core::Bundle::from_bytes(&std::fs::read(&whole).unwrap()).unwrap();
    let ivf = IvfParams { partition: 4, ..IvfParams::default() };
    let bytes = bundle.to_paged_bytes(&Layout { ivf, ..Layout::default() }).unwrap();
    let file = dir.path().join("site/coded.paged");
    std::fs::write(&file, &bytes).unwrap();
    let paged: Paged<_> = now(PagedFile::open(FileSource::open(&file).unwrap(), 1 << 20)).unwrap();
    assert_ne!(paged.flags() & CODED, 0, "the lists hold codes");

    let server = Serving::start(&["--site", path(&dir.path().join("site")), "--no-model"], None);
    let nginx = Nginx::start(&dir.path().join("site"));
    let ports = std::iter::once(server.port).chain(nginx.as_ref().map(|nginx| nginx.port));
    let urls: Vec<String> =
        ports.map(|port| format!("http://127.0.0.1:{port}/coded.paged")).collect();
    for mode in ["dense", "hybrid"] {
        let query = "Who gave their name to Normandy?";
        let search = |bundle: &str| run_json(&["search", bundle, query, "--mode", mode, "--json"]);
        let expected = search(path(&file));
        let sections = expected["io"]["sections"].as_object().unwrap();
        assert!(sections.contains_key("rows"), "rescored from their rows: {expected}");
        let results = expected["results"].as_array().unwrap();
        assert!(results.iter().any(|hit| hit["text"].as_str().unwrap().contains("Rollo")));
        for url in &urls {
            assert_eq!(search(url), expected, "{mode} from {url}");
        }
    }
}

/// nginx serving `root` on a free port, as a common static server serves files: `Range`,
/// `ETag`, `If-Range`. `None`, said on stderr, where nginx is not installed.
struct Nginx {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Nginx {
    #[allow(clippy::print_stderr)] // Says why a test skipped nginx.
    fn start(root: &Path) -> Option<Self> {
        let Some(nginx) = ["/usr/sbin/nginx", "/usr/local/sbin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).is_file())
        else {
            eprintln!("nginx not found (scripts/setup.sh static-server): skipped it");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let at = dir.path().display();
        let temp = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
            .map(|t| format!("{t}_temp_path {at}/{t};"))
            .join(" ");
        let config = format!(
            "daemon off; master_process off; pid {at}/nginx.pid; error_log {at}/error.log;\n\
             events {{ worker_connections 16; }}\n\
             http {{ access_log {at}/access.log; {temp}\n\
             server {{ listen 127.0.0.1:{port}; root {}; }} }}\n",
            root.display()
        );
        let config_path = dir.path().join("nginx.conf");
        std::fs::write(&config_path, config).unwrap();
        let mut command = Command::new(nginx);
        command.args([
            "-p",
            path(dir.path()),
            "-e",
            &format!("{at}/error.log"),
            "-c",
            path(&config_path),
        ]);
        let mut child = command.stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Some(Self { child, port, dir });
            }
            if let Some(status) = child.try_wait().unwrap() {
                let log = std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default();
                panic!("nginx exited ({status}): {log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("nginx did not listen on port {port}");
    }
}

impl Nginx {
    /// Requests served so far: the lines of the access log, once it stops growing (nginx
    /// logs a request after answering it).
    fn requests(&self) -> usize {
        let count = || {
            let log = std::fs::read_to_string(self.dir.path().join("access.log"));
            log.unwrap_or_default().lines().count()
        };
        let mut seen = count();
        for _ in 0..50 {
            std::thread::sleep(Duration::from_millis(100));
            match count() {
                now if now == seen => return seen,
                now => seen = now,
            }
        }
        seen
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Warnings an [`HttpSource`] of the test gave.
static WARNINGS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A server on a free port that answers request `n` (from 0), asking for the inclusive byte
/// ranges it names (none without `Range`), with what `answer` makes of them; and the count of
/// requests.
fn fake_server(
    answer: impl Fn(usize, &[(u64, u64)]) -> Vec<u8> + Send + 'static,
) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let requests = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&requests);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut line, mut ranges) = (String::new(), Vec::new());
            while reader.read_line(&mut line).unwrap() > 2 {
                let asked = line.to_ascii_lowercase();
                if let Some(set) = asked.trim().strip_prefix("range: bytes=") {
                    for range in set.split(',') {
                        let (start, end) = range.split_once('-').unwrap();
                        ranges.push((start.parse().unwrap(), end.parse().unwrap()));
                    }
                }
                line.clear();
            }
            let n = counted.fetch_add(1, Ordering::SeqCst);
            let _ = stream.write_all(&answer(n, &ranges));
        }
    });
    (port, requests)
}

/// An HTTP response of `status` with `headers` and `body`, on a connection the server then
/// closes (and says so, so that the client does not send another request on it).
fn response(status: &str, headers: &str, body: &[u8]) -> Vec<u8> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n{headers}\r\n",
        body.len()
    );
    [head.as_bytes(), body].concat()
}

#[test]
fn a_server_that_ignores_ranges_is_read_whole_once_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    make_site(dir.path());
    let file = paged_file(dir.path());
    let bytes = std::fs::read(&file).unwrap();
    let body = bytes.clone();
    let (port, requests) = fake_server(move |_, _| response("200 OK", "", &body));
    let url = format!("http://127.0.0.1:{port}/demo.paged");
    let warn = |text: &str| WARNINGS.lock().unwrap().push(text.to_owned());
    let source = HttpSource::with_warnings(&url, Duration::from_secs(10), warn);
    let query = "Who gave their name to Normandy?";
    let whole = search(source, query);
    let local = search(FileSource::open(&file).unwrap(), query);
    assert_eq!((&whole.0, &whole.1), (&local.0, &local.1), "the same hits and texts");
    assert_eq!(requests.load(Ordering::SeqCst), 1, "one request: the first read got it all");
    let warnings = WARNINGS.lock().unwrap().clone();
    let expected =
        format!("{url} ignores byte ranges: the whole bundle ({} bytes) is read", bytes.len());
    assert_eq!(warnings, [expected]);
}

#[test]
fn a_bundle_that_changes_on_the_server_while_it_is_read_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    make_site(dir.path());
    let bytes = std::fs::read(paged_file(dir.path())).unwrap();
    // Ranges as asked, with the ETag of a new version after the first.
    let (port, _) = fake_server(move |n, ranges| {
        let [(start, end)] = ranges[..] else { panic!("one range at a time here: {ranges:?}") };
        let end = end.min(bytes.len() as u64 - 1);
        let part = &bytes[start as usize..=end as usize];
        let etag = if n == 0 { "\"v1\"" } else { "\"v2\"" };
        let headers =
            format!("ETag: {etag}\r\nContent-Range: bytes {start}-{end}/{}\r\n", bytes.len());
        response("206 Partial Content", &headers, part)
    });
    let url = format!("http://127.0.0.1:{port}/demo.paged");
    let source = HttpSource::new(&url, Duration::from_secs(10));
    let file: Paged<_> = now(PagedFile::open(source, 1 << 20)).unwrap();
    let error = now(file.slots(0, &[0])).unwrap_err();
    let expected = format!("reading the bundle: GET {url}: the bundle changed on the server");
    assert!(error.to_string().starts_with(&expected), "{error}");
}

/// `ranges` of `bytes`, as a source reads them (cut at the end of the file).
fn cut(bytes: &[u8], ranges: &[std::ops::Range<u64>]) -> Vec<Vec<u8>> {
    let at = |offset: u64| (offset as usize).min(bytes.len());
    ranges.iter().map(|r| bytes[at(r.start)..at(r.end).max(at(r.start))].to_vec()).collect()
}

#[test]
fn several_ranges_come_in_one_request_from_edgerag_serve_and_from_nginx() {
    let dir = tempfile::tempdir().unwrap();
    make_site(dir.path());
    let file = paged_file(dir.path());
    let bytes = std::fs::read(&file).unwrap();
    let len = bytes.len() as u64;
    // Out of order, overlapping, empty, and running past the end or starting there.
    let ranges = [100..200, 0..10, 5000..5100, len - 5..len + 10, 7..7, len + 1..len + 9, 150..160];
    let expected = cut(&bytes, &ranges);
    let read = |url: &str| now(HttpSource::new(url, Duration::from_secs(10)).read(&ranges));

    let server = Serving::start(&["--site", path(&dir.path().join("site")), "--no-model"], None);
    let url = format!("http://127.0.0.1:{}/demo.paged", server.port);
    assert_eq!(read(&url).unwrap(), expected);
    // What `edgerag serve` answers: one body of the ranges asked, ascending, joined where they
    // meet.
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    let request = "GET /demo.paged HTTP/1.1\r\nHost: x\r\nRange: bytes=100-199,0-9,150-159\r\n\
                   Connection: close\r\n\r\n";
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    std::io::Read::read_to_end(&mut stream, &mut answer).unwrap();
    let split = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&answer[..split]).to_lowercase();
    assert!(head.starts_with("http/1.1 206"), "{head}");
    let content_type = head.lines().find_map(|l| l.strip_prefix("content-type: ")).unwrap();
    let boundary = byteranges::boundary(content_type).expect(content_type);
    let parts = byteranges::parse(&answer[split + 4..], boundary).unwrap();
    let got: Vec<_> = parts.iter().map(|p| (p.range.clone(), p.len, p.bytes.to_vec())).collect();
    let part = |r: std::ops::Range<u64>| (r.clone(), Some(len), cut(&bytes, &[r]).remove(0));
    assert_eq!(got, [part(0..10), part(100..200)]);

    if let Some(nginx) = Nginx::start(&dir.path().join("site")) {
        let url = format!("http://127.0.0.1:{}/demo.paged", nginx.port);
        assert_eq!(read(&url).unwrap(), expected);
        assert_eq!(nginx.requests(), 1, "one request for every range");
    }
}

#[test]
fn a_server_that_answers_one_range_at_a_time_or_joins_them_is_read_right() {
    let bytes: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let len = bytes.len() as u64;
    let part = move |bytes: &[u8], start: u64, end: u64| {
        let end = end.min(len - 1);
        let headers = format!("Content-Range: bytes {start}-{end}/{len}\r\n");
        response("206 Partial Content", &headers, &bytes[start as usize..=end as usize])
    };
    let ranges = [10..20, 200_000..200_100, 50..60];
    let expected = cut(&bytes, &ranges);

    // One that answers a request for several ranges with the whole file is asked for each
    // range on its own, from then on, and nothing is read whole.
    let body = bytes.clone();
    let (port, requests) = fake_server(move |_, ranges| match ranges {
        [(start, end)] => part(&body, *start, *end),
        _ => response("200 OK", "", &body),
    });
    let url = format!("http://127.0.0.1:{port}/x");
    let source = HttpSource::with_warnings(&url, Duration::from_secs(10), |w| panic!("{w}"));
    assert_eq!(now(source.read(&ranges)).unwrap(), expected);
    assert_eq!(requests.load(Ordering::SeqCst), 1 + ranges.len());
    assert_eq!(now(source.read(&ranges[..2])).unwrap(), expected[..2]);
    assert_eq!(requests.load(Ordering::SeqCst), 1 + ranges.len() + 2);

    // One that joins ranges a few bytes apart into one part (as the RFC allows) is cut where
    // they lie.
    let body = bytes.clone();
    let (port, requests) = fake_server(move |_, ranges| {
        let start = ranges.iter().map(|r| r.0).min().unwrap();
        part(&body, start, ranges.iter().map(|r| r.1).max().unwrap())
    });
    let source = HttpSource::new(&format!("http://127.0.0.1:{port}/x"), Duration::from_secs(10));
    let near = [10..20, 300..310, 50..60];
    assert_eq!(now(source.read(&near)).unwrap(), cut(&bytes, &near));
    assert_eq!(requests.load(Ordering::SeqCst), 1);

    // One that answers other ranges than those asked is an error.
    let body = bytes.clone();
    let (port, _) = fake_server(move |_, _| part(&body, 0, 5));
    let url = format!("http://127.0.0.1:{port}/x");
    let error = now(HttpSource::new(&url, Duration::from_secs(10)).read(&ranges)).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("reading the bundle: GET {url}: the server answered other ranges")
    );
}
