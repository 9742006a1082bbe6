#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Nothing lost downstream: es-bulk streams applied to a model index.

    test_identity.py --ingest PATH --case NAME --backend sync|uring

Each case builds a Maildir, runs ingest --state --format=es-bulk, changes
the Maildir the way mail clients do (flag changes, new/ -> cur/, moves and
copies between folders, deletions), runs again (often with another spelling
of the root) and applies both streams, in order, to a model of an
Elasticsearch index: a dict keyed by _id where `index` puts a whole
document, `update` merges "doc" into an existing one (a missing one is
Elasticsearch's document_missing_exception: a failure here) and `delete`
removes one (a delete that finds nothing is "not_found" in Elasticsearch;
here it is a failure too, since it means an _id that named no document).
The documents left must be the messages on disk: one per file, at its path,
with its flags and its own content.  README, "Records" and "Incremental
runs", say what identity rules make that hold.

Exit 0 pass, 1 fail, 77 skip (io_uring unavailable for --backend=uring).
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77


class Fail(Exception):
    pass


def check(ok, what):
    if not ok:
        raise Fail(what)


class Index:
    """The _bulk semantics of Elasticsearch's "Bulk API" page, as a dict."""

    def __init__(self, not_found_ok=False):
        self.docs = {}
        # a delete of an id it does not hold is answered not_found and
        # changes nothing; counted where a case allows it
        self.not_found_ok = not_found_ok
        self.not_found = 0

    def apply(self, stream):
        lines = stream.decode("utf-8").splitlines()
        i = 0
        while i < len(lines):
            action = json.loads(lines[i])
            i += 1
            check(len(action) == 1, "an action line names one action: %r" % action)
            (op, meta), = action.items()
            _id = meta["_id"]
            check(isinstance(_id, str) and 0 < len(_id.encode()) <= 512,
                  "_id must be 1 to 512 bytes: %r" % _id)
            if op == "index":
                self.docs[_id] = json.loads(lines[i])
                i += 1
            elif op == "update":
                body = json.loads(lines[i])
                i += 1
                check(_id in self.docs, "update of a missing document %s: %r" % (_id, body))
                self.docs[_id].update(body["doc"])
            elif op == "delete":
                if self.not_found_ok and _id not in self.docs:
                    self.not_found += 1
                    continue
                check(_id in self.docs, "delete of a missing document %s" % _id)
                del self.docs[_id]
            else:
                raise Fail("unknown action %r" % op)


def message(n, msgid=True, refs=None):
    head = "From: a%d@example.org\nSubject: message %d\n" % (n, n)
    if msgid is True:
        head += "Message-ID: <m%d@example.org>\n" % n
    elif msgid:
        head += "Message-ID: <%s>\n" % msgid
    if refs:
        head += "References: <%s>\nIn-Reply-To: <%s>\n" % (refs, refs)
    return (head + "\nbody %d\n" % n).encode()


def name(n, flags=None):
    base = "1700000000.M%dP1.host" % n
    return base if flags is None else base + ":2," + flags


def make_maildir(root):
    for d in ["cur", "new", "tmp", ".Archive/cur", ".Archive/new", ".Archive/tmp"]:
        os.makedirs(os.path.join(root, d), exist_ok=True)
    with open(os.path.join(root, ".Archive", "maildirfolder"), "wb"):
        pass
    files = {
        "cur/" + name(1, "S"): message(1),
        "cur/" + name(2, "RS"): message(2),
        "cur/" + name(3, "S"): message(3, msgid=False),
        "cur/" + name(4, ""): message(4, msgid=False),
        "new/" + name(5): message(5),
        "new/" + name(6): message(6, msgid=False),
        ".Archive/cur/" + name(7, "S"): message(7),
    }
    for rel, data in files.items():
        with open(os.path.join(root, rel), "wb") as f:
            f.write(data)


def on_disk(root):
    """(path below root, subject) of every message file of the Maildir."""
    out = set()
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "tmp"]
        if os.path.basename(dirpath) not in ("cur", "new"):
            continue
        for n in names:
            p = os.path.join(dirpath, n)
            with open(p, "rb") as f:
                subject = [l for l in f.read().decode().splitlines() if l.startswith("Subject: ")]
            out.add((os.path.relpath(p, root), subject[0][len("Subject: "):]))
    return out


