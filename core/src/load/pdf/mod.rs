//! PDF text extraction, page by page: lopdf parses, pdf-extract interprets the pages, and
//! this module stands between them and hostile files.
//!
//! Each page's text is split into paragraphs on blank lines; one block per paragraph, tagged
//! with its 1-based page number. Running headers and footers (lines that repeat, digits aside,
//! at the top or bottom of at least half of the pages of a document of three pages or more) and
//! bare page-number lines are dropped.
//!
//! # What is checked, and the limits
//!
//! A PDF that passes a limit is refused with a one-line [`Error::Limit`] naming it; a broken
//! one with [`Error::Pdf`]. Every check is in this module's code, so it holds on wasm32 too
//! (where a panic aborts the module and cannot be caught).
//!
//! 1. [`prescan`], before lopdf parses: more than [`limits::MAX_PDF_TOKENS`] tokens outside
//!    streams (objects hidden in stream data, strings or comments, the objects of object
//!    streams, and the most an encrypted object stream could inflate to, included; as lopdf
//!    keeps every object it parses until it has parsed them all, an object's tokens count
//!    again for every cross-reference entry past the first leading to it, and an object
//!    stream's objects for every pair of its index, the bytes they take past the stream's
//!    own charged to the inflate budget below); arrays
//!    and dictionaries nested deeper than [`limits::MAX_DEPTH`], read without recursion
//!    (lopdf 0.42 stops its own parser at 100 levels and drops an object nested deeper, so a
//!    file nested 101 to 512 levels deep is read with that object missing, not refused).
//!    Then every `n g obj` header in the file, wherever it is (lopdf parses objects where
//!    the cross-reference sections say, which may be inside another object's data): chains
//!    of stream `/Length` references longer than [`prescan::MAX_LENGTH_CHAIN`] (lopdf
//!    resolves them recursively); cross-reference streams with field widths lopdf would loop
//!    on; cross-reference and object streams, which lopdf inflates by itself, inflated here
//!    first against the document's budget ([`limits::inflate_budget`]: 100 times the file's
//!    size plus 1 MiB, at most 256 MiB, for all the streams decoded, each time one is
//!    decoded or copied; [`decode`] charges it the bytes each filter reads as well as those
//!    it writes, so decoding to nothing is not free). What lopdf itself copies and scans
//!    while loading is charged to the same budget ([`copies`]), as lopdf would do it, for
//!    every in-use cross-reference entry: the data of the stream it leads to (headers nested
//!    in each other's data included: 500 of them in a 535 KB file made lopdf hold 256 MB),
//!    as much as the object a `/Length` refers to may say, and what resolving that reference
//!    parses (an object stream holding the length is copied and inflated again each time);
//!    the long run of white space, digits and comments it scans from the entry's offset
//!    looking for a header; and, when the file may be taken for encrypted, the raw copy of
//!    the entry's object lopdf makes before it authenticates (from the offset to the next
//!    `endobj`, or to the end of the file). Lengths lopdf would resolve without end (an
//!    object stream whose `/Length` is stored in an object stream) and compressed entries
//!    whose container is a stream other than an object stream (lopdf would inflate it
//!    without a bound) are refused.
//! 2. [`sanitize`] rebuilds the document pdf-extract sees: the page tree walked iteratively
//!    (`Kids` cycles and shared subtrees walked once, depth bounded, `/Parent` links never
//!    followed: the new tree is flat), streams decoded (or copied) by [`decode`] under the
//!    same budget, images and font programs left out, content streams reduced by [`content`]
//!    to text operators with checked operands (at most [`content::MAX_OPERATORS`] per
//!    stream), fonts rebuilt by [`fonts`] (their CMaps and width tables bounded), forms nested
//!    at most [`limits::MAX_PDF_FORM_DEPTH`] deep with self-drawing cut, and pdf-extract's
//!    whole work (a nominal cost per page included, each font's as soon as it is built)
//!    bounded by [`limits::pdf_work_budget`]. The memory held for the fonts' expanded width
//!    tables and `ToUnicode` maps is bounded by [`limits::MAX_PDF_FONT_MEMORY`]: each font is
//!    charged once, when it is built, [`fonts::WIDTH_OBJECT_BYTES`] per object of its width
//!    table and [`fonts::UNICODE_ENTRY_BYTES`] per code of its map (a table shared by several
//!    fonts is charged to each: each gets its own copy, and pdf-extract its own map).
//! 3. [`output`] collects the text of all pages in one pass of pdf-extract over the document,
//!    stopping at [`limits::MAX_TEXT_BYTES`].
//!
//! On native targets a panic that still escapes lopdf or pdf-extract is caught and reported
//! as [`Error::Pdf`] (the default panic hook still prints its message to stderr).

