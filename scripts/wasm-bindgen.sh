#!/usr/bin/env bash
# Generates JS bindings for the wasm crate built by scripts/wasm.sh:
# `scripts/wasm-bindgen.sh PROFILE TARGET OUT_DIR` (TARGET: nodejs, web, …).
set -euo pipefail
profile="$1" target="$2" out="$3"
root="${CARGO_TARGET_DIR:-$HOME/.cache/edgerag/target}"
tools="${EDGERAG_CACHE:-$HOME/.cache/edgerag}/tools"
wasm=$(ls -t "$root"/wasm-*/wasm32-unknown-unknown/"$profile"/edgerag_wasm.wasm | head -1)
"$tools/bin/wasm-bindgen" --target "$target" --out-dir "$out" "$wasm"
echo "wasm-bindgen: $wasm -> $out ($target)"
