/* SPDX-License-Identifier: MIT */
/* Fault injection, compiled in with -Dfault_injection=true.
 *
 * Every fallible call ingest makes passes through fault_check_at(): the
 * syscall wrappers of core/sys.c (and the ring's own calls in io/uring.c),
 * the allocations of core/xalloc.c, and the library calls that can fail
 * (fault_lib(): pthread_create, iconv_open, magic_open, magic_load).  Each
 * call has a NAME (the syscall as strace names it, "malloc", "calloc",
 * "realloc", or the library function) and a SITE: the caller's
 * "src/FILE.c:LINE", passed in by the wrapper macros of sys.h, xalloc.h and
 * this file (the site string is NULL, and costs nothing, without the build
 * option).
 *
 * INGEST_FAULT=N:ERRNO[:KIND[:WHICH]] makes a call fail with ERRNO (a name
 * such as ENOSPC, or a number); KIND is sys, alloc, lib or any (the
 * default).  Without WHICH, N counts the calls of KIND (of any kind: every
 * fallible call), across threads in the order they happen: one numbering
 * shared by all threads, so a call's number moves between runs.  With
 * WHICH, N counts only the calls whose NAME or SITE is WHICH:
 * "N:EIO:sys:read" fails the Nth read(2), "3:ENOMEM:alloc:src/core/dynbuf.c:68"
 * the third allocation made at that line, so that the same call fails in
 * every run whatever the other threads do (as long as one thread makes the
 * calls of that site, or their order does not matter).
 *
 * When the fault fires, one line goes to stderr:
 *     ingest-fault: fired N ERRNO at NAME SITE
 * so that a test can tell a run whose fault fired from one that never
 * reached call N (which would pass vacuously).
 *
 * INGEST_FAULT_COUNT=1 makes the process print at exit how many fallible
 * calls it made, then one line per site:
 *     ingest-fault: calls=TOTAL
 *     ingest-fault: count KIND NAME SITE CALLS
 * (a walk enumerates N over these).  Without the build option every
 * function here is a constant 0 and costs nothing. */
#ifndef INGEST_FAULT_H
#define INGEST_FAULT_H

#include "config.h"

enum fault_kind { FAULT_SYS = 1 << 0, FAULT_ALLOC = 1 << 1, FAULT_LIB = 1 << 2 };

#if INGEST_FAULT_INJECTION
#define FAULT_STR_(x) #x
#define FAULT_STR(x) FAULT_STR_(x)
#define FAULT_SITE (__FILE__ ":" FAULT_STR(__LINE__))
#else
#define FAULT_SITE ((const char *)0)
#endif

/* -errno when this call must fail, else 0.  `name` is what is called (see
 * above), `site` the caller's FAULT_SITE (NULL: `name` alone). */
int fault_check_at(enum fault_kind kind, const char *name, const char *site);

#define fault_check(kind, name) fault_check_at((kind), (name), FAULT_SITE)
/* A library call that can fail: `if ((r = fault_lib("iconv_open")) < 0)`
 * stands for the call's failure with errno -r. */
#define fault_lib(name) fault_check_at(FAULT_LIB, (name), FAULT_SITE)

#endif
