//! `edgerag-bench --chat-model`: a local chat model's prompt processing and generation speed,
//! natively and (with `--wasm-pkg`) in wasm under Node, on the same prompt, and the memory
//! each needs.

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use edgerag_cli::output;
use edgerag_core::generate::{GenerateOptions, LocalModel};
use edgerag_core::llm::Message;
use serde::{Deserialize, Serialize};

use crate::synthetic;

/// The local chat model's speed and memory, per platform.
#[derive(Debug, Serialize)]
pub(super) struct ChatReport {
    model: String,
    prompt_tokens: usize,
    native: ChatSpeed,
    wasm: Option<ChatSpeed>,
    /// Why wasm was not measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    wasm_skipped: Option<String>,
}

/// Speeds on one platform.
#[derive(Debug, Serialize)]
pub(super) struct ChatSpeed {
    load_seconds: f64,
    prompt_tokens_per_second: f64,
    generated_tokens: usize,
    generation_tokens_per_second: f64,
    /// Peak resident memory of the process (natively: measured before anything else runs).
    peak_memory_bytes: u64,
}

/// One timed generation.
#[derive(Debug, Deserialize)]
struct Run {
    prompt_tokens: usize,
    completion_tokens: usize,
    seconds: f64,
}

/// What the wasm timing script prints.
#[derive(Debug, Deserialize)]
struct WasmRun {
    load_seconds: f64,
    prompt: Run,
    full: Run,
    memory_bytes: u64,
}

impl ChatSpeed {
    /// Speeds from the prompt alone (one token generated) and the prompt with a reply.
    fn of(load_seconds: f64, prompt: &Run, full: &Run, peak_memory_bytes: u64) -> Self {
        let generated = full.completion_tokens.saturating_sub(prompt.completion_tokens);
        let generating = (full.seconds - prompt.seconds).max(f64::EPSILON);
        Self {
            load_seconds,
            prompt_tokens_per_second: prompt.prompt_tokens as f64
                / prompt.seconds.max(f64::EPSILON),
            generated_tokens: generated,
            generation_tokens_per_second: generated as f64 / generating,
            peak_memory_bytes,
        }
    }
}

/// Measures the chat model `path` (or the default one) on a prompt of about `prompt_tokens`
/// tokens, generating up to `generate` tokens.
pub(super) fn measure(
    path: Option<&Path>,
    prompt_tokens: usize,
    generate: u32,
    wasm_pkg: Option<&Path>,
    quiet: bool,
) -> Result<ChatReport> {
    let (path, _, bytes) = edgerag_cli::models::chat::resolve(path, quiet)?;
    let bar = output::progress(3, "chat model (native)", quiet);
    let start = Instant::now();
    let model = edgerag_cli::models::chat::open(&path, &bytes)?;
    let load_seconds = start.elapsed().as_secs_f64();
    drop(bytes);
    bar.inc(1);
    let content = prompt_of(&model, prompt_tokens)?;
    let messages = [Message::user(&content)];
    let run = |max_tokens: u32| -> Result<Run> {
        let start = Instant::now();
        let options = GenerateOptions { max_tokens, ..GenerateOptions::default() };
        let reply = model.generate(&messages, &options, None)?;
        let seconds = start.elapsed().as_secs_f64();
        Ok(Run {
            prompt_tokens: reply.prompt_tokens,
            completion_tokens: reply.completion_tokens,
            seconds,
        })
    };
    let prompt = run(1)?;
    bar.inc(1);
    let full = run(generate)?;
    bar.finish_and_clear();
    let native = ChatSpeed::of(
        load_seconds,
        &prompt,
        &full,
        crate::machine::proc_bytes("/proc/self/status", "VmHWM"),
    );
    let (wasm, wasm_skipped) = match wasm_pkg {
        None => (None, Some(crate::script::WASM_SKIPPED.to_owned())),
        Some(pkg) => {
            let bar = output::progress(1, "chat model (wasm)", quiet);
            let timed = wasm_run(pkg, &path, &content, generate)?;
            bar.finish_and_clear();
            let speed =
                ChatSpeed::of(timed.load_seconds, &timed.prompt, &timed.full, timed.memory_bytes);
            (Some(speed), None)
        }
    };
    Ok(ChatReport {
        model: model.name().to_owned(),
        prompt_tokens: prompt.prompt_tokens,
        native,
        wasm,
        wasm_skipped,
    })
}

/// A request to summarise synthetic text, its rendered prompt at most `tokens` tokens long
/// (short of it by a few words at most).
fn prompt_of(model: &LocalModel, tokens: usize) -> Result<String> {
    let ask = "Summarise the text above in three sentences.";
    let text = synthetic::corpus(tokens / 8 + 1, 0, crate::SEED).texts.join(" ");
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut content = String::new();
    for group in words.chunks(8) {
        let longer = format!("{content}{} ", group.join(" "));
        let rendered = model.prompt(&[Message::user(format!("{longer}\n\n{ask}"))])?;
        if model.encode(&rendered)?.len() > tokens {
            break;
        }
        content = longer;
    }
    Ok(format!("{content}\n\n{ask}"))
}

/// Times the wasm chat model under Node (see `wasm-chat.mjs`).
fn wasm_run(pkg: &Path, model: &Path, content: &str, generate: u32) -> Result<WasmRun> {
    let input = serde_json::json!({
        "model": crate::script::absolute(model), "content": content, "generate": generate,
    });
    let script = ("wasm-chat.mjs", include_str!("wasm-chat.mjs"));
    crate::script::run_wasm(pkg, script, input, "the wasm chat model")
}

/// The section of the Markdown report.
pub(super) fn markdown(report: &ChatReport) -> String {
    use crate::format::{bytes, table};
    let row = |name: &str, s: &ChatSpeed| {
        vec![
            name.to_owned(),
            format!("{:.1} tokens/s", s.prompt_tokens_per_second),
            format!(
                "{:.1} tokens/s ({} tokens)",
                s.generation_tokens_per_second, s.generated_tokens
            ),
            format!("{:.1} s", s.load_seconds),
            bytes(s.peak_memory_bytes as f64),
        ]
    };
    let mut rows = vec![row("native", &report.native)];
    if let Some(wasm) = &report.wasm {
        rows.push(row("wasm32 + simd128 under Node (1 thread)", wasm));
    }
    let mut out = format!(
        "## Local generation ({})\n\nA {}-token prompt, greedy; memory is the process's peak \
         resident set (natively measured before anything else ran).\n\n",
        report.model, report.prompt_tokens
    );
    out.push_str(&table(&["platform", "prompt", "generation", "load", "peak memory"], &rows));
    if let Some(why) = &report.wasm_skipped {
        out.push_str(&format!("\nwasm not measured: {why}.\n"));
    }
    out
}
