//! Parsing HTML with bounded work.
//!
//! Two costs of html5ever grow faster than its input, and both are cut off here:
//!
//! - Its tree builder checks element scopes by walking the stack of open elements, so a page
//!   that opens elements and never closes them (100,000 `<div>`s, or tag soup the standard
//!   nests: `<span><div></span>`, `<li><section>`, …) costs time that grows with the square of
//!   its depth. The parser is fed a piece at a time and told, through its tree sink, the depth
//!   of every element it inserts; once one lies deeper than [`MAX_DEPTH`], parsing stops at
//!   the end of that piece and the page is refused. The depth is the real tree's, not a
//!   prediction of it, so no tag soup can pass for shallow.
//! - Its tokenizer compares each new attribute of a tag with the tag's earlier ones. A tag
//!   with more than [`MAX_ATTRIBUTES`](limits::MAX_HTML_ATTRIBUTES) attributes is refused before parsing, by a linear scan
//!   that follows the tokenizer's reading of tags and quoted values.

use std::borrow::Cow;
use std::cell::{Cell, Ref};

use ego_tree::NodeId;
use ego_tree::iter::Edge;
use html5ever::driver::{self, ParseOpts};
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName, local_name, ns};
use scraper::{Html, HtmlTreeSink};

use crate::limits::{self, MAX_DEPTH, MAX_HTML_ATTRIBUTES as MAX_ATTRIBUTES};
use crate::{Error, Result};

/// Bytes handed to the parser at a time: once the tree is too deep, at most this much more is
/// parsed (a piece of `<div>`s deepens the stack by a few thousand, whose scope walks cost
/// milliseconds).
const PIECE: usize = 16 << 10;

/// A whole page.
pub(super) fn document(text: &str) -> Result<Html> {
    parse(text, false)
}

/// A fragment, as the content of a `<body>` (an HTML block inside Markdown).
pub(super) fn fragment(text: &str) -> Result<Html> {
    parse(text, true)
}

fn parse(text: &str, fragment: bool) -> Result<Html> {
    if let Some(count) = most_attributes(text.as_bytes()) {
        return Err(Error::Limit(format!(
            "an HTML tag has more than {MAX_ATTRIBUTES} attributes ({count} at least)"
        )));
    }
    tree(text, fragment).map_err(|_| limits::too_deep("HTML elements"))
}

/// The tree of `text`, or, if it nests deeper than [`MAX_DEPTH`], how many bytes were parsed
/// before that was noticed.
fn tree(text: &str, fragment: bool) -> std::result::Result<Html, usize> {
    let deep = Cell::new(false);
    let sink = DepthSink {
        inner: HtmlTreeSink::new(if fragment {
            Html::new_fragment()
        } else {
            Html::new_document()
        }),
        deep: &deep,
    };
    let mut parser = if fragment {
        let body = QualName::new(None, ns!(html), local_name!("body"));
        driver::parse_fragment(sink, ParseOpts::default(), body, Vec::new(), false)
    } else {
        driver::parse_document(sink, ParseOpts::default())
    };
    let mut parsed = 0;
    while parsed < text.len() {
        let mut end = text.len().min(parsed + PIECE);
        while !text.is_char_boundary(end) {
            end += 1;
        }
        parser.process(StrTendril::from_slice(&text[parsed..end]));
        parsed = end;
        if deep.get() {
            return Err(parsed);
        }
    }
    let html = parser.finish();
    // Children moved under a new parent were measured one by one, their descendants not: the
    // whole tree, once.
    if deep.get() || depth_past_limit(&html) {
        return Err(parsed);
    }
    Ok(html)
}

/// Whether some node of the tree lies deeper than [`MAX_DEPTH`].
fn depth_past_limit(html: &Html) -> bool {
    let mut depth = 0usize;
    for edge in html.tree.root().traverse() {
        match edge {
            Edge::Open(_) if depth > MAX_DEPTH => return true,
            Edge::Open(_) => depth += 1,
            Edge::Close(_) => depth = depth.saturating_sub(1),
        }
    }
    false
}

/// scraper's tree sink, noting when an element is inserted deeper than [`MAX_DEPTH`].
struct DepthSink<'a> {
    inner: HtmlTreeSink,
    deep: &'a Cell<bool>,
}

