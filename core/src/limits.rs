//! The limits every host can rely on when it hands edgerag a document.
//!
//! A file past one of these limits is refused with [`Error::Limit`], which names the limit;
//! hosts report it and go on with the other files (`edgerag build` lists it under `failed`).
//! The limits live in core, so a browser tab building from dropped files and the CLI refuse
//! the same files for the same reasons.
//!
//! | limit | value | past it |
//! |---|---|---|
//! | [`MAX_SOURCE_BYTES`] | 256 MiB | the file is refused before it is parsed |
//! | [`MAX_TEXT_BYTES`] | 64 MiB | the document is refused (a PDF's extraction stops there) |
//! | [`MAX_TITLE_BYTES`] | 1 KiB | a longer title is cut |
//! | [`MAX_SECTIONS`] | 10,000 | later headings are indexed as paragraphs of the last section |
//! | [`MAX_DEPTH`] | 512 | a deeper structure (HTML elements, a PDF's page tree and objects) is refused |
//! | [`MAX_HTML_ATTRIBUTES`] | 1,024 | an HTML tag with more attributes is refused |
//! | [`MAX_INFLATED_BYTES`] | 256 MiB | decompression stops and the PDF is refused |
//! | [`MAX_INFLATE_RATIO`] | 100 | a PDF whose streams inflate (with what the parser copies and scans while loading) to more than 100 times its size (and 1 MiB) is refused |
//! | [`MAX_PDF_TOKENS`] | 4 Mi | a PDF with more numbers, names and other tokens outside its streams (each counted as often as the parser reads it) is refused |
//! | [`MAX_PDF_FORM_DEPTH`] | 32 | a PDF whose forms draw forms deeper is refused (a form drawing itself is skipped) |
//! | [`MAX_PDF_FONT_MEMORY`] | 256 MiB | a PDF whose fonts' width tables and Unicode maps would take more memory is refused |
//! | [`PDF_WORK_FACTOR`] | 4 | a PDF whose text extraction would interpret more than 4 times its [`inflate_budget`] is refused |

use crate::{Error, Result};

/// Largest source file accepted, in bytes.
pub const MAX_SOURCE_BYTES: usize = 256 << 20;

/// Most text one document may yield, in bytes of UTF-8, after extraction (markup and PDF
/// operators do not count): the text of its blocks, where prose counts each whitespace run
/// as the one space it collapses to (code and tables keep theirs), plus the blank line
/// (`"\n\n"`) between blocks. A PDF's text is also held to it while it is extracted, all
/// pages together and before it is split into blocks: there every space and line break
/// counts, those placed between strings included.
pub const MAX_TEXT_BYTES: usize = 64 << 20;

/// Longest document title kept, in bytes of UTF-8 (a title is shown with every result).
pub const MAX_TITLE_BYTES: usize = 1 << 10;

/// Most sections (headings) one document may open; the heading tree is kept with the bundle
/// and shown with every result, so it stays small.
pub const MAX_SECTIONS: usize = 10_000;

/// Deepest nesting of a document's structure: HTML elements (of HTML files and of the HTML in
/// Markdown), a PDF's page tree and its arrays and dictionaries. (PDF forms drawn inside forms
/// have their own, lower [`MAX_PDF_FORM_DEPTH`].)
pub const MAX_DEPTH: usize = 512;

/// Most attributes one HTML tag may have: the HTML tokenizer compares each new attribute with
/// the tag's earlier ones, so a tag's cost grows with the square of their number.
pub const MAX_HTML_ATTRIBUTES: usize = 1024;

/// Most bytes all of a PDF's compressed streams may inflate to, with the stream data the
/// parser copies and the text it scans while loading (counted each time). Of what the parser
/// copies (stream data, and an encrypted file's raw objects), one copy of the file each is
/// not counted: it is bounded by [`MAX_SOURCE_BYTES`] like the file, and charging it would
/// refuse large real files; only the copies beyond it are.
pub const MAX_INFLATED_BYTES: usize = 256 << 20;

/// Most a PDF's streams may inflate relative to the file's size (above the first
/// [`INFLATE_ALLOWANCE`] bytes): real documents stay far below; decompression bombs do not.
pub const MAX_INFLATE_RATIO: usize = 100;

/// Bytes a PDF's streams may always inflate to, whatever the file's size.
pub const INFLATE_ALLOWANCE: usize = 1 << 20;

/// Most bytes a PDF of `source_len` bytes may inflate to: [`MAX_INFLATE_RATIO`] times its size
/// plus [`INFLATE_ALLOWANCE`], and never more than [`MAX_INFLATED_BYTES`].
pub fn inflate_budget(source_len: usize) -> usize {
    source_len
        .saturating_mul(MAX_INFLATE_RATIO)
        .saturating_add(INFLATE_ALLOWANCE)
        .min(MAX_INFLATED_BYTES)
}

