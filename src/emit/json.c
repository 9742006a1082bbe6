/* SPDX-License-Identifier: MIT */
/* JSON string writing: see json.h.
 *
 * The emitter runs once per record at up to a million records a second, so
 * the common case — ASCII with nothing to escape — must cost a scan and one
 * memcpy per run.  The portable path is emit/escape.h's loop, which TSV
 * shares: it finds the end of such a run eight bytes at a time; everything
 * else (escapes, multibyte UTF-8, repair) is handled one character at a
 * time.
 * On x86-64, SSE2 (always there) goes further: json_put_str_sse2() copies
 * 16 bytes per store without asking first, having reserved slack for the
 * overhang, because most strings are short runs where the memcpy call and
 * dynbuf_room() per run cost more than the scan.
 *
 * Invariant: whatever the input, the output between the quotes is valid
 * UTF-8 and valid JSON.  dynbuf_room() is called before every store, so the
 * dynbuf cap is never exceeded; an optimistic reserve of n + 2 up front makes
 * those calls a compare in the usual case. */
#include "emit/json.h"
#include "core/record.h"
#include "core/utf8.h"
#include "emit/escape.h"

#include <errno.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

static const char json_hex[] = "0123456789abcdef";

/* The second byte of the two-byte escapes; 0 for \u00XX.  A table rather
 * than a switch: body text has an escaped line end every few dozen bytes. */
static const char json_esc_short[0x60] = {
	['"'] = '"', ['\\'] = '\\', ['\b'] = 'b', ['\t'] = 't',
	['\n'] = 'n', ['\f'] = 'f', ['\r'] = 'r',
};

/* Writes the escape of an ASCII byte of class 1; room for 6 is assured. */
static inline size_t json_escape(char *o, unsigned char c)
{
	char e = json_esc_short[c];
	o[0] = '\\';
	if (e) {
		o[1] = e;
		return 2;
	}
	memcpy(o + 1, "u00", 3);
	o[4] = json_hex[c >> 4];
	o[5] = json_hex[c & 15];
	return 6;
}

/* U+FFFD for the k bytes of an ill-formed sequence. */
static size_t json_fffd(char *o, const unsigned char *s, size_t k)
{
	(void)s;
	(void)k;
	memcpy(o, "\xEF\xBF\xBD", 3);
	return 3;
}

static const struct escape_style json_style = {
	.quote = true,
	.ascii_room = 6, .ascii = json_escape,
	.bad_room = 3, .bad_room_per_byte = 0, .bad = json_fffd,
};

/* The escaping loop from s[i] on, then the closing quote, with a
 * dynbuf_room() before every store: the portable path, and the one the SSE2
 * path hands over to when its slack does not fit under the buffer's cap
 * (so that a string that fits exactly still fits). */
static int json_put_str_from(struct dynbuf *b, const unsigned char *s,
                             size_t i, size_t n)
{
	int r;
	if ((r = escape_put(b, s, i, n, &json_style)) < 0 || (r = dynbuf_room(b, 1)) < 0)
		return r;
	b->p[b->len++] = '"';
	return 0;
}

#ifdef __SSE2__
/* A 16-byte store may run this far past the bytes it means to write. */
#define JSON_SLACK 16

/* Bit k set when byte k of v is not taken verbatim.  The compare is signed,
 * so one "below 0x20" also catches 0x80..0xFF; with utf8_known, non-ASCII
 * is taken verbatim (an unsigned "at most 0x1F" instead). */
static inline unsigned json_flag16(__m128i v, bool utf8_known)
{
	__m128i low = utf8_known ? _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v)
	                         : _mm_cmplt_epi8(v, _mm_set1_epi8(0x20));
	__m128i q = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
	__m128i bs = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));
	return (unsigned)_mm_movemask_epi8(_mm_or_si128(low, _mm_or_si128(q, bs)));
}

/* The k < 16 bytes at s in the low lanes of a vector, zeros above, with
 * no load past s[k - 1]: two overlapping loads of 8, 4 or 1 bytes. */
static inline __m128i json_load_tail(const unsigned char *s, size_t k)
{
	uint64_t lo = 0, hi = 0;
	if (k > 8) {
		memcpy(&lo, s, 8);
		memcpy(&hi, s + k - 8, 8);
		hi >>= (16 - k) * 8;
	} else if (k >= 4) {
		uint32_t a, z;
		memcpy(&a, s, 4);
		memcpy(&z, s + k - 4, 4);
		/* The overlap holds the same bytes in both. */
		lo = a | (uint64_t)z << ((k - 4) * 8);
	} else if (k) {
		lo = s[0] | (uint64_t)s[k / 2] << (k / 2 * 8) | (uint64_t)s[k - 1] << ((k - 1) * 8);
	}
	return _mm_set_epi64x((long long)hi, (long long)lo);
}

