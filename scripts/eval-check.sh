#!/usr/bin/env bash
# Acceptance check on real judged data: BM25 on SciFact (train queries) must reach
# nDCG@10 >= 0.64; every mode's scores are printed, and MuSiQue multi-hop recall too.
# `scripts/eval-check.sh EDGERAG_BINARY DATA_DIR`; skipped (with a notice) when DATA_DIR/scifact
# is absent, as on a clone without the shared evaluation data.
set -euo pipefail
edgerag="$1"
data="$2"
if [ ! -d "$data/scifact" ]; then
  echo "eval-check: skipped: $data/scifact not found (set EDGERAG_DATA to the shared data directory)"
  exit 0
fi
# Embedding SciFact takes ~20 CPU-minutes: the dense rows are measured by `make eval`.
bundle=$(mktemp --suffix=.bundle)
trap 'rm -f "$bundle"' EXIT
"$edgerag" eval beir "$data/scifact" --split train --mode all --no-embed --save-bundle "$bundle"
json=$("$edgerag" eval beir "$data/scifact" --split train --mode bm25 --bundle "$bundle" --json)
python3 -c 'import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if r["ndcg@10"] >= 0.64 else 1)' "$json" \
  || { echo "eval-check: FAILED: BM25 nDCG@10 below 0.64: $json" >&2; exit 1; }
if [ -d "$data/musique" ]; then
  "$edgerag" eval multihop "$data/musique" --mode all
fi
echo "eval-check: 1 passed, 0 failed"
