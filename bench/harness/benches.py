# SPDX-License-Identifier: MIT
"""The rows for ingest itself and for the controls: ingest end to end, the
in-memory parser (bench/parse_mem.c), and the memcpy control.
"""

import os

from .context import INPROC_S
from .method import Bench
from .verify import v_inproc, v_lines, v_memcpy


def ingest_bench(ctx, name, corpus, args, verify=v_lines, stats=True, msgs=None, bytes_=None, paths=None,
                 note="", metric="wall", exe=None):
    argv = [exe or ctx.ingest] + args + (["--stats=json"] if stats else []) + ["-o", "@OUT@.jsonl"]
    argv += paths if paths is not None else [corpus.dir]

    def v(b, r):
        os.replace(r.scratch + ".jsonl", r.out)
        return verify(b, r)
    return Bench(name, argv, v, corpus=corpus, stats=stats, msgs=msgs, bytes_=bytes_, note=note, metric=metric)


def control_bench(ctx, corpus):
    return Bench("control: memcpy of the corpus bytes", [ctx.naive, "--memcpy", str(corpus.bytes)], v_memcpy,
                 corpus=None, bytes_=corpus.bytes, msgs=None)


def parse_mem_bench(ctx, name, c, extra=()):
    return Bench(name, [ctx.parse_mem, "--seconds=%g" % INPROC_S] + list(extra) + [c.list], v_inproc, corpus=c,
                 metric="inproc")


def inproc_mb_per_s(j):
    """MB/s of the fastest pass (bytes is the sum over all passes)."""
    return j["bytes"] / (j["messages"] / j["pass_messages"]) / j["best_pass_s"] / 1e6
