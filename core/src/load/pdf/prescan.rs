//! Checks of the whole file before lopdf parses it, refusing what would hurt lopdf itself.
//!
//! A lexical pass, front to back with stream data skipped, refuses more than
//! [`limits::MAX_PDF_TOKENS`] tokens (lopdf's objects take some hundred bytes each) and
//! arrays and dictionaries nested past [`limits::MAX_DEPTH`] (the pass itself never
//! recurses). lopdf 0.42 stops its own parser at 100 levels, so it never recurses deeper
//! either: it drops an object nested deeper than that (a dictionary or array of a trailer it
//! needs makes it fail), which is not refused here unless the nesting passes
//! [`limits::MAX_DEPTH`]: a file nested 101 to 512 levels deep is read with that object
//! missing.
//!
//! Dictionaries are read as lopdf reads them: of a repeated key, the last value counts, and the
//! entries the pass looks at ([`KEYS`]) are read however many others come before them; a
//! filter chain or its parameters holding more than [`DICT_ITEMS`] items is refused rather
//! than read in part.
//!
//! lopdf then parses an object at every offset its cross-reference sections give, which may
//! be anywhere: inside another object's stream data, a string or a comment. So every
//! `n g obj` header in the file is read, wherever it is, and refused:
//!
//! - chains of stream `/Length` references (lopdf follows each one recursively);
//! - cross-reference streams with field widths lopdf would allocate or loop on (any stream
//!   with a `/W`: lopdf reads whatever stream a cross-reference offset points to as one,
//!   `/Type /XRef` or not);
//! - cross-reference and object streams (which lopdf inflates without a bound) that inflate
//!   past the document's budget;
//! - objects the lexical pass did not read (hidden in stream data, strings or comments):
//!   each is read whole, and its tokens count against the same limit.
//!
//! An encrypted file's object streams cannot be inflated before lopdf decrypts them: the most
//! they could inflate to is charged to the budget instead. Their tokens are not counted (as
//! many tokens as bytes, the only bound known without decrypting, would refuse most real
//! encrypted files that use object streams), so the token limit does not hold inside them:
//! what holds there is the inflate budget, in bytes. lopdf reads the trailer (or the cross-reference stream that is one) wherever the
//! end of the file points, so a file is taken for encrypted when any dictionary the lexical
//! pass reads, any object header's dictionary or any `trailer` dictionary anywhere has an
//! `/Encrypt`.
//!
//! lopdf inflates an object stream again for every cross-reference entry that leads to it,
//! keeping every copy: so the in-use entries of the cross-reference tables and streams are
//! read too (a stream's entries as lopdf reads them, to the end of its data), each counted
//! for the object stream it leads to as it is read, and an object stream is charged once per
//! entry leading to it, its objects' tokens counted as often (lopdf parses them each time).
//!
//! lopdf keeps the object it parses at every entry until it has parsed them all, however many
//! entries lead to one header: the tokens of each object (as the lexical pass counted them,
//! to its `endobj`, or as they were read) are counted again for every entry past the first
//! leading to it, and the bytes they span (stream data left out: a long string is copied, and
//! white space scanned, each time) are charged to the budget as often. So are an object stream's objects, once for every pair of its index (lopdf
//! parses the object at the offset of each pair, however many give one offset), and the
//! bytes they take past the stream's own are charged to the budget.
//!
//! The same entries lead lopdf to the streams whose data it copies, once per entry, and to the
//! integers their `/Length` references resolve to: the headers of streams, and of the
//! integers a length may refer to, are kept (with the integer objects stored in object
//! streams that are not encrypted), and
//! [`copies`] charges the budget what lopdf copies (see there). When the file is taken for
//! encrypted, lopdf first copies every entry's object raw, to the next `endobj` or the end of
//! the file: those copies are charged too. The compressed entries of cross-reference streams
//! are read with their object numbers (from `/Index`, or `[0 /Size]`), for the lengths lopdf
//! resolves from an object stream, which it loads again each time.

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use pdf_extract::{Dictionary, Object};

use super::copies::{self, Body, Entries, Kind, Length, Parsed, Stored};
use super::decode::{self, Budget, Decoded};
use super::lex::{Lexer, Token};
use super::value::{self, Value};
use crate::{Error, Result, limits};

/// Longest chain of stream `/Length` references lopdf may follow (real files have none: a
/// length refers to an integer object).
pub(super) const MAX_LENGTH_CHAIN: usize = 32;

/// The dictionary entries the pass reads (every other entry is read and dropped, however many
/// there are).
const KEYS: &[&[u8]] =
    &[b"Type", b"Length", b"Filter", b"DecodeParms", b"W", b"Encrypt", b"First", b"Index", b"Size"];

/// Of [`KEYS`], those whose value means what it says only when read whole (a filter chain and
/// its parameters): holding more than [`DICT_ITEMS`] items, it is refused. Of the others only
/// the first items matter (the three widths of a `/W`; a font's `/W` may be long).
const WHOLE: &[&[u8]] = &[b"Filter", b"DecodeParms"];

/// Most items (array items and dictionary values, nested ones included) read of the value of
/// one of [`KEYS`]: real filter chains have a few.
const DICT_ITEMS: usize = 4096;

/// Worst-case growth of each filter, for object streams that cannot be inflated before lopdf
/// decrypts them: deflate's own bound, 12-bit LZW codes of up to 4096 bytes, and so on.
fn worst_ratio(filter: &[u8]) -> usize {
    match filter {
        b"FlateDecode" | b"Fl" => 1032,
        b"LZWDecode" | b"LZW" => 2731,
        b"RunLengthDecode" | b"RL" => 128,
        b"ASCII85Decode" | b"A85" => 4,
        b"ASCIIHexDecode" | b"AHx" | b"Crypt" => 1,
        _ => usize::MAX,
    }
}

/// What the pass learns about one object number (from every body found for it).
#[derive(Default)]
struct ObjectInfo {
    /// The object numbers its streams' `/Length` refer to.
    length_refs: Vec<u32>,
    /// Whether one of its bodies is an object stream.
    object_stream: bool,
}

