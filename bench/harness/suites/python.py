# SPDX-License-Identifier: MIT
"""python: the Python module in process (bench/python_bench.py) with the build this run made:
parse_many against Python `email` and against spawning the command and decoding its JSON, the
16 x 1 KiB page and large16 across thread counts, scan() against the command, and scan()'s peak
RSS against the command's.  Its own rounds, control and noise floor (python_bench.py's docstring).
"""

import glob
import os
import sys

from ..context import BENCH, WORK
from ..sysutil import sh

TITLE = "## python: the module in process"


def suite_python(ctx):
    build = os.path.dirname(os.path.dirname(ctx.ingest))
    if ctx.external or not glob.glob(os.path.join(build, "python", "ingest*.so")):
        return [TITLE, "", "Not run: the Python module is built only from this tree with the interpreter's headers "
                "(python3-dev), and not with --ingest.", ""]
    out = os.path.join(WORK, "python-section.md")
    if os.path.exists(out):
        os.remove(out)
    sh([sys.executable, os.path.join(BENCH, "python_bench.py"), "--build", build, "--rounds", str(ctx.rounds),
        "--out", out] + (["--no-100k"] if ctx.quick else []))
    # python_bench.py's page: its title, then its section, whose heading this one replaces
    text = open(out).read().split("## Python module (bench/python_bench.py)", 1)[-1].strip("\n").splitlines()
    return [TITLE, "", "`bench/python_bench.py` run by this harness with the build it made (the module beside "
            "the ingest measured above); its rows and method are in its docstring, `bench/PYTHON.md` keeps "
            "the earlier runs.", ""] + text + [""]
