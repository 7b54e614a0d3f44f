//! Dates and numbers, normalised so that different spellings share one key.
//!
//! Dates: `January 5, 2020`, `5 January 2020` → `2020-01-05`; `Jan. 2020`, `January 2020` →
//! `2020-01`; `2020-01-05`, `2020/01/05` → `2020-01-05`. Month names must be capitalised (so the
//! verb "may" is not a month). A bare year is a [`Number`](super::KeywordKind::Number).
//!
//! Numbers: digits with optional thousands separators and one decimal point. A number is kept
//! when its integer part has at least 4 digits or lies in 10–999 (1–9 are too common to link
//! chunks). The key strips thousands separators and leading zeros and keeps the decimals:
//! `12,345` → `12345`, `67.9` → `67.9`; `5.5` is dropped by the integer-part rule.

use super::tokens::Token;

/// Full month names, then abbreviations, with their numbers.
const MONTHS: &[(&str, u32)] = &[
    ("january", 1),
    ("february", 2),
    ("march", 3),
    ("april", 4),
    ("may", 5),
    ("june", 6),
    ("july", 7),
    ("august", 8),
    ("september", 9),
    ("october", 10),
    ("november", 11),
    ("december", 12),
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("sept", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];

/// A date found at `tokens[start..start + len]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DateMatch {
    /// First token of the date.
    pub(crate) start: usize,
    /// Number of tokens the date spans.
    pub(crate) len: usize,
    /// Normalised form: `YYYY-MM-DD` or `YYYY-MM`.
    pub(crate) key: String,
}

/// The date starting at `tokens[i]`, if any; longer forms are tried first.
pub(crate) fn date_at(tokens: &[Token<'_>], i: usize) -> Option<DateMatch> {
    let at = |k: usize| tokens.get(i + k);
    let full = |year: u32, month: u32, day: u32, len: usize| {
        valid_day(year, month, day).then(|| DateMatch {
            start: i,
            len,
            key: format!("{year:04}-{month:02}-{day:02}"),
        })
    };
    let (t0, t1) = (at(0)?, at(1)?);
    let t2 = at(2);
    // January 5, 2020
    if let (Some(m), Some(d), Some(y)) =
        (month(t0), day(t1), t2.and_then(|t| year_after(t, &[",", ""])))
        && t1.gap.trim().is_empty()
    {
        return full(y, m, d, 3);
    }
    // 5 January 2020
    if let (Some(d), Some(m), Some(y)) = (day(t0), month(t1), t2.and_then(|t| year_after(t, &[""])))
        && t1.gap.trim().is_empty()
    {
        return full(y, m, d, 3);
    }
    // 2020-01-05, 2020/01/05
    if let (Some(y), Some(t2)) = (year(t0.text), t2) {
        let sep = t1.gap;
        if (sep == "-" || sep == "/") && t2.gap == sep {
            let two =
                |t: &Token<'_>| (t.text.len() == 2).then(|| t.text.parse::<u32>().ok()).flatten();
            if let (Some(m), Some(d)) = (two(t1), two(t2)) {
                return full(y, m, d, 3);
            }
        }
    }
    // Jan. 2020, January 2020
    let (m, y) = (month(t0)?, year_after(t1, &[".", ",", ""])?);
    Some(DateMatch { start: i, len: 2, key: format!("{y:04}-{m:02}") })
}

/// The month number of a capitalised month name or abbreviation.
fn month(token: &Token<'_>) -> Option<u32> {
    if !token.text.starts_with(|c: char| c.is_uppercase()) {
        return None;
    }
    let lower = token.text.to_lowercase();
    MONTHS.iter().find(|(name, _)| *name == lower).map(|&(_, m)| m)
}

/// A day of the month written with one or two digits.
fn day(token: &Token<'_>) -> Option<u32> {
    let text = token.text;
    let ok = (1..=2).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_digit());
    ok.then(|| text.parse().ok()).flatten().filter(|d| (1..=31).contains(d))
}

