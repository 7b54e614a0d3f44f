#!/usr/bin/env bash
# Installs what the build and tests need, idempotently: `scripts/setup.sh STEP...`.
#   rust         checks cargo, rustfmt and clippy (adds the rustup components if missing)
#   wasm-debian  Debian's rustc-web toolchain for wasm32 (used when rustup lacks the target)
#   wasm-bindgen the wasm-bindgen CLI at exactly the version in Cargo.lock, Node.js and wasm-opt
#   node         the npm workspace's packages (npm ci), reinstalled only when package-lock.json changes
#   browser      Debian's Chromium and ChromeDriver, for the browser tests
#   worker       wrangler, workerd and Node 22 (npm packages in worker/), to run the Worker locally
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

tools="${EDGERAG_CACHE:-$HOME/.cache/edgerag}/tools"

wasm_bindgen() {
  local version
  version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/[^0-9.]/, ""); print; exit }' \
    "$(dirname "$0")/../Cargo.lock")
  if ! "$tools/bin/wasm-bindgen" --version 2>/dev/null | grep -qx "wasm-bindgen $version"; then
    echo "setup: installing wasm-bindgen-cli $version into $tools" >&2
    # Not --locked: its lock file pins a webpki-roots release the registry no longer serves.
    CARGO_TARGET_DIR="$tools/target" cargo install --quiet --root "$tools" wasm-bindgen-cli --version "$version"
  fi
  command -v node >/dev/null || apt_install nodejs
  command -v wasm-opt >/dev/null || apt_install binaryen
}

# `npm ci` in the directory $1 (the repository root by default), only when its
# package-lock.json changed since the last install.
node_packages() {
  command -v npm >/dev/null || apt_install nodejs npm
  local dir stamp
  dir="$(cd "$(dirname "$0")/../${1:-.}" && pwd)"
  stamp="$dir/node_modules/.edgerag-package-lock.json"
  cmp -s "$dir/package-lock.json" "$stamp" && return 0
  echo "setup: installing the npm packages of $dir (npm ci)" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$dir/package-lock.json" "$stamp"
}

for step in "$@"; do
  case "$step" in
    rust) rust ;;
    wasm-debian) apt_install rustc-web cargo-web rust-web-src lld binaryen ;;
    wasm-bindgen) wasm_bindgen ;;
    node) node_packages ;;
    browser) apt_install chromium chromium-driver ;;
    worker) node_packages worker ;;
    *) echo "setup: unknown step '$step'" >&2; exit 2 ;;
  esac
done
