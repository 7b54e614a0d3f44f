#!/usr/bin/env bash
# Builds the Cloudflare Worker into worker/build/, the `main` of wrangler.toml, without
# worker-build and without downloading binaries: the crate for wasm32 (scripts/wasm.sh), then
# wasm-bindgen --target module (scripts/wasm-bindgen.sh, the wasm-bindgen CLI at
# Cargo.lock's version), wrapped by the entry module worker/js/shim.mjs. wrangler bundles it.
# Usage: scripts/worker.sh [PROFILE]  (default wasm-release)
set -euo pipefail
cd "$(dirname "$0")/.."
profile="${1:-wasm-release}"
scripts/wasm.sh --locked --profile "$profile" -p edgerag-worker
scripts/setup.sh wasm-bindgen

out=worker/build
staged=$(mktemp -d "worker/.build.XXXXXX")
trap 'rm -rf "$staged"' EXIT
scripts/wasm-bindgen.sh "$profile" module "$staged" edgerag_worker \
  --out-name index --no-typescript --experimental-reset-state-function --force-enable-abort-handler
# wasm-bindgen's module target imports the module as `import source m from "x.wasm"`;
# wrangler's bundler takes `import m from "x.wasm"` (a WebAssembly.Module).
sed -i 's/^import source /import /' "$staged/index.js"
cp worker/js/shim.mjs "$staged/shim.mjs"
rm -rf "$out"
mv "$staged" "$out"
trap - EXIT
# What the Workers size limits count: the script and its module, compressed.
printf 'worker: %s  %d bytes, %d gzipped (limit: 3 MB gzipped on the free plan, 10 MB paid)\n' \
  "$out" "$(cat "$out"/*.mjs "$out"/index.js "$out"/index_bg.wasm | wc -c)" \
  "$(tar -C "$out" -cf - . | gzip -9 | wc -c)"
