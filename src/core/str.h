/* SPDX-License-Identifier: MIT */
/* The string view every layer passes around: bytes and a length, not
 * NUL-terminated, not owned (the batch or an arena owns the bytes).  A path
 * or a header value need not be UTF-8; the emitter makes it valid JSON
 * losslessly.  p == NULL means absent, which is not the same as empty. */
#ifndef INGEST_CORE_STR_H
#define INGEST_CORE_STR_H

#include <stdbool.h>
#include <stddef.h>

struct mail_str {
	const char *p;
	size_t n;
};

#define MAIL_STR_NULL ((struct mail_str){ NULL, 0 })
static inline bool mail_str_present(struct mail_str s) { return s.p != NULL; }

#endif
