#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Golden-record runner for ingest's parser (README, "Corpus tests").

Two suites share one runner:

  golden  tests/corpus/golden/<area>/<case>.eml with <case>.json, the record
          ingest must produce for it.  A case may instead be generated:
          <case>.gen.py prints the message on stdout (for the caps, whose
          inputs are too large to commit).  <case>.args, when present, holds
          extra command-line arguments for that case, one a line (--max-text=64).
          A generated case's record leaves out the headers field (tens of
          thousands of generated fields are no test data worth committing).
  real    tests/corpus/real/<corpus>/<path> (copied data, never modified) with
          tests/corpus/real-expected/<corpus>/<path>.json.

Each group of cases that share their arguments is parsed by ONE ingest
process (--files-from with the whole list, records matched to files by
path), so the suite costs a few process starts, not one per message.

Records are compared field by field as JSON values.  Only the parsed fields
are compared (FIELDS below); path, root, size and mtime are I/O facts that
depend on the checkout.  A key missing from one side and present in the
other is a difference (ingest's records are sparse: absent and null are
not the same thing).

  run_corpus.py --ingest build/src/ingest                 # both suites
  run_corpus.py --ingest build/src/ingest --suite golden --area mime
  run_corpus.py --ingest build/src/ingest --update        # rewrite the .json

--update rewrites each expected file from ingest's actual output; review the
result with `git diff tests/corpus` before committing (README).  The golden
suite also checks that every warning code of src/mail/mail.h's
MAIL_WARNINGS is expected by at least one case, except those listed with a
reason in golden/warnings-allowlist.txt.

Exit: 0 all cases pass, 1 a case failed or coverage is missing, 2 usage.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
GOLDEN = os.path.join(HERE, "golden")
REAL = os.path.join(HERE, "real")
REAL_EXPECTED = os.path.join(HERE, "real-expected")
MAIL_H = os.path.join(TOP, "src", "mail", "mail.h")
ALLOWLIST = os.path.join(GOLDEN, "warnings-allowlist.txt")

FIELDS = ["message_id", "in_reply_to", "references", "date", "date_raw", "from",
          "sender", "reply_to", "to", "cc", "bcc", "subject", "list_id",
          "content_type", "text", "text_truncated", "attachments", "parts",
          "warnings", "detected_type", "error"]
# Golden records also hold every header field in order (--headers): that is
# where unfolding, repeated fields and RFC 2047 in other fields show.
GOLDEN_FIELDS = FIELDS + ["headers"]
# Files of a real corpus that are not part of it: our provenance note and
# upstream's README about its folders.
REAL_SKIP = {"ORIGIN.md", "README"}


class Case:
    def __init__(self, name, src, expected, args=(), gen=None):
        self.name = name          # shown in reports: golden/mime/foo
        self.src = src            # the message file (or generator)
        self.expected = expected  # path of the .json
        self.args = tuple(args)
        self.gen = gen            # generator script, or None
        self.input = src          # what ingest reads (set for generated cases)


def read_args(path):
    if not os.path.exists(path):
        return ()
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(line)
    return tuple(out)


def golden_cases(area=None):
    cases = []
    if not os.path.isdir(GOLDEN):
        return cases
    for a in sorted(os.listdir(GOLDEN)):
        d = os.path.join(GOLDEN, a)
        if not os.path.isdir(d) or (area and a != area):
            continue
        for fn in sorted(os.listdir(d)):
            if fn.endswith(".eml"):
                stem, gen = fn[:-4], None
            elif fn.endswith(".gen.py"):
                stem, gen = fn[:-7], os.path.join(d, fn)
            else:
                continue
            base = os.path.join(d, stem)
            c = Case("golden/%s/%s" % (a, stem), os.path.join(d, fn), base + ".json",
                     read_args(base + ".args"), gen)
            cases.append(c)
    return cases


def real_cases(area=None):
    cases = []
    if not os.path.isdir(REAL):
        return cases
    for corpus in sorted(os.listdir(REAL)):
        root = os.path.join(REAL, corpus)
        if not os.path.isdir(root) or (area and area != corpus):
            continue
        for dp, dns, fns in os.walk(root):
            dns.sort()
            for fn in sorted(fns):
                rel = os.path.relpath(os.path.join(dp, fn), root)
                if rel in REAL_SKIP:
                    continue
                cases.append(Case("real/%s/%s" % (corpus, rel), os.path.join(dp, fn),
                                  os.path.join(REAL_EXPECTED, corpus, rel + ".json")))
    return cases


def run_ingest(ingest, cases, fields, tmp):
    """Parses every case with one ingest process per distinct argument set;
    returns {case: [records]}: one record per file, unless ingest split the
    file as an mbox (every case file is ONE message, so that is a failure)."""
    groups = {}
    for c in cases:
        groups.setdefault(c.args, []).append(c)
    out = {}
    for args, group in groups.items():
        by_path = {}
        listing = os.path.join(tmp, "files-%d" % len(out))
        with open(listing, "wb") as f:
            for c in group:
                p = os.path.abspath(c.input)
                by_path[p] = c
                f.write(os.fsencode(p) + b"\0")
        cmd = [ingest, "--quiet", "--threads=2", "-0", "--files-from=" + listing,
               "--fields=path," + ",".join(fields)] + list(args)
        if "headers" in fields:
            cmd.append("--headers")
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if r.returncode != 0:
            sys.stderr.write("run_corpus: %s exited %d\n%s" % (
                " ".join(cmd), r.returncode, r.stderr.decode("utf-8", "replace")))
        for line in r.stdout.splitlines():
            try:
                rec = json.loads(line)
            except ValueError as e:
                sys.stderr.write("run_corpus: ingest wrote a line that is not JSON (%s): %r\n"
                                 % (e, line[:200]))
                continue
            c = by_path.get(rec.pop("path", None))
            if c is not None:
                keep = [f for f in fields if not (c.gen and f == "headers")]
                out.setdefault(c, []).append({k: v for k, v in rec.items() if k in keep})
    for c in cases:
        out.setdefault(c, [])
    return out