class Ctx:
    def __init__(self, ingest, backend, work):
        self.ingest = ingest
        self.backend = backend
        self.work = work
        self.md = os.path.join(work, "Maildir")
        os.symlink("Maildir", os.path.join(work, "link"))

    def run(self, roots, state="state", extra=(), want_rc=0):
        args = [self.ingest, "--backend=" + self.backend, "--format=es-bulk", "-q"]
        if state:
            args.append("--state=" + os.path.join(self.work, state))
        r = subprocess.run(args + list(extra) + list(roots), cwd=self.work,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check(r.returncode == want_rc, "%s: exit %d, want %d: %s" % (
            " ".join(args[1:] + list(extra) + list(roots)), r.returncode, want_rc,
            r.stderr.decode(errors="replace")))
        return r

    def mv(self, a, b):
        os.makedirs(os.path.dirname(os.path.join(self.md, b)), exist_ok=True)
        os.rename(os.path.join(self.md, a), os.path.join(self.md, b))

    def cp(self, a, b):
        shutil.copyfile(os.path.join(self.md, a), os.path.join(self.md, b))

    def rm(self, a):
        os.unlink(os.path.join(self.md, a))


def documents(index):
    for d in index.docs.values():
        check("subject" in d, "a document that is no message (an error record?): %r" % d)
    return {(d["path"], d["subject"]) for d in index.docs.values()}


def check_index(ctx, index, what):
    """The documents are the files on disk, each once, with its flags."""
    disk = on_disk(ctx.md)
    docs = documents(index)
    check(len(docs) == len(index.docs), "%s: two documents of one file: %r" % (what, index.docs))
    check(docs == disk, "%s: documents %s, files on disk %s (missing %s, extra %s)" % (
        what, len(docs), len(disk), sorted(disk - docs), sorted(docs - disk)))
    for d in index.docs.values():
        base = os.path.basename(d["path"])
        flags = base.split(":2,")[1] if ":2," in base else ""
        check(d.get("flags") == flags, "%s: %s has flags %r" % (what, d["path"], d.get("flags")))
        folder = d["path"].split("/")[0][1:] if d["path"].startswith(".") else ""
        check(d.get("folder") == folder, "%s: %s has folder %r" % (what, d["path"], d.get("folder")))


def incremental(ctx, change, first=("Maildir",), second=("./Maildir/",)):
    """A first run, a change, an incremental run: both streams applied."""
    make_maildir(ctx.md)
    index = Index()
    index.apply(ctx.run(first).stdout)
    check_index(ctx, index, "first run")
    change(ctx)
    second_out = ctx.run(second).stdout
    index.apply(second_out)
    check_index(ctx, index, "incremental run")
    return index, second_out


def actions(stream):
    return [next(iter(json.loads(l))) for l in stream.decode().splitlines()
            if l.startswith('{"index"') or l.startswith('{"update"') or l.startswith('{"delete"')]


def case_flag_change(ctx):
    def change(c):
        c.mv("cur/" + name(1, "S"), "cur/" + name(1, "RS"))
        c.mv("cur/" + name(3, "S"), "cur/" + name(3, "FS"))   # no Message-ID
    _, out = incremental(ctx, change)
    check(actions(out) == ["update", "update"], "flag changes are updates: %s" % actions(out))


def case_new_to_cur(ctx):
    def change(c):
        c.mv("new/" + name(5), "cur/" + name(5, "S"))
        c.mv("new/" + name(6), "cur/" + name(6, ""))
    _, out = incremental(ctx, change)
    check(actions(out) == ["update", "update"], "new/ to cur/ is an update: %s" % actions(out))


def case_move_folder(ctx):
    def change(c):
        c.mv("cur/" + name(1, "S"), ".Archive/cur/" + name(1, "S"))
        c.mv("cur/" + name(4, ""), ".Archive/cur/" + name(4, "S"))   # no Message-ID
        c.mv(".Archive/cur/" + name(7, "S"), "cur/" + name(7, "S"))
    _, out = incremental(ctx, change)
    check(actions(out) == ["update"] * 3, "a move is one update: %s" % actions(out))


def case_copy_folder(ctx):
    def change(c):
        # a mail client's copy: the same message under a new unique name
        c.cp("cur/" + name(1, "S"), ".Archive/cur/" + name(101, "S"))
        c.cp("cur/" + name(3, "S"), ".Archive/cur/" + name(103, "S"))
    index, out = incremental(ctx, change)
    check(actions(out) == ["index", "index"], "a copy is a new document: %s" % actions(out))


def case_delete_copy(ctx):
    def change(c):
        c.cp("cur/" + name(1, "S"), ".Archive/cur/" + name(101, "S"))
    index, _ = incremental(ctx, change)
    # one copy goes: the other's document stays
    ctx.rm("cur/" + name(1, "S"))
    out = ctx.run(["link"]).stdout
    index.apply(out)
    check_index(ctx, index, "after deleting one copy")
    check(actions(out) == ["delete"], "one copy deleted: %s" % actions(out))


def case_no_message_id(ctx):
    def change(c):
        c.rm("cur/" + name(4, ""))
        c.mv("cur/" + name(3, "S"), ".Archive/cur/" + name(3, "RS"))
        c.mv("new/" + name(6), "cur/" + name(6, "S"))
    _, out = incremental(ctx, change)
    check(sorted(actions(out)) == ["delete", "update", "update"], "%s" % actions(out))


def case_change_records_root(ctx):
    """--state's change records spell the root as this run's records do
    (the PATH argument as given), a deletion as much as a rename: a consumer
    that keys documents by (root, path) finds them where the records put
    them, whichever spelling the earlier run used."""
    make_maildir(ctx.md)
    ctx.run(["Maildir"], extra=["--format=jsonl"])
    ctx.mv("cur/" + name(1, "S"), "cur/" + name(1, "RS"))
    ctx.rm("cur/" + name(2, "RS"))
    out = ctx.run(["./Maildir/"], extra=["--format=jsonl"]).stdout
    changes = [json.loads(l) for l in out.decode().splitlines()]
    kinds = sorted(k for c in changes for k in c if k in ("renamed", "deleted"))
    check(kinds == ["deleted", "renamed"], "change records: %s" % kinds)
    roots = {c.get("root") for c in changes}
    check(roots == {"./Maildir/"}, "change records' roots %s, want the spelling given" % roots)


def case_root_spellings(ctx):
    make_maildir(ctx.md)
    index = Index()
    for i, root in enumerate(["Maildir", "./Maildir", "Maildir/", "link", ctx.md]):
        out = ctx.run([root]).stdout
        index.apply(out)
        check_index(ctx, index, "run %d (%s)" % (i + 1, root))
        if i:
            check(actions(out) == [], "%s: nothing changed, nothing emitted: %s" % (root, actions(out)))


def case_same_path_twice(ctx):
    make_maildir(ctx.md)
    index = Index()
    out = ctx.run(["Maildir", "Maildir"]).stdout
    index.apply(out)
    check_index(ctx, index, "PATH twice")
    out = ctx.run(["Maildir", "./Maildir"]).stdout
    check(actions(out) == [], "PATH twice again: no renames: %s" % actions(out))
    out = ctx.run(["Maildir"]).stdout
    index.apply(out)
    check(actions(out) == [], "PATH once: nothing deleted: %s" % actions(out))
    check_index(ctx, index, "PATH once")


def case_shards_mixed(ctx):
    make_maildir(ctx.md)
    whole = Index()
    whole.apply(ctx.run(["Maildir"], state=None).stdout)
    union = Index()
    spellings = ["Maildir", "./Maildir/", "link"]
    for k in range(1, 4):
        union.apply(ctx.run([spellings[k - 1]], state="state-%d" % k,
                            extra=["--shard=%d/3" % k]).stdout)
    check(union.docs.keys() == whole.docs.keys(),
          "shards with mixed spellings: %d ids, one run %d" % (len(union.docs), len(whole.docs)))
    check_index(ctx, union, "shards, first run")
    ctx.mv("cur/" + name(1, "S"), ".Archive/cur/" + name(1, "RS"))
    ctx.mv("new/" + name(6), "cur/" + name(6, "S"))
    for k in range(1, 4):
        union.apply(ctx.run([spellings[k % 3]], state="state-%d" % k,
                            extra=["--shard=%d/3" % k]).stdout)
    check_index(ctx, union, "shards, incremental run")


def case_state_refused(ctx):
    make_maildir(ctx.md)
    ctx.run(["Maildir"], state="state-1", extra=["--shard=1/2"])
    for extra in (["--shard=2/2"], [], ["--no-text"], ["--fields=path,subject"]):
        r = ctx.run(["Maildir"], state="state-1", extra=extra + (["--shard=1/2"] if extra == ["--no-text"] else []),
                    want_rc=2)
        check(r.stdout == b"", "a refused run writes nothing: %r" % r.stdout[:200])
        check(b"state" in r.stderr and b"shard" in r.stderr or b"text" in r.stderr or b"fields" in r.stderr,
              "the message names the difference: %s" % r.stderr.decode())
    ctx.run(["Maildir"], state="state-2", extra=["--no-text"])
    r = ctx.run(["Maildir"], state="state-2", want_rc=2)
    check(b"no-text=1" in r.stderr, "names --no-text: %s" % r.stderr.decode())
    # another root is another run
    other = os.path.join(ctx.work, "Other")
    shutil.copytree(ctx.md, other)
    r = ctx.run(["Other"], state="state-2", extra=["--no-text"], want_rc=2)
    check(b"root=" in r.stderr, "names the root: %s" % r.stderr.decode())


def case_thread_later(ctx):
    make_maildir(ctx.md)
    first = ctx.run(["Maildir"], extra=["--fields=path,thread_id,message_id"]).stdout
    threads = {json.loads(l)["path"]: json.loads(l)["thread_id"]
               for l in first.decode().splitlines() if '"path"' in l}
    with open(os.path.join(ctx.md, "new", name(50)), "wb") as f:
        f.write(message(50, refs="m1@example.org"))
    second = ctx.run(["link"], extra=["--fields=path,thread_id,message_id"]).stdout
    recs = [json.loads(l) for l in second.decode().splitlines() if '"path"' in l]
    check(len(recs) == 1 and recs[0]["path"] == "new/" + name(50), "one new record: %r" % recs)
    check(recs[0]["thread_id"] == threads["cur/" + name(1, "S")],
          "a reply in a later run joins its thread: %r, root %r" % (recs[0], threads))


def mbox_message(n):
    return b"From a%d@example.org Mon Jan  1 00:00:00 2024\n" % n + message(n) + b"\n"


def case_mbox(ctx, extra=()):
    """An archive's messages are documents under the archive's id and
    their offsets: appending keeps them, a message removed by a rewrite,
    an archive emptied or overwritten with what is no mail, and a deleted
    archive delete exactly theirs.  With --es-errors the archive that is
    none has an error document under its own id, which goes when it is an
    archive again; a file that is one message (no From_ line) has its
    document under its own id, which goes when it is an archive again:
    the documents equal a clean run's at every step."""
    errors = "--es-errors" in extra
    os.makedirs(ctx.md)
    box = os.path.join(ctx.md, "archive.mbox")

    def write(ns):
        with open(box, "wb") as f:
            if isinstance(ns, bytes):
                f.write(ns)   # no archive: one message, or an error record
                return
            for n in ns:
                f.write(mbox_message(n))

    def subjects(index):
        for d in index.docs.values():
            check("subject" in d, "a document that is no message: %r" % d)
        return sorted(d["subject"] for d in index.docs.values())

    index = Index()
    steps = [([1, 2, 3], "first run"), ([1, 2, 3, 4], "appended"), ([1, 3, 4], "one removed"),
             ([], "emptied"), ([5], "written again"), (b"garbage\n", "overwritten, no mail"),
             ([6, 7], "an archive again"), (message(8), "one message, no From_ line"),
             ([9, 10], "an archive once more"), (message(11), "one message again"),
             (None, "file deleted")]
    spellings = ["Maildir", "./Maildir/", "link", ctx.md]
    for i, (ns, what) in enumerate(steps):
        if ns is None:
            os.unlink(box)
        else:
            write(ns)
        # another spelling of the root each time
        index.apply(ctx.run([spellings[i % len(spellings)]], extra=extra).stdout)
        equal_to_clean(ctx, index, what, extra, roots=[spellings[i % len(spellings)]])
        if isinstance(ns, list) and not errors:   # with them, an empty one is an error
            want = sorted("message %d" % n for n in ns)
            check(subjects(index) == want, "%s: documents %s, messages %s" % (
                what, subjects(index), want))


def case_mbox_message_becomes_no_mail(ctx):
    """An archive rewritten so that the bytes at a message's offset are no
    mail any more: that offset's record is an error, which es-bulk without
    --es-errors writes no document of, and the offset is still one of the
    archive's, so nothing deleted the message's document; it stayed for
    good.  Now the error record deletes it.  Read whole and streamed."""
    head = b"From sender@example.org Mon Jan  1 00:00:00 2024\n"
    for extra in ([], ["--batch-bytes=16K", "--max-inflight=256K"]):
        fresh_tree(ctx)
        box = os.path.join(ctx.md, "b.mbox")
        filler = b"".join(mbox_message(n) + b"filler " * 60 + b"\n\n" for n in range(300, 700))
        with open(box, "wb") as f:
            f.write(head + message(1) + b"\n" + head + message(2) + b"\n" + filler)
        os.utime(box, ns=(0, 1_700_000_000 * 10**9))
        index = Index()
        index.apply(ctx.run(["Maildir"], extra=extra).stdout)
        with open(box, "wb") as f:
            f.write(head + b"garbage, not mail \x00\x01\n\n" + filler)
        os.utime(box, ns=(0, 1_700_000_100 * 10**9))
        index.apply(ctx.run(["Maildir"], extra=extra).stdout)
        equal_to_clean(ctx, index, "a message's bytes no mail any more%s" % (
            " (streamed)" if extra else ""), extra=extra)


def case_mbox_streamed(ctx):
    """The same when the archive is streamed in chunks (past --max-size,
    an mbox is streamed: README, "mbox archives")."""
    case_mbox(ctx, extra=["--max-size=150"])


def case_mbox_errors(ctx):
    """The same with error documents (--es-errors)."""
    case_mbox(ctx, extra=["--es-errors"])


def case_mbox_streamed_errors(ctx):
    """The same, streamed, with error documents."""
    case_mbox(ctx, extra=["--es-errors", "--max-size=150"])


def case_mbox_message_too_large(ctx, extra=()):
    """An archive's message rewritten in place past --max-size (a too-large
    record at the offset where its document was) loses its document, once,
    and gets it back when it is small again; with --es-errors its error
    document replaces it.  (Without --es-errors the document once stayed:
    the state listed the too-large message's offset as a message found.)
    The documents equal a clean run's at every step."""
    os.makedirs(ctx.md)
    box = os.path.join(ctx.md, "archive.mbox")

    def write(big):
        with open(box, "wb") as f:
            for n in (1, 2, 3):
                m = mbox_message(n)
                if n in big:   # the same message, its body past --max-size
                    m = m.replace(b"body %d\n" % n, b"body %d " % n + b"x" * 400 + b"\n")
                f.write(m)

    index = Index()
    for i, (big, what) in enumerate([((), "first run"), ((2,), "message 2 too large"),
                                     ((2,), "unchanged"), ((2, 3), "message 3 too large too"),
                                     ((), "small again")]):
        write(big)
        os.utime(box, ns=(0, (1_700_000_000 + i) * 1_000_000_000))
        index.apply(ctx.run(["Maildir"], extra=["--max-size=300"] + list(extra)).stdout)
        equal_to_clean(ctx, index, what, ["--max-size=300"] + list(extra))


def case_mbox_message_too_large_errors(ctx):
    """The same with error documents (--es-errors)."""
    case_mbox_message_too_large(ctx, extra=["--es-errors"])


def case_split_bytes(ctx):
    """--split-bytes: files of at most SIZE, each a valid _bulk body on its
    own (no action parted from its source line), together the one output."""
    make_maildir(ctx.md)
    for n in range(8, 40):
        with open(os.path.join(ctx.md, "cur", name(n, "S")), "wb") as f:
            f.write(message(n, msgid=n % 3 != 0))
    size = 1500
    # deletions are one-line actions: a second run makes some
    ctx.run(["Maildir"], extra=["-o", os.path.join(ctx.work, "first")])
    for n in range(8, 20):
        ctx.rm("cur/" + name(n, "S"))
    ctx.mv("cur/" + name(1, "S"), ".Archive/cur/" + name(1, "RS"))
    ctx.run(["Maildir"], state=None, extra=["--split-bytes=%d" % size, "-o",
                                              os.path.join(ctx.work, "part")])
    parts = sorted(p for p in os.listdir(ctx.work) if p.startswith("part."))
    check(len(parts) > 3, "several files: %s" % parts)
    check(parts[0] == "part.000", "named PREFIX.000, ...: %s" % parts)
    joined = b""
    index = Index()
    for p in parts:
        data = open(os.path.join(ctx.work, p), "rb").read()
        check(0 < len(data) <= size, "%s: %d bytes, at most %d" % (p, len(data), size))
        Index().apply(data)   # a whole _bulk body by itself
        index.apply(data)
        joined += data
    # the incremental run's deletions and updates, split, applied in order
    # after the first run's stream
    inc = Index()
    inc.apply(open(os.path.join(ctx.work, "first"), "rb").read())
    ctx.run(["Maildir"], extra=["--split-bytes=%d" % size, "-o", os.path.join(ctx.work, "inc")])
    deletes = 0
    for p in sorted(p for p in os.listdir(ctx.work) if p.startswith("inc.")):
        data = open(os.path.join(ctx.work, p), "rb").read()
        check(len(data) <= size, "%s: %d bytes" % (p, len(data)))
        inc.apply(data)
        deletes += data.count(b'{"delete"')
    check(deletes == 12, "12 deletions in the split files: %d" % deletes)
    check_index(ctx, inc, "incremental split files applied")
    whole_now = ctx.run(["Maildir"], state=None).stdout
    check(joined == whole_now, "the files together are the unsplit output")
    check_index(ctx, index, "split files applied")
    # the prefix of the many files again, with nothing to say (nothing
    # changed since the incremental run): the earlier run's files go, as
    # -o truncates its file, or README's loop over PREFIX.[0-9]* would
    # send them again and bring back what the state's runs deleted
    ctx.run(["Maildir"], extra=["--split-bytes=%d" % size, "-o", os.path.join(ctx.work, "part")])
    left = sorted(p for p in os.listdir(ctx.work) if p.startswith("part."))
    check(left == ["part.000"] and os.path.getsize(os.path.join(ctx.work, "part.000")) == 0,
          "an unchanged run's split output: %s" % left)
    r = ctx.run(["Maildir"], state=None, extra=["--split-bytes=1K"], want_rc=2)
    check(b"-o" in r.stderr, "--split-bytes without -o is refused: %s" % r.stderr.decode())


def conforms(value, mapping, where):
    """A value Elasticsearch would index under mapping without a
    mapper_parsing_exception (and as the type meant, not coerced)."""
    if isinstance(value, list) and not (mapping.get("type") == "object" and
                                        mapping.get("enabled") is False):
        for v in value:
            conforms(v, mapping, where)
        return
    if value is None or mapping.get("enabled") is False:
        return
    t = mapping.get("type", "object")
    if t == "object":
        check(isinstance(value, dict), "%s: an object, got %r" % (where, value))
        for k, v in value.items():
            check(k in mapping["properties"], "%s.%s is not in the mapping" % (where, k))
            conforms(v, mapping["properties"][k], where + "." + k)
    elif t in ("keyword", "text"):
        check(isinstance(value, str), "%s: a string, got %r" % (where, value))
    elif t in ("long", "integer"):
        check(isinstance(value, int) and not isinstance(value, bool), "%s: %r" % (where, value))
    elif t == "boolean":
        check(isinstance(value, bool), "%s: %r" % (where, value))
    elif t == "date":
        check(isinstance(value, str) and len(value) == 20 and value.endswith("Z") and value[10] == "T",
              "%s: an ISO 8601 date, got %r" % (where, value))
    else:
        raise Fail("%s: unknown type %s" % (where, t))


def case_es_mapping(ctx):
    """--es-mapping is an index template every es-bulk document conforms to,
    error records (--es-errors) and change records included."""
    make_maildir(ctx.md)
    with open(os.path.join(ctx.md, "cur", name(60, "S")), "wb") as f:
        f.write(b"From: Ann <ann@example.org>\nTo: team: bob@example.org;\nCc: c@example.org\n"
                b"Subject: att\nDate: Tue, 14 Nov 2023 22:13:20 +0000\nMessage-ID: <att@x>\n"
                b"MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\n"
                b"Content-Type: text/plain\n\nhi\n--b\nContent-Type: application/pdf\n"
                b"Content-Disposition: attachment; filename=a.pdf\nContent-Transfer-Encoding: base64\n\n"
                b"JVBERi0xLjQK\n--b--\n")
    with open(os.path.join(ctx.md, "box.mbox"), "wb") as f:
        f.write(mbox_message(61) + mbox_message(62))
    os.mkfifo(os.path.join(ctx.md, "cur", "fifo"))
    m = subprocess.run([ctx.ingest, "--es-mapping"], stdout=subprocess.PIPE, check=True).stdout
    template = json.loads(m)
    mapping = {"properties": template["template"]["mappings"]["properties"]}
    out = ctx.run(["Maildir"], extra=["--headers", "--es-errors"]).stdout
    ctx.mv("cur/" + name(1, "S"), ".Archive/cur/" + name(1, "RS"))
    ctx.rm("cur/" + name(2, "RS"))
    out += ctx.run(["Maildir"], extra=["--headers", "--es-errors"]).stdout
    lines = out.decode().splitlines()
    seen = set()
    for i, l in enumerate(lines):
        action = json.loads(l)
        if not any(k in action for k in ("index", "update", "delete")) or "delete" in action:
            continue
        doc = json.loads(lines[i + 1])
        doc = doc.get("doc", doc)
        conforms(doc, mapping, "doc")
        seen |= set(doc)
    for want in ("id", "thread_id", "tags", "date", "from", "attachments", "error", "headers",
                 "offset", "flags"):
        check(want in seen, "no document had %s: the check proves nothing for it" % want)


def copy_same_name(ctx, gone, what):
    """A copy that keeps the unique name (cp, not a mail client) shares the
    id (README, "Records"), and the document names the copy read last;
    when one of the two is deleted (gone, below the Maildir) the document
    must stay, naming the one left, never deleted while a copy is on disk."""
    make_maildir(ctx.md)
    index = Index()
    index.apply(ctx.run(["Maildir"]).stdout)
    ctx.cp("cur/" + name(1, "S"), ".Archive/cur/" + name(1, "S"))
    index.apply(ctx.run(["Maildir"]).stdout)   # one document, naming the copy
    ctx.rm(gone)
    out = ctx.run(["Maildir"]).stdout
    index.apply(out)
    check_index(ctx, index, what)
    check(b'"delete"' not in out, "no delete of the id the other copy still has: %s" % out.decode())
    equal_to_clean(ctx, index, what)
    index.apply(ctx.run(["Maildir"]).stdout)
    equal_to_clean(ctx, index, what + ", the run after it")


def case_copy_same_name(ctx):
    copy_same_name(ctx, "cur/" + name(1, "S"), "the original deleted, the copy left")


def case_copy_same_name_read_last_deleted(ctx):
    """The copy the document names deleted, the original unchanged (read
    again all the same, as copies are): the document is the original's."""
    copy_same_name(ctx, ".Archive/cur/" + name(1, "S"), "the copy read last deleted")


def copies_changed(ctx, extra):
    """Two copies under one unique name (one id) that change apart: the
    copy read last rewritten and then deleted, the document must be the
    copy left as it is, not the gone one's text; one copy made no mail,
    the document stays, as the other's, as in a clean run; both made no
    mail, in one run or one after the other, the document goes (without
    --es-errors each copy's deletion was decided while the other still
    stood for it, and the document stayed for good); one removed and the
    other made a FIFO, one delete (each copy's deletion sent one)."""
    make_maildir(ctx.md)
    index = Index()

    def run(what):
        index.apply(ctx.run(["Maildir"], extra=extra).stdout)
        if what:
            equal_to_clean(ctx, index, what, extra)

    def rewrite(rel, data):
        p = os.path.join(ctx.md, rel)
        st = os.stat(p)
        with open(p, "wb") as f:
            f.write(data)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5 * 10**9))

    orig, copy = "cur/" + name(1, "S"), ".Archive/cur/" + name(1, "S")
    run("first run")
    ctx.cp(orig, copy)
    # the run that meets a new copy reads it alone: the document is the
    # copy, where a clean run's is the copy it reads last (README)
    run(None)
    run("the run after a copy under the same name")
    with open(os.path.join(ctx.md, copy), "rb") as f:
        rewrite(copy, f.read() + b"\nwords only the copy has\n")
    run("the copy rewritten")
    ctx.rm(copy)
    run("the rewritten copy deleted")
    ctx.cp(orig, copy)
    run(None)
    run("copied again")
    rewrite(orig, b"\x00\x01\x02")
    run("the original made no mail")
    rewrite(copy, b"\x00\x01\x03")
    run("the copy made no mail as well")
    rewrite(orig, message(1))
    rewrite(copy, message(1))
    run("both made mail again")
    rewrite(orig, b"\x00\x01\x04")
    rewrite(copy, b"\x00\x01\x05")
    run("both made no mail in one run")
    rewrite(orig, message(1))
    rewrite(copy, message(1))
    run("both made mail again, once more")
    ctx.rm(orig)
    ctx.rm(copy)
    os.mkfifo(os.path.join(ctx.md, copy))
    run("one removed, the other made a FIFO")


