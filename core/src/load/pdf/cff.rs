//! The built-in encoding of a CFF font program (a simple font's `FontFile3` of subtype
//! `Type1C`), read as `(code, glyph name)` pairs so that it can be handed to pdf-extract as
//! `Differences`, as a Type 1 program's is.
//!
//! Only the tables the encoding needs are read: the header, the Name, Top DICT and String
//! INDEXes, the Top DICT's `charset`, `Encoding` and `CharStrings` offsets, the CharStrings
//! INDEX's count, the charset and the encoding. Every read is bounds-checked, nothing
//! recurses, and each table is walked once (at most 65,535 glyphs; an encoding's ranges may
//! give a code many times, the last one is kept), so the work is linear in the program's
//! size; glyph names are copied once per code, so at most 256 of them. A program that is broken anywhere gives no pairs.

/// Names 0–390 of the CFF specification's standard strings (Adobe Technical Note 5176,
/// appendix A): string ids below [`STANDARD_STRINGS`]`.len()` name these, later ones index
/// the font's String INDEX.
const STANDARD_STRINGS: [&str; 391] = [
    ".notdef",
    "space",
    "exclam",
    "quotedbl",
    "numbersign",
    "dollar",
    "percent",
    "ampersand",
    "quoteright",
    "parenleft",
    "parenright",
    "asterisk",
    "plus",
    "comma",
    "hyphen",
    "period",
    "slash",
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "colon",
    "semicolon",
    "less",
    "equal",
    "greater",
    "question",
    "at",
    "A",
    "B",
    "C",
    "D",
    "E",
    "F",
    "G",
    "H",
    "I",
    "J",
    "K",
    "L",
    "M",
    "N",
    "O",
    "P",
    "Q",
    "R",
    "S",
    "T",
    "U",
    "V",
    "W",
    "X",
    "Y",
    "Z",
    "bracketleft",
    "backslash",
    "bracketright",
    "asciicircum",
    "underscore",
    "quoteleft",
    "a",
    "b",
    "c",
    "d",
    "e",
    "f",
    "g",
    "h",
    "i",
    "j",
    "k",
    "l",
    "m",
    "n",
    "o",
    "p",
    "q",
    "r",
    "s",
    "t",
    "u",
    "v",
    "w",
    "x",
    "y",
    "z",
    "braceleft",
    "bar",
    "braceright",
    "asciitilde",
    "exclamdown",
    "cent",
    "sterling",
    "fraction",
    "yen",
    "florin",
    "section",
    "currency",
    "quotesingle",
    "quotedblleft",
    "guillemotleft",
    "guilsinglleft",
    "guilsinglright",
    "fi",
    "fl",
    "endash",
    "dagger",
    "daggerdbl",
    "periodcentered",
    "paragraph",
    "bullet",
    "quotesinglbase",
    "quotedblbase",
    "quotedblright",
    "guillemotright",
    "ellipsis",
    "perthousand",
    "questiondown",
    "grave",
    "acute",
    "circumflex",
    "tilde",
    "macron",
    "breve",
    "dotaccent",
    "dieresis",
    "ring",
    "cedilla",
    "hungarumlaut",
    "ogonek",
    "caron",
    "emdash",
    "AE",
    "ordfeminine",
    "Lslash",
    "Oslash",
    "OE",
    "ordmasculine",
    "ae",
    "dotlessi",
    "lslash",
    "oslash",
    "oe",
    "germandbls",
    "onesuperior",
    "logicalnot",
    "mu",
    "trademark",
    "Eth",
    "onehalf",
    "plusminus",
    "Thorn",
    "onequarter",
    "divide",
    "brokenbar",
    "degree",
    "thorn",
    "threequarters",
    "twosuperior",
    "registered",
    "minus",
    "eth",
    "multiply",
    "threesuperior",
    "copyright",
    "Aacute",
    "Acircumflex",
    "Adieresis",
    "Agrave",
    "Aring",
    "Atilde",
    "Ccedilla",
    "Eacute",
    "Ecircumflex",
    "Edieresis",
    "Egrave",
    "Iacute",
    "Icircumflex",
    "Idieresis",
    "Igrave",
    "Ntilde",
    "Oacute",
    "Ocircumflex",
    "Odieresis",
    "Ograve",
    "Otilde",
    "Scaron",
    "Uacute",
    "Ucircumflex",
    "Udieresis",
    "Ugrave",
    "Yacute",
    "Ydieresis",
    "Zcaron",
    "aacute",
    "acircumflex",
    "adieresis",
    "agrave",
    "aring",
    "atilde",
    "ccedilla",
    "eacute",
    "ecircumflex",
    "edieresis",
    "egrave",
    "iacute",
    "icircumflex",
    "idieresis",
    "igrave",
    "ntilde",
    "oacute",
    "ocircumflex",
    "odieresis",
    "ograve",
    "otilde",
    "scaron",
    "uacute",
    "ucircumflex",
    "udieresis",
    "ugrave",
    "yacute",
    "ydieresis",
    "zcaron",
    "exclamsmall",
    "Hungarumlautsmall",
    "dollaroldstyle",
    "dollarsuperior",
    "ampersandsmall",
    "Acutesmall",
    "parenleftsuperior",
    "parenrightsuperior",
    "twodotenleader",
    "onedotenleader",
    "zerooldstyle",
    "oneoldstyle",
    "twooldstyle",
    "threeoldstyle",
    "fouroldstyle",
    "fiveoldstyle",
    "sixoldstyle",
    "sevenoldstyle",
    "eightoldstyle",
    "nineoldstyle",
    "commasuperior",
    "threequartersemdash",
    "periodsuperior",
    "questionsmall",
    "asuperior",
    "bsuperior",
    "centsuperior",
    "dsuperior",
    "esuperior",
    "isuperior",
    "lsuperior",
    "msuperior",
    "nsuperior",
    "osuperior",
    "rsuperior",
    "ssuperior",
    "tsuperior",
    "ff",
    "ffi",
    "ffl",
    "parenleftinferior",
    "parenrightinferior",
    "Circumflexsmall",
    "hyphensuperior",
    "Gravesmall",
    "Asmall",
    "Bsmall",
    "Csmall",
    "Dsmall",
    "Esmall",
    "Fsmall",
    "Gsmall",
    "Hsmall",
    "Ismall",
    "Jsmall",
    "Ksmall",
    "Lsmall",
    "Msmall",
    "Nsmall",
    "Osmall",
    "Psmall",
    "Qsmall",
    "Rsmall",
    "Ssmall",
    "Tsmall",
    "Usmall",
    "Vsmall",
    "Wsmall",
    "Xsmall",
    "Ysmall",
    "Zsmall",
    "colonmonetary",
    "onefitted",
    "rupiah",
    "Tildesmall",
    "exclamdownsmall",
    "centoldstyle",
    "Lslashsmall",
    "Scaronsmall",
    "Zcaronsmall",
    "Dieresissmall",
    "Brevesmall",
    "Caronsmall",
    "Dotaccentsmall",
    "Macronsmall",
    "figuredash",
    "hypheninferior",
    "Ogoneksmall",
    "Ringsmall",
    "Cedillasmall",
    "questiondownsmall",
    "oneeighth",
    "threeeighths",
    "fiveeighths",
    "seveneighths",
    "onethird",
    "twothirds",
    "zerosuperior",
    "foursuperior",
    "fivesuperior",
    "sixsuperior",
    "sevensuperior",
    "eightsuperior",
    "ninesuperior",
    "zeroinferior",
    "oneinferior",
    "twoinferior",
    "threeinferior",
    "fourinferior",
    "fiveinferior",
    "sixinferior",
    "seveninferior",
    "eightinferior",
    "nineinferior",
    "centinferior",
    "dollarinferior",
    "periodinferior",
    "commainferior",
    "Agravesmall",
    "Aacutesmall",
    "Acircumflexsmall",
    "Atildesmall",
    "Adieresissmall",
    "Aringsmall",
    "AEsmall",
    "Ccedillasmall",
    "Egravesmall",
    "Eacutesmall",
    "Ecircumflexsmall",
    "Edieresissmall",
    "Igravesmall",
    "Iacutesmall",
    "Icircumflexsmall",
    "Idieresissmall",
    "Ethsmall",
    "Ntildesmall",
    "Ogravesmall",
    "Oacutesmall",
    "Ocircumflexsmall",
    "Otildesmall",
    "Odieresissmall",
    "OEsmall",
    "Oslashsmall",
    "Ugravesmall",
    "Uacutesmall",
    "Ucircumflexsmall",
    "Udieresissmall",
    "Yacutesmall",
    "Thornsmall",
    "Ydieresissmall",
    "001.000",
    "001.001",
    "001.002",
    "001.003",
    "Black",
    "Bold",
    "Book",
    "Light",
    "Medium",
    "Regular",
    "Roman",
    "Semibold",
];

