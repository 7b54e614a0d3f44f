//! What lopdf 0.42 copies while it loads a file, reckoned by the pre-scan ([`super::prescan`])
//! before lopdf runs, and charged to the inflate budget.
//!
//! lopdf parses an object at every offset an in-use cross-reference entry gives, and keeps
//! what it parsed. Of a stream it keeps a copy of the data: `/Length` bytes from the end of
//! the `stream` line, when `endstream` follows them (the length direct, or read from the
//! object it refers to); or, when the object referred to cannot be read while parsing, as
//! many bytes as that object says once the document is loaded, however far they go. Stream
//! headers can be nested inside each other's data and many entries can lead to one header, so
//! the copies can add up to far more than the file (a 535 KB file of 500 nested headers made
//! lopdf hold 256 MB). Resolving a `/Length` reference parses the object referred to, which
//! copies its data too when it is a stream (and resolves its own length: chains are bounded
//! by [`MAX_RESOLVE_DEPTH`]).
//!
//! So every `n g obj` header ([`Body`]) of a stream, or of an integer a length may refer to
//! (by the last digits of its number), is kept with where lopdf lands on it from an offset
//! ([`Landing`]), the in-use entries are counted for the header
//! they lead to, with the object number lopdf reads there ([`Entries`]), and [`charge`] takes
//! from the budget, for each entry leading to a stream, the most lopdf may copy parsing it:
//! its direct length when `endstream` follows; for a length referred to, the largest value
//! the number referred to may have (of integers lopdf reads under that number, in the file or
//! in object streams) that fits in the file, or all the rest of the file when that value
//! cannot be known before lopdf runs (stored in an encrypted object stream); plus what
//! resolving the reference parses.
//!
//! A length stored in an object stream (a compressed entry of a cross-reference stream gives
//! its number a container) makes lopdf load that container each time it resolves it: parse
//! it (resolving its own length), copy its data again and inflate it. Each resolution is
//! charged the most of the containers the number may have. When lopdf would resolve without
//! end (an object stream whose own length is stored in an object stream: each load starts
//! afresh, and the stack overflowed) the file is refused, as it is when a container is a
//! stream other than an object stream (which lopdf would inflate without a bound; real files
//! never do it), and when a number named as a container has a compressed entry too (lopdf
//! would load the container's own container, without a bound: see [`Nesting`]).
//!
//! When the trailer has an `/Encrypt`, lopdf first copies every entry's object raw, before it
//! authenticates ([`RawObjects`]): when the file may be taken for encrypted, each entry is
//! charged that copy as well.
//!
//! Of the stream copies, and of the raw copies, what exceeds one copy of the file is charged
//! ([`first_copy_free`]): the first is bounded like the file itself.
//!
//! Every entry is also charged the long run of white space, digits and comments lopdf scans
//! from its offset looking for a header ([`Scans`]), twice when the file may be taken for
//! encrypted (lopdf scans the raw copy again when it parses it).

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use crate::Result;

use super::decode::Budget;
use super::prescan::skip;

/// Deepest nesting of `/Length` references reckoned: twice [`super::prescan::MAX_LENGTH_CHAIN`]
/// (which the chains themselves were checked against) and a little more.
const MAX_RESOLVE_DEPTH: usize = 2 * super::prescan::MAX_LENGTH_CHAIN + 4;

/// A stream's `/Length` as lopdf reads it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Length {
    /// A direct integer.
    Direct(i64),
    /// A reference to this object number.
    Ref(u32),
    /// Missing, or neither: lopdf copies nothing.
    Other,
}

/// What an object is, of what lopdf copies or resolves lengths to.
#[derive(Debug)]
pub(super) enum Kind {
    /// An integer object (not negative), as lopdf reads it.
    Int(u64),
    /// A stream.
    Stream {
        /// Where its data starts, after the end of line that must follow `stream`; `None`
        /// when there is none (lopdf then reads the dictionary alone).
        data: Option<usize>,
        /// Its `/Length`.
        length: Length,
        /// `/Type /ObjStm`.
        object_stream: bool,
    },
}

/// What lopdf parses of the object after a header: its tokens, and the bytes they span
/// (stream data left out: its copies are reckoned by [`charge`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Parsed {
    /// Tokens, as the lexical pass counts them.
    pub(super) tokens: usize,
    /// Bytes from the end of `obj` to the end of the object.
    pub(super) bytes: usize,
}

