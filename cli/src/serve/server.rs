//! The connections of `edgerag serve`: one event loop (a single-threaded tokio runtime) that
//! reads every request and writes every reply, and a bounded pool of blocking threads for the
//! work that may block (routing, reading files, generating).
//!
//! A connection costs a small task and its buffers, not a thread, so any number of idle or
//! slow clients holds up no other. What each may take is bounded ([`Config`]):
//! - at most [`Config::max_connections`] are served at once, and fewer if the limit on open
//!   files (raised to its hard limit at startup) cannot hold them all
//!   ([`Config::within_open_files`]). When all are taken, idle connections (between
//!   requests) are closed, new ones that have not started their first request after
//!   [`PRESSED`] too, and requests still arriving after [`PRESSED`] are cut with 408,
//!   and a new connection waits up to [`Config::queue_wait`] for a place, [`Config::queue`]
//!   of them at most; past that it gets 503 with `Retry-After`.
//! - a request's line and header fields must arrive within [`Config::head_time`] of its first
//!   byte (empty lines before it are not its start, but count in its head's bytes), within
//!   [`Limits`] (else 408, 414 or 431); its body within [`Config::body_time`] (408), at most
//!   [`Limits::body_bytes`] (413). [`BODY_BUDGET`] bytes of bodies are held at once, all
//!   connections together, each body's counted as they arrive: when it runs out, bodies
//!   arriving for longer than [`PRESSED`] are cut (408) to make room, and one that finds none
//!   within [`Config::queue_wait`] is refused (503).
//! - a kept-alive connection closes after [`Config::idle`] without a new request, and a client
//!   that takes none of its reply for [`Config::stall`] is dropped.
//!
//! Pressure never cuts a reply: a client that keeps taking its reply, however slowly, holds
//! its place until the reply ends, and one that takes nothing holds it for up to
//! [`Config::stall`] (the semantics of nginx's `send_timeout`). So clients that request large
//! files and stop reading can keep every place taken for that long; shortening the stall
//! time is what bounds it.
//!
//! Requests on one connection are answered in order (HTTP/1.1 keep-alive and pipelining). A
//! refused request is answered with its status, then the connection closes.

use std::future::{Future, poll_fn};
use std::io::{self, ErrorKind};
use std::net::TcpListener as StdListener;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use anyhow::{Context, Result};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task;
use tokio::time::{Instant, sleep, timeout, timeout_at};

use super::http::{Incoming, Method, Reply};
use super::request::{self, Head, Limits, Rejection, Version};
use super::response::{self, Exchange};
use super::system;

/// What a connection may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Config {
    /// Connections served at once, from 1 to [`MAX_COUNT`].
    pub(crate) max_connections: usize,
    /// Connections waiting for a place when all are taken, at most [`MAX_COUNT`]; more are
    /// refused at once.
    pub(crate) queue: usize,
    /// How long a connection waits for a place before it is refused.
    pub(crate) queue_wait: Duration,
    /// From the first byte of a request to the end of its header fields.
    pub(crate) head_time: Duration,
    /// From the end of a request's header fields to the end of its body.
    pub(crate) body_time: Duration,
    /// How long a connection may wait for its next request.
    pub(crate) idle: Duration,
    /// How long a write may wait for a client that takes none of it.
    pub(crate) stall: Duration,
    /// Sizes.
    pub(crate) limits: Limits,
}

impl Config {
    /// `edgerag serve`'s: 512 connections, 64 more waiting up to 2 s; a head within 10 s, a
    /// body within 30 s, 5 s idle, 60 s stalled; [`Limits::SERVE`].
    pub(crate) const DEFAULT: Self = Self {
        max_connections: 512,
        queue: 64,
        queue_wait: Duration::from_secs(2),
        head_time: Duration::from_secs(10),
        body_time: Duration::from_secs(30),
        idle: Duration::from_secs(5),
        stall: Duration::from_secs(60),
        limits: Limits::SERVE,
    };

