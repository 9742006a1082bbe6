/* Fault injection (issue 7), compiled in with -Dfault_injection=true.
 *
 * INGEST_FAULT=N:ERRNO[:KIND] makes the Nth fallible call fail with ERRNO (a
 * name such as ENOSPC, or a number) if it is of KIND (sys, alloc, or any —
 * the default).  Syscalls and allocations share one numbering, across
 * threads in the order they happen, so a test that walks N over 1..total
 * covers every call site of a run.
 * INGEST_FAULT=N:ERRNO:sys:NAME fails the Nth call of the syscall NAME (as
 * strace names it) instead: calls made by one thread, such as the reader's
 * io_uring_enter, then have the same number in every run.
 * INGEST_FAULT_COUNT=1 makes the process print, at exit, how many fallible
 * calls it made (so the walk knows where to stop).  Without the build option
 * every function here is a constant 0 and costs nothing. */
#ifndef INGEST_FAULT_H
#define INGEST_FAULT_H

enum fault_kind { FAULT_SYS = 1, FAULT_ALLOC = 2 };

/* -errno when this call must fail, else 0.  `name` is the syscall's name,
 * NULL for an allocation. */
int fault_check(enum fault_kind kind, const char *name);

#endif
