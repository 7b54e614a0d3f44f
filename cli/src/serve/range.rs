//! Byte ranges (RFC 9110 §14): the part of a file a `Range` request asks for, so that a
//! bundle can be read a page at a time over HTTP.
//!
//! One range is served (206); a request for several, in an unknown unit, or malformed is
//! answered with the whole file (200), as the RFC allows. A range that starts past the end
//! is refused (416). `Range` applies to `GET` only, and when `If-Range` is sent, only if it
//! names the file's current entity tag (strong comparison), so a client never joins parts of
//! two versions.

use super::http::{Incoming, Method};

/// The part of a file of `len` bytes that a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// All of it.
    Whole,
    /// The bytes `start..end` (`start < end <= len`).
    Range {
        /// The first byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
    /// A range none of which exists (it starts at or past the end).
    Unsatisfiable,
}

/// What `request` asks of a `GET` of a file of `len` bytes whose entity tag is `etag`.
pub(crate) fn requested(request: &Incoming, etag: &str, len: u64) -> Part {
    if request.method != Method::Get {
        return Part::Whole;
    }
    let mut ranges = request.header_values("Range");
    let (Some(range), None) = (ranges.next(), ranges.next()) else { return Part::Whole };
    let mut validators = request.header_values("If-Range");
    match (validators.next(), validators.next()) {
        (None, _) => {}
        // A weak tag never matches, and a date cannot name a file served without one.
        (Some(validator), None) if validator.trim() == etag && !etag.starts_with("W/") => {}
        _ => return Part::Whole,
    }
    parse(range, len).unwrap_or(Part::Whole)
}

/// The part of `len` bytes that the `Range` value `value` names; `None` when it is not one
/// byte range (then the whole file is served).
fn parse(value: &str, len: u64) -> Option<Part> {
    let (unit, set) = value.split_once('=')?;
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return None;
    }
    let mut specs = set.split(',').map(str::trim).filter(|spec| !spec.is_empty());
    let (Some(spec), None) = (specs.next(), specs.next()) else { return None };
    let (first, last) = spec.split_once('-')?;
    if first.is_empty() {
        // `-n`: the last n bytes.
        return Some(match len.min(number(last)?) {
            0 => Part::Unsatisfiable,
            n => Part::Range { start: len - n, end: len },
        });
    }
    // `a-` or `a-b`.
    let start = number(first)?;
    let end = if last.is_empty() {
        len
    } else {
        let last = number(last)?;
        if last < start {
            return None;
        }
        last.saturating_add(1).min(len)
    };
    Some(if start >= len { Part::Unsatisfiable } else { Part::Range { start, end } })
}

/// A position: ASCII digits, as many as sent (a value past `u64` is taken as the largest,
/// which is past any file's end).
fn number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.parse().unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ETAG: &str = "\"abc\"";

    fn asked(method: Method, headers: &[(&str, &str)]) -> Part {
        let headers = headers.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect();
        requested(&Incoming::new(method, "/x".to_owned(), headers, Vec::new()), ETAG, 1000)
    }

    fn range(value: &str) -> Part {
        asked(Method::Get, &[("Range", value)])
    }

    #[test]
    fn one_byte_range_is_a_part_of_the_file() {
        assert_eq!(range("bytes=0-99"), Part::Range { start: 0, end: 100 });
        assert_eq!(range("bytes=990-"), Part::Range { start: 990, end: 1000 });
        assert_eq!(range("bytes=-10"), Part::Range { start: 990, end: 1000 });
        assert_eq!(range("bytes=-5000"), Part::Range { start: 0, end: 1000 });
        assert_eq!(range("bytes=500-5000"), Part::Range { start: 500, end: 1000 });
        assert_eq!(range("Bytes = 1-1"), Part::Range { start: 1, end: 2 });
        assert_eq!(range("bytes=7-99999999999999999999999"), Part::Range { start: 7, end: 1000 });
        assert_eq!(range("bytes=0-0, "), Part::Range { start: 0, end: 1 });
    }

    #[test]
    fn a_range_past_the_end_is_unsatisfiable() {
        assert_eq!(range("bytes=1000-"), Part::Unsatisfiable);
        assert_eq!(range("bytes=1000-2000"), Part::Unsatisfiable);
        assert_eq!(range("bytes=99999999999999999999999-"), Part::Unsatisfiable);
        assert_eq!(range("bytes=-0"), Part::Unsatisfiable);
    }

    #[test]
    fn anything_but_one_valid_byte_range_gets_the_whole_file() {
        for value in [
            "bytes=0-1,5-6",
            "bytes=5-4",
            "bytes=-",
            "bytes=",
            "bytes=a-b",
            "bytes=+1-2",
            "bytes=1",
            "items=0-1",
            "0-1",
            "bytes=0x10-",
        ] {
            assert_eq!(range(value), Part::Whole, "{value}");
        }
        let twice = [("Range", "bytes=0-1"), ("Range", "bytes=2-3")];
        assert_eq!(asked(Method::Get, &twice), Part::Whole);
        assert_eq!(asked(Method::Head, &[("Range", "bytes=0-1")]), Part::Whole, "HEAD");
    }

    #[test]
    fn if_range_must_name_the_current_version() {
        let with = |validator: &str| {
            asked(Method::Get, &[("Range", "bytes=0-1"), ("If-Range", validator)])
        };
        assert_eq!(with(ETAG), Part::Range { start: 0, end: 2 });
        assert_eq!(with("\"old\""), Part::Whole);
        assert_eq!(with("W/\"abc\""), Part::Whole, "weak");
        assert_eq!(with("Wed, 21 Oct 2015 07:28:00 GMT"), Part::Whole, "a date");
    }
}
