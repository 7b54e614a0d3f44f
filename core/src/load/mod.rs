//! Loading: bytes of a text, Markdown, HTML or PDF file in, a structured [`Document`] out.
//!
//! Every format produces the same shape: the document's plain text plus a flat list of
//! [`Block`]s in reading order (paragraphs, headings, list items, code, tables) that index into
//! it, each tied to a [`Section`] of the heading tree and, for PDF, to its page.
//!
//! Conventions every loader follows, so the chunker can rely on them:
//! - `Document::text` is the blocks' texts joined by a blank line (`"\n\n"`), and each block's
//!   `range` is its byte range in that text;
//! - a block's text is trimmed and non-empty; prose blocks hold no line breaks (hard-wrapped
//!   lines are joined with a space, end-of-line hyphenation is undone), while `Code` and
//!   `Table` blocks keep their lines;
//! - `sections[0]` is the root (level 0, the document title); a heading of level *n* opens a
//!   section whose parent is the nearest open section of a lower level.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::{Error, Result, limits};

#[cfg(feature = "html")]
mod html;
mod markdown;
#[cfg(feature = "pdf")]
mod pdf;
mod text;

/// The formats edgerag reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocKind {
    /// Plain UTF-8 text (`.txt`).
    Text,
    /// CommonMark with tables (`.md`, `.markdown`).
    Markdown,
    /// HTML (`.html`, `.htm`).
    Html,
    /// PDF, page by page (`.pdf`).
    Pdf,
}

impl DocKind {
    /// The kind for a file name's extension (case-insensitive), if it is one edgerag reads.
    pub fn from_path(name: &str) -> Option<Self> {
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "txt" | "text" => Some(Self::Text),
            "md" | "markdown" => Some(Self::Markdown),
            "html" | "htm" | "xhtml" => Some(Self::Html),
            "pdf" => Some(Self::Pdf),
            _ => None,
        }
    }
}

/// What a block is; decides how the chunker may split it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BlockKind {
    /// A heading; it opens a section.
    Heading,
    /// Running prose.
    Paragraph,
    /// One item of a list.
    ListItem,
    /// A quotation.
    Quote,
    /// Preformatted code; kept whole when it fits a chunk.
    Code,
    /// A table, one row per line, cells separated by `" | "`; kept whole when it fits.
    Table,
}

/// A run of text in reading order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Block {
    /// What the block is.
    pub kind: BlockKind,
    /// Byte range in [`Document::text`].
    pub range: Range<usize>,
    /// Index in [`Document::sections`] of the section the block belongs to.
    pub section: usize,
    /// 1-based page number (PDF only).
    pub page: Option<u32>,
}

/// A node of the heading tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    /// Heading text (the document title for the root).
    pub title: String,
    /// Heading level: 0 for the root, 1–6 for headings.
    pub level: u8,
    /// Index of the parent section; `None` for the root.
    pub parent: Option<u32>,
}

/// A loaded document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// Content hash of the source bytes (see [`crate::content_id`]).
    pub id: String,
    /// Where the document came from (the file name or path given by the host).
    pub source: String,
    /// Title: the HTML `<title>`, the first top-level Markdown heading, PDF metadata, or else
    /// the file name without its extension.
    pub title: String,
    /// The format it was read from.
    pub kind: DocKind,
    /// The document's text (see the module docs for its layout).
    pub text: String,
    /// Blocks in reading order.
    pub blocks: Vec<Block>,
    /// The heading tree; `sections[0]` is the root.
    pub sections: Vec<Section>,
    /// Number of pages (PDF), 0 for other formats.
    pub pages: u32,
}

impl Document {
    /// The text of one block.
    pub fn block_text(&self, block: &Block) -> &str {
        &self.text[block.range.clone()]
    }

    /// Titles from the root's first child down to `section` (the root itself is left out).
    pub fn section_path(&self, section: usize) -> Vec<String> {
        section_path(&self.sections, section)
    }
}