def case_copies_three(ctx):
    """Three copies under one unique name, one rewritten, another deleted:
    the document is a copy as it is (the copy read last), not the path of
    one and the text of another, as in a clean run."""
    make_maildir(ctx.md)
    index = Index()
    a, b, c = "cur/" + name(1, "S"), ".Archive/cur/" + name(1, "S"), ".Lists/cur/" + name(1, "S")
    for sub in ("cur", "new", "tmp"):   # a Maildir++ folder: the same id
        os.makedirs(os.path.join(ctx.md, ".Lists", sub))
    index.apply(ctx.run(["Maildir"]).stdout)
    ctx.cp(a, b)
    ctx.cp(a, c)
    index.apply(ctx.run(["Maildir"]).stdout)
    for rewritten in (a, b):
        p = os.path.join(ctx.md, rewritten)
        with open(p, "rb") as f:
            data = f.read()
        st = os.stat(p)
        with open(p, "wb") as f:
            f.write(data + b"\nwords of one copy\n")
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5 * 10**9))
        index.apply(ctx.run(["Maildir"]).stdout)
        equal_to_clean(ctx, index, rewritten + " rewritten")
        ctx.rm(c)
        index.apply(ctx.run(["Maildir"]).stdout)
        equal_to_clean(ctx, index, rewritten + " rewritten, then a third copy deleted")
        ctx.cp(a, c)
        index.apply(ctx.run(["Maildir"]).stdout)


