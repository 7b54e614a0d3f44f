//! Tests of the PDF loader on a real file and on hostile files generated here.

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

/// A minimal PDF writer for generated test files: objects are numbered from 1 in the order
/// they are added; `finish` writes the cross-reference table and trailer.
#[derive(Default)]
struct Pdf {
    objects: Vec<Vec<u8>>,
}

impl Pdf {
    /// Adds an object, returns its number.
    fn obj(&mut self, body: impl AsRef<[u8]>) -> usize {
        self.objects.push(body.as_ref().to_vec());
        self.objects.len()
    }

    /// Adds a stream object with `dict` entries (without `Length`).
    fn stream(&mut self, dict: &str, data: &[u8]) -> usize {
        let mut body = format!("<< /Length {} {dict} >>\nstream\n", data.len()).into_bytes();
        body.extend_from_slice(data);
        body.extend_from_slice(b"\nendstream");
        self.obj(body)
    }

    /// Replaces the body of object `n` (to close cycles).
    fn set(&mut self, n: usize, body: impl AsRef<[u8]>) {
        self.objects[n - 1] = body.as_ref().to_vec();
    }

    fn finish(&self, root: usize) -> Vec<u8> {
        let mut out = b"%PDF-1.7\n".to_vec();
        let mut offsets = Vec::new();
        for (i, body) in self.objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
            out.extend_from_slice(body);
            out.extend_from_slice(b"\nendobj\n");
        }
        let xref = out.len();
        out.extend_from_slice(
            format!("xref\n0 {}\n0000000000 65535 f \n", offsets.len() + 1).as_bytes(),
        );
        for o in offsets {
            out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
        }
        let trailer = format!(
            "trailer\n<< /Size {} /Root {root} 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            self.objects.len() + 1
        );
        out.extend_from_slice(trailer.as_bytes());
        out
    }
}

/// A document of one page per content stream, with `resources` added to the page's
/// resources, and the Helvetica font as `/F1` unless they name fonts.
fn pages_pdf(pdf: &mut Pdf, contents: &[&[u8]], resources: &str) -> Vec<u8> {
    let font = pdf.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let fonts = if resources.contains("/Font") {
        String::new()
    } else {
        format!("/Font << /F1 {font} 0 R >>")
    };
    let tree = pdf.obj("");
    let mut kids = String::new();
    for content in contents {
        let c = pdf.stream("", content);
        let page = pdf.obj(format!(
            "<< /Type /Page /Parent {tree} 0 R /Contents {c} 0 R /Resources << {fonts} {resources} >> >>"
        ));
        kids.push_str(&format!("{page} 0 R "));
    }
    pdf.set(
        tree,
        format!(
            "<< /Type /Pages /Kids [{kids}] /Count {} /MediaBox [0 0 612 792] >>",
            contents.len()
        ),
    );
    let catalog = pdf.obj(format!("<< /Type /Catalog /Pages {tree} 0 R >>"));
    pdf.finish(catalog)
}

fn zlib(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    e.write_all(data).expect("in memory");
    e.finish().expect("in memory")
}

/// The text of every page, extracted without the native panic guard (so a panic fails the
/// test, as it would abort the wasm module).
fn pages_of(bytes: &[u8]) -> Result<Vec<String>> {
    extract(bytes).map(|e| e.pages)
}

fn text_of(bytes: &[u8]) -> Result<String> {
    pages_of(bytes).map(|p| p.join("\u{c}"))
}

#[test]
fn generated_pdf_reads_page_by_page() {
    let bytes = pages_pdf(
        &mut Pdf::default(),
        &[
            b"BT /F1 12 Tf 72 720 Td (First page) Tj ET",
            b"BT /F1 12 Tf 72 720 Td (Second) Tj ( page) Tj ET",
        ],
        "",
    );
    assert_eq!(pages_of(&bytes).expect("reads"), ["First page", "Second page"]);
}

/// Issue 21, defect 1: a page that is its own `/Parent` (pdf-extract looked up inherited
/// attributes through `/Parent` without end), a page tree listing itself, and a form that
/// draws itself overflowed the stack. (The page's `/Parent` is never followed now: it reads.)
#[test]
fn cycles_in_the_page_tree_and_forms_end() {
    let mut pdf = Pdf::default();
    let content = pdf.stream("", b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET");
    let font = pdf.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let page = pdf.obj("");
    let tree = pdf.obj("");
    pdf.set(page, format!("<< /Type /Page /Parent {page} 0 R /Contents {content} 0 R >>"));
    let tree_body = |page: usize| {
        format!(
            "<< /Type /Pages /Kids [{page} 0 R {tree} 0 R] /Count 1 /Resources << /Font << /F1 {font} 0 R >> >> >>"
        )
    };
    pdf.set(tree, tree_body(page));
    let catalog = pdf.obj(format!("<< /Type /Catalog /Pages {tree} 0 R >>"));
    assert_eq!(text_of(&pdf.finish(catalog)).expect("reads"), "Hello");
    // With its /Parent right, the tree listing itself among its kids reads (once).
    pdf.set(page, format!("<< /Type /Page /Parent {tree} 0 R /Contents {content} 0 R >>"));
    assert_eq!(text_of(&pdf.finish(catalog)).expect("reads"), "Hello");

    let mut pdf = Pdf::default();
    let form = pdf.obj("");
    let body = "/Fm1 Do BT /F1 12 Tf (in the form) Tj ET";
    pdf.set(
        form,
        format!(
            "<< /Length {} /Type /XObject /Subtype /Form /BBox [0 0 9 9] /Resources << /XObject << /Fm1 {form} 0 R >> >> >>\nstream\n{body}\nendstream",
            body.len()
        ),
    );
    let bytes = pages_pdf(
        &mut pdf,
        &[b"BT /F1 12 Tf 72 720 Td (Page) Tj ET /Fm1 Do"],
        &format!("/XObject << /Fm1 {form} 0 R >>"),
    );
    // The form has no font of its own, so its text is dropped (pdf-extract panicked on it).
    assert_eq!(text_of(&bytes).expect("reads"), "Page");
}

/// Issue 21, defect 1: forms nested past the limit, page trees past `MAX_DEPTH`, arrays
/// nested a million deep (in the file and in a content stream) and chains of `/Length`
/// references are refused, each with a one-line limit error.
#[test]
fn deep_structures_are_limit_errors() {
    let depth_error = |bytes: &[u8]| match extract(bytes) {
        Err(Error::Limit(m)) => m,
        other => panic!("{:?}", other.map(|e| e.pages)),
    };
    let mut pdf = Pdf::default();
    let mut inner = pdf.stream("/Type /XObject /Subtype /Form", b"BT ET");
    for _ in 0..limits::MAX_PDF_FORM_DEPTH {
        inner = pdf.stream(
            &format!(
                "/Type /XObject /Subtype /Form /Resources << /XObject << /X {inner} 0 R >> >>"
            ),
            b"/X Do",
        );
    }
    let bytes = pages_pdf(&mut pdf, &[b"/X Do"], &format!("/XObject << /X {inner} 0 R >>"));
    assert!(depth_error(&bytes).contains("forms drawn inside forms more than 32 levels"));

    let mut pdf = Pdf::default();
    let content = pdf.stream("", b"BT /F1 12 Tf (deep) Tj ET");
    let mut node = pdf.obj(format!("<< /Type /Page /Contents {content} 0 R >>"));
    for _ in 0..=limits::MAX_DEPTH {
        node = pdf.obj(format!("<< /Type /Pages /Kids [{node} 0 R] /Count 1 >>"));
    }
    let catalog = pdf.obj(format!("<< /Type /Catalog /Pages {node} 0 R >>"));
    assert!(depth_error(&pdf.finish(catalog)).contains("page tree"));

    let deep = "[".repeat(1 << 20) + &"]".repeat(1 << 20);
    let mut pdf = Pdf::default();
    pdf.obj(format!("<< /Deep {deep} >>"));
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], "");
    assert!(depth_error(&bytes).contains("nested deeper than 512"));
    let content = format!("BT /F1 12 Tf {deep} TJ ET");
    let bytes = pages_pdf(&mut Pdf::default(), &[content.as_bytes()], "");
    assert!(depth_error(&bytes).contains("nested deeper than 512"));

    let mut pdf = Pdf::default();
    let mut length = pdf.obj("5");
    for _ in 0..2000 {
        length = pdf.obj(format!("<< /Length {length} 0 R >>\nstream\nxxxxx\nendstream"));
    }
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], "");
    assert!(depth_error(&bytes).contains("stream lengths refer to stream lengths"));
}

/// Issue 21, defect 2: a page content stream inflating far past the file's budget is
/// refused (it took RSS past 4 GB); images are never inflated, however large.
#[test]
fn decompression_bombs_are_refused_and_images_skipped() {
    let bomb = zlib(&vec![b' '; 32 << 20]);
    let mut pdf = Pdf::default();
    let image = pdf.stream(
        "/Type /XObject /Subtype /Image /Width 8192 /Height 4096 /ColorSpace /DeviceGray /BitsPerComponent 8 /Filter /FlateDecode",
        &bomb,
    );
    let bytes = pages_pdf(
        &mut pdf,
        &[b"BT /F1 12 Tf 72 720 Td (Text beside an image) Tj ET q 100 0 0 100 0 0 cm /Im1 Do Q"],
        &format!("/XObject << /Im1 {image} 0 R >>"),
    );
    assert_eq!(text_of(&bytes).expect("reads"), "Text beside an image");

    let mut pdf = Pdf::default();
    let font = pdf.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let contents = pdf.stream("/Filter /FlateDecode", &bomb);
    let text = pdf.stream("", b"BT /F1 12 Tf (bomb) Tj ET");
    let tree = pdf.obj("");
    let page = pdf.obj(format!(
        "<< /Type /Page /Parent {tree} 0 R /Contents [{text} 0 R {contents} 0 R] /Resources << /Font << /F1 {font} 0 R >> >> >>"
    ));
    pdf.set(tree, format!("<< /Type /Pages /Kids [{page} 0 R] /Count 1 >>"));
    let catalog = pdf.obj(format!("<< /Type /Catalog /Pages {tree} 0 R >>"));
    let bytes = pdf.finish(catalog);
    let err = text_of(&bytes).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("inflate past")), "{err}");
    // Through the public entry point too: one line, naming the limit.
    let err = load("bomb.pdf", &bytes).expect_err("refused").to_string();
    assert!(!err.contains('\n') && err.contains("times the file's size"), "{err}");

    // An object stream, which lopdf itself would inflate while parsing.
    let mut pdf = Pdf::default();
    pdf.stream("/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", &bomb);
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], "");
    assert!(matches!(text_of(&bytes), Err(Error::Limit(m)) if m.contains("inflate past")));
}