/// Titles of the sections from the top of the tree down to `section`, the root left out.
/// Stops at a missing index or a cycle instead of failing.
pub fn section_path(sections: &[Section], section: usize) -> Vec<String> {
    let mut path = Vec::new();
    let mut at = Some(section);
    while let Some(i) = at {
        let Some(s) = sections.get(i) else { break };
        if s.parent.is_none() || path.len() >= sections.len() {
            break;
        }
        path.push(s.title.clone());
        at = s.parent.map(|p| p as usize);
    }
    path.reverse();
    path
}

/// Makes a document from a text already in memory (paragraphs separated by blank lines),
/// such as a record of a data set. `source` names it; `title` may be empty.
///
/// # Errors
/// [`Error::Empty`] when `text` holds no words, [`Error::Binary`] when it holds a NUL or is
/// mostly control characters, [`Error::Limit`] past a limit of [`crate::limits`].
pub fn from_text(source: &str, title: &str, text: &str) -> Result<Document> {
    let mut doc = load_as(DocKind::Text, source, text.as_bytes())?;
    if !title.trim().is_empty() {
        doc.title = collapse_whitespace(title);
        if let Some(root) = doc.sections.first_mut() {
            root.title.clone_from(&doc.title);
        }
    }
    Ok(doc)
}

/// Loads one document from its bytes; the format is chosen from `source`'s extension.
///
/// `source` names the document in results and errors (a file name or path).
///
/// # Errors
/// [`Error::UnsupportedType`] for an unknown extension, [`Error::Empty`] for an empty file or
/// one with no text, [`Error::Binary`] for binary data whatever the extension,
/// [`Error::InvalidUtf8`] for text formats that are neither UTF-8 nor UTF-16 with a byte-order
/// mark, [`Error::Pdf`] for an unreadable PDF, [`Error::Limit`] past a limit of
/// [`crate::limits`], [`Error::FormatDisabled`] when the format's feature is off.
pub fn load(source: &str, bytes: &[u8]) -> Result<Document> {
    let kind = DocKind::from_path(source).ok_or_else(|| {
        let ext = source.rsplit_once('.').map_or("", |(_, e)| e);
        Error::UnsupportedType(if ext.is_empty() { source.to_owned() } else { format!(".{ext}") })
    })?;
    load_as(kind, source, bytes)
}

/// Loads one document whose format is already known.
///
/// # Errors
/// As [`load`], without the extension check.
pub fn load_as(kind: DocKind, source: &str, bytes: &[u8]) -> Result<Document> {
    limits::check_source_len(bytes.len() as u64)?;
    let id = crate::content_id(bytes);
    let decoded = (kind != DocKind::Pdf).then(|| utf16(bytes)).flatten();
    let bytes = decoded.as_ref().map_or(bytes, String::as_bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::Empty);
    }
    if kind != DocKind::Pdf && is_binary(bytes) {
        return Err(Error::Binary);
    }
    let mut doc = match kind {
        DocKind::Text => text::load(utf8(bytes)?),
        DocKind::Markdown => markdown::load(utf8(bytes)?),
        #[cfg(feature = "html")]
        DocKind::Html => html::load(bytes),
        #[cfg(not(feature = "html"))]
        DocKind::Html => Err(Error::FormatDisabled("HTML", "html")),
        #[cfg(feature = "pdf")]
        DocKind::Pdf => pdf::load(bytes),
        #[cfg(not(feature = "pdf"))]
        DocKind::Pdf => Err(Error::FormatDisabled("PDF", "pdf")),
    }?;
    if doc.blocks.is_empty() {
        return Err(Error::Empty);
    }
    doc.id = id;
    doc.source = source.to_owned();
    doc.kind = kind;
    if doc.title.trim().is_empty() {
        doc.title = file_stem(source).to_owned();
    }
    if let Some(root) = doc.sections.first_mut() {
        root.title.clone_from(&doc.title);
    }
    Ok(doc)
}