/// An object header (`n g obj`) with an integer or a stream after it.
#[derive(Debug)]
pub(super) struct Body {
    /// The digits of its object number.
    pub(super) digits: Range<usize>,
    /// Where the digits of a number that fits in 32 bits may start: past the last digit other
    /// than `0` before the last ten.
    zeros: usize,
    /// What its object is.
    pub(super) kind: Kind,
}

impl Body {
    /// The header whose number's digits in `bytes` are `digits`, of an object of `kind`.
    pub(super) fn new(bytes: &[u8], digits: Range<usize>, kind: Kind) -> Self {
        let ten = digits.end.saturating_sub(10).max(digits.start);
        let head = bytes.get(digits.start..ten).unwrap_or_default();
        let zeros =
            head.iter().rposition(|&d| d != b'0').map_or(digits.start, |i| digits.start + i + 1);
        Self { digits, zeros, kind }
    }

    /// The object number lopdf reads landing at `at` (in its digits, or in the white space and
    /// comments before them): the digits from there, when they fit in 32 bits.
    fn number_at(&self, bytes: &[u8], at: usize) -> Option<u32> {
        let mut from = at.max(self.digits.start);
        if self.digits.end - from > 10 {
            if from < self.zeros {
                return None;
            }
            from = self.digits.end - 10;
        }
        let digits = bytes.get(from..self.digits.end)?;
        let value = digits.iter().fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
        u32::try_from(value).ok()
    }
}

/// The value lopdf reads for an integer object whose body starts at `start`: digits with an
/// optional `+`, not followed by `.` (a real); `None` for anything else, a negative number
/// or one past `i64`.
pub(super) fn integer_at(bytes: &[u8], start: usize) -> Option<u64> {
    let rest = bytes.get(start..)?;
    let rest = rest.strip_prefix(b"+").unwrap_or(rest);
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || rest.get(digits) == Some(&b'.') {
        return None;
    }
    let value = rest[..digits]
        .iter()
        .try_fold(0u64, |acc, &d| acc.checked_mul(10)?.checked_add(u64::from(d - b'0')))?;
    (value <= i64::MAX as u64).then_some(value)
}

/// Where the data of a stream whose `stream` keyword ends at `pos` starts, as lopdf reads it:
/// after spaces and tabs and one end of line, which must be there.
pub(super) fn data_start(bytes: &[u8], pos: usize) -> Option<usize> {
    let rest = bytes.get(pos..)?;
    let blanks = rest.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
    let rest = &rest[blanks..];
    let eol = if rest.starts_with(b"\r\n") {
        2
    } else if rest.starts_with(b"\n") || rest.starts_with(b"\r") {
        1
    } else {
        return None;
    };
    Some(pos + blanks + eol)
}

/// Where lopdf lands from a cross-reference offset: for each header (its digits, in file
/// order), the positions leading to it, as runs: its digits, and before them white space and
/// comments, which lopdf skips before a header (the text of a comment there counts too: lopdf
/// fails on it, and counting it only costs a little budget). Found in one backward pass over
/// the file: one run per header, and two more for each header inside the comments before
/// another.
pub(super) struct Landing {
    /// Disjoint runs in file order, each with the header it leads to.
    runs: Vec<(Range<usize>, usize)>,
}

impl Landing {
    /// Where lopdf lands in `bytes` on each of `headers` (their digits, in file order).
    pub(super) fn new(bytes: &[u8], headers: &[Range<usize>]) -> Self {
        let mut runs: Vec<(Range<usize>, usize)> = Vec::new();
        if headers.is_empty() {
            return Self { runs };
        }
        // Where lopdf lands from the position after the one being looked at, and from the end
        // of the line (the end of a comment starting on it).
        let (mut after, mut line_end): (Option<usize>, Option<usize>) = (None, None);
        let mut header = headers.len();
        for pos in (0..bytes.len()).rev() {
            while header > 0 && headers[header - 1].start > pos {
                header -= 1;
            }
            let byte = bytes[pos];
            let lands = if header > 0 && headers[header - 1].contains(&pos) {
                Some(header - 1)
            } else if byte == b'%' {
                line_end
            } else if super::lex::is_space(byte) {
                after
            } else {
                None
            };
            if byte == b'\n' || byte == b'\r' {
                line_end = lands;
            }
            after = lands;
            if let Some(i) = lands {
                match runs.last_mut() {
                    Some((run, j)) if *j == i => run.start = pos,
                    _ => runs.push((pos..pos + 1, i)),
                }
            }
        }
        runs.reverse();
        Self { runs }
    }

    /// The header an entry at `offset` leads to, if any.
    fn find(&self, offset: usize) -> Option<usize> {
        run_at(&self.runs, offset, |(run, _)| run).map(|&(_, header)| header)
    }
}

