//! HTML via scraper (html5ever), which also decodes character references.
//!
//! The content is the first `<main>`, else every outermost `<article>`, else `<body>`. Page
//! furniture and non-content (`script`, `style`, `nav`, `header`, `footer`, `aside`, `form`,
//! `svg`, elements with a `hidden` attribute, …) is skipped. Headings open sections; `p`, `li`,
//! `blockquote`, `pre`, `table`, `dt`, `dd` and `figcaption` become blocks, and so does loose
//! text directly inside a `div`, `section` or `body`. The title is the `<title>`, else the
//! first `<h1>`.
//!
//! Bytes are decoded as UTF-8, lossily: invalid sequences become U+FFFD rather than an error,
//! because real pages often mislabel or mix encodings and a few replaced characters cost less
//! than a page that cannot be indexed. Pages in another charset (a `<meta charset>` other than
//! UTF-8) are not transcoded.

mod parse;

use ego_tree::iter::Edge;
use scraper::{ElementRef, Html, Node};

use super::{BlockKind, DocumentBuilder, collapse_whitespace};
use crate::{Document, Result};

/// Elements whose content is never indexed.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form", "svg",
    "head",
];

/// Elements that end the text before them and whose own text is a block of the enclosing kind
/// (loose text in a `div` is a paragraph, a `p` inside a `blockquote` is a quote).
const BLOCKS: &[&str] = &[
    "address",
    "article",
    "body",
    "center",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "hgroup",
    "hr",
    "main",
    "menu",
    "ol",
    "p",
    "section",
    "summary",
    "ul",
];

pub(super) fn load(bytes: &[u8]) -> Result<Document> {
    let html = parse::document(&String::from_utf8_lossy(bytes))?;
    let mut walker = Walker { b: DocumentBuilder::new(), buf: String::new() };
    let head = first_element(html.root_element(), "head");
    if let Some(title) = head.and_then(|head| first_element(head, "title")) {
        walker.b.title(&visible_text(title));
    }
    if let Some(h1) = first_element(html.root_element(), "h1") {
        walker.b.title(&visible_text(h1));
    }
    for root in content_roots(&html) {
        walker.walk(root, BlockKind::Paragraph);
        walker.flush(BlockKind::Paragraph);
    }
    walker.b.finish()
}

/// The visible text of an HTML fragment (an HTML block inside Markdown), whitespace collapsed.
///
/// # Errors
/// [`crate::Error::Limit`] when its elements nest deeper than [`limits::MAX_DEPTH`] or a tag
/// has more than [`limits::MAX_HTML_ATTRIBUTES`] attributes.
pub(super) fn fragment_text(fragment: &str) -> Result<String> {
    Ok(visible_text(parse::fragment(fragment)?.root_element()))
}

/// The elements holding the page's content: the first `<main>`, else the outermost
/// `<article>`s, else `<body>`.
fn content_roots(html: &Html) -> Vec<ElementRef<'_>> {
    let root = html.root_element();
    if let Some(main) = first_element(root, "main") {
        return vec![main];
    }
    let articles: Vec<ElementRef<'_>> = elements(root)
        .filter(|e| e.value().name() == "article")
        .filter(|e| {
            !e.ancestors().filter_map(ElementRef::wrap).any(|a| a.value().name() == "article")
        })
        .collect();
    if !articles.is_empty() {
        return articles;
    }
    vec![first_element(root, "body").unwrap_or(root)]
}

/// All elements under `root`, in document order.
fn elements(root: ElementRef<'_>) -> impl Iterator<Item = ElementRef<'_>> {
    root.descendants().filter_map(ElementRef::wrap)
}

/// The first element named `name` under `root`.
fn first_element<'a>(root: ElementRef<'a>, name: &str) -> Option<ElementRef<'a>> {
    elements(root).find(|e| e.value().name() == name)
}

/// Whether an element and everything in it is left out.
fn is_skipped(element: ElementRef<'_>) -> bool {
    SKIPPED.contains(&element.value().name()) || element.attr("hidden").is_some()
}

/// The text of a node without skipped elements, whitespace collapsed.
fn visible_text(element: ElementRef<'_>) -> String {
    let mut out = String::new();
    // Depth of the skipped element being passed over, if any.
    let mut skipping: Option<usize> = None;
    let mut depth = 0usize;
    for edge in element.traverse() {
        match edge {
            Edge::Open(node) => {
                depth += 1;
                if skipping.is_some() || node.id() == element.id() {
                    continue;
                }
                if let Node::Text(text) = node.value() {
                    out.push_str(text);
                } else if let Some(child) = ElementRef::wrap(node) {
                    if is_skipped(child) {
                        skipping = Some(depth);
                    } else if is_spaced(child) {
                        out.push(' ');
                    }
                }
            }
            Edge::Close(node) => {
                if skipping == Some(depth) {
                    skipping = None;
                } else if skipping.is_none()
                    && node.id() != element.id()
                    && ElementRef::wrap(node).is_some_and(is_spaced)
                {
                    out.push(' ');
                }
                depth = depth.saturating_sub(1);
            }
        }
    }
    collapse_whitespace(&out)
}

