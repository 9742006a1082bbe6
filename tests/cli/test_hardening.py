#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hardening cases for the ingest command: stopping signals, a closed
output, the state file against other writers and corrupt contents, streamed
mbox bounds, and names escaped on the terminal.

Usage: test_hardening.py --ingest PATH --mkcorpus PATH --case NAME
Exit 0 pass, 1 fail, 77 skip (with the reason on stdout)."""
import json
import os
import zlib
import random
import resource
import signal
import stat
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_cli  # noqa: E402  (its runner, argument parsing and utilities)
from test_cli import fail, mkcorpus, run  # noqa: E402


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


def handlers_set(pid, sig, timeout=10.0):
    """Waits until process pid catches sig (SigCgt in /proc/PID/status),
    or has ended, or timeout seconds have passed."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with open(f"/proc/{pid}/status") as f:
                caught = next((int(line.split()[1], 16) for line in f if line.startswith("SigCgt:")), 0)
        except (OSError, StopIteration):
            return
        if caught >> (sig - 1) & 1:
            return
        time.sleep(0.0005)


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
            args = [test_cli.ARGS.ingest, "--max-inflight=256K", "--batch-bytes=32K"]
            if i % 2:
                args.append("--state=" + st)
            proc = subprocess.Popen(args + [d], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            # the random point is counted from when the handlers are in
            # place: a sanitized build's start-up alone can take longer
            # than the window, and a signal then proves nothing
            handlers_set(proc.pid, sig)
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
    sh = (f"'{test_cli.ARGS.ingest}' --stats=json '{d}' | head -c 100 > /dev/null; "
          f"echo ${{PIPESTATUS[0]}} >&2")
    p = subprocess.run(["bash", "-c", sh], capture_output=True, timeout=120)
    lines = p.stderr.decode().strip().splitlines()
    if lines[-1] != "141":
        fail(f"closed output: exit {lines[-1]}, not 141: {p.stderr!r}")
    st = json.loads(lines[-2])
    if not st.get("output_closed") or not st["written"] < st["files"]:
        fail(f"closed output: written {st.get('written')} of {st['files']} parsed, "
             f"output_closed {st.get('output_closed')}")
    q = subprocess.run(["bash", "-c", f"'{test_cli.ARGS.ingest}' '{d}' | head -c 100 > /dev/null"],
                       capture_output=True, timeout=120)
    if q.stderr:
        fail(f"closed output printed {q.stderr!r}")
    full = json.loads(run(["--stats=json", "-o", os.devnull, d], check_rc=0).stderr.splitlines()[-1])
    if full["written"] != full["files"] or full["output_closed"]:
        fail(f"complete run: written {full['written']} of {full['files']}")
    print(f"closed output: {st['written']} of {st['files']} records written, exit 141")


def state_corpus(tmp, count=200):
    d = os.path.join(tmp, "md")
    mkcorpus(d, "--seed", "22", "--layout", "maildir", "--count", str(count))
    return d


def leftovers(st):
    """Temporary files of the state left in its directory."""
    base = os.path.basename(st)
    return [n for n in os.listdir(os.path.dirname(st)) if n.startswith(base + ".tmp")]


def case_state_tmp_symlink(tmp):
    """The new state goes through a fresh temporary file: a symlink planted
    at the old fixed name FILE.tmp is never followed, and the state is
    written 0600 (or with the existing file's mode)."""
    d = state_corpus(tmp)
    st = os.path.join(tmp, "state")
    victim = os.path.join(tmp, "victim")
    with open(victim, "wb") as f:
        f.write(b"precious\n")
    os.symlink(victim, st + ".tmp")
    old = os.umask(0o022)
    try:
        run(["--state=" + st, "-o", os.devnull, d], check_rc=0)
    finally:
        os.umask(old)
    if open(victim, "rb").read() != b"precious\n":
        fail("the symlink at FILE.tmp was followed: its target was overwritten")
    if not os.path.islink(st + ".tmp"):
        fail("the symlink at FILE.tmp was replaced")
    mode = os.stat(st).st_mode & 0o777
    if mode != 0o600:
        fail(f"a new state file is mode {mode:o}, not 600")
    os.chmod(st, 0o640)
    run(["--state=" + st, "-o", os.devnull, d], check_rc=0)
    mode = os.stat(st).st_mode & 0o777
    if mode != 0o640:
        fail(f"the state file's mode 640 became {mode:o}")
    if [n for n in leftovers(st) if n != "state.tmp"]:
        fail(f"temporary files left behind: {leftovers(st)}")
    print("FILE.tmp symlink not followed; mode 600, an existing 640 kept")


def case_state_killed_while_saved(tmp):
    """A run killed while it writes or syncs the new state (SIGKILL at the
    state file's fsync, injected by strace) leaves nothing beside it: the new
    state is an unnamed file (O_TMPFILE) until it is whole, where a named
    FILE.tmp.PID.N, a whole copy of the state, stayed for good. The old state
    and the journal stay in place, and the next run completes."""
    import shutil
    if not shutil.which("strace"):
        print("SKIP: strace not installed")
        sys.exit(77)
    d = state_corpus(tmp)
    st = os.path.join(tmp, "state")
    out = os.path.join(tmp, "out.jsonl")
    run(["--state=" + st, "-o", out, d], check_rc=0)
    before = open(st, "rb").read()
    os.rename(os.path.join(d, "cur", sorted(os.listdir(os.path.join(d, "cur")))[0]),
              os.path.join(d, "new", "moved-by-the-test"))
    # which fsync is the state's: the output's comes first, the directory's last
    args = [test_cli.ARGS.ingest, "--state=" + st, "-o", out, d]
    trace = os.path.join(tmp, "trace")
    subprocess.run(["strace", "-f", "-qq", "-y", "-o", trace, "-e", "trace=fsync"] + args,
                   capture_output=True, check=True)
    open(st, "wb").write(before)   # back where the first run left it
    calls = [ln for ln in open(trace) if "fsync(" in ln]
    which = [i for i, ln in enumerate(calls, 1) if "<" + out + ">" not in ln and "<" + tmp + ">" not in ln]
    if len(which) != 1:
        fail(f"expected one fsync of the new state, saw {calls}")
    p = subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "-e", "trace=fsync",
                        "-e", f"inject=fsync:signal=KILL:when={which[0]}"] + args, capture_output=True)
    if p.returncode not in (-signal.SIGKILL, 128 + signal.SIGKILL):
        fail(f"the run was not killed at the state's fsync: exit {p.returncode}, {p.stderr[-300:]!r}")
    if leftovers(st):
        fail(f"a run killed while saving its state left {leftovers(st)}")
    if open(st, "rb").read() != before:
        fail("the old state changed under a run killed while saving")
    if not os.path.exists(st + ".journal"):
        fail("the killed run's journal is gone")
    run(["--state=" + st, "-o", out, d], check_rc=0)
    if os.path.exists(st + ".journal") or leftovers(st):
        fail(f"the next run left {leftovers(st)} or the journal")
    # with no /proc to name an unnamed file through (the faccessat of
    # /proc/self/fd made to fail), the state goes to a named FILE.tmp.PID.N
    # from the start, made with O_EXCL, and is renamed into place
    os.chmod(st, 0o640)
    trace = os.path.join(tmp, "trace-named")
    # (the second faccessat: the first asks whether FILE's directory is writable)
    p = subprocess.run(["strace", "-f", "-qq", "-o", trace, "-e", "trace=faccessat,openat,renameat,linkat",
                        "-e", "inject=faccessat:error=ENOENT:when=2"] + args, capture_output=True)
    lines = open(trace).read()
    if p.returncode != 0 or '"/proc/self/fd", F_OK) = -1 ENOENT' not in lines or "O_EXCL" not in lines or \
            ".tmp." not in lines or "linkat(" in lines or "O_TMPFILE" in lines:
        fail(f"without /proc: exit {p.returncode}, {lines[-600:]!r}")
    if leftovers(st) or os.stat(st).st_mode & 0o777 != 0o640:
        fail(f"without /proc: left {leftovers(st)}, mode {os.stat(st).st_mode & 0o777:o}")
    print(f"killed at fsync {which[0]} of {len(calls)}: nothing left beside the state; "
          "without /proc, a named temporary file renamed into place")


