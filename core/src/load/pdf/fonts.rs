//! Font dictionaries rebuilt in the one shape pdf-extract reads without panicking: every
//! value direct and of the type it unwraps, every table index in range, and every embedded
//! program it would parse with a panicking parser replaced by what it would have got from it.
//!
//! - `Subtype`/`BaseFont` are names (without a UTF-16 mark, which pdf-extract decodes with
//!   `unwrap`); simple fonts keep `Encoding` only as one of the three named encodings or a
//!   dictionary of them plus `Differences` (codes 0–255); `FirstChar`/`LastChar`/`Widths`
//!   agree.
//! - `ToUnicode` and a composite font's `Encoding` CMap are parsed here (at most
//!   [`MAX_CMAP_ITEMS`] values kept, array items included) and written back as flat CMaps
//!   (`bfchar`/`bfrange`, one `cidrange` per block: pdf-extract's CMap parser recurses,
//!   panics on what it does not expect and expands ranges without a bound), with at most
//!   [`MAX_CMAP_ENTRIES`] codes; a `ToUnicode` map keeps at most [`MAX_UNITS`] UTF-16 units
//!   per code and [`MAX_CMAP_UNITS`] in all (what follows is left out), so the map written
//!   back stays under 2 MiB however far its ranges expand.
//! - A Type 1 font program's built-in encoding becomes `Differences`; font programs are then
//!   left out (pdf-extract parses them with panicking parsers and inflates them without a
//!   bound, and needs nothing else from them).
//! - Type 3 fonts get a width for every code, composite fonts a `W` of `c [w …]` runs
//!   (ranges `c1 c2 w`, which pdf-extract misreads, expanded) of at most [`MAX_WIDTHS`]
//!   widths; simple fonts keep the widths of codes 0–255 only (they show one-byte codes).
//!   Expanded width tables take far more memory than the file spends on them (`[0 65535 500]`
//!   is 65,536 objects of 120 bytes), and a table shared by reference is copied into every
//!   font that uses it: each font is charged [`WIDTH_OBJECT_BYTES`] per object of its table
//!   ([`Font::memory`]), once, when it is built, so what the rebuilt document and pdf-extract
//!   hold for widths stays within [`crate::limits::MAX_PDF_FONT_MEMORY`] however many fonts
//!   share one table. `ToUnicode` maps are charged likewise, [`UNICODE_ENTRY_BYTES`] a code.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use pdf_extract::{Dictionary, Document, Object, Stream};

use super::cff;
use super::decode::{self, Budget, Decoded};
use super::lex::{Lexer, Token};
use super::value::{self, Value};
use crate::Result;

/// Most codes one CMap (a `ToUnicode` map or a composite font's encoding) maps.
pub(super) const MAX_CMAP_ENTRIES: usize = 1 << 16;

/// Most UTF-16 code units one code may map to in a `ToUnicode` CMap (a ligature is a few;
/// a `bfrange` copies its destination for every code of the range).
const MAX_UNITS: usize = 256;

/// Most UTF-16 code units one `ToUnicode` CMap may map its codes to, in all (entries that
/// map a code again included): four per code of a full map. Without it a `bfrange` of
/// 65,536 codes to [`MAX_UNITS`] units each would write some 65 MB from a few hundred bytes.
pub(super) const MAX_CMAP_UNITS: usize = 4 * MAX_CMAP_ENTRIES;

/// Most values kept from one CMap while it is read, the items of arrays and dictionaries
/// included: enough for a full map of [`MAX_CMAP_ENTRIES`] codes as `bfchar` pairs or as
/// `bfrange`s with arrays.
const MAX_CMAP_ITEMS: usize = 4 * MAX_CMAP_ENTRIES;

/// Most code ranges kept in a composite font's encoding (pdf-extract scans them for every
/// byte of text shown).
const MAX_CODE_RANGES: usize = 256;

/// Most widths kept for a composite font (CIDs run from 0 to 65,535).
const MAX_WIDTHS: usize = 1 << 16;

/// Codes whose widths a simple font keeps: it shows one-byte codes, 0–255.
const SIMPLE_CODES: usize = 256;

/// Bytes charged to the work budget, once, for each object of a width table kept (a width;
/// in a composite font's `W`, also each run's first code and array) when its font is built:
/// its `Object` in the rebuilt document (120 bytes with lopdf 0.42) and what pdf-extract
/// makes of it on each page that uses the font: an item of the list it reads the table
/// into (8 bytes) and an entry of its width map (16 bytes in a hash table at most 7/8 full,
/// under 64 with the old table while it grows).
pub(super) const WIDTH_OBJECT_BYTES: usize = size_of::<Object>() + 72;

