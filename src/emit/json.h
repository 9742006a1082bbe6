/* SPDX-License-Identifier: MIT */
/* JSON string writing for the emitter: escaping, UTF-8 repair, lossless
 * byte strings, integers.
 *
 * Every function appends to a dynbuf and returns 0 or -errno (-E2BIG when
 * the buffer's cap is reached, -ENOMEM).  On failure the buffer may hold a
 * partial value: callers that need all-or-nothing (emit_record) remember the
 * length and truncate back.  Pure: no globals, no syscalls, thread-safe on
 * distinct buffers.
 *
 * What comes out is always valid UTF-8 JSON whatever bytes go in: invalid
 * UTF-8 becomes U+FFFD (one per maximal ill-formed subpart, Unicode 15 §3.9
 * "U+FFFD substitution of maximal subparts", as WHATWG and Python do). */
#ifndef INGEST_EMIT_JSON_H
#define INGEST_EMIT_JSON_H

#include "core/dynbuf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Appends p[0..n) as a quoted JSON string: `"`, `\`, and control characters
 * below 0x20 escaped (\b \t \n \f \r, else \u00XX; DEL passes), invalid
 * UTF-8 replaced by U+FFFD.  p may be NULL when n is 0. */
int json_put_str(struct dynbuf *b, const char *p, size_t n);

/* json_put_str for bytes already known to be valid UTF-8 (the parser's
 * decoded strings: mail.h's contract, checked by the fuzz targets): the
 * same output, but non-ASCII is copied without being validated again,
 * which is most of the cost of a long text in a legacy charset.  Bytes
 * that are not valid UTF-8 after all are still replaced wherever the
 * portable path or a block's tail looks at them, but not guaranteed to be:
 * never pass it bytes that came straight from the input. */
int json_put_utf8(struct dynbuf *b, const char *p, size_t n);

/* The same as json_put_str for a NUL-terminated string. */
int json_put_cstr(struct dynbuf *b, const char *s);

/* Appends a member for a byte string that need not be UTF-8 (a file path):
 * `"key":"<text>"`, and, only when the bytes are not valid UTF-8,
 * `,"key_b64":"<base64>"` where <text> has U+FFFD for the bad bytes and
 * <base64> is RFC 4648 base64 (padded) of the exact bytes.  key is plain
 * ASCII needing no escape. */
int json_put_bytes_member(struct dynbuf *b, const char *key,
                          const char *p, size_t n);

/* Appends RFC 4648 base64 of p[0..n), padded, quoted. */
int json_put_base64(struct dynbuf *b, const void *p, size_t n);

/* Appends t (seconds since the epoch) as UTC ISO 8601,
 * `YYYY-MM-DDTHH:MM:SSZ`, unquoted.  Proleptic Gregorian over the whole
 * int64 range: years past 9999 get a `+`, years before 0 a `-` (ISO 8601's
 * expanded form).  No locale, no time zone files. */
int json_put_iso8601(struct dynbuf *b, int64_t t);

/* A record's id (record_id_hex) as a JSON string: 16 hex digits, quoted. */
int json_put_id(struct dynbuf *b, uint64_t id);


/* Appends bytes known to need no escaping (keys, punctuation). */
static inline int json_put_raw(struct dynbuf *b, const char *p, size_t n)
{
	return dynbuf_put(b, p, n);
}

/* "" lit "" makes anything but a string literal a compile error (a char *
 * would silently give sizeof(pointer)). */
#define json_put_lit(b, lit) json_put_raw((b), "" lit "", sizeof("" lit "") - 1)

#endif