/* json_put_str after the opening quote, when room for n + 1 + JSON_SLACK
 * more bytes is already there.  Invariant at the top of the loop: from o,
 * the buffer holds the rest of the input verbatim, the closing quote and
 * one 16-byte store's overhang.  A verbatim block is then a load, a store
 * and a compare: no memcpy call, no dynbuf_room() per run.  Escapes and
 * U+FFFD grow the output, so they renew the invariant first. */
static inline __attribute__((always_inline)) int
json_put_str_sse2(struct dynbuf *b, const unsigned char *s, size_t n, bool utf8_known,
                  bool worst_case_fits)
{
	char *o = b->p + b->len;
	size_t i = 0;
	while (i < n) {
		if (n - i >= 32) {
			/* Two blocks a step (body text runs a line, some 60
			 * bytes, between escaped line ends): both stores land
			 * within the room of the rest of the input. */
			__m128i v0 = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
			__m128i v1 = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
			_mm_storeu_si128((__m128i *)(void *)o, v0);
			_mm_storeu_si128((__m128i *)(void *)(o + 16), v1);
			uint32_t m = json_flag16(v0, utf8_known) | (uint32_t)json_flag16(v1, utf8_known) << 16;
			if (!m) {
				i += 32;
				o += 32;
				continue;
			}
			unsigned k = (unsigned)__builtin_ctz(m);
			i += k;
			o += k;
		} else if (n - i >= 16) {
			__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
			_mm_storeu_si128((__m128i *)(void *)o, v);
			unsigned m = json_flag16(v, utf8_known);
			if (!m) {
				i += 16;
				o += 16;
				continue;
			}
			unsigned k = (unsigned)__builtin_ctz(m);
			i += k;
			o += k;
		} else {
			/* The tail: a 16-byte load would read past the input,
			 * so it is gathered into a register by at most four
			 * loads instead (most strings, names and addresses,
			 * are all tail).  The zero padding would flag as
			 * control characters: the mask drops it.  Known UTF-8
			 * is copied whole here too: the last block may have
			 * ended inside a character, and validating from a
			 * continuation byte would "repair" it. */
			size_t k = n - i;
			__m128i v = json_load_tail(s + i, k);
			_mm_storeu_si128((__m128i *)(void *)o, v);
			unsigned m = json_flag16(v, utf8_known) & ((1u << k) - 1);
			if (!m) {
				o += k;
				break;
			}
			unsigned f = (unsigned)__builtin_ctz(m);
			i += f;
			o += f;
		}
		/* An escape writes at most 6 bytes for 1. */
		size_t need = n - i + 6 + 1 + JSON_SLACK;
		if (!worst_case_fits && b->cap - (size_t)(o - b->p) <= need) {
			b->len = (size_t)(o - b->p);
			if (need < n - i || dynbuf_reserve(b, need) < 0)
				return json_put_str_from(b, s, i, n);
			o = b->p + b->len;
		}
		unsigned char c = s[i];
		if (c < 0x80) {
			o += json_escape(o, c);
			i++;
			continue;
		}
		int k;
		size_t j = escape_utf8_run(s, i, n, &k);
		if (j > i) {
			memcpy(o, s + i, j - i);
			o += j - i;
			i = j;
			continue;
		}
		memcpy(o, "\xEF\xBF\xBD", 3);
		o += 3;
		i += (size_t)-k;
	}
	*o++ = '"';
	b->len = (size_t)(o - b->p);
	return 0;
}
#endif

static int json_put_str_as(struct dynbuf *b, const char *p, size_t n, bool utf8_known)
{
	const unsigned char *s = (const unsigned char *)p;
	int r;

	if (n > SIZE_MAX - 2)
		return -E2BIG;
#ifdef __SSE2__
	/* Six bytes out for one in is the most any input can take (an
	 * escape; U+FFFD is three for one).  When the buffer already has
	 * that, as it does for every header-sized string, no escape needs
	 * to look at the room left: mail bodies escape a line end per line. */
	if (n <= (SIZE_MAX - 2 - JSON_SLACK) / 6 && b->cap - b->len > 6 * n + 2 + JSON_SLACK) {
		b->p[b->len++] = '"';
		return json_put_str_sse2(b, s, n, utf8_known, true);
	}
	if (n <= SIZE_MAX - 2 - JSON_SLACK && dynbuf_room(b, n + 2 + JSON_SLACK) == 0) {
		b->p[b->len++] = '"';
		return json_put_str_sse2(b, s, n, utf8_known, false);
	}
#else
	(void)utf8_known;
#endif
	if ((r = dynbuf_room(b, n + 2)) < 0)
		return r;
	b->p[b->len++] = '"';
	return json_put_str_from(b, s, 0, n);
}