/// The in-use cross-reference entries (of tables and streams, wherever they are) counted for
/// the header they lead to.
pub(super) struct Entries<'a> {
    /// The file.
    bytes: &'a [u8],
    /// Where lopdf's offsets count from: the first `%PDF-` (lopdf drops what comes before).
    base: usize,
    /// The headers of streams and integers, in file order.
    bodies: &'a [Body],
    /// Where entries land: on every header.
    landing: Landing,
    /// The tokens of each header's object (32 bits: there may be millions of headers).
    tokens: Vec<u32>,
    /// The bytes of each header's object lopdf parses (stream data left out).
    spans: Vec<u32>,
    /// How many entries lead to each header.
    header_counts: Vec<u32>,
    /// The body of each header (`u32::MAX`: none).
    body_of: Vec<u32>,
    /// How many entries lead to each body.
    counts: Vec<usize>,
    /// The object numbers lopdf reads at each body, from the entries leading there.
    numbers: Vec<Vec<u32>>,
    /// Where lopdf copies raw objects from, for an encrypted document.
    raw: Option<RawObjects>,
    /// The bytes of the raw copies counted so far.
    raw_bytes: usize,
    /// Long runs lopdf may scan from an entry's offset.
    scans: Scans,
    /// The bytes of them scanned so far.
    scanned: usize,
    /// The numbers streams' lengths refer to.
    refs: HashSet<u32>,
    /// The numbers a stream may be read as (the last digits of its header's).
    stream_numbers: HashSet<u32>,
    /// For a number a length refers to, the containers compressed entries give it (at most
    /// [`MAX_CONTAINERS`]).
    containers: HashMap<u32, Vec<u32>>,
    /// Numbers given more than [`MAX_CONTAINERS`] containers: any of [`Entries::all`].
    many: HashSet<u32>,
    /// Every container of a compressed entry that a stream may be read as.
    all: HashSet<u32>,
    /// The numbers of compressed entries and of their containers, checked against each other.
    nesting: Nesting,
}

/// The object numbers compressed entries give, and those they name as object streams: a
/// number in both is refused. The PDF specification forbids storing a stream in an object
/// stream; lopdf, loading an object stream to resolve a length, loads the container's own
/// container when its entry is compressed too, without a bound: through a cycle (an object
/// stream stored in itself) it recursed until the stack overflowed and the process aborted,
/// and through a chain it loaded, uncharged, another object stream for every length.
#[derive(Default)]
struct Nesting {
    /// The numbers compressed entries give.
    numbers: HashSet<u32>,
    /// The numbers compressed entries name as object streams.
    containers: HashSet<u32>,
}

impl Nesting {
    /// Records a compressed entry giving `number` the container `container`.
    fn check(&mut self, number: u32, container: u32) -> Result<()> {
        let nested = if self.containers.contains(&number) || number == container {
            Some(number)
        } else {
            self.numbers.contains(&container).then_some(container)
        };
        if let Some(stored) = nested {
            return Err(crate::Error::Pdf(format!(
                "object {stored} is stored in an object stream and is the object stream of another object (objects stored in object streams nest)"
            )));
        }
        self.numbers.insert(number);
        self.containers.insert(container);
        if self.numbers.len().max(self.containers.len()) > crate::limits::MAX_PDF_TOKENS {
            return Err(crate::Error::Limit(format!(
                "the PDF stores more than {} objects in object streams",
                crate::limits::MAX_PDF_TOKENS
            )));
        }
        Ok(())
    }
}

/// Most containers kept for one number (real files give one).
const MAX_CONTAINERS: usize = 16;

