//! Content streams rewritten for pdf-extract: only the operators that place or show text are
//! kept, each with exactly the operands (and operand types) pdf-extract's interpreter
//! indexes and unwraps; fonts and forms are renamed to the sanitized document's resources.
//!
//! Dropped: colour, path, clipping, graphics-state (`gs`), marked-content and unknown
//! operators, inline images, text shown before any usable font is selected, `Do` of
//! anything but a usable form. `'` and `"` (which pdf-extract ignores) become `T*` plus
//! `Tj`. Saved graphics states nest at most [`limits::MAX_DEPTH`] deep; deeper `q`/`Q`
//! pairs are dropped.

use std::fmt::Write as _;

use super::lex::{Lexer, Token, is_space};
use super::value::{self, Value};
use crate::{Error, Result, limits};

/// Most operators one rewritten content stream may hold (pdf-extract decodes a whole stream
/// into memory, some hundred bytes per operator).
pub(super) const MAX_OPERATORS: usize = 1 << 20;

/// Most items kept in one array operand (a `TJ` array).
const MAX_ARRAY_ITEMS: usize = 1 << 16;

/// Operands kept before an operator; more are an error in the stream, and the operator is
/// dropped.
const MAX_OPERANDS: usize = 16;

/// Numbers are written within ±this (PDF's own implementation limit is far below).
const MAX_NUMBER: f64 = 1e9;

/// What a content stream refers to by name, resolved by the sanitizer.
pub(super) trait Resolve {
    /// The sanitized font's index for the font resource `name`, or `None` when unusable.
    ///
    /// # Errors
    /// A limit passed while sanitizing it.
    fn font(&mut self, name: &[u8]) -> Result<Option<usize>>;

    /// The sanitized form's index for the XObject resource `name`, or `None` when it is not
    /// a usable form (an image, missing, or drawing itself).
    ///
    /// # Errors
    /// A limit passed while sanitizing it.
    fn form(&mut self, name: &[u8]) -> Result<Option<usize>>;

    /// Called for each string shown with font `font`, of `len` bytes.
    ///
    /// # Errors
    /// A limit passed.
    fn shown(&mut self, font: usize, len: usize) -> Result<()>;
}

/// The rewritten stream under construction.
struct Writer {
    out: String,
    operators: usize,
}

impl Writer {
    fn number(&mut self, n: f64) {
        let n = if n.is_finite() { n.clamp(-MAX_NUMBER, MAX_NUMBER) } else { 0.0 };
        if n.fract() == 0.0 {
            let _ = write!(self.out, "{} ", n as i64);
        } else {
            let text = format!("{n:.6}");
            let _ = write!(self.out, "{} ", text.trim_end_matches('0'));
        }
    }

    fn string(&mut self, s: &[u8]) {
        self.out.push('<');
        for b in s {
            let _ = write!(self.out, "{b:02x}");
        }
        self.out.push_str("> ");
    }

    fn op(&mut self, op: &str) -> Result<()> {
        self.operators += 1;
        if self.operators > MAX_OPERATORS {
            return Err(Error::Limit(format!(
                "a PDF content stream holds more than {MAX_OPERATORS} text operators"
            )));
        }
        self.out.push_str(op);
        self.out.push('\n');
        Ok(())
    }
}

/// The numbers of the last `n` operands, if there are that many and all are numbers.
fn numbers<const N: usize>(operands: &[Value]) -> Option<[f64; N]> {
    let start = operands.len().checked_sub(N)?;
    let mut out = [0.0; N];
    for (slot, v) in out.iter_mut().zip(operands.get(start..)?) {
        *slot = v.number()?;
    }
    Some(out)
}

