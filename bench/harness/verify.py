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


# A record's thread_id: threads are joined within a run (README, "Threads"),
# so runs over parts of a list give some messages another thread than one
# run over the whole list; every other byte must be the same.
THREAD_ID = re.compile(rb',"thread_id":"[0-9a-f]{16}"')


class OutputHash:
    """sha256 of an output (sha) and of the same with thread_id removed
    (sha_without_thread_id), fed in chunks of any size: the removal is
    done a line at a time."""

    def __init__(self):
        self.h, self.ht = hashlib.sha256(), hashlib.sha256()
        self.rest = b""

    def update(self, data):
        self.h.update(data)
        data = self.rest + data
        cut = data.rfind(b"\n") + 1
        self.ht.update(THREAD_ID.sub(b"", data[:cut]))
        self.rest = data[cut:]

    def store(self, r):
        r.sha = self.h.hexdigest()
        self.ht.update(THREAD_ID.sub(b"", self.rest))
        r.sha_without_thread_id = self.ht.hexdigest()


def v_lines_sha(b, r):
    ok, det = v_lines(b, r)
    h = OutputHash()
    with open(r.out, "rb") as f:
        while True:
            c = f.read(1 << 24)
            if not c:
                break
            h.update(c)
    h.store(r)
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