/// Most tokens (numbers, names, strings, brackets) a PDF may have outside its streams, its
/// object streams included: the parser holds each as an object of some hundred bytes. A token
/// the parser reads again (an object reached by several cross-reference entries, or by
/// several pairs of an object stream's index) counts each time: it holds every copy.
pub const MAX_PDF_TOKENS: usize = 4 << 20;

/// Deepest nesting of PDF form XObjects (forms drawn inside forms): the text extractor
/// recurses once per level.
pub const MAX_PDF_FORM_DEPTH: usize = 32;

/// How many times its [`inflate_budget`] a PDF's text extraction may interpret: content
/// streams (a form each time it is drawn), the fonts (again on every page that uses them) and
/// the text shown. Files that repeat small objects many times (a form drawn a million times,
/// a million pages sharing one content stream) are refused instead of taking hours. The
/// memory the fonts' expanded width tables take is counted against the same budget, once
/// per font, in bytes: thousands of fonts sharing one `[0 65535 500]` are refused instead of
/// taking tens of GB.
pub const PDF_WORK_FACTOR: usize = 4;

/// Most memory a PDF's fonts may take once expanded for text extraction, whatever the file's
/// size: width tables (`[0 65535 500]` is 65,536 widths) and `ToUnicode` maps, as the rebuilt
/// document and the text extractor hold them. Real documents take a few MiB at most.
pub const MAX_PDF_FONT_MEMORY: usize = 256 << 20;

/// Most bytes of content and font data the text extraction of a PDF of `source_len` bytes may
/// interpret: [`PDF_WORK_FACTOR`] times [`inflate_budget`].
pub fn pdf_work_budget(source_len: usize) -> usize {
    inflate_budget(source_len).saturating_mul(PDF_WORK_FACTOR)
}

/// A human-readable size: `64 MiB`, `512 KiB`, `100 bytes`.
pub(crate) fn size(bytes: usize) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} bytes"),
    }
}

/// Refuses a source file of `len` bytes when it is over [`MAX_SOURCE_BYTES`]; hosts call it
/// before reading a file, and [`crate::load()`] calls it on the bytes it is given.
///
/// # Errors
/// [`Error::Limit`] naming the file's size and the limit.
pub fn check_source_len(len: u64) -> Result<()> {
    if len > MAX_SOURCE_BYTES as u64 {
        return Err(Error::Limit(format!(
            "the file is {len} bytes, over the {} limit for one document",
            size(MAX_SOURCE_BYTES)
        )));
    }
    Ok(())
}

/// [`Error::Limit`] for a document whose text passes [`MAX_TEXT_BYTES`].
pub(crate) fn text_too_large() -> Error {
    Error::Limit(format!(
        "the document's text passes the {} limit for one document",
        size(MAX_TEXT_BYTES)
    ))
}

/// [`Error::Limit`] for a PDF whose text extraction passes `limit` ([`pdf_work_budget`]).
#[cfg(feature = "pdf")]
pub(crate) fn pdf_work_exceeded(limit: usize) -> Error {
    Error::Limit(format!(
        "extracting the PDF's text would interpret more than {} of content and fonts ({} times the inflate limit)",
        size(limit),
        PDF_WORK_FACTOR
    ))
}

/// [`Error::Limit`] for a PDF whose fonts pass [`MAX_PDF_FONT_MEMORY`].
#[cfg(feature = "pdf")]
pub(crate) fn pdf_font_memory_exceeded() -> Error {
    Error::Limit(format!(
        "the PDF's fonts would take more than {} of memory once expanded",
        size(MAX_PDF_FONT_MEMORY)
    ))
}

/// [`Error::Limit`] for a structure nested deeper than [`MAX_DEPTH`]; `what` names it
/// (`"HTML elements"`, `"the page tree"`).
#[cfg_attr(not(any(feature = "html", feature = "pdf")), expect(dead_code))]
pub(crate) fn too_deep(what: &str) -> Error {
    Error::Limit(format!("{what} nested deeper than {MAX_DEPTH} levels"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inflate_budget_scales_with_the_file_and_is_capped() {
        assert_eq!(inflate_budget(0), INFLATE_ALLOWANCE);
        assert_eq!(inflate_budget(1000), 100_000 + INFLATE_ALLOWANCE);
        assert_eq!(inflate_budget(usize::MAX), MAX_INFLATED_BYTES);
        assert_eq!(size(MAX_TEXT_BYTES), "64 MiB");
        assert_eq!(size(1536), "1536 bytes");
    }
}
