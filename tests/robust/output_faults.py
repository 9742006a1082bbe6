#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Output faults: the machine under ingest fails while it writes.

    python3 output_faults.py --ingest PATH --case epipe|enospc|short-write

The promise: a closed stdout ends the run quietly (exit 141, nothing on
stderr); a write that fails ends it with exit 1 and one clear line; in every
case the output ends with a whole record — never half of one.

epipe        `ingest big | head -1` (and a reader that takes one line and
             closes), both backends: exit 141, empty stderr, head got one whole
             JSON line.  ingest ignores SIGPIPE (src/main.c) so that the
             closed pipe is an EPIPE the writer sees.
enospc       a 200 KiB tmpfs (root needed: skipped otherwise, with the
             reason) and a corpus whose output is ~1.5 MB, in small batches
             so that some fit: --output=DIR/out.jsonl, and stdout redirected
             to DIR/out.jsonl; both must exit 1 with "No space left on
             device" and leave a file of whole JSON lines (a prefix of the
             complete output).  The kernel writes what fits, a short write,
             and the next writev fails: write_all's loop and the cut back to
             the last whole record are both on this path.
short-write  a short write on demand: RLIMIT_FSIZE (the kernel writes up to
             the limit and returns fewer bytes; the next write fails with
             EFBIG, and SIGXFSZ must not kill the run), to --output and to a
             redirected stdout: exit 1, one line, whole records.  Fault
             injection cannot make writev short (it fails a call before it is
             made, with an errno), hence this.  And a slow reader on a pipe
             (reads of 1000 bytes with pauses): a blocking pipe makes writev
             wait rather than return short, so this checks that the output
             arrives whole and identical to the file output, not the loop.