/// The Standard encoding (encoding offset 0) as `(first code, first string id, count)`
/// runs: codes 32–126 name string ids 1–95, and 54 codes from 161 up name ids 96–149.
const STANDARD_ENCODING: [(u8, u16, u8); 14] = [
    (32, 1, 95),
    (161, 96, 15),
    (177, 111, 4),
    (182, 115, 8),
    (191, 123, 1),
    (193, 124, 8),
    (202, 132, 2),
    (205, 134, 4),
    (225, 138, 1),
    (227, 139, 1),
    (232, 140, 4),
    (241, 144, 1),
    (245, 145, 1),
    (248, 146, 4),
];

/// A byte range of the program: one item of an INDEX.
type Item = std::ops::Range<usize>;

/// Reads a big-endian unsigned integer of `size` (1–4) bytes at `at`.
fn uint(data: &[u8], at: usize, size: usize) -> Option<usize> {
    let bytes = data.get(at..at.checked_add(size)?)?;
    Some(bytes.iter().fold(0usize, |acc, &b| acc << 8 | usize::from(b)))
}

/// An INDEX at `at`: its items (at most `max_items` of them kept) and the offset just past it.
fn index(data: &[u8], at: usize, max_items: usize) -> Option<(Vec<Item>, usize)> {
    let count = uint(data, at, 2)?;
    if count == 0 {
        return Some((Vec::new(), at + 2));
    }
    let off_size = uint(data, at + 2, 1)?;
    if !(1..=4).contains(&off_size) {
        return None;
    }
    let offsets_at = at + 3;
    // Item data starts right after the offset array; offsets count from the byte before it.
    let base = offsets_at.checked_add(count.checked_add(1)?.checked_mul(off_size)?)? - 1;
    let offset = |i: usize| uint(data, offsets_at + i * off_size, off_size);
    let end = base.checked_add(offset(count)?)?;
    if end > data.len() {
        return None;
    }
    let mut items = Vec::with_capacity(count.min(max_items));
    let mut start = offset(0)?;
    for i in 1..=count.min(max_items) {
        let next = offset(i)?;
        if next < start {
            return None;
        }
        items.push(base.checked_add(start)?..base.checked_add(next)?);
        start = next;
    }
    Some((items, end))
}

