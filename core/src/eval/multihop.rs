//! Multi-hop retrieval: MuSiQue in HippoRAG's layout and protocol.
//!
//! `musique_train_corpus.json` is a list of passages `{"title", "text"}`; the questions file is
//! a list of `{"id", "question", "paragraphs": [{"title", "paragraph_text", "is_supporting"}]}`.
//! Every passage is indexed as one document (title + text) whose source is its position in the
//! corpus. Per question: Recall@k = supporting passages found in the top k / supporting
//! passages, for k = 2 and 5, and whether all supporting passages are in the top 5.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::rank_documents;
use crate::query::{Corpus, Mode, SearchOptions};
use crate::{Error, Result};

/// A corpus passage.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Passage {
    /// Title of the Wikipedia page the passage comes from.
    pub title: String,
    /// Passage text.
    pub text: String,
}

/// A question with the corpus positions (as strings, the documents' sources) of its supporting
/// passages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// Question id.
    pub id: String,
    /// Question text.
    pub question: String,
    /// Sources of the supporting passages.
    pub supporting: Vec<String>,
}

#[derive(Deserialize)]
struct RawQuestion {
    id: String,
    question: String,
    paragraphs: Vec<RawParagraph>,
}

#[derive(Deserialize)]
struct RawParagraph {
    title: String,
    paragraph_text: String,
    is_supporting: bool,
}

/// Parses the corpus and the questions; supporting paragraphs are matched to corpus passages
/// by title and text.
///
/// # Errors
/// [`Error::Dataset`] for malformed JSON or a supporting paragraph missing from the corpus.
pub fn parse(corpus_json: &str, questions_json: &str) -> Result<(Vec<Passage>, Vec<Question>)> {
    let corpus: Vec<Passage> = from_json("corpus", corpus_json)?;
    let raw: Vec<RawQuestion> = from_json("questions", questions_json)?;
    let position: HashMap<(&str, &str), usize> =
        corpus.iter().enumerate().map(|(i, p)| ((p.title.as_str(), p.text.as_str()), i)).collect();
    let mut questions = Vec::with_capacity(raw.len());
    for q in &raw {
        let mut supporting = Vec::new();
        for p in q.paragraphs.iter().filter(|p| p.is_supporting) {
            let Some(&i) = position.get(&(p.title.as_str(), p.paragraph_text.as_str())) else {
                return Err(Error::Dataset {
                    file: "questions".into(),
                    line: 0,
                    message: format!(
                        "question {:?}: supporting {:?} not in the corpus",
                        q.id, p.title
                    ),
                });
            };
            supporting.push(i.to_string());
        }
        questions.push(Question { id: q.id.clone(), question: q.question.clone(), supporting });
    }
    Ok((corpus, questions))
}

fn from_json<T: for<'de> Deserialize<'de>>(file: &str, json: &str) -> Result<T> {
    serde_json::from_str(json).map_err(|e| Error::Dataset {
        file: file.to_owned(),
        line: e.line(),
        message: e.to_string(),
    })
}

/// Multi-hop retrieval scores averaged over questions.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MultihopReport {
    /// Retrieval mode evaluated.
    pub mode: Mode,
    /// Questions evaluated.
    pub questions: usize,
    /// Mean Recall@2 of supporting passages.
    #[serde(rename = "recall@2")]
    pub recall_2: f64,
    /// Mean Recall@5 of supporting passages.
    #[serde(rename = "recall@5")]
    pub recall_5: f64,
    /// Fraction of questions with every supporting passage in the top 5.
    #[serde(rename = "all@5")]
    pub all_5: f64,
}

/// Evaluates `searcher` (a bundle of the corpus, sources = positions) on `questions`.
/// `progress` is called after each question with (done, total).
///
/// # Errors
/// [`Error::Query`] if there are no questions with supporting passages.
pub async fn evaluate<C: Corpus>(
    searcher: &C,
    questions: &[Question],
    options: &SearchOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<MultihopReport> {
    let judged: Vec<&Question> = questions.iter().filter(|q| !q.supporting.is_empty()).collect();
    if judged.is_empty() {
        return Err(Error::Query("no question has supporting passages".into()));
    }
    let (mut recall_2, mut recall_5, mut all_5) = (0.0, 0.0, 0.0);
    for (i, q) in judged.iter().enumerate() {
        let top = rank_documents(searcher, &q.question, options, 5).await?;
        let found =
            |k: usize| q.supporting.iter().filter(|s| top.iter().take(k).any(|t| t == *s)).count();
        let total = q.supporting.len() as f64;
        recall_2 += found(2) as f64 / total;
        recall_5 += found(5) as f64 / total;
        all_5 += f64::from(u8::from(found(5) == q.supporting.len()));
        progress(i + 1, judged.len());
    }
    let n = judged.len() as f64;
    Ok(MultihopReport {
        mode: options.mode,
        questions: judged.len(),
        recall_2: recall_2 / n,
        recall_5: recall_5 / n,
        all_5: all_5 / n,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supporting_paragraphs_map_to_corpus_positions() {
        let corpus = r#"[{"title": "A", "text": "alpha"}, {"title": "B", "text": "beta"}]"#;
        let questions = r#"[{"id": "q1", "question": "?", "paragraphs": [
            {"idx": 0, "title": "B", "paragraph_text": "beta", "is_supporting": true},
            {"idx": 1, "title": "A", "paragraph_text": "alpha", "is_supporting": false}]}]"#;
        let (passages, qs) = parse(corpus, questions).unwrap();
        assert_eq!(passages.len(), 2);
        assert_eq!(qs[0].supporting, ["1"]);
        let missing = questions
            .replace("\"beta\", \"is_supporting\": true", "\"gamma\", \"is_supporting\": true");
        let error = parse(corpus, &missing).unwrap_err().to_string();
        assert!(error.contains(r#"question "q1": supporting "B" not in the corpus"#), "{error}");
        let id_with_a_line_break = missing.replace(r#""q1""#, r#""q\n1""#);
        let error = parse(corpus, &id_with_a_line_break).unwrap_err().to_string();
        assert!(error.contains(r#"question "q\n1""#) && !error.contains('\n'), "{error}");
    }
}
