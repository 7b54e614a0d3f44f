//! Reading HTTP/1.1 requests off a connection (RFC 9112), within limits.
//!
//! [`read_head`] reads the request line and the header fields; [`read_body`] then reads the
//! body, which must come with a `Content-Length` (a `Transfer-Encoding` is refused with 411:
//! no client of this server sends chunked bodies). Lines end in CRLF or a bare LF; empty lines
//! before a request are skipped. Anything malformed, too large or too slow becomes a
//! [`Rejection`]: a status to answer with before closing the connection. The reader is kept
//! across requests, so bytes of a pipelined next request stay buffered for it.

use std::io::{self, BufRead, ErrorKind};
use std::time::{Duration, Instant};

/// How much a request may hold and how long it may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Bytes of the request line and header fields together, line ends included.
    pub(crate) head_bytes: usize,
    /// Header fields.
    pub(crate) headers: usize,
    /// Bytes of a body.
    pub(crate) body_bytes: u64,
    /// From the first byte of a request to the last of its body.
    pub(crate) time: Duration,
}

impl Limits {
    /// What `edgerag serve` accepts: 16 KiB of head, 100 header fields, a 1 MiB body, 30 s.
    pub(crate) const SERVE: Self = Self {
        head_bytes: 16 << 10,
        headers: 100,
        body_bytes: 1 << 20,
        time: Duration::from_secs(30),
    };
}

/// The protocol version of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    /// `HTTP/1.0`: the connection closes after each exchange unless asked to stay open, and
    /// chunked bodies are unknown.
    Http10,
    /// `HTTP/1.1`.
    Http11,
}

/// A request line and its header fields, checked.
#[derive(Debug)]
pub(crate) struct Head {
    /// The method, as sent.
    pub(crate) method: String,
    /// The request target, as sent.
    pub(crate) target: String,
    /// The protocol version.
    pub(crate) version: Version,
    /// The header fields in order: names as sent, values without surrounding whitespace.
    pub(crate) headers: Vec<(String, String)>,
    /// The length of the body (0 without `Content-Length`).
    pub(crate) content_length: u64,
    /// Whether the client waits for `100 Continue` before sending the body.
    pub(crate) expect_continue: bool,
    /// Whether the client wants the connection kept open after the response.
    pub(crate) keep_alive: bool,
    /// When the first byte of the request arrived.
    started: Instant,
}

/// Why no request was read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The connection closed, or stayed idle past its read timeout, before a request began:
    /// the normal end of a connection.
    Idle,
    /// The connection failed or closed in the middle of a request: nothing to answer.
    Io(io::Error),
    /// The request is malformed, too large or too slow: answer, then close.
    Rejected(Rejection),
}

/// A request refused: the status to answer with, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rejection {
    /// 400, 408, 411, 413, 414, 417, 431 or 505.
    pub(crate) status: u16,
    /// A short explanation, sent as the body.
    pub(crate) reason: &'static str,
}

impl From<Rejection> for ReadError {
    fn from(rejection: Rejection) -> Self {
        Self::Rejected(rejection)
    }
}

/// A [`ReadError::Rejected`] with `status` and `reason`.
fn reject<T>(status: u16, reason: &'static str) -> Result<T, ReadError> {
    Err(ReadError::Rejected(Rejection { status, reason }))
}

/// Reads the next request's line and header fields. Blocks until they arrive, the reader's
/// timeout passes or the connection closes.
pub(crate) fn read_head(reader: &mut impl BufRead, limits: &Limits) -> Result<Head, ReadError> {
    let mut lines = LineReader { budget: limits.head_bytes, started: None, time: limits.time };
    let mut line = Vec::new();
    loop {
        lines.read(reader, &mut line, 414, "the request line is too long")?;
        if !line.is_empty() {
            break;
        }
    }
    let (method, target, version) = request_line(&line)?;
    let mut headers = Vec::new();
    loop {
        lines.read(reader, &mut line, 431, "the header fields are too large")?;
        if line.is_empty() {
            break;
        }
        if headers.len() == limits.headers {
            return reject(431, "too many header fields");
        }
        headers.push(header_field(&line)?);
    }
    let started = lines.started.unwrap_or_else(Instant::now);
    let framing = Framing::of(&headers, version, limits)?;
    Ok(Head {
        method,
        target,
        version,
        headers,
        content_length: framing.content_length,
        expect_continue: framing.expect_continue,
        keep_alive: framing.keep_alive,
        started,
    })
}

