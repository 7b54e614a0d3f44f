#!/usr/bin/env bash
# Runs the fuzz targets of fuzz/ (libFuzzer through cargo-fuzz) one after the other, each for
# the same time, and prints one line per target: seconds, executions, executions per second,
# corpus size and crashes, with the path of a crashing input. Exits non-zero when a target
# crashed (panic, sanitizer report, timeout, out-of-memory) or did not build. Ctrl-C stops the
# target running (its time still counts) and the ones after it.
#
#   scripts/fuzz.sh [--seconds N] [--record] [TARGET...]     (every target by default)
#
#   --seconds N  how long each target runs (default $FUZZ_SECONDS, else 600)
#   --record     append each run to docs/fuzzing.json and regenerate the fuzzing table of
#                docs/RELIABILITY.md from it (scripts/fuzz-report.py); `make fuzz` records,
#                `make test-fuzz` does not
#   --minimize   after each run, shrink the corpus to the inputs that keep its coverage
#                (libFuzzer's -merge=1), so that replaying it (all `make test-fuzz` does once
#                the corpus is large) stays short; `make fuzz` minimizes
#
# Everything persists under $FUZZ_DIR (default $EDGERAG_CACHE/fuzz, ~/.cache/edgerag/fuzz):
# target/ the instrumented builds (separate from the main CARGO_TARGET_DIR: their flags never
# rebuild it), corpus/TARGET/ the corpus (seeded on every run from the repository's fixtures
# and fuzz/seeds/TARGET, then grown by libFuzzer), artifacts/TARGET/ crashing inputs,
# logs/TARGET.log libFuzzer's output of the last run. FUZZ_SANITIZER=none builds in target-none/.
#
# Environment: FUZZ_SANITIZER (address, the default, or none), FUZZ_TIMEOUT (seconds one
# input may take before it counts as a hang, default 30), FUZZ_RSS_MB (memory limit, default
# 2048), FUZZ_ARGS (more libFuzzer flags), EDGERAG_CHAT_MODEL (the GGUF file of the
# chat_template target; default: the cached SmolLM2-135M-Instruct that `make models` fetches).
set -euo pipefail

