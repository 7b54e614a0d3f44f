#!/usr/bin/env bash
# Generates the JS bindings of the module built by scripts/wasm.sh, without its names and
# producers sections: `scripts/wasm-bindgen.sh PROFILE TARGET OUT_DIR [CRATE [WASM_BINDGEN_ARGS...]]`
# (TARGET: nodejs, web, module, …; CRATE: the module's name, default edgerag_wasm).
#
# No binaryen pass: `wasm-opt -Oz` made the module 7% smaller but 5% larger gzipped, and the
# quantized embedder about 15% slower (it undoes LLVM's inlining and unrolling of the kernels).
set -euo pipefail
profile="$1" target="$2" out="$3" crate="${4:-edgerag_wasm}"
shift $(($# < 4 ? $# : 4))
root="${CARGO_TARGET_DIR:-$HOME/.cache/edgerag/target}"
tools="${EDGERAG_CACHE:-$HOME/.cache/edgerag}/tools"
wasm=$(ls -t "$root"/wasm-*/wasm32-unknown-unknown/"$profile"/"$crate".wasm | head -1)

"$tools/bin/wasm-bindgen" --target "$target" --out-dir "$out" \
  --remove-name-section --remove-producers-section "$@" "$wasm"
bound=$(ls "$out"/*_bg.wasm)
printf 'wasm: %s (%s)  %d bytes, %d gzipped\n' "$bound" "$target" \
  "$(stat -c %s "$bound")" "$(gzip -9 -c "$bound" | wc -c)"
