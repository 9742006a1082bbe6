# SPDX-License-Identifier: MIT
"""pool: the scheduling cost of a tiny batch (the pair), threads against
processes, and the pool alone in memory.
"""

import os
import statistics

from ..benches import control_bench, ingest_bench, inproc_mb_per_s, parse_mem_bench
from ..charts import svg_bars
from ..context import INPROC_S
from ..fmt import fmt_mb, fmt_rate, human_bytes, pct
from ..method import Bench, judge, measure, ratio_stats
from ..report import end_to_end_cols, row_status, timing_table
from ..sysutil import log, sq
from ..verify import OutputHash, v_lines_sha


def suite_pool(ctx):
    md = ["## pool: scheduling cost and thread scaling", ""]
    # the pair
    c = ctx.c16
    reps = 15
    a = ingest_bench(ctx, "ingest (default threads)", c, [], verify=v_lines_sha, metric="stats_elapsed")
    b = ingest_bench(ctx, "ingest --threads=1", c, ["--threads=1"], verify=v_lines_sha, metric="stats_elapsed")
    log("suite pool: the pair")
    res = measure([a, b], ctx.rounds * 2, reps, title="pair")
    same = len({getattr(x, "sha", None) for m in res for x in m.all_runs()}) == 1
    md += ["### The pair: %s (16 × ~1 KiB), default threads vs --threads=1" % c.name, "",
           "Time is ingest's own `elapsed_s` (--stats=json: in-process, start-up excluded) since the pair is about "
           "what scheduling costs; %d rounds × %d repetitions. Control: --threads=1 (its drift is the noise floor)."
           % (ctx.rounds * 2, reps), "",
           timing_table(res, ref=res[1], control=res[1], show_rate=False), "",
           "Output byte-identical across thread counts (sha256 of every run): **%s**." % ("yes" if same else "NO"),
           ""]
    rs = ratio_stats(res[0], res[1])
    if rs:
        slow = 1 / rs[0] - 1
        md += ["Default threads take **%+.1f%%** vs --threads=1 (median of per-round ratios; target: within 5%%; "
               "noise floor %s)." % (100 * slow, pct(res[1].drift() or 0)), ""]
    # scaling
    shapes = [ctx.c768, ctx.c2k] + ([ctx.c20k] if ctx.c20k is not ctx.c2k else [])
    md += ["### Threads vs processes", "",
           "Every row reads the same `--files-from` list (processes: the list split in contiguous halves, both "
           "started together, time until both end; their outputs concatenated must equal the threaded output, `thread_id` aside). "
           "Hot. Control: memcpy of the corpus bytes.", ""]
    scale_rows = []
    ncpu = os.cpu_count() or 1
    tcounts = sorted({1, 2, ncpu})
    for c in shapes:
        benches = []
        for t in tcounts:
            benches.append(ingest_bench(ctx, "ingest --threads=%d" % t, c, ["--threads=%d" % t, "--files-from=" +
                                                                             c.list], paths=[], verify=v_lines_sha))
        for k in tcounts:
            if k == 1:
                continue
            parts = c.split(k)
            cmd = " & ".join("%s --threads=1 --files-from=%s -o @OUT@.%d" % (sq(ctx.ingest), sq(fn), i)
                             for i, (fn, n) in enumerate(parts)) + " & wait"
            cmd = "fail=0; " + cmd.replace(" & wait", " & for j in $(jobs -p); do wait $j || fail=1; done; "
                                                      "exit $fail")
            cat = " ".join("@OUT@.%d" % i for i in range(k))

            def v_procs(b, r, k=k):
                parts = [r.scratch + ".%d" % i for i in range(k)]
                h = OutputHash()
                n = 0
                for p in parts:
                    data = open(p, "rb").read()
                    n += data.count(b"\n")
                    h.update(data)
                    os.unlink(p)
                h.store(r)
                r.split = True
                return n == b.msgs, "records %d, inputs %d" % (n, b.msgs)
            benches.append(Bench("%d processes × 1 thread" % k, cmd, v_procs, corpus=c, shell=True))
            del cat
        benches.append(control_bench(ctx, c))
        rounds = ctx.rounds
        reps = 3 if c.bytes < 100e6 else 2
        log("suite pool: scaling %s" % c.name)
        res = measure(benches, rounds, reps, title="scaling " + c.name)
        runs = [x for m in res[:-1] for x in m.all_runs()]
        shas = {getattr(x, "sha", None) for x in runs if not getattr(x, "split", False)}
        aside = {getattr(x, "sha_without_thread_id", None) for x in runs}
        md += ["#### %s — %d messages, %s; %d rounds × %d reps" % (c.name, c.files, human_bytes(c.bytes), rounds,
                                                                  reps), "",
               timing_table(res, ref=res[0], control=res[-1], extra_cols=end_to_end_cols(
                   res, [b for b in benches if b.name.startswith("ingest")])), "",
               "Output byte-identical across thread counts: **%s**; the process splits' outputs, concatenated, "
               "equal it with `thread_id` aside (threads are joined within a run, README \"Threads\"): **%s**." % (
                   "yes" if len(shas) == 1 else "NO (%d distinct)" % len(shas),
                   "yes" if len(aside) == 1 else "NO (%d distinct)" % len(aside)), ""]
        t2 = next((m for m in res if m.b.name == "ingest --threads=2"), None)
        p2 = next((m for m in res if m.b.name == "2 processes × 1 thread"), None)
        if t2 and p2 and t2.mins() and p2.mins():
            rs = ratio_stats(t2, p2)
            md += ["2 threads vs 2 processes: threads are %s as fast as processes (noise floor %s); "
                   "2 threads vs 1: %s." % (judge(rs, res[-1].drift()), pct(res[-1].drift() or 0),
                                              judge(ratio_stats(t2, res[0]), res[-1].drift())), ""]
        scale_rows.append((c, res))
    items = []
    for c, res in scale_rows:
        for m in res[:-1]:
            if m.mins():
                mins = m.mins()
                items.append(("%s: %s" % (c.name, m.b.name), c.bytes / statistics.median(mins) / 1e6,
                              c.bytes / max(mins) / 1e6, c.bytes / min(mins) / 1e6))
    svg_bars(os.path.join(ctx.chart_dir, "pool-scaling.svg"), "Threads vs processes (hot)", items, "MB/s, median and min–max")
    md += ["![threads vs processes](pool-scaling.svg)", ""]
    md += pool_in_memory(ctx, shapes, tcounts)
    return md


