# SPDX-License-Identifier: MIT
"""salted (--salted=N): the spread of identical code built N times with
different code placement.
"""

import os
import statistics

from ..benches import ingest_bench
from ..build import build_ingest
from ..context import WORK
from ..fmt import fmt_time, pct
from ..method import measure
from ..sysutil import log


def suite_salted(ctx):
    n = ctx.salted
    salts = [["-falign-functions=%d" % fa, "-falign-loops=%d" % fl, "-falign-jumps=%d" % fj]
             for fa, fl, fj in ((16, 1, 1), (32, 16, 8), (64, 32, 16), (128, 8, 32), (16, 64, 4), (256, 16, 16),
                                (8, 4, 64), (64, 1, 32))]
    salts = salts[:n]
    exes = []
    for i, s in enumerate(salts):
        d = os.path.join(WORK, "build-salt%d" % i)
        log("salted build %d: %s" % (i, " ".join(s)))
        exes.append((" ".join(s), build_ingest(d, s)))
    shapes = [("pair, default threads (%s)" % ctx.c16.name, ctx.c16, [], "stats_elapsed", 15),
              ("parse --threads=1 (%s)" % ctx.c2k.name, ctx.c2k, ["--threads=1"], "wall", 3),
              ("--io-only --backend=uring (%s)" % ctx.c20k.name, ctx.c20k, ["--io-only", "--backend=uring"], "wall",
               3)]
    md = ["## salted: the spread of identical code", "",
          "The same source built %d times with different code placement (function/loop/jump alignment via "
          "-Dc_args; everything else identical), measured interleaved. The spread of the builds' medians is what "
          "code placement alone does; a change smaller than it is not a result. Three benchmarks, one per kind of "
          "work: the pair (scheduling cost of a tiny batch), parsing on one thread, and reading alone." % len(exes), "",
          "| benchmark | %s | spread of build medians |" % " | ".join("build %d" % i for i in range(len(exes))),
          "|" + "---|" * (len(exes) + 2)]
    for title, c, args, metric, reps in shapes:
        benches = [ingest_bench(ctx, "salt %d" % i, c, args, metric=metric, exe=exe)
                   for i, (salt, exe) in enumerate(exes)]
        log("salted: %s" % title)
        res = measure(benches, ctx.rounds, reps, title="salted " + title)
        meds = [m.median() for m in res]
        ok = [x for x in meds if x]
        sp = (max(ok) - min(ok)) / statistics.median(ok) if len(ok) > 1 else None
        md.append("| %s | %s | **%s** |" % (title, " | ".join(fmt_time(x) for x in meds), pct(sp) if sp else "-"))
    md += ["", "Builds: " + "; ".join("%d: `%s`" % (i, s) for i, (s, e) in enumerate(exes)) + ".", ""]
    return md
