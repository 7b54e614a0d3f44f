//! Where a paged file's bytes come from: the one thing a host implements to read a bundle
//! lazily (a local file, an HTTP server answering `Range`, a `fetch` in the browser).

use std::future::{Future, ready};
use std::ops::Range;

use crate::Result;

/// Reads byte ranges of one file.
///
/// Every read a query needs at one step comes in one call, with those of the steps that run
/// beside it (a hybrid query's three retrievers), so a host can fetch them together: several
/// requests at once, or ranges that touch merged into one. Futures need not be `Send` (a
/// browser's are not).
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

/// The output of `future` if it finishes without waiting on anything outside itself, as a
/// read does from a source that does its work when first polled ([`InMemory`], the CLI's file
/// and HTTP sources): it is polled again as long as it wakes itself (a read yields once, so
/// that the reads beside it join its batch); `None` once it waits without having woken
/// itself. Synchronous hosts and tests use it to run reads without an async runtime.
pub fn ready_now<F: Future>(future: F) -> Option<F::Output> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::{Context, Poll, Wake, Waker};

    /// Whether the future woke itself since last polled.
    struct Woken(AtomicBool);

    impl Wake for Woken {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &Arc<Self>) {
            self.0.store(true, Ordering::Relaxed);
        }
    }

    let woken = Arc::new(Woken(AtomicBool::new(false)));
    let waker = Waker::from(Arc::clone(&woken));
    let mut context = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        match future.as_mut().poll(&mut context) {
            Poll::Ready(output) => return Some(output),
            Poll::Pending if woken.0.swap(false, Ordering::Relaxed) => {}
            Poll::Pending => return None,
        }
    }
}