impl<'a> Entries<'a> {
    /// The entries of a file lopdf may take for `encrypted` (its raw copies are counted then).
    ///
    /// # Errors
    /// [`crate::Error::Limit`] for more than [`crate::limits::MAX_PDF_TOKENS`] headers.
    pub(super) fn new(
        bytes: &'a [u8],
        bodies: &'a [Body],
        all: Vec<(Range<usize>, Parsed)>,
        encrypted: bool,
    ) -> Result<Self> {
        let mut order: Vec<usize> = (0..bodies.len()).collect();
        order.sort_unstable_by_key(|&i| bodies[i].digits.start);
        // The body of each header, if any (the bodies' headers are among them).
        let mut body_of = vec![u32::MAX; all.len()];
        let mut next = order.iter().peekable();
        for (k, (digits, _)) in all.iter().enumerate() {
            if let Some(&&i) = next.peek()
                && bodies[i].digits.start == digits.start
            {
                body_of[k] = u32::try_from(i).unwrap_or(u32::MAX);
                next.next();
            }
        }
        let narrow = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let mut headers = Vec::with_capacity(all.len());
        let mut tokens = Vec::with_capacity(all.len());
        let mut spans = Vec::with_capacity(all.len());
        for (digits, parsed) in all {
            headers.push(digits);
            tokens.push(narrow(parsed.tokens));
            spans.push(narrow(parsed.bytes));
        }
        let landing = Landing::new(bytes, &headers);
        drop(headers);
        let base = super::prescan::find(bytes, b"%PDF-", 0).unwrap_or(0);
        let counts = vec![0; bodies.len()];
        let numbers = bodies.iter().map(|_| Vec::new()).collect();
        let raw = if encrypted { Some(RawObjects::new(bytes)?) } else { None };
        let streams = bodies.iter().filter(|b| matches!(b.kind, Kind::Stream { .. }));
        let stream_numbers = streams
            .flat_map(|b| {
                super::prescan::suffix_numbers(bytes.get(b.digits.clone()).unwrap_or_default())
            })
            .collect();
        Ok(Self {
            bytes,
            base,
            bodies,
            landing,
            header_counts: vec![0; tokens.len()],
            tokens,
            spans,
            body_of,
            counts,
            numbers,
            raw,
            raw_bytes: 0,
            scans: Scans::new(bytes),
            scanned: 0,
            refs: length_refs(bodies),
            stream_numbers,
            containers: HashMap::new(),
            many: HashSet::new(),
            all: HashSet::new(),
            nesting: Nesting::default(),
        })
    }

    /// Records a compressed entry (of a cross-reference stream) giving object `number` the
    /// object stream `container`. Only what matters is kept: containers a stream may be read
    /// as, and numbers a length refers to.
    ///
    /// # Errors
    /// [`crate::Error::Pdf`] when a number named as an object stream also has a compressed
    /// entry (see [`Nesting`]); [`crate::Error::Limit`] past [`crate::limits::MAX_PDF_TOKENS`]
    /// of either.
    pub(super) fn compressed(&mut self, number: u32, container: u32) -> Result<()> {
        self.nesting.check(number, container)?;
        if !self.stream_numbers.contains(&container) {
            return Ok(()); // lopdf finds no stream to inflate.
        }
        self.all.insert(container);
        if !self.refs.contains(&number) {
            return Ok(());
        }
        let list = self.containers.entry(number).or_default();
        if list.contains(&container) {
            return Ok(());
        }
        if list.len() < MAX_CONTAINERS {
            list.push(container);
        } else {
            self.many.insert(number);
        }
        Ok(())
    }

    /// Whether lopdf may resolve a reference to `n` from an object stream.
    fn may_be_compressed(&self, n: u32) -> bool {
        self.containers.contains_key(&n)
    }

    /// The containers lopdf may inflate to resolve a reference to `n`: those given it, and
    /// whether any of [`Entries::all`] may be one.
    fn containers_of(&self, n: u32) -> (&[u32], bool) {
        let given = self.containers.get(&n).map_or(&[][..], Vec::as_slice);
        (given, self.many.contains(&n))
    }

    /// Counts an in-use entry at `offset` (from lopdf's start of the file).
    pub(super) fn add(&mut self, offset: usize) {
        let Some(at) = offset.checked_add(self.base) else { return };
        if let Some(raw) = &self.raw {
            self.raw_bytes = self.raw_bytes.saturating_add(raw.copy(at));
        }
        self.scanned = self.scanned.saturating_add(self.scans.scan(at));
        let Some(k) = self.landing.find(at) else { return };
        self.header_counts[k] = self.header_counts[k].saturating_add(1);
        let Some(i) = self.body_of.get(k).filter(|&&i| i != u32::MAX).map(|&i| i as usize) else {
            return;
        };
        let Some(number) = self.bodies[i].number_at(self.bytes, at) else { return };
        self.counts[i] += 1;
        if !self.numbers[i].contains(&number) {
            self.numbers[i].push(number);
        }
    }

    /// The tokens of the objects lopdf parses again, for every entry past the first leading
    /// to a header: it keeps all it parsed until it has parsed every entry (a 440 KB file of
    /// 2,000 entries leading to an array of 200,000 numbers made it take over 23 GB).
    pub(super) fn repeated_tokens(&self) -> usize {
        let repeated = self.header_counts.iter().zip(&self.tokens);
        repeated.fold(0usize, |sum, (&count, &tokens)| {
            let again = count.saturating_sub(1) as usize;
            sum.saturating_add(again.saturating_mul(tokens as usize))
        })
    }

