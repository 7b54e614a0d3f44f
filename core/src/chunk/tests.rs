//! Behaviour of [`chunk_document`] on real text (a SQuAD excerpt) and on generated documents.

use std::ops::Range;

use proptest::prelude::*;

use super::*;
use crate::load::{BlockKind, DocumentBuilder};
use crate::text::sentences;

/// Two Wikipedia articles from SQuAD v1.1 dev; provenance in the file's header.
const SQUAD: &str = include_str!("../../tests/fixtures/squad-normans-warsaw.txt");

/// Builds a document from the fixture format: `% ` comments, `# ` headings, paragraph lines.
fn squad_document() -> Document {
    let mut b = DocumentBuilder::new();
    for line in SQUAD.lines().filter(|l| !l.trim().is_empty() && !l.starts_with('%')) {
        match line.strip_prefix("# ") {
            Some(title) => b.heading(1, title, None),
            None => b.block(BlockKind::Paragraph, line, None),
        }
    }
    b.finish().expect("within the limits")
}

/// A stand-in for a tokenizer: counts whitespace-separated words.
struct WordSizer;

impl Sizer for WordSizer {
    fn size(&self, text: &str) -> usize {
        text.split_whitespace().count()
    }
    fn unit(&self) -> SizeUnit {
        SizeUnit::Tokens
    }
}

/// A sizer whose sizes do not add up: long texts cost 10% extra, like tokens that do not
/// merge across a join.
struct Surcharge;

