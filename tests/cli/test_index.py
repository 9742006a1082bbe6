#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""CLI tests for --index and `ingest search`: the database checked with
Python's sqlite3 module (an SQL client independent of ours) against the
records the same binary writes as JSON Lines.

Usage: test_index.py --ingest PATH --mkcorpus PATH --source DIR --case NAME
Exit 0 pass, 1 fail, 77 skip (with the reason on stdout)."""
import base64
import concurrent.futures
import contextlib
import fcntl
import glob
import itertools
import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True   # nothing written into the source tree
from clilib import ARGS, fail, mkcorpus, records  # noqa: E402
import clilib  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from mailchurn import Churn  # noqa: E402


def run(args, check_rc=0, env=None, pre=()):
    """clilib.run, with exit 0 expected unless told otherwise."""
    return clilib.run(args, check_rc=check_rc, env=env, pre=pre)


def stats(p):
    lines = [ln for ln in p.stderr.decode().splitlines() if ln.startswith("{")]
    if not lines:
        fail(f"no --stats=json line: {p.stderr!r}")
    return json.loads(lines[-1])


def q(db, sql, *params):
    c = sqlite3.connect(db)
    try:
        return c.execute(sql, params).fetchall()
    finally:
        c.close()


RUN_NOTES = ("grew", "shrank")   # notes of what one run met while it read a file


def dump(db, run_notes=True):
    """Every table's rows, without the docids and thread numbers a run
    chooses: messages by id, their children by message id, threads as the
    partition of message ids they make; and the children and FTS rows of
    no message (a deletion that left them behind: the joins by message
    hide them, and a clean run has none).  run_notes False: without the
    notes that say what a run met while it read (a file that grew as a
    client rewrote it), which a clean run after it does not meet."""
    c = sqlite3.connect(db)
    try:
        cols = [r[1] for r in c.execute("PRAGMA table_info(messages)")
                if r[1] not in ("docid", "thread_id", "mtime")]
        rows = c.execute("SELECT " + ", ".join(f'"{x}"' for x in cols) + " FROM messages").fetchall()
        if not run_notes:
            w = cols.index("notes")

            def kept(v):
                left = [x for x in json.loads(v) if x not in RUN_NOTES] if v else []
                return json.dumps(left) if left else None   # no warning: NULL

            rows = [r[:w] + (kept(r[w]),) + r[w + 1:] for r in rows]
        out = {"messages": sorted(rows)}
        # rows of no message, by table (the joins below leave them out)
        orphans = c.execute("SELECT 'mail_fts', subject, \"from\", \"to\", text, attachments FROM mail_fts"
                            " WHERE rowid NOT IN (SELECT docid FROM messages)").fetchall()
        for t in ("addresses", "attachments", "refs"):
            tc = [r[1] for r in c.execute(f"PRAGMA table_info({t})") if r[1] != "message"]
            out[t] = sorted(c.execute(
                "SELECT m.id, " + ", ".join(f'x."{x}"' for x in tc) + f" FROM {t} x"
                f" JOIN messages m ON m.docid = x.message").fetchall(), key=repr)
            orphans += c.execute(f"SELECT '{t}', " + ", ".join(f'x."{x}"' for x in tc) + f" FROM {t} x"
                                 " WHERE x.message NOT IN (SELECT docid FROM messages)").fetchall()
        out["fts"] = sorted(c.execute("SELECT m.id, f.subject, f.\"from\", f.\"to\", f.text, f.attachments"
                                      " FROM mail_fts f JOIN messages m ON m.docid = f.rowid").fetchall())
        out["orphans"] = sorted(orphans, key=repr)
        out["errors"] = sorted(c.execute("SELECT root, path, offset, reason, errno, message FROM errors"
                                         ).fetchall(), key=repr)
        out["files"] = sorted(c.execute("SELECT root, path, size FROM files").fetchall())
        threads = {}
        for mid, t in c.execute("SELECT id, thread_id FROM messages"):
            threads.setdefault(t, set()).add(mid)
        out["threads"] = sorted(sorted(s) for s in threads.values())
        out["integrity"] = c.execute("PRAGMA integrity_check").fetchall()
        return out
    finally:
        c.close()


def differ(a, b):
    return [k for k in a if a[k] != b[k]]


def count_inputs(root):
    n = 0
    for d, dirs, files in os.walk(root):
        if "cur" in dirs and "new" in dirs and "tmp" in dirs:
            dirs.remove("tmp")
        n += len(files)
    return n


def sample():
    return os.path.join(ARGS.source, "tests", "sample", "Maildir")


def case_sample(tmp):
    """Every input a row (messages + errors = the JSONL records), every
    field of the records findable in the tables, and an unchanged re-run
    that reads no body and writes no row."""
    db = os.path.join(tmp, "mail.db")
    src = sample()
    recs = records(run([src]).stdout)
    p = run(["--index=" + db, "--stats=json", src])
    if p.stdout:
        fail(f"--index wrote records to stdout: {p.stdout[:200]!r}")
    n_msg = q(db, "SELECT count(*) FROM messages")[0][0]
    n_err = q(db, "SELECT count(*) FROM errors")[0][0]
    if n_msg + n_err != len(recs) or n_err != sum(1 for r in recs if "error" in r):
        fail(f"{n_msg} messages + {n_err} errors for {len(recs)} records")
    if stats(p)["index"]["messages"] != n_msg:
        fail(f"--stats says {stats(p)['index']}")
    for r in recs:
        if "error" in r:
            continue
        row = q(db, "SELECT docid, subject, message_id, date, flags, folder, size, content_type, parts,"
                    " in_reply_to, text_truncated FROM messages WHERE root = ? AND path = ?",
                os.path.realpath(src), r["path"])
        if len(row) != 1:
            fail(f"{r['path']}: {len(row)} rows")
        docid, *vals = row[0]
        want = [r.get(k) for k in ("subject", "message_id", "date", "flags", "folder", "size",
                                   "content_type", "parts", "in_reply_to")] + [int(r["text_truncated"])]
        if vals != want:
            fail(f"{r['path']}: row {vals} != record {want}")
        for role in ("from", "sender", "reply_to", "to", "cc", "bcc"):
            flat = []
            for a in r.get(role, []):
                flat += [(x["name"], x["address"]) for x in a["members"]] if "group" in a else \
                        [(a["name"], a["address"])]
            got = q(db, "SELECT name, address FROM addresses WHERE message = ? AND role = ?"
                        " AND address IS NOT NULL ORDER BY position, member", docid, role)
            if got != flat:
                fail(f"{r['path']} {role}: {got} != {flat}")
        refs = [x[0] for x in q(db, "SELECT msgid FROM refs WHERE message = ? ORDER BY position", docid)]
        if refs != r.get("references", []):
            fail(f"{r['path']}: refs {refs}")
        att = q(db, "SELECT filename, content_type, detected_type, disposition, content_id, size"
                    " FROM attachments WHERE message = ? ORDER BY position", docid)
        if att != [tuple(a[k] for k in ("filename", "content_type", "detected_type", "disposition",
                                         "content_id", "size")) for a in r.get("attachments", [])]:
            fail(f"{r['path']}: attachments {att}")
        text = q(db, "SELECT text FROM mail_fts WHERE rowid = ?", docid)[0][0]
        if text != r.get("text"):
            fail(f"{r['path']}: the indexed text differs from the record's")
    p = run(["--index=" + db, "--stats=json", src])
    s = stats(p)
    if s["ring_ops"]["read"] or s["syscalls"]["read"] or s["index"]["messages"]:
        fail(f"unchanged re-run read or wrote: {s['ring_ops']} {s['index']}")
    print(f"{n_msg} messages and {n_err} errors; the re-run read nothing")


GOLDEN_FLAGS = ("S", "", "RS", "FS", "Sab", "DFPRST", "T", "PS")   # "ab": Dovecot keywords
GOLDEN_MBOX_AREA = "dates"   # the area written as an mbox archive (offset, length)
GOLDEN_TOP_AREA = "addresses"   # the area at the Maildir's top (folder "")
MAILDIR_TAGS = {"D": "draft", "F": "flagged", "P": "passed", "R": "replied", "S": "seen", "T": "trashed"}
ROLES = ("from", "sender", "reply_to", "to", "cc", "bcc")
# The members a message's record_hash leaves out (src/index/index.c,
# index_hash_skips): where its file is, the file's stat, its thread.
HASH_SKIPS = ("path", "root", "path_b64", "root_b64", "size", "mtime", "folder", "subdir", "flags",
              "tags", "thread_id")
ATTACHMENT_KEYS = ("filename", "content_type", "detected_type", "disposition", "content_id", "size")
# Fields of error records the schema has no place for (README's errors
# table lists no such column): the round trip counts and prints each one
# it meets, and fails on any other field without a place.
NOT_STORED = {
    "length": "an mbox error record's length (errors has no length column)",
    "id": "the id of an error record whose file has no files row, a name that is not there"
          " (errors has no id column)",
}


def golden_layout(tmp):
    """The golden corpus (tests/corpus/golden, generated cases generated)
    laid out where the records get every I/O field: a Maildir (./M/, one
    area at its top, each other in a Maildir++ folder; flags from
    GOLDEN_FLAGS, every fourth message in new/), one area as an mbox
    archive (archive.mbox, mboxrd-quoted, with a note that is no mail
    among its messages), a name that is not there (gone.eml: an io-error
    with errno), and the cases with arguments of their own as files named
    on the command line.  No two golden messages are of one thread, so
    the Maildir's .replies folder adds replies to three of them and a
    message whose References name two of those, which the index joins
    into one thread and the records' stream leaves apart ("Threads").
    {args: [PATH arguments]}, relative to tmp."""
    golden = os.path.join(ARGS.source, "tests", "corpus", "golden")
    groups = {(): ["./M/", "archive.mbox", "gone.eml"]}
    for sub in ("cur", "new", "tmp"):
        os.makedirs(os.path.join(tmp, "M", sub))
    n = 0
    mbox, msgids = [], []
    for area in sorted(os.listdir(golden)):
        if not os.path.isdir(os.path.join(golden, area)):
            continue
        for fn in sorted(os.listdir(os.path.join(golden, area))):
            src = os.path.join(golden, area, fn)
            if fn.endswith(".eml"):
                stem, data = fn[:-4], open(src, "rb").read()
            elif fn.endswith(".gen.py"):
                stem = fn[:-7]
                data = subprocess.run([sys.executable, src], check=True, capture_output=True).stdout
            else:
                continue
            args_file = os.path.join(golden, area, stem + ".args")
            if os.path.exists(args_file):
                args = tuple(x.strip() for x in open(args_file) if x.strip() and not x.startswith("#"))
                name = os.path.join("args-%d" % len(groups), stem + ".eml")
                groups.setdefault(args, []).append(name)
                os.makedirs(os.path.join(tmp, os.path.dirname(name)), exist_ok=True)
                with open(os.path.join(tmp, name), "wb") as f:
                    f.write(data)
                continue
            if area == GOLDEN_MBOX_AREA:
                mbox.append(data)
                if len(mbox) == 3:
                    mbox.append(open(os.path.join(golden, "not-mail", "plain-text.eml"), "rb").read())
                continue
            n += 1
            with open(os.path.join(golden, area, stem + ".json"), encoding="utf-8") as f:
                msgid = json.load(f).get("message_id")
            if msgid and re.fullmatch(r"[\w.-]+@[\w.-]+", msgid):
                msgids.append(msgid)
            d = os.path.join(tmp, "M") if area == GOLDEN_TOP_AREA else os.path.join(tmp, "M", "." + area)
            for sub in ("cur", "new", "tmp"):
                os.makedirs(os.path.join(d, sub), exist_ok=True)
            name = "%d.golden-%s-%s.host" % (1700000000 + n, area, stem)
            name = os.path.join(d, "new", name) if n % 4 == 0 else \
                os.path.join(d, "cur", name + ":2," + GOLDEN_FLAGS[n % len(GOLDEN_FLAGS)])
            with open(name, "wb") as f:
                f.write(data)
    with open(os.path.join(tmp, "archive.mbox"), "wb") as f:
        for data in mbox:
            quoted = re.sub(rb"(?m)^(>*From )", rb">\1", data)
            f.write(b"From golden@example.org Mon Jan  2 10:00:00 2023\n" + quoted +
                    (b"" if quoted.endswith(b"\n") else b"\n") + b"\n")
    a, b, c = msgids[:3]
    replies = os.path.join(tmp, "M", ".replies")
    for sub in ("cur", "new", "tmp"):
        os.makedirs(os.path.join(replies, sub))
    for i, (irt, refs) in enumerate(((a, [a]), (b, [b]), (c, [c]), (b, [a, b]))):
        with open(os.path.join(replies, "cur", "%d.reply-%d.host:2,S" % (1800000000 + i, i)), "wb") as f:
            f.write(f"From: reply@example.org\nTo: golden@example.org\nSubject: Re: golden\n"
                    f"Message-ID: <reply-{i}@example.org>\nIn-Reply-To: <{irt}>\n"
                    f"References: {' '.join(f'<{r}>' for r in refs)}\n\nA reply.\n".encode())
    return groups


def fnv1a(h, data):
    """src/core/hash.h's 64-bit FNV-1a, fed data after h."""
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def address_rows(lists):
    """The addresses rows README gives a record's lists, per role:
    (role, position, member, name, address, group)."""
    out = []
    for role in ROLES:
        for pos, a in enumerate(lists.get(role, [])):
            if "group" in a and a["members"]:
                out += [(role, pos, k, m["name"], m["address"], a["group"])
                        for k, m in enumerate(a["members"])]
            elif "group" in a:
                out.append((role, pos, None, None, None, a["group"]))
            else:
                out.append((role, pos, None, a["name"], a["address"], None))
    return sorted(out, key=repr)


def maildir_fields(path):
    """folder, subdir, flags and tags as a Maildir message's path below its
    Maildir gives them ([.FOLDER/]SUBDIR/NAME[:2,FLAGS])."""
    parts = path.split("/")
    m = re.search(r"[:!;]2,([^/]*)$", parts[-1])
    flags = m.group(1) if m else ""
    return {"folder": parts[0][1:] if len(parts) == 3 else "", "subdir": parts[-2], "flags": flags,
            "tags": [MAILDIR_TAGS[x] for x in "DFPRST" if x in flags]}


def round_trip(recs, db, cwd):
    """Every field of every record against the tables of db, written by a
    run from cwd over the same inputs; [(where, field, record's value,
    table's value)] for each that is not findable, and the NOT_STORED
    fields met, counted."""
    c = sqlite3.connect(db)
    c.row_factory = sqlite3.Row
    bad, unstored = [], {}
    try:
        msgs = {r["id"]: r for r in c.execute("SELECT *, CAST(root AS BLOB) AS root_bytes,"
                                              " CAST(path AS BLOB) AS path_bytes FROM messages")}
        errs = {}
        for r in c.execute("SELECT *, CAST(root AS BLOB) AS root_bytes, CAST(path AS BLOB) AS path_bytes"
                           " FROM errors"):
            errs.setdefault((r["root_bytes"], r["path_bytes"], r["offset"]), []).append(r)
        err_cols = {r[1] for r in c.execute("PRAGMA table_info(errors)")}
        files = {(bytes(r[0]), bytes(r[1])): r[2] for r in c.execute("SELECT root, path, id FROM files")}
        children = {}
        for r in c.execute("SELECT message, role, position, member, name, address, \"group\" FROM addresses"):
            children.setdefault(("addresses", r[0]), []).append(tuple(r)[1:])
        for r in c.execute("SELECT message, position, " + ", ".join(ATTACHMENT_KEYS) + " FROM attachments"):
            children.setdefault(("attachments", r[0]), []).append(tuple(r)[1:])
        for r in c.execute("SELECT message, position, msgid FROM refs"):
            children.setdefault(("refs", r[0]), []).append(tuple(r)[1:])
        fts = {r[0]: r for r in c.execute("SELECT rowid, subject, \"from\", \"to\", text, attachments"
                                          " FROM mail_fts")}
        docids = {m["docid"] for m in msgs.values()}
        if set(fts) != docids:
            bad.append(("mail_fts", "rowid (messages without one, rows of no message)",
                        sorted(docids - set(fts)), sorted(set(fts) - docids)))
    finally:
        c.close()

    def raw(rec, key):
        """The exact bytes of the record's root or path."""
        return base64.b64decode(rec[key + "_b64"]) if key + "_b64" in rec else os.fsencode(rec[key])

    n_msg = n_err = 0
    hashes, contents = {}, {}
    for rec in recs:
        where = rec.get("path", "?") + ("@%d" % rec["offset"] if "offset" in rec else "")
        root = os.path.realpath(os.path.join(os.fsencode(cwd), raw(rec, "root")))
        path = raw(rec, "path")

        def same(field, want, got):
            if want != got:
                bad.append((where, field, want, got))

        if "error" in rec:
            rows = errs.get((root, path, rec.get("offset")), [])
            if len(rows) != 1:
                bad.append((where, "error", rec["error"], f"{len(rows)} errors rows"))
                continue
            n_err += 1
            row = rows[0]
            md = maildir_fields(rec["path"]) if "subdir" in rec else {}
            file_id = files.get((root, path))
            for k, v in rec.items():
                if k in ("root", "path", "root_b64", "path_b64"):
                    same(k, path if k.startswith("path") else root,
                         row["path_bytes"] if k.startswith("path") else row["root_bytes"])
                elif k in ("offset", "size", "mtime", "detected_type"):
                    same(k, v, row[k])
                elif k == "error":
                    got = {"reason": row["reason"], "message": row["message"]}
                    if row["errno"] is not None:
                        got["errno"] = row["errno"]
                    same(k, v, got)
                elif k == "id" and file_id is not None:
                    # the files row's id (signed 64-bit); an mbox message's:
                    # the archive's id, "#" and the decimal offset
                    got = file_id & 0xFFFFFFFFFFFFFFFF
                    if "offset" in rec:
                        got = fnv1a(got, b"#%d" % rec["offset"])
                    same(k, v, "%016x" % got)
                elif k in md:
                    same(k, v, md[k])
                elif k in err_cols:
                    same(k, v, row[k])
                elif k in NOT_STORED:
                    unstored[k] = unstored.get(k, 0) + 1
                else:
                    bad.append((where, k, v, "no place in the errors table"))
            continue

        row = msgs.get(rec.get("id"))
        if row is None:
            bad.append((where, "id", rec.get("id"), "no messages row"))
            continue
        n_msg += 1
        docid = row["docid"]
        f = fts.get(docid)
        explained = {"docid", "thread_id", "tags", "root_bytes", "path_bytes", "record_hash"}
        # record_hash: one for each record but where its file is and its
        # stat (HASH_SKIPS), and another for any other
        if not isinstance(row["record_hash"], int):
            bad.append((where, "record_hash", "an integer", row["record_hash"]))
        content = json.dumps({k: v for k, v in rec.items() if k not in HASH_SKIPS}, sort_keys=True)
        hashes.setdefault(row["record_hash"], set()).add(content)
        contents.setdefault(content, set()).add(row["record_hash"])
        for k, v in rec.items():
            if k in ("root", "path", "root_b64", "path_b64"):
                same(k, path if k.startswith("path") else root,
                     row["path_bytes"] if k.startswith("path") else row["root_bytes"])
            elif k in ("id", "folder", "subdir", "flags", "offset", "length", "size", "mtime", "message_id",
                       "in_reply_to", "date", "date_raw", "list_id", "content_type", "parts"):
                same(k, v, row[k])
            elif k == "subject":
                same(k, v, row[k])
                same("subject (mail_fts)", v, f and f["subject"])
            elif k == "text_truncated":
                same(k, int(v), row[k])
            elif k in ("warnings", "notes", "headers"):
                same(k, v, row[k] and json.loads(row[k]))
            elif k == "tags":
                same(k, v + ([] if "S" in rec.get("flags", "") else ["unread"]), json.loads(row[k]))
            elif k == "thread_id":
                pass   # the partitions, below
            elif k in ROLES:
                same(k, address_rows({k: v}),
                     sorted((x for x in children.get(("addresses", docid), []) if x[0] == k), key=repr))
            elif k == "attachments":
                same(k, [(i,) + tuple(a.get(x) for x in ATTACHMENT_KEYS) for i, a in enumerate(v)],
                     sorted(children.get(("attachments", docid), [])))
                for a in v:
                    extra = sorted(set(a) - set(ATTACHMENT_KEYS))
                    if extra:
                        bad.append((where, k, sorted(a), "no column for " + ", ".join(extra)))
                same("attachments (mail_fts)", sorted(words(" ".join(a["filename"] or "" for a in v))),
                     sorted(words(f and f["attachments"])))
            elif k == "references":
                same(k, list(enumerate(v)), sorted(children.get(("refs", docid), [])))
            elif k == "text":
                same(k, v, f and f["text"])
            else:
                bad.append((where, k, v, "no place in the messages table"))
            explained.add(k)
        # the other way round: no column, child row or FTS value the
        # record does not give
        if "tags" not in rec:
            same("tags", [], json.loads(row["tags"]))
        for k in row.keys():
            if k not in explained and row[k] is not None:
                bad.append((where, k, None, row[k]))
        for role in ROLES:
            if role not in rec and any(x[0] == role for x in children.get(("addresses", docid), [])):
                bad.append((where, role, None, "addresses rows"))
        for k, t in (("attachments", "attachments"), ("references", "refs")):
            if k not in rec and children.get((t, docid)):
                bad.append((where, k, None, f"{t} rows"))
        for k in ("subject", "text"):
            if k not in rec and f and f[k] is not None:
                bad.append((where, k + " (mail_fts)", None, f[k]))
        for k, roles in (("from", ("from", "sender")), ("to", ("to", "cc", "bcc"))):
            same(", ".join(roles) + " (mail_fts)", sorted(words(flat(rec, roles))), sorted(words(f and f[k])))
    for h, cs in hashes.items():
        if len(cs) > 1:
            bad.append(("record_hash", h, "one record's", f"{len(cs)} different records'"))
    for c, hs in contents.items():
        if len(hs) > 1:
            bad.append(("record_hash", c[:80], "one", f"{len(hs)} for one record"))
    if n_msg != len(msgs) or n_err != sum(len(x) for x in errs.values()):
        bad.append(("tables", "rows", f"{n_msg} messages, {n_err} errors",
                    f"{len(msgs)} messages, {sum(len(x) for x in errs.values())} errors"))
    # threads: records sharing a thread_id share the index's thread, and
    # the index's threads are the msg-id graph's components
    index_threads = {}
    for m in msgs.values():
        index_threads.setdefault(m["thread_id"], set()).add(m["id"])
    thread_of = {i: t for t, ids in index_threads.items() for i in ids}
    mail = [r for r in recs if "error" not in r]
    by_thread = {}
    for r in mail:
        by_thread.setdefault(r["thread_id"], []).append(r["id"])
    for t, ids in by_thread.items():
        if len({thread_of.get(i) for i in ids}) != 1:
            bad.append(("thread " + t, "thread_id (ids, the index's threads)", sorted(ids),
                        sorted(str(thread_of.get(i)) for i in ids)))
    mine = sorted(sorted(s) for s in index_threads.values())
    graph = components(mail, key="id")
    if mine != graph:
        bad.append(("threads", "thread_id (the msg-id graph's components, the index's threads)",
                    [x for x in graph if x not in mine][:3], [x for x in mine if x not in graph][:3]))
    return bad, unstored


