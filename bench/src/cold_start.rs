//! Cold start in Chromium (`bench/cold-start.mjs`): from page load to ready and to the first
//! answer, with the bundle and the model uncached, then cached, `RUNS` times each; and the size
//! of the wasm module the site serves.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use edgerag_cli::output;
use serde::{Deserialize, Serialize};

use crate::{Peers, script};

/// Fresh profiles loaded (each uncached, then cached).
const RUNS: usize = 3;

/// What the script prints.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ColdStartReport {
    pub(super) browser: String,
    pub(super) question: String,
    pub(super) bundle_bytes: u64,
    pub(super) runs: Vec<ColdStart>,
    /// Measured here, not by the script.
    #[serde(default)]
    pub(super) module: ModuleSize,
}

/// The site's wasm module (`edgerag_wasm_bg.wasm`).
#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct ModuleSize {
    /// As served.
    pub(super) bytes: u64,
    /// Compressed with gzip at its highest level.
    pub(super) gzipped_bytes: u64,
}

impl ModuleSize {
    fn of_site(site: &Path) -> Result<Self> {
        let path = walkdir::WalkDir::new(site)
            .into_iter()
            .filter_map(std::result::Result::ok)
            .find(|entry| entry.file_name() == MODULE)
            .map(walkdir::DirEntry::into_path)
            .with_context(|| format!("no {MODULE} in {}: run make www", site.display()))?;
        let module = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gzip.write_all(&module).context("compressing the wasm module")?;
        let gzipped = gzip.finish().context("compressing the wasm module")?;
        Ok(Self { bytes: module.len() as u64, gzipped_bytes: gzipped.len() as u64 })
    }
}

/// The module's file name in the site.
const MODULE: &str = "edgerag_wasm_bg.wasm";

/// One page load.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct ColdStart {
    /// "uncached" or "cached".
    pub(super) cache: String,
    /// Navigation start to the model loaded and the question box enabled.
    pub(super) ready_ms: f64,
    /// Navigation start to the answer shown.
    pub(super) first_answer_ms: f64,
    /// Bytes of bundle and model files received over the network.
    pub(super) network_bytes: u64,
}

/// Serves `bundle` with the site `site` and times its cold start on `question`.
pub(super) fn measure(
    peers: &Peers,
    site: &Path,
    bundle: &Path,
    question: &str,
    quiet: bool,
) -> Result<ColdStartReport> {
    let edgerag = edgerag_binary()?;
    let input = serde_json::json!({
        "edgerag": edgerag, "bundle": script::absolute(bundle), "site": script::absolute(site),
        "question": question, "runs": RUNS,
    });
    let module = ModuleSize::of_site(site)?;
    let bar = output::progress(1, "cold start in Chromium", quiet);
    let report: ColdStartReport =
        script::run_peer(peers, "cold-start.mjs", &input, "the cold start in Chromium")?;
    bar.finish_and_clear();
    Ok(ColdStartReport { module, ..report })
}

/// The `edgerag` binary that serves the site: the one beside this harness (cargo builds both
/// into the same directory; `make bench` builds both).
pub(super) fn edgerag_binary() -> Result<PathBuf> {
    let harness = std::env::current_exe().context("locating edgerag-bench")?;
    let edgerag = harness.with_file_name(format!("edgerag{}", std::env::consts::EXE_SUFFIX));
    if !edgerag.is_file() {
        bail!(
            "{} is missing: the benchmark serves files with it (cargo build --release -p edgerag-cli)",
            edgerag.display()
        );
    }
    Ok(edgerag)
}

/// The section of the Markdown report.
pub(super) fn markdown(r: &ColdStartReport) -> String {
    use crate::format::{bytes, median, ms, table, thousands};
    let rows: Vec<Vec<String>> = ["uncached", "cached"]
        .iter()
        .map(|&cache| {
            let runs: Vec<&ColdStart> = r.runs.iter().filter(|run| run.cache == cache).collect();
            vec![
                cache.to_owned(),
                format!("{}", runs.len()),
                ms(median(runs.iter().map(|run| run.ready_ms))),
                ms(median(runs.iter().map(|run| run.first_answer_ms))),
                bytes(median(runs.iter().map(|run| run.network_bytes as f64))),
            ]
        })
        .collect();
    let mut out = format!(
        "## Cold start in the browser\n\nThe demo site served by `edgerag serve` in headless {}: \
         from navigation start to the bundle ({}) and the embedding model loaded, and to the \
         extractive answer to \"{}\" shown. Uncached is a fresh profile; cached is a reload, the \
         bundle and the model coming from Cache Storage. Medians of the runs.\n\n",
        r.browser,
        bytes(r.bundle_bytes as f64),
        r.question
    );
    let header =
        ["load", "runs", "ready to ask", "first answer", "bundle and model over the network"];
    out.push_str(&table(&header, &rows));
    out.push_str(&format!(
        "\nThe wasm module the site serves (`{MODULE}`): {} bytes, {} gzipped \
         (level 9).\n",
        thousands(r.module.bytes),
        thousands(r.module.gzipped_bytes)
    ));
    out
}