impl Sizer for Surcharge {
    fn size(&self, text: &str) -> usize {
        let chars = text.chars().count();
        chars + chars / 10
    }
    fn unit(&self) -> SizeUnit {
        SizeUnit::Chars
    }
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Start of `chunk`'s own text: its first unit after the overlap it shares with `prev`.
///
/// Overlap is whole prose sentences, so the first own unit follows a sentence: it is the next
/// sentence of the same block (which starts at a non-blank character) or the first unit of the
/// next block, which starts at the block's start. A code or table block keeps the indentation
/// of its first line, so that start can be blank: skipping whitespace alone would cut the
/// indentation off and measure a chunk shorter than any the chunker can make.
fn own_start(doc: &Document, prev: Option<&Chunk>, chunk: &Chunk) -> usize {
    match prev {
        Some(p) if chunk.start < p.end => {
            let end = p.end as usize;
            let rest = &doc.text[end..];
            let non_blank = end + rest.len() - rest.trim_start().len();
            let block = doc.blocks.iter().map(|b| b.range.start).find(|&s| s >= end);
            block.map_or(non_blank, |b| b.min(non_blank))
        }
        _ => chunk.start as usize,
    }
}

#[test]
fn squad_articles_chunk_by_section_with_sentence_overlap() {
    let doc = squad_document();
    // Wikipedia sentences are long: a larger overlap than the default lets several carry over.
    let config = ChunkConfig { overlap: 0.3, ..ChunkConfig::chars() };
    let chunks = chunk_document(&doc, 7, &config, &CharSizer);
    assert!(chunks.len() >= 10, "{} chunks", chunks.len());
    let budget = (0.3 * 800.0) as usize;
    let mut overlaps = 0;
    for (i, chunk) in chunks.iter().enumerate() {
        assert_eq!(chunk.text, doc.text[chunk.start as usize..chunk.end as usize]);
        assert_eq!((chunk.doc, chunk.seq), (7, i as u32));
        let size = chars(&chunk.text);
        assert!((config.min..=config.max).contains(&size), "chunk {i}: {size} chars");
        let path = doc.section_path(chunk.section as usize);
        assert!(path == ["Normans"] || path == ["Warsaw"], "{path:?}");
        let ends_sentence = chunk.text.ends_with(['.', '"', ')']);
        assert!(ends_sentence, "chunk {i} ends mid-sentence: {:?}", &chunk.text);
        let Some(prev) = i.checked_sub(1).map(|p| &chunks[p]) else {
            continue;
        };
        if prev.section != chunk.section {
            assert!(chunk.start >= prev.end, "overlap across sections");
            assert!(chunk.text.starts_with(&path[0]), "heading opens the section's first chunk");
        } else if chunk.start < prev.end {
            overlaps += 1;
            let shared = &doc.text[chunk.start as usize..prev.end as usize];
            assert!(chars(shared) <= budget, "overlap of {} chars", chars(shared));
            assert!(shared.starts_with(char::is_uppercase) && shared.ends_with('.'), "{shared:?}");
        }
    }
    assert!(overlaps >= 4, "{overlaps} overlaps");
}

#[test]
fn squad_articles_fit_a_token_window() {
    let doc = squad_document();
    let config = ChunkConfig::tokens();
    let chunks = chunk_document(&doc, 0, &config, &WordSizer);
    assert!(chunks.len() >= 5);
    for chunk in &chunks {
        let words = WordSizer.size(&chunk.text);
        assert!((config.min..=config.max).contains(&words), "{words} words");
    }
    assert_eq!(chunks, chunk_document(&doc, 0, &config, &WordSizer), "deterministic");
}

#[test]
fn code_and_tables_stay_whole_and_are_never_carried_over() {
    let mut b = DocumentBuilder::new();
    b.heading(1, "Usage", None);
    b.block(BlockKind::Paragraph, &"Run the tool on a folder of notes. ".repeat(5), None);
    let code = "fn main() {\n    let bundle = build(\"notes/\");\n    bundle.save(\"out.erb\");\n}";
    b.block(BlockKind::Code, code, None);
    b.block(BlockKind::Paragraph, &"The bundle holds every chunk. ".repeat(6), None);
    let table = "format | loader\nmarkdown | pulldown-cmark\nhtml | scraper\npdf | pdf-extract";
    b.block(BlockKind::Table, table, None);
    let doc = b.finish().expect("within the limits");
    let config = ChunkConfig { target: 150, max: 200, min: 40, overlap: 0.3 };
    let chunks = chunk_document(&doc, 0, &config, &CharSizer);
    assert!(chunks.iter().any(|c| c.text.contains(code)));
    assert!(chunks.iter().any(|c| c.text.contains(table)));
    for pair in chunks.windows(2) {
        if pair[1].start < pair[0].end {
            let shared = &doc.text[pair[1].start as usize..pair[0].end as usize];
            assert!(!shared.contains("fn main") && !shared.contains(" | "), "{shared:?}");
        }
    }
    assert!(chunks[0].text.starts_with("Usage\n\nRun the tool"));
}

#[test]
fn over_long_code_splits_at_line_ends() {
    let mut b = DocumentBuilder::new();
    let lines: Vec<String> = (0..40).map(|i| format!("    step_{i}(input, output);")).collect();
    b.block(BlockKind::Code, &lines.join("\n"), None);
    let doc = b.finish().expect("within the limits");
    let config = ChunkConfig { target: 200, max: 250, min: 50, overlap: 0.15 };
    let chunks = chunk_document(&doc, 0, &config, &CharSizer);
    assert!(chunks.len() >= 5);
    for chunk in &chunks {
        assert!(chars(&chunk.text) <= 250);
        assert!(chunk.text.ends_with(");") && chunk.text.trim_start().starts_with("step_"));
    }
    for pair in chunks.windows(2) {
        assert!(pair[1].start > pair[0].end, "no overlap for code");
    }
}

#[test]
fn pages_are_not_crossed_unless_both_sides_are_small() {
    let long = "Page text that is long enough to stand alone as a chunk. ".repeat(3);
    let mut b = DocumentBuilder::new();
    b.block(BlockKind::Paragraph, &long, Some(1));
    b.block(BlockKind::Paragraph, &long, Some(2));
    b.block(BlockKind::Paragraph, "A footnote.", Some(3));
    b.block(BlockKind::Paragraph, "Page four is short too.", Some(4));
    let doc = b.finish().expect("within the limits");
    let config = ChunkConfig { target: 400, max: 500, min: 60, overlap: 0.15 };
    let chunks = chunk_document(&doc, 0, &config, &CharSizer);
    let pages: Vec<Option<u32>> = chunks.iter().map(|c| c.page).collect();
    assert_eq!(pages, [Some(1), Some(2), Some(3)]);
    assert_eq!(chunks[2].text, "A footnote.\n\nPage four is short too.");
}

#[test]
fn an_over_long_sentence_is_cut_at_word_boundaries() {
    let sentence = format!("{}end.", "antidisestablishment ".repeat(30));
    let mut b = DocumentBuilder::new();
    b.block(BlockKind::Paragraph, &format!("Short start. {sentence} Short end."), None);
    let doc = b.finish().expect("within the limits");
    let config = ChunkConfig { target: 100, max: 120, min: 20, overlap: 0.2 };
    let chunks = chunk_document(&doc, 0, &config, &CharSizer);
    for chunk in &chunks {
        assert!(chars(&chunk.text) <= 120);
        assert!(!chunk.text.starts_with(' ') && !chunk.text.ends_with(' '));
        assert!(chunk.text.split_whitespace().all(|w| "antidisestablishment".contains(w)
            || ["Short", "start.", "end.", "Short end."].contains(&w)));
    }
}

#[test]
fn non_additive_sizes_still_respect_max() {
    let doc = squad_document();
    let config = ChunkConfig { target: 300, max: 330, min: 60, overlap: 0.3 };
    let chunks = chunk_document(&doc, 0, &config, &Surcharge);
    for chunk in &chunks {
        assert!(Surcharge.size(&chunk.text) <= config.max);
    }
}

/// A chunk after a carried-over sentence that starts with an indented code block owns the
/// indentation: merging the small tail of the block back must be measured from the block's
/// first line as written (146 chars here, over `max`), not from its first non-blank character
/// (142 chars, which would wrongly fit).
#[test]
fn an_indented_code_tail_is_measured_from_the_indentation() {
    let code = "    for row in rows:\n        account = accounts[row.account_id]\n        \
                account.total += row.amount\n        account.count += 1\n    return accounts";
    let mut b = DocumentBuilder::new();
    b.block(BlockKind::Paragraph, "Rows are summed per account. Here is how.", None);
    b.block(BlockKind::Code, code, None);
    let doc = b.finish().expect("within the limits");
    let config = ChunkConfig { target: 100, max: 145, min: 40, overlap: 0.3 };
    let chunks = chunk_document(&doc, 0, &config, &CharSizer);
    let texts: Vec<&str> = chunks.iter().map(|c| c.text.as_str()).collect();
    let (head, tail) = code.split_at(code.rfind('\n').unwrap_or(code.len()));
    assert_eq!(
        texts,
        [
            "Rows are summed per account. Here is how.",
            &format!("Here is how.\n\n{head}"),
            tail.trim_start_matches('\n'),
        ]
    );
    assert_eq!(chars(code), 146, "head and tail together exceed max");
    if let Err(error) = check_properties(&doc, &config, &chunks) {
        panic!("{error}");
    }
}

// ---- Generated documents -------------------------------------------------------------------

const VOCAB: &[&str] = &[
    "the",
    "cells",
    "were",
    "incubated",
    "with",
    "vitamin",
    "naïve",
    "Zürich",
    "data",
    "showed",
    "co-operation",
    "of",
    "3.14",
    "significant",
    "heterogeneous",
    "日本語",
    "and",
    "results",
    "mitochondrial",
    "in",
    "patients",
    "über",
    "was",
    "a",
    "cohort",
    "measured",
];

#[derive(Debug, Clone)]
enum Part {
    Heading(u8, String),
    Block(BlockKind, String),
    NewPage,
}

fn words(count: Range<usize>) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(VOCAB), count).prop_map(|w| w.join(" "))
}