    /// The bytes of the objects lopdf parses again, for every entry past the first leading to
    /// a header: it copies a string's bytes each time, and scans the white space after `obj`
    /// each time (a 1.15 MB file of 4,000 entries leading to a string of 1 MiB made it keep
    /// 4 GiB).
    pub(super) fn repeated_bytes(&self) -> usize {
        let repeated = self.header_counts.iter().zip(&self.spans);
        repeated.fold(0usize, |sum, (&count, &bytes)| {
            let again = count.saturating_sub(1) as usize;
            sum.saturating_add(again.saturating_mul(bytes as usize))
        })
    }

    /// How many entries lead to body `i`.
    pub(super) fn count(&self, i: usize) -> usize {
        self.counts[i]
    }

    /// The bytes lopdf copies raw, before it authenticates, when it takes the document for
    /// encrypted: from each entry's offset to the end of the first `endobj` after the header
    /// there, or to the end of the file.
    pub(super) fn raw_bytes(&self) -> usize {
        self.raw_bytes
    }

    /// The bytes lopdf scans from the entries' offsets in long runs of white space, digits and
    /// comments, before it reads a header there or fails (see [`Scans`]).
    pub(super) fn scanned(&self) -> usize {
        self.scanned
    }
}

/// Runs of at least [`LONG_RUN`] bytes of white space, digits and comments (from `%` to the end
/// of the line): from an entry's offset lopdf skips white space (and comments) and digits
/// looking for a header, once per entry, to the end of such a run. Many entries into one long
/// run cost entries times its length (4,000 entries into 4 MB of spaces took lopdf 10 s; 400,000
/// would take 20 minutes). Runs shorter than [`LONG_RUN`] cost at most that per entry, a small
/// multiple of the entries' own size.
struct Scans {
    /// The long runs, in file order.
    runs: Vec<Range<usize>>,
}

/// Shortest run [`Scans`] keeps.
const LONG_RUN: usize = 256;

impl Scans {
    /// Finds the long runs of `bytes` in one pass.
    fn new(bytes: &[u8]) -> Self {
        let mut runs = Vec::new();
        let mut start: Option<usize> = None;
        let mut comment = false;
        for (i, &b) in bytes.iter().enumerate() {
            let scanned = if comment {
                comment = b != b'\n' && b != b'\r';
                true
            } else {
                comment = b == b'%';
                comment || super::lex::is_space(b) || b.is_ascii_digit()
            };
            match (scanned, start) {
                (true, None) => start = Some(i),
                (false, Some(from)) => {
                    if i - from >= LONG_RUN {
                        runs.push(from..i);
                    }
                    start = None;
                }
                _ => {}
            }
        }
        if let Some(from) = start.filter(|&from| bytes.len() - from >= LONG_RUN) {
            runs.push(from..bytes.len());
        }
        Self { runs }
    }

    /// The bytes lopdf may scan in a long run from an entry at `at`.
    fn scan(&self, at: usize) -> usize {
        run_at(&self.runs, at, |run| run).map_or(0, |run| run.end - at)
    }
}

/// Where lopdf 0.42 copies objects from when the trailer has an `/Encrypt`: for every in-use
/// entry, before it authenticates (and whether it can or not), it reads a header at the
/// entry's offset (ASCII white space, digits, white space, digits, white space, `obj`: no
/// comments) and copies from the offset to the end of the first `endobj` after it, or to the
/// end of the file; copies of different objects are all kept. Nothing bounds the distance, so
/// entries times distance can be far more than the file (300 headers followed by 500 KB
/// without `endobj` made lopdf take 150 MB).
struct RawObjects {
    /// For each header (in file order), the positions leading to it (the white space before
    /// its digits, and its digits), and where its copy ends.
    runs: Vec<(Range<usize>, usize)>,
}

