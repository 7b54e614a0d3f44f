#!/usr/bin/env python3
"""Writes the Wikipedia articles of demo/corpus/ from the SQuAD v1.1 dev set.

Usage: scripts/make-demo-corpus.py [SQUAD_JSON_GZ_OR_DATA_DIR]

The default input is ../shared/data/squad/dev-v1.1-articles-00-11.json.gz relative to the
repository root; a data directory holding squad/dev-v1.1-articles-00-11.json.gz also works.
Each article becomes one file with all of its paragraphs, unchanged and in order, under the
article's title as the only heading (SQuAD keeps no section structure, so none is invented).
The text is CC BY-SA 4.0 (Wikipedia contributors); see demo/SOURCES.md.
"""

import gzip
import html
import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SQUAD_FILE = Path("squad") / "dev-v1.1-articles-00-11.json.gz"
OUT = REPO / "demo" / "corpus"

MARKDOWN = ["Super_Bowl_50", "Normans", "Steam_engine"]
HTML = ["Nikola_Tesla", "Computational_complexity_theory"]


def source_path(argv):
    path = Path(argv[1]) if len(argv) > 1 else REPO.parent / "shared" / "data"
    return path / SQUAD_FILE if path.is_dir() else path


def file_name(title, ext):
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") + ext


def notice(title):
    return (f'Source: Wikipedia, "{title}", as distributed in SQuAD v1.1 (dev). '
            "License: CC BY-SA 4.0.")


def markdown_escape(text):
    text = re.sub(r"([\\`*_\[\]<&])", r"\\\1", text)
    # A paragraph must not start like a heading, quote, list item or thematic break.
    text = re.sub(r"^([#>+\-=])", r"\\\1", text)
    return re.sub(r"^(\d+)([.)])", r"\1\\\2", text)


def to_markdown(title, paragraphs):
    parts = [f"<!-- {notice(title)} -->", f"# {title}"]
    parts += [markdown_escape(p) for p in paragraphs]
    return "\n\n".join(parts) + "\n"


def to_html(title, paragraphs):
    body = "\n".join(f"<p>{html.escape(p, quote=False)}</p>" for p in paragraphs)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n'
        f'<head>\n<meta charset="utf-8">\n<title>{html.escape(title)}</title>\n</head>\n'
        f"<!-- {html.escape(notice(title), quote=False)} -->\n"
        f"<body>\n<article>\n<h1>{html.escape(title)}</h1>\n{body}\n</article>\n</body>\n"
        "</html>\n"
    )


def main(argv):
    with gzip.open(source_path(argv), "rt", encoding="utf-8") as f:
        articles = {a["title"]: a["paragraphs"] for a in json.load(f)["data"]}
    OUT.mkdir(parents=True, exist_ok=True)
    for key, ext, render in [(k, ".md", to_markdown) for k in MARKDOWN] + [
        (k, ".html", to_html) for k in HTML
    ]:
        title = key.replace("_", " ")
        paragraphs = [p["context"].strip() for p in articles[key]]
        path = OUT / file_name(title, ext)
        path.write_text(render(title, paragraphs), encoding="utf-8")
        print(f"{path.relative_to(REPO)}: {len(paragraphs)} paragraphs")


if __name__ == "__main__":
    main(sys.argv)