def case_copies_changed(ctx):
    copies_changed(ctx, ())


def case_copies_changed_errors(ctx):
    """The same with error documents (--es-errors)."""
    copies_changed(ctx, ["--es-errors"])


def case_message_becomes_error(ctx):
    """A message rewritten as something that is no mail: without
    --es-errors an error record is no document, so the document it had
    must go (a delete), as a clean run has none; a file that was an error
    already gets no delete of an id never indexed (the model refuses
    those), whether it changes, is renamed or is deleted."""
    make_maildir(ctx.md)
    junk = os.path.join(ctx.md, "cur", name(10, "S"))
    with open(junk, "wb") as f:
        f.write(b"\x00\x01\x02")
    index = Index()
    index.apply(ctx.run(["Maildir"]).stdout)
    for p, data in ((os.path.join(ctx.md, "cur", name(1, "S")), b"\x00\x01\x02"), (junk, b"\x00\x03")):
        with open(p, "wb") as f:
            f.write(data)
        st = os.stat(p)
        os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5 * 10**9))
    index.apply(ctx.run(["Maildir"]).stdout)
    equal_to_clean(ctx, index, "messages become errors")
    # an error file renamed (a flag change): no document to update
    ctx.mv("cur/" + name(10, "S"), "cur/" + name(10, "RS"))
    index.apply(ctx.run(["Maildir"]).stdout)
    equal_to_clean(ctx, index, "an error file renamed")
    ctx.rm("cur/" + name(10, "RS"))
    ctx.rm("cur/" + name(1, "S"))
    index.apply(ctx.run(["Maildir"]).stdout)
    equal_to_clean(ctx, index, "error files deleted")


