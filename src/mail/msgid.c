/* SPDX-License-Identifier: MIT */
/* Message-ID, In-Reply-To, References (RFC 5322 3.6.4): see msgid.h.
 *
 * One scanner serves both functions: it walks the value once, skipping
 * comments (RFC 5322 3.2.2, nested, with quoted-pairs), quoted strings (the
 * `"Your message of ..."` prose some clients put in In-Reply-To) and words
 * without `@`, and yields each `<id>` and each bare word containing `@`
 * (ids written without brackets, RFC 822 clients did).  Every byte is
 * visited once, so the cost is linear however the brackets nest or fail to
 * close.  Ids are views into the input; only the array is allocated. */
#include "mail/msgid.h"
#include "mail/header.h"

#include <errno.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Byte classes: the loops over the bytes of an id are one load and a test
 * (References of a long thread run to kilobytes per message). */
enum msgid_class {
	MSGID_C_SPACE = 1 << 0,   /* white space, line ends */
	MSGID_C_ANGLE = 1 << 1,   /* < > end an id in brackets */
	MSGID_C_WORD = 1 << 2,    /* < ( > , " end a bare word */
};

static const uint8_t msgid_class[256] = {
	[' '] = MSGID_C_SPACE, ['\t'] = MSGID_C_SPACE, ['\r'] = MSGID_C_SPACE, ['\n'] = MSGID_C_SPACE,
	['<'] = MSGID_C_ANGLE | MSGID_C_WORD, ['>'] = MSGID_C_ANGLE | MSGID_C_WORD,
	['('] = MSGID_C_WORD, [','] = MSGID_C_WORD, ['"'] = MSGID_C_WORD,
};

static inline bool msgid_is_space(uint8_t c)
{
	return msgid_class[c] & MSGID_C_SPACE;
}

static size_t msgid_skip_quoted(const uint8_t *p, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (p[i] == '\\')
			i++;
		else if (p[i] == '"')
			return i + 1;
	}
	return n;
}

/* The first white space or angle bracket at or after p[j], or n: the end
 * of an id in brackets.  Ids run to 40 bytes and more, and a References
 * field of a long thread holds dozens: 16 bytes per test on x86-64. */
static inline size_t msgid_id_end(const uint8_t *p, size_t n, size_t j)
{
#if defined(__SSE2__)
	for (; n - j >= 16; j += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + j));
		__m128i hit = _mm_or_si128(
			_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))),
			_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\r')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))));
		hit = _mm_or_si128(hit, _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('<')),
		                                     _mm_cmpeq_epi8(v, _mm_set1_epi8('>'))));
		unsigned m = (unsigned)_mm_movemask_epi8(hit);
		if (m)
			return j + (size_t)__builtin_ctz(m);
	}
#endif
	while (j < n && !(msgid_class[p[j]] & (MSGID_C_SPACE | MSGID_C_ANGLE)))
		j++;
	return j;
}

/* The next id at or after *pos; false when there is none. */
static bool msgid_next(const uint8_t *p, size_t n, size_t *pos, struct str *id)
{
	size_t i = *pos;
	while (i < n) {
		uint8_t c = p[i];
		if (msgid_is_space(c) || c == ',' || c == '>') {
			i++;
		} else if (c == '(') {
			i = header_skip_comment(p, n, i);
		} else if (c == '"') {
			i = msgid_skip_quoted(p, n, i);
		} else if (c == '<') {
			/* `<id>`; an unclosed `<id` ends at white space. */
			size_t s = i + 1, j = msgid_id_end(p, n, s);
			size_t e = j;
			if (j < n && msgid_is_space(p[j])) {
				/* White space inside brackets (a folded id): the id
				 * is what precedes it if a `>` closes soon after. */
				size_t k = j;
				while (k < n && msgid_is_space(p[k]))
					k++;
				j = k < n && p[k] == '>' ? k : j;
			}
			i = j < n && p[j] == '>' ? j + 1 : j;
			if (e > s) {
				*id = (struct str){ (const char *)p + s, e - s };
				*pos = i;
				return true;
			}
		} else {
			/* A bare word: an id only when it has an `@`. */
			size_t s = i;
			bool at = false;
			while (i < n && !(msgid_class[p[i]] & (MSGID_C_SPACE | MSGID_C_WORD))) {
				at |= p[i] == '@';
				i++;
			}
			if (at) {
				*id = (struct str){ (const char *)p + s, i - s };
				*pos = i;
				return true;
			}
		}
	}
	*pos = n;
	return false;
}

int msgid_parse_list(struct arena *a, struct str in,
                     struct str **ids, size_t *n)
{
	const uint8_t *p = (const uint8_t *)in.p;
	size_t pos = 0, k = 0;
	struct str id;
	/* The ids of a usual References fit here, so the value is scanned
	 * once; a longer thread is counted first, then scanned again into an
	 * array of the exact size (the arena holds no abandoned copies). */
	struct str buf[64];
	*ids = NULL;
	*n = 0;
	while (msgid_next(p, in.n, &pos, &id)) {
		if (k < sizeof(buf) / sizeof(buf[0]))
			buf[k] = id;
		k++;
	}
	if (!k)
		return 0;
	struct str *v = arena_alloc(a, k * sizeof(*v));
	if (!v)
		return -ENOMEM;
	if (k <= sizeof(buf) / sizeof(buf[0])) {
		memcpy(v, buf, k * sizeof(*v));
	} else {
		pos = 0;
		for (size_t j = 0; j < k; j++)
			msgid_next(p, in.n, &pos, &v[j]);
	}
	*ids = v;
	*n = k;
	return 0;
}

struct str msgid_parse_first(struct str in)
{
	size_t pos = 0;
	struct str id;
	if (msgid_next((const uint8_t *)in.p, in.n, &pos, &id))
		return id;
	return STR_NULL;
}
