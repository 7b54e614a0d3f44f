//! How deeply a page nests, estimated before it is parsed.
//!
//! The HTML tree builder checks element scopes by walking its stack of open elements, so a page
//! of elements that are opened and never closed (100,000 `<div>`s) costs time that grows with
//! the square of its size. This pass runs only html5ever's tokenizer, which is linear, and
//! follows the stack the tree builder would keep: end tags close up to their element, and the
//! elements the HTML standard closes implicitly (a `<p>` before a block, a `<li>` before the
//! next one, table rows and cells, headings) are closed likewise. A page whose stack would pass
//! [`MAX_DEPTH`] is refused before the tree builder sees it.

use std::cell::{Cell, RefCell};

use html5ever::LocalName;
use html5ever::tokenizer::states::RawKind;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};

use crate::limits::MAX_DEPTH;

/// Elements that have no content and never stay open.
const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "keygen", "link", "meta", "param",
    "source", "track", "wbr",
];

/// Elements before which an open `<p>` is closed.
const CLOSES_P: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "center",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hgroup",
    "hr",
    "listing",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "plaintext",
    "pre",
    "section",
    "summary",
    "table",
    "ul",
    "li",
    "dd",
    "dt",
    "xmp",
];

/// Elements that bound the search for an open element to close implicitly.
const SCOPE: &[&str] =
    &["applet", "button", "caption", "html", "marquee", "object", "table", "td", "template", "th"];

/// Whether the page's elements nest deeper than [`MAX_DEPTH`] levels.
pub(super) fn too_deep(html: &str) -> bool {
    let tokenizer = Tokenizer::new(Stack::default(), TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(html.into());
    _ = tokenizer.feed(&input);
    tokenizer.end();
    tokenizer.sink.deepest.get() > MAX_DEPTH
}

/// The open elements the tree builder would hold, as far as tags tell.
#[derive(Default)]
struct Stack {
    open: RefCell<Vec<LocalName>>,
    /// The most elements open at once, up to one past [`MAX_DEPTH`] (then tokens are ignored).
    deepest: Cell<usize>,
}

impl Stack {
    /// Closes the innermost open element named in `names`, and everything opened inside it,
    /// unless an element of `bounds` is open inside it.
    fn close_open(&self, names: &[&str], bounds: &[&str]) {
        let mut open = self.open.borrow_mut();
        for i in (0..open.len()).rev() {
            let name: &str = &open[i];
            if names.contains(&name) {
                open.truncate(i);
                return;
            }
            if bounds.contains(&name) {
                return;
            }
        }
    }

    fn start(&self, tag: &Tag) -> TokenSinkResult<()> {
        let name: &str = &tag.name;
        let foreign = self.open.borrow().iter().any(|e| matches!(&**e, "svg" | "math"));
        if matches!(name, "html" | "head" | "body") || VOID.contains(&name) {
            return TokenSinkResult::Continue;
        }
        // `<x/>` closes itself only inside SVG and MathML; in HTML it opens `x`.
        if tag.self_closing && foreign {
            return TokenSinkResult::Continue;
        }
        if CLOSES_P.contains(&name) {
            self.close_open(&["p"], SCOPE);
        }
        match name {
            "li" => self.close_open(&["li"], &["ul", "ol", "menu", "table"]),
            "dt" | "dd" => self.close_open(&["dt", "dd"], &["dl", "table"]),
            "option" | "optgroup" => self.close_open(&["option"], &["select", "table"]),
            "tr" => self.close_open(&["tr"], &["table", "tbody", "thead", "tfoot"]),
            "td" | "th" => self.close_open(&["td", "th"], &["tr", "table"]),
            "tbody" | "thead" | "tfoot" => {
                self.close_open(&["tbody", "thead", "tfoot"], &["table"]);
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                let heading =
                    self.open.borrow().last().is_some_and(|top| {
                        matches!(&**top, "h1" | "h2" | "h3" | "h4" | "h5" | "h6")
                    });
                if heading {
                    self.open.borrow_mut().pop();
                }
            }
            "a" | "nobr" => self.close_open(&[name], SCOPE),
            _ => {}
        }
        let depth = {
            let mut open = self.open.borrow_mut();
            open.push(tag.name.clone());
            open.len()
        };
        self.deepest.set(self.deepest.get().max(depth));
        match name {
            "script" => TokenSinkResult::RawData(RawKind::ScriptData),
            "style" | "xmp" | "iframe" | "noembed" | "noframes" | "noscript" => {
                TokenSinkResult::RawData(RawKind::Rawtext)
            }
            "title" | "textarea" => TokenSinkResult::RawData(RawKind::Rcdata),
            "plaintext" => TokenSinkResult::Plaintext,
            _ => TokenSinkResult::Continue,
        }
    }
}

impl TokenSink for Stack {
    type Handle = ();

    fn process_token(&self, token: Token, _line: u64) -> TokenSinkResult<()> {
        let Token::TagToken(tag) = token else { return TokenSinkResult::Continue };
        if self.deepest.get() > MAX_DEPTH {
            return TokenSinkResult::Continue;
        }
        match tag.kind {
            TagKind::StartTag => self.start(&tag),
            TagKind::EndTag => {
                let name: &str = &tag.name;
                self.close_open(&[name], &[]);
                TokenSinkResult::Continue
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(open: &str, close: &str, depth: usize) -> String {
        format!("<html><body>{}text{}</body></html>", open.repeat(depth), close.repeat(depth))
    }

    #[test]
    fn closed_and_implicitly_closed_elements_do_not_add_up() {
        assert!(!too_deep(&nested("<div>", "</div>", MAX_DEPTH - 1)));
        assert!(too_deep(&nested("<div>", "</div>", MAX_DEPTH + 1)));
        assert!(too_deep(&"<div>".repeat(100_000)));
        assert!(too_deep(&"<div/>".repeat(MAX_DEPTH + 1)), "`<div/>` opens a div in HTML");
        // Siblings, however many, are not nesting; nor are elements the standard closes.
        let flat =
            "<div><p>one<p>two<ul><li>a<li>b</ul><table><tr><td>1<td>2<tr><td>3</table></div>";
        assert!(!too_deep(&flat.repeat(10_000)));
        let svg = format!("<svg>{}</svg>", "<path/>".repeat(10_000));
        assert!(!too_deep(&svg));
        // Tags inside scripts, styles and comments are text.
        let script =
            format!("<script>{}</script><!--{}-->", "<div>".repeat(10_000), "<div>".repeat(10_000));
        assert!(!too_deep(&script));
    }
}
