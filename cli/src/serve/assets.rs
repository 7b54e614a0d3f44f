//! What `edgerag serve` serves besides the site: the bundles and the embedding model's files,
//! and `/edgerag.json`, which lists them.
//!
//! Each such file is opened, checked and hashed once at startup, and the open handle is kept:
//! every response reads from it at explicit offsets, so the bytes served are always the ones
//! hashed, even if the file is replaced on disk while serving (restart to serve the new one).

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use edgerag_core::embed::EmbedderOptions;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::http::{FilePart, encode_segment};
use crate::models::{self, PINNED};
use crate::open;

/// A file served from the handle opened at startup.
#[derive(Debug)]
pub(crate) struct Asset {
    /// The open file.
    pub(crate) file: Arc<File>,
    /// Its length at startup.
    pub(crate) len: u64,
    /// Lower-case hex SHA-256 of its bytes.
    pub(crate) sha256: String,
}

impl Asset {
    /// Opens `path` and hashes it, reading it in pieces.
    fn open(path: &Path) -> Result<Self> {
        let (file, len) = open_file(path)?;
        let mut hasher = Sha256::new();
        let mut reader = FilePart::new(Arc::clone(&file), 0, len);
        let mut buffer = vec![0; 1 << 16];
        loop {
            let n = reader.read(&mut buffer).with_context(|| format!("{}", path.display()))?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
        }
        let sha256 = models::hex(&hasher.finalize());
        Ok(Self { file, len, sha256 })
    }

    /// The strong entity tag: the quoted SHA-256.
    pub(crate) fn etag(&self) -> String {
        format!("\"{}\"", self.sha256)
    }
}

/// Opens a regular file and returns it with its length.
fn open_file(path: &Path) -> Result<(Arc<File>, u64)> {
    let file = File::open(path).with_context(|| format!("{}", path.display()))?;
    let meta = file.metadata().with_context(|| format!("{}", path.display()))?;
    if !meta.is_file() {
        bail!("{}: not a file", path.display());
    }
    Ok((Arc::new(file), meta.len()))
}

/// A bundle being served.
#[derive(Debug)]
pub(crate) struct ServedBundle {
    /// Its file name: the last segment of its URL.
    pub(crate) file_name: String,
    /// Where it was read from.
    pub(crate) path: PathBuf,
    /// The file.
    pub(crate) asset: Asset,
    /// Its entry in `/edgerag.json`.
    pub(crate) info: BundleInfo,
}

/// A bundle as `/edgerag.json` lists it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct BundleInfo {
    /// The file name without its extension.
    name: String,
    /// `bundles/<file name>`, relative to the site root.
    url: String,
    /// Its size.
    bytes: u64,
    /// Lower-case hex SHA-256 of the file.
    sha256: String,
    /// The corpus name in its manifest.
    corpus: String,
    /// Its chunk count.
    chunks: u32,
    /// The id of the model its vectors were made with, if it has vectors.
    embedding: Option<String>,
}

impl ServedBundle {
    /// Hashes the bundle at `path`, reading it in pieces, and validates it: of format 4, its
    /// directory, as a reader by range finds it; an older one, read whole. What it holds in
    /// memory does not grow with the file.
    pub(crate) fn open(path: &Path) -> Result<Self> {
        let file_name = path
            .file_name()
            .ok_or_else(|| anyhow!("{}: not a bundle file", path.display()))?
            .to_str()
            .ok_or_else(|| anyhow!("{}: the file name is not UTF-8", path.display()))?
            .to_owned();
        let asset = Asset::open(path)?;
        let location =
            path.to_str().ok_or_else(|| anyhow!("{}: the path is not UTF-8", path.display()))?;
        let bundle = open::open_any(location)?;
        let manifest = bundle.manifest();
        let name = Path::new(&file_name)
            .file_stem()
            .map_or_else(|| file_name.clone(), |s| s.to_string_lossy().into_owned());
        let info = BundleInfo {
            name,
            url: format!("bundles/{}", encode_segment(&file_name)),
            bytes: asset.len,
            sha256: asset.sha256.clone(),
            corpus: manifest.corpus.clone(),
            chunks: manifest.counts.chunks,
            embedding: manifest.embedding.as_ref().map(|e| e.model.clone()),
        };
        Ok(Self { file_name, path: path.to_path_buf(), asset, info })
    }
}

/// Opens every bundle; two with the same file name would share a URL and are refused.
pub(crate) fn open_bundles(paths: &[PathBuf]) -> Result<Vec<ServedBundle>> {
    let mut bundles: Vec<ServedBundle> = Vec::with_capacity(paths.len());
    for path in paths {
        let bundle = ServedBundle::open(path)?;
        if let Some(other) = bundles.iter().find(|b| b.file_name == bundle.file_name) {
            bail!(
                "{} and {} have the same file name; it would be served as {} twice: rename one",
                other.path.display(),
                path.display(),
                bundle.info.url
            );
        }
        bundles.push(bundle);
    }
    Ok(bundles)
}

/// The embedding model's files being served.
#[derive(Debug)]
pub(crate) struct ServedModel {
    /// The URL directory name: `all-MiniLM-L6-v2` for the default model, else the model
    /// directory's name.
    pub(crate) dir_name: String,
    /// `config.json`, `tokenizer.json`, `model.safetensors`.
    files: [Asset; 3],
    /// Its entry in `/edgerag.json`.
    pub(crate) info: ModelInfo,
}