/// Whether `bytes` are binary data rather than text: they hold a NUL byte, or
/// more than one in 64 of their first [`BINARY_SNIFF_BYTES`] bytes is a control character other
/// than whitespace (random bytes hold one in nine; text, even in a legacy 8-bit encoding,
/// almost none). The same bytes are refused whatever the file's extension says.
fn is_binary(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)];
    let controls = head
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x0c | 0x1b)) || b == 0x7f)
        .count();
    controls * 64 > head.len() || bytes.contains(&0)
}

/// Text in UTF-16 that says so with a byte-order mark (as Windows tools write it), as UTF-8;
/// unpaired surrogates become U+FFFD.
fn utf16(bytes: &[u8]) -> Option<String> {
    let unit: fn([u8; 2]) -> u16 = match bytes {
        [0xFF, 0xFE, ..] => u16::from_le_bytes,
        [0xFE, 0xFF, ..] => u16::from_be_bytes,
        _ => return None,
    };
    let units = bytes[2..].chunks_exact(2).map(|pair| unit([pair[0], pair[1]]));
    Some(char::decode_utf16(units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)).collect())
}

/// How much of a file [`is_binary`] samples for control characters.
const BINARY_SNIFF_BYTES: usize = 8 << 10;

fn utf8(bytes: &[u8]) -> Result<&str> {
    let text =
        std::str::from_utf8(bytes).map_err(|e| Error::InvalidUtf8 { offset: e.valid_up_to() })?;
    Ok(text.strip_prefix('\u{feff}').unwrap_or(text))
}

fn file_stem(source: &str) -> &str {
    let name = source.rsplit(['/', '\\']).next().unwrap_or(source);
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}

/// Assembles a [`Document`] block by block, enforcing the layout conventions of this module.
/// Every format loader goes through it.
#[derive(Debug)]
pub(crate) struct DocumentBuilder {
    doc: Document,
    /// Indices of the open sections, root first.
    open: Vec<usize>,
    /// Set when a block would take the text past [`limits::MAX_TEXT_BYTES`]; later blocks are
    /// dropped and [`DocumentBuilder::finish`] refuses the document.
    full: bool,
}

impl DocumentBuilder {
    pub(crate) fn new() -> Self {
        let root = Section { title: String::new(), level: 0, parent: None };
        Self {
            doc: Document {
                id: String::new(),
                source: String::new(),
                title: String::new(),
                kind: DocKind::Text,
                text: String::new(),
                blocks: Vec::new(),
                sections: vec![root],
                pages: 0,
            },
            open: vec![0],
            full: false,
        }
    }

    /// Whether the text has reached [`limits::MAX_TEXT_BYTES`]: a loader may stop extracting.
    #[cfg_attr(not(feature = "pdf"), expect(dead_code))]
    pub(crate) fn is_full(&self) -> bool {
        self.full
    }

    /// Sets the title unless one is set already, cut to [`limits::MAX_TITLE_BYTES`].
    pub(crate) fn title(&mut self, title: &str) {
        let mut title = collapse_whitespace(prefix(title, 4 * limits::MAX_TITLE_BYTES));
        title.truncate(prefix(&title, limits::MAX_TITLE_BYTES).len());
        if self.doc.title.is_empty() && !title.is_empty() {
            self.doc.title = title;
        }
    }

    /// Records the page count (PDF).
    #[cfg_attr(not(feature = "pdf"), expect(dead_code))]
    pub(crate) fn pages(&mut self, pages: u32) {
        self.doc.pages = pages;
    }

