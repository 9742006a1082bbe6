#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The Python module against what a Python user would otherwise run.

  bench/python_bench.py --build build [--rounds 5] [--work DIR] [--out bench/PYTHON.md] [--no-100k]

Rows (docs/BENCHMARKING.md's method: interleaved rounds, each round's
variants in a rotated order, the median of the rounds and their spread, a
control whose drift is the noise floor, record counts verified every run;
CPU-seconds of each variant, its children's included, beside wall time;
each comparison also lists its ratio in every round, since a round runs
both of its variants):

  email        parse_many on mailbox20k (default threads, and threads=1)
               against Python email (BytesParser(policy=policy.default),
               the fields of bench/peers/py_email.py), messages/s, in
               process
  subprocess   parse_many against spawning the command over the Maildir and
               json.loads of every line
  scan         scan() of the Maildir against the command writing to /dev/null
  page16       parse_many of 16 x ~1 KiB, default threads against threads=1
  large16      parse_many of 16 x ~768 KiB, threads=2 against threads=1
  memory       peak RSS of scan() over mailbox100k against the command's
               (each in its own process; the interpreter's own RSS apart)
  control      a memcpy of the 20k corpus' bytes: nothing here changes it

The module comes from BUILD/python, the command from BUILD/src/ingest;
corpora from tools/mkcorpus (seed 1) into WORK (default bench/work/python),
reused when present.  The page cache is warmed (every file read) before
each round.  Writes a Markdown section to --out."""
import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

ap = argparse.ArgumentParser()
ap.add_argument("--build", required=True)
ap.add_argument("--rounds", type=int, default=5)
ap.add_argument("--work", default=os.path.join(HERE, "work", "python"))
ap.add_argument("--out", default=os.path.join(HERE, "PYTHON.md"))
ap.add_argument("--no-100k", action="store_true")
args = ap.parse_args()

BUILD = os.path.abspath(args.build)
INGEST = os.path.join(BUILD, "src", "ingest")
sys.path.insert(0, os.path.join(BUILD, "python"))
sys.path.insert(0, os.path.join(HERE, "peers"))
import ingest              # noqa: E402
from py_email import fields as email_fields   # noqa: E402


def corpus(shape, layout):
    d = os.path.join(args.work, f"{shape}-{layout}")
    if not os.path.isdir(d):
        os.makedirs(args.work, exist_ok=True)
        subprocess.run([os.path.join(HERE, "..", "tools", "mkcorpus"), "--seed", "1", "--shape", shape,
                        "--layout", layout, "--out", d], check=True, stdout=subprocess.DEVNULL)
    return d


def files_of(d):
    out = []
    for root, dirs, names in os.walk(d):
        dirs[:] = sorted(x for x in dirs if x != "tmp")
        out += [os.path.join(root, n) for n in sorted(names)]
    return out


def read_all(paths):
    blobs = []
    for p in paths:
        with open(p, "rb") as f:
            blobs.append(f.read())
    return blobs


def expect(n, want, what):
    if n != want:
        sys.exit(f"{what}: {n} records, not {want}: a fast run that lost work")


def cli_count(d):
    p = subprocess.run([INGEST, "-q", d], capture_output=True, check=True)
    return p.stdout.count(b"\n")


print("corpora...", file=sys.stderr)
m20k = corpus("mailbox20k", "maildir")
page16 = read_all(files_of(corpus("page16", "eml")))
large16 = read_all(files_of(corpus("large16", "eml")))
paths20k = files_of(m20k)
blobs20k = read_all(paths20k)
n20k = len(blobs20k)
expect(cli_count(m20k), n20k, "the command on mailbox20k")
joined = b"".join(blobs20k)


def cpu_now():
    """CPU-seconds (user + system) of this process and its waited-for
    children: the machine is shared, and CPU time is what load does not
    stretch."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def timed(fn):
    c, t = cpu_now(), time.perf_counter()
    n = fn()
    return time.perf_counter() - t, cpu_now() - c, n


# Each variant returns the records it made, checked against the inputs.
def v_parse_many():
    return len(ingest.parse_many(blobs20k))


def v_parse_many_1():
    return len(ingest.parse_many(blobs20k, threads=1))


def v_email():
    return sum(1 for b in blobs20k if email_fields(b))


def v_subprocess():
    p = subprocess.run([INGEST, "-q", m20k], capture_output=True, check=True)
    return sum(1 for line in p.stdout.splitlines() if json.loads(line))


def v_scan():
    return sum(1 for _ in ingest.scan(m20k))


def v_cli_null():
    with open(os.devnull, "wb") as null:
        subprocess.run([INGEST, "-q", m20k], stdout=null, check=True)
    return n20k   # counted once above: writing to /dev/null leaves nothing to count


def repeat(blobs, reps, **kw):
    def run():
        n = 0
        for _ in range(reps):
            n += len(ingest.parse_many(blobs, **kw))
        return n // reps
    return run


def v_control():
    bytearray(joined)
    return n20k


PAGE_REPS, LARGE_REPS = 2000, 100
variants = {
    "parse_many 20k": (v_parse_many, n20k),
    "parse_many 20k threads=1": (v_parse_many_1, n20k),
    "python email 20k": (v_email, n20k),
    "subprocess + json.loads 20k": (v_subprocess, n20k),
    "scan() 20k": (v_scan, n20k),
    "command > /dev/null 20k": (v_cli_null, n20k),
    "page16 default threads": (repeat(page16, PAGE_REPS), 16),
    "page16 threads=1": (repeat(page16, PAGE_REPS, threads=1), 16),
    "large16 threads=2": (repeat(large16, LARGE_REPS, threads=2), 16),
    "large16 threads=1": (repeat(large16, LARGE_REPS, threads=1), 16),
    "control: memcpy of the 20k corpus": (v_control, n20k),
}
times = {k: [] for k in variants}
cpus = {k: [] for k in variants}
load = []
names = list(variants)
for r in range(args.rounds):
    read_all(paths20k)   # warm: this VM evicts pages left unused for a minute
    load.append(os.getloadavg()[0])
    order = names[r % len(names):] + names[:r % len(names)]
    for k in order:
        fn, want = variants[k]
        t, c, n = timed(fn)
        expect(n, want, k)
        times[k].append(t)
        cpus[k].append(c)
    print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)