def case_state_symlink(tmp):
    """A symlink at FILE is refused (exit 2), never replaced by a regular
    file behind the user's back, and its target is left alone; so is a
    directory, and a FIFO, at once (its open used to wait for a writer, for
    good, deaf to Ctrl-C); --state-reset refuses them too (its save renamed
    the new state over a FIFO or a device node, /dev/null for root)."""
    d = state_corpus(tmp)
    real = os.path.join(tmp, "real.state")
    run(["--state=" + real, "-o", os.devnull, d], check_rc=0)
    before = open(real, "rb").read()
    link = os.path.join(tmp, "link.state")
    os.symlink(real, link)
    p = run(["--state=" + link, "-o", os.devnull, d], check_rc=2)
    if b"symbolic link" not in p.stderr or link.encode() not in p.stderr:
        fail(f"symlinked state: {p.stderr!r}")
    if not os.path.islink(link) or open(real, "rb").read() != before:
        fail("the symlinked state or its target was changed")
    # a directory is no state, and not a corrupt one either
    dirstate = os.path.join(tmp, "a-directory")
    os.mkdir(dirstate)
    q = run(["--state=" + dirstate, "-o", os.devnull, d], check_rc=2)
    if f"state '{dirstate}' is not a regular file".encode() not in q.stderr:
        fail(f"a directory as the state: {q.stderr!r}")
    fifo = os.path.join(tmp, "a-fifo")
    os.mkfifo(fifo)
    for path, why in ((link, b"symbolic link"), (dirstate, b"not a regular file"),
                      (fifo, b"not a regular file")):
        for reset in ([], ["--state-reset"]):
            try:
                r = subprocess.run([test_cli.ARGS.ingest, "--state=" + path, *reset, "-o", os.devnull, d],
                                   capture_output=True, timeout=30)
            except subprocess.TimeoutExpired:
                fail(f"--state={path} {reset}: still running after 30 s")
            if r.returncode != 2 or why not in r.stderr:
                fail(f"--state={path} {reset}: exit {r.returncode}, {r.stderr!r}")
    if not os.path.islink(link) or not os.path.isdir(dirstate) or \
            not stat.S_ISFIFO(os.lstat(fifo).st_mode):
        fail("a refused state path was replaced")
    print(p.stderr.decode().strip())


