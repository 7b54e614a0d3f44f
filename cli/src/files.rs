//! File-system work of the CLI: collecting inputs, reading bundles, writing atomically.

use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use edgerag_core::limits::{self, MAX_SOURCE_BYTES};
use edgerag_core::{DocKind, Searcher};

/// Inputs of a build: the files to load, and files skipped while walking directories.
#[derive(Debug, Default)]
pub struct Inputs {
    /// Files to load, in a stable order.
    pub files: Vec<Input>,
    /// Files in directories that are not a supported type.
    pub skipped: Vec<PathBuf>,
}

/// A file to load and the name its document gets in the bundle.
#[derive(Debug)]
pub struct Input {
    /// Where the file is.
    pub path: PathBuf,
    /// The document's name: the file's path relative to the argument it was found under
    /// (`guide/intro.md`), its file name when it was named itself, and with several arguments
    /// the directory's own name first (`docs/guide/intro.md`). Names are unique: where two
    /// would be the same (`a/README.md b/README.md`, `v1/docs v2/docs`), each takes as many of
    /// its argument's parent directories as tell them apart (`a/README.md`, `v1/docs/…`). A
    /// bundle is shipped to readers, so it never records where the files sat on the machine
    /// that built it.
    pub name: String,
}

/// Expands files and directories (recursively, hidden entries skipped, sorted) into the files
/// to load, each once. A file named explicitly is always loaded, so an unsupported one reports
/// an error; unsupported files met inside directories are only counted as skipped.
pub fn collect(paths: &[PathBuf]) -> Result<Inputs> {
    let mut inputs = Inputs::default();
    // Per argument: the path it names, as directories and name; how many of those the names
    // of its files start with.
    let mut roots: Vec<(Vec<String>, usize)> = Vec::new();
    // Per file: where it is, its argument, its path below the argument.
    let mut found: Vec<(PathBuf, usize, String)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for path in paths {
        let meta = fs::metadata(path).with_context(|| format!("{}", path.display()))?;
        let root = roots.len();
        let mut add = |file: PathBuf, relative: String| {
            if seen.insert(fs::canonicalize(&file).unwrap_or_else(|_| file.clone())) {
                found.push((file, root, relative));
            }
        };
        if !meta.is_dir() {
            roots.push((components(path), 1));
            add(path.clone(), String::new());
            continue;
        }
        roots.push((components(path), usize::from(paths.len() > 1)));
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
            add(file.clone(), parts.join("/"));
        }
    }
    let name = |roots: &[(Vec<String>, usize)], (_, root, relative): &(PathBuf, usize, String)| {
        let (parts, take) = &roots[*root];
        let mut name = parts[parts.len() - (*take).min(parts.len())..].join("/");
        if !name.is_empty() && !relative.is_empty() {
            name.push('/');
        }
        name + relative
    };
    // Lengthen the names that collide, a directory at a time, while that can tell them apart.
    loop {
        let mut by_name: std::collections::HashMap<String, Vec<usize>> = Default::default();
        for file in &found {
            by_name.entry(name(&roots, file)).or_default().push(file.1);
        }
        let mut lengthened = false;
        for colliding in by_name.into_values().filter(|roots| roots.len() > 1) {
            for root in colliding {
                let (parts, take) = &mut roots[root];
                if *take < parts.len() {
                    *take += 1;
                    lengthened = true;
                }
            }
        }
        if !lengthened {
            break;
        }
    }
    inputs.files =
        found.iter().map(|file| Input { path: file.0.clone(), name: name(&roots, file) }).collect();
    Ok(inputs)
}

/// The directories and name of a path, from the root (`["home", "me", "docs"]`): the parents'
/// real location, and the name as given (the directory's own name for `.` and `..`).
fn components(path: &Path) -> Vec<String> {
    let real = |path: &Path| fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let (parent, own) = match path.file_name() {
        Some(own) => (real(parent_dir(path)), Some(own)),
        None => (real(path), None),
    };
    let mut parts: Vec<String> = parent
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    parts.extend(own.map(|own| own.to_string_lossy().into_owned()));
    parts
}

/// Reads a file, naming it in the error.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    fs::read(path).with_context(|| format!("{}", path.display()))
}

/// Reads a document's file, refusing one over [`MAX_SOURCE_BYTES`] before reading it (core
/// refuses such bytes too; this spares reading them).
pub fn read_document(path: &Path) -> Result<Vec<u8>> {
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
pub fn read_text_maybe_gz(path: &Path) -> Result<String> {
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
pub fn open_bundle(path: &Path) -> Result<Searcher> {
    let bytes = read(path)?;
    Searcher::from_bytes(&bytes).with_context(|| format!("{}", path.display()))
}

/// The directory a file `path` is in (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// The size of the file `path`, in bytes.
pub fn size(path: &Path) -> Result<usize> {
    let metadata = fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(usize::try_from(metadata.len()).unwrap_or(usize::MAX))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed to disk,
/// then renamed over `path`. On failure nothing is left behind.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
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

/// The first of `names` that is a file in `dir` (an error if `dir` is not a directory or holds
/// none of them).
pub fn first_existing(dir: &Path, names: &[&str]) -> Result<PathBuf> {
    if !dir.is_dir() {
        anyhow::bail!("{}: not a directory", dir.display());
    }
    names
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
        .with_context(|| format!("{}: none of {} found", dir.display(), names.join(", ")))
}

/// The last component of `path` (the whole path when there is none), as a name in messages.
pub fn file_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}