/// Issue 21, defect 3: all pages come from one pass over the document (pdf-extract looked
/// the page tree up again for every page), in order, each with its own text.
#[test]
fn many_pages_in_one_pass() {
    let contents: Vec<Vec<u8>> = (1..=600)
        .map(|n| format!("BT /F1 12 Tf 72 720 Td (Page {n} text.) Tj ET").into_bytes())
        .collect();
    let refs: Vec<&[u8]> = contents.iter().map(Vec::as_slice).collect();
    let pages = pages_of(&pages_pdf(&mut Pdf::default(), &refs, "")).expect("reads");
    assert_eq!(pages.len(), 600);
    assert!(pages.iter().zip(1..).all(|(text, n)| *text == format!("Page {n} text.")));
}

/// Issue 21, defect 4: content and fonts that pdf-extract unwraps, indexes or asserts on are
/// checked first, so none of these panics (they run without the panic guard).
#[test]
fn malformed_content_and_fonts_do_not_panic() {
    let contents: &[&[u8]] = &[
        b"BT (before any font) Tj /F1 12 Tf 72 720 Td (ok1) Tj ET",
        b"1 2 3 4 5 cm Tj TJ Tf Td Tm cm BT /F1 12 Tf (ok2) Tj ET",
        b"BT /Nofont 12 Tf (hidden) Tj /F1 Tf (hidden) Tj /F1 12 Tf [(ok) -300 (3) /x [1]] TJ ET",
        b"0 0 m 1 1 2 2 v h /Cs1 cs 1 sc /Gs1 gs /Pattern CS /P1 SCN BT /F1 12 Tf (ok4) Tj ET",
        b"/Im0 Do /Nothing Do BI /W 1 /H 1 /CS /G /BPC 8 ID \xffEI EI BT /F1 9 Tf (ok5) ' ET",
        b"BT /F2 12 Tf (ok6) Tj /F3 12 Tf (ok7) Tj /F4 12 Tf (no8) Tj /F5 12 Tf <0041> Tj ET",
        b"BT /F6 12 Tf (A) Tj /F7 12 Tf (B) Tj /F8 12 Tf (C\\001\\002) Tj /F9 12 Tf (D) Tj ET",
    ];
    let mut pdf = Pdf::default();
    let garbage =
        pdf.stream("", b"begincmap [[[ << /a ( ) >> 2 beginbfchar <01> endbfchar <0102> <FF>");
    let image = pdf.stream("/Type /XObject /Subtype /Image /Filter /DCTDecode", b"\xff\xd8\xff");
    let to_unicode = pdf.stream("", b"1 beginbfchar <01> <0041> endbfchar");
    let fonts = [
        // Type 3 without widths or encoding.
        "<< /Type /Font /Subtype /Type3 /FirstChar 400 /Widths [1 (x)] >>".to_owned(),
        // A simple font whose encoding pdf-extract does not know, Differences past 255,
        // widths that disagree with LastChar, and a broken ToUnicode.
        format!(
            "<< /Type /Font /Subtype /Type1 /BaseFont /Times-Roman /Encoding << /BaseEncoding /StandardEncoding /Differences [250 /a /b /c /d /e /f /g 7 (x) /bullet] >> /FirstChar 32 /LastChar 33 /Widths [1 2 3 /x] /ToUnicode {garbage} 0 R >>"
        ),
        // A composite font without its descendant.
        "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H >>".to_owned(),
        // A composite font with a broken W, an unknown predefined CMap and ToUnicode name.
        "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /UniJIS-UCS2-H /ToUnicode /Foo /DescendantFonts [<< /Subtype /CIDFontType2 /W [1 [2 (x)] 5 4 7 /y] >>] >>".to_owned(),
        // Missing names, a name with a UTF-16 mark, and FontAwesome.
        "<< /Type /Font >>".to_owned(),
        "<< /Type /Font /Subtype /Type1 /BaseFont /#FE#FF#00 /Encoding /MacExpertEncoding >>".to_owned(),
        format!("<< /Type /Font /Subtype /Type1 /BaseFont /FontAwesome /Encoding << /Differences [1 /nosuchglyph /emptyslot 67 /C] >> /ToUnicode {to_unicode} 0 R >>"),
        "<< /Type /Font /Subtype /Type1 /BaseFont /ZapfDingbats >>".to_owned(),
    ];
    let font_ids: Vec<usize> = fonts.iter().map(|f| pdf.obj(f)).collect();
    let font_entries: String =
        font_ids.iter().enumerate().map(|(i, id)| format!("/F{} {id} 0 R ", i + 2)).collect();
    let resources = format!(
        "/Font << {font_entries} >> /XObject << /Im0 {image} 0 R >> /ExtGState << /Gs1 << /SMask /Bad >> >>"
    );
    let helvetica = pdf.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let resources = resources.replace("/Font << ", &format!("/Font << /F1 {helvetica} 0 R "));
    let bytes = pages_pdf(&mut pdf, contents, &resources);
    let text = text_of(&bytes).expect("reads");
    // The TJ kerning reads as a space; the composite fonts show nothing (one is unusable,
    // the other has no usable ToUnicode map).
    let pages: Vec<&str> = text.split('\u{c}').collect();
    assert_eq!(pages[..6], ["ok1", "ok2", "ok 3", "ok4", "ok5", "ok6ok7"], "{text:?}");
    assert!(pages[6].starts_with('A') && pages[6].contains('C'), "{text:?}");
}

/// The core fonts with each named encoding, and with none, go through pdf-extract's width
/// and encoding tables without panicking.
#[test]
fn core_fonts_and_named_encodings() {
    for base in ["Helvetica", "Times-Roman", "Courier", "Symbol", "ZapfDingbats"] {
        for encoding in [
            "",
            "/Encoding /WinAnsiEncoding",
            "/Encoding /MacRomanEncoding",
            "/Encoding /MacExpertEncoding",
        ] {
            let mut pdf = Pdf::default();
            let font =
                pdf.obj(format!("<< /Type /Font /Subtype /Type1 /BaseFont /{base} {encoding} >>"));
            let bytes = pages_pdf(
                &mut pdf,
                &[b"BT /F2 12 Tf (Text \x80\xa5\xff) Tj ET"],
                &format!("/Font << /F2 {font} 0 R >>"),
            );
            assert!(text_of(&bytes).is_ok(), "{base} {encoding}");
        }
    }
}

/// Forms drawing forms twice, 30 levels deep, would make pdf-extract interpret the innermost
/// one 2^30 times: the work is counted before it starts, and refused.
#[test]
fn repeated_drawing_is_bounded_by_the_work_budget() {
    let mut pdf = Pdf::default();
    let mut form = pdf.stream("/Type /XObject /Subtype /Form", b"BT /F1 12 Tf (leaf) Tj ET");
    for _ in 0..30 {
        form = pdf.stream(
            &format!("/Type /XObject /Subtype /Form /Resources << /XObject << /X {form} 0 R >> >>"),
            b"/X Do /X Do",
        );
    }
    let bytes = pages_pdf(&mut pdf, &[b"/X Do"], &format!("/XObject << /X {form} 0 R >>"));
    let err = text_of(&bytes).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("would interpret more than")), "{err}");
}

/// Thousands of pages sharing one large content stream: it is rewritten once, but
/// pdf-extract would interpret it on every page, so the work is counted per page.
#[test]
fn shared_content_is_counted_on_every_page() {
    let content =
        "BT /F1 12 Tf 72 720 Td ".to_owned() + &"(shared words) Tj ".repeat(10_000) + "ET";
    let mut pdf = Pdf::default();
    let font = pdf.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let stream = pdf.stream("", content.as_bytes());
    let tree = pdf.obj("");
    let page = pdf.obj(format!(
        "<< /Type /Page /Parent {tree} 0 R /Contents {stream} 0 R /Resources << /Font << /F1 {font} 0 R >> >> >>"
    ));
    let kids = format!("{page} 0 R ").repeat(3000);
    pdf.set(tree, format!("<< /Type /Pages /Kids [{kids}] /Count 3000 >>"));
    let catalog = pdf.obj(format!("<< /Type /Catalog /Pages {tree} 0 R >>"));
    let err = text_of(&pdf.finish(catalog)).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("would interpret more than")), "{err}");
}

/// Text stops at `MAX_TEXT_BYTES`: the output device refuses more and says so.
#[test]
fn text_output_stops_at_the_limit() {
    use pdf_extract::{OutputDev, Transform};
    let mut text = output::PageText::default();
    let chunk = "x".repeat(1 << 20);
    let at = Transform::identity();
    let mut result = Ok(());
    for _ in 0..=(limits::MAX_TEXT_BYTES >> 20) {
        result = text.output_character(&at, 0.5, 0.0, 12.0, &chunk);
        if result.is_err() {
            break;
        }
    }
    assert!(result.is_err() && text.is_full());
}

