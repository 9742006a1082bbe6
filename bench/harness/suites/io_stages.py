# SPDX-License-Identifier: MIT
"""io: which stage limits end to end, from the wait_ms of --stats=json.
(The module is not named io.py so that it cannot shadow the standard
library's io.)
"""

import statistics

from ..benches import control_bench, ingest_bench
from ..method import judge, measure, ratio_stats
from ..peers import gmime_bench
from ..report import end_to_end_cols, timing_table
from ..sysutil import log


def suite_io(ctx):
    c = ctx.c20k
    md = ["## io: which stage limits, end to end", "",
          "ingest (default threads), %s; per-run `wait_ms` from --stats=json: reader_on_budget (reader blocked "
          "because the in-flight budget is full: downstream is slower), parser_on_reader (parser idle waiting "
          "for a read batch: the reader limits), writer_on_parser (writer idle waiting for parsed batches: the "
          "parser limits). Medians over rounds of the fastest run's values. Hot, GMime (bench/gmime_parse.c, "
          "the same fields, one JSON line a message, given the file list) runs in the same rounds: its row's "
          "ratio is the end-to-end goal's (ingest at least 10x GMime on this corpus)." % c.name, ""]
    temps = ["hot"] + (["cold"] if ctx.cold else [])
    for temp in temps:
        benches = [ingest_bench(ctx, "ingest end to end", c, []),
                   ingest_bench(ctx, "ingest --io-only", c, ["--io-only"])]
        gmime = [b for b in [gmime_bench(ctx, c)] if not b.missing] if temp == "hot" else []
        benches += gmime + [control_bench(ctx, c)]
        log("suite io %s" % temp)
        res = measure(benches, ctx.rounds, 1 if temp == "cold" else 2, cold=(temp == "cold"), title="io " + temp)
        e2e = res[0]
        cols = end_to_end_cols(res, [benches[0]] + gmime) if gmime else None
        md += ["### %s, %s" % (c.name, temp), "",
               timing_table(res, ref=e2e if gmime else None, control=res[-1], extra_cols=cols), ""]
        if gmime and e2e.mins() and res[2].mins():
            r = ratio_stats(e2e, res[2])
            md += ["**End to end against GMime, %s: %s by round** (goal: at least 10x; CPU seconds in the table)."
                   % (c.name, judge(r, res[-1].drift())), ""]
        if e2e.mins():
            runs = e2e.best_runs()

            def med(k):
                return statistics.median([(x.stats or {}).get("wait_ms", {}).get(k, 0) for x in runs])
            el = statistics.median([(x.stats or {}).get("elapsed_s", 0) for x in runs]) * 1e3
            w = {k: med(k) for k in ("reader_on_budget", "parser_on_reader", "writer_on_parser")}
            cpu = statistics.median([x.cpu for x in runs])
            if w["parser_on_reader"] > 0.5 * el:
                verdict = "the reader (I/O): the parser waits for reads most of the run"
            elif w["reader_on_budget"] > 0.3 * el and w["writer_on_parser"] < 0.3 * el:
                verdict = "the writer: the reader is held back by the budget while the writer is busy"
            else:
                verdict = "the parser: the writer waits on it most of the run and the reader is rarely blocked"
            md += ["| elapsed ms | reader_on_budget ms | parser_on_reader ms | writer_on_parser ms | CPU s (all "
                   "threads) |", "|---|---|---|---|---|",
                   "| %.0f | %.0f | %.0f | %.0f | %.2f |" % (el, w["reader_on_budget"], w["parser_on_reader"],
                                                          w["writer_on_parser"], cpu), "",
                   "**Limiting stage, %s: %s.**" % (temp, verdict), ""]
    return md
