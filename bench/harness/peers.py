# SPDX-License-Identifier: MIT
"""The peers: installing them (--install-peers), and how each one is run and
verified on a corpus.  A peer that is missing is a row "not installed
(apt install X)"; nothing is skipped silently.
"""

import os
import re
import shutil
import subprocess
import sys

from .context import PEERS, WORK
from .method import Bench
from .sysutil import have, log, sh, sq
from .verify import v_distinct_first_field, v_files_line, v_lines, v_nul_scratch

APT_PEERS = ["libgmime-3.0-dev", "notmuch", "maildir-utils", "mblaze", "mairix",
             "ripgrep", "fio", "strace", "time", "valgrind", "python3", "nodejs", "npm", "pkg-config"]


def install_peers():
    # A Node.js from outside Debian (NodeSource's) bundles npm and conflicts with Debian's npm package, which
    # would fail the whole transaction: ask for nodejs/npm only when they are missing, and when the one
    # transaction still fails, install package by package so that one conflict costs only its own peer.
    pkgs = [p for p in APT_PEERS if not (p in ("nodejs", "npm") and have("node") and have("npm"))]
    log("installing peers: apt-get install -y %s; npm install postal-mime" % " ".join(pkgs))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    r = subprocess.run(["apt-get", "update", "-q"], env=env)
    if r.returncode:
        log("apt-get update failed (%d)" % r.returncode)
    r = subprocess.run(["apt-get", "install", "-y", "-q"] + pkgs, env=env)
    if r.returncode:
        failed = [p for p in pkgs if subprocess.run(["apt-get", "install", "-y", "-q", p], env=env).returncode]
        if failed:
            log("apt-get install failed for: %s" % " ".join(failed))
    os.makedirs(PEERS, exist_ok=True)
    if have("npm"):
        r = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", PEERS, "postal-mime@4"])
        if r.returncode:
            log("npm install postal-mime failed (%d)" % r.returncode)


def postal_available():
    return have("node") and os.path.isdir(os.path.join(PEERS, "node_modules", "postal-mime"))


def read_peers(ctx, c):
    py = ("import os,sys\nfrom pathlib import Path\nn=b=0\nfor dp,dn,fn in os.walk(sys.argv[1]):\n"
          "    dn[:]=[d for d in dn if d!='tmp']\n    for f in fn:\n"
          "        b+=len(Path(dp,f).read_bytes()); n+=1\nprint('files %d bytes %d errors 0'%(n,b))\n")
    out = [
        Bench("naive C loop (open/fstat/read/close)", [ctx.naive, c.list], v_files_line, corpus=c,
              note="file list given, no walk"),
        Bench("find | xargs cat", "find %s -name tmp -prune -o -type f -print0 | tee @OUT@ | xargs -0 cat "
              "> /dev/null" % sq(c.dir), v_nul_scratch, corpus=c, shell=True),
        Bench("Python Path.read_bytes() loop", [sys.executable, "-c", py, c.dir], v_files_line, corpus=c),
    ]
    if have("rg"):
        out.append(Bench("ripgrep -c (reads every file)", ["rg", "-uuu", "-c", "-g", "!tmp/", "-j", "0", "", c.dir],
                         v_lines, corpus=c, note="all cores"))
    else:
        out.append(Bench("ripgrep", [], None, missing="not installed (apt install ripgrep)"))
    return out


def gmime_bench(ctx, c):
    """The GMime harness over c's file list (bench/gmime_parse.c), or its missing row."""
    if ctx.gmime:
        return Bench("GMime 3 (bench/gmime_parse.c)", [ctx.gmime, c.list], v_lines, corpus=c)
    return Bench("GMime 3", [], None, missing="not installed (apt install libgmime-3.0-dev)")


def parse_peers(ctx, c):
    out = [gmime_bench(ctx, c)]
    out.append(Bench("Python email (policy.default)", [sys.executable, os.path.join(PEERS, "py_email.py"), c.list],
                     v_lines, corpus=c))
    if postal_available():
        out.append(Bench("postal-mime (Node.js)", ["node", os.path.join(PEERS, "postal.mjs"), c.list], v_lines,
                         corpus=c))
    else:
        out.append(Bench("postal-mime", [], None, missing="not installed (npm install postal-mime into bench/peers: "
                                                         "bench/run --install-peers)"))
    if have("mlist") and have("mhdr"):
        out.append(Bench("mblaze (mlist | mhdr -d -H)", "mlist %s | mhdr -d -H -h message-id:from:to:subject:date"
                         % sq(c.dir), v_distinct_first_field, corpus=c, shell=True,
                         note="does less work: decoded headers only, no body, no MIME tree"))
    else:
        out.append(Bench("mblaze", [], None, missing="not installed (apt install mblaze)"))
    if have("mairix"):
        d = os.path.join(WORK, "mairix")

        def pre_mx():
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            with open(os.path.join(d, "rc"), "w") as f:
                f.write("base=%s\nmaildir=.\ndatabase=%s/db\nmfolder=%s/mf\n" % (c.dir, d, d))

        def v_mx(b, r):
            out = sh(["mairix", "-f", os.path.join(d, "rc"), "-d"], check=False).stdout
            m = re.search(r"^(\d+) messages", out, re.M)
            n = int(m.group(1)) if m else -1
            return n == b.msgs, "messages in its database %d, inputs %d" % (n, b.msgs)
        out.append(Bench("mairix (index)", ["mairix", "-f", os.path.join(d, "rc")], v_mx, corpus=c, pre=pre_mx,
                         note="does other work: builds its own search index"))
    else:
        out.append(Bench("mairix", [], None, missing="not installed (apt install mairix)"))
    return out


def index_peers(ctx, c):
    out = []
    if have("notmuch"):
        d = os.path.join(WORK, "notmuch")
        cfg = os.path.join(d, "config")

        def pre_nm():
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(os.path.join(d, "db"))
            with open(cfg, "w") as f:
                f.write("[database]\nmail_root=%s\npath=%s/db\n[new]\ntags=new\n[maildir]\n"
                        "synchronize_flags=false\n" % (c.dir, d))

        def v_nm(b, r):
            n = sh(["notmuch", "count", "*"], check=False, env=dict(os.environ, NOTMUCH_CONFIG=cfg)).stdout.strip()
            n = int(n) if n.isdigit() else -1
            return n == b.msgs, "messages in its index %d, inputs %d" % (n, b.msgs)
        out.append(Bench("notmuch new", ["notmuch", "new", "--quiet"], v_nm, corpus=c, pre=pre_nm,
                         env={"NOTMUCH_CONFIG": cfg}, note="does more work: builds a Xapian index"))
    else:
        out.append(Bench("notmuch new", [], None, missing="not installed (apt install notmuch)"))
    if have("mu"):
        dmu = os.path.join(WORK, "mu")

        def pre_mu():
            shutil.rmtree(dmu, ignore_errors=True)
            sh(["mu", "init", "--muhome=" + dmu, "--maildir=" + c.dir])

        def v_mu(b, r):
            out = sh(["mu", "info", "--muhome=" + dmu, "store"], check=False).stdout
            m = re.search(r"messages in store\s*\|\s*(\d+)", out)
            n = int(m.group(1)) if m else -1
            return n == b.msgs, "messages in its index %d, inputs %d" % (n, b.msgs)
        out.append(Bench("mu index", ["mu", "index", "--quiet", "--muhome=" + dmu], v_mu, corpus=c, pre=pre_mu,
                         note="does more work: builds a Xapian index"))
    else:
        out.append(Bench("mu index", [], None, missing="not installed (apt install maildir-utils)"))
    return out
