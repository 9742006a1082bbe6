#!/usr/bin/env python3
"""Fault-injection walk (issue 7): fail each fallible call of a small run in
turn, on both backends, and check that nothing is lost and nothing crashes.

    python3 fault_walk.py --ingest PATH --case walk|ring [--jobs 2] [--full]

Needs a build with -Dfault_injection=true (CI's build-asan); elsewhere it
exits 77.  src/core/fault.h: INGEST_FAULT=N:ERRNO:KIND fails the Nth fallible
call (syscall wrappers of src/core/sys.c, the ring's set-up and enter in
src/io/uring.c, and every allocation of src/core/xalloc.c share one
numbering) if it is of KIND; INGEST_FAULT_COUNT=1 prints the number of calls.

The run: a Maildir of 20 messages (Maildir++ folder .Sent, at least one
message with an attachment), an mbox of 4 messages, a plain subfolder with an
.eml, a file nobody may read (mode 000; the run drops CAP_DAC_OVERRIDE with
setpriv when it is root, so the read really fails with EACCES), a symlink
loop met while walking (not followed: an error record), and, passed
explicitly, the same loop (followed: ELOOP from statx, a completion with an
error on the ring) and a file that does not exist (ENOENT: a file that
vanished between listing and open).

Every run must end in one of two ways:
  exit 0: every input accounted for: each record of the fault-free run is
          there, in order, exactly once, or is covered by an error record
          naming it, its mbox or a directory above it (a failed getdents64
          turns a directory into one error record: issue 2, "walk"); every
          line valid JSON; error records carry the reason and a message;
  exit 1: one line "ingest: ..." on stderr; stdout whole lines only;
and never: a signal, a sanitizer report (LeakSanitizer included), a hang
(20 s), a partial last line, another exit status.

Case 'walk' — sampling (both backends; runs in parallel, --jobs workers):
  - all N in 1..calls for sys:EIO and for alloc:ENOMEM (the errno of every
    allocation failure): every call site of the run fails once per backend;
  - every STRIDE-th N for sys:ENOMEM, EINTR, EAGAIN, EMFILE and ENOSPC, each
    errno starting at another offset so that together they cover every
    residue class: what differs between errnos is only the errno the caller
    sees (EINTR and EAGAIN are retried where that makes sense), and the walk
    over EIO already reaches every site.  ENOSPC lands on writes as well as
    on other calls: the real full disk is tests/robust/output_faults.py's.
  --full walks every N for every errno (about 4x longer).

Case 'ring' — the ring's own failures, on --backend=uring:
  - faults are aimed by name (INGEST_FAULT=N:ERRNO:sys:io_uring_enter), so
    the Nth enter is the same call in every run (only the reader thread
    enters the ring; a shared numbering would shift with the other threads);
  - at every io_uring_enter of the run: EAGAIN, EBUSY and EINTR are retried, the run
    completes with every record and --stats=json says how many enters were
    retried;
  - at io_uring_setup and the direct-descriptor registration: EPERM and ENOSYS make --backend=auto fall back to sync,
    with the reason in --stats=json's "fallback", every record present; and
    make --backend=uring fail with one clear line;
  - completions with errors: ENOENT, ELOOP and EACCES come from the file
    system itself (the corpus above), checked in every run;
  - CQ overflow cannot happen by construction (src/io/uring.c, limits.h):
    the ring has LIMIT_RING_ENTRIES = 4 x LIMIT_BATCH_FILES SQ entries and
    liburing sizes the CQ at twice that; requests in flight are at most one
    statx per window slot (WIN_SIZE = LIMIT_BATCH_FILES) plus three chain
    links (open, read, close) per batch file (at most LIMIT_BATCH_FILES),
    i.e. at most the SQ size, and the streamed-file chunk read is issued only
    between batches when no chain is in flight.  So in-flight CQEs never
    exceed half the CQ; were it to happen anyway, the kernel (NODROP, 5.5+)
    would answer -EBUSY to the enter, which the retry path above covers.
"""
import argparse
import concurrent.futures
import errno as errno_mod
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import robustlib as rl  # noqa: E402

TIMEOUT = 20
STRIDE = 5
BACKENDS = ('uring', 'sync')
FULL = [('sys', 'EIO'), ('alloc', 'ENOMEM')]
SAMPLED = [('sys', 'ENOMEM'), ('sys', 'EINTR'), ('sys', 'EAGAIN'), ('sys', 'EMFILE'),
           ('sys', 'ENOSPC')]


