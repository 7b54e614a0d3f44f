//! Running the binary, and the fixtures it runs on.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::json_of;
pub(crate) use crate::support::{fixture, one_error_line, path, shared_data};

/// Runs `edgerag` with `args`.
pub(crate) fn edgerag(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_edgerag")).args(args).output().expect("run edgerag")
}

/// Runs `edgerag`, asserts success and parses stdout as JSON.
pub(crate) fn json(args: &[&str]) -> serde_json::Value {
    json_of("edgerag", args, &edgerag(args))
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

/// Lower-case hex SHA-256 of `bytes`.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}
