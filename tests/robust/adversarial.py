#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Adversarial trees and files.

    python3 adversarial.py --ingest PATH --case NAME [--as root|nobody|both]

Each case builds its tree in a fresh temporary directory (mode 0755, so that
the unprivileged user can read it), runs ingest on it and checks the
contract of robustlib (no crash, hang, sanitizer report or partial line;
exit 0 with one record per input).  Run as root, every case runs twice:
as root, then as nobody (`setpriv --reuid=nobody --regid=nogroup
--clear-groups`), since root bypasses permissions; run as another user it
runs once, as that user.  Exit 77 only when no mode could run at all.

Cases:
  deep        nesting beyond PATH_MAX (paths of ~6,000 bytes, 30 levels of
              200-byte names): the walk works on directory fds, every file
              at every depth has a record, no ENAMETOOLONG.
  symlinks    loops (a -> b -> a, self -> self, a directory link to ..):
              symlinks are not followed while walking: one error record
              each, no hang.
  names       every byte 1-255 in a name (but '/'), newlines, invalid UTF-8
              (\\xff, overlong \\xc0\\x80, a UTF-16 surrogate \\xed\\xa0\\x80):
              records are valid JSON and path (or path_b64 when the name is
              not UTF-8) gives back the exact bytes of every name.
  mutate      a mutator process grows, shrinks, deletes and turns files into
              directories while ingest reads (both backends, three rounds):
              every file the mutator never touched has exactly one record,
              every record names a file of the tree, none twice.
  empty       zero-byte files: a record each, "not-mail" with detected_type
              application/x-empty (or a similar empty type).
  sparse      an 8 GiB sparse file with 10 real bytes: not read (too-large
              record, well under a second), peak RSS stays small.
  perms       a mode-000 file, a mode-000 directory and a mode-0311
              (search-only) directory, beside readable files: as root they
              are read; as nobody each gives an EACCES record and the walk
              goes on to the other files.
  procsys     /proc/self/status, /proc/self/maps, /proc/cpuinfo and
              /sys/kernel/mm/transparent_hugepage/enabled passed explicitly
              (their statx size is 0 or 4096, not their length): a record
              each, read to EOF ("grew" noted, size = bytes read) or shrunk
              to the true length; for the /sys file the size must equal what
              a plain read returns.
  million     (suite 'slow') one directory of 100,000 and then 1,000,000
              empty files: time and peak RSS of each run, growth linear
              (per-entry cost at 1M at most twice that at 100k).
  inflight    the --max-inflight budget against files above the stream
              threshold (both backends): six 6 MiB files that are not mbox
              (read whole) under --max-inflight=2M, and an mbox whose
              messages cross chunk boundaries, some longer than a chunk.
              One record per file or message; peak_inflight_bytes is true
              (a whole file's buffer shows in it) and within the documented
              bound: the limit, or one buffer larger than the limit held
              alone (a whole file with its first chunk; the buffer of an
              mbox message, at most twice its length); peak RSS of a read
              (--io-only, not under a sanitizer) at most 2.5 files above an
              empty run's (one in flight, one arena the writer has given
              back and the reader not yet freed, slack).  No deadlock (60 s
              timeout) with --max-inflight below --batch-bytes, nor at
              1M/256K and 512K/64K, where a partial message carried into a
              fresh batch used to hold the budget its next read waited for.