/// Elements whose text is set apart from the text around it.
fn is_spaced(element: ElementRef<'_>) -> bool {
    let name = element.value().name();
    name == "br" || BLOCKS.contains(&name)
}

/// A table as rows of cells joined by `" | "`, one row per line. Only its own rows: a table
/// nested in a cell is that cell's text, so its text is read once however deep tables nest.
fn table_text(table: ElementRef<'_>) -> String {
    let own = |row: &ElementRef<'_>| {
        let mut tables = row
            .ancestors()
            .filter(|a| ElementRef::wrap(*a).is_some_and(|e| e.value().name() == "table"));
        tables.next().is_some_and(|nearest| nearest.id() == table.id())
    };
    let rows = elements(table).filter(|e| e.value().name() == "tr").filter(own).map(|row| {
        let cells = row.children().filter_map(ElementRef::wrap);
        let cells = cells.filter(|c| matches!(c.value().name(), "td" | "th"));
        cells.map(|c| visible_text(c)).collect::<Vec<_>>().join(" | ")
    });
    rows.filter(|row| !row.replace('|', "").trim().is_empty()).collect::<Vec<_>>().join("\n")
}

/// Walks the content tree, collecting inline text until a block boundary.
struct Walker {
    b: DocumentBuilder,
    /// Inline text of the block being collected.
    buf: String,
}

impl Walker {
    /// Visits the children of `parent`, whose loose text is a block of `kind`.
    fn walk(&mut self, parent: ElementRef<'_>, kind: BlockKind) {
        for child in parent.children() {
            match child.value() {
                Node::Text(text) => self.buf.push_str(text),
                Node::Element(_) => {
                    if let Some(element) = ElementRef::wrap(child) {
                        self.element(element, kind);
                    }
                }
                _ => {}
            }
        }
    }

