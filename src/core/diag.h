/* SPDX-License-Identifier: MIT */
/* Assertions, in two strengths (bfs's diag.h is the model):
 *
 *   ingest_assert(cond)  a debug check of an invariant that the code's own
 *                        logic guarantees; compiled out under NDEBUG (the
 *                        release build), so it may sit on hot paths.
 *   ingest_verify(cond)  always on: a broken invariant after which
 *                        continuing would corrupt memory or lose records
 *                        (a budget released twice, a channel pushed after
 *                        close).  Aborts with the file, line and condition.
 *
 * Neither is for bad input or a failed syscall: those are records and
 * -errno returns (docs/ARCHITECTURE.md).  A failed check writes one line
 * to standard error and aborts, so a core dump or a sanitizer report
 * points at it; it is a bug of ingest. */
#ifndef INGEST_CORE_DIAG_H
#define INGEST_CORE_DIAG_H

#include <stdio.h>
#include <stdlib.h>

#define ingest_verify(cond)                                                      \
	do {                                                                         \
		if (__builtin_expect(!(cond), 0)) {                                      \
			fprintf(stderr, "ingest: internal error: %s:%d: %s: check '%s' failed\n", \
			        __FILE__, __LINE__, __func__, #cond);                        \
			abort();                                                             \
		}                                                                        \
	} while (0)

#ifdef NDEBUG
#define ingest_assert(cond) ((void)sizeof(!(cond)))
#else
#define ingest_assert(cond) ingest_verify(cond)
#endif

#endif