/// Bytes charged to the work budget, once, for each code of a `ToUnicode` map kept when its
/// font is built: the entry pdf-extract makes of it in its map on each page that uses the
/// font (a code, a `String` and the string's allocation, in a hash table at most 7/8 full).
pub(super) const UNICODE_ENTRY_BYTES: usize = 80;

/// The standard 14 fonts, whose widths pdf-extract knows.
const CORE_FONTS: [&[u8]; 14] = [
    b"Courier",
    b"Courier-Bold",
    b"Courier-BoldOblique",
    b"Courier-Oblique",
    b"Helvetica",
    b"Helvetica-Bold",
    b"Helvetica-BoldOblique",
    b"Helvetica-Oblique",
    b"Symbol",
    b"Times-Bold",
    b"Times-BoldItalic",
    b"Times-Italic",
    b"Times-Roman",
    b"ZapfDingbats",
];

/// A sanitized font, ready to be added to the document handed to pdf-extract.
pub(super) struct Font {
    /// The font dictionary; `ToUnicode` and `Encoding` streams are in `streams` and are
    /// referred to by the keys given there.
    pub(super) dict: Dictionary,
    /// Streams to add to the document, with the key of `dict` (or of the descendant font)
    /// that refers to each.
    pub(super) streams: Vec<(&'static [u8], Stream)>,
    /// What pdf-extract does to build the font on each page that uses it (bytes parsed
    /// and table entries made).
    pub(super) cost: usize,
    /// What it does per byte of text shown with the font.
    pub(super) cost_per_byte: usize,
    /// Bytes its width table and `ToUnicode` map take in memory ([`WIDTH_OBJECT_BYTES`] per
    /// width object, [`UNICODE_ENTRY_BYTES`] per code): in the rebuilt document for as long as
    /// it is held, in pdf-extract on a page that uses it.
    /// Taken from the work budget once, when the font is built (unlike `cost`, which every
    /// page that uses the font takes again).
    pub(super) memory: usize,
}

/// The object `o` points at (following references within lopdf's limit).
pub(super) fn deref<'a>(doc: &'a Document, o: &'a Object) -> Option<&'a Object> {
    doc.dereference(o).ok().map(|(_, o)| o)
}

fn get<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a Object> {
    deref(doc, dict.get(key).ok()?)
}

fn name<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a [u8]> {
    get(doc, dict, key)?.as_name().ok()
}

/// A finite number (following references).
pub(super) fn number(doc: &Document, o: &Object) -> Option<f64> {
    match deref(doc, o)? {
        Object::Integer(i) => Some(*i as f64),
        Object::Real(r) => Some(f64::from(*r)).filter(|r| r.is_finite()),
        _ => None,
    }
}

fn int(doc: &Document, dict: &Dictionary, key: &[u8]) -> Option<i64> {
    get(doc, dict, key)?.as_i64().ok()
}

fn array<'a>(doc: &'a Document, dict: &'a Dictionary, key: &[u8]) -> Option<&'a Vec<Object>> {
    get(doc, dict, key)?.as_array().ok()
}

/// The named encodings pdf-extract reads without panicking (its MacExpertEncoding table maps
/// some codes to lone UTF-16 surrogates, which it then decodes with `unwrap`).
fn is_named_encoding(name: &[u8]) -> bool {
    matches!(name, b"MacRomanEncoding" | b"WinAnsiEncoding")
}

/// Glyph names pdf-extract's glyph list maps to lone UTF-16 surrogates (TeX's private
/// names): a code given one of them would make it panic.
const SURROGATE_GLYPHS: [&[u8]; 13] = [
    b"FFIsmall",
    b"FFLsmall",
    b"FFsmall",
    b"FIsmall",
    b"FLsmall",
    b"Germandblssmall",
    b"SSsmall",
    b"altselector",
    b"ascendercompwordmark",
    b"capitalcompwordmark",
    b"emptyslot",
    b"interrobangdown",
    b"ringfitted",
];

/// Whether pdf-extract can take `name` as a glyph name in an encoding.
fn is_safe_glyph(name: &[u8]) -> bool {
    !name.starts_with(b"\xfe\xff") && !SURROGATE_GLYPHS.contains(&name)
}

/// Sanitizes the font dictionary `font` (see the module docs); `None` when it cannot be used
/// at all (not a dictionary; a composite font without a descendant).
///
/// # Errors
/// [`crate::Error::Limit`] when its streams inflate past the budget.
pub(super) fn sanitize(doc: &Document, font: &Object, budget: &mut Budget) -> Result<Option<Font>> {
    let Some(Object::Dictionary(font)) = deref(doc, font) else { return Ok(None) };
    let subtype = name(doc, font, b"Subtype").unwrap_or(b"Type1");
    let mut out =
        Font { dict: Dictionary::new(), streams: Vec::new(), cost: 0, cost_per_byte: 1, memory: 0 };
    out.dict.set("Type", Object::Name(b"Font".to_vec()));
    // pdf-extract fills unknown glyph names of "FontAwesome" fonts into the ToUnicode map and
    // panics when an entry is already there. The name is made valid UTF-8, so it cannot start
    // with the UTF-16 mark (bytes FE FF) on which pdf-extract's `pdf_to_utf8` unwraps a decode.
    let base = name(doc, font, b"BaseFont").unwrap_or(b"Unknown");
    let base = String::from_utf8_lossy(base).replace("FontAwesome", "Font Awesome").into_bytes();
    out.dict.set("BaseFont", Object::Name(base.clone()));
    let unicode = match get(doc, font, b"ToUnicode") {
        Some(Object::Stream(s)) => match decode::decode(&s.dict, &s.content, budget)? {
            Decoded::Bytes(data) => Some(to_unicode_cmap(&data)),
            Decoded::Image => None,
        },
        _ => None,
    };
    // An empty CMap would not parse: no map at all reads the same.
    if let Some((stream, entries)) = unicode.filter(|(_, entries)| *entries > 0) {
        out.cost += stream.content.len() + entries;
        out.memory += stream.content.len() + entries * UNICODE_ENTRY_BYTES;
        out.streams.push((b"ToUnicode", stream));
    } else if let Some(Object::Name(n)) = get(doc, font, b"ToUnicode")
        && n == b"Identity-H"
    {
        out.dict.set("ToUnicode", Object::Name(n.clone()));
    }
    match subtype {
        b"Type0" => {
            if !composite(doc, font, &mut out, budget)? {
                return Ok(None);
            }
        }
        b"Type3" => {
            out.dict.set("Subtype", Object::Name(b"Type3".to_vec()));
            let encoding = get(doc, font, b"Encoding").and_then(|e| e.as_dict().ok());
            out.dict.set("Encoding", Object::Dictionary(encoding_dict(doc, encoding, None)));
            let mut widths = vec![0.0f64; SIMPLE_CODES];
            if let (Some(first), Some(given)) =
                (int(doc, font, b"FirstChar"), array(doc, font, b"Widths"))
            {
                // Only the widths of codes 0–255 are read: those before code 0 are skipped.
                let skip = if first < 0 {
                    usize::try_from(first.unsigned_abs()).unwrap_or(usize::MAX)
                } else {
                    0
                };
                for (i, w) in given.iter().enumerate().skip(skip).take(256) {
                    let code = i64::try_from(i).ok().and_then(|i| first.checked_add(i));
                    let slot =
                        code.and_then(|c| usize::try_from(c).ok()).and_then(|c| widths.get_mut(c));
                    if let (Some(slot), Some(w)) = (slot, number(doc, w)) {
                        *slot = w;
                    }
                }
            }
            out.dict.set("FirstChar", 0);
            out.dict.set("LastChar", 255);
            out.dict.set(
                "Widths",
                widths.into_iter().map(|w| Object::Real(w as f32)).collect::<Vec<_>>(),
            );
            out.cost += SIMPLE_CODES;
            out.memory += SIMPLE_CODES * WIDTH_OBJECT_BYTES;
        }
        _ => simple(doc, font, subtype, &base, &mut out, budget)?,
    }
    Ok(Some(out))
}

/// A simple font (Type 1, TrueType, …).
fn simple(
    doc: &Document,
    font: &Dictionary,
    subtype: &[u8],
    base: &[u8],
    out: &mut Font,
    budget: &mut Budget,
) -> Result<()> {
    let subtype = if subtype == b"TrueType" { b"TrueType".as_slice() } else { b"Type1" };
    out.dict.set("Subtype", Object::Name(subtype.to_vec()));
    let mut has_encoding = true;
    match get(doc, font, b"Encoding") {
        Some(Object::Name(n)) if is_named_encoding(n) => {
            out.dict.set("Encoding", Object::Name(n.clone()))
        }
        Some(Object::Dictionary(d)) => {
            // Differences apply to the named base encoding, else to the font program's
            // built-in encoding (the implicit base for an embedded font).
            let base = match name(doc, d, b"BaseEncoding") {
                Some(n) if is_named_encoding(n) => Vec::new(),
                Some(b"StandardEncoding") => cff::standard_encoding(),
                _ => builtin_encoding(doc, font, subtype, budget)?,
            };
            out.dict.set("Encoding", Object::Dictionary(encoding_dict(doc, Some(d), Some(&base))))
        }
        encoding => {
            // The font program's built-in encoding, which pdf-extract would read from it.
            let builtin = match encoding {
                Some(Object::Name(n)) if n == b"StandardEncoding" => cff::standard_encoding(),
                _ => builtin_encoding(doc, font, subtype, budget)?,
            };
            if builtin.is_empty() {
                has_encoding = false;
            } else {
                out.dict
                    .set("Encoding", Object::Dictionary(encoding_dict(doc, None, Some(&builtin))));
            }
        }
    }
    let widths = match (int(doc, font, b"FirstChar"), array(doc, font, b"Widths")) {
        (Some(first), Some(widths)) if (0..=0xffff).contains(&first) => {
            // Only the widths of codes up to 255 are read (none from a `FirstChar` past it).
            let codes = usize::try_from(first).map_or(0, |f| SIMPLE_CODES.saturating_sub(f));
            let widths: Vec<Object> = widths
                .iter()
                .take(codes)
                .map(|w| Object::Real(number(doc, w).unwrap_or(0.0) as f32))
                .collect();
            out.dict.set("FirstChar", first);
            out.dict.set("LastChar", first + widths.len() as i64 - 1);
            out.cost += widths.len();
            out.memory += widths.len() * WIDTH_OBJECT_BYTES;
            out.dict.set("Widths", widths);
            true
        }
        _ => false,
    };
    if let Some(w) = get(doc, font, b"MissingWidth").and_then(|w| number(doc, w)) {
        out.dict.set("MissingWidth", Object::Real(w as f32));
    }
    // Without an encoding table pdf-extract unwraps one when the ToUnicode map lacks a code:
    // an empty `Differences` dictionary gives the same table as no encoding at all.
    let builtin_widths = !widths && CORE_FONTS.contains(&base);
    // pdf-extract looks the glyph names of the symbolic core fonts up in a table that lacks
    // them (and unwraps) when it has both their built-in widths and an encoding: their own
    // encoding is what they use anyway.
    if builtin_widths && matches!(base, b"Symbol" | b"ZapfDingbats") {
        out.dict.remove(b"Encoding");
        has_encoding = true;
    }
    if !has_encoding && subtype != b"TrueType" && !builtin_widths {
        out.dict.set("Encoding", Object::Dictionary(Dictionary::new()));
    }
    out.cost += SIMPLE_CODES;
    Ok(())
}

/// The `(code, glyph name)` pairs of the built-in encoding of a simple font's embedded
/// program: a Type 1 program's (`FontFile`), or a CFF program's (`FontFile3` of subtype
/// `Type1C`); empty for other programs and for none.
///
/// # Errors
/// [`crate::Error::Limit`] when the program inflates past the budget.
fn builtin_encoding(
    doc: &Document,
    font: &Dictionary,
    subtype: &[u8],
    budget: &mut Budget,
) -> Result<Vec<(u8, Vec<u8>)>> {
    let Some(descriptor) = get(doc, font, b"FontDescriptor").and_then(|d| d.as_dict().ok()) else {
        return Ok(Vec::new());
    };
    let program = |key: &[u8]| get(doc, descriptor, key).and_then(|f| f.as_stream().ok());
    let (stream, cff) = match (program(b"FontFile"), program(b"FontFile3")) {
        (Some(s), _) if subtype == b"Type1" => (s, false),
        (_, Some(s)) if name(doc, &s.dict, b"Subtype") == Some(b"Type1C") => (s, true),
        _ => return Ok(Vec::new()),
    };
    let mut pairs = match decode::decode(&stream.dict, &stream.content, budget)? {
        Decoded::Bytes(data) if cff => cff::builtin_encoding(&data),
        Decoded::Bytes(data) => type1_encoding(&data),
        Decoded::Image => Vec::new(),
    };
    pairs.retain(|(_, name)| is_safe_glyph(name));
    Ok(pairs)
}

/// `<< /BaseEncoding … /Differences […] >>` from a font's encoding dictionary, or from the
/// `(code, glyph name)` pairs of a font program's built-in encoding.
fn encoding_dict(
    doc: &Document,
    given: Option<&Dictionary>,
    builtin: Option<&[(u8, Vec<u8>)]>,
) -> Dictionary {
    let mut out = Dictionary::new();
    // The glyph name of each code: later entries override earlier ones, as in pdf-extract.
    let mut table: Vec<Option<Vec<u8>>> = vec![None; 256];
    for (code, name) in builtin.unwrap_or_default() {
        if let Some(slot) = table.get_mut(usize::from(*code)) {
            *slot = Some(name.clone());
        }
    }
    if let Some(given) = given {
        if let Some(base) = name(doc, given, b"BaseEncoding").filter(|n| is_named_encoding(n)) {
            out.set("BaseEncoding", Object::Name(base.to_vec()));
        }
        let mut code: Option<i64> = None;
        for item in array(doc, given, b"Differences").map(Vec::as_slice).unwrap_or_default() {
            match deref(doc, item) {
                Some(Object::Integer(i)) => code = Some(*i),
                Some(Object::Name(n)) => {
                    if let Some(slot) =
                        code.and_then(|c| usize::try_from(c).ok()).and_then(|c| table.get_mut(c))
                        && is_safe_glyph(n)
                    {
                        *slot = Some(n.clone());
                    }
                    code = code.map(|c| c.saturating_add(1));
                }
                _ => {}
            }
        }
    }
    let mut differences = Vec::new();
    for (code, name) in (0i64..).zip(table) {
        if let Some(name) = name {
            differences.push(Object::Integer(code));
            differences.push(Object::Name(name));
        }
    }
    if !differences.is_empty() {
        out.set("Differences", differences);
    }
    out
}

/// A composite (Type 0) font; `false` when it has no usable descendant font.
fn composite(
    doc: &Document,
    font: &Dictionary,
    out: &mut Font,
    budget: &mut Budget,
) -> Result<bool> {
    let Some(Object::Dictionary(cid)) =
        array(doc, font, b"DescendantFonts").and_then(|d| d.first()).and_then(|d| deref(doc, d))
    else {
        return Ok(false);
    };
    out.dict.set("Subtype", Object::Name(b"Type0".to_vec()));
    let identity = Object::Name(b"Identity-H".to_vec());
    match get(doc, font, b"Encoding") {
        Some(Object::Name(n)) if n == b"Identity-V" => {
            out.dict.set("Encoding", Object::Name(n.clone()))
        }
        Some(Object::Stream(s)) => match decode::decode(&s.dict, &s.content, budget)? {
            Decoded::Bytes(data) => match encoding_cmap(&data) {
                Some((stream, ranges)) => {
                    out.cost += stream.content.len();
                    out.cost_per_byte += ranges;
                    out.streams.push((b"Encoding", stream));
                }
                None => out.dict.set("Encoding", identity),
            },
            Decoded::Image => out.dict.set("Encoding", identity),
        },
        // Identity-H, and predefined CMaps pdf-extract does not know, read as Identity-H.
        _ => out.dict.set("Encoding", identity),
    }
    let mut descendant = Dictionary::new();
    descendant.set("Type", Object::Name(b"Font".to_vec()));
    descendant.set("FontDescriptor", Object::Dictionary(Dictionary::new()));
    if let Some(dw) = int(doc, cid, b"DW") {
        descendant.set("DW", dw);
    }
    let widths = cid_widths(doc, array(doc, cid, b"W").map(Vec::as_slice).unwrap_or_default());
    // The runs' first codes and arrays, and the widths in them: pdf-extract reads each run
    // and maps each width on every page that uses the font.
    let objects =
        widths.len() + widths.iter().filter_map(|o| o.as_array().ok()).map(Vec::len).sum::<usize>();
    out.cost += objects;
    out.memory += objects * WIDTH_OBJECT_BYTES;
    descendant.set("W", widths);
    out.dict.set("DescendantFonts", vec![Object::Dictionary(descendant)]);
    Ok(true)
}

/// A composite font's `W` as `c [w …]` runs (ranges `c1 c2 w` expanded), at most
/// [`MAX_WIDTHS`] widths in all.
fn cid_widths(doc: &Document, w: &[Object]) -> Vec<Object> {
    let mut out = Vec::new();
    let mut kept = 0usize;
    let mut i = 0;
    while let Some(first) = w.get(i).and_then(|o| deref(doc, o)).and_then(|o| o.as_i64().ok()) {
        let next = w.get(i + 1).and_then(|o| deref(doc, o));
        let run: Vec<Object> = match next {
            Some(Object::Array(widths)) => {
                i += 2;
                let widths = widths.iter().take(MAX_WIDTHS - kept);
                widths.map(|w| Object::Real(number(doc, w).unwrap_or(0.0) as f32)).collect()
            }
            Some(last) => {
                let (Some(last), Some(width)) =
                    (last.as_i64().ok(), w.get(i + 2).and_then(|o| number(doc, o)))
                else {
                    break;
                };
                i += 3;
                let count =
                    usize::try_from(last.saturating_sub(first).saturating_add(1)).unwrap_or(0);
                vec![Object::Real(width as f32); count.min(MAX_WIDTHS - kept)]
            }
            None => break,
        };
        let run: Vec<Object> = run.into_iter().take(MAX_WIDTHS - kept).collect();
        kept += run.len();
        if !(0..=i64::from(u32::MAX)).contains(&first) || run.is_empty() {
            continue;
        }
        out.push(Object::Integer(first));
        out.push(Object::Array(run));
        if kept >= MAX_WIDTHS {
            break;
        }
    }
    out
}

/// The `(code, glyph name)` pairs of a Type 1 font program's built-in encoding
/// (`dup 65 /A put` between `/Encoding` and `def`, or `/Encoding StandardEncoding def`, in
/// the clear-text part).
fn type1_encoding(program: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut lexer = Lexer::new(program);
    let mut pairs = Vec::new();
    let mut in_encoding = false;
    let mut last: [Option<Token<'_>>; 2] = [None, None];
    while let Some(token) = lexer.next_token() {
        match &token {
            Token::Keyword(b"eexec") => break,
            Token::Keyword(b"StandardEncoding") if matches!(&last[1], Some(Token::Name(n)) if n == b"Encoding") =>
            {
                return cff::standard_encoding();
            }
            Token::Name(n) if n == b"Encoding" && pairs.is_empty() => in_encoding = true,
            Token::Keyword(b"def") if in_encoding && !pairs.is_empty() => break,
            Token::Keyword(b"put") if in_encoding => {
                if let [Some(Token::Int(code)), Some(Token::Name(name))] = &last
                    && let Ok(code) = u8::try_from(*code)
                    && is_safe_glyph(name)
                {
                    pairs.push((code, name.clone()));
                }
            }
            _ => {}
        }
        let [_, previous] = std::mem::take(&mut last);
        last = [previous, Some(token)];
    }
    pairs
}

/// The code (big-endian) of a CMap source string of 1 to 4 bytes.
fn code(s: &[u8]) -> Option<u32> {
    (1..=4).contains(&s.len()).then(|| s.iter().fold(0u32, |acc, &b| acc << 8 | u32::from(b)))
}

/// UTF-16 code units of a CMap destination string (of at most [`MAX_UNITS`]).
fn units(s: &[u8]) -> Option<Vec<u16>> {
    if s.is_empty() || !s.len().is_multiple_of(2) || s.len() > 2 * MAX_UNITS {
        return None;
    }
    Some(
        s.chunks(2)
            .map(|c| {
                u16::from_be_bytes([
                    c.first().copied().unwrap_or(0),
                    c.get(1).copied().unwrap_or(0),
                ])
            })
            .collect(),
    )
}

/// The operands between CMap operators: `(operator, values)` for each `begin…` section.
/// At most [`MAX_CMAP_ITEMS`] values are kept in all, the items of arrays and dictionaries
/// included (an array of 65,536 `<>` would otherwise hold 16 times its bytes): reading stops
/// at the value that passes it, and the section it is in ends there.
pub(super) fn cmap_sections(data: &[u8]) -> Vec<(Vec<u8>, Vec<Value>)> {
    let mut lexer = Lexer::new(data);
    let mut sections = Vec::new();
    let mut current: Option<(Vec<u8>, Vec<Value>)> = None;
    let mut items = 0usize;
    while let Some(token) = lexer.next_token() {
        match token {
            Token::Keyword(op) if op.starts_with(b"begin") => {
                current = Some((op.to_vec(), Vec::new()))
            }
            Token::Keyword(op) if op.starts_with(b"end") => sections.extend(current.take()),
            token => {
                // Items kept inside the value: no more than are left.
                let left = MAX_CMAP_ITEMS.saturating_sub(items).min(MAX_CMAP_ENTRIES);
                let Ok(v) = value::read_value(&mut lexer, token, left) else { break };
                if let Some((_, values)) = current.as_mut() {
                    items += count_values(&v);
                    if items > MAX_CMAP_ITEMS {
                        sections.extend(current.take());
                        break;
                    }
                    values.push(v);
                }
            }
        }
    }
    sections
}

/// The values in `v`: itself and every item of its arrays and dictionaries, however nested.
pub(super) fn count_values(v: &Value) -> usize {
    let mut count = 0;
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        count += 1;
        match v {
            Value::Array(items) => stack.extend(items),
            Value::Dict(entries) => stack.extend(entries.iter().map(|(_, v)| v)),
            _ => {}
        }
    }
    count
}

/// What the entries of a `ToUnicode` CMap read so far add up to, against
/// [`MAX_CMAP_ENTRIES`] and [`MAX_CMAP_UNITS`].
#[derive(Default)]
struct Tally {
    codes: usize,
    units: usize,
}

impl Tally {
    /// Whether a cap is reached: nothing more is read.
    fn is_full(&self) -> bool {
        self.codes >= MAX_CMAP_ENTRIES || self.units >= MAX_CMAP_UNITS
    }

