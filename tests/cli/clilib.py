# SPDX-License-Identifier: MIT
"""What the CLI test scripts share (test_cli.py, test_index.py and the
scripts built on them): the arguments of the run (ARGS, filled by main),
running the ingest binary, its records read with Python's json module (a
parser independent of ours), the corpus generator, and the runner of one
--case in a temporary directory.

Exit 0 pass, 1 fail (fail()), 77 skip (with the reason on stdout)."""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

# One object for the whole process, filled in place by main(), so that a
# module that imported it before main() ran sees the values.
ARGS = argparse.Namespace(ingest=None, mkcorpus=None, case=None)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(args, stdin=None, check_rc=None, env=None, pre=()):
    """Runs ingest with args (after the command prefix pre); check_rc: the
    exit status it must have (None: any)."""
    p = subprocess.run(list(pre) + [ARGS.ingest] + args, input=stdin, capture_output=True,
                       env=env, timeout=300)
    if check_rc is not None and p.returncode != check_rc:
        fail(f"{args}: exit {p.returncode}, expected {check_rc}\nstderr: {p.stderr.decode(errors='replace')}")
    return p


def records(out):
    """The records of an output: whole lines, each valid UTF-8 JSON."""
    lines = out.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    else:
        fail("output does not end with a newline (a partial record?)")
    recs = []
    for i, line in enumerate(lines):
        try:
            line.decode("utf-8", errors="strict")
            recs.append(json.loads(line))
        except Exception as e:  # noqa: BLE001 - any parse failure is the finding
            fail(f"line {i + 1} is not valid UTF-8 JSON ({e}): {line[:200]!r}")
    return recs


def mkcorpus(dest, *extra):
    subprocess.run([sys.executable, ARGS.mkcorpus, "--out", dest] + list(extra),
                   check=True, capture_output=True)


def main(cases, prefix, extra=(), cleanup=None):
    """Parses --ingest, --mkcorpus, each option of extra and --case, then
    runs that case in a fresh directory named with prefix, removed after
    (cleanup(tmp) first, when given)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingest", required=True)
    ap.add_argument("--mkcorpus", required=True)
    for opt in extra:
        ap.add_argument(opt, required=True)
    ap.add_argument("--case", required=True, choices=sorted(cases))
    vars(ARGS).update(vars(ap.parse_args()))
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        cases[ARGS.case](tmp)
    finally:
        if cleanup:
            cleanup(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")


def put_one_message(name):
    with open(name, "wb") as f:
        f.write(b"Subject: one\n\nbody\n")


# FIFOs under a Maildir message's unique name (one id), for --state and
# --index alike (runs with --max-size=1K): name -> (make the Maildir M, the
# steps after the first run), each step followed by a run compared with a
# clean run's
FIFO_ID_SCENARIOS = {
    "a copy turned FIFO": (
        lambda m: (put_one_message(m + "/cur/1.host:2,S"), put_one_message(m + "/.F/cur/1.host:2,S")),
        [lambda m: (os.unlink(m + "/.F/cur/1.host:2,S"), os.mkfifo(m + "/.F/cur/1.host:2,S")),
         lambda m: os.unlink(m + "/.F/cur/1.host:2,S")]),
    "a message deleted beside a FIFO of its name": (
        lambda m: (put_one_message(m + "/cur/1.host:2,S"), os.mkfifo(m + "/.F/cur/1.host:2,S")),
        [lambda m: None, lambda m: os.unlink(m + "/cur/1.host:2,S"),
         lambda m: os.unlink(m + "/.F/cur/1.host:2,S")]),
    "a FIFO at a renamed message's old name": (
        lambda m: put_one_message(m + "/cur/1.host:2,S"),
        [lambda m: (os.rename(m + "/cur/1.host:2,S", m + "/cur/1.host:2,RS"), os.mkfifo(m + "/cur/1.host:2,S")),
         lambda m: os.unlink(m + "/cur/1.host:2,S"), lambda m: os.unlink(m + "/cur/1.host:2,RS")]),
    "a FIFO renamed, removed": (
        lambda m: os.mkfifo(m + "/cur/1.host:2,S"),
        [lambda m: os.rename(m + "/cur/1.host:2,S", m + "/cur/1.host:2,RS"),
         lambda m: os.unlink(m + "/cur/1.host:2,RS")]),
    "a message grown past --max-size beside a FIFO of its name": (
        lambda m: (put_one_message(m + "/cur/1.host:2,S"), os.mkfifo(m + "/.F/cur/1.host:2,S")),
        [lambda m: open(m + "/cur/1.host:2,S", "ab").write(b"x" * 2000),
         lambda m: os.unlink(m + "/.F/cur/1.host:2,S")]),
    "a message moved to cur/, a FIFO at its old name": (
        lambda m: put_one_message(m + "/new/1.host"),
        [lambda m: (os.rename(m + "/new/1.host", m + "/cur/1.host:2,S"), os.mkfifo(m + "/new/1.host")),
         lambda m: os.unlink(m + "/new/1.host")]),
}


def fifo_id_maildir(d):
    """A Maildir M in d with a folder .F: FIFO_ID_SCENARIOS' place."""
    m = os.path.join(d, "M")
    for sub in ("cur", "new", "tmp", ".F/cur", ".F/new", ".F/tmp"):
        os.makedirs(os.path.join(m, sub))
    return m
