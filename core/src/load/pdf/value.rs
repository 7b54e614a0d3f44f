//! Values (numbers, names, strings, arrays, dictionaries) read from [`Lexer`] tokens without
//! recursion: nesting is bounded by [`limits::MAX_DEPTH`] and the items kept by a cap.

use super::lex::{Lexer, Token};
use crate::{Error, Result, limits};

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

    /// The value of `key` in a dictionary: the last one when the key is repeated, as lopdf
    /// reads it.
    pub(super) fn get(&self, key: &[u8]) -> Option<&Value> {
        match self {
            Value::Dict(entries) => entries.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// A container being filled.
enum Open {
    Array(Vec<Value>),
    Dict(Vec<(Vec<u8>, Value)>, Option<Vec<u8>>),
}

impl Open {
    fn new(dict: bool) -> Self {
        if dict { Open::Dict(Vec::new(), None) } else { Open::Array(Vec::new()) }
    }

    fn into_value(self) -> Value {
        match self {
            Open::Array(items) => Value::Array(items),
            Open::Dict(entries, _) => Value::Dict(entries),
        }
    }
}

/// An open container and whether what goes into it is kept.
struct Frame {
    open: Open,
    keep: bool,
}

/// What a read keeps.
#[derive(Clone, Copy)]
enum Keep<'k> {
    /// At most this many values in all; the rest are read and dropped.
    Items(usize),
    /// Of the outer dictionary, the entries with one of `keys` (the last of a repeated key),
    /// whatever comes before or between them; in each value at most `max` items nested in
    /// it: past them the value is cut, or refused if its key is one of `whole`.
    Entries { keys: &'k [&'k [u8]], whole: &'k [&'k [u8]], max: usize },
}

impl Keep<'_> {
    /// Whether the items of a container opening now inside `stack` are kept.
    fn keeps_child(self, stack: &[Frame]) -> bool {
        let Some(parent) = stack.last() else { return true };
        match self {
            Keep::Items(_) => parent.keep,
            Keep::Entries { keys, .. } if stack.len() == 1 => outer_key(stack, keys).is_some(),
            Keep::Entries { .. } => parent.keep,
        }
    }
}

/// The key of the outer dictionary's value being read, if it is one of `keys`.
fn outer_key<'s>(stack: &'s [Frame], keys: &[&[u8]]) -> Option<&'s [u8]> {
    match stack.first().map(|f| &f.open) {
        Some(Open::Dict(_, Some(key))) if keys.contains(&key.as_slice()) => Some(key),
        _ => None,
    }
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
    read(lexer, dict, Keep::Items(max_items))
}

/// Reads the rest of an array or dictionary whose opening token was just read, as
/// [`read_container`], keeping only what a reader of `keys` needs: of a dictionary, the
/// entries with one of `keys` (a repeated key replaces the earlier value, as in lopdf),
/// however many other entries come before or between them; of an array, nothing. Each value
/// kept holds at most `max_items` items (array items and dictionary values, nested ones
/// included): the rest are read and dropped, but a value of one of `whole` (one only read
/// whole means what it says) is refused instead.
///
/// # Errors
/// [`crate::Error::Limit`] when the nesting passes [`limits::MAX_DEPTH`], or when the value
/// of one of `whole` holds more than `max_items` items.
pub(super) fn read_entries(
    lexer: &mut Lexer<'_>,
    dict: bool,
    keys: &[&[u8]],
    whole: &[&[u8]],
    max_items: usize,
) -> Result<Value> {
    read(lexer, dict, Keep::Entries { keys, whole, max: max_items })
}

fn read(lexer: &mut Lexer<'_>, dict: bool, keep: Keep<'_>) -> Result<Value> {
    let mut stack = vec![Frame { open: Open::new(dict), keep: true }];
    let mut kept = 0usize;
    loop {
        let token = lexer.next_token();
        let value = match token {
            Some(open @ (Token::ArrayOpen | Token::DictOpen)) => {
                if stack.len() >= limits::MAX_DEPTH {
                    return Err(limits::too_deep("PDF arrays and dictionaries"));
                }
                let keep = keep.keeps_child(&stack);
                stack.push(Frame { open: Open::new(open == Token::DictOpen), keep });
                continue;
            }
            // A container closes; at the end of the data, one each time round until all are.
            None | Some(Token::ArrayClose | Token::DictClose) => {
                let Some(frame) = stack.pop() else { return Ok(Value::Other) };
                let closed = frame.open.into_value();
                if stack.is_empty() {
                    return Ok(closed);
                }
                closed
            }
            Some(Token::Int(n)) => reference_or_int(lexer, n),
            Some(token) => simple(token).unwrap_or(Value::Other),
        };
        add(&mut stack, value, &mut kept, keep)?;
    }
}

