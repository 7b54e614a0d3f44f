//! Reading a paged file by range: the directory on opening, then only the slots asked for,
//! each checked against its section's root and kept in a [`PageCache`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Range;
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::batch::{Batcher, lock, read_checked};
use super::cache::Key;
use super::{Directory, FLAGS, MAX_DIRECTORY, PageCache, RangeSource, SectionRef, merkle};
use crate::bundle::{HEADER_LEN, parse_header};
use crate::{Error, Result};

/// The format version of paged files.
pub const VERSION: u16 = 4;
/// The most bytes one [`PagedFile::stream`] call reads.
pub const MAX_STREAM_READ: u64 = 256 << 20;
/// The smallest slot payload a stream is read from (and [`super::PagedWriter::stream`]
/// writes).
pub const MIN_STREAM_SLOT: u64 = 1 << 10;
/// Bytes read at once on opening: the header and, for any but the largest corpora, the whole
/// directory.
pub const OPEN_READ: u64 = 64 << 10;

/// What reading has cost so far: ranges read, their bytes, and the reads they came in.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Io {
    /// Ranges read: the requests of a host that sends one for each range.
    pub requests: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Reads of the source, each of the ranges of the steps that ran together: the round
    /// trips of a host that fetches them at once (the CLI's HTTP source sends one multipart
    /// range request for them, where the server answers one).
    pub round_trips: u64,
}

/// What was read between two readings of [`PagedFile::io`]: the later less the earlier.
impl std::ops::Sub for Io {
    type Output = Io;

    fn sub(self, earlier: Self) -> Self {
        Self {
            requests: self.requests.saturating_sub(earlier.requests),
            bytes: self.bytes.saturating_sub(earlier.bytes),
            round_trips: self.round_trips.saturating_sub(earlier.round_trips),
        }
    }
}

impl std::ops::AddAssign for Io {
    fn add_assign(&mut self, other: Self) {
        self.requests += other.requests;
        self.bytes += other.bytes;
        self.round_trips += other.round_trips;
    }
}

/// What reading has cost ([`Io`]), and each section's share of it: the sections read, by
/// name. Opening reads no section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Reads {
    /// Ranges and bytes read in all.
    #[serde(flatten)]
    pub total: Io,
    /// Ranges and bytes of the slots of each section read.
    pub sections: BTreeMap<String, Io>,
}

/// A paged file opened from a [`RangeSource`]: its directory in memory, its slots read when
/// asked for and kept within the cache's budget.
#[derive(Debug)]
pub struct PagedFile<S, B> {
    source: S,
    /// The header's flags.
    flags: u32,
    body: B,
    sections: Vec<SectionRef>,
    /// Where each section starts in the file.
    starts: Vec<u64>,
    cache: Mutex<PageCache>,
    io: Mutex<Io>,
    /// What reading each section's slots has cost, in the order of `sections`.
    section_io: Mutex<Vec<Io>>,
    /// Gathers the reads of queries' steps that run together into one read of the source.
    batcher: Batcher,
}

impl<S: RangeSource, B: DeserializeOwned> PagedFile<S, B> {
    /// Opens the file `source` reads: its header and directory, in one read when the two fit
    /// in [`OPEN_READ`] bytes; slots are then kept up to `budget` bytes.
    ///
    /// # Errors
    /// [`Error::NotABundle`], [`Error::Truncated`], [`Error::TooNew`] (a file that needs a
    /// reader newer than [`VERSION`]), [`Error::TooOld`] (a file older than [`VERSION`], read
    /// whole instead), [`Error::Corrupted`] when the directory does not
    /// match its hash, [`Error::Decode`] when it does not decode or its sections are
    /// inconsistent, [`Error::Read`] from the source; never panics, whatever the bytes.
    pub async fn open(source: S, budget: usize) -> Result<Self> {
        let io = Mutex::new(Io::default());
        let mut bytes = read_one(&source, 0..OPEN_READ, &io).await?;
        let header = parse_header(&bytes, bytes.len() as u64, (VERSION, VERSION), FLAGS)?;
        if header.payload_len > MAX_DIRECTORY {
            return Err(Error::Decode(format!(
                "header: a directory of {} bytes (at most {MAX_DIRECTORY} are read)",
                header.payload_len
            )));
        }
        // At most MAX_DIRECTORY past the header: no overflow.
        let end = HEADER_LEN as u64 + header.payload_len;
        if end > bytes.len() as u64 {
            let rest = read_one(&source, bytes.len() as u64..end, &io).await?;
            bytes.extend_from_slice(&rest);
        }
        let found = bytes.len() as u64;
        let directory =
            bytes.get(HEADER_LEN..end as usize).ok_or(Error::Truncated { expected: end, found })?;
        if blake3::hash(directory).as_bytes() != &header.hash {
            return Err(Error::Corrupted);
        }
        let Directory { body, sections } = postcard::from_bytes(directory)
            .map_err(|e| Error::Decode(format!("directory: {}", e.to_string().to_lowercase())))?;
        let mut starts = Vec::with_capacity(sections.len());
        let mut start = end;
        for section in &sections {
            section.validate()?;
            starts.push(start);
            start = start.checked_add(section.len()).ok_or_else(|| {
                Error::Decode(format!("directory: section {:?} lies past any file", section.name))
            })?;
        }
        let cache = Mutex::new(PageCache::new(budget));
        let section_io = Mutex::new(vec![Io::default(); sections.len()]);
        let batcher = Batcher::default();
        Ok(Self {
            source,
            flags: header.flags,
            body,
            sections,
            starts,
            cache,
            io,
            section_io,
            batcher,
        })
    }
}

