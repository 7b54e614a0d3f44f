//! The static site of `edgerag serve`: files under one directory, never outside it.
//!
//! A request path is split into segments after percent-decoding; a segment that is empty is
//! skipped, and one that starts with a dot (`.`, `..`, hidden files) or holds a backslash or
//! colon is refused. The file found is then canonicalised (every symbolic link on the way
//! resolved), and the same rules apply to where it really is: it must lie under the
//! (canonical) site directory, and no part of its path below it may be hidden, so a link
//! inside the site leads neither out of it nor into `.git/` or to `.env`. A directory is
//! served as its `index.html` (`/` → `index.html`); asked for without its trailing slash, it
//! is redirected to it so that relative URLs resolve.

use std::fs::{self, File, Metadata};
use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use anyhow::{Result, bail};

use super::http::{Incoming, Reply, encode_segment};
use super::system;

/// The site directory.
#[derive(Debug)]
pub(crate) struct Site {
    /// As given on the command line, for messages.
    pub(crate) shown: PathBuf,
    /// Canonical, for containment checks.
    root: PathBuf,
}

impl Site {
    /// The site in `dir`, which must be an existing directory.
    pub(crate) fn open(dir: &Path) -> Result<Self> {
        let hint = "run `make www` to build the demo site, or pass --site DIR";
        let root = match fs::canonicalize(dir) {
            Ok(root) => root,
            Err(e) if e.kind() == ErrorKind::NotFound => {
                bail!("site directory {} does not exist: {hint}", dir.display())
            }
            Err(e) => bail!("site directory {}: {e}", dir.display()),
        };
        if !root.is_dir() {
            bail!("site directory {} is not a directory: {hint}", dir.display());
        }
        Ok(Self { shown: dir.to_path_buf(), root })
    }

    /// The reply to `request` for the decoded `path`: the file, a redirect, or 404.
    pub(crate) fn serve(&self, request: &Incoming, path: &str) -> Reply {
        let file = match self.locate(path) {
            Found::File(file) => file,
            Found::Redirect(location) => return Reply::redirect(location),
            Found::Missing => return Reply::not_found(),
        };
        let opened = File::open(&file).and_then(|f| f.metadata().map(|m| (f, m)));
        let (handle, meta) = match opened {
            Ok((handle, meta)) if meta.is_file() => (handle, meta),
            Ok(_) => return Reply::not_found(),
            Err(e) => return unopened(&e),
        };
        let name = file.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
        let content_type = mime(&name);
        Reply::file(request, &etag(&meta), content_type, Arc::new(handle), meta.len())
    }

    /// Maps a decoded request path to a file under the site.
    fn locate(&self, path: &str) -> Found {
        let mut segments = Vec::new();
        for segment in path.split('/').filter(|s| !s.is_empty()) {
            if segment.starts_with('.') || segment.contains(['\\', ':']) {
                return Found::Missing;
            }
            segments.push(segment);
        }
        let wants_dir = path.ends_with('/');
        let candidate = segments.iter().fold(self.root.clone(), |p, s| p.join(s));
        let Some((found, meta)) = self.inside(&candidate) else { return Found::Missing };
        if meta.is_file() {
            return if wants_dir { Found::Missing } else { Found::File(found) };
        }
        if !meta.is_dir() {
            return Found::Missing;
        }
        if !wants_dir {
            let encoded: Vec<String> = segments.iter().map(|s| encode_segment(s)).collect();
            return Found::Redirect(format!("/{}/", encoded.join("/")));
        }
        match self.inside(&found.join("index.html")) {
            Some((index, meta)) if meta.is_file() => Found::File(index),
            _ => Found::Missing,
        }
    }

    /// `path` canonicalised and its metadata, if it exists, lies under the site and is not
    /// hidden (nor in a hidden directory) there.
    fn inside(&self, path: &Path) -> Option<(PathBuf, Metadata)> {
        let canonical = fs::canonicalize(path).ok()?;
        let below = canonical.strip_prefix(&self.root).ok()?;
        if below.components().any(|part| part.as_os_str().as_encoded_bytes().starts_with(b".")) {
            return None;
        }
        let meta = fs::metadata(&canonical).ok()?;
        Some((canonical, meta))
    }
}

/// The reply for a site file found but not opened: 404 if it is gone or not to be read, 503
/// while the server is out of file descriptors or memory (it will have some again), else 500:
/// a file that is there is never answered as missing.
fn unopened(error: &io::Error) -> Reply {
    match error.kind() {
        ErrorKind::NotFound
        | ErrorKind::PermissionDenied
        | ErrorKind::IsADirectory
        | ErrorKind::NotADirectory => Reply::not_found(),
        _ if system::out_of_resources(error) => {
            Reply::busy("the server is busy; retry in a moment\n")
        }
        _ => Reply::text(500, "the file cannot be read\n"),
    }
}

