// Times the wasm module's search under Node for `edgerag-bench` (which writes this file to a
// temporary directory and runs it): `node wasm-search.mjs INPUT.json`, INPUT = {pkg, model,
// bundle, queries, modes} with pkg the wasm-bindgen output for Node, model the embedding
// model's directory and bundle a bundle file. Loads the model, then the bundle (timed: bytes to
// a ready runtime), then runs every query in every mode (10 results, embedding the query
// included: each mode starts with the runtime's caches empty). Prints {load_ms, memory_bytes,
// peak_rss_bytes, modes: [{mode, ms: [per query]}]} as JSON; memory_bytes is what loading the
// bundle added to the process's resident set.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { Edgerag, Model } = createRequire(import.meta.url)(join(input.pkg, "edgerag_wasm.js"));
const read = (name) => readFileSync(join(input.model, name));
const model = new Model(read("config.json"), read("tokenizer.json"), read("model.safetensors"));
const bytes = readFileSync(input.bundle);
globalThis.gc?.();
const rssBefore = process.memoryUsage().rss;
let start = performance.now();
const runtime = new Edgerag(bytes);
runtime.useModel(model);
const load_ms = performance.now() - start;
const memory_bytes = Math.max(0, process.memoryUsage().rss - rssBefore);
const modes = input.modes.map((mode) => {
  runtime.search(input.queries[0], { k: 10, mode });
  runtime.useModel(model); // drops the warm-up's cached query vector and rankings
  const ms = input.queries.map((query) => {
    start = performance.now();
    runtime.search(query, { k: 10, mode });
    return performance.now() - start;
  });
  return { mode, ms };
});
const peak_rss_bytes = process.resourceUsage().maxRSS * 1024;
process.stdout.write(JSON.stringify({ load_ms, memory_bytes, peak_rss_bytes, modes }));
