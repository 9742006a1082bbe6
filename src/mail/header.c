/* SPDX-License-Identifier: MIT */
/* The header block (RFC 5322 2.2, 3.6): see header.h.
 *
 * header_parse() walks the block line by line with memchr (its first
 * blocks inline, header_find_lf()), so its cost is linear in the block and
 * independent of line lengths (a 10 MiB line is one memchr).  Fields are
 * views: name and folded value point into the message.  Only the field
 * array is allocated, in the arena, grown geometrically (the abandoned
 * copies are at most as large as the final one).
 *
 * Line ends: LF, with an optional CR before it (RFC 5322 2.1 says CRLF; mail
 * stored on Unix uses LF).  A CR not followed by LF is an ordinary byte.
 * The blank line that ends the block is part of the block: body_offset is
 * the byte after it.  A line that is neither a field nor a continuation
 * is dropped when a field of a known name follows it (after its
 * continuations, at most HEADER_SKIP_LOOK); else it ends the block, and
 * belongs to the body:
 * body_offset is its start. */
#include "mail/header.h"
#include "core/limits.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* The first LF in p[0..n), or NULL: memchr with the first blocks inline.
 * Most header lines are under 80 bytes, where the call and its setup cost
 * more than the scan; past a few blocks memchr's wider loop wins, so a
 * huge line still costs one memchr. */
static inline const uint8_t *header_find_lf(const uint8_t *p, size_t n)
{
	size_t i = 0;
#if defined(__SSE2__)
	const __m128i lf = _mm_set1_epi8('\n');
	/* Two blocks per test: a typical line then takes two or three
	 * branches rather than five. */
	for (; n - i >= 32; i += 32) {
		if (i >= 128)
			return memchr(p + i, '\n', n - i);
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
			_mm_loadu_si128((const __m128i *)(const void *)(p + i)), lf));
		m |= (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
			_mm_loadu_si128((const __m128i *)(const void *)(p + i + 16)), lf)) << 16;
		if (m)
			return p + i + __builtin_ctz(m);
	}
	if (n - i >= 16) {
		unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
			_mm_loadu_si128((const __m128i *)(const void *)(p + i)), lf));
		if (m)
			return p + i + __builtin_ctz(m);
		i += 16;
	}
	for (; i < n; i++)
		if (p[i] == '\n')
			return p + i;
	return NULL;
#else
	return memchr(p + i, '\n', n - i);
#endif
}

static inline bool header_is_wsp(uint8_t c)
{
	return c == ' ' || c == '\t';
}

/* RFC 5322 3.6.8: ftext is printable US-ASCII except the colon. */
static inline bool header_is_ftext(uint8_t c)
{
	return c >= 33 && c <= 126 && c != ':';
}

/* The end of the run of ftext from p[j], below end.  A field name is
 * usually under 16 bytes and its line longer, so one block answers. */
static inline size_t header_ftext_run(const uint8_t *p, size_t j, size_t end)
{
#if defined(__SSE2__)
	for (; end - j >= 16; j += 16) {
		__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + j));
		/* Signed compares: bytes from 0x80 are negative, below 33. */
		__m128i ok = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(32)),
		                           _mm_cmplt_epi8(v, _mm_set1_epi8(127)));
		ok = _mm_andnot_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(':')), ok);
		unsigned m = ~(unsigned)_mm_movemask_epi8(ok) & 0xFFFF;
		if (m)
			return j + (size_t)__builtin_ctz(m);
	}
#endif
	while (j < end && header_is_ftext(p[j]))
		j++;
	return j;
}

/* Offset of the byte after the blank line that ends the block, searching
 * from `from` (a line start); n when the block runs to EOF. */
static size_t header_skip_block(const uint8_t *p, size_t n, size_t from)
{
	size_t i = from;
	while (i < n) {
		if (p[i] == '\n')
			return i + 1;
		if (p[i] == '\r' && i + 1 < n && p[i + 1] == '\n')
			return i + 2;
		const uint8_t *nl = memchr(p + i, '\n', n - i);
		if (!nl)
			return n;
		i = (size_t)(nl - p) + 1;
	}
	return n;
}