impl RawObjects {
    /// Finds every header in one pass (each byte looked at a few times at most).
    fn new(bytes: &[u8]) -> Result<Self> {
        let space = |b: u8| b.is_ascii_whitespace();
        let digit = |b: u8| b.is_ascii_digit();
        let mut runs = Vec::new();
        // The next `endobj` at or after where the last search started (`None`: there is none).
        let mut endobj: Option<Option<usize>> = None;
        let mut pos = 0;
        while let Some(offset) = bytes.get(pos..).and_then(|b| b.iter().position(|&b| digit(b))) {
            let start = pos + offset;
            let end = skip(bytes, start, digit);
            let gap = bytes.get(pos..start).unwrap_or_default();
            let lead = start - gap.iter().rev().take_while(|&&b| space(b)).count();
            pos = end;
            let generation = skip(bytes, end, space);
            let generation_end = skip(bytes, generation, digit);
            let keyword = skip(bytes, generation_end, space);
            if generation_end == generation || !bytes[keyword..].starts_with(b"obj") {
                continue;
            }
            let body = keyword + 3;
            let next = match endobj {
                Some(Some(at)) if at >= body => Some(at),
                Some(None) => None,
                _ => super::prescan::find(bytes, b"endobj", body),
            };
            endobj = Some(next);
            let copy_end = next.map_or(bytes.len(), |at| at + b"endobj".len());
            runs.push((lead..end, copy_end));
            if runs.len() > crate::limits::MAX_PDF_TOKENS {
                return Err(crate::Error::Limit(format!(
                    "the PDF has more than {} object headers",
                    crate::limits::MAX_PDF_TOKENS
                )));
            }
        }
        Ok(Self { runs })
    }

    /// The bytes lopdf copies for an entry at `at`.
    fn copy(&self, at: usize) -> usize {
        run_at(&self.runs, at, |(run, _)| run).map_or(0, |(_, end)| end.saturating_sub(at))
    }
}

/// The one of `runs` (sorted by start, not overlapping) whose range, as `range` reads it,
/// holds `at`.
fn run_at<T>(runs: &[T], at: usize, range: impl Fn(&T) -> &Range<usize>) -> Option<&T> {
    let i = runs.partition_point(|run| range(run).start <= at).checked_sub(1)?;
    runs.get(i).filter(|run| range(run).contains(&at))
}

/// The object numbers streams' lengths refer to.
pub(super) fn length_refs(bodies: &[Body]) -> HashSet<u32> {
    let refs = bodies.iter().filter_map(|b| match b.kind {
        Kind::Stream { length: Length::Ref(n), .. } => Some(n),
        _ => None,
    });
    refs.collect()
}

/// Integers stored in object streams under a number a length refers to, as lopdf reads them.
#[derive(Default)]
pub(super) struct Stored {
    /// The values read under each number.
    values: HashMap<u32, Vec<u64>>,
    /// Numbers whose stored value is not read here (an integer of more than
    /// [`STORED_LOOK`] bytes with the white space before it).
    unknown: HashSet<u32>,
}

/// Most bytes looked at for one object of an object stream (real ones are a few digits after a
/// space).
const STORED_LOOK: usize = 64;

impl Stored {
    /// Reads the integers of an object stream's `content` (decoded, or as it is: lopdf reads
    /// it undecoded when it cannot decode it) whose objects start at `first`, for the numbers
    /// in `refs`: the index before `first` as lopdf reads it (UTF-8, pairs of numbers split on
    /// white space), each object from its offset past ASCII white space.
    pub(super) fn read(&mut self, content: &[u8], first: usize, refs: &HashSet<u32>) {
        let Some(index) = content.get(..first) else { return };
        let Ok(index) = std::str::from_utf8(index) else { return };
        let mut numbers = index.split_whitespace().map(|n| n.parse::<u32>().ok());
        while let (Some(id), Some(offset)) = (numbers.next(), numbers.next()) {
            let (Some(id), Some(offset)) = (id, offset) else { continue };
            if !refs.contains(&id) {
                continue;
            }
            let Some(start) = first.checked_add(offset as usize) else { continue };
            let Some(rest) = content.get(start..) else { continue };
            let look = &rest[..rest.len().min(STORED_LOOK)];
            let blanks = look.iter().take_while(|b| b.is_ascii_whitespace()).count();
            let digits = look[blanks..].iter().skip(1).take_while(|b| b.is_ascii_digit()).count();
            if blanks + 1 + digits >= STORED_LOOK {
                self.unknown.insert(id);
            } else if let Some(value) = integer_at(look, blanks) {
                self.values.entry(id).or_default().push(value);
            }
        }
    }
}