impl<S: RangeSource, B> PagedFile<S, B> {
    /// What the bundle keeps in the directory.
    pub fn body(&self) -> &B {
        &self.body
    }

    /// The header's flags ([`FLAGS`]).
    pub fn flags(&self) -> u32 {
        self.flags
    }

    /// The sections, in the order they were written.
    pub fn sections(&self) -> &[SectionRef] {
        &self.sections
    }

    /// The index of the section named `name`.
    pub fn section(&self, name: &str) -> Option<u32> {
        let index = self.sections.iter().position(|section| section.name == name)?;
        u32::try_from(index).ok()
    }

    /// What reading has cost since the file was opened, opening included.
    pub fn io(&self) -> Io {
        *lock(&self.io)
    }

    /// What reading has cost since the file was opened, opening included, and each section's
    /// share of it.
    pub fn reads(&self) -> Reads {
        let mut sections: BTreeMap<String, Io> = BTreeMap::new();
        for (section, io) in self.sections.iter().zip(lock(&self.section_io).iter()) {
            if io.requests > 0 {
                *sections.entry(section.name.clone()).or_default() += *io;
            }
        }
        Reads { total: self.io(), sections }
    }

    /// Bytes of pages in the cache.
    pub fn cached_bytes(&self) -> usize {
        lock(&self.cache).held()
    }

