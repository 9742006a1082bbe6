#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two builds of `ingest --index` side by side, on one scenario.

Scenarios:
  first         a fresh index of a generated Maildir (--count messages)
  rerun         the re-run of each build's index of that Maildir, with
                nothing changed (what it costs to load the state and stat
                every file)
  mbox-append   the re-run of an index of one generated mbox archive
                (--count messages) after one message was appended to it:
                each build re-runs on a copy of the index it made itself
                of the archive before the append (an index's schema is
                its build's), restored before every run

Method (bench/README.md, reduced to two builds): hot cache (one untimed
read of the corpus first); interleaved rounds, the two builds in a
rotating order, and the candidate (B) run twice in each round: the spread
of its two runs is the noise floor (the control).  Per run, wall seconds,
CPU seconds (user + system of the process and its threads, from wait4),
and the counts verified: the run's --stats JSON (records, the index's
messages and unchanged) and the rows of the database after it.  Prints
the medians, their min-max, and B/A.

Usage: bench/index_ab.py --a BIN --b BIN --scenario first|rerun|mbox-append
                         [--count N] [--rounds N] [--work DIR] [--mkcorpus BIN]"""
import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys

from index_bench import timed

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

APPENDED = (b"From bench@example.org Mon Jan  1 00:00:00 2024\nFrom: bench@example.org\n"
            b"Message-ID: <appended@bench.example>\nSubject: appended\n\nappended text\n\n")


def run(cmd):
    """Wall and CPU seconds of one ingest run, and its --stats=json."""
    wall, _ = timed(cmd)
    lines = [ln for ln in timed.stderr.splitlines() if ln.startswith("{")]
    return wall, timed.cpu, json.loads(lines[-1])


def rows(db):
    c = sqlite3.connect(db)
    n = c.execute("SELECT count(*) FROM messages").fetchone()[0]
    c.close()
    return n


def remove_db(db):
    for end in ("", "-wal", "-shm", ".new"):
        if os.path.exists(db + end):
            os.unlink(db + end)


def hot(path):
    for d, _, names in os.walk(path):
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                while f.read(1 << 20):
                    pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="the baseline build's ingest")
    ap.add_argument("--b", required=True, help="the candidate build's ingest")
    ap.add_argument("--scenario", required=True, choices=("first", "rerun", "mbox-append"))
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--work", default=os.path.join(HERE, "work", "index-ab"))
    ap.add_argument("--mkcorpus", default=os.path.join(ROOT, "tools", "mkcorpus"))
    o = ap.parse_args()
    os.makedirs(o.work, exist_ok=True)
    layout = "mbox" if o.scenario == "mbox-append" else "maildir"
    corpus = os.path.join(o.work, f"{layout}-{o.count}")
    if not os.path.isdir(corpus):
        subprocess.run([o.mkcorpus, "--seed", "1", "--layout", layout, "--count", str(o.count),
                        "--out", corpus], check=True, stdout=subprocess.DEVNULL)
    builds = {"A": o.a, "B": o.b}
    want = o.count
    if o.scenario == "rerun":
        for k, b in builds.items():
            db = os.path.join(o.work, f"rerun-{k}.db")
            remove_db(db)
            run([b, "--stats=json", "--index", db, corpus])
    if o.scenario == "mbox-append":
        # the archive as generated (an earlier run's message taken off),
        # then each build's index of it
        archive = os.path.join(corpus, "archive.mbox")
        with open(archive, "r+b") as f:
            f.seek(-len(APPENDED), os.SEEK_END)
            if f.read() == APPENDED:
                f.truncate(f.tell() - len(APPENDED))
        for k, b in builds.items():
            db = os.path.join(o.work, f"before-{k}.db")
            remove_db(db)
            run([b, "--stats=json", "--index", db, corpus])
        with open(archive, "ab") as f:
            f.write(APPENDED)
        want = rows(os.path.join(o.work, "before-A.db")) + 1
    hot(corpus)
    runs = {"A": [], "B": [], "B2": []}
    order = ["A", "B", "B2"]
    for r in range(o.rounds):
        for k in order[r % 3:] + order[:r % 3]:
            db = os.path.join(o.work, "run.db")
            remove_db(db)
            if o.scenario == "rerun":
                db = os.path.join(o.work, f"rerun-{k[0]}.db")
            if o.scenario == "mbox-append":
                shutil.copyfile(os.path.join(o.work, f"before-{k[0]}.db"), db)
            wall, cpu, st = run([builds[k[0]], "--stats=json", "--index", db, corpus])
            n = rows(db)
            if n != want:
                sys.exit(f"{k}: {n} messages in the index, {want} wanted")
            runs[k].append((wall, cpu, st["index"]["messages"], st["index"].get("unchanged", 0)))
    print(f"scenario {o.scenario}, {o.count} messages, {o.rounds} rounds; counts verified"
          f" ({want} rows after every run)")
    print("| build | wall s (min-max) | CPU s (min-max) | messages written, unchanged |")
    print("|---|---|---|---|")
    med = {}
    for k in ("A", "B", "B2"):
        w = [x[0] for x in runs[k]]
        c = [x[1] for x in runs[k]]
        med[k] = (statistics.median(w), statistics.median(c))
        print(f"| {k} | {med[k][0]:.3f} ({min(w):.3f}-{max(w):.3f}) | {med[k][1]:.3f}"
              f" ({min(c):.3f}-{max(c):.3f}) | {runs[k][0][2]}, {runs[k][0][3]} |")
    print(f"B/A wall {med['B'][0] / med['A'][0]:.3f}, CPU {med['B'][1] / med['A'][1]:.3f};"
          f" control B2/B wall {med['B2'][0] / med['B'][0]:.3f}, CPU {med['B2'][1] / med['B'][1]:.3f}")


if __name__ == "__main__":
    main()