fn sentence() -> impl Strategy<Value = String> {
    let length = prop_oneof![12 => 1..25usize, 1 => 60..160usize];
    let end = prop::sample::select(&[".", "?", "!"][..]);
    (length.prop_flat_map(|n| words(n..n + 1)), end).prop_map(|(body, end)| {
        let mut letters = body.chars();
        let first =
            letters.next().map(|c| c.to_uppercase().collect::<String>()).unwrap_or_default();
        format!("{first}{}{end}", letters.as_str())
    })
}

fn part() -> impl Strategy<Value = Part> {
    let prose =
        prop::sample::select(&[BlockKind::Paragraph, BlockKind::ListItem, BlockKind::Quote][..]);
    let paragraph = (prose, prop::collection::vec(sentence(), 1..6))
        .prop_map(|(kind, s)| Part::Block(kind, s.join(" ")));
    let line =
        (0..3usize, words(1..12)).prop_map(|(indent, w)| format!("{}{w}", "  ".repeat(indent)));
    let code =
        prop::collection::vec(line, 1..15).prop_map(|l| Part::Block(BlockKind::Code, l.join("\n")));
    let row = words(1..4).prop_map(|w| w.replace(' ', " | "));
    let table =
        prop::collection::vec(row, 1..10).prop_map(|r| Part::Block(BlockKind::Table, r.join("\n")));
    let heading = (1..4u8, words(1..5)).prop_map(|(level, w)| Part::Heading(level, w));
    prop_oneof![3 => heading, 8 => paragraph, 1 => code, 1 => table, 1 => Just(Part::NewPage)]
}