/// What [`object_headers`] finds.
struct Headers {
    /// What is learnt about each object number of a stream.
    objects: HashMap<u32, ObjectInfo>,
    /// The object and cross-reference streams, in file order.
    loader_streams: Vec<LoaderStream>,
    /// Tokens of the objects whose headers the lexical pass did not read (hidden in stream
    /// data, strings or comments), as lopdf would parse them.
    tokens: usize,
    /// Whether a cross-reference stream or a `trailer` dictionary, anywhere, has an
    /// `/Encrypt`.
    encrypted: bool,
    /// The headers of streams, in file order, then those of the integers a length may refer
    /// to.
    bodies: Vec<Body>,
    /// Every header (its digits, in file order) with what lopdf parses of its object.
    all: Vec<(Range<usize>, Parsed)>,
    /// Bytes read in all: dictionaries, and white space and comments skipped.
    #[cfg_attr(not(test), expect(dead_code, reason = "the tests check the bound"))]
    read: usize,
}

/// A stream lopdf inflates on its own while loading.
struct LoaderStream {
    /// Its header, in [`Headers::bodies`].
    body: usize,
    /// Its dictionary, as the decoder reads it.
    dict: Dictionary,
    /// An object stream's `/First`.
    first: Option<usize>,
    /// Its data, as lopdf reads it for an object or cross-reference stream.
    data: Range<usize>,
    /// `/Type /ObjStm`.
    object_stream: bool,
    /// A cross-reference stream's field widths, when lopdf can read its entries.
    widths: Option<[usize; 3]>,
    /// The numbers of a cross-reference stream's entries.
    numbering: Option<Numbering>,
}

/// The object numbers lopdf gives a cross-reference stream's entries, in order: those of its
/// `/Index` pairs (first number, count), or of `[0 /Size]` when it has no `/Index` of
/// integers; none without a `/Size` (lopdf fails to read the stream). An `/Index` longer than
/// [`DICT_ITEMS`] items is read again, whole ([`index_numbering`]).
#[derive(Clone)]
struct Numbering {
    /// The pairs (first number, count).
    pairs: Vec<(i64, i64)>,
    /// The next pair, and the next number in it.
    next: (usize, i64),
}

impl Numbering {
    /// The numbering of a cross-reference stream's dictionary, read with its `/Index` of at
    /// most `max` items: `Ok(Err(()))` when the `/Index` holds `max` items or more (it may
    /// have been cut).
    fn new(dict: &Value, max: usize) -> std::result::Result<Option<Self>, ()> {
        let ints = |items: &[Value]| -> Option<Vec<i64>> {
            items.iter().map(|v| if let Value::Int(i) = v { Some(*i) } else { None }).collect()
        };
        let Some(Value::Int(size)) = dict.get(b"Size") else { return Ok(None) };
        let index = match dict.get(b"Index") {
            Some(Value::Array(items)) if items.len() >= max => return Err(()),
            Some(Value::Array(items)) => ints(items),
            _ => None,
        };
        let pairs = match index {
            Some(index) => index.chunks_exact(2).map(|p| (p[0], p[1])).collect(),
            None => vec![(0, *size)],
        };
        Ok(Some(Self { pairs, next: (0, 0) }))
    }

    /// The number of the next entry; `None` when lopdf reads no more entries.
    fn next(&mut self) -> Option<u32> {
        let (pair, j) = &mut self.next;
        while let Some(&(start, count)) = self.pairs.get(*pair) {
            if *j < count {
                let number = start.wrapping_add(*j) as u32;
                *j += 1;
                return Some(number);
            }
            *pair += 1;
            *j = 0;
        }
        None
    }
}

/// The numbering of the cross-reference stream whose dictionary `dict` (read with at most
/// [`DICT_ITEMS`] items) starts at `from`: when its `/Index` was cut, the dictionary is read
/// again for its `/Index` alone, whole, so that every compressed entry's number is known (a
/// writer of many small updates may give thousands of pairs; lopdf reads them all).
///
/// # Errors
/// [`Error::Limit`] for an `/Index` of more than [`limits::MAX_PDF_TOKENS`] items (the
/// lexical pass refuses as many tokens anyway), or reading past the bound of `reading`.
fn index_numbering(
    reading: &mut Reading<'_>,
    dict: &Value,
    from: usize,
) -> Result<Option<Numbering>> {
    if let Ok(numbering) = Numbering::new(dict, DICT_ITEMS) {
        return Ok(numbering);
    }
    let mut lexer = reading.lexer(from)?;
    let whole = match lexer.next_token() {
        Some(Token::DictOpen) => value::read_entries(
            &mut lexer,
            true,
            &[b"Index", b"Size"],
            &[],
            limits::MAX_PDF_TOKENS,
        )?,
        _ => Value::Dict(Vec::new()),
    };
    reading.done(&lexer, from)?;
    Numbering::new(&whole, limits::MAX_PDF_TOKENS).map_err(|()| {
        Error::Limit(format!(
            "a PDF cross-reference stream's /Index holds more than {} items",
            limits::MAX_PDF_TOKENS
        ))
    })
}

/// An object whose header the lexical pass read, as it was when the pass read the header.
#[derive(Clone, Copy)]
struct Opened {
    /// The tokens read before the object.
    tokens: usize,
    /// Where the object starts.
    pos: usize,
    /// Stream data skipped before the object.
    skipped: usize,
}

impl Opened {
    /// What lopdf parses of the object, which the pass has read up to `lexer`'s position,
    /// having skipped `skipped` bytes of stream data in all.
    fn parsed(self, lexer: &Lexer<'_>, skipped: usize) -> Parsed {
        let span = lexer.pos().saturating_sub(self.pos);
        Parsed {
            tokens: lexer.tokens() - self.tokens,
            bytes: span.saturating_sub(skipped - self.skipped),
        }
    }
}

/// Checks `bytes` as described in the module docs, charging the inflated size of the
/// cross-reference and object streams to `budget`.
///
/// # Errors
/// [`crate::Error::Limit`] naming the limit passed.
pub(super) fn prescan(bytes: &[u8], budget: &mut Budget) -> Result<()> {
    let ends = positions(bytes, b"endstream");
    let lexed = lexical_pass(bytes, &ends)?;
    let headers = object_headers(bytes, &ends, &lexed.bodies, &lexed.parsed)?;
    drop(lexed.bodies);
    drop(lexed.parsed);
    let Headers { objects, loader_streams, bodies, all, .. } = headers;
    let encrypted = lexed.encrypted || headers.encrypted;
    let mut tokens = lexed.tokens.saturating_add(headers.tokens);
    check_tokens(tokens)?;
    check_length_chains(&objects)?;
    // Where lopdf parses objects (the cross-reference entries in use): how many entries lead
    // to each stream and integer, read as which numbers.
    let mut entries = Entries::new(bytes, &bodies, all, encrypted)?;
    count_table_entries(bytes, &mut entries);
    let mut loading = Loading {
        bytes,
        encrypted,
        refs: copies::length_refs(&bodies),
        stored: Stored::default(),
        tokens,
        costs: Vec::new(),
    };
    for stream in &loader_streams {
        loading.load(stream, &mut entries, budget)?;
    }
    let Loading { stored, costs, .. } = loading;
    tokens = loading.tokens;
    // lopdf inflates an object stream again for every entry that leads to it, and parses its
    // objects again (keeping every copy until the end): each entry past the first is charged
    // again, and its objects' tokens counted again.
    for cost in &costs {
        let again = entries.count(cost.body).saturating_sub(1);
        budget.take(cost.inflated.saturating_mul(again))?;
        tokens = tokens.saturating_add(cost.tokens.saturating_mul(again));
        check_tokens(tokens)?;
    }
    charge_repeats(bytes, &entries, encrypted, tokens, budget)?;
    // The streams' data lopdf copies, for every entry leading to them. The values of integers
    // in encrypted object streams are not known before lopdf decrypts them.
    let inflated: HashMap<usize, usize> = costs.iter().map(|c| (c.body, c.inflated)).collect();
    copies::charge(bytes, &entries, stored, encrypted, &inflated, budget)
}

