//! Running the harness, and the data it runs on.

use std::process::{Command, Output};

use crate::support::json_of;
pub(crate) use crate::support::{fixture, one_error_line, path, scifact_slice};

/// Runs `edgerag-bench` with `args`.
pub(crate) fn edgerag_bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_edgerag-bench"))
        .args(args)
        .output()
        .expect("run edgerag-bench")
}

/// Runs `edgerag-bench`, asserts success and parses stdout as JSON.
pub(crate) fn json(args: &[&str]) -> serde_json::Value {
    json_of("edgerag-bench", args, &edgerag_bench(args))
}
