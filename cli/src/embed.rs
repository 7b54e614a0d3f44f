//! `edgerag embed`: vectors of texts, e.g. for parity checks against other runtimes.

use anyhow::{Context, Result};
use edgerag_core::bundle::Embed;
use serde::Serialize;

use crate::flags::model::ModelArgs;
use crate::output;

/// Arguments of `edgerag embed`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Texts to embed.
    #[arg(required = true)]
    texts: Vec<String>,
    /// Embed as queries (with the model's query prefix) instead of documents.
    #[arg(long)]
    query: bool,
    #[command(flatten)]
    model: ModelArgs,
    /// Print JSON (the vectors) instead of a summary.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Embedded {
    model: String,
    dimension: u32,
    vectors: Vec<Vec<f32>>,
}

/// `edgerag embed`: vectors of texts, e.g. for parity checks against other runtimes.
pub(crate) fn run(args: Args) -> Result<()> {
    let embedder = args.model.load(args.json)?;
    let texts: Vec<&str> = args.texts.iter().map(String::as_str).collect();
    let vectors = if args.query {
        texts.iter().map(|t| Embed::embed_query(&embedder, t)).collect::<Result<Vec<_>, _>>()
    } else {
        Embed::embed_documents(&embedder, &texts)
    }
    .context("embedding")?;
    let spec = embedder.spec();
    if args.json {
        return output::json(&Embedded { model: spec.model, dimension: spec.dimension, vectors });
    }
    for (text, vector) in texts.iter().zip(&vectors) {
        let head: Vec<String> = vector.iter().take(4).map(|x| format!("{x:.4}")).collect();
        output::line(&format!("[{}, …] ({}-d)  {text}", head.join(", "), vector.len()));
    }
    Ok(())
}