def med(k):
    return statistics.median(times[k])


def cpu(k):
    return statistics.median(cpus[k])


def spread(k):
    m = med(k)
    return (max(times[k]) - min(times[k])) / m if m else 0.0


noise = spread("control: memcpy of the 20k corpus")


def rss_run(code_or_cmd, python):
    cmd = [sys.executable, "-c", code_or_cmd] if python else code_or_cmd
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    with open(os.devnull, "wb") as null:
        p = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, stdout=null, stderr=subprocess.PIPE,
                           env=env, check=True, text=True)
    return int(p.stderr.strip().splitlines()[-1]) * 1024


memory = None
if not args.no_100k:
    print("mailbox100k...", file=sys.stderr)
    m100k = corpus("mailbox100k", "maildir")
    n100k = len(files_of(m100k))
    read_all(files_of(m100k))
    cli_rss = rss_run([INGEST, "-q", m100k], False)
    scan_code = ("import ingest, sys\nn = sum(1 for _ in ingest.scan(sys.argv[1]))\n"
                 "assert n == int(sys.argv[2]), n\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    with open(os.devnull, "wb") as null:
        p = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-c", scan_code, m100k,
                            str(n100k)], stdout=null, stderr=subprocess.PIPE, env=env, text=True)
    if p.returncode:
        sys.exit("scan over mailbox100k failed: " + p.stderr[-500:])
    scan_rss = int(p.stderr.strip().splitlines()[-1]) * 1024
    base_rss = rss_run("import ingest", True)
    memory = (n100k, cli_rss, scan_rss, base_rss)


def rate(k, n):
    return n / med(k)


rows = []


def row(name, a, b, target, higher_is_better=True):
    ra, rb = med(a), med(b)
    ratio = rb / ra if higher_is_better else ra / rb
    cpu_ratio = cpu(b) / cpu(a) if higher_is_better else cpu(a) / cpu(b)
    ok = ratio >= target if higher_is_better else ratio <= target
    claim = "within noise" if abs(ratio - 1) < noise else ("met" if ok else "NOT met")
    # each round ran both variants: its own ratio shows what one
    # disturbed round did to the median
    rounds = [(tb / ta if higher_is_better else ta / tb) for ta, tb in zip(times[a], times[b])]
    rows.append((name, a, b, ratio, cpu_ratio, target, claim, rounds))


