/* SPDX-License-Identifier: MIT */
/* Shared by the libFuzzer targets of tests/fuzz/ and by replay.c.
 *
 * A target is one function, LLVMFuzzerTestOneInput(), linked either with
 * libFuzzer (-Dfuzz=true, clang) or with replay.c, which feeds it the files
 * of the seed corpora so that every normal build replays them as tests.
 *
 * Inputs are pointer + length and never NUL-terminated; the parser's APIs
 * take the same.  Each target works on fuzz_dup()'s exact-size heap copy, so
 * a read one byte past the end is an AddressSanitizer report whoever owns
 * the caller's buffer.  Checks use FUZZ_CHECK, not assert: the release
 * build (NDEBUG) replays the corpora too and must not lose them. */
#ifndef INGEST_FUZZ_H
#define INGEST_FUZZ_H

#include "mail/mail.h"
#include "mail/mail_ctx.h"
#include "core/utf8.h"
#include "emit/json.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond)                                                   \
	do {                                                                   \
		if (!(cond)) {                                                     \
			fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__,    \
			        __LINE__, #cond);                                      \
			abort();                                                       \
		}                                                                  \
	} while (0)

/* An exact-size copy of the input (malloc(0) is a valid, unreadable block
 * with glibc and ASan). */
static inline uint8_t *fuzz_dup(const uint8_t *data, size_t size)
{
	uint8_t *p = malloc(size);
	if (!p)
		p = malloc(1);
	if (!p)
		abort();
	if (size)
		memcpy(p, data, size);
	return p;
}

/* The worker's context, created once per process (libFuzzer runs every
 * input in one process, as a worker parses message after message), with
 * its arena and scratch reset as mail_parse() does on entry. */
static inline struct mail_ctx *fuzz_ctx(void)
{
	static struct mail_ctx *ctx;
	if (!ctx && !(ctx = mail_ctx_new()))
		abort();
	arena_reset(&ctx->arena);
	dynbuf_reset(&ctx->scratch);
	return ctx;
}

/* Reads every byte of s (so ASan checks the whole view) and says whether it
 * is well-formed UTF-8.  A NULL pointer must come with length 0. */
static inline int fuzz_str_utf8(struct str s)
{
	if (!s.p) {
		FUZZ_CHECK(s.n == 0);
		return 1;
	}
	return utf8_valid(s.p, s.n);
}

/* True when the view s lies inside p[0..n). */
static inline int fuzz_str_within(struct str s, const uint8_t *p, size_t n)
{
	uintptr_t b = (uintptr_t)p, q = (uintptr_t)s.p;
	return q >= b && s.n <= n && q - b <= n - s.n;
}

#endif
