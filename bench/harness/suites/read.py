# SPDX-License-Identifier: MIT
"""read: read-only throughput (no parsing), hot and cold, against readers
that only read; fio's device rates for reference.
"""

import json
import os
import statistics

from ..benches import control_bench, ingest_bench
from ..charts import svg_bars
from ..context import WORK
from ..corpora import preheat
from ..fmt import fmt_mb, fmt_time, human_bytes
from ..method import judge, measure, ratio_stats
from ..peers import read_peers
from ..report import timing_table
from ..sysutil import drop_caches, have, last_json_text, log, sh


def suite_read(ctx):
    md = ["## read: read-only throughput (no parsing)", "",
          "ingest `--io-only` (walk + read + one JSON record per file with the file facts) against readers that "
          "only read. The naive C loop reads from a file list (no directory walk); the others walk. "
          "Control: a memcpy of the corpus' byte count (touches no file; machine noise only).", ""]
    charts = []
    sizes = [ctx.c20k] + ([ctx.c100k] if ctx.c100k else [])
    temps = ["hot"] + (["cold"] if ctx.cold else [])
    cold_ingest = {}
    for c in sizes:
        for temp in temps:
            big = c is ctx.c100k
            cold = temp == "cold"
            rounds = ctx.rounds if not big else max(2, min(3, ctx.rounds))
            reps = 1 if cold else (3 if not big else 2)
            benches = [ingest_bench(ctx, "ingest --io-only --backend=uring", c, ["--io-only", "--backend=uring"]),
                       ingest_bench(ctx, "ingest --io-only --backend=sync", c, ["--io-only", "--backend=sync"])]
            peers = read_peers(ctx, c)
            if big and cold:
                # the slow single-file readers take ~30 s each cold at 100k: keep the informative ones
                peers = [p for p in peers if p.name.startswith(("naive", "ripgrep"))]
            benches += peers
            ctrl = control_bench(ctx, c)
            benches.append(ctrl)
            title = "read %s %s" % (c.name, temp)
            log("suite %s (%d rounds x %d reps)" % (title, rounds, reps))
            res = measure(benches, rounds, reps, cold=cold, title=title)
            uring, sync, control = res[0], res[1], res[-1]
            md += ["### %s, %s cache — %d files, %s" % (c.name, temp, c.files, human_bytes(c.bytes)), "",
                   "%d rounds × %d repetition%s%s." % (rounds, reps, "s" if reps > 1 else "",
                                                        " (100,000-file rows: fewer rounds to fit the time budget;"
                                                        " cold: only the naive loop and ripgrep as peers)"
                                                        if big else ""), "",
                   timing_table(res, ref=sync, control=control), ""]
            rs = ratio_stats(uring, sync)
            if rs:
                noise = control.drift()
                verdict = judge(rs, noise)
                expect = "≥ 3x expected" if cold else "not slower expected"
                md.append("**uring vs sync, %s: %s** — %s." % (temp, verdict, expect))
                if cold and rs[0] < 3:
                    md.append("")
                    md.append("**Below the cold target (≥ 3x).**")
                if not cold and noise is not None and rs[0] < 1 - noise:
                    md += [""] + explain_hot(ctx, c)
                md.append("")
            if cold and uring.median():
                cold_ingest[c.name] = c.bytes / uring.median() / 1e6
            charts.append(("%s %s" % (c.name, temp), res))
    if ctx.cold:
        md += suite_fio(ctx, cold_ingest)
    # chart: MB/s per reader, per corpus/temperature
    for label, res in charts:
        fn = "read-%s.svg" % label.replace(" ", "-")
        items = []
        for m in res:
            if m.b.missing or m.failed or not m.mins() or m.b.name.startswith("control"):
                continue
            mins = m.mins()
            items.append((m.b.name, m.b.bytes / statistics.median(mins) / 1e6, m.b.bytes / max(mins) / 1e6,
                          m.b.bytes / min(mins) / 1e6))
        svg_bars(os.path.join(ctx.chart_dir, fn), "Read-only throughput, %s" % label, items, "MB/s, median and min–max")
        md.append("![%s](%s)" % (label, fn))
        md.append("")
    return md