def case_golden_round_trip(tmp):
    """Schema round trip on the golden corpus (golden_layout: a Maildir, an
    mbox archive, files named on the command line; one database per set of
    arguments, as the index keeps its first run's): every field of every
    JSON Lines record (--headers: every field the index stores) is found
    in the tables of an --index run over the same inputs with the same
    value, and the tables hold nothing the records do not give (no row,
    child row, FTS row or column value more).

    Stored as the record has it: id, path, folder, subdir, flags, offset,
    length, size, mtime, message_id, in_reply_to, date, date_raw, subject,
    list_id, content_type, parts (messages); the address lists (addresses:
    role, position, member, name, address, group; an empty group one row
    without address); attachments (attachments, by position); references
    (refs, by position); text and subject (mail_fts); error, offset, size,
    mtime, detected_type (errors: reason, errno, message).

    Stored otherwise, and checked as README says:
      root         the resolved root: realpath of the record's root from
                   the run's directory (a file named on the command line,
                   root "", is filed under that directory); path_b64 and
                   root_b64 the exact bytes of path and root
      text_truncated  0 or 1
      warnings, notes, headers  JSON text, equal once parsed
      tags         the record's tags, then "unread" for a Maildir message
                   without S (ingest_tags); [] outside a Maildir
      record_hash  an integer, the same for records equal but for where
                   their file is and its stat (HASH_SKIPS), and different
                   for different records (a message read again as stored
                   keeps its row)
      thread_id    the index's integer thread: records that share a
                   thread_id share it, and its threads are the components
                   of the msg-id graph (message_id, in_reply_to,
                   references), the database's rule
      from, sender / to, cc, bcc / attachments  also mail_fts' from, to and
                   attachments columns: the same words as the names,
                   addresses, group names and file names
      an error record's id  not in errors: the files row's id (signed
                   64-bit), for an mbox message the FNV-1a of the
                   archive's id, "#" and the decimal offset ("Identity")
      an error record's folder, subdir, flags, tags  not in errors: read
                   back from its path below the Maildir
                   ([.FOLDER/]SUBDIR/NAME:2,FLAGS), tags from the flags
    Not stored, counted and printed, not failed (NOT_STORED): an mbox
    error record's length, and the id of an error record whose file has
    no files row (a name that is not there).  Any other field without a
    place fails, named."""
    total = 0
    with ingest_absolute():
        for args, paths in golden_layout(tmp).items():
            db = os.path.join(tmp, "golden-%d.db" % total)
            recs = records(run(["-q", "--headers"] + list(args) + paths, pre=["env", "-C", tmp]).stdout)
            run(["-q", "--headers", "--index=" + db] + list(args) + paths, pre=["env", "-C", tmp])
            bad, unstored = round_trip(recs, db, tmp)
            if bad:
                fail(f"{len(bad)} record fields not found in the tables ({' '.join(args) or 'no arguments'}):\n" +
                     "\n".join(f"  {w}: {k}: record {json.dumps(v, ensure_ascii=False, default=repr)[:200]},"
                               f" table {json.dumps(t, ensure_ascii=False, default=repr)[:200]}"
                               for w, k, v, t in bad[:20]))
            for k, n in unstored.items():
                print(f"not stored ({n} records): {NOT_STORED[k]}")
            total += len(recs)
    print(f"{total} records of the golden corpus: every field found in the tables")


def case_root_spelling(tmp):
    """The root as spelled does not matter: `Maildir`, `./Maildir/` and its
    absolute path are one root (the resolved one, as --state keys it), so a
    re-run under another spelling adds, deletes and renames nothing."""
    src = os.path.join(tmp, "Maildir")
    shutil.copytree(sample(), src, symlinks=True)
    db = os.path.join(tmp, "mail.db")

    def index(spelling):
        p = subprocess.run([os.path.abspath(ARGS.ingest), "--index=" + db, "--stats=json", spelling], cwd=tmp,
                           capture_output=True, timeout=300)
        if p.returncode:
            fail(f"{spelling}: exit {p.returncode}: {p.stderr!r}")
        return stats(p)

    first = index("Maildir")["index"]
    before = dump(db)
    for spelling in ("./Maildir/", os.path.abspath(src), "Maildir/../Maildir"):
        s = index(spelling)
        if s["index"]["messages"] or s["index"]["deleted"] or s["index"]["renamed"] or \
                s["index"]["errors"] or s["ring_ops"]["read"] or s["syscalls"]["read"]:
            fail(f"re-run as {spelling!r} changed the index: {s['index']}")
        if differ(dump(db), before):
            fail(f"re-run as {spelling!r}: {differ(dump(db), before)} changed")
    roots = q(db, "SELECT DISTINCT root FROM messages") + q(db, "SELECT DISTINCT CAST(root AS TEXT) FROM files")
    if roots != [(os.path.realpath(src),)] * 2:
        fail(f"rows keyed by {roots}, not the resolved root")
    # changes seen under another spelling: a flag change, a deletion, a
    # rewrite; the tables then equal a clean run's
    cur = sorted(n for n in os.listdir(os.path.join(src, "cur")) if ":2," in n)
    os.rename(os.path.join(src, "cur", cur[0]), os.path.join(src, "cur", cur[0].split(":2,")[0] + ":2,FS"))
    os.unlink(os.path.join(src, "cur", cur[1]))
    with open(os.path.join(src, "cur", cur[2]), "ab") as f:
        f.write(b"\nmore text\n")
    s = index("./Maildir/")["index"]
    if (s["renamed"], s["deleted"], s["messages"]) != (1, 1, 1):
        fail(f"rename, deletion, rewrite under './Maildir/' as {s}")
    clean = os.path.join(tmp, "clean.db")
    run(["--index=" + clean, src])
    if differ(dump(db), dump(clean)):
        fail(f"after changes seen as './Maildir/': {differ(dump(db), dump(clean))} differ from a clean run")
    print(f"{first['messages']} messages indexed as 'Maildir'; three other spellings changed nothing;"
          " changes seen under a fourth equal a clean run")


def case_two_roots(tmp):
    """An index may hold several roots: a run over one of them judges only
    that root's files, so the other's rows stay (not deleted because the run
    did not walk them), and a deletion in the root walked still goes."""
    a, b = os.path.join(tmp, "A"), os.path.join(tmp, "B")
    shutil.copytree(sample(), a, symlinks=True)
    shutil.copytree(sample(), b, symlinks=True)
    db = os.path.join(tmp, "mail.db")
    run(["--index=" + db, a])
    s = stats(run(["--index=" + db, "--stats=json", b]))["index"]
    if s["deleted"]:
        fail(f"a run over B deleted {s['deleted']} of A's rows")
    per_root = dict(q(db, "SELECT root, count(*) FROM messages GROUP BY root"))
    want = count_inputs(a)
    if per_root != {os.path.realpath(a): want, os.path.realpath(b): want}:
        fail(f"rows per root {per_root}, want {want} for each of A and B")
    gone = sorted(n for n in os.listdir(os.path.join(b, "cur")) if ":2," in n)[0]
    os.unlink(os.path.join(b, "cur", gone))
    s = stats(run(["--index=" + db, "--stats=json", b]))["index"]
    per_root = dict(q(db, "SELECT root, count(*) FROM messages GROUP BY root"))
    if s["deleted"] != 1 or per_root != {os.path.realpath(a): want, os.path.realpath(b): want - 1}:
        fail(f"a deletion in B: {s}, rows per root {per_root}")
    print(f"two roots of {want} messages in one index; a run over one keeps the other's rows")


def case_nested_roots(tmp):
    """Runs over roots that nest: a Maildir++ folder indexed alone, then the
    whole Maildir, then the folder again.  A message's id hangs on its
    root, so each run reads the folder's messages under new ids; the rows
    of the earlier root are this run's to judge (their files lie under its
    PATH), and every message file is one row after each run."""
    m = os.path.join(tmp, "Maildir")
    shutil.copytree(sample(), m, symlinks=True)
    folder = os.path.join(m, ".Lists")
    db = os.path.join(tmp, "mail.db")
    # what the index holds after each run: the files under every root given so far
    for step, root, under in (("the folder", folder, folder), ("the Maildir", m, m),
                              ("the folder again", folder, m)):
        run(["--index=" + db, root])
        rows = q(db, "SELECT root, path FROM messages")
        got = sorted(os.path.relpath(os.path.join(r, p), os.path.realpath(m)) for r, p in rows)
        want = sorted(os.path.relpath(os.path.join(d, n), m) for d, _s, ns in os.walk(under)
                      if os.path.basename(d) in ("cur", "new") for n in ns)
        if got != want:
            fail(f"after {step}: {len(got)} rows for {len(want)} files; twice: "
                 f"{sorted({g for g in got if got.count(g) > 1})[:3]}")
        if q(db, "SELECT count(*) FROM files")[0][0] != len(want):
            fail(f"after {step}: files rows {q(db, 'SELECT count(*) FROM files')[0][0]}, not {len(want)}")
    print(f"a folder, its Maildir, the folder again: {len(want)} messages, each one row after each run")


def case_rewrite_in_place(tmp):
    """A message rewritten in place (same name, same size, new bytes) leaves
    its directory's mtime as it was, which is what a re-scan by directory
    mtime (notmuch's) misses: the per-file statx of a re-run sees it."""
    src = os.path.join(tmp, "Maildir")
    shutil.copytree(sample(), src, symlinks=True)
    db = os.path.join(tmp, "mail.db")
    run(["--index=" + db, src])
    cur = os.path.join(src, "cur")
    name = sorted(n for n in os.listdir(cur) if ":2," in n)[0]
    f = os.path.join(cur, name)
    data = open(f, "rb").read()
    old = q(db, "SELECT subject FROM messages WHERE path = ?", "cur/" + name)[0][0]
    if not old or not old.encode() in data:
        fail(f"{name}: no subject to rewrite ({old!r})")
    new = bytes(c ^ 0x20 if chr(c).isalpha() else c for c in old.encode())
    dir_mtime = os.stat(cur).st_mtime_ns
    time.sleep(0.05)   # past the file system's timestamp granularity
    with open(f, "r+b") as w:
        w.write(data.replace(old.encode(), new, 1))
    if os.stat(cur).st_mtime_ns != dir_mtime or os.path.getsize(f) != len(data):
        fail("the rewrite changed the directory's mtime or the size: not the case tested")
    s = stats(run(["--index=" + db, "--stats=json", src]))
    got = q(db, "SELECT subject FROM messages WHERE path = ?", "cur/" + name)[0][0]
    if s["index"]["messages"] != 1 or got != new.decode():
        fail(f"in-place rewrite: {s['index']}, subject {got!r}, want {new.decode()!r}")
    print(f"a same-size rewrite in place, directory mtime unchanged: re-read ({old!r} -> {got!r})")


def case_refused(tmp):
    """Databases that are not ours, a newer schema and bad combinations are
    refused with a message, exit 1, the file untouched and no input read."""
    db = os.path.join(tmp, "x.db")
    c = sqlite3.connect(db)
    c.execute("CREATE TABLE notes(x)")
    c.commit()
    c.close()
    junk = os.path.join(tmp, "junk.db")
    with open(junk, "wb") as f:
        f.write(b"SQLite format 2? no: plain text\n")
    newer, older = os.path.join(tmp, "newer.db"), os.path.join(tmp, "older.db")
    for path, version in ((newer, 99), (older, 1)):
        c = sqlite3.connect(path)
        c.execute("PRAGMA application_id = 1768843124")
        c.execute(f"PRAGMA user_version = {version}")
        c.execute("CREATE TABLE messages(x)")
        c.commit()
        c.close()
    for path, why in ((db, "another application"), (junk, "not an SQLite database"),
                      (newer, "newer ingest"), (older, "older ingest")):
        before = open(path, "rb").read()
        p = run(["--index=" + path, "--stats=json", sample()], check_rc=2)
        if why not in p.stderr.decode():
            fail(f"{path}: {p.stderr!r}")
        if open(path, "rb").read() != before or os.path.exists(path + "-wal"):
            fail(f"{path} was modified")
        if stats(p)["walk"]["entries"]:
            fail(f"{path}: input was read before the refusal")
    # no regular file: said so, rather than SQLite's ENOENT or EIO
    # and a link to nothing, which a first run's rename would have
    # replaced with a database of its own
    dangling = os.path.join(tmp, "link.db")
    os.symlink("nothere.db", dangling)
    for path, why in ((tmp, "a directory, not a database file"), ("/dev/null", "not a regular file"),
                      (dangling, "a symbolic link to a file that is not there")):
        p = run(["--index=" + path, "--stats=json", sample()], check_rc=2)
        if why not in p.stderr.decode() or stats(p)["walk"]["entries"]:
            fail(f"{path}: {p.stderr!r}")
    if not os.path.islink(dangling) or os.path.exists(os.path.join(tmp, "nothere.db")):
        fail("the dangling link was replaced, or its target made")
    # a link to an index is the index
    linked = os.path.join(tmp, "linked.db")
    run(["--index=" + os.path.join(tmp, "target.db"), sample()])
    os.symlink("target.db", linked)
    run(["--index=" + linked, sample()], check_rc=0)
    want = search(os.path.join(tmp, "target.db"), "carl")
    if not os.path.islink(linked) or not want or search(linked, "carl") != want:
        fail("an index named through a link")
    good = os.path.join(tmp, "good.db")
    for extra in (["--state=" + os.path.join(tmp, "st")], ["-o", os.path.join(tmp, "o")],
                  ["--format=tsv"], ["--fields=path"], ["--io-only"]):
        p = run(["--index=" + good] + extra + [sample()], check_rc=2)
        if b"--index cannot be combined" not in p.stderr or os.path.exists(good):
            fail(f"{extra}: {p.stderr!r}")
    print("refused: a foreign table, not SQLite, a newer and an older schema, a directory,"
          " /dev/null, a link to nothing, five combinations")


def unprivileged_prefix(why):
    """test_cli.py's: nothing when not root, setpriv to nobody when root."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import test_cli
    return test_cli.unprivileged_prefix(why)


def case_read_only(tmp):
    """A database file the user may not write, and one in a directory the
    user may not write (WAL needs its -wal and -shm files there): refused
    before any input is read, the file untouched; searched all the same."""
    pre = unprivileged_prefix("root writes a read-only file anyway")
    os.chmod(tmp, 0o755)
    d = os.path.join(tmp, "ro")
    os.mkdir(d)
    db = os.path.join(d, "mail.db")
    run(["--index=" + db, sample()])
    os.chmod(db, 0o444)
    os.chmod(d, 0o777)
    before = open(db, "rb").read()
    # refused, exit 2 (README "The index"), as a state file the user cannot write
    p = run(["--index=" + db, "--stats=json", sample()], check_rc=2, pre=pre)
    if b"not writable" not in p.stderr or stats(p)["walk"]["entries"]:
        fail(f"read-only file: {p.stderr!r}")
    os.chmod(db, 0o666)
    os.chmod(d, 0o555)
    p = run(["--index=" + db, "--stats=json", sample()], check_rc=2, pre=pre)
    if stats(p)["walk"]["entries"]:
        fail(f"read-only directory: input read before the refusal: {p.stderr!r}")
    if b"directory is not writable" not in p.stderr:
        fail(f"read-only directory: the message does not say so: {p.stderr!r}")
    # searched all the same: no writer at work, read as immutable
    got = run(["search", db, "notmuch", "--format=tsv"], pre=pre).stdout
    left = sorted(os.listdir(d))
    want = run(["search", db, "notmuch", "--format=tsv"]).stdout
    if not want or got != want or left != ["mail.db"]:
        fail(f"read-only directory: searched {got[:200]!r}, want {want[:200]!r}; left {left}")
    os.chmod(d, 0o755)
    if open(db, "rb").read() != before:
        fail("the refused database changed")
    print("read-only file and directory refused before reading")


def case_long_paths(tmp):
    """A path of thousands of bytes (PATH_MAX allows 4,096): each refusal
    tells its reason whole, after the path.  SQLite opens no database whose
    absolute path is longer than its VFS takes (512 bytes): said as such,
    not as "unable to open database file: No such file or directory"; a
    state at a FIFO there keeps "is not a regular file" (a message's fixed
    buffer once cut the reason off such a path)."""
    deep = os.path.join(tmp, *(["d" * 200] * 14))
    os.makedirs(deep)
    db = os.path.join(deep, "mail.db")
    p = run(["--index=" + db, "--stats=json", sample()], check_rc=2)
    err = p.stderr.decode(errors="replace")
    # a first run opens FILE.new; the limit is SQLite's (511 in its unix VFS)
    m = re.search(r"\ningest: (.*): cannot open the database: its absolute path has (\d+) bytes as built"
                  r" \(FILE\.new\), SQLite takes (\d+) at most: File name too long\n$", "\n" + err)
    if not m or m.group(1) != db or int(m.group(2)) != len(db + ".new") or \
            not 0 < int(m.group(3)) < len(db) or stats(p)["walk"]["entries"]:
        fail(f"index at a long path: {err[-300:]!r}")
    if sorted(os.listdir(deep)):
        fail(f"index at a long path left {sorted(os.listdir(deep))}")
    short = os.path.join(tmp, "mail.db")
    run(["--index=" + short, sample()])
    shutil.copy(short, db)
    p = run(["search", db, "notmuch"], check_rc=1)
    want = f"ingest: search in '{db}': its absolute path has {len(db)} bytes, SQLite takes {m.group(3)} at most\n"
    if p.stderr.decode(errors="replace") != want:
        fail(f"search at a long path: {p.stderr[-300:]!r}")
    os.unlink(db)
    os.mkfifo(db)
    p = run(["--state=" + db, "-o", os.devnull, sample()], check_rc=2)
    if p.stderr.decode(errors="replace") != f"ingest: state '{db}' is not a regular file\n":
        fail(f"state at a long path: {p.stderr[-300:]!r}")
    print(f"a {len(db)}-byte path: index, search and state refused with their reasons whole")


def case_settings(tmp):
    """The index keeps what decides its rows (--no-text, --max-text,
    --headers), as a state file does: a run with others is refused before
    it reads, exit 2, the database untouched; the same settings go on.  A
    full run after a --no-text one used to leave every message it did not
    read again without its text, unsearchable."""
    db = os.path.join(tmp, "nt.db")
    run(["--index=" + db, "--no-text", sample()])
    before = dump(db)
    for extra, what in (([], "no-text=1, this run has no-text=0"),
                        (["--no-text", "--max-text=1K"], "max-text=1048576, this run has max-text=1024"),
                        (["--no-text", "--headers"], "headers=0, this run has headers=1")):
        p = run(["--index=" + db, "--stats=json"] + extra + [sample()], check_rc=2)
        if what not in p.stderr.decode() or stats(p)["walk"]["entries"]:
            fail(f"{extra}: not refused before reading: {p.stderr!r}")
        if dump(db) != before:
            fail(f"{extra}: the refused database changed")
    run(["--index=" + db, "--no-text", sample()])
    # an index made before settings were kept: its next run's are taken
    # (nothing says what the older runs had), and kept from then on
    c = sqlite3.connect(db)
    c.execute("DROP TABLE settings")
    c.commit()
    c.close()
    run(["--index=" + db, "--headers", "--no-text", sample()])
    p = run(["--index=" + db, "--no-text", sample()], check_rc=2)
    if b"headers=1, this run has headers=0" not in p.stderr:
        fail(f"an older index did not keep its first run's settings: {p.stderr!r}")
    print("settings kept: other no-text, max-text and headers refused, the same taken;"
          " an older index takes its next run's")


def incremental_scenario(tmp, backend):
    """Add, delete, flag change, new/ → cur/, move between folders, copy,
    changed file, mbox append: after each step the tables equal those of a
    clean run over the same tree."""
    d = os.path.join(tmp, "md")
    db = os.path.join(tmp, "inc.db")
    mkcorpus(d, "--seed", "14", "--layout", "maildir", "--count", "200")
    os.makedirs(os.path.join(d, ".Archive", "cur"))
    os.makedirs(os.path.join(d, ".Archive", "new"))
    os.makedirs(os.path.join(d, ".Archive", "tmp"))
    mbox = os.path.join(tmp, "list.mbox")
    with open(mbox, "wb") as f:
        f.write(b"From a@b.example Mon Jan  2 10:00:00 2023\nMessage-ID: <m1@x>\nSubject: one\n\nbody one\n\n"
                b"From a@b.example Mon Jan  2 11:00:00 2023\nMessage-ID: <m2@x>\nIn-Reply-To: <m1@x>\n"
                b"Subject: two\n\nbody two\n")

    def check(step):
        p = run([backend, "--index=" + db, "--stats=json", d, mbox])
        clean = os.path.join(tmp, f"clean-{step}.db")
        run([backend, "--index=" + clean, d, mbox])
        a, b = dump(db), dump(clean)
        bad = differ(a, b)
        if bad:
            k = bad[0]
            extra = [x for x in a[k] if x not in b[k]][:3]
            missing = [x for x in b[k] if x not in a[k]][:3]
            fail(f"{backend} {step}: {bad} differ from a clean run; extra {extra}, missing {missing}")
        os.unlink(clean)
        return stats(p)

    check("first")
    s = check("unchanged")
    if s["index"]["messages"] or s["ring_ops"]["read"] or s["syscalls"]["read"]:
        fail(f"{backend}: unchanged re-run read or wrote {s['index']}")
    cur = sorted(os.listdir(os.path.join(d, "cur")))
    new = sorted(os.listdir(os.path.join(d, "new")))
    base, flags = cur[0].split(":2,")
    os.rename(os.path.join(d, "cur", cur[0]), os.path.join(d, "cur", base + ":2,FRS"))
    os.rename(os.path.join(d, "new", new[0]), os.path.join(d, "cur", new[0] + ":2,S"))
    s = check("flags")
    if s["index"]["renamed"] != 2 or s["index"]["messages"]:
        fail(f"{backend}: two renames as {s['index']}")
    if q(db, "SELECT tags FROM messages WHERE path = ?", "cur/" + base + ":2,FRS") != \
            [('["flagged","replied","seen"]',)]:
        fail(f"{backend}: tags after the flag change")
    os.unlink(os.path.join(d, "cur", cur[1]))
    s = check("delete")
    if s["index"]["deleted"] != 1:
        fail(f"{backend}: deletion as {s['index']}")
    os.rename(os.path.join(d, "cur", cur[2]), os.path.join(d, ".Archive", "cur", cur[2]))
    shutil.copy(os.path.join(d, "cur", cur[3]), os.path.join(d, "cur", "1999999999.copy.host:2,S"))
    with open(os.path.join(d, "cur", cur[4]), "ab") as f:
        f.write(b"\nmore text\n")
    with open(os.path.join(d, "new", "1.added.host"), "wb") as f:
        f.write(b"From: a@b.example\nMessage-ID: <added@x>\nSubject: added\n\nhi\n")
    with open(mbox, "ab") as f:
        f.write(b"\nFrom a@b.example Mon Jan  2 12:00:00 2023\nMessage-ID: <m3@x>\nReferences: <m1@x>\n"
                b"Subject: three\n\nbody three\n")
    s = check("changes")
    # the move to another folder is a rename (its id is folder-free); the
    # copy, the changed file, the added one and the mbox's new one are
    # rows, its first two are kept as they were
    if s["index"]["messages"] != 1 + 1 + 1 + 1 or s["index"]["unchanged"] != 2 or \
            s["index"]["renamed"] != 1 or s["index"]["deleted"]:
        fail(f"{backend}: move, copy, change, add, mbox append as {s['index']}")
    t = q(db, "SELECT count(DISTINCT thread_id) FROM messages WHERE message_id IN ('m1@x', 'm2@x', 'm3@x')")
    if t != [(1,)]:
        fail(f"{backend}: the mbox thread split: {t}")
    # rewritten (a filter adding a header), then moved to another folder:
    # read again, its row and its file's row under the new name only
    rw = cur[5]
    rw_path = os.path.join(d, "cur", rw)
    st = os.stat(rw_path)
    with open(rw_path, "wb") as f:
        f.write(b"From: a@b.example\nMessage-ID: <rewritten@x>\nSubject: rewritten\n\nhi\n")
    os.utime(rw_path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    os.rename(rw_path, os.path.join(d, ".Archive", "cur", rw.split(":2,")[0] + ":2,S"))
    s = check("rewritten and moved")
    if s["index"]["messages"] != 1 or s["index"]["renamed"] or s["index"]["deleted"]:
        fail(f"{backend}: a message rewritten and moved as {s['index']}")


def case_incremental(tmp):
    for backend in ("uring", "sync"):
        sub = os.path.join(tmp, backend)
        os.mkdir(sub)
        incremental_scenario(sub, "--backend=" + backend)
    print("incremental scenarios equal clean runs on both backends")


@contextlib.contextmanager
def ingest_absolute():
    """The binary by its absolute path, for runs from other directories
    (pre=["env", "-C", DIR])."""
    saved = clilib.ARGS.ingest
    clilib.ARGS.ingest = os.path.abspath(saved)
    try:
        yield
    finally:
        clilib.ARGS.ingest = saved


def equal_to_clean(db, tmp, name, args, what, run_notes=True, pre=()):
    """A clean run with args (after the command prefix pre) into a database
    of its own, compared with db: every table equal, but threads, which db
    may have coarser (deleting a message does not split its thread,
    README).  Fails naming what."""
    clean = os.path.join(tmp, name)
    run(["--index=" + clean] + list(args), pre=pre)
    a, b = dump(db, run_notes), dump(clean, run_notes)
    bad = [k for k in differ(a, b) if k != "threads"]
    where = {m: i for i, t in enumerate(a["threads"]) for m in t}
    if any(len({where.get(m) for m in t}) != 1 for t in b["threads"]):
        bad.append("threads")
    if bad:
        k = bad[0]
        fail(f"{what}: {bad} differ from a clean run; "
             f"extra {[x for x in a[k] if x not in b[k]][:3]}, missing {[x for x in b[k] if x not in a[k]][:3]}")
    for x in (clean, clean + "-wal", clean + "-shm"):
        if os.path.exists(x):
            os.unlink(x)


def runs_equal_clean(db, tmp, args, what, steps=("the run after the change", "the run after it")):
    """Runs into db with args, one a step, each compared with a clean
    run's (equal_to_clean)."""
    for step in steps:
        run(["--index=" + db] + list(args))
        equal_to_clean(db, tmp, "clean.db", args, f"{what}: {step}")


