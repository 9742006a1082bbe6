# SPDX-License-Identifier: MIT
"""The suite registry: every suite bench/run knows, in the order they run and
appear in the results file.  A suite is a function ctx -> list of markdown
lines (bench/run adds the section marker and the suite's run time).  To add
one: a module in this directory and one line in SUITES; --suites, --help and
the merging of partial runs follow from this table.

salted is not in the table: it runs only with --salted=N (ctx.salted).
"""

from .index import suite_index
from .io_stages import suite_io
from .memory import suite_memory
from .parse import suite_parse
from .pool import suite_pool
from .python import suite_python
from .read import suite_read
from .salted import suite_salted
from .single import single_thread
from .sweep import suite_sweep
from .syscalls import suite_syscalls

SUITES = {
    "syscalls": suite_syscalls,
    "read": suite_read,
    "parse": suite_parse,
    "single": single_thread,
    "pool": suite_pool,
    "sweep": suite_sweep,
    "io": suite_io,
    "memory": suite_memory,
    "python": suite_python,
    "index": suite_index,
}

SALTED = suite_salted
