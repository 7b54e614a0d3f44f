//! PDF text extraction, page by page, via pdf-extract (which parses with lopdf).
//!
//! Each page's text is split into paragraphs on blank lines; one block per paragraph, tagged
//! with its 1-based page number. Running headers and footers (lines that repeat, digits aside,
//! at the top or bottom of at least half of the pages of a document of three pages or more) and
//! bare page-number lines are dropped.
//!
//! pdf-extract may panic on malformed input. On native targets the panic is caught and reported
//! as [`Error::Pdf`] (the default panic hook still prints its message to stderr). On wasm32,
//! where edgerag builds with `panic = "abort"`, such a panic aborts the module.

use std::collections::{HashMap, HashSet};

use pdf_extract::{Document as PdfDocument, PlainTextOutput};

use super::{BlockKind, DocumentBuilder};
use crate::{Document, Error, Result};

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
        for paragraph in paragraphs(text, &running) {
            b.block(BlockKind::Paragraph, &paragraph, Some(page));
        }
    }
    let doc = b.finish();
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

/// Parses the PDF (lopdf decrypts documents with an empty user password) and extracts the
/// text of every page.
fn extract(bytes: &[u8]) -> Result<Extracted> {
    let doc = PdfDocument::load_mem(bytes).map_err(|e| Error::Pdf(e.to_string()))?;
    let mut pages = Vec::new();
    for number in doc.get_pages().into_keys() {
        let mut text = String::new();
        pdf_extract::output_doc_page(&doc, &mut PlainTextOutput::new(&mut text), number)
            .map_err(|e| Error::Pdf(format!("page {number}: {e}")))?;
        pages.push(text);
    }
    if pages.is_empty() {
        return Err(Error::Pdf("the document has no pages".to_owned()));
    }
    Ok(Extracted { title: info_title(&doc), pages })
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

/// A line with its digits replaced, so "Page 3" and "Page 4" compare equal.
fn line_shape(line: &str) -> String {
    let shape: String = line.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::load;

    const SPEC: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/shared-mime-info-spec.pdf"
    ));

    fn spec() -> Document {
        load("docs/shared-mime-info-spec.pdf", SPEC).expect("loads")
    }

    #[test]
    fn real_pdf_pages_and_title() {
        let doc = spec();
        assert_eq!(doc.pages, 17);
        // The /Info /Title is empty, so the file name is the title.
        assert_eq!(doc.title, "shared-mime-info-spec");
        assert!(doc.blocks.iter().all(|b| b.kind == BlockKind::Paragraph));
        let pages: Vec<u32> = doc.blocks.iter().filter_map(|b| b.page).collect();
        assert_eq!(pages.len(), doc.blocks.len());
        assert!(pages.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!((pages[0], pages[pages.len() - 1]), (1, 17));
    }

    #[test]
    fn paragraphs_are_reflowed_and_on_their_page() {
        let doc = spec();
        let find = |start: &str| {
            let found = doc.blocks.iter().find(|b| doc.block_text(b).starts_with(start));
            found.unwrap_or_else(|| panic!("no block starts with {start:?}"))
        };
        let intro = find("Many programs and desktops use the MIME system");
        assert_eq!(intro.page, Some(1));
        assert!(doc.block_text(intro).contains("examining the file’s name or contents"));
        assert_eq!(find("2.11. Subclassing").page, Some(14));
        assert_eq!(find("An implementation MAY also get a file’s MIME type").page, Some(14));
    }

    #[test]
    fn running_headers_and_page_numbers_are_dropped() {
        let doc = spec();
        let texts: Vec<&str> = doc.blocks.iter().map(|b| doc.block_text(b)).collect();
        // "Shared MIME-info Database" heads every page (the cover included).
        assert!(!texts.contains(&"Shared MIME-info Database"));
        assert!(texts.iter().any(|t| t.contains("version 0.21 of the Shared MIME-info Database")));
        assert!(!texts.iter().any(|t| t.chars().all(|c| c.is_ascii_digit())));
    }

    #[test]
    fn running_line_detection() {
        let bodies = ["Alpha", "Beta", "Gamma", "Delta"];
        let pages: Vec<String> = (1..=4)
            .zip(bodies)
            .map(|(n, body)| format!("Report 2024\n\n{body} text\nends {body}.\n\nPage {n} of 4\n"))
            .collect();
        let running = running_lines(&pages);
        assert!(running.contains(&line_shape("Report 2024")));
        assert!(running.contains(&line_shape("Page 3 of 4")));
        assert_eq!(paragraphs(&pages[1], &running), ["Beta text\nends Beta.\n"]);
        assert!(running_lines(&pages[..2]).is_empty());
        let middle = "Report 2024\n\nIntro.\nReport 2024\n42\nmore.\n\nPage 2 of 4\n";
        assert_eq!(paragraphs(middle, &running), ["Intro.\nReport 2024\n42\nmore.\n"]);
        for line in ["12", "- 12 -", "Page 3", "3 of 10", "xii"] {
            assert!(is_page_number(line), "{line}");
        }
        for line in ["12 apples", "Page", "Chapter 3", "mix"] {
            assert!(!is_page_number(line), "{line}");
        }
    }

    #[test]
    fn broken_inputs_are_pdf_errors() {
        let not_pdf = load("a.pdf", b"<html>not a pdf</html>");
        assert!(matches!(not_pdf, Err(Error::Pdf(m)) if m.contains("%PDF-")));
        let truncated = load("a.pdf", &SPEC[..SPEC.len() / 3]);
        assert!(matches!(truncated, Err(Error::Pdf(_))), "{truncated:?}");
        let header_only = load("a.pdf", b"  %PDF-1.7\n%%EOF\n");
        assert!(matches!(header_only, Err(Error::Pdf(_))), "{header_only:?}");
    }
}