/// A document of one page whose dictionary has `page` entries besides `/Type` and `/Parent`,
/// with Helvetica as `/F1`.
fn one_page_pdf(pdf: &mut Pdf, page: &str) -> Vec<u8> {
    let font = pdf.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let tree = pdf.obj("");
    let page = pdf.obj(format!(
        "<< /Type /Page /Parent {tree} 0 R /Resources << /Font << /F1 {font} 0 R >> >> {page} >>"
    ));
    pdf.set(tree, format!("<< /Type /Pages /Kids [{page} 0 R] /Count 1 >>"));
    let catalog = pdf.obj(format!("<< /Type /Catalog /Pages {tree} 0 R >>"));
    pdf.finish(catalog)
}

/// The font object `font` (its other objects already in `pdf`), as [`fonts::sanitize`]
/// rebuilds it.
fn sanitized_font(pdf: &mut Pdf, font: &str) -> fonts::Font {
    let id = pdf.obj(font);
    let catalog = pdf.obj("<< /Type /Catalog >>");
    let doc = PdfDocument::load_mem(&pdf.finish(catalog)).expect("parses");
    let font = pdf_extract::Object::Reference((u32::try_from(id).expect("small"), 0));
    let mut budget = decode::Budget::for_source(0);
    fonts::sanitize(&doc, &font, &mut budget).expect("within the budget").expect("a font")
}

/// The text of the stream the sanitized font refers to by `key`.
fn font_stream(font: &fonts::Font, key: &[u8]) -> String {
    let (_, stream) = font.streams.iter().find(|(k, _)| *k == key).expect("the stream");
    String::from_utf8(stream.content.clone()).expect("ascii")
}

/// A stream without filters is copied, and counted against the inflate budget like inflated
/// bytes: `/Contents` naming one large stream hundreds of times is refused instead of being
/// copied again and again.
#[test]
fn unfiltered_streams_count_against_the_inflate_budget() {
    for filter in ["", "/Filter /Crypt"] {
        let mut pdf = Pdf::default();
        let big = pdf.stream(filter, &vec![b' '; 128 << 10]);
        let text = pdf.stream("", b"BT /F1 12 Tf (x) Tj ET");
        let refs = format!("{big} 0 R ").repeat(300);
        let bytes = one_page_pdf(&mut pdf, &format!("/Contents [{text} 0 R {refs}]"));
        let err = text_of(&bytes).expect_err("refused");
        assert!(matches!(&err, Error::Limit(m) if m.contains("inflate past")), "{filter}: {err}");
    }
}

/// `Kids` arrays shared by direct tree nodes are walked once: 40 levels of two nodes sharing
/// the level below (2^40 pages, read naively) and a `Kids` array that lists itself through
/// direct nodes give their one page once.
#[test]
fn shared_kids_arrays_do_not_multiply_pages() {
    let mut pdf = Pdf::default();
    let font = pdf.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let content = pdf.stream("", b"BT /F1 12 Tf (Hello) Tj ET");
    let page = pdf.obj(format!(
        "<< /Type /Page /Contents {content} 0 R /Resources << /Font << /F1 {font} 0 R >> >> >>"
    ));
    let mut kids = pdf.obj(format!("[{page} 0 R]"));
    for _ in 0..40 {
        kids = pdf.obj(format!(
            "[<< /Type /Pages /Kids {kids} 0 R >> << /Type /Pages /Kids {kids} 0 R >>]"
        ));
    }
    let cycle = pdf.obj("");
    pdf.set(
        cycle,
        format!(
            "[<< /Type /Pages /Kids {kids} 0 R >> << /Type /Pages /Kids {cycle} 0 R >> << /Kids {cycle} 0 R >>]"
        ),
    );
    let tree = pdf.obj(format!("<< /Type /Pages /Kids {cycle} 0 R >>"));
    let catalog = pdf.obj(format!("<< /Type /Catalog /Pages {tree} 0 R >>"));
    assert_eq!(pages_of(&pdf.finish(catalog)).expect("reads"), ["Hello"]);
}

/// Pages cost work even without content, so a `Kids` array listing one empty page tens of
/// thousands of times is refused.
#[test]
fn empty_pages_count_against_the_work_budget() {
    let mut pdf = Pdf::default();
    let page = pdf.obj("<< /Type /Page >>");
    let kids = format!("{page} 0 R ").repeat(20_000);
    let tree = pdf.obj(format!("<< /Type /Pages /Kids [{kids}] /Count 20000 >>"));
    let catalog = pdf.obj(format!("<< /Type /Catalog /Pages {tree} 0 R >>"));
    let err = text_of(&pdf.finish(catalog)).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("would interpret more than")), "{err}");
}

/// Overlapping `bfrange`s are read up to the CMap limit in all, not until the map holds that
/// many codes (which the same range read again never adds): what follows is left out.
#[test]
fn overlapping_to_unicode_ranges_are_bounded() {
    let to_unicode = |ranges: usize| {
        let mut pdf = Pdf::default();
        let range = "1 beginbfrange <0000> <FFFE> <0041> endbfrange\n".repeat(ranges);
        let cmap =
            pdf.stream("", format!("{range}1 beginbfchar <FFFF> <0042> endbfchar").as_bytes());
        let font = sanitized_font(
            &mut pdf,
            &format!(
                "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode {cmap} 0 R >>"
            ),
        );
        font_stream(&font, b"ToUnicode")
    };
    assert!(to_unicode(1).contains("<ffff> <0042>"));
    let twice = to_unicode(2);
    assert!(!twice.contains("<ffff>"), "the bfchar past the limit is left out");
    assert_eq!(to_unicode(1000), twice);
}

/// Width arrays and `Differences` are read only as far as they are kept: a composite font's
/// `W` run up to its limit, a simple font's `Differences` into one glyph name per code (later
/// ones override earlier ones, as in pdf-extract).
#[test]
fn font_tables_are_bounded() {
    let mut pdf = Pdf::default();
    let widths = "1 ".repeat(70_000);
    let font = sanitized_font(
        &mut pdf,
        &format!(
            "<< /Type /Font /Subtype /Type0 /BaseFont /X /DescendantFonts [<< /Subtype /CIDFontType2 /W [0 [{widths}]] >>] >>"
        ),
    );
    let descendant = font.dict.get(b"DescendantFonts").and_then(|d| d.as_array()).expect("set");
    let w = descendant[0].as_dict().and_then(|d| d.get(b"W")).and_then(|w| w.as_array());
    let w = w.expect("a W array");
    assert_eq!(w.len(), 2);
    assert_eq!(w[1].as_array().expect("widths").len(), 1 << 16);

    let differences = "0 /a ".repeat(10_000) + "65 /A /B 65 /C";
    let font = sanitized_font(
        &mut pdf,
        &format!(
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding << /BaseEncoding /WinAnsiEncoding /Differences [{differences}] >> >>"
        ),
    );
    let encoding = font.dict.get(b"Encoding").and_then(|e| e.as_dict()).expect("kept");
    let differences = encoding.get(b"Differences").and_then(|d| d.as_array()).expect("kept");
    let pairs: Vec<String> = differences
        .chunks(2)
        .map(|p| format!("{:?} {:?}", p[0].as_i64().ok(), p[1].as_name().ok().map(<[u8]>::to_vec)))
        .collect();
    let expect = |code: i64, name: &[u8]| format!("{:?} {:?}", Some(code), Some(name.to_vec()));
    assert_eq!(pairs, [expect(0, b"a"), expect(65, b"C"), expect(66, b"B")]);
}

/// A Type 3 font's `FirstChar` at the end of the integers, or before code 0, reads without
/// overflowing: only the widths of codes 0–255 are kept.
#[test]
fn type3_first_char_out_of_range() {
    let widths = |first: &str| {
        let font = sanitized_font(
            &mut Pdf::default(),
            &format!("<< /Type /Font /Subtype /Type3 /FirstChar {first} /Widths [1 2 3] >>"),
        );
        let widths = font.dict.get(b"Widths").and_then(|w| w.as_array()).expect("widths");
        widths.iter().map(|w| w.as_float().expect("a number")).collect::<Vec<f32>>()
    };
    assert!(widths(&i64::MAX.to_string()).iter().all(|&w| w == 0.0));
    assert_eq!(widths("-2")[..2], [3.0, 0.0]);
    assert_eq!(widths("254")[253..], [0.0, 1.0, 2.0]);
}

/// A `MediaBox` of other than four numbers gives the default page size.
#[test]
fn media_box_must_have_four_numbers() {
    let media_box = |given: &str| {
        let bytes = one_page_pdf(&mut Pdf::default(), &format!("/MediaBox {given}"));
        let doc = PdfDocument::load_mem(&bytes).expect("parses");
        let clean = sanitize::sanitize(&doc, &mut decode::Budget::for_source(0), bytes.len());
        let clean = clean.expect("sanitizes").doc;
        let page = clean.get_pages().into_values().next().expect("a page");
        let page = clean.get_dictionary(page).expect("a dictionary");
        let values = page.get(b"MediaBox").and_then(|m| m.as_array()).expect("a media box");
        values.iter().map(|v| v.as_float().expect("a number")).collect::<Vec<f32>>()
    };
    assert_eq!(media_box("[0 0 100 200]"), [0.0, 0.0, 100.0, 200.0]);
    let long = format!("[{}]", "1 ".repeat(10_000));
    for given in
        ["[0 0 100 200 300]", "[0 0 100]", "[0 0 100 /x]", "[0 0 100 1000000000000]", &long]
    {
        assert_eq!(media_box(given), [0.0, 0.0, 612.0, 792.0], "{given}");
    }
}

