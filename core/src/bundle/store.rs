//! The chunk store of a paged bundle (format version 4): every chunk with what a search
//! result shows of it, so that a result costs one slot read.
//!
//! Chunks are packed whole, in chunk order, into the slots of one section, as many to a slot
//! as fit. A slot's payload is a [`postcard`] `Slot`: the documents of its chunks, each once
//! (index, id, source, title, format, page count), then its chunks, each with the index of
//! its document in that list and its section path (headings from the top); zero padding
//! follows. A chunk's *address* is `slot << shift | position in the slot`, so the indexes
//! that point at chunks find their slot without a lookup.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::DocumentInfo;
use super::paged::{PagedFile, PagedWriter, RangeSource};
use super::varint;
use crate::chunk::Chunk;
use crate::load::DocKind;
use crate::{Error, Result};

/// Where the chunk store lies in a paged file, as its directory records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkStore {
    /// The section of its slots.
    pub section: u32,
    /// Bits of an address that give the position in the slot.
    pub shift: u8,
}

/// What the store keeps of a chunk's document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DocumentHead {
    /// Index of the document in the bundle.
    pub index: u32,
    /// Content hash of the source bytes.
    pub id: String,
    /// Source name.
    pub source: String,
    /// Title.
    pub title: String,
    /// Format it was loaded from.
    pub kind: DocKind,
    /// Page count (PDF), else 0.
    pub pages: u32,
}

/// A chunk as the store returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredChunk {
    /// The chunk.
    pub chunk: Chunk,
    /// Its document.
    pub document: Arc<DocumentHead>,
    /// Its section path, top-level heading first.
    pub section: Vec<String>,
}

/// One slot's payload.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Slot {
    documents: Vec<DocumentHead>,
    chunks: Vec<SlotChunk>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SlotChunk {
    /// Index into the slot's documents.
    document: u32,
    section: Vec<String>,
    chunk: Chunk,
}

/// The longest proof the writer leaves room for when it sizes slots: a tree of 2³² slots.
const MAX_PROOF: usize = 32 * super::paged::merkle::HASH_LEN;

impl ChunkStore {
    /// Writes `chunks` (of `documents`) into a new section named `chunks` of `writer`, in
    /// slots of `slot` bytes, or of the smallest power of two that holds the largest chunk
    /// alone. Returns the store and each chunk's address.
    ///
    /// # Errors
    /// [`Error::Config`] when a chunk points to a missing document, or addresses would not
    /// fit in 32 bits; as [`PagedWriter::section`].
    pub fn write(
        writer: &mut PagedWriter,
        documents: &[DocumentInfo],
        chunks: &[Chunk],
        slot: u32,
    ) -> Result<(Self, Vec<u32>)> {
        // Each document's head and its encoded size, made once however many chunks it has.
        let heads: Vec<(DocumentHead, usize)> = documents
            .iter()
            .zip(0..)
            .map(|(document, index)| {
                let head = DocumentHead {
                    index,
                    id: document.id.clone(),
                    source: document.source.clone(),
                    title: document.title.clone(),
                    kind: document.kind,
                    pages: document.pages,
                };
                let len = super::encoded_len(&head);
                (head, len)
            })
            .collect();
        let entries = chunks
            .iter()
            .map(|chunk| {
                let document = documents.get(chunk.doc as usize).ok_or_else(|| {
                    Error::Config(format!("chunk {:?} points to a missing document", chunk.id))
                })?;
                let entry = SlotChunk {
                    document: 0,
                    section: document.section_path(chunk.section),
                    chunk: chunk.clone(),
                };
                let len = super::encoded_len(&entry);
                Ok((chunk.doc as usize, entry, len))
            })
            .collect::<Result<Vec<_>>>()?;
        let alone = entries.iter().map(|(doc, _, len)| heads[*doc].1 + len + 2 * 5).max();
        let needed = alone.unwrap_or(0) + MAX_PROOF;
        let slot = slot.max(u32::try_from(needed.next_power_of_two()).unwrap_or(u32::MAX));
        let mut counts = Vec::new();
        let section = writer.section("chunks", slot, |capacity| {
            let slots = pack(&heads, &entries, capacity);
            counts = slots.iter().map(|slot| slot.chunks.len()).collect();
            slots
                .iter()
                .map(postcard::to_allocvec)
                .collect::<postcard::Result<Vec<_>>>()
                .map_err(|e| Error::Config(format!("the chunk store cannot be encoded: {e}")))
        })?;
        let most = counts.iter().copied().max().unwrap_or(1);
        let shift = (usize::BITS - most.saturating_sub(1).leading_zeros()) as u8;
        let too_many = || Error::Config("too many chunks for 32-bit addresses".into());
        let mut addresses = Vec::with_capacity(chunks.len());
        for (slot, &count) in counts.iter().enumerate() {
            let slot = u32::try_from(slot).ok().filter(|&s| s.leading_zeros() >= u32::from(shift));
            let base = slot.ok_or_else(too_many)? << shift;
            addresses.extend((0..count as u32).map(|position| base | position));
        }
        Ok((Self { section, shift }, addresses))
    }

