//! The embedding-model flags: choosing and loading the model for builds, searches and
//! `edgerag embed`.

use std::path::PathBuf;

use anyhow::{Result, bail};
use edgerag_core::Mode;
use edgerag_core::bundle::EmbeddingSpec;
use edgerag_core::embed::{Embedder, EmbedderOptions};

use crate::{models, output};

/// Model flags shared by the commands that embed.
#[derive(Debug, Clone, clap::Args)]
pub struct ModelArgs {
    /// Directory with config.json, tokenizer.json and model.safetensors, or a quantized .gguf
    /// file made by `edgerag models quantize` [default: all-MiniLM-L6-v2, fetched once into
    /// the cache].
    #[arg(long, value_name = "PATH")]
    pub model: Option<PathBuf>,
}

impl ModelArgs {
    /// Loads the model (fetching the default one if needed): `f32` from a directory, `q8_0`
    /// from a `.gguf` file.
    pub fn load(&self, quiet: bool) -> Result<Embedder> {
        models::resolve(self.model.as_deref(), quiet)?.load()
    }

    /// Loads the model a bundle was embedded with: the one given, or the default one if the
    /// bundle's is the default model. The caller checks compatibility (`Searcher::with_embedder`).
    pub fn load_for(&self, spec: &EmbeddingSpec, quiet: bool) -> Result<Embedder> {
        if self.model.is_none() && spec.model != EmbedderOptions::MINILM_ID {
            bail!(
                "the bundle was embedded with {:?}: pass that model with --model DIR or FILE.gguf",
                spec.model
            );
        }
        self.load(quiet)
    }
}

/// The model of a bundle embedded as `spec` says, when it has vectors and `mode` uses them.
/// Failing to load it is an error in dense mode and a warning otherwise (the other
/// retrievers still work).
pub fn for_mode(
    spec: Option<&EmbeddingSpec>,
    model: &ModelArgs,
    mode: Mode,
    quiet: bool,
) -> Result<Option<Embedder>> {
    let Some(spec) = spec.filter(|_| !matches!(mode, Mode::Bm25 | Mode::Graph)) else {
        return Ok(None);
    };
    match model.load_for(spec, quiet) {
        Ok(embedder) => Ok(Some(embedder)),
        Err(error) if mode != Mode::Dense => {
            output::warn(None, &format!("dense retrieval off: {error:#}"));
            Ok(None)
        }
        Err(error) => Err(error),
    }
}
