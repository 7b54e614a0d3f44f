//! The chunk-id index of a paged bundle (format version 4): where the chunk with a given id
//! lies in the chunk store, so that a host naming chunks by id (an answer's citations, the
//! graph view drawn around them) finds them by reading one slot, not the store.
//!
//! # Layout
//!
//! The section named [`SECTION`]. Each chunk id is keyed by the first 8 bytes of its BLAKE3
//! hash (big-endian), so that keys spread evenly whatever the ids look like. The key space is
//! cut into as many equal buckets as the section has slots: slot `b` holds the entries whose
//! key `k` has `k × slots >> 64 = b`, in key order, as a count (`u16`, little-endian) then,
//! for each entry, the key (`u64`) and the chunk's address (`u32`), both little-endian. There
//! are enough slots for the fullest bucket to fit (on average a bucket fills half a slot:
//! about 27 bytes a chunk in 4 KB slots, some 1 % of a bundle).
//!
//! A lookup computes each id's bucket and reads those slots only. Two ids may share a key:
//! a lookup gives every address of the key, and the caller keeps the chunk that has the id.
//!
//! The directory's body does not name the section: readers find it by name, and a bundle
//! written before it existed has none, which a lookup reports as a clear error.

use super::paged::{PagedFile, PagedWriter, RangeSource};
use crate::chunk::Chunk;
use crate::{Error, Result};

/// The name of the chunk-id index's section.
pub const SECTION: &str = "chunk ids";

/// Bytes of an entry: its key and the chunk's address.
const ENTRY: usize = 12;
/// Bytes of a slot's entry count.
const COUNT: usize = 2;

/// The key of chunk id `id`.
fn key(id: &str) -> u64 {
    let hash = blake3::hash(id.as_bytes());
    let mut first = [0; 8];
    first.copy_from_slice(&hash.as_bytes()[..8]);
    u64::from_be_bytes(first)
}

/// The bucket of `key` among `buckets`.
fn bucket(key: u64, buckets: u32) -> u32 {
    // Below `buckets`, as the key is below 2^64.
    ((u128::from(key) * u128::from(buckets)) >> 64) as u32
}

/// Writes the chunk-id index of `chunks` (stored at `addresses`) into a new section of
/// `writer`, in slots of `slot` bytes.
///
/// # Errors
/// [`Error::Config`] when a slot cannot hold an entry; as [`PagedWriter::section`].
pub(crate) fn write(
    writer: &mut PagedWriter,
    chunks: &[Chunk],
    addresses: &[u32],
    slot: u32,
) -> Result<()> {
    let mut entries: Vec<(u64, u32)> =
        chunks.iter().zip(addresses).map(|(chunk, &address)| (key(&chunk.id), address)).collect();
    entries.sort_unstable();
    writer.section(SECTION, slot, |capacity| {
        let most = (capacity.saturating_sub(COUNT) / ENTRY).min(usize::from(u16::MAX));
        if most == 0 {
            return Err(Error::Config(format!("{SECTION:?}: slots of {slot} bytes hold no entry")));
        }
        let mut buckets = entries.len().div_ceil(most.div_ceil(2)).max(1);
        loop {
            let count = u32::try_from(buckets)
                .map_err(|_| Error::Config(format!("{SECTION:?}: too many slots")))?;
            let mut filled: Vec<Vec<(u64, u32)>> = vec![Vec::new(); buckets];
            for &(key, address) in &entries {
                filled[bucket(key, count) as usize].push((key, address));
            }
            if filled.iter().all(|entries| entries.len() <= most) {
                return Ok(filled.iter().map(|entries| payload(entries)).collect());
            }
            buckets *= 2;
        }
    })?;
    Ok(())
}

/// A slot's payload: the count of `entries`, then each.
fn payload(entries: &[(u64, u32)]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(COUNT + entries.len() * ENTRY);
    // At most u16::MAX entries, as write packs them.
    bytes.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    for (key, address) in entries {
        bytes.extend_from_slice(&key.to_le_bytes());
        bytes.extend_from_slice(&address.to_le_bytes());
    }
    bytes
}

/// For each of `ids`, the addresses of the chunks that may have it (those whose id shares
/// its key), read from one slot per id; `None` when `file` has no chunk-id index.
///
/// # Errors
/// [`Error::Decode`] for a slot whose count runs past its end; errors of reading the slots.
pub(crate) async fn lookup<S: RangeSource, B>(
    file: &PagedFile<S, B>,
    ids: &[String],
) -> Result<Option<Vec<Vec<u32>>>> {
    let Some(section) = file.section(SECTION) else {
        return Ok(None);
    };
    let buckets = file.sections()[section as usize].slots;
    if buckets == 0 {
        return Ok(Some(vec![Vec::new(); ids.len()]));
    }
    let keys: Vec<u64> = ids.iter().map(|id| key(id)).collect();
    let mut slots: Vec<u32> = keys.iter().map(|&key| bucket(key, buckets)).collect();
    slots.sort_unstable();
    slots.dedup();
    let payloads = file.slots(section, &slots).await?;
    let mut found = Vec::with_capacity(ids.len());
    for key in keys {
        let slot = bucket(key, buckets);
        let payload = slots.binary_search(&slot).ok().and_then(|at| payloads.get(at));
        let entries = entries(payload.map_or(&[][..], |p| &p[..])).ok_or_else(|| {
            Error::Decode(format!("slot {slot} of section {SECTION:?}: more entries than bytes"))
        })?;
        found.push(entries.filter(|&(k, _)| k == key).map(|(_, address)| address).collect());
    }
    Ok(Some(found))
}

/// The entries of a slot's `payload`; `None` when its count runs past its end.
fn entries(payload: &[u8]) -> Option<impl Iterator<Item = (u64, u32)> + '_> {
    let count = usize::from(u16::from_le_bytes([*payload.first()?, *payload.get(1)?]));
    let data = payload.get(COUNT..COUNT + count * ENTRY)?;
    Some(data.chunks_exact(ENTRY).map(|entry| {
        let (key, address) = entry.split_at(8);
        let key = u64::from_le_bytes(key.try_into().unwrap_or_default());
        let address = u32::from_le_bytes(address.try_into().unwrap_or_default());
        (key, address)
    }))
}
