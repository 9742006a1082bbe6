# SPDX-License-Identifier: MIT
"""memory: peak RSS, by bench/memory, with the ingest this run built.
"""

import os
import sys

from ..context import BENCH, WORK
from ..sysutil import sh


def suite_memory(ctx):
    """Peak RSS for 10,000 / 100,000 / 1,000,000 small files and a 4 GiB mbox: bench/memory's table (it also
    keeps bench/MEMORY.md), measured with the ingest this run built; peak RSS does not depend on the load."""
    if not os.path.exists("/usr/bin/time"):
        return ["## memory: peak RSS", "", "/usr/bin/time: not installed (apt install time)", ""]
    out = os.path.join(WORK, "memory-section.md")
    mem = os.path.join(WORK, "memory-figures.json")
    sh([sys.executable, os.path.join(BENCH, "memory"), "--ingest=" + ctx.ingest, "--out=" + out, "--save=" + mem]
       + (["--quick"] if ctx.quick else []))
    text = open(out).read().splitlines()
    # bench/memory's page starts with its own title and "Written by" line: the section keeps the rest
    body = [("#" + ln if ln.startswith("## ") else ln) for ln in text[1:] if not ln.startswith("Written by")]
    if not ctx.quick:
        sh([sys.executable, os.path.join(BENCH, "memory"), "--render=" + mem,
            "--out=" + os.path.join(ctx.chart_dir, "MEMORY.md")])
    return ["## memory: peak RSS", "", "`bench/memory` run by this harness with the ingest it built "
            "(`/usr/bin/time -v`, one warm-up run then one measured run per input)."] + body
