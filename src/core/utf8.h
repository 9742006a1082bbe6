/* SPDX-License-Identifier: MIT */
/* UTF-8 (RFC 3629): the one decoder and validator of the tree, for the
 * parser (mail/charset.c, mail/mime.c) and the emitter (emit/json.c,
 * emit/tsv.c, emit/pydict.c) alike, so that what the parser calls valid
 * and what the emitter copies as valid are the same bytes.
 *
 * Well-formed means Unicode 15 §3.9 table 3-7: no overlong forms, no
 * surrogates, nothing above U+10FFFF.  An ill-formed sequence is counted
 * by its maximal subpart (§3.9 "U+FFFD substitution of maximal subparts",
 * as WHATWG and Python do): the bytes one U+FFFD replaces, or that one
 * escape stands for.  Pure: no globals, thread-safe. */
#ifndef INGEST_CORE_UTF8_H
#define INGEST_CORE_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The sequence that starts at p[0] (n >= 1): its length (1 to 4) when it
 * is well-formed, ASCII included; else minus the length of its maximal
 * subpart, always <= -1.  Inline because the JSON and TSV writers and the
 * charset decoder call it per non-ASCII character. */
static inline int utf8_seq(const uint8_t *p, size_t n)
{
	unsigned c = p[0];
	unsigned lo = 0x80, hi = 0xBF;
	int len;

	if (c < 0x80)
		return 1;
	if (c < 0xC2)
		return -1;              /* stray continuation or overlong lead */
	if (c < 0xE0)
		len = 2;
	else if (c < 0xF0) {
		len = 3;
		if (c == 0xE0)
			lo = 0xA0;      /* overlong */
		else if (c == 0xED)
			hi = 0x9F;      /* surrogates */
	} else if (c < 0xF5) {
		len = 4;
		if (c == 0xF0)
			lo = 0x90;      /* overlong */
		else if (c == 0xF4)
			hi = 0x8F;      /* above U+10FFFF */
	} else
		return -1;

	/* The second byte has the narrowed range, the others 80..BF. */
	for (int i = 1; i < len; i++) {
		if ((size_t)i >= n || p[i] < lo || p[i] > hi)
			return -i;
		lo = 0x80;
		hi = 0xBF;
	}
	return len;
}

/* i advanced over ASCII a block at a time: to the first byte >= 0x80 or
 * to where less than a block is left.  With copy, the ASCII also goes to
 * *d as it is passed: stores are whole blocks (up to 15 bytes past what is
 * counted, which the caller must have room for), so a run costs no memcpy
 * call.  copy is a constant at every call, so each caller gets a loop of
 * its own. */
static inline size_t utf8_ascii_run(char **d, const uint8_t *p, size_t n, size_t i, bool copy)
{
	char *o = copy ? *d : NULL;
#if defined(__SSE2__)
	while (n - i >= 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		if (copy)
			_mm_storeu_si128((__m128i *)(void *)o, v);
		unsigned m = (unsigned)_mm_movemask_epi8(v);
		if (m) {
			size_t k = (size_t)__builtin_ctz(m);
			if (copy)
				*d = o + k;
			return i + k;
		}
		if (copy)
			o += 16;
		i += 16;
	}
#endif
	while (n - i >= 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		if (w & UINT64_C(0x8080808080808080))
			break;
		if (copy) {
			memcpy(o, &w, 8);
			o += 8;
		}
		i += 8;
	}
	if (copy)
		*d = o;
	return i;
}

/* Where to cut text of more than room bytes so that no character is split:
 * room itself, or back to the start of the character that byte room falls
 * in (p has more than room bytes).  A capped output (mail/textbuf.h,
 * mail/html.c) keeps p[0..cut) and drops the rest. */
static inline size_t utf8_cut(const uint8_t *p, size_t room)
{
	size_t cut = room;
	while (cut > 0 && (p[cut] & 0xC0) == 0x80)
		cut--;
	return cut;
}

/* True when the n bytes at p are well-formed UTF-8.  p may be NULL when n
 * is 0. */
bool utf8_valid(const void *p, size_t n);

/* The code point of the character at *p, which is well-formed (a
 * converter wrote it, or utf8_seq() said so); *p moves past it. */
static inline uint32_t utf8_decode(const uint8_t **p)
{
	const uint8_t *q = *p;
	uint32_t c = q[0];
	size_t k = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
	if (k > 1) {
		c &= 0x3F >> (k - 1);
		for (size_t i = 1; i < k; i++)
			c = c << 6 | (q[i] & 0x3F);
	}
	*p = q + k;
	return c;
}

/* Appends cp (a code point, < 0x110000) as UTF-8 at d; returns the end. */
static inline char *utf8_put(char *d, uint32_t cp)
{
	if (cp < 0x80) {
		*d++ = (char)cp;
	} else if (cp < 0x800) {
		*d++ = (char)(0xC0 | (cp >> 6));
		*d++ = (char)(0x80 | (cp & 0x3F));
	} else if (cp < 0x10000) {
		*d++ = (char)(0xE0 | (cp >> 12));
		*d++ = (char)(0x80 | ((cp >> 6) & 0x3F));
		*d++ = (char)(0x80 | (cp & 0x3F));
	} else {
		*d++ = (char)(0xF0 | (cp >> 18));
		*d++ = (char)(0x80 | ((cp >> 12) & 0x3F));
		*d++ = (char)(0x80 | ((cp >> 6) & 0x3F));
		*d++ = (char)(0x80 | (cp & 0x3F));
	}
	return d;
}

#endif
