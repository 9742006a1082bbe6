#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The public header and the shared library's ABI, as an embedder meets them.

- include/ingest.h compiles alone as C99 -pedantic and as C++ (warnings are
  errors), and a C++ translation unit can call through it;
- libingest exports exactly the functions the header declares, each in the
  version node INGEST_1.0 of src/libingest.map, and its soname is
  libingest.so.1;
- the man page libingest(3) names every one of them, and its SYNOPSIS gives
  every prototype and callback type as the header declares them;
- every option name src/options.c takes is listed in the header's comment
  of ingest_options_set();
- the version is one: meson's project version, the header's
  INGEST_VERSION_* macros and pyproject.toml's (pip's) agree;
- the Python module, where built, exports PyInit_ingest alone: the
  internal library it links keeps its ingest_* to itself."""
import argparse
import os
import re
import subprocess
import sys
import tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--header", required=True)
ap.add_argument("--lib", required=True)
ap.add_argument("--cc", required=True)
ap.add_argument("--cxx", default="")
ap.add_argument("--man", help="libingest.3: must name every function of the header")
ap.add_argument("--options-c", help="src/options.c: its option names must be in the header")
ap.add_argument("--version", help="meson's project version")
ap.add_argument("--pyproject", help="pyproject.toml: its version must be --version")
ap.add_argument("--pymodule", default="", help="the built Python module (empty: not built)")
args = ap.parse_args()

failures = []


def compile_header(compiler, lang, std):
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t." + ("c" if lang == "c" else "cc"))
        with open(src, "w") as f:
            # the header alone, then a use of it
            f.write('#include "ingest.h"\n'
                    "int main(void) { return ingest_check_version(INGEST_VERSION_MAJOR,"
                    " INGEST_VERSION_MINOR, INGEST_VERSION_MICRO) ? 0 : 1; }\n")
        cmd = [compiler, "-x", lang, "-std=" + std, "-pedantic-errors", "-Wall", "-Wextra",
               "-Werror", "-fsyntax-only", "-I", os.path.dirname(args.header), src]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            failures.append(f"{' '.join(cmd)}:\n{p.stderr}")
        else:
            print(f"ok: ingest.h compiles as {lang} {std} -pedantic")


compile_header(args.cc, "c", "c99")
if args.cxx:
    compile_header(args.cxx, "c++", "c++11")
else:
    print("no C++ compiler: the C++ check is skipped")

header = open(args.header).read()
declared = set(re.findall(r"INGEST_API[^;(]*?\b(ingest_\w+)\s*\(", header))

nm = subprocess.run(["nm", "-D", "--defined-only", args.lib], capture_output=True, text=True,
                    check=True).stdout
exported = {}
for line in nm.splitlines():
    parts = line.split()
    if len(parts) != 3 or parts[1] == "A":
        continue     # the version node's own entry
    name, _, version = parts[2].partition("@@")
    exported[name.split("@")[0]] = version

if set(exported) != declared:
    failures.append("exported but not in ingest.h: %s; in ingest.h but not exported: %s" % (
        sorted(set(exported) - declared), sorted(declared - set(exported))))
bad = sorted(n for n, v in exported.items() if v != "INGEST_1.0")
if bad:
    failures.append(f"not in version node INGEST_1.0: {bad}")
print(f"{len(exported)} symbols exported, {len(declared)} declared")

if args.man:
    man = open(args.man).read()
    unnamed = sorted(n for n in declared if n not in man)
    if unnamed:
        failures.append(f"not in libingest(3): {unnamed}")
    # its SYNOPSIS gives every prototype and callback type as the header does
    synopsis = " ".join(man.split(".SH SYNOPSIS", 1)[-1].split(".SH ", 1)[0].split())
    decls = [" ".join(d.split()) + ";" for d in
             re.findall(r"INGEST_API\s+([^;]*?\bingest_\w+\s*\([^;]*?\))\s*;", header, re.S) +
             re.findall(r"(typedef [^;]*?\bingest_\w+_fn\s*\([^;]*?\))\s*;", header, re.S)]
    stale = [d for d in decls if d not in synopsis]
    if len(decls) < len(declared) + 2 or stale:
        failures.append(f"libingest(3)'s SYNOPSIS differs from ingest.h ({len(decls)} declarations): {stale}")
    else:
        print(f"ok: libingest(3)'s SYNOPSIS gives the header's {len(decls)} declarations")

if args.options_c:
    table = open(args.options_c).read().split("options_names[] = {", 1)[1].split("};", 1)[0]
    names = re.findall(r'\{ "([a-z-]+)", OPTIONS_', table)
    # the comment before ingest_options_set(), where the header lists them
    doc = header.split("INGEST_API int ingest_options_set(", 1)[0].rsplit("/* Sets an option", 1)[1]
    missing = sorted(n for n in names if not re.search(r"(^|\s)" + re.escape(n) + r"\s", doc))
    if len(names) < 20 or missing:
        failures.append(f"options not listed in ingest.h ({len(names)} in options.c): {missing}")
    else:
        print(f"ok: the {len(names)} option names of options.c are listed in ingest.h")

if args.version:
    macros = [re.search(r"#define INGEST_VERSION_%s (\d+)" % k, header) for k in ("MAJOR", "MINOR", "MICRO")]
    versions = {"meson.build": args.version,
                "ingest.h": ".".join(m.group(1) if m else "?" for m in macros)}
    if args.pyproject:
        m = re.search(r"^version = '([^']+)'", open(args.pyproject).read(), re.M)
        versions["pyproject.toml"] = m.group(1) if m else "?"
    if len(set(versions.values())) != 1:
        failures.append(f"the version differs: {versions}")
    else:
        print(f"ok: version {args.version} in {', '.join(versions)}")

if args.pymodule:
    out = subprocess.run(["nm", "-D", "--defined-only", args.pymodule], capture_output=True, text=True,
                         check=True).stdout
    names = sorted(ln.split()[-1] for ln in out.splitlines() if len(ln.split()) == 3 and ln.split()[1] != "A")
    if names != ["PyInit_ingest"]:
        failures.append(f"the Python module exports {names[:10]}{'...' if len(names) > 10 else ''}, "
                        "not PyInit_ingest alone")
    else:
        print("ok: the Python module exports PyInit_ingest alone")

dyn = subprocess.run(["objdump", "-p", args.lib], capture_output=True, text=True,
                     check=True).stdout
soname = re.search(r"SONAME\s+(\S+)", dyn)
if not soname or soname.group(1) != "libingest.so.1":
    failures.append(f"soname is {soname.group(1) if soname else None}, not libingest.so.1")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