def case_state_journal_of_another_run(tmp):
    """A first run killed (no state saved, only its journal) under other
    options than the next run's, a shard 1/2 then a shard 2/2: the journal
    is refused (exit 2, named), as the state of another run is, where it
    was taken in and the next shard's run deleted the first's documents."""
    d = state_corpus(tmp, count=2000)
    st = os.path.join(tmp, "state")
    p = subprocess.Popen([test_cli.ARGS.ingest, "--format=es-bulk", "--batch-bytes=4K", "--shard=1/2",
                          "--state=" + st, d], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    for _ in range(200):
        p.stdout.readline()
    p.kill()
    p.wait()
    p.stdout.close()
    if os.path.exists(st) or not os.path.getsize(st + ".journal"):
        fail("the killed first run left a state, or no journal")
    q = run(["--format=es-bulk", "--shard=2/2", "--state=" + st, "-o", os.devnull, d], check_rc=2)
    if b"its journal was made with shard=1/2, this run has shard=2/2" not in q.stderr:
        fail(f"a journal of another shard: {q.stderr!r}")
    run(["--format=es-bulk", "--shard=1/2", "--state=" + st, "-o", os.devnull, d], check_rc=0)
    if os.path.exists(st + ".journal"):
        fail("the journal is left after its own run's complete run")
    print(q.stderr.decode().strip())


def case_state_lock(tmp):
    """One run at a time per state file: a second run fails at once (exit 2,
    the holder's pid in the message) before reading any input, or waits
    with --wait-state; a signal ends the wait; the lock dies with its
    process.  Then eight rounds of two concurrent runs leave a state that
    loads."""
    import fcntl
    d = state_corpus(tmp)
    st = os.path.join(tmp, "state")
    run(["--state=" + st, "-o", os.devnull, d], check_rc=0)
    holder = subprocess.Popen([sys.executable, "-c", f"""
import fcntl, os, sys, time
fd = os.open({st + '.lock'!r}, os.O_RDWR | os.O_CREAT, 0o600)
fcntl.lockf(fd, fcntl.LOCK_EX)
print('locked', flush=True)
sys.stdin.read()
"""], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        if holder.stdout.readline().strip() != b"locked":
            fail("the lock-holding process could not take the lock")
        rfd, wfd = os.pipe()
        os.write(wfd, d.encode() + b"\n")
        os.close(wfd)
        p = subprocess.run([test_cli.ARGS.ingest, "--state=" + st, "--files-from=-", "-o", os.devnull],
                           stdin=rfd, capture_output=True, timeout=60)
        left = os.read(rfd, 4096)
        os.close(rfd)
        want = f"state '{st}' is in use by another ingest (pid {holder.pid})"
        if p.returncode != 2 or want not in p.stderr.decode():
            fail(f"second run: exit {p.returncode}, {p.stderr!r}; wanted exit 2 and {want!r}")
        if left != d.encode() + b"\n":
            fail("the second run read its input list before refusing the state")
        # --wait-state waits, and SIGTERM ends the wait at once
        w = subprocess.Popen([test_cli.ARGS.ingest, "--wait-state", "--state=" + st, "-o", os.devnull, d],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.3)
        if w.poll() is not None:
            fail(f"--wait-state did not wait: exit {w.returncode}")
        w.send_signal(signal.SIGTERM)
        _, err = w.communicate(timeout=10)
        if w.returncode != 143:
            fail(f"SIGTERM while waiting for the state: exit {w.returncode}, {err!r}")
        w = subprocess.Popen([test_cli.ARGS.ingest, "--wait-state", "--state=" + st, "-o", os.devnull, d],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(0.3)
        if w.poll() is not None:
            fail(f"--wait-state did not wait: exit {w.returncode}")
    finally:
        holder.kill()   # a crashed holder: its lock goes with it
        holder.wait()
    _, err = w.communicate(timeout=60)
    if w.returncode != 0:
        fail(f"--wait-state after the holder died: exit {w.returncode}, {err!r}")
    for rnd in range(8):
        procs = [subprocess.Popen([test_cli.ARGS.ingest, "--state=" + st, "-o", os.devnull, d],
                                  stderr=subprocess.PIPE) for _ in range(2)]
        for q in procs:
            _, err = q.communicate(timeout=60)
            if q.returncode not in (0, 2) or (q.returncode == 2 and b"in use" not in err):
                fail(f"round {rnd}: exit {q.returncode}, {err!r}")
        run(["--state=" + st, "-o", os.devnull, d], check_rc=0)
    print("second run refused with the holder's pid; --wait-state waited; 8 rounds of two runs")


def run_description(d, tmp):
    """The run block of a state a run over d writes ("run N\\n" + N bytes +
    "\\n"): a hand-made state with it is one this run accepts."""
    st = os.path.join(tmp, "state-real")
    run(["--state=" + st, "-o", os.devnull, d], check_rc=0)
    data = open(st, "rb").read()
    head = data.index(b"\n") + 1
    nl = data.index(b"\n", head)
    n = int(data[head + 4:nl])
    return data[head:nl + 1 + n + 1]


def state_bytes(entries, desc):
    """A state of format 2: the header, the run's description, then each
    entry's numbers and its root, path and 16-digit id."""
    out = [b"ingest-state 2\n", desc]
    for nums, root, path in entries:
        # the id of a file follows from its root and path: copies share it
        out.append(b"%s %d %d 16\n%s%s%016x\n" % (nums.encode(), len(root), len(path), root, path,
                                                  zlib.crc32(root + path)))
    return b"".join(out)


def case_state_corrupt(tmp):
    """A corrupt state names the line and what is wrong (exit 2) and
    --state-reset starts afresh; mtimes fit int64_t, INT64_MIN included;
    n copies of one entry are refused at once instead of loading in O(n^2)
    and emitting n deletions."""
    d = state_corpus(tmp, 20)
    st = os.path.join(tmp, "state")
    desc = run_description(d, tmp)
    # entries start after the header, "run N" and the description's lines
    first = 3 + desc.count(b"\n") - 1

    def at(k):
        return "line %d:" % (first + k)

    def sb(entries):
        return state_bytes(entries, desc)
    cases = [
        (b"not a state\n", "line 1: not an ingest state file"),
        (b"ingest-state 1\n1 2 3 4 5 1 1 0\nra\n", "line 1: a state of an older ingest"),
        (sb([("1 2 3 4 5", b"r", b"a"), ("1 2 x 4 5", b"r", b"b")]), at(2) + " expected 8 numbers"),
        (sb([("1 2 3 -9223372036854775809 0", b"r", b"a")]), at(0) + " a number out of range"),
        (sb([("1 2 3 4 1000000000", b"r", b"a")]), at(0) + " nanoseconds"),
        (sb([("1 2 3 4 5", b"r", b"a")])[:-3], at(0) + " lengths"),
        (sb([("1 2 3 4 5", b"r", b"a\nb"), ("1 2 3 4 5", b"r", b"a\nb")]),
         at(3) + " a second entry for the same file"),
    ]
    for data, want in cases:
        with open(st, "wb") as f:
            f.write(data)
        p = run(["--state=" + st, "-o", os.devnull, d])
        msg = p.stderr.decode(errors="replace")
        if p.returncode != 2 or want not in msg or st not in msg:
            fail(f"corrupt state {data[:60]!r}: exit {p.returncode}, {msg!r}; wanted {want!r}")
        if open(st, "rb").read() != data:
            fail("a corrupt state was overwritten without --state-reset")
    # a state the run saved, cut at an entry's end (a partial copy): its
    # last line is missing, and the entries cut off are not taken for new
    run(["--state=" + st, "--state-reset", "-o", os.devnull, d], check_rc=0)
    whole = open(st, "rb").read()
    cut = whole[:whole.rindex(b"\nend ") + 1]
    cut = cut[:cut.rindex(b"\n", 0, cut.rindex(b"\n", 0, len(cut) - 1)) + 1]
    with open(st, "wb") as f:
        f.write(cut)
    p = run(["--state=" + st, "-o", os.devnull, d])
    if p.returncode != 2 or b"cut short" not in p.stderr:
        fail(f"a state cut at an entry's end: exit {p.returncode}, {p.stderr!r}")
    os.chmod(st, 0o640)
    p = run(["--state=" + st, "--state-reset", d], check_rc=0)
    if p.stdout.count(b"\n") != 20 or b'"deleted"' in p.stdout:
        fail("--state-reset did not start afresh")
    if os.stat(st).st_mode & 0o777 != 0o640:
        fail(f"--state-reset made the state {os.stat(st).st_mode & 0o777:o}, not the old 640")
    run(["--state=" + st, "-o", os.devnull, d], check_rc=0)
    # INT64_MIN is a valid mtime: loads, and its entry (a file of this
    # run's root that is not there) is reported deleted
    with open(st, "wb") as f:
        f.write(sb([("1 2 3 -9223372036854775808 0", os.path.realpath(d).encode(), b"a")]))
    p = run(["--state=" + st, d], check_rc=0)
    if p.stdout.count(b'"deleted"') != 1:
        fail(f"INT64_MIN mtime: {p.stdout[:200]!r}")
    n = 100000
    with open(st, "wb") as f:
        f.write(sb([("1 2 3 4 5", b"r", b"cur/1.x:2,S")] * n))
    t0 = time.monotonic()
    p = run(["--state=" + st, "-o", os.devnull, d])
    took = time.monotonic() - t0
    if p.returncode != 2 or (at(2) + " a second entry").encode() not in p.stderr:
        fail(f"{n} copies of one entry: exit {p.returncode}, {p.stderr[:300]!r}")
    print(f"corrupt states named by line; {n} copies refused in {took:.2f} s")


def case_state_unwritable(tmp):
    """A state path that cannot be written is exit 2 with the path in the
    message, before any input is read."""
    d = state_corpus(tmp, 20)
    st = os.path.join(tmp, "no-such-dir", "state")
    rfd, wfd = os.pipe()
    os.write(wfd, d.encode() + b"\n")
    os.close(wfd)
    p = subprocess.run([test_cli.ARGS.ingest, "--state=" + st, "--files-from=-"], stdin=rfd,
                       capture_output=True, timeout=60)
    left = os.read(rfd, 4096)
    os.close(rfd)
    if p.returncode != 2 or st.encode() not in p.stderr or p.stdout:
        fail(f"unwritable state: exit {p.returncode}, {len(p.stdout)} bytes out, {p.stderr!r}")
    if left != d.encode() + b"\n":
        fail("the input list was read before the state path was checked")
    print(p.stderr.decode().strip())


def case_terminal_escape(tmp):
    """Names printed on stderr (the error summary, the run's own error
    message) are escaped: control characters as \\x1b, DEL and C1 controls
    too, invalid UTF-8 as \\xNN, so a crafted name cannot move the cursor,
    recolour the terminal or forge a line of ingest's output."""
    d = os.path.join(tmp, "tree")
    os.mkdir(d)
    evil = b"a\x1b[2J\x1b[31m\nb\rc\x7fd\xc2\x9be\xff.eml"
    os.symlink(b"/nonexistent", os.path.join(d.encode(), evil))   # an error record
    p = run([d])
    if p.returncode != 0:
        fail(f"exit {p.returncode}: {p.stderr!r}")
    want = b"a\\x1b[2J\\x1b[31m\\nb\\rc\\x7fd\\xc2\\x9be\\xff.eml"
    lines = p.stderr.split(b"\n")
    if not any(want in ln for ln in lines):
        fail(f"the name is not escaped as {want!r}: {p.stderr!r}")
    raw = [c for c in (b"\x1b", b"\r", b"\x7f", b"\xc2\x9b", b"\xff") if c in p.stderr]
    if raw or len([ln for ln in lines if ln]) != 1:
        fail(f"raw control bytes {raw} or a forged line on stderr: {p.stderr!r}")
    out = os.path.join(tmp, "no\x1b[1mdir", "out.jsonl")
    q = run(["-o", out, d])
    if q.returncode != 1 or b"\x1b" in q.stderr or b"no\\x1b[1mdir" not in q.stderr:
        fail(f"the output's name in the error message: exit {q.returncode}, {q.stderr!r}")
    print(p.stderr.decode().strip())


# The streamed path is what these cases measure: an mbox is streamed past
# four batches (README, "mbox"), so they fix the batch at 2 MiB, where
# 150,000 short messages (12 MB) are past that threshold whatever the
# default batch size.  --io-only gives one record per message only when
# the archive is streamed (a whole-read one is one file's record).
STREAMED = "--batch-bytes=2M"


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
            t, st = cpu_of(["--io-only", STREAMED, path])
            if st["files"] != count:
                fail(f"{path}: {st['files']} records for {count} messages")
            best[path] = min(best[path], t)
    ratio = best[large] / max(best[small], 1e-3)
    print(f"streamed mbox: {n} messages {best[small]:.3f} s CPU, {2 * n} {best[large]:.3f} s: "
          f"ratio {ratio:.2f}")
    if ratio >= 3:
        fail(f"doubling the messages multiplied the CPU time by {ratio:.2f}")


def inflight_check(path, count, limit):
    _, st = cpu_of(["--io-only", STREAMED, f"--max-inflight={limit >> 10}K", path])
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


if __name__ == "__main__":
    test_cli.CASES.update({k[5:]: v for k, v in globals().items() if k.startswith("case_")})
    test_cli.main()
