#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Differential test: ingest against an independent parser, postal-mime.

  differential.py --ingest build/src/ingest [--peer postal|python] [-v]

Every corpus message (tests/corpus/golden/**.eml, the generated golden cases,
and tests/corpus/real/<corpus>/**) is parsed by ingest (one process,
--files-from) and by the peer: postal-mime through postal.mjs (one node
process), or, with --peer python, CPython's email package
(policy.default), which is how the real corpora's expected records were
cross-checked a second time.  Fields compared:

  message_id        the Message-ID
  from, to, cc      the addr-specs, in order, group members flattened
                    (display names are not compared)
  subject           the decoded Subject
  date              the Date as a UTC instant
  attachment_names  the attachments' file names (those that have one)
  attachment_count  how many attachments
  records           how many records the file became (1: a file is one
                    message; ingest splits a file that starts with an mbox
                    From_ line at every From_ line, and then the first
                    record is the one compared)

Normalisation touches representation only, never content (README,
"Differential test"):
  * absent, null and "" are the same value for message_id and subject; a
    missing address field is the empty list;
  * message_id: surrounding white space and ONE pair of enclosing angle
    brackets are removed (ingest stores the id without brackets, RFC 5322
    3.6.4's msg-id; postal-mime returns the field as written);
  * subject: white space at both ends is removed (ingest trims the unfolded
    value; postal-mime keeps a leading space in some cases);
  * date: both sides to YYYY-MM-DDTHH:MM:SSZ (postal-mime writes
    milliseconds, ".000Z"); postal-mime returns the raw text when it cannot
    parse a date: that is no date, null, like ingest's date null;
  * attachment_names: compared as a sorted list (the order of the MIME walk
    is not a field of either record); a part without a file name is counted
    but not named.
Nothing is lower-cased, no white space inside a value is touched, no
decoding is redone.

Every (file, field) where the two disagree must be listed in
tests/corpus/DIFFERENCES.md, in its table (| file | field | ingest says |
postal-mime says | who is right | why |), with the verdict and the RFC
section.  The test prints agreement figures per field and exits 1 when a
disagreement is not listed, 0 otherwise, 77 (skip) when node or postal-mime
is missing (`npm install` in tests/differential).  Listed rows that agree
now are reported as stale (not a failure: a parser fix makes them so).
"""
import argparse
import email
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from datetime import timezone
from email import policy

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(os.path.dirname(HERE), "corpus")
DIFFERENCES = os.path.join(CORPUS, "DIFFERENCES.md")
REAL_SKIP = {"ORIGIN.md", "README"}
FIELDS = ["records", "message_id", "from", "to", "cc", "subject", "date",
          "attachment_names", "attachment_count"]


def corpus_files(tmp):
    """[(name relative to tests/corpus, path to read)]."""
    out = []
    golden = os.path.join(CORPUS, "golden")
    for dp, dns, fns in os.walk(golden):
        dns.sort()
        for fn in sorted(fns):
            p = os.path.join(dp, fn)
            rel = os.path.relpath(p, CORPUS)
            if fn.endswith(".eml"):
                out.append((rel, p))
            elif fn.endswith(".gen.py"):
                g = os.path.join(tmp, rel.replace("/", "__")[:-7] + ".eml")
                with open(g, "wb") as f:
                    subprocess.run([sys.executable, p], stdout=f, check=True)
                out.append((rel, g))
    real = os.path.join(CORPUS, "real")
    for corpus in sorted(os.listdir(real)) if os.path.isdir(real) else []:
        root = os.path.join(real, corpus)
        for dp, dns, fns in os.walk(root):
            dns.sort()
            for fn in sorted(fns):
                p = os.path.join(dp, fn)
                if os.path.relpath(p, root) in REAL_SKIP:
                    continue
                out.append((os.path.relpath(p, CORPUS), p))
    return out


# ---- the two sides, as {field: value} -------------------------------------

def addrs_of_ingest(lst):
    out = []
    for a in lst or []:
        if "group" in a:
            out += [m.get("address") or "" for m in a.get("members") or []]
        else:
            out.append(a.get("address") or "")
    return out


def from_ingest(rec):
    atts = rec.get("attachments") or []
    return {
        "records": 1,
        "message_id": rec.get("message_id"),
        "from": addrs_of_ingest(rec.get("from")),
        "to": addrs_of_ingest(rec.get("to")),
        "cc": addrs_of_ingest(rec.get("cc")),
        "subject": rec.get("subject"),
        "date": rec.get("date"),
        "attachment_names": [a["filename"] for a in atts if a.get("filename")],
        "attachment_count": len(atts),
    }


ISO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z$")


def from_postal(rec):
    d = rec.get("date")
    m = ISO.match(d) if isinstance(d, str) else None
    return {
        "records": 1,
        "message_id": rec.get("message_id"),
        "from": rec.get("from") or [],
        "to": rec.get("to") or [],
        "cc": rec.get("cc") or [],
        "subject": rec.get("subject"),
        "date": m.group(1) + "Z" if m else None,
        "attachment_names": [n for n in rec.get("attachments") or [] if n],
        "attachment_count": rec.get("attachment_count") or 0,
    }


def from_python(path):
    """CPython's email package, policy.default: the second opinion."""
    with open(path, "rb") as f:
        msg = email.message_from_binary_file(f, policy=policy.default)

    def hdr(name):
        try:
            return msg[name]
        except Exception:
            return None

    def addrs(name):
        h = hdr(name)
        try:
            return [a.addr_spec for a in h.addresses] if h is not None else []
        except Exception:
            return []

    date = None
    h = hdr("date")
    try:
        dt = h.datetime if h is not None else None
        if dt is not None:
            if dt.tzinfo is None:
                dt = dt.replace(tzinfo=timezone.utc)
            date = dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except Exception:
        date = None
    names, count = [], 0
    for part in msg.walk():
        if part.is_multipart():
            continue
        disp = part.get_content_disposition()
        ctype = part.get_content_type()
        fn = part.get_filename()
        if disp == "attachment" or fn or ctype not in ("text/plain", "text/html"):
            count += 1
            if fn:
                names.append(str(fn))
    mid = hdr("message-id")
    subj = hdr("subject")
    return {
        "records": 1,
        "message_id": str(mid) if mid is not None else None,
        "from": addrs("from"), "to": addrs("to"), "cc": addrs("cc"),
        "subject": str(subj) if subj is not None else None,
        "date": date, "attachment_names": names, "attachment_count": count,
    }


def normalise(field, v):
    if field == "message_id":
        v = (v or "").strip()
        if v.startswith("<") and v.endswith(">"):
            v = v[1:-1]
        return v
    if field == "subject":
        return (v or "").strip()
    if field == "attachment_names":
        return sorted(v)
    return v


# ---- DIFFERENCES.md ------------------------------------------------------

def read_listed():
    """{(file, field)} from the table rows of DIFFERENCES.md."""
    listed = set()
    if not os.path.exists(DIFFERENCES):
        return listed
    for line in open(DIFFERENCES, encoding="utf-8"):
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) < 6 or cells[0] in ("file", "") or set(cells[0]) <= set("-: "):
            continue
        listed.add((cells[0].strip("`"), cells[1].strip("`")))
    return listed


def show(v):
    return json.dumps(v, ensure_ascii=False)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ingest", required=True)
    ap.add_argument("--peer", choices=["postal", "python"], default="postal")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every disagreement")
    ap.add_argument("--markdown", action="store_true",
                    help="print the disagreements as DIFFERENCES.md table rows (to fill in)")
    opt = ap.parse_args()

    if opt.peer == "postal":
        node = shutil.which("node") or shutil.which("nodejs")
        if not node:
            print("SKIP: node is not installed: the differential test needs Node.js "
                  "to run postal-mime")
            return 77
        if not os.path.isdir(os.path.join(HERE, "node_modules", "postal-mime")):
            print("SKIP: postal-mime is not installed: run `npm install` in "
                  "tests/differential (.ci/run does)")
            return 77

    tmp = tempfile.mkdtemp(prefix="ingest-differential-")
    try:
        files = corpus_files(tmp)
        listing = os.path.join(tmp, "list")
        with open(listing, "wb") as f:
            for _, p in files:
                f.write(os.fsencode(os.path.abspath(p)) + b"\n")
        r = subprocess.run([opt.ingest, "--quiet", "--files-from=" + listing,
                            "--fields=path,message_id,from,to,cc,subject,date,attachments,error"],
                           stdout=subprocess.PIPE, check=False)
        ours = {}
        for line in r.stdout.splitlines():
            rec = json.loads(line)
            if rec["path"] in ours:
                ours[rec["path"]]["records"] += 1
            else:
                ours[rec["path"]] = from_ingest(rec)
        theirs = {}
        if opt.peer == "postal":
            r = subprocess.run([node, os.path.join(HERE, "postal.mjs"), listing],
                               stdout=subprocess.PIPE, check=True, cwd=HERE)
            for line in r.stdout.splitlines():
                rec = json.loads(line)
                theirs[rec["path"]] = from_postal(rec)
        else:
            for _, p in files:
                theirs[os.path.abspath(p)] = from_python(p)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    peer = "postal-mime" if opt.peer == "postal" else "python-email"
    listed = read_listed() if opt.peer == "postal" else set()
    agree = {f: 0 for f in FIELDS}
    unlisted, disagreements = [], set()
    for name, p in files:
        a, b = ours.get(os.path.abspath(p)), theirs.get(os.path.abspath(p))
        if a is None or b is None:
            print("FAIL %s: no record from %s" % (name, "ingest" if a is None else peer))
            unlisted.append((name, "*", None, None))
            continue
        for f in FIELDS:
            x, y = normalise(f, a[f]), normalise(f, b[f])
            if x == y:
                agree[f] += 1
                continue
            disagreements.add((name, f))
            if (name, f) not in listed:
                unlisted.append((name, f, x, y))
            elif opt.verbose:
                print("listed %s %s: ingest %s, %s %s" % (name, f, show(x), peer, show(y)))

    n = len(files)
    print("ingest vs %s on %d messages:" % (peer, n))
    for f in FIELDS:
        print("  %-17s %d/%d agree" % (f + ":", agree[f], n))
    if opt.peer != "postal":
        for name, f, x, y in unlisted:
            print("%s %s: ingest %s, %s %s" % (name, f, show(x), peer, show(y)))
        return 0
    stale = sorted(listed - disagreements)
    for name, f in stale:
        print("note: DIFFERENCES.md lists %s %s, which agree now: remove the row" % (name, f))
    if opt.markdown:
        for name, f, x, y in unlisted:
            print("| %s | %s | %s | %s | ? | ? |" % (name, f, show(x).replace("|", "\\|"),
                                                   show(y).replace("|", "\\|")))
        return 0
    if unlisted:
        print("FAIL: %d disagreement(s) not explained in tests/corpus/DIFFERENCES.md:"
              % len(unlisted))
        for name, f, x, y in unlisted:
            print("  %s  %s\n    ingest:      %s\n    postal-mime: %s" % (name, f, show(x), show(y)))
        return 1
    print("every disagreement (%d) is explained in tests/corpus/DIFFERENCES.md"
          % len(disagreements))
    return 0


if __name__ == "__main__":
    sys.exit(main())