row("parse_many vs Python email (msgs/s)", "parse_many 20k", "python email 20k", 100)
row("parse_many threads=1 vs Python email (msgs/s)", "parse_many 20k threads=1", "python email 20k",
    100)
row("parse_many vs subprocess + json.loads", "parse_many 20k", "subprocess + json.loads 20k", 3)
row("page16: default threads vs threads=1 (time ratio, want <= 1.05)", "page16 default threads",
    "page16 threads=1", 1.05, higher_is_better=False)
row("large16: threads=2 vs threads=1 (speed-up)", "large16 threads=2", "large16 threads=1", 1.7)
row("scan() vs command > /dev/null (time ratio, want <= 1.3)", "scan() 20k",
    "command > /dev/null 20k", 1.3, higher_is_better=False)

try:
    opts = json.loads(subprocess.run(["meson", "introspect", BUILD, "--buildoptions"],
                                     capture_output=True, text=True, check=True).stdout)
    buildtype = next(o["value"] for o in opts if o["name"] == "buildtype")
except (OSError, subprocess.CalledProcessError, StopIteration, ValueError):
    buildtype = "unknown"
commit = subprocess.run(["git", "-C", TOP, "rev-parse", "--short", "HEAD"], capture_output=True,
                        text=True).stdout.strip()
lines = [
    "## Python module (bench/python_bench.py)",
    "",
    f"Commit {commit}; {platform.machine()} {os.cpu_count()} CPUs "
    f"({open('/proc/cpuinfo').read().split('model name')[1].split(':')[1].splitlines()[0].strip()}), "
    f"kernel {platform.release()}, Python {platform.python_version()}; build `{os.path.basename(BUILD)}` "
    f"(buildtype {buildtype}). {args.rounds} interleaved rounds, each round's variants in a "
    "rotated order, warm page cache (every file read before each round); the median of the rounds "
    "and the spread (max-min)/median. Record counts checked in every run. "
    f"Load average at the rounds' starts: {', '.join(f'{x:.1f}' for x in load)} (the machine is "
    "shared: ratios measured side by side, not absolute times, are the result).",
    "",
    f"Noise floor (the control's spread): {noise:.1%}.",
    "",
    "| variant | median s | spread | per second | median CPU s |",
    "|---|---|---|---|---|",
]
for k in names:
    fn, want = variants[k]
    per = want * (PAGE_REPS if k.startswith("page16") else LARGE_REPS if k.startswith("large16") else 1)
    lines.append(f"| {k} | {med(k):.4f} | {spread(k):.1%} | {per / med(k):,.0f} msgs | {cpu(k):.4f} |")
lines += ["", "The verdict is on the wall-time ratio, \"within noise\" when it is nearer 1 than the "
          "noise floor; the CPU ratio (the same ratio of median CPU-seconds, children included) is "
          "beside it because the machine is shared.", "",
          "| comparison | ratio | CPU ratio | target | verdict | per round |", "|---|---|---|---|---|---|"]
for name, a, b, ratio, cpu_ratio, target, claim, rounds in rows:
    per = " ".join(f"{x:.2f}" for x in rounds)
    lines.append(f"| {name} | {ratio:.2f} | {cpu_ratio:.2f} | {target} | {claim} | {per} |")
if memory:
    n100k, cli_rss, scan_rss, base_rss = memory
    lines += ["", f"Memory, mailbox100k ({n100k:,} files), peak RSS (`/usr/bin/time -f %M`), one run each: "
              f"the command {cli_rss / 1e6:.1f} MB, scan() {scan_rss / 1e6:.1f} MB "
              f"(ratio {scan_rss / cli_rss:.2f}, target <= 1.5), of which the interpreter with the "
              f"module imported {base_rss / 1e6:.1f} MB."]
text = "\n".join(lines) + "\n"
print(text)
old = open(args.out).read() if os.path.exists(args.out) else "# Python module benchmarks\n\n"
head = old.split("## Python module (bench/python_bench.py)")[0]
with open(args.out, "w") as f:
    f.write(head.rstrip() + "\n\n" + text)