    /// This configuration cut to what `limit` open files allow, `open` being open already.
    ///
    /// A connection takes two (its socket, and the site file it sends: bundles and model
    /// files are read through handles opened once, at startup), and one waiting for a place
    /// or being refused one takes one. Past the limit, opening a site file fails (an existing
    /// file could not be sent) and so does accepting (new clients would wait in the backlog,
    /// never told 503), so the places and the queue must fit in what is left beside
    /// [`SPARE_FILES`] and [`REFUSING`] refusals; the queue takes at most a quarter of it.
    pub(crate) fn within_open_files(self, limit: u64, open: u64) -> Self {
        let left = limit.saturating_sub(open + SPARE_FILES + REFUSING as u64);
        let queue = (self.queue as u64).min(left / 4);
        let places = (self.max_connections as u64).min((left - queue) / 2).max(1);
        // Both are at most what they were, so they fit in a usize.
        Self { max_connections: places as usize, queue: queue as usize, ..self }
    }
}

/// The most connections that can be counted (served at once, or waiting), which
/// [`Config::max_connections`] and [`Config::queue`] must not pass.
pub(crate) const MAX_COUNT: usize = Semaphore::MAX_PERMITS;
/// Open files kept for what is not a connection, besides those open when the server starts:
/// the event loop's own, and any a blocking thread opens for a moment.
const SPARE_FILES: u64 = 32;
/// When the server is full, a request still arriving after this long is cut.
pub(crate) const PRESSED: Duration = Duration::from_secs(1);
/// Bytes of request bodies held at once, all connections together.
pub(crate) const BODY_BUDGET: usize = 32 << 20;
/// Threads for blocking work (routing, file reads, generation).
const BLOCKING_THREADS: usize = 32;
/// Connections being refused with 503 at once; more are closed without a word.
const REFUSING: usize = 64;

/// What answers the requests.
pub(crate) trait Handler: Send + Sync + 'static {
    /// The reply to `request`; runs on a blocking thread.
    fn handle(&self, request: &Incoming) -> Reply;
    /// Reports what happened on a connection (a request and its status, a refusal, an
    /// error); by default nothing.
    fn log(&self, _text: &str) {}
}

/// What the connections share.
struct Shared<H> {
    handler: Arc<H>,
    config: Config,
    /// Signalled while the server is full: idle connections close, slow requests are cut.
    pressure: Notify,
    /// Permits for [`BODY_BUDGET`] bytes of bodies.
    bodies: Arc<Semaphore>,
    /// Signalled while [`Shared::bodies`] has no room: slow bodies are cut.
    bodies_pressure: Notify,
}

/// Serves connections accepted on `listener` with `handler`, forever. Fails only if the
/// server cannot start; accepting fails only for a moment. Out of file descriptors or memory,
/// `warn` is told, idle connections are closed and accepting pauses briefly; any other
/// failure is one connection's (reset before it was accepted), logged, and the next is
/// accepted at once.
pub(crate) fn run<H: Handler>(
    listener: StdListener,
    handler: Arc<H>,
    config: Config,
    warn: impl Fn(&str),
) -> Result<()> {
    listener.set_nonblocking(true).context("cannot set up the listening socket")?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(BLOCKING_THREADS)
        .thread_name("edgerag-serve")
        .build()
        .context("cannot start the server")?;
    let shared = Arc::new(Shared {
        handler,
        config,
        pressure: Notify::new(),
        bodies: Arc::new(Semaphore::new(BODY_BUDGET)),
        bodies_pressure: Notify::new(),
    });
    runtime.block_on(async move {
        let listener = TcpListener::from_std(listener).context("cannot listen")?;
        accept(&listener, shared, warn).await
    })
}

