#!/usr/bin/env bash
# Acceptance check: BM25 on SciFact (train queries) must reach nDCG@10 >= 0.64.
# `scripts/eval-check.sh EDGERAG_BINARY DATA_DIR`; skipped (with a notice) when DATA_DIR/scifact
# is absent, as on a clone without the shared evaluation data.
set -euo pipefail
edgerag="$1"
data="$2/scifact"
if [ ! -d "$data" ]; then
  echo "eval-check: skipped: $data not found (set EDGERAG_DATA to the shared data directory)"
  exit 0
fi
for mode in bm25 graph hybrid; do
  json=$("$edgerag" eval beir "$data" --split train --mode "$mode" --json)
  echo "eval-check: scifact train $mode: $(tr -d '\n ' <<<"$json")"
  if [ "$mode" = bm25 ]; then
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if r["ndcg@10"] >= 0.64 else 1)' "$json" \
      || { echo "eval-check: FAILED: BM25 nDCG@10 below 0.64" >&2; exit 1; }
  fi
done
echo "eval-check: 1 passed, 0 failed"
