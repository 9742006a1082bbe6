/* SPDX-License-Identifier: MIT */
/* The string view every layer passes around: bytes and a length, not
 * NUL-terminated, not owned (the batch or an arena owns the bytes).  A path
 * or a header value need not be UTF-8; the emitter makes it valid JSON
 * losslessly.  p == NULL means absent, which is not the same as empty. */
#ifndef INGEST_CORE_STR_H
#define INGEST_CORE_STR_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct str {
	const char *p;
	size_t n;
};

#define STR_NULL ((struct str){ NULL, 0 })
static inline bool str_present(struct str s) { return s.p != NULL; }

/* Byte order, then the shorter first: memcmp's, and SQLite's for two blobs
 * or two texts under BINARY (index/index.c merges its rows by it). */
static inline int str_cmp(struct str a, struct str b)
{
	int c = a.n && b.n ? memcmp(a.p, b.p, a.n < b.n ? a.n : b.n) : 0;
	return c ? c : (a.n > b.n) - (a.n < b.n);
}

#endif
