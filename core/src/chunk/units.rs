//! Units: the atoms chunks are built from (a heading, a sentence, a code block or table, or a
//! piece of one of these that was too large for a chunk), each measured once.

use std::ops::Range;

use super::Sizer;
use crate::load::{BlockKind, Document};
use crate::text::sentences;

/// What a unit is; decides whether it may be carried over as overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UnitKind {
    /// A heading (or a piece of an over-long one).
    Heading,
    /// A whole prose sentence.
    Sentence,
    /// A piece of a prose sentence longer than `max`, cut at a word boundary.
    Fragment,
    /// A code block or table, or a run of its lines when the whole is larger than `max`.
    Verbatim,
}

/// One atom of a chunk: a trimmed byte range of the document text with its measured size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unit {
    pub(super) kind: UnitKind,
    pub(super) range: Range<usize>,
    pub(super) size: usize,
    pub(super) section: usize,
    pub(super) page: Option<u32>,
}

/// How finely an over-long range is cut, coarsest first.
#[derive(Debug, Clone, Copy)]
enum Cut {
    Lines,
    Words,
    Chars,
}

const PROSE_CUTS: &[Cut] = &[Cut::Words, Cut::Chars];
const VERBATIM_CUTS: &[Cut] = &[Cut::Lines, Cut::Words, Cut::Chars];

/// Bytes per token (or character) past which a text is taken to be over `max` without being
/// measured: text spends a few bytes per token, and a range of more than `max` times this is
/// cut before the sizer sees it. (A tokenizer handed one 50 MB run of punctuation would hold
/// 50 million tokens.) Where the guess is wrong, the pieces are only smaller than they could be.
const MAX_BYTES_PER_UNIT: usize = 32;

/// The size of `text` if it is at most `max`.
fn measure(text: &str, max: usize, sizer: &dyn Sizer) -> Option<usize> {
    if text.len() > max.saturating_mul(MAX_BYTES_PER_UNIT) {
        return None;
    }
    Some(sizer.size(text)).filter(|&size| size <= max)
}

/// The document's units in reading order; every unit measures at most `max` (unless a single
/// character does).
pub(super) fn document_units(doc: &Document, max: usize, sizer: &dyn Sizer) -> Vec<Unit> {
    let mut units = Vec::new();
    for block in &doc.blocks {
        let mut push = |kind, range: Range<usize>, size| {
            units.push(Unit { kind, range, size, section: block.section, page: block.page });
        };
        match block.kind {
            BlockKind::Heading => {
                for (range, size) in fit(&doc.text, block.range.clone(), max, sizer, PROSE_CUTS) {
                    push(UnitKind::Heading, range, size);
                }
            }
            BlockKind::Code | BlockKind::Table => {
                let cut = fit(&doc.text, block.range.clone(), max, sizer, VERBATIM_CUTS);
                for (range, size) in cut {
                    push(UnitKind::Verbatim, range, size);
                }
            }
            BlockKind::Paragraph | BlockKind::ListItem | BlockKind::Quote => {
                let offset = block.range.start;
                for sentence in sentences(doc.block_text(block)) {
                    let range = offset + sentence.start..offset + sentence.end;
                    match measure(&doc.text[range.clone()], max, sizer) {
                        Some(size) => push(UnitKind::Sentence, range, size),
                        None => {
                            for (piece, size) in split(&doc.text, range, max, sizer, PROSE_CUTS) {
                                push(UnitKind::Fragment, piece, size);
                            }
                        }
                    }
                }
            }
        }
    }
    units
}

/// `range` whole if it fits `max`, else [`split`] into pieces that do.
fn fit(
    text: &str,
    range: Range<usize>,
    max: usize,
    sizer: &dyn Sizer,
    cuts: &[Cut],
) -> Vec<(Range<usize>, usize)> {
    match measure(&text[range.clone()], max, sizer) {
        Some(size) => vec![(range, size)],
        None => split(text, range, max, sizer, cuts),
    }
}

/// Cuts `range` (larger than `max`) into as few consecutive pieces of at most `max` as the
/// first cut allows, greedily; a segment that alone exceeds `max` is cut by the next, finer cut.
/// Returns each piece with its size.
///
/// Segments are read as the pieces need them, at most `max + 1` held at once (a 50 MB word cut
/// between characters does not become 50 million ranges); a piece is therefore also at most
/// `max + 1` segments long, which only matters for a sizer that counts several segments as
/// one (tokens across characters): such pieces stay within `max`, only more numerous.
fn split(
    text: &str,
    range: Range<usize>,
    max: usize,
    sizer: &dyn Sizer,
    cuts: &[Cut],
) -> Vec<(Range<usize>, usize)> {
    let Some((&cut, finer)) = cuts.split_first() else {
        // A single character over `max`.
        return vec![(range.clone(), sizer.size(&text[range]))];
    };
    let mut segments = segments(text, range, cut);
    let mut window: Vec<Range<usize>> = Vec::new();
    let mut pieces = Vec::new();
    loop {
        let wanted = max.saturating_add(1).saturating_sub(window.len());
        window.extend(segments.by_ref().take(wanted));
        if window.is_empty() {
            return pieces;
        }
        let span = |b: usize| window[0].start..window[b - 1].end;
        let end =
            largest_fitting(1, window.len(), |b| measure(&text[span(b)], max, sizer).is_some());
        let piece = span(end);
        match measure(&text[piece.clone()], max, sizer) {
            Some(size) => pieces.push((piece, size)),
            None => pieces.extend(split(text, piece, max, sizer, finer)),
        }
        window.drain(..end);
    }
}