impl DepthSink<'_> {
    /// Notes the depth of node `id` (its ancestors, counted up to one past the limit).
    fn measure(&self, id: NodeId) {
        let html = self.inner.0.borrow();
        let depth =
            html.tree.get(id).map_or(0, |node| node.ancestors().take(MAX_DEPTH + 1).count());
        if depth > MAX_DEPTH {
            self.deep.set(true);
        }
    }

    /// The node a child refers to, if it is one (text nodes never nest).
    fn node(child: &NodeOrText<NodeId>) -> Option<NodeId> {
        match child {
            NodeOrText::AppendNode(id) => Some(*id),
            NodeOrText::AppendText(_) => None,
        }
    }
}

impl TreeSink for DepthSink<'_> {
    type Handle = NodeId;
    type Output = Html;
    type ElemName<'b>
        = Ref<'b, QualName>
    where
        Self: 'b;

    fn finish(self) -> Html {
        self.inner.finish()
    }

    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg);
    }

    fn get_document(&self) -> NodeId {
        self.inner.get_document()
    }

    fn elem_name<'b>(&'b self, target: &'b NodeId) -> Ref<'b, QualName> {
        self.inner.elem_name(target)
    }

    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        self.inner.create_element(name, attrs, flags)
    }

    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.inner.create_comment(text)
    }

    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.inner.create_pi(target, data)
    }

    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        let node = Self::node(&child);
        self.inner.append(parent, child);
        node.into_iter().for_each(|id| self.measure(id));
    }

    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        let node = Self::node(&child);
        self.inner.append_based_on_parent_node(element, prev_element, child);
        node.into_iter().for_each(|id| self.measure(id));
    }

    fn append_doctype_to_document(&self, name: StrTendril, public: StrTendril, system: StrTendril) {
        self.inner.append_doctype_to_document(name, public, system);
    }

    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.inner.get_template_contents(target)
    }

    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.inner.same_node(x, y)
    }

    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode);
    }

    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        let node = Self::node(&new_node);
        self.inner.append_before_sibling(sibling, new_node);
        node.into_iter().for_each(|id| self.measure(id));
    }

    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs);
    }

    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target);
    }

    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        self.inner.reparent_children(node, new_parent);
        // The children share a depth: measure one.
        let first = {
            let html = self.inner.0.borrow();
            html.tree.get(*new_parent).and_then(|p| p.first_child()).map(|c| c.id())
        };
        first.into_iter().for_each(|id| self.measure(id));
    }
}

/// The attribute count of the first tag found with more than [`MAX_ATTRIBUTES`], if any.
///
/// Tags are read as html5ever's tokenizer reads them: `<` and a letter open a tag (`</` and a
/// letter an end tag), names and unquoted values end at whitespace, `/` or `>`, quoted values
/// at their quote, and `>` outside quotes ends the tag. Comments, scripts and other raw text
/// are not told apart from markup, so text there that looks like a tag counts as one: it can
/// only make the count higher, never hide a tag.
fn most_attributes(bytes: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(at) = memchr(b'<', &bytes[i..]) {
        i += at + 1;
        if bytes.get(i) == Some(&b'/') {
            i += 1;
        }
        if !bytes.get(i).is_some_and(u8::is_ascii_alphabetic) {
            continue;
        }
        // The tag name.
        while bytes.get(i).is_some_and(|b| !is_tag_end(*b)) {
            i += 1;
        }
        let mut count = 0usize;
        loop {
            // Before an attribute name.
            while bytes.get(i).is_some_and(|b| b.is_ascii_whitespace() || *b == b'/') {
                i += 1;
            }
            match bytes.get(i) {
                None => return None,
                Some(b'>') => break,
                Some(_) => {}
            }
            count += 1;
            if count > MAX_ATTRIBUTES {
                return Some(count);
            }
            // The name (its first character may be `=`, as the tokenizer reads it).
            i += 1;
            while bytes.get(i).is_some_and(|b| !is_tag_end(*b) && *b != b'=') {
                i += 1;
            }
            while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            if bytes.get(i) != Some(&b'=') {
                continue;
            }
            i += 1;
            while bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
                i += 1;
            }
            match bytes.get(i) {
                Some(&quote @ (b'"' | b'\'')) => {
                    i += 1;
                    i += memchr(quote, &bytes[i..])? + 1;
                }
                _ => {
                    while bytes.get(i).is_some_and(|b| !b.is_ascii_whitespace() && *b != b'>') {
                        i += 1;
                    }
                }
            }
        }
    }
    None
}