    /// Opens a section for a heading of `level` (1–6) and adds the heading as a block. Past
    /// [`limits::MAX_SECTIONS`] sections, headings are kept as paragraphs of the last one.
    pub(crate) fn heading(&mut self, level: u8, text: &str, page: Option<u32>) {
        let title = collapse_whitespace(text);
        if title.is_empty() || self.full {
            return;
        }
        if self.doc.sections.len() > limits::MAX_SECTIONS {
            self.push(BlockKind::Paragraph, &title, page);
            return;
        }
        let level = level.clamp(1, 6);
        while let Some(&top) = self.open.last() {
            if self.doc.sections[top].level < level {
                break;
            }
            self.open.pop();
        }
        let parent = self.open.last().copied().unwrap_or(0);
        self.doc.sections.push(Section {
            title: title.clone(),
            level,
            parent: Some(parent as u32),
        });
        self.open.push(self.doc.sections.len() - 1);
        self.push(BlockKind::Heading, &title, page);
    }

    /// Adds a block. Prose kinds are re-flowed (hard line breaks joined, hyphenation at line ends
    /// undone, runs of whitespace collapsed); `Code` and `Table` keep their lines. Blocks that
    /// are empty after that are skipped.
    pub(crate) fn block(&mut self, kind: BlockKind, text: &str, page: Option<u32>) {
        match kind {
            BlockKind::Code | BlockKind::Table => {
                let mut kept = String::with_capacity(text.len());
                for line in text.lines() {
                    kept.push_str(line.trim_end());
                    kept.push('\n');
                }
                let trimmed = kept.trim_matches('\n');
                if !trimmed.trim().is_empty() {
                    self.push(kind, trimmed, page);
                }
            }
            _ => {
                let flowed = reflow(text);
                if !flowed.is_empty() {
                    self.push(kind, &flowed, page);
                }
            }
        }
    }

    fn push(&mut self, kind: BlockKind, text: &str, page: Option<u32>) {
        if self.full || self.doc.text.len() + text.len() + 2 > limits::MAX_TEXT_BYTES {
            self.full = true;
            return;
        }
        if !self.doc.text.is_empty() {
            self.doc.text.push_str("\n\n");
        }
        let start = self.doc.text.len();
        self.doc.text.push_str(text);
        let section = self.open.last().copied().unwrap_or(0);
        self.doc.blocks.push(Block { kind, range: start..self.doc.text.len(), section, page });
    }

    /// The document.
    ///
    /// # Errors
    /// [`Error::Limit`] when its text passed [`limits::MAX_TEXT_BYTES`].
    pub(crate) fn finish(self) -> Result<Document> {
        if self.full {
            return Err(limits::text_too_large());
        }
        Ok(self.doc)
    }
}

