//! Checking an LLM reply against its sources: citations, support, warnings.

use super::prompt::REFUSAL;
use crate::query::Corpus;

use super::{Answerer, Citation, Sentence, Source, Warning, WarningKind, cosine};
use crate::Result;

/// What checking a reply found.
pub(super) struct Checked {
    /// The reply, with the markers of attributed citations added.
    pub(super) text: String,
    pub(super) sentences: Vec<Sentence>,
    pub(super) citations: Vec<Citation>,
    pub(super) warnings: Vec<Warning>,
}

/// Whether a reply is the refusal sentence (give or take quotes, case and spacing).
pub(super) fn is_refusal(reply: &str) -> bool {
    let normal = |s: &str| {
        s.chars()
            .filter(|c| c.is_alphanumeric() || c.is_whitespace())
            .collect::<String>()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    normal(reply) == normal(REFUSAL)
}

/// Citation groups in `text`: each `[S1]`, `[S1, S3]` or `[S2; S4]`, as its byte range and
/// the source numbers it names.
fn marker_groups(text: &str) -> Vec<(std::ops::Range<usize>, Vec<u32>)> {
    let mut groups = Vec::new();
    let mut from = 0;
    while let Some(open) = text[from..].find('[').map(|i| from + i) {
        let Some(close) = text[open..].find(']').map(|i| open + i) else {
            break;
        };
        let numbers: Option<Vec<u32>> = text[open + 1..close]
            .split([',', ';'])
            .map(|part| {
                let part = part.trim();
                let digits = part.strip_prefix('S').or_else(|| part.strip_prefix('s'))?;
                digits.parse().ok()
            })
            .collect();
        match numbers {
            Some(numbers) if !numbers.is_empty() => {
                groups.push((open..close + 1, numbers));
                from = close + 1;
            }
            _ => from = open + 1,
        }
    }
    groups
}

/// `text` without citation markers, spaces tidied (`Paris [S1].` → `Paris.`).
pub(super) fn strip_markers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (range, _) in marker_groups(text) {
        out.push_str(&text[at..range.start]);
        at = range.end;
    }
    out.push_str(&text[at..]);
    let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
    [" .", " ,", " ;", " :", " !", " ?"].iter().fold(flat, |s, p| s.replace(p, &p[1..]))
}

/// Whether a claim says enough to need a citation.
fn is_claim(claim: &str) -> bool {
    claim.split_whitespace().count() >= 3
}

/// Checks `reply` against `sources`.
pub(super) fn check<C: Corpus>(
    answerer: &Answerer<'_, C>,
    reply: &str,
    sources: &[Source],
) -> Result<Checked> {
    let mut sentences = split(reply);
    let mut warnings = Vec::new();
    let mut claims = Claims::of(answerer, sources, &sentences, &mut warnings)?;
    let mut text = reply.to_owned();
    if answerer.options.attribute {
        claims.attribute(&mut text, &mut sentences, &mut warnings)?;
    }
    let citations = claims.citations(&mut warnings);
    let sentences = claims.sentences(sentences, &mut warnings);
    claims.warn_unused(&mut warnings);
    Ok(Checked { text, sentences, citations, warnings })
}

/// A reply's sentences as claims: each one's text without markers, the sources it cites and
/// how well they support it.
struct Claims<'a, C: Corpus> {
    answerer: &'a Answerer<'a, C>,
    sources: &'a [Source],
    /// Each sentence's text without markers, and the sources (indices) it cites.
    cited: Vec<(String, Vec<usize>)>,
    /// The claims' vectors, when a model is loaded.
    vectors: Option<Vec<Vec<f32>>>,
    /// Each claim's support by the sources it cites.
    supports: Vec<f32>,
}

