//! BEIR data sets on disk (`edgerag eval beir`, and the SciFact runs of `edgerag-bench`):
//! reading a data set's directory, and a bundle saved from one.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::{Context, Result, bail};
use edgerag_core::Bundle;
use edgerag_core::eval::Judgments;
use edgerag_core::eval::beir::{self, BeirDoc, BeirQuery};

use crate::files::{self, file_name, first_existing};

/// A BEIR data set as read from its directory.
pub struct BeirData {
    /// The documents (corpus.jsonl).
    pub corpus: Vec<BeirDoc>,
    /// The queries (queries.jsonl), judged or not.
    pub queries: Vec<BeirQuery>,
    /// The judgments of the split, by query id.
    pub qrels: HashMap<String, Judgments>,
}

/// Reads the BEIR directory `dir`: corpus.jsonl[.gz], queries.jsonl[.gz], qrels/`split`.tsv.
pub fn read_beir(dir: &Path, split: &str) -> Result<BeirData> {
    let corpus_path = first_existing(dir, &["corpus.jsonl", "corpus.jsonl.gz"])?;
    let corpus =
        beir::parse_jsonl(&file_name(&corpus_path), &files::read_text_maybe_gz(&corpus_path)?)?;
    let queries_path = first_existing(dir, &["queries.jsonl", "queries.jsonl.gz"])?;
    let queries =
        beir::parse_jsonl(&file_name(&queries_path), &files::read_text_maybe_gz(&queries_path)?)?;
    let qrels_path = dir.join("qrels").join(format!("{split}.tsv"));
    let qrels_text = files::read_text_maybe_gz(&qrels_path)?;
    let qrels = beir::parse_qrels(&format!("qrels/{split}.tsv"), &qrels_text)?;
    Ok(BeirData { corpus, queries, qrels })
}

/// Reads a bundle saved by `--save-bundle` and checks that its documents are the records'.
pub fn load_bundle<'a>(
    path: &Path,
    documents: impl Iterator<Item = (String, &'a str, &'a str)>,
) -> Result<Bundle> {
    let bundle =
        Bundle::from_bytes(&files::read(path)?).with_context(|| format!("{}", path.display()))?;
    let sources: HashSet<String> = documents.map(|(source, _, _)| source).collect();
    if let Some(stranger) = bundle.documents.iter().find(|d| !sources.contains(&d.source)) {
        bail!(
            "{}: not a bundle of this data set (it holds document {:?})",
            path.display(),
            stranger.source
        );
    }
    Ok(bundle)
}
