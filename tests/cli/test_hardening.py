#!/usr/bin/env python3
"""Hardening cases for the ingest command: stopping signals, a closed
output, the state file against other writers and corrupt contents, streamed
mbox bounds, and names escaped on the terminal.

Usage: test_hardening.py --ingest PATH --mkcorpus PATH --case NAME
Exit 0 pass, 1 fail, 77 skip (with the reason on stdout)."""
import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ARGS = None


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(args, check_rc=None, **kw):
    p = subprocess.run([ARGS.ingest] + args, capture_output=True, timeout=300, **kw)
    if check_rc is not None and p.returncode != check_rc:
        fail(f"{args}: exit {p.returncode}, expected {check_rc}\n"
             f"stderr: {p.stderr.decode(errors='replace')}")
    return p


def mkcorpus(dest, *extra):
    subprocess.run([sys.executable, ARGS.mkcorpus, "--out", dest] + list(extra),
                   check=True, capture_output=True)


def whole_records(out, what):
    """Every line of out is one JSON record and the last one ends."""
    if out and not out.endswith(b"\n"):
        fail(f"{what}: the output ends inside a record: ...{out[-120:]!r}")
    for i, line in enumerate(out.split(b"\n")[:-1]):
        try:
            json.loads(line)
        except ValueError as e:
            fail(f"{what}: line {i + 1} is not a whole record ({e}): {line[:120]!r}")
    return out.count(b"\n")


# --- cases -----------------------------------------------------------------

