# SPDX-License-Identifier: MIT
"""Verifiers: every run checks its own work.  Each takes (bench, run) and
returns (ok, detail); a run that fails its check is shown as FAILED and
never timed.
"""

import hashlib
import os
import re


def count_newlines(path):
    n = 0
    with open(path, "rb") as f:
        while True:
            c = f.read(1 << 24)
            if not c:
                return n
            n += c.count(b"\n")


def v_lines(b, r):
    n = count_newlines(r.out)
    return n == b.msgs, "records %d, inputs %d" % (n, b.msgs)


def v_lines_sha(b, r):
    ok, det = v_lines(b, r)
    h = hashlib.sha256()
    with open(r.out, "rb") as f:
        while True:
            c = f.read(1 << 24)
            if not c:
                break
            h.update(c)
    r.sha = h.hexdigest()
    return ok, det


def v_files_line(b, r):
    m = re.search(rb"files (\d+) bytes (\d+) errors (\d+)", open(r.out, "rb").read())
    if not m:
        return False, "no summary line"
    n, nb, e = (int(x) for x in m.groups())
    return (n == b.msgs and e == 0 and nb == b.bytes,
            "files %d of %d, bytes %d of %d, errors %d" % (n, b.msgs, nb, b.bytes, e))


def v_memcpy(b, r):
    m = re.search(rb"bytes (\d+)", open(r.out, "rb").read())
    return bool(m) and int(m.group(1)) == b.bytes, "control"


def v_nul_scratch(b, r):
    n = open(r.scratch, "rb").read().count(b"\0")
    return n == b.msgs, "files handed to cat %d, inputs %d" % (n, b.msgs)


def v_inproc(b, r):
    j = getattr(r, "inproc", None)
    if not j:
        return False, "no summary"
    first = int(open(r.out, "rb").read().split()[0])
    return (first == b.msgs and j["messages"] % b.msgs == 0,
            "messages %d per pass of %d" % (first, b.msgs))


def v_distinct_first_field(b, r):
    seen = set()
    with open(r.out, "rb") as f:
        for line in f:
            seen.add(line.split(b"\t", 1)[0])
    return len(seen) == b.msgs, "messages seen %d, inputs %d" % (len(seen), b.msgs)


def v_stats_files(b, r):
    s = r.stats or {}
    n = count_newlines(r.out) if os.path.exists(r.out) and os.path.getsize(r.out) else None
    files = s.get("files")
    if n is None:
        return files == b.msgs, "stats files %s, inputs %d" % (files, b.msgs)
    return n == b.msgs, "records %d, inputs %d" % (n, b.msgs)
