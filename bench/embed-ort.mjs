// The onnxruntime-web peer of `edgerag-bench`: all-MiniLM-L6-v2 on onnxruntime-web's wasm backend
// (SIMD, 1 thread) under Node, with the tokenizer of @huggingface/tokenizers (the one
// transformers.js uses). edgerag-bench runs `node bench/embed-ort.mjs INPUT.json`, with
// INPUT = {model, variant: "int8" | "f32", texts, batches}: `model` a directory in the
// transformers.js layout (tokenizer.json, tokenizer_config.json, onnx/model_quantized.onnx for
// int8, dynamically quantized with integer matrix products like transformers.js's "q8",
// onnx/model.onnx for f32) that scripts/setup.sh bench assembles. Like edgerag's own
// wasm-embed.mjs, for each batch size it makes one warm-up call on the first `batch` texts, then
// times embedding every text, `batch` at a time: tokenization (truncated at 256 tokens, as
// sentence-transformers does), inference, mean pooling and L2 normalisation. Prints one JSON
// object on stdout (what `main` returns, with the peak resident memory); on error, a message on stderr and exit code 1.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as ort from "onnxruntime-web";
import { Tokenizer } from "@huggingface/tokenizers";
import { MAX_TOKENS, MODEL_FILES, packageVersion, readInput, run, timeBatches } from "./embed-common.mjs";

/** Token ids, truncated as the Python tokenizers do: [CLS] text… [SEP], MAX_TOKENS in all. */
function tokenize(tokenizer, text) {
  const ids = tokenizer.encode(text).ids;
  return ids.length <= MAX_TOKENS ? ids : [...ids.slice(0, MAX_TOKENS - 1), ids[ids.length - 1]];
}

/** The normalised embeddings of `texts`, padded to the longest of them, one Float32Array each. */
async function embed(session, tokenizer, padId, texts) {
  const encoded = texts.map((text) => tokenize(tokenizer, text));
  const rows = texts.length;
  const length = Math.max(...encoded.map((ids) => ids.length));
  const ids = new BigInt64Array(rows * length).fill(BigInt(padId));
  const mask = new BigInt64Array(rows * length);
  encoded.forEach((row, r) =>
    row.forEach((id, i) => {
      ids[r * length + i] = BigInt(id);
      mask[r * length + i] = 1n;
    }),
  );
  const shape = [rows, length];
  const output = await session.run({
    input_ids: new ort.Tensor("int64", ids, shape),
    attention_mask: new ort.Tensor("int64", mask, shape),
    token_type_ids: new ort.Tensor("int64", new BigInt64Array(rows * length), shape),
  });
  const hidden = output.last_hidden_state;
  const dim = hidden.dims[2];
  const states = hidden.data;
  return encoded.map((row, r) => {
    // Mean over the row's real tokens, then L2 normalisation.
    const vector = new Float32Array(dim);
    for (let i = 0; i < row.length; i++) {
      const offset = (r * length + i) * dim;
      for (let d = 0; d < dim; d++) vector[d] += states[offset + d];
    }
    let norm = 0;
    for (let d = 0; d < dim; d++) norm += (vector[d] /= row.length) ** 2;
    norm = Math.max(Math.sqrt(norm), 1e-12);
    return vector.map((x) => x / norm);
  });
}

async function main() {
  const input = readInput(process.argv[2], "embed-ort.mjs");
  ort.env.wasm.numThreads = 1; // SIMD is on by default (onnxruntime-web ships only SIMD builds)

  const loadStart = process.hrtime.bigint();
  const readJson = (name) => JSON.parse(readFileSync(join(input.model, name), "utf8"));
  const tokenizerConfig = readJson("tokenizer_config.json");
  const tokenizer = new Tokenizer(readJson("tokenizer.json"), tokenizerConfig);
  const padId = tokenizer.token_to_id(tokenizerConfig.pad_token ?? "[PAD]") ?? 0;
  const onnx = readFileSync(join(input.model, MODEL_FILES[input.variant]));
  const session = await ort.InferenceSession.create(onnx, { executionProviders: ["wasm"] });
  const loadSeconds = Number(process.hrtime.bigint() - loadStart) / 1e9;

  const embedTexts = (texts) => embed(session, tokenizer, padId, texts);
  const batches = await timeBatches(embedTexts, input.texts, input.batches);
  const [vector] = await embed(session, tokenizer, padId, input.texts.slice(0, 1));

  return {
    runtime: "onnxruntime-web",
    version: packageVersion("onnxruntime-web"),
    backend: `wasm, SIMD, ${ort.env.wasm.numThreads} thread`,
    variant: input.variant,
    load_seconds: loadSeconds,
    batches,
    vector: Array.from(vector),
  };
}

run("embed-ort.mjs", main);
