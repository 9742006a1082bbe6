# SPDX-License-Identifier: MIT
"""The modules of bench/run (see bench/README.md, "Layout"): context (paths
and the run's one context object), method (runner and statistics), verify,
corpora, build, peers, benches (ingest's own rows and the controls), report,
charts, and suites/, one module per suite with the registry in
suites/__init__.py.  Python 3 stdlib only.
"""
