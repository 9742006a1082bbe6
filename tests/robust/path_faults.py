#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Allocation failures while a record's path is copied, on both backends.

    python3 path_faults.py --ingest PATH

Needs -Dfault_injection=true (else exit 77).  The path, root, folder and
subdir of every record are copied into its batch's arena
(walk_entry_describe in src/io/walk.c); each copy has a fault point of its
own, named "arena" at its line, and the arena's chunk allocation
(src/core/arena.c) is the malloc underneath.  A failure there once left a
half-built item in the batch: a SEGV in the JSON writer, or a path printed
without its root (or as "(null)") in the error summary.

Every occurrence of the arena's chunk allocation, and the first, second,
middle and last occurrence of each path-copy site, is failed in turn, with
--backend=uring and --backend=sync, on a small Maildir and a file given by
name.  Each run must end with exit 0 (every record there) or exit 1 with a
message; never a signal or a sanitizer report; every name in the error
summary must begin with the root it came from (the one whose name could not
be copied is an error record naming nothing, "out of memory while copying
its name"), and none may read "(null)".
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import robustlib as rl  # noqa: E402


def body(top, ingest):
    md = os.path.join(top, 'md')
    rl.mkcorpus(md, '--layout', 'maildir', '--count', '60', seed=5)
    single = os.path.join(top, 'one.eml')
    with open(single, 'wb') as f:
        f.write(b'From: a@example.org\nSubject: one\n\nhi\n')
    rl.need_fault_injection(ingest, md)
    roots = (md.encode(), single.encode())
    fails = []
    for backend in ('uring', 'sync'):
        argv = [ingest, f'--backend={backend}', '--batch-bytes=16K', '-o', os.devnull, md, single]
        base = rl.run(argv, env=rl.base_env({'INGEST_FAULT_COUNT': '1'}), timeout=60)
        if base.rc != 0:
            raise RuntimeError(f'{backend}: the fault-free run failed: {base.err_text[-400:]}')
        counts = rl.fault_counts(base)
        sites = {k: v for k, v in counts.items()
                 if (k[1] == 'arena' and k[2].startswith('src/io/walk.c:')) or
                 k[2].startswith('src/core/arena.c:')}
        copies = [k for k in sites if k[1] == 'arena']
        if len(copies) < 2:
            fails.append(f'{backend}: no path-copy fault sites in src/io/walk.c: {sorted(sites)}')
        runs = 0
        for (kind, name, site), n in sorted(sites.items()):
            which = range(1, n + 1) if name != 'arena' else sorted({1, 2, max(1, n // 2), n})
            for i in which:
                res = rl.run(argv, env=rl.base_env({'INGEST_FAULT': f'{i}:ENOMEM:alloc:{site}'}),
                             timeout=60)
                runs += 1
                what = f'{backend} {site} #{i}'
                prob = rl.crash_problem(res, what + ': ')
                if prob:
                    fails.append(prob)
                    continue
                if res.rc not in (0, 1):
                    fails.append(f'{what}: exit {res.rc}: {res.err_text[-300:]}')
                for line in rl.stderr_lines(res):
                    if '(null)' in line:
                        fails.append(f'{what}: {line!r}')
                    # the record of the file whose name could not be copied
                    if line == "ingest: cannot read '': out of memory while copying its name":
                        continue
                    if line.startswith('ingest: cannot read \''):
                        name_ = line[len('ingest: cannot read \''):].encode()
                        if not name_.startswith(roots):
                            fails.append(f'{what}: a name without its root: {line!r}')
        rl.note(f'{backend}: {runs} runs over {len(sites)} sites ({len(copies)} path copies)')
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ingest', required=True)
    a = ap.parse_args()
    return rl.run_in_tmpdir('ingest-pathfault-', lambda top: body(top, a.ingest))


if __name__ == '__main__':
    sys.exit(main())