def build_corpus(top):
    inp = os.path.join(top, 'in')
    os.makedirs(inp)
    rl.mkcorpus(os.path.join(inp, 'Maildir'), '--count', '20', '--folders', '1',
                '--attach-ratio', '0.3', seed=7)
    mb = os.path.join(top, 'mb')
    rl.mkcorpus(mb, '--layout', 'mbox', '--count', '4', seed=8)
    shutil.move(os.path.join(mb, 'archive.mbox'), os.path.join(inp, 'archive.mbox'))
    shutil.rmtree(mb)
    # a plain subfolder (not a Maildir) with one message
    sub = os.path.join(inp, 'notes', 'sub')
    os.makedirs(sub)
    cur = os.path.join(inp, 'Maildir', 'cur')
    first = sorted(os.listdir(cur))[0]
    shutil.copyfile(os.path.join(cur, first), os.path.join(sub, 'a.eml'))
    with open(os.path.join(inp, 'unreadable.eml'), 'wb') as f:
        f.write(b'From: a@b\nSubject: secret\n\nno\n')
    os.chmod(os.path.join(inp, 'unreadable.eml'), 0)
    os.symlink('loop', os.path.join(inp, 'loop'))
    attach = False
    for root, _d, files in os.walk(os.path.join(inp, 'Maildir')):
        for name in files:
            with open(os.path.join(root, name), 'rb') as f:
                if b'Content-Disposition: attachment' in f.read():
                    attach = True
    if not attach:
        raise RuntimeError('the corpus has no message with an attachment: change the seed')
    return [inp, os.path.join(inp, 'loop'), os.path.join(top, 'gone.eml')]


def priv_prefix():
    """As root, drop the capabilities that bypass file permissions, so that
    the unreadable file fails with EACCES.  Without setpriv (or when the
    bounding set cannot be changed) the file is simply read."""
    if os.geteuid() != 0 or not shutil.which('setpriv'):
        return []
    pre = ['setpriv', '--inh-caps=-all', '--bounding-set=-dac_override,-dac_read_search', '--']
    r = subprocess.run(pre + ['true'], capture_output=True)
    return pre if r.returncode == 0 else []