/// The accept loop.
async fn accept<H: Handler>(
    listener: &TcpListener,
    shared: Arc<Shared<H>>,
    warn: impl Fn(&str),
) -> Result<()> {
    let places = Arc::new(Semaphore::new(shared.config.max_connections));
    let queue = Arc::new(Semaphore::new(shared.config.queue));
    let refusing = Arc::new(Semaphore::new(REFUSING));
    let mut failing = false;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => {
                failing = false;
                stream
            }
            Err(e) if system::out_of_resources(&e) => {
                // Free the idle connections, and let the others end before trying again.
                shared.pressure.notify_waiters();
                if !failing {
                    warn(&format!("accepting a connection: {e}"));
                    failing = true;
                }
                sleep(Duration::from_millis(100)).await;
                continue;
            }
            Err(e) => {
                shared.handler.log(&format!("accepting a connection: {e}"));
                continue;
            }
        };
        if let Ok(place) = Arc::clone(&places).try_acquire_owned() {
            tokio::spawn(connection(stream, Arc::clone(&shared), place));
        } else if let Ok(waiting) = Arc::clone(&queue).try_acquire_owned() {
            let (shared, places, refusing) =
                (Arc::clone(&shared), Arc::clone(&places), Arc::clone(&refusing));
            tokio::spawn(queued(stream, shared, places, waiting, refusing));
        } else {
            shared.pressure.notify_waiters();
            refuse_busy(stream, Arc::clone(&shared), &refusing);
        }
    }
}

/// Refuses a connection with 503 in a task of its own, if fewer than [`REFUSING`] are being
/// refused; else drops it (closed at once).
fn refuse_busy<H: Handler>(stream: TcpStream, shared: Arc<Shared<H>>, refusing: &Arc<Semaphore>) {
    if let Ok(refusal) = Arc::clone(refusing).try_acquire_owned() {
        tokio::spawn(async move {
            let _refusal = refusal;
            refuse(stream, BUSY, &shared).await;
        });
    }
}

/// A connection accepted while all places were taken: waits for one (closing idle
/// connections and cutting slow requests meanwhile), or is refused with 503.
async fn queued<H: Handler>(
    stream: TcpStream,
    shared: Arc<Shared<H>>,
    places: Arc<Semaphore>,
    waiting: OwnedSemaphorePermit,
    refusing: Arc<Semaphore>,
) {
    let until = Instant::now() + shared.config.queue_wait;
    match pressing(&shared.pressure, until, Arc::clone(&places).acquire_owned()).await {
        Some(Ok(place)) => {
            drop(waiting);
            connection(stream, shared, place).await;
        }
        Some(Err(_)) => {}
        None => {
            drop(waiting);
            refuse_busy(stream, shared, &refusing);
        }
    }
}

/// Waits for `future` until `until`, signalling `pressure` meanwhile, every 200 ms (what it
/// cuts is cut once old enough); `None` if `until` comes first.
async fn pressing<F: Future>(pressure: &Notify, until: Instant, future: F) -> Option<F::Output> {
    let mut future = pin!(future);
    loop {
        pressure.notify_waiters();
        let step = (Instant::now() + Duration::from_millis(200)).min(until);
        match timeout_at(step, future.as_mut()).await {
            Ok(output) => return Some(output),
            Err(_) if Instant::now() >= until => return None,
            Err(_) => {}
        }
    }
}

/// Why a connection stops reading requests.
enum Stop {
    /// It closed, went idle past its time, or was idle when the server needed its place:
    /// nothing to answer.
    Quiet,
    /// It failed or closed in the middle of a request: nothing to answer either.
    Failed(io::Error),
    /// A request refused: answer, then close.
    Refuse(Rejection),
}

