# SPDX-License-Identifier: MIT
"""Process and system helpers every module uses: logging, running a command,
looking a program up, the machine's CPU and page-in counters, dropping the
page cache, and reading the JSON summary a contender prints last.
"""

import json
import os
import shutil
import subprocess
import sys
import time

from .context import CTX


def log(*a):
    print("[bench]", *a, file=sys.stderr, flush=True)


def sh(cmd, check=True, **kw):
    r = subprocess.run(cmd, shell=isinstance(cmd, str), stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError("command failed (%d): %s\n%s%s" % (r.returncode, cmd, r.stdout[-2000:],
                                                               r.stderr[-2000:]))
    return r


def have(prog):
    return shutil.which(prog) is not None


def sq(s):
    return "'" + s.replace("'", "'\\''") + "'"


def cpu_times():
    """(busy seconds of the whole machine, wall, own CPU seconds incl. children, load average)."""
    import resource
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    hz = os.sysconf("SC_CLK_TCK")
    busy = (sum(v[:8]) - v[3] - v[4]) / hz
    me = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    own = me.ru_utime + me.ru_stime + ch.ru_utime + ch.ru_stime
    return busy, time.time(), own, os.getloadavg()[0]


def pgpgin():
    with open("/proc/vmstat") as f:
        for line in f:
            if line.startswith("pgpgin "):
                return int(line.split()[1])
    return 0


def drop_caches():
    """True when the page cache was dropped."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        CTX.cold_ok = True
        return True
    except OSError as e:
        CTX.cold_ok = "not possible: %s" % e.strerror
        return False


def last_json_text(s):
    """The last line of s that starts with "{" (a summary such as --stats=json), parsed; None if it does not
    parse or there is none."""
    for line in reversed(s.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                return None
    return None


def last_json(path):
    """last_json_text of a file (a run's stderr)."""
    try:
        with open(path, "rb") as f:
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    return last_json_text(data)