def pool_in_memory(ctx, shapes, tcounts):
    """The pool alone: bench/parse-mem --threads=N over batches cut and
    grouped as the pipeline cuts and groups them, in memory, so that the
    reader does not compete with the workers for the same cores."""
    md = ["### The pool alone, in memory (bench/parse-mem --threads=N)", "",
          "The same messages, read into memory first; batches cut by the ring reader's rule at the default "
          "--batch-bytes and grouped as the parse stage groups them; one `pool_run` per group, the caller a "
          "worker; fastest pass of ~%g s, wall time. This is the scheduler's own scaling. End to end (above), "
          "the reader thread's kernel work (open/statx/read copies, page faults) runs on the same two cores as "
          "the workers, so a second parse thread can at best take what the reader leaves. Control: "
          "`--threads=1` run a second time in the same rounds (its drift is the noise floor)." % INPROC_S, "",
          "| corpus | threads | msgs/s (median, min–max) | MB/s (median) | vs --threads=1 (per-round ratios) | "
          "pool runs / with ≥ 2 workers | verified |", "|---|---|---|---|---|---|---|"]
    for c in shapes:
        benches = [parse_mem_bench(ctx, "parse-mem --threads=%d" % t, c, ["--threads=%d" % t]) for t in tcounts]
        benches.append(parse_mem_bench(ctx, "control: parse-mem --threads=1", c, ["--threads=1"]))
        log("suite pool: in memory %s" % c.name)
        res = measure(benches, ctx.rounds, 1, title="pool in memory " + c.name)
        noise = res[-1].drift()
        for m, t in zip(res, list(tcounts) + ["1 (control)"]):
            st = row_status(m)
            if st:
                md.append("| %s | %s | %s | - | - | - | - |" % (c.name, t, st))
                continue
            rates = [1 / x for x in m.mins()]
            j = m.best_runs()[0].inproc
            mb = statistics.median([inproc_mb_per_s(x.inproc) for x in m.best_runs()])
            vs = "-" if m is res[0] else judge(ratio_stats(m, res[0]), noise)
            md.append("| %s | %s | %s (%s–%s) | %s | %s | %s / %s | %s |" % (
                c.name, t, fmt_rate(statistics.median(rates), ""), fmt_rate(min(rates), ""),
                fmt_rate(max(rates), ""), fmt_mb(mb), vs, j.get("pool_runs", "-"), j.get("parallel_runs", "-"),
                m.best_runs()[-1].detail))
    md += ["", "Noise floor: the control's drift per corpus (max–min of per-round minima over their median). "
           "Target: 2 threads ≥ 1.8x one thread on the large shapes.", ""]
    return md
