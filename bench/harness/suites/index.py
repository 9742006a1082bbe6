# SPDX-License-Identifier: MIT
"""index: `ingest --index` against `notmuch new`, `mu index` and mairix (bench/index_bench.py) with
the ingest this run measures: a fresh index in interleaved rounds, the re-run with nothing changed
beside its floor (one stat a file), the re-run after 1% of the messages changed, the size on disk,
peak RSS and search latency, each goal with its verdict; then ingest alone at 100,000 messages,
where the search goal is set.  Its own rounds, control and noise floor (index_bench.py's
docstring); the peers that are not installed are left out and named.
"""

import os
import shutil
import sys

from ..context import BENCH, WORK
from ..sysutil import sh

TITLE = "## index: a searchable index against notmuch, mu and mairix"


def one(ctx, count, rounds, tools):
    out = os.path.join(WORK, "index-section-%d.md" % count)
    if os.path.exists(out):
        os.remove(out)
    sh([sys.executable, os.path.join(BENCH, "index_bench.py"), "--ingest", ctx.ingest, "--naive", ctx.naive,
        "--count", str(count), "--rounds", str(rounds), "--tools", ",".join(tools),
        "--work", os.path.join(WORK, "index"), "--out", out])
    # index_bench.py's page: its title, then the report, whose heading this section's replaces
    return open(out).read().split("\n", 1)[1].strip("\n").splitlines()


def suite_index(ctx):
    peers = [t for t, cmd in (("notmuch", "notmuch"), ("mu", "mu"), ("mairix", "mairix")) if shutil.which(cmd)]
    missing = [t for t in ("notmuch", "mu", "mairix") if t not in peers]
    lines = [TITLE, ""]
    if missing:
        lines += ["Not installed, so not run: %s (`bench/run --install-peers`)." % ", ".join(missing), ""]
    count = 2000 if ctx.quick else 20000
    lines += ["### %s messages, with the peers" % format(count, ","), ""]
    lines += one(ctx, count, min(ctx.rounds, 3), ["ingest"] + peers) + [""]
    if not ctx.quick:
        lines += ["### 100,000 messages, ingest alone (the peers would take over 40 minutes a round here)", ""]
        lines += one(ctx, 100000, 1, ["ingest"]) + [""]
    return lines