/// The operands and operators of a DICT: `(operator, last operand)` for each entry whose last
/// operand is an integer (all the ones read here are offsets); `12 x` operators are `1200 + x`.
fn dict_entries(dict: &[u8]) -> Vec<(u16, Option<i64>)> {
    let mut entries = Vec::new();
    let mut last: Option<i64> = None;
    let mut i = 0;
    while let Some(&b0) = dict.get(i) {
        let byte = |k: usize| dict.get(i + k).map(|&b| i64::from(b));
        match b0 {
            0..=21 => {
                let op = if b0 == 12 {
                    i += 1;
                    1200 + u16::from(dict.get(i).copied().unwrap_or(0))
                } else {
                    u16::from(b0)
                };
                entries.push((op, last.take()));
                i += 1;
                continue;
            }
            28 => {
                let v = (byte(1).unwrap_or(0) << 8 | byte(2).unwrap_or(0)) as i16;
                last = Some(i64::from(v));
                i += 3;
            }
            29 => {
                let v = (1..=4).fold(0i64, |acc, k| acc << 8 | byte(k).unwrap_or(0)) as i32;
                last = Some(i64::from(v));
                i += 5;
            }
            30 => {
                // A real: nibbles up to the first 0xf; not an offset.
                last = None;
                i += 1;
                while let Some(&b) = dict.get(i) {
                    i += 1;
                    if b & 0x0f == 0x0f || b >> 4 == 0x0f {
                        break;
                    }
                }
            }
            32..=246 => {
                last = Some(i64::from(b0) - 139);
                i += 1;
            }
            247..=250 => {
                last = Some((i64::from(b0) - 247) * 256 + byte(1).unwrap_or(0) + 108);
                i += 2;
            }
            251..=254 => {
                last = Some(-(i64::from(b0) - 251) * 256 - byte(1).unwrap_or(0) - 108);
                i += 2;
            }
            _ => i += 1, // Reserved.
        }
    }
    entries
}