    /// Counts one code mapped to `units` units; `false` (and full from now on) when that
    /// would pass a cap.
    fn add(&mut self, units: usize) -> bool {
        if self.is_full() || self.units + units > MAX_CMAP_UNITS {
            self.units = MAX_CMAP_UNITS;
            return false;
        }
        self.codes += 1;
        self.units += units;
        true
    }
}

/// A `ToUnicode` CMap rewritten flat (see the module docs), with the number of codes.
/// Entries are read until one would pass [`MAX_CMAP_ENTRIES`] codes or [`MAX_CMAP_UNITS`]
/// units (entries that map a code again included); the rest is left out.
fn to_unicode_cmap(data: &[u8]) -> (Stream, usize) {
    let mut map: BTreeMap<u32, Vec<u16>> = BTreeMap::new();
    let mut tally = Tally::default();
    for (op, values) in cmap_sections(data) {
        match op.as_slice() {
            b"beginbfchar" => {
                for pair in values.chunks_exact(2) {
                    if let [Value::Str(src), Value::Str(dst)] = pair
                        && let (Some(c), Some(u)) = (code(src), units(dst))
                    {
                        if !tally.add(u.len()) {
                            break;
                        }
                        map.insert(c, u);
                    }
                }
            }
            b"beginbfrange" => {
                for triple in values.chunks_exact(3) {
                    let [Value::Str(lo), Value::Str(hi), dst] = triple else { continue };
                    let (Some(lo), Some(hi)) = (code(lo), code(hi)) else { continue };
                    if hi < lo {
                        continue;
                    }
                    match dst {
                        Value::Str(dst) => {
                            let Some(mut u) = units(dst) else { continue };
                            for c in lo..=hi {
                                if !tally.add(u.len()) {
                                    break;
                                }
                                map.insert(c, u.clone());
                                if let Some(last) = u.last_mut() {
                                    *last = last.wrapping_add(1);
                                }
                            }
                        }
                        Value::Array(dsts) => {
                            for (c, dst) in (lo..=hi).zip(dsts) {
                                if let Value::Str(dst) = dst
                                    && let Some(u) = units(dst)
                                {
                                    if !tally.add(u.len()) {
                                        break;
                                    }
                                    map.insert(c, u);
                                }
                            }
                        }
                        _ => {}
                    }
                    if tally.is_full() {
                        break;
                    }
                }
            }
            _ => {}
        }
        if tally.is_full() {
            break;
        }
    }
    // Only what pdf-extract decodes without panicking: valid UTF-16.
    map.retain(|_, u| String::from_utf16(u).is_ok());
    let entries = map.len();
    (Stream::new(Dictionary::new(), write_to_unicode(&map).into_bytes()), entries)
}

/// Writes `map` as `bfrange`s (runs of one BMP character each) and `bfchar`s.
fn write_to_unicode(map: &BTreeMap<u32, Vec<u16>>) -> String {
    let hex = |c: u32| if c > 0xffff { format!("{c:08x}") } else { format!("{c:04x}") };
    let mut ranges: Vec<(u32, u32, u16)> = Vec::new();
    let mut chars: Vec<(u32, &Vec<u16>)> = Vec::new();
    for (&c, u) in map {
        if let [unit] = u.as_slice() {
            if let Some((lo, hi, start)) = ranges.last_mut() {
                let offset = c.wrapping_sub(*lo);
                if c == *hi + 1 && u32::from(*start) + offset == u32::from(*unit) && c & 0xff != 0 {
                    *hi = c;
                    continue;
                }
            }
            ranges.push((c, c, *unit));
        } else {
            chars.push((c, u));
        }
    }
    let mut out = String::new();
    for block in ranges.chunks(100) {
        let _ = writeln!(out, "{} beginbfrange", block.len());
        for (lo, hi, start) in block {
            let _ = writeln!(out, "<{}> <{}> <{start:04x}>", hex(*lo), hex(*hi));
        }
        out.push_str("endbfrange\n");
    }
    for block in chars.chunks(100) {
        let _ = writeln!(out, "{} beginbfchar", block.len());
        for (c, u) in block {
            let dst: String = u.iter().map(|unit| format!("{unit:04x}")).collect();
            let _ = writeln!(out, "<{}> <{dst}>", hex(*c));
        }
        out.push_str("endbfchar\n");
    }
    out
}

/// The CID offset of a `cidrange` or `cidchar` whose highest code is `hi`, as pdf-extract
/// reads it (a negative one as 0); `None` when pdf-extract would overflow adding a code of
/// the range to it.
fn cid_offset(hi: u32, cid: i64) -> Option<u32> {
    let cid = u32::try_from(cid).unwrap_or(0);
    hi.checked_add(cid).map(|_| cid)
}

/// A composite font's encoding CMap rewritten flat (see the module docs), with the number of
/// ranges pdf-extract scans per byte shown; `None` when it defines no code space.
fn encoding_cmap(data: &[u8]) -> Option<(Stream, usize)> {
    let mut spaces: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut cids: Vec<(Vec<u8>, Vec<u8>, u32)> = Vec::new();
    for (op, values) in cmap_sections(data) {
        match op.as_slice() {
            b"begincodespacerange" => {
                for pair in values.chunks_exact(2) {
                    if let [Value::Str(lo), Value::Str(hi)] = pair
                        && lo.len() == hi.len()
                        && code(lo).is_some()
                        && spaces.len() < MAX_CODE_RANGES
                    {
                        spaces.push((lo.clone(), hi.clone()));
                    }
                }
            }
            b"begincidrange" => {
                for triple in values.chunks_exact(3) {
                    if let [Value::Str(lo), Value::Str(hi), Value::Int(cid)] = triple
                        && code(lo).is_some()
                        && let Some(hi_code) = code(hi)
                        && let Some(cid) = cid_offset(hi_code, *cid)
                        && cids.len() < MAX_CODE_RANGES
                    {
                        cids.push((lo.clone(), hi.clone(), cid));
                    }
                }
            }
            b"begincidchar" => {
                for pair in values.chunks_exact(2) {
                    if let [Value::Str(c), Value::Int(cid)] = pair
                        && let Some(code) = code(c)
                        && let Some(cid) = cid_offset(code, *cid)
                        && cids.len() < MAX_CODE_RANGES
                    {
                        cids.push((c.clone(), c.clone(), cid));
                    }
                }
            }
            _ => {}
        }
    }
    if spaces.is_empty() {
        return None;
    }
    let hex = |s: &[u8]| s.iter().map(|b| format!("{b:02x}")).collect::<String>();
    let mut out = format!("{} begincodespacerange\n", spaces.len());
    for (lo, hi) in &spaces {
        let _ = writeln!(out, "<{}> <{}>", hex(lo), hex(hi));
    }
    out.push_str("endcodespacerange\n");
    // One range per block: pdf-extract misreads a block of several.
    for (lo, hi, cid) in &cids {
        let _ = writeln!(out, "1 begincidrange\n<{}> <{}> {cid}\nendcidrange", hex(lo), hex(hi));
    }
    let ranges = spaces.len() + cids.len();
    Some((Stream::new(Dictionary::new(), out.into_bytes()), ranges))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn to_unicode_is_rewritten_flat_and_bounded() {
        let cmap = b"2 beginbfchar <01> <0041> <02> <D800> endbfchar\n\
                     1 beginbfrange <0010> <0012> <0061> endbfrange\n\
                     1 beginbfrange <20> <21> [<00660069> <0066006C>] endbfrange";
        let (stream, entries) = to_unicode_cmap(cmap);
        assert_eq!(entries, 6, "the lone surrogate is left out");
        let text = String::from_utf8(stream.content).expect("ascii");
        assert!(text.contains("<0010> <0012> <0061>"), "{text}");
        assert!(text.contains("<0020> <00660069>"), "{text}");
        assert!(!text.contains("d800"), "{text}");
        let (_, entries) =
            to_unicode_cmap(b"1 beginbfrange <00000000> <FFFFFFFF> <0041> endbfrange");
        assert!(entries <= MAX_CMAP_ENTRIES);
    }

    #[test]
    fn encoding_cmap_keeps_one_cidrange_per_block() {
        let cmap = b"1 begincodespacerange <0000> <FFFF> endcodespacerange\n\
                     2 begincidrange <0000> <00FF> 0 <0100> <01FF> 500 endcidrange\n\
                     1 begincidchar <0200> 7 endcidchar";
        let (stream, ranges) = encoding_cmap(cmap).expect("has a code space");
        assert_eq!(ranges, 4);
        let text = String::from_utf8(stream.content).expect("ascii");
        assert_eq!(text.matches("1 begincidrange").count(), 3);
        assert!(encoding_cmap(b"1 begincidrange <00> <ff> 0 endcidrange").is_none());
    }

    #[test]
    fn type1_builtin_encoding() {
        let program = b"%!PS-AdobeFont-1.0\n/Encoding 256 array\n0 1 255 {1 index exch /.notdef put} for\n\
                        dup 65 /A put\ndup 300 /B put\ndup 97 /a put\nreadonly def\ncurrentfile eexec \x80\x81 dup 66 /C put";
        assert_eq!(type1_encoding(program), [(65, b"A".to_vec()), (97, b"a".to_vec())]);
    }
}
