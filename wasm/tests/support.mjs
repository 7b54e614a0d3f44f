// What the wasm tests share: the real wasm module (bound for Node by `make test-wasm`), the
// embedding model's files, the demo bundle and the native CLI, all named by environment
// variables the Makefile sets.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

/** The environment variable `name`, which must be set. */
export const env = (name) => {
  const value = process.env[name];
  assert.ok(value, `set ${name} (make test-wasm does)`);
  return value;
};

/** The wasm module's exports. */
export const wasm = createRequire(import.meta.url)(join(env("EDGERAG_WASM_PKG"), "edgerag_wasm.js"));

/** The repository's root. */
export const root = new URL("../../", import.meta.url).pathname;

/** The embedding model, loaded once. */
let model;
export function loadModel() {
  const dir = env("EDGERAG_MODEL_DIR");
  const file = (name) => readFileSync(join(dir, name));
  model ??= new wasm.Model(file("config.json"), file("tokenizer.json"), file("model.safetensors"));
  return model;
}

/** The demo bundle's bytes (built natively, with embeddings, by `make demo-bundle`). */
export const demoBundlePath = () => env("EDGERAG_BUNDLE");

/** Runs the native CLI with `--json` in the repository's root and returns its parsed output. */
export function cli(...args) {
  const out = execFileSync(env("EDGERAG_BIN"), [...args, "--json"], {
    cwd: root,
    encoding: "utf8",
    env: { ...process.env, EDGERAG_MODEL_DIR: env("EDGERAG_MODEL_DIR") },
    maxBuffer: 64 << 20,
  });
  return JSON.parse(out);
}

/** Reads a file of the repository. */
export const repoFile = (path) => readFileSync(join(root, path));