/// The name of string id `sid`.
fn name(data: &[u8], strings: &[Item], sid: usize) -> Option<Vec<u8>> {
    match STANDARD_STRINGS.get(sid) {
        Some(s) => Some(s.as_bytes().to_vec()),
        None => data.get(strings.get(sid - STANDARD_STRINGS.len())?.clone()).map(<[u8]>::to_vec),
    }
}

/// The string id of each glyph (index 0, `.notdef`, included), from the charset at `offset`.
fn charset(data: &[u8], offset: usize, glyphs: usize) -> Option<Vec<usize>> {
    let mut sids = vec![0usize];
    match offset {
        // ISOAdobe: glyph i is string id i.
        0 => sids.extend(1..glyphs.min(229)),
        1 | 2 => return None, // The Expert charsets: no text glyphs.
        _ => {
            let format = *data.get(offset)?;
            let mut at = offset + 1;
            while sids.len() < glyphs {
                match format {
                    0 => {
                        sids.push(uint(data, at, 2)?);
                        at += 2;
                    }
                    1 | 2 => {
                        let first = uint(data, at, 2)?;
                        let left_size = usize::from(format);
                        let left = uint(data, at + 2, left_size)?;
                        at += 2 + left_size;
                        let run = (left + 1).min(glyphs - sids.len());
                        sids.extend(first..first + run);
                    }
                    _ => return None,
                }
            }
        }
    }
    Some(sids)
}

/// The `(code, glyph name)` pairs of the Standard encoding (Type 1 and CFF fonts' usual
/// built-in encoding, and the base of an encoding dictionary's `Differences` when its
/// `BaseEncoding` names it).
pub(super) fn standard_encoding() -> Vec<(u8, Vec<u8>)> {
    let mut pairs = Vec::with_capacity(149);
    for &(first, sid, count) in &STANDARD_ENCODING {
        for k in 0..count {
            let name = STANDARD_STRINGS.get(usize::from(sid + u16::from(k)));
            if let (Some(code), Some(name)) = (first.checked_add(k), name) {
                pairs.push((code, name.as_bytes().to_vec()));
            }
        }
    }
    pairs
}

/// The `(code, glyph name)` pairs of a CFF font program's built-in encoding; empty for a
/// CID-keyed or broken program (see the module docs).
pub(super) fn builtin_encoding(data: &[u8]) -> Vec<(u8, Vec<u8>)> {
    read(data).unwrap_or_default()
}