/// What the lexical pass ([`lexical_pass`]) finds.
struct Lexed {
    /// Tokens outside streams.
    tokens: usize,
    /// Whether any dictionary read has an `/Encrypt`.
    encrypted: bool,
    /// Where the objects whose headers the pass reads start (their tokens are counted).
    bodies: Vec<usize>,
    /// What lopdf parses of each of them (to the next `endobj` or header).
    parsed: Vec<Parsed>,
}

/// The lexical pass, front to back, stream data skipped (`ends`: the positions of
/// `endstream`).
///
/// # Errors
/// [`Error::Limit`] past [`limits::MAX_PDF_TOKENS`] tokens or [`limits::MAX_DEPTH`] levels.
fn lexical_pass(bytes: &[u8], ends: &[usize]) -> Result<Lexed> {
    let mut lexer = Lexer::new(bytes);
    let mut encrypted = false;
    let mut last_dict: Option<Value> = None;
    let mut bodies = Vec::new();
    let mut parsed = Vec::new();
    let mut open: Option<Opened> = None;
    // Stream data skipped so far.
    let mut skipped = 0usize;
    while let Some(token) = lexer.next_token() {
        match token {
            Token::Keyword(b"obj") => {
                check_tokens(lexer.tokens())?;
                if let Some(from) = open {
                    parsed.push(from.parsed(&lexer, skipped));
                }
                open = Some(Opened { tokens: lexer.tokens(), pos: lexer.pos(), skipped });
                bodies.push(lexer.pos());
            }
            Token::Keyword(b"endobj") => {
                if let Some(from) = open.take() {
                    parsed.push(from.parsed(&lexer, skipped));
                }
            }
            Token::DictOpen | Token::ArrayOpen => {
                let dict = token == Token::DictOpen;
                let value = value::read_entries(&mut lexer, dict, KEYS, WHOLE, DICT_ITEMS)?;
                encrypted |= value.get(b"Encrypt").is_some();
                last_dict = dict.then_some(value);
                continue;
            }
            Token::Keyword(b"stream") => {
                let dict = last_dict.take().unwrap_or(Value::Dict(Vec::new()));
                let (_, after) = stream_range(bytes, lexer.pos(), &dict, ends, false);
                skipped += after.saturating_sub(lexer.pos());
                lexer.set_pos(after);
            }
            _ => {}
        }
        last_dict = None;
    }
    let tokens = lexer.tokens();
    check_tokens(tokens)?;
    if let Some(from) = open {
        parsed.push(from.parsed(&lexer, skipped));
    }
    Ok(Lexed { tokens, encrypted, bodies, parsed })
}

/// What loading an object stream once costs.
struct ObjectStreamCost {
    /// Its header, in [`Headers::bodies`].
    body: usize,
    /// What inflating it costs.
    inflated: usize,
    /// The tokens of its objects.
    tokens: usize,
}

/// The loader streams (cross-reference and object streams) inflated as lopdf inflates them
/// while loading, with what they tell: the entries of cross-reference streams, the integers
/// stored in object streams, the tokens of their objects.
struct Loading<'a> {
    /// The file.
    bytes: &'a [u8],
    /// Whether lopdf may take the file for encrypted.
    encrypted: bool,
    /// The numbers streams' lengths refer to.
    refs: HashSet<u32>,
    /// Integers stored in object streams under those numbers.
    stored: Stored,
    /// Tokens counted so far.
    tokens: usize,
    /// What loading each object stream once costs.
    costs: Vec<ObjectStreamCost>,
}

impl Loading<'_> {
    /// Inflates `stream` once, charging `budget`, counting its entries (a cross-reference
    /// stream's) into `entries` or its objects' tokens (an object stream's).
    ///
    /// # Errors
    /// [`Error::Limit`] past the budget or a limit; [`Error::Pdf`] for an object stream stored
    /// in an object stream.
    fn load(
        &mut self,
        stream: &LoaderStream,
        entries: &mut Entries<'_>,
        budget: &mut Budget,
    ) -> Result<()> {
        let data = self.bytes.get(stream.data.clone()).unwrap_or_default();
        let (inflated, tokens) = if self.encrypted && stream.object_stream {
            // Encrypted data cannot be inflated before lopdf decrypts it: charge the most
            // it could inflate to.
            // Its tokens are not counted: charging them as a token a byte would refuse most
            // real encrypted files that use object streams (see the module docs).
            let cost = data.len().saturating_mul(decode_chain_ratio(&stream.dict));
            budget.take(cost)?;
            (cost, 0)
        } else {
            match decode::decode(&stream.dict, data, budget)? {
                Decoded::Bytes(decoded) if !stream.object_stream => {
                    if let Some(widths) = stream.widths {
                        let numbering = stream.numbering.clone();
                        count_stream_entries(widths, numbering, &decoded, entries)?;
                    }
                    (0, 0)
                }
                Decoded::Image if !stream.object_stream => (0, 0),
                decoded => self.object_stream(stream, data, decoded, budget)?,
            }
        };
        if stream.object_stream {
            self.costs.push(ObjectStreamCost { body: stream.body, inflated, tokens });
        }
        Ok(())
    }

    /// Reads an object stream whose `data` decoded as `decoded`: its stored integers, and the
    /// tokens and bytes lopdf parses for its index, counted and charged. Returns what
    /// inflating it costs, and the tokens of its objects.
    fn object_stream(
        &mut self,
        stream: &LoaderStream,
        data: &[u8],
        decoded: Decoded,
        budget: &mut Budget,
    ) -> Result<(usize, usize)> {
        // The objects lopdf parses for the index, read undecoded too (as lopdf reads it when
        // it cannot decode it).
        let mut indexed = (0, 0);
        if let Some(first) = stream.first {
            self.stored.read(data, first, &self.refs);
            let bound = data.len().saturating_add(budget.limit());
            indexed = indexed_objects(data, first, bound)?;
            if let Decoded::Bytes(inflated) = &decoded {
                self.stored.read(inflated, first, &self.refs);
                let bound = inflated.len().saturating_add(budget.limit());
                let (tokens, read) = indexed_objects(inflated, first, bound)?;
                indexed = (indexed.0.max(tokens), indexed.1.max(read));
            }
        }
        let (inflated, objects, parsed) = match decoded {
            // As many tokens as lopdf parses for the index, when that is more (pairs giving
            // one offset).
            Decoded::Bytes(inflated) => {
                (inflated.len(), check_nesting(&inflated)?.max(indexed.0), inflated.len())
            }
            // lopdf cannot decode it either: it parses the data as it is.
            Decoded::Image => (0, indexed.0, data.len()),
        };
        self.tokens = self.tokens.saturating_add(objects);
        check_tokens(self.tokens)?;
        budget.take(indexed.1.saturating_sub(parsed))?;
        Ok((inflated, objects))
    }
}