"""
import argparse
import errno as errno_mod
import json
import os
import random
import re
import select
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import robustlib as rl  # noqa: E402

MAIL = b'From: a@example.org\nTo: b@example.org\nSubject: hi\nMessage-ID: <x@y>\n\nhello\n'


class Runner:
    """Runs ingest as the current user or, through setpriv, as nobody."""

    def __init__(self, ingest, mode):
        self.ingest = ingest
        self.mode = mode
        self.pre = []
        if mode == 'nobody':
            self.pre = ['setpriv', '--reuid=nobody', '--regid=nogroup', '--clear-groups', '--']

    def usable(self):
        r = subprocess.run(self.pre + [self.ingest, '--version'], capture_output=True,
                           env=rl.base_env())
        if r.returncode != 0:
            return f'{" ".join(self.pre) or "ingest"} cannot run ingest: {r.stderr.decode()[-300:]}'
        return None

    def run(self, args, timeout=60, extra_env=None, cwd=None):
        return rl.run(self.pre + [self.ingest, *args], env=rl.base_env(extra_env), timeout=timeout,
                      cwd=cwd)


def contract(res, what, n_expected=None):
    """Exit 0, whole valid lines, no crash; returns (records, problems)."""
    p = rl.crash_problem(res, f'{what}: ')
    if p:
        return [], [p]
    recs, problems = rl.parse_output(res.out)
    problems = [f'{what}: {x}' for x in problems]
    if res.rc != 0:
        problems.append(f'{what}: exit {res.rc}: {res.err_text[-400:]}')
    keys = [rl.record_key(r) for r in recs]
    if len(set(keys)) != len(keys):
        problems.append(f'{what}: a record appears twice')
    if n_expected is not None and len(recs) != n_expected:
        problems.append(f'{what}: {len(recs)} records, expected {n_expected}')
    return recs, problems


# ---------------------------------------------------------------- cases

def case_deep(top, runner):
    root = os.path.join(top, 'deep')
    os.mkdir(root)
    name = 'd' * 200
    levels = 30
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    files = []
    rel = []
    try:
        for i in range(levels):
            os.mkdir(name, dir_fd=fd)
            nfd = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = nfd
            rel.append(name)
            if i % 5 == 4 or i == levels - 1:
                f = os.open(f'm{i}.eml', os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                os.write(f, MAIL)
                os.close(f)
                files.append('/'.join(rel + [f'm{i}.eml']).encode())
    finally:
        os.close(fd)
    longest = max(len(f) for f in files) + len(root)
    fails = []
    for b in ('uring', 'sync'):
        res = runner.run(['-q', f'--backend={b}', root])
        recs, problems = contract(res, f'deep/{b}', len(files))
        fails += problems
        got = {rl.record_path(r) for r in recs if 'error' not in r}
        missing = [f for f in files if f not in got]
        if missing:
            fails.append(f'deep/{b}: no record for {len(missing)} files, the deepest at '
                         f'{len(missing[-1])} bytes; errors: '
                         f'{[r.get("error") for r in recs if "error" in r][:3]}')
    rl.note(f'deep: {levels} levels, {len(files)} files, longest path {longest} bytes '
            f'(PATH_MAX 4096)')
    return fails


def case_symlinks(top, runner):
    root = os.path.join(top, 'links')
    os.makedirs(os.path.join(root, 'sub'))
    os.symlink('b', os.path.join(root, 'a'))
    os.symlink('a', os.path.join(root, 'b'))
    os.symlink('self', os.path.join(root, 'self'))
    os.symlink('..', os.path.join(root, 'sub', 'up'))
    os.symlink(root, os.path.join(root, 'sub', 'abs'))
    with open(os.path.join(root, 'sub', 'm.eml'), 'wb') as f:
        f.write(MAIL)
    links = {b'a', b'b', b'self', b'sub/up', b'sub/abs'}
    fails = []
    for b in ('uring', 'sync'):
        res = runner.run(['-q', f'--backend={b}', root], timeout=20)
        recs, problems = contract(res, f'symlinks/{b}', len(links) + 1)
        fails += problems
        errs = {rl.record_path(r) for r in recs if 'error' in r}
        if errs != links:
            fails.append(f'symlinks/{b}: error records for {sorted(errs)}, expected {sorted(links)}')
        # explicitly named, a loop is followed and fails with ELOOP
        res = runner.run(['-q', f'--backend={b}', os.path.join(root, 'a')], timeout=20)
        recs, problems = contract(res, f'symlinks/{b} explicit', 1)
        fails += problems
        if recs and (recs[0].get('error') or {}).get('errno') != 'ELOOP':
            fails.append(f'symlinks/{b}: explicit loop gave {recs[0]}')
    return fails


def weird_names():
    names = set()
    for c in range(1, 256):
        if c == 0x2f:
            continue
        names.add(b'n' + bytes([c]) + b'.eml')
    names |= {b'line\nbreak', b'\n', b'\n\n', b'\xff', b'bad\xfe\xffutf8', b'\xc0\x80overlong',
              b'\xed\xa0\x80surrogate', b'tab\there', b'quote"back\\slash', b'\x7fdel',
              b'\xe2\x80\xa8ls', b'caf\xc3\xa9', b'\x01\x02\x03', b' ', b'-', b'..x', b'.x'}
    return names


def case_names(top, runner):
    root = os.path.join(top, 'names')
    os.mkdir(root)
    names = weird_names()
    for n in names:
        with open(os.path.join(root.encode(), n), 'wb') as f:
            f.write(MAIL)
    fails = []
    for b in ('uring', 'sync'):
        for extra in ((), ('--io-only',)):
            what = f'names/{b}{" io-only" if extra else ""}'
            res = runner.run(['-q', f'--backend={b}', *extra, root])
            recs, problems = contract(res, what, len(names))
            fails += problems
            got = {rl.record_path(r) for r in recs}
            if got != names:
                fails.append(f'{what}: names not given back exactly: missing '
                             f'{sorted(names - got)[:5]}, extra {sorted(got - names)[:5]}')
            for r in recs:
                p = rl.record_path(r)
                try:
                    p.decode('utf-8')
                    if 'path_b64' in r:
                        fails.append(f'{what}: path_b64 on a UTF-8 name {p!r}')
                except UnicodeDecodeError:
                    if 'path_b64' not in r:
                        fails.append(f'{what}: no path_b64 for {p!r}')
    rl.note(f'names: {len(names)} names, bytes 1-255, newlines, invalid UTF-8')
    return fails


def mutator(root, names, touched_path, stop_at, run_over):
    """A child process: mutates files at random until stop_at, or until the
    run is over (run_over, a pipe's read end, reads EOF: changes after the
    run test nothing and would only widen the set of files excused from the
    checks); writes the names it touched, each with what it did (grow,
    shrink, unlink, todir)."""
    rnd = random.Random(1)
    touched = set()
    order = list(names)
    rnd.shuffle(order)
    order = order[:len(order) // 3]   # the other two thirds are the control
    i = 0
    while time.monotonic() < stop_at and i < len(order):
        n = order[i]
        i += 1
        p = os.path.join(root, n)
        op = i % 4
        touched.add(f'{n} {("grow", "shrink", "unlink", "todir")[op]}')
        try:
            if op == 0:
                with open(p, 'ab') as f:
                    f.write(b'X' * 5000)
            elif op == 1:
                os.truncate(p, 10)
            elif op == 2:
                os.unlink(p)
            else:
                os.unlink(p)
                os.mkdir(p)
        except OSError:
            pass
        # a change every 2 ms while the run lasts (some 0.1 s for 2,000
        # files), for 1.3 s at most (650 changes)
        if select.select([run_over], [], [], 0.002)[0]:
            break
    with open(touched_path, 'w') as f:
        f.write('\n'.join(sorted(touched)))


def case_mutate(top, runner):
    fails = []
    n_files = 2000
    seen_change = 0
    for rnd_i in range(3):
        for b in ('uring', 'sync'):
            root = os.path.join(top, f'mut-{b}-{rnd_i}')
            os.mkdir(root)
            names = [f'{i:06d}.eml' for i in range(n_files)]
            for i, n in enumerate(names):
                with open(os.path.join(root, n), 'wb') as f:
                    f.write(MAIL + b'x' * (i % 3000))
            touched_path = os.path.join(top, f'touched-{b}-{rnd_i}')
            run_over, running = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(running)
                    mutator(root, names, touched_path, time.monotonic() + 4, run_over)
                finally:
                    os._exit(0)
            os.close(run_over)
            try:
                time.sleep(0.05 * rnd_i)
                res = runner.run(['-q', f'--backend={b}', '--batch-bytes=64K', root])
            finally:
                os.close(running)
                os.waitpid(pid, 0)
            with open(touched_path) as f:
                ops = dict(ln.split(' ') for ln in f.read().split('\n') if ln)
            touched = set(ops)
            what = f'mutate/{b}#{rnd_i}'
            recs, problems = contract(res, what)
            fails += problems
            paths = [rl.record_path(r).decode() for r in recs]
            unknown = [p for p in paths if p not in set(names)]
            if unknown:
                fails.append(f'{what}: records for names never created: {unknown[:3]}')
            have = set(paths)
            lost = [n for n in names if n not in touched and n not in have]
            if lost:
                fails.append(f'{what}: {len(lost)} untouched files have no record: {lost[:3]}')
            # a file that grew or shrank was there all along: it has its record
            lost = [n for n in names if ops.get(n) in ('grow', 'shrink') and n not in have]
            if lost:
                fails.append(f'{what}: {len(lost)} files that grew or shrank have no record: {lost[:3]}')
            dup = len(paths) - len(have)
            if dup:
                fails.append(f'{what}: {dup} duplicate records')
            orig = {n: len(MAIL) + i % 3000 for i, n in enumerate(names)}
            seen_change += sum(1 for r in recs
                               if r.get('notes') or (r.get('error') or {}).get('errno') in ('ENOENT', 'EISDIR')
                               or ('size' in r and r['size'] != orig.get(rl.record_path(r).decode())))
            kinds = {}
            for r in recs:
                e = r.get('error')
                k = (e.get('errno') or e.get('reason')) if e else 'ok'
                kinds[k] = kinds.get(k, 0) + 1
            notes = sum(1 for r in recs for x in r.get('notes', []) if x in ('grew', 'shrank'))
            rl.note(f'{what}: {len(recs)} records, {len(touched)} files mutated, '
                    f'{notes} grew/shrank notes, {kinds}')
            rl.rmtree(root)
    # the runs must have met the mutations, or nothing was tested
    if not seen_change:
        fails.append('mutate: no record shows a mutation (grown, shrunk, vanished, a directory): '
                     'the mutator never overlapped a run')
    rl.note(f'mutate: {seen_change} records show a mutation')
    return fails


def case_empty(top, runner):
    root = os.path.join(top, 'empty')
    os.mkdir(root)
    for i in range(5):
        open(os.path.join(root, f'e{i}.eml'), 'wb').close()
    fails = []
    for b in ('uring', 'sync'):
        res = runner.run(['-q', f'--backend={b}', root])
        recs, problems = contract(res, f'empty/{b}', 5)
        fails += problems
        for r in recs:
            e = r.get('error') or {}
            if r.get('size') != 0 or e.get('reason') != 'not-mail' or \
                    'empty' not in str(r.get('detected_type', '')):
                fails.append(f'empty/{b}: {json.dumps(r)[:300]}')
    return fails


def case_sparse(top, runner):
    root = os.path.join(top, 'sparse')
    os.mkdir(root)
    p = os.path.join(root, 'huge.eml')
    with open(p, 'wb') as f:
        f.write(b'From: a@b\n\nx\n')
        f.truncate(8 << 30)
    with open(os.path.join(root, 'small.eml'), 'wb') as f:
        f.write(MAIL)
    fails = []
    for b in ('uring', 'sync'):
        t0 = time.monotonic()
        res = runner.run(['-q', '--stats=json', f'--backend={b}', root])
        dt = time.monotonic() - t0
        recs, problems = contract(res, f'sparse/{b}', 2)
        fails += problems
        st = rl.stats_json(res)
        huge = [r for r in recs if rl.record_path(r) == b'huge.eml']
        if not huge or (huge[0].get('error') or {}).get('reason') != 'too-large':
            fails.append(f'sparse/{b}: no too-large record: {huge}')
        rss = st.get('peak_rss_kib', 0)
        if st.get('bytes', 0) > 1 << 20:
            fails.append(f'sparse/{b}: {st.get("bytes")} bytes read')
        if rss > 256 * 1024:
            fails.append(f'sparse/{b}: peak RSS {rss} KiB')
        rl.note(f'sparse/{b}: 8 GiB sparse file: {dt:.2f} s, peak RSS {rss} KiB, '
                f'{st.get("bytes")} bytes read')
    # One that is read: 96 MiB of holes under --max-size=128M (a Maildir
    # message over the stream threshold is read whole, within the budget).
    md = os.path.join(top, 'sparse-md')
    for sub in ('cur', 'new', 'tmp'):
        os.makedirs(os.path.join(md, sub))
    with open(os.path.join(md, 'cur', '1.M1.h:2,S'), 'wb') as f:
        f.write(MAIL)
        f.truncate(96 << 20)
    for b in ('uring', 'sync'):
        res = runner.run(['-q', '--stats=json', '--no-text', f'--backend={b}', '--max-size=128M',
                          '--max-inflight=16M', md])
        recs, problems = contract(res, f'sparse-read/{b}', 1)
        fails += problems
        st = rl.stats_json(res)
        if recs and (recs[0].get('size') != 96 << 20 or recs[0].get('error')):
            fails.append(f'sparse-read/{b}: {json.dumps(recs[0])[:300]}')
        if st.get('bytes') != 96 << 20:
            fails.append(f'sparse-read/{b}: {st.get("bytes")} bytes read, want {96 << 20}')
        rl.note(f'sparse-read/{b}: 96 MiB sparse message read whole: peak RSS '
                f'{st.get("peak_rss_kib")} KiB, peak in flight {st.get("peak_inflight_bytes")}')
    return fails


def case_perms(top, runner):
    root = os.path.join(top, 'perms')
    for d in ('open', 'closed', 'searchonly'):
        os.makedirs(os.path.join(root, d))
        with open(os.path.join(root, d, 'm.eml'), 'wb') as f:
            f.write(MAIL)
    with open(os.path.join(root, 'locked.eml'), 'wb') as f:
        f.write(MAIL)
    os.chmod(os.path.join(root, 'locked.eml'), 0)
    os.chmod(os.path.join(root, 'closed'), 0)
    os.chmod(os.path.join(root, 'searchonly'), 0o311)
    fails = []
    for b in ('uring', 'sync'):
        res = runner.run(['-q', f'--backend={b}', root])
        recs, problems = contract(res, f'perms/{b}')
        fails += problems
        by = {rl.record_path(r): r for r in recs}
        if b'open/m.eml' not in by or 'error' in by[b'open/m.eml']:
            fails.append(f'perms/{b}: the walk did not go on to open/m.eml')
        if runner.mode == 'root' and os.geteuid() == 0:
            want_ok = [b'locked.eml', b'closed/m.eml', b'searchonly/m.eml']
            for w in want_ok:
                if w not in by or 'error' in by[w]:
                    fails.append(f'perms/{b} as root: {w!r} should be read: {by.get(w)}')
        else:
            for w in (b'locked.eml', b'closed', b'searchonly'):
                e = (by.get(w) or {}).get('error') or {}
                if e.get('errno') != 'EACCES':
                    fails.append(f'perms/{b} as {runner.mode}: {w!r} should be an EACCES record: '
                                 f'{by.get(w)}')
        rl.note(f'perms/{b} as {runner.mode}: ' +
                ', '.join(f'{k.decode()}={(v.get("error") or {}).get("errno", "ok")}'
                          for k, v in sorted(by.items())))
    return fails


def case_procsys(top, runner):
    paths = ['/proc/self/status', '/proc/self/maps', '/proc/cpuinfo',
             '/sys/kernel/mm/transparent_hugepage/enabled']
    paths = [p for p in paths if os.path.exists(p)]
    if not paths:
        raise rl.Skip('no /proc or /sys here')
    fails = []
    for b in ('uring', 'sync'):
        res = runner.run(['-q', '--io-only', f'--backend={b}', *paths])
        recs, problems = contract(res, f'procsys/{b}', len(paths))
        fails += problems
        for r in recs:
            p = rl.record_path(r).decode()
            e = r.get('error')
            if e:
                # refusing is allowed, clearly
                if not e.get('message'):
                    fails.append(f'procsys/{b}: {p}: unclear refusal {e}')
                rl.note(f'procsys/{b}: {p}: refused: {e}')
                continue
            st = os.stat(p)
            size = r.get('size', -1)
            if size <= 0:
                fails.append(f'procsys/{b}: {p}: size {size}: the file was not read to EOF')
            if p.startswith('/sys/'):
                with open(p, 'rb') as f:
                    true = len(f.read())
                if size != true:
                    fails.append(f'procsys/{b}: {p}: size {size}, a read gives {true}')
            rl.note(f'procsys/{b}: {p}: stat size {st.st_size}, record size {size}, '
                    f'notes {r.get("notes", [])}')
    return fails


def peak_rss_run(runner, args, timeout):
    """(seconds, peak RSS KiB, result) of one run, from /usr/bin/time -v when
    present, else from --stats=json."""
    timebin = '/usr/bin/time'
    if os.path.exists(timebin):
        pre = runner.pre + [timebin, '-v', runner.ingest]
        t0 = time.monotonic()
        res = rl.run(pre + args, env=rl.base_env(), timeout=timeout)
        dt = time.monotonic() - t0
        rss = 0
        for line in res.err_text.splitlines():
            if 'Maximum resident set size' in line:
                rss = int(line.split(':')[1])
        return dt, rss, res
    t0 = time.monotonic()
    res = runner.run(['--stats=json', *args], timeout=timeout)
    return time.monotonic() - t0, rl.stats_json(res).get('peak_rss_kib', 0), res


def make_flat(root, n, start=0):
    os.makedirs(root, exist_ok=True)
    for i in range(start, n):
        fd = os.open(os.path.join(root, f'{i:07d}'), os.O_WRONLY | os.O_CREAT, 0o644)
        os.close(fd)


def case_million(top, runner):
    root = os.path.join(top, 'flat')
    fails = []
    figures = []
    base_dt, base_rss, _ = peak_rss_run(runner, ['-q', '--io-only', '/dev/null'], 60)
    done = 0
    for n in (100_000, 1_000_000):
        t0 = time.monotonic()
        make_flat(root, n, done)
        done = n
        mk = time.monotonic() - t0
        dt, rss, res = peak_rss_run(runner, ['-q', '--io-only', root], 1200)
        recs = res.out.count(b'\n')
        p = rl.crash_problem(res, f'million/{n}: ')
        if p or res.rc != 0 or recs != n:
            fails.append(p or f'million/{n}: exit {res.rc}, {recs} records')
        figures.append((n, dt, rss))
        rl.note(f'million: {n} entries: ingest {dt:.1f} s, peak RSS {rss} KiB '
                f'({(rss - base_rss) * 1024 / n:.0f} B/entry over the {base_rss} KiB '
                f'of an empty run); tree made in {mk:.0f} s')
    (n1, t1, r1), (n2, t2, r2) = figures
    per1, per2 = (r1 - base_rss) / n1, (r2 - base_rss) / n2
    if per2 > 2 * per1 + 0.01:
        fails.append(f'million: RSS per entry grows: {per1 * 1024:.0f} B at 100k, '
                     f'{per2 * 1024:.0f} B at 1M')
    if t2 / n2 > 3 * t1 / n1:
        fails.append(f'million: time per entry grows: {t1 / n1 * 1e6:.1f} us at 100k, '
                     f'{t2 / n2 * 1e6:.1f} us at 1M')
    return fails


INFLIGHT_FILE = 6 << 20
INFLIGHT_CHUNK = 256 << 10        # --batch-bytes=256K: the stream chunk


def default_batch_bytes(runner):
    """--batch-bytes' default as ingest --help states it ("bytes per batch (6M)")."""
    res = runner.run(['--help'])
    m = re.search(rb'--batch-bytes=SIZE +bytes per batch \((\d+)([KMG])\)', res.out)
    if not m:
        raise SystemExit(f'ingest --help does not state the --batch-bytes default: {res.out[:300]!r}')
    return int(m.group(1)) << {b'K': 10, b'M': 20, b'G': 30}[m.group(2)]
