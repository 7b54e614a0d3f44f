//! Numbers as the report writes them (milliseconds, bytes, ratios, thousands, tables) and the
//! medians and percentiles it shows: a leaf, importing nothing from the other modules, so that
//! the measurement modules and the report both use it without importing each other.

use std::fmt::Write as _;

/// A Markdown table.
pub(crate) fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = format!("| {} |\n|{}\n", header.join(" | "), "---|".repeat(header.len()));
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    out
}

/// Milliseconds with a precision that suits their size.
pub(crate) fn ms(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0} ms")
    } else if value >= 10.0 {
        format!("{value:.1} ms")
    } else {
        format!("{value:.2} ms")
    }
}

/// `n` with a comma between groups of three digits, as the README writes sizes.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() * 4 / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Bytes in MiB (or KiB when small).
pub(crate) fn bytes(value: f64) -> String {
    if value >= f64::from(1 << 20) {
        format!("{:.1} MiB", value / f64::from(1 << 20))
    } else if value >= 1024.0 {
        format!("{:.1} KiB", value / 1024.0)
    } else {
        format!("{value:.0} B")
    }
}

/// `a / b` as "1.23×" ("–" when undefined).
pub(crate) fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 && a.is_finite() { format!("{:.2}×", a / b) } else { "–".to_owned() }
}

/// The median of `values` (0 when empty).
pub(crate) fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let values: Vec<f64> = values.into_iter().collect();
    percentile(&values, 0.5)
}

/// The `p` quantile (nearest rank) of `values`.
pub(crate) fn percentile(values: &[f64], p: f64) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).copied().unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_groups_three_digits() {
        let cases = [(0, "0"), (999, "999"), (1_000, "1,000"), (6_155_677, "6,155,677")];
        for (n, written) in cases {
            assert_eq!(super::thousands(n), written);
        }
    }
}
