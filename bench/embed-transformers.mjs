// The transformers.js peer of `edgerag-bench`: all-MiniLM-L6-v2 through transformers.js on
// onnxruntime-web's wasm backend (SIMD, 1 thread) under Node, where transformers.js would
// otherwise use onnxruntime-node. edgerag-bench runs `node bench/embed-transformers.mjs
// INPUT.json`, with INPUT = {model, variant: "int8" | "f32", texts, batches}: `model` a directory
// in the transformers.js layout (config.json, tokenizer.json, tokenizer_config.json,
// onnx/model_quantized.onnx for dtype "q8", dynamically quantized with integer matrix products
// as the published "q8" models are, onnx/model.onnx for "fp32") that scripts/setup.sh bench
// assembles; nothing is fetched. Like edgerag's own wasm-embed.mjs, for each batch size it
// makes one warm-up call on the first `batch` texts, then times embedding every text, `batch` at
// a time: what the feature-extraction pipeline does with {pooling: "mean", normalize: true}, but
// truncating at 256 tokens as sentence-transformers does (the pipeline would use the tokenizer's
// 512). Prints one JSON object on stdout (what `main` returns, with the peak resident memory); on error, a message on stderr and
// exit code 1.
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import * as ort from "onnxruntime-web";
import { MAX_TOKENS, MODEL_FILES, packageVersion, readInput, run, timeBatches } from "./embed-common.mjs";

// transformers.js's dtype for each variant, and the file it then loads.
const DTYPES = { int8: "q8", f32: "fp32" };

async function main() {
  const input = readInput(process.argv[2], "embed-transformers.mjs");

  // transformers.js takes the ONNX Runtime found under this symbol instead of its own choice
  // (onnxruntime-node in Node), so it must be set before transformers.js is imported; and the
  // wasm files must come from that package, not from the CDN transformers.js would pick.
  ort.env.wasm.numThreads = 1; // SIMD is on by default (onnxruntime-web ships only SIMD builds)
  const ortDist = dirname(createRequire(import.meta.url).resolve("onnxruntime-web"));
  ort.env.wasm.wasmPaths = pathToFileURL(`${ortDist}/`).href;
  globalThis[Symbol.for("onnxruntime")] = ort;
  const { env, AutoTokenizer, AutoModel, mean_pooling } = await import("@huggingface/transformers");
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.useFSCache = false;
  env.useWasmCache = false;

  // A path that is not a Hub model id is read as is (env.localModelPath does not apply).
  const modelDir = resolve(input.model);
  // transformers.js reports a missing file obscurely: check first.
  const files = ["config.json", "tokenizer.json", "tokenizer_config.json", MODEL_FILES[input.variant]];
  for (const file of files.map((name) => join(modelDir, name))) {
    if (!existsSync(file)) throw new Error(`${file}: no such file`);
  }
  const loadStart = process.hrtime.bigint();
  const tokenizer = await AutoTokenizer.from_pretrained(modelDir);
  // With an ONNX Runtime of its own, transformers.js knows no devices: "auto" leaves the
  // execution providers to the session options.
  const model = await AutoModel.from_pretrained(modelDir, {
    device: "auto",
    dtype: DTYPES[input.variant],
    session_options: { executionProviders: ["wasm"] },
  });
  const loadSeconds = Number(process.hrtime.bigint() - loadStart) / 1e9;
  const sepId = tokenizer.sep_token_id;

  /** The normalised embeddings of `texts`, as a [texts.length, 384] Tensor. */
  async function embed(texts) {
    const inputs = tokenizer(texts, { padding: true, truncation: true, max_length: MAX_TOKENS });
    // transformers.js truncates by cutting the ids, dropping the final [SEP] the Python
    // tokenizers keep: put it back on every row that fills the window.
    const [rows, length] = inputs.input_ids.dims;
    if (length === MAX_TOKENS) {
      for (let r = 0; r < rows; r++) {
        const last = r * length + length - 1;
        if (inputs.attention_mask.data[last] === 1n) inputs.input_ids.data[last] = BigInt(sepId);
      }
    }
    const { last_hidden_state } = await model(inputs);
    return mean_pooling(last_hidden_state, inputs.attention_mask).normalize(2, -1);
  }

  const batches = await timeBatches(embed, input.texts, input.batches);
  const vector = (await embed(input.texts.slice(0, 1))).data;

  const ortVersion = packageVersion("onnxruntime-web");
  return {
    runtime: "transformers.js",
    version: packageVersion("@huggingface/transformers"),
    backend: `wasm, SIMD, ${ort.env.wasm.numThreads} thread (onnxruntime-web ${ortVersion})`,
    variant: input.variant,
    load_seconds: loadSeconds,
    batches,
    vector: Array.from(vector),
  };
}

run("embed-transformers.mjs", main);