def relinked_runs_equal_clean(db, tmp, args, at, target, what):
    """A first run with args, then at made a symbolic link to target, then
    runs_equal_clean."""
    run(["--index=" + db] + list(args))
    os.unlink(at)
    os.symlink(target, at)
    runs_equal_clean(db, tmp, args, what)


def maildir_scenarios(tmp, *variants):
    """(backend, one value of each variant, d, m) for both backends and
    every combination of the variants: d a fresh directory under tmp, m
    the Maildir in it (clilib.fifo_id_maildir)."""
    n = 0
    for backend in ("--backend=uring", "--backend=sync"):
        for values in itertools.product(*variants):
            n += 1
            d = os.path.join(tmp, str(n))
            yield (backend, *values, d, clilib.fifo_id_maildir(d))


def random_seed():
    """INDEX_RANDOM_SEED replays a failed run's changes, else a new seed
    each run, printed."""
    seed = int(os.environ.get("INDEX_RANDOM_SEED") or int.from_bytes(os.urandom(4), "little"))
    print(f"changes seeded with INDEX_RANDOM_SEED={seed}")
    return seed


class RandomMail:
    """A Maildir with two folders and an mbox, changed at random the ways
    mail software changes them: new messages, deletions, flag changes,
    new/ to cur/, moves between folders, copies, messages rewritten in
    place or rewritten and renamed at once, mbox appends and rewrites.
    Message-IDs come from a small pool, so copies, duplicates and replies
    that link and merge threads are common."""

    FOLDERS = ("", ".A", ".B")
    FROM = "From x@y.example Mon Jan  2 10:00:00 2023\n"

    def __init__(self, tmp, rng):
        self.rng, self.n = rng, 0
        self.root, self.mbox = os.path.join(tmp, "md"), os.path.join(tmp, "a.mbox")
        for f in self.FOLDERS:
            for sub in ("cur", "new", "tmp"):
                os.makedirs(os.path.join(self.root, f, sub))
        open(self.mbox, "wb").close()
        self.ids = [f"<m{i}@x>" for i in range(40)]

    def message(self):
        r, self.n = self.rng, self.n + 1
        h = [f"From: P{r.randrange(5)} <p{r.randrange(5)}@ex.org>", f"Subject: s{self.n} w{r.randrange(9)}"]
        if r.random() < 0.9:
            h.append("Message-ID: " + r.choice(self.ids))
        if r.random() < 0.5:
            h.append("In-Reply-To: " + r.choice(self.ids))
        if r.random() < 0.4:
            h.append("References: " + " ".join(r.sample(self.ids, r.randrange(1, 4))))
        return ("\n".join(h) + f"\n\nbody {self.n} word{r.randrange(20)}\n").encode()

    def unique(self):
        self.n += 1
        return f"{1700000000 + self.n}.M{self.n}P1.host"

    def files(self):
        out = []
        for f in self.FOLDERS:
            for sub in ("cur", "new"):
                d = os.path.join(self.root, f, sub)
                out += [os.path.join(d, x) for x in sorted(os.listdir(d))]
        return out

    def rewrite(self, path, data):
        st = os.stat(path)
        with open(path, "wb") as f:
            f.write(data)
        # a later mtime whatever the file system's clock granularity
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))

    def change(self):
        r, files = self.rng, self.files()
        k = r.randrange(10)
        if k <= 1 or not files:
            d = os.path.join(self.root, r.choice(self.FOLDERS), r.choice(("cur", "new")))
            name = self.unique() + (":2," + r.choice(("", "S", "RS")) if d.endswith("cur") else "")
            with open(os.path.join(d, name), "wb") as f:
                f.write(self.message())
            return "add"
        path = r.choice(files)
        base = os.path.basename(path).split(":2,")[0]
        d = os.path.dirname(path)
        if k == 2:
            os.unlink(path)
            return "delete"
        if k == 3 and d.endswith("cur"):
            os.rename(path, os.path.join(d, base + ":2," + r.choice(("", "S", "FS", "RS", "T"))))
            return "flags"
        if k == 3:
            os.rename(path, os.path.join(os.path.dirname(d), "cur", base + ":2,S"))
            return "new to cur"
        if k == 4:
            os.rename(path, os.path.join(self.root, r.choice(self.FOLDERS), "cur", base + ":2,S"))
            return "move"
        if k == 5:
            shutil.copy(path, os.path.join(self.root, r.choice(self.FOLDERS), "cur", self.unique() + ":2,S"))
            return "copy"
        if k == 6:
            self.rewrite(path, self.message())
            return "rewrite"
        if k == 7:
            self.rewrite(path, self.message())
            os.rename(path, os.path.join(self.root, r.choice(self.FOLDERS), "cur", base + ":2,RS"))
            return "rewrite and move"
        if k == 8:
            with open(self.mbox, "ab") as f:
                f.write(self.FROM.encode() + self.message() + b"\n")
            return "mbox append"
        with open(self.mbox, "rb") as f:
            parts = f.read().split(self.FROM.encode())
        self.rewrite(self.mbox, b"".join(self.FROM.encode() + x for x in parts[2:]))
        return "mbox without its first message"


def random_changes(tmp, steps, options=()):
    """Random changes, a few at a time, each followed by a run on either
    backend into one database: after every run the tables equal a clean
    run's over the same tree, except that a clean run's threads may be
    finer (deleting a message does not split its thread, README)."""
    seed = random_seed()
    rng = random.Random(seed)
    mail = RandomMail(tmp, rng)
    db = os.path.join(tmp, "inc.db")
    options = list(options)
    for step in range(steps):
        done = [mail.change() for _ in range(rng.randrange(1, 4))]
        run([rng.choice(("--backend=uring", "--backend=sync")), "--index=" + db] + options + [mail.root, mail.mbox])
        equal_to_clean(db, tmp, f"clean-{step}.db", options + [mail.root, mail.mbox],
                       f"step {step} ({', '.join(done)})")
    print(f"{steps} steps of random changes equal clean runs (files at the end: {len(mail.files())})")


def case_incremental_random(tmp):
    random_changes(tmp, 40)


def case_incremental_random_streamed(tmp):
    """The same with the mbox streamed in chunks (past --max-size an mbox
    is split as it is read, README, "mbox archives"), its messages over
    several batches and transactions."""
    random_changes(tmp, 25, ["--max-size=400"])


