/* SPDX-License-Identifier: MIT */
/* What the body's readers share: the line scanner that mime.c, flowed.c
 * (RFC 3676) and transfer.c's uudecode walk the body with, and the capped
 * buffer the text is built in (mime.c, flowed.c), whose appends are cut on
 * a UTF-8 character boundary so that a text cut at mail_options.max_text
 * is still valid UTF-8. */
#ifndef INGEST_MAIL_TEXTBUF_H
#define INGEST_MAIL_TEXTBUF_H

#include "core/utf8.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Line [i, *end) without its CR LF; *next is the following line. */
static inline size_t textbuf_line(const uint8_t *p, size_t n, size_t i, size_t *next)
{
	const uint8_t *nl = memchr(p + i, '\n', n - i);
	size_t e = nl ? (size_t)(nl - p) : n;
	*next = nl ? e + 1 : n;
	if (e > i && p[e - 1] == '\r')
		e--;
	return e;
}

/* The capped buffer: appends cut on a UTF-8 character boundary. */
struct textbuf {
	char *p;
	size_t len, cap;
	bool full;
};

static inline bool textbuf_put(struct textbuf *o, const void *src, size_t k)
{
	size_t room = o->cap - o->len;
	if (k > room) {
		size_t cut = utf8_cut(src, room);
		memcpy(o->p + o->len, src, cut);
		o->len += cut;
		o->full = true;
		return false;
	}
	memcpy(o->p + o->len, src, k);
	o->len += k;
	return true;
}

#endif
