//! Test helpers shared by the test binaries of `edgerag-cli` and `edgerag-bench` (which
//! includes this file by path): the output of a run, and the real data the runs read.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Asserts that `program args` succeeded, and parses its stdout as JSON.
pub(crate) fn json_of(program: &str, args: &[&str], out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{program} {args:?}: stdout is not JSON ({e}): {}",
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

/// The SciFact directory of the shared evaluation data.
pub(crate) fn scifact() -> Option<PathBuf> {
    shared_data("scifact")
}

/// A BEIR directory with the first `n` SciFact documents and the training queries whose
/// relevant documents are all among them (real data, small enough for a debug build).
pub(crate) fn scifact_slice(target: &Path, n: usize) -> Option<usize> {
    use std::io::{BufRead, BufReader};
    let source = scifact()?;
    let gz = std::fs::File::open(source.join("corpus.jsonl.gz")).unwrap();
    let lines: Vec<String> = BufReader::new(flate2::read::GzDecoder::new(gz))
        .lines()
        .take(n)
        .map(Result::unwrap)
        .collect();
    let ids: std::collections::HashSet<String> = lines
        .iter()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["_id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut corpus = flate2::write::GzEncoder::new(
        std::fs::File::create(target.join("corpus.jsonl.gz")).unwrap(),
        flate2::Compression::fast(),
    );
    for line in &lines {
        writeln!(corpus, "{line}").unwrap();
    }
    corpus.finish().unwrap();
    let qrels = std::fs::read_to_string(source.join("qrels/train.tsv")).unwrap();
    let mut kept = String::from("query-id\tcorpus-id\tscore\n");
    let mut queries = std::collections::HashSet::new();
    for line in qrels.lines().skip(1) {
        let fields: Vec<&str> = line.split('\t').collect();
        if ids.contains(fields[1]) {
            kept.push_str(line);
            kept.push('\n');
            queries.insert(fields[0].to_owned());
        }
    }
    std::fs::create_dir_all(target.join("qrels")).unwrap();
    std::fs::write(target.join("qrels/train.tsv"), kept).unwrap();
    std::fs::copy(source.join("queries.jsonl"), target.join("queries.jsonl")).unwrap();
    Some(queries.len())
}
