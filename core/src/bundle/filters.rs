//! The filter table of a paged bundle (format version 4): what metadata filters ask of each
//! document and chunk (names, format, headings, pages), apart from the text, so that a
//! filtered query reads the table and the pages it ranks, not the chunk store.
//!
//! The table is the section named [`SECTION`]: one record per document, in document order,
//! packed whole into slots ([`PagedWriter::records`]). A record holds the document's id,
//! source and format, its heading tree (the root's title left out), and for each of its
//! chunks, in chunk order, the gap from the previous chunk's address (the first's from 0), its
//! section and its page.
//!
//! The directory's body does not name the section: a reader finds it by name, and a bundle
//! written before the table existed has none, which a filtered search reports as a clear
//! error.

use serde::{Deserialize, Serialize};

use super::DocumentInfo;
use super::paged::{PagedFile, PagedWriter, RangeSource};
use crate::chunk::Chunk;
use crate::load::{DocKind, Section};
use crate::{Error, Result};

/// The name of the filter table's section.
pub const SECTION: &str = "filters";

/// What the table keeps of a document.
#[derive(Debug, Serialize, Deserialize)]
struct Document {
    id: String,
    source: String,
    kind: DocKind,
    sections: Vec<Section>,
    chunks: Vec<ChunkEntry>,
}

/// What the table keeps of a chunk.
#[derive(Debug, Serialize, Deserialize)]
struct ChunkEntry {
    /// Its address less the previous chunk's (less 0 for the first).
    gap: u32,
    section: u32,
    page: Option<u32>,
}

/// Writes the filter table of `chunks` (of `documents`, at `addresses`) into a new section of
/// `writer`, in slots of `slot` bytes (more where a document needs them).
///
/// # Errors
/// [`Error::Config`] when a chunk points to a missing document or the addresses are not
/// ascending; as [`PagedWriter::records`].
pub(crate) fn write(
    writer: &mut PagedWriter,
    documents: &[DocumentInfo],
    chunks: &[Chunk],
    addresses: &[u32],
    slot: u32,
) -> Result<()> {
    let mut table: Vec<Document> = documents
        .iter()
        .map(|d| Document {
            id: d.id.clone(),
            source: d.source.clone(),
            kind: d.kind,
            // A heading path leaves the root out: its title (the document's) is not kept.
            sections: d
                .sections
                .iter()
                .map(|s| match s.parent {
                    None => Section { title: String::new(), ..s.clone() },
                    Some(_) => s.clone(),
                })
                .collect(),
            chunks: Vec::new(),
        })
        .collect();
    let mut previous = 0;
    for (chunk, &address) in chunks.iter().zip(addresses) {
        let gap = address.checked_sub(previous).ok_or_else(|| {
            Error::Config(format!("chunk {:?} is stored before the chunk it follows", chunk.id))
        })?;
        previous = address;
        let document = table.get_mut(chunk.doc as usize).ok_or_else(|| {
            Error::Config(format!("chunk {:?} points to a missing document", chunk.id))
        })?;
        document.chunks.push(ChunkEntry { gap, section: chunk.section, page: chunk.page });
    }
    writer.records(SECTION, slot, &table)?;
    Ok(())
}

/// The addresses of the chunks that pass, ascending: those of the documents (id, source,
/// format) `document` allows that `chunk` allows (page, and headings from the top when it asks
/// for them). Reads the whole table, in one range when it is not in the cache.
///
/// # Errors
/// [`Error::Query`] when the bundle has no filter table; [`Error::Decode`] when the table does
/// not decode or its chunks do not add up to the bundle's `chunks`; as [`PagedFile::records`].
pub(crate) async fn allowed<S: RangeSource, B>(
    file: &PagedFile<S, B>,
    chunks: u32,
    document: impl Fn(&str, &str, DocKind) -> bool,
    chunk: impl Fn(Option<u32>, &dyn Fn() -> Vec<String>) -> bool,
) -> Result<Vec<u32>> {
    let Some(section) = file.section(SECTION) else {
        return Err(Error::Query(
            "this bundle has no filter table (it was written before edgerag kept one): \
             convert its format-3 bundle again, or rebuild it, to filter it"
                .into(),
        ));
    };
    let slots: Vec<u32> = (0..file.sections()[section as usize].slots).collect();
    let table: Vec<Vec<Document>> = file.records(section, &slots).await?;
    let (mut address, mut seen, mut allowed) = (0u32, 0u64, Vec::new());
    for d in table.iter().flatten() {
        let passes = document(&d.id, &d.source, d.kind);
        for c in &d.chunks {
            address = address.checked_add(c.gap).ok_or_else(|| {
                Error::Decode("the filter table's addresses run past 32 bits".into())
            })?;
            seen += 1;
            let path = || crate::load::section_path(&d.sections, c.section as usize);
            if passes && chunk(c.page, &path) {
                allowed.push(address);
            }
        }
    }
    if seen != u64::from(chunks) {
        return Err(Error::Decode(format!(
            "the filter table lists {seen} chunks in a bundle of {chunks}"
        )));
    }
    Ok(allowed)
}