/// Adds `value` to the innermost open container (as an array item, a dictionary key or a
/// value), as `keep` says.
fn add(stack: &mut [Frame], value: Value, kept: &mut usize, keep: Keep<'_>) -> Result<()> {
    let outer = stack.len() == 1;
    let Some(frame) = stack.last_mut() else { return Ok(()) };
    if !frame.keep {
        return Ok(());
    }
    let slot = match &mut frame.open {
        Open::Dict(_, key @ None) => {
            if let Value::Name(name) = value {
                *key = Some(name);
                if outer && matches!(keep, Keep::Entries { .. }) {
                    *kept = 0; // Each value has its own count.
                }
            }
            return Ok(());
        }
        Open::Dict(entries, key) => {
            let key = key.take().unwrap_or_default();
            if let (Keep::Entries { keys, .. }, true) = (keep, outer) {
                if keys.contains(&key.as_slice()) {
                    match entries.iter_mut().find(|(k, _)| *k == key) {
                        Some((_, v)) => *v = value,
                        None => entries.push((key, value)),
                    }
                }
                return Ok(());
            }
            Slot::Entry(entries, key)
        }
        Open::Array(_) if matches!(keep, Keep::Entries { .. }) && outer => return Ok(()),
        Open::Array(items) => Slot::Item(items),
    };
    let max = match keep {
        Keep::Items(max) | Keep::Entries { max, .. } => max,
    };
    if *kept >= max {
        return match keep {
            Keep::Entries { whole, .. } => match outer_key(stack, whole) {
                Some(key) => Err(too_many_items(key, max)),
                None => Ok(()),
            },
            Keep::Items(_) => Ok(()),
        };
    }
    *kept += 1;
    match slot {
        Slot::Entry(entries, key) => entries.push((key, value)),
        Slot::Item(items) => items.push(value),
    }
    Ok(())
}

/// Where a value kept goes.
enum Slot<'a> {
    Entry(&'a mut Vec<(Vec<u8>, Value)>, Vec<u8>),
    Item(&'a mut Vec<Value>),
}

/// [`Error::Limit`] for a dictionary's `key` holding more than `max` items.
fn too_many_items(key: &[u8], max: usize) -> Error {
    Error::Limit(format!(
        "a PDF dictionary's /{} holds more than {max} items",
        String::from_utf8_lossy(key)
    ))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads the rest of a dictionary (without its `<<`) for `/Type`, `/W` and `/Filter`,
    /// the last read whole.
    fn entries(data: &[u8]) -> Result<Value> {
        read_entries(&mut Lexer::new(data), true, &[b"Type", b"W", b"Filter"], &[b"Filter"], 8)
    }

    #[test]
    fn a_repeated_key_reads_as_its_last_value() {
        let dict = entries(b"/Type /XObject /Length 5 /Type /ObjStm >>").expect("reads");
        assert_eq!(dict, Value::Dict(vec![(b"Type".to_vec(), Value::Name(b"ObjStm".to_vec()))]));
        let mut lexer = Lexer::new(b"/A 1 /A 2 >>");
        let dict = read_container(&mut lexer, true, 8).expect("reads");
        assert_eq!(dict.get(b"A"), Some(&Value::Int(2)));
    }

    #[test]
    fn entries_after_many_others_are_kept_and_large_values_refused() {
        let junk = format!("/Junk [{}] ", "1 ".repeat(10_000)).repeat(3);
        let dict = entries(format!("{junk}/Type /ObjStm /Filter [/A85 /Fl] >>").as_bytes());
        let dict = dict.expect("reads");
        assert_eq!(dict.get(b"Type"), Some(&Value::Name(b"ObjStm".to_vec())));
        assert!(matches!(dict.get(b"Filter"), Some(Value::Array(f)) if f.len() == 2));
        assert_eq!(dict.get(b"Junk"), None);
        // Each value has its own count: a long /W is cut, a long /Filter refused.
        let dict = entries(
            format!("/W [{}] /Filter [{}] >>", "1 ".repeat(20), "/Fl ".repeat(8)).as_bytes(),
        );
        let dict = dict.expect("reads");
        assert!(matches!(dict.get(b"W"), Some(Value::Array(w)) if w.len() == 8));
        assert!(matches!(dict.get(b"Filter"), Some(Value::Array(f)) if f.len() == 8));
        let err = entries(format!("/Filter [{}] >>", "/Fl ".repeat(9)).as_bytes());
        let refused =
            matches!(&err, Err(Error::Limit(m)) if m.contains("/Filter holds more than 8"));
        assert!(refused, "{err:?}");
    }
}