/// Counts and charges what lopdf parses again for every entry past the first leading to an
/// object (its tokens, `tokens` counted so far, and its bytes), the raw copies of an
/// encrypted document beyond the first, and the long runs scanned from the entries' offsets.
///
/// # Errors
/// [`Error::Limit`] past [`limits::MAX_PDF_TOKENS`] or the budget.
fn charge_repeats(
    bytes: &[u8],
    entries: &Entries<'_>,
    encrypted: bool,
    tokens: usize,
    budget: &mut Budget,
) -> Result<()> {
    // lopdf keeps the object it parses at every entry until it has parsed them all: the
    // tokens of an object are counted again for every entry past the first leading to it.
    check_tokens(tokens.saturating_add(entries.repeated_tokens()))?;
    // And it parses the bytes again (a string may be long; white space is scanned).
    budget.take(entries.repeated_bytes())?;
    // An encrypted document's objects are copied raw first (beyond one copy of the file).
    budget.take(copies::first_copy_free(entries.raw_bytes(), bytes))?;
    // The long runs scanned from the entries' offsets: again when lopdf parses the raw copies
    // of an encrypted document.
    budget.take(entries.scanned().saturating_mul(1 + usize::from(encrypted)))
}

/// Counts the in-use entries (`0000001234 00000 n`) of cross-reference tables, wherever they
/// are in the file (an entry lopdf never reads only costs a little budget).
fn count_table_entries(bytes: &[u8], entries: &mut Entries<'_>) {
    let mut pos = 0;
    while let Some(start) = bytes.get(pos..).and_then(|b| b.iter().position(u8::is_ascii_digit)) {
        let offset_start = pos + start;
        let offset_end = skip(bytes, offset_start, |b| b.is_ascii_digit());
        pos = offset_end;
        let generation = skip(bytes, offset_end, super::lex::is_space);
        let generation_end = skip(bytes, generation, |b| b.is_ascii_digit());
        let marker = skip(bytes, generation_end, super::lex::is_space);
        let in_use = generation > offset_end
            && generation_end > generation
            && marker > generation_end
            && bytes.get(marker) == Some(&b'n')
            && !bytes.get(marker + 1).is_some_and(u8::is_ascii_alphanumeric);
        if in_use
            && let Some(offset) = number(bytes.get(offset_start..offset_end).unwrap_or_default())
        {
            entries.add(offset);
        }
    }
}

/// The value of a run of ASCII digits, if it fits.
fn number(digits: &[u8]) -> Option<usize> {
    digits
        .iter()
        .try_fold(0usize, |acc, &d| acc.checked_mul(10)?.checked_add(usize::from(d - b'0')))
}

/// Counts the in-use entries of a cross-reference stream's decoded `data`, read as lopdf reads
/// them: one after the other to the end of the data
/// (whatever `/Index` says: more entries only cost a little budget), a field of `n` bytes as
/// the 32-bit number of its last four, an entry of a type other than 0, 1 or 2 being its
/// type field alone, and every entry of type 1 when the type has no field.
///
/// # Errors
/// [`Error::Pdf`] for an object stream stored in an object stream (see
/// [`Entries::compressed`]).
fn count_stream_entries(
    widths: [usize; 3],
    mut numbering: Option<Numbering>,
    data: &[u8],
    entries: &mut Entries<'_>,
) -> Result<()> {
    let [kind, offset, generation] = widths;
    let mut pos = 0usize;
    let mut field = |width: usize| {
        let bytes = data.get(pos..pos.checked_add(width)?)?;
        pos += width;
        Some(bytes.iter().fold(0u32, |acc, &b| (acc << 8) | u32::from(b)))
    };
    while let Some(entry_type) = if kind == 0 { Some(1) } else { field(kind) } {
        let number = numbering.as_mut().and_then(Numbering::next);
        if entry_type > 2 {
            continue; // Its type field alone (which is not empty).
        }
        let (Some(value), Some(_)) = (field(offset), field(generation)) else { break };
        if entry_type == 1 {
            entries.add(value as usize);
        } else if entry_type == 2
            && let Some(number) = number
        {
            entries.compressed(number, value)?;
        }
        if kind + offset + generation == 0 {
            break;
        }
    }
    Ok(())
}

