#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench/mark_read.py: a mail client changing the flags of a whole Maildir
while ingest reads it.

    bench/mark_read.py --corpus=MAILDIR [--rounds=N] [--work=DIR] INGEST [INGEST...]

Each round, for each INGEST in a rotated order: MAILDIR is copied as hard
links (cp -al) to --work, and while `INGEST --stats=json -q -o FILE COPY`
runs, this process renames every message as a client does when it flags a
whole folder: each name in cur/ gains the flag T (marked deleted, as before
an expunge; a flag most names lack, so every name changes), each message of
new/ moves to cur/ with the flag S (marked read).  It renames in reverse inode order (ingest reads in
inode order, so the two meet mid-run) and stops when the run ends.

Printed per run: wall, user and system CPU seconds (the child's, from
wait4), records written, messages the client renamed before the run ended,
the run's own `renamed` count (messages read under a new name), getdents64
calls (the run's --stats), and whether the records check out: one per
input, no unique name twice, every record read (no error record).  The
number of renames a run meets depends on timing, so compare the medians
over rounds and read the getdents64 and renamed counts beside them.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def renames_of(root):
    """Every message of cur/ and new/, with its new name, in reverse inode order."""
    todo = []
    for sub in ('cur', 'new'):
        for e in os.scandir(os.path.join(root, sub)):
            name = e.name
            if sub == 'cur':
                flags = name.split(':2,')[1] if ':2,' in name else ''
                # T kept in the flags' ASCII order, once
                to = name.split(':2,')[0] + ':2,' + ''.join(sorted(set(flags + 'T')))
            else:
                to = name + ':2,S'
            todo.append((e.inode(), os.path.join(root, sub, name), os.path.join(root, 'cur', to)))
    todo.sort(reverse=True)
    return todo


def one_run(ingest, corpus, work):
    root = os.path.join(work, 'Maildir')
    out = os.path.join(work, 'out.jsonl')
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    subprocess.run(['cp', '-al', corpus, root], check=True)
    todo = renames_of(root)
    t0 = time.monotonic()
    errf = open(os.path.join(work, 'stderr'), 'w+b')   # a file: a full pipe would stall the run
    p = subprocess.Popen([ingest, '--stats=json', '-q', '-o', out, root], stderr=errf)
    renamed = 0
    for _, old, new in todo:
        # ended? (WNOWAIT: the child stays to be reaped by wait4 below)
        if os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            break
        os.rename(old, new)
        renamed += 1
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    errf.seek(0)
    stats = [ln for ln in errf.read().decode('utf-8', 'replace').splitlines() if ln.startswith('{')]
    errf.close()
    st = json.loads(stats[-1]) if stats else {'renamed': None, 'syscalls': {'getdents64': None}}
    uniques, errors, records = set(), 0, 0
    with open(out) if os.path.exists(out) else open(os.devnull) as f:
        for line in f:
            r = json.loads(line)
            records += 1
            errors += 'error' in r
            uniques.add(r['path'].rsplit('/', 1)[-1].split(':2,')[0])
    ok = p.returncode == 0 and records == len(todo) == len(uniques) and not errors
    return {'wall': wall, 'user': ru.ru_utime, 'sys': ru.ru_stime, 'records': records,
            'inputs': len(todo), 'client_renamed': renamed, 'renamed': st['renamed'],
            'getdents64': st['syscalls']['getdents64'], 'ok': ok}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--corpus', required=True)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--work', help='scratch directory (default: a new temporary one)')
    ap.add_argument('ingest', nargs='+')
    a = ap.parse_args()
    a.work = a.work or tempfile.mkdtemp(prefix='ingest-mark-read-')
    runs = {b: [] for b in a.ingest}
    for k in range(a.rounds):
        order = a.ingest[k % len(a.ingest):] + a.ingest[:k % len(a.ingest)]
        for b in order:
            m = one_run(b, a.corpus, a.work)
            runs[b].append(m)
            print(f'round {k + 1} {b}: wall {m["wall"]:.2f} s, user {m["user"]:.2f}, sys {m["sys"]:.2f}, '
                  f'records {m["records"]}/{m["inputs"]}, client renamed {m["client_renamed"]}, '
                  f'read renamed {m["renamed"]}, getdents64 {m["getdents64"]}, '
                  f'{"verified" if m["ok"] else "NOT VERIFIED"}', flush=True)
    shutil.rmtree(a.work, ignore_errors=True)
    for b, ms in runs.items():
        med = sorted(m['wall'] for m in ms)[len(ms) // 2]
        cpu = sorted(m['user'] + m['sys'] for m in ms)[len(ms) // 2]
        print(f'{b}: median wall {med:.2f} s, CPU {cpu:.2f} s over {len(ms)} runs; '
              f'all verified: {all(m["ok"] for m in ms)}')
    return 0 if all(m['ok'] for ms in runs.values() for m in ms) else 1


if __name__ == '__main__':
    sys.exit(main())
