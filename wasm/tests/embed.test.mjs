// Parity of the wasm build with sentence-transformers: the real wasm module (built by
// `make wasm`, bound by wasm-bindgen for Node) embeds the reference sentences, one at a time
// and in one batch, and every vector must match the reference at cosine >= 0.999.
// Run by `make test-wasm`: node --test wasm/tests/
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createRequire } from "node:module";

const pkg = process.env.EDGERAG_WASM_PKG;
const modelDir = process.env.EDGERAG_MODEL_DIR;
assert.ok(pkg && modelDir, "set EDGERAG_WASM_PKG and EDGERAG_MODEL_DIR (make test-wasm does)");
const { Model } = createRequire(import.meta.url)(join(pkg, "edgerag_wasm.js"));

const reference = JSON.parse(
  readFileSync(new URL("../../core/tests/fixtures/minilm-reference.json", import.meta.url)),
);
// A spread of lengths (the long ones exercise truncation at 256 tokens), kept small for speed.
const sentences = reference.sentences.filter((_, i) => i % 4 === 0);
const model = new Model(
  readFileSync(join(modelDir, "config.json")),
  readFileSync(join(modelDir, "tokenizer.json")),
  readFileSync(join(modelDir, "model.safetensors")),
);

function cosine(a, b) {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

function check(vectors) {
  const dim = model.dimension;
  assert.equal(dim, 384);
  assert.equal(vectors.length, sentences.length * dim);
  sentences.forEach((s, i) => {
    const c = cosine(vectors.subarray(i * dim, (i + 1) * dim), s.vector);
    assert.ok(c >= 0.999, `cosine ${c} for: ${s.text.slice(0, 60)}`);
  });
}

test(`wasm batch of ${sentences.length} matches sentence-transformers`, () => {
  check(model.embed(sentences.map((s) => s.text)));
});

test("wasm one-by-one matches sentence-transformers", () => {
  const dim = model.dimension;
  const out = new Float32Array(sentences.length * dim);
  sentences.forEach((s, i) => out.set(model.embed([s.text]), i * dim));
  check(out);
});

test("wasm errors surface as exceptions, not crashes", () => {
  assert.throws(() => new Model(new Uint8Array([1, 2]), new Uint8Array(), new Uint8Array()), /config\.json/);
});