/// Predictor parameters whose product overflows leave the data as it is.
#[test]
fn predictor_parameters_out_of_range() {
    use pdf_extract::{Dictionary, Object};
    for (colors, bits) in [(i64::MAX, 8), (8, i64::MAX), (i64::MIN, i64::MIN)] {
        let mut parms = Dictionary::new();
        parms.set("Predictor", 12);
        parms.set("Colors", colors);
        parms.set("BitsPerComponent", bits);
        let mut dict = Dictionary::new();
        dict.set("Filter", Object::Name(b"FlateDecode".to_vec()));
        dict.set("DecodeParms", Object::Dictionary(parms));
        let decoded = decode::decode(&dict, &zlib(b"BT ET"), &mut decode::Budget::for_source(0));
        assert!(matches!(decoded, Ok(decode::Decoded::Bytes(b)) if b == b"BT ET"));
    }
}

/// A composite font's CID ranges whose CIDs would pass 2^32 (pdf-extract adds the code to the
/// range's first CID) are left out.
#[test]
fn cid_ranges_past_u32_are_dropped() {
    let mut pdf = Pdf::default();
    let cmap = pdf.stream(
        "",
        b"1 begincodespacerange <0000> <FFFF> endcodespacerange\n\
          2 begincidrange <0000> <FFFF> 4294967295 <0000> <00FF> 7 endcidrange\n\
          1 begincidchar <FFFF> 4294901761 endcidchar",
    );
    let font = format!(
        "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding {cmap} 0 R /DescendantFonts [<< /Subtype /CIDFontType2 >>] >>"
    );
    let sanitized = font_stream(&sanitized_font(&mut pdf, &font), b"Encoding");
    assert!(!sanitized.contains("4294"), "{sanitized}");
    assert!(sanitized.contains("<0000> <00ff> 7"), "{sanitized}");
    // The font, then the catalog `sanitized_font` added.
    let type0 = pdf.objects.len() - 1;
    let helvetica = pdf.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let bytes = pages_pdf(
        &mut pdf,
        &[b"BT /F1 12 Tf (ok) Tj /F2 12 Tf <0001FFFF> Tj ET"],
        &format!("/Font << /F1 {helvetica} 0 R /F2 {type0} 0 R >>"),
    );
    assert_eq!(text_of(&bytes).expect("reads"), "ok");
}

/// lopdf parses objects where the cross-reference sections say, which may be inside another
/// object's stream data, a string or a comment: objects hidden there are checked too (an
/// object stream inflating past the budget, a chain of `/Length` references, a
/// cross-reference stream with field widths lopdf loops on).
#[test]
fn objects_hidden_inside_other_objects_are_checked() {
    let hidden_in_stream = |hidden: &[u8]| {
        let mut pdf = Pdf::default();
        pdf.stream("", hidden);
        pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], "")
    };
    let bomb = zlib(&vec![b' '; 32 << 20]);
    let mut object_stream = format!(
        "12 0 obj << /Type /ObjStm /N 1 /First 4 /Filter /FlateDecode /Length {} >>\nstream\n",
        bomb.len()
    )
    .into_bytes();
    object_stream.extend_from_slice(&bomb);
    object_stream.extend_from_slice(b"\nendstream\nendobj\n");
    let err = text_of(&hidden_in_stream(&object_stream)).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("inflate past")), "{err}");

    let xref = b"(7 0 obj << /Type /XRef /Size 9 /W [0 0 0] /Length 0 >>\nstream\n\nendstream)";
    let err = text_of(&hidden_in_stream(xref)).expect_err("refused");
    assert!(matches!(&err, Error::Pdf(m) if m.contains("/W field widths")), "{err}");

    // A chain of lengths in comments, each object named by the last digits of its number.
    let mut pdf = Pdf::default();
    let mut chain = String::new();
    for n in 1000..3000 {
        chain.push_str(&format!(
            "%9{n} 0 obj << /Length {} 0 R >> stream\nxxxxx\nendstream\n",
            n - 1
        ));
    }
    pdf.obj(format!("<< /Note 1 >>\n{chain}"));
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], "");
    let err = text_of(&bytes).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("stream lengths refer")), "{err}");

    // Headers hidden inside dictionaries, each reading the rest again, are bounded.
    for header in ["1 0 obj << /A (", "1 0 obj ("] {
        let nested = header.repeat(200_000) + &")".repeat(200_000) + " >>";
        let err = text_of(&hidden_in_stream(nested.as_bytes())).expect_err("refused");
        assert!(matches!(&err, Error::Limit(m) if m.contains("hidden inside")), "{err}");
    }
}

#[test]
fn every_entry_leading_to_an_object_stream_is_charged() {
    let (bytes, header) = object_stream_of_half_the_budget();
    assert_eq!(text_of(&bytes).unwrap().trim(), "Harbour");
    // An update whose cross-reference section sends lopdf to it 300 more times: from its
    // header, and from the line break before it (lopdf skips white space and comments).
    let entries: Vec<(usize, usize)> = (0..300).map(|i| (100 + i, header - i % 2)).collect();
    let err = text_of(&with_entries(&bytes, &entries, "")).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("inflate past")), "{err}");
}

/// A PDF reading "Harbour" with an object stream of one object inflating to 512 KiB (within
/// the inflate budget once), and the offset of that stream's header.
fn object_stream_of_half_the_budget() -> (Vec<u8>, usize) {
    let mut pdf = Pdf::default();
    let mut payload = b"1 0 ".to_vec();
    payload.extend_from_slice(b"<< /A 1 >>");
    payload.resize(512 << 10, b' ');
    let packed = pdf.stream("/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", &zlib(&payload));
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
    let header = position(&bytes, format!("\n{packed} 0 obj").as_bytes()) + 1;
    (bytes, header)
}

/// The offset of the last cross-reference section of `bytes` and its root object's number,
/// for an update appended to it.
fn last_section(bytes: &[u8]) -> (usize, usize) {
    let text = String::from_utf8_lossy(bytes);
    let number_after = |key: &str| -> usize {
        let rest = text.rsplit(key).next().unwrap();
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    (number_after("startxref"), number_after("/Root "))
}

// Hardening of fonts, the page tree and the text limit (review of the PDF loader).

/// `MAX_TEXT_BYTES` counts a PDF's text as it is extracted, the spaces and line breaks placed
/// between strings included: 64 strings of 1 MiB side by side reach the limit exactly, and
/// pass it once gaps between them add spaces.
#[test]
fn spaces_between_strings_count_towards_the_text_limit() {
    use pdf_extract::{OutputDev, Transform};
    let chunk = "x".repeat(1 << 20);
    let fill = |gap: f64| {
        let mut text = output::PageText::default();
        for i in 0..(limits::MAX_TEXT_BYTES >> 20) {
            text.begin_word().expect("a word");
            let at = Transform::create_translation(gap * i as f64, 0.0);
            if text.output_character(&at, 0.0, 0.0, 12.0, &chunk).is_err() {
                break;
            }
        }
        text.is_full()
    };
    assert!(!fill(0.0), "the strings alone are within the limit");
    assert!(fill(100.0), "the spaces between them pass it");
}

/// The file's `/Parent` links are never followed (pdf-extract sees a flat tree whose pages
/// carry what they inherit): a page 512 `Pages` levels deep with every `/Parent` right reads
/// (a `/Parent` check counting the page itself refused it), and so do pages whose `/Parent`
/// chain is thousands of nodes long or goes round above them.
#[test]
fn parent_links_are_not_followed() {
    // `levels` nodes above the page, each the `/Parent` of the one below.
    let deep = |levels: usize| {
        let mut pdf = Pdf::default();
        let font = pdf.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
        let content = pdf.stream("", b"BT /F1 12 Tf (deep) Tj ET");
        let page = pdf.obj("");
        let nodes: Vec<usize> = (0..levels).map(|_| pdf.obj("")).collect();
        pdf.set(
            page,
            format!(
                "<< /Type /Page /Parent {} 0 R /Contents {content} 0 R /Resources << /Font << /F1 {font} 0 R >> >> >>",
                nodes[0]
            ),
        );
        for (i, &node) in nodes.iter().enumerate() {
            let kid = if i == 0 { page } else { nodes[i - 1] };
            let parent = nodes.get(i + 1).map(|p| format!("/Parent {p} 0 R")).unwrap_or_default();
            pdf.set(node, format!("<< /Type /Pages /Kids [{kid} 0 R] /Count 1 {parent} >>"));
        }
        let catalog = pdf.obj(format!("<< /Type /Catalog /Pages {} 0 R >>", nodes[levels - 1]));
        pdf.finish(catalog)
    };
    assert_eq!(text_of(&deep(limits::MAX_DEPTH)).expect("reads"), "deep");
    let err = text_of(&deep(limits::MAX_DEPTH + 1)).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("page tree")), "{err}");

    // A `/Parent` chain of 5,000 nodes above a page, and one that goes round above it.
    let mut pdf = Pdf::default();
    let font = pdf.obj("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let content = pdf.stream("", b"BT /F1 12 Tf (long) Tj ET");
    let mut parent = pdf.obj("<< /Type /Pages /Kids [] /Count 0 >>");
    for _ in 0..5000 {
        parent = pdf.obj(format!("<< /Type /Pages /Kids [] /Count 0 /Parent {parent} 0 R >>"));
    }
    let (a, b) = (pdf.obj(""), pdf.obj(""));
    pdf.set(a, format!("<< /Type /Pages /Kids [] /Count 0 /Parent {b} 0 R >>"));
    pdf.set(b, format!("<< /Type /Pages /Kids [] /Count 0 /Parent {a} 0 R >>"));
    let resources = format!("/Resources << /Font << /F1 {font} 0 R >> >>");
    let long = pdf
        .obj(format!("<< /Type /Page /Parent {parent} 0 R /Contents {content} 0 R {resources} >>"));
    let round =
        pdf.obj(format!("<< /Type /Page /Parent {a} 0 R /Contents {content} 0 R {resources} >>"));
    let tree = pdf.obj(format!("<< /Type /Pages /Kids [{long} 0 R {round} 0 R] /Count 2 >>"));
    let catalog = pdf.obj(format!("<< /Type /Catalog /Pages {tree} 0 R >>"));
    let bytes = pdf.finish(catalog);
    assert_eq!(pages_of(&bytes).expect("reads"), ["long", "long"]);

    // What pdf-extract gets: one node without a `/Parent`, above pages that carry their own
    // `MediaBox` and `Resources` (so it never looks further up).
    let doc = PdfDocument::load_mem(&bytes).expect("parses");
    let clean = sanitize::sanitize(&doc, &mut decode::Budget::for_source(0), bytes.len());
    let clean = clean.expect("sanitizes").doc;
    for page in clean.get_pages().into_values() {
        let page = clean.get_dictionary(page).expect("a dictionary");
        assert!(page.get(b"MediaBox").is_ok() && page.get(b"Resources").is_ok());
        let tree = page.get(b"Parent").and_then(|p| p.as_reference()).expect("a parent");
        let tree = clean.get_dictionary(tree).expect("the tree");
        assert!(tree.get(b"Parent").is_err());
    }
}