/// Serves the requests of one connection until it closes; `_place` is its place among the
/// [`Config::max_connections`].
async fn connection<H: Handler>(
    mut stream: TcpStream,
    shared: Arc<Shared<H>>,
    _place: OwnedSemaphorePermit,
) {
    let log = |text: &str| shared.handler.log(text);
    if let Err(e) = stream.set_nodelay(true) {
        return log(&format!("cannot configure a connection: {e}"));
    }
    let stall = shared.config.stall;
    // Bytes received and not yet parsed: the rest of a request, or pipelined ones.
    let mut input = Vec::new();
    let mut first = true;
    loop {
        let read = match read_head(&mut stream, &mut input, first, &shared).await {
            Ok(head) => read_body(&mut stream, &mut input, head, &shared).await,
            Err(stop) => Err(stop),
        };
        let (head, body, budget) = match read {
            Ok(read) => read,
            Err(Stop::Quiet) => return,
            Err(Stop::Failed(e)) => {
                return log(&format!("a connection failed within a request: {e}"));
            }
            Err(Stop::Refuse(rejection)) => return refuse(stream, rejection, &shared).await,
        };
        first = false;
        let method = Method::parse(&head.method);
        let exchange = Exchange {
            version: head.version,
            head_only: method == Method::Head,
            keep_alive: head.keep_alive,
        };
        let incoming = Incoming::new(method, head.target, head.headers, body);
        let handler = Arc::clone(&shared.handler);
        let handled = task::spawn_blocking(move || {
            let reply = handler.handle(&incoming);
            (incoming, reply)
        });
        let (incoming, reply) = match handled.await {
            Ok(handled) => handled,
            Err(e) => {
                log(&format!("a request failed: {e}"));
                let failed = Rejection { status: 500, reason: "the request failed" };
                return refuse(stream, failed, &shared).await;
            }
        };
        let with_body = if incoming.body.is_empty() {
            String::new()
        } else {
            format!(" ({} bytes)", incoming.body.len())
        };
        let method = incoming.method.as_str();
        log(&format!("{method} {}{with_body} {}", incoming.target, reply.status));
        let target = incoming.target.clone();
        drop((incoming, budget));
        match response::send(reply, &mut stream, exchange, stall).await {
            Ok(true) => {}
            Ok(false) => return close(stream).await,
            Err(e) => return log(&format!("{target}: {e}")),
        }
    }
}

/// What may happen while a connection waits for bytes.
enum Event {
    /// A read finished.
    Read(io::Result<usize>),
    /// The deadline passed.
    Deadline,
    /// The server is full (or, for a body, the body budget).
    Pressure,
}

/// Reads what arrives on `stream` into `buffer`, until `deadline` or the server is full
/// (`pressure`, or `also`).
async fn wait_read(
    stream: &mut TcpStream,
    buffer: &mut [u8],
    deadline: Instant,
    pressure: &Notify,
    also: Option<&Notify>,
) -> Event {
    let mut read = pin!(stream.read(buffer));
    let mut pressed = pin!(pressure.notified());
    let mut also = pin!(also.map(Notify::notified));
    let either = poll_fn(|cx| {
        if let Poll::Ready(read) = read.as_mut().poll(cx) {
            return Poll::Ready(Event::Read(read));
        }
        let also = also.as_mut().as_pin_mut().is_some_and(|also| also.poll(cx).is_ready());
        if pressed.as_mut().poll(cx).is_ready() || also {
            return Poll::Ready(Event::Pressure);
        }
        Poll::Pending
    });
    timeout_at(deadline, either).await.unwrap_or(Event::Deadline)
}

/// A request refused for taking too long.
const TOO_SLOW: Rejection = Rejection { status: 408, reason: "the request took too long" };
/// A connection or request refused because the server is full (503 with `Retry-After`).
const BUSY: Rejection = Rejection { status: 503, reason: "the server is busy; retry in a moment" };

