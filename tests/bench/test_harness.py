#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The benchmark harness's own rules (bench/harness), checked without
running a benchmark:

  * the defaults the sweep and bench/memory report are the ones the measured
    binary states in its --help, not a header's: a stand-in binary with other
    defaults must be reported as such, and the real one must state them in
    the form the harness reads;
  * a partial run (--suites=...) merged into an existing results file keeps
    the other sections, orders them as the suite registry does, and keeps the
    closing "Total run time" line last.

Usage: test_harness.py --ingest PATH
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.normpath(os.path.join(HERE, '..', '..', 'bench'))
sys.path.insert(0, BENCH)

from harness.build import default_batch_bytes, ingest_defaults, size_bytes  # noqa: E402
from harness.report import merge_into  # noqa: E402
from harness.suites import SUITES  # noqa: E402

INGEST = None
FAKE_HELP = """Usage: ingest [OPTIONS] PATH...
  --max-size=SIZE        files larger are not read (error record; 512K)
  --max-text=SIZE        cut the text at SIZE bytes (3M)
  --batch-bytes=SIZE     bytes per batch (4M)
  --max-inflight=SIZE    bytes read but not yet written, at most (1G)
SIZE takes K, M or G.
"""


def fake_ingest(tmp, help_text):
    """An executable that prints help_text for --help, as ingest does."""
    path = os.path.join(tmp, 'ingest')
    with open(path, 'w') as f:
        f.write('#!/bin/sh\ncat <<"EOF"\n%sEOF\n' % help_text)
    os.chmod(path, 0o755)
    return path


class Defaults(unittest.TestCase):
    def test_defaults_are_the_binarys(self):
        with tempfile.TemporaryDirectory() as tmp:
            exe = fake_ingest(tmp, FAKE_HELP)
            self.assertEqual(ingest_defaults(exe), {'max-size': '512K', 'max-text': '3M',
                                                    'batch-bytes': '4M', 'max-inflight': '1G'})
            self.assertEqual(default_batch_bytes(exe), 4 << 20)

    def test_unstated_default_is_an_error(self):
        with tempfile.TemporaryDirectory() as tmp:
            exe = fake_ingest(tmp, FAKE_HELP.replace('(4M)', ''))
            self.assertRaises(RuntimeError, default_batch_bytes, exe)

    def test_size_syntax(self):
        self.assertEqual([size_bytes(s) for s in ('7', '7K', '7M', '7G')], [7, 7 << 10, 7 << 20, 7 << 30])

    def test_real_ingest_states_them(self):
        d = ingest_defaults(INGEST)
        for opt in ('batch-bytes', 'max-inflight', 'max-size', 'max-text'):
            self.assertIn(opt, d, 'ingest --help does not state the default of --%s' % opt)
            self.assertGreater(size_bytes(d[opt]), 0)

    def test_memory_renders_the_saved_defaults(self):
        row = {'wall': 0.1, 'rss_kib': 4096, 'records': 0, 'bytes': 0, 'inflight': 0, 'backend': 'sync'}
        raw = {'rows': [['empty directory (base)', 0, row]], 'notes': [], 'machine': 'test',
               'defaults': {'batch-bytes': '4M', 'max-inflight': '1G'}}
        with tempfile.TemporaryDirectory() as tmp:
            fig, out = os.path.join(tmp, 'fig.json'), os.path.join(tmp, 'MEMORY.md')
            with open(fig, 'w') as f:
                json.dump(raw, f)
            subprocess.run([sys.executable, os.path.join(BENCH, 'memory'), '--render=' + fig, '--out=' + out],
                           check=True, stdout=subprocess.DEVNULL)
            with open(out) as f:
                text = f.read()
        self.assertIn('`--batch-bytes=4M`, `--max-inflight=1G`', text)


class Merge(unittest.TestCase):
    def test_partial_run_replaces_its_sections(self):
        names = list(SUITES)
        first, middle, last = names[0], names[len(names) // 2], names[-1]
        old = ('# head\n\n| commit | old |\n\n'
               '<!-- suite:%s -->\n## %s old\n\n'
               '<!-- suite:%s -->\n## %s old\n\n*Total run time: 9 s.*\n' % (last, last, first, first))
        body = ['<!-- suite:%s -->' % middle, '## %s new' % middle, 'row', '',
                '<!-- suite:%s -->' % last, '## %s new' % last, '']
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, 'RESULTS.md')
            with open(path, 'w') as f:
                f.write(old)
            text = merge_into(path, names, body, '| commit | new |\n| machine | m |')
        self.assertTrue(text.startswith('# head\n\n| commit | old |'))
        marks = [ln for ln in text.splitlines() if ln.startswith('<!-- suite:')]
        self.assertEqual(marks, ['<!-- suite:%s -->' % n for n in (first, middle, last)])
        self.assertIn('## %s old' % first, text)
        self.assertNotIn('## %s old' % last, text)
        self.assertIn('> | commit | new |', text)
        self.assertTrue(text.rstrip().endswith('*Total run time: 9 s.*'))


if __name__ == '__main__':
    ap = argparse.ArgumentParser()
    ap.add_argument('--ingest', required=True)
    a, rest = ap.parse_known_args()
    INGEST = a.ingest
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