/// Reads the body announced by `head`, within the time left for the request.
pub(crate) fn read_body(
    reader: &mut impl BufRead,
    head: &Head,
    limits: &Limits,
) -> Result<Vec<u8>, ReadError> {
    let len = usize::try_from(head.content_length).map_err(|_| {
        ReadError::Rejected(Rejection { status: 413, reason: "the body is too large" })
    })?;
    let mut body = Vec::with_capacity(len.min(64 << 10));
    while body.len() < len {
        if head.started.elapsed() > limits.time {
            return reject(408, "the request took too long");
        }
        let available = match reader.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if is_timeout(&e) => return reject(408, "the request took too long"),
            Err(e) => return Err(ReadError::Io(e)),
        };
        if available.is_empty() {
            return Err(ReadError::Io(ErrorKind::UnexpectedEof.into()));
        }
        let take = available.len().min(len - body.len());
        body.extend_from_slice(&available[..take]);
        reader.consume(take);
    }
    Ok(body)
}

/// Whether `error` is a socket read timeout (`WouldBlock` on Unix, `TimedOut` on Windows).
pub(crate) fn is_timeout(error: &io::Error) -> bool {
    matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// Reads the lines of one request head against a shared byte budget and deadline.
struct LineReader {
    /// Bytes the head may still take.
    budget: usize,
    /// When its first byte arrived; `None` until then.
    started: Option<Instant>,
    /// How long the request may take.
    time: Duration,
}

impl LineReader {
    /// Reads one line into `line`, without its CRLF or LF; a line over the budget is
    /// rejected with `status` and `reason`.
    fn read(
        &mut self,
        reader: &mut impl BufRead,
        line: &mut Vec<u8>,
        status: u16,
        reason: &'static str,
    ) -> Result<(), ReadError> {
        line.clear();
        loop {
            if let Some(started) = self.started
                && started.elapsed() > self.time
            {
                return reject(408, "the request took too long");
            }
            let available = match reader.fill_buf() {
                Ok(available) => available,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if is_timeout(&e) && self.started.is_none() => return Err(ReadError::Idle),
                Err(e) if is_timeout(&e) => return reject(408, "the request took too long"),
                Err(e) => return Err(ReadError::Io(e)),
            };
            if available.is_empty() {
                return Err(match self.started {
                    None => ReadError::Idle,
                    Some(_) => ReadError::Io(ErrorKind::UnexpectedEof.into()),
                });
            }
            self.started.get_or_insert_with(Instant::now);
            let newline = available.iter().position(|&b| b == b'\n');
            let take = newline.map_or(available.len(), |i| i + 1);
            if take > self.budget {
                return reject(status, reason);
            }
            line.extend_from_slice(&available[..take]);
            reader.consume(take);
            self.budget -= take;
            if newline.is_some() {
                line.pop();
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.contains(&b'\r') {
                    return reject(400, "a bare CR in the request head");
                }
                return Ok(());
            }
        }
    }
}

/// Parses `method SP target SP version`.
fn request_line(line: &[u8]) -> Result<(String, String, Version), ReadError> {
    let bad = Rejection { status: 400, reason: "malformed request line" };
    let text = std::str::from_utf8(line).map_err(|_| bad)?;
    let mut parts = text.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad.into());
    };
    if !is_token(method) || target.is_empty() || !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad.into());
    }
    let version = match version {
        "HTTP/1.1" => Version::Http11,
        "HTTP/1.0" => Version::Http10,
        other => {
            let digits = other.strip_prefix("HTTP/").map(str::as_bytes);
            return match digits {
                Some([major, b'.', minor]) if major.is_ascii_digit() && minor.is_ascii_digit() => {
                    reject(505, "only HTTP/1.0 and HTTP/1.1 are supported")
                }
                _ => Err(bad.into()),
            };
        }
    };
    Ok((method.to_owned(), target.to_owned(), version))
}

/// Parses `name: value`. Folded lines (obsolete) and whitespace before the colon are refused,
/// as RFC 9112 requires; a value may hold any visible byte, spaces and tabs.
fn header_field(line: &[u8]) -> Result<(String, String), ReadError> {
    let bad = Rejection { status: 400, reason: "malformed header field" };
    let colon = line.iter().position(|&b| b == b':').ok_or(bad)?;
    let name = std::str::from_utf8(&line[..colon]).map_err(|_| bad)?;
    if !is_token(name) {
        return Err(bad.into());
    }
    let value = line[colon + 1..].trim_ascii();
    if value.iter().any(|&b| b.is_ascii_control() && b != b'\t') {
        return Err(bad.into());
    }
    Ok((name.to_owned(), String::from_utf8_lossy(value).into_owned()))
}