/// Rewrites `content` (see the module docs).
///
/// # Errors
/// [`Error::Limit`] for a stream past [`MAX_OPERATORS`], nesting past [`limits::MAX_DEPTH`],
/// or a limit passed while resolving its fonts and forms.
pub(super) fn rewrite(content: &[u8], resolve: &mut dyn Resolve) -> Result<Vec<u8>> {
    let mut lexer = Lexer::new(content);
    let mut w = Writer { out: String::new(), operators: 0 };
    let mut operands: Vec<Value> = Vec::new();
    let mut overflow = false;
    // The current font (index) and its saved values, as `q`/`Q` save and restore it.
    let mut font: Option<usize> = None;
    let mut saved: Vec<Option<usize>> = Vec::new();
    let mut dropped_saves = 0usize;
    while let Some(token) = lexer.next_token() {
        let op = match token {
            Token::Keyword(op) => op,
            token => {
                let value = value::read_value(&mut lexer, token, MAX_ARRAY_ITEMS)?;
                if operands.len() < MAX_OPERANDS {
                    operands.push(value);
                } else {
                    overflow = true;
                }
                continue;
            }
        };
        if op == b"BI" {
            skip_inline_image(&mut lexer);
        } else if !overflow {
            match op {
                b"BT" | b"ET" | b"T*" => w.op(std::str::from_utf8(op).unwrap_or("BT"))?,
                b"q" if saved.len() < limits::MAX_DEPTH => {
                    saved.push(font);
                    w.op("q")?;
                }
                b"q" => dropped_saves += 1,
                b"Q" if dropped_saves > 0 => dropped_saves -= 1,
                b"Q" => {
                    if let Some(f) = saved.pop() {
                        font = f;
                        w.op("Q")?;
                    }
                }
                b"cm" | b"Tm" => {
                    if let Some(m) = numbers::<6>(&operands) {
                        m.into_iter().for_each(|n| w.number(n));
                        w.op(if op == b"cm" { "cm" } else { "Tm" })?;
                    }
                }
                b"Td" | b"TD" => {
                    if let Some(m) = numbers::<2>(&operands) {
                        m.into_iter().for_each(|n| w.number(n));
                        w.op(if op == b"Td" { "Td" } else { "TD" })?;
                    }
                }
                b"Tc" | b"Tw" | b"Tz" | b"TL" | b"Ts" => {
                    if let Some([n]) = numbers::<1>(&operands) {
                        w.number(n);
                        w.op(std::str::from_utf8(op).unwrap_or("Tc"))?;
                    }
                }
                b"Tf" => {
                    font = None;
                    if let (Some(Value::Name(name)), Some([size])) = (
                        operands.len().checked_sub(2).and_then(|i| operands.get(i)),
                        numbers::<1>(&operands),
                    ) {
                        font = resolve.font(name)?;
                        if let Some(f) = font {
                            let _ = write!(w.out, "/F{f} ");
                            w.number(size);
                            w.op("Tf")?;
                        }
                    }
                }
                b"Tj" | b"'" => {
                    if op == b"'" {
                        w.op("T*")?;
                    }
                    if let (Some(f), Some(Value::Str(s))) = (font, operands.last()) {
                        resolve.shown(f, s.len())?;
                        w.string(s);
                        w.op("Tj")?;
                    }
                }
                b"\"" => {
                    let len = operands.len();
                    if let (Some([aw, ac]), Some(Value::Str(s))) = (
                        len.checked_sub(1).and_then(|n| numbers::<2>(operands.get(..n)?)),
                        operands.last(),
                    ) {
                        w.number(aw);
                        w.op("Tw")?;
                        w.number(ac);
                        w.op("Tc")?;
                        w.op("T*")?;
                        if let Some(f) = font {
                            resolve.shown(f, s.len())?;
                            w.string(s);
                            w.op("Tj")?;
                        }
                    }
                }
                b"TJ" => {
                    if let (Some(f), Some(Value::Array(items))) = (font, operands.last()) {
                        w.out.push('[');
                        for item in items {
                            match item {
                                Value::Str(s) => {
                                    resolve.shown(f, s.len())?;
                                    w.string(s);
                                }
                                other => {
                                    if let Some(n) = other.number() {
                                        w.number(n);
                                    }
                                }
                            }
                        }
                        w.out.push_str("] ");
                        w.op("TJ")?;
                    }
                }
                b"Do" => {
                    if let Some(Value::Name(name)) = operands.last()
                        && let Some(x) = resolve.form(name)?
                    {
                        let _ = write!(w.out, "/X{x} ");
                        w.op("Do")?;
                    }
                }
                _ => {}
            }
        }
        operands.clear();
        overflow = false;
    }
    Ok(w.out.into_bytes())
}

/// Skips an inline image, from after `BI` to after its `EI`: the dictionary, then binary
/// data up to `EI` standing between white space (or the end of the stream).
fn skip_inline_image(lexer: &mut Lexer<'_>) {
    while let Some(token) = lexer.next_token() {
        if token == Token::Keyword(b"ID") {
            break;
        }
    }
    let data = lexer.data();
    let mut i = lexer.pos() + 1;
    while i < data.len() {
        let before = data.get(i.wrapping_sub(1)).is_some_and(|&b| is_space(b));
        let after = data.get(i + 2).is_none_or(|&b| is_space(b));
        if before && data.get(i..i + 2) == Some(b"EI") && after {
            lexer.set_pos(i + 2);
            return;
        }
        i += 1;
    }
    lexer.set_pos(data.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fonts named `F…` resolve to index 0, forms named `X…` to index 7.
    struct Names;

    impl Resolve for Names {
        fn font(&mut self, name: &[u8]) -> Result<Option<usize>> {
            Ok(name.starts_with(b"F").then_some(0))
        }
        fn form(&mut self, name: &[u8]) -> Result<Option<usize>> {
            Ok(name.starts_with(b"X").then_some(7))
        }
        fn shown(&mut self, _: usize, _: usize) -> Result<()> {
            Ok(())
        }
    }

    fn rewritten(content: &[u8]) -> String {
        String::from_utf8(rewrite(content, &mut Names).expect("rewrites")).expect("ascii")
    }

    #[test]
    fn keeps_text_operators_with_valid_operands() {
        let out = rewritten(
            b"q 1 0 0 RG BT (no font) Tj /F1 12 Tf 1 0 0 1 72.5 700 Tm [(A) -250 (B)] TJ \
              (x) ' 1 2 (y) \" ET Q /Im1 Do /X1 Do 0 0 m 10 10 l S cm Td (s) Tf \
              BI /W 1 /H 1 /CS /G /BPC 8 ID \x00EI\x01 EI (after) Tj",
        );
        assert_eq!(
            out,
            "q\nBT\n/F0 12 Tf\n1 0 0 1 72.5 700 Tm\n[<41> -250 <42> ] TJ\nT*\n<78> Tj\n\
             1 Tw\n2 Tc\nT*\n<79> Tj\nET\nQ\n/X7 Do\n"
        );
    }

    #[test]
    fn graphics_state_saves_are_bounded() {
        let deep = "q ".repeat(limits::MAX_DEPTH + 10) + &"Q ".repeat(limits::MAX_DEPTH + 10);
        let out = rewritten(deep.as_bytes());
        assert_eq!(out.matches("q\n").count(), limits::MAX_DEPTH);
        assert_eq!(out.matches("Q\n").count(), limits::MAX_DEPTH);
    }

    #[test]
    fn nesting_and_size_limits() {
        let nested = "[".repeat(1 << 20) + " TJ";
        assert!(matches!(rewrite(nested.as_bytes(), &mut Names), Err(Error::Limit(_))));
        let many = "BT ".repeat(MAX_OPERATORS + 1);
        assert!(matches!(rewrite(many.as_bytes(), &mut Names), Err(Error::Limit(_))));
    }
}
