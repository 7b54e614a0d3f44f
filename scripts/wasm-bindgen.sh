#!/usr/bin/env bash
# Shrinks the module built by scripts/wasm.sh and generates its JS bindings:
# `scripts/wasm-bindgen.sh PROFILE TARGET OUT_DIR [CRATE [WASM_BINDGEN_ARGS...]]` (TARGET:
# nodejs, web, module, …; CRATE: the module's name, default edgerag_wasm).
#
# binaryen's wasm-opt runs before wasm-bindgen: Debian's binaryen (108) breaks the externref
# table that wasm-bindgen adds, so it must not see wasm-bindgen's output.
set -euo pipefail
profile="$1" target="$2" out="$3" crate="${4:-edgerag_wasm}"
shift $(($# < 4 ? $# : 4))
root="${CARGO_TARGET_DIR:-$HOME/.cache/edgerag/target}"
tools="${EDGERAG_CACHE:-$HOME/.cache/edgerag}/tools"
wasm=$(ls -t "$root"/wasm-*/wasm32-unknown-unknown/"$profile"/"$crate".wasm | head -1)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The features rustc enables for wasm32, and +simd128: binaryen must be told of them.
wasm-opt -Oz --strip-debug --strip-producers \
  --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
  --enable-mutable-globals --enable-multivalue --enable-reference-types \
  -o "$work/$crate.wasm" "$wasm"
"$tools/bin/wasm-bindgen" --target "$target" --out-dir "$out" "$@" "$work/$crate.wasm"
bound=$(ls "$out"/*_bg.wasm)
printf 'wasm: %s (%s)  %d bytes, %d gzipped\n' "$bound" "$target" \
  "$(stat -c %s "$bound")" "$(gzip -9 -c "$bound" | wc -c)"