/// Whether `byte` ends a tag or attribute name.
fn is_tag_end(byte: u8) -> bool {
    byte.is_ascii_whitespace() || byte == b'/' || byte == b'>'
}

/// The offset of the first `needle` in `haystack`.
fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|&b| b == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(html: &Html) -> usize {
        html.tree.root().descendants().map(|n| n.ancestors().count()).max().unwrap_or(0)
    }

    #[test]
    fn closed_and_implicitly_closed_elements_do_not_add_up() {
        let nested = |open: &str, close: &str, n: usize| {
            format!("<html><body>{}text{}</body></html>", open.repeat(n), close.repeat(n))
        };
        assert!(document(&nested("<div>", "</div>", MAX_DEPTH - 10)).is_ok());
        assert!(document(&nested("<div>", "</div>", MAX_DEPTH + 1)).is_err());
        assert!(document(&"<div/>".repeat(MAX_DEPTH + 1)).is_err(), "`<div/>` opens a div");
        // Siblings, however many, are not nesting; nor are elements the standard closes.
        let flat =
            "<div><p>one<p>two<ul><li>a<li>b</ul><table><tr><td>1<td>2<tr><td>3</table></div>";
        assert!(depth(&document(&flat.repeat(5_000)).expect("flat")) < 20);
        let svg = format!("<svg>{}</svg>", "<path/>".repeat(10_000));
        assert!(document(&svg).is_ok());
        // Tags inside scripts, styles and comments are text.
        let script =
            format!("<script>{}</script><!--{}-->", "<div>".repeat(10_000), "<div>".repeat(10_000));
        assert!(document(&script).is_ok());
    }

    /// Tag soup that the standard nests, however it looks, is refused within a piece of
    /// passing the limit: the depth is the real tree's. (The estimate from tags alone that came
    /// before let each of these through to the whole quadratic parse.)
    #[test]
    fn tag_soup_that_nests_is_refused_within_a_piece() {
        let soups =
            ["<span><div></span>", "<li><section>", "<dd><article>", "<b><div>", "<td><div>"];
        let foreign = ["<svg><style>", "<svg><title>", "<math><mi>", "<svg><foreignObject>"];
        let pages =
            soups.iter().map(|soup| soup.repeat(50_000)).chain(foreign.iter().flat_map(|prefix| {
                [
                    format!("{prefix}{}", "<div>".repeat(50_000)),
                    format!("{prefix}{}", "<div/>".repeat(50_000)),
                ]
            }));
        for page in pages {
            for fragment in [false, true] {
                let parsed = tree(&page, fragment).map(|_| ()).unwrap_err();
                assert!(parsed <= PIECE, "{parsed} bytes of {}", &page[..30]);
            }
            assert!(matches!(document(&page), Err(Error::Limit(_))));
        }
    }

    #[test]
    fn tags_with_too_many_attributes_are_refused() {
        let tag = |n: usize, attribute: &dyn Fn(usize) -> String| {
            format!("<p {}>text</p>", (0..n).map(attribute).collect::<Vec<_>>().join(" "))
        };
        let plain = |i: usize| format!("a{i}");
        assert!(document(&tag(MAX_ATTRIBUTES, &plain)).is_ok());
        assert!(matches!(document(&tag(MAX_ATTRIBUTES + 1, &plain)), Err(Error::Limit(_))));
        // Quoted values may hold `>` and spaces; attributes need no space after a quote.
        let quoted = |i: usize| format!("a{i}=\"> x y\"b{i}='>'");
        let page = tag(MAX_ATTRIBUTES / 2 + 1, &quoted);
        assert!(matches!(fragment(&page), Err(Error::Limit(_))));
        // A long value is one attribute (inline images are data URIs).
        let image = format!("<img src=\"data:image/png;base64,{}\">", "QUJD ".repeat(100_000));
        assert!(document(&image).is_ok());
    }
}