fn read(data: &[u8]) -> Option<Vec<(u8, Vec<u8>)>> {
    let header_size = uint(data, 2, 1)?;
    let (_, after_names) = index(data, header_size, 0)?;
    let (top, after_top) = index(data, after_names, 1)?;
    let (strings, _) = index(data, after_top, usize::from(u16::MAX))?;
    let entries = dict_entries(data.get(top.first()?.clone())?);
    let offset = |op: u16| {
        entries.iter().rev().find(|(o, _)| *o == op).and_then(|(_, v)| usize::try_from((*v)?).ok())
    };
    if offset(1230).is_some() {
        return None; // ROS: a CID-keyed font maps codes through a CMap, not an encoding.
    }
    let glyphs = uint(data, offset(17)?, 2)?;
    let sids = charset(data, offset(15).unwrap_or(0), glyphs)?;
    // The string id of each code's glyph (a code given twice keeps the last); names are
    // copied once per code at the end.
    let mut codes: Vec<Option<usize>> = vec![None; 256];
    let mut set = |code: u8, sid: Option<usize>| {
        if let (Some(slot), Some(sid)) = (codes.get_mut(usize::from(code)), sid) {
            *slot = Some(sid);
        }
    };
    let glyph_sid = |gid: usize| sids.get(gid).copied();
    match offset(16).unwrap_or(0) {
        0 => return Some(standard_encoding()),
        1 => return None, // The Expert encoding: no text glyphs.
        at => {
            let format = *data.get(at)?;
            let mut gid = 1;
            let mut pos = at + 1;
            match format & 0x7f {
                0 => {
                    let count = *data.get(pos)?;
                    for code in data.get(pos + 1..pos + 1 + usize::from(count))? {
                        set(*code, glyph_sid(gid));
                        gid += 1;
                    }
                    pos += 1 + usize::from(count);
                }
                1 => {
                    let ranges = usize::from(*data.get(pos)?);
                    for r in 0..ranges {
                        let first = *data.get(pos + 1 + 2 * r)?;
                        let left = *data.get(pos + 2 + 2 * r)?;
                        for code in first..=first.saturating_add(left) {
                            set(code, glyph_sid(gid));
                            gid += 1;
                        }
                    }
                    pos += 1 + 2 * ranges;
                }
                _ => return None,
            }
            if format & 0x80 != 0 {
                // Supplements: more codes for glyphs already encoded, by string id.
                let count = usize::from(*data.get(pos)?);
                for s in 0..count {
                    let code = *data.get(pos + 1 + 3 * s)?;
                    let sid = uint(data, pos + 2 + 3 * s, 2)?;
                    set(code, Some(sid));
                }
            }
        }
    }
    let mut pairs: Vec<(u8, Vec<u8>)> = Vec::new();
    for (code, sid) in (0u8..=255).zip(codes) {
        if let Some(name) = sid.and_then(|sid| name(data, &strings, sid)) {
            pairs.push((code, name));
        }
    }
    pairs.retain(|(_, n)| n != b".notdef");
    Some(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CFF program with the given glyph names (the first is `.notdef`, then one glyph per
    /// name) and a format 0 encoding giving glyph `i + 1` the code `codes[i]`, with a
    /// supplement mapping `supplement.0` to the standard string id `supplement.1`.
    fn program(names: &[&str], codes: &[u8], supplement: Option<(u8, u16)>) -> Vec<u8> {
        let index = |items: &[&[u8]]| -> Vec<u8> {
            let mut out = (items.len() as u16).to_be_bytes().to_vec();
            if items.is_empty() {
                return out;
            }
            out.push(4);
            let mut offset = 1u32;
            out.extend(offset.to_be_bytes());
            for item in items {
                offset += item.len() as u32;
                out.extend(offset.to_be_bytes());
            }
            items.iter().for_each(|i| out.extend_from_slice(i));
            out
        };
        let custom: Vec<&str> =
            names.iter().copied().filter(|n| !STANDARD_STRINGS.contains(n)).collect();
        let sid = |n: &str| -> u16 {
            STANDARD_STRINGS.iter().position(|s| *s == n).map_or_else(
                || {
                    (STANDARD_STRINGS.len() + custom.iter().position(|c| *c == n).unwrap_or(0))
                        as u16
                },
                |p| p as u16,
            )
        };
        let strings = index(&custom.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
        let charstrings = index(&vec![&[14u8][..]; names.len() + 1]);
        let mut charset = vec![0u8];
        names.iter().for_each(|n| charset.extend(sid(n).to_be_bytes()));
        let mut encoding = vec![if supplement.is_some() { 0x80 } else { 0 }, codes.len() as u8];
        encoding.extend_from_slice(codes);
        if let Some((code, sid)) = supplement {
            encoding.push(1);
            encoding.push(code);
            encoding.extend(sid.to_be_bytes());
        }
        let int = |v: usize| {
            let mut out = vec![29u8];
            out.extend((v as u32).to_be_bytes());
            out
        };
        // Header, Name INDEX, Top DICT INDEX (fixed size), String INDEX, Global Subr INDEX,
        // then charset, encoding and CharStrings.
        let header = [1u8, 0, 4, 4];
        let names_index = index(&[b"F"]);
        let top_len = 3 * 6;
        let top_index_len = 2 + 1 + 8 + top_len;
        let start = header.len() + names_index.len() + top_index_len + strings.len() + 2;
        let (charset_at, encoding_at) = (start, start + charset.len());
        let charstrings_at = encoding_at + encoding.len();
        let mut top = int(charset_at);
        top.push(15);
        top.extend(int(encoding_at));
        top.push(16);
        top.extend(int(charstrings_at));
        top.push(17);
        let mut out = header.to_vec();
        out.extend(names_index);
        out.extend(index(&[&top]));
        out.extend(strings);
        out.extend([0, 0]);
        out.extend(charset);
        out.extend(encoding);
        out.extend(charstrings);
        out
    }

    #[test]
    fn custom_encoding_with_supplement() {
        let data = program(
            &["fi", "quotedblleft", "endash", "Gamma"],
            &[12, 92, 123, 0],
            Some((200, 145)),
        );
        let pairs = builtin_encoding(&data);
        let as_str: Vec<(u8, &str)> =
            pairs.iter().map(|(c, n)| (*c, std::str::from_utf8(n).unwrap_or("?"))).collect();
        assert_eq!(
            as_str,
            [(0, "Gamma"), (12, "fi"), (92, "quotedblleft"), (123, "endash"), (200, "dotlessi")]
        );
        // Codes given again keep their last glyph, and their names are copied once.
        let data = program(&["fi", "endash", "Gamma"], &[12, 12, 7], Some((7, 145)));
        let pairs = builtin_encoding(&data);
        assert_eq!(pairs, [(7, b"dotlessi".to_vec()), (12, b"endash".to_vec())]);
    }

    #[test]
    fn standard_encoding_and_broken_programs() {
        let mut data = program(&["A"], &[65], None);
        // Point the Top DICT's Encoding at 0 (the Standard encoding): its operand is the
        // second 5-byte integer of the DICT.
        let top = data.windows(2).position(|w| w == [15, 29]).expect("charset operator") + 1;
        data.splice(top + 1..top + 5, [0, 0, 0, 0]);
        let pairs = builtin_encoding(&data);
        assert!(pairs.contains(&(65, b"A".to_vec())));
        assert!(pairs.contains(&(174, b"fi".to_vec())));
        assert!(pairs.contains(&(251, b"germandbls".to_vec())));
        assert_eq!(pairs.len(), 149);
        for cut in [0, 3, 10, 20, data.len() - 1] {
            let _ = builtin_encoding(data.get(..cut).unwrap_or_default());
        }
        assert!(builtin_encoding(b"").is_empty());
        assert!(builtin_encoding(&[1, 0, 4, 4, 0xff, 0xff, 4, 0xff]).is_empty());
    }
}
