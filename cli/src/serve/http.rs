//! The HTTP model of `edgerag serve` as the router sees it: a request ([`Incoming`]) and the
//! reply it builds ([`Reply`]), plus the path helpers the routes share.
//!
//! The wire protocol lives beside it: [`super::request`] parses request heads,
//! [`super::response`] frames replies and [`super::server`] runs the connections. A [`Reply`]
//! body is bytes in memory, a reader, sent with `Content-Length` when its length is known
//! (files are streamed from disk in pieces, never held in memory) and chunked otherwise, or a
//! [`Body::Stream`] that writes its pieces itself and flushes each to the client (server-sent
//! events). Readers and streams run on the server's blocking threads, never on the one that
//! serves the connections.

use std::fs::File;
use std::io::{self, Read, Write};
use std::sync::Arc;

use super::range::{self, Part};
use edgerag_cli::byteranges;

/// The request methods the router distinguishes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Method {
    /// `GET`.
    Get,
    /// `HEAD`: answered like `GET`; the body is left out when the reply is sent.
    Head,
    /// Anything else, by name (methods are case-sensitive).
    Other(String),
}

impl Method {
    /// The method named `name`.
    pub(crate) fn parse(name: &str) -> Self {
        match name {
            "GET" => Self::Get,
            "HEAD" => Self::Head,
            other => Self::Other(other.to_owned()),
        }
    }

    /// Its name, as sent.
    pub(crate) fn as_str(&self) -> &str {
        match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Other(name) => name,
        }
    }
}

/// What the router needs to know about a request.
#[derive(Debug, Clone)]
pub(crate) struct Incoming {
    /// The method.
    pub(crate) method: Method,
    /// The request target as sent (path and query), for logs.
    pub(crate) target: String,
    /// The percent-decoded path, without the query; `None` when the target is not an
    /// absolute path or does not decode to UTF-8.
    pub(crate) path: Option<String>,
    /// The header fields in the order received, names as sent.
    pub(crate) headers: Vec<(String, String)>,
    /// The body (empty unless the request had a `Content-Length`).
    pub(crate) body: Vec<u8>,
}

impl Incoming {
    /// A request for `target` with these headers and body.
    pub(crate) fn new(
        method: Method,
        target: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    ) -> Self {
        let path = decode_path(&target);
        Self { method, target, path, headers, body }
    }

