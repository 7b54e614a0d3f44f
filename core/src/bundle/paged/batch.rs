//! Reads that futures running together ask for at the same time, sent to the source as one.
//!
//! A hybrid search runs its three retrievers together, each reading a step at a time; sent
//! alone, their steps would cost a round trip each, one after the other. Through a
//! [`Batcher`], a read adds its ranges to the open batch (or opens one) and yields once, so
//! that the futures polled beside it add theirs; the first of them polled again seals the
//! batch and reads it from the source, and the others wait for its bytes. A read dropped
//! while it reads for the others (its query was cancelled) leaves the batch abandoned, and
//! the others read their ranges again.

use std::future::poll_fn;
use std::ops::Range;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

use super::{Io, RangeSource};
use crate::{Error, Result};

/// Gathers the reads asked for together into batches, one read of the source each.
#[derive(Debug, Default)]
pub(crate) struct Batcher {
    /// The batch still taking ranges, if any.
    open: Mutex<Option<Open>>,
}

/// The batch still taking ranges, and its ranges so far.
#[derive(Debug)]
struct Open {
    batch: Arc<Batch>,
    ranges: Vec<Range<u64>>,
}

/// What the reads of one batch wait for: its bytes.
#[derive(Debug)]
struct Batch {
    state: Mutex<State>,
}

#[derive(Debug)]
enum State {
    /// Not read yet; the wakers of the reads waiting for it.
    Waiting(Vec<Waker>),
    /// Read: each range's bytes until its read takes them, or the error.
    Read(Result<Vec<Vec<u8>>>),
    /// The read reading it was dropped first.
    Abandoned,
}

impl Batcher {
    /// The bytes of each of `ranges`, as [`read_checked`] reads them, read from `source`
    /// together with the ranges of the reads polled beside this one.
    pub(crate) async fn read(
        &self,
        source: &impl RangeSource,
        ranges: &[Range<u64>],
        io: &Mutex<Io>,
    ) -> Result<Vec<Vec<u8>>> {
        loop {
            let (batch, at) = self.add(ranges);
            yield_now().await;
            if let Some(all) = self.seal(&batch) {
                let reading = Reading(Some(&batch));
                let read = read_checked(source, &all, io).await;
                reading.done(read);
            }
            let parts = at..at + ranges.len();
            if let Some(read) = poll_fn(|cx| batch.take(&parts, cx.waker())).await {
                return read;
            }
        }
    }

    /// Adds `ranges` to the open batch, or to a new one: the batch, and where they start in it.
    fn add(&self, ranges: &[Range<u64>]) -> (Arc<Batch>, usize) {
        let mut open = lock(&self.open);
        let open = open.get_or_insert_with(|| Open {
            batch: Arc::new(Batch { state: Mutex::new(State::Waiting(Vec::new())) }),
            ranges: Vec::new(),
        });
        let at = open.ranges.len();
        open.ranges.extend_from_slice(ranges);
        (Arc::clone(&open.batch), at)
    }

    /// The ranges of `batch` if it is still open, sealed for the caller to read: new reads
    /// go to a new batch.
    fn seal(&self, batch: &Arc<Batch>) -> Option<Vec<Range<u64>>> {
        lock(&self.open).take_if(|open| Arc::ptr_eq(&open.batch, batch)).map(|open| open.ranges)
    }
}

impl Batch {
    /// Moves the batch on to `state`, waking the reads waiting for it.
    fn finish(&self, state: State) {
        let waiting = match std::mem::replace(&mut *lock(&self.state), state) {
            State::Waiting(wakers) => wakers,
            _ => Vec::new(),
        };
        waiting.into_iter().for_each(Waker::wake);
    }

    /// The bytes of `parts` of the batch once read (`None` if abandoned), else pending, to be
    /// woken through `waker`.
    fn take(&self, parts: &Range<usize>, waker: &Waker) -> Poll<Option<Result<Vec<Vec<u8>>>>> {
        match &mut *lock(&self.state) {
            State::Waiting(wakers) => {
                if !wakers.iter().any(|w| w.will_wake(waker)) {
                    wakers.push(waker.clone());
                }
                Poll::Pending
            }
            State::Read(Ok(all)) => Poll::Ready(Some(
                all.get_mut(parts.clone())
                    .map(|mine| mine.iter_mut().map(std::mem::take).collect())
                    .ok_or_else(|| Error::Read("a batch of reads lost a range".to_owned())),
            )),
            State::Read(Err(error)) => Poll::Ready(Some(Err(shared(error)))),
            State::Abandoned => Poll::Ready(None),
        }
    }
}

/// A batch being read; dropped before it is done, it leaves the batch abandoned.
struct Reading<'a>(Option<&'a Batch>);

impl Reading<'_> {
    /// The batch, read.
    fn done(mut self, read: Result<Vec<Vec<u8>>>) {
        if let Some(batch) = self.0.take() {
            batch.finish(State::Read(read));
        }
    }
}

impl Drop for Reading<'_> {
    fn drop(&mut self) {
        if let Some(batch) = self.0.take() {
            batch.finish(State::Abandoned);
        }
    }
}

/// What each read of a batch that failed is told: the source's error, which every read
/// shares.
fn shared(error: &Error) -> Error {
    match error {
        Error::Read(message) => Error::Read(message.clone()),
        other => Error::Read(other.to_string()),
    }
}

