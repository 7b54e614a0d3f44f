//! Where a paged file's bytes come from: the one thing a host implements to read a bundle
//! lazily (a local file, an HTTP server answering `Range`, a `fetch` in the browser).

use std::future::{Future, ready};
use std::ops::Range;

use crate::Result;

/// Reads byte ranges of one file.
///
/// Every read a query needs at one step comes in one call, so a host can fetch them together:
/// several requests at once, or ranges that touch merged into one. Futures need not be `Send`
/// (a browser's are not).
pub trait RangeSource {
    /// The bytes of each of `ranges`, in order. A range that runs past the end of the file
    /// yields the bytes up to the end (none when it starts there or after).
    ///
    /// # Errors
    /// [`crate::Error::Read`] when the bytes cannot be had (the file or the server failed).
    fn read(&self, ranges: &[Range<u64>]) -> impl Future<Output = Result<Vec<Vec<u8>>>>;
}

/// A file held in memory: what a host that read a bundle whole, or a test, reads from.
#[derive(Debug, Clone, Default)]
pub struct InMemory(pub Vec<u8>);

impl InMemory {
    /// The bytes of `range`, as [`RangeSource::read`] gives them: fewer where the file ends
    /// first, none when it starts there or after.
    pub fn part(&self, range: &Range<u64>) -> &[u8] {
        let len = self.0.len() as u64;
        let (start, end) = (range.start.min(len), range.end.clamp(range.start.min(len), len));
        // Both are at most the length of a slice in memory.
        self.0.get(start as usize..end as usize).unwrap_or_default()
    }
}

impl RangeSource for InMemory {
    fn read(&self, ranges: &[Range<u64>]) -> impl Future<Output = Result<Vec<Vec<u8>>>> {
        ready(Ok(ranges.iter().map(|range| self.part(range).to_vec()).collect()))
    }
}

/// The output of `future` if it is ready when first polled, as a read is from a source that
/// does its work then ([`InMemory`], the CLI's file and HTTP sources); `None` if it is not.
/// Synchronous hosts and tests use it to run reads without an async runtime.
pub fn ready_now<F: Future>(future: F) -> Option<F::Output> {
    use std::task::{Context, Poll, Waker};
    match std::pin::pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}
