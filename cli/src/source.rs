//! Where the CLI reads a bundle by byte range ([`RangeSource`]): a local file, read at the
//! offsets asked for, or an HTTP(S) URL, fetched with `Range` requests.
//!
//! Reads are blocking: the future a read returns does its work when first polled, then is
//! ready. The ranges of one read are fetched together (in one multipart request, or a
//! request each, at most [`PARALLEL`] at once), so a step of a query costs one round trip,
//! not one per range.

use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use edgerag_core::bundle::lazy::DEFAULT_BUDGET;
use edgerag_core::bundle::paged::{InMemory, RangeSource, ready_now};
use edgerag_core::query::LazySearcher;
use edgerag_core::{Error, Result};
use ureq::Agent;

use crate::byteranges;

/// Requests sent at once over HTTP.
pub const PARALLEL: usize = 8;
/// The largest bundle read whole from a server that ignores `Range`.
pub const MAX_WHOLE: u64 = 2 << 30;

/// How long an HTTP request for a range may take.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Opens the bundle of format version 4 at `location` (a file path or an HTTP(S) URL) by
/// range.
///
/// # Errors
/// As [`BundleSource::open`] and [`LazySearcher::open`]: [`Error::TooOld`] for a bundle of an
/// older format (read whole instead).
pub fn open_lazy(location: &str) -> Result<LazySearcher<BundleSource>> {
    blocking(LazySearcher::open(BundleSource::open(location, TIMEOUT)?, DEFAULT_BUDGET))
}

/// Whether `location` is an HTTP(S) URL rather than a file path.
pub fn is_url(location: &str) -> bool {
    location.starts_with("http://") || location.starts_with("https://")
}

/// The output of `future`, which reads from the CLI's sources: they do their work when first
/// polled, so it is ready then.
///
/// # Errors
/// The future's; [`Error::Read`] if it is not ready (a source that does not block).
pub fn blocking<T>(future: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    ready_now(future).unwrap_or_else(|| Err(Error::Read("a read did not complete at once".into())))
}

/// A bundle read by range: a local file, or a URL.
#[derive(Debug)]
pub enum BundleSource {
    /// A local file.
    File(FileSource),
    /// An HTTP(S) URL.
    Http(HttpSource),
}

impl BundleSource {
    /// The source `location` names: an `http://` or `https://` URL, else a file path.
    ///
    /// # Errors
    /// [`Error::Read`] when the file cannot be opened.
    pub fn open(location: &str, timeout: Duration) -> Result<Self> {
        if is_url(location) {
            Ok(Self::Http(HttpSource::new(location, timeout)))
        } else {
            FileSource::open(Path::new(location)).map(Self::File)
        }
    }
}

impl RangeSource for BundleSource {
    async fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>> {
        match self {
            Self::File(file) => file.read(ranges).await,
            Self::Http(http) => http.read(ranges).await,
        }
    }
}

/// A local file, read at the offsets asked for (no seek: reads can come from any thread).
#[derive(Debug)]
pub struct FileSource {
    file: File,
    name: String,
}

impl FileSource {
    /// Opens `path`.
    ///
    /// # Errors
    /// [`Error::Read`] naming the file when it cannot be opened.
    pub fn open(path: &Path) -> Result<Self> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|e| Error::Read(format!("{name}: {e}")))?;
        Ok(Self { file, name })
    }

    /// The bytes of `range`, fewer where the file ends first.
    fn read_range(&self, range: &Range<u64>) -> Result<Vec<u8>> {
        let len = usize::try_from(range.end.saturating_sub(range.start))
            .map_err(|_| Error::Read(format!("{}: a range too long to read", self.name)))?;
        let mut bytes = vec![0; len];
        let mut filled = 0;
        while filled < len {
            match read_at(&self.file, &mut bytes[filled..], range.start + filled as u64) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::Read(format!("{}: {e}", self.name))),
            }
        }
        bytes.truncate(filled);
        Ok(bytes)
    }
}

impl RangeSource for FileSource {
    async fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>> {
        ranges.iter().map(|range| self.read_range(range)).collect()
    }
}

#[cfg(unix)]
fn read_at(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buffer, offset)
}

#[cfg(windows)]
fn read_at(file: &File, buffer: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buffer, offset)
}