    /// The payloads of the slots `slots` of section `section`, in order, each checked
    /// against the section's root. Those not in the cache are read together, a range for each
    /// run of consecutive slots.
    ///
    /// # Errors
    /// [`Error::Decode`] for a section or slot that does not exist, [`Error::TruncatedPage`]
    /// naming the first slot the file ends before, [`Error::CorruptedPage`] naming a slot
    /// that does not match the root, [`Error::Read`] from the source.
    pub async fn slots(&self, section: u32, slots: &[u32]) -> Result<Vec<Arc<[u8]>>> {
        let (listed, start) = self.listed(section)?;
        if let Some(slot) = slots.iter().find(|&&slot| slot >= listed.slots) {
            return Err(Error::Decode(format!(
                "section {:?} has {} slots, not slot {slot}",
                listed.name, listed.slots
            )));
        }
        let key = |index| Key { section, index };
        let mut have = HashMap::new();
        let mut missing = BTreeSet::new();
        {
            let mut cache = lock(&self.cache);
            for &slot in slots {
                match cache.get(key(slot)) {
                    Some(bytes) => {
                        have.insert(slot, bytes);
                    }
                    None => {
                        missing.insert(slot);
                    }
                }
            }
        }
        let runs = runs(&missing);
        let size = u64::from(listed.slot);
        // The directory was validated: every slot of the section lies below a u64 end.
        let ranges: Vec<Range<u64>> = runs
            .iter()
            .map(|run| start + u64::from(run.start) * size..start + u64::from(run.end) * size)
            .collect();
        let (read, cost) = self.read(&ranges).await?;
        self.count(section, cost);
        let capacity = listed.capacity();
        for ((run, range), bytes) in runs.into_iter().zip(ranges).zip(read) {
            if bytes.len() as u64 != range.end - range.start {
                let first = run.start + (bytes.len() / listed.slot as usize) as u32;
                return Err(Error::TruncatedPage(format!(
                    "slot {first} of section {:?}",
                    listed.name
                )));
            }
            for (slot, stored) in run.zip(bytes.chunks_exact(listed.slot as usize)) {
                let (payload, proof) = stored.split_at(capacity);
                if merkle::root_of(merkle::leaf(payload), slot as usize, proof) != listed.root {
                    return Err(Error::CorruptedPage(format!(
                        "slot {slot} of section {:?}",
                        listed.name
                    )));
                }
                let payload: Arc<[u8]> = payload.into();
                lock(&self.cache).put(key(slot), Arc::clone(&payload));
                have.insert(slot, payload);
            }
        }
        slots
            .iter()
            .map(|slot| have.get(slot).cloned())
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::Read(format!("a slot of {:?} went missing", listed.name)))
    }

    /// Section `section` as the directory lists it, and where it starts.
    fn listed(&self, section: u32) -> Result<(&SectionRef, u64)> {
        usize::try_from(section)
            .ok()
            .and_then(|s| self.sections.get(s).zip(self.starts.get(s).copied()))
            .ok_or_else(|| Error::Decode(format!("the bundle has no section {section}")))
    }

    /// The bytes of `ranges`, read together with the ranges of the reads that run beside this
    /// one ([`Batcher`]), and what this read's share cost: its ranges and bytes, in one round
    /// trip.
    async fn read(&self, ranges: &[Range<u64>]) -> Result<(Vec<Vec<u8>>, Io)> {
        if ranges.is_empty() {
            return Ok((Vec::new(), Io::default()));
        }
        let read = self.batcher.read(&self.source, ranges, &self.io).await?;
        let bytes = read.iter().map(|bytes| bytes.len() as u64).sum();
        Ok((read, Io { requests: ranges.len() as u64, bytes, round_trips: 1 }))
    }

    /// What reading section `section` cost, counted.
    fn count(&self, section: u32, cost: Io) {
        if let Some(io) = lock(&self.section_io).get_mut(section as usize) {
            *io += cost;
        }
    }

    /// The bytes of `pieces` of section `section`, each `(slot, offset, len)`: `len` bytes at
    /// `offset` in the slot's payload, read together in one read of the source (or cut from
    /// the slot when the cache holds it). **They are not checked against the section's
    /// root**: the caller checks them against what it read of a checked slot (the dense index
    /// keeps the hash of each row in its lists), so that a piece costs its own bytes, not its
    /// slot's.
    ///
    /// # Errors
    /// [`Error::Decode`] for a piece past its slot's payload or the section's slots,
    /// [`Error::TruncatedPage`] for one the source reads short; the source's errors.
    pub async fn pieces(&self, section: u32, pieces: &[(u32, u32, u32)]) -> Result<Vec<Vec<u8>>> {
        let (listed, start) = self.listed(section)?;
        let capacity = listed.capacity() as u64;
        let mut got = vec![Vec::new(); pieces.len()];
        // The pieces to read, by where they lie.
        let mut wanted = Vec::new();
        {
            let mut cache = lock(&self.cache);
            for (i, &(slot, offset, len)) in pieces.iter().enumerate() {
                let end = u64::from(offset) + u64::from(len);
                if slot >= listed.slots || end > capacity {
                    return Err(Error::Decode(format!(
                        "bytes at {offset} of slot {slot} of section {:?} lie past it",
                        listed.name
                    )));
                }
                match cache.get(Key { section, index: slot }) {
                    Some(payload) => got[i] = payload[offset as usize..end as usize].to_vec(),
                    None => {
                        let at =
                            start + u64::from(slot) * u64::from(listed.slot) + u64::from(offset);
                        wanted.push((at..at + u64::from(len), i));
                    }
                }
            }
        }
        wanted.sort_unstable_by_key(|(range, _)| range.start);
        let ranges: Vec<Range<u64>> = wanted.iter().map(|(range, _)| range.clone()).collect();
        let (read, cost) = self.read(&ranges).await?;
        self.count(section, cost);
        for ((range, i), bytes) in wanted.into_iter().zip(read) {
            if bytes.len() as u64 != range.end - range.start {
                return Err(Error::TruncatedPage(format!(
                    "slot {} of section {:?}",
                    pieces[i].0, listed.name
                )));
            }
            got[i] = bytes;
        }
        Ok(got)
    }

    /// The records each slot of `slots` of section `section` holds, in order, as
    /// [`PagedWriter::records`] packs them; the slots are read as [`slots`](Self::slots)
    /// reads them.
    ///
    /// # Errors
    /// [`Error::Decode`] naming the slot whose records do not decode; as
    /// [`slots`](Self::slots).
    ///
    /// [`PagedWriter::records`]: super::PagedWriter::records
    pub async fn records<T: DeserializeOwned>(
        &self,
        section: u32,
        slots: &[u32],
    ) -> Result<Vec<Vec<T>>> {
        let payloads = self.slots(section, slots).await?;
        let name = self.sections.get(section as usize).map_or("?", |s| s.name.as_str());
        slots
            .iter()
            .zip(payloads)
            .map(|(slot, payload)| {
                let (records, _padding) = postcard::take_from_bytes(&payload).map_err(|e| {
                    Error::Decode(format!("slot {slot} of section {name:?}: {e}").to_lowercase())
                })?;
                Ok(records)
            })
            .collect()
    }
    /// The bytes of `spans` (start, length) of section `section` read as one byte stream (its
    /// slots' payloads one after the other, as [`PagedWriter::stream`] writes them), the slots
    /// they lie in read together as [`slots`](Self::slots) reads them.
    ///
    /// # Errors
    /// [`Error::Decode`] for a span longer than `longest` bytes or past the section's end,
    /// spans adding up to more than [`MAX_STREAM_READ`] bytes, or a section whose slots hold
    /// less than 1 KB each (too many to read for a span); as [`slots`](Self::slots).
    ///
    /// [`PagedWriter::stream`]: super::PagedWriter::stream
    pub async fn stream(
        &self,
        section: u32,
        spans: &[(u64, u64)],
        longest: u64,
    ) -> Result<Vec<Vec<u8>>> {
        let listed = self.sections.get(section as usize);
        let name = listed.map_or("?", |s| s.name.as_str());
        let capacity = listed.map_or(0, SectionRef::capacity) as u64;
        let slot_count = listed.map_or(0, |s| u64::from(s.slots));
        let past = |start: u64| {
            Error::Decode(format!("bytes at {start} of section {name:?} lie past its end"))
        };
        let total = spans.iter().fold(0u64, |total, &(_, len)| total.saturating_add(len));
        if total > MAX_STREAM_READ {
            return Err(Error::Decode(format!("{total} bytes of section {name:?} asked at once")));
        }
        if capacity < MIN_STREAM_SLOT && total > 0 {
            return Err(Error::Decode(format!("section {name:?} has slots too small to stream")));
        }
        // At most MAX_STREAM_READ / MIN_STREAM_SLOT slots, plus one a span.
        let mut slots: Vec<u32> = Vec::new();
        for &(start, len) in spans.iter().filter(|&&(_, len)| len > 0) {
            let last = start.saturating_add(len - 1) / capacity;
            if len > longest || last >= slot_count {
                return Err(past(start));
            }
            // Below the slot count, a u32.
            slots.extend((start / capacity) as u32..=last as u32);
        }
        slots.sort_unstable();
        slots.dedup();
        let payloads = self.slots(section, &slots).await?;
        let from = |at: u64| -> Option<&[u8]> {
            let i = slots.binary_search(&u32::try_from(at / capacity).ok()?).ok()?;
            payloads[i].get((at % capacity) as usize..).filter(|rest| !rest.is_empty())
        };
        spans
            .iter()
            .map(|&(start, len)| {
                let mut bytes = Vec::with_capacity(len as usize);
                let mut at = start;
                while at < start + len {
                    let rest = from(at).ok_or_else(|| past(start))?;
                    let take = rest.len().min((start + len - at) as usize);
                    bytes.extend_from_slice(&rest[..take]);
                    at += take as u64;
                }
                Ok(bytes)
            })
            .collect()
    }
}

/// `slots` (ascending) as runs of consecutive slots.
fn runs(slots: &BTreeSet<u32>) -> Vec<Range<u32>> {
    let mut runs: Vec<Range<u32>> = Vec::new();
    for &slot in slots {
        match runs.last_mut() {
            Some(run) if run.end == slot => run.end += 1,
            _ => runs.push(slot..slot + 1),
        }
    }
    runs
}

/// The bytes of `range`, counted in `io`.
async fn read_one(source: &impl RangeSource, range: Range<u64>, io: &Mutex<Io>) -> Result<Vec<u8>> {
    Ok(read_checked(source, &[range], io).await?.pop().unwrap_or_default())
}