/// Every `n g obj` header in the file, wherever it is: lopdf parses an object at each offset
/// its cross-reference sections give, which may be inside another object's stream data, a
/// string or a comment, and may name the object by any final digits of `n`. What each
/// header's object is (a stream's `/Length` reference, an object stream, a cross-reference
/// stream with its `/W` checked) is gathered for every number it may be read as. lopdf reads
/// the trailer wherever the end of the file says too, so whether any header's dictionary (a
/// cross-reference stream's is its trailer) or any `trailer` dictionary in the file has an
/// `/Encrypt` is found as well.
///
/// Dictionaries are read again only where headers overlap (a header inside another object's
/// dictionary), and white space and comments between a header's parts are skipped once
/// however many headers start inside them ([`Spaces`]). The bytes read in all, both counted,
/// are bounded by twice the file's size plus 1 MiB (past it the file is refused), and what is
/// kept (object numbers, streams lopdf inflates) by [`limits::MAX_PDF_TOKENS`].
///
/// # Errors
/// [`Error::Limit`] for nesting past [`limits::MAX_DEPTH`] or reading past that bound;
/// [`Error::Pdf`] for a cross-reference stream lopdf would loop on.
fn object_headers(
    bytes: &[u8],
    ends: &[usize],
    lexed: &[usize],
    lexed_parsed: &[Parsed],
) -> Result<Headers> {
    let bound = bytes.len().saturating_mul(2).saturating_add(1 << 20);
    let mut reading = Reading { bytes, bound, read: 0, spaces: Spaces::new(bytes) };
    let mut kept = Kept::default();
    let mut encrypted = false;
    let mut tokens = 0usize;
    let mut all = Vec::new();
    let mut pos = 0;
    while let Some(offset) = bytes.get(pos..).and_then(|b| b.iter().position(u8::is_ascii_digit)) {
        let run_start = pos + offset;
        let run_end = skip(bytes, run_start, |b| b.is_ascii_digit());
        pos = run_end;
        let body = object_body(&mut reading.spaces, run_end);
        reading.left()?;
        let Some(body) = body else { continue };
        let mut lexer = reading.lexer(body)?;
        // Whatever the first token is (a string may be long), it is read and counted. The
        // object of a header the lexical pass did not read is read whole (an array too), its
        // tokens counted: lopdf parses it if an offset leads there.
        let lexed_at = lexed.binary_search(&body);
        let hidden = lexed_at.is_err();
        lexer.skip_space();
        let first = lexer.pos();
        let dict = match lexer.next_token() {
            Some(Token::DictOpen) => {
                Some(value::read_entries(&mut lexer, true, KEYS, WHOLE, DICT_ITEMS)?)
            }
            Some(Token::ArrayOpen) if hidden => {
                value::read_container(&mut lexer, false, 0)?;
                None
            }
            _ => None,
        };
        let is_stream = dict.is_some() && lexer.next_token() == Some(Token::Keyword(b"stream"));
        reading.done(&lexer, body)?;
        if hidden {
            tokens = tokens.saturating_add(lexer.tokens());
            check_tokens(tokens)?;
        }
        let object = match lexed_at {
            Ok(i) => lexed_parsed.get(i).copied().unwrap_or_default(),
            Err(_) => Parsed { tokens: lexer.tokens(), bytes: lexer.pos() - body },
        };
        all.push((run_start..run_end, object));
        check_kept(all.len())?;
        // A cross-reference stream is its file's trailer too.
        encrypted |= dict.as_ref().is_some_and(|d| d.get(b"Encrypt").is_some());
        let digits = run_start..run_end;
        match dict {
            None => kept.integer(bytes, digits, first)?,
            Some(dict) if is_stream => {
                let at = StreamAt { digits, dict: first, keyword_end: lexer.pos() };
                kept.stream(&mut reading, ends, &dict, at)?;
            }
            Some(_) => {}
        }
    }
    encrypted |= trailers_encrypted(&mut reading)?;
    let read = reading.read.saturating_add(reading.spaces.looked_at);
    let Kept { objects, loader_streams, mut found, ints, .. } = kept;
    // The integers a stream's length may refer to (by any last digits of their number) follow
    // the streams.
    let refs = copies::length_refs(&found);
    for (digits, value) in ints {
        let numbers = suffix_numbers(bytes.get(digits.clone()).unwrap_or_default());
        if numbers.iter().any(|n| refs.contains(n)) {
            found.push(Body::new(bytes, digits, Kind::Int(value)));
        }
    }
    Ok(Headers { objects, loader_streams, tokens, encrypted, bodies: found, all, read })
}

/// Whether any `trailer` dictionary in the file has an `/Encrypt`: lopdf reads the trailer
/// where the end of the file says, which may be anywhere.
///
/// # Errors
/// [`Error::Limit`] reading past the bound of `reading`, or nesting past
/// [`limits::MAX_DEPTH`].
fn trailers_encrypted(reading: &mut Reading<'_>) -> Result<bool> {
    let bytes = reading.bytes;
    let mut encrypted = false;
    let mut from = 0;
    while let Some(at) = find(bytes, b"trailer", from) {
        from = at + b"trailer".len();
        let mut lexer = reading.lexer(from)?;
        if lexer.next_token() == Some(Token::DictOpen) {
            let dict = value::read_entries(&mut lexer, true, &[b"Encrypt"], &[], DICT_ITEMS)?;
            encrypted |= dict.get(b"Encrypt").is_some();
        }
        reading.done(&lexer, from)?;
    }
    Ok(encrypted)
}

/// Where a stream's header is: its number's digits, its dictionary, the end of its `stream`
/// keyword.
struct StreamAt {
    /// The digits of its number.
    digits: Range<usize>,
    /// Where its dictionary starts.
    dict: usize,
    /// The end of its `stream` keyword.
    keyword_end: usize,
}

/// What [`object_headers`] keeps of the headers it reads, bounded by
/// [`limits::MAX_PDF_TOKENS`] items in all.
#[derive(Default)]
struct Kept {
    /// What is learnt about each object number of a stream.
    objects: HashMap<u32, ObjectInfo>,
    /// The object and cross-reference streams, in file order.
    loader_streams: Vec<LoaderStream>,
    /// The headers of streams, in file order.
    found: Vec<Body>,
    /// Integer objects, of which only those a length may refer to are kept in the end.
    ints: Vec<(Range<usize>, u64)>,
    /// Object numbers, streams and integers kept.
    count: usize,
}

impl Kept {
    /// Keeps the header whose number's digits are `digits` when its object, starting at
    /// `first`, is an integer.
    fn integer(&mut self, bytes: &[u8], digits: Range<usize>, first: usize) -> Result<()> {
        if let Some(value) = copies::integer_at(bytes, first) {
            self.ints.push((digits, value));
            self.count += 1;
            check_kept(self.count)?;
        }
        Ok(())
    }