/// Pending once, having woken itself: the futures polled beside this one run meanwhile.
async fn yield_now() {
    let mut yielded = false;
    poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

/// The bytes of `ranges` read from `source` in one read, counted in `io`; a source that
/// answers with another number of ranges, or more bytes than asked for, is refused.
pub(crate) async fn read_checked(
    source: &impl RangeSource,
    ranges: &[Range<u64>],
    io: &Mutex<Io>,
) -> Result<Vec<Vec<u8>>> {
    let read = source.read(ranges).await?;
    if read.len() != ranges.len() {
        return Err(Error::Read(format!("{} ranges read for {} asked", read.len(), ranges.len())));
    }
    let too_long = ranges
        .iter()
        .zip(&read)
        .any(|(range, bytes)| bytes.len() as u64 > range.end.saturating_sub(range.start));
    if too_long {
        return Err(Error::Read("more bytes read than asked for".to_owned()));
    }
    let bytes = read.iter().map(|bytes| bytes.len() as u64).sum();
    *lock(io) += Io { requests: ranges.len() as u64, bytes, round_trips: 1 };
    Ok(read)
}

/// The value behind `mutex`, even if a thread panicked holding it (what it guards stays
/// consistent: counters, a cache whose updates cannot panic, a batch's state).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
#[allow(clippy::single_range_in_vec_init)] // Reads of one range each.
mod tests {
    use std::cell::Cell;
    use std::future::Future;
    use std::pin::pin;
    use std::task::Context;

    use super::*;
    use crate::bundle::paged::{InMemory, ready_now};

    /// A file of bytes `0, 1, 2, …`, counting the reads asked of it.
    struct Counted {
        file: InMemory,
        reads: Cell<usize>,
    }

    impl Counted {
        fn new() -> Self {
            Self { file: InMemory((0..=255).collect()), reads: Cell::new(0) }
        }
    }

    impl RangeSource for Counted {
        fn read(&self, ranges: &[Range<u64>]) -> impl Future<Output = Result<Vec<Vec<u8>>>> {
            self.reads.set(self.reads.get() + 1);
            self.file.read(ranges)
        }
    }

    /// A source whose reads never complete.
    struct Stalled;

    impl RangeSource for Stalled {
        fn read(&self, _: &[Range<u64>]) -> impl Future<Output = Result<Vec<Vec<u8>>>> {
            std::future::pending()
        }
    }

    fn bytes(range: Range<u8>) -> Vec<u8> {
        range.collect()
    }

    #[test]
    fn reads_asked_together_are_one_read_of_the_source_and_reads_one_after_another_are_not() {
        let (batcher, source, io) = (Batcher::default(), Counted::new(), Mutex::default());
        let read = |ranges: Vec<Range<u64>>| {
            let (batcher, source, io) = (&batcher, &source, &io);
            async move { batcher.read(source, &ranges, io).await }
        };
        let together = async {
            let (a, b) =
                futures_util::future::join(read(vec![0..2, 10..12]), read(vec![5..6])).await;
            (a.unwrap(), b.unwrap())
        };
        let (a, b) = ready_now(together).unwrap();
        assert_eq!((a, b), (vec![bytes(0..2), bytes(10..12)], vec![bytes(5..6)]));
        assert_eq!(source.reads.get(), 1);
        assert_eq!(*lock(&io), Io { requests: 3, bytes: 5, round_trips: 1 });

        let apart = async { (read(vec![1..3]).await.unwrap(), read(vec![3..4]).await.unwrap()) };
        assert_eq!(ready_now(apart).unwrap(), (vec![bytes(1..3)], vec![bytes(3..4)]));
        assert_eq!(source.reads.get(), 3, "a read waits for no one after it");
    }

    #[test]
    fn a_read_dropped_while_it_reads_for_others_leaves_them_to_read_again() {
        let (batcher, io, source) = (Batcher::default(), Mutex::default(), Counted::new());
        let mut cx = Context::from_waker(Waker::noop());
        let mut first = Box::pin(batcher.read(&Stalled, &[0..4], &io));
        let mut second = pin!(batcher.read(&source, &[8..10], &io));
        assert!(first.as_mut().poll(&mut cx).is_pending(), "yields");
        assert!(second.as_mut().poll(&mut cx).is_pending(), "joins the batch and yields");
        assert!(first.as_mut().poll(&mut cx).is_pending(), "reads the batch: never done");
        assert!(second.as_mut().poll(&mut cx).is_pending(), "waits for the first");
        drop(first);
        assert!(second.as_mut().poll(&mut cx).is_pending(), "reads again: yields first");
        match second.as_mut().poll(&mut cx) {
            Poll::Ready(read) => assert_eq!(read.unwrap(), vec![bytes(8..10)]),
            Poll::Pending => panic!("the second read did not read again"),
        }
    }

    #[test]
    fn a_failed_read_fails_every_read_of_its_batch_and_a_short_answer_is_refused() {
        struct Failing;
        impl RangeSource for Failing {
            fn read(&self, _: &[Range<u64>]) -> impl Future<Output = Result<Vec<Vec<u8>>>> {
                std::future::ready(Err(Error::Read("connection reset".to_owned())))
            }
        }
        let (batcher, io) = (Batcher::default(), Mutex::default());
        let both = futures_util::future::join(
            batcher.read(&Failing, &[0..1], &io),
            batcher.read(&Failing, &[1..2], &io),
        );
        let (a, b) = ready_now(both).unwrap();
        for error in [a.unwrap_err(), b.unwrap_err()] {
            assert_eq!(error.to_string(), "reading the bundle: connection reset");
        }

        struct Short;
        impl RangeSource for Short {
            fn read(&self, _: &[Range<u64>]) -> impl Future<Output = Result<Vec<Vec<u8>>>> {
                std::future::ready(Ok(vec![vec![0]]))
            }
        }
        let error = ready_now(read_checked(&Short, &[0..1, 1..2], &io)).unwrap().unwrap_err();
        assert_eq!(error.to_string(), "reading the bundle: 1 ranges read for 2 asked");
    }
}