use std::collections::{HashMap, HashSet};

use pdf_extract::Document as PdfDocument;

use super::{BlockKind, DocumentBuilder};
use crate::{Document, Error, Result, limits};

mod cff;
mod content;
mod copies;
mod decode;
mod fonts;
mod lex;
mod output;
mod prescan;
mod sanitize;
#[cfg(test)]
mod tests;
mod value;

/// Lines at each edge of a page that may be a running header or footer.
const EDGE_LINES: usize = 2;
/// Fewest pages for which running headers and footers are detected.
const MIN_PAGES_FOR_RUNNING_LINES: usize = 3;

/// What pdf-extract gives for one PDF.
struct Extracted {
    /// The `/Info /Title`, when present and non-empty.
    title: Option<String>,
    /// Text of each page, in page order.
    pages: Vec<String>,
}

pub(super) fn load(bytes: &[u8]) -> Result<Document> {
    check_header(bytes)?;
    let extracted = extract_guarded(bytes)?;
    let running = running_lines(&extracted.pages);
    let mut b = DocumentBuilder::new();
    if let Some(title) = &extracted.title {
        b.title(title);
    }
    b.pages(u32::try_from(extracted.pages.len()).unwrap_or(u32::MAX));
    for (page, text) in (1u32..).zip(&extracted.pages) {
        if b.is_full() {
            break;
        }
        for paragraph in paragraphs(text, &running) {
            b.block(BlockKind::Paragraph, &paragraph, Some(page));
        }
    }
    let doc = b.finish()?;
    if doc.blocks.is_empty() {
        return Err(Error::Pdf("no extractable text (a scanned document?)".to_owned()));
    }
    Ok(doc)
}

/// Rejects bytes that are not a PDF before handing them to the parser.
fn check_header(bytes: &[u8]) -> Result<()> {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    if bytes[start..].starts_with(b"%PDF-") {
        Ok(())
    } else {
        Err(Error::Pdf("not a PDF file (it does not start with %PDF-)".to_owned()))
    }
}

/// Runs [`extract`], turning a panic of the parser into [`Error::Pdf`].
#[cfg(not(target_arch = "wasm32"))]
fn extract_guarded(bytes: &[u8]) -> Result<Extracted> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| extract(bytes)))
        .unwrap_or_else(|_| Err(Error::Pdf("malformed PDF (the parser gave up)".to_owned())))
}

/// Runs [`extract`]; panics abort on wasm32, so there is nothing to catch.
#[cfg(target_arch = "wasm32")]
fn extract_guarded(bytes: &[u8]) -> Result<Extracted> {
    extract(bytes)
}

/// Checks, parses (lopdf decrypts documents with an empty user password), sanitizes and
/// extracts the text of every page (see the module docs).
fn extract(bytes: &[u8]) -> Result<Extracted> {
    let mut budget = decode::Budget::for_source(bytes.len());
    prescan::prescan(bytes, &mut budget)?;
    let parsed = PdfDocument::load_mem(bytes).map_err(|e| Error::Pdf(e.to_string()))?;
    let title = info_title(&parsed);
    let clean = sanitize::sanitize(&parsed, &mut budget, bytes.len())?;
    drop(parsed);
    let mut text = output::PageText::default();
    let result = pdf_extract::output_doc(&clean.doc, &mut text);
    if text.is_full() {
        return Err(limits::text_too_large());
    }
    result.map_err(|e| Error::Pdf(e.to_string()))?;
    let mut pages = text.into_pages();
    pages.resize(clean.pages, String::new());
    Ok(Extracted { title, pages })
}

