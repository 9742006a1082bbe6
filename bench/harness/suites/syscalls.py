# SPDX-License-Identifier: MIT
"""syscalls: strace -f -c of the whole process tree, start-up included, for
ingest's backends and every peer.  Exact counts, one run each.
"""

import os
import subprocess

from ..benches import ingest_bench
from ..context import CTX, outdir
from ..corpora import preheat
from ..method import run_one, subst
from ..peers import index_peers, parse_peers, read_peers
from ..sysutil import have, log


def strace_count(argv, shell=False, env=None, cwd=None):
    od = outdir()
    fn = os.path.join(od, "strace.%d" % CTX.run_seq)
    CTX.run_seq += 1
    cmd = ["strace", "-f", "-c", "-o", fn] + (["bash", "-c", argv] if shell else argv)
    e = dict(os.environ)
    if env:
        e.update(env)
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e, cwd=cwd)
    counts = {}
    total = None
    try:
        for line in open(fn):
            p = line.split()
            if len(p) >= 5 and p[0][0].isdigit():
                name = p[-1]
                calls = int(p[3])
                if name == "total":
                    total = calls
                else:
                    counts[name] = calls
            elif len(p) >= 3 and p[-1] == "total":
                total = int(p[2]) if p[2].isdigit() else int(p[1])
        os.unlink(fn)
    except (OSError, ValueError):
        pass
    if total is None:
        total = sum(counts.values())
    return r.returncode, total, counts


def suite_syscalls(ctx):
    if not have("strace"):
        return ["## syscalls: per message", "", "strace: not installed (apt install strace)", ""]
    md = ["## syscalls: per message (strace -f -c, whole process tree, start-up included)", "",
          "Exact counts, one run each (no timing, no noise). Pipelines count every process (find, xargs, "
          "cat, bash). io_uring operations are not syscalls: ingest --backend=uring submits statx/openat/read/close "
          "on the ring. Verification: a normal run of the same command with its record check precedes the "
          "strace run.", ""]
    corpora = [ctx.c2k] + ([ctx.c20k] if ctx.c20k is not ctx.c2k else [])
    keys = ["openat", "statx", "newfstatat", "fstat", "read", "close", "getdents64", "write", "mmap", "futex",
            "io_uring_enter"]
    md += ["| benchmark | corpus | syscalls | per message | %s | verified |" % " | ".join(keys),
           "|" + "---|" * (5 + len(keys))]
    for c in corpora:
        benches = [ingest_bench(ctx, "ingest --backend=uring", c, ["--backend=uring"], stats=False),
                   ingest_bench(ctx, "ingest --backend=sync", c, ["--backend=sync"], stats=False),
                   ingest_bench(ctx, "ingest --io-only --backend=uring", c, ["--io-only", "--backend=uring"],
                                stats=False),
                   ingest_bench(ctx, "ingest --io-only --backend=sync", c, ["--io-only", "--backend=sync"],
                                stats=False)]
        pp = parse_peers(ctx, c)
        if c is not ctx.c2k and ctx.light:
            pp = [b for b in pp if not b.name.startswith(("Python email", "postal"))]
        benches += read_peers(ctx, c) + pp
        if c is ctx.c2k or not ctx.light:
            benches += index_peers(ctx, c)
        for b in benches:
            if b.missing:
                md.append("| %s | %s | %s |%s" % (b.name, c.name, b.missing, " - |" * (len(keys) + 2)))
                continue
            preheat(c)
            r = run_one(b)
            if not r.ok:
                md.append("| %s | %s | **FAILED: %s** |%s" % (b.name, c.name, r.detail, " - |" * (len(keys) + 2)))
                continue
            if b.pre:
                b.pre()
            argv = subst(b.argv, r.scratch) if b.shell else [subst(a, r.scratch) for a in b.argv]
            log("strace %s on %s" % (b.name, c.name))
            rc, total, counts = strace_count(argv, shell=b.shell, env=b.env)
            for p in (r.scratch, r.scratch + ".jsonl"):
                if os.path.exists(p):
                    os.unlink(p)
            md.append("| %s | %s | %d | %.2f | %s | yes (%s) |" % (
                b.name + (" — " + b.note if b.note else ""), c.name, total, total / c.files,
                " | ".join(str(counts.get(k, 0)) for k in keys), r.detail))
    md.append("")
    if len(corpora) > 1 and ctx.light:
        md += ["Python email, postal-mime, notmuch new and mu index are counted at %s only (`--light`: at 20,000 "
               "they take minutes each under strace)." % ctx.c2k.name, ""]
    return md