    /// Keeps the header of a stream at `at`, of dictionary `dict`: its length, whether it is
    /// an object stream, and, for a loader stream (an object or cross-reference stream),
    /// what lopdf inflates and reads of it.
    ///
    /// # Errors
    /// [`Error::Limit`] past [`limits::MAX_PDF_TOKENS`] items kept or reading past the bound
    /// of `reading`; [`Error::Pdf`] for a cross-reference stream lopdf would loop on.
    fn stream(
        &mut self,
        reading: &mut Reading<'_>,
        ends: &[usize],
        dict: &Value,
        at: StreamAt,
    ) -> Result<()> {
        let bytes = reading.bytes;
        let length_ref = match dict.get(b"Length") {
            Some(Value::Ref(n, _)) => u32::try_from(*n).ok(),
            _ => None,
        };
        let length = match (dict.get(b"Length"), length_ref) {
            (_, Some(n)) => Length::Ref(n),
            (Some(Value::Int(n)), _) => Length::Direct(*n),
            _ => Length::Other,
        };
        let data = copies::data_start(bytes, at.keyword_end);
        let object_stream = is_type(dict, b"ObjStm");
        let kind = Kind::Stream { data, length, object_stream };
        self.found.push(Body::new(bytes, at.digits.clone(), kind));
        self.count += 1;
        // lopdf reads any stream where a cross-reference section should be as one.
        let xref = is_type(dict, b"XRef") || dict.get(b"W").is_some();
        if length_ref.is_some() || object_stream {
            let numbers = suffix_numbers(bytes.get(at.digits).unwrap_or_default());
            self.count = self.count.saturating_add(numbers.len());
            for n in numbers {
                let info = self.objects.entry(n).or_default();
                info.length_refs.extend(length_ref);
                info.object_stream |= object_stream;
            }
        }
        self.count += usize::from(object_stream || xref);
        check_kept(self.count)?;
        if !(object_stream || xref) {
            return Ok(());
        }
        let widths = if xref { xref_widths(dict)? } else { None };
        let numbering = if xref { index_numbering(reading, dict, at.dict)? } else { None };
        let (data, _) = stream_range(bytes, at.keyword_end, dict, ends, true);
        let first = match dict.get(b"First") {
            Some(Value::Int(n)) => usize::try_from(*n).ok(),
            _ => None,
        };
        self.loader_streams.push(LoaderStream {
            body: self.found.len() - 1,
            dict: to_dictionary(dict),
            first,
            data,
            object_stream,
            widths,
            numbering,
        });
        Ok(())
    }
}

/// Refuses more than [`limits::MAX_PDF_TOKENS`] object numbers, streams and integers kept by
/// [`object_headers`].
fn check_kept(kept: usize) -> Result<()> {
    if kept > limits::MAX_PDF_TOKENS {
        return Err(Error::Limit(format!(
            "the PDF has more than {} streams, integer objects and object numbers of streams with indirect lengths",
            limits::MAX_PDF_TOKENS
        )));
    }
    Ok(())
}

/// Reads of dictionaries in [`object_headers`], all of them together bounded.
struct Reading<'a> {
    /// The file.
    bytes: &'a [u8],
    /// Most bytes read in all, white space and comments skipped included.
    bound: usize,
    /// Bytes of dictionaries read so far.
    read: usize,
    /// The white space and comments skipped between the parts of headers.
    spaces: Spaces<'a>,
}

impl<'a> Reading<'a> {
    /// What is left of the bound.
    fn left(&self) -> Result<usize> {
        let used = self.read.saturating_add(self.spaces.looked_at);
        self.bound.checked_sub(used).ok_or_else(overlap)
    }

    /// A lexer from `from` that reads at most what is left of the bound.
    fn lexer(&self, from: usize) -> Result<Lexer<'a>> {
        let limit = from.saturating_add(self.left()?).min(self.bytes.len());
        let mut lexer = Lexer::new(self.bytes.get(..limit).unwrap_or_default());
        lexer.set_pos(from);
        Ok(lexer)
    }

    /// Counts what `lexer` read from `from`, refusing it if it reached the bound.
    fn done(&mut self, lexer: &Lexer<'_>, from: usize) -> Result<()> {
        let limit = lexer.data().len();
        if lexer.pos() >= limit && limit < self.bytes.len() {
            return Err(overlap());
        }
        self.read += lexer.pos().saturating_sub(from);
        Ok(())
    }
}

/// [`Error::Limit`] for reading object headers past their bound.
fn overlap() -> Error {
    Error::Limit(
        "the PDF's object headers overlap past twice its size (objects hidden inside objects)"
            .to_owned(),
    )
}

/// Where the object of a header whose first number ends at `number_end` starts: after
/// `g obj`, with white space and comments between them as lopdf reads them.
fn object_body(spaces: &mut Spaces<'_>, number_end: usize) -> Option<usize> {
    let bytes = spaces.bytes;
    let generation = spaces.skip(number_end);
    let generation_end = skip(bytes, generation, |b| b.is_ascii_digit());
    if generation_end == generation {
        return None;
    }
    let keyword = spaces.skip(generation_end);
    bytes.get(keyword..)?.starts_with(b"obj").then_some(keyword + 3)
}

/// The object numbers lopdf may read from a run of digits, starting at any of them: the
/// values of its final digits that fit in 32 bits (longer runs only add leading zeros or
/// overflow).
pub(super) fn suffix_numbers(digits: &[u8]) -> Vec<u32> {
    let mut numbers = Vec::new();
    for k in 1..=digits.len().min(10) {
        let suffix = digits.get(digits.len() - k..).unwrap_or_default();
        let value = suffix.iter().fold(0u64, |acc, &d| acc * 10 + u64::from(d - b'0'));
        if let Ok(n) = u32::try_from(value)
            && !numbers.contains(&n)
        {
            numbers.push(n);
        }
    }
    numbers
}

/// The first position at or after `from` whose byte does not satisfy `keep`.
pub(super) fn skip(bytes: &[u8], from: usize, keep: impl Fn(u8) -> bool) -> usize {
    let rest = bytes.get(from..).unwrap_or_default();
    from + rest.iter().take_while(|&&b| keep(b)).count()
}

/// White space and comments skipped as lopdf skips them between the parts of an object
/// header, counting the bytes looked at. Headers are looked for front to back, and one may
/// start inside the comments another skipped (a header's digits in a comment's text). The
/// run skipped that reaches furthest is remembered: a skip that comes to one of the `%` in it
/// ends where that run ended (lopdf goes on from a `%` to the same end of line, and from
/// there the same way), so a comment is looked at once, not once for each header starting
/// in it (`1%1%1%…` on one line).
struct Spaces<'a> {
    /// The file.
    bytes: &'a [u8],
    /// The run skipped that reaches furthest: from where, to where.
    furthest: Range<usize>,
    /// Bytes looked at in all.
    looked_at: usize,
}

impl<'a> Spaces<'a> {
    /// Nothing skipped yet in `bytes`.
    fn new(bytes: &'a [u8]) -> Self {
        Self { bytes, furthest: usize::MAX..usize::MAX, looked_at: 0 }
    }