def case_explicit_file(ctx):
    """A Maildir message named explicitly gets the folder and id a walk of
    its Maildir gives it."""
    make_maildir(ctx.md)
    walked = {json.loads(l)["path"]: json.loads(l) for l in subprocess.run(
        [ctx.ingest, "--fields=path,folder,id", "Maildir"], cwd=ctx.work, check=True,
        stdout=subprocess.PIPE).stdout.decode().splitlines()}
    rel = ".Archive/cur/" + name(7, "S")
    for spelling in ("Maildir/" + rel, "./Maildir//" + rel, os.path.join(ctx.md, rel)):
        r = json.loads(subprocess.run([ctx.ingest, "--fields=path,folder,id", spelling], cwd=ctx.work,
                                      check=True, stdout=subprocess.PIPE).stdout)
        check(r["folder"] == "Archive" and r["id"] == walked[rel]["id"],
              "%s: %r, walked %r" % (spelling, r, walked[rel]))


def case_named_file_deleted(ctx):
    """Files named on the command line or in a --files-from list, deleted
    since the last run: a clean run over the same arguments reports each
    with an error record (--es-errors: a document under the file's id),
    and so must the incremental one, its message documents gone (an
    archive's each, under ids of their own), its error document standing:
    a delete of the file's id after the error record's index would leave
    nothing.  One is named through a symbolic link to its directory, one
    through a link to it (left dangling): gone, they are resolved in their
    directory, and where the link leads, so they keep their ids (and the
    state its run's roots)."""
    make_maildir(ctx.md)
    os.makedirs(os.path.join(ctx.work, "D"))
    os.symlink("D", os.path.join(ctx.work, "LD"))
    os.symlink("D/target.eml", os.path.join(ctx.work, "link.eml"))
    files = (("loose.eml", message(20)), ("listed.eml", message(21)),
             ("box.mbox", mbox_message(22) + mbox_message(23)), ("D/linked.eml", message(24)),
             ("D/target.eml", message(25)))
    for rel, data in files:
        with open(os.path.join(ctx.work, rel), "wb") as f:
            f.write(data)
    with open(os.path.join(ctx.work, "list"), "w") as f:
        f.write("listed.eml\n")
    named = ["loose.eml", "box.mbox", "Maildir/cur/" + name(1, "S"), "LD/linked.eml", "link.eml"]
    extra = ["--es-errors", "--files-from=list"]
    index = Index()
    index.apply(ctx.run(named, extra=extra).stdout)
    check(len(index.docs) == 7, "first run: %d documents, want 7" % len(index.docs))
    for rel in ("loose.eml", "listed.eml", "box.mbox", "Maildir/cur/" + name(1, "S"), "D/linked.eml",
                "D/target.eml"):
        os.unlink(os.path.join(ctx.work, rel))
    steps = ("the run after the deletion", "the run after it")
    # then back (two runs missing, so that the error entry is met again):
    # each error document goes, replaced by the file's document or, for
    # the archive, deleted before its messages' (an archive's error
    # record was kept by no entry, and its document stayed for good)
    back = ("the run after they came back", "the run after it")
    for step in steps + ("the third run missing",) + back:
        if step == back[0]:
            for rel, data in files:
                with open(os.path.join(ctx.work, rel), "wb") as f:
                    f.write(data)
        index.apply(ctx.run(named, extra=extra).stdout)
        clean = Index()
        clean.apply(ctx.run(named, state=None, extra=extra).stdout)
        got, want = model(index), model(clean)
        check(got == want, "%s: documents %r, a clean run's %r" % (step, got, want))


def case_listed_symlink_removed(ctx):
    """A symbolic link in a Maildir's cur/, listed in --files-from beside
    a walk of the Maildir (a list's paths are not resolved: the link is
    a file of its own name's id, read through the link, and the walk's
    record of the link is an error record of that id), then removed: one
    delete of the link's document, and none of the walk's error record,
    which without --es-errors made no document.  A second delete of the
    id was sent, which Elasticsearch answers not_found.  With
    --es-errors the error record of the missing file stands instead."""
    for extra in ([], ["--es-errors"]):
        fresh_tree(ctx)
        make_maildir(ctx.md)
        link = os.path.join(ctx.md, "cur", "link")
        os.symlink(name(1, "S"), link)
        with open(os.path.join(ctx.work, "list"), "w") as f:
            f.write("Maildir/cur/link\n")
        args = extra + ["--files-from=list"]
        index = Index()
        for step in ("the first run", "the run after it", "the link removed", "the run after it"):
            if step == "the link removed":
                os.unlink(link)
            index.apply(ctx.run(["Maildir"], extra=args).stdout)
            equal_to_clean(ctx, index, "%s %s" % (extra, step), args)


def case_listed_archive_place_changes(ctx):
    """An archive's place in the walked tree, named in a --files-from list
    as well (a list's paths are not resolved, so the two meetings file one
    place, of one id, under two spellings): missing for a run, then made
    an archive (the missing file's error document, with --es-errors, was
    left for good: the archive's meeting took no entry of another
    spelling for its own), or an archive made a symbolic link to another
    archive (the list reads that one's messages under the place's ids;
    the walk's error record of the link deleted them after they were
    written, so a message was lost), or a link to a one-message file made
    an archive (the list's document of that message under the place's id
    stayed for good without --es-errors: the walk's error entry of the
    link was the place's, the list's entry a copy elsewhere, and neither
    deleted it), or a link to another archive made an archive (the two
    meetings of the link's place were two entries; the next run judged
    one and deleted the other, whose messages' deletions followed the new
    archive's documents of the same ids: a message lost, --es-errors or
    not).  Each run's documents a clean run's."""
    for extra in ([], ["--es-errors"]):
        for how in ("missing, then made", "made a link", "a link made an archive",
                    "a link to an archive made an archive"):
            fresh_tree(ctx)
            os.makedirs(os.path.join(ctx.md, "sub"))
            place, other = os.path.join(ctx.md, "a.mbox"), os.path.join(ctx.md, "sub", "d")
            with open(other, "wb") as f:
                f.write(mbox_message(40) + mbox_message(41))
            if how == "made a link":
                with open(place, "wb") as f:
                    f.write(mbox_message(42))
            elif how == "a link made an archive":
                with open(os.path.join(ctx.md, "sub", "one"), "wb") as f:
                    f.write(message(44))
                os.symlink("sub/one", place)
            elif how == "a link to an archive made an archive":
                os.symlink("sub/d", place)
            with open(os.path.join(ctx.work, "list"), "w") as f:
                f.write("Maildir/a.mbox\n")
            args = extra + ["--files-from=list"]
            index = Index()
            for step in ("the first run", "the change", "the run after it"):
                if step == "the change" and how == "made a link":
                    os.unlink(place)
                    os.symlink("sub/d", place)
                elif step == "the change":
                    if os.path.islink(place):
                        os.unlink(place)
                    with open(place, "wb") as f:
                        f.write(mbox_message(42) + mbox_message(43))
                index.apply(ctx.run(["Maildir"], extra=args).stdout)
                equal_to_clean(ctx, index, "%s %s: %s" % (extra, how, step), args, fresh_state=True)


def case_named_link_target_deleted(ctx):
    """A file named on the command line alone through a symbolic link, its
    target deleted, then back: each run's documents a clean run's (its
    message's document deleted, or with --es-errors replaced by the error
    document, then back).  The link's place lies under no root of the
    run (its root is where the link leads), and the entry there was kept
    beside the error record's: a second entry for one file, which made
    every later run refuse the state as corrupt.  (With a --files-from
    list every place is the run's to judge, which hid it.)"""
    for extra in ([], ["--es-errors"]):
        fresh_tree(ctx)
        target = os.path.join(ctx.md, "y.eml")
        with open(target, "wb") as f:
            f.write(message(30))
        link = os.path.join(ctx.work, "l.eml")
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink("Maildir/y.eml", link)
        index = Index()
        steps = ("the first run", "the target deleted", "the run after it", "the target back",
                 "the run after it")
        for step in steps:
            if step == "the target deleted":
                os.unlink(target)
            elif step == "the target back":
                with open(target, "wb") as f:
                    f.write(message(30))
            index.apply(ctx.run(["l.eml"], extra=extra).stdout)
            equal_to_clean(ctx, index, "%s %s" % (extra, step), extra, roots=["l.eml"])