/* Field names that mail headers hold and body text does not start a line
 * with: "It: looks like a field" after a body line is the body. */
static bool header_known_name(const uint8_t *p, size_t n)
{
	static const char *const prefixes[] = { "x-", "content-", "list-", "resent-", "arc-" };
	static const char *const names[] = {
		"to", "cc", "bcc", "from", "sender", "reply-to", "date", "subject", "message-id",
		"in-reply-to", "references", "mime-version", "received", "return-path", "delivered-to",
		"organization", "user-agent", "comments", "keywords", "dkim-signature", "precedence",
		"authentication-results", "received-spf", "thread-topic", "thread-index", "importance",
		"priority", "status", "errors-to", "envelope-to", "mail-followup-to", "newsgroups",
	};
	for (size_t k = 0; k < sizeof(prefixes) / sizeof(prefixes[0]); k++) {
		size_t l = strlen(prefixes[k]);
		if (n > l && !strncasecmp((const char *)p, prefixes[k], l))
			return true;
	}
	for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (strlen(names[k]) == n && !strncasecmp((const char *)p, names[k], n))
			return true;
	return false;
}

/* Is the line at p[i], after at most HEADER_SKIP_LOOK continuation
 * lines, a header field of a name mail uses (header_known_name)?  What
 * tells a broken line inside the block from the first line of a body that
 * lacks its blank line. */
#define HEADER_SKIP_LOOK 4
static bool header_field_follows(const uint8_t *p, size_t n, size_t i)
{
	for (int k = 0; k <= HEADER_SKIP_LOOK && i < n; k++) {
		if (!header_is_wsp(p[i])) {
			size_t j = header_ftext_run(p, i, n);
			size_t name_end = j;
			while (j < n && header_is_wsp(p[j]))
				j++;
			return name_end > i && j < n && p[j] == ':' && header_known_name(p + i, name_end - i);
		}
		const uint8_t *nl = header_find_lf(p + i, n - i);
		if (!nl)
			return false;
		i = (size_t)(nl - p) + 1;
	}
	return false;
}

static int header_push(struct arena *a, struct header_block *out, size_t *cap,
                       struct header_field f)
{
	if (out->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 32;
		struct header_field *v = arena_alloc(a, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		if (out->n)
			memcpy(v, out->v, out->n * sizeof(*v));
		out->v = v;
		*cap = ncap;
	}
	out->v[out->n++] = f;
	return 0;
}

int header_parse(struct arena *a, const uint8_t *p, size_t n,
                 struct header_block *out, uint64_t *warnings)
{
	size_t cap = 0, i = 0;
	struct header_field *cur = NULL;   /* the field a continuation extends */
	bool first = true;
	int r;

	out->v = NULL;
	out->n = 0;
	out->body_offset = n;
	if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF)
		i = 3;