fn document() -> impl Strategy<Value = Document> {
    (prop::collection::vec(part(), 1..30), any::<bool>()).prop_map(|(parts, paged)| {
        let mut b = DocumentBuilder::new();
        let mut page = 1;
        for part in parts {
            let on = paged.then_some(page);
            match part {
                Part::Heading(level, text) => b.heading(level, &text, on),
                Part::Block(kind, text) => b.block(kind, &text, on),
                Part::NewPage => page += 1,
            }
        }
        b.finish().expect("within the limits")
    })
}

fn config() -> impl Strategy<Value = ChunkConfig> {
    (10..80usize, 0..300usize, 0..300usize, 0.0..0.5f32).prop_map(|(min, t, m, overlap)| {
        ChunkConfig { target: min + t, max: min + t + m, min, overlap }
    })
}

/// What the properties need to know about a document, computed from its blocks.
struct Layout<'a> {
    doc: &'a Document,
    /// Region key of each block: its section and page, or a heading's next content's.
    keys: Vec<(usize, Option<u32>)>,
    /// Sentence ranges of prose blocks, with each over-long one marked.
    sentences: Vec<(Range<usize>, bool)>,
}

impl<'a> Layout<'a> {
    fn new(doc: &'a Document, max: usize) -> Self {
        let mut keys: Vec<(usize, Option<u32>)> = Vec::new();
        let mut next_content = None;
        for block in doc.blocks.iter().rev() {
            let own = (block.section, block.page);
            let heading = block.kind == BlockKind::Heading;
            keys.push(if heading { next_content.unwrap_or(own) } else { own });
            if !heading {
                next_content = Some(own);
            }
        }
        keys.reverse();
        let mut all = Vec::new();
        for block in &doc.blocks {
            if matches!(block.kind, BlockKind::Paragraph | BlockKind::ListItem | BlockKind::Quote) {
                for s in sentences(doc.block_text(block)) {
                    let range = block.range.start + s.start..block.range.start + s.end;
                    let long = chars(&doc.text[range.clone()]) > max;
                    all.push((range, long));
                }
            }
        }
        Self { doc, keys, sentences: all }
    }

    /// Whether a chunk may start or end at `offset`: a block or sentence boundary, or any
    /// point inside an atom (sentence or block) larger than `max`.
    fn boundary_ok(&self, offset: usize, max: usize) -> bool {
        let at_block =
            self.doc.blocks.iter().any(|b| b.range.start == offset || b.range.end == offset);
        let at_sentence = self.sentences.iter().any(|(r, _)| r.start == offset || r.end == offset);
        let in_long_sentence = self.sentences.iter().any(|(r, long)| *long && r.contains(&offset));
        let in_long_block = self.doc.blocks.iter().any(|b| {
            matches!(b.kind, BlockKind::Heading | BlockKind::Code | BlockKind::Table)
                && b.range.contains(&offset)
                && chars(self.doc.block_text(b)) > max
        });
        at_block || at_sentence || in_long_sentence || in_long_block
    }

    /// Region keys of the blocks a byte range touches.
    fn keys_in(&self, range: Range<usize>) -> Vec<(usize, Option<u32>)> {
        let mut keys: Vec<_> = self
            .doc
            .blocks
            .iter()
            .zip(&self.keys)
            .filter(|(b, _)| b.range.start < range.end && range.start < b.range.end)
            .map(|(_, k)| *k)
            .collect();
        keys.dedup();
        keys
    }

    /// Byte range of the region with `key`.
    fn region(&self, key: (usize, Option<u32>)) -> Range<usize> {
        let blocks: Vec<_> =
            self.doc.blocks.iter().zip(&self.keys).filter(|(_, k)| **k == key).collect();
        blocks[0].0.range.start..blocks[blocks.len() - 1].0.range.end
    }
}

