#!/usr/bin/env python3
"""The options the command accepts are the ones --help, the man page and
README document: each long option in main.c's getopt table must appear in
all three, and --help must fit a screen (40 lines of at most 80 columns)."""
import argparse
import re
import subprocess
import sys


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingest", required=True)
    ap.add_argument("--source", required=True, help="the source tree")
    a = ap.parse_args()
    main_c = open(a.source + "/src/main.c", encoding="utf-8").read()
    table = main_c[main_c.index("longopts[] = {"):]
    table = table[:table.index("};")]
    options = re.findall(r'\{ "([a-z0-9-]+)",', table)
    if len(options) < 20:
        fail(f"found only {len(options)} options in main.c's table: the parse is stale")
    helptext = subprocess.run([a.ingest, "--help"], capture_output=True, text=True, check=True).stdout
    man = open(a.source + "/docs/ingest.1", encoding="utf-8").read().replace("\\-", "-")
    man = re.sub(r"\\f[BIRP]", "", man)
    readme = open(a.source + "/README.md", encoding="utf-8").read()
    missing = []
    for name in options:
        pat = re.compile(r"--" + re.escape(name) + r"(?![a-z-])")
        for where, text in (("--help", helptext), ("the man page", man), ("README", readme)):
            if not pat.search(text):
                missing.append(f"--{name} in {where}")
    if missing:
        fail("undocumented: " + ", ".join(missing))
    lines = helptext.splitlines()
    wide = [ln for ln in lines if len(ln) > 80]
    if len(lines) > 40 or wide:
        fail(f"--help is {len(lines)} lines, {len(wide)} wider than 80 columns")
    if "Examples" not in helptext:
        fail("--help shows no examples")
    print(f"{len(options)} options documented in --help ({len(lines)} lines), the man page and README")


if __name__ == "__main__":
    main()