    /// The chunks at `addresses`, in order: one read for the slots not yet in the cache.
    ///
    /// # Errors
    /// [`Error::Decode`] for an address past the store or a slot that does not decode; as
    /// [`PagedFile::slots`].
    pub async fn read<S: RangeSource, B>(
        &self,
        file: &PagedFile<S, B>,
        addresses: &[u32],
    ) -> Result<Vec<StoredChunk>> {
        let mut slots: Vec<u32> = addresses.iter().map(|&a| split(a, self.shift).0).collect();
        slots.sort_unstable();
        slots.dedup();
        let payloads = file.slots(self.section, &slots).await?;
        let mut decoded = Vec::with_capacity(slots.len());
        for (&slot, payload) in slots.iter().zip(payloads) {
            let (data, _padding): (Slot, _) = postcard::take_from_bytes(&payload).map_err(|e| {
                Error::Decode(format!("slot {slot} of the chunk store: {e}").to_lowercase())
            })?;
            let documents: Vec<Arc<DocumentHead>> =
                data.documents.into_iter().map(Arc::new).collect();
            decoded.push((slot, documents, data.chunks));
        }
        addresses
            .iter()
            .map(|&address| {
                let (slot, position) = split(address, self.shift);
                let missing =
                    || Error::Decode(format!("the chunk store has no chunk at address {address}"));
                let found = slots.binary_search(&slot).ok().and_then(|i| decoded.get(i));
                let (_, documents, chunks) = found.ok_or_else(missing)?;
                let entry = chunks.get(position).ok_or_else(missing)?;
                let document = documents.get(entry.document as usize).ok_or_else(|| {
                    Error::Decode(format!("chunk {address} of the chunk store has no document"))
                })?;
                Ok(StoredChunk {
                    chunk: entry.chunk.clone(),
                    document: Arc::clone(document),
                    section: entry.section.clone(),
                })
            })
            .collect()
    }
}

/// Packs the chunks (each with its document's index in `heads` and its encoded size, with a
/// document index of 0) into slots of at most `capacity` encoded bytes, in order; a chunk
/// too large for any slot gets one of its own.
fn pack(
    heads: &[(DocumentHead, usize)],
    entries: &[(usize, SlotChunk, usize)],
    capacity: usize,
) -> Vec<Slot> {
    let mut slots = Vec::new();
    let mut slot = Slot::default();
    // Encoded bytes of the slot's documents and chunks, less their counts.
    let mut bytes = 0;
    for (doc, entry, entry_len) in entries {
        let (head, head_len) = &heads[*doc];
        let mut known = slot.documents.iter().position(|d| d.index == head.index);
        let local = known.unwrap_or(slot.documents.len());
        let added =
            entry_len - 1 + varint::len(local) + if known.is_some() { 0 } else { *head_len };
        let counts = varint::len(slot.documents.len() + 1) + varint::len(slot.chunks.len() + 1);
        if !slot.chunks.is_empty() && bytes + added + counts > capacity {
            slots.push(std::mem::take(&mut slot));
            (bytes, known) = (0, None);
        }
        let document = known.unwrap_or_else(|| {
            slot.documents.push(head.clone());
            bytes += head_len;
            slot.documents.len() - 1
        });
        bytes += entry_len - 1 + varint::len(document);
        slot.chunks.push(SlotChunk { document: document as u32, ..entry.clone() });
    }
    if !slot.chunks.is_empty() {
        slots.push(slot);
    }
    slots
}

