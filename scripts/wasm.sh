#!/usr/bin/env bash
# Builds crates for wasm32-unknown-unknown with SIMD128: `scripts/wasm.sh [cargo args...]`.
#
# Uses rustup's wasm32 target where it is installed (a normal laptop); otherwise Debian's
# rustc-web + rust-web-src with -Zbuild-std (machines whose rustup cannot download the target).
# This is the only place that choice is made. Build outputs go to a persistent directory outside
# the clone so repeated builds (and CI on the same machine) reuse them.
set -euo pipefail
cd "$(dirname "$0")/.."

cache="${EDGERAG_CACHE:-$HOME/.cache/edgerag}"
profile_args=("$@")

if rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target-wasm-rustup}"
  exec cargo build --target wasm32-unknown-unknown "${profile_args[@]}"
fi

scripts/setup.sh wasm-debian
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target-wasm-debian}"
export PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld
# Debian's rustc-web has no prebuilt wasm32 std: build it from rust-web-src.
exec /usr/bin/cargo build --target wasm32-unknown-unknown -Zbuild-std=std,panic_abort "${profile_args[@]}"
