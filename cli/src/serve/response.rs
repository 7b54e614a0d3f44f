//! Writing a [`Reply`] on a connection (RFC 9112).
//!
//! The status line is always `HTTP/1.1`, followed by `Date`, `Server`,
//! `X-Content-Type-Options`, the reply's own headers and the framing: `Content-Length` when
//! the body's length is known, else `Transfer-Encoding: chunked` (an HTTP/1.0 client, which
//! knows no chunks, gets the bare body and the connection closes after it). 1xx, 204 and 304
//! replies have no body, and a `HEAD` request gets the headers only. `Connection: close` is
//! sent whenever the connection closes after the reply.
//!
//! [`send`] runs on the server's event loop and never blocks it: a reader body is read a
//! piece at a time on the blocking threads, and a stream's producer runs there, its pieces
//! passed over a small channel (which is what stops it when the client goes: its next write
//! fails). Every write to the client must make progress within the stall time, else the
//! client is taken to have stopped reading and the connection is given up.

use std::fmt::Write as _;
use std::io::{self, ErrorKind, Read, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task;
use tokio::time::timeout;

use super::http::{Body, Producer, Reply};
use super::request::Version;

/// What the exchange a reply answers asks of it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exchange {
    /// The request's protocol version.
    pub(crate) version: Version,
    /// A `HEAD` request: headers only.
    pub(crate) head_only: bool,
    /// Whether the connection may stay open for another request.
    pub(crate) keep_alive: bool,
}

/// How many bytes a body is read and written in.
const PIECE: usize = 64 << 10;
/// Pieces of a stream that may wait for the client before its producer waits too.
const STREAM_BACKLOG: usize = 8;

/// Writes `reply` to `out` and flushes it; each write must progress within `stall`. Returns
/// whether the connection may carry another request; an error leaves the connection unusable
/// (the client may have gone, or stopped reading).
pub(crate) async fn send<W: AsyncWrite + Unpin>(
    reply: Reply,
    out: &mut W,
    exchange: Exchange,
    stall: Duration,
) -> io::Result<bool> {
    let Reply { status, headers, body } = reply;
    let bodiless = matches!(status, 100..=199 | 204 | 304);
    let length = match &body {
        Body::Bytes(bytes) => Some(bytes.len() as u64),
        Body::Read { len, .. } => *len,
        Body::Stream(_) => None,
    };
    let chunked = length.is_none() && exchange.version == Version::Http11;
    // Without a length or chunks, only the end of the connection ends the body.
    let until_close = length.is_none() && !chunked && !bodiless && !exchange.head_only;
    let keep_alive = exchange.keep_alive && !until_close;

    let mut head = String::with_capacity(512);
    let server = concat!("edgerag/", env!("CARGO_PKG_VERSION"));
    let fixed = [
        ("Date", http_date(SystemTime::now())),
        ("Server", server.to_owned()),
        ("X-Content-Type-Options", "nosniff".to_owned()),
    ];
    // fmt::Write into a String cannot fail.
    let _ = write!(head, "HTTP/1.1 {status} {}\r\n", reason(status));
    for (name, value) in fixed
        .iter()
        .map(|(n, v)| (*n, v.as_str()))
        .chain(headers.iter().filter(|(name, _)| !is_framing(name)).map(|(n, v)| (*n, v.as_str())))
    {
        // Headers are built by the router from names and values it controls; one that is
        // not valid is dropped rather than sent malformed (or split into two).
        if valid_header(name, value) {
            let _ = write!(head, "{name}: {value}\r\n");
        }
    }
    if !bodiless {
        match length {
            Some(len) => {
                let _ = write!(head, "Content-Length: {len}\r\n");
            }
            None if chunked => head.push_str("Transfer-Encoding: chunked\r\n"),
            None => {}
        }
    }
    if !keep_alive {
        head.push_str("Connection: close\r\n");
    } else if exchange.version == Version::Http10 {
        head.push_str("Connection: keep-alive\r\n");
    }
    head.push_str("\r\n");

    let mut out = Out { inner: out, pending: head.into_bytes(), stall };
    if !(bodiless || exchange.head_only) {
        match body {
            Body::Bytes(bytes) => out.put(&bytes).await?,
            Body::Read { reader, len } => copy(reader, &mut out, len, chunked).await?,
            Body::Stream(produce) => stream(produce, &mut out, chunked).await?,
        }
    }
    out.flush().await?;
    Ok(keep_alive)
}