/// The slot of `address` and its position there.
fn split(address: u32, shift: u8) -> (u32, usize) {
    let shift = u32::from(shift);
    let slot = address.checked_shr(shift).unwrap_or(0);
    let position = address & 1u32.checked_shl(shift).map_or(u32::MAX, |bit| bit - 1);
    (slot, position as usize)
}

#[cfg(test)]
mod tests {
    use super::super::paged::{InMemory, VERSION, now};
    use super::*;
    use crate::bundle::Bundle;

    /// The v3 fixture (two real documents) and its chunk store in `slot`-byte slots.
    fn stored(slot: u32) -> (Bundle, PagedFile<InMemory, ChunkStore>, Vec<u32>) {
        let fixture = include_bytes!("../../tests/fixtures/bundle-v3.bundle");
        let bundle = Bundle::from_bytes(fixture).unwrap();
        let mut writer = PagedWriter::new();
        let (store, addresses) =
            ChunkStore::write(&mut writer, &bundle.documents, &bundle.chunks, slot).unwrap();
        let file = writer.finish(store, VERSION, VERSION).unwrap();
        let file = now(PagedFile::open(InMemory(file), 1 << 20)).unwrap();
        (bundle, file, addresses)
    }

    #[test]
    fn every_chunk_reads_back_with_its_document_and_section() {
        let (bundle, file, addresses) = stored(4096);
        let store = *file.body();
        assert_eq!(addresses.len(), bundle.chunks.len());
        let slots = file.sections()[0].slots;
        assert!(slots > 2, "{slots} slots");
        let got = now(store.read(&file, &addresses)).unwrap();
        for (stored, chunk) in got.iter().zip(&bundle.chunks) {
            let document = bundle.document_of(chunk);
            assert_eq!(stored.chunk, *chunk);
            assert_eq!(stored.section, document.section_path(chunk.section));
            let head = &stored.document;
            assert_eq!(
                (head.index, &head.source, &head.title),
                (chunk.doc, &document.source, &document.title)
            );
            assert_eq!(
                (&head.id, head.kind, head.pages),
                (&document.id, document.kind, document.pages)
            );
        }
        // The slots were read in one run; reading again costs nothing.
        assert_eq!(file.io().requests, 2);
        now(store.read(&file, &addresses[..3])).unwrap();
        assert_eq!(file.io().requests, 2);
    }

    #[test]
    fn a_result_costs_one_slot_and_slots_grow_to_hold_any_chunk() {
        let (bundle, file, addresses) = stored(64);
        let section = &file.sections()[0];
        let largest = bundle.chunks.iter().map(|c| c.text.len()).max().unwrap();
        assert!(section.slot as usize > largest && section.slot.is_power_of_two());
        let opened = file.io();
        let last = *addresses.last().unwrap();
        let got = now(file.body().read(&file, &[last, addresses[0]])).unwrap();
        assert_eq!(
            (&got[0].chunk, &got[1].chunk),
            (bundle.chunks.last().unwrap(), &bundle.chunks[0])
        );
        let read = file.io();
        assert_eq!(read.requests - opened.requests, 2, "two slots apart");
        assert_eq!(read.bytes - opened.bytes, 2 * u64::from(section.slot));
    }

    #[test]
    fn addresses_outside_the_store_are_errors() {
        let (_, file, addresses) = stored(4096);
        let store = *file.body();
        let slots = file.sections()[0].slots;
        let past_slots = slots << store.shift;
        let error = now(store.read(&file, &[past_slots])).unwrap_err().to_string();
        assert!(error.contains("not slot"), "{error}");
        // A position past the chunks of a slot that is not full.
        let past_chunks = (0..slots)
            .map(|slot| (slot << store.shift) | ((1 << store.shift) - 1))
            .find(|address| !addresses.contains(address))
            .unwrap();
        let error = now(store.read(&file, &[past_chunks])).unwrap_err().to_string();
        let expected = format!("the chunk store has no chunk at address {past_chunks}");
        assert_eq!(error, format!("malformed bundle payload: {expected}"));
        for shift in [0, 31, 32, 255] {
            let hostile = ChunkStore { shift, ..store };
            match now(hostile.read(&file, &[u32::MAX, 0])) {
                Ok(got) => assert_eq!(got.len(), 2),
                Err(error) => assert!(!error.to_string().is_empty()),
            }
        }
    }
}