/// One `bfrange` of 65,536 codes to 256 UTF-16 units each (a few hundred bytes) is read up to
/// `MAX_CMAP_UNITS` units in all: 1,024 codes, under 2 MiB written back (it was some 65 MB).
#[test]
fn to_unicode_expansion_is_bounded_in_units() {
    let mut pdf = Pdf::default();
    let units = "0041".repeat(256);
    let cmap = format!(
        "1 beginbfrange <0000> <FFFF> <{units}> endbfrange\n1 beginbfchar <FFFF> <0042> endbfchar"
    );
    let cmap = pdf.stream("", cmap.as_bytes());
    let font = sanitized_font(
        &mut pdf,
        &format!("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode {cmap} 0 R >>"),
    );
    let written = font_stream(&font, b"ToUnicode");
    let kept = fonts::MAX_CMAP_UNITS / 256;
    assert!(written.contains(&format!("<{:04x}> <0041", kept - 1)));
    assert!(!written.contains(&format!("<{kept:04x}> ")), "the codes past the cap are left out");
    assert!(!written.contains("<ffff>"), "and so is what follows");
    assert!(written.len() < 2 << 20 && font.cost < 2 << 20, "{}", written.len());
}

/// A font's cost is taken from the work budget as soon as it is built: a content stream
/// selecting many font dictionaries that share one expanding `ToUnicode` map is refused once
/// their rewritten maps pass the budget, before the rest of the stream is read (here, forms
/// nested past their limit, which would give another error); without double counting the
/// fonts of the page that first uses them.
#[test]
fn fonts_are_charged_to_the_work_budget_as_they_are_built() {
    let with_fonts = |count: usize, tail: bool| {
        let mut pdf = Pdf::default();
        let units = "0041".repeat(256);
        let cmap =
            pdf.stream("", format!("1 beginbfrange <0000> <FFFF> <{units}> endbfrange").as_bytes());
        let mut fonts = String::new();
        let mut content = "BT ".to_owned();
        for i in 0..count {
            let font = pdf.obj(format!(
                "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode {cmap} 0 R >>"
            ));
            fonts.push_str(&format!("/F{i} {font} 0 R "));
            content.push_str(&format!("/F{i} 12 Tf (A) Tj "));
        }
        content.push_str("ET");
        let mut form = pdf.stream("/Type /XObject /Subtype /Form", b"BT ET");
        if tail {
            for _ in 0..limits::MAX_PDF_FORM_DEPTH {
                form = pdf.stream(
                    &format!(
                        "/Type /XObject /Subtype /Form /Resources << /XObject << /X {form} 0 R >> >>"
                    ),
                    b"/X Do",
                );
            }
            content.push_str(" /X Do");
        }
        let resources = format!("/Font << {fonts}>> /XObject << /X {form} 0 R >>");
        let bytes = pages_pdf(&mut pdf, &[content.as_bytes()], &resources);
        (pdf, bytes, cmap)
    };
    let (mut pdf, _, cmap) = with_fonts(0, false);
    let cost = sanitized_font(
        &mut pdf,
        &format!("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode {cmap} 0 R >>"),
    )
    .cost;

    let (_, bytes, _) = with_fonts(16, true);
    let budget = limits::pdf_work_budget(bytes.len());
    assert!(16 * cost > 2 * budget, "{cost} {budget}");
    let err = text_of(&bytes).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("would interpret more than")), "{err}");

    // Fonts whose cost fits the budget once, but not twice, read.
    let (_, bytes, _) = with_fonts(3, false);
    let budget = limits::pdf_work_budget(bytes.len());
    assert!(3 * cost + (64 << 10) < budget && 6 * cost > budget, "{cost} {budget}");
    let text = text_of(&bytes).expect("reads");
    assert!(text.starts_with("AAAA"), "{text:.20}");
}

/// A CMap's values are kept up to one cap in all, the items of its arrays included: five
/// `bfrange` arrays of 65,536 empty strings (each 2 bytes in the file, a value of some 32
/// bytes in memory) keep no more than 4 × `MAX_CMAP_ENTRIES` values, not five times 65,536.
#[test]
fn cmap_array_items_count_against_the_cap() {
    let array = format!("<0000> <FFFF> [{}]\n", "<>".repeat(fonts::MAX_CMAP_ENTRIES));
    let cmap = format!("5 beginbfrange\n{}endbfrange\n", array.repeat(5));
    let sections = fonts::cmap_sections(cmap.as_bytes());
    let kept: usize = sections.iter().flat_map(|(_, v)| v).map(fonts::count_values).sum();
    assert!(kept <= 4 * fonts::MAX_CMAP_ENTRIES, "{kept} values kept");
    // The first ranges are kept whole.
    let values = &sections[0].1;
    assert!(matches!(&values[2], value::Value::Array(a) if a.len() == fonts::MAX_CMAP_ENTRIES));
}

/// Width tables expand far past their size in the file (`[0 65535 500]` is 65,536 widths),
/// and a table shared by reference is copied into every font that uses it (and pdf-extract
/// maps it again for each): sixteen composite fonts sharing one such `W` in a 4 KB file
/// held 150 MB, and cost the work budget two units each. Each font is now charged
/// `WIDTH_OBJECT_BYTES` per object of its table, once, as it is built, so they are refused;
/// simple fonts sharing a `Widths` of 65,536 keep the 256 of codes 0–255 each; and the
/// widths kept by a document that reads stay within the work budget, in bytes.
#[test]
fn shared_width_tables_are_charged_for_their_memory() {
    // `count` fonts made by `font` from the object number of one shared `table`, each
    // selected on the one page.
    let with_fonts = |table: &str, font: fn(usize) -> String, count: usize| {
        let mut pdf = Pdf::default();
        let table = pdf.obj(table);
        let mut fonts = String::new();
        let mut content = "BT ".to_owned();
        for i in 0..count {
            let id = pdf.obj(font(table));
            fonts.push_str(&format!("/F{i} {id} 0 R "));
            content.push_str(&format!("/F{i} 12 Tf (A) Tj <0041> Tj "));
        }
        content.push_str("ET");
        pages_pdf(&mut pdf, &[content.as_bytes()], &format!("/Font << {fonts}>>"))
    };
    let composite = |w: usize| {
        format!(
            "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /DescendantFonts [<< /Subtype /CIDFontType2 /W {w} 0 R >>] >>"
        )
    };
    let simple = |w: usize| {
        format!("<< /Type /Font /Subtype /TrueType /BaseFont /X /FirstChar 0 /Widths {w} 0 R >>")
    };
    // The width objects the rebuilt document keeps (widths, and a `W`'s runs), in all.
    let kept = |bytes: &[u8]| -> Result<usize> {
        use pdf_extract::Object;
        let doc = PdfDocument::load_mem(bytes).expect("parses");
        let clean = sanitize::sanitize(&doc, &mut decode::Budget::for_source(0), bytes.len())?;
        let len = |o: Result<&Object, _>| o.and_then(Object::as_array).map_or(0, Vec::len);
        let mut objects = 0;
        for dict in clean.doc.objects.values().filter_map(|o| o.as_dict().ok()) {
            objects += len(dict.get(b"Widths"));
            let descendants = dict.get(b"DescendantFonts").and_then(Object::as_array);
            for cid in descendants.into_iter().flatten().filter_map(|d| d.as_dict().ok()) {
                let w = cid.get(b"W").and_then(Object::as_array).map_or(&[][..], Vec::as_slice);
                objects += w.len() + w.iter().map(|run| len(Ok(run))).sum::<usize>();
            }
        }
        Ok(objects)
    };

    // One font's table: 65,536 widths and one run, charged once for their memory.
    let mut pdf = Pdf::default();
    let w = pdf.obj("[0 65535 500]");
    let font = sanitized_font(&mut pdf, &composite(w));
    let objects = (1 << 16) + 2;
    assert_eq!(font.memory, objects * fonts::WIDTH_OBJECT_BYTES);
    assert!(font.memory > objects * size_of::<pdf_extract::Object>() && font.cost >= objects);

    // Twenty-four fonts sharing it are refused (as soon as their memory passes the limit);
    // two read, however small the file.
    let bytes = with_fonts("[0 65535 500]", composite, 24);
    assert!(bytes.len() < 8 << 10 && 24 * font.memory > limits::MAX_PDF_FONT_MEMORY);
    assert!(matches!(kept(&bytes), Err(Error::Limit(_))));
    let err = text_of(&bytes).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("fonts would take more than")), "{err}");
    assert!(text_of(&with_fonts("[0 65535 500]", composite, 2)).is_ok());

    // Narrower tables that fit read, and what is kept stays within the budget.
    let bytes = with_fonts("[0 1023 500]", composite, 3);
    let objects = kept(&bytes).expect("within the budget");
    assert_eq!(objects, 3 * (1024 + 2));
    assert!(objects * fonts::WIDTH_OBJECT_BYTES <= limits::MAX_PDF_FONT_MEMORY);
    assert!(text_of(&bytes).is_ok());

    // Simple fonts sharing 65,536 `Widths` keep those of codes 0–255 (not 65,536 each).
    let widths = format!("[{}]", "500 ".repeat(1 << 16));
    let font = {
        let mut pdf = Pdf::default();
        let w = pdf.obj(&widths);
        sanitized_font(&mut pdf, &simple(w))
    };
    let last = font.dict.get(b"LastChar").and_then(|l| l.as_i64()).expect("set");
    let kept_widths = font.dict.get(b"Widths").and_then(|w| w.as_array()).expect("kept").len();
    assert_eq!((last, kept_widths), (255, 256));
    assert_eq!(font.memory, 256 * fonts::WIDTH_OBJECT_BYTES);
    let bytes = with_fonts(&widths, simple, 20);
    let objects = kept(&bytes).expect("within the budget");
    assert_eq!(objects, 20 * 256);
    assert!(objects * fonts::WIDTH_OBJECT_BYTES <= limits::MAX_PDF_FONT_MEMORY);
    let text = text_of(&bytes).expect("reads");
    assert!(text.matches('A').count() >= 20, "{text:.40}");
}

