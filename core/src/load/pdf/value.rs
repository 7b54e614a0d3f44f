//! Values (numbers, names, strings, arrays, dictionaries) read from [`Lexer`] tokens without
//! recursion: nesting is bounded by [`limits::MAX_DEPTH`] and the items kept by a cap.

use super::lex::{Lexer, Token};
use crate::{Result, limits};

/// A PDF value as read from the token stream.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Real(f64),
    Name(Vec<u8>),
    Str(Vec<u8>),
    /// `n g R`, recognised inside arrays and dictionaries.
    Ref(i64, i64),
    Array(Vec<Value>),
    /// Keys and values in order.
    Dict(Vec<(Vec<u8>, Value)>),
    /// A keyword where a value was expected (an operator, `{`, a stray delimiter).
    Other,
}

impl Value {
    /// The number, for `Int` and `Real`.
    pub(super) fn number(&self) -> Option<f64> {
        match *self {
            Value::Int(i) => Some(i as f64),
            Value::Real(r) => Some(r),
            _ => None,
        }
    }

    /// The value of `key` in a dictionary.
    pub(super) fn get(&self, key: &[u8]) -> Option<&Value> {
        match self {
            Value::Dict(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A container being filled.
enum Open {
    Array(Vec<Value>),
    Dict(Vec<(Vec<u8>, Value)>, Option<Vec<u8>>),
}

/// The simple value of a token; `None` for tokens that open or close containers.
fn simple(token: Token<'_>) -> Option<Value> {
    Some(match token {
        Token::Int(i) => Value::Int(i),
        Token::Real(r) => Value::Real(r),
        Token::Bool(b) => Value::Bool(b),
        Token::Null => Value::Null,
        Token::Name(n) => Value::Name(n),
        Token::Str(s) => Value::Str(s),
        Token::Keyword(_) | Token::ProcOpen | Token::ProcClose => Value::Other,
        Token::ArrayOpen | Token::ArrayClose | Token::DictOpen | Token::DictClose => return None,
    })
}

/// Reads the rest of an array or dictionary whose opening token (`[` or `<<`) was just read.
/// At most `max_items` values are kept in all (the rest are read and dropped); the data may
/// end early, which closes everything open.
///
/// # Errors
/// [`crate::Error::Limit`] when the nesting passes [`limits::MAX_DEPTH`].
pub(super) fn read_container(lexer: &mut Lexer<'_>, dict: bool, max_items: usize) -> Result<Value> {
    let mut stack = vec![if dict { Open::Dict(Vec::new(), None) } else { Open::Array(Vec::new()) }];
    let mut kept = 0usize;
    loop {
        let token = lexer.next_token();
        let ended = token.is_none();
        let value = match token {
            None => None,
            Some(open @ (Token::ArrayOpen | Token::DictOpen)) => {
                if stack.len() >= limits::MAX_DEPTH {
                    return Err(limits::too_deep("PDF arrays and dictionaries"));
                }
                stack.push(if open == Token::DictOpen {
                    Open::Dict(Vec::new(), None)
                } else {
                    Open::Array(Vec::new())
                });
                continue;
            }
            Some(Token::ArrayClose) | Some(Token::DictClose) => None,
            Some(Token::Int(n)) => Some(reference_or_int(lexer, n)),
            Some(token) => simple(token),
        };
        // A finished value: either a simple one, or the container closed just now.
        let finished = match value {
            Some(v) => v,
            None => {
                let Some(open) = stack.pop() else { return Ok(Value::Other) };
                let closed = match open {
                    Open::Array(items) => Value::Array(items),
                    Open::Dict(entries, _) => Value::Dict(entries),
                };
                if ended {
                    // The data ended: close every container still open.
                    let mut closed = closed;
                    while let Some(open) = stack.pop() {
                        closed = push_into(open, closed, &mut kept, max_items);
                    }
                    return Ok(closed);
                }
                match stack.pop() {
                    None => return Ok(closed),
                    Some(parent) => {
                        let parent = push_open(parent, closed, &mut kept, max_items);
                        stack.push(parent);
                        continue;
                    }
                }
            }
        };
        if let Some(parent) = stack.pop() {
            stack.push(push_open(parent, finished, &mut kept, max_items));
        }
    }
}

/// Adds `value` to an open container (as an array item, a dictionary key or a value).
fn push_open(open: Open, value: Value, kept: &mut usize, max_items: usize) -> Open {
    match open {
        Open::Array(mut items) => {
            if *kept < max_items {
                *kept += 1;
                items.push(value);
            }
            Open::Array(items)
        }
        Open::Dict(entries, None) => match value {
            Value::Name(key) => Open::Dict(entries, Some(key)),
            _ => Open::Dict(entries, None),
        },
        Open::Dict(mut entries, Some(key)) => {
            if *kept < max_items {
                *kept += 1;
                entries.push((key, value));
            }
            Open::Dict(entries, None)
        }
    }
}

/// Closes `open` with `value` as its last item.
fn push_into(open: Open, value: Value, kept: &mut usize, max_items: usize) -> Value {
    match push_open(open, value, kept, max_items) {
        Open::Array(items) => Value::Array(items),
        Open::Dict(entries, _) => Value::Dict(entries),
    }
}

/// `n g R` when the integer `n` just read starts a reference, else `n`.
fn reference_or_int(lexer: &mut Lexer<'_>, n: i64) -> Value {
    let start = lexer.checkpoint();
    if let Some(Token::Int(g)) = lexer.next_token()
        && lexer.next_token() == Some(Token::Keyword(b"R"))
    {
        return Value::Ref(n, g);
    }
    lexer.restore(start);
    Value::Int(n)
}

/// Reads one value whose first token is `first`.
///
/// # Errors
/// As [`read_container`].
pub(super) fn read_value(
    lexer: &mut Lexer<'_>,
    first: Token<'_>,
    max_items: usize,
) -> Result<Value> {
    match first {
        Token::ArrayOpen => read_container(lexer, false, max_items),
        Token::DictOpen => read_container(lexer, true, max_items),
        token => Ok(simple(token).unwrap_or(Value::Other)),
    }
}