impl<'a, C: Corpus> Claims<'a, C> {
    /// The claims of `sentences`, a warning for each marker naming no source.
    fn of(
        answerer: &'a Answerer<'a, C>,
        sources: &'a [Source],
        sentences: &[(String, Vec<u32>)],
        warnings: &mut Vec<Warning>,
    ) -> Result<Self> {
        let mut cited = Vec::with_capacity(sentences.len());
        for (n, (text, numbers)) in sentences.iter().enumerate() {
            let mut known = Vec::new();
            for &number in numbers {
                match number.checked_sub(1).map(|i| i as usize).filter(|&i| i < sources.len()) {
                    Some(i) if !known.contains(&i) => known.push(i),
                    Some(_) => {}
                    None => warnings.push(Warning::new(
                        WarningKind::UnknownSource,
                        format!("sentence {} cites S{number}, which is not a source", n + 1),
                    )),
                }
            }
            cited.push((strip_markers(text), known));
        }
        let vectors = claim_vectors(answerer, &cited)?;
        let mut claims = Self { answerer, sources, cited, vectors, supports: Vec::new() };
        claims.supports = (0..claims.cited.len())
            .map(|n| {
                let (claim, known) = &claims.cited[n];
                support(answerer, claim, claims.vector(n), known, sources)
            })
            .collect::<Result<_>>()?;
        Ok(claims)
    }

    /// The vector of claim `n`, when a model is loaded.
    fn vector(&self, n: usize) -> Option<&[f32]> {
        self.vectors.as_ref().map(|v| v[n].as_slice())
    }

    /// Cites, in `text` and `sentences`, the best supporting source for each claim that cites
    /// none, when it supports it well enough; a warning for each.
    fn attribute(
        &mut self,
        text: &mut String,
        sentences: &mut [(String, Vec<u32>)],
        warnings: &mut Vec<Warning>,
    ) -> Result<()> {
        let mut at = 0;
        for (n, (sentence, _)) in sentences.iter_mut().enumerate() {
            // A sentence with markers merged into it (`split`) may not be found; it cites.
            let Some(start) = text[at..].find(sentence.as_str()).map(|i| at + i) else {
                continue;
            };
            at = start + sentence.len();
            let (claim, known) = &self.cited[n];
            if !known.is_empty() || !is_claim(claim) {
                continue;
            }
            let (best, source) = best_source(self.answerer, claim, self.vector(n), self.sources)?;
            let Some(i) = source.filter(|_| best >= self.answerer.options.min_support) else {
                continue;
            };
            let marker = &self.sources[i].marker;
            let marked = with_marker(sentence, marker);
            text.replace_range(start..start + sentence.len(), &marked);
            at = start + marked.len();
            *sentence = marked;
            self.cited[n].1.push(i);
            self.supports[n] = best;
            warnings.push(Warning::new(
                WarningKind::AttributedCitation,
                format!(
                    "sentence {} cited no source; {marker} supports it best ({best:.2}) and is cited for it",
                    n + 1,
                ),
            ));
        }
        Ok(())
    }

    /// The sources cited, in order of first citation; a warning for each claim citing none
    /// and each number its sources lack.
    fn citations(&self, warnings: &mut Vec<Warning>) -> Vec<Citation> {
        let mut citations: Vec<Citation> = Vec::new();
        for (n, (claim, known)) in self.cited.iter().enumerate() {
            for &i in known {
                let source = &self.sources[i];
                if !citations.iter().any(|c| c.marker == source.marker) {
                    citations.push(source.citation());
                }
            }
            if known.is_empty() && is_claim(claim) {
                warnings.push(Warning::new(
                    WarningKind::UncitedSentence,
                    format!("sentence {} cites no source: {claim:?}", n + 1),
                ));
            }
            for number in unsupported_numbers(claim, known, self.sources) {
                warnings.push(Warning::new(
                    WarningKind::UnsupportedNumber,
                    format!("sentence {}: {number} appears in none of its sources", n + 1),
                ));
            }
        }
        citations
    }

    /// A warning naming the sources no claim cites, if any.
    fn warn_unused(&self, warnings: &mut Vec<Warning>) {
        let unused: Vec<&str> = (0..self.sources.len())
            .filter(|i| !self.cited.iter().any(|(_, known)| known.contains(i)))
            .map(|i| self.sources[i].marker.as_str())
            .collect();
        if !unused.is_empty() {
            warnings.push(Warning::new(
                WarningKind::UnusedSources,
                format!("not cited: {}", unused.join(", ")),
            ));
        }
    }

