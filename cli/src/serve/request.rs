//! Parsing the head of an HTTP/1.1 request (RFC 9112): the request line and the header
//! fields, from bytes, within limits.
//!
//! [`parse`] is a pure function over the bytes received so far on a connection: it says that
//! they do not hold a whole head yet (`Ok(None)`), or returns the [`Head`] and how many bytes it
//! took (the rest belongs to the body or to a pipelined next request), or refuses the request
//! with a [`Rejection`]: the status to answer with before closing the connection. It needs no
//! socket, so fuzz targets call it directly. The body, which must come with a
//! `Content-Length` (a `Transfer-Encoding` is refused with 411: no client of `edgerag serve`
//! sends chunked bodies), is read by the server.
//!
//! Lines end in CRLF or a bare LF; empty lines before the request line are skipped. A head
//! that cannot be valid is refused as soon as its first bad line has arrived, without waiting
//! for the rest, and a head that has not ended within [`Limits::head_bytes`] is refused with
//! 414 (the request line is the long one) or 431.
//!
//! ```
//! use edgerag_cli::serve::request::{Limits, parse};
//!
//! let raw = b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\nGET /next";
//! let (head, used) = parse(raw, &Limits::SERVE).unwrap().unwrap();
//! assert_eq!((head.method.as_str(), head.target.as_str()), ("GET", "/index.html"));
//! assert_eq!(&raw[used..], b"GET /next");
//! assert!(parse(b"GET / HTTP/1.1\r\nHo", &Limits::SERVE).unwrap().is_none());
//! assert_eq!(parse(b"GET / HTTP/1.1\r\n\r\n", &Limits::SERVE).unwrap_err().status, 400);
//! ```

/// How much a request may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of the request line and header fields together, line ends and empty lines
    /// before the request line included.
    pub head_bytes: usize,
    /// Header fields.
    pub headers: usize,
    /// Bytes of a body: a larger `Content-Length` is refused with 413.
    pub body_bytes: u64,
}

impl Limits {
    /// What `edgerag serve` accepts: 16 KiB of head, 100 header fields, a 1 MiB body.
    pub const SERVE: Self = Self { head_bytes: 16 << 10, headers: 100, body_bytes: 1 << 20 };
}

/// The protocol version of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `HTTP/1.0`: the connection closes after each exchange unless asked to stay open, and
    /// chunked bodies are unknown.
    Http10,
    /// `HTTP/1.1`.
    Http11,
}

/// A request line and its header fields, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The method, as sent (a token; methods are case-sensitive).
    pub method: String,
    /// The request target, as sent (visible ASCII).
    pub target: String,
    /// The protocol version.
    pub version: Version,
    /// The header fields in order: names as sent, values without surrounding whitespace
    /// (bytes that are not UTF-8 replaced).
    pub headers: Vec<(String, String)>,
    /// The length of the body (0 without `Content-Length`), at most [`Limits::body_bytes`].
    pub content_length: u64,
    /// Whether the client waits for `100 Continue` before sending the body.
    pub expect_continue: bool,
    /// Whether the client wants the connection kept open after the response.
    pub keep_alive: bool,
}

/// A request refused: the status to answer with, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rejection {
    /// 400, 411, 413, 414, 417, 431 or 505.
    pub status: u16,
    /// A short explanation, sent as the body.
    pub reason: &'static str,
}

/// A [`Rejection`] with `status` and `reason`.
fn reject<T>(status: u16, reason: &'static str) -> Result<T, Rejection> {
    Err(Rejection { status, reason })
}

/// Parses the request head at the start of `bytes`, the bytes received so far.
///
/// Returns `Ok(None)` while the head is incomplete and could still be valid, and
/// `Ok(Some((head, used)))` once it is whole, `used` being its length in bytes, empty lines
/// before it and the empty line that ends it included.
///
/// # Errors
///
/// A [`Rejection`] when the bytes cannot begin a valid request within `limits`.
pub fn parse(bytes: &[u8], limits: &Limits) -> Result<Option<(Head, usize)>, Rejection> {
    let mut lines = Lines { bytes, at: 0, end: bytes.len().min(limits.head_bytes) };
    let request_line = loop {
        match lines.next(414, "the request line is too long")? {
            None => return Ok(None),
            Some([]) => {}
            Some(line) => break line,
        }
    };
    let (method, target, version) = parse_request_line(request_line)?;
    let mut headers = Vec::new();
    loop {
        let Some(line) = lines.next(431, "the header fields are too large")? else {
            return Ok(None);
        };
        if line.is_empty() {
            break;
        }
        if headers.len() == limits.headers {
            return reject(431, "too many header fields");
        }
        headers.push(header_field(line)?);
    }
    let framing = Framing::of(&headers, version, limits)?;
    let head = Head {
        method,
        target,
        version,
        headers,
        content_length: framing.content_length,
        expect_continue: framing.expect_continue,
        keep_alive: framing.keep_alive,
    };
    Ok(Some((head, lines.at)))
}