def explain_hot(ctx, c):
    """Hot: ring slower than sync.  Measure where the time goes."""
    out = ["Why the ring is slower hot (measured, one run each, hot):", ""]
    for backend in ("uring", "sync"):
        preheat(c)
        cmd = [ctx.ingest, "--io-only", "--backend=" + backend, "--stats=json", "-o", "/dev/null", c.dir]
        if have("perf"):
            r = sh(["perf", "stat", "-x", ",", "-e", "task-clock,context-switches,cpu-migrations"] + cmd, check=False)
            perf = {}
            for line in r.stderr.splitlines():
                parts = line.split(",")
                if len(parts) > 3 and parts[2] in ("task-clock", "context-switches", "cpu-migrations"):
                    perf[parts[2]] = parts[0]
            st = last_json_text(r.stderr)
        else:
            r = sh(cmd, check=False)
            perf, st = {}, last_json_text(r.stderr)
        st = st or {}
        out.append("- %s: elapsed %s, task-clock %s ms (all threads, kernel io-wq workers included), "
                   "context switches %s, io_uring_enter %s, waits %s" % (
                       backend, fmt_time(st.get("elapsed_s")), perf.get("task-clock", "?"),
                       perf.get("context-switches", "?"), st.get("io_uring_enter", "-"),
                       json.dumps(st.get("wait_ms", {}))))
    out += ["", "With everything cached, each statx/openat/read on the ring that cannot complete inline is "
            "punted to an io-wq kernel worker; those hand-offs cost more than the syscalls they save. "
            "What would fix it: issue the hot-path operations so they complete inline (no IOSQE_ASYNC, "
            "chains only where needed), or let `--backend=auto` pick sync when the corpus is already in the page "
            "cache (e.g. a mincore/`preadv2(RWF_NOWAIT)` probe on the first batch).", ""]
    return out


def suite_fio(ctx, cold_ingest):
    md = ["### Device reference (fio)", ""]
    if not have("fio"):
        return md + ["fio: not installed (apt install fio)", ""]
    fn = os.path.join(WORK, "fio.dat")
    size = "512M"
    rows = []
    for name, rw, bs in (("random 4 KiB reads, iodepth 64", "randread", "4k"),
                         ("sequential 1 MiB reads, iodepth 16", "read", "1m")):
        drop_caches()
        r = sh(["fio", "--name=ceiling", "--filename=" + fn, "--size=" + size, "--rw=" + rw, "--bs=" + bs,
                "--iodepth=" + ("64" if bs == "4k" else "16"), "--ioengine=io_uring", "--direct=1",
                "--runtime=8", "--time_based", "--output-format=json"], check=False)
        try:
            j = json.loads(r.stdout[r.stdout.index("{"):])
            rd = j["jobs"][0]["read"]
            rows.append((name, rd["bw_bytes"] / 1e6, rd["iops"]))
        except (ValueError, KeyError, IndexError):
            rows.append((name, None, None))
    md += ["fio on a 512 MiB file in the same filesystem as the corpus, O_DIRECT, io_uring engine, 8 s. O_DIRECT "
           "bypasses the page cache and its readahead: the random-4-KiB job is the device's rate for scattered "
           "small reads, the sequential job its streaming rate, the real ceiling. ingest's cold reads go through the "
           "page cache, whose readahead turns each small file into one larger request, so they can exceed the "
           "random-4-KiB rate; the sequential rate bounds them.", "",
           "| fio job | MB/s | IOPS |", "|---|---|---|"]
    for name, mb, iops in rows:
        md.append("| %s | %s | %s |" % (name, fmt_mb(mb), "%.0f" % iops if iops else "-"))
    md.append("")
    if rows and rows[0][1]:
        for cname, mbps in cold_ingest.items():
            md.append("ingest `--io-only --backend=uring`, cold, %s: %.0f MB/s = %.0f%% of the random-4-KiB "
                      "reference (%.0f MB/s)%s." % (cname, mbps, 100 * mbps / rows[0][1], rows[0][1],
                                                  "; **%.0f%%** of the sequential ceiling (%.0f MB/s)" % (
                                                      100 * mbps / rows[1][1], rows[1][1]) if rows[1][1] else ""))
        md.append("")
    return md