    /// The answer's sentences as written, with what each cites and its support; a warning
    /// for each weakly supported one.
    fn sentences(
        &self,
        sentences: Vec<(String, Vec<u32>)>,
        warnings: &mut Vec<Warning>,
    ) -> Vec<Sentence> {
        let min_support = self.answerer.options.min_support;
        let checked = sentences.into_iter().zip(&self.cited).zip(self.supports.iter().copied());
        let mut out = Vec::new();
        for (n, (((text, _), (_, known)), support)) in checked.enumerate() {
            let cites: Vec<String> =
                known.iter().map(|&i| self.sources[i].marker.clone()).collect();
            if !cites.is_empty() && support < min_support {
                warnings.push(Warning::new(
                    WarningKind::LowSupport,
                    format!("sentence {} is weakly supported by its sources ({support:.2})", n + 1),
                ));
            }
            out.push(Sentence { text, cites, support });
        }
        out
    }
}

/// `sentence` citing `marker`, the marker placed before its closing punctuation and the quotes
/// or brackets closing after it: `Rollo led them.` → `Rollo led them [S1].`
fn with_marker(sentence: &str, marker: &str) -> String {
    const STOPS: [char; 5] = ['.', '!', '?', ':', ';'];
    let body = sentence.trim_end();
    let unclosed = body.trim_end_matches(['"', '\'', '”', '’', ')']);
    let end = match unclosed.trim_end_matches(STOPS) {
        before if before.len() < unclosed.len() => before.len(),
        _ => body.trim_end_matches(STOPS).len(),
    };
    format!("{} [{marker}]{}{}", &body[..end], &body[end..], &sentence[body.len()..])
}

/// The reply's sentences with the source numbers each cites. Markers opening a sentence
/// (`Paris. [S1] It …`, where the sentence boundary falls before the marker) belong to the
/// sentence before.
fn split(reply: &str) -> Vec<(String, Vec<u32>)> {
    let mut out: Vec<(String, Vec<u32>)> = Vec::new();
    for range in crate::text::sentences(reply) {
        let mut text = &reply[range];
        let mut numbers = Vec::new();
        if let Some(last) = out.last_mut() {
            let mut lead = 0;
            for (group, names) in marker_groups(text) {
                if !text[lead..group.start].trim().is_empty() {
                    break;
                }
                lead = group.end;
                last.1.extend(names);
            }
            if lead > 0 {
                last.0.push(' ');
                last.0.push_str(&text[..lead]);
                text = text[lead..].trim_start();
            }
        }
        numbers.extend(marker_groups(text).into_iter().flat_map(|(_, n)| n));
        if strip_markers(text).chars().any(char::is_alphanumeric) {
            out.push((text.to_owned(), numbers));
        } else if let Some(last) = out.last_mut() {
            last.1.extend(numbers);
        }
    }
    out
}

/// Numbers in `claim` found in no cited source (in no source at all when none is cited).
fn unsupported_numbers(claim: &str, cited: &[usize], sources: &[Source]) -> Vec<String> {
    let scope: Vec<String> = if cited.is_empty() {
        sources.iter().map(|s| s.hit.text.replace(',', "")).collect()
    } else {
        cited.iter().map(|&i| sources[i].hit.text.replace(',', "")).collect()
    };
    let mut missing: Vec<String> = Vec::new();
    for (_, word) in crate::text::words(claim) {
        if !word.chars().any(|c| c.is_ascii_digit()) {
            continue;
        }
        let plain = word.replace(',', "");
        if !scope.iter().any(|text| contains_number(text, &plain)) && !missing.contains(&plain) {
            missing.push(plain);
        }
    }
    missing
}

/// Whether `number` occurs in `text` not as part of a longer number (`50` is not in `1500`).
fn contains_number(text: &str, number: &str) -> bool {
    text.match_indices(number).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + number.len()..].chars().next();
        !before.is_some_and(|c| c.is_ascii_digit()) && !after.is_some_and(|c| c.is_ascii_digit())
    })
}

