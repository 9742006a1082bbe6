#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fault-injection walk: fail each fallible call site of a small
run in turn, on both backends, and check that nothing is lost and nothing
crashes.

    python3 fault_walk.py --ingest PATH --case walk|ring [--jobs 2] [--full]

Needs a build with -Dfault_injection=true (CI's build-asan); elsewhere it
exits 77.  The machinery (src/core/fault.h): every fallible call -- the
syscall wrappers of src/core/sys.c and the ring's own calls, every allocation
of src/core/xalloc.c, and the library calls pthread_create, iconv_open,
magic_open and magic_load -- has a NAME and a SITE ("src/io/walk.c:309").
INGEST_FAULT=N:ERRNO:KIND:WHICH fails the Nth call whose NAME or SITE is
WHICH; INGEST_FAULT=N:ERRNO:KIND the Nth call of KIND; INGEST_FAULT=N:ERRNO
the Nth of all (one numbering shared by every thread).  A fired fault prints
"ingest-fault: fired N ERRNO at NAME SITE"; INGEST_FAULT_COUNT=1 prints the
calls made per site at exit.

Not vacuous: every fault run also counts (INGEST_FAULT_COUNT=1).  A planned
fault that did not fire fails the test unless that run's own count shows it
made fewer than N such calls (timing moves a call or two: an io_uring_enter
more or less, an iconv_open in one worker or in two).  And every site that
a fault-free run executed (two fault-free runs, the larger count of each
site) must have been failed at least once, per backend and per
configuration, or the test fails naming it; a site whose planned faults all
fell beyond their runs' calls gets three more tries first.

The runs (two configurations, both backends, --batch-bytes=64K so that
anything above 4 x 64 KiB is streamed through the reader in chunks):
  'main': PATHs in/, loop and gone.eml, --files-from=list.txt, -o FILE,
      and --state=FILE with no FILE yet (the first run: FILE.lock is
      created and locked, the state is written to a fresh FILE.tmp.PID.N,
      fsynced and renamed, the directory fsynced).  in/ holds a Maildir of 12
      messages (Maildir++ folder .Sent, attachments), an mbox of 4 messages,
      a ~400 KiB mbox and a ~320 KiB message (both streamed), a message in
      ISO-8859-2 (a table built in: no iconv) and one in ISO-2022-JP
      whose JIS X 0212 escape only iconv decodes (iconv_open),
      one whose attachment only libmagic can name (magic_open/magic_load),
      a PNG that is not mail, a file nobody may read (mode 000; as root the
      run drops CAP_DAC_OVERRIDE with setpriv, so the read really fails
      with EACCES), and a symlink loop met while walking (not followed: an
      error record).  Passed explicitly: a loop of its own beside in/ (one
      inside in/ would be read once, as the PATH: followed, ELOOP from
      statx, a completion with an error on the ring) and a file that does
      not exist (ENOENT).  The list names two messages outside in/ and one
      that does not exist.
  'state': --state=FILE with an existing FILE (a copy per run), over a
      Maildir and an mbox changed since FILE was written: one message
      deleted, one renamed (a flag change), one added, the mbox appended
      to.  The output is the new and changed messages plus one "deleted"
      and one "renamed" record.

Every run must end in one of two ways:
  exit 0: every input accounted for: each record of the fault-free run is
          there, in order, exactly once, or is covered by an error record
          naming it, its mbox or a directory above it (a failed getdents64
          turns a directory into one error record); nothing
          else (a "deleted" record the fault-free run lacks is a false
          deletion); every line valid JSON; error records carry the reason
          and a message;
  exit 1: one line "ingest: ..." on stderr with a reason (no empty "()", no
          "Success"); the output file whole lines only;
  exit 2: the same, for a fault in src/io/state.c that refuses the state
          before any input is read (EACCES, ELOOP opening its lock file);
  exit 141 after EPIPE on the output (the reader of a pipe went away, as with
          `| head`): the records written are the beginning of the output;
and never: a signal, a sanitizer report (LeakSanitizer included), a hang
(30 s), a partial last line, another exit status, output on stdout (the run
writes to -o FILE), a FILE.tmp of --state left behind, a --state FILE
replaced by a run that was not complete or kept by one that was.

Exclusions (--strict turns the KNOWN ones into failures): KNOWN, below, bugs
in other files that the walk found, each matched by the fault that fired and
its symptom only; none is open.

Case 'walk' -- which faults (the budget: about 5 minutes under ASan on 2
cores, --jobs 2; ~700 runs, 3.5 minutes with the machine shared):
  - per site (INGEST_FAULT=N:ERRNO:KIND:SITE), occurrences 1, 2, a third,
    two thirds and the last of its calls (every occurrence when it has at
    most 5; --full: every occurrence of every site), with the name's first
    errno in SYS_ERRNOS / LIB_ERRNOS (EIO for syscalls, ENOMEM for
    allocations, EAGAIN for pthread_create, EINVAL for iconv_open: an
    unknown charset): a failure at the first call of a site and at one in
    the middle of the run are different situations (nothing to clean up
    yet, half a batch in flight);
  - at the first occurrence of each site (--full: at every one; in the
    'state' configuration only at the sites 'main' does not run), the
    name's other errnos: the ones the kernel really gives that call and
    that a caller could treat differently (EINTR and EAGAIN, retried where
    that makes sense; EMFILE and EACCES for openat; ENOSPC, EPIPE and EFBIG
    for the output; ENOENT and ELOOP for statx; EXDEV for the rename of the
    state file; EPERM and ENOSYS for io_uring_setup; ...);
  - the shared numbering, INGEST_FAULT=N:EIO for every STRIDE-th N of the
    'main' run (--full: every N): calls fail wherever the threads'
    interleaving puts them, which per-site numbering does not reach.
  An allocation fails with ENOMEM whatever the errno asked for.

Case 'ring' -- the ring's own failures, on --backend=uring:
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

Not reached by this walk (see tests/robust/adversarial.py and tests/cli):
the Maildir rename retry and the re-open of a file that grew (they need the
tree to change during the read), --progress (a terminal), es-bulk and TSV.
"""
import argparse
import concurrent.futures
import errno as errno_mod
import itertools
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import robustlib as rl  # noqa: E402

TIMEOUT = 30
STRIDE = 12
CAP = 5
BACKENDS = ('uring', 'sync')
BATCH = '64K'

# The first errno of a name fails every planned occurrence of its sites; the
# others fail the first and the last occurrence of each site.
SYS_ERRNOS = {
    'openat': ('EIO', 'EMFILE', 'EACCES', 'EINTR'),
    'statx': ('EIO', 'ENOENT', 'ELOOP', 'EINTR'),
    'fstat': ('EIO', 'EOVERFLOW'),
    'read': ('EIO', 'EINTR', 'EAGAIN'),
    'pread64': ('EIO', 'EINTR', 'EAGAIN'),
    'getdents64': ('EIO', 'ENOENT', 'EINTR'),
    'close': ('EIO', 'EINTR'),
    'write': ('EIO', 'ENOSPC', 'EPIPE', 'EINTR', 'EAGAIN'),
    'writev': ('EIO', 'ENOSPC', 'EPIPE', 'EFBIG', 'EINTR', 'EAGAIN'),
    'ftruncate': ('EIO', 'EINTR'),
    'lseek': ('EIO', 'EINVAL'),
    'fsync': ('EIO', 'ENOSPC', 'EINTR'),
    'renameat': ('EIO', 'EXDEV', 'ENOSPC'),
    'linkat': ('EIO', 'ENOSPC', 'EDQUOT'),
    'unlinkat': ('EIO', 'ENOENT'),
    'io_uring_setup': ('EIO', 'EPERM', 'ENOSYS', 'ENOMEM'),
    'io_uring_register': ('EIO', 'EPERM', 'ENOMEM'),
    'io_uring_enter': ('EIO', 'EINTR', 'EAGAIN', 'EBUSY'),
    'faccessat': ('EIO',),
    'sched_getaffinity': ('EIO', 'EINVAL'),
    'prlimit64': ('EIO', 'EPERM'),
    'prctl': ('EIO', 'EINVAL'),
    'fcntl': ('EIO', 'EINTR', 'EAGAIN', 'EACCES'),
    'fchmod': ('EIO', 'EPERM'),
}
LIB_ERRNOS = {
    'pthread_create': ('EAGAIN',),
    'iconv_open': ('EINVAL', 'ENOMEM'),
    'magic_open': ('ENOMEM',),
    'magic_load': ('ENOENT', 'ENOMEM'),
}


def errnos_for(kind, name):
    if kind == 'alloc':
        return ('ENOMEM',)
    if kind == 'lib':
        return LIB_ERRNOS.get(name, ('EIO',))
    return SYS_ERRNOS.get(name, ('EIO', 'EINTR'))


def occurrences(count, full):
    if full or count <= CAP:
        return list(range(1, count + 1))
    return sorted({1, 2, max(1, count // 3), max(1, 2 * count // 3), count})


# ---------------------------------------------------------------- corpus

def write(path, data, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, 'wb') as f:
        f.write(data)
    if mode is not None:
        os.chmod(path, mode)


def message(subject, body, headers=b'', ctype=b'text/plain; charset=utf-8'):
    return (b'From: Fault Walk <walk@example.org>\nTo: t@example.org\n'
            b'Date: Mon, 1 Jan 2024 10:00:00 +0000\nSubject: ' + subject + b'\n'
            b'Message-ID: <' + subject.replace(b' ', b'-') + b'@walk.example.org>\n'
            b'MIME-Version: 1.0\n' + headers + b'Content-Type: ' + ctype + b'\n\n' + body)


def big_message():
    """~320 KiB of quoted-printable text: above 4 x 64 KiB, so streamed."""
    rnd = random.Random(11)
    words = [b'mailbox', b'fault', b'reader', b'batch', b'caf=C3=A9', b'stream', b'ring']
    lines = []
    while sum(len(x) + 1 for x in lines) < 320 * 1024:
        lines.append(b' '.join(rnd.choice(words) for _ in range(10)))
    return message(b'big streamed message', b'\n'.join(lines) + b'\n',
                   b'Content-Transfer-Encoding: quoted-printable\n')


def big_mbox(top):
    """~400 KiB of mbox: streamed, and cut into messages on the way."""
    tmp = os.path.join(top, 'bigmb')
    rl.mkcorpus(tmp, '--layout', 'mbox', '--count', '70', '--size-median', '4K', seed=9)
    path = os.path.join(tmp, 'archive.mbox')
    data = open(path, 'rb').read()
    shutil.rmtree(tmp)
    if len(data) < 300 * 1024:
        filler = rl_filler(300 * 1024 - len(data))
        data += (b'\nFrom walk@example.org Mon Jan  1 10:00:00 2024\n' +
                 message(b'filler', filler))
    return data


def rl_filler(n):
    line = b'filler text for the streamed mbox, long enough to need chunks\n'
    return line * (n // len(line) + 1)


def blob_message():
    """An attachment only libmagic names: random bytes, no known magic."""
    rnd = random.Random(12)
    blob = bytes([0x13, 0x37, 0x00, 0x42]) + bytes(rnd.getrandbits(8) for _ in range(3000))
    import base64
    b64 = base64.encodebytes(blob)
    body = (b'--b1\nContent-Type: text/plain\n\nsee attached\n'
            b'--b1\nContent-Type: application/octet-stream\n'
            b'Content-Disposition: attachment; filename="data.bin"\n'
            b'Content-Transfer-Encoding: base64\n\n' + b64 + b'--b1--\n')
    return message(b'libmagic attachment', body, ctype=b'multipart/mixed; boundary="b1"')


def png_bytes():
    import zlib
    import struct
    def chunk(t, d):
        return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d))
    raw = b'\x00' + b'\xff\x00\x00' * 4
    return (b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 4, 1, 8, 2, 0, 0, 0)) +
            chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))


def build_corpus(top):
    inp = os.path.join(top, 'in')
    os.makedirs(inp)
    rl.mkcorpus(os.path.join(inp, 'Maildir'), '--count', '12', '--folders', '1',
                '--attach-ratio', '0.4', seed=7)
    mb = os.path.join(top, 'mb')
    rl.mkcorpus(mb, '--layout', 'mbox', '--count', '4', seed=8)
    shutil.move(os.path.join(mb, 'archive.mbox'), os.path.join(inp, 'archive.mbox'))
    shutil.rmtree(mb)
    write(os.path.join(inp, 'big.mbox'), big_mbox(top))
    # a plain subfolder (not a Maildir)
    sub = os.path.join(inp, 'notes', 'sub')
    os.makedirs(sub)
    cur = os.path.join(inp, 'Maildir', 'cur')
    first = sorted(os.listdir(cur))[0]
    shutil.copyfile(os.path.join(cur, first), os.path.join(sub, 'a.eml'))
    write(os.path.join(inp, 'notes', 'big.eml'), big_message())
    write(os.path.join(inp, 'notes', 'latin2.eml'),
          message(b'latin2', b'\xa3\xf3d\xbc, \xbfu\xb3w \xb1\xea\n',
                  ctype=b'text/plain; charset=iso-8859-2',
                  headers=b'Content-Transfer-Encoding: 8bit\n'))
    write(os.path.join(inp, 'notes', 'blob.eml'), blob_message())
    write(os.path.join(inp, 'notes', 'image.png'), png_bytes())
    write(os.path.join(inp, 'unreadable.eml'), b'From: a@b\nSubject: secret\n\nno\n', mode=0)
    os.symlink('loop', os.path.join(inp, 'loop'))
    attach = False
    for root, _d, files in os.walk(os.path.join(inp, 'Maildir')):
        for name in files:
            with open(os.path.join(root, name), 'rb') as f:
                if b'Content-Disposition: attachment' in f.read():
                    attach = True
    if not attach:
        raise RuntimeError('the corpus has no message with an attachment: change the seed')
    # --files-from: two messages outside in/ and one that does not exist
    write(os.path.join(top, 'listed', 'x.eml'), message(b'listed', b'named by the list\n'))
    write(os.path.join(top, 'listed', 'jis.eml'),
          message(b'iso-2022-jp', b'\x1b$B$3$s$K$A$O\x1b(B \x1b(J\\~\x1b(B \x1b$(D+!\x1b(B\n',
                  ctype=b'text/plain; charset=ISO-2022-JP', headers=b'Content-Transfer-Encoding: 7bit\n'))
    write(os.path.join(top, 'list.txt'), b'listed/x.eml\nlisted/jis.eml\nlisted/gone2.eml\n')
    os.symlink('loop', os.path.join(top, 'loop'))
    return [inp, os.path.join(top, 'loop'), os.path.join(top, 'gone.eml')]


def build_state_corpus(ingest, top, pre):
    """in2/ and state0: the state of in2 as it was, then in2 changed."""
    in2 = os.path.join(top, 'in2')
    rl.mkcorpus(os.path.join(in2, 'Maildir'), '--count', '6', seed=21)
    mb = os.path.join(top, 'mb2')
    rl.mkcorpus(mb, '--layout', 'mbox', '--count', '3', seed=22)
    shutil.move(os.path.join(mb, 'archive.mbox'), os.path.join(in2, 'archive.mbox'))
    shutil.rmtree(mb)
    state0 = os.path.join(top, 'state0')
    r = rl.run(pre + [ingest, '-q', '--backend=auto', f'--state={state0}', '-o', os.devnull, in2],
               env=rl.base_env(), timeout=TIMEOUT, cwd=top)
    if r.rc != 0 or not os.path.exists(state0):
        raise RuntimeError(f'the first --state run failed (exit {r.rc}): {r.err_text[-500:]}')
    cur = os.path.join(in2, 'Maildir', 'cur')
    names = sorted(os.listdir(cur))
    os.unlink(os.path.join(cur, names[0]))                       # deleted
    base = names[1].split(':2,')[0]
    os.rename(os.path.join(cur, names[1]), os.path.join(cur, base + ':2,RS'))   # renamed
    write(os.path.join(in2, 'Maildir', 'new', '1700000000.M1P1.walk'),
          message(b'added since the state', b'new\n'))                 # added
    with open(os.path.join(in2, 'archive.mbox'), 'ab') as f:        # changed
        f.write(b'\nFrom walk@example.org Mon Jan  1 10:00:00 2024\n' +
                message(b'appended', b'one more\n'))
    return in2, state0


def priv_prefix():
    """As root, drop the capabilities that bypass file permissions, so that
    the unreadable file fails with EACCES.  Without setpriv (or when the
    bounding set cannot be changed) the file is simply read."""
    if os.geteuid() != 0 or not shutil.which('setpriv'):
        return []
    pre = ['setpriv', '--inh-caps=-all', '--bounding-set=-dac_override,-dac_read_search', '--']
    r = subprocess.run(pre + ['true'], capture_output=True)
    return pre if r.returncode == 0 else []


# ---------------------------------------------------------------- runs

class Walk:
    CONFIGS = ('main', 'state')

    def __init__(self, ingest, top, args):
        self.ingest = ingest
        self.top = top
        self.pre = priv_prefix()
        self.inputs = build_corpus(top)
        self.in2, self.state0 = build_state_corpus(ingest, top, self.pre)
        with open(self.state0, 'rb') as f:
            self.state0_bytes = f.read()
        self.state_sync = True   # both backends run --state (they once could not: see git log)
        self.args = args
        self.expected = {}     # (config, backend) -> [record keys]
        self.counts = {}       # (config, backend) -> {(kind, name, site): calls}
        self.calls = {}        # (config, backend) -> total calls
        self.ids = itertools.count(1)
        self.lock = threading.Lock()
        os.makedirs(os.path.join(top, 'out'))

    def plan(self):
        """The (config, backend) pairs the walk runs."""
        return [(c, b) for c in self.CONFIGS for b in BACKENDS
                if self.state_sync or b == 'uring' or c == 'main']

    def argv(self, config, backend, out, state, extra=()):
        with_state = self.state_sync or backend == 'uring'
        common = [self.ingest, '-q', '--stats=json', f'--backend={backend}',
                  f'--batch-bytes={BATCH}', '-o', out,
                  *([f'--state={state}'] if with_state else []), *extra]
        if config == 'main':
            return self.pre + common + ['--files-from=list.txt', *self.inputs]
        return self.pre + common + [self.in2]

    def run(self, config, backend, fault=None, extra=()):
        """One run, counting; res.out is the output file's bytes and
        res.stdout what went to stdout (nothing, with -o)."""
        with self.lock:
            n = next(self.ids)
        out = os.path.join(self.top, 'out', f'r{n}.jsonl')
        state = os.path.join(self.top, 'out', f'r{n}.state')
        ino_before = None
        if config == 'state':
            shutil.copyfile(self.state0, state)
            ino_before = os.stat(state).st_ino
        env = {'INGEST_FAULT_COUNT': '1'}
        if fault:
            env['INGEST_FAULT'] = fault
        res = rl.run(self.argv(config, backend, out, state, extra), env=rl.base_env(env),
                     timeout=TIMEOUT, cwd=self.top)
        res.stdout = res.out
        try:
            with open(out, 'rb') as f:
                res.out = f.read()
        except FileNotFoundError:
            res.out = b''
        # the state's temporary files (FILE.tmp.PID.N) and its lock file
        outdir = os.path.dirname(state)
        side = [os.path.join(outdir, x) for x in os.listdir(outdir)
                if x.startswith(os.path.basename(state) + '.')]
        res.tmp_left = any('.tmp' in x[len(state):] for x in side)
        # A save is a new file renamed over the old one: a new inode, even
        # when the bytes are the same (a run whose directory listings all
        # failed keeps every entry).
        try:
            with open(state, 'rb') as f:
                res.state_after = f.read()
                res.state_replaced = os.fstat(f.fileno()).st_ino != ino_before
        except FileNotFoundError:
            res.state_after = None
            res.state_replaced = False
        for p in [out, state] + side:
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        return res

    def baseline(self, config, backend):
        counts = {}
        calls = 0
        for attempt in range(2):   # twice: thread interleaving may move a call or two
            res = self.run(config, backend)
            prob = rl.crash_problem(res) or (res.rc != 0 and f'exit {res.rc}: {res.err_text[-800:]}')
            if prob:
                raise RuntimeError(f'{config} {backend}: the fault-free run fails: {prob}')
            if rl.fault_fired(res):
                raise RuntimeError(f'{config} {backend}: a fault fired in a fault-free run')
            recs, problems = rl.parse_output(res.out)
            if problems:
                raise RuntimeError(f'{config} {backend}: fault-free output: {problems}')
            keys = [rl.record_key(r) for r in recs]
            if len(set(keys)) != len(keys):
                raise RuntimeError(f'{config} {backend}: duplicate records in the fault-free run')
            if attempt == 0:
                self.expected[(config, backend)] = keys
                first = recs
            elif keys != self.expected[(config, backend)]:
                raise RuntimeError(f'{config} {backend}: two fault-free runs differ')
            for k, v in rl.fault_counts(res).items():
                counts[k] = max(counts.get(k, 0), v)
            calls = max(calls, rl.fault_calls(res) or 0)
        if not counts:
            raise RuntimeError(f'{config} {backend}: INGEST_FAULT_COUNT=1 printed no site counts')
        self.counts[(config, backend)] = counts
        self.calls[(config, backend)] = calls
        self.check_baseline(config, backend, first)
        sp = self.state_problem(config, backend, res, True)
        if sp:
            raise RuntimeError(f'{config} {backend}: fault-free run: {sp}')
        errs = sum(1 for r in recs if 'error' in r)
        rl.note(f'{config} {backend}: {len(keys)} records, {errs} of them errors, {calls} '
                f'fallible calls at {len(counts)} sites ({len({k[1] for k in counts})} names)')

    def check_baseline(self, config, backend, recs):
        """The fault-free run reaches what the header promises."""
        errs = {rl.record_path(r): r['error'].get('errno') for r in recs if 'error' in r}
        if config == 'state':
            kinds = sorted(rl.change_kind(r) or 'message' for r in recs)
            for k in ('deleted', 'renamed', 'message'):
                if k not in kinds:
                    raise RuntimeError(f'state {backend}: no {k} record in the second run: {kinds}')
            return
        want = {b'loop': 'ELOOP', os.path.join(self.top, 'gone.eml').encode(): 'ENOENT',
                os.path.join(self.top, 'loop').encode(): 'ELOOP',
                b'listed/gone2.eml': 'ENOENT'}
        if self.pre:
            want[b'unreadable.eml'] = 'EACCES'
        for p, e in want.items():
            if p not in errs:
                raise RuntimeError(f'{backend}: no error record for {p!r}: {sorted(errs)}')
            if p != b'loop' and errs[p] != e:
                raise RuntimeError(f'{backend}: {p!r} is {errs[p]}, expected {e}')
        paths = {rl.record_path(r) for r in recs}
        for p in (b'listed/x.eml', b'listed/jis.eml', b'notes/big.eml', b'big.mbox',
                  b'notes/image.png', b'notes/blob.eml'):
            if p not in paths:
                raise RuntimeError(f'{backend}: no record for {p!r}')
        counts = self.counts.get((config, backend))
        names = {k[1] for k in counts} if counts else set()
        need = ['iconv_open', 'magic_load'] + (['io_uring_enter'] if backend == 'uring' else [])
        if self.state_sync or backend == 'uring':
            need += ['renameat', 'fsync']
        for n in need:
            if counts and n not in names:
                raise RuntimeError(f'{backend}: the fault-free run never calls {n}')

    def state_problem(self, config, backend, res, saved, stopped=False):
        """--state's FILE takes a run's judgement only after a complete run
        (README, "Incremental runs"): `saved` says whether this run was
        one.  A run whose output closed (`stopped`) may save the old state
        widened by what it wrote: every file it judged with no inode (read
        again by the next run), every entry with an inode one of the old
        state's, and the file whole (its last line, "end N")."""
        if not (self.state_sync or backend == 'uring'):
            return None
        old = self.state0_bytes if config == 'state' else None
        if saved and not res.state_replaced:
            return 'a complete run did not save the state'
        if not saved and stopped and res.state_replaced:
            new = res.state_after or b''
            if not new.startswith(b'ingest-state 3\n') or not re.search(rb'\nend \d+\n$', new):
                return 'a stopped run saved a state that is not whole'
            old_lines = set((old or b'').split(b'\n'))
            for line in new.split(b'\n'):
                f = line.split(b' ')
                if len(f) == 8 and all(re.fullmatch(rb'-?\d+', x) for x in f) and f[1] != b'0' \
                        and line not in old_lines:
                    return f'a stopped run saved an entry it judged as read: {line!r}'
            return None
        if not saved and (res.state_replaced or res.state_after != old):
            return 'the state was replaced after a run that was not complete'
        return None

    def check(self, config, backend, res, what):
        """The contract of one run.  Returns (problems, known): known lists
        the KNOWN bugs that explain what would otherwise be a problem."""
        fired = rl.fault_fired(res)
        f = fired[0] if fired else None
        p = rl.crash_problem(res, f'{what}: ')
        if p:
            k = known_bug(config, f, res, 'crash')
            return ([], [k]) if k else ([p], [])
        recs, problems = rl.parse_output(res.out)
        problems = [f'{what}: {x}' for x in problems]
        known = []
        if res.stdout:
            problems.append(f'{what}: output on stdout with -o FILE: {res.stdout[:120]!r}')
        if res.tmp_left and not (f and f[2] == 'unlinkat'):
            problems.append(f'{what}: the state\'s FILE.tmp was left behind')
        # exit 2: the state refused before any input was read (a lock file
        # that cannot be opened, EACCES or ELOOP): the same one-line rule
        if res.rc == 1 or (res.rc == 2 and f and f[3].startswith('src/io/state.c:')):
            lines = [l for l in rl.stderr_lines(res) if not l.startswith('{')]
            if len(lines) != 1 or not lines[0].startswith('ingest: '):
                problems.append(f'{what}: exit 1 without one "ingest: ..." line: {lines[:6]!r}')
            elif re.search(r'\(\)|: Success$|: Unknown error|: $|^ingest: $', lines[0]):
                problems.append(f'{what}: a message without its reason: {lines[0]!r}')
            sp = self.state_problem(config, backend, res, False)
            return problems + ([f'{what}: {sp}'] if sp else []), known
        expected = self.expected[(config, backend)]
        got = [rl.record_key(r) for r in recs]
        # EPIPE on the output is a reader that went away (`| head`): exit
        # 141, the records written so far, whole, and a stopped run's state
        if (res.rc == 141 and f and f[1] == 'EPIPE' and f[2] in ('write', 'writev') and
                f[3].startswith('src/pipeline/writer.c:')):
            if got != expected[:len(got)]:
                problems.append(f'{what}: output closed, but what was written is not the '
                                f'beginning of the output: {len(got)} records')
            sp = self.state_problem(config, backend, res, False, stopped=True)
            return problems + ([f'{what}: {sp}'] if sp else []), known
        if res.rc != 0:
            k = known_bug(config, f, res, f'exit {res.rc}')
            if k:
                return problems, [k]
            return problems + [f'{what}: exit {res.rc}: {res.err_text[-600:]}'], known
        # exit 0: every input accounted for
        index = {k: i for i, k in enumerate(expected)}
        if len(set(got)) != len(got):
            dup = sorted({k for k in got if got.count(k) > 1})
            problems.append(f'{what}: duplicate records {dup[:3]}')
        covers = [k for r, k in zip(recs, got) if k not in index and 'error' in r]

        def covered(root, path):
            # an error record covers what is under it: a directory of the
            # tree, the mbox itself, or a PATH argument (root "", path = the
            # argument) whose opening or listing failed
            full = root.rstrip(b'/') + b'/' + path if root else path
            return any((c[0] == root and (path == c[1] or path.startswith(c[1] + b'/'))) or
                       (c[0] == b'' and (full == c[1] or full.startswith(c[1].rstrip(b'/') + b'/')))
                       for c in covers)
        last = -1
        for r, k in zip(recs, got):
            if k in index:
                if index[k] < last:
                    problems.append(f'{what}: record {k} out of order')
                last = index[k]
            elif 'error' not in r:
                if rl.change_kind(r) == 'deleted' and covered(k[0], k[1]):
                    problems.append(f'{what}: false deletion {k}: its directory could not be listed, '
                                    f'so its state entries must be kept')
                    continue
                problems.append(f'{what}: unexpected record {k}')
        gotset = set(got)
        for k in expected:
            if k not in gotset and not covered(k[0], k[1]):
                problems.append(f'{what}: record lost: {k} (exit 0, {len(recs)} records '
                                f'of {len(expected)}; stderr {res.err_text[-300:]!r})')
                break
        sp = self.state_problem(config, backend, res, True)
        return problems + ([f'{what}: {sp}'] if sp else []), known


# Bugs outside this script's files that the walk finds, each matched
# narrowly (the fault that fired and the symptom) so that anything else still
# fails.  Reported as KNOWN, not failures; --strict fails them too.  Remove
# an entry when its fix lands.
KNOWN = {}   # none open; the ones it held (false deletions after a failed listing, a
            # half-built "deleted" item on ENOMEM, ENOMEM reported as bad usage) are fixed


def known_bug(config, f, res, symptom):
    """The KNOWN entry that explains this fault's symptom, or None: match
    narrowly here (config, the fault `f` = (n, errno, name, site), the
    symptom and res.err_text) when an entry is added."""
    return None


class Job:
    """One planned fault: `which` is the site or name N counts (None: the
    kind's or the shared numbering)."""
    __slots__ = ('config', 'backend', 'n', 'errno', 'kind', 'which', 'extra')

    def __init__(self, config, backend, n, err, kind=None, which=None, extra=()):
        self.config, self.backend, self.n, self.errno = config, backend, n, err
        self.kind, self.which, self.extra = kind, which, extra

    @property
    def spec(self):
        s = f'{self.n}:{self.errno}'
        if self.kind:
            s += f':{self.kind}'
        if self.which:
            s += f':{self.which}'
        return s

    def __str__(self):
        return f'{self.config} {self.backend} INGEST_FAULT={self.spec}'


def planned_calls(job, counts):
    """How many calls the job's N counts, from a run's per-site counts."""
    if job.which:
        return sum(v for (k, name, site), v in counts.items()
                   if job.which in (name, site) and (not job.kind or k == job.kind))
    if job.kind:
        return sum(v for (k, _n, _s), v in counts.items() if k == job.kind)
    return sum(counts.values())


def run_jobs(w, jobs, nworkers):
    """Runs the jobs; returns [(job, problems, result)].  A fault that did
    not fire is a problem unless the run itself counted fewer calls than N."""
    def one(job):
        res = w.run(job.config, job.backend, fault=job.spec, extra=job.extra)
        problems, res.known = w.check(job.config, job.backend, res, str(job))
        if w.args.strict:
            problems += [f'{job}: KNOWN {k}: {KNOWN[k]}' for k in res.known]
        fired = rl.fault_fired(res)
        res.beyond = False
        if fired:
            n, _e, name, site = fired[0]
            if len(fired) > 1:
                problems.append(f'{job}: {len(fired)} faults fired, one planned')
            if job.which and job.which not in (name, site):
                problems.append(f'{job}: fired at {name} {site}, not at {job.which}')
        elif not rl.crash_problem(res):
            counts = rl.fault_counts(res)
            made = planned_calls(job, counts)
            if not counts:
                problems.append(f'{job}: the run printed no fault counts (exit {res.rc})')
            elif made >= job.n:
                problems.append(f'{job}: the fault did not fire although the run made {made} '
                                f'such calls (a vacuous run)')
            else:
                res.beyond = True
        return job, problems, res
    with concurrent.futures.ThreadPoolExecutor(max_workers=nworkers) as ex:
        return list(ex.map(one, jobs))


def plan_walk(w, full):
    jobs = []
    for config, backend in w.plan():
        counts = w.counts[(config, backend)]
        main = w.counts.get(('main', backend), {}) if config != 'main' else {}
        for (kind, name, site), c in sorted(counts.items(), key=lambda x: x[0][2]):
            errs = errnos_for(kind, name)
            occ = occurrences(c, full)
            for n in occ:
                jobs.append(Job(config, backend, n, errs[0], kind, site))
            # the other errnos once per site and backend: in 'main' when it
            # runs the site too
            if (kind, name, site) in main and not full:
                continue
            for e in errs[1:]:
                for n in (occ if full else [1]):
                    jobs.append(Job(config, backend, n, e, kind, site))
        if config == 'main':
            calls = w.calls[(config, backend)]
            stride = 1 if full else STRIDE
            jobs += [Job(config, backend, n, 'EIO')
                     for n in range(1 + (backend == 'sync') * 3, calls + 1, stride)]
    return jobs


def case_walk(w, a):
    jobs = plan_walk(w, a.full)
    rl.note(f'walk: {len(jobs)} runs, {a.jobs} at a time (see the header for the plan)')
    if a.dry_run:
        return []
    t0 = time.monotonic()
    results = run_jobs(w, jobs, a.jobs)
    fails = []
    outcome = {}
    failed_sites = {}
    beyond = 0
    known = {}
    for job, problems, res in results:
        fails += problems
        for k in res.known:
            known.setdefault(k, []).append(str(job))
        if res.beyond:
            beyond += 1
            if beyond <= 10:
                rl.note(f'  beyond the run\'s calls: {job} (made {planned_calls(job, rl.fault_counts(res))})')
        for n, e, name, site in rl.fault_fired(res)[:1]:
            failed_sites.setdefault((job.config, job.backend), set()).add((name, site))
        key = (job.config, job.backend, job.errno)
        o = outcome.setdefault(key, [0, 0, 0, []])
        if problems:
            continue
        if res.beyond:
            o[2] += 1
        elif res.rc == 0:
            o[0] += 1
        else:
            o[1] += 1
            msg = [l for l in rl.stderr_lines(res) if l.startswith('ingest: ')]
            if msg:
                m = re.sub(r'r\d+\.(jsonl|state)', r'rN.\1', msg[0].replace(w.top + '/', ''))
                if m not in o[3]:
                    o[3].append(m)
    for (config, backend, e), (ok, failed, nofire, msgs) in sorted(outcome.items()):
        rl.note(f'  {config:5} {backend:5} {e:10} completed {ok:4}, failed cleanly {failed:4}'
                + (f', beyond the run\'s calls {nofire}' if nofire else ''))
        for m in msgs[:8]:
            rl.note(f'        {m}')
    # coverage: every site a fault-free run executed was failed at least
    # once.  A site whose planned faults all fell beyond their run's calls
    # (a call that only some runs make) gets three more tries at its first
    # occurrence before it counts as never failed.
    retry = []
    for config, backend in w.plan():
        done = failed_sites.get((config, backend), set())
        for (kind, name, site) in w.counts[(config, backend)]:
            if (name, site) not in done:
                retry += [Job(config, backend, 1, errnos_for(kind, name)[0], kind, site)] * 3
    if retry:
        rl.note(f'coverage: {len(retry) // 3} sites not failed yet: three more tries each')
    for job, problems, res in run_jobs(w, retry, a.jobs):
        fails += problems
        for n, e, name, site in rl.fault_fired(res)[:1]:
            failed_sites.setdefault((job.config, job.backend), set()).add((name, site))
    total_exec = total_failed = 0
    for config, backend in w.plan():
        executed = {(name, site) for (_k, name, site) in w.counts[(config, backend)]}
        done = failed_sites.get((config, backend), set())
        missing = sorted(executed - done)
        total_exec += len(executed)
        total_failed += len(executed & done)
        names = {n for n, _s in executed}
        rl.note(f'coverage {config} {backend}: {len(executed & done)} of {len(executed)} '
                f'executed sites failed ({len(names)} names)')
        for name, site in missing:
            fails.append(f'{config} {backend}: {name} at {site} was executed by the '
                         f'fault-free run but never failed')
    rl.note(f'walk: {len(jobs)} runs in {time.monotonic() - t0:.0f} s; {beyond} planned faults '
            f'beyond their run\'s calls; {total_failed} of {total_exec} (config, backend, site) '
            f'executed were failed')
    note_known(known)
    return fails


def note_known(known):
    for k, jobs in sorted(known.items()):
        rl.note(f'KNOWN BUG (not failing the walk without --strict), {len(jobs)} runs: {KNOWN[k]}')
        for j in jobs[:4]:
            rl.note(f'    {j}')


def case_ring(w, a):
    """Aims at io_uring's own calls by name (INGEST_FAULT=N:ERRNO:sys:NAME):
    only the reader thread enters the ring, so the Nth io_uring_enter is the
    same call in every run and each refusal is tested exactly, not sampled
    near a number that other threads' calls shift."""
    fails = []
    base = rl.stats_json(w.run('main', 'uring'))
    enters = (base or {}).get('syscalls', {}).get('io_uring_enter', 0)
    if not enters:
        return ['ring: the fault-free uring run reports no io_uring_enter in --stats=json']
    w.expected[('main', 'auto')] = w.expected[('main', 'sync')]
    jobs = [Job('main', 'uring', n, e, 'sys', 'io_uring_enter')
            for n in range(1, enters + 1) for e in ('EAGAIN', 'EBUSY', 'EINTR')]
    # the first io_uring_register is liburing's opcode probe, which is not
    # fault-injected; the named one is the direct-descriptor table
    jobs += [Job('main', b, 1, e, 'sys', name) for name in ('io_uring_setup', 'io_uring_register')
             for e in ('EPERM', 'ENOSYS') for b in ('auto', 'uring')]
    rl.note(f'ring: {enters} io_uring_enter calls in a fault-free run; {len(jobs)} runs')
    retried = {}
    known = {}
    for job, problems, res in run_jobs(w, jobs, a.jobs):
        fails += problems
        for k in res.known:
            known.setdefault(k, []).append(str(job))
        b, e = job.backend, job.errno
        st = rl.stats_json(res)
        if res.beyond:
            continue
        if e in ('EAGAIN', 'EBUSY', 'EINTR'):
            if res.rc != 0:
                fails.append(f'{job}: a refused io_uring_enter failed the run (exit {res.rc}: '
                             f'{res.err_text[-300:]!r})')
            elif not st or st.get('io_uring_enter_retries', 0) < 1:
                fails.append(f'{job}: the refusal is not reported as a retry in --stats=json')
            else:
                retried[e] = retried.get(e, 0) + 1
        elif b == 'auto':
            if res.rc != 0:
                fails.append(f'{job}: auto did not fall back (exit {res.rc}: {res.err_text[-300:]!r})')
            elif not st or st.get('backend') != 'sync' or not st.get('fallback') or \
                    os.strerror(getattr(errno_mod, e)) not in st['fallback']:
                fails.append(f'{job}: fallback not reported: {st and (st.get("backend"), st.get("fallback"))}')
            else:
                rl.note(f'  {job}: fell back: "{st["fallback"]}"')
        else:
            if res.rc != 1 or 'io_uring' not in res.err_text:
                fails.append(f'{job}: --backend=uring should fail naming io_uring (exit {res.rc})')
            else:
                rl.note(f'  {job}: {[l for l in rl.stderr_lines(res) if l.startswith("ingest:")][0]}')
    for e in ('EAGAIN', 'EBUSY', 'EINTR'):
        rl.note(f'  io_uring_enter refused with {e}: retried and completed in '
                f'{retried.get(e, 0)} of {enters} runs')
    note_known(known)
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ingest', required=True)
    ap.add_argument('--case', choices=('walk', 'ring'), required=True)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--full', action='store_true')
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('--dry-run', action='store_true', help='the fault-free runs and the plan only')
    ap.add_argument('--strict', action='store_true', help='the KNOWN bugs fail the walk too')
    a = ap.parse_args()

    def body(top):
        probe_dir = os.path.join(top, 'probe')
        os.makedirs(probe_dir)
        rl.need_fault_injection(os.path.abspath(a.ingest), probe_dir)
        w = Walk(os.path.abspath(a.ingest), top, a)
        if not w.pre and os.geteuid() == 0:
            rl.note('note: setpriv cannot drop CAP_DAC_OVERRIDE here: the mode-000 file is read')
        t0 = time.monotonic()
        for config, b in w.plan():
            if a.case == 'walk' or config == 'main':
                w.baseline(config, b)
        rl.note(f'fault-free runs: {time.monotonic() - t0:.0f} s')
        return case_walk(w, a) if a.case == 'walk' else case_ring(w, a)
    return rl.run_in_tmpdir('ingest-fault-', body, keep=a.keep, limit=60)


if __name__ == '__main__':
    sys.exit(main())