def case_nested_paths(ctx):
    """A Maildir given beside its cur/ and a Maildir++ folder of its own:
    every file one document (read under the innermost PATH that names it),
    through a first run and an incremental one where messages move across
    those PATHs (new/ to cur/, cur/ to the folder)."""
    make_maildir(ctx.md)
    roots = ["Maildir", "Maildir/cur", "./Maildir/.Archive/", "Maildir"]

    def check_once(index, what):
        disk = on_disk(ctx.md)
        docs = {(os.path.relpath(os.path.join(d["root"], d["path"]), "Maildir"), d.get("subject"))
                for d in index.docs.values()}
        check(len(docs) == len(index.docs) == len(disk) and docs == disk,
              "%s: %d documents of %d files (missing %s, extra %s)" % (
                  what, len(index.docs), len(disk), sorted(disk - docs), sorted(docs - disk)))

    index = Index()
    out = ctx.run(roots).stdout
    index.apply(out)
    check_once(index, "first run")
    check(len(actions(out)) == len(on_disk(ctx.md)), "first run: %d actions for %d files" % (
        len(actions(out)), len(on_disk(ctx.md))))
    ctx.mv("new/" + name(5), "cur/" + name(5, "S"))
    ctx.mv("cur/" + name(1, "S"), ".Archive/cur/" + name(1, "S"))
    index.apply(ctx.run(roots).stdout)
    check_once(index, "moved across the PATHs")
    # a file gone from a PATH given after a PATH above it: its "deleted"
    # record spells the root as that PATH was given, as its records do
    jsonl = dict(state="state-jsonl", extra=["--format=jsonl"])
    ctx.run(roots, **jsonl)
    ctx.rm(".Archive/cur/" + name(1, "S"))
    out = ctx.run(roots, **jsonl).stdout
    gone = [json.loads(line) for line in out.splitlines() if line.startswith(b'{"deleted"')]
    check([(d["deleted"], d["root"]) for d in gone] == [("cur/" + name(1, "S"), "./Maildir/.Archive/")],
          "deleted from the folder: %r" % gone)


def model(index):
    """Documents by _id, but root (spelled as each run named it) and
    thread_id (which a run gives among the messages it reads)."""
    return {i: {k: v for k, v in d.items() if k not in ("root", "thread_id")}
            for i, d in index.docs.items()}


def equal_to_clean(ctx, index, what, extra=(), roots=("Maildir",), fresh_state=False):
    """The documents of index equal a clean run's of roots: one without a
    state, or (fresh_state) one with a new state, where a file named
    twice is one record, the first naming's (README, "A file named
    twice")."""
    clean = Index()
    state = None
    if fresh_state:
        state = "clean-state"
        drop_state(ctx, state)
    clean.apply(ctx.run(list(roots), state=state, extra=extra).stdout)
    got, want = model(index), model(clean)
    if got != want:
        diff = sorted(set(got) ^ set(want)) or [i for i in got if got[i] != want[i]]
        i = diff[0]
        raise Fail("%s: documents differ from a clean run's at %s: %r, clean %r" % (
            what, i, got.get(i), want.get(i)))


