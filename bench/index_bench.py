#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""`ingest --index` against `notmuch new`, `mu index` and mairix on a generated Maildir.

Method (the house method of bench/README.md, reduced to what an indexer is):
interleaved rounds, each tool once per round in a rotating order, each run on
a fresh index, hot cache (one untimed read of the corpus first); the median of
the rounds and their min–max, wall and CPU seconds (user + system of the
process and its threads, from wait4); ingest runs twice in each round, and the
spread of the two is the noise floor (the control); record counts verified
after every run (rows in the database, `notmuch count '*'`, `mu info store`,
`mairix -d`).  Then, once each: the
re-run with nothing changed (the fastest of three) beside its floor, one
stat of every file in a C loop over the corpus' file list (bench/naive_read.c
`--stat-only`, no walk, no database; the fastest of three), the re-run after 1% of the messages changed flags
and 1% were added (on a hard-linked copy of the corpus), the index size on disk,
peak RSS (GNU time's maximum resident size), and search latency: the median of
100 queries of each kind (words from subjects, From addresses, drawn with a fixed seed
from the index), each a whole command (`ingest search`, `notmuch search`,
`mu find`), process start included.

Usage: bench/index_bench.py [--ingest BIN] [--count N] [--rounds N] [--out FILE]
                            [--tools ingest,notmuch,mu,mairix] [--naive BIN]
Writes a Markdown report (default bench/INDEX.md) and prints it."""
import argparse
import os
import platform
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def sh(cmd, env=None, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if check and p.returncode:
        sys.exit(f"{cmd}: exit {p.returncode}: {p.stderr[-400:]}")
    return p


def timed(cmd, env=None):
    """Wall seconds and peak RSS (KiB) of one command; its CPU seconds in
    timed.cpu and its standard error in timed.stderr.  The
    peak comes from GNU time: a child forked from this Python process
    starts its ru_maxrss at the parent's size (the kernel keeps the high
    mark across exec), so wait4's own figure is a floor, not the tool's."""
    t0 = time.perf_counter()
    p = subprocess.Popen(["/usr/bin/time", "-f", "maxrss %M"] + cmd, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode(errors="replace")
    p.stderr.close()
    if os.waitstatus_to_exitcode(status):
        sys.exit(f"{cmd}: exit {os.waitstatus_to_exitcode(status)}: {err[-400:]}")
    timed.cpu = ru.ru_utime + ru.ru_stime
    timed.stderr = err
    m = re.findall(r"^maxrss (\d+)$", err, re.M)
    return wall, int(m[-1]) if m else ru.ru_maxrss


def du(*paths):
    total = 0
    for p in paths:
        if os.path.isfile(p):
            total += os.path.getsize(p)
        for d, _, files in os.walk(p):
            total += sum(os.path.getsize(os.path.join(d, f)) for f in files)
    return total


def count_messages(root):
    n = 0
    for d, dirs, files in os.walk(root):
        if "tmp" in dirs:
            dirs.remove("tmp")
        n += len(files)
    return n


class Ingest:
    name = "ingest --index"

    def __init__(self, binary, work, corpus):
        self.bin, self.db, self.corpus = binary, os.path.join(work, "ingest.db"), corpus

    def fresh(self):
        for s in ("", "-wal", "-shm", ".new"):
            if os.path.exists(self.db + s):
                os.unlink(self.db + s)

    def index(self):
        return timed([self.bin, "--index=" + self.db, self.corpus])

    def count(self):
        c = sqlite3.connect(self.db)
        n = c.execute("SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM errors)").fetchone()[0]
        c.close()
        return n

    def size(self):
        return du(self.db, self.db + "-wal")

    def search(self, kind, q):
        return [self.bin, "search", self.db, ("from:" if kind == "from" else "") + q, "--limit=20"]


class Notmuch:
    name = "notmuch new"

    def __init__(self, work, corpus):
        self.d, self.corpus = os.path.join(work, "notmuch"), corpus
        self.env = dict(os.environ, NOTMUCH_CONFIG=os.path.join(self.d, "config"))

    def fresh(self):
        shutil.rmtree(self.d, ignore_errors=True)
        os.makedirs(os.path.join(self.d, "db"))
        with open(self.env["NOTMUCH_CONFIG"], "w") as f:
            f.write(f"[database]\nmail_root={self.corpus}\npath={self.d}/db\n[new]\ntags=new\n"
                    "[maildir]\nsynchronize_flags=true\n")

    def index(self):
        return timed(["notmuch", "new", "--quiet"], env=self.env)

    def count(self):
        return int(sh(["notmuch", "count", "*"], env=self.env).stdout.strip())

    def size(self):
        return du(os.path.join(self.d, "db"))

    def search(self, kind, q):
        return ["notmuch", "search", "--limit=20", ("from:" if kind == "from" else "") + q]


class Mu:
    name = "mu index"

    def __init__(self, work, corpus):
        self.d, self.corpus = os.path.join(work, "mu"), corpus

    def fresh(self):
        shutil.rmtree(self.d, ignore_errors=True)
        sh(["mu", "init", "--muhome=" + self.d, "--maildir=" + self.corpus])

    def index(self):
        return timed(["mu", "index", "--quiet", "--muhome=" + self.d])

    def count(self):
        m = re.search(r"messages in store\s*\|\s*(\d+)", sh(["mu", "info", "--muhome=" + self.d, "store"]).stdout)
        return int(m.group(1)) if m else -1

    def size(self):
        return du(self.d)

    def search(self, kind, q):
        return ["mu", "find", "--muhome=" + self.d, "--maxnum=20", ("from:" if kind == "from" else "") + q]


class Mairix:
    name = "mairix"

    def __init__(self, work, corpus):
        self.d, self.corpus = os.path.join(work, "mairix"), corpus
        self.rc = os.path.join(self.d, "rc")

    def fresh(self):
        shutil.rmtree(self.d, ignore_errors=True)
        os.makedirs(self.d)
        with open(self.rc, "w") as f:
            f.write(f"base={os.path.dirname(self.corpus)}\nmaildir={os.path.basename(self.corpus)}...\n"
                    f"mfolder={self.d}/results\ndatabase={self.d}/db\n")

    def index(self):
        return timed(["mairix", "-f", self.rc])

    def count(self):
        # live entries: a message renamed away stays as DEAD until a purge
        return len(re.findall(r"^\s*\d+: FILE ", sh(["mairix", "-f", self.rc, "-d"]).stdout, re.M))

    def size(self):
        return du(os.path.join(self.d, "db"))

    def search(self, kind, q):
        # mairix 0.24 leaves its lock behind when nothing matches (exit 1)
        # and then refuses the next command: the lock goes after each query
        # (a shell's start is in its latency)
        return ["sh", "-c", 'mairix -f "$1" "$2"; r=$?; rm -f "$3"; exit $r', "sh", self.rc,
                ("f:" if kind == "from" else "s:") + q, os.path.join(self.d, "db.lock")]


def search_queries(db):
    """The latency queries: 100 words of five letters or more from the
    subjects and 100 From addresses, drawn with seed 1 from an ingest index,
    as (kind, value) with kind "word" or "from" (bench/search_ab.py draws
    the same)."""
    c = sqlite3.connect(db)
    rnd = random.Random(1)
    vocab = sorted({w for (s,) in c.execute("SELECT subject FROM messages") for w in re.findall(r"[a-z]{5,}", s or "")})
    senders = sorted({x for (x,) in c.execute("SELECT address FROM addresses WHERE role = 'from'") if x})
    c.close()
    return [("word", w) for w in rnd.sample(vocab, min(100, len(vocab)))] + \
           [("from", x) for x in rnd.sample(senders, min(100, len(senders)))]


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingest", default=os.path.join(HERE, "work", "build-index", "src", "ingest"))
    ap.add_argument("--count", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default=os.path.join(HERE, "work", "index"))
    ap.add_argument("--out", default=os.path.join(HERE, "INDEX.md"))
    ap.add_argument("--tools", default="ingest,notmuch,mu,mairix",
                    help="which tools (ingest always; mairix only where installed)")
    ap.add_argument("--naive", help="bench/naive_read.c built (default: built into --work)")
    a = ap.parse_args()
    if not a.naive:
        a.naive = os.path.join(a.work, "naive_read")
        os.makedirs(a.work, exist_ok=True)
        sh(["cc", "-O2", "-o", a.naive, os.path.join(HERE, "naive_read.c")])
    if not os.path.exists(a.ingest):
        build = os.path.dirname(os.path.dirname(a.ingest))
        sh(["meson", "setup", build, ROOT, "--buildtype=release", "-Dtests=false"])
        sh(["ninja", "-C", build])
    os.makedirs(a.work, exist_ok=True)
    shape = {20000: "mailbox20k", 100000: "mailbox100k", 2000: "mailbox2k"}[a.count]
    corpus = os.path.join(a.work, shape)
    if not os.path.isdir(corpus):
        sh([sys.executable, os.path.join(HERE, "..", "tools", "mkcorpus"), "--seed", "1", "--out", corpus, "--shape", shape])
    n = count_messages(corpus)
    subprocess.run(f"find {corpus} -type f -print0 | xargs -0 cat > /dev/null", shell=True, check=True)
    want = set(a.tools.split(","))
    if "mairix" in want and not shutil.which("mairix"):
        want.discard("mairix")
    peers = [c for c, k in ((Notmuch, "notmuch"), (Mu, "mu"), (Mairix, "mairix")) if k in want]
    tools = [Ingest(a.ingest, a.work, corpus)] + [c(a.work, corpus) for c in peers]
    fresh = {t.name: [] for t in tools}
    cpu = {t.name: [] for t in tools}
    rss = {t.name: [] for t in tools}
    control = []
    loads = []
    for r in range(a.rounds):
        order = tools[r % len(tools):] + tools[:r % len(tools)]
        for t in order + [tools[0]]:
            t.fresh()
            loads.append(os.getloadavg()[0])
            wall, kib = t.index()
            got = t.count()
            if got != n:
                sys.exit(f"{t.name}: {got} messages in its index, {n} inputs")
            if t is tools[0] and len(fresh[t.name]) > r:
                control.append((wall, timed.cpu))   # the control: ingest again
            else:
                fresh[t.name].append(wall)
                cpu[t.name].append(timed.cpu)
                rss[t.name].append(kib)
            print(f"round {r + 1}: {t.name} {wall:.2f} s, {timed.cpu:.2f} CPU-s, {kib} KiB", flush=True)
    # the last round's indexes stay: re-run with nothing changed, size, search
    rerun, rerun_cpu, size = {}, {}, {}
    for t in tools:
        runs = []
        for _ in range(3):
            runs.append((t.index()[0], timed.cpu))
        rerun[t.name], rerun_cpu[t.name] = min(runs)
        size[t.name] = t.size()
        if t.count() != n:
            sys.exit(f"{t.name}: count changed on a re-run")
    # the floor of any re-run that looks at every file: one stat each, nothing else
    listing = os.path.join(a.work, shape + ".list")
    with open(listing, "w") as f:
        for d, dirs, fs in os.walk(corpus):
            if "tmp" in dirs:
                dirs.remove("tmp")
            f.writelines(os.path.join(d, x) + "\n" for x in fs)
    floor = []
    for _ in range(3):
        t0 = time.perf_counter()
        p = sh([a.naive, "--stat-only", listing])
        floor.append(time.perf_counter() - t0)
        if not p.stdout.startswith(f"files {n} ") or not p.stdout.strip().endswith("errors 0"):
            sys.exit(f"naive_read --stat-only: {p.stdout.strip()}, {n} inputs")
    floor = min(floor)
    queries = search_queries(tools[0].db)
    lat = {(t.name, k): [] for t in tools for k in ("word", "from")}
    for kind, q in queries:
        for t in tools:
            t0 = time.perf_counter()
            p = sh(t.search(kind, q), env=getattr(t, "env", None), check=False)
            # no match: mu exits 4, mairix 1
            if p.returncode not in (0, 4 if isinstance(t, Mu) else 1 if isinstance(t, Mairix) else 0):
                sys.exit(f"{t.search(kind, q)}: exit {p.returncode}: {p.stderr[-300:]}")
            lat[(t.name, kind)].append((time.perf_counter() - t0) * 1000)
    # 1% flag changes + 1% additions, on a hard-linked copy
    copy = os.path.join(a.work, shape + "-changed")
    shutil.rmtree(copy, ignore_errors=True)
    # the corpus itself, not a symlink to it: cp -a copies a symlink as
    # one, and the changes below would then land in the corpus
    subprocess.run(["cp", "-al", os.path.realpath(corpus), copy], check=True)
    ctools = [Ingest(a.ingest, a.work, copy)] + [c(a.work, copy) for c in peers]
    ctools[0].db = os.path.join(a.work, "ingest-changed.db")
    for t in ctools:
        t.fresh()
        t.index()
    files = sorted(os.path.join(d, f) for d, _, fs in os.walk(copy) if os.path.basename(d) == "cur" for f in fs)
    rnd = random.Random(2)
    k = n // 100
    for p in rnd.sample(files, k):
        base, _, flags = p.partition(":2,")
        os.rename(p, base + ":2," + ("".join(sorted(set(flags + "F"))) if "F" not in flags else flags.replace("F", "")))
    newdir = os.path.join(copy, "new")
    # new messages: copies under a new unique name and a new Message-ID
    # (notmuch counts Message-IDs, so a plain copy would not count)
    originals = [p for p in files if os.path.exists(p)]
    for i, p in enumerate(rnd.sample(originals, k)):
        data = open(p, "rb").read()
        data = re.sub(rb"(?im)^message-id:\s*<", b"Message-ID: <added%d." % i, data, count=1)
        with open(os.path.join(newdir, f"1900000000.added{i}.bench"), "wb") as f:
            f.write(data)
    expect = count_messages(copy)
    changed = {}
    for t in ctools:
        changed[t.name] = t.index()[0]
        if t.count() != expect:
            sys.exit(f"{t.name}: {t.count()} after the changes, {expect} inputs")
    shutil.rmtree(copy, ignore_errors=True)

    def ratio(peer, t, times=fresh):
        """The median of the per-round ratios time(peer)/time(t), and their range:
        both ran in the same round, under the same load."""
        rs = [p / x for p, x in zip(times[peer], times[t])]
        return f"{med(rs):.1f}x ({min(rs):.1f}–{max(rs):.1f})"

    def row(t):
        f, c = fresh[t], cpu[t]
        peers = "".join(ratio(p.name, t) + " | " for p in tools[1:])
        return (f"| {t} | {med(f):.2f} ({min(f):.2f}–{max(f):.2f}) | {med(c):.2f} ({min(c):.2f}–{max(c):.2f}) | "
                f"{n / med(f):,.0f} | {peers}"
                f"{rerun[t]:.3f} ({rerun_cpu[t]:.3f}) | {changed[t]:.2f} | {size[t] / 1e6:.0f} | {max(rss[t]) / 1024:.0f} |")

    # the noise floor: ingest's two runs of each round, as a relative spread
    noise_wall = [abs(w - x) / min(w, x) for (w, _), x in zip(control, fresh[tools[0].name])]
    noise_cpu = [abs(c - x) / min(c, x) for (_, c), x in zip(control, cpu[tools[0].name])]

    def goals():
        """The issue's goals, each with its verdict from this run's figures."""
        me = tools[0].name
        out = []

        def line(what, got, ok):
            out.append(f"- {what}: {got}: **{'met' if ok else 'not met'}**")

        for peer, want in (("notmuch new", 50), ("mu index", 20)):
            if peer in fresh:
                r = med([p / x for p, x in zip(fresh[peer], fresh[me])])
                line(f"first index at least {want}x faster than `{peer}` (median of the rounds' wall ratios)",
                     f"{r:.1f}x", r >= want)
        if "notmuch new" in size:
            line("index no larger than notmuch's database", f"{size[me] / 1e6:.0f} MB against "
                 f"{size['notmuch new'] / 1e6:.0f} MB", size[me] <= size["notmuch new"])
            want = rerun["notmuch new"] / 10
            line("re-run with nothing changed at least 10x faster than notmuch's", f"{rerun[me]:.3f} s against "
                 f"{want:.4f} s wanted; one stat a file alone takes {floor:.3f} s", rerun[me] <= want)
        w, f = med(lat[(me, "word")]), med(lat[(me, "from")])
        line(f"search under 10 ms (goal set at 100,000 messages; this run has {n:,})",
             f"{w:.1f} ms for a word, {f:.1f} ms for `from:`", max(w, f) < 10)
        return out

    git = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], check=False).stdout.strip()
    mu_version = sh(["mu", "--version"]).stdout.splitlines()[0].split("version")[-1].strip()
    model = next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")
    md = [
        "# ingest --index against notmuch, mu and mairix",
        "",
        f"Generated by `bench/index_bench.py --count {a.count} --rounds {a.rounds}` at commit {git}. "
        f"Machine: a {os.cpu_count()}-core VM ({model}), Linux {platform.release()}, "
        f"SQLite {sqlite3.sqlite_version}, {sh(['notmuch', '--version']).stdout.strip()}, mu {mu_version}. "
        f"Corpus: `tools/mkcorpus --seed 1 --shape {shape}` ({n:,} messages, {du(corpus) / 1e6:.0f} MB), hot cache. "
        f"Load average (1 min) at the start of the timed runs: {min(loads):.1f}–{max(loads):.1f} "
        "(other work shared the machine: absolute times are inflated, ratios within a round less so).",
        "",
        "Method: " + __doc__.split("Method (the house method of bench/README.md, reduced to what an indexer is):")[1]
        .split("Usage:")[0].strip().replace("\n", " "),
        "",
        "Rounds (wall s / CPU s): " + "; ".join(
            f"{t.name} " + ", ".join(f"{w:.2f}/{c:.2f}" for w, c in zip(fresh[t.name], cpu[t.name]))
            for t in tools) + "; control (ingest again) " + ", ".join(f"{w:.2f}/{c:.2f}" for w, c in control) + ".",
        "",
        f"Noise floor (ingest's two runs in a round): wall {100 * max(noise_wall):.0f} %, "
        f"CPU {100 * max(noise_cpu):.0f} % at most.",
        "",
        "| tool | fresh index, wall s: median (min–max) | CPU s | messages/s | " +
        "".join(f"speed vs {p.name} (per round) | " for p in tools[1:]) +
        "re-run, nothing changed, s (CPU s) | re-run after 1% flags + 1% new, s | index size, MB | peak RSS, MiB |",
        "|---|" + "---:|" * (len(tools) + 6),
    ] + [row(t.name) for t in tools] + ([
        "",
        "The same ratios in CPU seconds (less disturbed by the other work on the machine, blind to "
        "time spent waiting for the disk): " + "; ".join(
            f"ingest against {p.name} {ratio(p.name, tools[0].name, cpu)}" for p in tools[1:]) + ".",
    ] if len(tools) > 1 else []) + [
        "",
        f"Search latency, median of {sum(k == 'word' for k, _ in queries)} word and "
        f"{sum(k == 'from' for k, _ in queries)} `from:` queries (ms, whole command):",
        "",
        "| tool | word query | from: query |",
        "|---|---:|---:|",
    ] + [f"| {t.name.split()[0]} | {med(lat[(t.name, 'word')]):.1f} | {med(lat[(t.name, 'from')]):.1f} |"
         for t in tools] + [
        "",
        f"The floor of a re-run with nothing changed: one stat of each of the {n:,} files in a C loop "
        f"(bench/naive_read.c `--stat-only`, given the list: no walk, no database, no process but its "
        f"own) took {floor:.3f} s; ingest's re-run {rerun[tools[0].name]:.3f} s"
        + (f", notmuch's {rerun['notmuch new']:.3f} s (it skips a directory whose mtime is unchanged, "
           f"so it never looks at a file rewritten in place)" if "notmuch new" in rerun else "") + ".",
        "",
        "Goals:",
        "",
    ] + goals() + [""]
    text = "\n".join(md)
    with open(a.out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