/// A bundle at an HTTP(S) URL, fetched with `Range` requests. The ranges of one read go in
/// one request (up to [`RANGES_PER_REQUEST`] of them, several requests at once beyond), which
/// the server answers with a `multipart/byteranges` body; one that answers such a request
/// with the whole file instead is asked for each range on its own from then on. A server
/// that answers a request for one range with the whole file (status 200) is read whole, up to
/// [`MAX_WHOLE`] bytes, with a warning, and every later read is served from that copy (the
/// first read of a bundle, its header, is a single range: later reads never download it
/// again); one that answers for another version of the file (its `ETag` changed) is an
/// error.
#[derive(Debug)]
pub struct HttpSource {
    agent: Agent,
    url: String,
    /// The file's entity tag, from the first answer that had one.
    etag: Mutex<Option<String>>,
    /// The whole file, once a server ignored `Range`.
    whole: OnceLock<InMemory>,
    /// Whether several ranges are asked in one request (until the server ignores them).
    multipart: AtomicBool,
    /// What to do with a warning (the CLI prints it).
    warn: fn(&str),
}

/// The most ranges asked for in one request.
pub const RANGES_PER_REQUEST: usize = 64;

/// Bytes a server may add to each part of a multipart body (its boundary and headers).
const PART_OVERHEAD: u64 = 512;

impl HttpSource {
    /// A source for `url`, whose requests each end within `timeout`; warnings go to stderr.
    pub fn new(url: &str, timeout: Duration) -> Self {
        Self::with_warnings(url, timeout, |text| crate::output::warn(None, text))
    }

    /// [`HttpSource::new`] with warnings handed to `warn`.
    pub fn with_warnings(url: &str, timeout: Duration, warn: fn(&str)) -> Self {
        let config = crate::http::client().timeout_global(Some(timeout));
        let agent = config.http_status_as_error(false).build().into();
        let (etag, whole) = (Mutex::new(None), OnceLock::new());
        Self { agent, url: url.to_owned(), etag, whole, multipart: AtomicBool::new(true), warn }
    }

    /// An error of a request for the bundle.
    fn fail(&self, what: impl std::fmt::Display) -> Error {
        Error::Read(format!("GET {}: {what}", self.url))
    }

    /// The answer to a `GET` of the byte ranges `ranges` (non-empty), sent with `If-Range`
    /// once the file's strong entity tag is known; an answer for another version is an error.
    fn get(&self, ranges: &[Range<u64>]) -> Result<Answer> {
        let spec: Vec<String> =
            ranges.iter().map(|range| format!("{}-{}", range.start, range.end - 1)).collect();
        let mut call =
            self.agent.get(&self.url).header("Range", &format!("bytes={}", spec.join(",")));
        let etag = lock(&self.etag).clone();
        // Only a strong validator may go in If-Range; a weak one would get the whole file.
        if let Some(etag) = etag.as_ref().filter(|etag| !etag.starts_with("W/")) {
            call = call.header("If-Range", etag);
        }
        let response = call.call().map_err(|e| self.fail(e))?;
        let header = |name: &str| {
            response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
        };
        let answered = header("etag");
        match (&etag, &answered) {
            (Some(known), Some(now)) if known != now => {
                return Err(self.fail("the bundle changed on the server while it was read"));
            }
            (None, Some(_)) => *lock(&self.etag) = answered,
            _ => {}
        }
        Ok(Answer {
            status: response.status().as_u16(),
            content_type: header("content-type"),
            content_range: header("content-range").and_then(|r| byteranges::content_range(&r)),
            body: response.into_body(),
        })
    }

    /// The body of `answer`, `limit` bytes at most (one more tells a body that is too long).
    fn body(&self, answer: Answer, limit: u64) -> Result<Vec<u8>> {
        let mut body = Vec::new();
        let reader = answer.body.into_reader();
        std::io::Read::read_to_end(&mut std::io::Read::take(reader, limit + 1), &mut body)
            .map_err(|e| self.fail(e))?;
        Ok(body)
    }

    /// The bytes of `range` (fewer at the end of the file).
    fn fetch(&self, range: &Range<u64>) -> Result<Vec<u8>> {
        if let Some(whole) = self.whole.get() {
            return Ok(whole.part(range).to_vec());
        }
        if range.end <= range.start {
            return Ok(Vec::new());
        }
        let answer = self.get(std::slice::from_ref(range))?;
        match answer.status {
            206 if answer.content_range.as_ref().is_some_and(|(r, _)| r.start == range.start) => {
                let mut bytes = self.body(answer, range.end - range.start)?;
                bytes.truncate((range.end - range.start) as usize);
                Ok(bytes)
            }
            206 => Err(self.fail("the server answered another range")),
            416 => Ok(Vec::new()),
            200 => {
                let bytes = self.body(answer, MAX_WHOLE)?;
                if bytes.len() as u64 > MAX_WHOLE {
                    return Err(self.fail(format!(
                        "the server ignores byte ranges, and the bundle is larger than the \
                         {MAX_WHOLE} bytes read whole"
                    )));
                }
                let whole = self.whole.get_or_init(|| {
                    (self.warn)(&format!(
                        "{} ignores byte ranges: the whole bundle ({} bytes) is read",
                        self.url,
                        bytes.len()
                    ));
                    InMemory(bytes)
                });
                Ok(whole.part(range).to_vec())
            }
            other => Err(self.fail(format!("HTTP status {other}"))),
        }
    }