/// The document's `/Info /Title`, if set to a non-empty string.
fn info_title(doc: &PdfDocument) -> Option<String> {
    let info = doc.trailer.get(b"Info").ok()?;
    let (_, info) = doc.dereference(info).ok()?;
    let title = info.as_dict().ok()?.get(b"Title").ok()?;
    let (_, title) = doc.dereference(title).ok()?;
    let title = pdf_extract::decode_text_string(title).ok()?;
    Some(title).filter(|t| !t.trim().is_empty())
}

/// A line with each run of digits replaced by one `#`, so "Page 9" and "Page 10" compare
/// equal.
fn line_shape(line: &str) -> String {
    let mut shape = String::with_capacity(line.len());
    for c in line.chars() {
        if !c.is_ascii_digit() {
            shape.push(c);
        } else if !shape.ends_with('#') {
            shape.push('#');
        }
    }
    super::collapse_whitespace(&shape)
}

/// The non-blank lines of a page, each with whether it is one of the page's first or last
/// [`EDGE_LINES`], where headers, footers and page numbers sit.
fn lines_with_edges(page: &str) -> impl Iterator<Item = (&str, bool)> {
    let count = page.lines().filter(|l| !l.trim().is_empty()).count();
    let lines = page.lines().map(str::trim).filter(|l| !l.is_empty());
    lines.enumerate().map(move |(i, line)| (line, i < EDGE_LINES || i + EDGE_LINES >= count))
}

/// Shapes of the lines that run along the top or bottom of at least half of the pages.
fn running_lines(pages: &[String]) -> HashSet<String> {
    if pages.len() < MIN_PAGES_FOR_RUNNING_LINES {
        return HashSet::new();
    }
    let mut pages_with: HashMap<String, usize> = HashMap::new();
    for page in pages {
        let edges = lines_with_edges(page).filter(|&(_, edge)| edge);
        let shapes: HashSet<String> = edges.map(|(line, _)| line_shape(line)).collect();
        for shape in shapes {
            *pages_with.entry(shape).or_default() += 1;
        }
    }
    let threshold = pages.len().div_ceil(2);
    pages_with.into_iter().filter(|(_, n)| *n >= threshold).map(|(shape, _)| shape).collect()
}

/// A line that is only a page number: "7", "- 7 -", "Page 7", "7 of 12", "vii".
fn is_page_number(line: &str) -> bool {
    let words: Vec<String> = line
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let is_number = |w: &String| {
        w.chars().all(|c| c.is_ascii_digit())
            || (w.len() <= 5 && w.chars().all(|c| matches!(c, 'i' | 'v' | 'x')))
    };
    match words.as_slice() {
        [n] => is_number(n),
        [page, n] => page == "page" && is_number(n),
        [n, of, m] => of == "of" && is_number(n) && is_number(m),
        [page, n, of, m] => page == "page" && of == "of" && is_number(n) && is_number(m),
        _ => false,
    }
}

/// The page's paragraphs (blank-line separated), without the running lines and page numbers
/// at its edges.
fn paragraphs(page: &str, running: &HashSet<String>) -> Vec<String> {
    let furniture = |line: &str| is_page_number(line) || running.contains(&line_shape(line));
    let mut edges = lines_with_edges(page).map(|(_, edge)| edge);
    let mut out = Vec::new();
    let mut current = String::new();
    for line in page.lines().map(str::trim) {
        if line.is_empty() {
            out.push(std::mem::take(&mut current));
        } else if !(edges.next().unwrap_or(false) && furniture(line)) {
            current.push_str(line);
            current.push('\n');
        }
    }
    out.push(current);
    out.retain(|p| !p.is_empty());
    out
}
