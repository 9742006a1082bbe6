#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""thread_id against notmuch's threads (README, "Threads").

    test_threads.py --ingest PATH --corpus tests/corpus/real/notmuch \\
                    --expected tests/identity/notmuch-threads.json
    test_threads.py --corpus ... --expected ... --regenerate   # needs notmuch

notmuch-threads.json is the partition of the corpus' files into threads as
`notmuch new` then `notmuch search --output=threads` / `--output=files`
compute it (notmuch 0.37, a fresh database, no tags, no flag sync): a list
of threads, each the sorted list of its files' paths below the corpus.  A
file agrees when the files sharing its thread_id are exactly the files of
its notmuch thread; at least 99 % must.

Exit 0 pass, 1 fail.
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

WANT = 0.99


def regenerate(corpus, expected):
    work = tempfile.mkdtemp(prefix="ingest-threads-")
    try:
        mail = os.path.join(work, "mail")
        shutil.copytree(corpus, mail)
        cfg = os.path.join(work, "config")
        with open(cfg, "w") as f:
            f.write("[database]\npath=%s\n[new]\ntags=\n[maildir]\nsynchronize_flags=false\n" % mail)
        env = dict(os.environ, NOTMUCH_CONFIG=cfg)
        subprocess.run(["notmuch", "new", "--quiet"], env=env, check=True)
        threads = subprocess.run(["notmuch", "search", "--output=threads", "*"], env=env,
                                 check=True, capture_output=True, text=True).stdout.split()
        part = []
        for t in threads:
            files = subprocess.run(["notmuch", "search", "--output=files", t], env=env, check=True,
                                   capture_output=True, text=True).stdout.splitlines()
            part.append(sorted(os.path.relpath(f, mail) for f in files if f))
        with open(expected, "w") as f:
            json.dump(sorted(part), f, indent=0)
            f.write("\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingest")
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--expected", required=True)
    ap.add_argument("--regenerate", action="store_true")
    a = ap.parse_args()
    if a.regenerate:
        regenerate(a.corpus, a.expected)
        return 0
    part = json.load(open(a.expected))
    notmuch = {f: i for i, files in enumerate(part) for f in files}
    # One run joins threads in the order it reads messages: a reply read
    # before the message that links it to its thread keeps its own root
    # (README, "Threads").  A walk reads in inode order, which is the
    # checkout's, not ingest's: one fresh clone gave 139 of 319 that way,
    # the same run in name, mtime or reverse inode order 319.  The list is
    # given in name order, so the test measures the joining, not the clone.
    listing = "\n".join(sorted(notmuch)) + "\n"
    out = subprocess.run([os.path.abspath(a.ingest), "--fields=path,thread_id", "--files-from=-"],
                         cwd=a.corpus, input=listing.encode(), check=True,
                         capture_output=True).stdout
    ours = {}
    for line in out.decode().splitlines():
        r = json.loads(line)
        if "thread_id" in r:
            ours[r["path"]] = r["thread_id"]
    missing = sorted(set(notmuch) - set(ours))
    if missing:
        print("FAIL: no thread_id for files notmuch threads: %s" % missing[:10])
        return 1
    by_nm = collections.defaultdict(set)
    by_us = collections.defaultdict(set)
    for f in notmuch:
        by_nm[notmuch[f]].add(f)
        by_us[ours[f]].add(f)
    agree = [f for f in notmuch if by_nm[notmuch[f]] == by_us[ours[f]]]
    share = len(agree) / len(notmuch)
    print("thread_id agrees with notmuch on %d of %d files (%.1f %%), %d threads" % (
        len(agree), len(notmuch), 100 * share, len(part)))
    for f in sorted(set(notmuch) - set(agree))[:20]:
        print("  differs: %s" % f)
    if share < WANT:
        print("FAIL: below %.0f %%" % (100 * WANT))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
