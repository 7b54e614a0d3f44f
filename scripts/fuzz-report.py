#!/usr/bin/env python3
"""The ledger of fuzzing time (docs/fuzzing.json) and the table docs/RELIABILITY.md shows from it.

    fuzz-report.py record --target T --seconds S --runs N --exec-per-sec E --corpus C \
        --crashes K --sanitizer SAN      appends one run (scripts/fuzz.sh --record calls it)
    fuzz-report.py source                prints the commit of the code (+changes if changed),
                                         which fuzz.sh takes when it builds
    fuzz-report.py docs                  rewrites the table between the markers of
                                         docs/RELIABILITY.md from the ledger
    fuzz-report.py check                 exits 1 unless every target has fuzzed at least
                                         30 minutes since its last crash

Nothing in the table is typed by hand: every number comes from a recorded run.
"""

import argparse
import datetime
import json
import os
import pathlib
import platform
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
LEDGER = ROOT / "docs" / "fuzzing.json"
DOC = ROOT / "docs" / "RELIABILITY.md"
BEGIN = "<!-- fuzzing table: written by scripts/fuzz-report.py from docs/fuzzing.json -->"
END = "<!-- end of the fuzzing table -->"
# The bar: every target at least this long, without a crash.
GOAL_SECONDS = 30 * 60
TARGETS = [
    "bundle",
    "searcher",
    "load_pdf",
    "load_html",
    "load_markdown",
    "load_text",
    "sse",
    "request_json",
    "chat_template",
    "serve_request",
]


def load():
    if not LEDGER.exists():
        return {"runs": []}
    return json.loads(LEDGER.read_text())


def save(ledger):
    # One run per line: the ledger grows by one line per run, and diffs stay readable.
    lines = ",\n".join("    " + json.dumps(run, sort_keys=True) for run in ledger["runs"])
    text = (
        "{\n"
        '  "about": "Every recorded fuzzing run (make fuzz): scripts/fuzz-report.py adds them '
        'and writes the table of docs/RELIABILITY.md from them.",\n'
        + ('  "runs": [\n' + lines + "\n  ]\n}\n" if lines else '  "runs": []\n}\n')
    )
    write(LEDGER, text)


def write(path, text):
    """Replaces `path` with `text` at once: a run stopped with Ctrl-C never leaves half a file."""
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text)
    os.replace(partial, path)


def git(*args):
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def source():
    """The code as it is now: the commit, with `+changes` when files differ from it or files
    git does not ignore are not in it (the ledger and docs aside)."""
    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = git("status", "--porcelain", "--", ".", ":!docs/fuzzing.json", ":!docs/RELIABILITY.md")
    return commit + ("+changes" if dirty else "")


def record(args):
    ledger = load()
    ledger["runs"].append(
        {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": args.commit or source(),
            "host": args.host,
            "target": args.target,
            "sanitizer": args.sanitizer,
            "seconds": args.seconds,
            "runs": args.runs,
            "exec_per_sec": args.exec_per_sec,
            "corpus": args.corpus,
            "crashes": args.crashes,
        }
    )
    save(ledger)


def totals(ledger):
    """Per target: total time, executions and crashes, time since the last crash, last run."""
    out = {}
    for run in ledger["runs"]:
        t = out.setdefault(
            run["target"],
            {"seconds": 0, "runs": 0, "crashes": 0, "clean_seconds": 0, "last": None},
        )
        t["seconds"] += run["seconds"]
        t["runs"] += run["runs"]
        t["crashes"] += run["crashes"]
        t["clean_seconds"] = 0 if run["crashes"] else t["clean_seconds"] + run["seconds"]
        t["last"] = run
    return out


def duration(seconds):
    hours, rest = divmod(int(seconds), 3600)
    minutes = rest // 60
    return f"{hours} h {minutes:02d} min" if hours else f"{minutes} min"


def table(ledger):
    per_target = totals(ledger)
    rows = [
        "| target | fuzzed in total | executions | crashes found | since the last crash "
        "| last run: exec/s, corpus, date, commit |",
        "|---|--:|--:|--:|--:|---|",
    ]
    for target in TARGETS + sorted(set(per_target) - set(TARGETS)):
        t = per_target.get(target)
        if t is None:
            rows.append(f"| `{target}` | not run yet | | | | |")
            continue
        last = t["last"]
        mark = " ✓" if t["clean_seconds"] >= GOAL_SECONDS else ""
        rows.append(
            f"| `{target}` | {duration(t['seconds'])} | {t['runs']:,} | {t['crashes']} "
            f"| {duration(t['clean_seconds'])}{mark} | {last['exec_per_sec']:,} exec/s, "
            f"{last['corpus']:,} inputs, {last['date'][:10]}, `{last['commit']}` |"
        )
    runs = ledger["runs"]
    hosts = sorted({run.get("host", "") for run in runs} - {""})
    sanitizers = sorted({run["sanitizer"] for run in runs})
    notes = [
        "",
        f"{len(runs)} recorded runs"
        + (f" on {', '.join(hosts)}" if hosts else "")
        + (f", sanitizer: {', '.join(sanitizers)}" if sanitizers else "")
        + f". ✓: at least {GOAL_SECONDS // 60} minutes without a crash since the last one.",
    ]
    return "\n".join(rows + notes)


def docs(_args):
    text = DOC.read_text()
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        sys.exit(f"fuzz-report: {DOC} lacks the markers {BEGIN!r} and {END!r}")
    new = text[: start + len(BEGIN)] + "\n" + table(load()) + "\n" + text[end:]
    if new != text:
        write(DOC, new)


def check(_args):
    per_target = totals(load())
    short = [t for t in TARGETS if per_target.get(t, {}).get("clean_seconds", 0) < GOAL_SECONDS]
    if short:
        sys.exit(f"fuzz-report: under {GOAL_SECONDS // 60} minutes without a crash: {', '.join(short)}")
    print(f"fuzz-report: every target has fuzzed {GOAL_SECONDS // 60} minutes or more without a crash")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    rec = commands.add_parser("record", help="append one run to the ledger")
    rec.add_argument("--target", required=True)
    rec.add_argument("--seconds", type=int, required=True)
    rec.add_argument("--runs", type=int, required=True)
    rec.add_argument("--exec-per-sec", type=int, required=True)
    rec.add_argument("--corpus", type=int, required=True)
    rec.add_argument("--crashes", type=int, required=True)
    rec.add_argument("--sanitizer", required=True)
    rec.add_argument("--host", default=f"{platform.machine()}, {os.cpu_count()} cores")
    rec.add_argument("--commit", help="the code the run fuzzed (as `source` printed when it was built)")
    rec.set_defaults(run=record)
    commands.add_parser("source", help="print the code's commit, +changes if changed").set_defaults(
        run=lambda _: print(source()))
    commands.add_parser("docs", help="rewrite the table of docs/RELIABILITY.md").set_defaults(run=docs)
    commands.add_parser("check", help="every target fuzzed long enough?").set_defaults(run=check)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