/// A year 1000–2099 written with four digits.
fn year(text: &str) -> Option<u32> {
    let ok = text.len() == 4 && text.bytes().all(|b| b.is_ascii_digit());
    ok.then(|| text.parse().ok()).flatten().filter(|y| (1000..=2099).contains(y))
}

/// The year in `token` when the punctuation before it (whitespace aside) is one of `gaps`.
fn year_after(token: &Token<'_>, gaps: &[&str]) -> Option<u32> {
    gaps.contains(&token.gap.trim()).then(|| year(token.text)).flatten()
}

/// Whether `day` exists in `month` of `year`.
fn valid_day(year: u32, month: u32, day: u32) -> bool {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    let days = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        1..=12 => 31,
        _ => 0,
    };
    (1..=days).contains(&day)
}

/// The normalised key of a number token kept by the number rule, if it is one.
pub(crate) fn number_key(text: &str) -> Option<String> {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    if int.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit()) || !thousands_ok(int) {
        return None;
    }
    let digits: String = int.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_start_matches('0');
    // "At least 4 digits, or 10–999" is exactly "at least two significant digits".
    if digits.len() < 2 {
        return None;
    }
    Some(if frac.is_empty() { digits.to_owned() } else { format!("{digits}.{frac}") })
}

/// Whether `int` is digits, optionally grouped by commas in threes (`12,345`).
fn thousands_ok(int: &str) -> bool {
    let mut groups = int.split(',');
    let first = groups.next().unwrap_or_default();
    let digits = |g: &str| !g.is_empty() && g.bytes().all(|b| b.is_ascii_digit());
    if !digits(first) {
        return false;
    }
    let rest: Vec<&str> = groups.collect();
    rest.is_empty() || (first.len() <= 3 && rest.iter().all(|g| g.len() == 3 && digits(g)))
}

#[cfg(test)]
mod tests {
    use super::super::tokens::tokenize;
    use super::*;

    fn dates(text: &str) -> Vec<String> {
        let tokens = tokenize(text);
        let mut found = Vec::new();
        let mut i = 0;
        while i < tokens.len() {
            match date_at(&tokens, i) {
                Some(date) => {
                    i += date.len;
                    found.push(date.key);
                }
                None => i += 1,
            }
        }
        found
    }

    #[test]
    fn every_date_form_is_normalised() {
        // SQuAD "Super_Bowl_50" and "Warsaw" paragraphs.
        assert_eq!(
            dates("The game was played on February 7, 2016, at Levi's Stadium"),
            ["2016-02-07"]
        );
        assert_eq!(
            dates(
                "designed by architects Marek Budzyński and Zbigniew Badowski and \
                          opened on 15 December 1999."
            ),
            ["1999-12-15"]
        );
        // Forms absent from the sample corpora, written in their style.
        assert_eq!(dates("Enrollment closed in Jan. 2020 at all sites."), ["2020-01"]);
        assert_eq!(dates("Follow-up ended in January 2020."), ["2020-01"]);
        assert_eq!(
            dates("Samples were taken on 2020-01-05 and 2020/01/05."),
            ["2020-01-05", "2020-01-05"]
        );
    }

    #[test]
    fn non_dates_are_rejected() {
        assert!(dates("We may 2020 something").is_empty());
        assert!(dates("on February 30, 2016").is_empty());
        assert!(dates("the 1939-1945 war").is_empty());
    }

    #[test]
    fn number_rule_boundaries() {
        // SQuAD "Super_Bowl_50": "throwing for 3,837 yards and rushing for 636".
        assert_eq!(number_key("9"), None);
        assert_eq!(number_key("10").as_deref(), Some("10"));
        assert_eq!(number_key("999").as_deref(), Some("999"));
        assert_eq!(number_key("1000").as_deref(), Some("1000"));
        assert_eq!(number_key("12,345").as_deref(), Some("12345"));
        assert_eq!(number_key("3,837").as_deref(), Some("3837"));
        assert_eq!(number_key("67.9").as_deref(), Some("67.9"));
        assert_eq!(number_key("5.5"), None);
        assert_eq!(number_key("1,23"), None);
        assert_eq!(number_key("RAW264.7"), None);
    }
}