def case_streamed_mbox(tmp):
    """An mbox streamed in chunks: a re-run with nothing changed reads
    none of it; appended to, it is read again and only the new message
    written; rewritten without its first message and appended to, its
    old messages go (on both backends; the sync backend once kept them
    beside the new ones)."""
    F = b"From x@y.example Mon Jan  2 10:00:00 2023\n"

    def message(i):
        return F + (f"From: a@b.example\nSubject: s{i}\nMessage-ID: <m{i}@x>\n\nbody {i} " + "x" * (i * 7 % 50)
                    + "\n\n").encode()

    for backend in ("--backend=uring", "--backend=sync"):
        sub = os.path.join(tmp, backend[2:])
        os.mkdir(sub)
        box, db = os.path.join(sub, "a.mbox"), os.path.join(sub, "a.db")
        with open(box, "wb") as f:
            f.write(b"".join(message(i) for i in range(4)))

        def check(step):
            p = run([backend, "--index=" + db, "--max-size=400", "--stats=json", box])
            clean = os.path.join(sub, f"clean-{step}.db")
            run(["--index=" + clean, "--max-size=400", box])
            a, b = dump(db), dump(clean)
            if differ(a, b):
                fail(f"{backend} {step}: {differ(a, b)} differ from a clean run: {a['messages']} {b['messages']}")
            return stats(p)

        if check("first")["index"]["messages"] != 4:
            fail(f"{backend}: four messages expected in the first run")
        s = check("unchanged")
        if s["bytes"] or s["index"]["messages"]:
            fail(f"{backend}: unchanged re-run read {s['bytes']} bytes, wrote {s['index']}")
        # appended to: the archive is read again, its four messages kept
        # as they were, the new one written
        with open(box, "ab") as f:
            f.write(message(4))
        s = check("appended")
        if (s["index"]["messages"], s["index"]["unchanged"], s["index"]["deleted"]) != (1, 4, 0):
            fail(f"{backend}: the append wrote {s['index']}")
        st = os.stat(box)
        with open(box, "wb") as f:
            f.write(b"".join(message(i) for i in (1, 2, 3, 10, 11)))
        os.utime(box, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        check("rewritten")
        os.unlink(box)
        check("deleted")
        if q(db, "SELECT count(*) FROM messages") != [(0,)]:
            fail(f"{backend}: the deleted archive's messages stayed")
    print("a streamed mbox: unchanged re-runs read nothing, an append writes its new message, a rewrite"
          " replaces its messages")


def case_migrates_version_2(tmp):
    """An index of schema_version 2 (before record_hash and
    messages_archive): `ingest search` asks for a run on it; the next run
    migrates it in place, and replaces the messages it reads again (its
    rows have no hash to keep them by); the run after that keeps them."""
    F = b"From x@y.example Mon Jan  2 10:00:00 2023\n"

    def message(i):
        return F + f"From: a@b.example\nSubject: s{i}\nMessage-ID: <m{i}@x>\n\nbody {i}\n\n".encode()

    box, db = os.path.join(tmp, "a.mbox"), os.path.join(tmp, "a.db")
    with open(box, "wb") as f:
        f.write(b"".join(message(i) for i in range(3)))
    run(["--index=" + db, box])
    c = sqlite3.connect(db)
    c.executescript("DROP INDEX messages_archive; ALTER TABLE messages DROP COLUMN record_hash;"
                    " PRAGMA user_version = 2")
    c.close()
    p = run(["search", db, "body"], check_rc=1)
    if b"older ingest" not in p.stderr:
        fail(f"search on version 2: {p.stderr!r}")
    for step, want in (("migrated", (1 + 3, 0)), ("kept", (1, 4))):
        with open(box, "ab") as f:
            f.write(message(3 if step == "migrated" else 4))
        s = stats(run(["--index=" + db, "--stats=json", box]))
        if (s["index"]["messages"], s["index"]["unchanged"]) != want:
            fail(f"{step}: wrote {s['index']}, want (messages, unchanged) {want}")
        if q(db, "PRAGMA user_version") != [(3,)]:
            fail(f"{step}: schema_version {q(db, 'PRAGMA user_version')}")
        equal_to_clean(db, tmp, f"clean-{step}.db", [box], step)
    if len(run(["search", db, "body", "--format=tsv"]).stdout.splitlines()) != 5:
        fail("search after the migration")
    print("an index of schema_version 2: migrated by a run, its messages replaced once, then kept")


def case_mbox_message_becomes_error(tmp):
    """An archive read again where the last run stored a message and the
    same offset holds an error now (text that is no mail, read whole; a
    message grown over --max-size, streamed): the error row replaces the
    message's row, as in a clean run (the archive's other messages are
    kept by id, so nothing else removes it)."""
    F = b"From x@y.example Mon Jan  2 10:00:00 2023\n"

    def message(i, body=100):
        return F + f"From: a@b.example\nSubject: s{i}\nMessage-ID: <m{i}@x>\n\n".encode() + b"x" * body + b"\n\n"

    for backend in ("--backend=uring", "--backend=sync"):
        for how, args, last in (("whole", [], F + b"just some words, no header\n\n"),
                                ("streamed", ["--max-size=400"], message(2, 500))):
            sub = os.path.join(tmp, backend[2:] + "-" + how)
            os.mkdir(sub)
            box, db = os.path.join(sub, "a.mbox"), os.path.join(sub, "a.db")
            with open(box, "wb") as f:
                f.write(message(0) + message(1) + message(2))
            run([backend, "--index=" + db] + args + [box])
            st = os.stat(box)
            with open(box, "wb") as f:
                f.write(message(0) + message(1) + last)
            os.utime(box, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
            s = stats(run([backend, "--index=" + db, "--stats=json"] + args + [box]))
            if (s["index"]["unchanged"], s["index"]["errors"]) != (2, 1):
                fail(f"{backend} {how}: {s['index']}")
            equal_to_clean(db, sub, "clean.db", args + [box], f"{backend} {how}")
            if q(db, "SELECT count(*) FROM messages") != [(2,)]:
                fail(f"{backend} {how}: {q(db, 'SELECT count(*) FROM messages')} messages, 2 expected")
    print("an archive's message that is an error now: its row goes, whole or streamed")


def case_streamed_mbox_too_large_last(tmp):
    """An archive whose last message is over --max-size: its too-large
    record carries where the archive's reading stops, so a re-run with
    nothing changed reads none of it (the stored size was 0, and every run
    read the whole archive again)."""
    F = b"From x@y.example Mon Jan  2 10:00:00 2023\n"
    box, db = os.path.join(tmp, "a.mbox"), os.path.join(tmp, "a.db")
    with open(box, "wb") as f:
        for i, n in enumerate((100, 300_000, 100, 300_000)):
            f.write(F + f"From: a@b.example\nSubject: s{i}\n\n".encode() + b"x" * n + b"\n\n")
    for backend in ("--backend=uring", "--backend=sync"):
        for f in glob.glob(db + "*"):
            os.unlink(f)
        for step in ("first", "unchanged"):
            p = run([backend, "--index=" + db, "--max-size=100K", "--batch-bytes=64K", "--stats=json",
                     box])
            s = stats(p)
            if step == "unchanged" and (s["bytes"] or s["index"]["messages"]):
                fail(f"{backend}: unchanged re-run read {s['bytes']} bytes, wrote {s['index']}")
        if q(db, "SELECT size FROM files") != [(os.path.getsize(box),)]:
            fail(f"{backend}: the archive's row {q(db, 'SELECT size FROM files')}")
        if q(db, "SELECT count(*) FROM messages") != [(2,)] or q(db, "SELECT count(*) FROM errors") != [(2,)]:
            fail(f"{backend}: two messages and two too-large errors expected")
    print("an archive ending in a too-large message: an unchanged re-run reads none of it")


def case_changes_during_runs(tmp):
    """A mail client at work while the index is written: a thread renames
    (flags, folders), deletes, copies and rewrites messages of a 2,000-
    message Maildir for the whole of a run, on either backend; a quiet run
    follows, after which every table equals a clean run's (threads may be
    coarser).  Five rounds on one database; INDEX_CHURN_SEED replays the
    choices (the timing is the machine's)."""
    seed = int(os.environ.get("INDEX_CHURN_SEED") or int.from_bytes(os.urandom(4), "little"))
    print(f"changes seeded with INDEX_CHURN_SEED={seed}")
    rng = random.Random(seed)
    d = os.path.join(tmp, "md")
    db = os.path.join(tmp, "churn.db")
    mkcorpus(d, "--seed", "17", "--layout", "maildir", "--count", "2000", "--folders", "2")
    dirs = [top for top, _, _ in os.walk(d) if os.path.basename(top) in ("cur", "new")]
    made = [0]

    def copy_name():
        made[0] += 1
        return f"{1800000000 + made[0]}.C{made[0]}.host"

    def rewrite(data):
        return data.replace(b"Subject:", b"Subject: [x]", 1)

    for rnd in range(5):
        backend = rng.choice(("--backend=uring", "--backend=sync"))
        with Churn(dirs, random.Random(rng.getrandbits(32)), copy_name, rewrite):
            run([backend, "--index=" + db, d])
        run([backend, "--index=" + db, d])
        equal_to_clean(db, tmp, f"clean-{rnd}.db", [d], f"round {rnd} ({backend}), after a quiet run",
                       run_notes=False)
    print("five runs during a client's changes, each followed by a quiet run: equal to clean runs")


def case_streamed_message_renamed(tmp):
    """A Maildir message too large to hold (streamed: past an eighth of
    --max-inflight) renamed and changed at once: read again under its new
    name, the old name's files row gone, and the next run reads nothing."""
    for backend in ("--backend=uring", "--backend=sync"):
        d = os.path.join(tmp, backend[2:], "md")
        for sub in ("cur", "new", "tmp"):
            os.makedirs(os.path.join(d, sub))
        big = os.path.join(d, "cur", "1500000000.big.host:2,")
        with open(big, "wb") as f:
            f.write(b"From: a@b.example\nSubject: big\n\n" + b"x" * 100 + b"\n" * 20000)
            f.write((b"y" * 99 + b"\n") * 20000)
        with open(os.path.join(d, "cur", "1500000001.small.host:2,S"), "wb") as f:
            f.write(b"From: a@b.example\nSubject: small\n\nhi\n")
        db = os.path.join(tmp, backend[2:], "s.db")
        opts = [backend, "--index=" + db, "--max-inflight=8M"]
        run(opts + [d])
        st = os.stat(big)
        with open(big, "ab") as f:
            f.write(b"one more line\n")
        os.utime(big, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
        os.rename(big, big + "S")
        run(opts + [d])
        equal_to_clean(db, os.path.join(tmp, backend[2:]), "clean.db", ["--max-inflight=8M", d],
                       f"{backend}: the large message renamed and changed")
        s = stats(run(opts + ["--stats=json", d]))
        if s["index"]["messages"] or s["bytes"]:
            fail(f"{backend}: the run after it read {s['bytes']} bytes, wrote {s['index']}")
    print("a streamed message renamed and changed: read again, its old name gone, then left alone")


def case_vanished_errors(tmp):
    """A file that vanished while a run read it leaves an io-error ENOENT
    row; no later run meets its path again, so the next complete run that
    judges its place drops the row when the path names nothing.  Rows for
    paths that name something the walk does not read (a file in tmp/), or
    under a root the run was not given, stay; a path the run meets has its
    row replaced by what it found."""
    d = os.path.join(tmp, "md")
    other = os.path.join(tmp, "other")
    db = os.path.join(tmp, "v.db")
    mkcorpus(d, "--seed", "15", "--layout", "maildir", "--count", "20")
    os.makedirs(other)
    os.symlink("nowhere", os.path.join(d, "cur", "dangling"))
    with open(os.path.join(d, "tmp", "1500000002.kept.host"), "wb") as f:
        f.write(b"Subject: being delivered\n\n")
    run(["--index=" + db, d])
    root = os.path.realpath(d)
    rows = [(root, "cur/1500000000.gone.host:2,S"), (root, "tmp/1500000002.kept.host"),
            (os.path.realpath(other), "cur/1500000001.gone.host"), (root, "cur/dangling")]
    c = sqlite3.connect(db)
    c.execute("DELETE FROM errors")
    c.executemany("INSERT INTO errors(root, path, reason, errno, message) VALUES (?, ?, 'io-error',"
                  " 'ENOENT', 'No such file or directory')", rows)
    c.commit()
    c.close()
    run(["--index=" + db, d])
    left = sorted(q(db, "SELECT root, path FROM errors WHERE errno = 'ENOENT'"))
    if left != sorted(rows[1:3]):
        fail(f"after a run over the root: {left}, want {sorted(rows[1:3])}")
    link = q(db, "SELECT reason FROM errors WHERE path = 'cur/dangling'")
    if link != [("symlink",)]:
        fail(f"the dangling link's row: {link}")
    # a message renamed into a name that holds such a row (it vanished
    # there earlier, then came back): the row is stale, the message is there
    cur = os.path.join(d, "cur")
    name = sorted(x for x in os.listdir(cur) if ":2," in x)[0]
    base = name.split(":2,")[0]
    os.rename(os.path.join(cur, name), os.path.join(cur, base + ":2,RT"))
    run(["--index=" + db, d])
    c = sqlite3.connect(db)
    c.execute("INSERT INTO errors(root, path, reason, errno, message) VALUES (?, ?, 'io-error',"
              " 'ENOENT', 'No such file or directory')", (root, "cur/" + name))
    c.commit()
    c.close()
    os.rename(os.path.join(cur, base + ":2,RT"), os.path.join(cur, name))
    run(["--index=" + db, d])
    if q(db, "SELECT count(*) FROM errors WHERE path = ?", "cur/" + name) != [(0,)]:
        fail("the error row of a name a message was renamed into stayed")
    # a file a list names that does not exist is reported by every run that
    # names it: its row is that run's own, and stays
    lst = os.path.join(tmp, "list")
    with open(lst, "w") as f:
        f.write(os.path.join(d, "cur", "1500000003.listed.host:2,S") + "\n")
    for _ in range(2):
        run(["--index=" + db, "--files-from=" + lst])
        listed = q(db, "SELECT count(*) FROM errors WHERE path LIKE '%1500000003.listed.host%'")
        if listed != [(1,)]:
            fail(f"a listed file that does not exist: {listed} rows")
    print("a vanished file's row dropped; rows of a path that is there, of another root and of a"
          " listed missing file kept")


def case_named_file_deleted(tmp):
    """Files named on the command line or in a --files-from list, deleted
    since the last run: the run's io-error rows stand and their messages go
    (an archive's all), so the tables equal a clean run's over the same
    arguments, on both backends."""
    md = os.path.join(tmp, "md")
    mkcorpus(md, "--seed", "16", "--layout", "maildir", "--count", "4")
    mkcorpus(os.path.join(tmp, "mb"), "--seed", "17", "--layout", "mbox", "--count", "3")
    box = os.path.join(tmp, "mb", "archive.mbox")
    cur = os.path.join(md, "cur")
    maildir_msg = os.path.join(cur, sorted(os.listdir(cur))[0])
    loose, listed = os.path.join(tmp, "loose.eml"), os.path.join(tmp, "listed.eml")
    for p in (loose, listed):
        shutil.copyfile(maildir_msg, p)
    lst = os.path.join(tmp, "list")
    with open(lst, "w") as f:
        f.write(listed + "\n")
    for backend in ("sync", "uring"):
        db = os.path.join(tmp, backend + ".db")
        args = ["--backend=" + backend, "--files-from=" + lst, loose, box, maildir_msg]
        run(["--index=" + db] + args)
        saved = {p: open(p, "rb").read() for p in (loose, listed, box, maildir_msg)}
        for p in saved:
            os.unlink(p)
        for step in ("the run after the deletion", "the run after it"):
            run(["--index=" + db] + args)
            equal_to_clean(db, tmp, "clean.db", args, f"{backend}: {step}", run_notes=False)
        if q(db, "SELECT count(*) FROM messages") != [(0,)] or \
                q(db, "SELECT count(*) FROM errors") != [(4,)]:
            fail(f"{backend}: {q(db, 'SELECT count(*) FROM messages')} messages, "
                 f"{q(db, 'SELECT path FROM errors')} error rows; want none and four")
        for p, data in saved.items():
            with open(p, "wb") as f:
                f.write(data)
    print("files named and deleted: their error rows stand, their messages go, as in a clean run")


def case_named_symlink_removed(tmp):
    """Both backends: a symbolic link named beside a walk of the Maildir that
    holds the message it names (before the walk or after it, in the same
    directory, in another subdirectory or folder, outside the Maildir),
    then removed, then the message too, then both back; each run's tables
    equal a clean run's.  A named link's record has the id of the message
    it names, and the walk leaves that message to it; the link gone, its
    error record has its own name's id, and the message is the walk's
    again.  The error record once cleared the message's rows at the
    link's place before the walk's rename could move them, which lost the
    message, and the message gone too, the deletion of its old entry took
    the link's error row.  The same for a file in the walked tree that is
    no Maildir message (a loose .eml, an archive)."""
    n = 0
    links = ("M/cur/link", "M/new/link:2,S", "M/.F/cur/other:2,S", "link.eml")
    for backend in ("--backend=uring", "--backend=sync"):
        for link in links:
            for link_first in (True, False):
                n += 1
                d = os.path.join(tmp, str(n))
                m = clilib.fifo_id_maildir(d)
                msg, at = os.path.join(m, "cur", "1.host:2,S"), os.path.join(d, link)
                clilib.put_one_message(msg)
                os.symlink(os.path.relpath(msg, os.path.dirname(at)), at)
                db = os.path.join(d, "a.db")
                args = [backend] + ([at, m] if link_first else [m, at])
                what = f"{backend} {link}, {'named first' if link_first else 'walked first'}"
                run(["--index=" + db] + args)
                run(["--index=" + db] + args)
                steps = (("the link removed", lambda: os.unlink(at), 1, 1),
                         ("the message removed too", lambda: os.unlink(msg), 0, 1),
                         ("both back", lambda: (clilib.put_one_message(msg),
                                                os.symlink(os.path.relpath(msg, os.path.dirname(at)), at)),
                          1, None))
                for step, change, messages, errors in steps:
                    change()
                    run(["--index=" + db] + args)
                    equal_to_clean(db, d, "clean.db", args, f"{what}: {step}")
                    if q(db, "SELECT count(*) FROM messages") != [(messages,)] or (
                            errors is not None and q(db, "SELECT count(*) FROM errors") != [(errors,)]):
                        fail(f"{what}: {step}: {q(db, 'SELECT path FROM messages')} messages, "
                             f"{q(db, 'SELECT path, reason FROM errors')} error rows")
        # the walked file no Maildir message (its id its path's): the
        # walk, meeting it before the named link's error record, judged it
        # unchanged under another spelling and left its rows at the link's
        # place, which the error record then cleared: lost for a run
        for target in ("M/x.eml", "M/a.mbox"):
            n += 1
            d = os.path.join(tmp, str(n))
            m = clilib.fifo_id_maildir(d)
            msg, at = os.path.join(d, target), os.path.join(d, "link.eml")
            with open(msg, "wb") as f:
                f.write(b"From a@b Mon Jan  2 10:00:00 2023\n" * target.endswith(".mbox") +
                        b"Subject: one\n\nbody\n")
            os.symlink(os.path.relpath(msg, d), at)
            db, args = os.path.join(d, "a.db"), [backend, m, at]
            run(["--index=" + db] + args)
            os.unlink(at)
            runs_equal_clean(db, d, args, f"{backend} a named link to {target} removed")
            if q(db, "SELECT count(*) FROM messages") != [(1,)]:
                fail(f"{backend} {target}: {q(db, 'SELECT root, path FROM messages')} messages")
    print(f"{n} named symbolic links removed beside a walk: each run's rows a clean run's")


def case_named_link_changes_id(tmp):
    """Both backends, a file named beside a walk of the Maildir, before it
    or after: a file named through a symbolic link has the id of the
    message the link names, so the named place changes ids when a named
    file becomes a link to a walked message, when a named link is pointed
    at another message, and when a named link becomes a file of its own;
    each run's tables equal a clean run's.  The rows of the place's old
    id stayed there for good beside the new one's (a rename into the
    place left them), or the walk's rename of the message the link had
    named moved the new file's rows out of the place instead of its own
    (the message lost for a run)."""
    def write(p, subject):
        with open(p, "wb") as f:
            f.write(b"From: a@b.example\nSubject: " + subject.encode() + b"\n\nbody\n")

    def relink(p, target):
        if os.path.lexists(p):
            os.unlink(p)
        os.symlink(target, p)

    n = 0
    for backend in ("--backend=uring", "--backend=sync"):
        for named_first in (True, False):
            for scenario in ("a file becomes a link", "a link retargeted", "a link becomes a file"):
                n += 1
                d = os.path.join(tmp, str(n))
                m = clilib.fifo_id_maildir(d)
                one, two = os.path.join(m, "cur", "1.host:2,S"), os.path.join(m, ".F", "cur", "2.host:2,S")
                write(one, "one")
                write(two, "two")
                if scenario == "a file becomes a link":
                    at = os.path.join(d, "x.eml")
                    write(at, "loose")
                    change = lambda: relink(at, one)
                elif scenario == "a link retargeted":
                    at = os.path.join(m, ".F", "cur", "lk:2,S")
                    relink(at, one)
                    change = lambda: relink(at, two)
                else:
                    at = os.path.join(m, "new", "lnk")
                    relink(at, one)
                    change = lambda: (os.unlink(at), write(at, "own"))
                db = os.path.join(d, "a.db")
                args = [backend] + ([at, m] if named_first else [m, at])
                what = f"{backend} {scenario}, {'named first' if named_first else 'walked first'}"
                run(["--index=" + db] + args)
                change()
                runs_equal_clean(db, d, args, what)
    print(f"{n} named places that change ids beside a walk: each run's rows a clean run's")


def case_listed_missing_file_created(tmp):
    """Both backends: a Maildir message named in a --files-from list beside
    a walk of its Maildir, missing for a run (an io-error ENOENT row at the
    list's place, no files row), then created: the walk meets it first and
    the list's second meeting makes no record, so nothing wrote the list's
    place again, and the row stayed for good, where a clean run has none.
    The same for a symbolic link named on the command line, missing for a
    run, then made to lead to a file another named link leads to (met
    there first).  A row whose place names a file the run met elsewhere
    (through a link too) goes at the end of the run; each run's tables
    equal a clean run's."""
    n = 0
    for backend, how, d, m in maildir_scenarios(tmp, ("listed", "a named link")):
        n += 1
        db = os.path.join(d, "a.db")
        if how == "listed":
            msg = os.path.join(m, "cur", "1.host:2,S")
            lst = os.path.join(d, "list")
            with open(lst, "w") as f:
                f.write(msg + "\n")
            args = [backend, "--files-from=" + lst, m]
            create = lambda: clilib.put_one_message(msg)
        else:
            target = os.path.join(d, "y.eml")
            clilib.put_one_message(target)
            first, later = os.path.join(m, "cur", "lk:2,S"), os.path.join(m, "new", "lk2")
            os.symlink(target, first)
            args = [backend, later, m, first]
            create = lambda: os.symlink(target, later)
        run(["--index=" + db] + args)
        if q(db, "SELECT count(*) FROM errors WHERE errno = 'ENOENT'") != [(1,)]:
            fail(f"{backend} {how}: the missing file's rows {q(db, 'SELECT * FROM errors')}")
        create()
        for step in ("the run after it was created", "the run after it"):
            run(["--index=" + db] + args)
            if how == "listed":
                equal_to_clean(db, d, "clean.db", args, f"{backend} {how}: {step}")
                continue
            # the message's rows stay at the place they were made
            # (README, "Files are known by"), a clean run's at the
            # first link: the errors and the count of messages agree
            clean = os.path.join(d, f"clean-{step[-8:]}.db")
            run(["--index=" + clean] + args)
            errors = "SELECT root, path, reason, errno FROM errors ORDER BY 1, 2"
            if q(db, errors) != q(clean, errors) or q(db, "SELECT count(*) FROM messages") != [(1,)]:
                fail(f"{backend} {how}: {step}: errors {q(db, errors)}, a clean run's {q(clean, errors)}")
    print(f"{n} files named, missing, then created beside another meeting: each run's rows a clean run's")


def case_listed_missing_directory_created(tmp):
    """Both backends: a path named in a --files-from list, missing for a
    run (an io-error ENOENT row at its place), then made a directory
    holding a message, or a Maildir, or a symbolic link to one: the list
    walks it, and its records are its files', none at its own place, so
    nothing met the row, which stayed for good where a clean run has
    none.  Each run's tables equal a clean run's."""
    n = 0
    for backend in ("--backend=uring", "--backend=sync"):
        for kind in ("directory", "Maildir", "link to a directory"):
            n += 1
            d = os.path.join(tmp, str(n))
            os.makedirs(d)
            named, lst, db = os.path.join(d, "named"), os.path.join(d, "list"), os.path.join(d, "a.db")
            with open(lst, "w") as f:
                f.write(named + "\n")
            args = [backend, "--files-from=" + lst]
            run(["--index=" + db] + args)
            if q(db, "SELECT count(*) FROM errors WHERE errno = 'ENOENT'") != [(1,)]:
                fail(f"{backend} {kind}: the missing path's rows {q(db, 'SELECT * FROM errors')}")
            made = named if kind != "link to a directory" else os.path.join(d, "elsewhere")
            subs = ("cur", "new", "tmp") if kind == "Maildir" else ()
            for sub in subs or ("",):
                os.makedirs(os.path.join(made, sub))
            clilib.put_one_message(os.path.join(made, "cur", "1.host:2,S") if subs
                                   else os.path.join(made, "x.eml"))
            if made != named:
                os.symlink(made, named)
            for step in ("the run after it was made", "the run after it"):
                run(["--index=" + db] + args)
                equal_to_clean(db, d, "clean.db", args, f"{backend} {kind}: {step}")
            if q(db, "SELECT count(*) FROM messages") != [(1,)]:
                fail(f"{backend} {kind}: messages {q(db, 'SELECT root, path FROM messages')}")
    print(f"{n} listed paths missing, then made directories: each run's rows a clean run's")


def case_named_link_removed_target_listed(tmp):
    """Both backends: a file outside the Maildir, named in a --files-from
    list and through a symbolic link in a Maildir folder named beside the
    walk; the link is met first and has the file's id, so the list's
    meeting of the same file makes no record.  The link removed, its
    error record took its place's rows, and the list's meeting, the same
    file by another spelling and unchanged, kept rows that were gone: the
    message was lost for good.  Each run's tables equal a clean run's."""
    n = 0
    for backend in ("--backend=uring", "--backend=sync"):
        for list_first in (False, True):
            n += 1
            d = os.path.join(tmp, str(n))
            m = clilib.fifo_id_maildir(d)
            target = os.path.join(d, "x.eml")
            clilib.put_one_message(target)
            link = os.path.join(m, ".F", "cur", "lk:2,S")
            os.symlink(target, link)
            lst = os.path.join(d, "list")
            with open(lst, "w") as f:
                f.write(target + "\n")
            db = os.path.join(d, "a.db")
            named = [link, m]
            args = [backend] + (["--files-from=" + lst] + named if list_first else named + ["--files-from=" + lst])
            what = f"{backend} {'list first' if list_first else 'link first'}"
            run(["--index=" + db] + args)
            os.unlink(link)
            runs_equal_clean(db, d, args, what, ("the run after the link was removed", "the run after it"))
            if q(db, "SELECT count(*) FROM messages") != [(1,)]:
                fail(f"{what}: {q(db, 'SELECT root, path FROM messages')}")
    print(f"{n} named links removed, their target listed: each run's rows a clean run's")


def case_named_file_becomes_repeated_link(tmp):
    """Both backends: two files named on the command line beside a walk,
    the first a symbolic link to a walked message, the second a file of
    its own that then becomes a link to the same message (or to nothing,
    where the first leads too).  A PATH that leads where an earlier one
    does is read once, at the first: the second makes no record, and its
    place, which no root covers, was not judged, so the rows of the file
    it held stayed for good.  The place of a link named is the run's to
    judge; each run's tables equal a clean run's."""
    n = 0
    for backend, target, d, m in maildir_scenarios(tmp, ("a message", "nothing")):
        n += 1
        one = os.path.join(m, "cur", "1.host:2,S")
        if target == "a message":
            clilib.put_one_message(one)
        else:
            one = os.path.join(m, "new", "7.host")
        first, second = os.path.join(d, "lk.eml"), os.path.join(d, "z.eml")
        os.symlink(one, first)
        with open(second, "wb") as f:
            f.write(b"From: a@b.example\nSubject: own\n\nbody\n")
        db = os.path.join(d, "a.db")
        args = [backend, first, second, m]
        relinked_runs_equal_clean(db, d, args, second, one, f"{backend} to {target}")
    print(f"{n} named files become links where another named link leads: each run's rows a clean run's")


def case_archive_place_changes_id(tmp):
    """Both backends: an mbox archive's place taken by a file of another
    id: a directory holding an archive becomes a Maildir (the archive is
    one Maildir message then) and stops being one, and a link named
    beside a walk leads from an archive to a walked message, or a named
    archive is made a link to a walked archive.  The gone
    archive's deletions cleared the whole place, the new file's rows with
    it (its files row kept: lost for good, since the place's entry was
    marked replaced there); they now go by their ids where the place is
    another file's.  Each run's tables equal a clean run's."""
    box = b"".join(b"From x@y Mon Jan  2 10:00:00 2023\nMessage-ID: <b%d@x>\nSubject: b%d\n\nbody\n\n" % (i, i)
                   for i in (1, 2))
    n = 0
    for backend in ("--backend=uring", "--backend=sync"):
        n += 1
        d = os.path.join(tmp, str(n))
        os.makedirs(os.path.join(d, "D", "cur"))
        with open(os.path.join(d, "D", "cur", "box"), "wb") as f:
            f.write(box)
        db, args = os.path.join(d, "a.db"), [backend, os.path.join(d, "D")]
        run(["--index=" + db] + args)
        for step, change in (("became a Maildir", lambda: os.mkdir(os.path.join(d, "D", "new"))),
                             ("stopped being one", lambda: os.rmdir(os.path.join(d, "D", "new")))):
            change()
            runs_equal_clean(db, d, args, f"{backend}: {step}")
        for named_first in (True, False):
            n += 1
            d = os.path.join(tmp, str(n))
            m = clilib.fifo_id_maildir(d)
            one = os.path.join(m, "cur", "1.host:2,S")
            clilib.put_one_message(one)
            with open(os.path.join(d, "box"), "wb") as f:
                f.write(box)
            lk = os.path.join(m, "new", "lk")
            os.symlink(os.path.join(d, "box"), lk)
            db = os.path.join(d, "a.db")
            args = [backend] + ([lk, m] if named_first else [m, lk])
            relinked_runs_equal_clean(db, d, args, lk, one, f"{backend} a link from an archive to a message")
        for named_first in (True, False):
            # an archive named on the command line made a link to an
            # archive the walk reads: the link's file, met by the walk
            # under another spelling and unchanged, wrote nothing at the
            # named place, so the old archive's files row and the error
            # row of its message that was no mail stayed
            n += 1
            d = os.path.join(tmp, str(n))
            m = clilib.fifo_id_maildir(d)
            walked = os.path.join(m, "a.mbox")
            with open(walked, "wb") as f:
                f.write(box)
            named = os.path.join(d, "m.mbox")
            with open(named, "wb") as f:
                f.write(box + b"From x@y Mon Jan  2 10:00:00 2023\n\x01\x02 no mail\n\n")
            db = os.path.join(d, "a.db")
            args = [backend] + ([named, m] if named_first else [m, named])
            relinked_runs_equal_clean(db, d, args, named, walked,
                                      f"{backend} a named archive made a link to a walked one")
    print(f"{n} archives whose place a file of another id takes: each run's rows a clean run's")


def case_named_file_respelled(tmp):
    """Files named on the command line, changed, then named by another
    spelling or from another working directory (a relative path, a symbolic
    link, an absolute one): one file, one id, so what the earlier spelling
    held goes (an archive's removed message, a rewritten file's old
    version, a Maildir message renamed by a flag change) and the tables
    equal a clean run's over the same arguments."""
    os.makedirs(os.path.join(tmp, "M"))
    os.symlink("M", os.path.join(tmp, "L"))
    md = os.path.join(tmp, "md")
    mkcorpus(md, "--seed", "23", "--layout", "maildir", "--count", "2")
    cur = os.path.join(md, "cur")
    name = sorted(os.listdir(cur))[0]
    flagged = name.split(":2,")[0] + ":2,FS"
    box, eml = os.path.join(tmp, "M", "a.mbox"), os.path.join(tmp, "M", "x.eml")

    def write(box_ids, subject):
        with open(box, "w") as f:
            for i in box_ids:
                f.write(f"From a@b Mon Jan  1 00:00:00 2024\nFrom: a{i}@x.example\n"
                        f"Subject: box {i}\nMessage-ID: <box{i}@x.example>\n\nword{i}\n\n")
        with open(eml, "w") as f:
            f.write(f"From: e@x.example\nSubject: {subject}\nMessage-ID: <eml@x.example>\n\n{subject}\n")

    def at(d):
        return ["env", "-C", os.path.join(tmp, d)]

    steps = [  # (working directory, the three files' spellings)
        ("", ["M/a.mbox", "M/x.eml", "md/cur/" + name]),
        ("M", [os.path.join(tmp, "L", "a.mbox"), "./x.eml", "../md/cur/" + flagged]),
        ("md", [os.path.join(tmp, "M", ".", "a.mbox"), os.path.join(tmp, "L", "x.eml"),
                "cur/" + name]),
    ]
    with ingest_absolute():
        for backend in ("sync", "uring"):
            db = os.path.join(tmp, backend + ".db")
            os.rename(os.path.join(cur, flagged) if os.path.exists(os.path.join(cur, flagged))
                      else os.path.join(cur, name), os.path.join(cur, name))
            for k, (d, files) in enumerate(steps):
                write([1, 2, 3] if k % 2 == 0 else [1, 3, 4], f"version {k}")
                if k:
                    src = os.path.join(cur, name if k == 1 else flagged)
                    os.rename(src, os.path.join(cur, flagged if k == 1 else name))
                args = ["--backend=" + backend] + files
                run(["--index=" + db] + args, pre=at(d))
                equal_to_clean(db, tmp, "clean.db", args, f"{backend}: step {k} ({d or '.'}: {files})",
                               pre=at(d))
    print("files named by another spelling: what the earlier one held goes, as in a clean run")


def case_named_file_respelled_gone(tmp):
    """A file named by one spelling, deleted, then named by another (from
    another directory) or walked under a PATH that holds it: its place,
    resolved lexically, is judged, so its rows go as in a clean run (an
    io-error row for the file named); that row goes in turn when a run
    names the file another way, missing or back."""
    with ingest_absolute():
        for backend in ("sync", "uring"):
            d = os.path.join(tmp, backend)
            for sub in ("M", "N", "sub"):
                os.makedirs(os.path.join(d, sub))
            for rel in ("M/x.eml", "N/y.eml"):
                with open(os.path.join(d, rel), "w") as f:
                    f.write(f"From: a@x.example\nSubject: {rel}\n\nbody\n")
            db = os.path.join(d, "db")
            b = "--backend=" + backend
            here, below = ["env", "-C", d], ["env", "-C", os.path.join(d, "sub")]
            run(["--index=" + db, b, "../M/x.eml"], pre=below)
            run(["--index=" + db, b, "./N/y.eml"], pre=here)
            for rel in ("M/x.eml", "N/y.eml"):
                os.unlink(os.path.join(d, rel))
            for args, what in (([b, "M/x.eml"], "named again from the directory above"),
                               ([b, "N"], "its directory walked")):
                run(["--index=" + db] + args, pre=here)
            equal_to_clean(db, d, "clean.db", [b, "M/x.eml", "N"], f"{backend}: gone", pre=here)
            # its io-error row, filed under one spelling, goes when a run
            # names it another way: still missing, then back
            run(["--index=" + db, b, "./M/x.eml"], pre=here)
            equal_to_clean(db, d, "clean.db", [b, "./M/x.eml", "N"], f"{backend}: still gone", pre=here)
            with open(os.path.join(d, "M/x.eml"), "w") as f:
                f.write("From: a@x.example\nSubject: back\n\nbody\n")
            run(["--index=" + db, b, "M/x.eml"], pre=here)
            equal_to_clean(db, d, "clean.db", [b, "M/x.eml", "N"], f"{backend}: back", pre=here)
    print("files gone, named before by other spellings: judged where they were, as a clean run")


def case_named_file_respelled_kept(tmp):
    """Where a file named by a spelling lies decides which run judges it:
    a file named through a link to a directory lies where the link leads
    (gone, a walk there deletes its rows; there, a walk of the directory
    holding the link, which follows none, does not, however it was
    spelled), and a file named as ../M/x.eml from sub/ is no file of
    sub/."""
    with ingest_absolute():
        for backend in ("sync", "uring"):
            named_file_kept(tmp, backend)
    print("files named by spellings: judged where they lie")


def named_file_kept(tmp, backend):
    """One backend's part of named_file_respelled_kept."""
    d = os.path.join(tmp, backend)
    for sub in ("M", "T", "other", "sub"):
        os.makedirs(os.path.join(d, sub))
    os.symlink("M", os.path.join(d, "L"))
    os.symlink("../other", os.path.join(d, "T", "L"))
    for rel in ("M/x.eml", "M/y.eml", "other/z.eml", "other/z2.eml", "T/t.eml", "sub/s.eml", "M/w.eml"):
        with open(os.path.join(d, rel), "w") as f:
            f.write(f"From: a@x.example\nSubject: {rel}\n\nbody\n")
    db = os.path.join(d, "db")
    b = "--backend=" + backend
    here, below = ["env", "-C", d], ["env", "-C", os.path.join(d, "sub")]
    run(["--index=" + db, b, "./L/x.eml", os.path.join(d, "T", "L", "z.eml"), "T/L/z2.eml"], pre=here)
    run(["--index=" + db, b, "../M/w.eml"], pre=below)
    os.unlink(os.path.join(d, "M/x.eml"))
    for args, pre in (([b, "."], below), ([b, "M"], here), ([b, "T"], here)):
        run(["--index=" + db] + args, pre=pre)
    got = sorted(p for (p,) in q(db, "SELECT path FROM messages"))
    # w.eml, unchanged when the walk of M met it, keeps its filing
    want = sorted(["y.eml", "../M/w.eml", "t.eml", "s.eml", os.path.join(d, "T", "L", "z.eml"), "T/L/z2.eml"])
    if got != want:
        fail(f"{backend}: messages {got}, want {want}")


def case_error_file_renamed(tmp):
    """A Maildir file whose record is an error (no mail), renamed by a flag
    change: its error row names the new path, as in a clean run."""
    md = os.path.join(tmp, "md")
    mkcorpus(md, "--seed", "19", "--layout", "maildir", "--count", "2")
    cur = os.path.join(md, "cur")
    with open(os.path.join(cur, "1500000009.junk.host:2,S"), "wb") as f:
        f.write(b"\x00\x01\x02")
    for backend in ("sync", "uring"):
        db = os.path.join(tmp, backend + ".db")
        args = ["--backend=" + backend, md]
        run(["--index=" + db] + args)
        os.rename(os.path.join(cur, "1500000009.junk.host:2,S"), os.path.join(cur, "1500000009.junk.host:2,RS"))
        run(["--index=" + db] + args)
        equal_to_clean(db, tmp, "clean.db", args, f"{backend}: an error file renamed", run_notes=False)
        os.rename(os.path.join(cur, "1500000009.junk.host:2,RS"), os.path.join(cur, "1500000009.junk.host:2,S"))
    print("an error file renamed: its row moves with it")


def case_copy_same_name(tmp):
    """A Maildir message copied to another folder under its own name (cp,
    which the Maildir specification forbids; both files share the id,
    README "Records"), then either copy deleted, or the copy moved back
    over the original: the message row names the copy left, and the tables
    equal a clean run's, on both backends.  The move left no row for a run:
    the file at the original's place was taken for the copy (its inode),
    and the original's entry, unmet, deleted the rows at its place, which
    were the new ones."""
    for backend in ("sync", "uring"):
        for gone in ("copy", "original", "moved back"):
            md = os.path.join(tmp, f"md-{backend}-{gone}")
            mkcorpus(md, "--seed", "18", "--layout", "maildir", "--count", "3")
            for sub in ("cur", "new", "tmp"):
                os.makedirs(os.path.join(md, ".Copies", sub))
            cur = os.path.join(md, "cur")
            one = sorted(os.listdir(cur))[0]
            db = os.path.join(tmp, f"{backend}-{gone}.db")
            args = ["--backend=" + backend, md]
            run(["--index=" + db] + args)
            shutil.copyfile(os.path.join(cur, one), os.path.join(md, ".Copies", "cur", one))
            run(["--index=" + db] + args)   # the row names the copy, read last
            if gone == "moved back":
                os.rename(os.path.join(md, ".Copies", "cur", one), os.path.join(cur, one))
            else:
                os.unlink(os.path.join(md, ".Copies", "cur", one) if gone == "copy"
                          else os.path.join(cur, one))
            for step in ("the run after the deletion", "the run after it"):
                run(["--index=" + db] + args)
                equal_to_clean(db, tmp, "clean.db", args, f"{backend}, {gone} deleted: {step}",
                               run_notes=False)
    print("a copy under the same name deleted: the row names the copy left")


def case_unreadable_comes_back(tmp):
    """Files whose error rows replaced their messages for a run are read
    again once readable, changed or not, and the tables equal a clean
    run's, on both backends: a folder listed but not searchable for a run
    (mode 644: no file in it can be statted), and a copy under the same
    unique name deleted while the other copy could not be read (the other
    is read by every run, so its error row replaced the message).  Both
    kept their files rows as they were, so the unchanged files were never
    read again and their messages were gone for good.  And a new file
    unreadable from the start, renamed: its error row under the old name
    stayed, as no files row remembered it; so did the error row of a
    folder that could not be listed for a run."""
    pre = unprivileged_prefix("root stats and reads anyway")
    os.chmod(tmp, 0o755)
    for backend in ("sync", "uring"):
        md = os.path.join(tmp, "md-" + backend)
        mkcorpus(md, "--seed", "19", "--layout", "maildir", "--count", "4")
        for sub in ("cur", "new", "tmp"):
            os.makedirs(os.path.join(md, ".B", sub))
        dbdir = os.path.join(tmp, "db-" + backend)
        os.mkdir(dbdir)
        os.chmod(dbdir, 0o777)
        db = os.path.join(dbdir, "inc.db")
        args = ["--backend=" + backend, md]
        cur = os.path.join(md, "cur")
        run(["--index=" + db] + args, pre=pre)
        os.chmod(cur, 0o644)
        run(["--index=" + db] + args, pre=pre)
        os.chmod(cur, 0o755)
        run(["--index=" + db] + args, pre=pre)
        equal_to_clean(db, dbdir, "clean.db", args, f"{backend}: a folder searchable again", pre=pre)
        # a folder that cannot be listed for a run: its error row goes once
        # it can (it stayed for good, as nothing else is at its place)
        os.chmod(cur, 0)
        run(["--index=" + db] + args, pre=pre)
        os.chmod(cur, 0o755)
        run(["--index=" + db] + args, pre=pre)
        equal_to_clean(db, dbdir, "clean.db", args, f"{backend}: a folder listable again", pre=pre)
        one = sorted(os.listdir(cur))[0]
        orig, copy = os.path.join(md, ".B", "cur", one), os.path.join(cur, one)
        os.rename(copy, orig)
        shutil.copyfile(orig, copy)
        for step in ("copy", "unreadable", "deleted", "readable"):
            if step == "unreadable":
                os.chmod(orig, 0)
            elif step == "deleted":
                os.unlink(copy)
            elif step == "readable":
                os.chmod(orig, 0o644)
            run(["--index=" + db] + args, pre=pre)
        equal_to_clean(db, dbdir, "clean.db", args, f"{backend}: the copy left, readable again", pre=pre)
        # a new message unreadable from the start, then renamed (a flag
        # change) while still unreadable: its error row moves with it, where
        # the old name's stayed (no files row remembered the file)
        late = os.path.join(cur, "1900000000.M77.h:2,S")
        with open(late, "wb") as f:
            f.write(b"From: late@example.org\nSubject: late\n\nbody\n")
        os.chmod(late, 0)
        run(["--index=" + db] + args, pre=pre)
        os.rename(late, late[:-1] + "FS")
        for step in ("renamed, unreadable", "readable"):
            if step == "readable":
                os.chmod(late[:-1] + "FS", 0o644)
            run(["--index=" + db] + args, pre=pre)
            equal_to_clean(db, dbdir, "clean.db", args, f"{backend}: a new unreadable file {step}", pre=pre)
    print("files unreadable for a run read again once readable, both backends")


def case_unreadable_archive(tmp):
    """An mbox archive changed and unreadable for a run: its io-error row
    replaces its messages, as any file's (its messages are kept by id only
    when it is read); readable again, its messages come back.  Read whole
    and streamed."""
    pre = unprivileged_prefix("root reads anyway")
    os.chmod(tmp, 0o755)
    F = b"From x@y.example Mon Jan  2 10:00:00 2023\n"

    def message(i):
        return F + f"From: a@b.example\nSubject: s{i}\nMessage-ID: <m{i}@x>\n\n".encode() + b"x" * 150 + b"\n\n"

    for backend in ("--backend=sync", "--backend=uring"):
        for how, args in (("whole", []), ("streamed", ["--max-size=400"])):
            sub = os.path.join(tmp, backend[2:] + "-" + how)
            os.mkdir(sub)
            os.chmod(sub, 0o777)
            box, db = os.path.join(sub, "a.mbox"), os.path.join(sub, "a.db")
            with open(box, "wb") as f:
                f.write(message(0) + message(1) + message(2))
            os.chmod(box, 0o644)
            run([backend, "--index=" + db] + args + [box], pre=pre)
            with open(box, "ab") as f:
                f.write(message(3))
            for step, mode in (("unreadable", 0), ("readable", 0o644)):
                os.chmod(box, mode)
                run([backend, "--index=" + db] + args + [box], pre=pre)
                equal_to_clean(db, sub, "clean.db", args + [box], f"{backend} {how} {step}", pre=pre)
            if q(db, "SELECT count(*) FROM messages") != [(4,)]:
                fail(f"{backend} {how}: {q(db, 'SELECT count(*) FROM messages')} messages, 4 expected")
    print("an archive unreadable for a run: its error row replaces its messages, which come back")


def case_maildir_loses_cur(tmp):
    """A Maildir that loses its cur/ is no Maildir any more: its new/
    messages get path ids under the same paths (README "Records"), and the
    old ids' deletions at the end of the run must not take the rows this
    run wrote there.  The messages and files rows equal a clean run's; with
    cur/ made again, every table does (the Maildir++ folders' `folder`
    follows only a file read again: README, "Incremental runs")."""
    for backend in ("sync", "uring"):
        md = os.path.join(tmp, "md-" + backend)
        shutil.copytree(sample(), md)
        db = os.path.join(tmp, backend + ".db")
        args = ["--backend=" + backend, md]
        run(["--index=" + db] + args)
        shutil.rmtree(os.path.join(md, "cur"))
        run(["--index=" + db] + args)
        clean = os.path.join(tmp, "clean.db")
        run(["--index=" + clean] + args)
        for sql in ("SELECT id, path FROM messages", "SELECT root, path, id FROM files",
                    "SELECT m.id, f.subject FROM mail_fts f JOIN messages m ON m.docid = f.rowid"):
            got, want = sorted(q(db, sql)), sorted(q(clean, sql))
            if got != want:
                fail(f"{backend}: cur/ removed: {sql}: missing {[r for r in want if r not in got][:3]},"
                     f" extra {[r for r in got if r not in want][:3]}")
        os.unlink(clean)
        os.makedirs(os.path.join(md, "cur"))
        run(["--index=" + db] + args)
        equal_to_clean(db, tmp, "clean.db", args, f"{backend}: cur/ made again")
    print("a Maildir that loses its cur/: no row lost, and equal to clean once it has one again")


def case_copy_no_mail_other_gone(tmp):
    """Of two copies under one unique name, one made no mail and the other
    deleted in one run: no message row is left (a clean run has only the
    error), on both backends."""
    for backend in ("sync", "uring"):
        md = os.path.join(tmp, "md-" + backend)
        mkcorpus(md, "--seed", "18", "--layout", "maildir", "--count", "3")
        for sub in ("cur", "new", "tmp"):
            os.makedirs(os.path.join(md, ".Copies", sub))
        cur = os.path.join(md, "cur")
        one = sorted(os.listdir(cur))[0]
        db = os.path.join(tmp, backend + ".db")
        args = ["--backend=" + backend, md]
        run(["--index=" + db] + args)
        shutil.copyfile(os.path.join(cur, one), os.path.join(md, ".Copies", "cur", one))
        run(["--index=" + db] + args)   # the row names the copy, read last
        with open(os.path.join(cur, one), "wb") as f:
            f.write(b"\x00\x01\x02")
        os.unlink(os.path.join(md, ".Copies", "cur", one))
        for step in ("the run of both changes", "the run after it"):
            run(["--index=" + db] + args)
            equal_to_clean(db, tmp, "clean.db", args, f"{backend}: {step}", run_notes=False)
    print("a copy made no mail, the other deleted: no row left")


def case_file_becomes_archive(tmp):
    """A file that is one message (no From_ line), then an archive, then
    one message again, whole and streamed: its rows are a clean run's at
    every step (the archive's first record brings the deletion of the
    file's own id, which the index had dropped with the file's rows and
    once took for a message row of its own), on both backends."""
    msg = b"Subject: one\nMessage-ID: <one@x>\n\nbody\n"
    box = b"".join(b"From a Mon Jan  1 00:00:00 2024\nSubject: m%d\n\nbody %d\n\n" % (n, n) for n in (1, 2))
    for backend in ("sync", "uring"):
        for limit in ([], ["--max-size=40"]):
            md = os.path.join(tmp, "d-%s-%d" % (backend, len(limit)))
            os.makedirs(md)
            db = os.path.join(tmp, "%s-%d.db" % (backend, len(limit)))
            args = ["--backend=" + backend] + limit + [md]
            for i, body in enumerate((msg, box, msg)):
                with open(os.path.join(md, "a.mbox"), "wb") as f:
                    f.write(body)
                os.utime(os.path.join(md, "a.mbox"), (1_700_000_000 + i, 1_700_000_000 + i))
                run(["--index=" + db] + args)
                equal_to_clean(db, tmp, "clean.db", args, f"{backend} {limit} step {i}", run_notes=False)
    print("a file one message, an archive, one message again: a clean run's rows each time")


def words(text):
    """unicode61 with remove_diacritics: letters and digits, folded."""
    import re
    import unicodedata
    t = unicodedata.normalize("NFKD", text or "")
    t = "".join(c for c in t if not unicodedata.combining(c)).lower()
    return set(re.findall(r"[^\W_]+", t))


def flat(r, roles):
    out = []
    for role in roles:
        for a in r.get(role, []):
            if "group" in a:
                out.append(a["group"])
                out += [f"{m['name'] or ''} {m['address']}" for m in a["members"]]
            else:
                out.append(f"{a['name'] or ''} {a['address']}")
    return " ".join(out)


def components(recs, key="path"):
    """Threads as notmuch makes them: messages linked by any msg-id one
    names and another has or names too; each message by its key (path, or
    id where an mbox's messages share a path)."""
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, r in enumerate(recs):
        me = ("m", i)
        ids = [r.get("message_id"), r.get("in_reply_to")] + r.get("references", [])
        for x in ids:
            if x:
                parent[find(me)] = find(("id", x))
        find(me)
    groups = {}
    for i, r in enumerate(recs):
        groups.setdefault(find(("m", i)), set()).add(r[key])
    return sorted(sorted(g) for g in groups.values())


def search(db, *query, fmt="jsonl", limit=1000, rc=0, sort=None):
    order = ["--sort=" + sort] if sort else []
    p = run(["search", db] + list(query) + order + ["--format=" + fmt, "--limit=" + str(limit)],
            check_rc=rc)
    if fmt == "tsv":
        return [ln.split("\t") for ln in p.stdout.decode().splitlines()]
    return records(p.stdout) if rc == 0 else p


def case_search(tmp):
    """Queries on notmuch's test corpus against an oracle computed here
    from the JSON records: each prefix, words, negation, ranking, limits,
    formats, and threads as connected components of the msg-id graph."""
    src = os.path.join(ARGS.source, "tests", "corpus", "real", "notmuch")
    db = os.path.join(tmp, "nm.db")
    run(["--index=" + db, src])
    recs = [r for r in records(run([src]).stdout) if "error" not in r]
    n_corpus = len(recs)
    by_path = {r["path"]: r for r in recs}

    def expect(name, query, pred, at_least=1):
        got = sorted(h["path"] for h in search(db, *query))
        want = sorted(r["path"] for r in recs if pred(r))
        if got != want:
            fail(f"{name} {query}: {len(got)} hits, expected {len(want)}: "
                 f"extra {sorted(set(got) - set(want))[:3]}, missing {sorted(set(want) - set(got))[:3]}")
        if len(want) < at_least:
            fail(f"{name}: only {len(want)} expected hits: the oracle proves nothing")
        return len(got)

    def fts_words(r):
        return words(" ".join([r.get("subject") or "", flat(r, ("from", "sender")),
                               flat(r, ("to", "cc", "bcc")), r.get("text") or "",
                               " ".join(a["filename"] or "" for a in r.get("attachments", []))]))

    n = {}
    n["from"] = expect("from:", ["from:carl"], lambda r: "carl" in words(flat(r, ("from", "sender"))))
    n["from-addr"] = expect("from: address", ["from:cworth@cworth.org"],
                            lambda r: "cworth@cworth.org" in flat(r, ("from", "sender")).lower())
    n["to"] = expect("to:", ["to:notmuchmail"], lambda r: "notmuchmail" in words(flat(r, ("to", "cc", "bcc"))))
    n["subject"] = expect("subject:", ["subject:patch"], lambda r: "patch" in words(r.get("subject")))
    n["word"] = expect("word", ["maildir"], lambda r: "maildir" in fts_words(r))
    n["and"] = expect("two words", ["notmuch", "emacs"],
                      lambda r: {"notmuch", "emacs"} <= fts_words(r))
    n["not"] = expect("negated", ["notmuch", "-subject:patch"],
                      lambda r: "notmuch" in fts_words(r) and "patch" not in words(r.get("subject")))
    n["date"] = expect("date:", ["date:2009-11-17..2009-11-18"],
                       lambda r: r.get("date") and "2009-11-17" <= r["date"][:10] <= "2009-11-18")
    n["month"] = expect("date: month", ["date:2009-11"], lambda r: (r.get("date") or "")[:7] == "2009-11")
    # as a range's bound a day past its month's end still bounds
    n["bound"] = expect("date: a bound past the month's end", ["date:2009-11-18..2009-11-31"],
                        lambda r: "2009-11-18" <= (r.get("date") or "")[:10] <= "2009-11-31")
    n["attach"] = expect("has:attachment", ["has:attachment"], lambda r: bool(r.get("attachments")))
    mid = next(r["message_id"] for r in recs if r.get("references"))
    n["id"] = expect("id:", ["id:" + mid], lambda r: r.get("message_id") == mid)
    import re
    n["dotted"] = expect("a word with dots (a phrase)", ["notmuchmail.org"], lambda r: any(
        re.search(r"(?<![^\W_])notmuchmail[\W_]+org(?![^\W_])", f.lower())
        for f in (r.get("subject") or "", flat(r, ("from", "sender")), flat(r, ("to", "cc", "bcc")),
                  r.get("text") or "")))
    # threads: the database's partition is the oracle's, and thread:N is one
    c = sqlite3.connect(db)
    parts = {}
    for path, t in c.execute("SELECT path, thread_id FROM messages"):
        parts.setdefault(t, []).append(path)
    c.close()
    mine = sorted(sorted(v) for v in parts.values())
    if mine != components(recs):
        fail(f"threads differ from the msg-id graph's components: {len(mine)} vs {len(components(recs))}")
    big = max(mine, key=len)
    t = search(db, "id:" + by_path[big[0]]["message_id"])[0]["thread"]
    if sorted(h["path"] for h in search(db, f"thread:{t}")) != big:
        fail(f"thread:{t} is not its thread")
    # ranking: bm25 ascending (best first), and --limit cuts the best
    hits = search(db, "notmuch")
    ranks = [h["rank"] for h in hits]
    if ranks != sorted(ranks) or not all("[" in (h["snippet"] or "") for h in hits):
        fail("hits not in rank order, or a snippet without the marked word")
    if [h["path"] for h in search(db, "notmuch", limit=3)] != [h["path"] for h in hits[:3]]:
        fail("--limit=3 is not the three best")
    # the ranks are README's weighted bm25, computed here by FTS5's own
    # bm25 (src/index/rank.c computes the same bits with fewer walks) and
    # printed by the same json_object: a word, a phrase in a column (one
    # phrase each: the IDF counted by the sort), and two phrases (each
    # counted on its own); every hit, in order, equal
    c = sqlite3.connect(db)
    for q, expr in (("notmuch", "notmuch"), ("from:carl", '"from" : "carl"'),
                    ("notmuch from:carl", 'notmuch "from" : "carl"'),
                    # a word in nearly every row (its IDF clamped), with
                    # two hits of one rank at places 1 and 2, two at 3 and 4
                    ("the", "the"),
                    # phrases walked one by one, NEAR's hits only (FTS5's
                    # bm25 walks the merged instances)
                    ("notmuch notmuch mail", "notmuch notmuch mail"),
                    ("NEAR(the to, 5)", "NEAR(the to, 5)")):
        want = sorted(json.loads(r)["rank"] for (r,) in c.execute(
            "SELECT json_object('rank', bm25(mail_fts, 8.0, 4.0, 2.0, 1.0, 2.0)) FROM mail_fts"
            " WHERE mail_fts MATCH ?", (expr,)))
        every = search(db, q)
        got = [h["rank"] for h in every]
        if len(want) < 2 or got != want:
            fail(f"{q}: ranks are not bm25 with README's weights: {got[:5]} against {want[:5]}")
        if q == "the" and not (len(got) > 8 and got[0] == got[1] and got[2] == got[3]):
            fail(f"'the': no longer two pairs of hits of one rank first: {got[:4]}")
        # a --limit below the hits: the rows that cannot be printed are
        # sorted by a bound of their score (src/index/rank.c), and the
        # lines printed are still the best, in order, with their ranks
        for lim in (1, 2, 3, 5, 8):
            top = [(h["path"], h["rank"]) for h in search(db, q, limit=lim)]
            if top != [(h["path"], h["rank"]) for h in every[:lim]]:
                fail(f"{q} --limit={lim}: {top} are not the first of {len(every)} hits")
        if len(every) <= 8:
            fail(f"{q}: {len(every)} hits, too few for the limits to leave rows unscored")
    # the snippet of a query whose phrases are all in one column is the
    # snippet FTS5 picks among every column (src/index/search.c asks for
    # that column's alone)
    for q, expr in (("from:carl", '"from" : "carl"'), ("subject:patch", '"subject" : "patch"'),
                    ("to:notmuchmail", '"to" : "notmuchmail"'),
                    ("from:carl from:worth", '"from" : "carl" "from" : "worth"')):
        want = dict(c.execute("SELECT m.path, snippet(mail_fts, -1, '[', ']', '...', 12) FROM mail_fts"
                              " JOIN messages m ON m.docid = mail_fts.rowid WHERE mail_fts MATCH ?",
                              (expr,)))
        got = {h["path"]: h["snippet"] for h in search(db, q)}
        if len(want) < 2 or got != want:
            bad = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k))
            fail(f"{q}: snippets differ from FTS5's over every column: {bad[:3]}")
    c.close()
    # a condition of SQL's (here id:) keeps a hit's rank: the IDF is the
    # whole table's, whatever order SQLite would join the tables in
    last = search(db, "notmuch")[-1]
    mid = by_path[last["path"]]["message_id"]
    if [h["rank"] for h in search(db, "id:" + mid, "notmuch")] != [last["rank"]]:
        fail(f"id:{mid} notmuch: its rank is not the one 'notmuch' gives it")
    # a TSV line is the JSON line's hit: same order, same snippet
    tsv = search(db, "notmuch", fmt="tsv")
    # (escaped as the records' TSV, and terminal controls: emit.h)
    short = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\\": "\\\\"}
    flat_tsv = lambda v: re.sub(r"[\x00-\x1f\\\x7f-\x9f]", lambda m: short.get(m[0]) or "".join(
        f"\\x{b:02x}" for b in m[0].encode()), v or "")
    if [(x[5], x[6]) for x in tsv] != [(h["path"], flat_tsv(h["snippet"])) for h in hits]:
        fail("tsv lines are not the jsonl hits in their order with their snippets")
    rows = search(db, "from:carl", fmt="tsv")
    if len(rows) != n["from"] or any(len(x) != 7 for x in rows):
        fail(f"tsv: {rows[:2]}")
    p = search(db, "notmuch", "AND", rc=1)
    if b"ingest: search" not in p.stderr:
        fail(f"a query FTS5 cannot parse: {p.stderr!r}")
    # a prefixed word joins the others with AND wherever it stands, and
    # groups with FTS5's OR and ( ) (NEAR takes plain words): the hits are
    # the sets' algebra
    hit = lambda *q: {h["path"] for h in search(db, *q)}
    carl, keith, nm, xap = hit("from:carl"), hit("from:keith"), hit("notmuch"), hit("xapian")
    if not (carl and keith and xap and carl & nm and keith - xap and xap - keith):
        fail("the corpus no longer has the sets these queries need")
    for q, want in (("from:carl notmuch", carl & nm), ("notmuch from:carl", carl & nm),
                    ("from:carl OR from:keith", carl | keith), ("notmuch OR from:keith", nm | keith),
                    ("(xapian OR from:keith) notmuch", (xap | keith) & nm),
                    ("notmuch (xapian OR from:keith)", (xap | keith) & nm),
                    ("( from:carl OR from:keith ) notmuch", (carl | keith) & nm),
                    ("notmuch NOT from:carl", nm - carl)):
        if hit(*q.split()) != want:
            fail(f"{q}: {len(hit(*q.split()))} hits, not the {len(want)} of its sets")
    near = hit("NEAR(notmuch", "mail,", "10)")
    if not near or not near <= hit("notmuch", "mail") or hit("NEAR(notmuch", "mail)") - near:
        fail(f"NEAR: {len(near)} hits")
    for q in ("NEAR(notmuch mail,10)", "NEAR(notmuch mail ,10)", "(NEAR(notmuch mail))"):
        if hit(*q.split()) != near:
            fail(f"{q}: not NEAR(notmuch mail, 10)'s hits")
    # punctuation that is no FTS5 syntax stays the word's, and a word of no
    # tokens drops out as FTS5 drops it: these are the words' own sets
    nm_mail = hit("notmuch", "mail")
    for q, want in (("notmuch - mail", nm_mail), ("notmuch & mail", nm_mail), (";-) notmuch", nm),
                    ("notmuch)", nm), ("from:carl,", carl), ("carl, notmuch", hit("carl", "notmuch"))):
        if hit(*q.split()) != want:
            fail(f"{q}: {len(hit(*q.split()))} hits, not the {len(want)} of its words")
    for q, why in (("(tag:inbox OR notmuch)", b"a condition cannot be inside"),
                   ("(xapian OR tag:inbox notmuch)", b"a condition cannot be inside"),
                   ("notmuch OR tag:inbox", b"cannot follow AND, OR or NOT"),
                   ("NEAR(from:carl notmuch)", b"NEAR( ) takes words and phrases"),
                   # a value that would match nothing, silently
                   ("date:2009-13", b"'2009-13' is not a date"),
                   ("date:yesterday..", b"'yesterday' is not a date"),
                   ("date:2009..2010-02-32", b"'2010-02-32' is not a date"),
                   ("date:2009-11-18T24", b"'2009-11-18T24' is not a date"),
                   ("date:2009-11-31", b"'2009-11-31' is not a date: 2009-11 has 30 days"),
                   ("date:2009-02-29T10", b"'2009-02-29' is not a date: 2009-02 has 28 days"),
                   ("has:attachments", b"has: knows has:attachment only"),
                   ("from:carl OR *", b"cannot join with AND, OR or NOT"),
                   ("* OR from:carl", b"cannot join with AND, OR or NOT"),
                   ("NOT *", b"NOT: nothing before it"),
                   ("notmuch NOT *", b"cannot join with AND, OR or NOT"),
                   # FTS5's "syntax error near """, said
                   ("(notmuch", b"a '(' is not closed"),
                   ("NEAR(carl notmuch", b"NEAR( is not closed"),
                   ("notmuch OR", b"the query ends with AND, OR or NOT"),
                   ("OR notmuch", b"OR: nothing before it"),
                   ("notmuch OR NOT carl", b"NOT: nothing before it"),
                   ("(OR notmuch)", b"(OR: nothing before it"),
                   ("subject:(notmuch OR)", b"OR): nothing after it"),
                   ("NEAR(OR notmuch)", b"NEAR(OR: nothing before it"),
                   # a word of no token matches nothing, and negated everything
                   ('-""', b"no letter or digit to negate"),
                   ("-:", b"no letter or digit to negate"),
                   ("-text:.", b"no letter or digit to negate"),
                   ('-subject:"."', b"no letter or digit to negate"),
                   ("from:*", b"no letter or digit: it can only match nothing"),
                   ("id:<>", b"id: needs a value"),
                   ("(*)", b"is a word of its own"),
                   ("from: notmuch", b"from: needs a value"),
                   ('tag:""', b"tag: needs a value")):
        p = search(db, *q.split(), rc=1)
        if why not in p.stderr:
            fail(f"{q}: {p.stderr!r}")
    # notmuch's "*": every message, alone or beside conditions
    if expect("*", ["*"], lambda r: True) != n_corpus:
        fail("*: not every message")
    if hit("*", "from:carl") != carl:
        fail("* from:carl: not from:carl's hits")
    # a date down to the hour, as the stored dates' prefix
    hour = sorted(r["date"] for r in recs if r.get("date"))[0][:13]
    expect("date: hour", ["date:" + hour], lambda r: (r.get("date") or "").startswith(hour))
    p = search(os.path.join(tmp, "none.db"), "x", rc=1)
    # tags and folders: the sample Maildir
    db = os.path.join(tmp, "sample.db")
    run(["--index=" + db, sample()])
    recs = records(run([sample()]).stdout)
    n["seen"] = expect("tag:", ["tag:seen"], lambda r: "S" in r["flags"])
    n["replied"] = expect("tag: and folder:", ["tag:replied", "folder:Lists"],
                          lambda r: "R" in r["flags"] and r["folder"] == "Lists")
    n["unread"] = expect("-tag:", ["-tag:seen"], lambda r: "S" not in r["flags"])
    n["inbox"] = expect("folder:INBOX", ["folder:INBOX", "-tag:unread"],
                        lambda r: r["folder"] == "" and "S" in r["flags"])
    print(f"{n_corpus} messages, {len(mine)} threads; hits per query: {n}")



def put_mail(path, subject, frm, to, body, msgid=None):
    """A message file (path: str or bytes), its directory made."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    head = f"From: {frm}\nTo: {to}\nSubject: {subject}\nDate: Mon, 5 Jun 2017 10:00:00 +0000\n"
    if msgid:
        head += f"Message-ID: <{msgid}>\n"
    with open(path, "wb") as f:
        f.write((head + "\n" + body + "\n").encode())


def small_corpus(tmp):
    """A Maildir (two messages at the top, one in .Sent), an mbox and a
    loose file beside it, the words placed so that a column's word is also
    another message's body word: the index of it, and the hits by subject."""
    root = os.path.join(tmp, "mail")
    for d in ("cur", "new", "tmp", ".Sent/cur", ".Sent/new", ".Sent/tmp"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    put_mail(os.path.join(root, "cur", "1.a:2,S"), "alpha report", "Ann Lee <ann@example.org>",
             "Bob <bob@example.org>", "gamma notes", "m1@x")
    put_mail(os.path.join(root, "cur", "2.b:2,S"), "beta plan", "Carl <carl@example.org>",
             "Dan <dan@example.org>", "alpha ann bob", "m2@x")
    put_mail(os.path.join(root, ".Sent", "cur", "3.c:2,S"), "gamma", "Dan <dan@example.org>",
             "Ann <ann@example.org>", "beta carl", "m3@x")
    with open(os.path.join(root, "box.mbox"), "w") as f:
        f.write("From ann@example.org Mon Jun  5 10:00:00 2017\nFrom: Ann <ann@example.org>\n"
                "To: eve@example.org\nSubject: delta\nMessage-ID: <m4@x>\n\nalpha\n")
    put_mail(os.path.join(root, "loose.eml"), "epsilon", "eve@example.org", "ann@example.org", "alpha")
    db = os.path.join(tmp, "small.db")
    run(["--index=" + db, root])
    return db


def subjects(db, *query):
    return sorted(h["subject"] for h in search(db, *query))


def case_search_column_group(tmp):
    """from:( ), to:( ), subject:( ) restrict every word of the group to
    the column (FTS5's filter on a group), where the column once went to
    the first word only; a word of another column inside is refused."""
    db = small_corpus(tmp)
    for q, want in (("subject:(alpha OR beta)", ["alpha report", "beta plan"]),
                    ("subject:( alpha OR beta )", ["alpha report", "beta plan"]),
                    ("from:(ann OR carl)", ["alpha report", "beta plan", "delta"]),
                    ("to:(bob OR ann)", ["alpha report", "epsilon", "gamma"]),
                    ("(subject:(alpha OR beta) OR gamma)", ["alpha report", "beta plan", "gamma"]),
                    ("subject:(alpha OR subject:beta) bob", ["alpha report", "beta plan"]),
                    ("notes subject:(alpha)", ["alpha report"]),
                    # FTS5's own column filters group the same way
                    ("text:(gamma OR carl)", ["alpha report", "gamma"]),
                    ("TEXT:(gamma OR carl) bob", ["alpha report"]),
                    # and its column sets, white space inside the braces:
                    # once split there, {subject text}:gamma matched nothing
                    # and {text}:( ) was FTS5's syntax error
                    ("{subject text}:gamma", ["alpha report", "gamma"]),
                    ("{subject}:(alpha OR beta)", ["alpha report", "beta plan"]),
                    ("{subject text}:(beta OR notes)", ["alpha report", "beta plan", "gamma"]),
                    ("({subject}:beta OR delta)", ["beta plan", "delta"]),
                    ("-{subject text}:alpha", ["gamma"]),
                    # a phrase with more after it in one word is searched as
                    # a phrase of all of it (FTS5 refused it as written)
                    ('"beta"plan', ["beta plan"]),
                    ('"beta plan"^', ["beta plan"]),
                    ("{subject text}:({subject}:beta)", ["beta plan"]),
                    # a set sharing a column with the group: FTS5 keeps that one
                    ("{subject}:({subject text}:beta)", ["beta plan"]),
                    ("subject:({subject text}:beta OR alpha)", ["alpha report", "beta plan"]),
                    ("subject:(NEAR(alpha report))", ["alpha report"])):
        for args in ([q], q.split()):
            got = subjects(db, *args)
            if got != want:
                fail(f"{args}: {got}, expected {want}")
    # the snippet is the column's: every phrase is in it
    snippets = sorted(h["snippet"] for h in search(db, "subject:(alpha", "OR", "beta)"))
    if snippets != ["[alpha] report", "[beta] plan"]:
        fail(f"subject:( ) snippets: {snippets}")
    for q, why in (("subject:(alpha OR from:ann)", b"inside subject:( ), a phrase of from: can only match nothing"),
                   ("-subject:(alpha OR beta)", b"a group cannot be negated"),
                   # once FTS5's "syntax error near \":\"", or the rest of
                   # the query taken as one phrase
                   ("{subject text:gamma", b"a '{' is not closed"),
                   ("gamma {subject", b"a '{' is not closed"),
                   # the group's first word, nested groups and column sets:
                   # once answered with nothing, exit 0
                   ("subject:(from:ann)", b"inside subject:( ), a phrase of from: can only match nothing"),
                   ("subject:(from:ann OR beta)", b"inside subject:( ), a phrase of from:"),
                   ("text:(subject:(alpha))", b"a group inside a column's group"),
                   ("subject:(subject:(alpha) OR beta)", b"a group inside a column's group"),
                   # a set's group after a group's first word (once FTS5's
                   # syntax error: the set went through as a word)
                   ("subject:(alpha {subject text}:(beta) OR gamma)", b"a group inside a column's group"),
                   ("{subject}:(from:ann)", b"inside {subject}:( ), a phrase of from:"),
                   ("{subject text}:(beta OR from:ann)", b"inside {subject text}:( ), a phrase of from:"),
                   ("{subject}:({text from}:beta)", b"inside {subject}:( ), a phrase of {text from}:"),
                   # negated FTS5 groups, as -subject:( ) is
                   ("-text:(alpha)", b"a group cannot be negated"),
                   ("-{subject}:(alpha)", b"a group cannot be negated"),
                   # a column's NEAR( ) outside a group was the phrase "NEAR a"
                   ("text:NEAR(alpha report)", b"a column's NEAR( ) is written in a group"),
                   ("subject:NEAR(alpha report)", b"a column's NEAR( ) is written in a group"),
                   # what FTS5 alone refuses is said to be its
                   ("{bogus}:alpha", b"not a query FTS5 can read (no such column: bogus)"),
                   ("alpha ( )", b"not a query FTS5 can read (fts5: syntax error")):
        p = search(db, *q.split(), rc=1)
        if why not in p.stderr:
            fail(f"{q}: {p.stderr!r}")


def case_search_not_a_file(tmp):
    """A search of a FIFO or a directory is refused at once ("not a regular
    file"): SQLite opened a FIFO and waited on it for good.  An index on a
    read-only file system is searched (read as immutable, as in a directory
    the user cannot write), where SQLite's failure to make its -shm file
    was reported as "No such file or directory"; with a run's -wal beside
    it, which immutable reading would ignore, the message says that.  A
    search leaves no -wal or -shm file behind."""
    fifo = os.path.join(tmp, "fifo.db")
    os.mkfifo(fifo)
    for what in (fifo, tmp):
        try:
            p = subprocess.run([ARGS.ingest, "search", what, "alpha"], capture_output=True, timeout=20)
        except subprocess.TimeoutExpired:
            fail(f"search of {what}: still waiting after 20 s")
        if p.returncode != 1 or b"not a regular file" not in p.stderr:
            fail(f"search of {what}: exit {p.returncode}, {p.stderr!r}")
    db = small_corpus(tmp)
    want = subjects(db, "alpha")
    # a search reads read-only, then closes a connection that may write
    # on ingest's index, so that SQLite removes the -wal and -shm files a
    # read-only connection left behind after every search
    left = sorted(f for f in os.listdir(tmp) if f.startswith(os.path.basename(db)))
    if left != [os.path.basename(db)]:
        fail(f"a search left {left}")
    # a database not ingest's is left as it was: a connection that may
    # write replayed its hot journal or checkpointed its WAL
    other = os.path.join(tmp, "other.db")
    code = ("import os, sqlite3, sys\n"
            "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
            "c.execute('PRAGMA journal_mode=WAL'); c.execute('PRAGMA wal_autocheckpoint=0')\n"
            "c.execute('CREATE TABLE t(x)')\n"
            "for i in range(50): c.execute('INSERT INTO t VALUES (?)', ('z' * 1000,))\n"
            "os._exit(0)\n")
    subprocess.run([sys.executable, "-c", code, other], check=True)
    before = {f: open(f, "rb").read() for f in (other, other + "-wal")}
    p = search(other, "alpha", rc=1)
    if b"not an ingest index" not in p.stderr or \
            any(open(f, "rb").read() != b for f, b in before.items()):
        fail(f"another application's WAL database: {p.stderr!r}, or it changed")
    # a -wal beside no database: the database is missing, not in the way
    with open(os.path.join(tmp, "gone.db-wal"), "wb"):
        pass
    p = search(os.path.join(tmp, "gone.db"), "alpha", rc=1)
    if b"No such file or directory" not in p.stderr:
        fail(f"a -wal beside no database: {p.stderr!r}")
    ro = os.path.join(tmp, "ro")
    os.mkdir(ro)
    if subprocess.run(["mount", "--bind", tmp, ro], capture_output=True).returncode:
        print("read-only file system: not run (cannot bind-mount: not root)")
        return
    try:
        if subprocess.run(["mount", "-o", "remount,bind,ro", ro], capture_output=True).returncode:
            print("read-only file system: not run (cannot remount read-only)")
            return
        db_ro = os.path.join(ro, os.path.basename(db))
        if subjects(db_ro, "alpha") != want:
            fail(f"read-only file system: {subjects(db_ro, 'alpha')}, want {want}")
        with open(db + "-wal", "wb"):
            pass
        p = search(db_ro, "alpha", rc=1)
        os.unlink(db + "-wal")
        if b"-wal file is beside it" not in p.stderr:
            fail(f"read-only file system, a -wal beside it: {p.stderr!r}")
    finally:
        subprocess.run(["umount", ro], capture_output=True)
    print("a FIFO and a directory refused; a read-only file system searched")


def case_search_path_bytes(tmp):
    """A root and a path that are not UTF-8 come out as the records write
    them: U+FFFD in root and path, the bytes in root_b64 and path_b64
    (README, "Records"); in TSV escaped as the records' TSV escapes them,
    with terminal controls as \\xHH."""
    import base64
    root = os.path.join(os.fsencode(tmp), b"r\xfe")
    names = [b"bad\xffname.eml", b"tab\tname.eml", b"esc\x1bname.eml"]
    for n in names:
        put_mail(os.path.join(root, n), "s", "a@example.org", "b@example.org", "word")
    db = os.path.join(tmp, "bytes.db")
    run(["--index=" + db, os.fsdecode(root)])
    hits = search(db, "*")   # records(): every line valid UTF-8 JSON
    got = {base64.b64decode(h["path_b64"]) if "path_b64" in h else h["path"].encode(): h for h in hits}
    if sorted(got) != sorted(names):
        fail(f"paths: {sorted(got)}, expected {sorted(names)}")
    for n, h in got.items():
        if h["path"] != n.decode("utf-8", "replace") or ("path_b64" in h) == (n.isascii()):
            fail(f"{n!r}: path {h['path']!r}, path_b64 {h.get('path_b64')!r}")
        if h["root"] != root.decode("utf-8", "replace") or base64.b64decode(h.get("root_b64", "")) != root:
            fail(f"{n!r}: root {h['root']!r}, root_b64 {h.get('root_b64')!r}")
        if list(h) != ["id", "root", "root_b64", "path"] + (["path_b64"] if "path_b64" in h else []) + \
                ["date", "from", "subject", "thread", "tags", "snippet", "rank"]:
            fail(f"{n!r}: keys {list(h)}")
    out = run(["search", db, "*", "--format=tsv"], check_rc=0).stdout
    try:
        out.decode("utf-8", "strict")
    except UnicodeDecodeError as e:
        fail(f"tsv is not UTF-8: {e}: {out!r}")
    paths = sorted(ln.split(b"\t")[5] for ln in out.splitlines())
    want = sorted([b"bad\\xffname.eml", b"tab\\tname.eml", b"esc\\x1bname.eml"])
    if paths != want or any(ln.count(b"\t") != 6 for ln in out.splitlines()):
        fail(f"tsv paths: {paths}, expected {want}: {out!r}")


def case_search_folder(tmp):
    """folder:INBOX is the top Maildir's messages, no mbox's or loose
    file's (their folder is NULL); a negated condition keeps the messages
    without the column (-folder:INBOX, -id:X for one with no Message-ID)."""
    db = small_corpus(tmp)
    for q, want in (("folder:INBOX", ["alpha report", "beta plan"]),
                    ("-folder:INBOX", ["delta", "epsilon", "gamma"]),
                    ("folder:Sent", ["gamma"]),
                    ("-folder:Sent", ["alpha report", "beta plan", "delta", "epsilon"]),
                    ("-id:m1@x", ["beta plan", "delta", "epsilon", "gamma"])):
        got = subjects(db, *q.split())
        if got != want:
            fail(f"{q}: {got}, expected {want}")


def case_search_options(tmp):
    """Every --limit that is not a number from 1 to SQLite's largest
    integer is one usage error (exit 2), as an unknown option is; after
    "--" a word may start with "--"."""
    db = small_corpus(tmp)
    for bad in ("-1", "99999999999999999999", "18446744073709551615", "9223372036854775808", "0",
                "abc", "", " 5", "+5", "5x"):
        p = run(["search", db, "alpha", "--limit=" + bad], check_rc=2)
        if f"invalid value in '--limit={bad}'".encode() not in p.stderr:
            fail(f"--limit={bad}: {p.stderr!r}")
    if len(search(db, "alpha", limit=9223372036854775807)) != 4:
        fail("--limit=9223372036854775807: not every hit")
    for args in (["alpha", "--bogus"], ["--bogus=1", "alpha"]):
        p = run(["search", db] + args, check_rc=2)
        if b"unknown option '--bogus" not in p.stderr:
            fail(f"{args}: {p.stderr!r}")
    p = run(["search", db, "--limit=5", "--", "-folder:INBOX"], check_rc=0)
    if sorted(h["subject"] for h in records(p.stdout)) != ["delta", "epsilon", "gamma"]:
        fail(f"-- -folder:INBOX: {p.stdout!r}")
    # --help is the search's own usage, exit 0; without a query, the same
    # on stderr, exit 2
    p = run(["search", "--help"], check_rc=0)
    if not p.stdout.startswith(b"Usage: ingest search FILE QUERY"):
        fail(f"search --help: {p.stdout!r}")
    p = run(["search", db], check_rc=2)
    if not p.stderr.startswith(b"Usage: ingest search FILE QUERY"):
        fail(f"search without a query: {p.stderr!r}")


def date_orders(db, queries):
    """Checks --sort=newest-first and oldest-first of each query against
    the hits of a relevance search put in date order here; returns the
    number of queries and orders checked."""
    import sqlite3
    con = sqlite3.connect(db)
    row = {i: (d, n) for i, d, n in con.execute("SELECT id, date, docid FROM messages")}
    con.close()
    checked = 0
    for q in queries:
        ranked = search(db, q, sort="relevance", limit=100000)
        hits = [h["id"] for h in ranked]
        rank = {h["id"]: h["rank"] for h in ranked}
        if hits != [h["id"] for h in search(db, q, limit=100000)]:
            fail(f"{q}: --sort=relevance is not the default order")
        if len(hits) < 2:
            fail(f"{q}: {len(hits)} hits, too few to order")
        dated = sorted((i for i in hits if row[i][0] is not None), key=lambda i: (row[i][0], -row[i][1]),
                       reverse=True)
        undated = sorted((i for i in hits if row[i][0] is None), key=lambda i: row[i][1])
        want = {"newest-first": dated + undated,
                "oldest-first": undated + sorted(dated, key=lambda i: (row[i][0], row[i][1]))}
        p = run(["search", db, q, "--count", "--limit=1", "--sort=oldest-first"], check_rc=0)
        if p.stdout != f"{len(hits)}\n".encode():
            fail(f"{q} --count: {p.stdout!r}, {len(hits)} hits")
        for order, ids in want.items():
            lines = search(db, q, sort=order, limit=100000)
            # each line's bm25 is the one the ranked search gives it
            for h in lines:
                if (rank[h["id"]] is None) != (h["rank"] is None) or \
                        (h["rank"] is not None and abs(h["rank"] - rank[h["id"]]) > 1e-9 * abs(rank[h["id"]])):
                    fail(f"{q} --sort={order}: {h['id']} rank {h['rank']}, ranked {rank[h['id']]}")
            got = [h["id"] for h in lines]
            if got != ids:
                fail(f"{q} --sort={order}: {len(got)} hits, {got[:5]}... != {ids[:5]}...")
            top = [h["id"] for h in search(db, q, sort=order, limit=2)]
            if top != ids[:2]:
                fail(f"{q} --sort={order} --limit=2: {top} != {ids[:2]}")
            checked += 1
    return checked


def case_search_sort(tmp):
    """--sort=newest-first and oldest-first put the hits a relevance search
    finds in date order (undated last, and first), ties by docid, words and
    conditions alike, --limit taking the first of that order, whether the
    matches are few (each looked up) or many (the date index walked: 400
    or more, search.c); relevance is the default; an unknown order is a
    usage error (exit 2); --count prints their number, whatever the
    limit."""
    import sqlite3
    src = os.path.join(ARGS.source, "tests", "corpus", "real", "notmuch")
    nm = os.path.join(tmp, "nm.db")
    run(["--index=" + nm, src])
    checked = date_orders(nm, ("the", "from:carl", "notmuch date:2009-11-17..2009-11-18", "-tag:unread",
                               "(from:carl OR from:keith) patch", "not*", "pat* the"))
    small = small_corpus(tmp)
    checked += date_orders(small, ("alpha", "-folder:Sent", "alpha -folder:Sent"))
    # 600 messages of the word "common", in two folders, dates that repeat
    # (ties) and some none: more matches than the few looked up one by one
    root = os.path.join(tmp, "many")
    for i in range(600):
        folder = "" if i % 3 else ".Archive"
        for sub in ("cur", "new", "tmp"):
            os.makedirs(os.path.join(root, folder, sub), exist_ok=True)
        d = os.path.join(root, folder, "cur")
        date = "" if i % 17 == 0 else f"Date: {1 + i * 7 % 28} Mar 20{10 + i % 9} 10:00:00 +0000\n"
        word = "rare" if i % 150 == 0 else "plain"
        with open(os.path.join(d, f"{i}.x:2,S"), "w") as f:
            f.write(f"From: u{i % 7}@example.org\nSubject: s{i}\n{date}\ncommon {word} words\n")
    many = os.path.join(tmp, "many.db")
    run(["--index=" + many, root])
    # the oracle is the relevance search: its hits are first counted
    # against what the corpus was made with (600 messages say "common",
    # past the 400 of the index walk; every 150th "rare")
    for q, n in (("common", 600), ("rare", 4)):
        if len(search(many, q, limit=100000)) != n:
            fail(f"{q}: {len(search(many, q, limit=100000))} hits, the corpus has {n}")
    checked += date_orders(many, ("common", "common folder:Archive", "common -folder:Archive date:2012..2015",
                                  "rare", "from:u3@example.org common", "comm*", "ra* OR pla*"))
    # the undated message of the small corpus is at the ends
    con = sqlite3.connect(small)
    undated = [i for (i,) in con.execute("SELECT id FROM messages WHERE date IS NULL")]
    con.close()
    if len(undated) != 1 or search(small, "alpha", sort="oldest-first")[0]["id"] != undated[0] \
            or search(small, "alpha", sort="newest-first")[-1]["id"] != undated[0]:
        fail(f"the undated message {undated} is not at the ends")
    tsv = search(nm, "the", fmt="tsv", sort="oldest-first")
    if [t[0] for t in tsv] != sorted(t[0] for t in tsv):
        fail("TSV oldest first: dates out of order")
    for bad in ("newest", "date", ""):
        p = run(["search", nm, "the", "--sort=" + bad], check_rc=2)
        if b"search orders are relevance, newest-first and oldest-first" not in p.stderr:
            fail(f"--sort={bad}: {p.stderr!r}")
    print(f"{checked} queries and orders: the hits in date order, --limit their first")


def case_search_many_matches(tmp):
    """A hit whose row has more than 1,000 matches shows the start of its
    text, not FTS5's snippet, which scores every match against every other
    (t* against one 270 KB text took 11 s); below it, the snippet."""
    root = os.path.join(tmp, "mail")
    words = " ".join(f"tok{i % 100}" for i in range(3000))
    put_mail(os.path.join(root, "cur", "1.a:2,S"), "many", "ann@example.org", "bob@example.org",
             "start " + words, "many@x")
    db = os.path.join(tmp, "many.db")
    run(["--index=" + db, root])
    for q, snippet in (("t*", False), ("tok1", True), ("tok1*", True), ("start", True)):
        hits = search(db, q)
        if len(hits) != 1:
            fail(f"{q}: {len(hits)} hits")
        s = hits[0]["snippet"]
        if ("[" in s) != snippet or (not snippet and not s.startswith("start tok0 tok1")):
            fail(f"{q}: snippet {s!r}, expected {'a snippet' if snippet else 'the text start'}")


def case_search_refused_values(tmp):
    """A value that can only match nothing is refused with exit 1 and
    named (README, "Searching"): a thread that is not a number from 1, a
    date range whose start is past its end, a query whose words have no
    letter or digit."""
    db = small_corpus(tmp)
    for q, why in (("thread:abc", b"thread:abc: not a thread"),
                   ("thread:-1", b"thread:-1: not a thread"),
                   ("thread:1e3", b"thread:1e3: not a thread"),
                   ("thread:0", b"thread:0: not a thread"),
                   ("thread:99999999999999999999", b"thread:99999999999999999999: not a thread"),
                   ("date:2017-06..2017-05", b"date: '2017-06' is after '2017-05'"),
                   ("date:2018..2017-12-31", b"date: '2018' is after '2017-12-31'"),
                   ("-date:2017-06-02..2017-06-01T23", b"'2017-06-02' is after '2017-06-01T23'"),
                   # words FTS5 would take, none with a token: no hit, ever
                   (".", b"no letter or digit to search for"),
                   ("text:.", b"no letter or digit to search for"),
                   ("{subject text}:(... -)", b"no letter or digit to search for"),
                   ("tag:seen \"...\"", b"no letter or digit to search for"),
                   ("NEAR(. ., 10)", b"no letter or digit to search for")):
        p = search(db, q, rc=1)
        if why not in p.stderr:
            fail(f"{q}: {p.stderr!r}")
    # beside a word that has one, such a word is skipped, as FTS5 does
    if subjects(db, "alpha .") != subjects(db, "alpha") or not subjects(db, "alpha"):
        fail(f"'alpha .': {subjects(db, 'alpha .')} against {subjects(db, 'alpha')}")
    t = search(db, "subject:alpha")[0]["thread"]
    for q in (f"thread:{t}", f"thread:0{t}", "date:2017-06-05..2017-06", "date:2017..2017-06-05T10"):
        if "alpha report" not in subjects(db, q):
            fail(f"{q}: {subjects(db, q)}")


def case_search_words(tmp):
    """-WORD is a message without the word (it once searched for the word);
    a prefix in any case is the prefix (FROM: once went to FTS5 as "every
    column but"); a word with a ':' that names no column is a phrase (10:30
    once failed with "no such column"); a tag outside the vocabulary and an
    operator after a condition are refused; white space alone is no query;
    id: takes the angle brackets; readers at once never meet "database is
    locked" (SQLite's busy moment when a connection closes)."""
    db = small_corpus(tmp)
    every = set(subjects(db, "*"))
    for neg, pos in (("-alpha", "alpha"), ("-text:alpha", "text:alpha"), ('-"beta carl"', '"beta carl"'),
                     ("-from:ann", "from:ann"), ("-FROM:ann", "from:ann")):
        if set(subjects(db, neg)) != every - set(subjects(db, pos)):
            fail(f"{neg}: {subjects(db, neg)}, not every message but {subjects(db, pos)}")
    if set(subjects(db, "alpha", "-ann")) != set(subjects(db, "alpha")) - set(subjects(db, "ann")):
        fail(f"alpha -ann: {subjects(db, 'alpha', '-ann')}")
    for upper, lower in (("From:ann", "from:ann"), ("SUBJECT:gamma", "subject:gamma"),
                         ("Tag:Seen", "tag:seen"), ("HAS:attachment", "has:attachment")):
        if subjects(db, upper) != subjects(db, lower):
            fail(f"{upper}: {subjects(db, upper)} against {lower}: {subjects(db, lower)}")
    for word in ("10:30", "http://example.org/x", "Re:", "std::vector", "text:example.org", "-OR",
                 "(beta OR alpha) folder:Sent"):
        search(db, word)   # exit 0: a phrase, not FTS5's syntax error
    if subjects(db, "id:<m1@x>") != ["alpha report"] or subjects(db, "id:m1@x") != ["alpha report"]:
        fail(f"id: {subjects(db, 'id:<m1@x>')} {subjects(db, 'id:m1@x')}")
    for qq, why in (("tag:foo", b"not a tag"), ("alpha tag:seen OR beta", b"cannot follow a condition"),
                    ("beta OR alpha folder:Sent", b"OR outside ( ) beside a condition"),
                    ("-carl alpha OR gamma", b"OR outside ( ) beside a condition"),
                    ("-*", b"every message but"), ("text:", b"needs a value"),
                    (".".join(["alpha"] * 2000), b"more than 1024 words"),
                    ("subject:(alpha text:x)", b"can only match nothing"), ("-(alpha", b"cannot be negated")):
        p = search(db, qq, rc=1)
        if why not in p.stderr:
            fail(f"{qq}: {p.stderr!r}")
    run(["search", db, " \t "], check_rc=2)
    p = search(db, "date:\x1b]0;title\x07", rc=1)
    if b"\x1b" in p.stderr or b"\x07" in p.stderr:
        fail(f"a terminal escape echoed: {p.stderr!r}")

    def readers():
        return [run(["search", db, "alpha", "--limit=1"], check_rc=None).returncode for _ in range(60)]

    with concurrent.futures.ThreadPoolExecutor(3) as ex:
        codes = sum((f.result() for f in [ex.submit(readers) for _ in range(3)]), [])
    if any(codes):
        fail(f"{sum(1 for c in codes if c)} of {len(codes)} concurrent searches failed")


def case_search_long_query(tmp):
    """A query of more than 1,024 words is refused at once (FTS5's
    snippets grow with the square of its phrases: 20,000 words took
    minutes); 1,024 are answered."""
    db = small_corpus(tmp)
    if subjects(db, " ".join(["alpha"] * 1024)) != ["alpha report", "beta plan", "delta", "epsilon"]:
        fail("1,024 words: not the word's hits")
    t = time.monotonic()
    p = search(db, " ".join(["alpha"] * 20000), rc=1)
    if b"more than 1024 words" not in p.stderr or time.monotonic() - t > 5:
        fail(f"20,000 words: {p.stderr!r} after {time.monotonic() - t:.1f} s")


def messages_now(db):
    """Rows committed so far, read while a run writes (WAL)."""
    try:
        return q(db, "SELECT count(*) FROM messages")[0][0]
    except sqlite3.OperationalError:
        return 0   # not created yet


def wait_rows(proc, db, at_least):
    deadline = time.time() + 120
    while proc.poll() is None and time.time() < deadline:
        if messages_now(db) >= at_least:
            return True
        time.sleep(0.005)
    return False


def existing_db(tmp, db):
    """A database that exists before the run (made by a run over an empty
    directory): the run writes it in place, in WAL, batch by batch, where a
    database the run creates is built aside and appears whole at the end."""
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty, exist_ok=True)
    run(["--index=" + db, empty])


def completes_like_clean(tmp, db, src, what, clean_dump=None):
    """integrity_check passes (on the database, or on no database at all
    when a first run was cut before it put its database in place), and a
    completing run makes the tables of a clean run: nothing duplicated,
    nothing lost, nothing left aside.  clean_dump: the clean run's tables,
    when the caller compares many runs against one (a dump of 20,000
    messages takes over a second)."""
    if os.path.exists(db):
        ok = q(db, "PRAGMA integrity_check")
        if ok != [("ok",)]:
            fail(f"{what}: integrity_check says {ok}")
    run(["--index=" + db, src])
    if os.path.exists(db + ".new"):
        fail(f"{what}: the completing run left {db}.new")
    if clean_dump is None:
        clean = os.path.join(tmp, "clean.db")
        if not os.path.exists(clean):
            run(["--index=" + clean, src])
        clean_dump = dump(clean)
    a, b = dump(db), clean_dump
    if differ(a, b):
        k = differ(a, b)[0]
        fail(f"{what}: after the completing run {differ(a, b)} differ from a clean run: "
             f"{len(a[k])} rows against {len(b[k])}")


def case_interrupt(tmp):
    """Ctrl-C: what was parsed is committed, exit 130; a reader queries
    while the run writes; the next run completes it."""
    d = os.path.join(tmp, "md")
    total = 1500
    mkcorpus(d, "--seed", "15", "--layout", "maildir", "--count", str(total))
    db = os.path.join(tmp, "int.db")
    existing_db(tmp, db)
    proc = subprocess.Popen([ARGS.ingest, "--index=" + db, "--batch-bytes=64K", "--threads=1", d],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not wait_rows(proc, db, 1):
        fail("no row became visible to a reader while the run wrote")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    if proc.returncode != 130 or out:
        fail(f"interrupted run exited {proc.returncode} (stdout {len(out)} bytes): {err!r}")
    got = messages_now(db)
    if not 0 < got < total:
        fail(f"{got} of {total} messages committed: the interrupt did not stop the run early")
    completes_like_clean(tmp, db, d, "after Ctrl-C")
    # a first run: its database appears only at the end, and Ctrl-C puts
    # what was parsed in place
    db = os.path.join(tmp, "first.db")
    proc = subprocess.Popen([ARGS.ingest, "--index=" + db, "--batch-bytes=64K", "--threads=1", d],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not os.path.exists(db + ".new") and time.time() < deadline:
        time.sleep(0.001)
    seen = os.path.exists(db)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    if seen or proc.returncode != 130:
        fail(f"first run: database visible while built ({seen}), exit {proc.returncode}: {err!r}")
    # interrupted as soon as it began: what it parsed (maybe nothing) is
    # put in place, whole
    first = messages_now(db)
    if not os.path.exists(db) or first >= total or os.path.exists(db + ".new"):
        fail(f"first run interrupted: {first} of {total} messages put in place")
    completes_like_clean(tmp, db, d, "after Ctrl-C of a first run")
    print(f"interrupted with {got} of {total} committed, a first run with {first} put in place;"
          " the next runs completed them")


def kill_seed():
    """The seed of the kill points: INDEX_KILL_SEED replays a failed run's
    points (the delays; where in the code each kill lands still depends on
    the machine's speed), else a new one each run, printed."""
    seed = int(os.environ.get("INDEX_KILL_SEED") or int.from_bytes(os.urandom(4), "little"))
    print(f"kill points seeded with INDEX_KILL_SEED={seed}")
    return seed


def timed_run(args):
    t0 = time.monotonic()
    run(args)
    return time.monotonic() - t0


def timed_runs_at_once(argss):
    """Starts a run per argument list at once: the longest one's seconds."""
    t0 = time.monotonic()
    procs = [subprocess.Popen([ARGS.ingest] + a, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for a in argss]
    took = 0.0
    for a, p in zip(argss, procs):
        err = p.communicate(timeout=300)[1]
        took = max(took, time.monotonic() - t0)
        if p.returncode != 0:
            fail(f"{a}: exit {p.returncode}: {err.decode(errors='replace')}")
    return took


def kill_after(args, delay):
    """Starts a run and SIGKILLs it after delay seconds: True when it was
    still running (the kill landed), else how long the whole run took."""
    t0 = time.monotonic()
    proc = subprocess.Popen([ARGS.ingest] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        proc.kill()
    proc.wait()
    if proc.returncode not in (0, -signal.SIGKILL):
        fail(f"{args}: exit {proc.returncode} before the kill")
    return True if proc.returncode == -signal.SIGKILL else time.monotonic() - t0


def sigkill_points(tmp, total, points, batch, workers=2):
    """SIGKILL at `points` random moments of a first run over `total`
    messages (delays drawn uniformly over a clean run's duration, seeded),
    each on a fresh database: integrity_check passes and a completing run's
    tables equal a clean run's.  Then three kills while a re-run applies
    renames and deletions, against the same re-run not killed.  The points
    run `workers` at a time, each on its own database: a point is one
    process after another (the killed run, the completing run, the
    comparison), which alone would leave the second CPU idle."""
    rng = random.Random(kill_seed())
    d = os.path.join(tmp, "md")
    mkcorpus(d, "--seed", "16", "--layout", "maildir", "--count", str(total))
    clean = os.path.join(tmp, "clean.db")
    # the delays' scale: a clean run beside `workers - 1` others, as the
    # killed runs will be (one alone would be faster, and its delays
    # would miss the end of every loaded run)
    t_clean = timed_runs_at_once([["--index=" + clean] + batch + [d]] +
                                 [["--index=" + os.path.join(tmp, f"clean-{w}.db")] + batch + [d]
                                  for w in range(1, workers)])
    clean_tables = dump(clean)
    lock = threading.Lock()
    tally = {"landed": 0, "tried": 0, "t_clean": t_clean, "failed": False, "first": 0, "existing": 0}
    t0 = time.monotonic()

    def kill_points(w):
        try:
            kill_points_on(os.path.join(tmp, f"kill-{w}.db"), w % 2)
        except BaseException:
            tally["failed"] = True   # the other worker stops at its next point
            raise

    def kill_points_on(db, existing):
        # every other kill a worker lands hits a first run (its database
        # built aside), the others a run into an existing database (WAL,
        # batch by batch); a run that ended before its kill is tried again
        # as the same kind
        while True:
            with lock:
                if tally["landed"] >= points or tally["failed"]:
                    return
                tally["tried"] += 1
                if tally["tried"] > 3 * points:
                    fail(f"only {tally['landed']} of {tally['tried']} runs were still running when killed")
                # a fraction of the last whole run: the machine's load
                # changes while the test runs, and a delay past the run's
                # end kills nothing
                delay = rng.uniform(0, 1) * tally["t_clean"]
            kind = "existing" if existing else "first"
            for f in (db, db + "-wal", db + "-shm", db + ".new"):
                if os.path.exists(f):
                    os.unlink(f)
            if kind == "existing":
                existing_db(tmp, db)
            took = kill_after(["--index=" + db] + batch + [d], delay)
            if took is not True:
                with lock:
                    tally["t_clean"] = took
                continue
            with lock:
                tally["landed"] += 1
                tally[kind] += 1
                n = tally["landed"]
            existing = not existing
            rows = messages_now(db) if os.path.exists(db) else "no database"
            completes_like_clean(tmp, db, d, f"kill {n} ({kind}) after {delay:.3f} s ({rows} rows)",
                                 clean_tables)

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for f in [pool.submit(kill_points, w) for w in range(workers)]:
            f.result()   # a failed point's SystemExit, raised here
    print(f"{tally['landed']} kills ({tally['first']} of first runs, {tally['existing']} into an existing "
          f"database) of {tally['tried']} runs over {total} messages, {workers} at a time (last whole "
          f"run {tally['t_clean']:.2f} s), {time.monotonic() - t0:.0f} s: each consistent, completed like "
          "a clean run")
    # killed while a re-run applies renames and deletions; the reference is
    # the same re-run not killed (a deletion does not split a thread, so a
    # clean run of the changed tree may thread differently)
    before = os.path.join(tmp, "before.db")
    ref = os.path.join(tmp, "ref-rerun.db")
    shutil.copy(clean, before)
    shutil.copy(clean, ref)
    cur = sorted(os.listdir(os.path.join(d, "cur")))
    for n in cur[: len(cur) // 2]:
        if n.endswith(":2,S"):
            os.rename(os.path.join(d, "cur", n), os.path.join(d, "cur", n[:-1] + "RS"))
        else:
            os.unlink(os.path.join(d, "cur", n))
    t_rerun = timed_run(["--index=" + ref] + batch + [d])
    want = dump(ref)
    landed = 0
    for k in range(3):
        db = os.path.join(tmp, "kill-rerun.db")
        shutil.copy(before, db)
        delay = rng.uniform(0, t_rerun)
        landed += kill_after(["--index=" + db] + batch + [d], delay) is True
        if q(db, "PRAGMA integrity_check") != [("ok",)]:
            fail(f"killed during a re-run after {delay:.3f} s: integrity_check failed")
        run(["--index=" + db] + batch + [d])
        if differ(dump(db), want):
            fail(f"killed during a re-run after {delay:.3f} s: {differ(dump(db), want)} differ"
                 " from the re-run not killed")
    print(f"3 re-runs killed ({landed} still running when killed): consistent, completed like"
          " the re-run not killed")


def case_sigkill(tmp):
    sigkill_points(tmp, 800, 20, ["--batch-bytes=32K"])


def case_sigkill_20k(tmp):
    """The same at 20,000 messages and the default batch size (slow suite)."""
    sigkill_points(tmp, 20000, 20, [])


def case_streamed_archive_killed_before_deletions(tmp):
    """A streamed archive read again whose every offset moved (a message
    put in front): its messages' batches come first, then the deletions of
    the last run's, in batches of their own.  Killed after the last
    message's batch and before the deletions', the index must not take the
    archive for read to its end (its messages' files rows have no inode,
    and only the item after the deletions writes the whole row): the next
    run reads it again and ends like a clean run.  The run is killed when
    the files row first claims the whole file; an attempt whose kill came
    after the deletions is made again."""
    F = b"From x@y.example Mon Jan  2 10:00:00 2023\n"

    def message(i):
        return F + f"From: a@b.example\nSubject: s{i}\nMessage-ID: <m{i}@x>\n\nbody {i}\n\n".encode()

    for backend in ("--backend=uring", "--backend=sync"):
        sub = os.path.join(tmp, backend[2:])
        os.mkdir(sub)
        box, db, before = (os.path.join(sub, x) for x in ("a.mbox", "a.db", "before.db"))
        old = b"".join(message(i) for i in range(3000))
        with open(box, "wb") as f:
            f.write(old)
        args = [backend, "--max-size=400", box]
        run(["--index=" + before] + args)
        with open(box, "wb") as f:
            f.write(message(99999) + old)
        os.utime(box, (1_800_000_000, 1_800_000_000))
        size = os.path.getsize(box)
        for attempt in range(5):
            for x in glob.glob(db + "*"):
                os.unlink(x)
            shutil.copyfile(before, db)
            pr = subprocess.Popen([ARGS.ingest, "--index=" + db] + args, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)
            c = sqlite3.connect(db, timeout=0.01)
            while pr.poll() is None:
                try:
                    if c.execute("SELECT size FROM files").fetchall() == [(size,)]:
                        pr.send_signal(signal.SIGKILL)
                        break
                except sqlite3.OperationalError:
                    pass
            pr.wait()
            c.close()
            if pr.returncode == -signal.SIGKILL and q(db, "SELECT count(*) FROM messages")[0][0] > 3001:
                break
        else:
            fail(f"{backend}: no kill between the last message and the deletions in 5 attempts")
        run(["--index=" + db] + args)
        equal_to_clean(db, sub, "clean.db", args, f"{backend}: killed before the deletions, run again")
    print("a streamed archive killed before its deletions: read again, then equal to a clean run")


def case_file_becomes_no_file(tmp):
    """A message file replaced by a FIFO, the FIFO met again, removed, made
    again, replaced by a symbolic link (not followed in a walk), removed,
    then a file again: each run's tables equal a clean run's.  The
    not-regular and symlink rows were deleted with the gone file's rows,
    which a clean run has (the error record stands where the file's
    documents stood); and a no-file place removed kept its error row for
    good (it had no files row to be deleted by)."""
    for backend in ("--backend=uring", "--backend=sync"):
        d = os.path.join(tmp, backend[2:])
        os.makedirs(os.path.join(d, "M"))
        f, db = os.path.join(d, "M", "a.eml"), os.path.join(d, "a.db")
        with open(f, "wb") as x:
            x.write(b"From: a@b.example\nSubject: one\n\nbody\n")
        with open(os.path.join(d, "other.eml"), "wb") as x:
            x.write(b"From: a@b.example\nSubject: other\n\nbody\n")
        args = [backend, os.path.join(d, "M")]
        run(["--index=" + db] + args)
        for step in ("fifo", "fifo again", "gone", "fifo", "symlink", "gone", "file"):
            if os.path.lexists(f) and step != "fifo again":
                os.unlink(f)
            if step == "fifo":
                os.mkfifo(f)
            elif step == "symlink":
                os.symlink(os.path.join(d, "other.eml"), f)
            elif step == "file":
                with open(f, "wb") as x:
                    x.write(b"From: a@b.example\nSubject: again\n\nbody\n")
            run(["--index=" + db] + args)
            equal_to_clean(db, d, "clean.db", args, f"{backend}: {step}")
            messages = 1 if step == "file" else 0
            errors = 0 if step in ("file", "gone") else 1
            if q(db, "SELECT count(*) FROM messages") != [(messages,)] or \
                    q(db, "SELECT count(*) FROM errors") != [(errors,)]:
                fail(f"{backend} {step}: {q(db, 'SELECT * FROM errors')}")
    print("a file replaced by a FIFO or a symlink, then removed: each run's rows a clean run's")


def case_no_file_place_shares_an_id(tmp):
    """Both backends: FIFOs under a Maildir message's unique name (one id):
    a FIFO renamed then removed, a message moved from new/ to cur/ with a
    FIFO made at its old name, a copy turned FIFO, a message deleted
    beside a FIFO of its name; each run's tables equal a clean run's.  The
    renamed FIFO's old error row stayed for good, and the moved message
    was lost (the FIFO's record cleared the old name's rows, and the
    rename then found nothing to move)."""
    n = 0
    for backend in ("--backend=uring", "--backend=sync"):
        for name, (make, steps) in clilib.FIFO_ID_SCENARIOS.items():
            n += 1
            d = os.path.join(tmp, str(n))
            m = clilib.fifo_id_maildir(d)
            make(m)
            db, args = os.path.join(d, "a.db"), [backend, "--max-size=1K", m]
            run(["--index=" + db] + args)
            for k, step in enumerate(steps):
                step(m)
                run(["--index=" + db] + args)
                equal_to_clean(db, d, "clean.db", args, f"{backend} {name}, step {k + 1}")
    print(f"{n} scenarios of FIFOs sharing a message's id: each run's rows a clean run's")


def case_changed_while_read(tmp):
    """A file that changes while it is read gets a files row with no inode,
    so that the next run reads it again, as --state does (its record may
    hold two versions' bytes; its size and mtime may be the last ones).
    /proc/version reads that way every time."""
    if not os.path.exists("/proc/version"):
        print("SKIP: no /proc/version")
        sys.exit(77)
    db = os.path.join(tmp, "mail.db")
    for n in range(3):
        p = run(["-q", "--index=" + db, "--stats=json", "/proc/version"], check_rc=0)
        if stats(p)["index"]["errors"] != 1:
            fail(f"run {n + 1}: {stats(p)['index']}: the file was not read again")
        # its statx size (0) differs from the size read anyway: the row
        # itself must say "read again", whatever the sizes
        if q(db, "SELECT dev, ino FROM files") != [(0, 0)]:
            fail(f"run {n + 1}: files row {q(db, 'SELECT * FROM files')}, expected no inode")
    print("a file that grew while read: a row with no inode, read again by each run")


def case_damaged(tmp):
    """An index whose table was dropped by hand: refused before any input
    is read, as a file not ours is (exit 2), naming the table in SQLite's
    words, rather than a bare "Input/output error"."""
    db = os.path.join(tmp, "mail.db")
    run(["-q", "--index=" + db, sample()], check_rc=0)
    c = sqlite3.connect(db)
    c.execute("DROP TABLE refs")
    c.commit()
    c.close()
    p = run(["--index=" + db, "--stats=json", sample()], check_rc=2)
    err = p.stderr.decode()
    if "tables were changed" not in err or "no such table: main.refs" not in err or \
            stats(p)["walk"]["entries"]:
        fail(f"a dropped table: {err!r}")
    # a search meeting damage says SQLite's words, not that the query is
    # at fault (that is said of FTS5's refusals only)
    c = sqlite3.connect(db)
    c.execute("UPDATE messages SET tags = '[not json'")
    c.commit()
    c.close()
    p = subprocess.run([ARGS.ingest, "search", db, "tag:seen"], capture_output=True)
    if p.returncode != 1 or b"malformed JSON" not in p.stderr or b"not a query" in p.stderr:
        fail(f"a search of damaged tags: exit {p.returncode}, {p.stderr!r}")
    # an index cut to its first page is damaged, not "not an SQLite
    # database", and left as it is
    cut = os.path.join(tmp, "cut.db")
    run(["-q", "--index=" + cut, sample()], check_rc=0)
    with open(cut, "rb") as f:
        page = int.from_bytes(f.read(18)[16:18], "big")
    os.truncate(cut, page)
    p = run(["--index=" + cut, sample()], check_rc=2)
    if b"a damaged SQLite database" not in p.stderr or os.path.getsize(cut) != page:
        fail(f"an index cut to one page: {p.stderr!r}, {os.path.getsize(cut)} bytes of {page}")
    print(f"a dropped table: {err.strip()}")


def case_enospc(tmp):
    """ENOSPC: the database on a full tmpfs; the run fails with exit 1 and
    says so, the database stays consistent, and once there is room the next
    run resumes and ends like a clean run."""
    mnt = os.path.join(tmp, "small")
    os.mkdir(mnt)
    # room for the sample's index (built aside, its text index in a second
    # file: ~590 KiB at the peak), not for 600 messages'
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt],
                      capture_output=True).returncode:
        print("SKIP: cannot mount a tmpfs (not root, or no mount namespace)")
        sys.exit(77)
    try:
        d = os.path.join(tmp, "md")
        mkcorpus(d, "--seed", "17", "--layout", "maildir", "--count", "600")
        # the disk already full when a run opens a database a complete
        # run left (no -wal, no -shm): the cause is named, not
        # "Input/output error"
        before = os.path.join(mnt, "before.db")
        run(["-q", "--index=" + before, sample()], check_rc=0)
        filler = os.path.join(mnt, "filler")
        with open(filler, "wb", buffering=0) as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
            except OSError:
                pass
        p = run(["--index=" + before, sample()], check_rc=1)
        if "No space left on device" not in p.stderr.decode():
            fail(f"a full disk at the open not named: {p.stderr!r}")
        for name in os.listdir(mnt):
            os.unlink(os.path.join(mnt, name))
        # a first run: the database built aside is dropped whole
        db = os.path.join(mnt, "first.db")
        p = run(["--index=" + db, "--batch-bytes=32K", d], check_rc=1)
        err = p.stderr.decode()
        if "cannot write the index" not in err or "No space left on device" not in err:
            fail(f"ENOSPC not reported: {err!r}")
        if os.listdir(mnt):
            fail(f"a first run that failed left {os.listdir(mnt)}")
        # an existing database: the open batch rolls back, the others stay
        db = os.path.join(mnt, "full.db")
        existing_db(tmp, db)
        p = run(["--index=" + db, "--batch-bytes=32K", "--stats=json", d], check_rc=1)
        err = p.stderr.decode()
        if "cannot write the index" not in err or "No space left on device" not in err:
            fail(f"ENOSPC not reported: {err!r}")
        got = messages_now(db)
        if not 0 < got < 600:
            fail(f"{got} messages after ENOSPC: the test did not fill the disk mid-run")
        # --stats counts the rows committed, not the batch rolled back
        if stats(p)["index"]["messages"] != got:
            fail(f"--stats says {stats(p)['index']} after ENOSPC, the index has {got} messages")
        subprocess.run(["mount", "-o", "remount,size=64m", mnt], check=True)
        completes_like_clean(tmp, db, d, "after ENOSPC")
        print(f"ENOSPC: a first run left nothing; an existing database kept {got} of 600"
              " messages, consistent, resumed")
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


def case_uri_like_name(tmp):
    """An index named like an SQLite URI (`--index=file:mail.db`, a path
    relative to the working directory) is that file: SQLite, with URIs
    enabled, opened a database named by the URI while ingest made and
    renamed the literal path, so the first run failed ("cannot put the
    index in place") leaving `mail.db.new` behind, and a search found
    nothing.  Now both runs and the search use the file named."""
    src = os.path.abspath(sample())
    ingest = os.path.abspath(ARGS.ingest)
    want = len([r for r in records(run([src]).stdout) if "error" not in r])
    for name in ("file:mail.db", ":memory:"):
        where = os.path.join(tmp, name.replace(":", "_"))
        os.mkdir(where)
        for i in range(2):   # a first run builds aside; the second updates
            p = subprocess.run([ingest, "--index=" + name, src], capture_output=True, cwd=where)
            if p.returncode != 0:
                fail(f"{name}, run {i + 1}: exit {p.returncode}: {p.stderr[-300:]!r}")
        names = sorted(os.listdir(where))
        if names != [name]:
            fail(f"{name}: the directory holds {names}, not the one index")
        got = q(os.path.join(where, name), "SELECT count(*) FROM messages")[0][0]
        if got != want:
            fail(f"{name}: {got} messages in the index, not {want}")
        p = subprocess.run([ingest, "search", name, "*", "--limit=1000"], capture_output=True,
                           cwd=where)
        if p.returncode != 0 or len(records(p.stdout)) != want:
            fail(f"{name}: search: exit {p.returncode}, {len(records(p.stdout))} hits of {want}: "
                 f"{p.stderr[-300:]!r}")
    print(f"--index=file:mail.db and --index=:memory:: {want} messages in the file of that name, "
          "all found by search")


def case_one_writer(tmp):
    """One run writes an index at a time.  A run that waits for its
    --files-from list (a FIFO) holds its database open; meanwhile a second
    run is refused (exit 1) and the first, once fed, ends whole.  First
    runs: the refused one removed the first's FILE.new as it left (its
    descriptor was set before its lock failed), and the first failed at the
    end ("cannot put the index in place").  In place: two runs interleaved
    their batches, each from the files it loaded, and over nested roots
    made one message two rows."""
    src = sample()
    fifo = os.path.join(tmp, "list")
    os.mkfifo(fifo)
    names = "".join(os.path.join(os.path.abspath(src), "cur", n) + "\n"
                    for n in sorted(os.listdir(os.path.join(src, "cur"))))
    db = os.path.join(tmp, "mail.db")
    for what, marker in (("a first run", db + ".new"), ("a run in place", db)):
        first = subprocess.Popen([ARGS.ingest, "--index=" + db, "--files-from=" + fifo],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # the first run holds its flock on the file (FILE.new, or FILE)
        for _ in range(3000):
            if first.poll() is not None:
                fail(f"{what}: the first run ended before its list came: {first.stderr.read()!r}")
            try:
                with open(marker, "rb") as f:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                break
            except FileNotFoundError:
                pass
            time.sleep(0.01)
        else:
            fail(f"{what}: the first run never locked {marker}")
        p = run(["--index=" + db, src], check_rc=1)
        want = "another run is creating it" if what == "a first run" else "another run is writing it"
        if want not in p.stderr.decode():
            fail(f"{what}: the second run said {p.stderr[-300:]!r}")
        with open(fifo, "w") as w:
            w.write(names)
        err = first.communicate(timeout=120)[1]
        if first.returncode != 0:
            fail(f"{what}: the first run, beside the refused one: exit {first.returncode}: {err[-300:]!r}")
        if q(db, "PRAGMA integrity_check") != [("ok",)]:
            fail(f"{what}: integrity_check failed")
    completes_like_clean(tmp, db, src, "after the refused runs")
    print("a second run refused beside a first run and beside a run in place; both first runs whole")


def case_orphan_wal(tmp):
    """A -wal and -shm, or a -journal, left beside no database (a run
    killed in place, another program's transaction cut short, then the
    database removed by hand, as README's "remove the file and index
    again" says) are not the new database's: SQLite replayed that -wal, or
    rolled that journal back, onto the file a first run renamed into
    place, which was then corrupt for good ("database disk image is
    malformed")."""
    src = sample()
    db = os.path.join(tmp, "mail.db")
    run(["--index=" + db, src])
    # another connection's committed pages, never checkpointed: what a
    # run killed in place leaves in the -wal
    subprocess.run([sys.executable, "-c",
                    "import os, sqlite3, sys\n"
                    "c = sqlite3.connect(sys.argv[1])\n"
                    "c.execute('PRAGMA wal_autocheckpoint = 0')\n"
                    "c.execute('CREATE TABLE junk (x)')\n"
                    "c.executemany('INSERT INTO junk VALUES (?)', [(i * 7919,) for i in range(20000)])\n"
                    "c.execute('DELETE FROM messages')\n"
                    "c.commit()\n"
                    "os._exit(0)\n", db], check=True)
    if not os.path.exists(db + "-wal") or os.path.getsize(db + "-wal") == 0:
        fail("no -wal with pages was left to test with")
    os.unlink(db)
    run(["--index=" + db, src])
    ok = q(db, "PRAGMA integrity_check")
    tables = [t[0] for t in q(db, "SELECT name FROM sqlite_schema WHERE type = 'table'")]
    if ok != [("ok",)] or "junk" in tables:
        fail(f"the new database took the orphan -wal: integrity_check {ok[:3]}, tables {tables}")
    completes_like_clean(tmp, db, src, "after an orphan -wal")
    # a hot journal beside no database: another program's transaction cut
    # short, the database then removed; SQLite rolled it back onto the new
    # file
    other = os.path.join(tmp, "other.db")
    subprocess.run([sys.executable, "-c",
                    "import os, sqlite3, sys\n"
                    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                    "c.execute('PRAGMA cache_size = 1')\n"
                    "c.execute('CREATE TABLE t (x)')\n"
                    "for i in range(300): c.execute('INSERT INTO t VALUES (?)', ('z' * 1000,))\n"
                    "c.execute('BEGIN')\n"
                    "c.execute('UPDATE t SET x = ?', ('y' * 1000,))\n"
                    "os._exit(0)\n", other], check=True)
    if not os.path.exists(other + "-journal"):
        fail("no hot journal was left to test with")
    os.unlink(other)
    run(["--index=" + other, src])
    ok = q(other, "PRAGMA integrity_check")
    if ok != [("ok",)] or os.path.exists(other + "-journal"):
        fail(f"the new database took the orphan journal: integrity_check {ok[:3]}")
    completes_like_clean(tmp, other, src, "after an orphan journal")
    print("an orphan -wal and an orphan journal beside no database: removed, the new index whole")


def case_refused_untouched(tmp):
    """A database a run refuses is left as it was, byte for byte, its
    journal or WAL included: the run opened it for writing before it
    judged it, which rolled back another program's hot journal and
    checkpointed (then removed) its WAL.  Its -shm aside: the WAL's index
    in shared memory, which any reader may rebuild."""
    src = sample()
    cases = {
        # tables in the WAL only: the file itself is one page
        "wal": ("PRAGMA journal_mode=WAL", "PRAGMA wal_autocheckpoint=0"),
        # a transaction cut short: a hot rollback journal beside the file
        "journal": ("PRAGMA journal_mode=DELETE", "PRAGMA cache_size=1"),
    }
    for name, pragmas in cases.items():
        db = os.path.join(tmp, name + ".db")
        code = ("import os, sqlite3, sys\n"
                "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                + "".join(f"c.execute({p!r})\n" for p in pragmas) +
                "c.execute('CREATE TABLE t(x)')\n"
                "for i in range(200): c.execute('INSERT INTO t VALUES (?)', ('z' * 1000,))\n"
                + ("c.execute('BEGIN')\n"
                   "c.execute('UPDATE t SET x = ?', ('y' * 1000,))\n"
                   if name == "journal" else "") +
                "os._exit(0)\n")
        subprocess.run([sys.executable, "-c", code, db], check=True)
        files = sorted(f for f in os.listdir(tmp) if f.startswith(name + ".db"))
        extra = name + ".db-journal" if name == "journal" else name + ".db-wal"
        if extra not in files:
            fail(f"{name}: no {extra} to test with: {files}")
        # the -shm is the WAL's index in shared memory, which any reader
        # may rebuild: not the database's content
        def contents():
            return {f: open(os.path.join(tmp, f), "rb").read()
                    for f in os.listdir(tmp) if f.startswith(name + ".db") and not f.endswith("-shm")}
        before = contents()
        p = run(["--index=" + db, src], check_rc=2)
        after = contents()
        if b"not an ingest index" not in p.stderr or after.keys() != before.keys() or \
                any(after[f] != before[f] for f in before):
            fail(f"{name}: {p.stderr!r}; files before {sorted(before)}, after {sorted(after)}, "
                 f"changed {[f for f in before if after.get(f) != before[f]]}")
    print("another program's database with a WAL or a hot journal: refused, byte for byte as it was")


def case_stdin_messages(tmp):
    """Messages piped in one by one (an MDA's `ingest --index=FILE -`)
    each stay in the index, a second delivery of the same bytes as one:
    every one was filed under one place, "-" in the working directory,
    and replaced the one before, so the index held only the last."""
    db = os.path.join(tmp, "mail.db")
    for subject in ("first", "first", "second", "third"):
        msg = b"From: a@example.org\nSubject: " + subject.encode() + b"\n\nbody\n"
        clilib.run(["--index=" + db, "-"], stdin=msg, check_rc=0)
    got = sorted(r[0] for r in q(db, "SELECT subject FROM messages"))
    if got != ["first", "second", "third"]:
        fail(f"messages piped in: {got}")
    hits = records(run(["search", db, "*"]).stdout)
    if sorted(h["subject"] for h in hits) != got:
        fail(f"searched: {hits}")
    print(f"three messages piped in, one twice: {got}")


CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}
# meson registers one test per case from `--list`: a case_ function is a
# test, in the cli suite with a 120 s timeout unless named here.
TIMEOUT = {"sigkill": 300, "sigkill_20k": 3600}
SLOW = {"sigkill_20k"}   # minutes: the slow setup (index-sigkill is its 800-message twin)


def main():
    if sys.argv[1:] == ["--list"]:
        for name in CASES:
            print(name, TIMEOUT.get(name, 120), "slow" if name in SLOW else "cli")
        return
    clilib.main(CASES, "ingest-index-", extra=("--source",),
                cleanup=lambda tmp: subprocess.run(["chmod", "-R", "u+rwX", tmp], capture_output=True))

if __name__ == "__main__":
    main()
