# SPDX-License-Identifier: MIT
"""parse: end to end on a hot corpus against the parsers and the indexers.
"""

import os
import statistics

from ..benches import ingest_bench
from ..charts import svg_bars
from ..fmt import human_bytes
from ..method import measure
from ..peers import index_peers, parse_peers
from ..report import end_to_end_cols, timing_table
from ..sysutil import log


def suite_parse(ctx):
    md = ["## parse: end to end, hot cache", "",
          "walk + read + parse + one JSON record per message. Peers extract the same fields (message-id, from, "
          "to, subject, date, text body, attachment names) and write one JSON line per message. "
          "Control: `ingest --io-only --backend=sync` (the reader without the parser: unaffected by parser "
          "changes).", ""]
    c = ctx.c2k
    benches = [ingest_bench(ctx, "ingest (default threads)", c, []),
               ingest_bench(ctx, "ingest --threads=1", c, ["--threads=1"])]
    benches += parse_peers(ctx, c)
    ctrl = ingest_bench(ctx, "control: ingest --io-only --backend=sync", c, ["--io-only", "--backend=sync"])
    benches.append(ctrl)
    log("suite parse %s" % c.name)
    res = measure(benches, ctx.rounds, 2, title="parse " + c.name)
    ref = res[1]
    counted = benches[:2] + [b for b in benches if b.name.startswith("GMime")]
    md += ["### %s — %d messages, %s; %d rounds × 2 repetitions" % (c.name, c.files, human_bytes(c.bytes),
                                                                   ctx.rounds), "",
           timing_table(res, ref=ref, control=res[-1], extra_cols=end_to_end_cols(res, counted)), ""]
    # the indexers: slow, so fewer rounds, one repetition
    idx = index_peers(ctx, c)
    if any(not b.missing for b in idx):
        ir = max(2, min(3, ctx.rounds))
        ib = [ingest_bench(ctx, "ingest --threads=1", c, ["--threads=1"])] + idx
        log("suite parse: indexers")
        ires = measure(ib, ir, 1, title="indexers")
        md += ["Indexers (they do more work: a Xapian index is built and written; %d rounds × 1 run, index "
               "removed before each run; ingest --threads=1 beside them as the reference):" % ir, "",
               timing_table(ires, ref=ires[0], control=ires[0]), ""]
        res = res + ires[1:]
    else:
        md += ["Indexers: " + "; ".join("%s: %s" % (b.name, b.missing) for b in idx) + ".", ""]
    items = []
    for m in res:
        if m.b.missing or m.failed or not m.mins() or m.b.name.startswith("control"):
            continue
        mins = m.mins()
        items.append((m.b.name, m.b.msgs / statistics.median(mins), m.b.msgs / max(mins), m.b.msgs / min(mins)))
    svg_bars(os.path.join(ctx.chart_dir, "parse-end-to-end.svg"), "End-to-end parse, %s (hot)" % c.name, items,
             "messages/s, median and min–max")
    md += ["![parse end to end](parse-end-to-end.svg)", ""]
    return md
