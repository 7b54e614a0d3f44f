//! `edgerag models quantize`: the embedding model as one GGUF file of `q8_0` weights (with its
//! configuration and tokenizer inside), the form the Worker ships and `--model FILE.gguf`
//! loads. See `edgerag_core::embed::quantized` for the format.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args as ClapArgs;
use edgerag_core::embed::{self, Embedder, EmbedderOptions};
use serde::Serialize;

use super::{Format, gguf_model_id, resolve, sha256_hex};
use crate::{files, output};

/// Suffix of a quantized file's name after the model's name (`all-MiniLM-L6-v2-q8_0.gguf`).
const SUFFIX: &str = "-q8_0.gguf";

/// Options of `models quantize`.
#[derive(Debug, ClapArgs)]
pub struct Args {
    /// The directory of the model to quantize (config.json, tokenizer.json and
    /// model.safetensors) [default: all-MiniLM-L6-v2 from the cache, fetched if missing].
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
    /// The file to write [default: next to the model's directory, named after it:
    /// `<cache>/models/all-MiniLM-L6-v2-q8_0.gguf` for the default model].
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// What `models quantize --json` prints.
#[derive(Debug, Serialize)]
struct Quantized {
    /// The file written (or left as it was).
    path: String,
    /// Its size.
    bytes: usize,
    /// The id of the model it holds, as `--model FILE` names it.
    model: String,
    /// Lower-case hex SHA-256 of its bytes.
    sha256: String,
    /// Whether the file was written; false when it already held these bytes.
    changed: bool,
}

/// Runs `edgerag models quantize`.
pub(crate) fn run(args: &Args) -> Result<()> {
    let model_files = resolve(args.model.as_deref(), args.json)?;
    let dir = &model_files.dir;
    let Format::Safetensors { config, tokenizer, weights } = &model_files.format else {
        bail!(
            "{}: already quantized; --model takes the directory of the model to quantize \
             (config.json, tokenizer.json and model.safetensors)",
            dir.display()
        );
    };
    let path = match &args.output {
        Some(path) => path.clone(),
        None => default_output(dir)?,
    };
    check_output(&path)?;

    let gguf = embed::quantize(config, tokenizer, weights)
        .with_context(|| format!("quantizing the model in {}", dir.display()))?;
    let sha256 = sha256_hex(&gguf);
    let model = gguf_model_id(&path, &sha256);
    // Never write a file that does not load and run.
    let options = EmbedderOptions { model_id: model.clone(), ..EmbedderOptions::minilm() };
    Embedder::from_gguf(&gguf, options)
        .and_then(|embedder| embedder.embed_query("Does the quantized model run?"))
        .with_context(|| format!("the quantized model of {}", dir.display()))?;

    let changed = !holds(&path, &gguf);
    if changed {
        files::write_atomic(&path, &gguf)?;
    }
    if args.json {
        return output::json(&Quantized {
            path: path.display().to_string(),
            bytes: gguf.len(),
            model,
            sha256,
            changed,
        });
    }
    output::line(&path.display().to_string());
    let percent = 100.0 * gguf.len() as f64 / weights.len().max(1) as f64;
    output::line(&format!(
        "  {}: {} (q8_0 weights, configuration and tokenizer) from {} of weights in \
         model.safetensors ({percent:.0}%); {model}",
        if changed { "written" } else { "unchanged" },
        megabytes(gguf.len()),
        megabytes(weights.len()),
    ));
    Ok(())
}

/// The default output for the model in `dir`: beside the directory, named after it
/// (`…/models/all-MiniLM-L6-v2` → `…/models/all-MiniLM-L6-v2-q8_0.gguf`).
fn default_output(dir: &Path) -> Result<PathBuf> {
    let dir = std::fs::canonicalize(dir).with_context(|| format!("{}", dir.display()))?;
    let Some(name) = dir.file_name() else {
        bail!("{}: cannot name the output after the model directory: pass -o FILE", dir.display());
    };
    Ok(dir.with_file_name(format!("{}{SUFFIX}", name.to_string_lossy())))
}

/// Checks, before the work, that `path` can be written: its directory exists and it is not a
/// directory itself.
fn check_output(path: &Path) -> Result<()> {
    let parent = files::parent_dir(path);
    if !parent.is_dir() {
        bail!("{}: the output directory {} does not exist", path.display(), parent.display());
    }
    if path.is_dir() {
        bail!("{}: is a directory; -o takes the file to write", path.display());
    }
    Ok(())
}

/// Whether the file at `path` holds exactly `bytes` (false if it cannot be read).
fn holds(path: &Path, bytes: &[u8]) -> bool {
    let same_len = std::fs::metadata(path).is_ok_and(|m| m.len() == bytes.len() as u64);
    same_len && std::fs::read(path).is_ok_and(|existing| existing == bytes)
}

/// Bytes in MB (10^6 bytes, one decimal).
fn megabytes(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}