/// Reads the next request head into `input` and takes it from there; what follows it stays.
/// `first`: the connection's first request, which, when the server is full, is given
/// [`PRESSED`] to start, as a started one is to end (a client that opened a connection is
/// about to use it); a connection idle between requests is closed at once.
async fn read_head<H>(
    stream: &mut TcpStream,
    input: &mut Vec<u8>,
    first: bool,
    shared: &Shared<H>,
) -> Result<Head, Stop> {
    let Config { head_time, idle, limits, .. } = shared.config;
    let waiting = Instant::now();
    let idle_until = waiting + idle;
    // A request starts with its first byte that is not a line end: empty lines before it
    // leave the connection idle. The parser skips them (and counts them in the head's bytes),
    // so they are parsed only once a request has started, or when they fill the head alone.
    let begins = |bytes: &[u8]| bytes.iter().any(|&b| b != b'\r' && b != b'\n');
    // When the first byte of the request arrived (bytes already here were pipelined).
    let mut started = begins(input).then(Instant::now);
    let mut parse = started.is_some() || input.len() > limits.head_bytes;
    let mut buffer = [0; 4 << 10];
    loop {
        // Parsing again only when a line may have ended keeps a trickled head linear.
        if parse {
            match request::parse(input, &limits) {
                Ok(Some((head, used))) => {
                    input.drain(..used.min(input.len()));
                    return Ok(head);
                }
                Ok(None) => {}
                Err(rejection) => return Err(Stop::Refuse(rejection)),
            }
        }
        let deadline = started.map_or(idle_until, |started| started + head_time);
        match wait_read(stream, &mut buffer, deadline, &shared.pressure, None).await {
            Event::Read(Ok(0)) => {
                return Err(match started {
                    None => Stop::Quiet,
                    Some(_) => Stop::Failed(ErrorKind::UnexpectedEof.into()),
                });
            }
            Event::Read(Ok(n)) => {
                let new = buffer.get(..n).unwrap_or_default();
                input.extend_from_slice(new);
                if started.is_none() && begins(new) {
                    started = Some(Instant::now());
                }
                parse =
                    (started.is_some() && new.contains(&b'\n')) || input.len() > limits.head_bytes;
            }
            Event::Read(Err(e)) if e.kind() == ErrorKind::Interrupted => {}
            Event::Read(Err(e)) => {
                return Err(if started.is_none() { Stop::Quiet } else { Stop::Failed(e) });
            }
            Event::Deadline => {
                return Err(if started.is_none() { Stop::Quiet } else { Stop::Refuse(TOO_SLOW) });
            }
            Event::Pressure => match started {
                None if first && waiting.elapsed() < PRESSED => {}
                None => return Err(Stop::Quiet),
                Some(started) if started.elapsed() >= PRESSED => {
                    return Err(Stop::Refuse(TOO_SLOW));
                }
                Some(_) => {}
            },
        }
    }
}

/// Reads the body announced by `head` (after `100 Continue` if the client waits for it),
/// taking its bytes from [`BODY_BUDGET`] as they arrive ([`reserve`]), until the permit
/// returned is dropped: what a body holds is what it sent, not what it announced.
async fn read_body<H>(
    stream: &mut TcpStream,
    input: &mut Vec<u8>,
    head: Head,
    shared: &Shared<H>,
) -> Result<(Head, Vec<u8>, Option<OwnedSemaphorePermit>), Stop> {
    // The parser refuses lengths over the limit (1 MiB), so this conversion holds.
    let too_large = Rejection { status: 413, reason: "the body is too large" };
    let len = usize::try_from(head.content_length).map_err(|_| Stop::Refuse(too_large))?;
    if len == 0 {
        return Ok((head, Vec::new(), None));
    }
    if head.expect_continue && input.is_empty() {
        let sent = timeout(shared.config.stall, stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n"));
        match sent.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(Stop::Failed(e)),
            Err(_) => return Err(Stop::Failed(ErrorKind::TimedOut.into())),
        }
    }
    let started = Instant::now();
    let deadline = started + shared.config.body_time;
    let mut body = Vec::with_capacity(len.min(64 << 10));
    let mut budget = None;
    let buffered = input.len().min(len);
    reserve(&mut budget, buffered, shared).await?;
    body.extend(input.drain(..buffered));
    let mut buffer = [0; 16 << 10];
    while body.len() < len {
        let want = (len - body.len()).min(buffer.len());
        let piece = buffer.get_mut(..want).unwrap_or_default();
        match wait_read(stream, piece, deadline, &shared.pressure, Some(&shared.bodies_pressure))
            .await
        {
            Event::Read(Ok(0)) => return Err(Stop::Failed(ErrorKind::UnexpectedEof.into())),
            Event::Read(Ok(n)) => {
                reserve(&mut budget, n, shared).await?;
                body.extend_from_slice(piece.get(..n).unwrap_or_default());
            }
            Event::Read(Err(e)) if e.kind() == ErrorKind::Interrupted => {}
            Event::Read(Err(e)) => return Err(Stop::Failed(e)),
            Event::Deadline => return Err(Stop::Refuse(TOO_SLOW)),
            Event::Pressure if started.elapsed() >= PRESSED => return Err(Stop::Refuse(TOO_SLOW)),
            Event::Pressure => {}
        }
    }
    Ok((head, body, budget))
}

