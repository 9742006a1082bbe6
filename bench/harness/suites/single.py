# SPDX-License-Identifier: MIT
"""single: single-thread parse throughput, the parser alone in memory beside
the in-process peers, and ingest --threads=1 end to end.
"""

import os
import statistics
import sys

from ..benches import ingest_bench, inproc_mb_per_s, parse_mem_bench
from ..context import INPROC_S, PEERS
from ..fmt import fmt_mb, fmt_rate, pct
from ..method import Bench, measure
from ..peers import postal_available
from ..report import row_status
from ..sysutil import log
from ..verify import v_inproc


def single_thread(ctx):
    md = ["### Single-thread parse throughput", "",
          "Two ingest rows. **ingest parser, in memory** (bench/parse_mem.c): the parser alone on one core, "
          "as the benchmark defines parse throughput: files read into memory first, then `mail_parse` + the JSON "
          "record (`emit_record`) for every message, in passes for ~%g s, fastest pass. Python email and "
          "postal-mime run the same way (in-process, files read first, fields extracted and the record "
          "serialised, fastest pass), so these three rows compare like with like. "
          "**ingest --threads=1**: end to end (walk/read/parse/JSON out, hot; for the small real corpora the "
          "file list is repeated to reach about 64 MB so that process start-up does not dominate): MB/s of wall "
          "time and MB per CPU-second (user+sys of all of ingest's threads, reader and writer included)."
          % INPROC_S, ""]
    corpora = [ctx.c20k] + [c for c in (ctx.real_notmuch, ctx.real_cpython) if c]
    missing = [n for n, c in (("tests/corpus/real/notmuch", ctx.real_notmuch),
                              ("tests/corpus/real/cpython-email", ctx.real_cpython)) if not c]
    rows = []
    for c in corpora:
        times = max(1, int(64e6 // max(c.bytes, 1))) if c.bytes < 32e6 else 1
        if times > 1:
            lst = c.repeated(times)
            ing = ingest_bench(ctx, "ingest --threads=1", c, ["--threads=1", "--files-from=" + lst], paths=[],
                               msgs=c.files * times, bytes_=c.bytes * times)
        else:
            ing = ingest_bench(ctx, "ingest --threads=1", c, ["--threads=1"])
        benches = [ing, parse_mem_bench(ctx, "ingest parser, in memory", c),
                   Bench("Python email", [sys.executable, os.path.join(PEERS, "py_email.py"), "--inproc", str(INPROC_S), c.list],
                         v_inproc, corpus=c, metric="inproc")]
        if postal_available():
            benches.append(Bench("postal-mime", ["node", os.path.join(PEERS, "postal.mjs"), "--inproc", str(INPROC_S),
                                                 c.list], v_inproc, corpus=c, metric="inproc"))
        else:
            benches.append(Bench("postal-mime", [], None, missing="not installed (apt install nodejs npm; npm install postal-mime@4 in bench/peers, "
                                   "or bench/run --install-peers)"))
        benches.append(ingest_bench(ctx, "control: ingest --io-only --backend=sync", c,
                                    ["--io-only", "--backend=sync"]))
        log("single-thread %s" % c.name)
        res = measure(benches, ctx.rounds, 1, title="single-thread " + c.name)
        rows.append((c, times, res))
    md += ["| corpus | benchmark | MB/s (median, min–max) | MB per CPU-s | msgs/s | vs postal-mime msgs/s | "
           "verified |", "|---|---|---|---|---|---|---|"]
    for c, times, res in rows:
        postal = next((m for m in res if m.b.name == "postal-mime"), None)
        p_rate = None
        if postal and not postal.b.missing and not postal.failed and postal.mins():
            p_rate = 1 / statistics.median(postal.mins())
        for m in res:
            st = row_status(m)
            label = c.name + (" (list ×%d)" % times if times > 1 and m.b.name.startswith("ingest --threads") else "")
            if st:
                md.append("| %s | %s | %s | - | - | - | - |" % (label, m.b.name, st))
                continue
            mins = m.mins()
            if m.b.metric == "inproc":
                # value = seconds per message; bytes per message from the summaries
                runs = m.best_runs()
                mbps = [inproc_mb_per_s(x.inproc) for x in runs]
                rate = [1 / x for x in mins]
                cpu_mb = "-"
            else:
                mbps = [m.b.bytes / x / 1e6 for x in mins]
                rate = [m.b.msgs / x for x in mins]
                cpu = statistics.median([x.cpu for x in m.best_runs()])
                cpu_mb = fmt_mb(m.b.bytes / cpu / 1e6) if cpu else "-"
            vs = "-"
            if p_rate and m.b.name != "postal-mime" and not m.b.name.startswith("control"):
                q = statistics.median(rate) / p_rate
                vs = ("%.0fx" % q) if q >= 10 else ("%.2fx" % q)
            md.append("| %s | %s | %s (%s–%s) | %s | %s | %s | %s |" % (
                label, m.b.name, fmt_mb(statistics.median(mbps)), fmt_mb(min(mbps)), fmt_mb(max(mbps)), cpu_mb,
                fmt_rate(statistics.median(rate), ""), vs, m.best_runs()[-1].detail))
    ctrl_drifts = ["%s %s" % (c.name, pct(res[-1].drift())) for c, t, res in rows if res[-1].drift() is not None]
    md += ["", "Noise floor (control drift per corpus): %s. %d rounds × 1 run." % (", ".join(ctrl_drifts),
                                                                                 ctx.rounds),
           "Targets: ≥ 1 GB/s per core on the generated corpus; ≥ 100x postal-mime's msgs/s on notmuch.",
           ""]
    if missing:
        md += ["Not present in this tree (rows skipped): %s." % ", ".join(missing), ""]
    return md