    /// The values of every header field called `name` (case-insensitive), in order.
    pub(crate) fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether an `If-None-Match` header matches `etag` (weak comparison, as RFC 9110
    /// prescribes for this header; `*` matches anything).
    pub(crate) fn etag_matches(&self, etag: &str) -> bool {
        let bare = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
        self.header_values("If-None-Match")
            .flat_map(|header| header.split(','))
            .any(|tag| tag.trim() == "*" || bare(tag) == bare(etag))
    }
}

/// The path of a request target, percent-decoded: `None` unless it starts with `/` and
/// decodes to UTF-8 without NUL bytes. The query and fragment are dropped.
pub(crate) fn decode_path(target: &str) -> Option<String> {
    let raw = target.split(['?', '#']).next().unwrap_or_default();
    if !raw.starts_with('/') {
        return None;
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let path = String::from_utf8(out).ok()?;
    (!path.contains('\0')).then_some(path)
}

/// Percent-encodes `text` for one path segment of a URL: everything but RFC 3986's
/// unreserved characters.
pub(crate) fn encode_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// `Content-Type` of JSON.
pub(crate) const JSON: &str = "application/json";
/// `Content-Type` of bytes.
pub(crate) const OCTET_STREAM: &str = "application/octet-stream";
/// `Content-Type` of short messages.
const TEXT: &str = "text/plain; charset=utf-8";
/// What every cacheable reply says: keep it, but revalidate before each use.
const NO_CACHE: &str = "no-cache";

/// Writes a streamed body into the writer it is given: what it writes reaches the client at
/// each `flush` (and when it returns). An error ends the connection.
pub(crate) type Producer = Box<dyn FnOnce(&mut dyn Write) -> io::Result<()> + Send>;

/// The body of a [`Reply`].
pub(crate) enum Body {
    /// Held in memory, sent with `Content-Length`.
    Bytes(Vec<u8>),
    /// Read from `reader` in pieces: `len` bytes, sent with `Content-Length`, or, when `len`
    /// is `None`, everything up to its end, sent chunked.
    Read {
        /// Where the bytes come from.
        reader: Box<dyn Read + Send>,
        /// How many there are, when known.
        len: Option<u64>,
    },
    /// Written piece by piece by a producer and sent chunked, each flush as it happens
    /// (server-sent events). A `HEAD` request never runs it.
    Stream(Producer),
}

/// A response: status, headers and a streamed body.
pub(crate) struct Reply {
    /// The status code.
    pub(crate) status: u16,
    /// Headers besides the framing ones (`Content-Length`, `Transfer-Encoding`,
    /// `Connection`), `Date` and `Server`, which [`super::response`] adds.
    pub(super) headers: Vec<(&'static str, String)>,
    /// The body.
    pub(super) body: Body,
}

impl Reply {
    /// A body of `len` bytes read from `body`, of type `content_type`; with no `len`, the
    /// body is everything `body` yields, sent chunked.
    pub(crate) fn stream(
        status: u16,
        content_type: &str,
        body: Box<dyn Read + Send>,
        len: Option<u64>,
    ) -> Self {
        Self {
            status,
            headers: vec![("Content-Type", content_type.to_owned())],
            body: Body::Read { reader: body, len },
        }
    }

    /// A body that `produce` writes piece by piece, each flush reaching the client at once
    /// (server-sent events: `text/event-stream`).
    pub(crate) fn streamed(
        status: u16,
        content_type: &str,
        produce: impl FnOnce(&mut dyn Write) -> io::Result<()> + Send + 'static,
    ) -> Self {
        Self {
            status,
            headers: vec![("Content-Type", content_type.to_owned())],
            body: Body::Stream(Box::new(produce)),
        }
    }

    /// A body held in memory.
    pub(crate) fn bytes(status: u16, content_type: &str, bytes: Vec<u8>) -> Self {
        Self {
            status,
            headers: vec![("Content-Type", content_type.to_owned())],
            body: Body::Bytes(bytes),
        }
    }

    /// A short plain-text message.
    pub(crate) fn text(status: u16, text: &str) -> Self {
        Self::bytes(status, TEXT, text.as_bytes().to_vec())
    }

    /// 404.
    pub(crate) fn not_found() -> Self {
        Self::text(404, "not found\n")
    }

    /// 503 saying `text`, with `Retry-After: 1`: the server is full for a moment.
    pub(crate) fn busy(text: &str) -> Self {
        Self::text(503, text).header("Retry-After", "1")
    }

    /// 405, naming the methods `allow`ed.
    pub(crate) fn method_not_allowed(allow: &str) -> Self {
        Self::text(405, "method not allowed\n").header("Allow", allow)
    }

    /// 301 to `location`.
    pub(crate) fn redirect(location: String) -> Self {
        Self::text(301, "moved\n").header("Location", &location)
    }

    /// This reply with one more header.
    pub(crate) fn header(mut self, name: &'static str, value: &str) -> Self {
        self.headers.push((name, value.to_owned()));
        self
    }

    /// A cacheable reply with the entity tag `etag` (quoted): `Cache-Control: no-cache`, and a
    /// bodiless 304 instead of `make()` when the request already holds that version.
    pub(crate) fn cached(request: &Incoming, etag: &str, make: impl FnOnce() -> Self) -> Self {
        let reply = if request.etag_matches(etag) {
            Self { status: 304, headers: Vec::new(), body: Body::Bytes(Vec::new()) }
        } else {
            make()
        };
        reply.header("ETag", etag).header("Cache-Control", NO_CACHE)
    }

    /// A file of `len` bytes with the entity tag `etag`, cached as [`Reply::cached`] says,
    /// that answers byte ranges ([`range`]): 206 with the part asked for (several in a
    /// `multipart/byteranges` body), 416 when none of it exists, else 200 with all of it; `Accept-Ranges: bytes` in every case. `file` is the
    /// open file, its bytes read at their offsets.
    pub(crate) fn file(
        request: &Incoming,
        etag: &str,
        content_type: &str,
        file: Arc<File>,
        len: u64,
    ) -> Self {
        let part = |start, end| -> Box<dyn Read + Send> {
            Box::new(FilePart::new(Arc::clone(&file), start, end))
        };
        Self::cached(request, etag, || match range::requested(request, etag, len) {
            Part::Whole => Self::stream(200, content_type, part(0, len), Some(len)),
            Part::Range { start, end } => {
                let range = format!("bytes {start}-{}/{len}", end - 1);
                Self::stream(206, content_type, part(start, end), Some(end - start))
                    .header("Content-Range", &range)
            }
            Part::Ranges(ranges) => {
                let boundary = boundary();
                let mut pieces: Vec<Box<dyn Read + Send>> =
                    Vec::with_capacity(2 * ranges.len() + 1);
                let mut sent = 0;
                for range in ranges {
                    let head = byteranges::part_head(&boundary, content_type, &range, len);
                    sent += head.len() as u64 + (range.end - range.start);
                    pieces.push(Box::new(io::Cursor::new(head)));
                    pieces.push(part(range.start, range.end));
                }
                let tail = byteranges::tail(&boundary);
                sent += tail.len() as u64;
                pieces.push(Box::new(io::Cursor::new(tail)));
                let body = Box::new(Concat(pieces.into()));
                Self::stream(206, &byteranges::content_type(&boundary), body, Some(sent))
            }
            Part::Unsatisfiable => Self::text(416, "range not satisfiable\n")
                .header("Content-Range", &format!("bytes */{len}")),
        })
        .header("Accept-Ranges", "bytes")
    }
}

/// Readers read one after the other.
struct Concat(std::collections::VecDeque<Box<dyn Read + Send>>);

impl Read for Concat {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while let Some(first) = self.0.front_mut() {
            match first.read(buf)? {
                0 if !buf.is_empty() => drop(self.0.pop_front()),
                n => return Ok(n),
            }
        }
        Ok(0)
    }
}

/// A boundary of a multipart body: random, so that no file's bytes hold it by design.
fn boundary() -> String {
    use std::hash::{BuildHasher, Hasher};
    let random = std::collections::hash_map::RandomState::new().build_hasher().finish();
    format!("edgerag-{random:016x}")
}

/// Reads bytes `at..end` of a shared file at explicit offsets, so that any number of
/// readers can share one handle.
pub(crate) struct FilePart {
    file: Arc<File>,
    at: u64,
    end: u64,
}

impl FilePart {
    /// A reader of `file`'s bytes `start..end`.
    pub(crate) fn new(file: Arc<File>, start: u64, end: u64) -> Self {
        Self { file, at: start, end }
    }
}

impl Read for FilePart {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = usize::try_from(self.end.saturating_sub(self.at)).unwrap_or(usize::MAX);
        let want = buf.len().min(left);
        if want == 0 {
            return Ok(0);
        }
        let n = read_at(&self.file, &mut buf[..want], self.at)?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "the file was truncated"));
        }
        self.at += n as u64;
        Ok(n)
    }
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_percent_decoded_and_bad_ones_refused() {
        assert_eq!(decode_path("/a%20b/c.js?x=1#y").as_deref(), Some("/a b/c.js"));
        assert_eq!(decode_path("/%2e%2e/Cargo.toml").as_deref(), Some("/../Cargo.toml"));
        assert_eq!(decode_path("/%C3%A9").as_deref(), Some("/é"));
        assert_eq!(decode_path("/%zz"), None);
        assert_eq!(decode_path("/%2"), None);
        assert_eq!(decode_path("/%ff"), None);
        assert_eq!(decode_path("/a%00b"), None);
        assert_eq!(decode_path("http://example.com/"), None);
        assert_eq!(decode_path("*"), None);
    }

    #[test]
    fn segments_are_percent_encoded() {
        assert_eq!(encode_segment("demo.bundle"), "demo.bundle");
        assert_eq!(encode_segment("my docs/é?"), "my%20docs%2F%C3%A9%3F");
    }

    #[test]
    fn methods_are_case_sensitive() {
        assert_eq!(Method::parse("GET"), Method::Get);
        assert_eq!(Method::parse("HEAD").as_str(), "HEAD");
        assert_eq!(Method::parse("get"), Method::Other("get".to_owned()));
        assert_eq!(Method::parse("POST").as_str(), "POST");
    }

    #[test]
    fn if_none_match_compares_weakly() {
        let request = |headers: &[&str]| {
            let headers = headers.iter().map(|v| ("if-none-match".to_owned(), (*v).to_owned()));
            Incoming::new(Method::Get, "/".to_owned(), headers.collect(), Vec::new())
        };
        assert!(request(&["\"abc\""]).etag_matches("\"abc\""));
        assert!(request(&["\"x\", W/\"abc\""]).etag_matches("\"abc\""));
        assert!(request(&["\"x\"", "\"abc\""]).etag_matches("\"abc\""), "repeated fields");
        assert!(request(&["*"]).etag_matches("\"abc\""));
        assert!(!request(&["\"abd\""]).etag_matches("\"abc\""));
        assert!(!request(&[]).etag_matches("\"abc\""));
    }
}