def show(v, limit=300):
    s = json.dumps(v, ensure_ascii=False)
    return s if len(s) <= limit else s[:limit] + "...(%d chars)" % len(s)


MISSING = object()


def diff(expected, actual):
    """[(field, expected, actual)] for the fields that differ."""
    rows = []
    for k in sorted(set(expected) | set(actual), key=lambda k: (k not in FIELDS + ["headers"],
                                                                 (FIELDS + ["headers"]).index(k)
                                                                 if k in FIELDS + ["headers"] else 0, k)):
        e, a = expected.get(k, MISSING), actual.get(k, MISSING)
        if e != a:
            rows.append((k, e, a))
    return rows


def write_expected(path, rec):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(rec, f, ensure_ascii=False, indent=2)
        f.write("\n")


def warning_codes():
    text = open(MAIL_H, encoding="utf-8").read()
    m = re.search(r"#define MAIL_WARNINGS\(X\)(.*?)\n\n", text, re.S)
    return re.findall(r'X\(\w+,\s*"([a-z0-9-]+)"\)', m.group(1) if m else "")


def read_allowlist():
    allowed = {}
    if os.path.exists(ALLOWLIST):
        for line in open(ALLOWLIST, encoding="utf-8"):
            line = line.strip()
            if line and not line.startswith("#"):
                code, _, why = line.partition(" ")
                allowed[code] = why.strip()
    return allowed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ingest", required=True, help="the ingest executable")
    ap.add_argument("--suite", choices=["golden", "real", "all"], default="all")
    ap.add_argument("--area", help="golden: an area (headers, mime...); real: a corpus (notmuch)")
    ap.add_argument("--update", action="store_true",
                    help="rewrite the expected records from actual output")
    ap.add_argument("-v", "--verbose", action="store_true", help="list passing cases too")
    opt = ap.parse_args()

    if not os.access(opt.ingest, os.X_OK):
        sys.stderr.write("run_corpus: %s is not executable\n" % opt.ingest)
        return 2
    suites = ["golden", "real"] if opt.suite == "all" else [opt.suite]
    tmp = tempfile.mkdtemp(prefix="ingest-corpus-")
    failed = total = 0
    try:
        for suite in suites:
            cases = golden_cases(opt.area) if suite == "golden" else real_cases(opt.area)
            fields = GOLDEN_FIELDS if suite == "golden" else FIELDS
            for c in cases:
                if c.gen:
                    c.input = os.path.join(tmp, c.name.replace("/", "__") + ".eml")
                    with open(c.input, "wb") as f:
                        subprocess.run([sys.executable, c.gen], stdout=f, check=True)
            actual = run_ingest(opt.ingest, cases, fields, tmp)
            seen_warnings = set()
            for c in cases:
                total += 1
                recs = actual[c]
                if not recs:
                    failed += 1
                    print("FAIL %s: ingest wrote no record for it" % c.name)
                    continue
                a = recs[0]
                if len(recs) > 1 and not opt.update:
                    failed += 1
                    print("FAIL %s: ingest wrote %d records for this one message "
                          "(split as an mbox); the first is compared below" % (c.name, len(recs)))
                    if not os.path.exists(c.expected) or not diff(json.load(open(c.expected, encoding="utf-8")), a):
                        continue
                if opt.update:
                    old = None
                    if os.path.exists(c.expected):
                        old = json.load(open(c.expected, encoding="utf-8"))
                    if old != a:
                        write_expected(c.expected, a)
                        print("updated %s" % os.path.relpath(c.expected, HERE))
                    seen_warnings.update(a.get("warnings") or [])
                    continue
                if not os.path.exists(c.expected):
                    failed += 1
                    print("FAIL %s: no expected record %s (run with --update, then review)"
                          % (c.name, os.path.relpath(c.expected, HERE)))
                    continue
                e = json.load(open(c.expected, encoding="utf-8"))
                seen_warnings.update(e.get("warnings") or [])
                rows = diff(e, a)
                if rows:
                    failed += len(recs) == 1    # a split file is counted once
                    print("FAIL %s (%s)" % (c.name, os.path.relpath(c.src, HERE)))
                    for k, ev, av in rows:
                        print("  %s:" % k)
                        print("    expected: %s" % ("<absent>" if ev is MISSING else show(ev)))
                        print("    actual:   %s" % ("<absent>" if av is MISSING else show(av)))
                elif opt.verbose:
                    print("ok   %s" % c.name)
            if suite == "golden" and not opt.area:
                allowed = read_allowlist()
                missing = [w for w in warning_codes()
                           if w not in seen_warnings and w not in allowed]
                if missing:
                    failed += 1
                    print("FAIL warning coverage: no golden case expects %s "
                          "(add a case, or list the code with its reason in %s)"
                          % (", ".join(missing), os.path.relpath(ALLOWLIST, HERE)))
                else:
                    print("warning coverage: all %d codes of MAIL_WARNINGS expected by a case%s"
                          % (len(warning_codes()),
                             " (allowlisted: %s)" % ", ".join(sorted(allowed)) if allowed else ""))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("%d of %d cases %s" % (total - failed if not opt.update else total, total,
                                 "checked" if opt.update else "pass"))
    return 1 if failed and not opt.update else 0


if __name__ == "__main__":
    sys.exit(main())
