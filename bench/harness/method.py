# SPDX-License-Identifier: MIT
"""The method of docs/BENCHMARKING.md, built in:

  * interleaved rounds: within a round every benchmark of a comparison runs
    (A B C ..., the order rotated by one each round); per round each
    benchmark's minimum over its repetitions; reported: the median of the
    rounds and the spread (min-max);
  * ratios are taken per round (side by side) and their median reported;
  * every comparison has a control row; the control's drift across rounds,
    (max - min) / median, is the noise floor; a ratio closer to 1 than the
    noise floor is reported as "within noise", in either direction;
  * every run verifies its own work (harness/verify.py): records (or files,
    or bytes) == inputs;
  * hot runs re-read the corpus right before measuring; every run reports
    the KiB paged in (pgpgin in /proc/vmstat) while it ran;
  * cold runs: `sync; echo 3 > /proc/sys/vm/drop_caches` before each run.
"""

import copy
import os
import re
import shutil
import statistics
import subprocess
import time

from .context import CTX, WORK, outdir
from .corpora import preheat
from .sysutil import drop_caches, last_json, log, pgpgin


class Run:
    pass


class Bench:
    """One command, its verification and how to present it."""

    def __init__(self, name, argv, verify, corpus=None, shell=False, env=None, pre=None,
                 note="", missing=None, stats=False, bytes_=None, msgs=None, cwd=None,
                 metric="wall"):
        self.name, self.argv, self.verify, self.corpus = name, argv, verify, corpus
        self.shell, self.env, self.pre, self.note, self.missing = shell, env, pre, note, missing
        self.stats, self.cwd, self.metric = stats, cwd, metric
        self.bytes = bytes_ if bytes_ is not None else (corpus.bytes if corpus else None)
        self.msgs = msgs if msgs is not None else (corpus.files if corpus else None)


def subst(s, out):
    return s.replace("@OUT@", out)


def run_one(b, cold=False):
    CTX.run_seq += 1
    od = outdir()
    tag = os.path.join(od, "r%d" % CTX.run_seq)
    r = Run()
    r.out, r.err, r.scratch = tag + ".out", tag + ".err", tag + ".x"
    if b.pre:
        b.pre()
    if cold:
        drop_caches()
    argv = subst(b.argv, r.scratch) if b.shell else [subst(a, r.scratch) for a in b.argv]
    timed = not b.shell and os.path.exists("/usr/bin/time")
    if timed:
        argv = ["/usr/bin/time", "-f", "%M", "-o", r.scratch + ".rss"] + argv
    env = dict(os.environ)
    if b.env:
        env.update(b.env)
    with open(r.out, "wb") as fo, open(r.err, "wb") as fe:
        g0 = pgpgin()
        t0 = time.perf_counter()
        if b.shell:
            p = subprocess.Popen(["bash", "-c", argv], stdout=fo, stderr=fe, env=env, cwd=b.cwd)
        else:
            p = subprocess.Popen(argv, stdout=fo, stderr=fe, env=env, cwd=b.cwd)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        t1 = time.perf_counter()
        g1 = pgpgin()
    r.wall, r.cpu, r.maxrss = t1 - t0, ru.ru_utime + ru.ru_stime, ru.ru_maxrss
    r.pgpgin, r.rc = g1 - g0, p.returncode
    if timed:
        try:
            r.maxrss = int(open(r.scratch + ".rss").read().split()[-1])
            os.unlink(r.scratch + ".rss")
        except (OSError, ValueError, IndexError):
            pass
    r.stats = None
    if b.stats:
        r.stats = last_json(r.err)
    r.value = r.wall
    if b.metric == "stats_elapsed" and r.stats:
        r.value = r.stats.get("elapsed_s", r.wall)
    elif b.metric == "inproc":
        j = last_json(r.err)
        r.inproc = j
        if j:
            # seconds per message, from the fastest pass (JIT warm-up and
            # disturbed passes excluded, for every in-process contender alike)
            r.value = j["best_pass_s"] / j["pass_messages"]
    try:
        r.ok, r.detail = b.verify(b, r)
    except Exception as e:  # a verifier that cannot read the output is a failure
        r.ok, r.detail = False, "verification error: %s" % e
    if r.rc != 0 and r.ok:
        r.ok, r.detail = False, "exit status %d" % r.rc
    if not r.ok:
        keep = os.path.join(WORK, "failures")
        os.makedirs(keep, exist_ok=True)
        with open(r.err, "rb") as f:
            err = f.read()[-4000:]
        with open(os.path.join(keep, "%s.stderr" % re.sub(r"[^A-Za-z0-9_.-]", "_", b.name)), "wb") as f:
            f.write(err)
        log("VERIFY FAILED: %s: %s" % (b.name, r.detail))
    for fn in (r.out, r.err, r.scratch):
        if os.path.exists(fn):
            os.unlink(fn)
    return r


