//! Running the binary, and the fixtures it runs on.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `edgerag` with `args`.
pub(crate) fn edgerag(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_edgerag")).args(args).output().expect("run edgerag")
}

/// Runs `edgerag`, asserts success and parses stdout as JSON.
pub(crate) fn json(args: &[&str]) -> serde_json::Value {
    let out = edgerag(args);
    assert!(
        out.status.success(),
        "edgerag {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "edgerag {args:?}: stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// Asserts the run failed with exactly one line on stderr, and returns it.
pub(crate) fn one_error_line(out: &Output) -> String {
    assert!(!out.status.success(), "expected failure, got success");
    let stderr = String::from_utf8_lossy(&out.stderr).trim_end().to_owned();
    assert_eq!(stderr.lines().count(), 1, "stderr: {stderr}");
    assert!(stderr.starts_with("error: "), "stderr: {stderr}");
    stderr
}

/// The repository's demo corpus: Wikipedia articles (Markdown, HTML) and a PDF specification.
pub(crate) fn demo_corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../demo/corpus")
}

/// Builds the demo corpus (without embeddings) into `dir/demo.bundle` and returns its path.
pub(crate) fn demo_bundle(dir: &Path) -> PathBuf {
    let bundle = dir.join("demo.bundle");
    let corpus = demo_corpus();
    json(&["build", path(&corpus), "-o", path(&bundle), "--no-embed", "--json"]);
    bundle
}

/// `name` in the shared evaluation data (`../shared/data` beside the repository, or
/// `$EDGERAG_DATA`), if it is there.
pub(crate) fn shared_data(name: &str) -> Option<PathBuf> {
    let data = std::env::var_os("EDGERAG_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data"));
    let path = data.join(name);
    path.exists().then_some(path)
}

/// A path as `&str` (test paths are UTF-8).
pub(crate) fn path(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// A fixture of the core's tests (real documents).
pub(crate) fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../core/tests/fixtures").join(name)
}

/// Lower-case hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