/// The non-blank segments of `range` at one cut, in order: lines (trailing whitespace
/// trimmed, indent kept), whitespace-separated words, or characters.
fn segments(
    text: &str,
    range: Range<usize>,
    cut: Cut,
) -> Box<dyn Iterator<Item = Range<usize>> + '_> {
    let offset = range.start;
    let text = &text[range];
    match cut {
        Cut::Lines => Box::new(
            text.split_inclusive('\n')
                .scan(offset, |start, line| {
                    let at = *start;
                    *start += line.len();
                    let kept = line.trim_end();
                    Some((!kept.trim_start().is_empty()).then(|| at..at + kept.len()))
                })
                .flatten(),
        ),
        Cut::Words => Box::new(text.split_whitespace().map(move |word| {
            // `word` is a slice of `text`: its offset is the distance between their starts.
            let at = offset + (word.as_ptr() as usize - text.as_ptr() as usize);
            at..at + word.len()
        })),
        Cut::Chars => {
            Box::new(text.char_indices().map(move |(i, c)| offset + i..offset + i + c.len_utf8()))
        }
    }
}

/// The largest `end` in `first..=last` for which `fits(end)` holds, assuming `fits` is
/// monotone (true up to some point, false after); `first` is returned even if it does not fit.
///
/// Gallops forward from `first` and then bisects, so the cost grows with the answer, not with
/// `last`: measuring a long prefix of a large block is what this avoids.
pub(super) fn largest_fitting(first: usize, last: usize, fits: impl Fn(usize) -> bool) -> usize {
    let mut good = first;
    let mut step = 1;
    let mut bad = loop {
        let probe = (good + step).min(last);
        if probe == good {
            return good;
        }
        if !fits(probe) {
            break probe;
        }
        good = probe;
        step *= 2;
    };
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if fits(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    good
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::CharSizer;

    #[test]
    fn largest_fitting_finds_the_boundary() {
        for limit in 0..40 {
            assert_eq!(largest_fitting(1, 30, |b| b <= limit), limit.clamp(1, 30));
        }
    }

    #[test]
    fn over_long_text_is_cut_at_the_coarsest_boundary_that_fits() {
        let text = "alpha beta gamma\ndelta epsilon\nzeta eta theta iota kappa lambda mu\nxi";
        let pieces = split(text, 0..text.len(), 20, &CharSizer, VERBATIM_CUTS);
        let got: Vec<&str> = pieces.iter().map(|(r, _)| &text[r.clone()]).collect();
        assert_eq!(
            got,
            ["alpha beta gamma", "delta epsilon", "zeta eta theta iota", "kappa lambda mu", "xi"]
        );
        assert!(pieces.iter().all(|(r, size)| *size == text[r.clone()].chars().count()));
    }

    /// The sizer never sees a text much longer than `max` could be, however long the word.
    #[test]
    fn an_endless_word_is_cut_before_it_is_measured() {
        struct Longest(std::cell::Cell<usize>);
        impl Sizer for Longest {
            fn size(&self, text: &str) -> usize {
                self.0.set(self.0.get().max(text.len()));
                text.len()
            }
            fn unit(&self) -> crate::chunk::SizeUnit {
                crate::chunk::SizeUnit::Chars
            }
        }
        let sizer = Longest(std::cell::Cell::new(0));
        let text = format!("A start. {} The end.", "!".repeat(1 << 20));
        let mut doc = crate::load::DocumentBuilder::new();
        doc.block(BlockKind::Paragraph, &text, None);
        let doc = doc.finish().expect("a document");
        let units = document_units(&doc, 100, &sizer);
        assert!(sizer.0.get() <= 100 * MAX_BYTES_PER_UNIT, "measured {} bytes", sizer.0.get());
        assert!(units.iter().all(|u| u.size <= 100 && u.size == u.range.len()));
        let covered: String = units.iter().map(|u| &doc.text[u.range.clone()]).collect();
        assert_eq!(covered.replace(' ', ""), text.replace(' ', ""));
    }

    #[test]
    fn a_word_longer_than_max_is_cut_between_characters() {
        let text = "naïve Donaudampfschifffahrt";
        let pieces = split(text, 0..text.len(), 8, &CharSizer, PROSE_CUTS);
        let got: Vec<&str> = pieces.iter().map(|(r, _)| &text[r.clone()]).collect();
        assert_eq!(got, ["naïve", "Donaudam", "pfschiff", "fahrt"]);
    }
}