    fn element(&mut self, element: ElementRef<'_>, kind: BlockKind) {
        if is_skipped(element) {
            return;
        }
        let name = element.value().name();
        match name {
            "br" => self.buf.push('\n'),
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.flush(kind);
                let level = name[1..].parse().unwrap_or(1);
                self.b.heading(level, &visible_text(element), None);
            }
            "pre" => {
                self.flush(kind);
                self.b.block(BlockKind::Code, &element.text().collect::<String>(), None);
            }
            "table" => {
                self.flush(kind);
                self.b.block(BlockKind::Table, &table_text(element), None);
            }
            "li" => self.block(element, kind, BlockKind::ListItem),
            "blockquote" => self.block(element, kind, BlockKind::Quote),
            _ if BLOCKS.contains(&name) => self.block(element, kind, kind),
            _ => self.walk(element, kind),
        }
    }

    /// Ends the text before `element` as a block of `outer`, then collects the element's own
    /// text as blocks of `inner`.
    fn block(&mut self, element: ElementRef<'_>, outer: BlockKind, inner: BlockKind) {
        self.flush(outer);
        self.walk(element, inner);
        self.flush(inner);
    }

    /// Emits the collected text, if any, as a block of `kind`.
    fn flush(&mut self, kind: BlockKind) {
        let text = std::mem::take(&mut self.buf);
        self.b.block(kind, &text, None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blocks(doc: &Document) -> Vec<(BlockKind, &str)> {
        doc.blocks.iter().map(|b| (b.kind, doc.block_text(b))).collect()
    }

    #[test]
    fn nested_tables_are_read_once() {
        let inner = "<table><tr><td>inner cell</td></tr></table>";
        let page = format!("<table><tr><td>outer</td><td>{inner}</td></tr></table>");
        let doc = load(page.as_bytes()).unwrap();
        assert_eq!(blocks(&doc), [(BlockKind::Table, "outer | inner cell")]);
        // 120 tables deep (under the nesting limit): the innermost text once, not once a level.
        let deep =
            format!("{}core{}", "<table><tr><td>".repeat(120), "</td></tr></table>".repeat(120));
        let doc = load(deep.as_bytes()).unwrap();
        assert_eq!(doc.text.matches("core").count(), 1, "{}", doc.text);
    }

    #[test]
    fn structure_and_noise() {
        let page = b"<html><head><title> Page &amp; title </title><script>var x;</script></head>\
            <body><nav>Menu</nav><div>Loose <b>text</b><p>In a p</p>after</div>\
            <h2>Part</h2><ul><li>one<ul><li>inner</li></ul></li><li hidden>gone</li></ul>\
            <blockquote><p>Quoted</p></blockquote><pre>  a\n    b</pre>\
            <dl><dt>Term</dt><dd>Definition</dd></dl><figure><figcaption>Caption</figcaption></figure>\
            <footer>Foot</footer><template><p>tpl</p></template></body></html>";
        let doc = load(page).expect("loads");
        assert_eq!(doc.title, "Page & title");
        assert_eq!(
            blocks(&doc),
            [
                (BlockKind::Paragraph, "Loose text"),
                (BlockKind::Paragraph, "In a p"),
                (BlockKind::Paragraph, "after"),
                (BlockKind::Heading, "Part"),
                (BlockKind::ListItem, "one"),
                (BlockKind::ListItem, "inner"),
                (BlockKind::Quote, "Quoted"),
                (BlockKind::Code, "  a\n    b"),
                (BlockKind::Paragraph, "Term"),
                (BlockKind::Paragraph, "Definition"),
                (BlockKind::Paragraph, "Caption"),
            ]
        );
        assert_eq!(doc.section_path(doc.blocks[7].section), ["Part"]);
    }

    #[test]
    fn prefers_articles_and_falls_back_to_h1_title() {
        let page = b"<body><p>Chrome</p><article><h1>First</h1><p>One</p></article>\
            <article><p>Two</p><article><p>Nested</p></article></article></body>";
        let doc = load(page).expect("loads");
        assert_eq!(doc.title, "First");
        assert_eq!(
            blocks(&doc),
            [
                (BlockKind::Heading, "First"),
                (BlockKind::Paragraph, "One"),
                (BlockKind::Paragraph, "Two"),
                (BlockKind::Paragraph, "Nested"),
            ]
        );
    }

    #[test]
    fn nesting_past_the_limit_is_refused_and_fragments_never_recurse() {
        let nested = |depth: usize| {
            format!("<body>{}deep text{}</body>", "<div>".repeat(depth), "</div>".repeat(depth))
        };
        let doc = load(nested(crate::limits::MAX_DEPTH - 10).as_bytes()).expect("within the limit");
        assert_eq!(blocks(&doc), [(BlockKind::Paragraph, "deep text")]);
        let deep = load(nested(crate::limits::MAX_DEPTH + 1).as_bytes());
        assert!(matches!(&deep, Err(crate::Error::Limit(m)) if m.contains("512")), "{deep:?}");
        let fragment = |depth| format!("{}<b>x</b> y{}", "<p>".repeat(depth), "</p>".repeat(depth));
        assert_eq!(fragment_text(&fragment(100_000)).expect("paragraphs close each other"), "x y");
        let spans = format!("{}x{}", "<span>".repeat(100_000), "</span>".repeat(100_000));
        assert!(matches!(fragment_text(&spans), Err(crate::Error::Limit(_))));
    }

    #[test]
    fn invalid_utf8_is_replaced_not_rejected() {
        let doc = load(b"<p>caf\xe9 ok</p>").expect("loads");
        assert_eq!(blocks(&doc), [(BlockKind::Paragraph, "caf\u{fffd} ok")]);
    }

    #[test]
    fn real_article_fixture() {
        let bytes = include_bytes!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/computational-complexity.html"
        ));
        let doc = crate::load::load("computational-complexity.html", bytes).expect("loads");
        assert_eq!(doc.title, "Computational complexity theory - Wikipedia");
        for noise in [
            "tracking",
            "navigation",
            "Site header",
            "Hidden",
            "noscript",
            "Sidebar",
            "Footer",
            "late script",
            "font-family",
        ] {
            assert!(!doc.text.contains(noise), "{noise:?} leaked into the text");
        }
        let find = |start: &str| doc.blocks.iter().find(|b| doc.block_text(b).starts_with(start));
        let loose = find("A computational problem can be viewed").expect("present");
        assert_eq!(loose.kind, BlockKind::Paragraph);
        assert_eq!(
            doc.section_path(loose.section),
            ["Computational complexity theory", "Computational problems", "Problem instances"]
        );
        let table = find("Class | Resource").expect("present");
        assert_eq!(table.kind, BlockKind::Table);
        assert_eq!(doc.block_text(table).lines().count(), 4);
        assert!(doc.block_text(table).contains("NP | nondeterministic time | polynomial"));
        let items: Vec<&str> = doc
            .blocks
            .iter()
            .filter(|b| b.kind == BlockKind::ListItem)
            .map(|b| doc.block_text(b))
            .collect();
        assert_eq!(
            items,
            [
                "Context of computational complexity",
                "Descriptive complexity theory",
                "Game complexity"
            ]
        );
        assert!(find("Some well-known classes & their").is_some());
    }
}