class Measured:
    def __init__(self, bench):
        self.b = bench
        self.rounds = []   # per round: list of Run
        self.failed = None

    def mins(self):
        return [min(x.value for x in rr) for rr in self.rounds if rr]

    def best_runs(self):
        return [min(rr, key=lambda x: x.value) for rr in self.rounds if rr]

    def all_runs(self):
        return [x for rr in self.rounds for x in rr]

    def median(self):
        m = self.mins()
        return statistics.median(m) if m else None

    def spread(self):
        m = self.mins()
        return (min(m), max(m)) if m else (None, None)

    def drift(self):
        m = self.mins()
        if len(m) < 2:
            return None
        return (max(m) - min(m)) / statistics.median(m)


def measure(benches, rounds, reps, cold=False, title=""):
    """Interleaved rounds; per round each bench's min over reps."""
    res = [Measured(b) for b in benches]
    live = [m for m in res if not m.b.missing]
    for rd in range(rounds):
        k = rd % len(live) if live else 0
        order = live[k:] + live[:k]
        for m in order:
            if m.failed:
                continue
            if not cold and m.b.corpus is not None:
                preheat(m.b.corpus)
            runs = []
            for _ in range(reps):
                r = run_one(m.b, cold=cold)
                runs.append(r)
                if not r.ok:
                    m.failed = r.detail
                    break
                if r.wall > 2.0:
                    break  # slow benchmarks: one repetition per round (noise is small relative to them)
            if m.failed:
                continue
            m.rounds.append(runs)
        log("%s: round %d/%d done" % (title, rd + 1, rounds))
    return res


def ratio_stats(a, ref):
    """Per-round ratio ref_time / a_time (how many times faster a is)."""
    xs = [r / x for x, r in zip(a.mins(), ref.mins()) if x > 0]
    if not xs:
        return None
    return statistics.median(xs), min(xs), max(xs)


def judge(ratio, noise):
    """Text for a ratio given the noise floor (as a fraction)."""
    if ratio is None:
        return "-"
    med, lo, hi = ratio
    s = "%.2fx (%.2f–%.2f)" % (med, lo, hi)
    if noise is not None and max(med, 1 / med) - 1 <= noise:
        s += " ≈ within noise"
    return s


def instructions_per_msg(b):
    """User-space instructions per message of one run of b under callgrind
    (every thread of the process; an exact count, not a time, so one run
    and no rounds), the run verified like a timed one.  None where it
    cannot count: a shell pipeline (several processes), an interpreter or
    a JIT (not asked for: valgrind slows them past use), no valgrind."""
    if b.shell or b.missing or not b.msgs or not shutil.which("valgrind"):
        return None
    vb = copy.copy(b)
    vb.argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
               "--log-file=@OUT@.valgrind"] + list(b.argv)
    r = run_one(vb)
    log_file = r.scratch + ".valgrind"
    try:
        with open(log_file) as f:
            m = re.search(r"Collected : (\d+)", f.read())
    except OSError:
        m = None
    finally:
        if os.path.exists(log_file):
            os.unlink(log_file)
    if not r.ok or not m:
        log("instructions: %s: %s" % (b.name, r.detail if not r.ok else "no count in valgrind's log"))
        return None
    return int(m.group(1)) / b.msgs


def cpu_utilisation(m):
    """CPU time over wall time x the CPUs this process may run on, from the
    runs the table reports (each round's fastest): how much of the machine
    the command kept busy."""
    runs = m.best_runs()
    if not runs:
        return None
    cpus = len(os.sched_getaffinity(0)) or 1
    return statistics.median(x.cpu / (x.wall * cpus) for x in runs)