/// A `ToUnicode` map is charged for the entries pdf-extract makes of it, once per font.
#[test]
fn to_unicode_maps_are_charged_for_their_memory() {
    let mut pdf = Pdf::default();
    let entries: String = (0..1000).map(|c| format!("<{c:04X}> <{:04X}>\n", c + 0x41)).collect();
    let cmap = format!("1000 beginbfchar\n{entries}endbfchar");
    let cmap = pdf.stream("", cmap.as_bytes());
    let font = format!(
        "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /ToUnicode {cmap} 0 R /DescendantFonts [<< /Subtype /CIDFontType2 >>] >>"
    );
    let font = sanitized_font(&mut pdf, &font);
    assert!(font.memory >= 1000 * fonts::UNICODE_ENTRY_BYTES, "{}", font.memory);
}

/// The pre-scan reads a dictionary as lopdf does: a repeated key's last value counts, and
/// entries after thousands of others are read, so an object stream whose `/Type` is given
/// twice, or comes after a long array, is inflated against the budget like any other. A value
/// the pre-scan reads holding more items than it keeps is refused rather than cut.
#[test]
fn repeated_and_late_keys_are_read_as_lopdf_reads_them() {
    let bomb = zlib(&vec![b' '; 32 << 20]);
    let junk = format!("/Junk [{}]", "1 ".repeat(5000));
    for dict in ["/Type /XObject /Type /ObjStm", &format!("{junk} /Type /ObjStm")] {
        let mut pdf = Pdf::default();
        pdf.stream(&format!("{dict} /N 1 /First 4 /Filter /FlateDecode"), &bomb);
        let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], "");
        let err = text_of(&bytes).expect_err("refused");
        assert!(matches!(&err, Error::Limit(m) if m.contains("inflate past")), "{dict:.40}: {err}");
    }
    let mut pdf = Pdf::default();
    pdf.stream(&format!("/Filter [{}]", "/AHx ".repeat(5000)), b"41");
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], "");
    let err = text_of(&bytes).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("more than 4096 items")), "{err}");
    // Only the first three items of a /W matter to the pre-scan: a font's long one is cut.
    let mut pdf = Pdf::default();
    pdf.obj(format!("<< /Type /Font /Subtype /CIDFontType2 /W [0 [{}]] >>", "500 ".repeat(9000)));
    assert_eq!(text_of(&pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], "")).unwrap(), "x");
}

/// Decoding is charged the bytes it reads, not only those it produces: a stream decoding to
/// nothing (ASCII85 over white space, ASCIIHex over other bytes, deflate's empty stored
/// blocks) named hundreds of times in `/Contents`, or read to the end of the file from each of
/// many object stream headers whose length lopdf cannot resolve, runs out the budget instead
/// of being decoded again and again for free.
#[test]
fn decoding_is_charged_the_bytes_it_reads() {
    let mut empty_blocks = vec![0x78, 0x01];
    empty_blocks.extend_from_slice(&[0, 0, 0, 0xff, 0xff].repeat(13_000));
    empty_blocks.extend_from_slice(&[1, 0, 0, 0xff, 0xff, 0, 0, 0, 1]);
    let streams = [
        ("/ASCII85Decode", vec![b' '; 64 << 10]),
        ("/ASCIIHexDecode", vec![b'x'; 64 << 10]),
        ("/FlateDecode", empty_blocks),
    ];
    for (filter, data) in &streams {
        for times in [1, 300] {
            let mut pdf = Pdf::default();
            let empty = pdf.stream(&format!("/Filter {filter}"), data);
            let text = pdf.stream("", b"BT /F1 12 Tf (x) Tj ET");
            let refs = format!("{empty} 0 R ").repeat(times);
            let bytes = one_page_pdf(&mut pdf, &format!("/Contents [{text} 0 R {refs}]"));
            match text_of(&bytes) {
                Ok(text) if times == 1 => assert_eq!(text, "x"),
                Err(Error::Limit(m)) if times > 1 && m.contains("inflate past") => {}
                other => panic!("{filter} {times} times: {other:?}"),
            }
        }
    }

    let mut pdf = Pdf::default();
    for _ in 0..200 {
        pdf.obj(
            "<< /Type /ObjStm /N 0 /First 0 /Length 999 0 R /Filter /ASCII85Decode >>\nstream\n\nendstream",
        );
    }
    pdf.stream("", &vec![b' '; 1 << 20]);
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], "");
    let err = text_of(&bytes).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("inflate past")), "{err}");
}

/// lopdf reads every entry of a cross-reference stream, and inflates an object stream again
/// for each entry leading to it: a small compressed cross-reference stream whose 300 entries
/// all point at one object stream is charged once per entry, its fields read as lopdf reads
/// them (a five-byte offset is its last four bytes). A stream without `/Type /XRef` may be
/// read as a cross-reference stream too: its widths are checked all the same.
#[test]
fn cross_reference_stream_entries_are_counted() {
    let (bytes, header) = object_stream_of_half_the_budget();
    let (previous, root) = last_section(&bytes);
    let [_, hi, mid, lo] = u32::try_from(header).unwrap().to_be_bytes();
    for (widths, entry, count) in [
        ("[1 3 0]", vec![1, hi, mid, lo], 1),
        ("[1 3 0]", vec![1, hi, mid, lo], 300),
        ("[1 5 0]", vec![1, 1, 0, hi, mid, lo], 300),
    ] {
        let mut updated = bytes.clone();
        let section = updated.len();
        let entries = zlib(&entry.repeat(count));
        updated.extend_from_slice(
            format!(
                "900 0 obj\n<< /Type /XRef /Size 901 /Index [100 {count}] /W {widths} /Root {root} 0 R /Prev {previous} /Filter /FlateDecode /Length {} >>\nstream\n",
                entries.len()
            )
            .as_bytes(),
        );
        updated.extend_from_slice(&entries);
        updated.extend_from_slice(
            format!("\nendstream\nendobj\nstartxref\n{section}\n%%EOF\n").as_bytes(),
        );
        assert_reads_unless_past(&updated, count == 1, "inflate past");
    }

    let mut pdf = Pdf::default();
    pdf.obj("<< /Size 9 /W [0 0 0] /Index [0 2000000000] /Length 0 >>\nstream\n\nendstream");
    let err = text_of(&pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], "")).expect_err("refused");
    assert!(matches!(&err, Error::Pdf(m) if m.contains("/W field widths")), "{err}");
}

/// lopdf reads the trailer (or the cross-reference stream that is one) wherever the end of the
/// file points, which may be inside another stream's data or a string: an `/Encrypt` there
/// makes the file encrypted, whose object streams, which cannot be inflated before lopdf
/// decrypts them, are charged the most they could inflate to.
#[test]
fn encryption_is_found_in_hidden_trailers() {
    let hidden: [&[u8]; 3] = [
        b"",
        b"trailer\n<< /Size 9 /Root 1 0 R /Encrypt 8 0 R >>",
        b"(7 0 obj << /Type /XRef /Size 9 /W [1 2 1] /Encrypt 8 0 R /Length 0 >>\nstream\n\nendstream)",
    ];
    for trailer in hidden {
        let mut pdf = Pdf::default();
        pdf.stream("", trailer);
        pdf.stream("/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", &[0xff; 8 << 10]);
        let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], "");
        match text_of(&bytes) {
            Ok(text) if trailer.is_empty() => assert_eq!(text, "x"),
            Err(Error::Limit(m)) if !trailer.is_empty() && m.contains("inflate past") => {}
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(trailer)),
        }
    }
}

/// Tokens lopdf may parse are counted wherever they are: here the array of a header hidden in
/// a stream's data (lopdf parses it if an offset leads there).
#[test]
fn hidden_tokens_are_counted() {
    let tokens_error = |bytes: &[u8]| match text_of(bytes) {
        Err(Error::Limit(m)) if m.contains("tokens outside its streams") => {}
        other => panic!("{other:?}"),
    };
    let hidden = format!("1 0 obj [{}]", "[]".repeat(limits::MAX_PDF_TOKENS / 2 + 1));
    let mut pdf = Pdf::default();
    pdf.stream("", hidden.as_bytes());
    tokens_error(&pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], ""));
}

