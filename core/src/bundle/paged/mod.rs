//! The paged container of format version 4: one file laid out to be read by byte range, so
//! that opening it and answering a query read what they touch, not the whole corpus.
//!
//! # Layout
//!
//! The header has the shape of every version's ([`super::HEADER_LEN`] bytes; all integers
//! little-endian), its payload being the directory, which the data follows:
//!
//! | offset | size | field |
//! |-------:|-----:|-------|
//! | 0  | 8  | magic `b"EDGERAG\0"` |
//! | 8  | 2  | `version` |
//! | 10 | 2  | `min_reader` |
//! | 12 | 4  | flags: [`ROUTED`], [`NAMED`], both or 0 |
//! | 16 | 8  | directory length `D` |
//! | 24 | 32 | BLAKE3 hash of the directory |
//! | 56 | `D` | directory: [`Directory`] encoded with postcard |
//! | 56 + `D` | … | data: the pages of every section |
//!
//! A section is an array of fixed-size *slots*, stored one after the other in the data, the
//! sections in the order the directory lists them. A slot is its payload (the section's own
//! bytes, zero-padded to [`SectionRef::capacity`]) followed by the proof that links it to the
//! root of the section's hash tree, which the directory holds ([`merkle`]: `depth` hashes of
//! 32 bytes, `depth = ⌈log₂ slots⌉`). So the place of slot `i` is computed, not looked up
//! (the section's start plus `i` slots), one range read gets a slot and what checks it, and
//! every byte read is vouched for by the header, through the directory. The directory holds,
//! for each section, its name, its slot size and count and its root, besides what the bundle
//! keeps there itself (its `body`: the manifest and the small indexes that route a query),
//! so it stays small however many slots there are.
//!
//! An index finds the slot a key lies in from its *routes*, the first key of each of the
//! section's slots. Those of a large section would make the directory grow with the corpus:
//! they lie in a section of their own instead, whose routes the directory keeps
//! ([`routes`]), and the header sets [`ROUTED`].
//!
//! Reading goes through a [`RangeSource`] (a local file, an HTTP server answering `Range`,
//! memory) and a [`PageCache`] bounded by a byte budget: see [`PagedFile`]. The reads of
//! futures that run together (a hybrid query's retrievers) are sent as one (`batch`).

mod batch;
mod cache;
pub mod merkle;
mod read;
pub mod routes;
mod source;
#[cfg(test)]
mod tests;
mod write;

use serde::{Deserialize, Serialize};

pub use cache::PageCache;
pub use read::{Io, MAX_STREAM_READ, MIN_STREAM_SLOT, OPEN_READ, PagedFile, Reads, VERSION};
pub use source::{InMemory, RangeSource, ready_now};
pub use write::PagedWriter;

use crate::{Error, Result};

/// Header flag: some routes lie in sections of their own ([`routes`]). Readers that predate
/// it refuse the file, which they would misread; files without such sections leave it unset
/// and read as before.
pub const ROUTED: u32 = 1;
/// Header flag: the links of each chunk name which of its keywords are names
/// ([`super::graph`]), so that the multi-hop expansion reads the nodes of those only. Readers
/// that predate it refuse the file, whose links they would not decode; files without it read
/// as before.
pub const NAMED: u32 = 2;
/// Header flag: the lists of the dense index hold a binary code of each vector, its row lying
/// in a section of its own ([`super::ivf`]), so that a query reads the codes of the partitions
/// it probes and the rows of its best candidates only. Readers that predate it refuse the file,
/// whose lists they would not decode; files without it read as before.
pub const CODED: u32 = 4;
/// The header flags this reader understands.
pub const FLAGS: u32 = ROUTED | NAMED | CODED;
/// The largest slot a reader accepts.
pub const MAX_SLOT: u32 = 16 << 20;
/// The longest directory a reader accepts.
pub const MAX_DIRECTORY: u64 = 64 << 20;

/// One section of a paged file, as the directory lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionRef {
    /// What it holds (`chunks`, `postings`, …), for messages.
    pub name: String,
    /// Bytes of each slot, its proof included.
    pub slot: u32,
    /// Its slot count.
    pub slots: u32,
    /// The root of the hash tree over its slots' payloads.
    pub root: merkle::Hash,
}

impl SectionRef {
    /// Bytes of a slot's proof.
    pub fn proof_len(&self) -> usize {
        merkle::depth(self.slots as usize) * merkle::HASH_LEN
    }

    /// Bytes of a slot's payload: the slot less its proof.
    pub fn capacity(&self) -> usize {
        (self.slot as usize).saturating_sub(self.proof_len())
    }

    /// Bytes of the whole section.
    pub fn len(&self) -> u64 {
        u64::from(self.slot) * u64::from(self.slots)
    }

    /// Whether it has no slot.
    pub fn is_empty(&self) -> bool {
        self.slots == 0
    }

    /// Checks that its slots are at most [`MAX_SLOT`] bytes and hold a payload besides their
    /// proof.
    fn validate(&self) -> Result<()> {
        if self.slot > MAX_SLOT || (self.slots > 0 && self.capacity() == 0) {
            return Err(Error::Decode(format!(
                "directory: section {:?} has slots of {} bytes for {} slots",
                self.name, self.slot, self.slots
            )));
        }
        Ok(())
    }
}

/// The directory of a paged file: the bundle's own part (`body`), then the sections.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Directory<B> {
    /// What the bundle keeps in the directory.
    pub body: B,
    /// The sections, in the order their slots follow the directory.
    pub sections: Vec<SectionRef>,
}

/// The slot a routed item lies in, given where `partition_point` over the section's routes (the
/// first item of each slot, in order) found the first route past it: the slot before, if any.
pub(crate) fn route(after: usize) -> Option<u32> {
    after.checked_sub(1).map(|slot| slot as u32)
}

/// The output of a future that is ready at once, as an [`InMemory`] source's are (for tests).
#[cfg(test)]
pub(crate) fn now<F: std::future::Future>(future: F) -> F::Output {
    ready_now(future).expect("an in-memory read is ready at once")
}