/// Where a request path leads.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    /// A regular file under the site.
    File(PathBuf),
    /// A directory asked for without its trailing slash: this location instead.
    Redirect(String),
    /// Nothing servable.
    Missing,
}

/// An entity tag for a site file from its length and modification time.
fn etag(meta: &Metadata) -> String {
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    format!("\"{:x}-{modified:x}\"", meta.len())
}

/// The `Content-Type` of a file, by its extension.
pub(crate) fn mime(name: &str) -> &'static str {
    let extension = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match extension.as_str() {
        "html" | "htm" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript",
        "css" => "text/css",
        "wasm" => "application/wasm",
        "json" | "map" => "application/json",
        "webmanifest" => "application/manifest+json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "ico" => "image/x-icon",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "txt" | "md" => "text/plain; charset=utf-8",
        "pdf" => "application/pdf",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mime_types_by_extension() {
        assert_eq!(mime("index.html"), "text/html; charset=utf-8");
        assert_eq!(mime("app.MJS"), "text/javascript");
        assert_eq!(mime("edgerag_wasm_bg.wasm"), "application/wasm");
        assert_eq!(mime("app.js.map"), "application/json");
        assert_eq!(mime("README"), "application/octet-stream");
        assert_eq!(mime("demo.bundle"), "application/octet-stream");
    }

    #[test]
    fn a_file_that_cannot_be_opened_is_missing_only_if_it_is_not_there() {
        let status = |error: io::Error| unopened(&error).status;
        assert_eq!(status(ErrorKind::NotFound.into()), 404);
        assert_eq!(status(ErrorKind::PermissionDenied.into()), 404);
        assert_eq!(status(ErrorKind::IsADirectory.into()), 404);
        assert_eq!(status(io::Error::other("a disk error")), 500);
        #[cfg(unix)]
        for code in [libc::EMFILE, libc::ENFILE] {
            let reply = unopened(&io::Error::from_raw_os_error(code));
            assert_eq!(reply.status, 503, "{code}");
            assert!(reply.headers.iter().any(|(name, _)| *name == "Retry-After"), "{code}");
        }
    }

    #[test]
    fn paths_stay_inside_the_site() {
        let dir = tempfile::tempdir().unwrap();
        let site_dir = dir.path().join("site");
        fs::create_dir_all(site_dir.join("sub")).unwrap();
        fs::write(site_dir.join("index.html"), "<p>hi</p>").unwrap();
        fs::write(site_dir.join("sub/index.html"), "<p>sub</p>").unwrap();
        fs::write(site_dir.join(".secret"), "no").unwrap();
        fs::write(dir.path().join("outside.txt"), "no").unwrap();
        let site = Site::open(&site_dir).unwrap();
        let root = &site.root;
        assert_eq!(site.locate("/"), Found::File(root.join("index.html")));
        assert_eq!(site.locate("//index.html"), Found::File(root.join("index.html")));
        assert_eq!(site.locate("/sub/"), Found::File(root.join("sub/index.html")));
        assert_eq!(site.locate("/sub"), Found::Redirect("/sub/".to_owned()));
        assert_eq!(site.locate("/index.html/"), Found::Missing);
        assert_eq!(site.locate("/../outside.txt"), Found::Missing);
        assert_eq!(site.locate("/sub/../../outside.txt"), Found::Missing);
        assert_eq!(site.locate("/.secret"), Found::Missing);
        assert_eq!(site.locate("/missing.js"), Found::Missing);
        #[cfg(unix)]
        {
            use std::os::unix::fs::symlink;
            symlink(dir.path().join("outside.txt"), site_dir.join("escape.txt")).unwrap();
            assert_eq!(site.locate("/escape.txt"), Found::Missing);
            fs::create_dir_all(site_dir.join(".git")).unwrap();
            fs::write(site_dir.join(".git/config"), "[remote]").unwrap();
            symlink(".git/config", site_dir.join("config.txt")).unwrap();
            symlink(".git", site_dir.join("git")).unwrap();
            symlink(".secret", site_dir.join("secret.txt")).unwrap();
            symlink("sub/index.html", site_dir.join("page.html")).unwrap();
            symlink("sub", site_dir.join("pages")).unwrap();
            assert_eq!(site.locate("/config.txt"), Found::Missing);
            assert_eq!(site.locate("/git/config"), Found::Missing);
            assert_eq!(site.locate("/git/"), Found::Missing);
            assert_eq!(site.locate("/secret.txt"), Found::Missing);
            assert_eq!(site.locate("/page.html"), Found::File(root.join("sub/index.html")));
            assert_eq!(site.locate("/pages/"), Found::File(root.join("sub/index.html")));
        }
    }
}