/// Collapses all whitespace runs to one space and trims.
pub(crate) fn collapse_whitespace(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The longest prefix of `text` of at most `len` bytes that ends on a character boundary.
fn prefix(text: &str, len: usize) -> &str {
    let mut end = len.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Joins hard-wrapped lines into one line of prose, undoing `hyph-\nenation` at line ends.
fn reflow(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let rejoin_hyphen = out.ends_with('-')
            && out[..out.len() - 1].chars().next_back().is_some_and(char::is_alphabetic)
            && line.chars().next().is_some_and(char::is_lowercase);
        if rejoin_hyphen {
            out.pop();
        } else if !out.is_empty() {
            out.push(' ');
        }
        for (i, word) in line.split_whitespace().enumerate() {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(word);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_with_a_byte_order_mark_reads_as_its_text() {
        let text = "# Überschrift\n\nNaïve text, 日本語.\n";
        let utf8 = load("a.md", text.as_bytes()).expect("UTF-8");
        for (bom, unit) in [
            ([0xFF, 0xFE], u16::to_le_bytes as fn(u16) -> [u8; 2]),
            ([0xFE, 0xFF], u16::to_be_bytes),
        ] {
            let mut bytes = bom.to_vec();
            bytes.extend(text.encode_utf16().flat_map(unit));
            let doc = load("a.md", &bytes).expect("UTF-16");
            assert_eq!(
                (doc.text.as_str(), doc.title.as_str()),
                (utf8.text.as_str(), "Überschrift")
            );
        }
        // Without the mark, its NULs say binary.
        let bare: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert!(matches!(load("a.txt", &bare), Err(Error::Binary)));
    }

    #[test]
    fn titles_are_cut_on_a_character_boundary() {
        let mut b = DocumentBuilder::new();
        b.title(&"  naïve\n title ".repeat(100_000));
        b.block(BlockKind::Paragraph, "Body.", None);
        let doc = b.finish().expect("within the limits");
        assert!(doc.title.len() <= limits::MAX_TITLE_BYTES && doc.title.len() > 1000);
        assert!(doc.title.starts_with("naïve title naïve title"), "{}", doc.title);
    }

    #[test]
    fn builder_keeps_layout_conventions() {
        let mut b = DocumentBuilder::new();
        b.block(BlockKind::Paragraph, "  Intro line one\nline two with hyph-\nenation.  ", None);
        b.heading(1, "Methods", None);
        b.heading(2, "Data", None);
        b.block(BlockKind::Code, "fn main() {\n    run();\n}\n", None);
        b.heading(1, "Results", None);
        b.block(BlockKind::Paragraph, " \n ", None);
        let doc = b.finish().expect("within the limits");
        let texts: Vec<&str> = doc.blocks.iter().map(|bl| doc.block_text(bl)).collect();
        assert_eq!(
            texts,
            [
                "Intro line one line two with hyphenation.",
                "Methods",
                "Data",
                "fn main() {\n    run();\n}",
                "Results",
            ]
        );
        assert_eq!(doc.text, texts.join("\n\n"));
        assert_eq!(doc.section_path(doc.blocks[3].section), ["Methods", "Data"]);
        assert_eq!(doc.section_path(doc.blocks[4].section), ["Results"]);
        assert_eq!(doc.section_path(doc.blocks[0].section), Vec::<String>::new());
    }

    #[test]
    fn unknown_and_empty_inputs_are_clear_errors() {
        assert!(matches!(load("notes.docx", b"x"), Err(Error::UnsupportedType(e)) if e == ".docx"));
        assert!(matches!(load("README", b"x"), Err(Error::UnsupportedType(_))));
        assert!(matches!(load("a.txt", b" \n"), Err(Error::Empty)));
        assert!(matches!(load("a.md", b"ok \xff\xfe"), Err(Error::InvalidUtf8 { offset: 3 })));
    }

    #[test]
    fn headings_past_the_section_limit_become_paragraphs() {
        let markdown: String = (0..limits::MAX_SECTIONS + 5)
            .map(|i| format!("## Part {i}\n\nText {i}.\n\n"))
            .collect();
        let doc = load("many.md", markdown.as_bytes()).expect("loads");
        assert_eq!(doc.sections.len(), limits::MAX_SECTIONS + 1);
        let last = doc.blocks.iter().rev().nth(1).expect("blocks");
        assert_eq!((last.kind, doc.block_text(last)), (BlockKind::Paragraph, "Part 10004"));
        assert_eq!(doc.sections[last.section].title, "Part 9999");
    }

    #[test]
    fn binary_content_is_refused_whatever_the_extension() {
        // xorshift bytes: what a renamed image or archive looks like.
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let random: Vec<u8> = (0..4096)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        for name in ["a.txt", "a.md", "a.html"] {
            assert!(matches!(load(name, &random), Err(Error::Binary)), "{name}");
            assert!(matches!(load(name, b"text\0with a NUL"), Err(Error::Binary)), "{name}");
        }
        // Legacy 8-bit text, tabs, form feeds and terminal colours are still text.
        assert!(load("a.html", b"<p>caf\xe9 cr\xe8me</p>").is_ok());
        assert!(load("a.txt", b"a\tb\x0c\n\x1b[1mbold\x1b[0m text").is_ok());
    }
}
