//! Running the benchmark's scripts: a program (`node`, `python3`) on a script and a JSON input
//! file, reading the one JSON value the script prints.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a wasm measurement was skipped.
pub(super) const WASM_SKIPPED: &str = "pass --wasm-pkg DIR (make bench does)";

/// Runs `command SCRIPT INPUT.json` with `input` written to INPUT.json, and parses what it
/// prints on stdout; `what` is measured, for errors.
pub(super) fn run<T: DeserializeOwned>(
    mut command: Command,
    script: &Path,
    input: &impl Serialize,
    what: &str,
) -> Result<T> {
    let dir = tempfile::tempdir()?;
    let input_file = dir.path().join("input.json");
    std::fs::write(&input_file, serde_json::to_vec(input)?)?;
    let program = command.get_program().to_string_lossy().into_owned();
    let out = command
        .arg(script)
        .arg(&input_file)
        .output()
        .with_context(|| format!("running {program} (needed to measure {what})"))?;
    if !out.status.success() {
        bail!("{what} failed under {program}: {}", String::from_utf8_lossy(&out.stderr).trim());
    }
    serde_json::from_slice(&out.stdout).with_context(|| format!("reading what {what} printed"))
}

/// Runs one of the benchmark's own Node scripts (`(file name, source)`, compiled in) on the
/// wasm module `pkg` with `input` (plus `pkg`).
pub(super) fn run_wasm<T: DeserializeOwned>(
    pkg: &Path,
    (name, source): (&str, &str),
    mut input: serde_json::Value,
    what: &str,
) -> Result<T> {
    if !pkg.join("edgerag_wasm.js").is_file() {
        bail!("{}: no edgerag_wasm.js (make the Node bindings with `make bench`)", pkg.display());
    }
    input["pkg"] = serde_json::json!(absolute(pkg));
    let dir = tempfile::tempdir()?;
    let script = dir.path().join(name);
    std::fs::write(&script, source)?;
    run(Command::new("node"), &script, &input, what)
}

/// Runs the peer script `bench/NAME` (`.mjs` under Node, `.py` under Python with the peers'
/// packages) on `input`.
pub(super) fn run_peer<T: DeserializeOwned>(
    peers: &crate::Peers,
    name: &str,
    input: &impl Serialize,
    what: &str,
) -> Result<T> {
    let command = if name.ends_with(".py") {
        let mut python = Command::new("python3");
        python.env("PYTHONPATH", &peers.python);
        python
    } else {
        Command::new("node")
    };
    run(command, &peers.dir.join(name), input, what)
}

/// The first line `program --version` prints ("" when it cannot run).
pub(super) fn version(program: &str) -> String {
    Command::new(program)
        .arg("--version")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").to_owned())
        .unwrap_or_default()
}

/// `path` made absolute (the scripts run elsewhere).
pub(super) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_owned())
}
