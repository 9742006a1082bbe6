# SPDX-License-Identifier: MIT
"""What one bench/run process shares: the paths of the tree, and one context
object, CTX, that holds the options, the binaries and corpora a run measures,
the findings, and the runner's own state (its scratch directory, the run
counter, whether the page cache could be dropped).

Suites receive CTX as their `ctx` argument; the few helpers that have no
ctx parameter (run_one, drop_caches, outdir) reach the same object here, so
each piece of state exists once.
"""

import os

HARNESS = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HARNESS)
ROOT = os.path.dirname(BENCH)
WORK = os.path.join(BENCH, "work")
PEERS = os.path.join(BENCH, "peers")
MKCORPUS = os.path.join(ROOT, "tools", "mkcorpus")
SEED = 1

# Seconds of passes for the in-process contenders (parse-mem, Python email,
# postal-mime): postal-mime's fastest pass was still improving at 1.5 s
# (2.3k -> 2.5k msgs/s on notmuch at 3 s, the same at 6 s): its JIT warms up.
INPROC_S = 3


class Ctx:
    """The run: set up by bench/run's main, read by every suite."""

    def __init__(self):
        # options
        self.argv = []
        self.quick = False
        self.rounds = 5
        self.cold = False
        self.light = False
        self.salted = 0
        self.chart_dir = BENCH
        # what is measured (bench/run's main fills these in)
        self.source_state = ("", "")
        self.ingest = None
        self.external = False
        self.flags = "?"
        self.parse_mem = None
        self.naive = None
        self.gmime = None
        self.c16 = self.c768 = self.c2k = self.c20k = self.c100k = None
        self.real_notmuch = self.real_cpython = None
        self.corpora_used = []
        self.findings = []
        self.cpu0 = None
        # the runner's state
        self.outdir = None    # scratch for the runs' outputs; see outdir()
        self.cold_ok = None   # None: never tried; True: dropped; else why not
        self.run_seq = 0      # numbers the scratch files of each run


CTX = Ctx()


def outdir():
    """The scratch directory of the runs' outputs: tmpfs when there is one, so that writing the output
    costs the contenders no disk I/O; removed by bench/run at the end."""
    if CTX.outdir is None:
        shm = "/dev/shm"
        if os.path.isdir(shm) and os.access(shm, os.W_OK):
            CTX.outdir = os.path.join(shm, "ingest-bench.%d" % os.getpid())
        else:
            CTX.outdir = os.path.join(WORK, "out")
        os.makedirs(CTX.outdir, exist_ok=True)
    return CTX.outdir