int json_put_str(struct dynbuf *b, const char *p, size_t n)
{
	return json_put_str_as(b, p, n, false);
}

int json_put_utf8(struct dynbuf *b, const char *p, size_t n)
{
	return json_put_str_as(b, p, n, true);
}

int json_put_cstr(struct dynbuf *b, const char *s)
{
	return json_put_str(b, s, strlen(s));
}

static const char json_b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int json_put_base64(struct dynbuf *b, const void *p, size_t n)
{
	const unsigned char *s = p;
	if (n > (SIZE_MAX - 8) / 4 * 3)
		return -E2BIG;
	size_t out = (n + 2) / 3 * 4 + 2;
	int r = dynbuf_room(b, out);
	if (r < 0)
		return r;
	char *o = b->p + b->len;
	*o++ = '"';
	size_t i = 0;
	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		o[0] = json_b64[v >> 18];
		o[1] = json_b64[(v >> 12) & 63];
		o[2] = json_b64[(v >> 6) & 63];
		o[3] = json_b64[v & 63];
		o += 4;
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)s[i] << 16;
		o[0] = json_b64[v >> 18];
		o[1] = json_b64[(v >> 12) & 63];
		o[2] = '=';
		o[3] = '=';
		o += 4;
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
		o[0] = json_b64[v >> 18];
		o[1] = json_b64[(v >> 12) & 63];
		o[2] = json_b64[(v >> 6) & 63];
		o[3] = '=';
		o += 4;
	}
	*o++ = '"';
	b->len = (size_t)(o - b->p);
	return 0;
}

int json_put_bytes_member(struct dynbuf *b, const char *key,
                          const char *p, size_t n)
{
	size_t kn = strlen(key);
	int r;
	if ((r = json_put_lit(b, "\"")) < 0 || (r = json_put_raw(b, key, kn)) < 0 ||
	    (r = json_put_lit(b, "\":")) < 0 || (r = json_put_str(b, p, n)) < 0)
		return r;
	if (utf8_valid(p, n))
		return 0;
	if ((r = json_put_lit(b, ",\"")) < 0 || (r = json_put_raw(b, key, kn)) < 0 ||
	    (r = json_put_lit(b, "_b64\":")) < 0)
		return r;
	return json_put_base64(b, p, n);
}

/* Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's
 * civil_from_days, valid over the whole int64 day range we can reach). */
static void json_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static inline void json_2dig(char *o, unsigned v)
{
	o[0] = (char)('0' + v / 10);
	o[1] = (char)('0' + v % 10);
}

int json_put_iso8601(struct dynbuf *b, int64_t t)
{
	int64_t days = t / 86400, secs = t % 86400;
	if (secs < 0) {
		secs += 86400;
		days--;
	}
	int64_t y;
	unsigned mo, d;
	json_civil_from_days(days, &y, &mo, &d);

	int r = dynbuf_room(b, 32);
	if (r < 0)
		return r;
	if (y >= 0 && y <= 9999) {
		char *o = b->p + b->len;
		json_2dig(o, (unsigned)(y / 100));
		json_2dig(o + 2, (unsigned)(y % 100));
		b->len += 4;
	} else {
		/* ISO 8601 expanded years: a sign and at least four digits. */
		uint64_t ay = y < 0 ? -(uint64_t)y : (uint64_t)y;
		b->p[b->len++] = y < 0 ? '-' : '+';
		if (ay < 1000) {
			char *o = b->p + b->len;
			json_2dig(o, (unsigned)(ay / 100));
			json_2dig(o + 2, (unsigned)(ay % 100));
			b->len += 4;
		} else if ((r = dynbuf_put_u64(b, ay)) < 0)
			return r;
		if ((r = dynbuf_room(b, 16)) < 0)
			return r;
	}
	char *o = b->p + b->len;
	o[0] = '-';
	json_2dig(o + 1, mo);
	o[3] = '-';
	json_2dig(o + 4, d);
	o[6] = 'T';
	json_2dig(o + 7, (unsigned)(secs / 3600));
	o[9] = ':';
	json_2dig(o + 10, (unsigned)(secs / 60 % 60));
	o[12] = ':';
	json_2dig(o + 13, (unsigned)(secs % 60));
	o[15] = 'Z';
	b->len += 16;
	return 0;
}

int json_put_id(struct dynbuf *b, uint64_t id)
{
	char hex[19];
	record_id_hex(id, hex + 1);
	hex[0] = hex[17] = '"';
	return json_put_raw(b, hex, 18);
}