class Walk:
    def __init__(self, ingest, top, args):
        self.ingest = ingest
        self.top = top
        self.inputs = build_corpus(top)
        self.pre = priv_prefix()
        self.args = args
        self.expected = {}
        self.calls = {}

    def argv(self, backend, extra=()):
        return self.pre + [self.ingest, '-q', '--stats=json', f'--backend={backend}',
                           *extra, *self.inputs]

    def run(self, backend, fault=None, count=False, extra=()):
        env = {}
        if fault:
            env['INGEST_FAULT'] = fault
        if count:
            env['INGEST_FAULT_COUNT'] = '1'
        return rl.run(self.argv(backend, extra), env=rl.base_env(env), timeout=TIMEOUT,
                      cwd=self.top)

    def baseline(self, backend):
        res = self.run(backend, count=True)
        prob = rl.crash_problem(res) or (res.rc != 0 and f'exit {res.rc}: {res.err_text[-800:]}')
        if prob:
            raise RuntimeError(f'{backend}: the fault-free run fails: {prob}')
        recs, problems = rl.parse_output(res.out)
        if problems:
            raise RuntimeError(f'{backend}: fault-free output: {problems}')
        keys = [rl.record_key(r) for r in recs]
        if len(set(keys)) != len(keys):
            raise RuntimeError(f'{backend}: duplicate records in the fault-free run')
        calls = 0
        for line in res.err_text.splitlines():
            if line.startswith('ingest-fault: calls='):
                calls = int(line.split('=', 1)[1])
        # the unreadable file and the three error inputs must be error records
        errs = {rl.record_path(r): r['error'].get('errno') for r in recs if 'error' in r}
        want = {b'loop': 'ELOOP', os.path.join(self.top, 'gone.eml').encode(): 'ENOENT',
                os.path.join(self.top, 'in', 'loop').encode(): 'ELOOP'}
        if self.pre:
            want[b'unreadable.eml'] = 'EACCES'
        for p, e in want.items():
            if p not in errs:
                raise RuntimeError(f'{backend}: no error record for {p!r}: {sorted(errs)}')
            if p != b'loop' and errs[p] != e:
                raise RuntimeError(f'{backend}: {p!r} is {errs[p]}, expected {e}')
        self.expected[backend] = keys
        # a second count: thread interleaving may move a call or two
        res2 = self.run(backend, count=True)
        for line in res2.err_text.splitlines():
            if line.startswith('ingest-fault: calls='):
                calls = max(calls, int(line.split('=', 1)[1]))
        self.calls[backend] = calls
        rl.note(f'{backend}: {len(keys)} records, {len(errs)} of them errors, {calls} fallible calls')
        return calls

    def check(self, backend, res, what):
        """The contract of one run; returns a list of problems."""
        p = rl.crash_problem(res, f'{what}: ')
        if p:
            return [p]
        recs, problems = rl.parse_output(res.out)
        problems = [f'{what}: {x}' for x in problems]
        if res.rc == 1:
            lines = [l for l in rl.stderr_lines(res) if not l.startswith('{')]
            if len(lines) != 1 or not lines[0].startswith('ingest: '):
                problems.append(f'{what}: exit 1 without one "ingest: ..." line: {lines[:6]!r}')
            return problems
        if res.rc != 0:
            return problems + [f'{what}: exit {res.rc}: {res.err_text[-600:]}']
        # exit 0: every input accounted for
        expected = self.expected[backend]
        index = {k: i for i, k in enumerate(expected)}
        got = [rl.record_key(r) for r in recs]
        if len(set(got)) != len(got):
            dup = sorted({k for k in got if got.count(k) > 1})
            problems.append(f'{what}: duplicate records {dup[:3]}')
        covers = []
        last = -1
        for r, k in zip(recs, got):
            if k in index:
                if index[k] < last:
                    problems.append(f'{what}: record {k} out of order')
                last = index[k]
                continue
            if 'error' not in r:
                problems.append(f'{what}: unexpected record {k}')
            else:
                covers.append(k)
        gotset = set(got)
        for k in expected:
            if k in gotset:
                continue
            root, path, _off = k
            # an error record covers what is under it: a directory of the
            # tree, the mbox itself, or a PATH argument (root "", path = the
            # argument) whose opening or listing failed
            full = root.rstrip(b'/') + b'/' + path if root else path
            if not any((c[0] == root and (path == c[1] or path.startswith(c[1] + b'/'))) or
                       (c[0] == b'' and (full == c[1] or full.startswith(c[1].rstrip(b'/') + b'/')))
                       for c in covers):
                problems.append(f'{what}: record lost: {k} (exit 0, {len(recs)} records '
                                f'of {len(expected)}; stderr {res.err_text[-300:]!r})')
                break
        return problems


def run_jobs(w, jobs, nworkers):
    """jobs: (backend, fault, extra); returns [(job, problems, result)]."""
    def one(job):
        backend, fault, extra = job
        res = w.run(backend, fault=fault, extra=extra)
        return job, w.check(backend, res, f'{backend} INGEST_FAULT={fault}'), res
    with concurrent.futures.ThreadPoolExecutor(max_workers=nworkers) as ex:
        return list(ex.map(one, jobs))


def case_walk(w, a):
    jobs = []
    for backend in BACKENDS:
        calls = w.calls[backend]
        for kind, err in FULL:
            jobs += [(backend, f'{n}:{err}:{kind}', ()) for n in range(1, calls + 1)]
        for i, (kind, err) in enumerate(SAMPLED):
            stride = 1 if a.full else STRIDE
            start = 1 if a.full else 1 + i % STRIDE
            jobs += [(backend, f'{n}:{err}:{kind}', ()) for n in range(start, calls + 1, stride)]
    rl.note(f'walk: {len(jobs)} runs, {a.jobs} at a time (sampling: see the header)')
    t0 = time.monotonic()
    results = run_jobs(w, jobs, a.jobs)
    fails = []
    outcome = {}
    for (backend, fault, _), problems, res in results:
        key = (backend, fault.split(':', 1)[1])
        o = outcome.setdefault(key, [0, 0, []])
        if problems:
            fails += problems
        elif res.rc == 0:
            o[0] += 1
        else:
            o[1] += 1
            msg = [l for l in rl.stderr_lines(res) if l.startswith('ingest: ')]
            if msg and msg[0] not in o[2]:
                o[2].append(msg[0])
    for (backend, f), (ok, failed, msgs) in sorted(outcome.items()):
        rl.note(f'  {backend:5} {f:13} completed {ok:4}, failed cleanly {failed:4}')
        for m in msgs[:12]:
            rl.note(f'        {m}')
    rl.note(f'walk: {len(jobs)} runs in {time.monotonic() - t0:.0f} s')
    return fails