/// Adds `bytes` just received to `held`, a body's share of [`BODY_BUDGET`]: at once if there is
/// room, else once bodies arriving for longer than [`PRESSED`] have been cut to make some
/// ([`Shared::bodies_pressure`]); 503 if none is made within [`Config::queue_wait`].
async fn reserve<H>(
    held: &mut Option<OwnedSemaphorePermit>,
    bytes: usize,
    shared: &Shared<H>,
) -> Result<(), Stop> {
    if bytes == 0 {
        return Ok(());
    }
    // A read is at most a buffer, and a body at most 1 MiB: the conversion holds.
    let permits = u32::try_from(bytes).map_err(|_| Stop::Refuse(BUSY))?;
    let permit = match Arc::clone(&shared.bodies).try_acquire_many_owned(permits) {
        Ok(permit) => permit,
        Err(_) => {
            let until = Instant::now() + shared.config.queue_wait;
            let room = Arc::clone(&shared.bodies).acquire_many_owned(permits);
            match pressing(&shared.bodies_pressure, until, room).await {
                Some(Ok(permit)) => permit,
                _ => return Err(Stop::Refuse(BUSY)),
            }
        }
    };
    match held {
        Some(held) => held.merge(permit),
        None => *held = Some(permit),
    }
    Ok(())
}

/// Ends a connection with the reply to a refused request, or refuses a connection the
/// server has no place for ([`BUSY`]).
async fn refuse<H: Handler>(mut stream: TcpStream, rejection: Rejection, shared: &Shared<H>) {
    let Rejection { status, reason } = rejection;
    shared.handler.log(&format!("refused: {status} {reason}"));
    let reply = if status == 503 {
        Reply::busy(&format!("{reason}\n"))
    } else {
        Reply::text(status, &format!("{reason}\n"))
    };
    // The request's version may be unknown: HTTP/1.0 framing would suit either, and the
    // reply has a length, so nothing depends on it.
    let exchange = Exchange { version: Version::Http11, head_only: false, keep_alive: false };
    if response::send(reply, &mut stream, exchange, shared.config.stall).await.is_ok() {
        close(stream).await;
    }
}

/// Closes a connection after its last response without losing that response: stops sending,
/// then reads (and drops) what the client still sends for a moment, until it closes too.
/// Closing with unread bytes would reset the connection, and a reset can discard a response
/// the client has not read yet (the rest of an oversized request, a pipelined request).
async fn close(mut stream: TcpStream) {
    if stream.shutdown().await.is_err() {
        return;
    }
    let until = Instant::now() + Duration::from_secs(2);
    let mut buffer = [0; 16 << 10];
    let mut drained = 0usize;
    while drained < 4 << 20 {
        match timeout_at(until, stream.read(&mut buffer)).await {
            Ok(Ok(n)) if n > 0 => drained += n,
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_and_the_queue_fit_in_the_open_files() {
        let config = Config::DEFAULT;
        assert_eq!(config.within_open_files(1 << 20, 10), config, "plenty of files");
        assert_eq!(config.within_open_files(u64::MAX, 10), config, "no limit");
        // Linux's usual soft limit, were the hard one no higher.
        let within = config.within_open_files(1024, 10);
        let (places, queue) = (within.max_connections as u64, within.queue as u64);
        assert!(0 < places && places < 512 && 0 < queue && queue <= 64, "{within:?}");
        assert!(10 + SPARE_FILES + REFUSING as u64 + 2 * places + queue <= 1024, "{within:?}");
        assert_eq!(within.limits, config.limits, "the rest is kept");
        let starved = config.within_open_files(64, 10);
        assert_eq!((starved.max_connections, starved.queue), (1, 0), "one place at least");
    }
}
