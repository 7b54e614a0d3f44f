//! Markdown (CommonMark with tables and strikethrough) via pulldown-cmark.
//!
//! Headings open sections; paragraphs, list items (one block per item, nested items are their
//! own blocks), block quotes, code and tables become blocks. Inline markup contributes its text
//! (images their alt text); inline HTML tags are dropped and HTML blocks keep only their text.
//! YAML (`---`) and TOML (`+++`) front matter is skipped, except for a `title` entry.

use pulldown_cmark::{Event, MetadataBlockKind, Options, Parser, Tag, TagEnd};

use super::{BlockKind, DocumentBuilder};
use crate::{Document, Result};

pub(super) fn load(text: &str) -> Result<Document> {
    let options = Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_YAML_STYLE_METADATA_BLOCKS
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS;
    let mut loader = Loader::new();
    for event in Parser::new_ext(text, options) {
        loader.event(event);
        if let Some(error) = loader.failed.take() {
            return Err(error);
        }
    }
    loader.flush();
    loader.b.finish()
}

/// A container whose paragraphs become blocks of its own kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Item,
    Quote,
}

/// What the text being collected belongs to, when it is not prose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Raw {
    Code,
    Html,
    FrontMatter(MetadataBlockKind),
}

/// Turns the event stream into blocks.
#[derive(Debug)]
struct Loader {
    b: DocumentBuilder,
    /// Open list items and block quotes, outermost first.
    containers: Vec<Container>,
    /// Text of the block being collected.
    buf: String,
    /// Set while inside a code block, HTML block or front matter.
    raw: Option<Raw>,
    /// Finished rows of the table being collected.
    rows: Vec<String>,
    /// Finished cells of the table row being collected.
    cells: Vec<String>,
    /// Why the document cannot be loaded, once that is known (an HTML block nested too deep).
    failed: Option<crate::Error>,
}

impl Loader {
    fn new() -> Self {
        Self {
            b: DocumentBuilder::new(),
            containers: Vec::new(),
            buf: String::new(),
            raw: None,
            rows: Vec::new(),
            cells: Vec::new(),
            failed: None,
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) | Event::Code(text) | Event::Html(text) => self.buf.push_str(&text),
            Event::InlineMath(text) | Event::DisplayMath(text) => self.buf.push_str(&text),
            Event::SoftBreak | Event::HardBreak => self.buf.push('\n'),
            Event::Rule => self.flush(),
            Event::InlineHtml(_) | Event::FootnoteReference(_) | Event::TaskListMarker(_) => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            // Paragraphs of a list item all belong to the item's block.
            Tag::Paragraph if self.containers.last() == Some(&Container::Item) => {
                self.buf.push('\n');
            }
            Tag::Item => {
                self.flush();
                self.containers.push(Container::Item);
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.containers.push(Container::Quote);
            }
            Tag::Heading { .. } | Tag::List(_) | Tag::Table(_) => self.flush(),
            Tag::CodeBlock(_) => self.start_raw(Raw::Code),
            Tag::HtmlBlock => self.start_raw(Raw::Html),
            Tag::MetadataBlock(kind) => self.start_raw(Raw::FrontMatter(kind)),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph if self.containers.last() != Some(&Container::Item) => self.flush(),
            TagEnd::Item | TagEnd::BlockQuote(_) => {
                self.flush();
                self.containers.pop();
            }
            TagEnd::Heading(level) => {
                let text = std::mem::take(&mut self.buf);
                let level = level as u8;
                if level == 1 {
                    self.b.title(&text);
                }
                self.b.heading(level, &text, None);
            }
            TagEnd::TableCell => {
                let cell = super::collapse_whitespace(&std::mem::take(&mut self.buf));
                self.cells.push(cell);
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                self.rows.push(self.cells.join(" | "));
                self.cells.clear();
            }
            TagEnd::Table => {
                self.b.block(BlockKind::Table, &self.rows.join("\n"), None);
                self.rows.clear();
            }
            TagEnd::CodeBlock | TagEnd::HtmlBlock | TagEnd::MetadataBlock(_) => self.end_raw(),
            _ => {}
        }
    }

    fn start_raw(&mut self, raw: Raw) {
        self.flush();
        self.raw = Some(raw);
    }

    fn end_raw(&mut self) {
        let text = std::mem::take(&mut self.buf);
        match self.raw.take() {
            Some(Raw::Code) => self.b.block(BlockKind::Code, &text, None),
            #[cfg(feature = "html")]
            Some(Raw::Html) => match super::html::fragment_text(&text) {
                Ok(visible) => self.b.block(self.prose_kind(), &visible, None),
                Err(error) => self.failed = Some(error),
            },
            // Without an HTML parser, raw HTML blocks are left out rather than indexed as markup.
            #[cfg(not(feature = "html"))]
            Some(Raw::Html) => {}
            Some(Raw::FrontMatter(kind)) => {
                if let Some(title) = front_matter_title(&text, kind) {
                    self.b.title(title);
                }
            }
            None => {}
        }
    }

    /// The kind of a prose block in the innermost container.
    fn prose_kind(&self) -> BlockKind {
        match self.containers.last() {
            Some(Container::Item) => BlockKind::ListItem,
            Some(Container::Quote) => BlockKind::Quote,
            None => BlockKind::Paragraph,
        }
    }

    /// Emits the collected prose, if any, as a block of the innermost container's kind.
    fn flush(&mut self) {
        if !self.buf.is_empty() {
            let text = std::mem::take(&mut self.buf);
            self.b.block(self.prose_kind(), &text, None);
        }
    }
}