	while (i < n) {
		size_t start = i;
		const uint8_t *nl = header_find_lf(p + i, n - i);
		size_t eol = nl ? (size_t)(nl - p) : n;   /* the LF, or n */
		size_t next = nl ? eol + 1 : n;
		size_t end = eol;                          /* content end, CR removed */
		if (nl && end > start && p[end - 1] == '\r')
			end--;

		if (end == start) {                        /* the blank line */
			out->body_offset = next;
			return 0;
		}
		if (start >= LIMIT_HEADER_BYTES) {
			mail_warn(warnings, MAIL_W_HEADER_TOO_LARGE);
			out->body_offset = header_skip_block(p, n, start);
			return 0;
		}
		if (header_is_wsp(p[start])) {
			if (!cur) {
				/* A continuation with nothing to continue (the
				 * first line, as Python's email calls
				 * FirstHeaderLineIsContinuationDefect): dropped. */
				mail_warn(warnings, MAIL_W_MALFORMED_HEADER);
				i = next;
				continue;
			}
			{
				/* RFC 5322 2.2.3: a folded continuation. */
				size_t vend = end;
				if (vend > LIMIT_HEADER_BYTES) {
					vend = LIMIT_HEADER_BYTES;
					mail_warn(warnings, MAIL_W_HEADER_TOO_LARGE);
				}
				cur->value.n = (size_t)((const char *)p + vend - cur->value.p);
				i = next;
				continue;
			}
		} else {
			size_t j = header_ftext_run(p, start, end);
			size_t name_end = j;
			while (j < end && header_is_wsp(p[j]))   /* RFC 5322 4.5 */
				j++;
			if (name_end > start && j < end && p[j] == ':') {
				size_t vstart = j + 1, vend = end;
				if (vend > LIMIT_HEADER_BYTES) {
					/* One huge line: keep what fits under the cap. */
					vend = LIMIT_HEADER_BYTES;
					mail_warn(warnings, MAIL_W_HEADER_TOO_LARGE);
				}
				struct header_field f = {
					.name = { (const char *)p + start, name_end - start },
					.value = { (const char *)p + vstart, vend - vstart },
				};
				if ((r = header_push(a, out, &cap, f)) < 0)
					return r;
				cur = &out->v[out->n - 1];
				first = false;
				i = next;
				continue;
			}
		}
		/* Neither a field nor a continuation.  Inside the block and
		 * followed by a field, it is a broken line the block goes on
		 * after (GMime skips it too): dropped, and so are its
		 * continuations.  Otherwise the body starts here (a message
		 * or part that lacks the blank line loses no body line), as in
		 * Python's email; a "--" line is a boundary, always the body.
		 * On the first line that is simply a block with no fields. */
		if (!first)
			mail_warn(warnings, MAIL_W_MALFORMED_HEADER);
		if (!first && p[start] != '-' && header_field_follows(p, n, next)) {
			cur = NULL;
			i = next;
			continue;
		}
		out->body_offset = start;
		return 0;
	}
	out->body_offset = n;
	return 0;
}

static bool header_name_is(const struct header_field *f, const char *name, size_t len)
{
	return f->name.n == len && strncasecmp(f->name.p, name, len) == 0;
}

const struct header_field *header_get(const struct header_block *h, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < h->n; i++)
		if (header_name_is(&h->v[i], name, len))
			return &h->v[i];
	return NULL;
}

int header_unfold(struct arena *a, struct str raw, struct str *out)
{
	const char *p = raw.p;
	size_t n = raw.n;
	/* Trim: white space and any line-end bytes at either end. */
	while (n && (header_is_wsp((uint8_t)*p) || *p == '\r' || *p == '\n')) {
		p++;
		n--;
	}
	while (n && (header_is_wsp((uint8_t)p[n - 1]) || p[n - 1] == '\r' || p[n - 1] == '\n'))
		n--;
	if (!n) {
		*out = (struct str){ raw.p ? raw.p : "", 0 };
		return 0;
	}
	/* Most values are one short line: no call to learn that. */
	if (!header_find_lf((const uint8_t *)p, n)) {
		*out = (struct str){ p, n };
		return 0;
	}
	/* RFC 5322 2.2.3: unfolding removes the line ends (CRLF or LF); the
	 * white space that follows them stays. */
	char *d = arena_alloc(a, n + 1);
	if (!d)
		return -ENOMEM;
	size_t k = 0, i = 0;
	while (i < n) {
		/* Folded lines are short: the inline search, not a call. */
		const char *q = (const char *)header_find_lf((const uint8_t *)p + i, n - i);
		size_t seg_end = q ? (size_t)(q - p) : n;
		size_t copy_end = seg_end;
		if (q && copy_end > i && p[copy_end - 1] == '\r')
			copy_end--;
		memcpy(d + k, p + i, copy_end - i);
		k += copy_end - i;
		i = q ? seg_end + 1 : n;
	}
	d[k] = '\0';
	*out = (struct str){ d, k };
	return 0;
}

size_t header_skip_comment(const uint8_t *p, size_t n, size_t i)
{
	size_t depth = 0;
	for (; i < n; i++) {
		if (p[i] == '\\')
			i++;
		else if (p[i] == '(')
			depth++;
		else if (p[i] == ')' && --depth == 0)
			return i + 1;
	}
	return n;
}
