//! A small PDF lexer, shared by the file pre-scan, content streams, CMaps and Type 1 font
//! headers. It never recurses and never allocates more than the token it returns; nesting
//! (arrays, dictionaries) is left to its callers, which bound it.

/// One token of PDF (or PostScript-like) syntax.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Token<'a> {
    /// An integer.
    Int(i64),
    /// A real number (always finite).
    Real(f64),
    /// `true` or `false`.
    Bool(bool),
    /// `null`.
    Null,
    /// A name, `#xx` escapes decoded, without its slash.
    Name(Vec<u8>),
    /// A literal or hexadecimal string, decoded.
    Str(Vec<u8>),
    /// `[`
    ArrayOpen,
    /// `]`
    ArrayClose,
    /// `<<`
    DictOpen,
    /// `>>`
    DictClose,
    /// `{`
    ProcOpen,
    /// `}`
    ProcClose,
    /// Any other run of regular characters: an operator or keyword (`BT`, `obj`, `R`).
    Keyword(&'a [u8]),
}

/// Whether `b` is PDF white space.
pub(super) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' | b'\0')
}

/// Whether `b` is a PDF delimiter.
fn is_delimiter(b: u8) -> bool {
    matches!(b, b'(' | b')' | b'<' | b'>' | b'[' | b']' | b'{' | b'}' | b'/' | b'%')
}

fn is_regular(b: u8) -> bool {
    !is_space(b) && !is_delimiter(b)
}

fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Tokens of `data`, from a position the caller may move (to skip stream data or inline
/// images).
pub(super) struct Lexer<'a> {
    data: &'a [u8],
    pos: usize,
    tokens: usize,
}

impl<'a> Lexer<'a> {
    pub(super) fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0, tokens: 0 }
    }

    /// The byte offset of the next token (or of the white space before it).
    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    /// Where the lexer is, to come back to with [`Lexer::restore`].
    pub(super) fn checkpoint(&self) -> (usize, usize) {
        (self.pos, self.tokens)
    }

    /// Comes back to a [`Lexer::checkpoint`] (the tokens read since are not counted).
    pub(super) fn restore(&mut self, (pos, tokens): (usize, usize)) {
        self.pos = pos;
        self.tokens = tokens;
    }

    /// Moves to `pos` (clamped to the end).
    pub(super) fn set_pos(&mut self, pos: usize) {
        self.pos = pos.min(self.data.len());
    }

    /// The bytes being lexed.
    pub(super) fn data(&self) -> &'a [u8] {
        self.data
    }

    /// How many tokens were read so far.
    pub(super) fn tokens(&self) -> usize {
        self.tokens
    }

    /// Skips white space and comments.
    pub(super) fn skip_space(&mut self) {
        while let Some(&b) = self.data.get(self.pos) {
            if is_space(b) {
                self.pos += 1;
            } else if b == b'%' {
                while let Some(&c) = self.data.get(self.pos) {
                    if c == b'\n' || c == b'\r' {
                        break;
                    }
                    self.pos += 1;
                }
            } else {
                break;
            }
        }
    }

    /// The next token, or `None` at the end of the data.
    pub(super) fn next_token(&mut self) -> Option<Token<'a>> {
        self.skip_space();
        let &b = self.data.get(self.pos)?;
        self.tokens += 1;
        let next = self.data.get(self.pos + 1).copied();
        Some(match b {
            b'[' => self.single(Token::ArrayOpen),
            b']' => self.single(Token::ArrayClose),
            b'{' => self.single(Token::ProcOpen),
            b'}' => self.single(Token::ProcClose),
            b'<' if next == Some(b'<') => {
                self.pos += 2;
                Token::DictOpen
            }
            b'>' if next == Some(b'>') => {
                self.pos += 2;
                Token::DictClose
            }
            b'<' => self.hex_string(),
            b'(' => self.literal_string(),
            b'/' => self.name(),
            // A stray `)` or `>`: a one-byte keyword, which no caller accepts.
            b')' | b'>' => {
                self.pos += 1;
                Token::Keyword(&self.data[self.pos - 1..self.pos])
            }
            _ => self.regular(),
        })
    }

    fn single(&mut self, token: Token<'a>) -> Token<'a> {
        self.pos += 1;
        token
    }

    fn regular(&mut self) -> Token<'a> {
        let start = self.pos;
        while self.data.get(self.pos).is_some_and(|&b| is_regular(b)) {
            self.pos += 1;
        }
        let word = &self.data[start..self.pos];
        match word {
            b"true" => Token::Bool(true),
            b"false" => Token::Bool(false),
            b"null" => Token::Null,
            _ => number(word).unwrap_or(Token::Keyword(word)),
        }
    }

    fn name(&mut self) -> Token<'a> {
        self.pos += 1;
        let mut name = Vec::new();
        while let Some(&b) = self.data.get(self.pos) {
            if !is_regular(b) {
                break;
            }
            self.pos += 1;
            if b == b'#' {
                let hi = self.data.get(self.pos).copied().and_then(hex_value);
                let lo = self.data.get(self.pos + 1).copied().and_then(hex_value);
                if let (Some(hi), Some(lo)) = (hi, lo) {
                    name.push(hi << 4 | lo);
                    self.pos += 2;
                    continue;
                }
            }
            name.push(b);
        }
        Token::Name(name)
    }

    fn hex_string(&mut self) -> Token<'a> {
        self.pos += 1;
        let mut out = Vec::new();
        let mut high: Option<u8> = None;
        while let Some(&b) = self.data.get(self.pos) {
            self.pos += 1;
            if b == b'>' {
                break;
            }
            let Some(v) = hex_value(b) else { continue };
            match high.take() {
                Some(h) => out.push(h << 4 | v),
                None => high = Some(v),
            }
        }
        if let Some(h) = high {
            out.push(h << 4);
        }
        Token::Str(out)
    }

    fn literal_string(&mut self) -> Token<'a> {
        self.pos += 1;
        let mut out = Vec::new();
        let mut depth = 0usize;
        while let Some(&b) = self.data.get(self.pos) {
            self.pos += 1;
            match b {
                b'(' => {
                    depth += 1;
                    out.push(b);
                }
                b')' if depth == 0 => break,
                b')' => {
                    depth -= 1;
                    out.push(b);
                }
                b'\\' => self.escape(&mut out),
                b'\r' => {
                    // An end of line in a string reads as `\n`.
                    if self.data.get(self.pos) == Some(&b'\n') {
                        self.pos += 1;
                    }
                    out.push(b'\n');
                }
                _ => out.push(b),
            }
        }
        Token::Str(out)
    }

    fn escape(&mut self, out: &mut Vec<u8>) {
        let Some(&c) = self.data.get(self.pos) else { return };
        self.pos += 1;
        match c {
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'\r' => {
                if self.data.get(self.pos) == Some(&b'\n') {
                    self.pos += 1;
                }
            }
            b'\n' => {}
            b'0'..=b'7' => {
                let mut value = u32::from(c - b'0');
                for _ in 0..2 {
                    match self.data.get(self.pos) {
                        Some(&d @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(d - b'0');
                            self.pos += 1;
                        }
                        _ => break,
                    }
                }
                out.push((value & 0xff) as u8);
            }
            _ => out.push(c),
        }
    }
}

