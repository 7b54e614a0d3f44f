#!/usr/bin/env bash
# Installs what the build and tests need, idempotently: `scripts/setup.sh STEP...`.
#   rust         checks cargo, rustfmt and clippy (adds the rustup components if missing)
#   wasm-debian  Debian's rustc-web toolchain for wasm32 (used when rustup lacks the target)
# Every step checks first and does nothing when its tools are present.
set -euo pipefail

apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null || { echo "setup: please install ${missing[*]}" >&2; exit 1; }
  echo "setup: installing ${missing[*]} (apt)" >&2
  local sudo=()
  [ "$(id -u)" -ne 0 ] && sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
}

rust() {
  command -v cargo >/dev/null || { echo "setup: cargo not found: install Rust (rustup)" >&2; exit 1; }
  for component in rustfmt clippy; do
    if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
      echo "setup: adding rustup component $component" >&2
      rustup component add "$component"
    fi
  done
}

for step in "$@"; do
  case "$step" in
    rust) rust ;;
    wasm-debian) apt_install rustc-web cargo-web rust-web-src lld binaryen ;;
    *) echo "setup: unknown step '$step'" >&2; exit 2 ;;
  esac
done
