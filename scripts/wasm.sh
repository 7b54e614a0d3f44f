#!/usr/bin/env bash
# Builds crates for wasm32-unknown-unknown with SIMD128: `scripts/wasm.sh [cargo build args...]`,
# then prints the raw and gzipped size of every .wasm produced.
#
# Uses rustup's wasm32 target where it is installed (a normal laptop); otherwise Debian's
# rustc-web + rust-web-src with -Zbuild-std (machines whose rustup cannot download the target).
# This script is the only place that choice is made. Outputs go under $CARGO_TARGET_DIR
# (default ~/.cache/edgerag/target), one subdirectory per toolchain, so repeated builds and CI
# runs on the same machine reuse them.
set -euo pipefail
cd "$(dirname "$0")/.."

root="${CARGO_TARGET_DIR:-$HOME/.cache/edgerag/target}"
target=wasm32-unknown-unknown

if rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  export CARGO_TARGET_DIR="$root/wasm-rustup"
  cargo=(cargo)
else
  scripts/setup.sh wasm-debian
  export CARGO_TARGET_DIR="$root/wasm-debian"
  export PATH="/usr/bin:$PATH" RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1
  export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER=wasm-ld
  # Debian's rustc-web ships no prebuilt wasm32 std: build it from rust-web-src.
  cargo=(/usr/bin/cargo -Zbuild-std=std,panic_abort)
fi

"${cargo[@]}" build --target "$target" "$@"

profile=debug
args=("$@")
for i in "${!args[@]}"; do
  case "${args[$i]}" in
    --release) profile=release ;;
    --profile) profile="${args[$((i + 1))]}" ;;
    --profile=*) profile="${args[$i]#--profile=}" ;;
  esac
done
for wasm in "$CARGO_TARGET_DIR/$target/$profile"/*.wasm; do
  [ -e "$wasm" ] || continue
  raw=$(stat -c %s "$wasm")
  gz=$(gzip -9 -c "$wasm" | wc -c)
  printf 'wasm: %s  %d bytes, %d gzipped\n' "$wasm" "$raw" "$gz"
done
