#!/usr/bin/env python3
"""BM25 peers of `edgerag-bench`: bm25s and tantivy (its PyPI wheel embeds the Rust crate).

`edgerag-bench` runs this script as a subprocess, with the packages of bench/requirements.txt on
PYTHONPATH:

    python3 bench/bm25_peers.py INPUT.json

INPUT = {"docs":    [{"id": str, "text": str, "terms": [str, ...]}, ...],
         "queries": [{"id": str, "text": str, "terms": [str, ...]}, ...],
         "k": 100, "k1": 0.9, "b": 0.4}

`terms` is edgerag's own analyzer output for `text` (lower-cased, stop words removed, stemmed).
Four runs, each building its index and then answering every query single-threaded:

  1. bm25s with its own tokeniser, BM25 method="lucene" with INPUT's k1 and b;
  2. bm25s on edgerag's terms, same parameters;
  3. tantivy with its stock "en_stem" analyzer (tantivy's BM25 is fixed at k1 = 1.2, b = 0.75);
  4. tantivy on edgerag's terms (joined by spaces, "whitespace" tokenizer), same fixed BM25.

Queries are never given to a query parser: they are ORs of term queries over the analyzer's
tokens (or over edgerag's terms), so words such as AND/OR and punctuation mean nothing special.
A term repeated in a query counts once per occurrence in every run, as in edgerag's own search
and bm25s (tantivy's query parser would keep it once).

Prints one JSON object on stdout:
  {"python": "3.x.y", "peak_rss_bytes": int, "runs": [RUN, ...]} with
  RUN = {"system", "version", "tokenisation", "k1", "b", "index_seconds", "queries_per_second",
         ["queries_per_second_batched",] "rankings": {query_id: [doc id, ...best first, up to k]}}.
Only documents that match at least one query term are ranked; a query without terms gets [].
edgerag-bench computes the quality metrics from the rankings itself. On error: message on
stderr, exit status 1.
"""
import contextlib
import json
import platform
import resource
import sys
import time
from importlib.metadata import version

import bm25s
import Stemmer
import tantivy
from tantivy import Filter, Occur, Query, TextAnalyzerBuilder, Tokenizer

TANTIVY_K1, TANTIVY_B = 1.2, 0.75  # constants of tantivy's Bm25Weight, not configurable


def load_input(path):
    """Read and check INPUT.json; returns (docs, queries, k, k1, b)."""
    with open(path, encoding="utf-8") as f:
        inp = json.load(f)

    def items(key):
        out = inp.get(key)
        if not isinstance(out, list):
            raise ValueError(f"{path}: '{key}' must be a list")
        for i, it in enumerate(out):
            if not (isinstance(it, dict) and isinstance(it.get("id"), str)
                    and isinstance(it.get("text"), str) and isinstance(it.get("terms"), list)
                    and all(isinstance(t, str) for t in it["terms"])):
                raise ValueError(f"{path}: {key}[{i}] needs a string 'id', a string 'text' "
                                 "and a list of strings 'terms'")
            it["terms"] = [t for t in it["terms"] if t]  # an empty term would only confuse bm25s
        return out

    docs, queries = items("docs"), items("queries")
    k, k1, b = inp.get("k"), inp.get("k1"), inp.get("b")
    if not (isinstance(k, int) and not isinstance(k, bool) and k > 0):
        raise ValueError(f"{path}: 'k' must be a positive integer")
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (k1, b)):
        raise ValueError(f"{path}: 'k1' and 'b' must be numbers")
    return docs, queries, k, float(k1), float(b)


def per_second(n, seconds):
    return n / seconds if seconds > 0 else 0.0


def run_bm25s(docs, queries, k, k1, b, own_tokeniser):
    """Runs 1 and 2. With its own tokeniser, tokenising the documents counts as indexing time and
    tokenising a query as query time, as edgerag's timings include its analyzer."""
    ids = [d["id"] for d in docs]
    stemmer = Stemmer.Stemmer("english")

    def tokenise(texts):  # bm25s' intended use: token ids + vocabulary, which index and
        # retrieve both accept
        return bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)

    if own_tokeniser:
        doc_tokens = lambda: tokenise([d["text"] for d in docs])
        query_tokens = lambda qs: tokenise([q["text"] for q in qs])
        description = ("bm25s.tokenize: lower-cased words of 2+ characters (regex \\b\\w\\w+\\b), "
                       "bm25s English stop words, Snowball English stemmer (PyStemmer)")
    else:
        doc_tokens = lambda: [d["terms"] for d in docs]
        query_tokens = lambda qs: [q["terms"] for q in qs]
        description = "edgerag analyzer terms, given to bm25s as pre-tokenised lists"

    start = time.perf_counter()
    corpus = doc_tokens()
    retriever = None
    if any(corpus.ids if own_tokeniser else corpus):  # bm25s cannot index a corpus without a token
        retriever = bm25s.BM25(method="lucene", k1=k1, b=b)
        retriever.index(corpus, show_progress=False)
    index_seconds = time.perf_counter() - start
    kk = min(k, len(docs))  # bm25s refuses k > number of documents

    def rank(qs, n_threads):  # -> {query id: ranking}, one retrieve call for all of `qs`
        tokens = query_tokens(qs)
        if retriever is None or not qs:
            return {}
        found, scores = retriever.retrieve(tokens, k=kk, n_threads=n_threads, show_progress=False)
        # bm25s always returns kk documents; keep those matching a query term (with the lucene
        # idf every match scores > 0).
        return {q["id"]: [ids[j] for j, s in zip(row, row_scores) if s > 0]
                for q, row, row_scores in zip(qs, found, scores)}

    # Batched: all queries in one retrieve call, bm25s' intended API (one worker thread).
    start = time.perf_counter()
    rank(queries, n_threads=1)
    batched_seconds = time.perf_counter() - start

    # Per query: one retrieve call each, like edgerag's one search per query. n_threads=0 runs in
    # the calling thread (n_threads=1 would start a thread pool per call).
    rankings = {}
    start = time.perf_counter()
    for q in queries:
        rankings.update(rank([q], n_threads=0))
    loop_seconds = time.perf_counter() - start

    return {"system": "bm25s", "version": version("bm25s"), "tokenisation": description,
            "k1": k1, "b": b, "index_seconds": index_seconds,
            "queries_per_second": per_second(len(queries), loop_seconds),
            "queries_per_second_batched": per_second(len(queries), batched_seconds),
            "rankings": {q["id"]: rankings.get(q["id"], []) for q in queries}}