/// Nesting past lopdf's own 100 levels but within `MAX_DEPTH` is not refused: lopdf drops the
/// object nested so deep and reads the rest (as the module docs say); past `MAX_DEPTH` the
/// file is refused.
#[test]
fn nesting_between_lopdf_and_the_limit_drops_the_object() {
    let nested = |depth: usize| {
        let mut pdf = Pdf::default();
        pdf.obj(format!("<< /Deep {}{} >>", "[".repeat(depth), "]".repeat(depth)));
        text_of(&pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (x) Tj ET"], ""))
    };
    assert_eq!(nested(200).expect("reads"), "x");
    let err = nested(limits::MAX_DEPTH + 1).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("nested deeper than 512")), "{err}");
}

// Memory lopdf takes copying what its cross-reference entries lead to (review of the pre-scan).

/// `bytes` with an update appended whose cross-reference section gives object `n` at `offset`
/// for each `(n, offset)`, and whose trailer has the `extra` entries.
fn with_entries(bytes: &[u8], entries: &[(usize, usize)], extra: &str) -> Vec<u8> {
    let (previous, root) = last_section(bytes);
    let mut updated = bytes.to_vec();
    let section = updated.len();
    updated.extend_from_slice(b"xref\n");
    for (n, offset) in entries {
        updated.extend_from_slice(format!("{n} 1\n{offset:010} 00000 n \n").as_bytes());
    }
    let size = entries.iter().map(|(n, _)| n + 1).max().unwrap_or(1);
    updated.extend_from_slice(
        format!(
            "trailer\n<< /Size {size} /Root {root} 0 R /Prev {previous} {extra} >>\nstartxref\n{section}\n%%EOF\n"
        )
        .as_bytes(),
    );
    updated
}

/// The position of `needle` in `bytes`.
fn position(bytes: &[u8], needle: &[u8]) -> usize {
    bytes.windows(needle.len()).position(|w| w == needle).expect("there")
}

/// Defect 1: lopdf copies a stream's data for every entry leading to its header, and headers
/// can be nested in each other's data: 300 stream headers nested in one stream of 140 KB, each
/// running to its `endstream`, made lopdf hold 300 copies of it (40 MB for a file of 150 KB;
/// a 535 KB file of 500 made it hold 256 MB). What lopdf copies is charged to the inflate
/// budget for every entry leading to a stream: the file is refused. Two of them read.
#[test]
fn nested_stream_copies_are_charged() {
    let header = |n: usize, length: usize| {
        format!("{n:07} 0 obj << /Length {length:010} >>\nstream\n").into_bytes()
    };
    let width = header(0, 0).len();
    let fill = 128 << 10;
    for count in [2, 300] {
        let mut nested = Vec::new();
        for k in 0..count {
            nested.extend_from_slice(&header(100 + k, (count - k - 1) * width + fill));
        }
        nested.resize(nested.len() + fill, b'x');
        let mut pdf = Pdf::default();
        pdf.stream("", &nested);
        let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
        let entries: Vec<(usize, usize)> = (0..count)
            .map(|k| (100 + k, position(&bytes, &header(100 + k, (count - k - 1) * width + fill))))
            .collect();
        assert_reads_unless_past(&with_entries(&bytes, &entries, ""), count == 2, "inflate past");
    }
}

/// Defect 2: with an `/Encrypt` in the trailer, lopdf copies every entry's object raw before it
/// authenticates (and whether it can or not), from the entry's offset to the first `endobj`
/// after it, or to the end of the file: 300 headers followed by 128 KiB without `endobj` made
/// it hold 300 copies of the rest (40 MB for a file of 140 KB; 150 MB for one of 511 KB). The
/// copies are charged to the inflate budget: the file is refused. With two such headers lopdf
/// copies little and reads nothing (the password fails).
#[test]
fn encrypted_raw_copies_are_charged() {
    let header = |n: usize| format!("{n:07} 0 obj\n").into_bytes();
    for count in [2, 300] {
        let mut headers: Vec<u8> = (0..count).flat_map(|k| header(100 + k)).collect();
        headers.resize(headers.len() + (128 << 10), b'x');
        let mut pdf = Pdf::default();
        pdf.stream("", &headers);
        let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
        let entries: Vec<(usize, usize)> =
            (0..count).map(|k| (100 + k, position(&bytes, &header(100 + k)))).collect();
        match text_of(&with_entries(&bytes, &entries, "/Encrypt 999 0 R")) {
            Err(Error::Pdf(_)) if count == 2 => {}
            Err(Error::Limit(m)) if count == 300 && m.contains("inflate past") => {}
            other => panic!("{count}: {other:?}"),
        }
    }
}

/// `bytes` with an update appended: a cross-reference stream whose entries store each of
/// `numbers` in the object stream `container`.
fn with_compressed(bytes: &[u8], numbers: &[usize], container: usize) -> Vec<u8> {
    let pairs: Vec<(usize, usize)> = numbers.iter().map(|&n| (n, container)).collect();
    with_compressed_pairs(bytes, &pairs, 0)
}

/// `bytes` with an update appended: a cross-reference stream whose entries store each number
/// of `pairs` in its object stream, followed by `free` free entries, each in a pair of its
/// `/Index` (numbers from 200,000).
fn with_compressed_pairs(bytes: &[u8], pairs: &[(usize, usize)], free: usize) -> Vec<u8> {
    let (previous, root) = last_section(bytes);
    let mut index = String::new();
    let mut data = Vec::new();
    for &(n, container) in pairs {
        index.push_str(&format!("{n} 1 "));
        data.push(2);
        data.extend_from_slice(&u32::try_from(container).unwrap().to_be_bytes());
        data.extend_from_slice(&[0, 0]);
    }
    for k in 0..free {
        index.push_str(&format!("{} 1 ", 200_000 + 2 * k));
        data.extend_from_slice(&[0; 7]);
    }
    let size = 200_000 + 2 * free + pairs.iter().map(|p| p.0).max().unwrap_or(0) + 1;
    let mut updated = bytes.to_vec();
    let section = updated.len();
    updated.extend_from_slice(
        format!(
            "99999 0 obj\n<< /Type /XRef /Size {size} /Index [{index}] /W [1 4 2] /Root {root} 0 R /Prev {previous} /Length {} >>\nstream\n",
            data.len()
        )
        .as_bytes(),
    );
    updated.extend_from_slice(&data);
    updated.extend_from_slice(
        format!("\nendstream\nendobj\nstartxref\n{section}\n%%EOF\n").as_bytes(),
    );
    updated
}

/// Defect 3: a `/Length` referring to an object stored in an object stream makes lopdf load
/// (copy and inflate) that whole object stream again for every stream it parses: 300 streams
/// of 3 bytes whose lengths are stored in an object stream inflating to 256 KiB made it
/// inflate 75 MB for a file of 17 KB (300 inflating 512 KiB, 150 MB). Each stream is charged
/// the object stream it loads: the file is refused. Two such streams read.
#[test]
fn lengths_stored_in_object_streams_are_charged_each_time() {
    for count in [2, 300] {
        let mut pdf = Pdf::default();
        let mut payload = b"9000 0 ".to_vec();
        let first = payload.len();
        payload.push(b'3');
        payload.resize(256 << 10, b' ');
        let packed = pdf.stream(
            &format!("/Type /ObjStm /N 1 /First {first} /Filter /FlateDecode"),
            &zlib(&payload),
        );
        for _ in 0..count {
            pdf.obj("<< /Length 9000 0 R >>\nstream\nabc\nendstream");
        }
        let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
        assert_reads_unless_past(
            &with_compressed(&bytes, &[9000], packed),
            count == 2,
            "inflate past",
        );
    }
}

/// Found with defect 3: an object stream's `/Length` stored in an object stream (in itself)
/// made lopdf recurse without end (each load of an object stream starts afresh), and the
/// stack overflow aborted the process; and lopdf inflates, without a bound, whatever stream a
/// compressed entry names as its object stream (here a 32 KB deflate stream of 32 MiB, to
/// resolve a length). Both are refused.
#[test]
fn object_streams_loaded_for_their_own_length_or_not_object_streams_are_refused() {
    let mut pdf = Pdf::default();
    let packed = pdf.obj("");
    let payload = zlib(b"9000 0 7");
    let mut body =
        b"<< /Type /ObjStm /N 1 /First 7 /Filter /FlateDecode /Length 9000 0 R >>\nstream\n"
            .to_vec();
    body.extend_from_slice(&payload);
    body.extend_from_slice(b"\nendstream");
    pdf.set(packed, body);
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
    let err = text_of(&with_compressed(&bytes, &[9000], packed)).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("stream lengths refer")), "{err}");

    let mut pdf = Pdf::default();
    let bomb = pdf.stream("/Filter /FlateDecode", &zlib(&vec![b' '; 32 << 20]));
    pdf.obj("<< /Length 9000 0 R >>\nstream\nabc\nendstream");
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
    let err = text_of(&with_compressed(&bytes, &[9000], bomb)).expect_err("refused");
    assert!(matches!(&err, Error::Limit(m) if m.contains("not an object stream")), "{err}");
}

/// Found with defect 2: from an entry's offset lopdf skips white space, comments and digits
/// looking for a header, once per entry (and again when it parses an encrypted document's raw
/// copies): 4,000 entries into 4 MB of spaces took it 10 s, with or without `/Encrypt`. The
/// long runs scanned are charged for every entry: 400 entries into 512 KiB of spaces are
/// refused; two read.
#[test]
fn entries_into_long_white_space_are_charged() {
    for count in [2, 400] {
        let mut pdf = Pdf::default();
        pdf.obj(format!("<< /Pad ({}) >>", " ".repeat(512 << 10)));
        let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
        let pad = position(&bytes, b"/Pad (") + 6;
        let entries: Vec<(usize, usize)> = (0..count).map(|k| (100 + k, pad + k * 1000)).collect();
        assert_reads_unless_past(&with_entries(&bytes, &entries, ""), count == 2, "inflate past");
    }
}

