// What the embedding peers of `edgerag-bench` (embed-ort.mjs, embed-transformers.mjs) share:
// reading INPUT.json, the model's files, the timing loop (as edgerag's own wasm-embed.mjs
// times: per batch size one warm-up call, then every text, `batch` at a time), the report
// printed on stdout and the installed packages' versions.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

/** all-MiniLM-L6-v2's max_seq_length in sentence-transformers. */
export const MAX_TOKENS = 256;
/** The ONNX file of each variant, in the transformers.js layout. */
export const MODEL_FILES = { int8: "onnx/model_quantized.onnx", f32: "onnx/model.onnx" };

/** The version in the package.json of the installed package `name`. */
export function packageVersion(name) {
  let dir = dirname(createRequire(import.meta.url).resolve(name));
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      if (manifest.name === name) return manifest.version;
    } catch {
      // no package.json here: look further up
    }
    if (dir === dirname(dir)) throw new Error(`cannot find the package.json of ${name}`);
    dir = dirname(dir);
  }
}

/** Reads and checks INPUT.json = {model, variant, texts, batches}. */
export function readInput(path, script) {
  if (!path) throw new Error(`usage: node ${script} INPUT.json`);
  const input = JSON.parse(readFileSync(path, "utf8"));
  if (typeof input.model !== "string") throw new Error("input: `model` must be a directory");
  if (!(input.variant in MODEL_FILES)) {
    throw new Error(`input: unknown variant ${JSON.stringify(input.variant)}`);
  }
  const { texts } = input;
  if (!Array.isArray(texts) || texts.length === 0 || !texts.every((t) => typeof t === "string")) {
    throw new Error("input: `texts` must be a non-empty array of strings");
  }
  if (!Array.isArray(input.batches) || !input.batches.every((b) => Number.isInteger(b) && b > 0)) {
    throw new Error("input: `batches` must be an array of positive integers");
  }
  return input;
}

/** Seconds to embed every text `batch` at a time, per batch size, after one warm-up call. */
export async function timeBatches(embed, texts, sizes) {
  const batches = [];
  for (const batch of sizes) {
    await embed(texts.slice(0, batch));
    const start = process.hrtime.bigint();
    for (let i = 0; i < texts.length; i += batch) {
      await embed(texts.slice(i, i + batch));
    }
    batches.push({ batch, seconds: Number(process.hrtime.bigint() - start) / 1e9 });
  }
  return batches;
}

/** Runs `main`, printing its report as one line of JSON, or its error on stderr (exit 1). */
export function run(script, main) {
  // stdout carries only the result: route any library logging to stderr.
  console.log = console.info = console.debug = console.error;
  main().then(
    (report) => {
      report.peak_rss_bytes = process.resourceUsage().maxRSS * 1024;
      process.stdout.write(`${JSON.stringify(report)}\n`);
    },
    (error) => {
      process.stderr.write(`${script}: ${error?.message ?? error}\n`);
      process.exit(1);
    },
  );
}
