//! The connections of `edgerag serve`: an accept loop and one thread per connection.
//!
//! Each connection is served by its own named thread, request after request (HTTP/1.1
//! keep-alive; requests pipelined behind one another are answered in order), so a connection
//! that sits idle between requests, or a slow download, never holds up another connection.
//! A connection closes when the client asks (`Connection: close`, or HTTP/1.0 without
//! `keep-alive`), after [`IDLE`] without a new request, after a request the server refuses
//! (malformed, too large, too slow: answered with its 4xx first), or when the client goes
//! away (which ends only that connection's thread). At most [`MAX_CONNECTIONS`] are served
//! at once; more wait in the listen queue until one closes.

use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use super::http::{Incoming, Method, Reply};
use super::request::{self, Limits, ReadError, Rejection, Version};
use super::response::{self, Exchange};

/// How long a connection may wait for its next request before it is closed.
pub(crate) const IDLE: Duration = Duration::from_secs(5);
/// How long a write may stall (a client that stops reading) before the connection is dropped.
const STALLED: Duration = Duration::from_secs(60);
/// Connections served at once.
pub(crate) const MAX_CONNECTIONS: usize = 256;

/// What answers the requests.
pub(crate) trait Handler: Send + Sync + 'static {
    /// The reply to `request`.
    fn handle(&self, request: &Incoming) -> Reply;
    /// Reports what happened on a connection (a request and its status, a refusal, an
    /// error); by default nothing.
    fn log(&self, _text: &str) {}
}

/// Serves connections accepted on `listener` with `handler`, forever. Accepting fails only
/// for a moment (e.g. out of file descriptors): `warn` is told and the loop goes on.
pub(crate) fn run<H: Handler>(listener: &TcpListener, handler: Arc<H>, warn: impl Fn(&str)) -> ! {
    let slots = Arc::new(Slots::default());
    let ids = AtomicU64::new(0);
    loop {
        let slot = Slots::acquire(&slots);
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) => {
                warn(&format!("accepting a connection: {e}"));
                thread::sleep(Duration::from_millis(100));
                continue;
            }
        };
        let handler = Arc::clone(&handler);
        let id = ids.fetch_add(1, Ordering::Relaxed);
        let spawned = thread::Builder::new().name(format!("edgerag-conn-{id}")).spawn(move || {
            let _slot = slot;
            connection(&stream, &*handler);
        });
        if let Err(e) = spawned {
            // The stream moved into the closure, which is dropped with the error: closed.
            warn(&format!("cannot start a thread for a connection: {e}"));
        }
    }
}

/// Serves the requests of one connection until it closes.
fn connection(stream: &TcpStream, handler: &impl Handler) {
    let configured = stream
        .set_read_timeout(Some(IDLE))
        .and_then(|()| stream.set_write_timeout(Some(STALLED)))
        .and_then(|()| stream.set_nodelay(true));
    if let Err(e) = configured {
        handler.log(&format!("cannot configure a connection: {e}"));
        return;
    }
    let limits = Limits::SERVE;
    let mut reader = BufReader::with_capacity(16 << 10, stream);
    let mut writer = BufWriter::with_capacity(64 << 10, stream);
    loop {
        let head = match request::read_head(&mut reader, &limits) {
            Ok(head) => head,
            Err(error) => return refuse(stream, &mut writer, error, handler),
        };
        if head.expect_continue && head.content_length > 0 {
            let sent =
                writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").and_then(|()| writer.flush());
            if sent.is_err() {
                return;
            }
        }
        let body = match request::read_body(&mut reader, &head, &limits) {
            Ok(body) => body,
            Err(error) => return refuse(stream, &mut writer, error, handler),
        };
        let method = Method::parse(&head.method);
        let exchange = Exchange {
            version: head.version,
            head_only: method == Method::Head,
            keep_alive: head.keep_alive,
        };
        let incoming = Incoming::new(method, head.target, head.headers, body);
        let reply = handler.handle(&incoming);
        let with_body = if incoming.body.is_empty() {
            String::new()
        } else {
            format!(" ({} bytes)", incoming.body.len())
        };
        let method = incoming.method.as_str();
        handler.log(&format!("{method} {}{with_body} {}", incoming.target, reply.status));
        match response::send(reply, &mut writer, exchange) {
            Ok(true) => {}
            Ok(false) => return close(stream),
            Err(e) => {
                handler.log(&format!("{}: {e}", incoming.target));
                return;
            }
        }
    }
}

/// Ends a connection on which no request could be read: answers a refused request with its
/// status (and closes), and closes quietly otherwise.
fn refuse(stream: &TcpStream, writer: &mut impl Write, error: ReadError, handler: &impl Handler) {
    let Rejection { status, reason } = match error {
        ReadError::Idle => return,
        ReadError::Io(e) => {
            handler.log(&format!("a connection failed within a request: {e}"));
            return;
        }
        ReadError::Rejected(rejection) => rejection,
    };
    handler.log(&format!("refused a request: {status} {reason}"));
    let reply = Reply::text(status, &format!("{reason}\n"));
    // The request's version may be unknown: HTTP/1.0 framing would suit either, and the
    // reply has a length, so nothing depends on it.
    let exchange = Exchange { version: Version::Http11, head_only: false, keep_alive: false };
    if response::send(reply, writer, exchange).is_ok() {
        close(stream);
    }
}

/// Closes a connection after its last response without losing that response: stops sending,
/// then reads (and drops) what the client still sends for a moment, until it closes too.
/// Closing with unread bytes would reset the connection, and a reset can discard a response
/// the client has not read yet (the rest of an oversized request, a pipelined request).
fn close(stream: &TcpStream) {
    if stream.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let until = Instant::now() + Duration::from_secs(2);
    if stream.set_read_timeout(Some(Duration::from_millis(500))).is_err() {
        return;
    }
    let mut buffer = [0; 16 << 10];
    let mut drained = 0usize;
    let mut reader = stream;
    while Instant::now() < until && drained < 4 << 20 {
        match reader.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => drained += n,
        }
    }
}

/// Counts the connections being served, to keep them at [`MAX_CONNECTIONS`].
#[derive(Default)]
struct Slots {
    /// Connections being served.
    used: Mutex<usize>,
    /// Signalled when one closes.
    freed: Condvar,
}

impl Slots {
    /// Waits for a free slot and takes it; it is given back when the guard drops.
    fn acquire(slots: &Arc<Self>) -> Slot {
        let mut used = slots.used.lock().unwrap_or_else(PoisonError::into_inner);
        while *used >= MAX_CONNECTIONS {
            used = slots.freed.wait(used).unwrap_or_else(PoisonError::into_inner);
        }
        *used += 1;
        Slot(Arc::clone(slots))
    }
}

/// A connection's place among the [`MAX_CONNECTIONS`].
struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        let mut used = self.0.used.lock().unwrap_or_else(PoisonError::into_inner);
        *used = used.saturating_sub(1);
        self.0.freed.notify_one();
    }
}
