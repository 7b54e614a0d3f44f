//! The document table of a paged bundle (format version 4): what listing a bundle's documents
//! shows of each (source, title, format, pages, headings and chunks), so that the list is
//! read from this section alone.
//!
//! The table is the section named [`SECTION`]: one record per document, in document order,
//! packed whole into slots ([`PagedWriter::records`]). A record is, in postcard's field order:
//! source, title, format, page count, heading count (the root left out), chunk count.
//!
//! The directory's body does not name the section: a reader finds it by name, and a bundle
//! written before the table existed has none, and lists no documents.

use serde::{Deserialize, Serialize};

use super::paged::{PagedFile, PagedWriter, RangeSource};
use super::{DocumentInfo, DocumentSummary};
use crate::chunk::Chunk;
use crate::load::DocKind;
use crate::{Error, Result};

/// The name of the document table's section.
pub const SECTION: &str = "documents";

/// What the table keeps of a document.
#[derive(Debug, Serialize, Deserialize)]
struct Record {
    source: String,
    title: String,
    kind: DocKind,
    pages: u32,
    sections: u32,
    chunks: u32,
}

/// Writes the document table of `documents` (whose chunks are `chunks`) into a new section of
/// `writer`, in slots of `slot` bytes (more where a document needs them).
///
/// # Errors
/// [`Error::Config`] when a chunk points to a missing document; as [`PagedWriter::records`].
pub(crate) fn write(
    writer: &mut PagedWriter,
    documents: &[DocumentInfo],
    chunks: &[Chunk],
    slot: u32,
) -> Result<()> {
    let summaries = DocumentSummary::of(documents, chunks)
        .ok_or_else(|| Error::Config("a chunk points to a missing document".to_owned()))?;
    let table: Vec<Record> = summaries
        .into_iter()
        .map(|d| Record {
            source: d.source,
            title: d.title,
            kind: d.kind,
            pages: d.pages,
            sections: u32::try_from(d.sections).unwrap_or(u32::MAX),
            chunks: u32::try_from(d.chunks).unwrap_or(u32::MAX),
        })
        .collect();
    writer.records(SECTION, slot, &table)?;
    Ok(())
}

/// Every document of `file`, in order; `None` when it has no document table. Reads the whole
/// table, in one range when it is not in the cache.
///
/// # Errors
/// [`Error::Decode`] when the table does not decode or lists another number of documents
/// than `documents`; as [`PagedFile::records`].
pub async fn read<S: RangeSource, B>(
    file: &PagedFile<S, B>,
    documents: u32,
) -> Result<Option<Vec<DocumentSummary>>> {
    let Some(section) = file.section(SECTION) else { return Ok(None) };
    let slots: Vec<u32> = (0..file.sections()[section as usize].slots).collect();
    let table: Vec<Vec<Record>> = file.records(section, &slots).await?;
    let listed: Vec<DocumentSummary> = table
        .into_iter()
        .flatten()
        .map(|r| DocumentSummary {
            source: r.source,
            title: r.title,
            kind: r.kind,
            pages: r.pages,
            sections: r.sections as usize,
            chunks: r.chunks as usize,
        })
        .collect();
    if listed.len() != documents as usize {
        return Err(Error::Decode(format!(
            "the document table lists {} documents in a bundle of {documents}",
            listed.len()
        )));
    }
    Ok(Some(listed))
}