/// The client's side of a connection: writes gathered into pieces, each to be taken by the
/// client within the stall time.
struct Out<'a, W> {
    /// The connection.
    inner: &'a mut W,
    /// Bytes not yet written.
    pending: Vec<u8>,
    /// How long a write may wait for the client.
    stall: Duration,
}

impl<W: AsyncWrite + Unpin> Out<'_, W> {
    /// Adds `bytes`, writing what is gathered once it makes a piece.
    async fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.pending.extend_from_slice(bytes);
        if self.pending.len() >= PIECE { self.write_pending().await } else { Ok(()) }
    }

    /// Adds `data` as one chunk of a chunked body, writing what is gathered once it makes a
    /// piece.
    async fn put_chunk(&mut self, data: &[u8]) -> io::Result<()> {
        write_chunk(&mut self.pending, data)?;
        if self.pending.len() >= PIECE { self.write_pending().await } else { Ok(()) }
    }

    /// Writes what is gathered.
    async fn write_pending(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        // Each write must take some bytes within the stall time: a slow reader is served, one
        // that stopped is not waited for.
        let mut rest = &self.pending[..];
        while !rest.is_empty() {
            let written =
                timeout(self.stall, self.inner.write(rest)).await.map_err(|_| stalled())??;
            if written == 0 {
                return Err(ErrorKind::WriteZero.into());
            }
            rest = &rest[written..];
        }
        self.pending.clear();
        Ok(())
    }

    /// Writes what is gathered and flushes the connection.
    async fn flush(&mut self) -> io::Result<()> {
        self.write_pending().await?;
        timeout(self.stall, self.inner.flush()).await.map_err(|_| stalled())?
    }
}

/// The error of a client that stopped reading.
fn stalled() -> io::Error {
    io::Error::new(ErrorKind::TimedOut, "the client stopped reading")
}

/// The error of a task of the blocking threads that did not finish (it panicked).
fn failed(error: task::JoinError) -> io::Error {
    io::Error::other(format!("a reply failed: {error}"))
}

/// A reader body.
type Reader = Box<dyn Read + Send>;

