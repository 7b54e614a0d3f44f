// Parity of the wasm build with sentence-transformers: the real wasm module (built by
// `make wasm`, bound by wasm-bindgen for Node) embeds the reference sentences, one at a time
// and in one batch, and every vector must match the reference at cosine >= 0.999; so must the
// q8_0 model (`edgerag models quantize`, loaded with `Model.fromGguf`), whose vectors are
// moreover the native build's to the last bits.
// Run by `make test-wasm`: node --test wasm/tests/
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createRequire } from "node:module";
import { cli } from "./support.mjs";

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

function check(vectors, model) {
  const dim = model.dimension;
  assert.equal(dim, 384);
  assert.equal(vectors.length, sentences.length * dim);
  sentences.forEach((s, i) => {
    const c = cosine(vectors.subarray(i * dim, (i + 1) * dim), s.vector);
    assert.ok(c >= 0.999, `cosine ${c} for: ${s.text.slice(0, 60)}`);
  });
}

test(`wasm batch of ${sentences.length} matches sentence-transformers`, () => {
  check(model.embed(sentences.map((s) => s.text)), model);
});

test("wasm one-by-one matches sentence-transformers", () => {
  const dim = model.dimension;
  const out = new Float32Array(sentences.length * dim);
  sentences.forEach((s, i) => out.set(model.embed([s.text]), i * dim));
  check(out, model);
});

test("the q8_0 model (integer matrix products) matches sentence-transformers, batched or not", () => {
  // The file `edgerag models quantize` writes natively, loaded from its bytes.
  const dir = mkdtempSync(join(tmpdir(), "edgerag-q8-"));
  try {
    const file = join(dir, "minilm-q8_0.gguf");
    assert.equal(cli("models", "quantize", "-o", file).path, file);
    const q8 = Model.fromGguf(readFileSync(file));
    assert.equal(q8.id, model.id, "the same model id: either searches the other's bundles");
    const texts = sentences.map((s) => s.text);
    const batched = q8.embed(texts);
    check(batched, q8);
    // Attention sums over a text's own tokens: the same bits batched or alone.
    const dim = q8.dimension;
    texts.forEach((text, i) => {
      assert.deepEqual(q8.embed([text]), batched.subarray(i * dim, (i + 1) * dim), "batched and alone differ");
    });
    // The native build's integer products and attention compute the same bits; candle's layer
    // norm and sums use each architecture's own vector code, so components may differ in
    // their last bits, never more.
    const native = Float32Array.from(cli("embed", "--model", file, ...texts).vectors.flat());
    assert.equal(native.length, batched.length);
    const largest = native.reduce((m, x, i) => Math.max(m, Math.abs(x - batched[i])), 0);
    assert.ok(largest < 1e-6, `wasm and native differ by ${largest}`);
    assert.throws(() => Model.fromGguf(readFileSync(file).subarray(0, 1000)), /GGUF/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("wasm errors surface as exceptions, not crashes", () => {
  assert.throws(() => new Model(new Uint8Array([1, 2]), new Uint8Array(), new Uint8Array()), /config\.json/);
});