def stopped_run(ctx, how, lines, extra=("--batch-bytes=4K",), roots=("Maildir",)):
    """A --state run that stops early, seen by its consumer: `lines` output
    lines read (or, a function, lines until it says so of what was read),
    then the consumer goes away ("closed": exit 141), or the run is
    interrupted ("interrupted": exit 130) or killed ("killed": SIGKILL,
    no state saved) and the consumer takes what the pipe still holds.
    Returns what the consumer took."""
    args = [ctx.ingest, "--backend=" + ctx.backend, "--format=es-bulk", "-q",
            "--state=" + os.path.join(ctx.work, "state")] + list(extra) + list(roots)
    p = subprocess.Popen(args, cwd=ctx.work, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    took = b""
    while (len(took.splitlines()) < lines) if isinstance(lines, int) else not lines(took):
        line = p.stdout.readline()
        if not line:
            break
        took += line
    if how == "closed":
        p.stdout.close()
    else:
        p.send_signal(signal.SIGKILL if how == "killed" else signal.SIGINT)
        took += p.stdout.read()
    p.wait(timeout=60)
    want = {"closed": 141, "interrupted": 130, "killed": -signal.SIGKILL}[how]
    check(p.returncode == want, "%s run: exit %d: %s" % (
        how, p.returncode, p.stderr.read().decode(errors="replace")))
    if how == "killed":
        # a kill may cut a write: the consumer keeps whole actions only
        lines = took.split(b"\n")[:-1]
        if lines and (lines[-1].startswith(b'{"index"') or lines[-1].startswith(b'{"update"')):
            lines.pop()
        took = b"".join(line + b"\n" for line in lines)
    p.stderr.close()
    return took


def fresh_tree(ctx):
    """An empty Maildir directory and no state: a case's next scenario."""
    if os.path.exists(ctx.md):
        shutil.rmtree(ctx.md)
    drop_state(ctx)
    os.makedirs(ctx.md)


def drop_state(ctx, state="state"):
    """The state file and its lock gone: the next run with it starts
    afresh."""
    for f in (state, state + ".lock"):
        if os.path.exists(os.path.join(ctx.work, f)):
            os.unlink(os.path.join(ctx.work, f))


def case_stopped_run_then_changes(ctx):
    """A run cut off (its consumer gone) or interrupted after some of its
    records reached the index, then changes, then a complete run: the
    documents equal a clean run's.  Of the files the stopped run wrote,
    those deleted before the next run are deleted by it (the stopped run
    saves them in the state as files it must read again), and an archive's
    messages it wrote at offsets a later rewrite drops are deleted too.
    Until this, a stopped run saved nothing, and what it had written stayed
    in the index for good once its files went.  What the run wrote into the
    pipe and its consumer never took is deleted too, answered not_found
    (counted, allowed here).  A killed run saves no state: what its journal
    said before its records went out stands in for it."""
    for how in ("closed", "interrupted", "killed"):
        fresh_tree(ctx)
        make_maildir(ctx.md)
        box = os.path.join(ctx.md, "archive.mbox")
        with open(box, "wb") as f:
            f.write(b"".join(mbox_message(n) for n in (1, 2)))
        os.utime(box, ns=(0, 1_700_000_000 * 10**9))
        index = Index(not_found_ok=True)
        index.apply(ctx.run(["Maildir"]).stdout)
        # new messages and an archive grown, then a run that stops early
        for n in range(20, 120):
            with open(os.path.join(ctx.md, "cur", name(n, "S")), "wb") as f:
                f.write(message(n) + b"filler " * 200 + b"\n")
        with open(box, "wb") as f:
            f.write(b"".join(mbox_message(n) for n in (1, 2, 3, 4, 5)))
        os.utime(box, ns=(0, 1_700_000_001 * 10**9))
        took = stopped_run(ctx, how, 40)
        index.apply(took)
        check(took, "%s: the stopped run wrote nothing" % how)
        # what it wrote goes: every new message but the last, and the
        # archive rewritten with other messages
        for n in range(20, 119):
            os.unlink(os.path.join(ctx.md, "cur", name(n, "S")))
        with open(box, "wb") as f:
            f.write(b"".join(mbox_message(n) for n in (6,)))
        os.utime(box, ns=(0, 1_700_000_002 * 10**9))
        index.apply(ctx.run(["Maildir"]).stdout)
        equal_to_clean(ctx, index, "%s, then changes" % how)
        index.apply(ctx.run(["Maildir"]).stdout)
        equal_to_clean(ctx, index, "%s, then a quiet run" % how)
        print("%s: %d deletes answered not_found" % (how, index.not_found))


def case_stopped_run_undone(ctx):
    """A run stopped after it wrote renames (flag changes) or deletions
    (files moved out of the root), then the change undone (flags back,
    files moved back), then a complete run: the documents equal a clean
    run's.  The stopped run kept the old entries, and the files, back as
    they were, were judged unchanged: every document kept the flags and
    path of a name that no longer existed, or was gone for good.  Such
    entries are now saved to be read again."""
    many = 2000
    for change in ("flags", "moved away"):
        for how in ("closed", "interrupted", "killed"):
            fresh_tree(ctx)
            make_maildir(ctx.md)
            os.makedirs(os.path.join(ctx.work, "away"), exist_ok=True)
            names = [name(n, "S") for n in range(100, 100 + many)]
            for n, base in zip(range(100, 100 + many), names):
                with open(os.path.join(ctx.md, "cur", base), "wb") as f:
                    f.write(message(n))
            index = Index(not_found_ok=True)
            index.apply(ctx.run(["Maildir"]).stdout)
            if change == "flags":
                there = [os.path.join(ctx.md, "cur", b[:-1] + "RS") for b in names]
            else:
                there = [os.path.join(ctx.work, "away", b) for b in names]
            for b, t in zip(names, there):
                os.rename(os.path.join(ctx.md, "cur", b), t)
            took = stopped_run(ctx, how, 10, extra=())
            index.apply(took)
            check(took.count(b'{"update"' if change == "flags" else b'{"delete"') >= 5,
                  "%s, %s: the stopped run wrote few of its records: %r" % (change, how, took[:200]))
            for b, t in zip(names, there):
                os.rename(t, os.path.join(ctx.md, "cur", b))
            index.apply(ctx.run(["Maildir"]).stdout)
            equal_to_clean(ctx, index, "%s, %s, then undone" % (change, how))
            check_index(ctx, index, "%s, %s, then undone" % (change, how))
            shutil.rmtree(os.path.join(ctx.work, "away"))


def case_stopped_run_fifos(ctx):
    """New FIFOs, with --es-errors (each FIFO an error document under an
    id of its own, written in walk order), a run that stops early after
    writing some of those documents (its consumer gone, interrupted,
    killed: no state saved, the journal stands in), then the FIFOs
    removed and a complete run: the documents equal a clean run's, no
    error document left behind.  A stopped run saves the old entries and
    what it wrote; a killed one leaves what its journal said before its
    records went out, which must name each FIFO's entry: no old entry
    has its id, and nothing else would delete its document.  (Without
    --es-errors a FIFO makes no document.)"""
    extra = ["--es-errors"]
    for how in ("closed", "interrupted", "killed"):
        fresh_tree(ctx)
        make_maildir(ctx.md)
        index = Index(not_found_ok=True)
        index.apply(ctx.run(["Maildir"], extra=extra).stdout)
        fifos = [os.path.join(ctx.md, "cur", name(n, "S")) for n in range(100, 1600)]
        for p in fifos:
            os.mkfifo(p)
        # new messages in the folder walked after cur/, more than a pipe
        # holds: the run is still writing when it is stopped
        big = [os.path.join(ctx.md, ".Archive", "cur", name(n, "S")) for n in range(5000, 5400)]
        for n, p in zip(range(5000, 5400), big):
            with open(p, "wb") as f:
                f.write(message(n) + b"filler " * 400 + b"\n")
        mark = b'"not-regular"'
        took = stopped_run(ctx, how, lambda t: t.count(mark) >= 20, extra=["--batch-bytes=4K"] + extra)
        index.apply(took)
        check(took.count(mark) >= 20, "%s: the stopped run wrote few FIFOs' records" % how)
        for p in fifos + big:
            os.unlink(p)
        index.apply(ctx.run(["Maildir"], extra=extra).stdout)
        equal_to_clean(ctx, index, "%s, then the FIFOs removed" % how, extra)
        index.apply(ctx.run(["Maildir"], extra=extra).stdout)
        equal_to_clean(ctx, index, "%s, then a quiet run" % how, extra)


def case_killed_run_streamed_archive(ctx):
    """A run killed while it streams an archive that grew (no state saved:
    its journal speaks for it), then the archive cut back below where it
    had grown, and a complete run: the messages the killed run wrote past
    the cut are deleted, as a clean run has none.  Without the journal they
    stayed in the index for good: the state before knew none of their
    offsets.  Also a killed run's journal cut inside an entry (a kill during
    its write) is read up to that entry."""
    stream = ["--batch-bytes=16K", "--max-inflight=256K"]
    for journal_cut in (False, True):
        fresh_tree(ctx)
        box = os.path.join(ctx.md, "big.mbox")
        with open(box, "wb") as f:
            f.write(b"".join(mbox_message(n) for n in range(100)))
        index = Index(not_found_ok=True)
        index.apply(ctx.run(["Maildir"], extra=stream).stdout)
        with open(box, "ab") as f:
            f.write(b"".join(mbox_message(n) + b"filler " * 40 + b"\n\n" for n in range(100, 3000)))
        took = stopped_run(ctx, "killed", 400, extra=stream)
        index.apply(took)
        check(took.count(b'{"index"') > 150, "the killed run wrote few records: %d" % took.count(b'{"index"'))
        journal = os.path.join(ctx.work, "state.journal")
        check(os.path.getsize(journal) > 0, "the killed run left no journal")
        if journal_cut:
            with open(journal, "ab") as f:
                f.write(b"0 0 12 3 4 5 6")
        with open(box, "wb") as f:
            f.write(b"".join(mbox_message(n) for n in range(50)))
        index.apply(ctx.run(["Maildir"], extra=stream).stdout)
        equal_to_clean(ctx, index, "killed while streaming, then cut back%s" % (
            ", its journal cut" if journal_cut else ""), extra=stream)
        check(not os.path.exists(journal), "the journal is left after a complete run")


def case_killed_file_becomes_archive(ctx):
    """A file that was one message and is an archive now, read by a run
    killed after its journal said so and before its records reached
    anyone (its output a full pipe), then complete runs: the file's old
    document is deleted, as a clean run has none.  The journal's offsets,
    merged into the entry that stood for that document, made it look like
    an archive's, whose own id is no document: the delete never came."""
    import fcntl
    fresh_tree(ctx)
    head = b"From sender@example.org Mon Jan  1 00:00:00 2024\n"
    box = os.path.join(ctx.md, "f.box")
    with open(box, "wb") as f:
        f.write(message(1))
    os.utime(box, ns=(0, 1_700_000_000 * 10**9))
    index = Index(not_found_ok=True)
    index.apply(ctx.run(["Maildir"]).stdout)
    with open(box, "wb") as f:
        f.write(head + message(2) + b"\n" + head + message(3))
    os.utime(box, ns=(0, 1_700_000_100 * 10**9))
    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, os.O_NONBLOCK)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    fcntl.fcntl(w, fcntl.F_SETFL, 0)
    p = subprocess.Popen([ctx.ingest, "--backend=" + ctx.backend, "--format=es-bulk", "-q",
                          "--state=" + os.path.join(ctx.work, "state"), "Maildir"], cwd=ctx.work, stdout=w)
    os.close(w)
    journal = os.path.join(ctx.work, "state.journal")
    for _ in range(1000):
        if os.path.exists(journal) and b"f.box" in open(journal, "rb").read():
            break
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait()
    os.close(r)   # the pipe's contents die with it
    check(b"f.box" in open(journal, "rb").read(), "the killed run journaled nothing")
    for step in ("a complete run", "another"):
        index.apply(ctx.run(["Maildir"]).stdout)
        equal_to_clean(ctx, index, "a file become an archive, its run killed, then %s" % step)


def case_stopped_run_kinds(ctx):
    """Stopped runs whose written records changed what a file was: an
    mbox read whole of which only some records went out; a file that was
    no mail and is a message now; an archive that is one message now; a
    listed file that does not exist (--es-errors).  Each is then deleted
    (or unlisted), and a complete run leaves a clean run's documents: the
    stopped run's state has to say that each may be in the index."""
    def filler(n):
        for k in range(n):
            with open(os.path.join(ctx.md, "f%03d.eml" % k), "wb") as f:
                f.write(message(1000 + k) + b"filler " * 150 + b"\n")

    def box(ns):
        return b"".join(mbox_message(n) + b"text " * 40 + b"\n\n" for n in ns)

    def put(name, data, t):
        with open(os.path.join(ctx.md, name), "wb") as f:
            f.write(data)
        os.utime(os.path.join(ctx.md, name), ns=(0, t * 10**9))

    # an mbox of 200 messages read whole, new, its records cut part-way
    fresh_tree(ctx)
    index = Index(not_found_ok=True)
    put("a.mbox", box(range(1, 201)), 1_700_000_000)
    index.apply(stopped_run(ctx, "closed", 6, extra=()))
    os.unlink(os.path.join(ctx.md, "a.mbox"))
    index.apply(ctx.run(["Maildir"]).stdout)
    equal_to_clean(ctx, index, "an mbox read whole, cut part-way, then deleted")

    # no mail, then a message written by a stopped run, then gone; an
    # archive, then one message written by a stopped run, then gone.
    # Named by a list, a.box first (a walk's order is the inodes'); gone
    # from the list, it is deleted
    lst = os.path.join(ctx.work, "list")

    def listing(names):
        with open(lst, "w") as f:
            f.write("".join(os.path.join(ctx.md, n) + "\n" for n in names))
        return ["--files-from=" + lst]
    for was, what in ((b"garbage\n", "no mail"), (box([1, 2]), "an archive")):
        fresh_tree(ctx)
        index = Index(not_found_ok=True)
        # (a .eml file is one message whatever it holds: this one is not)
        put("a.box", was, 1_700_000_000)
        index.apply(ctx.run([], extra=listing(["a.box"])).stdout)
        put("a.box", message(7), 1_700_000_001)
        filler(300)
        fillers = sorted(n for n in os.listdir(ctx.md) if n.startswith("f"))
        # a.box's records whole: the message, and an archive's deletions
        took = stopped_run(ctx, "closed", 2 if b"From " not in was else 4,
                           extra=listing(["a.box"] + fillers), roots=())
        index.apply(took)
        check(b'/a.box"' in took, "%s: the stopped run did not write a.box first" % what)
        os.unlink(os.path.join(ctx.md, "a.box"))
        args = listing(fillers)
        index.apply(ctx.run([], extra=args).stdout)
        equal_to_clean(ctx, index, "%s, then a message written by a stopped run, then gone" % what,
                       args, roots=())

    # a listed file that does not exist, its error document written by a
    # stopped run, then not listed
    fresh_tree(ctx)
    index = Index(not_found_ok=True)
    filler(300)
    fillers = sorted(os.listdir(ctx.md))
    index.apply(stopped_run(ctx, "closed", 2, extra=["--es-errors"] + listing(["missing.eml"] + fillers),
                            roots=()))
    check(sum("error" in d for d in index.docs.values()) == 1, "the missing file's error document went first")
    args = ["--es-errors"] + listing(fillers)
    index.apply(ctx.run([], extra=args).stdout)
    equal_to_clean(ctx, index, "a missing listed file, written by a stopped run, then not listed",
                   args, roots=())