/// A PDF number (`12`, `-3`, `+.5`, `4.`), or `None`.
fn number(word: &[u8]) -> Option<Token<'static>> {
    let digits = word.strip_prefix(b"-").or_else(|| word.strip_prefix(b"+")).unwrap_or(word);
    let dots = digits.iter().filter(|&&b| b == b'.').count();
    if digits.is_empty()
        || dots > 1
        || !digits.iter().all(|&b| b.is_ascii_digit() || b == b'.')
        || digits == b"."
    {
        return None;
    }
    let text = std::str::from_utf8(word).ok()?;
    if dots == 0
        && let Ok(i) = text.parse::<i64>()
    {
        return Some(Token::Int(i));
    }
    let value: f64 = text.parse().ok()?;
    value.is_finite().then_some(Token::Real(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(data: &[u8]) -> Vec<Token<'_>> {
        let mut lexer = Lexer::new(data);
        std::iter::from_fn(|| lexer.next_token()).collect()
    }

    #[test]
    fn lexes_pdf_syntax() {
        let toks =
            tokens(b"<</A#20B [1 -2.5 .5 +3 4.] (a(b)\\051\\n) <4142 3> true null>> % c\nBT");
        assert_eq!(
            toks,
            [
                Token::DictOpen,
                Token::Name(b"A B".to_vec()),
                Token::ArrayOpen,
                Token::Int(1),
                Token::Real(-2.5),
                Token::Real(0.5),
                Token::Int(3),
                Token::Real(4.0),
                Token::ArrayClose,
                Token::Str(b"a(b))\n".to_vec()),
                Token::Str(b"AB0".to_vec()),
                Token::Bool(true),
                Token::Null,
                Token::DictClose,
                Token::Keyword(b"BT"),
            ]
        );
        assert_eq!(
            tokens(b"1.2.3 -- 9999999999999999999999"),
            [Token::Keyword(b"1.2.3"), Token::Keyword(b"--"), Token::Real(1e22)]
        );
        // Unterminated strings end with the data.
        assert_eq!(tokens(b"(abc"), [Token::Str(b"abc".to_vec())]);
        assert_eq!(tokens(b"<41"), [Token::Str(b"A".to_vec())]);
    }
}
