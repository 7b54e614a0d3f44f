//! Writing a paged file: sections of slots, then the directory that finds them.

use serde::Serialize;

use super::merkle::{self, Tree};
use super::routes::{self, INLINE_ROUTES};
use super::{Directory, MAX_SLOT, MIN_STREAM_SLOT, ROUTED, SectionRef};
use crate::bundle::varint;
use crate::{Error, Result};

/// Gathers the sections of a paged file and writes it ([`super`] has the layout).
#[derive(Debug)]
pub struct PagedWriter {
    /// The data: every section's slots so far.
    data: Vec<u8>,
    sections: Vec<SectionRef>,
    /// Bytes of the longest routes kept in the directory.
    inline_routes: usize,
    /// The header's flags.
    flags: u32,
}

impl Default for PagedWriter {
    fn default() -> Self {
        Self { data: Vec::new(), sections: Vec::new(), inline_routes: INLINE_ROUTES, flags: 0 }
    }
}

impl PagedWriter {
    /// A file with no sections yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The writer, keeping in the directory the routes that encode to at most `bytes` bytes
    /// (by default [`INLINE_ROUTES`]) and the others in sections of their own
    /// ([`routes`](Self::routes)).
    #[must_use]
    pub fn with_inline_routes(self, bytes: usize) -> Self {
        Self { inline_routes: bytes, ..self }
    }

    /// Adds a section named `name` of `slot`-byte slots; returns its index. `pack` turns the
    /// section's content into slot payloads of at most the capacity it is given. That
    /// capacity depends on the slot count (the proof grows with it), so `pack` may be called
    /// again with a smaller one when its payloads would not leave room for their proof.
    ///
    /// # Errors
    /// [`Error::Config`] for a slot of more than [`MAX_SLOT`] bytes or too small for a proof,
    /// more than `u32::MAX` slots or sections, or a payload longer than the capacity; what
    /// `pack` returns.
    pub fn section<P: AsRef<[u8]>>(
        &mut self,
        name: &str,
        slot: u32,
        mut pack: impl FnMut(usize) -> Result<Vec<P>>,
    ) -> Result<u32> {
        let config = |what: String| Error::Config(format!("section {name:?}: {what}"));
        if slot > MAX_SLOT {
            return Err(config(format!("slots of {slot} bytes (at most {MAX_SLOT})")));
        }
        let mut depth = 0;
        let payloads = loop {
            let capacity = (slot as usize).saturating_sub(depth * merkle::HASH_LEN);
            if capacity == 0 {
                return Err(config(format!("slots of {slot} bytes leave no room for data")));
            }
            let payloads = pack(capacity)?;
            if let Some(long) = payloads.iter().find(|p| p.as_ref().len() > capacity) {
                let long = long.as_ref().len();
                return Err(config(format!("a payload of {long} bytes (at most {capacity})")));
            }
            match merkle::depth(payloads.len()) {
                needed if needed > depth => depth = needed,
                _ => break payloads,
            }
        };
        let slots = u32::try_from(payloads.len()).map_err(|_| config("too many slots".into()))?;
        let index = u32::try_from(self.sections.len()).map_err(|_| config("too many".into()))?;
        let mut section = SectionRef { name: name.to_owned(), slot, slots, root: [0; 32] };
        let capacity = section.capacity();
        let padded = |payload: &P| {
            let mut padded = payload.as_ref().to_vec();
            padded.resize(capacity, 0);
            padded
        };
        let payloads: Vec<Vec<u8>> = payloads.iter().map(padded).collect();
        if !payloads.is_empty() {
            let tree = Tree::new(payloads.iter().map(|p| merkle::leaf(p)).collect());
            section.root = tree.root();
            self.data.reserve(payloads.len() * slot as usize);
            for (i, payload) in payloads.iter().enumerate() {
                self.data.extend_from_slice(payload);
                self.data.extend_from_slice(&tree.proof(i));
            }
        }
        self.sections.push(section);
        Ok(index)
    }

    /// Adds a section named `name` holding `bytes` as one byte stream, cut into the payloads
    /// of `slot`-byte slots (what [`PagedFile::stream`] reads back; at least 2 KB, so that
    /// any proof leaves [`MIN_STREAM_SLOT`] bytes of payload); returns its index.
    ///
    /// # Errors
    /// As [`section`](Self::section).
    ///
    /// [`PagedFile::stream`]: super::PagedFile::stream
    pub fn stream(&mut self, name: &str, slot: u32, bytes: &[u8]) -> Result<u32> {
        let slot = slot.max(2 * MIN_STREAM_SLOT as u32);
        self.section(name, slot, |capacity| Ok(bytes.chunks(capacity).collect()))
    }