    /// The first position from `from` on (`from` at or after where the previous skip started)
    /// that is neither white space nor in a comment.
    fn skip(&mut self, from: usize) -> usize {
        if from == self.furthest.start {
            return self.furthest.end;
        }
        let mut pos = from;
        loop {
            let next = skip(self.bytes, pos, super::lex::is_space);
            self.looked_at += next - pos;
            if self.bytes.get(next) != Some(&b'%') {
                pos = next;
                break;
            }
            if self.furthest.contains(&next) {
                pos = self.furthest.end;
                break;
            }
            pos = skip(self.bytes, next, |b| b != b'\n' && b != b'\r');
            self.looked_at += pos - next;
        }
        if pos > self.furthest.end || self.furthest.start == usize::MAX {
            self.furthest = from..pos;
        }
        pos
    }
}

/// The positions of `needle` in `data`, in order.
fn positions(data: &[u8], needle: &[u8]) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = find(data, needle, from) {
        found.push(at);
        from = at + 1;
    }
    found
}

/// Worst-case growth of a stream's filter chain.
fn decode_chain_ratio(dict: &Dictionary) -> usize {
    let chain = decode::filters(dict);
    chain.iter().fold(1usize, |acc, (name, _)| acc.saturating_mul(worst_ratio(name)))
}

/// The tokens and bytes lopdf reads for the objects of an object stream's `content` whose
/// objects start at `first`: an object for every pair of its index (as lopdf reads it: UTF-8,
/// numbers split on white space), from its offset past ASCII white space, however many pairs
/// give one offset (lopdf keeps every object it parses until it has parsed them all: 200 pairs
/// giving an array of 100,000 numbers made a 1.3 KB file take 2.3 GB). Stops once
/// [`limits::MAX_PDF_TOKENS`] tokens or `bound` bytes are passed (the file is refused then).
///
/// # Errors
/// [`Error::Limit`] for nesting past [`limits::MAX_DEPTH`].
fn indexed_objects(content: &[u8], first: usize, bound: usize) -> Result<(usize, usize)> {
    let Some(Ok(index)) = content.get(..first).map(std::str::from_utf8) else {
        return Ok((0, 0));
    };
    let mut numbers = index.split_whitespace().map(|n| n.parse::<u32>().ok());
    let (mut tokens, mut read) = (0usize, 0usize);
    while let (Some(id), Some(offset)) = (numbers.next(), numbers.next()) {
        let (Some(_), Some(offset)) = (id, offset) else { continue };
        let Some(from) = first.checked_add(offset as usize).filter(|&at| at < content.len()) else {
            continue;
        };
        let mut lexer = Lexer::new(content);
        lexer.set_pos(skip(content, from, |b| b.is_ascii_whitespace()));
        if let Some(token) = lexer.next_token() {
            value::read_value(&mut lexer, token, 0)?;
        }
        tokens = tokens.saturating_add(lexer.tokens());
        read = read.saturating_add(lexer.pos() - from);
        if tokens > limits::MAX_PDF_TOKENS || read > bound {
            break;
        }
    }
    Ok((tokens, read))
}

/// Refuses nesting past [`limits::MAX_DEPTH`] anywhere in `data` (an object stream's
/// objects); returns its number of tokens.
fn check_nesting(data: &[u8]) -> Result<usize> {
    let mut lexer = Lexer::new(data);
    while let Some(token) = lexer.next_token() {
        if matches!(token, Token::ArrayOpen | Token::DictOpen) {
            value::read_container(&mut lexer, token == Token::DictOpen, 0)?;
        }
    }
    Ok(lexer.tokens())
}

/// Refuses more than [`limits::MAX_PDF_TOKENS`] tokens outside streams (lopdf holds each as an
/// object of some hundred bytes).
fn check_tokens(tokens: usize) -> Result<()> {
    if tokens > limits::MAX_PDF_TOKENS {
        return Err(Error::Limit(format!(
            "the PDF has more than {} numbers, names, strings and other tokens outside its streams",
            limits::MAX_PDF_TOKENS
        )));
    }
    Ok(())
}

/// The field widths (`/W`) of a cross-reference stream, refusing those lopdf would allocate
/// without a bound, or loop on for every entry its `/Index` claims without reading any data
/// (all zero); `None` when lopdf reads no entries (no `/W`, or fewer than three widths).
fn xref_widths(dict: &Value) -> Result<Option<[usize; 3]>> {
    let Some(Value::Array(widths)) = dict.get(b"W") else { return Ok(None) };
    let widths: Vec<i64> =
        widths.iter().take(3).map(|w| if let Value::Int(i) = w { *i } else { -1 }).collect();
    if widths.iter().any(|w| !(0..=8).contains(w)) || widths.iter().sum::<i64>() == 0 {
        return Err(Error::Pdf(
            "malformed cross-reference stream (its /W field widths)".to_owned(),
        ));
    }
    let width = |i: usize| widths.get(i).and_then(|&w| usize::try_from(w).ok());
    Ok(match (width(0), width(1), width(2)) {
        (Some(a), Some(b), Some(c)) => Some([a, b, c]),
        _ => None,
    })
}

/// Whether `dict` has `/Type` `ty`.
fn is_type(dict: &Value, ty: &[u8]) -> bool {
    matches!(dict.get(b"Type"), Some(Value::Name(n)) if n == ty)
}

/// Most white space looked at between a stream's declared end and `endstream`.
const MAX_SPACE_BEFORE_END: usize = 256;

/// The range of the data of a stream whose `stream` keyword ends at `pos`, and the position
/// after its `endstream`; `ends` are the positions of every `endstream`. The declared
/// `/Length` is used when `endstream` follows it; otherwise the data ends at the next
/// `endstream`, or with `longest`, at the last one (lopdf may resolve a `/Length` reference to
/// past `endstream`s inside the data: a range too long only decodes trailing bytes).
fn stream_range(
    data: &[u8],
    pos: usize,
    dict: &Value,
    ends: &[usize],
    longest: bool,
) -> (std::ops::Range<usize>, usize) {
    let mut start = pos;
    if data.get(start) == Some(&b'\r') {
        start += 1;
    }
    if data.get(start) == Some(&b'\n') {
        start += 1;
    }
    let declared = match dict.get(b"Length") {
        Some(Value::Int(n)) => usize::try_from(*n).ok().and_then(|n| start.checked_add(n)),
        _ => None,
    };
    let ends_there = |end: usize| {
        let rest = data.get(end..).unwrap_or_default();
        let skip = rest
            .iter()
            .take(MAX_SPACE_BEFORE_END)
            .take_while(|&&b| super::lex::is_space(b))
            .count();
        rest.get(skip..).is_some_and(|r| r.starts_with(b"endstream"))
    };
    let next_end = |from: usize| ends.get(ends.partition_point(|&e| e < from)).copied();
    let end = match declared {
        Some(end) if end <= data.len() && ends_there(end) => end,
        _ if longest => ends.last().copied().filter(|&e| e >= start).unwrap_or(data.len()),
        _ => next_end(start).unwrap_or(data.len()),
    };
    let after = next_end(end).map_or(data.len(), |p| p + b"endstream".len());
    (start.min(end)..end, after)
}