INFLIGHT_MBOX_SIZES = (3000, 90_000, 400_000, 700_000, 20_000, 300_000, 1000, 650_000)


def make_inflight_tree(top, mbox_bytes):
    """Six files above the stream threshold (4 MiB) that are not mbox, and
    one mbox of about mbox_bytes; returns (whole dir, mbox path, message
    spans)."""
    whole = os.path.join(top, 'whole')
    os.mkdir(whole)
    line = b'x' * 76 + b'\n'
    for i in range(6):
        hdr = (f'From: a@example.org\nTo: b@example.org\nSubject: big {i}\n'
               f'Message-ID: <big{i}@example.org>\n\n').encode()
        body = line * (INFLIGHT_FILE // len(line) + 1)
        with open(os.path.join(whole, f'big{i}'), 'wb') as f:
            f.write((hdr + body)[:INFLIGHT_FILE])
    mbox = os.path.join(top, 'archive.mbox')
    spans = []
    with open(mbox, 'wb') as f:
        i = 0
        while f.tell() < mbox_bytes:
            start = f.tell()
            f.write(b'From sender@example.org Mon Jan  1 00:00:00 2024\n')
            f.write(f'From: a@example.org\nSubject: m{i}\nMessage-ID: <m{i}@example.org>\n\n'
                    .encode())
            size = INFLIGHT_MBOX_SIZES[i % len(INFLIGHT_MBOX_SIZES)]
            f.write(b'y' * 70 + b'\n')
            f.write((b'y' * 70 + b'\n') * (size // 71))
            f.write(b'\n')
            spans.append(f.tell() - start)
            i += 1
    return whole, mbox, spans


def case_inflight(top, runner):
    # the mbox is streamed at the default batch size too: past four batches
    mbox_bytes = max(8 << 20, 4 * default_batch_bytes(runner) + (1 << 20))
    whole, mbox, spans = make_inflight_tree(top, mbox_bytes)
    sanitized = bool(os.environ.get('INGEST_SANITIZED'))
    fails = []
    for b in ('uring', 'sync'):
        base = runner.run(['-q', '--io-only', '--stats=json', f'--backend={b}', '/dev/null'])
        base_rss = rl.stats_json(base).get('peak_rss_kib', 0)
        for limit_arg, limit in (('2M', 2 << 20), ('128K', 128 << 10)):
            for extra in (('--io-only',), ()):
                what = f'inflight/{b} whole --max-inflight={limit_arg}{" io-only" if extra else ""}'
                res = runner.run(['-q', '--stats=json', f'--backend={b}', '--batch-bytes=256K',
                                  f'--max-inflight={limit_arg}', *extra, whole], timeout=60)
                recs, problems = contract(res, what, 6)
                fails += problems
                bad = [r for r in recs if 'error' in r or r.get('size') != INFLIGHT_FILE]
                if bad:
                    fails.append(f'{what}: not read whole: {json.dumps(bad[0])[:300]}')
                st = rl.stats_json(res)
                peak = st.get('peak_inflight_bytes', 0)
                # a whole file alone, with the first chunk that showed it is not an mbox
                bound = max(limit, INFLIGHT_FILE + 1 + INFLIGHT_CHUNK + 1)
                if not INFLIGHT_FILE < peak <= bound:
                    fails.append(f'{what}: peak_inflight_bytes {peak}, expected above '
                                 f'{INFLIGHT_FILE} (a whole file is in flight) and at most {bound}')
                rss = st.get('peak_rss_kib', 0)
                rss_bound = base_rss + 5 * INFLIGHT_FILE // 2 // 1024
                if extra and not sanitized and rss > rss_bound:
                    fails.append(f'{what}: peak RSS {rss} KiB, over {rss_bound} KiB (an empty '
                                 f'run\'s {base_rss} KiB and 2.5 files of {INFLIGHT_FILE >> 10} KiB)')
                rl.note(f'{what}: peak in flight {peak}, peak RSS {rss} KiB')
        longest = max(spans)
        # 1M/256K and 512K/64K deadlocked before: a carried partial message
        # held budget that the wait for the next chunk needed
        for args, limit, chunk in ((['--batch-bytes=256K', '--max-inflight=1M'], 1 << 20,
                                    INFLIGHT_CHUNK),
                                   (['--batch-bytes=64K', '--max-inflight=512K'], 512 << 10,
                                    64 << 10),
                                   (['--batch-bytes=256K', '--max-inflight=128K'], 128 << 10,
                                    INFLIGHT_CHUNK),
                                   (['--max-inflight=1M'], 1 << 20, default_batch_bytes(runner))):
            what = f'inflight/{b} mbox {" ".join(args)}'
            res = runner.run(['-q', '--io-only', '--stats=json', f'--backend={b}', *args, mbox],
                             timeout=60)
            recs, problems = contract(res, what, len(spans))
            fails += problems
            offsets = [r.get('offset') for r in recs]
            if offsets != sorted(offsets) or any('error' in r for r in recs):
                fails.append(f'{what}: records out of order or in error')
            peak = rl.stats_json(res).get('peak_inflight_bytes', 0)
            # the buffer of one message read alone: what was left of it, doubled
            bound = max(limit, 2 * max(longest, chunk) + 1)
            if peak > bound:
                fails.append(f'{what}: peak_inflight_bytes {peak}, over {bound}')
            rl.note(f'{what}: {len(recs)} of {len(spans)} messages in {res.elapsed:.2f} s, '
                    f'peak in flight {peak}')
    return fails


CASES = {'deep': case_deep, 'symlinks': case_symlinks, 'names': case_names,
         'mutate': case_mutate, 'empty': case_empty, 'sparse': case_sparse,
         'perms': case_perms, 'procsys': case_procsys, 'million': case_million,
         'inflight': case_inflight}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ingest', required=True)
    ap.add_argument('--case', choices=sorted(CASES), required=True)
    ap.add_argument('--as', dest='who', choices=('root', 'nobody', 'both'), default='both')
    a = ap.parse_args()
    ingest = os.path.abspath(a.ingest)
    if os.geteuid() == 0:
        modes = ['root', 'nobody'] if a.who == 'both' else [a.who]
    else:
        modes = ['user']
        rl.note(f'running as uid {os.geteuid()}: one mode (root is needed to test both)')
    if a.case == 'million':
        modes = modes[:1]   # one figure set: the cost is the walk's, not the user's
    fails, ran, skipped = [], 0, []
    for mode in modes:
        runner = Runner(ingest, mode)
        why = runner.usable() if mode == 'nobody' else None
        if why:
            skipped.append(f'{mode}: {why}')
            continue
        top = rl.tmpdir(f'ingest-adv-{a.case}-')
        try:
            rl.note(f'--- {a.case} as {mode}')
            fails += [f'[{mode}] {f}' for f in CASES[a.case](top, runner)]
            ran += 1
        except rl.Skip as e:
            skipped.append(f'{mode}: {e}')
        finally:
            rl.rmtree(top)
    for s in skipped:
        rl.note(f'skipped: {s}')
    for f in fails:
        rl.note(f'FAIL: {f}')
    if not ran and not fails:
        rl.note('SKIP: no mode could run')
        return rl.SKIP
    if skipped and os.geteuid() == 0 and not fails:
        # as root both modes are required: a mode that cannot run fails
        rl.note('FAIL: a mode could not run')
        return 1
    rl.note('PASS' if not fails else f'{len(fails)} failures')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
