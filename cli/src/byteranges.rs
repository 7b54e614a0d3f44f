//! Several byte ranges of a file in one HTTP response (RFC 9110 §14.6,
//! `multipart/byteranges`): `edgerag serve` writes them, and the CLI's HTTP source of a
//! bundle reads them, so that one step of a query costs one request however many ranges it
//! reads.
//!
//! A part is found by its `Content-Range`, and its bytes are taken by that length, not by
//! looking for the boundary after them: a part's bytes may hold anything.

use std::ops::Range;

/// The `Content-Type` of a multipart body whose parts are separated by `boundary`.
pub fn content_type(boundary: &str) -> String {
    format!("multipart/byteranges; boundary={boundary}")
}

/// The boundary a `Content-Type` value names, if it is `multipart/byteranges`.
pub fn boundary(content_type: &str) -> Option<&str> {
    let (kind, parameters) = content_type.split_once(';')?;
    if !kind.trim().eq_ignore_ascii_case("multipart/byteranges") {
        return None;
    }
    parameters.split(';').find_map(|parameter| {
        let (name, value) = parameter.split_once('=')?;
        let value = value.trim().trim_matches('"');
        (name.trim().eq_ignore_ascii_case("boundary") && !value.is_empty()).then_some(value)
    })
}

/// What comes before the bytes `range` of a file of `len` bytes and type `content_type`
/// in a body whose boundary is `boundary`.
pub fn part_head(boundary: &str, content_type: &str, range: &Range<u64>, len: u64) -> String {
    let last = range.end.saturating_sub(1);
    format!(
        "\r\n--{boundary}\r\nContent-Type: {content_type}\r\nContent-Range: bytes {}-{last}/{len}\r\n\r\n",
        range.start
    )
}

/// What ends a body whose boundary is `boundary`.
pub fn tail(boundary: &str) -> String {
    format!("\r\n--{boundary}--\r\n")
}

/// The bytes a `Content-Range` value (`bytes 10-19/100`, or `bytes 10-19/*`) says a part
/// holds, and the file's length when it says.
pub fn content_range(value: &str) -> Option<(Range<u64>, Option<u64>)> {
    let (unit, rest) = value.trim().split_once(' ')?;
    if !unit.eq_ignore_ascii_case("bytes") {
        return None;
    }
    let (span, len) = rest.trim().split_once('/')?;
    let (first, last) = span.split_once('-')?;
    let (first, last): (u64, u64) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
    let len = match len.trim() {
        "*" => None,
        len => Some(len.parse().ok()?),
    };
    (first <= last).then_some((first..last.checked_add(1)?, len))
}

/// One part of a multipart body: the bytes of `range` of the file.
#[derive(Debug, PartialEq, Eq)]
pub struct Part<'a> {
    /// Where the bytes lie in the file.
    pub range: Range<u64>,
    /// The file's length, when the part says it.
    pub len: Option<u64>,
    /// The bytes.
    pub bytes: &'a [u8],
}

/// The parts of `body`, whose boundary is `boundary`.
///
/// # Errors
/// A message saying what is wrong with the body: no boundary, a part without a
/// `Content-Range`, or one whose bytes are cut short.
pub fn parse<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<Part<'a>>, String> {
    let delimiter = format!("--{boundary}");
    let delimiter = delimiter.as_bytes();
    let mut at = find(body, delimiter, 0).ok_or("no part in a multipart body")? + delimiter.len();
    let mut parts = Vec::new();
    loop {
        if body[at..].starts_with(b"--") {
            return Ok(parts);
        }
        let head_end = find(body, b"\r\n\r\n", at).ok_or("a part's head has no end")?;
        let head = String::from_utf8_lossy(&body[at..head_end]);
        let (range, len) = head
            .split("\r\n")
            .filter_map(|line| line.split_once(':'))
            .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-range"))
            .and_then(|(_, value)| content_range(value))
            .ok_or("a part without a valid Content-Range")?;
        let start = head_end + 4;
        let bytes = usize::try_from(range.end - range.start)
            .ok()
            .and_then(|n| body.get(start..start.checked_add(n)?))
            .ok_or("a part is cut short")?;
        let end = start + bytes.len();
        parts.push(Part { range, len, bytes });
        at = find(body, delimiter, end).ok_or("a multipart body has no end")? + delimiter.len();
    }
}

/// Where `needle` first occurs in `haystack` from `from` on.
fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    let rest = haystack.get(from..)?;
    rest.windows(needle.len()).position(|window| window == needle).map(|i| from + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(parts: &[(Range<u64>, &[u8])], len: u64) -> Vec<u8> {
        let mut body = Vec::new();
        for (range, bytes) in parts {
            body.extend(part_head("B0undary", "application/octet-stream", range, len).bytes());
            body.extend_from_slice(bytes);
        }
        body.extend(tail("B0undary").bytes());
        body
    }

    #[test]
    fn parts_are_read_by_their_lengths_whatever_their_bytes_hold() {
        let tricky = b"\r\n--B0undary\r\n\r\n--B0undary--";
        let written = body(&[(3..5, b"ab"), (100..100 + tricky.len() as u64, tricky)], 200);
        let parts = parse(&written, "B0undary").unwrap();
        let expected = [
            Part { range: 3..5, len: Some(200), bytes: b"ab" },
            Part { range: 100..100 + tricky.len() as u64, len: Some(200), bytes: tricky },
        ];
        assert_eq!(parts, expected);
        assert_eq!(parse(&body(&[], 1), "B0undary").unwrap(), []);
    }

    #[test]
    fn a_damaged_body_is_refused() {
        let written = body(&[(3..7, b"abcd")], 200);
        assert_eq!(
            parse(&written[..written.len() - 20], "B0undary").unwrap_err(),
            "a part is cut short"
        );
        assert_eq!(parse(&written, "other").unwrap_err(), "no part in a multipart body");
        let unranged = String::from_utf8(written.clone()).unwrap().replace("Content-Range", "X");
        assert_eq!(
            parse(unranged.as_bytes(), "B0undary").unwrap_err(),
            "a part without a valid Content-Range"
        );
        let endless = &written[..written.len() - 8];
        assert_eq!(parse(endless, "B0undary").unwrap_err(), "a multipart body has no end");
    }

    #[test]
    fn headers_are_read_as_servers_write_them() {
        assert_eq!(content_range("bytes 10-19/100"), Some((10..20, Some(100))));
        assert_eq!(content_range("Bytes 0-0/*"), Some((0..1, None)));
        assert_eq!(content_range("bytes 5-4/100"), None);
        assert_eq!(content_range("bytes */100"), None);
        assert_eq!(content_range("items 0-1/2"), None);
        let nginx = "multipart/byteranges; boundary=00000000000000000001";
        assert_eq!(boundary(nginx), Some("00000000000000000001"));
        assert_eq!(boundary("Multipart/ByteRanges;charset=x; boundary=\"a b\""), Some("a b"));
        assert_eq!(boundary("multipart/mixed; boundary=x"), None);
        assert_eq!(boundary("application/octet-stream"), None);
        assert_eq!(boundary(&content_type("xyz")), Some("xyz"));
    }
}