/// The first position of `needle` in `data` at or after `from`.
pub(super) fn find(data: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let hay = data.get(from..)?;
    let first = *needle.first()?;
    let mut offset = 0;
    while let Some(i) = hay.get(offset..)?.iter().position(|&b| b == first) {
        let at = offset + i;
        if hay.get(at..)?.starts_with(needle) {
            return Some(from + at);
        }
        offset = at + 1;
    }
    None
}

/// Refuses chains of `/Length` references longer than [`MAX_LENGTH_CHAIN`] (cycles
/// included: lopdf detects one only after following it all the way round). `objects` has
/// the streams with a `/Length` reference and the object streams; any other object counts as
/// possibly stored in an object stream.
fn check_length_chains(objects: &HashMap<u32, ObjectInfo>) -> Result<()> {
    // A length stored in an object stream makes lopdf load its container (and the
    // container's length) first: any object may be stored in one.
    let depths = chain_depths(objects, 0)?;
    let containers = objects.iter().filter(|(_, o)| o.object_stream);
    let through_container =
        containers.filter_map(|(n, _)| depths.get(n)).max().map_or(0, |d| d + 1);
    chain_depths(objects, through_container)?;
    Ok(())
}

/// [`Error::Limit`] for `/Length` references chained past [`MAX_LENGTH_CHAIN`].
pub(super) fn too_long_chain() -> Error {
    Error::Limit(format!(
        "PDF stream lengths refer to stream lengths more than {MAX_LENGTH_CHAIN} levels deep"
    ))
}

/// How many `/Length` references lopdf may follow, one inside the other, from each object
/// (any of its bodies), an object costing `compressed` for being loaded from an object
/// stream; refused past [`MAX_LENGTH_CHAIN`]. Walked depth first without recursion, each
/// object once.
fn chain_depths(
    objects: &HashMap<u32, ObjectInfo>,
    compressed: usize,
) -> Result<HashMap<u32, usize>> {
    let mut depths: HashMap<u32, usize> = HashMap::new();
    let mut on_path: HashSet<u32> = HashSet::new();
    let refs = |n: u32| objects.get(&n).map(|o| o.length_refs.as_slice()).unwrap_or_default();
    for &start in objects.keys() {
        if depths.contains_key(&start) {
            continue;
        }
        // (object, its next reference to follow, the deepest of those followed).
        let mut stack = vec![(start, 0usize, compressed)];
        on_path.insert(start);
        loop {
            let path = stack.len();
            let Some((n, next, deepest)) = stack.last_mut() else { break };
            if let Some(&r) = refs(*n).get(*next) {
                *next += 1;
                if let Some(&d) = depths.get(&r) {
                    *deepest = (*deepest).max(d + 1);
                } else if on_path.contains(&r) || path > MAX_LENGTH_CHAIN {
                    return Err(too_long_chain());
                } else if refs(r).is_empty() {
                    *deepest = (*deepest).max(compressed + 1);
                } else {
                    on_path.insert(r);
                    stack.push((r, 0, compressed));
                }
                continue;
            }
            let (n, depth) = (*n, *deepest);
            if depth > MAX_LENGTH_CHAIN {
                return Err(too_long_chain());
            }
            depths.insert(n, depth);
            on_path.remove(&n);
            stack.pop();
            if let Some((_, _, parent)) = stack.last_mut() {
                *parent = (*parent).max(depth + 1);
            }
        }
    }
    Ok(depths)
}

/// A lopdf dictionary with the entries a decoder reads (`Filter`, `DecodeParms`).
fn to_dictionary(dict: &Value) -> Dictionary {
    let mut out = Dictionary::new();
    for key in [b"Filter".as_slice(), b"DecodeParms"] {
        if let Some(v) = dict.get(key) {
            out.set(key, to_object(v, 0));
        }
    }
    out
}

/// `v`, at nesting level `depth`, as a lopdf object for the decoder: arrays and dictionaries
/// from the third level on read as null (filter parameters are shallow).
fn to_object(v: &Value, depth: usize) -> Object {
    match v {
        Value::Int(i) => Object::Integer(*i),
        Value::Real(r) => Object::Real(*r as f32),
        Value::Bool(b) => Object::Boolean(*b),
        Value::Name(n) => Object::Name(n.clone()),
        Value::Array(items) if depth < 2 => {
            Object::Array(items.iter().map(|i| to_object(i, depth + 1)).collect())
        }
        Value::Dict(entries) if depth < 2 => Object::Dictionary(
            entries.iter().map(|(k, v)| (k.clone(), to_object(v, depth + 1))).collect(),
        ),
        _ => Object::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Headers starting inside comments do not each look at the rest of the comments again:
    /// `1%1%1%…` on one line (which took a quarter of its length squared), or a comment on
    /// each line, is read in linear time.
    #[test]
    fn comments_are_skipped_once() {
        for body in ["1%".repeat(1 << 19), "%1\n".repeat(1 << 18), "1 % 2 0 %".repeat(1 << 17)] {
            let bytes = format!("%PDF-1.7\n{body}\n");
            let headers =
                object_headers(bytes.as_bytes(), &[], &[], &[]).expect("within the bound");
            assert!(headers.read <= 2 * bytes.len(), "{} for {}", headers.read, bytes.len());
        }
    }

    /// The object of a header the lexical pass did not read (in stream data, a string or a
    /// comment) is read whole, an array too, and its tokens counted; one it read is not
    /// counted again.
    #[test]
    fn hidden_objects_are_counted() {
        let bytes = b"%PDF-1.7\n(1 0 obj [1 2 [3] << /A 4 >>] endobj)\n";
        let headers = object_headers(bytes, &[], &[], &[]).expect("reads");
        assert_eq!(headers.tokens, 11);
        let body = find(bytes, b"obj", 0).expect("a header") + 3;
        let headers =
            object_headers(bytes, &[], &[body], &[Parsed { tokens: 1, bytes: 1 }]).expect("reads");
        assert_eq!(headers.tokens, 0);
    }
}