/// The claims' vectors, when a model is loaded.
fn claim_vectors<C: Corpus>(
    answerer: &Answerer<'_, C>,
    claims: &[(String, Vec<usize>)],
) -> Result<Option<Vec<Vec<f32>>>> {
    let Some(embedder) = answerer.embedder() else { return Ok(None) };
    let texts: Vec<&str> = claims.iter().map(|(claim, _)| claim.as_str()).collect();
    embedder.embed_documents(&texts).map(Some)
}

/// Support of `claim` (with its vector, when a model is loaded) by the sources `cited`: 0
/// without citations.
fn support<C: Corpus>(
    answerer: &Answerer<'_, C>,
    claim: &str,
    vector: Option<&[f32]>,
    cited: &[usize],
    sources: &[Source],
) -> Result<f32> {
    let Some(vector) = vector else {
        let terms = |text: &str| answerer.analyzer.terms(text);
        let wanted = terms(claim);
        if cited.is_empty() || wanted.is_empty() {
            return Ok(if cited.is_empty() { 0.0 } else { 1.0 });
        }
        let have: Vec<String> = cited.iter().flat_map(|&i| terms(&sources[i].hit.text)).collect();
        let found = wanted.iter().filter(|t| have.contains(t)).count();
        return Ok(found as f32 / wanted.len() as f32);
    };
    let mut best: f32 = 0.0;
    for &i in cited {
        let sentences = answerer.chunk_sentences(sources[i].hit.chunk, &sources[i].hit.text)?;
        for (_, sentence) in sentences.iter() {
            best = best.max(cosine(vector, sentence));
        }
    }
    Ok(best.clamp(0.0, 1.0))
}

/// The source supporting `claim` best, and how well.
fn best_source<C: Corpus>(
    answerer: &Answerer<'_, C>,
    claim: &str,
    vector: Option<&[f32]>,
    sources: &[Source],
) -> Result<(f32, Option<usize>)> {
    let mut best = (0.0, None);
    for i in 0..sources.len() {
        let score = support(answerer, claim, vector, &[i], sources)?;
        if score > best.0 {
            best = (score, Some(i));
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_found_in_their_usual_spellings() {
        let text = "A [S1]. B [S2, S3] and [s4; S5]. Not [1] nor [Sx] nor [S].";
        let groups: Vec<Vec<u32>> = marker_groups(text).into_iter().map(|(_, n)| n).collect();
        assert_eq!(groups, [vec![1], vec![2, 3], vec![4, 5]]);
        assert_eq!(strip_markers(text), "A. B and. Not [1] nor [Sx] nor [S].");
    }

    #[test]
    fn trailing_markers_join_their_sentence() {
        let got = split("Watt improved it in 1781. [S1] Steam drove pumps [S2]. [S3]");
        assert_eq!(got.len(), 2);
        assert_eq!(got[0], ("Watt improved it in 1781. [S1]".to_owned(), vec![1]));
        assert_eq!(got[1], ("Steam drove pumps [S2]. [S3]".to_owned(), vec![2, 3]));
    }

    #[test]
    fn attributed_markers_go_before_the_closing_punctuation() {
        assert_eq!(with_marker("Rollo led them.", "S1"), "Rollo led them [S1].");
        assert_eq!(with_marker("He said \"yes.\"  ", "S2"), "He said \"yes [S2].\"  ");
        assert_eq!(with_marker("No stop", "S3"), "No stop [S3]");
        assert_eq!(with_marker("It was the Normans'", "S1"), "It was the Normans' [S1]");
        assert_eq!(
            with_marker("It was built (by Eiffel).", "S1"),
            "It was built (by Eiffel) [S1]."
        );
    }

    #[test]
    fn refusals_are_recognised_loosely() {
        assert!(is_refusal(&format!("\"{}\"", REFUSAL.to_uppercase())));
        assert!(!is_refusal("The sources do not contain the answer, but Paris is likely."));
    }

    #[test]
    fn numbers_match_whole_and_ignore_thousands_separators() {
        assert!(contains_number("in 1,500 cases".replace(',', "").as_str(), "1500"));
        assert!(!contains_number("in 1500 cases", "50"));
        assert!(contains_number("Super Bowl 50.", "50"));
    }
}
