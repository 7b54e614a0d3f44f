//! Where the CLI reads a bundle by byte range ([`RangeSource`]): a local file, read at the
//! offsets asked for, or an HTTP(S) URL, fetched with `Range` requests.
//!
//! Reads are blocking: the future a read returns does its work when first polled, then is
//! ready. The ranges of one read are fetched together (a thread each, at most
//! [`PARALLEL`] at once), so a step of a query costs one round trip, not one per range.

use std::fs::File;
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use edgerag_core::bundle::lazy::DEFAULT_BUDGET;
use edgerag_core::bundle::paged::{RangeSource, ready_now};
use edgerag_core::query::LazySearcher;
use edgerag_core::{Error, Result};
use ureq::Agent;

/// Ranges fetched at once over HTTP.
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

/// A bundle at an HTTP(S) URL, fetched with `Range` requests. A server that answers with
/// the whole file instead (status 200) is read whole, up to [`MAX_WHOLE`] bytes, with a
/// warning, and every later read is served from that copy (the first read of a bundle, its
/// header, is a single range: later reads never download it again); one that answers for
/// another version of the file (its `ETag` changed) is an error.
#[derive(Debug)]
pub struct HttpSource {
    agent: Agent,
    url: String,
    /// The file's entity tag, from the first answer that had one.
    etag: Mutex<Option<String>>,
    /// The whole file, once a server ignored `Range`.
    whole: OnceLock<Arc<Vec<u8>>>,
    /// What to do with a warning (the CLI prints it).
    warn: fn(&str),
}

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
        Self { agent, url: url.to_owned(), etag, whole, warn }
    }

    /// The bytes of `range` (fewer at the end of the file).
    fn fetch(&self, range: &Range<u64>) -> Result<Vec<u8>> {
        if let Some(whole) = self.whole.get() {
            return Ok(Self::cut(whole, range));
        }
        let fail = |what: String| Error::Read(format!("GET {}: {what}", self.url));
        if range.end <= range.start {
            return Ok(Vec::new());
        }
        let mut call = self.agent.get(&self.url);
        call = call.header("Range", &format!("bytes={}-{}", range.start, range.end - 1));
        let etag = self.etag.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        // Only a strong validator may go in If-Range; a weak one would get the whole file.
        if let Some(etag) = etag.as_ref().filter(|etag| !etag.starts_with("W/")) {
            call = call.header("If-Range", etag);
        }
        let response = call.call().map_err(|e| fail(e.to_string()))?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
        };
        let answered = header("etag");
        let starts = header("content-range")
            .and_then(|r| r.strip_prefix("bytes ")?.split('-').next()?.parse::<u64>().ok());
        match (&etag, &answered) {
            (Some(known), Some(now)) if known != now => {
                return Err(fail("the bundle changed on the server while it was read".into()));
            }
            (None, Some(_)) => {
                *self.etag.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = answered;
            }
            _ => {}
        }
        let read_body = |limit: u64| {
            let mut body = Vec::new();
            let reader = response.into_body().into_reader();
            // One byte past the limit tells a body that is too long from one that fits.
            std::io::Read::read_to_end(&mut std::io::Read::take(reader, limit + 1), &mut body)
                .map(|_| body)
                .map_err(|e| fail(e.to_string()))
        };
        match status {
            206 if starts == Some(range.start) => {
                let mut bytes = read_body(range.end - range.start)?;
                bytes.truncate((range.end - range.start) as usize);
                Ok(bytes)
            }
            206 => Err(fail("the server answered another range".to_owned())),
            416 => Ok(Vec::new()),
            200 => {
                let bytes = read_body(MAX_WHOLE)?;
                if bytes.len() as u64 > MAX_WHOLE {
                    return Err(fail(format!(
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
                    Arc::new(bytes)
                });
                Ok(Self::cut(whole, range))
            }
            other => Err(fail(format!("HTTP status {other}"))),
        }
    }

    /// `range` of the whole file.
    fn cut(whole: &[u8], range: &Range<u64>) -> Vec<u8> {
        let len = whole.len() as u64;
        let (start, end) = (range.start.min(len), range.end.clamp(range.start.min(len), len));
        // Both at most the length of a slice in memory.
        whole[start as usize..end as usize].to_vec()
    }
}

impl RangeSource for HttpSource {
    async fn read(&self, ranges: &[Range<u64>]) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::with_capacity(ranges.len());
        for batch in ranges.chunks(PARALLEL) {
            let fetched: Vec<Result<Vec<u8>>> = std::thread::scope(|scope| {
                let threads: Vec<_> =
                    batch.iter().map(|range| scope.spawn(|| self.fetch(range))).collect();
                threads
                    .into_iter()
                    .map(|thread| {
                        thread.join().unwrap_or_else(|_| {
                            Err(Error::Read(format!("GET {}: the request failed", self.url)))
                        })
                    })
                    .collect()
            });
            for bytes in fetched {
                out.push(bytes?);
            }
        }
        Ok(out)
    }
}