# Everything is in main(), read whole before it runs: editing this file (or pulling) during a
# long run cannot change what the run does.
main() {
  root="$(cd "$(dirname "$0")/.." && pwd)"
  cache="${EDGERAG_CACHE:-$HOME/.cache/edgerag}"
  fuzz_dir="${FUZZ_DIR:-$cache/fuzz}"
  cargo_fuzz="$cache/tools/bin/cargo-fuzz"
  seconds="${FUZZ_SECONDS:-600}"
  sanitizer="${FUZZ_SANITIZER:-address}"
  record=0 minimize=0
  all_targets=(bundle paged searcher load_pdf load_html load_markdown load_text sse request_json chat_template
    serve_request)

  targets=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --seconds) [ $# -ge 2 ] || { echo "fuzz: --seconds takes a number" >&2; exit 2; }
        seconds="$2"; shift 2 ;;
      --record) record=1; shift ;;
      --minimize) minimize=1; shift ;;
      -*) echo "fuzz: unknown option $1" >&2; exit 2 ;;
      *) targets+=("$1"); shift ;;
    esac
  done
  [ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
  for target in "${targets[@]}"; do
    [[ " ${all_targets[*]} " == *" $target "* ]] ||
      { echo "fuzz: unknown target '$target' (targets: ${all_targets[*]})" >&2; exit 2; }
  done
  [[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: --seconds takes a positive integer" >&2; exit 2; }
  [ -x "$cargo_fuzz" ] || { echo "fuzz: cargo-fuzz is missing: run scripts/setup.sh fuzz" >&2; exit 1; }

  # Per target: the dictionary, the crate features, the largest input, the seed files.
  configure() {
    features="" max_len=65536 seeds=()
    case "$1" in
      bundle | searcher) dict=bundle; seeds=(core/tests/fixtures/*.bundle) ;;
      # Whole small bundles of format 4 (fuzz/seeds/paged/*-whole.bundle) fit in full.
      paged) dict=bundle; max_len=131072 ;;
      load_pdf) dict=pdf; max_len=262144; seeds=(core/tests/fixtures/*.pdf demo/corpus/*.pdf) ;;
      load_html) dict=html; max_len=131072; seeds=(core/tests/fixtures/*.html demo/corpus/*.html) ;;
      load_markdown) dict=markdown; seeds=(core/tests/fixtures/*.md demo/corpus/*.md) ;;
      load_text) dict=markdown; seeds=(core/tests/fixtures/*.txt core/tests/fixtures/*.md) ;;
      sse) dict=sse; max_len=16384 ;;
      request_json) dict=json; max_len=8192 ;;
      # The two that need edgerag-core's generation share one build (one set of features).
      chat_template) dict=chat; features=generate,serve; max_len=4096 ;;
      serve_request) dict=http; features=generate,serve; max_len=20480 ;;
    esac
    seeds+=("fuzz/seeds/$1"/*)
  }

  cd "$root"
  export RUSTC_BOOTSTRAP=1 # cargo-fuzz's -Z flags on a stable toolchain
  if [ "$(uname -s)" = Linux ] && [ "$(uname -m)" = x86_64 ]; then
    triple=x86_64-unknown-linux-gnu
  else
    triple="$(rustc -vV | sed -n 's/^host: //p')"
  fi
  # One build directory per sanitizer: switching would otherwise rebuild everything each time.
  target_dir="$fuzz_dir/target"
  [ "$sanitizer" = address ] || target_dir="$fuzz_dir/target-$sanitizer"
  bin_dir="$target_dir/$triple/release"
  chat_model="${EDGERAG_CHAT_MODEL:-$cache/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
  if [[ " ${targets[*]} " == *" chat_template "* ]] && [ ! -f "$chat_model" ]; then
    echo "fuzz: chat_template needs the chat model $chat_model: run make models (or set EDGERAG_CHAT_MODEL)" >&2
    exit 1
  fi

  # The lock file is committed: refuse to build if it would change (cargo-fuzz has no --locked).
  if ! cargo metadata --locked --offline --format-version 1 --manifest-path fuzz/Cargo.toml >/dev/null 2>&1 &&
    ! cargo metadata --locked --format-version 1 --manifest-path fuzz/Cargo.toml >/dev/null; then
    echo "fuzz: fuzz/Cargo.lock no longer matches what the fuzz crate builds (did edgerag-core's" \
      "dependencies change?): run cargo update --workspace --manifest-path fuzz/Cargo.toml" >&2
    exit 1
  fi

  failed=() interrupted=0
  # The code the builds are made of, recorded with each run (not what is checked out later).
  built_from="$(python3 scripts/fuzz-report.py source)"
  for target in "${targets[@]}"; do
    configure "$target"
    echo "fuzz: building $target (sanitizer $sanitizer${features:+, features $features})" >&2
    if ! "$cargo_fuzz" fuzz build --fuzz-dir fuzz --target-dir "$target_dir" \
      --sanitizer "$sanitizer" ${features:+--features "$features"} "$target"; then
      failed+=("$target (build)")
    fi
  done
  [ ${#failed[@]} -eq 0 ] || { echo "fuzz: build failed: ${failed[*]}" >&2; exit 1; }

  final_stat() { sed -n "s/^stat::$1: *//p" "$2" | tail -n 1; }
  summaries=()
  for target in "${targets[@]}"; do
    configure "$target"
    corpus="$fuzz_dir/corpus/$target" artifacts="$fuzz_dir/artifacts/$target" log="$fuzz_dir/logs/$target.log"
    mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
    for seed in "${seeds[@]}"; do
      [ -f "$seed" ] && cp -f "$seed" "$corpus/seed-$(basename "$seed")"
    done
    echo "fuzz: running $target for $seconds s (log: $log)" >&2
    start=$(date +%s)
    status=0
    # shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
    EDGERAG_CHAT_MODEL="$chat_model" "$bin_dir/$target" "$corpus" \
      -max_total_time="$seconds" -print_final_stats=1 -dict="fuzz/dict/$dict.dict" \
      -max_len="$max_len" -timeout="${FUZZ_TIMEOUT:-30}" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" \
      -artifact_prefix="$artifacts/" ${FUZZ_ARGS:-} >"$log" 2>&1 || status=$?
    elapsed=$(($(date +%s) - start))
    runs=$(final_stat number_of_executed_units "$log")
    speed=$(final_stat average_exec_per_sec "$log")
    size=$(find "$corpus" -type f | wc -l | tr -d ' ')
    artifact=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    crashes=0 interrupted=0
    if grep -q "libFuzzer: run interrupted" "$log"; then
      # Ctrl-C: the time fuzzed still counts; the remaining targets do not run.
      interrupted=1
      result="interrupted"
    elif [ "$status" -ne 0 ]; then
      crashes=1
      kind=$(grep -m 1 -oE 'panicked at [^ ]+|ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer): [a-z-]+' "$log" || true)
      echo "── $target: the end of $log ──" >&2
      tail -n 40 "$log" >&2
      result="CRASH (${kind:-exit $status}): ${artifact:-no input written}"
      [ -z "$artifact" ] || result+=" — reproduce: $bin_dir/$target $artifact"
      failed+=("$target")
    else
      result="0 crashes"
    fi
    if [ "$minimize" = 1 ] && [ "$crashes" = 0 ] && [ "$interrupted" = 0 ]; then
      merged="$corpus.merging"
      rm -rf "$merged" && mkdir -p "$merged"
      if EDGERAG_CHAT_MODEL="$chat_model" "$bin_dir/$target" -merge=1 "$merged" "$corpus" \
        -max_len="$max_len" -timeout="${FUZZ_TIMEOUT:-30}" -rss_limit_mb="${FUZZ_RSS_MB:-2048}" \
        >>"$log" 2>&1; then
        rm -rf "$corpus" && mv "$merged" "$corpus"
        size="$(find "$corpus" -type f | wc -l | tr -d ' ') (of $size)"
      else
        rm -rf "$merged"
        echo "fuzz: $target: minimizing the corpus failed (see $log); kept as it is" >&2
      fi
    fi
    summary="fuzz $target: ${elapsed} s, ${runs:-0} runs, ${speed:-0} exec/s, corpus $size inputs, $result"
    echo "$summary" >&2
    summaries+=("$summary")
    if [ "$record" = 1 ]; then
      python3 scripts/fuzz-report.py record --target "$target" --seconds "$elapsed" \
        --runs "${runs:-0}" --exec-per-sec "${speed:-0}" --corpus "${size%% *}" --crashes "$crashes" \
        --sanitizer "$sanitizer" --commit "$built_from"
    fi
    [ "$interrupted" = 0 ] || break
  done

  [ "$record" = 0 ] || python3 scripts/fuzz-report.py docs
  echo >&2
  printf '%s\n' "${summaries[@]}"
  if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzz: crashed: ${failed[*]} (inputs under $fuzz_dir/artifacts)" >&2
    exit 1
  fi
  [ "$interrupted" = 0 ] || exit 130
}

# On one line, so that bash has read the exit too before main runs.
main "$@"; exit
