//! Where pdf-extract's interpreter sends the characters: the text of each page, with spaces
//! and line breaks guessed from where consecutive strings are placed, up to
//! [`limits::MAX_TEXT_BYTES`] in all.
//!
//! The guess is made at the first character of each shown string, from the previous
//! character's end and baseline, in units of the current (transformed) font size, measured
//! along the line's direction (so rotated text reads as horizontal text does): a baseline
//! that moved more than 1.5 sizes starts a line, a move back against the direction of
//! writing onto another baseline (more than half a size away) starts one too (so a move down
//! and back to the left by more than 1.5 sizes leaves a blank line, which
//! [`super::paragraphs`] reads as a paragraph break); a gap of more than a tenth of a size on
//! the same line is a space. A string whose direction turns by more than about 25° from the
//! line's starts a line. A mirrored glyph (a logo's reversed letter) is measured by where it
//! is drawn, not where its origin is.

use pdf_extract::{MediaBox, OutputDev, OutputError, Transform};

use crate::limits;

/// The text of each page, page by page.
#[derive(Debug, Default)]
pub(super) struct PageText {
    pages: Vec<String>,
    bytes: usize,
    /// Set when the text reached [`limits::MAX_TEXT_BYTES`]; extraction was stopped.
    full: bool,
    /// The next character starts a shown string.
    string_start: bool,
    /// The line the previous character of the page was on, and where it ended.
    last: Option<Line>,
}

/// A line of text: its direction, its baseline and where its last character ended.
#[derive(Debug, Clone, Copy)]
struct Line {
    /// Unit vector of the direction of writing, in device space.
    dir: (f64, f64),
    /// Distance of the baseline from the origin, across `dir`.
    baseline: f64,
    /// Position along `dir` where the last character ended.
    end: f64,
}

impl Line {
    /// Position of `p` along the line and across it.
    fn coordinates(&self, (x, y): (f64, f64)) -> (f64, f64) {
        let (dx, dy) = self.dir;
        (x * dx + y * dy, y * dx - x * dy)
    }
}

/// The unit direction of writing of a glyph drawn with `trm`: its text-space x axis, turned
/// round when the glyph is mirrored (so a mirrored letter stays on its line).
fn direction(trm: &Transform) -> (f64, f64) {
    let (dx, dy) = (trm.m11, trm.m12);
    let length = dx.hypot(dy);
    if !(length.is_finite() && length > 0.0) {
        return (1.0, 0.0);
    }
    let sign = if trm.m11 * trm.m22 - trm.m12 * trm.m21 < 0.0 { -1.0 } else { 1.0 };
    (sign * dx / length, sign * dy / length)
}

impl PageText {
    /// Whether extraction was stopped at [`limits::MAX_TEXT_BYTES`].
    pub(super) fn is_full(&self) -> bool {
        self.full
    }

    /// The pages' text.
    pub(super) fn into_pages(self) -> Vec<String> {
        self.pages
    }

    fn push(&mut self, text: &str) -> Result<(), OutputError> {
        self.bytes = self.bytes.saturating_add(text.len());
        if self.bytes > limits::MAX_TEXT_BYTES {
            self.full = true;
            return Err(OutputError::FormatError(std::fmt::Error));
        }
        if self.pages.is_empty() {
            self.pages.push(String::new());
        }
        if let Some(page) = self.pages.last_mut() {
            page.push_str(text);
        }
        Ok(())
    }
}

impl OutputDev for PageText {
    fn begin_page(
        &mut self,
        _: u32,
        _: &MediaBox,
        _: Option<(f64, f64, f64, f64)>,
    ) -> Result<(), OutputError> {
        self.pages.push(String::new());
        self.last = None;
        Ok(())
    }

    fn end_page(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn output_character(
        &mut self,
        trm: &Transform,
        width: f64,
        _spacing: f64,
        font_size: f64,
        char: &str,
    ) -> Result<(), OutputError> {
        let scale = (trm.m11 * trm.m22 - trm.m12 * trm.m21).abs().sqrt();
        let size = (font_size * scale).abs();
        let dir = direction(trm);
        // The line this character is measured on: the previous one unless it turned.
        let same_line = self.last.filter(|l| (l.dir.0 * dir.0 + l.dir.1 * dir.1).abs() > 0.9);
        let line = same_line.unwrap_or(Line { dir, baseline: 0.0, end: 0.0 });
        let (along, baseline) = line.coordinates((trm.m31, trm.m32));
        let advance = width * font_size;
        let (to_x, to_y) = (trm.m31 + trm.m11 * advance, trm.m32 + trm.m12 * advance);
        let (to, _) = line.coordinates((to_x, to_y));
        let (start, end) = (along.min(to), along.max(to));
        if self.string_start {
            match (self.last, same_line) {
                (Some(_), None) => self.push("\n")?,
                (Some(last), Some(_)) => {
                    let dy = (baseline - last.baseline).abs();
                    let breaks = usize::from(dy > 1.5 * size)
                        + usize::from(start < last.end && dy > 0.5 * size);
                    if breaks > 0 {
                        self.push(&"\n".repeat(breaks))?;
                    } else if start > last.end + 0.1 * size {
                        self.push(" ")?;
                    }
                }
                (None, _) => {}
            }
        }
        self.push(char)?;
        self.string_start = false;
        self.last = Some(Line { dir: line.dir, baseline, end });
        Ok(())
    }

    fn begin_word(&mut self) -> Result<(), OutputError> {
        self.string_start = true;
        Ok(())
    }

    fn end_word(&mut self) -> Result<(), OutputError> {
        Ok(())
    }

    fn end_line(&mut self) -> Result<(), OutputError> {
        Ok(())
    }
}