fn check_properties(
    doc: &Document,
    config: &ChunkConfig,
    chunks: &[Chunk],
) -> Result<(), TestCaseError> {
    let layout = Layout::new(doc, config.max);
    let text = &doc.text;
    let budget = (f64::from(config.overlap) * config.target as f64) as usize;
    let mut covered = vec![false; text.len()];
    for (i, chunk) in chunks.iter().enumerate() {
        let (start, end) = (chunk.start as usize, chunk.end as usize);
        // (5) exact slices, ids, numbering.
        prop_assert_eq!(&chunk.text, &text[start..end]);
        prop_assert_eq!(&chunk.id, &crate::content_id(chunk.text.as_bytes()));
        prop_assert_eq!(chunk.seq, i as u32);
        covered[start..end].iter_mut().for_each(|c| *c = true);
        // (4) hard maximum.
        prop_assert!(chars(&chunk.text) <= config.max, "chunk {} over max", i);
        // (3) boundaries.
        prop_assert!(layout.boundary_ok(start, config.max), "chunk {} starts mid-sentence", i);
        prop_assert!(
            layout.boundary_ok(end, config.max),
            "chunk {} ends mid-sentence: {:?}",
            i,
            chunk.text
        );
        let prev = i.checked_sub(1).map(|p| &chunks[p]);
        // (2) overlap: whole prose sentences within budget, only with the previous chunk.
        if let Some(p) = prev {
            prop_assert!(chunk.start > p.start && chunk.end > p.end);
            if chunk.start < p.end {
                let shared = start..p.end as usize;
                prop_assert!(chars(&text[shared.clone()]) <= budget, "overlap over budget");
                let whole = layout.sentences.iter().any(|(r, long)| r.start == start && !long);
                prop_assert!(whole, "overlap does not start a sentence");
                prop_assert_eq!(layout.keys_in(shared).len(), 1);
            }
        }
        if let Some(before) = i.checked_sub(2).map(|p| &chunks[p]) {
            prop_assert!(chunk.start >= before.end, "chunk {} overlaps two chunks", i);
        }
        // (6) several regions only when each is whole and below min.
        let keys = layout.keys_in(start..end);
        if keys.len() > 1 {
            for key in &keys {
                let region = layout.region(*key);
                prop_assert!(start <= region.start && region.end <= end, "partial region");
                prop_assert!(chars(&text[region]) < config.min, "large region merged");
            }
        }
        // (4) below min only when no neighbour in the same region could take it.
        let own = own_start(doc, prev, chunk)..end;
        if chars(&text[own.clone()]) < config.min && keys.len() == 1 {
            if let Some(p) =
                prev.filter(|p| layout.keys_in(p.start as usize..p.end as usize) == keys)
            {
                let merged = own_start(doc, i.checked_sub(2).map(|q| &chunks[q]), p)..end;
                prop_assert!(chars(&text[merged]) > config.max, "chunk {} could merge back", i);
            }
            if let Some(n) = chunks
                .get(i + 1)
                .filter(|n| layout.keys_in(n.start as usize..n.end as usize) == keys)
            {
                let merged = own.start..n.end as usize;
                prop_assert!(chars(&text[merged]) > config.max, "chunk {} could merge forward", i);
            }
        }
    }
    // (1) no text lost.
    for (i, c) in text.char_indices() {
        prop_assert!(c.is_whitespace() || covered[i], "byte {} not covered", i);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn generated_documents_keep_every_invariant(doc in document(), config in config()) {
        let chunks = chunk_document(&doc, 3, &config, &CharSizer);
        check_properties(&doc, &config, &chunks)?;
        prop_assert!(chunks.iter().all(|c| c.doc == 3));
        prop_assert_eq!(&chunks, &chunk_document(&doc, 3, &config, &CharSizer));
    }

    #[test]
    fn headings_open_chunks(doc in document(), config in config()) {
        let chunks = chunk_document(&doc, 0, &config, &CharSizer);
        let layout = Layout::new(&doc, config.max);
        for (b, block) in doc.blocks.iter().enumerate().filter(|(_, b)| b.kind == BlockKind::Heading) {
            let Some(chunk) = chunks.iter().rev().find(|c| c.start as usize <= block.range.start) else {
                continue;
            };
            let opens = chunk.start as usize == block.range.start;
            let after_heading = b > 0 && doc.blocks[b - 1].kind == BlockKind::Heading;
            let merged = layout.keys_in(chunk.start as usize..chunk.end as usize).len() > 1;
            prop_assert!(opens || after_heading || merged, "heading {} inside a chunk", b);
        }
    }

    #[test]
    fn non_additive_sizers_never_exceed_max(doc in document(), config in config()) {
        let chunks = chunk_document(&doc, 0, &config, &Surcharge);
        let mut covered = vec![false; doc.text.len()];
        for chunk in &chunks {
            prop_assert!(Surcharge.size(&chunk.text) <= config.max);
            prop_assert_eq!(&chunk.text, &doc.text[chunk.start as usize..chunk.end as usize]);
            covered[chunk.start as usize..chunk.end as usize].iter_mut().for_each(|c| *c = true);
        }
        for (i, c) in doc.text.char_indices() {
            prop_assert!(c.is_whitespace() || covered[i]);
        }
    }
}
