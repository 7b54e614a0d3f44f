//! Byte ranges (RFC 9110 §14): the part of a file a `Range` request asks for, so that a
//! bundle can be read a page at a time over HTTP.
//!
//! One range is served (206); several are served in one `multipart/byteranges` body (206),
//! ascending, those that overlap or touch joined into one, and those past the end left out,
//! as the RFC allows. A request in an unknown unit, malformed, or for more than
//! [`MAX_RANGES`] ranges is answered with the whole file (200). A request none of whose
//! ranges exists (each starts past the end) is refused (416). `Range` applies to `GET` only, and when `If-Range` is sent, only if it
//! names the file's current entity tag (strong comparison), so a client never joins parts of
//! two versions.

use std::ops::Range;

use super::http::{Incoming, Method};

/// The most ranges a request may ask for at once (as nginx's `max_ranges`, it then gets the
/// whole file).
pub(crate) const MAX_RANGES: usize = 256;

/// The part of a file of `len` bytes that a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    /// Two or more ranges, ascending, apart from one another, each within the file.
    Ranges(Vec<Range<u64>>),
    /// Ranges none of which exists (each starts at or past the end).
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

/// The part of `len` bytes that the `Range` value `value` names; `None` when it is not a
/// valid set of at most [`MAX_RANGES`] byte ranges (then the whole file is served).
fn parse(value: &str, len: u64) -> Option<Part> {
    let (unit, set) = value.split_once('=')?;
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return None;
    }
    let specs: Vec<&str> = set.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
    if specs.is_empty() || specs.len() > MAX_RANGES {
        return None;
    }
    let mut ranges = Vec::with_capacity(specs.len());
    for spec in specs {
        ranges.extend(one(spec, len)?);
    }
    ranges.sort_unstable_by_key(|range| range.start);
    let mut joined: Vec<Range<u64>> = Vec::with_capacity(ranges.len());
    for range in ranges {
        match joined.last_mut() {
            Some(last) if range.start <= last.end => last.end = last.end.max(range.end),
            _ => joined.push(range),
        }
    }
    Some(match joined.as_slice() {
        [] => Part::Unsatisfiable,
        [one] => Part::Range { start: one.start, end: one.end },
        _ => Part::Ranges(joined),
    })
}

/// The bytes of `len` that one range `spec` names: `None` when it is malformed, `Some(None)`
/// when none of them exists.
fn one(spec: &str, len: u64) -> Option<Option<Range<u64>>> {
    let (first, last) = spec.split_once('-')?;
    if first.is_empty() {
        // `-n`: the last n bytes.
        return Some(match len.min(number(last)?) {
            0 => None,
            n => Some(len - n..len),
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
    Some((start < len).then_some(start..end))
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
    fn several_ranges_are_served_ascending_joined_where_they_meet() {
        assert_eq!(range("bytes=500-599,0-9"), Part::Ranges(vec![0..10, 500..600]));
        assert_eq!(range("bytes=0-9, 5-19,20-29,40-49"), Part::Ranges(vec![0..30, 40..50]));
        assert_eq!(range("bytes=0-9,10-19"), Part::Range { start: 0, end: 20 });
        assert_eq!(range("bytes=0-9,2000-2999"), Part::Range { start: 0, end: 10 });
        assert_eq!(range("bytes=-10,0-0"), Part::Ranges(vec![0..1, 990..1000]));
        assert_eq!(range("bytes=1000-,2000-2999"), Part::Unsatisfiable);
        let most = (0..MAX_RANGES).map(|i| format!("{}-{}", 2 * i, 2 * i)).collect::<Vec<_>>();
        let Part::Ranges(ranges) = range(&format!("bytes={}", most.join(","))) else {
            panic!("{MAX_RANGES} ranges are served")
        };
        assert_eq!(ranges.len(), MAX_RANGES);
        let too_many = format!("bytes={},600-600", most.join(","));
        assert_eq!(range(&too_many), Part::Whole);
    }

    #[test]
    fn anything_but_valid_byte_ranges_gets_the_whole_file() {
        for value in [
            "bytes=0-1,5-4",
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