/// Whether `text` is an RFC 9110 token (method and field names).
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// What the header fields say about the body and the connection.
struct Framing {
    content_length: u64,
    expect_continue: bool,
    keep_alive: bool,
}

impl Framing {
    /// Checks `Host`, `Content-Length`, `Transfer-Encoding`, `Expect` and `Connection`.
    fn of(
        headers: &[(String, String)],
        version: Version,
        limits: &Limits,
    ) -> Result<Self, ReadError> {
        let values = |name: &'static str| {
            headers.iter().filter(move |(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v)
        };
        let hosts = values("Host").count();
        if hosts > 1 || (hosts == 0 && version == Version::Http11) {
            return reject(400, "an HTTP/1.1 request needs exactly one Host header field");
        }
        let mut lengths = values("Content-Length").flat_map(|v| v.split(',')).map(str::trim);
        if values("Transfer-Encoding").next().is_some() {
            if lengths.next().is_some() {
                return reject(400, "both Content-Length and Transfer-Encoding");
            }
            return reject(411, "send the body with a Content-Length, not a Transfer-Encoding");
        }
        let content_length = match lengths.next() {
            None => 0,
            Some(first) => {
                if lengths.any(|other| other != first) {
                    return reject(400, "conflicting Content-Length values");
                }
                let bad = Rejection { status: 400, reason: "malformed Content-Length" };
                if first.is_empty() || !first.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(bad.into());
                }
                first.parse::<u64>().map_err(|_| bad)?
            }
        };
        if content_length > limits.body_bytes {
            return reject(413, "the body is too large");
        }
        // RFC 9110: an HTTP/1.0 client cannot expect 100 Continue; the field is ignored.
        let mut expect_continue = false;
        if version == Version::Http11 {
            for value in values("Expect") {
                if !value.eq_ignore_ascii_case("100-continue") {
                    return reject(417, "only Expect: 100-continue is supported");
                }
                expect_continue = true;
            }
        }
        let options: Vec<&str> =
            values("Connection").flat_map(|v| v.split(',')).map(str::trim).collect();
        let has = |option: &str| options.iter().any(|o| o.eq_ignore_ascii_case(option));
        let keep_alive = match version {
            Version::Http11 => !has("close"),
            Version::Http10 => has("keep-alive") && !has("close"),
        };
        Ok(Self { content_length, expect_continue, keep_alive })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Cursor, Read};

    /// Reads one head from `raw` with the serve limits.
    fn head(raw: &str) -> Result<Head, ReadError> {
        read_head(&mut Cursor::new(raw.as_bytes()), &Limits::SERVE)
    }

    /// The status a head is rejected with.
    fn rejected(raw: &str) -> u16 {
        match head(raw) {
            Err(ReadError::Rejected(rejection)) => rejection.status,
            other => panic!("{raw:?}: {other:?}"),
        }
    }

    #[test]
    fn request_line_and_headers_are_parsed() {
        let head =
            head("GET /a%20b?q=1 HTTP/1.1\r\nHost: x\r\nIf-None-Match:  \"e\" \r\n\r\n").unwrap();
        assert_eq!(head.method, "GET");
        assert_eq!(head.target, "/a%20b?q=1");
        assert_eq!(head.version, Version::Http11);
        assert_eq!(
            head.headers,
            [("Host".to_owned(), "x".to_owned()), ("If-None-Match".to_owned(), "\"e\"".to_owned())]
        );
        assert_eq!(head.content_length, 0);
        assert!(head.keep_alive);
        assert!(!head.expect_continue);
    }

    #[test]
    fn header_names_are_case_insensitive() {
        let head =
            head("POST /v1 HTTP/1.1\r\nhOsT: x\r\ncontent-length: 5\r\nCONNECTION: Close\r\n\r\n")
                .unwrap();
        assert_eq!(head.content_length, 5);
        assert!(!head.keep_alive);
        let head = self::head("GET / HTTP/1.1\r\nHOST: x\r\nexpect: 100-Continue\r\n\r\n").unwrap();
        assert!(head.expect_continue);
    }

    #[test]
    fn bare_lf_and_leading_empty_lines_are_accepted() {
        let head = head("\r\n\nGET / HTTP/1.1\nHost: x\n\n").unwrap();
        assert_eq!((head.method.as_str(), head.target.as_str()), ("GET", "/"));
    }

    #[test]
    fn keep_alive_follows_the_version_and_connection() {
        let keep = |raw: &str| head(raw).unwrap().keep_alive;
        assert!(keep("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
        assert!(!keep("GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, close\r\n\r\n"));
        assert!(!keep("GET / HTTP/1.0\r\n\r\n"), "HTTP/1.0 needs no Host and closes");
        assert!(keep("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        let ignored = head("GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n").unwrap();
        assert!(!ignored.expect_continue, "HTTP/1.0 cannot expect 100 Continue");
    }

    #[test]
    fn bad_input_is_rejected() {
        for raw in [
            "GET /\r\nHost: x\r\n\r\n",
            "GET  / HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n",
            "G(ET / HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET /é HTTP/1.1\r\nHost: x\r\n\r\n",
            "GET / http/1.1\r\nHost: x\r\n\r\n",
            "GET / HTTP/1.1\r\nHost x\r\n\r\n",
            "GET / HTTP/1.1\r\nHost : x\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\0y\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\ry\r\n\r\n",
            "GET / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1, 2\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        ] {
            assert_eq!(rejected(raw), 400, "{raw:?}");
        }
        assert_eq!(rejected("GET / HTTP/2.0\r\nHost: x\r\n\r\n"), 505);
        assert_eq!(
            rejected("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"),
            411
        );
        assert_eq!(rejected("GET / HTTP/1.1\r\nHost: x\r\nExpect: nothing\r\n\r\n"), 417);
        let same =
            head("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\ncontent-length: 3, 3\r\n\r\n");
        assert_eq!(same.unwrap().content_length, 3, "repeated equal lengths are one");
    }

    #[test]
    fn limits_are_enforced() {
        let long_line = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(17 << 10));
        assert_eq!(rejected(&long_line), 414);
        let big = format!("GET / HTTP/1.1\r\nHost: x\r\nCookie: {}\r\n\r\n", "a".repeat(17 << 10));
        assert_eq!(rejected(&big), 431);
        let many: String = (0..101).map(|i| format!("X-{i}: y\r\n")).collect();
        assert_eq!(rejected(&format!("GET / HTTP/1.1\r\nHost: x\r\n{many}\r\n")), 431);
        let fits: String = (0..99).map(|i| format!("X-{i}: y\r\n")).collect();
        assert_eq!(
            head(&format!("GET / HTTP/1.1\r\nHost: x\r\n{fits}\r\n")).unwrap().headers.len(),
            100
        );
        let body =
            format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", (1 << 20) + 1);
        assert_eq!(rejected(&body), 413);
    }

    #[test]
    fn the_end_of_input_is_idle_before_a_request_and_an_error_within_one() {
        assert!(matches!(head(""), Err(ReadError::Idle)));
        assert!(matches!(head("GET / HTTP/1.1\r\nHo"), Err(ReadError::Io(_))));
        assert!(matches!(head("GET / HTTP/1.1\r\nHost: x\r\n"), Err(ReadError::Io(_))));
    }

    #[test]
    fn bodies_are_read_by_length_and_the_next_request_stays_buffered() {
        let raw = "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n\
                   {\"a\": 1}\nGET / HTTP/1.1\r\nHost: x\r\n\r\n";
        // A small buffer, so that the body arrives in pieces.
        let mut reader = BufReader::with_capacity(4, Cursor::new(raw.as_bytes()));
        let first = read_head(&mut reader, &Limits::SERVE).unwrap();
        assert_eq!(first.method, "POST");
        let body = read_body(&mut reader, &first, &Limits::SERVE).unwrap();
        assert_eq!(body, b"{\"a\": 1}\n");
        let second = read_head(&mut reader, &Limits::SERVE).unwrap();
        assert_eq!((second.method.as_str(), second.content_length), ("GET", 0));
        assert!(read_body(&mut reader, &second, &Limits::SERVE).unwrap().is_empty());
        let mut rest = Vec::new();
        reader.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());

        let cut = "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nshort";
        let mut reader = Cursor::new(cut.as_bytes());
        let head = read_head(&mut reader, &Limits::SERVE).unwrap();
        assert!(matches!(read_body(&mut reader, &head, &Limits::SERVE), Err(ReadError::Io(_))));
    }
}
