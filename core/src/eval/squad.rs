//! Answer evaluation on SQuAD-format data: the articles' paragraphs are the corpus, each
//! question is asked, and two things are measured.
//!
//! - **Answer recall@k** of retrieval: the share of questions whose top `k` sources contain a
//!   gold answer (normalised as below, as a substring).
//! - **Exact match** and **token F1** of the final answer (citation markers removed) against
//!   the gold answers, as the official SQuAD v1.1 script computes them: lower-cased, without
//!   punctuation, articles (`a`, `an`, `the`) and extra whitespace; the best over the gold
//!   answers counts. Also the share of answers that **contain** a gold answer: an extractive
//!   answer quotes whole sentences, so its EM and F1 are low by construction while it may
//!   still hold the answer.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::answer::{Answer, AnswerMode};
use crate::query::Mode;
use crate::{Error, Result};

/// A paragraph of an article: one document of the corpus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paragraph {
    /// Document source: `<article title>/<paragraph number>`.
    pub source: String,
    /// Article title (underscores as spaces).
    pub title: String,
    /// The paragraph's text.
    pub text: String,
}

/// A question with its gold answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// SQuAD question id.
    pub id: String,
    /// The question.
    pub question: String,
    /// Gold answer texts.
    pub answers: Vec<String>,
}

#[derive(Deserialize)]
struct File {
    data: Vec<Article>,
}

#[derive(Deserialize)]
struct Article {
    title: String,
    paragraphs: Vec<RawParagraph>,
}

#[derive(Deserialize)]
struct RawParagraph {
    context: String,
    qas: Vec<Qa>,
}

#[derive(Deserialize)]
struct Qa {
    id: String,
    question: String,
    answers: Vec<GoldAnswer>,
}

#[derive(Deserialize)]
struct GoldAnswer {
    text: String,
}

/// Parses a SQuAD v1.1 JSON file (`file` names it in errors). Questions without answers (as
/// SQuAD 2.0 has) are left out.
///
/// # Errors
/// [`Error::Dataset`] when the JSON is not in SQuAD's layout.
pub fn parse(file: &str, json: &str) -> Result<(Vec<Paragraph>, Vec<Question>)> {
    let parsed: File = serde_json::from_str(json).map_err(|e| Error::Dataset {
        file: file.to_owned(),
        line: e.line(),
        message: format!("not SQuAD JSON: {e}"),
    })?;
    let (mut paragraphs, mut questions) = (Vec::new(), Vec::new());
    for article in parsed.data {
        let title = article.title.replace('_', " ");
        for (n, paragraph) in article.paragraphs.into_iter().enumerate() {
            paragraphs.push(Paragraph {
                source: format!("{}/{}", article.title, n + 1),
                title: title.clone(),
                text: paragraph.context,
            });
            for qa in paragraph.qas.into_iter().filter(|qa| !qa.answers.is_empty()) {
                let answers = qa.answers.into_iter().map(|a| a.text).collect();
                questions.push(Question { id: qa.id, question: qa.question, answers });
            }
        }
    }
    Ok((paragraphs, questions))
}

/// SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces.
pub fn normalize(text: &str) -> String {
    let lower: String = text.to_lowercase().chars().filter(|c| !c.is_ascii_punctuation()).collect();
    lower
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Exact match against the best gold answer: 1 or 0.
pub fn exact_match(prediction: &str, golds: &[String]) -> f64 {
    let p = normalize(prediction);
    if golds.iter().any(|g| normalize(g) == p) { 1.0 } else { 0.0 }
}

/// Token F1 against the best gold answer.
pub fn f1(prediction: &str, golds: &[String]) -> f64 {
    let p = normalize(prediction);
    let predicted: Vec<&str> = p.split_whitespace().collect();
    golds.iter().map(|g| token_f1(&predicted, &normalize(g))).fold(0.0, f64::max)
}

fn token_f1(predicted: &[&str], gold: &str) -> f64 {
    let gold: Vec<&str> = gold.split_whitespace().collect();
    if predicted.is_empty() || gold.is_empty() {
        return if predicted.is_empty() && gold.is_empty() { 1.0 } else { 0.0 };
    }
    let mut counts: HashMap<&str, i32> = HashMap::new();
    for w in &gold {
        *counts.entry(w).or_default() += 1;
    }
    let mut common = 0;
    for w in predicted {
        if let Some(c) = counts.get_mut(w).filter(|c| **c > 0) {
            *c -= 1;
            common += 1;
        }
    }
    if common == 0 {
        return 0.0;
    }
    let precision = f64::from(common) / predicted.len() as f64;
    let recall = f64::from(common) / gold.len() as f64;
    2.0 * precision * recall / (precision + recall)
}

/// Whether `text` contains a gold answer (both normalised).
pub fn contains_answer(text: &str, golds: &[String]) -> bool {
    let text = format!(" {} ", normalize(text));
    golds.iter().map(|g| normalize(g)).any(|g| !g.is_empty() && text.contains(&format!(" {g} ")))
}

/// Results of one evaluation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SquadReport {
    /// Retrieval mode.
    pub mode: Mode,
    /// How answers were made: `llm` or `extractive`.
    pub answers: String,
    /// Questions asked.
    pub questions: usize,
    /// Share whose best source contains a gold answer.
    #[serde(rename = "answer_recall@1")]
    pub recall_1: f64,
    /// Share whose top 5 sources contain a gold answer.
    #[serde(rename = "answer_recall@5")]
    pub recall_5: f64,
    /// Mean exact match of the answers.
    pub exact_match: f64,
    /// Mean token F1 of the answers.
    pub f1: f64,
    /// Share of answers containing a gold answer.
    pub contains: f64,
    /// Share of questions refused.
    pub refused: f64,
}

