//! Choosing and loading the embedding model for builds, searches and `edgerag embed`.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use edgerag_core::bundle::{Embed, EmbeddingSpec};
use edgerag_core::embed::{Embedder, EmbedderOptions};
use serde::Serialize;

use crate::{models, output};

/// Model flags shared by the commands that embed.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct ModelArgs {
    /// Directory with config.json, tokenizer.json and model.safetensors [default:
    /// all-MiniLM-L6-v2, fetched once into the cache].
    #[arg(long, value_name = "DIR")]
    pub(crate) model: Option<PathBuf>,
}

impl ModelArgs {
    /// Loads the model (fetching the default one if needed).
    pub(crate) fn load(&self, quiet: bool) -> Result<Embedder> {
        models::resolve(self.model.as_deref(), quiet)?.load()
    }

    /// Loads the model a bundle was embedded with: the one given, or the default one if the
    /// bundle's is the default model. The caller checks compatibility (`Searcher::with_embedder`).
    pub(crate) fn load_for(&self, spec: &EmbeddingSpec, quiet: bool) -> Result<Embedder> {
        if self.model.is_none() && spec.model != EmbedderOptions::MINILM_ID {
            bail!("the bundle was embedded with {}: pass its files with --model DIR", spec.model);
        }
        self.load(quiet)
    }
}

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