"""
import argparse
import os
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import robustlib as rl  # noqa: E402

BACKENDS = ('uring', 'sync')


def corpus(top):
    big = os.path.join(top, 'big')
    rl.mkcorpus(big, '--count', '400', seed=3)
    return big


def whole_prefix(path_or_bytes, full, what):
    """The partial output must be whole lines and a prefix of the full run's
    records (in order)."""
    data = path_or_bytes
    if isinstance(data, str):
        with open(data, 'rb') as f:
            data = f.read()
    recs, problems = rl.parse_output(data)
    problems = [f'{what}: {p}' for p in problems]
    if not full.startswith(data):
        problems.append(f'{what}: the {len(data)} bytes written are not a prefix of the '
                        f'complete output')
    return problems, len(recs)


def case_epipe(ingest, top):
    big = corpus(top)
    fails = []
    for b in BACKENDS:
        for how in ('head', 'python'):
            p = subprocess.Popen([ingest, f'--backend={b}', big], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=rl.base_env())
            if how == 'head':
                h = subprocess.Popen(['head', '-1'], stdin=p.stdout, stdout=subprocess.PIPE)
                p.stdout.close()
                first, _ = h.communicate(timeout=30)
            else:
                first = p.stdout.readline()
                p.stdout.close()
            try:
                err = p.stderr.read()
                rc = p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                fails.append(f'{b}/{how}: hang after the reader closed')
                continue
            res = rl.Result(['ingest'], rc, b'', err)
            what = f'{b} | {how}'
            prob = rl.crash_problem(res, what + ': ')
            if prob:
                fails.append(prob)
                continue
            recs, problems = rl.parse_output(first)
            fails += [f'{what}: {x}' for x in problems]
            if len(recs) != 1:
                fails.append(f'{what}: the reader got {len(recs)} records')
            if rc != 141:
                fails.append(f'{what}: exit {rc}, expected 141')
            if err.strip():
                fails.append(f'{what}: stderr noise: {err[-300:]!r}')
            rl.note(f'{what}: exit {rc}, stderr {len(err)} bytes')
    return fails


def can_mount_tmpfs(top):
    if os.geteuid() != 0:
        return 'not root: mounting a tmpfs needs root'
    d = os.path.join(top, 'probe')
    os.mkdir(d)
    r = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=200k', 'tmpfs', d],
                       capture_output=True)
    if r.returncode != 0:
        return f'mount -t tmpfs refused: {r.stderr.decode().strip()}'
    subprocess.run(['umount', d])
    return None


def failed_write_problems(res, what, errtext):
    fails = []
    prob = rl.crash_problem(res, what + ': ')
    if prob:
        return [prob]
    if res.rc != 1:
        fails.append(f'{what}: exit {res.rc}, expected 1')
    lines = rl.stderr_lines(res)
    if len(lines) != 1 or not lines[0].startswith('ingest: ') or errtext not in lines[0]:
        fails.append(f'{what}: expected one line "ingest: ... {errtext}", got {lines[:4]!r}')
    return fails


def run_into(argv, mode, out, preexec_fn=None):
    """Runs argv writing its records to the file out, through --output or
    through a stdout redirected there (mode '--output' or 'stdout')."""
    if mode == '--output':
        p = subprocess.run(argv + [f'--output={out}'], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, env=rl.base_env(), preexec_fn=preexec_fn,
                           timeout=60)
    else:
        with open(out, 'wb') as f:
            p = subprocess.run(argv, stdout=f, stderr=subprocess.PIPE, env=rl.base_env(),
                               preexec_fn=preexec_fn, timeout=60)
    return rl.Result(argv, p.returncode, b'', p.stderr)


def full_output(ingest, big, b, extra=()):
    res = rl.run([ingest, '-q', f'--backend={b}', *extra, big], env=rl.base_env(), timeout=60)
    if res.rc != 0 or rl.crash_problem(res):
        raise RuntimeError(f'{b}: the reference run failed: {res.err_text[-500:]}')
    return res.out


def case_enospc(ingest, top):
    why = can_mount_tmpfs(top)
    if why:
        raise rl.Skip(why)
    big = corpus(top)
    fails = []
    mnt = os.path.join(top, 'full')
    os.mkdir(mnt)
    extra = ('--batch-bytes=32K',)
    try:
        for b in BACKENDS:
            full = full_output(ingest, big, b, extra)
            for mode in ('--output', 'stdout'):
                subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=200k', 'tmpfs', mnt], check=True)
                try:
                    out = os.path.join(mnt, 'out.jsonl')
                    argv = [ingest, '-q', f'--backend={b}', *extra, big]
                    what = f'{b} {mode} on a full tmpfs'
                    res = run_into(argv, mode, out)
                    fails += failed_write_problems(res, what, 'No space left on device')
                    problems, n = whole_prefix(out, full, what)
                    fails += problems
                    rl.note(f'{what}: exit {res.rc}, {os.path.getsize(out)} bytes, {n} whole '
                            f'records kept; {rl.stderr_lines(res)[:1]}')
                finally:
                    subprocess.run(['umount', mnt])
    finally:
        subprocess.run(['umount', mnt], stderr=subprocess.DEVNULL)
    return fails


def case_short_write(ingest, top):
    big = corpus(top)
    fails = []
    limit = 100000

    def fsize():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    extra = ('--batch-bytes=32K',)   # small batches: some fit under the limit
    for b in BACKENDS:
        full = full_output(ingest, big, b, extra)
        for mode in ('--output', 'stdout'):
            out = os.path.join(top, f'fsize-{b}-{mode.strip("-")}.jsonl')
            argv = [ingest, '-q', f'--backend={b}', *extra, big]
            what = f'{b} {mode} under RLIMIT_FSIZE={limit}'
            res = run_into(argv, mode, out, preexec_fn=fsize)
            fails += failed_write_problems(res, what, 'File too large')
            problems, n = whole_prefix(out, full, what)
            fails += problems
            rl.note(f'{what}: exit {res.rc}, {os.path.getsize(out)} bytes, {n} whole records; '
                    f'{rl.stderr_lines(res)[:1]}')
        # a slow reader: everything arrives, whole, the same as at full speed
        p = subprocess.Popen([ingest, '-q', f'--backend={b}', *extra, big], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=rl.base_env())
        got = bytearray()
        t0 = time.monotonic()
        while True:
            chunk = p.stdout.read1(1000) if hasattr(p.stdout, 'read1') else p.stdout.read(1000)
            if not chunk:
                break
            got += chunk
            if len(got) % 50 < 10:
                time.sleep(0.001)
            if time.monotonic() - t0 > 120:
                p.kill()
                fails.append(f'{b}: slow reader: hang')
                break
        err = p.stderr.read()
        rc = p.wait()
        res = rl.Result(['ingest'], rc, bytes(got), err)
        prob = rl.crash_problem(res, f'{b} slow reader: ')
        if prob or rc != 0 or bytes(got) != full:
            fails.append(prob or f'{b} slow reader: exit {rc}, {len(got)} of {len(full)} bytes, '
                                 f'same={bytes(got) == full}')
        rl.note(f'{b} slow reader: exit {rc}, {len(got)} bytes in {time.monotonic() - t0:.1f} s')
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ingest', required=True)
    ap.add_argument('--case', choices=('epipe', 'enospc', 'short-write'), required=True)
    a = ap.parse_args()
    ingest = os.path.abspath(a.ingest)
    case = {'epipe': case_epipe, 'enospc': case_enospc, 'short-write': case_short_write}[a.case]
    return rl.run_in_tmpdir('ingest-out-', lambda top: case(ingest, top), limit=1000)


if __name__ == '__main__':
    sys.exit(main())