def run_tantivy(docs, queries, k, own_tokeniser):
    """Runs 3 and 4: one in-RAM index written by a single writer thread, committed, then searched
    one query at a time."""
    ids = [d["id"] for d in docs]
    if own_tokeniser:
        # The chain tantivy registers as "en_stem", rebuilt so queries get the same tokens as
        # the indexed text (the wheel does not expose the registered analyzers).
        tokenizer_name = "en_stem"
        analyzer = (TextAnalyzerBuilder(Tokenizer.simple()).filter(Filter.remove_long(40))
                    .filter(Filter.lowercase()).filter(Filter.stemmer("english")).build())
        doc_text = lambda d: d["text"]
        query_terms = lambda q: analyzer.analyze(q["text"])
        description = ("tantivy en_stem: SimpleTokenizer (runs of alphanumeric characters), "
                       "tokens of 40+ bytes dropped, lower-cased, Snowball English stemmer; "
                       "no stop words")
    else:
        tokenizer_name = "whitespace"  # splits on whitespace only: no lower-casing or stemming
        doc_text = lambda d: " ".join(d["terms"])
        query_terms = lambda q: q["terms"]
        description = ("edgerag analyzer terms joined by spaces, tantivy whitespace tokenizer "
                       "(no lower-casing or stemming)")

    builder = tantivy.SchemaBuilder()
    # Term frequencies are all BM25 needs; positions would only make indexing slower.
    builder.add_text_field("body", tokenizer_name=tokenizer_name, index_option="freq")
    builder.add_unsigned_field("pos", fast=True)  # position in `docs`, to map hits back to ids
    schema = builder.build()

    texts = [doc_text(d) for d in docs]  # for run 4, joining the terms is input preparation
    start = time.perf_counter()
    index = tantivy.Index(schema)  # no path: the index lives in RAM
    writer = index.writer(heap_size=128_000_000, num_threads=1)
    for pos, text in enumerate(texts):
        doc = tantivy.Document()
        doc.add_text("body", text)
        doc.add_unsigned("pos", pos)
        writer.add_document(doc)
    writer.commit()
    writer.wait_merging_threads()
    index.reload()
    index_seconds = time.perf_counter() - start
    searcher = index.searcher()

    # Tokenising the query (run 3) is inside the timed loop, as edgerag's timing includes it.
    rankings = {}
    start = time.perf_counter()
    for q in queries:
        terms = query_terms(q)
        if not terms:
            rankings[q["id"]] = []
            continue
        query = Query.boolean_query(
            [(Occur.Should, Query.term_query(schema, "body", t, index_option="freq"))
             for t in terms])
        hits = searcher.search(query, k, count=False).hits
        positions = searcher.fast_field_values("pos", [address for _, address in hits])
        rankings[q["id"]] = [ids[p] for p in positions]
    query_seconds = time.perf_counter() - start

    return {"system": "tantivy", "version": version("tantivy"), "tokenisation": description,
            "k1": TANTIVY_K1, "b": TANTIVY_B, "index_seconds": index_seconds,
            "queries_per_second": per_second(len(queries), query_seconds),
            "rankings": rankings}


def main():
    if len(sys.argv) != 2:
        raise ValueError("usage: bm25_peers.py INPUT.json")
    docs, queries, k, k1, b = load_input(sys.argv[1])
    # Nothing but the result may reach stdout.
    with contextlib.redirect_stdout(sys.stderr):
        runs = [run_bm25s(docs, queries, k, k1, b, own_tokeniser=True),
                run_bm25s(docs, queries, k, k1, b, own_tokeniser=False),
                run_tantivy(docs, queries, k, own_tokeniser=True),
                run_tantivy(docs, queries, k, own_tokeniser=False)]
    peak_rss_bytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    json.dump({"python": platform.python_version(), "peak_rss_bytes": peak_rss_bytes,
               "runs": runs}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # one line on stderr, exit status 1, nothing on stdout
        print(f"bm25_peers.py: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