/// Asks every question through `answer` and scores the answers; `progress(done, total)` is
/// called after each question.
///
/// # Errors
/// The first error of `answer`.
pub fn evaluate(
    questions: &[Question],
    mode: Mode,
    answers: &str,
    answer: &mut dyn FnMut(&str) -> Result<Answer>,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<SquadReport> {
    let mut sums = [0.0f64; 6];
    for (done, q) in questions.iter().enumerate() {
        let a = answer(&q.question)?;
        let found = a.sources.iter().position(|s| contains_answer(&s.hit.text, &q.answers));
        let text = a.plain_text();
        let refused = a.mode == AnswerMode::Refused;
        let scores = [
            f64::from(u8::from(found == Some(0))),
            f64::from(u8::from(found.is_some_and(|i| i < 5))),
            if refused { 0.0 } else { exact_match(&text, &q.answers) },
            if refused { 0.0 } else { f1(&text, &q.answers) },
            f64::from(u8::from(!refused && contains_answer(&text, &q.answers))),
            f64::from(u8::from(refused)),
        ];
        sums.iter_mut().zip(scores).for_each(|(s, x)| *s += x);
        progress(done + 1, questions.len());
    }
    let n = questions.len().max(1) as f64;
    Ok(SquadReport {
        mode,
        answers: answers.to_owned(),
        questions: questions.len(),
        recall_1: sums[0] / n,
        recall_5: sums[1] / n,
        exact_match: sums[2] / n,
        f1: sums[3] / n,
        contains: sums[4] / n,
        refused: sums[5] / n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golds(g: &[&str]) -> Vec<String> {
        g.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn metrics_follow_the_official_script() {
        let g = golds(&["Denver Broncos", "The Broncos"]);
        assert_eq!(exact_match("the Denver Broncos!", &g), 1.0);
        assert_eq!(exact_match("Broncos won", &g), 0.0);
        // "broncos won" vs "broncos": precision 1/2, recall 1 → 2/3.
        assert!((f1("Broncos won", &g) - 2.0 / 3.0).abs() < 1e-9);
        assert_eq!(f1("Carolina Panthers", &g), 0.0);
        assert!(contains_answer("In 2016 the Denver Broncos beat Carolina.", &g));
        assert!(!contains_answer("Denverite Broncosaurus", &g));
    }

    #[test]
    fn parsing_reads_the_layout_and_names_the_file_on_errors() {
        let json = r#"{"version":"1.1","data":[{"title":"Super_Bowl_50","paragraphs":[
            {"context":"Denver won.","qas":[{"id":"q1","question":"Who won?",
             "answers":[{"answer_start":0,"text":"Denver"}]}]}]}]}"#;
        let (paragraphs, questions) = parse("dev.json", json).unwrap();
        assert_eq!(paragraphs[0].source, "Super_Bowl_50/1");
        assert_eq!(paragraphs[0].title, "Super Bowl 50");
        assert_eq!(questions[0].answers, ["Denver"]);
        let error = parse("dev.json", "{\"data\": 3}").unwrap_err();
        assert!(error.to_string().starts_with("dev.json line 1: not SQuAD JSON"), "{error}");
    }
}
