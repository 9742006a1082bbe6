#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Ring faults: completions with errors and a CQ overflow, on
--backend=uring.

    python3 ring_faults.py --ingest PATH --case cqe|overflow [--jobs 2]

Needs a build with -Dfault_injection=true (CI's build-asan) and a process
that may set io_uring up; elsewhere it exits 77 and says which is missing.
The refusals of io_uring_setup, io_uring_register and io_uring_enter are
fault_walk.py --case ring's; this covers what happens after a submission.
The hooks (src/io/uring.c, header; test builds only):
  INGEST_FAULT=N:ERRNO:sys:cqe_OP   the Nth completion of OP (statx, openat,
      read, close) carries -ERRNO instead of its result;
  INGEST_FAULT=N:ERRNO:sys:cqe_read_short   the Nth read that returned data
      completes with half of it (ERRNO ignored);
  INGEST_FAULT_CQ_ENTRIES=N   a ring of N SQ and N CQ entries;
  INGEST_FAULT_COUNT=1        "ingest-fault: ring cq_entries=.. cq_overflow=..
      cqes_dropped=.. cqe_retries=.." at the end.
core/fault.c prints "ingest-fault: fired N ERRNO at NAME ..." when a fault
fires: every fault run below must show it (a run whose fault never fired
would pass vacuously).

The corpus: 300 .eml files (tools/mkcorpus --layout eml), and an mbox of 60
messages (~650 KiB, the largest 353 KiB) read with --max-size=512K, so that
it is streamed (an input over --max-size is; a message over it would be a
too-large record) in chunks read on the ring.  Every run must: exit 0; write whole JSON lines
only; give one record per input, in the order of the fault-free run; show no
sanitizer report, signal or hang (30 s).

Case 'cqe' (each with the default batches and with --batch-bytes=65536, many
small batches, so that the direct-descriptor slot of a failed chain is
reused by the batches after it):
  statx, openat, read  x  EIO, ECANCELED, at the first, a middle and the last
      completion of the opcode: exactly one record differs from the
      fault-free run: an error record naming that errno.  ECANCELED on the
      open or read of a hard-linked chain must neither hang the run nor spoil
      the slot for the next file read through it.
  statx, openat, read  x  EAGAIN, EINTR: transient, submitted once more (a
      statx alone, an open or read as its whole chain): the output is
      byte-identical, cqe_retries=1, and --stats=json's ring_ops count the
      second submission.
  close  x  EIO, ECANCELED, EAGAIN: ignored (the bytes are in hand): output
      byte-identical, no retry.
  cqe_read_short: one record differs: notes ["shrank"], a smaller size;
      --stats=json "shrank" is 1.
  the streamed mbox, first and second chunk read  x  EIO, ECANCELED: the
      records before the failure are those of the fault-free run, then one
      error record for the mbox naming the errno (it covers the messages not
      read); EAGAIN: retried, byte-identical.
Case 'overflow': INGEST_FAULT_CQ_ENTRIES = 4, 8, 16, default and small
  batches: the reader submits whenever the small SQ fills, without reaping,
  so completions pile up past the CQ and the kernel (IORING_FEAT_NODROP)
  holds them in its backlog.  The output must be byte-identical to the
  fault-free run's, with cq_overflow > 0 (the overflow really happened) and
  cqes_dropped = 0.  With a CQ of 8, also: cqe_read EIO (one error record);
  and io_uring_enter refused with EBUSY (what kernels before 6.x answer a
  submission while the backlog cannot be flushed), EAGAIN and EINTR at the
  1st, 40th and 150th enter: retried, counted in io_uring_enter_retries,
  output byte-identical.
"""
import argparse
import concurrent.futures
import errno as errno_mod
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import robustlib as rl  # noqa: E402

TIMEOUT = 30
FILES = 300
SMALL = '--batch-bytes=65536'
BATCHINGS = ((), (SMALL,))
CHAIN_OPS = ('statx', 'openat', 'read')
HARD = ('EIO', 'ECANCELED')
TRANSIENT = ('EAGAIN', 'EINTR')


def errnum(name):
    # numbers, not names: core/fault.c's table of names need not know them all
    return getattr(errno_mod, name)


def ring_line(res):
    """The 'ingest-fault: ring ...' line as a dict of ints ({} when absent)."""
    for line in res.err_text.splitlines():
        if line.startswith('ingest-fault: ring '):
            return {k: int(v) for k, v in re.findall(r'(\w+)=(\d+)', line)}
    return {}


def fired(res, n, name):
    pat = re.compile(rf'^ingest-fault: fired {n} \S+ at {re.escape(name)}\b', re.M)
    return bool(pat.search(res.err_text))


class Ring:
    def __init__(self, ingest, top):
        self.ingest = ingest
        self.top = top
        self.eml = os.path.join(top, 'eml')
        rl.mkcorpus(self.eml, '--layout', 'eml', '--count', str(FILES), seed=11)
        mb = os.path.join(top, 'mb')
        rl.mkcorpus(mb, '--layout', 'mbox', '--count', '60', seed=9)
        self.mbox = os.path.join(top, 'archive.mbox')
        shutil.move(os.path.join(mb, 'archive.mbox'), self.mbox)
        shutil.rmtree(mb)
        self.base = {}

    def argv(self, target, extra):
        if target == 'mbox':
            return [self.ingest, '-q', '--stats=json', '--backend=uring', '--max-size=512K',
                    *extra, self.mbox]
        return [self.ingest, '-q', '--stats=json', '--backend=uring', *extra, self.eml]

    def run(self, target, extra=(), fault=None, env=None):
        e = {'INGEST_FAULT_COUNT': '1'}
        if fault:
            e['INGEST_FAULT'] = fault
        e.update(env or {})
        return rl.run(self.argv(target, extra), env=rl.base_env(e), timeout=TIMEOUT, cwd=self.top)

    def baseline(self, target, extra=()):
        res = self.run(target, extra)
        if res.rc == 1 and 'io_uring' in res.err_text:
            msg = [l for l in rl.stderr_lines(res) if l.startswith('ingest:')]
            raise rl.Skip(f'io_uring is not available here: {msg[:1]}')
        prob = rl.crash_problem(res) or (res.rc != 0 and f'exit {res.rc}: {res.err_text[-600:]}')
        if prob:
            raise RuntimeError(f'{target} {extra}: the fault-free run fails: {prob}')
        recs, problems = rl.parse_output(res.out)
        if problems:
            raise RuntimeError(f'{target} {extra}: fault-free output: {problems}')
        if any('error' in r for r in recs):
            raise RuntimeError(f'{target} {extra}: error records in the fault-free run')
        st = rl.stats_json(res)
        self.base[(target, extra)] = (res.out, recs, st)
        return recs, st

    def common(self, what, res, target, extra):
        """The contract of every run; returns (problems, records)."""
        p = rl.crash_problem(res, f'{what}: ')
        if p:
            return [p], []
        if res.rc != 0:
            return [f'{what}: exit {res.rc}: {rl.stderr_lines(res)[-4:]!r}'], []
        recs, problems = rl.parse_output(res.out)
        problems = [f'{what}: {x}' for x in problems]
        _out, base, _st = self.base[(target, extra)]
        if target == 'eml':
            got = [rl.record_key(r) for r in recs]
            want = [rl.record_key(r) for r in base]
            if got != want:
                problems.append(f'{what}: {len(recs)} records, not the {len(base)} of the '
                                f'fault-free run in its order')
        return problems, recs


def diff_lines(a, b):
    la, lb = a.split(b'\n'), b.split(b'\n')
    return [i for i, (x, y) in enumerate(zip(la, lb)) if x != y] + \
        list(range(min(len(la), len(lb)), max(len(la), len(lb))))


def diff_beyond_threads(a, b):
    """diff_lines, less the lines of records that differ in thread_id alone.
    A message that became an error record takes its msg-id out of the run,
    so a reply that joined its thread through it starts its own (README,
    "Threads"): 6 of this corpus' 300 files are such a parent, and which
    file a fault on the first completion hits follows the inode order the
    walk reads in, which the file system decides."""
    la, lb = a.split(b'\n'), b.split(b'\n')
    out = []
    for i in diff_lines(a, b):
        if i < len(la) and i < len(lb) and la[i] and lb[i]:
            x, y = json.loads(la[i]), json.loads(lb[i])
            x.pop('thread_id', None)
            y.pop('thread_id', None)
            if x == y:
                continue
        out.append(i)
    return out


def case_cqe(w, jobs):
    tests = []   # (what, target, extra, fault, check)
    for extra in BATCHINGS:
        _out, _recs, st = w.base[('eml', extra)]
        for op in CHAIN_OPS:
            last = st['ring_ops'][op]
            for e in HARD:
                for n in sorted({1, last // 2, last}):
                    tests.append(('eml', extra, f'{n}:{errnum(e)}:sys:cqe_{op}', n, f'cqe_{op}',
                                  ('error', e)))
            for e in TRANSIENT:
                tests.append(('eml', extra, f'7:{errnum(e)}:sys:cqe_{op}', 7, f'cqe_{op}',
                              ('retried', op)))
        for e in HARD + ('EAGAIN',):
            tests.append(('eml', extra, f'5:{errnum(e)}:sys:cqe_close', 5, 'cqe_close',
                          ('same', None)))
        tests.append(('eml', extra, f'9:{errnum("EIO")}:sys:cqe_read_short', 9,
                      'cqe_read_short', ('short', None)))
    for n in (1, 2):
        for e in HARD:
            tests.append(('mbox', (), f'{n}:{errnum(e)}:sys:cqe_read', n, 'cqe_read',
                          ('mbox-error', e)))
    tests.append(('mbox', (), f'1:{errnum("EAGAIN")}:sys:cqe_read', 1, 'cqe_read',
                  ('retried', 'chunk')))

    def one(t):
        target, extra, fault, n, name, check = t
        return t, w.run(target, extra, fault=fault)

    rl.note(f'cqe: {len(tests)} runs, {jobs} at a time')
    fails = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        results = list(ex.map(one, tests))
    for (target, extra, fault, n, name, (kind, arg)), res in results:
        what = f'{target}{" " + " ".join(extra) if extra else ""} INGEST_FAULT={fault}'
        problems, recs = w.common(what, res, target, extra)
        if problems:
            fails += problems
            continue
        if not fired(res, n, name):
            fails.append(f'{what}: the fault never fired (no "ingest-fault: fired {n} ... '
                         f'at {name}")')
            continue
        base_out, base, base_st = w.base[(target, extra)]
        st = rl.stats_json(res)
        ring = ring_line(res)
        changed = diff_lines(base_out, res.out)
        outcome = None
        if kind == 'error':
            errs = [r for r in recs if 'error' in r]
            changed = diff_beyond_threads(base_out, res.out)
            if len(changed) != 1 or len(errs) != 1 or errs[0]['error'].get('errno') != arg:
                fails.append(f'{what}: expected one error record naming {arg}, got {len(changed)} '
                             f'changed lines, errors {[r.get("error") for r in errs][:3]}')
            else:
                outcome = f'error record {errs[0]["path"]}: {arg}'
        elif kind == 'retried':
            delta = {k: st['ring_ops'][k] - base_st['ring_ops'][k] for k in base_st['ring_ops']}
            want = ({'statx': 1} if arg == 'statx' else
                    {'read': 1} if arg == 'chunk' else {'openat': 1, 'read': 1, 'close': 1})
            want = {k: want.get(k, 0) for k in delta}
            if res.out != base_out:
                fails.append(f'{what}: a transient completion changed the output '
                             f'(lines {changed[:5]})')
            elif ring.get('cqe_retries') != 1 or delta != want:
                fails.append(f'{what}: expected one retry: {ring}, ring ops {delta}')
            else:
                outcome = 'retried once, output identical'
        elif kind == 'same':
            if res.out != base_out or ring.get('cqe_retries'):
                fails.append(f'{what}: a failed close changed the output (lines {changed[:5]}) '
                             f'or was retried ({ring})')
            else:
                outcome = 'ignored, output identical'
        elif kind == 'short':
            by_key = {rl.record_key(r): r for r in base}
            diff = [r for r in recs if r != by_key.get(rl.record_key(r))]
            if len(diff) != 1 or diff[0].get('notes') != ['shrank'] or 'error' in diff[0] or \
                    diff[0].get('size', 0) >= by_key[rl.record_key(diff[0])].get('size', 0) or \
                    st.get('shrank') != 1:
                fails.append(f'{what}: expected one record noted "shrank": '
                             f'{[(r.get("path"), r.get("notes"), r.get("size")) for r in diff][:3]}, '
                             f'stats shrank {st.get("shrank")}')
            else:
                outcome = f'{diff[0]["path"]} noted shrank ({diff[0].get("size")} bytes)'
        elif kind == 'mbox-error':
            errs = [r for r in recs if 'error' in r]
            head = [r for r in recs if 'error' not in r]
            if len(errs) != 1 or recs[-1] is not errs[0] or errs[0]['error'].get('errno') != arg \
                    or rl.record_path(errs[0]) != w.mbox.encode() or head != base[:len(head)]:
                fails.append(f'{what}: expected the first messages then one error record for '
                             f'the mbox naming {arg}: {len(head)} messages, errors '
                             f'{[r.get("error") for r in errs][:3]}')
            else:
                outcome = f'{len(head)} of {len(base)} messages, then an error record: {arg}'
        if outcome:
            rl.note(f'  {what}: {outcome}')
    return fails


def case_overflow(w, jobs):
    tests = [(extra, cq, None) for extra in BATCHINGS for cq in (4, 8, 16)]
    tests.append(((), 8, f'150:{errnum("EIO")}:sys:cqe_read'))
    # an enter refused while the CQ has a backlog: -EBUSY is what kernels
    # before 6.x answer a submission they cannot flush the backlog for
    tests += [((), 8, f'{n}:{errnum(e)}:sys:io_uring_enter') for e in ('EBUSY', 'EAGAIN', 'EINTR')
              for n in (1, 40, 150)]

    def one(t):
        extra, cq, fault = t
        return t, w.run('eml', extra, fault=fault, env={'INGEST_FAULT_CQ_ENTRIES': str(cq)})

    rl.note(f'overflow: {len(tests)} runs')
    fails = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        results = list(ex.map(one, tests))
    for (extra, cq, fault), res in results:
        what = f'INGEST_FAULT_CQ_ENTRIES={cq}{" " + " ".join(extra) if extra else ""}' + \
            (f' INGEST_FAULT={fault}' if fault else '')
        problems, recs = w.common(what, res, 'eml', extra)
        if problems:
            fails += problems
            continue
        base_out = w.base[('eml', extra)][0]
        ring = ring_line(res)
        if not ring:
            fails.append(f'{what}: no "ingest-fault: ring" line on stderr')
            continue
        if ring.get('cq_entries', 0) > max(cq, 4) or not ring.get('cq_overflow') or \
                ring.get('cqes_dropped'):
            fails.append(f'{what}: the CQ did not overflow as planned (or dropped CQEs): {ring}')
            continue
        n, name = (int(fault.split(':')[0]), fault.split(':')[-1]) if fault else (0, '')
        if fault and not fired(res, n, name):
            fails.append(f'{what}: the fault never fired')
            continue
        if name == 'cqe_read':
            errs = [r for r in recs if 'error' in r]
            if len(errs) != 1 or errs[0]['error'].get('errno') != 'EIO' or \
                    len(diff_beyond_threads(base_out, res.out)) != 1:
                fails.append(f'{what}: expected one EIO error record among {len(recs)}: '
                             f'{[r.get("error") for r in errs][:3]}')
                continue
        elif res.out != base_out:
            fails.append(f'{what}: the output differs from the fault-free run '
                         f'(lines {diff_lines(base_out, res.out)[:5]})')
            continue
        elif name == 'io_uring_enter' and rl.stats_json(res).get('io_uring_enter_retries', 0) < 1:
            fails.append(f'{what}: the refused enter is not counted in io_uring_enter_retries')
            continue
        rl.note(f'  {what}: {len(recs)} records, CQ of {ring["cq_entries"]} found overflowed '
                f'after {ring["cq_overflow"]} enters, 0 CQEs dropped, '
                f'{rl.stats_json(res).get("io_uring_enter")} enters')
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ingest', required=True)
    ap.add_argument('--case', choices=('cqe', 'overflow'), required=True)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--keep', action='store_true')
    a = ap.parse_args()

    def body(top):
        w = Ring(os.path.abspath(a.ingest), top)
        rl.need_fault_injection(w.ingest, w.eml)
        for extra in BATCHINGS:
            recs, st = w.baseline('eml', extra)
            if len(recs) != FILES:
                raise RuntimeError(f'the fault-free run gave {len(recs)} records for {FILES} files')
            rl.note(f'fault-free{" " + " ".join(extra) if extra else ""}: {len(recs)} records, '
                    f'{st.get("batches")} batches, ring ops {st.get("ring_ops")}')
        recs, st = w.baseline('mbox')
        rl.note(f'fault-free mbox: {len(recs)} messages, {st["ring_ops"]["read"]} chunk reads')
        return case_cqe(w, a.jobs) if a.case == 'cqe' else case_overflow(w, a.jobs)
    return rl.run_in_tmpdir('ingest-ring-', body, keep=a.keep, limit=40)


if __name__ == '__main__':
    sys.exit(main())