/// The `title` entry of YAML (`title: x`) or TOML (`title = "x"`) front matter.
fn front_matter_title(front_matter: &str, kind: MetadataBlockKind) -> Option<&str> {
    let separator = match kind {
        MetadataBlockKind::YamlStyle => ':',
        MetadataBlockKind::PlusesStyle => '=',
    };
    front_matter.lines().find_map(|line| {
        let (key, value) = line.split_once(separator)?;
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
        (key.trim() == "title" && !value.is_empty()).then_some(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::Block;

    fn blocks(doc: &Document) -> Vec<(BlockKind, &str)> {
        doc.blocks.iter().map(|b| (b.kind, doc.block_text(b))).collect()
    }

    fn path(doc: &Document, block: &Block) -> Vec<String> {
        doc.section_path(block.section)
    }

    #[test]
    fn structure_becomes_blocks_and_sections() {
        let md = "# Guide\n\nIntro *with* `code` and a [link](http://x).\n\n\
                  ## Install\n\n- one\n- two\n  - nested\n\n> quoted\n> text\n\n\
                  ```rust\nfn main() {\n    run();\n}\n```\n\n### Deep\n\nLast.\n";
        let doc = load(md).expect("loads");
        assert_eq!(doc.title, "Guide");
        assert_eq!(
            blocks(&doc),
            [
                (BlockKind::Heading, "Guide"),
                (BlockKind::Paragraph, "Intro with code and a link."),
                (BlockKind::Heading, "Install"),
                (BlockKind::ListItem, "one"),
                (BlockKind::ListItem, "two"),
                (BlockKind::ListItem, "nested"),
                (BlockKind::Quote, "quoted text"),
                (BlockKind::Code, "fn main() {\n    run();\n}"),
                (BlockKind::Heading, "Deep"),
                (BlockKind::Paragraph, "Last."),
            ]
        );
        assert_eq!(path(&doc, &doc.blocks[7]), ["Guide", "Install"]);
        assert_eq!(path(&doc, &doc.blocks[9]), ["Guide", "Install", "Deep"]);
    }

    #[test]
    fn tables_keep_one_row_per_line() {
        let md = "| Name | Size |\n|------|-----:|\n| *a* | 1 |\n| b | 22 |\n";
        let doc = load(md).expect("loads");
        assert_eq!(blocks(&doc), [(BlockKind::Table, "Name | Size\na | 1\nb | 22")]);
    }

    #[test]
    fn front_matter_is_skipped_but_gives_the_title() {
        let doc = load("---\ntitle: \"Field notes\"\ndate: 2024\n---\n\n# Heading\n\nBody.\n")
            .expect("loads");
        assert_eq!(doc.title, "Field notes");
        assert_eq!(
            blocks(&doc),
            [(BlockKind::Heading, "Heading"), (BlockKind::Paragraph, "Body.")]
        );
        let toml = load("+++\ntitle = 'Toml'\n+++\n\nBody.\n").expect("loads");
        assert_eq!(toml.title, "Toml");
        assert_eq!(blocks(&toml), [(BlockKind::Paragraph, "Body.")]);
    }

    #[test]
    fn html_images_and_loose_items() {
        let md = "<div align=\"center\"><b>Banner</b></div>\n\n<!-- hidden -->\n\n\
                  <script>let x = 1;</script>\n\n<style>p { color: red }</style>\n\n\
                  ![a diagram](d.png) and <kbd>Ctrl</kbd>\n\n\
                  1. first para\n\n   second para\n2. next\n";
        let doc = load(md).expect("loads");
        assert_eq!(doc.title, "");
        assert_eq!(
            blocks(&doc),
            [
                (BlockKind::Paragraph, "Banner"),
                (BlockKind::Paragraph, "a diagram and Ctrl"),
                (BlockKind::ListItem, "first para second para"),
                (BlockKind::ListItem, "next"),
            ]
        );
    }

    #[test]
    fn real_article_fixture() {
        let bytes =
            include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/normans.md"));
        let doc = crate::load::load("normans.md", bytes).expect("loads");
        assert_eq!(doc.title, "Normans");
        let heading = |t: &str| {
            doc.blocks.iter().position(|b| b.kind == BlockKind::Heading && doc.block_text(b) == t)
        };
        let after = &doc.blocks[heading("Origins").expect("present") + 1];
        assert_eq!(after.kind, BlockKind::Paragraph);
        assert_eq!(path(&doc, after), ["Normans", "History", "Origins"]);
        assert!(doc.block_text(after).starts_with("In the course of the 10th century"));
        let etymology = &doc.blocks[heading("Etymology").expect("present")];
        assert_eq!(path(&doc, etymology), ["Normans", "Etymology"]);
        assert_eq!(doc.blocks.iter().filter(|b| b.kind == BlockKind::Paragraph).count(), 5);
        assert!(doc.blocks.iter().all(|b| !doc.block_text(b).contains('\n')));
        assert_eq!(doc.text.matches("\n\n").count() + 1, doc.blocks.len());
    }
}
