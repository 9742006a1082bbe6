#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The options the command accepts are the ones --help, the man page and
README document: each long option in main.c's getopt table must appear in
all three, and --help must fit a screen (40 lines of at most 80 columns).

With --cc and --build, the build is installed as README says (`meson
install`, here into a scratch DESTDIR) and README's "Library" example is
compiled with README's command line, `pkg-config --cflags --libs ingest`
against that installed copy (warnings are errors), and run on the sample
Maildir; each function's name is a man3 page leading to libingest(3); with
--python and --pythonpath, its "Python" example is run with the built
module.  Each must do what README says it does."""
import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def readme_block(readme, section, lang):
    """The first ```lang block of README's `## section`."""
    part = readme[readme.index("\n## " + section + "\n"):]
    part = part[:part.find("\n## ", 4) if "\n## " in part[4:] else len(part)]
    m = re.search(r"```" + lang + r"\n(.*?)```", part, re.S)
    if not m:
        fail(f"README's {section} section has no {lang} example")
    return m.group(1)


def check_library_example(a, readme):
    code = readme_block(readme, "Library", "c")
    if "meson install" not in readme[readme.index("\n## Library\n"):readme.index("\n## Python\n")]:
        fail("README's Library section gives no install command")
    sample = os.path.join(a.source, "tests", "sample", "Maildir")
    with tempfile.TemporaryDirectory() as d:
        dest = os.path.join(d, "dest")
        subprocess.run(["meson", "install", "-C", a.build, "--no-rebuild", "--quiet", "--destdir", dest],
                       check=True, stdout=subprocess.DEVNULL)
        # `man 3 NAME` for every function of the header opens libingest(3)
        header = open(os.path.join(a.source, "include", "ingest.h")).read()
        functions = re.findall(r"INGEST_API[^;(]*?\b(ingest_\w+)\s*\(", header)
        pages = glob.glob(os.path.join(dest, "**", "man3", "libingest.3"), recursive=True)
        if len(pages) != 1 or len(functions) < 20:
            fail(f"meson install put {len(pages)} libingest.3; {len(functions)} functions in ingest.h")
        unlinked = [f for f in functions
                    if os.path.realpath(os.path.join(os.path.dirname(pages[0]), f + ".3")) != pages[0]]
        if unlinked:
            fail(f"no man3 page leads to libingest(3) for {unlinked}")
        pcs = glob.glob(os.path.join(dest, "**", "pkgconfig", "ingest.pc"), recursive=True)
        if len(pcs) != 1:
            fail(f"meson install put {len(pcs)} ingest.pc under DESTDIR")
        # the installed copy is under DESTDIR: its prefix moved there
        prefix = re.search(r"^prefix=(.*)$", open(pcs[0]).read(), re.M).group(1)
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.dirname(pcs[0]))
        flags = subprocess.run(["pkg-config", "--define-variable=prefix=" + dest + prefix, "--cflags",
                                "--libs", "ingest"], env=env, capture_output=True, text=True,
                               check=True).stdout.split()
        libdirs = [f[2:] for f in flags if f.startswith("-L")]
        if not libdirs or not libdirs[0].startswith(dest) or \
                not any(f.startswith("-I" + dest) for f in flags):
            fail(f"pkg-config's flags do not name the installed copy: {flags}")
        src, exe = os.path.join(d, "example.c"), os.path.join(d, "example")
        open(src, "w").write(code)
        subprocess.run([a.cc, src, "-o", exe, "-Wall", "-Wextra", "-Werror"] + flags +
                       ["-Wl,-rpath," + libdirs[0]] +
                       (["-fsanitize=" + a.sanitize] if a.sanitize else []), check=True)
        got = subprocess.run([exe, sample], capture_output=True, check=True).stdout
    want = subprocess.run([a.ingest, "-q", "--fields=path,subject", sample], capture_output=True,
                          check=True).stdout
    want += json.dumps({"path": "", "subject": "hello"}, separators=(",", ":")).encode() + b"\n"
    if got != want:
        fail(f"README's Library example printed {got[-300:]!r}, not {want[-300:]!r}")
    print(f"README's Library example, built with pkg-config against an installed copy: "
          f"{len(got.splitlines())} records, as the command's")


def check_python_example(a, readme):
    code = readme_block(readme, "Python", "python")
    env = dict(os.environ, PYTHONPATH=a.pythonpath)
    if a.preload:
        env["LD_PRELOAD"] = a.preload
    p = subprocess.run([a.python, "-c", code], cwd=a.source, env=env, capture_output=True,
                       text=True)
    n = len(subprocess.run([a.ingest, "-q", os.path.join(a.source, "tests", "sample", "Maildir")],
                           capture_output=True, check=True).stdout.splitlines())
    if p.returncode or not p.stdout.startswith(f"{n} records"):
        fail(f"README's Python example: exit {p.returncode}, {p.stdout!r} {p.stderr[-500:]!r}")
    print("README's Python example: " + p.stdout.strip())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ingest", required=True)
    ap.add_argument("--source", required=True, help="the source tree")
    ap.add_argument("--cc", help="compile README's Library example with this")
    ap.add_argument("--build", help="the build directory, installed into a scratch DESTDIR")
    ap.add_argument("--python", help="run README's Python example with this interpreter")
    ap.add_argument("--pythonpath", help="where the built module is")
    ap.add_argument("--sanitize", help="the build's -fsanitize= list, for the example's link")
    ap.add_argument("--preload", help="LD_PRELOAD for the Python example (a sanitized module)")
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
    if a.cc and a.build:
        check_library_example(a, readme)
    if a.python and a.pythonpath:
        check_python_example(a, readme)


if __name__ == "__main__":
    main()