def case_ring(w, a):
    """Aims at io_uring's own calls by name (INGEST_FAULT=N:ERRNO:sys:NAME):
    only the reader thread enters the ring, so the Nth io_uring_enter is the
    same call in every run and each refusal is tested exactly, not sampled
    near a number that other threads' calls shift."""
    fails = []
    base = rl.stats_json(w.run('uring'))
    enters = (base or {}).get('syscalls', {}).get('io_uring_enter', 0)
    if not enters:
        return ['ring: the fault-free uring run reports no io_uring_enter in --stats=json']
    w.expected['auto'] = w.expected['sync']
    jobs = [('uring', f'{n}:{e}:sys:io_uring_enter', ())
            for n in range(1, enters + 1) for e in ('EAGAIN', 'EBUSY', 'EINTR')]
    # the first io_uring_register is liburing's opcode probe, which is not
    # fault-injected; the named one is the direct-descriptor table
    jobs += [(b, f'1:{e}:sys:{name}', ()) for name in ('io_uring_setup', 'io_uring_register')
             for e in ('EPERM', 'ENOSYS') for b in ('auto', 'uring')]
    rl.note(f'ring: {enters} io_uring_enter calls in a fault-free run; {len(jobs)} runs')
    retried = {}
    for (b, fault, _), problems, res in run_jobs(w, jobs, a.jobs):
        fails += problems
        e = fault.split(':')[1]
        st = rl.stats_json(res)
        what = f'{b} INGEST_FAULT={fault}'
        if e in ('EAGAIN', 'EBUSY', 'EINTR'):
            if res.rc != 0:
                fails.append(f'{what}: a refused io_uring_enter failed the run (exit {res.rc}: '
                             f'{res.err_text[-300:]!r})')
            elif not st or st.get('io_uring_enter_retries', 0) < 1:
                fails.append(f'{what}: the refusal is not reported as a retry in --stats=json')
            else:
                retried[e] = retried.get(e, 0) + 1
        elif b == 'auto':
            if res.rc != 0:
                fails.append(f'{what}: auto did not fall back (exit {res.rc}: {res.err_text[-300:]!r})')
            elif not st or st.get('backend') != 'sync' or not st.get('fallback') or \
                    os.strerror(getattr(errno_mod, e)) not in st['fallback']:
                fails.append(f'{what}: fallback not reported: {st and (st.get("backend"), st.get("fallback"))}')
            else:
                rl.note(f'  {what}: fell back: "{st["fallback"]}"')
        else:
            if res.rc != 1 or 'io_uring' not in res.err_text:
                fails.append(f'{what}: --backend=uring should fail naming io_uring (exit {res.rc})')
            else:
                rl.note(f'  {what}: {[l for l in rl.stderr_lines(res) if l.startswith("ingest:")][0]}')
    for e in ('EAGAIN', 'EBUSY', 'EINTR'):
        rl.note(f'  io_uring_enter refused with {e}: retried and completed in '
                f'{retried.get(e, 0)} of {enters} runs')
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ingest', required=True)
    ap.add_argument('--case', choices=('walk', 'ring'), required=True)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--full', action='store_true')
    ap.add_argument('--keep', action='store_true')
    a = ap.parse_args()
    top = rl.tmpdir('ingest-fault-')
    try:
        w = Walk(os.path.abspath(a.ingest), top, a)
        probe = rl.has_fault_injection(w.ingest, os.path.join(top, 'in', 'notes'))
        if probe is None:
            rl.note('SKIP: ingest was built without -Dfault_injection=true '
                    '(INGEST_FAULT_COUNT=1 printed nothing)')
            return rl.SKIP
        if not w.pre and os.geteuid() == 0:
            rl.note('note: setpriv cannot drop CAP_DAC_OVERRIDE here: the mode-000 file is read')
        for b in BACKENDS:
            w.baseline(b)
        fails = case_walk(w, a) if a.case == 'walk' else case_ring(w, a)
    except rl.Skip as e:
        rl.note(f'SKIP: {e}')
        return rl.SKIP
    finally:
        if a.keep:
            rl.note(f'kept {top}')
        else:
            rl.rmtree(top)
    for f in fails[:40]:
        rl.note(f'FAIL: {f}')
    if len(fails) > 40:
        rl.note(f'... and {len(fails) - 40} more')
    rl.note('PASS' if not fails else f'{len(fails)} failures')
    return 1 if fails else 0


if __name__ == '__main__':
    sys.exit(main())
