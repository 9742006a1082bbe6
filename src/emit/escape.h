/* SPDX-License-Identifier: MIT */
/* The escaping loop of the emitter's text formats: a JSON string's body
 * (json.c) and a TSV column (tsv.c) differ only in which ASCII bytes they
 * escape, how they write an escape, and what stands for ill-formed UTF-8
 * (U+FFFD, or \xHH per byte).  What they share is here, once: runs of
 * bytes taken verbatim found eight at a time, well-formed non-ASCII copied
 * a run at a time (core/utf8.h), and an exact dynbuf_room() before every
 * store, so that a value that fits under the buffer's cap still fits. */
#ifndef INGEST_EMIT_ESCAPE_H
#define INGEST_EMIT_ESCAPE_H

#include "core/dynbuf.h"
#include "core/utf8.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* How one format escapes.  Each format has one, static const, and passes
 * it to the always-inlined escape_put(), so the calls below are direct. */
struct escape_style {
	bool quote;             /* '"' is escaped too (JSON) */
	/* The escape of an ASCII byte the format does not take verbatim (a
	 * C0 control, '\\', '"' when quote), at most ascii_room bytes. */
	size_t ascii_room;
	size_t (*ascii)(char *o, unsigned char c);
	/* What stands for the k bytes of an ill-formed sequence's maximal
	 * subpart, at most bad_room + k * bad_room_per_byte bytes. */
	size_t bad_room, bad_room_per_byte;
	size_t (*bad)(char *o, const unsigned char *s, size_t k);
};

/* True for a byte that is not taken verbatim: a C0 control, '\\',
 * non-ASCII, and '"' when quote. */
static inline bool escape_special(unsigned char c, bool quote)
{
	return c < 0x20 || c >= 0x80 || c == '\\' || (quote && c == '"');
}

#define ESCAPE_ONES  UINT64_C(0x0101010101010101)
#define ESCAPE_HIGHS UINT64_C(0x8080808080808080)

/* Number of leading bytes of s taken verbatim (SWAR: a word holds a byte
 * that needs attention when any byte has its high bit set, is below 0x20,
 * or equals '\\', or '"' when quote). */
static inline size_t escape_safe_run(const unsigned char *s, size_t n, bool quote)
{
	size_t i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (i + 8 <= n) {
		uint64_t v, bs, m;
		memcpy(&v, s + i, 8);
		bs = v ^ (ESCAPE_ONES * '\\');
		/* Borrows only run upwards from a flagged byte, so the lowest
		 * flagged byte is exact (the first in memory on little endian). */
		m = (v & ESCAPE_HIGHS)
		    | ((v - ESCAPE_ONES * 0x20) & ~v & ESCAPE_HIGHS)
		    | ((bs - ESCAPE_ONES) & ~bs & ESCAPE_HIGHS);
		if (quote) {
			uint64_t q = v ^ (ESCAPE_ONES * '"');
			m |= (q - ESCAPE_ONES) & ~q & ESCAPE_HIGHS;
		}
		if (m)
			return i + ((size_t)__builtin_ctzll(m) >> 3);
		i += 8;
	}
#endif
	while (i < n && !escape_special(s[i], quote))
		i++;
	return i;
}

/* The end of the run of well-formed non-ASCII starting at s[i] (CJK,
 * Cyrillic text: validated in one loop, then copied with one memcpy).
 * When it returns i, s[i] starts an ill-formed sequence and *k is minus
 * its maximal subpart. */
static inline size_t escape_utf8_run(const unsigned char *s, size_t i, size_t n, int *k)
{
	size_t j = i;
	*k = 0;
	while (j < n && s[j] >= 0x80 && (*k = utf8_seq(s + j, n - j)) > 0)
		j += (size_t)*k;
	return j;
}

/* Appends s[i..n) escaped in style st.  0 or -errno (the buffer may then
 * hold part of the value). */
static inline __attribute__((always_inline)) int
escape_put(struct dynbuf *b, const unsigned char *s, size_t i, size_t n,
           const struct escape_style *st)
{
	int r;
	while (i < n) {
		size_t run = escape_safe_run(s + i, n - i, st->quote);
		if (run) {
			if ((r = dynbuf_room(b, run)) < 0)
				return r;
			memcpy(b->p + b->len, s + i, run);
			b->len += run;
			i += run;
			if (i == n)
				break;
		}
		if (s[i] < 0x80) {
			if ((r = dynbuf_room(b, st->ascii_room)) < 0)
				return r;
			b->len += st->ascii(b->p + b->len, s[i]);
			i++;
			continue;
		}
		int k;
		size_t j = escape_utf8_run(s, i, n, &k);
		if (j > i) {
			if ((r = dynbuf_room(b, j - i)) < 0)
				return r;
			memcpy(b->p + b->len, s + i, j - i);
			b->len += j - i;
			i = j;
			continue;
		}
		size_t bad = (size_t)-k;
		if ((r = dynbuf_room(b, st->bad_room + bad * st->bad_room_per_byte)) < 0)
			return r;
		b->len += st->bad(b->p + b->len, s + i, bad);
		i += bad;
	}
	return 0;
}

#endif
