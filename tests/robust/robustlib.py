# SPDX-License-Identifier: MIT
"""Shared helpers of the 'robust' suite: corpora, running ingest
under the sanitizers, and the output contract every run must keep.

The contract: exit 0 means every
input became exactly one record (a message or an error naming the file and
the reason); exit 1 means the run failed, with one line "ingest: ..." on
stderr; nothing else.  Whatever the exit, stdout holds whole JSON lines only:
never a partial last line.  A signal, a sanitizer report (a leak included)
or a hang is always a failure.
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
MKCORPUS = os.path.normpath(os.path.join(HERE, '..', '..', 'tools', 'mkcorpus'))

# Our own sanitizer settings, whatever the caller exported: a distinct exit
# status for a sanitizer report (ingest itself exits 0, 1, 2 or 130), leaks
# checked, no core files.  A report is also recognised by its text.
SAN_EXIT = 86
SAN_ENV = {
    'ASAN_OPTIONS': f'detect_leaks=1:exitcode={SAN_EXIT}:abort_on_error=0:'
                    'disable_coredump=1:handle_abort=1',
    'LSAN_OPTIONS': f'exitcode={SAN_EXIT}',
    'UBSAN_OPTIONS': f'halt_on_error=1:print_stacktrace=1:exitcode={SAN_EXIT}',
}
SAN_MARKERS = ('ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:',
               'ERROR: ThreadSanitizer', 'SUMMARY: UndefinedBehaviorSanitizer')


class Skip(Exception):
    pass


def note(msg=''):
    print(msg, flush=True)


def base_env(extra=None):
    env = dict(os.environ)
    for k in ('INGEST_FAULT', 'INGEST_FAULT_COUNT'):
        env.pop(k, None)
    env.update(SAN_ENV)
    env['LC_ALL'] = 'C'
    if extra:
        env.update(extra)
    return env


class Result:
    def __init__(self, argv, rc, out, err, hung=False, elapsed=0.0):
        self.argv, self.rc, self.out, self.err = argv, rc, out, err
        self.hung, self.elapsed = hung, elapsed

    @property
    def err_text(self):
        return self.err.decode('utf-8', 'replace')


def run(argv, env=None, timeout=20, stdin=subprocess.DEVNULL, cwd=None):
    """Runs argv; a timeout kills the whole process group and marks a hang."""
    import time
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         env=env, cwd=cwd, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return Result(argv, p.returncode, out, err, elapsed=time.monotonic() - t0)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        return Result(argv, p.returncode, out, err, hung=True, elapsed=time.monotonic() - t0)


def change_kind(rec):
    """'deleted' or 'renamed' for --state's change records, else None."""
    for k in ('deleted', 'renamed'):
        if k in rec or k + '_b64' in rec:
            return k
    return None


def _bytes_member(obj, name):
    if name + '_b64' in obj:
        return base64.b64decode(obj[name + '_b64'])
    return obj[name].encode('utf-8', 'surrogateescape')


def record_path(rec):
    """The exact bytes of a record's path (path_b64 when it is not UTF-8);
    for --state's change records, the path deleted or renamed to."""
    kind = change_kind(rec)
    if kind == 'deleted':
        return _bytes_member(rec, 'deleted')
    if kind == 'renamed':
        return _bytes_member(rec['renamed'], 'to')
    return _bytes_member(rec, 'path')


def record_root(rec):
    if 'root_b64' in rec:
        return base64.b64decode(rec['root_b64'])
    return rec.get('root', '').encode('utf-8', 'surrogateescape')


def record_key(rec):
    """What identifies an input: root, path and, for a message of an mbox,
    its offset; for a change record (--state), its kind in place of the
    offset (and the old name of a rename)."""
    kind = change_kind(rec)
    if kind == 'renamed':
        kind = 'renamed from ' + _bytes_member(rec['renamed'], 'from').decode('utf-8', 'replace')
    return (record_root(rec), record_path(rec), kind or rec.get('offset'))


def stats_json(res):
    """The --stats=json object of a run's stderr, or {} when there is none."""
    for line in res.err_text.splitlines():
        if line.startswith('{'):
            try:
                return json.loads(line)
            except ValueError:
                pass
    return {}


def parse_output(out):
    """Splits stdout into records.  Returns (records, problems): problems
    name a partial last line, a line that is not a JSON object, or an error
    record that does not name its file and reason."""
    problems = []
    records = []
    if out and not out.endswith(b'\n'):
        problems.append(f'partial last line: {out[-120:]!r}')
    for n, line in enumerate(out.split(b'\n')[:-1] if out else [], 1):
        try:
            rec = json.loads(line)
        except ValueError as e:
            problems.append(f'line {n} is not JSON ({e}): {line[:160]!r}')
            continue
        if not isinstance(rec, dict) or ('path' not in rec and 'path_b64' not in rec and
                                         not change_kind(rec)):
            problems.append(f'line {n} has no path: {line[:160]!r}')
            continue
        err = rec.get('error')
        if err is not None:
            if not isinstance(err, dict) or not err.get('message') or \
                    not (err.get('errno') or err.get('reason')):
                problems.append(f'line {n}: error record without reason/message: {line[:200]!r}')
        records.append(rec)
    return records, problems