    /// The bytes of each of `ranges` (two or more, none empty), asked for in one request;
    /// `None` when the server answered with the whole file (it is then not read).
    fn fetch_together(&self, ranges: &[Range<u64>]) -> Result<Option<Vec<Vec<u8>>>> {
        let answer = self.get(ranges)?;
        match answer.status {
            206 => {}
            416 => return Ok(Some(vec![Vec::new(); ranges.len()])),
            200 => {
                self.multipart.store(false, Ordering::Relaxed);
                return Ok(None);
            }
            other => return Err(self.fail(format!("HTTP status {other}"))),
        }
        let asked: u64 = ranges.iter().map(|range| range.end - range.start).sum();
        let limit = asked + PART_OVERHEAD * (ranges.len() as u64 + 1);
        let boundary = answer.content_type.as_deref().and_then(byteranges::boundary);
        let boundary = boundary.map(str::to_owned);
        let single = answer.content_range.clone();
        let body = self.body(answer, limit)?;
        if body.len() as u64 > limit {
            return Err(self.fail("the server answered more bytes than asked for"));
        }
        let parts = match (boundary, single) {
            (Some(boundary), _) => byteranges::parse(&body, &boundary).map_err(|e| self.fail(e))?,
            // A server may join the ranges asked for into one.
            (None, Some((range, len))) => vec![byteranges::Part { range, len, bytes: &body }],
            (None, None) => return Err(self.fail("a partial answer without Content-Range")),
        };
        let len = parts.iter().find_map(|part| part.len);
        let read: Result<Vec<Vec<u8>>> = ranges
            .iter()
            .map(|range| {
                let end = len.map_or(range.end, |len| range.end.min(len));
                if range.start >= end {
                    return Ok(Vec::new());
                }
                parts
                    .iter()
                    .filter(|part| part.bytes.len() as u64 == part.range.end - part.range.start)
                    .find(|part| part.range.start <= range.start && end <= part.range.end)
                    .map(|part| {
                        let at = |offset: u64| (offset - part.range.start) as usize;
                        part.bytes[at(range.start)..at(end)].to_vec()
                    })
                    .ok_or_else(|| self.fail("the server answered other ranges"))
            })
            .collect();
        read.map(Some)
    }
}

/// What a server answered a request for ranges, its body not read yet.
struct Answer {
    status: u16,
    content_type: Option<String>,
    content_range: Option<(Range<u64>, Option<u64>)>,
    body: ureq::Body,
}

/// `fetch` of each of `items`, [`PARALLEL`] at once, in order.
fn parallel<T: Sync, R: Send>(
    items: &[T],
    fetch: impl Fn(&T) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let mut out = Vec::with_capacity(items.len());
    for batch in items.chunks(PARALLEL) {
        let fetched: Vec<Result<R>> = std::thread::scope(|scope| {
            let threads: Vec<_> = batch.iter().map(|item| scope.spawn(|| fetch(item))).collect();
            threads
                .into_iter()
                .map(|thread| {
                    thread.join().unwrap_or_else(|_| Err(Error::Read("a request failed".into())))
                })
                .collect()
        });
        for result in fetched {
            out.push(result?);
        }
    }
    Ok(out)
}

/// The value behind `mutex`, even if a thread panicked holding it.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl RangeSource for HttpSource {
    async fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>> {
        let asked: Vec<Range<u64>> =
            ranges.iter().filter(|range| range.end > range.start).cloned().collect();
        if self.whole.get().is_some() || asked.len() < 2 || !self.multipart.load(Ordering::Relaxed)
        {
            return parallel(ranges, |range| self.fetch(range));
        }
        let groups: Vec<&[Range<u64>]> = asked.chunks(RANGES_PER_REQUEST).collect();
        let fetched = parallel(&groups, |group| match group {
            [one] => self.fetch(one).map(|bytes| vec![bytes]),
            _ => match self.fetch_together(group)? {
                Some(parts) => Ok(parts),
                None => group.iter().map(|range| self.fetch(range)).collect(),
            },
        })?;
        let mut fetched = fetched.into_iter().flatten();
        ranges
            .iter()
            .map(|range| match range.end > range.start {
                true => fetched.next().ok_or_else(|| self.fail("a range went missing")),
                false => Ok(Vec::new()),
            })
            .collect()
    }
}