/// Found with defect 1: lopdf keeps the object it parses at every entry until it has parsed
/// them all (it collects them before it drops repeated numbers), whatever the object: 2,000
/// entries leading to an array of 200,000 numbers in a 440 KB file made it take over 23 GB.
/// An object's tokens are counted again for every entry past the first leading to it: 110
/// entries leading to an array of 40,000 numbers pass the token limit; two read.
#[test]
fn objects_parsed_for_every_entry_are_counted() {
    for count in [2, 110] {
        let bytes = entries_leading_to(&format!("[{}]", "0 ".repeat(40_000)), count);
        assert_reads_unless_past(&bytes, count == 2, "tokens outside its streams");
    }
}

/// Found with defect 3: lopdf parses an object stream's object for every pair of its index,
/// and keeps them all until it has parsed them all, however many pairs give one offset: 200
/// pairs giving an array of 100,000 numbers made a 1.3 KB file take 2.3 GB. The tokens and
/// bytes lopdf parses for the index count (the tokens against the token limit, the bytes past
/// the data's own against the inflate budget): 110 pairs giving an array of 40,000 numbers
/// are refused; two read.
#[test]
fn object_stream_pairs_giving_one_offset_are_counted() {
    for count in [2, 110] {
        let mut pdf = Pdf::default();
        let index: String = (0..count).map(|k| format!("{} 0 ", 100 + k)).collect();
        let mut payload = index.clone().into_bytes();
        payload.extend_from_slice(format!("[{}]", "0 ".repeat(40_000)).as_bytes());
        let dict = format!("/Type /ObjStm /N {count} /First {} /Filter /FlateDecode", index.len());
        pdf.stream(&dict, &zlib(&payload));
        let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
        assert_reads_unless_past(&bytes, count == 2, "inflate past");
    }
}

/// Found in review: a cross-reference stream's `/Index` of 4,096 items or more was cut, its
/// compressed entries' numbers taken for unknown, and any of them for the length of the
/// object stream holding one: a legitimate update section of 2,100 pairs was refused as a
/// cycle of lengths. The `/Index` is read whole: the file reads, as it does with one pair.
#[test]
fn long_cross_reference_indexes_are_read_whole() {
    let mut pdf = Pdf::default();
    let length = pdf.obj("0");
    let mut payload = b"700 0 ".to_vec();
    let first = payload.len();
    payload.extend_from_slice(b"(hello)");
    let packed_data = zlib(&payload);
    pdf.set(length, packed_data.len().to_string());
    let mut body = format!(
        "<< /Type /ObjStm /N 1 /First {first} /Filter /FlateDecode /Length {length} 0 R >>\nstream\n"
    )
    .into_bytes();
    body.extend_from_slice(&packed_data);
    body.extend_from_slice(b"\nendstream");
    let packed = pdf.obj(body);
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
    for free in [0, 2100] {
        let text = text_of(&with_compressed_pairs(&bytes, &[(700, packed)], free));
        assert_eq!(text.expect("reads").trim(), "Harbour", "{free} free entries");
    }
}

/// Found in review: lopdf, loading an object stream to resolve a `/Length`, loads the object
/// stream's own container when its entry is compressed too. Through a cycle (88888 stored in
/// itself) it recursed until the stack overflowed and aborted the process; through a chain
/// (88888 stored in a real object stream) it loaded that object stream, uncharged, for every
/// such length (2,000 streams of 8 MiB object streams, 16 GB). The PDF specification forbids
/// storing a stream in an object stream: a number named as an object stream that has a
/// compressed entry too makes the file unreadable, before lopdf runs.
#[test]
fn object_streams_stored_in_object_streams_are_refused() {
    let mut pdf = Pdf::default();
    let mut payload = b"88888 0 ".to_vec();
    let first = payload.len();
    payload.push(b'3');
    let packed = pdf.stream(
        &format!("/Type /ObjStm /N 1 /First {first} /Filter /FlateDecode"),
        &zlib(&payload),
    );
    pdf.obj("<< /Length 9000 0 R >>\nstream\nabc\nendstream");
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
    for (pairs, nested) in [
        (vec![(9000, 88888), (88888, 88888)], 88888),
        (vec![(88888, 88888), (9000, 88888)], 88888),
        (vec![(9000, 88888), (88888, packed)], 88888),
        (vec![(88888, packed), (9000, 88888)], 88888),
    ] {
        let err = text_of(&with_compressed_pairs(&bytes, &pairs, 0)).expect_err("refused");
        let expected = format!("object {nested} is stored in an object stream");
        assert!(matches!(&err, Error::Pdf(m) if m.contains(&expected)), "{pairs:?}: {err}");
    }
    let text = text_of(&with_compressed_pairs(&bytes, &[(9000, packed)], 0));
    assert_eq!(text.expect("reads").trim(), "Harbour");
}

/// Found in review: lopdf parses an object again for every entry leading to it, copying a
/// string's bytes and scanning the white space after `obj` each time, but only the object's
/// tokens were counted: 4,000 entries leading to a string of 1 MiB made a 1.15 MB file hold
/// 4 GiB, and 400,000 entries leading to 4 MiB of spaces before an integer would scan 1.6 TB.
/// The object's bytes are charged to the inflate budget for every entry past the first: 300
/// entries leading to 128 KiB of either are refused; two read.
#[test]
fn objects_parsed_for_every_entry_are_charged_their_bytes() {
    for object in [format!("({})", "x".repeat(128 << 10)), format!("{}5", " ".repeat(128 << 10))] {
        for count in [2, 300] {
            let bytes = entries_leading_to(&object, count);
            assert_reads_unless_past(&bytes, count == 2, "inflate past");
        }
    }
}

/// Found in review: lopdf parses an object stream's objects again for every entry leading to
/// the object stream, and keeps them all, but they were counted once: 250 entries leading to
/// an object stream of an array of 500,000 numbers made lopdf hold 125 million objects. Its
/// objects' tokens are counted again for every entry past the first: 110 entries leading to
/// an array of 40,000 numbers (its inflated size well within the budget, padded with a long
/// string) pass the token limit; two read.
#[test]
fn object_stream_objects_are_counted_for_every_entry() {
    for count in [2, 110] {
        let mut pdf = Pdf::default();
        let mut payload = b"500 0 ".to_vec();
        let first = payload.len();
        payload.extend_from_slice(format!("[{}]", "0 ".repeat(40_000)).as_bytes());
        let packed = pdf.stream(
            &format!("/Type /ObjStm /N 1 /First {first} /Filter /FlateDecode"),
            &zlib(&payload),
        );
        pdf.obj(format!("<< /Pad ({}) >>", "p".repeat(1 << 20)));
        let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
        let header = position(&bytes, format!("\n{packed} 0 obj").as_bytes()) + 1;
        let entries: Vec<(usize, usize)> = (0..count).map(|k| (100 + k, header)).collect();
        assert_reads_unless_past(
            &with_entries(&bytes, &entries, ""),
            count == 2,
            "tokens outside its streams",
        );
    }
}

/// Found in review: the first copy lopdf makes of the stream data (about the file's size) and
/// of an encrypted file's raw objects was charged to the inflate budget, whose cap leaves a
/// large file little room: a 200 MB file (130 MB encrypted) whose streams inflate to 60 MB
/// was refused. One copy of the file of each is not charged. Here with the budget of the
/// smallest files (1 MiB), 640 KiB of plain stream data and an object stream inflating to
/// 600 KiB pass the pre-scan, plain or taken for encrypted (the object stream then charged the
/// most it could inflate to, about as much).
#[test]
fn first_copies_of_the_file_are_not_charged() {
    let mut pdf = Pdf::default();
    pdf.stream("", &vec![b' '; 640 << 10]);
    let mut payload = b"500 0 ".to_vec();
    let first = payload.len();
    payload.extend_from_slice(b"(x)");
    payload.resize(600 << 10, b' ');
    pdf.stream(&format!("/Type /ObjStm /N 1 /First {first} /Filter /FlateDecode"), &zlib(&payload));
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
    let encrypted = with_entries(&bytes, &[], "/Encrypt 999 0 R");
    for file in [bytes, encrypted] {
        prescan::prescan(&file, &mut decode::Budget::for_source(0)).expect("within the budget");
    }
}

/// Asserts that `bytes` reads "Harbour" when `reads`, and is otherwise refused by the limit
/// whose message holds `limit`: a hostile shape's small case reads, its large one is refused.
#[track_caller]
fn assert_reads_unless_past(bytes: &[u8], reads: bool, limit: &str) {
    match text_of(bytes) {
        Ok(text) if reads => assert_eq!(text.trim(), "Harbour"),
        Err(Error::Limit(m)) if !reads && m.contains(limit) => {}
        other => panic!("expected {}: {other:?}", if reads { "Harbour" } else { limit }),
    }
}

/// A PDF reading "Harbour" that holds `object`, with an update of `count` cross-reference
/// entries all leading to it.
fn entries_leading_to(object: &str, count: usize) -> Vec<u8> {
    let mut pdf = Pdf::default();
    let n = pdf.obj(object);
    let bytes = pages_pdf(&mut pdf, &[b"BT /F1 12 Tf (Harbour) Tj ET"], "");
    let header = position(&bytes, format!("\n{n} 0 obj").as_bytes()) + 1;
    let entries: Vec<(usize, usize)> = (0..count).map(|k| (100 + k, header)).collect();
    with_entries(&bytes, &entries, "")
}
