//! File-system work of the CLI: collecting inputs, reading bundles, writing atomically.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use edgerag_core::limits::{self, MAX_SOURCE_BYTES};
use edgerag_core::{DocKind, Searcher};

/// Inputs of a build: the files to load, and files skipped while walking directories.
#[derive(Debug, Default)]
pub(crate) struct Inputs {
    /// Files to load, in a stable order.
    pub(crate) files: Vec<Input>,
    /// Files in directories that are not a supported type.
    pub(crate) skipped: Vec<PathBuf>,
}

/// A file to load and the name its document gets in the bundle.
#[derive(Debug)]
pub(crate) struct Input {
    /// Where the file is.
    pub(crate) path: PathBuf,
    /// The document's name: the file's path relative to the argument it was found under
    /// (`guide/intro.md`), its file name when it was named itself, and with several arguments
    /// the directory's own name first (`docs/guide/intro.md`). A bundle is shipped to readers,
    /// so it never records where the files sat on the machine that built it.
    pub(crate) name: String,
}

/// Expands files and directories (recursively, hidden entries skipped, sorted) into the files
/// to load. A file named explicitly is always loaded, so an unsupported one reports an error;
/// unsupported files met inside directories are only counted as skipped.
pub(crate) fn collect(paths: &[PathBuf]) -> Result<Inputs> {
    let mut inputs = Inputs::default();
    for path in paths {
        let meta = fs::metadata(path).with_context(|| format!("{}", path.display()))?;
        if !meta.is_dir() {
            inputs.files.push(Input { path: path.clone(), name: file_name(path) });
            continue;
        }
        let own = file_name(path);
        let prefix =
            if paths.len() > 1 && !own.is_empty() { format!("{own}/") } else { String::new() };
        let walker = walkdir::WalkDir::new(path)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
        for entry in walker {
            let entry = entry.with_context(|| format!("reading directory {}", path.display()))?;
            if !entry.file_type().is_file() {
                continue;
            }
            let file = entry.into_path();
            if DocKind::from_path(&file.to_string_lossy()).is_none() {
                inputs.skipped.push(file);
                continue;
            }
            let relative = file.strip_prefix(path).unwrap_or(&file);
            let parts: Vec<_> = relative.iter().map(|part| part.to_string_lossy()).collect();
            inputs.files.push(Input { name: format!("{prefix}{}", parts.join("/")), path: file });
        }
    }
    Ok(inputs)
}

/// The last component of a path as given (`docs` for `docs/`; the directory's own name for
/// `.` and `..`); empty for a root.
fn file_name(path: &Path) -> String {
    let canonical = fs::canonicalize(path).ok();
    let name = path.file_name().or_else(|| canonical.as_deref()?.file_name());
    name.map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Reads a file, naming it in the error.
pub(crate) fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).with_context(|| format!("{}", path.display()))
}

/// Reads a document's file, refusing one over [`MAX_SOURCE_BYTES`] before reading it (core
/// refuses such bytes too; this spares reading them).
pub(crate) fn read_document(path: &Path) -> Result<Vec<u8>> {
    let file = fs::File::open(path).with_context(|| format!("{}", path.display()))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    limits::check_source_len(len).with_context(|| format!("{}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_SOURCE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{}", path.display()))?;
    Ok(bytes)
}

/// Reads a file that may be gzip-compressed (by its `.gz` extension) as UTF-8 text.
pub(crate) fn read_text_maybe_gz(path: &Path) -> Result<String> {
    let bytes = read(path)?;
    let mut text = String::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::GzDecoder::new(&bytes[..])
            .read_to_string(&mut text)
            .with_context(|| format!("{}: not valid gzip-compressed UTF-8", path.display()))?;
    } else {
        text = String::from_utf8(bytes)
            .with_context(|| format!("{}: not valid UTF-8", path.display()))?;
    }
    Ok(text)
}

/// Loads a bundle and prepares it for search.
pub(crate) fn open_bundle(path: &Path) -> Result<Searcher> {
    let bytes = read(path)?;
    Searcher::from_bytes(&bytes).with_context(|| format!("{}", path.display()))
}

/// The directory a file `path` is in (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The size of the file `path`, in bytes.
pub(crate) fn size(path: &Path) -> Result<usize> {
    let metadata = fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(usize::try_from(metadata.len()).unwrap_or(usize::MAX))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to disk,
/// then renamed over `path`. On failure nothing is left behind.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = parent_dir(path);
    let context = || format!("writing {}", path.display());
    let mut tmp = tempfile::Builder::new()
        .prefix(".edgerag-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .with_context(context)?;
    tmp.write_all(bytes).with_context(context)?;
    // Temporary files are private (0600); a bundle is meant to be shared.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(path).map_or(0o644, |m| m.permissions().mode());
        tmp.as_file().set_permissions(fs::Permissions::from_mode(mode)).with_context(context)?;
    }
    tmp.as_file().sync_all().with_context(context)?;
    tmp.persist(path).map_err(|e| e.error).with_context(context)?;
    Ok(())
}