/// Charges `budget` what lopdf copies parsing the streams the entries lead to, and inflates
/// resolving their lengths (see the module docs). `encrypted`: the values stored in object
/// streams cannot be known before lopdf decrypts them. `inflated`: what inflating each object
/// stream body costs.
///
/// # Errors
/// [`crate::Error::Limit`] when the budget runs out, lengths refer to lengths deeper than
/// [`MAX_RESOLVE_DEPTH`] (a cycle), or a compressed entry's container is a stream other than
/// an object stream.
pub(super) fn charge(
    bytes: &[u8],
    entries: &Entries<'_>,
    stored: Stored,
    encrypted: bool,
    inflated: &HashMap<usize, usize>,
    budget: &mut Budget,
) -> Result<()> {
    let bodies = entries.bodies;
    // What each number referred to, or container, may read as: integers (sorted) and streams.
    let mut values = stored.values;
    let mut targets: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, body) in bodies.iter().enumerate() {
        for &n in &entries.numbers[i] {
            if let Kind::Stream { object_stream: false, .. } = body.kind
                && entries.all.contains(&n)
            {
                // lopdf would inflate it, without a bound, as a container.
                return Err(crate::Error::Limit(
                    "a PDF cross-reference entry stores an object in a stream that is not an object stream"
                        .to_owned(),
                ));
            }
            if !entries.refs.contains(&n) && !entries.all.contains(&n) {
                continue;
            }
            match body.kind {
                Kind::Int(v) => values.entry(n).or_default().push(v),
                Kind::Stream { .. } => targets.entry(n).or_default().push(i),
            }
        }
    }
    for v in values.values_mut() {
        v.sort_unstable();
    }
    let mut reckoner = Reckoner {
        bytes,
        bodies,
        entries,
        encrypted,
        inflated,
        values,
        unknown: stored.unknown,
        targets,
        parsed: vec![None; bodies.len()],
        resolved: HashMap::new(),
        inflations: HashMap::new(),
        most: None,
    };
    let mut total = 0usize;
    for i in 0..bodies.len() {
        let count = entries.count(i);
        if count > 0 {
            total = total.saturating_add(count.saturating_mul(reckoner.parse(i, 0)?));
        }
    }
    // The first copy of the file's stream data is not charged (see [`first_copy_free`]).
    budget.take(first_copy_free(total, bytes))
}

/// What is charged of `copied` bytes copied from `bytes`: what exceeds one copy of the file.
/// lopdf's first copy of what it parses (the stream data, and an encrypted file's raw
/// objects, each about the file's size) is bounded by [`crate::limits::MAX_SOURCE_BYTES`]
/// like the file itself; charging it would refuse large real files the budget's cap leaves
/// little room (a 200 MB file whose streams inflate to 60 MB). Only copies beyond it are
/// hostile, and charged (see [`crate::limits::MAX_INFLATED_BYTES`]).
pub(super) fn first_copy_free(copied: usize, bytes: &[u8]) -> usize {
    copied.saturating_sub(bytes.len())
}

/// Reckons what parsing an object and resolving a length cost, each once.
struct Reckoner<'a> {
    /// The file.
    bytes: &'a [u8],
    /// The headers of streams and integers ([`Entries::bodies`]).
    bodies: &'a [Body],
    /// The entries leading to them.
    entries: &'a Entries<'a>,
    /// Whether lopdf may take the file for encrypted.
    encrypted: bool,
    /// What inflating each object stream (by body) costs.
    inflated: &'a HashMap<usize, usize>,
    /// The integers each number may read as, sorted.
    values: HashMap<u32, Vec<u64>>,
    /// Numbers whose value stored in an object stream is not known here.
    unknown: HashSet<u32>,
    /// The streams (bodies) each number may read as.
    targets: HashMap<u32, Vec<usize>>,
    /// What parsing each body costs, once reckoned.
    parsed: Vec<Option<usize>>,
    /// What resolving a reference to each number costs, once reckoned.
    resolved: HashMap<u32, usize>,
    /// What loading each container costs, once reckoned.
    inflations: HashMap<u32, usize>,
    /// The most of all the containers, once reckoned.
    most: Option<usize>,
}