def sanitizer_report(res):
    text = res.err_text
    for m in SAN_MARKERS:
        if m in text:
            i = text.find(m)
            return text[max(0, i - 200):i + 1500]
    if res.rc == SAN_EXIT:
        return text[-1500:]
    return None


def crash_problem(res, what=''):
    """A hang, a signal or a sanitizer report: always a failure."""
    if res.hung:
        return f'{what}hang (killed after the timeout)'
    san = sanitizer_report(res)
    if san:
        return f'{what}sanitizer report (exit {res.rc}):\n{san}'
    if res.rc is not None and res.rc < 0:
        return f'{what}killed by signal {-res.rc} ({signal.Signals(-res.rc).name})\n{res.err_text[-800:]}'
    return None


def stderr_lines(res, drop_prefixes=('ingest-fault:',)):
    return [l for l in res.err_text.splitlines() if l and not l.startswith(drop_prefixes)]


def failure_line_problem(res):
    """Exit 1 must come with exactly one line 'ingest: ...' on stderr (the
    runs of this suite pass --quiet, so no error summary precedes it)."""
    lines = stderr_lines(res)
    if len(lines) != 1 or not lines[0].startswith('ingest: '):
        return f'exit 1 without one "ingest: ..." line on stderr: {lines[:6]!r}'
    return None


def mkcorpus(out, *args, seed=7):
    if not os.path.exists(MKCORPUS):
        raise Skip(f'no corpus generator at {MKCORPUS}')
    r = subprocess.run([sys.executable, MKCORPUS, '--seed', str(seed), '--out', out, *args],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError(f'mkcorpus failed: {r.stderr.decode()[-500:]}')


def tmpdir(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o755)
    return d


def rmtree(d):
    # a test may leave unreadable directories behind: make them readable first
    for root, dirs, _files in os.walk(d):
        for x in dirs:
            try:
                os.chmod(os.path.join(root, x), 0o755)
            except OSError:
                pass
    shutil.rmtree(d, ignore_errors=True)


def has_fault_injection(ingest, corpus):
    """INGEST_FAULT_COUNT=1 prints 'ingest-fault: calls=N' only in a build
    with -Dfault_injection=true."""
    r = run([ingest, '-q', '--io-only', corpus], env=base_env({'INGEST_FAULT_COUNT': '1'}))
    for line in r.err_text.splitlines():
        if line.startswith('ingest-fault: calls='):
            return int(line.split('=', 1)[1])
    return None


def fault_fired(res):
    """The faults a run reports as fired (src/core/fault.c): a list of
    (n, errno name, call name, site) from 'ingest-fault: fired N E at NAME
    SITE' lines."""
    out = []
    for line in res.err_text.splitlines():
        if line.startswith('ingest-fault: fired '):
            w = line.split()
            if len(w) >= 7 and w[4] == 'at':
                out.append((int(w[2]), w[3], w[5], w[6]))
    return out


def fault_counts(res):
    """INGEST_FAULT_COUNT=1's per-site counts: {(kind, name, site): calls}.
    A site printed twice (one literal per translation unit) is summed."""
    counts = {}
    for line in res.err_text.splitlines():
        if line.startswith('ingest-fault: count '):
            w = line.split()
            if len(w) == 6:
                key = (w[2], w[3], w[4])
                counts[key] = counts.get(key, 0) + int(w[5])
    return counts


def fault_calls(res):
    """INGEST_FAULT_COUNT=1's total, or None when the run printed none."""
    for line in res.err_text.splitlines():
        if line.startswith('ingest-fault: calls='):
            return int(line.split('=', 1)[1])
    return None


def need_fault_injection(ingest, corpus):
    """Skips the test when ingest was built without fault injection."""
    if has_fault_injection(ingest, corpus) is None:
        raise Skip('ingest was built without -Dfault_injection=true '
                   '(INGEST_FAULT_COUNT=1 printed nothing)')


def run_in_tmpdir(prefix, body, keep=False, limit=60):
    """A test script's main: body(top) in a fresh temporary directory,
    removed after unless keep; returns the exit status: SKIP when body
    raised Skip, else report_fails() of the failures it returned."""
    top = tmpdir(prefix)
    try:
        fails = body(top)
    except Skip as e:
        note(f'SKIP: {e}')
        return SKIP
    finally:
        if keep:
            note(f'kept {top}')
        else:
            rmtree(top)
    return report_fails(fails, limit)


def report_fails(fails, limit):
    """Prints the first `limit` failures, PASS or their count; the exit
    status of a test script."""
    for f in fails[:limit]:
        note(f'FAIL: {f}')
    if len(fails) > limit:
        note(f'... and {len(fails) - limit} more')
    note('PASS' if not fails else f'{len(fails)} failures')
    return 1 if fails else 0