/// The lines of a head, within its byte budget.
struct Lines<'a> {
    /// The bytes received.
    bytes: &'a [u8],
    /// Where the next line starts.
    at: usize,
    /// Where the budget ends: a line must end (its LF included) before it.
    end: usize,
}

impl<'a> Lines<'a> {
    /// The next line without its CRLF or LF; `None` if it has not ended yet, and `status`
    /// with `reason` if it cannot end within the budget.
    fn next(&mut self, status: u16, reason: &'static str) -> Result<Option<&'a [u8]>, Rejection> {
        let rest = self.bytes.get(self.at..self.end).unwrap_or_default();
        let Some(newline) = rest.iter().position(|&b| b == b'\n') else {
            return if self.end < self.bytes.len() { reject(status, reason) } else { Ok(None) };
        };
        let line = rest.get(..newline).unwrap_or_default();
        self.at += newline + 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.contains(&b'\r') {
            return reject(400, "a bare CR in the request head");
        }
        Ok(Some(line))
    }
}

/// Parses `method SP target SP version`.
fn parse_request_line(line: &[u8]) -> Result<(String, String, Version), Rejection> {
    let bad = Rejection { status: 400, reason: "malformed request line" };
    let text = std::str::from_utf8(line).map_err(|_| bad)?;
    let mut parts = text.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad);
    };
    if !is_token(method) || target.is_empty() || !target.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad);
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
                _ => Err(bad),
            };
        }
    };
    Ok((method.to_owned(), target.to_owned(), version))
}

