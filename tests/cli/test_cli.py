#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CLI tests for the ingest binary: exit codes, flags, stdin/stdout, one
record per input, output formats, and output identical whatever the thread
count.  Every JSON line is checked with Python's json module, a parser
independent of ours.

Usage: test_cli.py --ingest PATH --mkcorpus PATH --case NAME
       test_cli.py --list   (the cases, their timeouts, serial or not)
Exit 0 pass, 1 fail, 77 skip (with the reason on stdout)."""
import functools
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True   # nothing written into the source tree
from clilib import ARGS, fail, mkcorpus, records, run  # noqa: E402,F401  (test_hardening.py takes them from here)
import clilib  # noqa: E402


def count_files(root, skip_tmp=True):
    n = 0
    for d, dirs, files in os.walk(root):
        if skip_tmp and "cur" in dirs and "new" in dirs and "tmp" in dirs:
            dirs.remove("tmp")
        n += len(files)
    return n


def sample():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "..", "sample", "Maildir")


def skip_without_strace():
    """Exits 77 where a case cannot trace the command: no strace, or a
    sanitized build (LSan cannot run under ptrace, and the counts would be
    the runtime's too)."""
    if not shutil.which("strace"):
        print("SKIP: strace is not installed")
        sys.exit(77)
    if os.environ.get("INGEST_SANITIZED"):
        print("SKIP: under a sanitizer, LSan cannot run under ptrace")
        sys.exit(77)


# --- cases -----------------------------------------------------------------

def case_usage_errors(tmp):
    for args, word in ([["--bogus", "x"], "--bogus"], [["--threads=0", "x"], "threads"],
                       [["--batch-bytes=12Q", "x"], "batch-bytes"], [["--backend=fast", "x"], "backend"],
                       [["--format=xml", "x"], "format"], [["--fields=path,nope", "x"], "fields"],
                       [[], "PATH"], [["--max-size"], "max-size"]):
        p = run(args, check_rc=2)
        err = p.stderr.decode()
        if err.count("\n") != 1 or word not in err or not err.startswith("ingest: "):
            fail(f"{args}: usage message should be one line naming {word!r}: {err!r}")
        if p.stdout:
            fail(f"{args}: usage error wrote records")


def case_help_version(tmp):
    p = run(["--help"], check_rc=0)
    lines = p.stdout.decode().splitlines()
    if len(lines) > 45 or max(len(l) for l in lines) > 80:
        fail(f"--help should fit a screen: {len(lines)} lines")
    if "Examples" not in p.stdout.decode():
        fail("--help shows no examples")
    p = run(["--version"], check_rc=0)
    if not p.stdout.decode().startswith("ingest "):
        fail("--version")


def case_sample_one_record_per_file(tmp):
    root = sample()
    p = run(["--stats=json", root], check_rc=0)
    recs = records(p.stdout)
    expect = count_files(root)
    if len(recs) != expect:
        fail(f"{len(recs)} records for {expect} files")
    if any("/tmp/" in r["path"] or r["path"].startswith("tmp/") for r in recs):
        fail("a Maildir tmp/ file was read")
    stats = json.loads(p.stderr.decode().strip().splitlines()[-1])
    if stats["files"] != expect:
        fail(f"stats say {stats['files']} files, expected {expect}")
    paths = [r["path"] for r in recs]
    if len(set(paths)) != len(paths):
        fail("duplicate records")


def case_missing_path_is_a_record(tmp):
    p = run([os.path.join(tmp, "nope")], check_rc=0)
    recs = records(p.stdout)
    if len(recs) != 1 or recs[0]["error"].get("errno") != "ENOENT":
        fail(f"expected one ENOENT record: {recs}")


def case_strict(tmp):
    """A PATH that does not exist is an error record; --strict makes any
    error record fail the run (exit 1), its records still written."""
    p = run(["--strict", os.path.join(tmp, "nope"), sample()], check_rc=1)
    recs = records(p.stdout)
    if not recs or recs[0].get("error", {}).get("errno") != "ENOENT" or len(recs) < 2:
        fail(f"--strict: the records are still written: {recs[:2]}")
    run(["--strict", "--io-only", sample()], check_rc=0)
    # errors the parser finds count too (they were left out of the counts,
    # so --strict passed a file that is not mail): a file, an archive's
    # message over --max-size read whole and streamed
    junk = os.path.join(tmp, "junk.eml")
    with open(junk, "wb") as f:
        f.write(b"garbage\x00\x01")
    box = os.path.join(tmp, "a.mbox")
    with open(box, "wb") as f:
        f.write(b"From a@b Mon Jan  1 00:00:00 2024\nSubject: big\n\n" + b"x" * 300_000 + b"\n")
    for args, kind in (([junk], "not-mail"), ([box], "too-large"),
                       (["--batch-bytes=64K", "--max-inflight=256K", box], "too-large")):
        p = run(["--strict", "--stats=json", "--max-size=100K"] + args, check_rc=1)
        st = json.loads([ln for ln in p.stderr.decode().splitlines() if ln.startswith("{")][-1])
        if st["records"][kind] != 1:
            fail(f"--strict {args}: {kind} counted {st['records']}")
    # counted by record, an archive read whole as streamed (whole, it once
    # counted as one input labelled by its first error)
    mixed = os.path.join(tmp, "mixed.mbox")
    with open(mixed, "wb") as f:
        for body in (b"Subject: ok\n\nhi\n", b"\x00\x01\x02garbage\n", b"\x00\x01\x02more\n"):
            f.write(b"From a@b Mon Jan  1 00:00:00 2024\n" + body + b"\n")
    for args in ([], ["--max-size=60"]):
        p = run(["--stats=json"] + args + [mixed], check_rc=0)
        st = json.loads([ln for ln in p.stderr.decode().splitlines() if ln.startswith("{")][-1])
        if (st["records"]["ok"], st["records"]["not-mail"], st["files"]) != (1, 2, 3):
            fail(f"{args}: records {st['records']}, files {st['files']}")


def case_mail_software_skipped(tmp):
    """The files mail software keeps inside Maildirs are skipped and counted
    (README, "Usage"), not error records; --exclude skips by pattern."""
    md = os.path.join(tmp, "Maildir")
    for d in ["cur", "new", "tmp", ".Sent/cur", ".Sent/new", ".notmuch/xapian"]:
        os.makedirs(os.path.join(md, d))
    for f in ["dovecot-uidlist", "dovecot.index.log", ".mbsyncstate", ".mbsyncstate.journal",
              ".uidvalidity", "courierimapuiddb", ".Sent/maildirfolder", ".notmuch/xapian/flintlock",
              "cur/1.M1.h:2,S", ".Sent/cur/2.M2.h:2,S", "cur/3.M3.h:2,S.bak"]:
        with open(os.path.join(md, f), "wb") as fh:
            fh.write(b"Subject: x\n\nbody\n")
    p = run(["--stats=json", "--fields=path,error", md], check_rc=0)
    recs = records(p.stdout)
    paths = sorted(r["path"] for r in recs)
    if paths != [".Sent/cur/2.M2.h:2,S", "cur/1.M1.h:2,S", "cur/3.M3.h:2,S.bak"]:
        fail(f"records: {paths}")
    walk = json.loads(p.stderr.decode().strip().splitlines()[-1])["walk"]
    if walk.get("skipped") != 8:
        fail(f"--stats counts the skipped files: {walk}")
    p = run(["--stats=json", "--fields=path", "--exclude=*.bak", "--exclude=.Sent/*", md], check_rc=0)
    paths = [r["path"] for r in records(p.stdout)]
    walk = json.loads(p.stderr.decode().strip().splitlines()[-1])["walk"]
    # .Sent/cur and .Sent/new match ".Sent/*" as directories: not entered
    if paths != ["cur/1.M1.h:2,S"] or walk.get("excluded") != 3:
        fail(f"--exclude: {paths}, {walk}")


def case_stdin(tmp):
    """`ingest -` reads one message, or an mbox, from standard input; its
    id comes from its content; '-' and --files-from=- exclude each other."""
    msg = b"Message-ID: <in@x>\nSubject: piped\n\nbody\n"
    for backend in ("sync", "auto"):
        recs = records(run(["--backend=" + backend, "-"], stdin=msg, check_rc=0).stdout)
        if len(recs) != 1 or recs[0].get("subject") != "piped" or recs[0].get("path") != "-":
            fail(f"{backend}: one record of the piped message: {recs}")
    again = records(run(["-"], stdin=msg, check_rc=0).stdout)
    other = records(run(["-"], stdin=msg + b"more\n", check_rc=0).stdout)
    if again[0]["id"] != recs[0]["id"] or other[0]["id"] == recs[0]["id"]:
        fail("the id of standard input follows its content")
    box = b"From a Mon Jan  1 00:00:00 2024\nSubject: 1\n\nx\n\nFrom b Mon Jan  1 00:00:00 2024\nSubject: 2\n\ny\n"
    recs = records(run(["-"], stdin=box, check_rc=0).stdout)
    if [r.get("subject") for r in recs] != ["1", "2"] or len({r["id"] for r in recs}) != 2:
        fail(f"an mbox on standard input: {recs}")
    # past --max-size, what is no mbox is not kept (it was copied whole
    # into memory whatever --max-size said): a too-large record of its
    # whole size, under the id of all its bytes; an mbox is kept whole
    big = os.urandom(3 << 20)
    small_max, large_max = (records(run(["--max-size=" + m, "--fields=size,error,id", "-"], stdin=big,
                                        check_rc=0).stdout) for m in ("1M", "4M"))
    if small_max[0].get("size") != 3 << 20 or small_max[0].get("error", {}).get("reason") != "too-large" \
            or small_max[0]["id"] != large_max[0]["id"]:
        fail(f"3 MiB over --max-size=1M on standard input: {small_max}, read whole {large_max}")
    many = (box + b"\n") * 20000
    recs = records(run(["--max-size=1M", "--fields=subject", "-"], stdin=many, check_rc=0).stdout)
    if len(recs) != 40000:
        fail(f"an mbox of {len(many)} bytes over --max-size on standard input: {len(recs)} records")
    # a regular file redirected to it is the input itself, not copied
    # into memory (a 1.7 GiB archive took 1.7 GiB of shared memory): the
    # same records as through a pipe; one read part-way is its remainder
    whole = os.path.join(tmp, "whole.mbox")
    with open(whole, "wb") as f:
        f.write(many)
    piped = run(["--fields=offset,id,size", "-"], stdin=many, check_rc=0).stdout
    with open(whole, "rb") as f:
        redirected = subprocess.run([ARGS.ingest, "--fields=offset,id,size", "-"], stdin=f,
                                    capture_output=True, check=True).stdout
        f.seek(len(box) + 1)
        rest = records(subprocess.run([ARGS.ingest, "--fields=offset,size", "-"], stdin=f,
                                      capture_output=True, check=True).stdout)
    if redirected != piped or len(rest) != 39998 or rest[0].get("size") != len(many) - len(box) - 1:
        fail(f"a file redirected: {redirected[:200]!r} against {piped[:200]!r}; read part-way {rest[:1]}")
    if shutil.which("strace") and not os.environ.get("INGEST_SANITIZED"):
        log = os.path.join(tmp, "memfd.txt")
        with open(whole, "rb") as f:
            subprocess.run(["strace", "-f", "-o", log, "-e", "trace=memfd_create", ARGS.ingest, "-q",
                            "-o", os.devnull, "-"], stdin=f, check=True)
        if "memfd_create(" in open(log).read():
            fail("a file redirected to standard input was copied into a memory file")
    # --state keeps no entry for it (no place to judge it at or find it
    # gone from: a state of every message piped in would grow for good)
    state = os.path.join(tmp, "stdin.state")
    for n in range(2):
        if len(records(run(["--state=" + state, "-"], stdin=msg, check_rc=0).stdout)) != 1:
            fail(f"--state, run {n + 1}: standard input not emitted")
    if not open(state, "rb").read().endswith(b"end 0\n"):
        fail(f"--state kept standard input: {open(state, 'rb').read()[-200:]!r}")
    for args, why in ((["--files-from=-", "-"], b"exclude each other"), (["-", "-"], b"given twice")):
        p = run(args, stdin=b"", check_rc=2)
        if why not in p.stderr:
            fail(f"{args}: {p.stderr!r}")
    # standard input closed: said so, not read from whatever took fd 0
    p = run(["-"], pre=["sh", "-c", 'exec "$@" <&-', "sh"], check_rc=1)
    if b"cannot read standard input: Bad file descriptor" not in p.stderr or p.stdout:
        fail(f"closed standard input: {p.stdout!r} {p.stderr!r}")
    # nor as the list of --files-from=-, with a state or an index, whose
    # lock or database would take fd 0: read as an empty list, that run
    # would delete every message the state or the index holds
    mail = os.path.join(tmp, "closed.eml")
    with open(mail, "wb") as f:
        f.write(msg)
    state, db = os.path.join(tmp, "closed.state"), os.path.join(tmp, "closed.db")
    for extra in (["--state=" + state], ["--index=" + db]):
        run(extra + ["--files-from=-"], stdin=(mail + "\n").encode(), check_rc=0)
        p = run(extra + ["--files-from=-"], pre=["sh", "-c", 'exec "$@" <&-', "sh"], check_rc=1)
        if b"cannot read the list '-': Bad file descriptor" not in p.stderr or b"deleted" in p.stdout:
            fail(f"{extra}: a closed standard input as the list: {p.stdout!r} {p.stderr!r}")
    if b"closed.eml" not in run(["search", db, "piped"], check_rc=0).stdout:
        fail("the index lost its message to a run with standard input closed")


def case_files_from_dirs(tmp):
    """A directory named in --files-from is walked like a PATH argument, on
    both backends and across shards (their union is one run)."""
    lst = (sample() + "\n").encode()
    want = sorted(r["path"] for r in records(run(["--io-only", sample()], check_rc=0).stdout))
    for backend in ("sync", "auto"):
        got = sorted(r["path"] for r in records(run(["--io-only", "--backend=" + backend,
                                                     "--files-from=-"], stdin=lst, check_rc=0).stdout))
        if got != want:
            fail(f"{backend}: a listed directory gives {len(got)} records, its walk {len(want)}")
    union = []
    for k in (1, 2, 3):
        union += [r["path"] for r in records(run(["--io-only", f"--shard={k}/3", "--files-from=-"],
                                                 stdin=lst, check_rc=0).stdout)]
    if sorted(union) != want:
        fail(f"shards of a listed directory: {len(union)} records, one run {len(want)}")


def case_files_from(tmp):
    root = sample()
    files = []
    for d, dirs, fs in os.walk(root):
        if "tmp" in dirs:
            dirs.remove("tmp")
        files += [os.path.join(d, f) for f in sorted(fs)]
    nl = ("\n".join(files) + "\n").encode()
    a = records(run(["--io-only", "--files-from=-"], stdin=nl, check_rc=0).stdout)
    z = records(run(["--io-only", "--files-from=-", "-0"], stdin=b"\0".join(f.encode() for f in files), check_rc=0).stdout)
    if len(a) != len(files) or len(z) != len(files):
        fail(f"files-from: {len(a)} / {len(z)} records for {len(files)} paths")
    if [r["path"] for r in a] != files or [r["path"] for r in z] != files:
        fail("files-from records are not in list order")
    lst = os.path.join(tmp, "list")
    with open(lst, "wb") as f:
        f.write(nl)
    b = records(run(["--io-only", "--files-from=" + lst], check_rc=0).stdout)
    if len(b) != len(files):
        fail("files-from=FILE")


def case_output_file(tmp):
    out = os.path.join(tmp, "out.jsonl")
    p = run(["--io-only", "-o", out, sample()], check_rc=0)
    if p.stdout:
        fail("--output also wrote to stdout")
    with open(out, "rb") as f:
        if len(records(f.read())) != count_files(sample()):
            fail("--output record count")
    p = run(["--io-only", "-o", os.path.join(tmp, "no/such/dir/out"), sample()], check_rc=1)
    if "cannot open the output" not in p.stderr.decode():
        fail(f"unwritable output message: {p.stderr!r}")


def case_closed_stdout(tmp):
    d = os.path.join(tmp, "md")
    mkcorpus(d, "--seed", "7", "--layout", "maildir", "--count", "3000")
    sh = f"'{ARGS.ingest}' '{d}' | head -c 100 > /dev/null; echo ${{PIPESTATUS[0]}}"
    p = subprocess.run(["bash", "-c", sh], capture_output=True, timeout=120)
    if p.stdout.decode().strip() != "141" or p.stderr:
        fail(f"closed stdout: exit {p.stdout!r}, stderr {p.stderr!r}")


def case_empty_and_single(tmp):
    e = os.path.join(tmp, "empty")
    os.mkdir(e)
    if run([e], check_rc=0).stdout:
        fail("records for an empty directory")
    one = os.path.join(tmp, "one.eml")
    with open(one, "wb") as f:
        f.write(b"From: a@b.example\nSubject: hi\n\nbody\n")
    for t in ("1", "64"):
        recs = records(run(["--threads=" + t, one], check_rc=0).stdout)
        if len(recs) != 1 or recs[0].get("subject") != "hi":
            fail(f"single message with --threads={t}: {recs}")


def case_threads_identical(tmp):
    """Byte-identical output whatever the thread count, below and far above
    the byte gate, in every output mode."""
    small = os.path.join(tmp, "small")
    large = os.path.join(tmp, "large")
    mkcorpus(small, "--seed", "3", "--shape", "page16")
    mkcorpus(large, "--seed", "4", "--layout", "maildir", "--count", "400")
    modes = [[], ["--format=es-bulk"], ["--format=tsv", "--fields=path,from,subject,date,attachments,warnings"],
             ["--headers"], ["--no-text"]]
    # The large corpus (~5 MB) in several batches: one batch is parsed on
    # the calling thread whatever --threads says, so only several show the
    # pool and the parse thread at work.
    several = ["--batch-bytes=1M"]
    for corpus in (small, large):
        for mode in modes:
            base = run(mode + several + ["--threads=1", "--stats=json", corpus], check_rc=0)
            for t in ([], ["--threads=2"], ["--threads=64"]):
                other = run(mode + several + t + ["--stats=json", corpus], check_rc=0)
                if other.stdout != base.stdout:
                    fail(f"output differs: {mode} {t} on {os.path.basename(corpus)}")
        st = json.loads(run(several + ["--threads=2", "--stats=json", corpus], check_rc=0).stderr.decode().strip().splitlines()[-1])
        hist = st["pool"]["workers_per_batch"]
        used_two = any(int(k) >= 2 for k in hist)
        if corpus is large and not used_two:
            fail(f"the large corpus never ran on 2 workers: {hist} (gate serialised it?)")
        if corpus is small and used_two:
            fail(f"the 16 x 1 KiB page woke a second worker: {hist}")
    # 16 x 768 KiB: one message a batch, so a second worker only ever comes
    # from batches grouped behind a waiting one (ingest.c, parse_main).
    # Whether a batch is already waiting depends on timing, so this asserts
    # the output, not the histogram; bench/run reports the grouping.
    huge = os.path.join(tmp, "huge")
    mkcorpus(huge, "--seed", "6", "--shape", "large16")
    base = run(["--threads=1", huge], check_rc=0).stdout
    for t in (["--threads=2"], ["--threads=2", "--batch-bytes=16K"], ["--threads=64"]):
        if run(t + [huge], check_rc=0).stdout != base:
            fail(f"output differs: {t} on 16 x 768 KiB")


def case_formats(tmp):
    d = os.path.join(tmp, "md")
    mkcorpus(d, "--seed", "5", "--layout", "maildir", "--count", "50")
    n = count_files(d)
    es = run(["--format=es-bulk", d], check_rc=0).stdout
    lines = records(es)
    if len(lines) != 2 * n:
        fail(f"es-bulk: {len(lines)} lines for {n} inputs")
    for a, s in zip(lines[0::2], lines[1::2]):
        if "index" not in a or "_id" not in a["index"] or "path" not in s:
            fail(f"es-bulk pair: {a} {s}")
    tsv = run(["--format=tsv", "--fields=subject,path", d], check_rc=0).stdout.decode().split("\n")
    if tsv[0] != "subject\tpath" or len([l for l in tsv[1:] if l]) != n:
        fail(f"tsv header/rows: {tsv[0]!r}, {len(tsv)} lines")
    sel = records(run(["--fields=path,subject", d], check_rc=0).stdout)
    if any(set(r) - {"path", "subject"} for r in sel):
        fail("--fields let other fields through")


def case_backends_agree(tmp):
    d = os.path.join(tmp, "md")
    mkcorpus(d, "--seed", "9", "--layout", "maildir", "--count", "300", "--folders", "2")
    a = run(["--backend=sync", d], check_rc=0).stdout
    b = run(["--backend=uring", d], check_rc=0).stdout
    if a != b:
        fail("sync and uring backends disagree")
    p = run(["--backend=sync", "--stats", d], check_rc=0)
    if "backend      sync" not in p.stderr.decode():
        fail("stats do not name the backend")


def case_uring_refused(tmp):
    """With io_uring refused (as under Docker's seccomp or
    kernel.io_uring_disabled), auto falls back and says so; uring fails."""
    # The sysctl refuses io_uring_setup with EPERM for everyone (root
    # included at 2), exactly what a seccomp profile does.
    path = "/proc/sys/kernel/io_uring_disabled"
    if not os.path.exists(path) or os.geteuid() != 0:
        print("SKIP: cannot disable io_uring here (no sysctl or not root)")
        sys.exit(77)
    old = open(path).read().strip()
    try:
        with open(path, "w") as f:
            f.write("2")
        p = run(["--stats=json", "--io-only", sample()], check_rc=0)
        st = json.loads(p.stderr.decode().strip().splitlines()[-1])
        if st["backend"] != "sync" or not st["fallback"]:
            fail(f"auto did not fall back: {st['backend']} {st['fallback']}")
        if len(records(p.stdout)) != count_files(sample()):
            fail("fallback run lost records")
        p = run(["--backend=uring", "--io-only", sample()], check_rc=1)
        if "io_uring" not in p.stderr.decode():
            fail(f"--backend=uring did not say why: {p.stderr!r}")
    finally:
        with open(path, "w") as f:
            f.write(old)


def case_mbox(tmp):
    """mbox archives: one record per message with its byte range, read whole
    or streamed in chunks, with the same records either way."""
    d = os.path.join(tmp, "mb")
    man = os.path.join(tmp, "man.tsv")
    mkcorpus(d, "--seed", "11", "--layout", "mbox", "--count", "400", "--tricky", "--manifest", man)
    rows = [l.rstrip("\n").split("\t") for l in open(man)]
    outs = []
    for args in ([], ["--batch-bytes=64K", "--max-inflight=1M"], ["--backend=sync", "--batch-bytes=16K"]):
        recs = records(run(args + [d], check_rc=0).stdout)
        if len(recs) != len(rows):
            fail(f"mbox {args}: {len(recs)} records for {len(rows)} messages")
        for row, r in zip(rows, recs):
            if int(row[2]) != r.get("offset") or int(row[3]) != r.get("length"):
                fail(f"mbox {args}: {row} vs offset {r.get('offset')} length {r.get('length')}")
            if row[5] != "-" and row[5].strip("<>") != r.get("message_id"):
                fail(f"mbox {args}: message-id {row[5]} vs {r.get('message_id')}")
        outs.append([json.dumps(r, sort_keys=True) for r in recs])
    if not all(o == outs[0] for o in outs):
        fail("mbox records differ between read-whole and streamed runs")
    # Netscape's archives: the first line is a bare "From - ", later ones
    # follow a body line; both readers split them the same way.
    ns = os.path.join(tmp, "ns")
    os.mkdir(ns)
    msg = "From - \nMessage-ID: <{0}@ns>\nSubject: {0}\n\nbody {0}\n"
    with open(os.path.join(ns, "Inbox"), "w") as f:
        f.write("".join(msg.format(i) for i in range(3)))
    for args in ([], ["--backend=sync", "--batch-bytes=16K"]):
        ids = [r.get("message_id") for r in records(run(args + [ns], check_rc=0).stdout)]
        if ids != [f"{i}@ns" for i in range(3)]:
            fail(f"Netscape mbox {args}: message ids {ids}")


def case_mbox_oversized_messages(tmp):
    """Streamed archives whose messages are over --max-size: each is a
    too-large record, the files after them are read, and the chunks read
    past them go back to the budget (they once stayed charged: with
    --max-inflight a few chunks wide, the reader waited on itself for good,
    deaf to SIGTERM)."""
    d = os.path.join(tmp, "big")
    os.mkdir(d)
    head = b"From x@y.example Mon Jan  2 10:00:00 2023\nFrom: a@b\nSubject: big\n\n"
    for name, size in (("a", 5000), ("b", 5000), ("c", 100), ("d", 100), ("e", 100)):
        with open(os.path.join(d, name + ".mbox"), "wb") as f:
            f.write(head + b"x" * max(0, size - len(head) - 2) + b"\n\n")
    for backend in ("sync", "uring"):
        args = [ARGS.ingest, "--backend=" + backend, "--max-size=200", "--max-inflight=64K", d]
        try:
            p = subprocess.run(args, capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            fail(f"{backend}: no exit in 30 s (the reader waits on its own budget)")
        if p.returncode != 0:
            fail(f"{backend}: exit {p.returncode}: {p.stderr.decode(errors='replace')[-300:]}")
        got = sorted((r["path"], r.get("error", {}).get("reason")) for r in records(p.stdout))
        want = [("a.mbox", "too-large"), ("b.mbox", "too-large"), ("c.mbox", None),
                ("d.mbox", None), ("e.mbox", None)]
        if got != want:
            fail(f"{backend}: records {got}, want {want}")
    # a message too large to be read is held no further than shows it:
    # doubling its read held up to twice --max-size
    box = os.path.join(tmp, "one.mbox")
    with open(box, "wb") as f:
        f.write(head + b"small\n\n" + head + (b"y" * 76 + b"\n") * ((40 << 20) // 77) + b"\n" + head + b"after\n")
    p = run(["--max-size=20M", "--batch-bytes=1M", "--stats=json", "-o", os.devnull, box], check_rc=0)
    stats = [json.loads(line) for line in p.stderr.splitlines() if line.startswith(b"{")]
    inflight = stats[0]["peak_inflight_bytes"]
    # --max-size, the separator's look beyond it, and the 1 MiB batch
    # that held the small message before it
    if inflight > (20 << 20) + (1 << 20):
        fail(f"a 40 MiB message over --max-size=20M held {inflight} bytes in flight")
    print("oversized streamed messages: too-large records, the run goes on; "
          f"a 40 MiB one took {inflight} bytes in flight")


def case_mbox_max_size_any_read(tmp):
    """--max-size holds for each message of an archive, wherever it lies:
    the messages over it are too-large records at their own offsets and
    lengths, those at it or under it are parsed, whatever the chunks the
    archive is streamed in (an archive over --max-size always is).  (A message used to be
    parsed when a chunk happened to hold it whole, and skipped at its From_
    line when it straddled two; a Content-Length was believed further when
    read whole.)"""
    limit = 100_000
    d = os.path.join(tmp, "mb")
    os.mkdir(d)
    spans, data = [], bytearray()
    # lengths at and around the limit, one far over, a Content-Length that
    # points past the limit, a From_ line inside a body, CRLF line ends
    for i, (length, eol, cl) in enumerate([(900, "\n", None), (limit, "\n", None),
                                            (limit + 1, "\n", None), (3 * limit, "\n", None),
                                            (limit - 1, "\r\n", None), (5000, "\n", 3 * limit),
                                            (limit + 2, "\r\n", None), (700, "\n", None)]):
        head = f"From: a{i}@b.example{eol}Subject: m{i}{eol}Message-ID: <m{i}@x>{eol}"
        if cl is not None:
            head += f"Content-Length: {cl}{eol}"
        head += eol
        body = f"From inside the body{eol}" if i == 3 else ""
        line = "y" * 78 + eol
        while len(head) + len(body) + len(line) <= length:
            body += line
        body += "z" * (length - len(head) - len(body) - len(eol)) + eol
        text = (head + body).encode()
        assert len(text) == length
        data += f"From a@b Mon Jan  1 00:00:00 2024{eol}".encode()
        spans.append((len(data), length))
        data += text + eol.encode()
    with open(os.path.join(d, "a.mbox"), "wb") as f:
        f.write(data)
    outs = []
    for args in ([], ["--batch-bytes=64K", "--max-inflight=1M"], ["--backend=sync", "--batch-bytes=16K"],
                 ["--batch-bytes=200K"]):
        recs = records(run(args + [f"--max-size={limit}", d], check_rc=0).stdout)
        got = [(r.get("offset"), r.get("length"), (r.get("error") or {}).get("reason")) for r in recs]
        want = [(off, n, "too-large" if n > limit else None) for off, n in spans]
        if got != want:
            fail(f"{args}: records {got}, want {want}")
        outs.append(recs)
    if not all(o == outs[0] for o in outs):
        fail("records differ between the archive read whole and streamed")
    # the same on standard input (streamed too: an input over --max-size
    # always is, so the whole-archive split never meets a message over it)
    whole = records(run([f"--max-size={limit}", "-"], stdin=bytes(data), check_rc=0).stdout)
    drop = ("path", "root", "size", "mtime", "id")
    if [{k: v for k, v in r.items() if k not in drop} for r in whole] != \
       [{k: v for k, v in r.items() if k not in drop} for r in outs[0]]:
        fail("the archive on standard input differs from the file")
    # skipping a message to the end, where a last From_ line has no line
    # end (the skip once searched as if more bytes could come)
    F = b"From a@b Mon Jan  1 00:00:00 2024\n"
    with open(os.path.join(d, "a.mbox"), "wb") as f:
        f.write(F + b"Subject: big\n\n" + b"x" * 200_000 + b"\n\n" + F.rstrip(b"\n"))
    outs = [run(args + ["--max-size=1000", d], check_rc=0).stdout for args in ([], ["--batch-bytes=64K"])]
    if outs[0] != outs[1]:
        fail(f"a last From_ line without a line end: {outs}")
    # seeded archives: message lengths about the limit, Content-Length
    # right, off or far, From_ lines in bodies, CRLF
    for seed in range(12):
        rng = random.Random(seed)
        parts = []
        for i in range(rng.randint(3, 9)):
            eol = "\r\n" if rng.random() < 0.2 else "\n"
            body = []
            want = rng.choice([500, limit - 2000, limit - 50, limit, limit + 10, limit + 3000, 3 * limit])
            size = 0
            while size < want:
                r = rng.random()
                line = ("From someone in a body" if r < 0.01 else "" if r < 0.02
                        else "x" * rng.randint(0, 120))
                body.append(line)
                size += len(line) + len(eol)
            body = eol.join(body) + eol
            head = [f"From: a{i}@b.example", f"Subject: m{i}"]
            if rng.random() < 0.3:
                head.append(f"Content-Length: {len(body) + rng.choice([0, 0, 5, -5, 2 * limit])}")
            parts.append(f"From a@b Mon Jan  1 00:00:00 2024{eol}" + eol.join(head) + eol + eol + body
                         + (eol if rng.random() < 0.8 else ""))
        with open(os.path.join(d, "a.mbox"), "w") as f:
            f.write("".join(parts))
        outs = [run(args + [f"--max-size={limit}", d], check_rc=0).stdout
                for args in ([], ["--batch-bytes=64K", "--max-inflight=1M"], ["--backend=sync", "--batch-bytes=16K"])]
        if not all(o == outs[0] for o in outs):
            fail(f"seed {seed}: records differ between the archive read whole and streamed")
    print("--max-size: the same records whatever the chunks")


def case_mbox_memory(tmp):
    """A large mbox is streamed: peak RSS stays near --max-inflight."""
    d = os.path.join(tmp, "big")
    os.mkdir(d)
    unit = os.path.join(tmp, "unit")
    mkcorpus(unit, "--seed", "12", "--layout", "mbox", "--count", "300")
    chunk = open(os.path.join(unit, "archive.mbox"), "rb").read()
    target = 3 << 30   # several GiB, written on the fly
    with open(os.path.join(d, "big.mbox"), "wb") as f:
        n = 0
        while n < target:
            f.write(chunk)
            n += len(chunk)
    reps = n // len(chunk)
    p = run(["--io-only", "--max-inflight=16M", "--stats=json", "-o", "/dev/null", d], check_rc=0)
    st = json.loads(p.stderr.decode().strip().splitlines()[-1])
    if st["files"] != 300 * reps:
        fail(f"{st['files']} records for {300 * reps} messages")
    if os.environ.get("INGEST_SANITIZED"):
        print(f"sanitizer build: peak RSS {st['peak_rss_kib']} KiB not checked (shadow memory)")
    elif st["peak_rss_kib"] > 96 * 1024:
        fail(f"peak RSS {st['peak_rss_kib']} KiB for a {n >> 20} MiB mbox at --max-inflight=16M")
    print(f"mbox {n >> 20} MiB: {st['files']} messages, peak RSS {st['peak_rss_kib']} KiB")


def case_walk_memory(tmp):
    """The walk holds a directory's listing whole until its last file is
    handed out (it is read in inode order): peak RSS per added file of one
    large directory stays small.  Measured (--io-only, names of 31 bytes as
    Maildir deliveries have, 5,000 and 50,000 files): 68-69 bytes a file (16
    of listing, the name and its NUL, and copies left by the arrays'
    doubling, which at this size is malloc's heap, not fresh mappings; 47
    between 20,000 and 200,000); 113-130 when each listed file kept a
    56-byte struct walk_entry and qsort's merge sort a 16-byte index of its
    own.  Bound: 80.  The names are hard links of one message (inputs of
    their own, as names of one inode are outside a Maildir's relisting):
    making them costs no data written."""
    runs = {}
    # Under a sanitizer RSS is the shadow memory's, so only the smaller
    # listing runs there (its records are still counted): the 50,000 links
    # took 90 s of an ASan build's suite for a bound it cannot check.
    sanitized = bool(os.environ.get("INGEST_SANITIZED"))
    for n in (5_000,) if sanitized else (5_000, 50_000):
        top = os.path.join(tmp, f"dir{n}")
        d = os.path.join(top, "cur")
        os.makedirs(d)
        for sub in ("new", "tmp"):
            os.makedirs(os.path.join(top, sub))
        one = os.path.join(tmp, f"one{n}")
        with open(one, "wb") as f:
            f.write(b"Subject: x\n\nx\n")
        for i in range(n):
            os.link(one, os.path.join(d, f"{1500000000 + i}.{i:06d}_0.test:2,S"))
        p = run(["--io-only", "--stats=json", "-o", "/dev/null", top], check_rc=0)
        st = json.loads(p.stderr.decode().strip().splitlines()[-1])
        if st["files"] != n:
            fail(f"{st['files']} records for {n} files")
        runs[n] = st["peak_rss_kib"]
    if sanitized:
        print(f"sanitizer build: {runs[5_000]} KiB peak RSS not checked (shadow memory)")
        return
    per = (runs[50_000] - runs[5_000]) * 1024 / 45_000
    print(f"peak RSS {runs[5_000]} KiB at 5,000 files, {runs[50_000]} KiB at 50,000: "
          f"{per:.0f} bytes per added file (bound 80)")
    if per > 80:
        fail(f"{per:.0f} bytes of peak RSS per added file of one directory, over 80")


def case_shard_union(tmp):
    """N shards together give exactly the records of one unsharded run,
    also when run with GNU parallel as README shows."""
    d = os.path.join(tmp, "md")
    mkcorpus(d, "--seed", "13", "--layout", "maildir", "--count", "600", "--folders", "2")
    # thread_id joins threads within a run (README, "Threads"): a message
    # joined through one in another shard keeps its References root's thread
    # there, so the records are compared byte for byte without it
    def unthreaded(out):
        return [re.sub(rb',"thread_id":"[0-9a-f]{16}"', b"", l) for l in out.splitlines()]
    whole = sorted(unthreaded(run([d], check_rc=0).stdout))
    parts = []
    for k in range(1, 5):
        parts += unthreaded(run([f"--shard={k}/4", d], check_rc=0).stdout)
    if sorted(parts) != whole:
        fail(f"4 shards: {len(parts)} records vs {len(whole)} unsharded (or different bytes)")
    if shutil.which("parallel"):
        sh = f"parallel --will-cite -j 2 '{ARGS.ingest}' --shard={{}}/3 '{d}' ::: 1 2 3"
        p = subprocess.run(["bash", "-c", sh], capture_output=True, timeout=300)
        if p.returncode or sorted(unthreaded(p.stdout)) != whole:
            fail(f"GNU parallel recipe: rc {p.returncode}, {len(p.stdout.splitlines())} records")
    else:
        print("note: GNU parallel not installed; the recipe was not run")
    # A message keeps its shard through a flag change and new/ -> cur/ (a
    # rename: else each shard's --state would see a delete and an add), and
    # "md/" shards as "md" does.
    def shard_of(root):
        where = {}
        for k in range(1, 5):
            for r in records(run([f"--shard={k}/4", "--io-only", root], check_rc=0).stdout):
                base = r["path"].rsplit("/", 1)[-1].split(":2,")[0]
                where[(r.get("folder", ""), base)] = k
        return where
    before = shard_of(d)
    if shard_of(d + "/") != before:
        fail("'md/' is sharded differently from 'md'")
    moved = 0
    for sub in ("cur", "new"):
        for dirpath, _dirs, files in os.walk(d):
            if os.path.basename(dirpath) != sub:
                continue
            for name in files:
                base = name.split(":2,")[0]
                flags = name.split(":2,")[1] if ":2," in name else ""
                new = base + ":2," + "".join(sorted(set(flags + "RS")))
                os.rename(os.path.join(dirpath, name), os.path.join(os.path.dirname(dirpath), "cur", new))
                moved += 1
    after = shard_of(d)
    if after != before:
        diff = [k for k in before if after.get(k) != before[k]]
        fail(f"{len(diff)} of {len(before)} messages changed shard when their flags changed: {diff[:3]}")
    print(f"{moved} messages renamed (flags, new/ to cur/): every one kept its shard")


def case_state(tmp):
    """--state: a re-run reads no bodies; changes come out as new, changed,
    renamed and deleted records; the state file is replaced atomically.
    The whole scenario runs on each backend: the verdicts are taken at stat
    time, which each backend reaches its own way."""
    for backend in ("uring", "sync"):
        sub = os.path.join(tmp, backend)
        os.mkdir(sub)
        state_scenario(sub, "--backend=" + backend)


def state_scenario(tmp, backend):
    d = os.path.join(tmp, "md")
    st = os.path.join(tmp, "state")
    mkcorpus(d, "--seed", "14", "--layout", "maildir", "--count", "300")

    def bad(msg):
        fail(f"{backend}: {msg}")

    first = records(run([backend, "--state=" + st, d], check_rc=0).stdout)
    if len(first) != count_files(d):
        bad("first run with --state")
    p = run([backend, "--state=" + st, "--stats=json", d], check_rc=0)
    if p.stdout:
        bad(f"unchanged re-run emitted {len(p.stdout.splitlines())} records")
    s = json.loads(p.stderr.decode().strip().splitlines()[-1])
    if s["ring_ops"]["read"] or s["syscalls"]["read"] > 2 + 2:
        bad(f"unchanged re-run read bodies: {s['ring_ops']} {s['syscalls']['read']}")
    cur = sorted(os.listdir(os.path.join(d, "cur")))
    new = sorted(os.listdir(os.path.join(d, "new")))
    flagged = cur[0]
    base, old_flags = flagged.split(":2,")
    new_flags = "F" if old_flags != "F" else "S"
    os.rename(os.path.join(d, "cur", flagged), os.path.join(d, "cur", base + ":2," + new_flags))
    moved = new[0]
    os.rename(os.path.join(d, "new", moved), os.path.join(d, "cur", moved + ":2,S"))
    gone = cur[1]
    os.unlink(os.path.join(d, "cur", gone))
    grown = cur[2]
    with open(os.path.join(d, "cur", grown), "ab") as f:
        f.write(b"\nmore\n")
    with open(os.path.join(d, "new", "1.added.host"), "wb") as f:
        f.write(b"From: a@b.example\nSubject: added\n\nhi\n")
    # rewritten (a filter adding a header), then renamed: read again, a
    # whole record under the new name, not a rename that keeps old bytes
    rewritten = cur[3]
    rw_base = rewritten.split(":2,")[0]
    rw_path = os.path.join(d, "cur", rewritten)
    rw_stat = os.stat(rw_path)
    with open(rw_path, "wb") as f:
        f.write(b"From: a@b.example\nSubject: rewritten by a filter\n\nhi\n")
    os.utime(rw_path, ns=(rw_stat.st_atime_ns, rw_stat.st_mtime_ns + 2_000_000_000))
    os.rename(rw_path, os.path.join(d, "cur", rw_base + ":2,ST"))
    recs = records(run([backend, "--state=" + st, d], check_rc=0).stdout)
    renamed = {(r["renamed"]["from"], r["renamed"]["to"]) for r in recs if "renamed" in r}
    deleted = {r["deleted"] for r in recs if "deleted" in r}
    messages = {r["path"] for r in recs if "path" in r}
    want_renamed = {("cur/" + flagged, "cur/" + base + ":2," + new_flags),
                    ("new/" + moved, "cur/" + moved + ":2,S")}
    if renamed != want_renamed:
        bad(f"renamed: {renamed} != {want_renamed}")
    if deleted != {"cur/" + gone}:
        bad(f"deleted: {deleted}")
    if messages != {"cur/" + grown, "new/1.added.host", "cur/" + rw_base + ":2,ST"}:
        bad(f"new/changed: {messages}")
    rw = [r for r in recs if r.get("path") == "cur/" + rw_base + ":2,ST"]
    if not rw or rw[0].get("subject") != "rewritten by a filter":
        bad(f"the rewritten and renamed message: {rw}")
    if os.path.exists(st + ".tmp"):
        bad("state temp file left behind")
    if run([backend, "--state=" + st, d], check_rc=0).stdout:
        bad("third run not empty")
    es = run([backend, "--state=" + os.path.join(tmp, "s2"), "--format=es-bulk", d], check_rc=0)
    if not es.stdout:
        bad("es-bulk with state")


def unlisted_scenario(tmp, backend, pre, env_fault, break_tree, mend_tree):
    """A run whose listing fails (wholly or partly) keeps the state of what
    it could not list: no deleted record for it, and the next run, listing
    again, finds it unchanged: it emits nothing but the deletion of the
    failed listing's error records, which a clean run has not (they stayed
    downstream for good before).  Returns the records of the failing run."""
    d = os.path.join(tmp, "md")
    st = os.path.join(tmp, "state")
    mkcorpus(d, "--seed", "16", "--layout", "maildir", "--count", "120", "--folders", "2")
    for top, dirs, files in os.walk(tmp):
        for x in dirs + files:
            os.chmod(os.path.join(top, x), 0o777 if x in dirs else 0o666)
    os.chmod(tmp, 0o777)

    def ingest(args, env=None):
        p = subprocess.run(pre + [ARGS.ingest, backend, "--state=" + st] + args + [d],
                           capture_output=True, env=env, timeout=300)
        if p.returncode != 0:
            fail(f"{backend} {args}: exit {p.returncode}: {p.stderr.decode(errors='replace')}")
        return records(p.stdout)

    if len(ingest([])) != count_files(d):
        fail(f"{backend}: first run")
    break_tree(d)
    env = dict(os.environ, **env_fault) if env_fault else None
    recs = ingest([], env)
    deleted = [r["deleted"] for r in recs if "deleted" in r]
    if deleted:
        fail(f"{backend}: {len(deleted)} false deletions for an unlisted directory, e.g. {deleted[:3]}")
    if not any(r.get("error") for r in recs):
        fail(f"{backend}: the failed listing left no error record: {recs[:3]}")
    mend_tree(d)
    again = ingest([])
    gone = sorted((r["path"], r["id"]) for r in recs if r.get("error"))
    if sorted((r.get("deleted"), r.get("id")) for r in again) != gone:
        fail(f"{backend}: the run after the listing was mended: {len(again)} records, "
             f"e.g. {again[:2]}; wanted only the deletion of {gone[:3]}")
    return recs


def case_state_unlisted_fault(tmp):
    """--state with a directory listing that fails (getdents64 returns EIO,
    by fault injection): no false deletions, the state keeps the entries."""
    probe = subprocess.run([ARGS.ingest, "--io-only", sample()], capture_output=True,
                           env=dict(os.environ, INGEST_FAULT_COUNT="1"), timeout=60)
    if b"ingest-fault: calls=" not in probe.stderr:
        print("SKIP: ingest was built without -Dfault_injection=true (INGEST_FAULT has no effect)")
        sys.exit(77)
    # 1: the root's first listing call (nothing listed); 3: a later
    # directory's (which one depends on the walk order, not the point)
    for backend in ("--backend=uring", "--backend=sync"):
        for n in (1, 3):
            sub = os.path.join(tmp, f"{backend[10:]}-{n}")
            os.mkdir(sub)
            recs = unlisted_scenario(sub, backend, [], {"INGEST_FAULT": f"{n}:EIO:sys:getdents64"},
                                     lambda d: None, lambda d: None)
            if not any(r.get("error", {}).get("errno") == "EIO" for r in recs):
                fail(f"{backend} fault {n}: no EIO record: {[r for r in recs if r.get('error')]}")


def records_as(pre, args):
    """The records of ingest with args, run after the prefix pre (a user's:
    unprivileged_prefix), which must exit 0."""
    p = subprocess.run(pre + [ARGS.ingest] + args, capture_output=True, timeout=120)
    if p.returncode:
        fail(f"{args}: exit {p.returncode}: {p.stderr[-500:]!r}")
    return records(p.stdout)


def unprivileged_prefix(why_root_is_no_test):
    """The command prefix that runs ingest as a user permissions apply to:
    nothing when not root, setpriv to nobody when root (skips the case when
    that is impossible)."""
    if os.geteuid() != 0:
        return []
    pre = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"]
    if not shutil.which("setpriv") or subprocess.run(pre + [ARGS.ingest, "--version"],
                                                     capture_output=True).returncode:
        print(f"SKIP: running as root and cannot drop to nobody with setpriv ({why_root_is_no_test})")
        sys.exit(77)
    return pre


def case_state_file_becomes_archive(tmp):
    """JSON Lines with --state, applied by id (a record replaces, `deleted`
    removes): a file that is an error record (empty), then an archive, one
    message (no From_ line), an archive again and gone leaves a clean run's
    ids at every step, whole and streamed, and streamed with a first
    message too large to read.  The archive's first record used to leave
    the file's own record (es-bulk deleted it only when it was an error
    document)."""
    msg = b"Subject: one\nMessage-ID: <one@x>\n\nbody\n"
    small = b"".join(b"From a Mon Jan  1 00:00:00 2024\nSubject: m%d\n\nbody %d\n\n" % (n, n) for n in (1, 2))
    big = b"From a Mon Jan  1 00:00:00 2024\nSubject: big\n\n" + b"x" * 400 + b"\n\n" + small
    for k, (limit, box) in enumerate((([], small), (["--max-size=40"], small), (["--max-size=200"], big))):
        d = os.path.join(tmp, "d%d" % k)
        os.makedirs(d)
        path = os.path.join(d, "a.mbox")
        st = os.path.join(tmp, "st%d" % k)
        ids = {}
        for i, body in enumerate((b"", box, msg, box, None)):
            if body is None:
                os.unlink(path)
            else:
                with open(path, "wb") as f:
                    f.write(body)
                os.utime(path, (1_700_000_000 + i, 1_700_000_000 + i))
            for r in records(run(limit + ["--state=" + st, d], check_rc=0).stdout):
                if "deleted" in r:
                    if r["id"] not in ids:
                        fail(f"{limit} step {i}: a deletion of an id never written: {r}")
                    del ids[r["id"]]
                elif "renamed" not in r:
                    ids[r["id"]] = r.get("subject")
            clean = {r["id"]: r.get("subject") for r in records(run(limit + [d], check_rc=0).stdout)}
            if ids != clean:
                fail(f"{limit} step {i}: {ids}, a clean run's {clean}")
    print("a file an error, an archive, one message, an archive, gone: a clean run's ids each time")


def case_state_named_missing_unlisted(tmp):
    """JSON Lines and es-bulk --es-errors with --state: a list naming a file
    that does not exist gives its error record (under the file's id), and
    the run whose list no longer names it deletes that record, as a clean
    run has none.  The state used to keep nothing of it."""
    mail = os.path.join(tmp, "a.eml")
    with open(mail, "wb") as f:
        f.write(b"Subject: a\n\nbody\n")
    missing = os.path.join(tmp, "nothere.eml")
    for fmt in (["--format=jsonl"], ["--format=es-bulk", "--es-errors"]):
        st = os.path.join(tmp, "st-" + fmt[0][9:])
        first = run(fmt + ["--state=" + st, "--files-from=-"], stdin=f"{mail}\n{missing}\n".encode(),
                     check_rc=0).stdout
        second = run(fmt + ["--state=" + st, "--files-from=-"], stdin=f"{mail}\n".encode(),
                     check_rc=0).stdout
        err = [r for r in records(first) if r.get("error", {}).get("errno") == "ENOENT"]
        if len(err) != 1:
            fail(f"{fmt}: the missing file's error records: {err}")
        if fmt[0] == "--format=jsonl":
            gone = [(r.get("deleted"), r.get("id")) for r in records(second)]
            want = [(missing, err[0]["id"])]
        else:
            gone = [json.loads(x).get("delete", {}).get("_id") for x in second.splitlines()]
            want = [err[0]["id"]]
        if gone != want:
            fail(f"{fmt}: the record of a missing file no longer listed: {gone}, wanted {want}")
    print("a missing file's record goes when the list no longer names it")


def case_state_no_file_place_removed(tmp):
    """--state, both backends: a place that holds no file (a FIFO from the
    start, or a message file turned FIFO) gives its error record each run
    and, once removed, a deletion of that record (JSON Lines, es-bulk
    --es-errors), as a clean run has none; es-bulk without --es-errors
    deletes the message's document when the file turns FIFO and says
    nothing more.  A no-file place used to have no state entry, and its
    error record stayed downstream for good."""
    for backend in ("--backend=uring", "--backend=sync"):
        for start in ("fifo", "file"):
            for fmt in (["--format=jsonl"], ["--format=es-bulk", "--es-errors"], ["--format=es-bulk"]):
                d = os.path.join(tmp, f"{backend[10:]}-{start}-{len(fmt)}-{fmt[0][9:]}")
                for sub in ("cur", "new", "tmp"):
                    os.makedirs(os.path.join(d, "M", sub))
                place = os.path.join(d, "M", "cur", "1.host:2,S")
                if start == "fifo":
                    os.mkfifo(place)
                else:
                    with open(place, "wb") as f:
                        f.write(b"Subject: a\n\nbody\n")
                st = os.path.join(d, "st")
                args = [backend] + fmt + ["--state=" + st, os.path.join(d, "M")]
                outs = []
                steps = (["fifo", "fifo again", "removed", "once more"] if start == "fifo"
                         else ["file", "fifo", "removed", "once more"])
                for step in steps:
                    if step == "fifo" and start == "file":
                        os.unlink(place)
                        os.mkfifo(place)
                    elif step == "removed":
                        os.unlink(place)
                    if step != "fifo" or start == "file" or not outs:
                        outs.append(run(args, check_rc=0).stdout)
                if fmt == ["--format=jsonl"]:
                    kinds = [["error" if "error" in r else "deleted" if "deleted" in r else "message"
                              for r in records(o)] for o in outs]
                else:
                    kinds = [[next(iter(json.loads(line))) for line in o.decode().splitlines()
                              if line.startswith('{"index"') or line.startswith('{"delete"')]
                             for o in outs]
                want = {
                    ("fifo", "--format=jsonl"): [["error"], ["error"], ["deleted"], []],
                    ("fifo", "--es-errors"): [["index"], ["index"], ["delete"], []],
                    ("fifo", "--format=es-bulk"): [[], [], [], []],
                    ("file", "--format=jsonl"): [["message"], ["error"], ["deleted"], []],
                    ("file", "--es-errors"): [["index"], ["index"], ["delete"], []],
                    ("file", "--format=es-bulk"): [["index"], ["delete"], [], []],
                }[(start, fmt[-1])]
                if kinds != want:
                    fail(f"{backend} {start} {fmt}: {kinds}, wanted {want}")
    print("a no-file place: its error record each run, deleted once the place is gone")


def applied(view, out, fmt):
    """The downstream view after a run's output: id -> the record's path
    and error reason (JSON Lines: a "deleted" record removes its id; es-bulk:
    index and delete actions)."""
    lines = out.decode().splitlines()
    if fmt[0] == "--format=jsonl":
        for r in records(out):
            if "deleted" in r:
                view.pop(r["id"], None)
            elif "renamed" in r:
                view[r["id"]] = (r["renamed"]["to"], view[r["id"]][1])
            else:
                view[r["id"]] = (r["path"], r.get("error", {}).get("reason"))
        return view
    i = 0
    while i < len(lines):
        action = json.loads(lines[i])
        if "delete" in action:
            view.pop(action["delete"]["_id"], None)
            i += 1
        else:
            doc = json.loads(lines[i + 1])
            if "update" in action:   # a rename: the document's place
                view[action["update"]["_id"]] = (doc["doc"]["path"], view[action["update"]["_id"]][1])
            else:
                view[action["index"]["_id"]] = (doc["path"], doc.get("error", {}).get("reason"))
            i += 2
    return view


def case_state_no_file_place_shares_an_id(tmp):
    """--state, both backends, JSON Lines and es-bulk with and without
    --es-errors: a FIFO under a Maildir message's unique name (one id) in
    another folder or at the message's old name; after every run the
    downstream view equals a clean run's.  A copy turned FIFO had the
    other copy's document deleted (es-bulk), a message deleted beside
    such a FIFO kept its document, and a FIFO at a renamed message's old
    name kept its error record once removed."""
    n = 0
    for backend in ("--backend=uring", "--backend=sync"):
        for fmt in (["--format=jsonl"], ["--format=es-bulk", "--es-errors"], ["--format=es-bulk"]):
            for name, (make, steps) in clilib.FIFO_ID_SCENARIOS.items():
                n += 1
                m = clilib.fifo_id_maildir(os.path.join(tmp, str(n)))
                make(m)
                args = [backend, "--max-size=1K"] + fmt + ["-q", m]
                st = os.path.join(tmp, str(n), "st")
                view = applied({}, run(args + ["--state=" + st], check_rc=None).stdout, fmt)
                for k, step in enumerate(steps):
                    step(m)
                    view = applied(view, run(args + ["--state=" + st], check_rc=None).stdout, fmt)
                    clean = applied({}, run(args, check_rc=None).stdout, fmt)
                    if view != clean:
                        fail(f"{backend} {fmt} {name}, step {k + 1}: {view} != a clean run's {clean}")
    print(f"{n} scenarios: the downstream view a clean run's after every step")


def case_state_copies_named_again(tmp):
    """--state, both backends: a Maildir message copied into two folders
    under one unique name (one id), walked and named again by the command
    line or a list, is one record a copy, and the state saved loads.  The
    second copy met again was taken for a file new to the run (only the
    id's first entry was compared): five records, two entries for one
    path, and the next run refused the state as corrupt."""
    maildir = os.path.join(tmp, "M")
    for sub in ("cur", "new", "tmp", ".F/cur", ".F/new", ".F/tmp"):
        os.makedirs(os.path.join(maildir, sub))
    copies = [os.path.join(maildir, d, "1.host:2,S") for d in ("cur", ".F/cur")]
    for c in copies:
        with open(c, "wb") as f:
            f.write(b"Message-ID: <c@x>\nSubject: copy\n\nbody\n")
    listed = "".join(c + "\n" for c in copies + copies[::-1]).encode()
    for backend in ("--backend=uring", "--backend=sync"):
        for how, args, stdin in (("a list", ["--files-from=-", maildir], listed),
                                 ("the command line", [maildir, copies[1], copies[0]], None)):
            st = os.path.join(tmp, "st")
            for f in (st, st + ".lock"):
                if os.path.exists(f):
                    os.unlink(f)
            # the copies are read again by every run (README, "Incremental
            # rules"): the run after gives them again, one record each
            for step in ("first run", "the run after"):
                p = run([backend, "--state=" + st] + args, stdin=stdin)
                if p.returncode != 0:
                    fail(f"{backend}, {how}, {step}: exit {p.returncode}: {p.stderr[-300:]!r}")
                paths = sorted(os.path.join(r["root"], r["path"]) for r in records(p.stdout))
                if paths != sorted(copies):
                    fail(f"{backend}, {how}, {step}: records {paths}, wanted one a copy")
    print("copies under one unique name, named again: one record each, the state loads")


def case_state_unlisted_perm(tmp):
    """--state with a Maildir folder that cannot be listed (mode 000, run by
    a user who is not root): no false deletions, the state keeps the folder's
    entries, and once readable again nothing is re-emitted."""
    pre = unprivileged_prefix("root lists a mode-000 directory anyway")
    os.chmod(tmp, 0o755)
    for backend in ("--backend=uring", "--backend=sync"):
        # a whole Maildir++ folder, then only the cur/ of the top Maildir
        for what in (".Sent", "cur"):
            sub = os.path.join(tmp, f"{backend[10:]}-{what}")
            os.mkdir(sub)
            recs = unlisted_scenario(sub, backend, pre, None,
                                     lambda d: os.chmod(os.path.join(d, what), 0),
                                     lambda d: os.chmod(os.path.join(d, what), 0o777))
            if not any(r.get("error", {}).get("errno") == "EACCES" for r in recs):
                fail(f"{backend} {what}: no EACCES record: {[r for r in recs if r.get('error')]}")


def case_state_unreadable(tmp):
    """--state and a message that cannot be read (mode 000, run by a user
    who is not root): an error record, no false deletion, and once readable
    it is read and emitted (not taken for unchanged), on both backends; a
    message that was never read successfully is not in the saved state.
    Both backends judge a file by its size and mtime before they fail to
    open it: one made unreadable and otherwise unchanged is not read (no
    record), and a new one's error record has its size and mtime."""
    pre = unprivileged_prefix("root reads a mode-000 file anyway")
    os.chmod(tmp, 0o755)
    as_user = functools.partial(records_as, pre)

    for backend in ("--backend=uring", "--backend=sync"):
        d = os.path.join(tmp, backend[10:])
        for sub in ("cur", "new", "tmp"):
            os.makedirs(os.path.join(d, sub))
        names = [f"17000000{i:02d}.M{i}.h:2,S" for i in range(5)]
        for n in names:
            with open(os.path.join(d, "cur", n), "wb") as f:
                f.write(b"From: a@b.example\nSubject: " + n.encode() + b"\n\nbody\n")
        os.chmod(tmp, 0o777)
        os.chmod(d, 0o777)
        st = os.path.join(d + ".state")
        locked = os.path.join(d, "cur", names[2])
        # the first run knows the file (read fine), the second cannot read it
        as_user([backend, "--state=" + st, d])
        os.chmod(locked, 0)
        recs = as_user([backend, "--state=" + st, d])
        if recs:
            fail(f"{backend}: unchanged re-run with one unreadable file: {recs}")
        os.chmod(locked, 0o644)
        recs = as_user([backend, "--state=" + st, d])
        if recs:
            fail(f"{backend}: a file unreadable for one run, unchanged since: re-emitted {recs}")
        # a new file that cannot be read: error record, then read once readable
        new = os.path.join(d, "cur", "1800000000.M9.h:2,S")
        with open(new, "wb") as f:
            f.write(b"From: c@d.example\nSubject: late\n\nbody\n")
        os.chmod(new, 0)
        recs = as_user([backend, "--state=" + st, d])
        if len(recs) != 1 or recs[0].get("error", {}).get("errno") != "EACCES" or \
                recs[0].get("size") != os.path.getsize(new) or "mtime" not in recs[0]:
            fail(f"{backend}: a new unreadable file: {recs}")
        os.chmod(new, 0o644)
        recs = as_user([backend, "--state=" + st, d])
        if [r.get("subject") for r in recs] != ["late"]:
            fail(f"{backend}: the file that became readable was not read: {recs}")
        # a new file that cannot be read, then deleted: its error record,
        # written under its id, is deleted (the state kept it as an error)
        gone = os.path.join(d, "cur", "1800000001.M10.h:2,S")
        with open(gone, "wb") as f:
            f.write(b"From: e@f.example\nSubject: gone\n\nbody\n")
        os.chmod(gone, 0)
        err = as_user([backend, "--state=" + st, d])
        os.unlink(gone)
        recs = as_user([backend, "--state=" + st, d])
        if [(r.get("deleted"), r.get("id")) for r in recs] != [("cur/1800000001.M10.h:2,S", err[0]["id"])]:
            fail(f"{backend}: an unreadable new file deleted: {recs}, its error record {err}")
        # an archive streamed (past --max-size), unreadable when first met:
        # read once readable (its failed open used to leave the state an
        # entry as if it had been read, and the file was never read)
        box = os.path.join(d, "box.mbox")
        with open(box, "wb") as f:
            for n in (1, 2, 3):
                f.write(b"From a Mon Jan  1 00:00:00 2024\nSubject: box %d\n\nbody %d\n\n" % (n, n))
        os.chmod(box, 0)
        recs = as_user([backend, "--max-size=60", "--state=" + st, d])
        if [r.get("error", {}).get("errno") for r in recs] != ["EACCES"]:
            fail(f"{backend}: an unreadable streamed archive: {recs}")
        os.chmod(box, 0o644)
        recs = as_user([backend, "--max-size=60", "--state=" + st, d])
        # its messages, after the deletion of the error record it had under its id
        if [r.get("deleted") for r in recs[:1]] != ["box.mbox"] or \
                [r.get("subject") for r in recs[1:]] != ["box 1", "box 2", "box 3"]:
            fail(f"{backend}: the streamed archive that became readable was not read: {recs}")
        # a directory listed but not searchable for a run (mode 644): no
        # file in it can be statted, each is an error record under its id,
        # replacing its message downstream; the next run must read them
        # again though unchanged (their entries were kept as they were, so
        # the messages never came back)
        cur = os.path.join(d, "cur")
        os.chmod(cur, 0o644)
        recs = as_user([backend, "--max-size=60", "--state=" + st, d])
        got = sorted((r["path"], r.get("error", {}).get("errno")) for r in recs)
        if got != sorted(("cur/" + n, "EACCES") for n in os.listdir(cur)):
            fail(f"{backend}: a directory without search permission: {got}")
        os.chmod(cur, 0o755)
        recs = as_user([backend, "--max-size=60", "--state=" + st, d])
        back = sorted(r["path"] for r in recs if "error" not in r and "deleted" not in r)
        if back != sorted("cur/" + n for n in os.listdir(cur)):
            fail(f"{backend}: the messages after the directory could be searched again: {recs}")
        print(f"{backend}: unreadable files kept in the state and read once readable")


def case_state_not_statted(tmp):
    """--state, as a user permissions apply to, both backends.  A directory
    a list names and that cannot be listed: its error record, then, once
    it can be listed, that record's deletion (nothing kept it in the state,
    so it stayed downstream for good).  Two copies of a message under one
    unique name, the first listed in a folder that cannot be searched: the
    other copy is read by every run, its changes with it (the unstatted
    copy took the other's state entry, which then counted as met)."""
    pre = unprivileged_prefix("root stats anyway")
    os.chmod(tmp, 0o755)
    as_user = functools.partial(records_as, pre)

    for backend in ("--backend=uring", "--backend=sync"):
        d = os.path.join(tmp, backend[10:])
        os.makedirs(d)
        os.chmod(d, 0o777)
        listed = os.path.join(d, "M")
        for sub in ("cur", "new", "tmp"):
            os.makedirs(os.path.join(listed, sub))
        with open(os.path.join(listed, "cur", "1.M1.h:2,S"), "wb") as f:
            f.write(b"From: a@b.example\nSubject: one\n\nbody\n")
        lst = os.path.join(d, "list")
        with open(lst, "w") as f:
            f.write(listed + "\n")
        st = os.path.join(d, "st")
        as_user([backend, "--state=" + st, "--files-from=" + lst])
        os.chmod(listed, 0)
        err = as_user([backend, "--state=" + st, "--files-from=" + lst])
        os.chmod(listed, 0o755)
        gone = as_user([backend, "--state=" + st, "--files-from=" + lst])
        if [r.get("error", {}).get("errno") for r in err] != ["EACCES"] or \
                [(r.get("deleted"), r.get("id")) for r in gone] != [(listed, err[0]["id"])]:
            fail(f"{backend}: a listed directory that could not be listed: {err}, then {gone}")
        # the copies: A in a folder that cannot be searched, B readable
        copies = []
        for folder in ("X", "Y"):
            for sub in ("cur", "new", "tmp"):
                os.makedirs(os.path.join(d, "C", "." + folder, sub))
            copies.append(os.path.join(d, "C", "." + folder, "cur", "1800.M1.h:2,S"))
            with open(copies[-1], "wb") as f:
                f.write(b"From: a@b.example\nSubject: copy " + folder.encode() + b"\n\nbody\n")
        a, b = copies
        st = os.path.join(d, "st-copies")
        with open(lst, "w") as f:
            f.write(b + "\n" + a + "\n")
        as_user([backend, "--state=" + st, "--files-from=" + lst])
        os.chmod(os.path.dirname(a), 0o644)
        with open(lst, "w") as f:
            f.write(a + "\n" + b + "\n")
        for edit in ("first", "second"):
            with open(b, "ab") as f:
                f.write(edit.encode() + b"\n")
            recs = as_user([backend, "--state=" + st, "--files-from=" + lst])
            got = [(r["path"], "error" in r, r.get("size")) for r in recs]
            if got != [(a, True, None), (b, False, os.path.getsize(b))]:
                fail(f"{backend}: copies, one not statted, after the {edit} edit of the other: {got}")
        os.chmod(os.path.dirname(a), 0o755)
    print("a listed directory's error record deleted once listed; a copy read beside one not statted")


def case_state_unchanged_100k(tmp):
    """An unchanged 100,000-message Maildir re-run with --state reads no
    message bodies: no read on the ring, and strace sees no read, pread64
    or openat growing with the messages."""
    skip_without_strace()
    d = os.path.join(tmp, "md")
    for sub in ("cur", "new", "tmp"):
        os.makedirs(os.path.join(d, sub))
    body = b"From: a@b.example\nSubject: s\n\nbody\n"
    for i in range(100000):
        with open(os.path.join(d, "cur", f"{1600000000 + i}.M{i}.h:2,S"), "wb") as f:
            f.write(body)
    st = os.path.join(tmp, "state")
    first = run(["--state=" + st, "--no-text", "-o", "/dev/null", "--stats=json", d], check_rc=0)
    if json.loads(first.stderr.decode().strip().splitlines()[-1])["files"] != 100000:
        fail("first run")
    log = os.path.join(tmp, "strace.txt")
    # the same options: a state made with --no-text refuses any other run
    p = subprocess.run(["strace", "-f", "-c", "-o", log, ARGS.ingest, "--state=" + st,
                        "--no-text", "--stats=json", d], capture_output=True, timeout=600)
    if p.returncode or p.stdout:
        fail(f"re-run: exit {p.returncode}, {len(p.stdout.splitlines())} records")
    s = json.loads(p.stderr.decode().strip().splitlines()[-1])
    if s["ring_ops"]["read"] or s["ring_ops"]["openat"] or s["ring_ops"]["statx"] != 100000:
        fail(f"ring: {s['ring_ops']}")
    counts = {}
    for line in open(log):
        f = line.split()
        if len(f) >= 5 and f[-1].isidentifier() and f[3].isdigit():
            counts[f[-1]] = int(f[3])
    for name in ("read", "pread64", "openat"):
        if counts.get(name, 0) > 100:
            fail(f"strace: {counts.get(name)} {name} calls for an unchanged re-run of 100,000 messages")
    print(f"unchanged re-run: statx on the ring {s['ring_ops']['statx']}, strace read "
          f"{counts.get('read', 0)}, openat {counts.get('openat', 0)}")


def case_state_output_durable(tmp):
    """With --state the output reaches the disk before the new state names
    its messages sent: strace shows the output file's fsync (each split
    file's with --split-bytes; a standard output redirected to a file too)
    before the rename that puts the state in place.  /dev/null and a pipe
    are not synced (fsync would fail on them) and the run succeeds."""
    skip_without_strace()
    d = os.path.join(tmp, "md")
    mkcorpus(d, "--seed", "5", "--layout", "maildir", "--count", "60")

    def traced(name, args, stdout=subprocess.DEVNULL):
        st = os.path.join(tmp, name + ".state")
        log = os.path.join(tmp, name + ".strace")
        p = subprocess.run(["strace", "-f", "-y", "-qq", "-e", "trace=fsync,fdatasync,rename,renameat,renameat2",
                            "-o", log, ARGS.ingest, "--state=" + st] + args + [d],
                           stdout=stdout, stderr=subprocess.PIPE, timeout=120)
        if p.returncode != 0 or not os.path.exists(st):
            fail(f"{name}: exit {p.returncode}, state written: {os.path.exists(st)}: {p.stderr!r}")
        lines = [ln for ln in open(log) if "fsync(" in ln or "rename" in ln]
        renames = [i for i, ln in enumerate(lines) if "rename" in ln and ".state.tmp." in ln]
        if len(renames) != 1:
            fail(f"{name}: the state was not renamed into place once: {lines}")
        # the new state's own fsync: an unnamed file until it is whole
        synced = [ln for ln in lines[:renames[0]] if "fsync(" in ln and ".state" not in ln and
                  "(deleted)" not in ln]
        return synced, lines

    out = os.path.join(tmp, "out.jsonl")
    synced, lines = traced("file", ["-o", out])
    if not any(f"<{out}>" in ln for ln in synced):
        fail(f"-o FILE: the output was not fsynced before the state's rename: {lines}")
    with open(os.path.join(tmp, "redirected.jsonl"), "wb") as f:
        synced, lines = traced("redirected", [], stdout=f)
    if not any("redirected.jsonl>" in ln for ln in synced):
        fail(f"> FILE: the redirected standard output was not fsynced before the rename: {lines}")
    split = os.path.join(tmp, "part")
    synced, lines = traced("split", ["-o", split, "--split-bytes=64K"])
    parts = sorted(n for n in os.listdir(tmp) if n.startswith("part."))
    if len(parts) < 3 or any(not any(f"<{os.path.join(tmp, n)}>" in ln for ln in synced) for n in parts):
        fail(f"--split-bytes: not every one of {parts} was fsynced before the rename: {lines}")
    for name, args in (("devnull", ["-o", "/dev/null"]), ("pipe", [])):
        synced, lines = traced(name, args, stdout=subprocess.PIPE if name == "pipe" else subprocess.DEVNULL)
        if synced:
            fail(f"{name}: an output that cannot be synced was: {synced}")
    print(f"output fsynced before the state's rename: -o FILE, > FILE, {len(parts)} split files; "
          f"/dev/null and a pipe left alone")


def case_progress(tmp):
    """A progress line only on a terminal (or with --progress); nothing on
    stderr otherwise."""
    p = run(["--io-only", sample()], check_rc=0)
    if p.stderr:
        fail(f"stderr without a terminal: {p.stderr!r}")
    p = run(["--io-only", "--progress", sample()], check_rc=0)
    if b"files" not in p.stderr or b"\r" not in p.stderr:
        fail(f"--progress drew nothing: {p.stderr!r}")
    # On a terminal: drawn by default, at most ten times a second, with an
    # ETA when the total is known (--files-from); -q and --no-progress
    # silence it.
    import pty
    import threading
    import time
    d = os.path.join(tmp, "md")
    mkcorpus(d, "--seed", "16", "--layout", "maildir", "--count", "3000")
    lst = os.path.join(tmp, "list")
    with open(lst, "w") as f:
        for dirpath, _dirs, files in os.walk(d):
            if os.path.basename(dirpath) in ("cur", "new"):
                f.writelines(os.path.join(dirpath, n) + "\n" for n in sorted(files))

    def on_tty(extra):
        master, slave = pty.openpty()
        got = []
        reader = threading.Thread(target=lambda: got.append(drain(master)))
        reader.start()
        t0 = time.monotonic()
        p = subprocess.run([ARGS.ingest, "--threads=1", "--batch-bytes=16K", "-o", os.devnull,
                            "--files-from=" + lst] + extra, stderr=slave, timeout=120)
        took = time.monotonic() - t0
        os.close(slave)
        reader.join()
        os.close(master)
        if p.returncode:
            fail(f"{extra}: exit {p.returncode}")
        return got[0], took

    def drain(fd):
        out = b""
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return out
            if not chunk:
                return out
            out += chunk

    text, took = on_tty([])
    draws = text.count(b"\r\x1b[K") - 1   # the last one clears the line
    if draws < 1 or b"files/s" not in text:
        fail(f"no progress line on a terminal: {text[:200]!r}")
    if draws > 10 * took + 2:
        fail(f"{draws} redraws in {took:.2f} s: more than ten a second")
    if took > 0.3 and b"ETA" not in text:
        fail(f"no ETA although --files-from gave the total: {text[-300:]!r}")
    for quiet in (["-q"], ["--no-progress"]):
        t, _ = on_tty(quiet)
        if b"\r" in t:
            fail(f"{quiet[0]} on a terminal still drew: {t[:200]!r}")
    print(f"terminal: {draws} redraws in {took:.2f} s; -q and --no-progress silent")


def case_interrupt(tmp):
    """Ctrl-C: exit 130, every written record whole, and the run really
    stopped early.

    The signal cannot come too late: the test stops reading stdout after
    4 KiB, so the writer blocks on a full pipe long before 4,000 messages
    (megabytes of records) are written, and --max-inflight=256K keeps the
    reader a few batches ahead at most."""
    d = os.path.join(tmp, "md")
    total = 4000
    mkcorpus(d, "--seed", "15", "--layout", "maildir", "--count", str(total))
    import signal
    proc = subprocess.Popen([ARGS.ingest, "--max-inflight=256K", d], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    first = proc.stdout.read(4096)
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=60)
    if proc.returncode != 130:
        fail(f"interrupted run exited {proc.returncode}, not 130: {err!r}")
    got = len(records(first + rest))
    if not 0 < got < total:
        fail(f"{got} records of {total}: the interrupt did not stop the run early")
    print(f"interrupted after {got} of {total} records")


def case_state_changed_while_read(tmp):
    """A file that changes while it is read (its record notes "grew" or
    "shrank") is read again by the next --state run, changed or not: its
    record may hold two versions' bytes, and the size and mtime saved may
    be the last ones (a rewrite within one tick of the file system's clock
    keeps the mtime), so the next run took it for unchanged and the record
    stayed.  /proc/version reads that way every time: statx says 0 bytes,
    the read finds more."""
    if not os.path.exists("/proc/version"):
        print("SKIP: no /proc/version")
        sys.exit(77)
    st = os.path.join(tmp, "state")
    for n in range(3):
        recs = records(run(["--state=" + st, "/proc/version"], check_rc=0).stdout)
        if len(recs) != 1 or recs[0].get("notes") != ["grew"]:
            fail(f"run {n + 1}: {recs}, expected the file's record, noted grew")
    print("a file that grew while read: read again by each run")


def case_mbox_streamed_changed_while_read(tmp):
    """A streamed archive written to while read: every message past its
    stat size notes "grew" (the records keep the stat size; those before
    went out with it), and one cut short while read notes "shrank" on its
    last message.  Both had no note at all, a half-written last message an
    ordinary record.  A thread appends for the whole run, from before it
    starts; the truncation is made once the run has written its first
    records."""
    import threading
    box = os.path.join(tmp, "a.mbox")

    def msg(n):
        return b"From a Mon Jan  1 00:00:00 2024\nSubject: m%d\n\n" % n + b"x" * 900 + b"\n\n"
    with open(box, "wb") as f:
        f.write(b"".join(msg(n) for n in range(20000)))
    args = [ARGS.ingest, "--fields=size,offset,length,notes", "--batch-bytes=64K", "--max-inflight=1M", box]
    done = threading.Event()

    def append():
        n = 100000
        with open(box, "ab") as f:
            while not done.is_set():
                f.write(msg(n))
                f.flush()
                n += 1
    t = threading.Thread(target=append)
    with open(box, "ab") as f:
        f.write(msg(99999))
    t.start()
    try:
        out = subprocess.run(args, capture_output=True, timeout=120).stdout
    finally:
        done.set()
        t.join()
    recs = [json.loads(line) for line in out.splitlines()]
    past = [r for r in recs if r["offset"] + r["length"] > r["size"]]
    noted = [r for r in recs if r.get("notes")]
    if not past or noted != past or any(r["notes"] != ["grew"] for r in noted):
        fail(f"grew: {len(past)} records past the stat size, {len(noted)} noted: {noted[:3]}")
    with open(box, "wb") as f:
        f.write(b"".join(msg(n) for n in range(20000)))
    p = subprocess.Popen(args, stdout=subprocess.PIPE)
    first = p.stdout.readline()
    os.truncate(box, 5_000_037)
    recs = [json.loads(line) for line in (first + p.stdout.read()).splitlines()]
    p.wait(timeout=120)
    # the run cannot have read as far as the cut: with the pipe unread past
    # its first line, it holds at most --max-inflight (1 MiB) and a pipe's
    # worth ahead of its output
    noted = [r for r in recs if r.get("notes")]
    if recs[-1]["offset"] + recs[-1]["length"] > 5_000_037 or noted != [recs[-1]] or \
            noted[0]["notes"] != ["shrank"]:
        fail(f"shrank: the last record {recs[-1]}, noted {noted[:3]}")
    print(f"{len(past)} messages past the stat size noted grew; cut short: {noted}")


def case_interrupt_before_run(tmp):
    """A Ctrl-C after the command installed its handler and before the run
    began stops the run at once (exit 130, no record; an --index keeps no
    message) instead of being forgotten when the run starts.  strace
    delivers the SIGINT right after the last of the handler's
    rt_sigaction calls (SIGHUP's), found by a first traced run."""
    skip_without_strace()
    md = sample()
    log = os.path.join(tmp, "sigaction.txt")
    subprocess.run(["strace", "-o", log, "-e", "trace=rt_sigaction", ARGS.ingest, "-q", md],
                   stdout=subprocess.DEVNULL, check=True)
    calls = [line for line in open(log) if line.startswith("rt_sigaction(")]
    at = next((i + 1 for i, line in enumerate(calls)
               if line.startswith("rt_sigaction(SIGHUP, {sa_handler=0x")), None)
    if at is None:
        fail(f"no handler installed for SIGHUP: {calls}")
    inject = ["strace", "-o", os.devnull, "-e", "trace=rt_sigaction",
              "-e", f"inject=rt_sigaction:signal=SIGINT:when={at}"]
    p = subprocess.run(inject + [ARGS.ingest, md], capture_output=True)
    if p.returncode != 130 or p.stdout:
        fail(f"SIGINT before the run: exit {p.returncode}, {len(records(p.stdout))} records "
             f"(want 130 and none): {p.stderr[-300:]!r}")
    db = os.path.join(tmp, "mail.db")
    p = subprocess.run(inject + [ARGS.ingest, "--index", db, md], capture_output=True)
    if p.returncode != 130:
        fail(f"SIGINT before an --index run: exit {p.returncode}: {p.stderr[-300:]!r}")
    p = run(["--index", db, "--stats", md], check_rc=0)
    if b"32 messages" not in p.stderr:
        fail(f"the run after the interrupted one did not index the 32 messages: {p.stderr[-400:]!r}")
    print(f"SIGINT at rt_sigaction #{at}: exit 130, no record; the next --index run indexed all")


def case_interrupt_waiting_for_input(tmp):
    """A Ctrl-C while the run waits for an input nobody writes: a
    --files-from FIFO with no writer (its open waited, and the interrupt
    became "cannot open the list", exit 1), and standard input as the list
    or as `-` from a pipe whose writer neither writes nor closes (the read
    went on, Ctrl-C ignored until the writer ended).  Each exits 130 at
    once with no record; a FIFO whose writer comes later is still read."""
    fifo = os.path.join(tmp, "list")
    os.mkfifo(fifo)
    silent = os.path.join(tmp, "silent")
    os.mkfifo(silent)
    # holds the write end of `silent` open for the whole case, writing nothing
    holder = subprocess.Popen(["sh", "-c", f"exec sleep 60 > '{silent}'"])
    try:
        for what, argv, stdin_path in (
                ("a --files-from FIFO with no writer", ["--files-from", fifo], None),
                ("--files-from=- from a silent pipe", ["--files-from=-"], silent),
                ("`-` from a silent pipe", ["-"], silent)):
            stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
            proc = subprocess.Popen([ARGS.ingest] + argv, stdin=stdin, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
            if stdin_path:
                stdin.close()
            # the handler installed (SigCgt), then a moment into the wait
            for _ in range(1000):
                try:
                    with open(f"/proc/{proc.pid}/status") as f:
                        caught = next(int(ln.split()[1], 16) for ln in f if ln.startswith("SigCgt:"))
                except (OSError, StopIteration):
                    caught = 0
                if caught & (1 << (signal.SIGINT - 1)) or proc.poll() is not None:
                    break
                time.sleep(0.01)
            time.sleep(0.1)
            proc.send_signal(signal.SIGINT)
            t0 = time.monotonic()
            try:
                out, err = proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                fail(f"{what}: still running 10 s after SIGINT")
            took = time.monotonic() - t0
            if proc.returncode != 130 or out or b"cannot" in err:
                fail(f"{what}: exit {proc.returncode}, {len(out)} bytes out, stderr {err[-300:]!r} "
                     "(want 130, nothing, no error)")
            # Counted, not timed: the wait ends at the interrupt, not when
            # the writer goes (60 s on); 5 s is far from both.
            if took > 5:
                fail(f"{what}: exit took {took:.1f} s after SIGINT")
    finally:
        holder.kill()
        holder.wait()
    md = sample()
    names = "".join(os.path.join(md, "cur", n) + "\n" for n in sorted(os.listdir(os.path.join(md, "cur"))))
    proc = subprocess.Popen([ARGS.ingest, "--files-from", fifo], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    time.sleep(0.2)
    with open(fifo, "w") as w:
        w.write(names)
    out, err = proc.communicate(timeout=60)
    want = names.count("\n")
    if proc.returncode != 0 or len(records(out)) != want:
        fail(f"a FIFO written after the run began: exit {proc.returncode}, {len(records(out))} records "
             f"of {want}: {err[-300:]!r}")
    # standard input open for writing only (`0>&1` on a pipe) is no input
    # to wait for: its read fails at once, as before the wait was polled
    for argv in (["-"], ["--files-from=-"]):
        r, w = os.pipe()
        try:
            p = subprocess.run([ARGS.ingest] + argv, stdin=w, capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            fail(f"{argv} with a write-only standard input: still waiting after 10 s")
        finally:
            os.close(r)
            os.close(w)
        if p.returncode != 1 or b"Bad file descriptor" not in p.stderr:
            fail(f"{argv} with a write-only standard input: exit {p.returncode}, {p.stderr[-200:]!r}")
    print(f"SIGINT while waiting for input: exit 130 three ways; a late writer's list gave {want} records")


def case_stdout_closed(tmp):
    """A run whose standard output is closed is refused before it opens
    anything: fd 1 was the next descriptor made, so with --state the
    records went into the state's lock file, exit 0, and the state said
    them delivered (the next run printed nothing); without it the ring
    took fd 1 ("Invalid argument").  An --index run writes no records
    there and runs."""
    md = sample()
    st = os.path.join(tmp, "state")
    for argv in (["--state", st, md], [md], ["--backend=sync", md]):
        p = subprocess.run([ARGS.ingest] + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           preexec_fn=lambda: os.close(1))
        if p.returncode != 1 or b"cannot write the output 'stdout': Bad file descriptor" not in p.stderr:
            fail(f"{argv} with stdout closed: exit {p.returncode}, {p.stderr[-300:]!r}")
    if os.path.exists(st + ".lock") and os.path.getsize(st + ".lock"):
        fail(f"the state's lock file holds {os.path.getsize(st + '.lock')} bytes")
    got = records(run(["--state", st, md]).stdout)
    if len(got) != 32:
        fail(f"the run after the refused one wrote {len(got)} records, not the sample's 32")
    db = os.path.join(tmp, "mail.db")
    p = subprocess.run([ARGS.ingest, "--index", db, md], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1))
    if p.returncode != 0:
        fail(f"--index with stdout closed: exit {p.returncode}, {p.stderr[-300:]!r}")
    print("stdout closed: refused (exit 1) before the state was touched; --index runs")


def case_stdout_nonblocking(tmp):
    """Standard output a pipe that its creator set O_NONBLOCK (a parent
    sharing it, as Node.js does with its children's pipes), read slowly:
    a full pipe is waited for, and every record arrives whole.  The run
    failed with EAGAIN at the pipe's 64 KiB, mid-record, exit 1."""
    md = sample()
    want = run([md]).stdout
    if len(want) <= 65536:
        fail(f"the sample's output ({len(want)} bytes) no longer fills a pipe: use a larger corpus")
    r, w = os.pipe()
    os.set_blocking(w, False)
    proc = subprocess.Popen([ARGS.ingest, md], stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    time.sleep(0.5)   # the pipe fills and stays full for a while
    chunks = []
    while True:
        b = os.read(r, 4096)
        if not b:
            break
        chunks.append(b)
        time.sleep(0.001)
    os.close(r)
    err = proc.stderr.read()
    proc.wait()
    got = b"".join(chunks)
    if proc.returncode != 0 or got != want:
        fail(f"exit {proc.returncode}, {len(got)} of {len(want)} bytes, same: {got == want}: {err[-300:]!r}")
    print(f"a non-blocking stdout read slowly: {len(got)} bytes, as a blocking one gets")


CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}
# meson registers one test per case from `--list`: a case_ function is a
# test, with these timeouts (seconds; 120 otherwise); SERIAL cases change
# something machine-wide and must not run beside other tests.
SLOW = {"mbox_memory": 600, "threads_identical": 300, "interrupt": 120, "walk_memory": 300,
        "state_unchanged_100k": 600}
SERIAL = {"uring_refused"}   # flips kernel.io_uring_disabled


def main():
    if sys.argv[1:] == ["--list"]:
        for name in CASES:
            print(name, SLOW.get(name, 120), "serial" if name in SERIAL else "parallel")
        return
    clilib.main(CASES, "ingest-cli-")

if __name__ == "__main__":
    main()