def case_signals(tmp):
    """SIGINT, SIGTERM and SIGHUP at random points of a run into a pipe: the
    output holds whole records only and the exit status is 128 + the signal
    (or 0 when the run was over before the signal came).  Each signal 50
    times on a small corpus, with a state file that must stay untouched."""
    d = os.path.join(tmp, "md")
    mkcorpus(d, "--seed", "21", "--layout", "maildir", "--count", "400")
    st = os.path.join(tmp, "state")
    run(["--state=" + st, "-o", os.devnull, d], check_rc=0)
    before = open(st, "rb").read()
    rng = random.Random(15)
    stopped = 0
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        for i in range(50):
            # the state is not looked at by the signal: only a complete run
            # may replace it, so half the runs carry it along
            args = [ARGS.ingest, "--max-inflight=256K", "--batch-bytes=32K"]
            if i % 2:
                args.append("--state=" + st)
            proc = subprocess.Popen(args + [d], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            time.sleep(rng.uniform(0, 0.03))
            proc.send_signal(sig)
            out, err = proc.communicate(timeout=60)
            what = f"{sig.name} run {i}"
            whole_records(out, what)
            if proc.returncode == -sig and not out:
                continue   # came before main() set its handlers: nothing written
            if proc.returncode not in (0, 128 + sig):
                fail(f"{what}: exit {proc.returncode}, not {128 + sig}: {err[-300:]!r}")
            stopped += proc.returncode != 0
            if open(st, "rb").read() != before:
                fail(f"{what}: the state file changed")
    if stopped < 30:
        fail(f"only {stopped} of 150 runs were stopped by their signal: the test proves little")
    print(f"{stopped} of 150 runs stopped by a signal, every record whole")


def case_closed_output(tmp):
    """The output's reader goes away: exit 141, nothing on stderr without
    --stats, and --stats counts what was written apart from what was parsed."""
    d = os.path.join(tmp, "md")
    mkcorpus(d, "--seed", "7", "--layout", "maildir", "--count", "3000")
    sh = (f"'{ARGS.ingest}' --stats=json '{d}' | head -c 100 > /dev/null; "
          f"echo ${{PIPESTATUS[0]}} >&2")
    p = subprocess.run(["bash", "-c", sh], capture_output=True, timeout=120)
    lines = p.stderr.decode().strip().splitlines()
    if lines[-1] != "141":
        fail(f"closed output: exit {lines[-1]}, not 141: {p.stderr!r}")
    st = json.loads(lines[-2])
    if not st.get("output_closed") or not st["written"] < st["files"]:
        fail(f"closed output: written {st.get('written')} of {st['files']} parsed, "
             f"output_closed {st.get('output_closed')}")
    q = subprocess.run(["bash", "-c", f"'{ARGS.ingest}' '{d}' | head -c 100 > /dev/null"],
                       capture_output=True, timeout=120)
    if q.stderr:
        fail(f"closed output printed {q.stderr!r}")
    full = json.loads(run(["--stats=json", "-o", os.devnull, d], check_rc=0).stderr.splitlines()[-1])
    if full["written"] != full["files"] or full["output_closed"]:
        fail(f"complete run: written {full['written']} of {full['files']}")
    print(f"closed output: {st['written']} of {st['files']} records written, exit 141")


def small_mbox(path, n):
    """n short messages: a 2 MiB chunk holds tens of thousands of them,
    far more than the 1,024 a batch takes."""
    with open(path, "wb") as f:
        f.write(b"".join(b"From a@b.example Thu Jan  1 00:00:00 2024\nMessage-ID: <%d@x>\n"
                         b"Subject: m\n\nhi\n\n" % i for i in range(n)))


def cpu_of(args):
    """The CPU time (user + system) of one ingest run, and its --stats."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = run(args + ["--stats=json", "-o", os.devnull], check_rc=0)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    st = json.loads(p.stderr.splitlines()[-1])
    return (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime), st


def case_mbox_linear(tmp):
    """A streamed mbox costs time linear in its message count: twice the
    messages, about twice the CPU time (test-linear's rule: the minimum of
    interleaved runs, ratio below 3, never a wall-clock limit)."""
    n = 150000
    small, large = os.path.join(tmp, "a.mbox"), os.path.join(tmp, "b.mbox")
    small_mbox(small, n)
    small_mbox(large, 2 * n)
    best = {small: float("inf"), large: float("inf")}
    for _ in range(3):
        for path, count in ((small, n), (large, 2 * n)):
            t, st = cpu_of(["--io-only", path])
            if st["files"] != count:
                fail(f"{path}: {st['files']} records for {count} messages")
            best[path] = min(best[path], t)
    ratio = best[large] / max(best[small], 1e-3)
    print(f"streamed mbox: {n} messages {best[small]:.3f} s CPU, {2 * n} {best[large]:.3f} s: "
          f"ratio {ratio:.2f}")
    if ratio >= 3:
        fail(f"doubling the messages multiplied the CPU time by {ratio:.2f}")


def inflight_check(path, count, limit):
    _, st = cpu_of(["--io-only", f"--max-inflight={limit >> 10}K", path])
    if st["files"] != count:
        fail(f"{st['files']} records for {count} messages")
    if st["peak_inflight_bytes"] > limit:
        fail(f"peak_inflight_bytes {st['peak_inflight_bytes']} over --max-inflight={limit}")
    print(f"{count} messages under --max-inflight={limit}: peak {st['peak_inflight_bytes']} bytes, "
          f"peak RSS {st['peak_rss_kib']} KiB")
    return st


def case_mbox_inflight(tmp):
    """A streamed mbox of many small messages stays within --max-inflight."""
    path = os.path.join(tmp, "a.mbox")
    small_mbox(path, 300000)
    inflight_check(path, 300000, 4 << 20)


def case_mbox_million(tmp):
    """1,000,000 messages streamed under --max-inflight=16M: the bound holds
    for peak_inflight_bytes and for the peak RSS (not under a sanitizer)."""
    path = os.path.join(tmp, "a.mbox")
    small_mbox(path, 1000000)
    st = inflight_check(path, 1000000, 16 << 20)
    if not os.environ.get("INGEST_SANITIZED") and st["peak_rss_kib"] > 64 * 1024:
        fail(f"peak RSS {st['peak_rss_kib']} KiB for 1,000,000 messages at --max-inflight=16M")


CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingest", required=True)
    ap.add_argument("--mkcorpus", required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ARGS = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ingest-harden-")
    try:
        CASES[ARGS.case](tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ok")


if __name__ == "__main__":
    main()