/// Parses `name: value`. Folded lines (obsolete) and whitespace before the colon are refused,
/// as RFC 9112 requires; a value may hold any visible byte, spaces and tabs.
fn header_field(line: &[u8]) -> Result<(String, String), Rejection> {
    let bad = Rejection { status: 400, reason: "malformed header field" };
    let colon = line.iter().position(|&b| b == b':').ok_or(bad)?;
    let (name, value) = line.split_at(colon);
    let name = std::str::from_utf8(name).map_err(|_| bad)?;
    if !is_token(name) {
        return Err(bad);
    }
    let value = value.get(1..).unwrap_or_default().trim_ascii();
    if value.iter().any(|&b| b.is_ascii_control() && b != b'\t') {
        return Err(bad);
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
    ) -> Result<Self, Rejection> {
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
                    return Err(bad);
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

    /// Parses a whole head from `raw` with the serve limits.
    fn head(raw: &str) -> Head {
        match parse(raw.as_bytes(), &Limits::SERVE) {
            Ok(Some((head, used))) => {
                assert_eq!(used, raw.len(), "{raw:?}: the whole head is used");
                head
            }
            other => panic!("{raw:?}: {other:?}"),
        }
    }

    /// The status a head is rejected with.
    fn rejected(raw: &str) -> u16 {
        match parse(raw.as_bytes(), &Limits::SERVE) {
            Err(rejection) => rejection.status,
            other => panic!("{raw:?}: {other:?}"),
        }
    }

    #[test]
    fn request_line_and_headers_are_parsed() {
        let head = head("GET /a%20b?q=1 HTTP/1.1\r\nHost: x\r\nIf-None-Match:  \"e\" \r\n\r\n");
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
            head("POST /v1 HTTP/1.1\r\nhOsT: x\r\ncontent-length: 5\r\nCONNECTION: Close\r\n\r\n");
        assert_eq!(head.content_length, 5);
        assert!(!head.keep_alive);
        let head = self::head("GET / HTTP/1.1\r\nHOST: x\r\nexpect: 100-Continue\r\n\r\n");
        assert!(head.expect_continue);
    }

    #[test]
    fn bare_lf_and_leading_empty_lines_are_accepted() {
        let head = head("\r\n\nGET / HTTP/1.1\nHost: x\n\n");
        assert_eq!((head.method.as_str(), head.target.as_str()), ("GET", "/"));
    }

    #[test]
    fn keep_alive_follows_the_version_and_connection() {
        let keep = |raw: &str| head(raw).keep_alive;
        assert!(keep("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
        assert!(!keep("GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive, close\r\n\r\n"));
        assert!(!keep("GET / HTTP/1.0\r\n\r\n"), "HTTP/1.0 needs no Host and closes");
        assert!(keep("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        let ignored = head("GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
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
        assert_eq!(same.content_length, 3, "repeated equal lengths are one");
    }

    #[test]
    fn a_bad_line_is_refused_before_the_head_ends() {
        let tls = parse(b"\x16\x03\x01\x02\0\x01\0\x01\xfc\x03\x03\n", &Limits::SERVE);
        assert_eq!(tls.unwrap_err().status, 400, "a TLS handshake");
        assert_eq!(rejected("GET / HTTP/1.1\r\nBad header\r\nHo"), 400);
        assert_eq!(rejected("GET / HTTP/3\r\n"), 400);
    }

    #[test]
    fn limits_are_enforced() {
        let long_line = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat(17 << 10));
        assert_eq!(rejected(&long_line), 414);
        assert_eq!(rejected(&long_line[..(16 << 10) + 1]), 414, "refused before it ends");
        assert!(parse(&long_line.as_bytes()[..16 << 10], &Limits::SERVE).unwrap().is_none());
        let big = format!("GET / HTTP/1.1\r\nHost: x\r\nCookie: {}\r\n\r\n", "a".repeat(17 << 10));
        assert_eq!(rejected(&big), 431);
        let blank = format!("{}GET / HTTP/1.1\r\nHost: x\r\n\r\n", "\r\n".repeat(9 << 10));
        assert_eq!(rejected(&blank), 414, "empty lines count");
        let many: String = (0..101).map(|i| format!("X-{i}: y\r\n")).collect();
        assert_eq!(rejected(&format!("GET / HTTP/1.1\r\nHost: x\r\n{many}\r\n")), 431);
        let fits: String = (0..99).map(|i| format!("X-{i}: y\r\n")).collect();
        assert_eq!(head(&format!("GET / HTTP/1.1\r\nHost: x\r\n{fits}\r\n")).headers.len(), 100);
        let body =
            format!("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n", (1 << 20) + 1);
        assert_eq!(rejected(&body), 413);
        let exact = format!("GET /{} HTTP/1.1\r\nHost: x\r\n\r\n", "a".repeat((16 << 10) - 27));
        assert_eq!(exact.len(), 16 << 10);
        assert_eq!(head(&exact).target.len(), (16 << 10) - 26, "a head of exactly the limit");
    }

    #[test]
    fn incomplete_heads_wait_for_more_and_the_rest_is_left() {
        let whole = "POST /v1 HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n";
        for end in 0..whole.len() {
            assert!(parse(&whole.as_bytes()[..end], &Limits::SERVE).unwrap().is_none(), "{end}");
        }
        let raw = format!("{whole}{{\"a\": 1}}\nGET / HTTP/1.1\r\nHost: x\r\n\r\n");
        let (first, used) = parse(raw.as_bytes(), &Limits::SERVE).unwrap().unwrap();
        assert_eq!((first.method.as_str(), first.content_length, used), ("POST", 9, whole.len()));
        let rest = &raw.as_bytes()[used + 9..];
        let (second, used) = parse(rest, &Limits::SERVE).unwrap().unwrap();
        assert_eq!((second.method.as_str(), used), ("GET", rest.len()));
    }

    #[test]
    fn any_bytes_are_parsed_without_panicking() {
        // A small deterministic generator: mutations of a valid head, and random bytes.
        let valid = b"POST /v1/chat HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\nExpect: 100-continue\r\n\r\n";
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..20_000 {
            let mut bytes = valid.to_vec();
            for _ in 0..next() % 4 {
                if bytes.is_empty() {
                    break;
                }
                let at = (next() % bytes.len() as u64) as usize;
                match next() % 3 {
                    0 => bytes[at] = next() as u8,
                    1 => bytes.insert(at, b"\r\n:,\0 "[(next() % 6) as usize]),
                    _ => {
                        bytes.remove(at);
                    }
                }
            }
            let limits = Limits { head_bytes: (next() % 128) as usize, ..Limits::SERVE };
            for limits in [Limits::SERVE, limits] {
                if let Ok(Some((head, used))) = parse(&bytes, &limits) {
                    assert!(used <= bytes.len() && used <= limits.head_bytes);
                    assert!(head.content_length <= limits.body_bytes);
                }
            }
        }
    }
}