impl Reckoner<'_> {
    /// What lopdf copies parsing body `i`: its data, and what resolving its length parses.
    fn parse(&mut self, i: usize, depth: usize) -> Result<usize> {
        if let Some(cost) = self.parsed[i] {
            return Ok(cost);
        }
        let Kind::Stream { data: Some(start), length, .. } = self.bodies[i].kind else {
            return Ok(0);
        };
        let cost = match length {
            Length::Direct(v) => direct_copy(self.bytes, start, v),
            Length::Ref(n) => {
                self.referred_copy(n, start).saturating_add(self.resolve(n, depth + 1)?)
            }
            Length::Other => 0,
        };
        self.parsed[i] = Some(cost);
        Ok(cost)
    }

    /// What resolving a reference to `n` parses: the most of the streams it may read as.
    fn resolve(&mut self, n: u32, depth: usize) -> Result<usize> {
        if depth > MAX_RESOLVE_DEPTH {
            return Err(super::prescan::too_long_chain());
        }
        if let Some(&cost) = self.resolved.get(&n) {
            return Ok(cost);
        }
        let mut cost = 0usize;
        let count = self.targets.get(&n).map_or(0, Vec::len);
        for k in 0..count {
            let target = self.targets[&n][k];
            cost = cost.max(self.parse(target, depth)?);
        }
        let (given, all) = self.entries.containers_of(n);
        for &container in given {
            cost = cost.max(self.inflate(container, depth)?);
        }
        if all {
            cost = cost.max(self.inflate_most(depth)?);
        }
        self.resolved.insert(n, cost);
        Ok(cost)
    }

    /// The most of [`Reckoner::inflate`] over all the containers, reckoned once, whatever
    /// the numbers that may use it.
    fn inflate_most(&mut self, depth: usize) -> Result<usize> {
        if let Some(cost) = self.most {
            return Ok(cost);
        }
        let mut cost = 0usize;
        let entries = self.entries;
        for &container in &entries.all {
            cost = cost.max(self.inflate(container, depth)?);
        }
        self.most = Some(cost);
        Ok(cost)
    }

    /// What loading the object stream `container` to resolve a reference costs: parsing it,
    /// copying its data again, inflating it.
    fn inflate(&mut self, container: u32, depth: usize) -> Result<usize> {
        if let Some(&cost) = self.inflations.get(&container) {
            return Ok(cost);
        }
        let mut cost = 0usize;
        let count = self.targets.get(&container).map_or(0, Vec::len);
        for k in 0..count {
            let body = self.targets[&container][k];
            let parse = self.parse(body, depth)?;
            let inflated = self.inflated.get(&body).copied().unwrap_or(0);
            cost = cost.max(parse.saturating_mul(2).saturating_add(inflated));
        }
        self.inflations.insert(container, cost);
        Ok(cost)
    }

    /// The most lopdf copies of a stream whose data starts at `start` and whose length refers
    /// to `n`: the largest value `n` may have that fits in the file, or the rest of the file.
    fn referred_copy(&self, n: u32, start: usize) -> usize {
        let room = self.bytes.len().saturating_sub(start);
        if self.unknown.contains(&n) || (self.encrypted && self.entries.may_be_compressed(n)) {
            return room;
        }
        let Some(values) = self.values.get(&n) else { return 0 };
        let fits = values.partition_point(|&v| v <= room as u64);
        fits.checked_sub(1).map_or(0, |k| values[k] as usize)
    }
}

/// What lopdf copies of a stream whose data starts at `start`, of direct length `length`: all
/// of it when `endstream` follows (after an optional end of line), else nothing.
fn direct_copy(bytes: &[u8], start: usize, length: i64) -> usize {
    let Ok(length) = usize::try_from(length) else { return 0 };
    let Some(rest) = start.checked_add(length).and_then(|end| bytes.get(end..)) else {
        return 0;
    };
    let rest = rest
        .strip_prefix(b"\r\n")
        .or_else(|| rest.strip_prefix(b"\n"))
        .or_else(|| rest.strip_prefix(b"\r"))
        .unwrap_or(rest);
    if rest.starts_with(b"endstream") { length } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_from_any_digit() {
        let bytes = b"x 0000000000012345 0 obj";
        let body = Body::new(bytes, 2..18, Kind::Int(1));
        assert_eq!(body.number_at(bytes, 1), Some(12345));
        assert_eq!(body.number_at(bytes, 2), Some(12345));
        assert_eq!(body.number_at(bytes, 15), Some(345));
        let bytes = b"99999999999 0 obj";
        let body = Body::new(bytes, 0..11, Kind::Int(1));
        assert_eq!(body.number_at(bytes, 0), None);
        assert_eq!(body.number_at(bytes, 1), None);
        assert_eq!(body.number_at(bytes, 2), Some(999_999_999));
    }

    #[test]
    fn lengths_as_lopdf_reads_them() {
        assert_eq!(integer_at(b"+12 ", 0), Some(12));
        assert_eq!(integer_at(b"12.5", 0), None);
        assert_eq!(integer_at(b"-3", 0), None);
        assert_eq!(data_start(b"stream \r\nxx", 6), Some(9));
        assert_eq!(data_start(b"stream xx", 6), None);
        assert_eq!(direct_copy(b"abc\r\nendstream", 0, 3), 3);
        assert_eq!(direct_copy(b"abc endstream", 0, 3), 0);
        assert_eq!(direct_copy(b"abc", 0, 4), 0);
    }
}