/// The model as `/edgerag.json` lists it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ModelInfo {
    /// The model id that bundles built with it record.
    pub(crate) id: String,
    /// `models/<dir name>/`, relative to the site root.
    url: String,
    /// Size and hash of each file.
    files: ModelFileInfos,
}

/// Size and hash of the model's files.
#[derive(Debug, Clone, Serialize)]
struct ModelFileInfos {
    #[serde(rename = "config.json")]
    config: FileInfo,
    #[serde(rename = "tokenizer.json")]
    tokenizer: FileInfo,
    #[serde(rename = "model.safetensors")]
    weights: FileInfo,
}

/// Size and hash of one file.
#[derive(Debug, Clone, Serialize)]
struct FileInfo {
    bytes: u64,
    sha256: String,
}

impl FileInfo {
    fn of(asset: &Asset) -> Self {
        Self { bytes: asset.len, sha256: asset.sha256.clone() }
    }
}

impl ServedModel {
    /// Opens and hashes the three files in `dir`; the model is named as
    /// `edgerag build --model DIR` names it ([`models::model_id`]).
    fn open(dir: &Path) -> Result<Self> {
        let open = |name: &str| {
            Asset::open(&dir.join(name)).context(
                "a model directory needs config.json, tokenizer.json and model.safetensors",
            )
        };
        let files = [open(PINNED[0].name)?, open(PINNED[1].name)?, open(PINNED[2].name)?];
        let id = models::model_id(dir, &files[2].sha256);
        let dir_name = if id == EmbedderOptions::MINILM_ID {
            models::DEFAULT_MODEL.to_owned()
        } else {
            id.clone()
        };
        let info = ModelInfo {
            id,
            url: format!("models/{}/", encode_segment(&dir_name)),
            files: ModelFileInfos {
                config: FileInfo::of(&files[0]),
                tokenizer: FileInfo::of(&files[1]),
                weights: FileInfo::of(&files[2]),
            },
        };
        Ok(Self { dir_name, files, info })
    }

    /// The file called `name`, if it is one of the model's three.
    pub(crate) fn file(&self, name: &str) -> Option<&Asset> {
        PINNED.iter().position(|p| p.name == name).and_then(|i| self.files.get(i))
    }
}

/// The model to serve: none with `no_model`; the directory given (`--model` or
/// `$EDGERAG_MODEL_DIR`), which must hold the three files; else the default model if it is in
/// the cache, complete and intact. Nothing is downloaded: without the default model, `warn` is
/// told what to run and the site is served without a model.
pub(crate) fn open_model(
    model_dir: Option<&Path>,
    no_model: bool,
    warn: impl Fn(&str),
) -> Result<Option<ServedModel>> {
    if no_model {
        return Ok(None);
    }
    if let Some(dir) = models::local_dir(model_dir) {
        return ServedModel::open(&dir).map(Some);
    }
    let dir = match models::default_dir() {
        Ok(dir) => dir,
        Err(e) => {
            warn(&format!("{e:#}; serving without the embedding model"));
            return Ok(None);
        }
    };
    let fetch = "run `edgerag models fetch` to get it, or pass --model DIR";
    if !PINNED.iter().all(|p| dir.join(p.name).is_file()) {
        warn(&format!(
            "the embedding model is not in the cache ({}); serving without it: {fetch}",
            dir.display()
        ));
        return Ok(None);
    }
    let model = ServedModel::open(&dir)?;
    let intact = model.files.iter().zip(&PINNED).all(|(file, pinned)| file.sha256 == pinned.sha256);
    if !intact {
        warn(&format!(
            "the cached embedding model in {} is damaged; serving without it: {fetch}",
            dir.display()
        ));
        return Ok(None);
    }
    Ok(Some(model))
}

/// The GGUF chat model's file, served for generation in the tab.
#[derive(Debug)]
pub(crate) struct ServedChatModel {
    /// The file.
    pub(crate) asset: Asset,
    /// Its URL path's last segment: the file's name.
    pub(crate) file_name: String,
    /// Its entry in `/edgerag.json`.
    pub(crate) info: ChatModelInfo,
}

/// The chat model as `/edgerag.json` lists it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ChatModelInfo {
    /// The name replies carry.
    pub(crate) name: String,
    /// `chat-models/<file name>`, relative to the site root.
    url: String,
    /// Its size and hash.
    #[serde(flatten)]
    file: FileInfo,
}

impl ServedChatModel {
    /// Opens and hashes the GGUF file at `path`, served under `name`.
    pub(crate) fn open(path: &Path, name: &str) -> Result<Self> {
        let asset = Asset::open(path)?;
        let file_name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| anyhow!("{}: not a file", path.display()))?;
        let info = ChatModelInfo {
            name: name.to_owned(),
            url: format!("chat-models/{}", encode_segment(&file_name)),
            file: FileInfo::of(&asset),
        };
        Ok(Self { asset, file_name, info })
    }
}

/// The body of `/edgerag.json`.
#[derive(Debug, Serialize)]
pub(crate) struct Index<'a> {
    /// The bundles served.
    pub(crate) bundles: Vec<&'a BundleInfo>,
    /// The model served, if any.
    pub(crate) model: Option<&'a ModelInfo>,
    /// The chat model served, if any.
    pub(crate) chat_model: Option<&'a ChatModelInfo>,
}
