# SPDX-License-Identifier: MIT
"""Building what is measured: ingest from this tree (meson, release), the C
baselines beside it, and what the built binary says about itself.
"""

import json
import os
import re

from .context import BENCH, ROOT, WORK
from .sysutil import log, sh


def source_state():
    """(HEAD, porcelain status of the sources) of the tree being built."""
    genv = dict(os.environ, GIT_OPTIONAL_LOCKS="0")
    commit = sh(["git", "-C", ROOT, "rev-parse", "--short=12", "HEAD"], check=False, env=genv).stdout.strip()
    dirty = sh(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=all", "--", "src", "include",
                "meson.build"], check=False, env=genv).stdout.strip()
    return commit, dirty


def build_ingest(builddir, extra_cflags=None):
    """Release build of the source tree with meson into builddir."""
    args = ["meson", "setup", builddir, ROOT, "-Dbuildtype=release", "-Dtests=false"]
    if extra_cflags:
        args.append("-Dc_args=" + " ".join(extra_cflags))
    if os.path.exists(os.path.join(builddir, "build.ninja")):
        args = ["meson", "setup", "--reconfigure"] + args[2:]
    sh(args)
    sh(["ninja", "-C", builddir])
    exe = os.path.join(builddir, "src", "ingest")
    if not os.path.exists(exe):
        raise RuntimeError("no ingest binary after the build")
    return exe


def compile_flags(builddir):
    try:
        cc = json.load(open(os.path.join(builddir, "compile_commands.json")))
    except (OSError, ValueError):
        return "?"
    for e in cc:
        if e["file"].endswith("main.c"):
            toks = e["command"].split()
            keep = [t for t in toks[1:] if t.startswith(("-O", "-std", "-f", "-m", "-g", "-D_GNU", "-DNDEBUG",
                                                          "-march", "-pipe"))]
            return "%s %s" % (os.path.basename(toks[0]), " ".join(keep))
    return "?"


def build_helpers():
    os.makedirs(os.path.join(WORK, "bin"), exist_ok=True)
    naive = os.path.join(WORK, "bin", "naive_read")
    sh(["cc", "-O2", "-o", naive, os.path.join(BENCH, "naive_read.c")])
    gm = None
    if sh("pkg-config --exists gmime-3.0", check=False).returncode == 0:
        gm = os.path.join(WORK, "bin", "gmime_parse")
        flags = sh("pkg-config --cflags --libs gmime-3.0").stdout.split()
        sh(["cc", "-O2", "-o", gm, os.path.join(BENCH, "gmime_parse.c")] + flags)
    return naive, gm



def prepare_binaries(ctx, ingest=None):
    """What a run measures: ingest built from this tree (or the binary given with --ingest), the
    parse-mem beside it, and the C baselines."""
    log("building ingest (meson, release) into bench/work/build")
    builddir = os.path.join(WORK, "build")
    # the tree as it is built: edits made while the suites run are not in it
    ctx.source_state = source_state()
    ctx.ingest = os.path.abspath(ingest) if ingest else build_ingest(builddir)
    ctx.external = bool(ingest)
    ctx.flags = compile_flags(builddir) if not ingest else "(external binary given with --ingest)"
    # the in-memory parser harness is built beside the ingest it measures
    ctx.parse_mem = os.path.join(os.path.dirname(os.path.dirname(ctx.ingest)), "bench", "parse-mem")
    if not os.path.exists(ctx.parse_mem):
        raise RuntimeError("no bench/parse-mem beside %s (meson builds it with ingest)" % ctx.ingest)
    ctx.naive, ctx.gmime = build_helpers()

SIZE_SHIFT = {"K": 10, "M": 20, "G": 30}


def ingest_defaults(ingest):
    """The defaults of ingest's SIZE options as the binary's --help states them, in its own syntax:
    {"batch-bytes": "2M", "max-inflight": "64M", ...}.  Asking the binary reports what was built and is
    measured (with --ingest, another tree's), not what a header of this tree says."""
    text = sh([ingest, "--help"]).stdout
    return {m.group(1): m.group(2)
            for m in re.finditer(r"^\s*--([a-z-]+)=SIZE\s.*?(\d+[KMG]?)\)\s*$", text, re.M)}


def size_bytes(size):
    """ingest's SIZE syntax ("2M") in bytes."""
    return int(size[:-1]) << SIZE_SHIFT[size[-1]] if size[-1] in SIZE_SHIFT else int(size)


def default_batch_bytes(ingest):
    """--batch-bytes' default, which the sweep checks against the curve's choice."""
    size = ingest_defaults(ingest).get("batch-bytes")
    if size is None:
        raise RuntimeError("%s --help does not state the --batch-bytes default" % ingest)
    return size_bytes(size)