    /// Adds a section named `name` holding `records` packed whole into slots of `slot` bytes
    /// (more where one record needs it), in order: each payload is the postcard encoding of a
    /// `Vec` of the records it holds. Returns the section's index and the index of each slot's
    /// first record.
    ///
    /// # Errors
    /// [`Error::Config`] if a record cannot be encoded; as [`section`](Self::section).
    pub fn records<T: Serialize>(
        &mut self,
        name: &str,
        slot: u32,
        records: &[T],
    ) -> Result<(u32, Vec<usize>)> {
        let encoded = records
            .iter()
            .map(postcard::to_allocvec)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::Config(format!("section {name:?}: {e}")))?;
        let longest = encoded.iter().map(Vec::len).max().unwrap_or(0);
        // Room for the record, the count before it and a proof of 32 levels.
        let needed = longest + 16 + 32 * merkle::HASH_LEN;
        let slot = slot.max(u32::try_from(needed.next_power_of_two()).unwrap_or(u32::MAX));
        let mut firsts = Vec::new();
        let index = self.section(name, slot, |capacity| {
            let (payloads, starts) = pack(&encoded, capacity);
            firsts = starts;
            Ok(payloads)
        })?;
        Ok((index, firsts))
    }

    /// What the directory keeps of the routes of section `section`, given `firsts`, the first
    /// key of each of its slots: all of them when they encode to at most the
    /// [inline limit](Self::with_inline_routes), else the first of each slot of a section
    /// `"<name> routes"` of `(slot, key)` records, `slot`-byte slots, that holds them all
    /// (and the header then sets [`ROUTED`]; [`super::routes`] reads both).
    ///
    /// # Errors
    /// [`Error::Config`] for a section that does not exist or routes that cannot be encoded;
    /// as [`records`](Self::records).
    pub fn routes<K: Serialize + Clone>(
        &mut self,
        section: u32,
        slot: u32,
        firsts: Vec<K>,
    ) -> Result<Vec<K>> {
        let Some(listed) = self.sections.get(section as usize) else {
            return Err(Error::Config(format!("routes of a section {section} not written")));
        };
        let name = routes::section_name(&listed.name);
        let encoded = postcard::to_allocvec(&firsts)
            .map_err(|e| Error::Config(format!("section {name:?}: {e}")))?;
        if encoded.len() <= self.inline_routes {
            return Ok(firsts);
        }
        // A section has at most u32::MAX slots.
        let records: Vec<(u32, K)> = (0..).zip(firsts).collect();
        let (_, starts) = self.records(&name, slot, &records)?;
        self.flags |= ROUTED;
        Ok(starts.into_iter().map(|start| records[start].1.clone()).collect())
    }

    /// Sets header flag `flag` ([`super::NAMED`]): the file's sections need a reader that
    /// knows it.
    pub fn flag(&mut self, flag: u32) {
        self.flags |= flag;
    }

    /// The file: header (`version`, `min_reader`, the flags its sections need), the
    /// directory holding `body` and the sections, then the data.
    ///
    /// # Errors
    /// [`Error::Decode`] if `body` cannot be encoded.
    pub fn finish<B: Serialize>(self, body: B, version: u16, min_reader: u16) -> Result<Vec<u8>> {
        let directory = Directory { body, sections: self.sections };
        let directory =
            postcard::to_allocvec(&directory).map_err(|e| Error::Decode(e.to_string()))?;
        let mut out = super::super::header(version, min_reader, self.flags, &directory);
        out.reserve(directory.len() + self.data.len());
        out.extend_from_slice(&directory);
        out.extend_from_slice(&self.data);
        Ok(out)
    }
}

/// `encoded` records packed whole, in order, into payloads of at most `capacity` bytes (a
/// record longer than that alone in its payload), each a postcard `Vec` of its records; and
/// the index of each payload's first record.
fn pack(encoded: &[Vec<u8>], capacity: usize) -> (Vec<Vec<u8>>, Vec<usize>) {
    let mut payloads = Vec::new();
    let mut firsts = Vec::new();
    let mut start = 0;
    while start < encoded.len() {
        let (mut end, mut len) = (start, 0);
        while end < encoded.len()
            && (end == start || len + encoded[end].len() + varint::len(end - start + 1) <= capacity)
        {
            len += encoded[end].len();
            end += 1;
        }
        let mut payload = Vec::with_capacity(len + 5);
        varint::push(&mut payload, (end - start) as u64);
        encoded[start..end].iter().for_each(|record| payload.extend_from_slice(record));
        payloads.push(payload);
        firsts.push(start);
        start = end;
    }
    (payloads, firsts)
}