/// Reads up to `want` bytes of `reader` into `buffer` on the blocking threads.
async fn pull(
    mut reader: Reader,
    mut buffer: Vec<u8>,
    want: usize,
) -> io::Result<(Reader, Vec<u8>)> {
    task::spawn_blocking(move || {
        buffer.resize(want, 0);
        loop {
            match reader.read(&mut buffer) {
                Ok(n) => {
                    buffer.truncate(n);
                    return Ok((reader, buffer));
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    })
    .await
    .map_err(failed)?
}

/// Copies `reader` to `out` in pieces, as chunks if `chunked`: exactly `len` bytes when the
/// length is known (a reader that ends early is an error: the client has been promised
/// `len` bytes), else everything the reader yields.
async fn copy<W: AsyncWrite + Unpin>(
    mut reader: Reader,
    out: &mut Out<'_, W>,
    len: Option<u64>,
    chunked: bool,
) -> io::Result<()> {
    let mut buffer = Vec::with_capacity(PIECE);
    let mut left = len.unwrap_or(u64::MAX);
    while left > 0 {
        let want = usize::try_from(left).map_or(PIECE, |left| left.min(PIECE));
        (reader, buffer) = pull(reader, buffer, want).await?;
        if buffer.is_empty() {
            if len.is_some() {
                return Err(io::Error::new(ErrorKind::UnexpectedEof, "the body ended early"));
            }
            break;
        }
        if chunked {
            out.put_chunk(&buffer).await?;
        } else {
            out.put(&buffer).await?;
        }
        left = left.saturating_sub(buffer.len() as u64);
    }
    if chunked {
        out.put(LAST_CHUNK).await?;
    }
    Ok(())
}

/// Runs `produce` on the blocking threads and sends what it writes, each of its flushes as
/// it happens, as chunks if `chunked`. When the client cannot take a piece, the channel
/// closes and the producer's next flush fails: its error (it may say why it stopped) is the
/// one returned.
async fn stream<W: AsyncWrite + Unpin>(
    produce: Producer,
    out: &mut Out<'_, W>,
    chunked: bool,
) -> io::Result<()> {
    let (sender, mut pieces) = mpsc::channel(STREAM_BACKLOG);
    let producer = task::spawn_blocking(move || {
        let mut sink = Sink { sender, pending: Vec::new() };
        if chunked {
            let mut chunks = ChunkedWriter::new(&mut sink);
            produce(&mut chunks)?;
            chunks.finish().map(|_| ())
        } else {
            produce(&mut sink)?;
            sink.flush()
        }
    });
    let mut sent = Ok(());
    while let Some(piece) = pieces.recv().await {
        sent = match out.put(&piece).await {
            Ok(()) => out.flush().await,
            Err(e) => Err(e),
        };
        if sent.is_err() {
            break;
        }
    }
    drop(pieces);
    producer.await.map_err(failed)??;
    sent
}

/// The producer's end of a stream: what is written is passed on at each flush (and every
/// [`PIECE`] bytes); the flush waits while the client is behind.
struct Sink {
    /// To the connection.
    sender: mpsc::Sender<Vec<u8>>,
    /// Bytes written since the last flush.
    pending: Vec<u8>,
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if self.pending.len() >= PIECE {
            self.flush()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let piece = std::mem::take(&mut self.pending);
        self.sender
            .blocking_send(piece)
            .map_err(|_| io::Error::new(ErrorKind::BrokenPipe, "the client went away"))
    }
}

/// Whether `name` is a header the framing sets, never the router.
fn is_framing(name: &str) -> bool {
    ["Content-Length", "Transfer-Encoding", "Connection", "Date", "Server"]
        .iter()
        .any(|framing| framing.eq_ignore_ascii_case(name))
}

/// Whether `name: value` can be sent as it is: a token name, a value of visible ASCII, spaces
/// and tabs.
fn valid_header(name: &str, value: &str) -> bool {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    !name.is_empty()
        && name.bytes().all(token)
        && value.bytes().all(|b| b.is_ascii_graphic() || b == b' ' || b == b'\t')
}

/// Writes `data` to `out` as one chunk of a chunked body; nothing if it is empty (an empty
/// chunk would end the body).
fn write_chunk(out: &mut impl Write, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    write!(out, "{:X}\r\n", data.len())?;
    out.write_all(data)?;
    out.write_all(b"\r\n")
}

/// The end of a chunked body: the last chunk and an empty trailer section.
const LAST_CHUNK: &[u8] = b"0\r\n\r\n";

/// Sends what is written to it as chunks of a chunked body.
///
/// Writes are gathered up to 16 KiB per chunk; [`Write::flush`] sends what was gathered as
/// one chunk and flushes the connection, so each piece of a stream (a server-sent event)
/// reaches the client when it is flushed. [`ChunkedWriter::finish`] sends the last chunk.
/// An empty chunk, which would end the body, is never sent before that.
pub(crate) struct ChunkedWriter<W: Write> {
    /// The connection.
    inner: W,
    /// Bytes written and not yet sent.
    pending: Vec<u8>,
}

impl<W: Write> ChunkedWriter<W> {
    /// Gathered bytes are sent as a chunk once there are this many.
    const CHUNK: usize = 16 << 10;

    /// A chunked body written to `inner`.
    pub(crate) fn new(inner: W) -> Self {
        Self { inner, pending: Vec::new() }
    }

    /// Sends what is pending, the last chunk and an empty trailer section, and flushes.
    pub(crate) fn finish(mut self) -> io::Result<W> {
        write_chunk(&mut self.inner, &self.pending)?;
        self.inner.write_all(LAST_CHUNK)?;
        self.inner.flush()?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for ChunkedWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.pending.is_empty() && buf.len() >= Self::CHUNK {
            write_chunk(&mut self.inner, buf)?;
        } else {
            self.pending.extend_from_slice(buf);
            if self.pending.len() >= Self::CHUNK {
                write_chunk(&mut self.inner, &self.pending)?;
                self.pending.clear();
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        write_chunk(&mut self.inner, &self.pending)?;
        self.pending.clear();
        self.inner.flush()
    }
}

/// The reason phrase of a status code (empty for codes not listed; the phrase is optional).
fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        422 => "Unprocessable Content",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// `time` in the IMF-fixdate format of the `Date` header: `Sun, 06 Nov 1994 08:49:37 GMT`.
pub(crate) fn http_date(time: SystemTime) -> String {
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let seconds = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = seconds / 86_400;
    let of_day = seconds % 86_400;
    // Days to the civil date (H. Hinnant's algorithm), in eras of 400 years from 0000-03-01.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let march_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * march_month + 2) / 5 + 1;
    let month = if march_month < 10 { march_month + 3 } else { march_month - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    let weekday = WEEKDAYS.get((days % 7) as usize).copied().unwrap_or_default();
    let month = MONTHS.get((month - 1) as usize).copied().unwrap_or_default();
    format!(
        "{weekday}, {day:02} {month} {year} {:02}:{:02}:{:02} GMT",
        of_day / 3_600,
        of_day % 3_600 / 60,
        of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    /// A writer that records where each flush happened; as a connection, it takes at most
    /// `limit` bytes and then fails (a client that went away) or, if `hang`, waits forever
    /// (a client that stopped reading).
    #[derive(Default)]
    struct Recorder {
        data: Vec<u8>,
        flushes: Vec<usize>,
        limit: Option<usize>,
        hang: bool,
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.data.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            self.flushes.push(self.data.len());
            Ok(())
        }
    }

    impl AsyncWrite for Recorder {
        fn poll_write(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            let this = self.get_mut();
            match this.limit {
                Some(limit) if this.data.len() + buf.len() > limit && this.hang => Poll::Pending,
                Some(limit) if this.data.len() + buf.len() > limit => {
                    Poll::Ready(Err(ErrorKind::BrokenPipe.into()))
                }
                _ => Poll::Ready(Write::write(this, buf)),
            }
        }
        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Write::flush(self.get_mut()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Runs `future` on a runtime like the server's.
    fn block_on<F: std::future::Future>(future: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(future)
    }

    /// Decodes a chunked body, checking its framing; returns the chunks.
    fn dechunk(mut raw: &[u8]) -> Vec<Vec<u8>> {
        let mut chunks = Vec::new();
        loop {
            let line_end = raw.windows(2).position(|w| w == b"\r\n").expect("size line");
            let size = std::str::from_utf8(&raw[..line_end]).unwrap();
            let size = usize::from_str_radix(size, 16).expect("hex size");
            raw = &raw[line_end + 2..];
            if size == 0 {
                assert_eq!(raw, b"\r\n", "an empty trailer section ends the body");
                return chunks;
            }
            chunks.push(raw[..size].to_vec());
            assert_eq!(&raw[size..size + 2], b"\r\n");
            raw = &raw[size + 2..];
        }
    }

    /// Sends `reply` for `exchange`; returns the bytes written, the flushes and keep-alive.
    fn sent(reply: Reply, exchange: Exchange) -> (String, Vec<usize>, bool) {
        let mut out = Recorder::default();
        let keep = block_on(send(reply, &mut out, exchange, Duration::from_secs(60))).unwrap();
        (String::from_utf8(out.data).unwrap(), out.flushes, keep)
    }

    /// Splits a response into its head and body.
    fn split(response: &str) -> (&str, &str) {
        response.split_once("\r\n\r\n").expect("a blank line after the head")
    }

    const GET: Exchange = Exchange { version: Version::Http11, head_only: false, keep_alive: true };

    #[test]
    fn chunks_are_framed_and_each_flush_sends_one() {
        let mut out = Recorder::default();
        let mut chunks = ChunkedWriter::new(&mut out);
        chunks.write_all(b"data: a\n\n").unwrap();
        chunks.flush().unwrap();
        chunks.flush().unwrap(); // nothing pending: no empty chunk, which would end the body
        chunks.write_all(b"data: ").unwrap();
        chunks.write_all(b"bc\n\n").unwrap();
        chunks.flush().unwrap();
        let big = vec![b'x'; 40_000];
        chunks.write_all(&big).unwrap();
        chunks.write_all(b"tail").unwrap();
        chunks.finish().unwrap();
        let first = b"9\r\ndata: a\n\n\r\n".len();
        let second = first + b"A\r\ndata: bc\n\n\r\n".len();
        assert_eq!(&out.flushes[..3], [first, first, second]);
        assert_eq!(out.flushes.last(), Some(&out.data.len()), "finish flushes");
        let chunks = dechunk(&out.data);
        assert_eq!(chunks[..2], [b"data: a\n\n".to_vec(), b"data: bc\n\n".to_vec()]);
        assert_eq!(chunks[2], big, "a large write is one chunk");
        assert_eq!(chunks[3], b"tail");
        assert!(out.data.starts_with(b"9\r\n") && out.data.ends_with(b"4\r\ntail\r\n0\r\n\r\n"));
    }

    #[test]
    fn a_known_length_is_sent_as_content_length() {
        let (response, flushes, keep) = sent(Reply::text(200, "hello\n"), GET);
        let (head, body) = split(&response);
        assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
        assert!(head.contains("\r\nContent-Length: 6"), "{head}");
        assert!(head.contains("\r\nContent-Type: text/plain; charset=utf-8"), "{head}");
        assert!(head.contains("\r\nDate: ") && head.contains(" GMT\r\n"), "{head}");
        assert!(!head.contains("Connection") && !head.contains("Transfer-Encoding"), "{head}");
        assert_eq!(body, "hello\n");
        assert_eq!(flushes, [response.len()]);
        assert!(keep);
    }

    #[test]
    fn head_requests_and_304s_get_no_body() {
        let head_only = Exchange { head_only: true, ..GET };
        let (response, _, keep) = sent(Reply::text(200, "hello\n"), head_only);
        let (head, body) = split(&response);
        assert!(head.contains("\r\nContent-Length: 6"), "{head}");
        assert_eq!(body, "");
        assert!(keep);
        let streamed = Reply::streamed(200, "text/event-stream", |_| panic!("HEAD runs no stream"));
        let (response, _, keep) = sent(streamed, head_only);
        assert!(split(&response).0.contains("Transfer-Encoding: chunked"));
        assert_eq!(split(&response).1, "");
        assert!(keep);

        let incoming = super::super::http::Incoming::new(
            super::super::http::Method::Get,
            "/".to_owned(),
            vec![("If-None-Match".to_owned(), "\"e\"".to_owned())],
            Vec::new(),
        );
        let not_modified = Reply::cached(&incoming, "\"e\"", || unreachable!());
        let (response, _, keep) = sent(not_modified, GET);
        let (head, body) = split(&response);
        assert!(head.starts_with("HTTP/1.1 304 Not Modified\r\n"), "{head}");
        assert!(!head.contains("Content-Length") && head.contains("ETag: \"e\""), "{head}");
        assert_eq!(body, "");
        assert!(keep);
    }

    #[test]
    fn streams_are_chunked_and_flushed_piece_by_piece() {
        let reply = Reply::streamed(200, "text/event-stream", |out| {
            out.write_all(b"data: 1\n\n")?;
            out.flush()?;
            out.write_all(b"data: [DONE]\n\n")?;
            out.flush()
        });
        let (response, flushes, keep) = sent(reply, GET);
        let (head, body) = split(&response);
        assert!(head.contains("\r\nTransfer-Encoding: chunked"), "{head}");
        assert!(!head.contains("Content-Length"), "{head}");
        assert_eq!(
            dechunk(body.as_bytes()),
            [b"data: 1\n\n".to_vec(), b"data: [DONE]\n\n".to_vec()]
        );
        let head_len = head.len() + 4;
        assert_eq!(flushes[0], head_len + b"9\r\ndata: 1\n\n\r\n".len(), "the first event alone");
        assert!(keep);

        // A reader of unknown length is chunked too.
        let unknown =
            Reply::stream(200, "text/plain", Box::new(Cursor::new(b"abc".to_vec())), None);
        let (response, _, _) = sent(unknown, GET);
        assert_eq!(dechunk(split(&response).1.as_bytes()), [b"abc".to_vec()]);
    }

    #[test]
    fn http_1_0_gets_no_chunks_and_keep_alive_only_when_asked() {
        let old = Exchange { version: Version::Http10, head_only: false, keep_alive: true };
        let reply = Reply::streamed(200, "text/event-stream", |out| out.write_all(b"data: 1\n\n"));
        let (response, _, keep) = sent(reply, old);
        let (head, body) = split(&response);
        assert!(head.contains("\r\nConnection: close") && !head.contains("chunked"), "{head}");
        assert_eq!(body, "data: 1\n\n", "the body ends with the connection");
        assert!(!keep);
        let (response, _, keep) = sent(Reply::text(200, "x"), old);
        assert!(split(&response).0.contains("\r\nConnection: keep-alive"));
        assert!(keep);
        let closing = Exchange { keep_alive: false, ..GET };
        let (response, _, keep) = sent(Reply::text(200, "x"), closing);
        assert!(split(&response).0.contains("\r\nConnection: close"));
        assert!(!keep);
    }

    #[test]
    fn bad_headers_are_dropped_and_short_bodies_fail() {
        let reply = Reply::text(200, "x")
            .header("X-Split", "a\r\nInjected: yes")
            .header("Content-Length", "99");
        let (response, _, _) = sent(reply, GET);
        assert!(!response.contains("Injected") && !response.contains("X-Split"), "{response}");
        assert!(response.contains("Content-Length: 1\r\n") && !response.contains("99"));

        let short =
            Reply::stream(200, "text/plain", Box::new(Cursor::new(b"abc".to_vec())), Some(5));
        let stall = Duration::from_secs(60);
        let error = block_on(send(short, &mut Recorder::default(), GET, stall)).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::UnexpectedEof);
    }

    #[test]
    fn large_bodies_are_sent_in_pieces_from_their_reader() {
        let bytes: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let len = bytes.len() as u64;
        let reply = Reply::stream(200, "x/y", Box::new(Cursor::new(bytes.clone())), Some(len));
        let (response, _, _) = sent(reply, GET);
        assert!(split(&response).1.as_bytes() == bytes.as_slice());
        // Without a length: chunked, the same bytes.
        let reply = Reply::stream(200, "x/y", Box::new(Cursor::new(bytes.clone())), None);
        let mut out = Recorder::default();
        block_on(send(reply, &mut out, GET, Duration::from_secs(60))).unwrap();
        let at = out.data.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        assert_eq!(dechunk(&out.data[at..]).concat(), bytes);
    }

    #[test]
    fn a_client_that_stops_reading_is_given_up() {
        let bytes = vec![b'x'; 200_000];
        let reply = Reply::bytes(200, "x/y", bytes);
        let mut out = Recorder { limit: Some(100_000), hang: true, ..Recorder::default() };
        let error = block_on(send(reply, &mut out, GET, Duration::from_millis(50))).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::TimedOut);
    }

    #[test]
    fn a_stream_stops_when_its_client_goes() {
        let reply = Reply::streamed(200, "text/event-stream", |out| {
            for i in 0.. {
                let event = format!("data: {i}\n\n");
                if out.write_all(event.as_bytes()).and_then(|()| out.flush()).is_err() {
                    return Err(io::Error::other(format!("stopped after {i} events")));
                }
            }
            Ok(())
        });
        let mut out = Recorder { limit: Some(2_000), ..Recorder::default() };
        let error = block_on(send(reply, &mut out, GET, Duration::from_secs(60))).unwrap_err();
        let message = error.to_string();
        let stopped: usize = message
            .strip_prefix("stopped after ")
            .unwrap()
            .strip_suffix(" events")
            .unwrap()
            .parse()
            .unwrap();
        assert!(stopped < 200, "{message}");
    }

    #[test]
    fn dates_are_imf_fixdates() {
        let at = |seconds| http_date(UNIX_EPOCH + Duration::from_secs(seconds));
        assert_eq!(at(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(at(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(at(951_782_400), "Tue, 29 Feb 2000 00:00:00 GMT");
        assert_eq!(at(1_767_225_599), "Wed, 31 Dec 2025 23:59:59 GMT");
    }
}