def case_random_changes(ctx):
    """Twenty-five steps of one to three random changes (new messages, deletions,
    flag changes, new/ -> cur/, moves, copies under a new unique name,
    rewrites in place, rewrites then moves), each followed by a run with
    --state under a random spelling of the root: the model index the
    streams leave equals, document by document, the one a clean run over
    the same tree makes (but for `root`, spelled as each run named it, and
    `thread_id`, which a run gives among the messages it reads).
    IDENTITY_SEED replays a failed run's changes."""
    import random
    seed = int(os.environ.get("IDENTITY_SEED") or int.from_bytes(os.urandom(4), "little"))
    print("changes seeded with IDENTITY_SEED=%d" % seed)
    rng = random.Random(seed)
    make_maildir(ctx.md)
    folders = ["", ".Archive", ".Lists"]
    for d in ("cur", "new", "tmp"):
        os.makedirs(os.path.join(ctx.md, ".Lists", d), exist_ok=True)
    count = [100]

    def files():
        out = []
        for f in folders:
            for d in ("cur", "new"):
                rel = os.path.join(f, d) if f else d
                out += [os.path.join(rel, x) for x in sorted(os.listdir(os.path.join(ctx.md, rel)))]
        return out

    def fresh():
        count[0] += 1
        return count[0]

    def rewrite(rel):
        path = os.path.join(ctx.md, rel)
        st = os.stat(path)
        with open(path, "wb") as f:
            f.write(message(fresh(), msgid=rng.random() < 0.7))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2000000000))

    def cur_of(folder):
        return os.path.join(folder, "cur") if folder else "cur"

    def change():
        fs, k = files(), rng.randrange(9)
        if k <= 1 or not fs:
            n = fresh()
            d = os.path.join(rng.choice(folders), rng.choice(["cur", "new"])).lstrip("/")
            rel = os.path.join(d, name(n, rng.choice(["", "S", "RS"]) if d.endswith("cur") else None))
            with open(os.path.join(ctx.md, rel), "wb") as f:
                f.write(message(n, msgid=rng.random() < 0.7))
            return "add"
        rel = rng.choice(fs)
        base = os.path.basename(rel).split(":2,")[0]
        if k == 2:
            ctx.rm(rel)
            return "delete"
        if k == 3:
            parent = os.path.dirname(os.path.dirname(rel))
            ctx.mv(rel, os.path.join(cur_of(parent), base + ":2," + rng.choice(["", "S", "FS", "T"])))
            return "flags"
        if k == 4:
            ctx.mv(rel, os.path.join(cur_of(rng.choice(folders)), base + ":2,S"))
            return "move"
        if k == 5:
            ctx.cp(rel, os.path.join(cur_of(rng.choice(folders)), name(fresh(), "S")))
            return "copy"
        if k == 6:
            rewrite(rel)
            return "rewrite"
        rewrite(rel)
        ctx.mv(rel, os.path.join(cur_of(rng.choice(folders)), base + ":2,RS"))
        return "rewrite and move"

    index = Index()
    spellings = ["Maildir", "./Maildir/", "link", ctx.md]
    index.apply(ctx.run([rng.choice(spellings)]).stdout)
    for step in range(25):
        done = [change() for _ in range(rng.randrange(1, 4))]
        index.apply(ctx.run([rng.choice(spellings)]).stdout)
        check_index(ctx, index, "step %d (%s)" % (step, ", ".join(done)))
        equal_to_clean(ctx, index, "step %d (%s)" % (step, ", ".join(done)))
    print("25 steps of random changes: the streams' documents equal a clean run's")


def case_changes_during_runs(ctx):
    """A mail client at work while --state runs read: a thread renames
    (flags, folders), deletes, copies and rewrites messages of a Maildir of
    1,200 for the whole of each run; a quiet run follows.  Both streams go
    to the model index, which must take every action (no update or delete
    of a missing document) and end equal to a clean run's, document by
    document (but root and thread_id).  Four rounds; IDENTITY_SEED replays
    the choices (the timing is the machine's)."""
    import random
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from mailchurn import Churn
    seed = int(os.environ.get("IDENTITY_SEED") or int.from_bytes(os.urandom(4), "little"))
    print("changes seeded with IDENTITY_SEED=%d" % seed)
    rng = random.Random(seed)
    make_maildir(ctx.md)
    for d in ("cur", "new", "tmp"):
        os.makedirs(os.path.join(ctx.md, ".Lists", d), exist_ok=True)
    dirs = [os.path.join(ctx.md, d) for d in ("cur", "new", ".Archive/cur", ".Archive/new", ".Lists/cur")]
    for n in range(1000, 2200):
        d = dirs[n % len(dirs)]
        with open(os.path.join(d, name(n, "S" if d.endswith("cur") else None)), "wb") as f:
            f.write(message(n, msgid=n % 3 != 0))
    made = [5000]

    def copy_name():
        made[0] += 1
        return name(made[0], "S")

    def rewrite(data):
        made[0] += 1
        return message(made[0])

    index = Index()
    for rnd in range(4):
        with Churn(dirs, random.Random(rng.getrandbits(32)), copy_name, rewrite):
            out = ctx.run(["Maildir"]).stdout
        index.apply(out)
        index.apply(ctx.run(["Maildir"]).stdout)
        check_index(ctx, index, "round %d, after a quiet run" % rnd)
        equal_to_clean(ctx, index, "round %d, after a quiet run" % rnd)
    print("four runs during a client's changes, each followed by a quiet run: nothing lost")


CASES = {n[len("case_"):]: f for n, f in globals().items() if n.startswith("case_")}


def uring_available(ingest, work):
    probe = os.path.join(work, "probe.eml")
    with open(probe, "wb") as f:
        f.write(message(0))
    r = subprocess.run([ingest, "--backend=uring", "-q", probe], stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE)
    os.unlink(probe)
    return r.returncode == 0, r.stderr.decode(errors="replace").strip()


def main():
    # meson registers one test per case and backend from `--list`
    if sys.argv[1:] == ["--list"]:
        print("\n".join(CASES))
        return 0
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingest", required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES))
    ap.add_argument("--backend", required=True, choices=["sync", "uring"])
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="ingest-identity-")
    try:
        if a.backend == "uring":
            ok, why = uring_available(a.ingest, work)
            if not ok:
                print("SKIP: io_uring is not available here: %s" % why)
                return SKIP
        CASES[a.case](Ctx(os.path.abspath(a.ingest), a.backend, work))
    except Fail as e:
        print("FAIL %s (%s): %s" % (a.case, a.backend, e))
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("ok %s (%s)" % (a.case, a.backend))
    return 0


if __name__ == "__main__":
    sys.exit(main())
