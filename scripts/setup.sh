#!/usr/bin/env bash
# Installs what the build and tests need, idempotently: `scripts/setup.sh [what...]`.
#   wasm-debian  Debian's rustc-web toolchain for wasm32 (only when rustup lacks the target)
# Each step checks first and does nothing when its tools are present.
set -euo pipefail

apt_install() {
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]} (apt)" >&2
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

for what in "$@"; do
  case "$what" in
    wasm-debian) apt_install rustc-web cargo-web rust-web-src lld binaryen ;;
    *) echo "setup: unknown step '$what'" >&2; exit 2 ;;
  esac
done
