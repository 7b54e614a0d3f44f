// Times the wasm embedder under Node for `edgerag-bench` (which writes this file to a temporary
// directory and runs it): `node wasm-embed.mjs INPUT.json`, INPUT = {pkg, model, texts, batches}
// with pkg the wasm-bindgen output for Node and model the model's directory (config.json,
// tokenizer.json, model.safetensors) or its quantized `.gguf` file. Per batch size: one warm-up call, then the time to
// embed every text, `batch` texts per call. Prints {load_seconds, batches: [{batch, seconds}],
// vector (of the first text), peak_rss_bytes} as JSON, as the peers in bench/ do.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { Model } = createRequire(import.meta.url)(join(input.pkg, "edgerag_wasm.js"));
const read = (name) => readFileSync(join(input.model, name));
const loadStart = process.hrtime.bigint();
const model = input.model.endsWith(".gguf")
  ? Model.fromGguf(readFileSync(input.model))
  : new Model(read("config.json"), read("tokenizer.json"), read("model.safetensors"));
const load_seconds = Number(process.hrtime.bigint() - loadStart) / 1e9;
const batches = input.batches.map((batch) => {
  model.embed(input.texts.slice(0, batch));
  const start = process.hrtime.bigint();
  for (let i = 0; i < input.texts.length; i += batch) {
    model.embed(input.texts.slice(i, i + batch));
  }
  return { batch, seconds: Number(process.hrtime.bigint() - start) / 1e9 };
});
const vector = Array.from(model.embed(input.texts.slice(0, 1)));
const peak_rss_bytes = process.resourceUsage().maxRSS * 1024;
process.stdout.write(JSON.stringify({ load_seconds, batches, vector, peak_rss_bytes }));
