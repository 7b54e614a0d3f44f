//! Extractive answers: the sources' sentences that best answer the question, cited.
//!
//! A sentence scores the share of the question's terms it contains; with a model loaded,
//! that share and the cosine similarity between question and sentence count half each. A
//! source's sentences are discounted by 5% per rank below the first source. The best
//! [`AskOptions::sentences`](super::AskOptions::sentences) sentences with some overlap or
//! similarity are kept, in source order, each followed by its marker.

use crate::query::Corpus;

use super::{Answer, AnswerMode, Answerer, Citation, Retrieval, Sentence, Warning, cosine, mean};
use crate::Result;

/// Sentences shorter than this (in words) are headings or fragments, not answers.
const MIN_WORDS: usize = 4;

/// Lowest score a sentence needs to be chosen (beyond the best one).
const MIN_SCORE: f32 = 0.2;

/// A candidate sentence.
struct Candidate {
    source: usize,
    position: usize,
    text: String,
    score: f32,
}

impl<C: Corpus> Answerer<'_, C> {
    /// The extractive answer to `question` from `retrieval`'s sources.
    pub(super) fn extract(
        &self,
        question: &str,
        retrieval: Retrieval,
        warnings: Vec<Warning>,
    ) -> Result<Answer> {
        let query_vector = self.searcher.query_embedding(question)?;
        let mut wanted = self.analyzer.terms(question);
        wanted.sort_unstable();
        wanted.dedup();
        let mut candidates = Vec::new();
        for (source, s) in retrieval.sources.iter().enumerate() {
            let sentences = self.chunk_sentences(s.hit.chunk, &s.hit.text)?;
            for (position, (text, vector)) in sentences.iter().enumerate() {
                if text.split_whitespace().count() < MIN_WORDS {
                    continue;
                }
                let terms = self.analyzer.terms(text);
                let overlap = if wanted.is_empty() {
                    0.0
                } else {
                    wanted.iter().filter(|t| terms.contains(t)).count() as f32 / wanted.len() as f32
                };
                let score = match &query_vector {
                    Some(q) => 0.5 * overlap + 0.5 * cosine(q, vector).max(0.0),
                    None => overlap,
                };
                let score = score * (1.0 - 0.05 * source as f32).max(0.5);
                candidates.push(Candidate { source, position, text: text.clone(), score });
            }
        }
        candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
        let mut chosen: Vec<Candidate> = Vec::new();
        for candidate in candidates {
            if chosen.len() >= self.options.sentences.max(1) {
                break;
            }
            let duplicate = chosen.iter().any(|c| c.text == candidate.text);
            if !duplicate && (chosen.is_empty() || candidate.score >= MIN_SCORE) {
                chosen.push(candidate);
            }
        }
        chosen.sort_by_key(|c| (c.source, c.position));
        let mut citations: Vec<Citation> = Vec::new();
        let mut sentences = Vec::new();
        for c in &chosen {
            let source = &retrieval.sources[c.source];
            if !citations.iter().any(|x| x.marker == source.marker) {
                citations.push(source.citation());
            }
            sentences.push(Sentence {
                text: cite(&c.text, &source.marker),
                cites: vec![source.marker.clone()],
                support: 1.0,
            });
        }
        let answer = sentences.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join(" ");
        let strength = mean(chosen.iter().map(|c| c.score)).clamp(0.0, 1.0);
        Ok(Answer {
            answer,
            mode: AnswerMode::Extractive,
            model: None,
            citations,
            sources: retrieval.sources,
            sentences,
            warnings,
            relevance: retrieval.relevance,
            confidence: (retrieval.relevance * strength).sqrt(),
            keywords: None,
        })
    }
}

/// `sentence` with `[marker]` before its final punctuation.
fn cite(sentence: &str, marker: &str) -> String {
    let trimmed = sentence.trim_end();
    match trimmed.char_indices().next_back() {
        Some((i, c)) if matches!(c, '.' | '!' | '?') => {
            format!("{} [{marker}]{c}", trimmed[..i].trim_end())
        }
        _ => format!("{trimmed} [{marker}]"),
    }
}

#[cfg(test)]
mod tests {
    use super::cite;

    #[test]
    fn markers_go_before_the_full_stop() {
        assert_eq!(cite("Watt improved it.", "S2"), "Watt improved it [S2].");
        assert_eq!(cite("A list item", "S1"), "A list item [S1]");
    }
}
