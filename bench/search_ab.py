#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Two `ingest search` binaries on one index, query by query.

The 100 word and 100 From-address queries of bench/index_bench.py (drawn the
same way, seed 1), each a whole command (`ingest search DB Q --limit=20`,
process start included) spawned with subprocess, binary A then B for each
query, PASSES times over the list; medians of wall time (perf_counter around
the command) and CPU time (user + system, wait4) per kind and binary.  Every
output of A and B is compared: the count of queries whose outputs differ is
printed.  With --callgrind N, also the mean instructions per query
(valgrind --tool=callgrind, whole command) over the first N words and the
first N addresses, which the machine's load does not change.  With
--b-args, B's commands take those arguments too (one binary against itself
in another order: `--b-args=--sort=newest-first`; the outputs then differ).

Usage: bench/search_ab.py DB BIN_A BIN_B [--passes 5] [--callgrind 10] [--b-args ARGS]"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from index_bench import search_queries  # noqa: E402


def argv(binary, db, kind, q, extra=()):
    return [binary, "search", db, ("from:" if kind == "from" else "") + q, "--limit=20", *extra]


def timed(cmd):
    """(stdout, wall ms, CPU ms) of one command."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    out = p.stdout.read()
    p.stdout.close()
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t0) * 1e3
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd}: exit {os.waitstatus_to_exitcode(status)}")
    return out, wall, (ru.ru_utime + ru.ru_stime) * 1e3


def instructions(cmd):
    p = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"] + cmd,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
    return int(re.search(r"refs:\s+([\d,]+)", p.stderr).group(1).replace(",", ""))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--passes", type=int, default=5)
    ap.add_argument("--callgrind", type=int, default=0)
    ap.add_argument("--b-args", default="", help="B's extra arguments, split at spaces")
    a = ap.parse_args()
    queries = search_queries(a.db)
    bins = (("A", a.a), ("B", a.b))
    extra = {"A": (), "B": tuple(a.b_args.split())}
    res = {(n, k, m): [] for n, _ in bins for k in ("word", "from") for m in ("wall", "cpu")}
    differ = set()
    load = [os.getloadavg()[0]]
    for _ in range(a.passes):
        for kind, q in queries:
            outs = []
            for name, binary in bins:
                out, wall, cpu = timed(argv(binary, a.db, kind, q, extra[name]))
                res[(name, kind, "wall")].append(wall)
                res[(name, kind, "cpu")].append(cpu)
                outs.append(out)
            if outs[0] != outs[1]:
                differ.add((kind, q))
    load.append(os.getloadavg()[0])
    print(f"{len(queries)} queries x {a.passes} passes, load {min(load):.1f}-{max(load):.1f}; "
          f"queries whose outputs differ: {len(differ)}")
    for name, binary in bins:
        print(f"{name} {' '.join((binary,) + extra[name])}: " + ", ".join(
            f"{k} {statistics.median(res[(name, k, 'wall')]):.2f} ms wall "
            f"({statistics.median(res[(name, k, 'cpu')]):.2f} CPU)" for k in ("word", "from")))
    if a.callgrind:
        for name, binary in bins:
            means = []
            for kind in ("word", "from"):
                qs = [q for k, q in queries if k == kind][:a.callgrind]
                means.append(f"{kind} {sum(instructions(argv(binary, a.db, kind, q, extra[name])) for q in qs) / len(qs):.4g}")
            print(f"{name} instructions, mean of the first {a.callgrind}: " + ", ".join(means))


if __name__ == "__main__":
    main()
