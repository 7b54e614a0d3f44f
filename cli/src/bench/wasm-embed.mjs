// Times the wasm embedder under Node for `edgerag bench` (which writes this file to a temporary
// directory and runs it): `node wasm-embed.mjs INPUT.json`, INPUT = {pkg, model, texts, batches}
// with pkg the wasm-bindgen output for Node. Prints [{batch, seconds}] as JSON: the time to
// embed every text, `batch` texts per call, after one warm-up call.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { Model } = createRequire(import.meta.url)(join(input.pkg, "edgerag_wasm.js"));
const read = (name) => readFileSync(join(input.model, name));
const model = new Model(read("config.json"), read("tokenizer.json"), read("model.safetensors"));
const results = input.batches.map((batch) => {
  model.embed(input.texts.slice(0, batch));
  const start = process.hrtime.bigint();
  for (let i = 0; i < input.texts.length; i += batch) {
    model.embed(input.texts.slice(i, i + batch));
  }
  return { batch, seconds: Number(process.hrtime.bigint() - start) / 1e9 };
});
process.stdout.write(JSON.stringify(results));
