/* SPDX-License-Identifier: MIT */
/* Transfer decodings: base64 and quoted-printable (RFC 2045 6.7, 6.8) and the
 * uuencode blocks that old mailers put inside text bodies.
 *
 * Invariants: every function reads only p[0..n), writes only out[0..out_cap),
 * and makes one forward pass (the QP decoder may look at a run of white space
 * after `=` twice, never more).  The decoded size is computed by the same
 * loop that writes, so "size only" and "full decode" cannot disagree; the
 * one exception, QP's decode into a buffer as large as its input, shares
 * the escape rules (hex_pair, qp_after_eq) with the bounded loop, and the
 * transfer fuzz target holds the two to the same bytes and warnings.  The
 * hot loops are table-driven and make no per-byte function calls: base64
 * takes four alphabet bytes per step and falls back to one byte at a time
 * only around line ends and garbage; QP finds runs between `=` a block at a
 * time and copies them as it scans.  No allocation, no state outside the
 * arguments. */
#include "mail/transfer.h"
#include "mail/textbuf.h"
#include "core/simd.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Values of the base64 table: 0..63 are sextets; the rest classify. */
enum { B64_WS = 64, B64_PAD = 65, B64_BAD = 66 };

#define B64_ROW_BAD  B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, \
	B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD

static const uint8_t b64_table[256] = {
	/* 0x00 */ B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD,
	           B64_BAD, B64_WS, B64_WS, B64_WS, B64_WS, B64_WS, B64_BAD, B64_BAD,
	/* 0x10 */ B64_ROW_BAD,
	/* 0x20 */ B64_WS, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD,
	           B64_BAD, B64_BAD, B64_BAD, 62, B64_BAD, B64_BAD, B64_BAD, 63,
	/* 0x30 */ 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, B64_BAD, B64_BAD, B64_BAD, B64_PAD, B64_BAD, B64_BAD,
	/* 0x40 */ B64_BAD, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	/* 0x50 */ 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD,
	/* 0x60 */ B64_BAD, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
	/* 0x70 */ 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD,
	/* 0x80 */ B64_ROW_BAD, B64_ROW_BAD, B64_ROW_BAD, B64_ROW_BAD,
	/* 0xc0 */ B64_ROW_BAD, B64_ROW_BAD, B64_ROW_BAD, B64_ROW_BAD,
};

/* Hex digit values, and 16 for every other byte: one OR of two look-ups
 * tells whether both bytes after a `=` are digits.  Lower case is
 * accepted: RFC 2045 6.7 says a robust decoder may, and real encoders
 * emit it. */
#define HEX_NONE16 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16, 16
#define HEX_LETTERS 16, 10, 11, 12, 13, 14, 15, 16, 16, 16, 16, 16, 16, 16, 16, 16
static const uint8_t hex_or_16[256] = {
	HEX_NONE16, HEX_NONE16, HEX_NONE16,
	/* 0x30 */ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 16, 16, 16, 16, 16,
	/* 0x40 */ HEX_LETTERS, HEX_NONE16,
	/* 0x60 */ HEX_LETTERS, HEX_NONE16,
	HEX_NONE16, HEX_NONE16, HEX_NONE16, HEX_NONE16, HEX_NONE16, HEX_NONE16, HEX_NONE16, HEX_NONE16,
};
#undef HEX_NONE16
#undef HEX_LETTERS

static inline bool hex_pair(const uint8_t *p)
{
	return (hex_or_16[p[0]] | hex_or_16[p[1]]) < 16;
}

static inline bool ascii_ieq(const uint8_t *p, size_t n, const char *lit)
{
	size_t m = strlen(lit);
	if (n != m)
		return false;
	for (size_t i = 0; i < m; i++) {
		uint8_t c = p[i];
		if (c >= 'A' && c <= 'Z')
			c |= 0x20;
		if (c != (uint8_t)lit[i])
			return false;
	}
	return true;
}

enum transfer_encoding transfer_encoding_parse(struct str v)
{
	if (!v.p)
		return TRANSFER_IDENTITY;
	const uint8_t *p = (const uint8_t *)v.p;
	size_t n = v.n;
	while (n && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n'))
		p++, n--;
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r' ||
	             p[n - 1] == '\n' || p[n - 1] == ';'))
		n--;
	/* A comment after the token (`base64 (yes)`) is legal RFC 822 syntax. */
	for (size_t i = 0; i < n; i++)
		if (p[i] == ' ' || p[i] == '\t' || p[i] == '(') {
			n = i;
			break;
		}
	if (n == 0 || ascii_ieq(p, n, "7bit") || ascii_ieq(p, n, "8bit") ||
	    ascii_ieq(p, n, "binary") || ascii_ieq(p, n, "8-bit") ||
	    ascii_ieq(p, n, "7-bit"))
		return TRANSFER_IDENTITY;
	if (ascii_ieq(p, n, "base64"))
		return TRANSFER_BASE64;
	if (ascii_ieq(p, n, "quoted-printable"))
		return TRANSFER_QP;
	if (ascii_ieq(p, n, "x-uuencode") || ascii_ieq(p, n, "uuencode") ||
	    ascii_ieq(p, n, "x-uue") || ascii_ieq(p, n, "uue"))
		return TRANSFER_UUENCODE;
	return TRANSFER_UNKNOWN;
}

/* Size-only scanning: past out_cap nothing is written, so the bytes only
 * need classifying.  From p[i], counts the alphabet bytes of the longest run
 * of alphabet and white space bytes (adding them to *sextets) and returns
 * where it stopped: at a `=` or a byte outside the alphabet, which the
 * caller's byte loop handles (so warnings cannot differ from a full decode),
 * or at n.  SSE2 (every x86-64) takes 16 bytes a step: well-formed base64 is
 * a few instructions per 16 bytes instead of a table lookup per byte. */
#if defined(SIMD_AVX2)
/* The same classification as the SSE2 loop below, 32 bytes a step, for
 * CPUs that have AVX2 (checked once at run time), by two nibble look-ups
 * rather than range compares: the bytes outside the alphabet and white
 * space are six rectangles of (high nibble, low nibble) sets, a bit each,
 * so a byte is outside when the bits of its two nibbles meet.  In a block
 * that passes, white space is exactly the bytes below '!', and the rest
 * are sextets. */
__attribute__((target("avx2")))
static size_t b64_count_avx2(const uint8_t *p, size_t n, size_t i, uint64_t *k)
{
	/* bit 0: high 1, 8..F (controls, non-ASCII); bit 1: high 0, low
	 * 0..8 E F (controls other than HT LF VT FF CR); bit 2: high 2, low
	 * 1..A C D E (punctuation but SP + /); bit 3: 3A..3F; bit 4: '@' and
	 * '`'; bit 5: 5B..5F, 7B..7F. */
	const __m256i hi_bits = SIMD_LANES16(
		0x02, 0x01, 0x04, 0x08, 0x10, 0x20, 0x10, 0x20, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01);
	const __m256i lo_bits = SIMD_LANES16(
		0x13, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x07, 0x05, 0x0D, 0x29, 0x2D, 0x2D, 0x2F, 0x2B);
	const __m256i lo4 = _mm256_set1_epi8(0x0F), excl = _mm256_set1_epi8('!');
	const __m256i zero = _mm256_setzero_si256();
	while (i + 32 <= n) {
		/* Per-lane white space counters (each to at most 255),
		 * summed with one SAD per block of steps. */
		__m256i acc = zero;
		size_t steps = 0;
		while (steps < 255 && i + 32 <= n) {
			__m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
			__m256i h = _mm256_shuffle_epi8(hi_bits, _mm256_and_si256(_mm256_srli_epi16(v, 4), lo4));
			__m256i l = _mm256_shuffle_epi8(lo_bits, _mm256_and_si256(v, lo4));
			if (!_mm256_testz_si256(h, l))
				break;
			acc = _mm256_sub_epi8(acc, _mm256_cmpgt_epi8(excl, v));
			i += 32;
			steps++;
		}
		__m256i sad = _mm256_sad_epu8(acc, zero);
		*k += 32 * (uint64_t)steps -
		      ((uint64_t)_mm256_extract_epi64(sad, 0) + (uint64_t)_mm256_extract_epi64(sad, 1) +
		       (uint64_t)_mm256_extract_epi64(sad, 2) + (uint64_t)_mm256_extract_epi64(sad, 3));
		if (steps < 255)
			break;
	}
	return i;
}

/* Whole quanta, 32 alphabet bytes (24 bytes out) a step, from p[i] while
 * the block is all alphabet and out has room for a 32-byte store at *o:
 * the decoder of Muła and Lemire ("Faster Base64 Encoding and Decoding
 * Using AVX2 Instructions", ACM TWEB 2018).  Two nibble look-ups reject
 * any byte outside A-Z a-z 0-9 + / (white space, `=`, garbage), which the
 * caller's loops then take as before; a third gives each byte the offset
 * that turns it into its sextet, and two multiply-adds and two shuffles
 * pack four sextets into three bytes.  Returns where it stopped. */
__attribute__((target("avx2")))
static size_t b64_decode_avx2(const uint8_t *p, size_t n, size_t i, uint8_t *out,
                              size_t out_cap, uint64_t *o)
{
	const __m256i lut_lo = SIMD_LANES16(
		0x15, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x13, 0x1A, 0x1B, 0x1B, 0x1B, 0x1A);
	const __m256i lut_hi = SIMD_LANES16(
		0x10, 0x10, 0x01, 0x02, 0x04, 0x08, 0x04, 0x08, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10);
	const __m256i lut_roll = SIMD_LANES16(
		0, 16, 19, 4, -65, -65, -71, -71, 0, 0, 0, 0, 0, 0, 0, 0);
	const __m256i mask_2f = _mm256_set1_epi8(0x2F);
	const __m256i pack_lane = SIMD_LANES16(
		2, 1, 0, 6, 5, 4, 10, 9, 8, 14, 13, 12, -1, -1, -1, -1);
	const __m256i pack_lanes = _mm256_setr_epi32(0, 1, 2, 4, 5, 6, -1, -1);
	uint64_t w = *o;
	while (n - i >= 32 && out_cap - w >= 32) {
		__m256i v = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
		__m256i hi_nib = _mm256_and_si256(_mm256_srli_epi32(v, 4), mask_2f);
		__m256i lo_nib = _mm256_and_si256(v, mask_2f);
		if (!_mm256_testz_si256(_mm256_shuffle_epi8(lut_lo, lo_nib),
		                        _mm256_shuffle_epi8(lut_hi, hi_nib)))
			break;
		__m256i roll = _mm256_shuffle_epi8(lut_roll,
		                                   _mm256_add_epi8(_mm256_cmpeq_epi8(v, mask_2f), hi_nib));
		v = _mm256_add_epi8(v, roll);
		v = _mm256_maddubs_epi16(v, _mm256_set1_epi32(0x01400140));
		v = _mm256_madd_epi16(v, _mm256_set1_epi32(0x00011000));
		v = _mm256_shuffle_epi8(v, pack_lane);
		v = _mm256_permutevar8x32_epi32(v, pack_lanes);
		_mm256_storeu_si256((__m256i *)(void *)(out + w), v);
		w += 24;
		i += 32;
	}
	*o = w;
	return i;
}
#endif

static size_t b64_count(const uint8_t *p, size_t n, size_t i, uint64_t *sextets)
{
	uint64_t k = 0;
#if defined(SIMD_AVX2)
	/* __builtin_cpu_supports reads a table libgcc fills at start-up. */
	if (n - i >= 64 && __builtin_cpu_supports("avx2"))
		i = b64_count_avx2(p, n, i, &k);
#endif
#if defined(__SSE2__)
	const __m128i lo_a = _mm_set1_epi8('a' - 1), hi_z = _mm_set1_epi8('z' + 1);
	const __m128i lo_d = _mm_set1_epi8('/' - 1), hi_d = _mm_set1_epi8('9' + 1);
	const __m128i plus = _mm_set1_epi8('+'), sp = _mm_set1_epi8(' ');
	const __m128i lo_w = _mm_set1_epi8('\t' - 1), hi_w = _mm_set1_epi8('\r' + 1);
	const __m128i case_bit = _mm_set1_epi8(0x20), zero = _mm_setzero_si128();
	while (i + 16 <= n) {
		/* Per-lane counters (each lane counts to at most 255) summed
		 * with one SAD per block of steps. */
		__m128i acc = zero;
		size_t steps = 0;
		while (steps < 255 && i + 16 <= n) {
			__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
			/* Letters: with the case bit set, 'a'..'z'; bytes >= 0x80
			 * are negative as signed and fail every range. */
			__m128i f = _mm_or_si128(v, case_bit);
			__m128i al = _mm_and_si128(_mm_cmpgt_epi8(f, lo_a), _mm_cmplt_epi8(f, hi_z));
			/* '/' and the digits are one range, 0x2F..0x39. */
			al = _mm_or_si128(al, _mm_and_si128(_mm_cmpgt_epi8(v, lo_d), _mm_cmplt_epi8(v, hi_d)));
			al = _mm_or_si128(al, _mm_cmpeq_epi8(v, plus));
			/* White space: SP, and HT LF VT FF CR (0x09..0x0D). */
			__m128i ws = _mm_or_si128(_mm_cmpeq_epi8(v, sp),
			                          _mm_and_si128(_mm_cmpgt_epi8(v, lo_w), _mm_cmplt_epi8(v, hi_w)));
			if (_mm_movemask_epi8(_mm_or_si128(al, ws)) != 0xFFFF)
				break;
			acc = _mm_sub_epi8(acc, al);     /* al lanes are -1 */
			i += 16;
			steps++;
		}
		__m128i sad = _mm_sad_epu8(acc, zero);
		k += (uint64_t)_mm_cvtsi128_si32(sad) + (uint64_t)_mm_extract_epi16(sad, 4);
		if (steps < 255)
			break;
	}
#endif
	for (; i < n; i++) {
		uint8_t v = b64_table[p[i]];
		if (v < 64)
			k++;
		else if (v != B64_WS)
			break;
	}
	*sextets += k;
	return i;
}

/* Ends a quantum of q pending sextets (at `=` or at the end of the data):
 * 2 sextets make 1 byte, 3 make 2, none makes nothing.  Returns whether
 * the quantum was bad: a lone sextet is truncated data. */
static bool b64_close_quantum(uint32_t acc, unsigned q, uint8_t *out, size_t out_cap, uint64_t *o)
{
	if (q >= 2) {
		if (*o < out_cap)
			out[*o] = (uint8_t)(acc >> (q == 2 ? 4 : 10));
		(*o)++;
	}
	if (q == 3) {
		if (*o < out_cap)
			out[*o] = (uint8_t)(acc >> 2);
		(*o)++;
	}
	return q == 1;
}

struct transfer_b64_run transfer_base64_run(const uint8_t *p, size_t n)
{
	struct transfer_b64_run r = { 0, 0 };
	r.len = b64_count(p, n, 0, &r.sextets);
	return r;
}

uint64_t transfer_base64_decode(const uint8_t *p, size_t n, uint8_t *out,
                                size_t out_cap, uint64_t *warnings)
{
	return transfer_base64_decode_run(p, n, NULL, out, out_cap, warnings);
}

uint64_t transfer_base64_decode_run(const uint8_t *p, size_t n, const struct transfer_b64_run *run,
                                    uint8_t *out, size_t out_cap, uint64_t *warnings)
{
	uint64_t o = 0;          /* decoded bytes so far (written or not) */
	uint32_t acc = 0;        /* pending sextets, q of them */
	unsigned q = 0;
	bool bad = false;
	size_t i = 0;

	if (!out)
		out_cap = 0;
	while (i < n) {
		/* Nothing more will be written: only count. */
		if (o >= out_cap) {
			if (run && run->len <= n && i < run->len) {
				/* Inside the run no `=` has come, so the 4 * (o / 3)
				 * + q sextets before i are its first ones: its count
				 * carries on from here to its end. */
				o = 3 * (run->sextets / 4);
				q = (unsigned)(run->sextets % 4);
				i = run->len;
			}
			uint64_t sx = q;
			i = b64_count(p, n, i, &sx);
			o += 3 * (sx / 4);
			q = (unsigned)(sx % 4);
			if (i >= n)
				break;
		} else if (q == 0) {
			/* Fast path: whole quanta of four alphabet bytes. */
#if defined(SIMD_AVX2)
			if (n - i >= 32 && out_cap - o >= 32 && __builtin_cpu_supports("avx2"))
				i = b64_decode_avx2(p, n, i, out, out_cap, &o);
#endif
			while (i + 4 <= n) {
				uint32_t a = b64_table[p[i]], b = b64_table[p[i + 1]];
				uint32_t c = b64_table[p[i + 2]], d = b64_table[p[i + 3]];
				if ((a | b | c | d) >= 64)
					break;
				uint32_t v = a << 18 | b << 12 | c << 6 | d;
				if (o + 3 <= out_cap) {
					out[o] = (uint8_t)(v >> 16);
					out[o + 1] = (uint8_t)(v >> 8);
					out[o + 2] = (uint8_t)v;
				} else {
					for (unsigned k = 0; k < 3 && o + k < out_cap; k++)
						out[o + k] = (uint8_t)(v >> (16 - 8 * k));
				}
				o += 3;
				i += 4;
			}
			if (i >= n)
				break;
		}
		/* Slow path: one byte, until the quantum is whole again. */
		uint8_t v = b64_table[p[i++]];
		if (v < 64) {
			acc = acc << 6 | v;
			if (++q == 4) {
				uint8_t b[3] = { (uint8_t)(acc >> 16), (uint8_t)(acc >> 8), (uint8_t)acc };
				for (int k = 0; k < 3; k++, o++)
					if (o < out_cap)
						out[o] = b[k];
				q = 0;
				acc = 0;
			}
		} else if (v == B64_WS) {
			continue;
		} else if (v == B64_PAD) {
			/* `=` closes the quantum; further `=` (the second pad)
			 * find q == 0 and are no-ops. */
			bad |= b64_close_quantum(acc, q, out, out_cap, &o);
			q = 0;
			acc = 0;
		} else {
			bad = true;
		}
	}
	/* Missing padding is tolerated. */
	bad |= b64_close_quantum(acc, q, out, out_cap, &o);
	if (bad && warnings)
		mail_warn(warnings, MAIL_W_BAD_BASE64);
	return o;
}

static inline void put_bytes(uint8_t *out, size_t out_cap, uint64_t o,
                             const uint8_t *src, size_t k)
{
	if (o < out_cap) {
		size_t room = out_cap - (size_t)o;
		memcpy(out + o, src, k < room ? k : room);
	}
}

/* What follows a `=` at p[i - 1] that is not two hex digits: a soft line
 * break (6.7 rule 5), with the transport padding that rule 3 allows
 * between `=` and the line end, after which decoding goes on at the
 * returned position; or, returned as 0 (a position past a `=` is never
 * 0), an invalid escape, whose `=` is kept literally (rule 1's advice)
 * and decoding goes on at i.  `=` at the very end of the data is a soft
 * break too: encoders end bodies so. */
static inline size_t qp_after_eq(const uint8_t *p, size_t n, size_t i)
{
	size_t j = i;
	while (j < n && (p[j] == ' ' || p[j] == '\t'))
		j++;
	if (j == n)
		return n;
	if (p[j] == '\n')
		return j + 1;
	if (p[j] == '\r' && (j + 1 == n || p[j + 1] == '\n'))
		return j + 1 == n ? n : j + 2;
	return 0;
}

#if defined(__SSE2__)
/* The whole decode into out[0..n): the output is never longer than the
 * input (each byte written consumes at least one), so nothing needs a
 * bound check, and a 16-byte block is stored before it is looked at,
 * whether or not it holds a `=` (the store lands within out[0..n) when
 * 16 input bytes are left, as o <= i).  Encoded non-ASCII text is short
 * runs between `=XX` chains; each run then costs one block step. */
static uint64_t qp_decode_whole(const uint8_t *p, size_t n, uint8_t *out, bool *bad)
{
	const __m128i eq = _mm_set1_epi8('=');
	size_t i = 0, o = 0;
	for (;;) {
		while (n - i >= 16) {
			__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
			_mm_storeu_si128((__m128i *)(void *)(out + o), v);
			unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, eq));
			if (m) {
				size_t k = (size_t)__builtin_ctz(m);
				i += k;
				o += k;
				goto at_eq;
			}
			i += 16;
			o += 16;
		}
		while (i < n && p[i] != '=')
			out[o++] = p[i++];
		if (i >= n)
			return o;
	at_eq:
		/* p[i] is `=`: a chain of `=XX`, or what qp_after_eq says */
		if (i + 3 <= n && hex_pair(p + i + 1)) {
			do {
				out[o++] = (uint8_t)(hex_or_16[p[i + 1]] << 4 | hex_or_16[p[i + 2]]);
				i += 3;
			} while (i + 3 <= n && p[i] == '=' && hex_pair(p + i + 1));
			continue;
		}
		size_t j = qp_after_eq(p, n, i + 1);
		if (!j) {
			out[o++] = '=';
			*bad = true;
		}
		i = j ? j : i + 1;
	}
}
#endif

uint64_t transfer_qp_decode(const uint8_t *p, size_t n, uint8_t *out,
                            size_t out_cap, uint64_t *warnings)
{
	uint64_t o = 0;
	size_t i = 0;
	bool bad = false;

	if (!out)
		out_cap = 0;
#if defined(__SSE2__)
	if (out_cap >= n && n) {
		o = qp_decode_whole(p, n, out, &bad);
		i = n;
	}
#endif
	while (i < n) {
		/* The run up to the next `=`: eight bytes at a time (SWAR: a
		 * zero byte of w ^ "========" is an `=`), the rest by bytes.
		 * Runs are short in encoded non-ASCII text (every character is
		 * `=XX`), where a memchr call per run cost more than the run. */
		size_t end = i, stored = 0;
#if defined(__SSE2__)
		/* With SSE2, sixteen at a time, and a block with no `=` (all
		 * run) is stored as it is scanned: p[i, i + stored) is then
		 * in place.  Once a `=` is found the loops below stop at it
		 * at once. */
		const __m128i eq = _mm_set1_epi8('=');
		while (n - end >= 16) {
			__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + end));
			unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, eq));
			if (m) {
				end += (size_t)__builtin_ctz(m);
				break;
			}
			if (stored == end - i && o + stored + 16 <= out_cap) {
				_mm_storeu_si128((__m128i *)(void *)(out + o + stored), v);
				stored += 16;
			}
			end += 16;
		}
#endif
		while (end + 8 <= n) {
			uint64_t w;
			memcpy(&w, p + end, 8);
			w ^= UINT64_C(0x3D3D3D3D3D3D3D3D);
			if ((w - UINT64_C(0x0101010101010101)) & ~w & UINT64_C(0x8080808080808080))
				break;
			end += 8;
		}
		while (end < n && p[end] != '=')
			end++;
		if (end > i + stored) {
			size_t s = i + stored;
			uint64_t os = o + stored;
			if (os + (end - s) <= out_cap) {
				/* Short runs inline; memcpy only for long ones. */
				if (end - s <= 16)
					for (size_t k = s; k < end; k++)
						out[os + k - s] = p[k];
				else
					memcpy(out + os, p + s, end - s);
			} else {
				put_bytes(out, out_cap, os, p + s, end - s);
			}
		}
		o += end - i;
		if (end >= n)
			break;
		i = end + 1;
		if (i + 2 <= n && hex_pair(p + i)) {
			/* Encoded text is `=XX` after `=XX` (UTF-8 letters,
			 * `=3D` in HTML): take the chain here rather than
			 * scanning an empty run between each two. */
			do {
				uint8_t b = (uint8_t)(hex_or_16[p[i]] << 4 | hex_or_16[p[i + 1]]);
				if (o < out_cap)
					out[o] = b;
				o++;
				i += 3;
			} while (i + 2 <= n && p[i - 1] == '=' && hex_pair(p + i));
			i--;
			continue;
		}
		size_t j = qp_after_eq(p, n, i);
		if (!j) {
			if (o < out_cap)
				out[o] = '=';
			o++;
			bad = true;
		}
		i = j ? j : i;
	}
	if (bad && warnings)
		mail_warn(warnings, MAIL_W_BAD_QUOTED_PRINTABLE);
	return o;
}

/* ---- uuencode ---------------------------------------------------------- */

/* A data line: the length byte, then ceil(len/3)*4 bytes in ' '..'`'.
 * Trailing spaces may have been stripped in transit, and some encoders add
 * a checksum byte, so the length is checked loosely. */
static bool uu_line_ok(const uint8_t *p, size_t len)
{
	if (len == 0 || p[0] < ' ' || p[0] > '`')
		return false;
	for (size_t k = 1; k < len; k++)
		if (p[k] < ' ' || p[k] > '`')
			return false;
	size_t want = ((size_t)((p[0] - ' ') & 63) + 2) / 3 * 4;
	return len - 1 <= want + 2;
}

static bool uu_is_end(const uint8_t *p, size_t len)
{
	while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	return len == 3 && memcmp(p, "end", 3) == 0;
}

/* `begin` SP mode SP name, the mode 3 or 4 octal digits. */
static bool uu_begin(const uint8_t *p, size_t len, struct str *name)
{
	if (len < 6 || memcmp(p, "begin ", 6) != 0)
		return false;
	size_t k = 6, d = 0;
	while (k < len && p[k] >= '0' && p[k] <= '7')
		k++, d++;
	if (d < 3 || d > 4 || k >= len || p[k] != ' ')
		return false;
	k++;
	while (len > k && (p[len - 1] == ' ' || p[len - 1] == '\t'))
		len--;
	name->p = (const char *)p + k;
	name->n = len - k;
	return true;
}

static inline bool uu_begins(const uint8_t *p, size_t n, size_t s)
{
	return n - s >= 6 && memcmp(p + s, "begin ", 6) == 0;
}

/* The first line start at or after `from` (a line start) whose line starts
 * with "begin ", or n.  Nearly every text part has none, so this is the
 * whole cost of the search: SSE2 looks for the pair "\nb" 16 positions at
 * a time, where a memchr per line would pay a call per 70 bytes. */
/* The first line start after a "\n" at i + k (bit k of m set) whose line
 * starts with "begin ", or 0 (never a line start found this way). */
static inline size_t uu_first_begin(const uint8_t *p, size_t n, size_t i, uint32_t m)
{
	for (; m; m &= m - 1) {
		size_t s = i + (size_t)__builtin_ctz(m) + 1;
		if (uu_begins(p, n, s))
			return s;
	}
	return 0;
}

#if defined(SIMD_AVX2)
/* The SSE2 loop below, 32 positions a step, where the CPU has AVX2: the
 * first "begin " line start from i, or where fewer than 33 bytes are
 * left (*found false). */
__attribute__((target("avx2")))
static size_t uu_next_begin_avx2(const uint8_t *p, size_t n, size_t i, bool *found)
{
	const __m256i nl = _mm256_set1_epi8('\n'), b = _mm256_set1_epi8('b');
	*found = false;
	while (n - i >= 33) {
		__m256i c0 = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
		__m256i c1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + i + 1));
		uint32_t m = (uint32_t)_mm256_movemask_epi8(
			_mm256_and_si256(_mm256_cmpeq_epi8(c0, nl), _mm256_cmpeq_epi8(c1, b)));
		size_t s = uu_first_begin(p, n, i, m);
		if (s) {
			*found = true;
			return s;
		}
		i += 32;
	}
	return i;
}
#endif

static size_t uu_next_begin(const uint8_t *p, size_t n, size_t from)
{
	if (from >= n || uu_begins(p, n, from))
		return from;
	size_t i = from;
#if defined(SIMD_AVX2)
	if (n - i >= 64 && __builtin_cpu_supports("avx2")) {
		bool found;
		i = uu_next_begin_avx2(p, n, i, &found);
		if (found)
			return i;
	}
#endif
#if defined(__SSE2__)
	const __m128i nl = _mm_set1_epi8('\n'), b = _mm_set1_epi8('b');
	while (n - i >= 17) {
		__m128i c0 = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
		__m128i c1 = _mm_loadu_si128((const __m128i *)(const void *)(p + i + 1));
		size_t s = uu_first_begin(p, n, i, (uint32_t)_mm_movemask_epi8(
			_mm_and_si128(_mm_cmpeq_epi8(c0, nl), _mm_cmpeq_epi8(c1, b))));
		if (s)
			return s;
		i += 16;
	}
#endif
	for (; i + 1 < n; i++)
		if (p[i] == '\n' && p[i + 1] == 'b' && uu_begins(p, n, i + 1))
			return i + 1;
	return n;
}

bool transfer_uu_find(const uint8_t *p, size_t n, size_t from, struct transfer_uu *u)
{
	/* A line is looked at once whatever the number of calls (a memmem
	 * from `from` would be, too, but sanitizers check its whole haystack
	 * per call, which turns many calls quadratic). */
	if (from > 0 && from < n && p[from - 1] != '\n') {
		const uint8_t *nl = memchr(p + from, '\n', n - from);
		from = nl ? (size_t)(nl - p) + 1 : n;
	}
	while ((from = uu_next_begin(p, n, from)) < n) {
		size_t s = from, next, e = textbuf_line(p, n, s, &next);
		from = next;
		if (!uu_begin(p + s, e - s, &u->name))
			continue;
		u->start = s;
		u->data = next;
		u->terminated = false;
		size_t i = next, lines = 0;
		while (i < n) {
			size_t nx, le = textbuf_line(p, n, i, &nx);
			if (uu_is_end(p + i, le - i)) {
				u->data_end = i;
				u->end = nx;
				u->terminated = true;
				return true;
			}
			if (!uu_line_ok(p + i, le - i))
				break;
			lines++;
			i = nx;
		}
		/* No `end`: the block is the run of valid data lines.  A `begin`
		 * line with no data at all is ordinary text. */
		if (lines == 0)
			continue;
		u->data_end = i;
		u->end = i;
		return true;
	}
	return false;
}

uint64_t transfer_uu_decode(const uint8_t *p, size_t n, uint8_t *out,
                            size_t out_cap, uint64_t *warnings)
{
	uint64_t o = 0;
	size_t i = 0;
	bool bad = false;

	if (!out)
		out_cap = 0;
	while (i < n) {
		size_t next, e = textbuf_line(p, n, i, &next);
		if (e == i) {          /* an empty line has no length byte */
			bad = true;
			i = next;
			continue;
		}
		size_t len = (size_t)((p[i] - ' ') & 63);
		if (p[i] < ' ' || p[i] > '`')
			bad = true;
		if (len == 0)          /* the zero-length line ends the data */
			break;
		/* A length byte that promises more than the line could hold:
		 * decode what the line holds (missing bytes are stripped
		 * trailing spaces, as below), never more bytes than the line
		 * has, so output stays shorter than input. */
		if (len > e - i) {
			len = e - i;
			bad = true;
		}
		size_t k = i + 1, got = 0;
		while (got < len) {
			uint32_t v = 0;
			for (int j = 0; j < 4; j++) {
				/* Missing bytes (stripped trailing spaces) count as 0. */
				uint8_t c = k < e ? p[k++] : ' ';
				if (c < ' ' || c > '`')
					bad = true;
				v = v << 6 | ((uint32_t)(c - ' ') & 63);
			}
			uint8_t b[3] = { (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };
			for (int j = 0; j < 3 && got < len; j++, got++, o++)
				if (o < out_cap)
					out[o] = b[j];
		}
		i = next;
	}
	if (bad && warnings)
		mail_warn(warnings, MAIL_W_BAD_UUENCODE);
	return o;
}

uint64_t transfer_decode(enum transfer_encoding e, const uint8_t *p, size_t n,
                         uint8_t *out, size_t out_cap, uint64_t *warnings)
{
	switch (e) {
	case TRANSFER_BASE64:
		return transfer_base64_decode(p, n, out, out_cap, warnings);
	case TRANSFER_QP:
		return transfer_qp_decode(p, n, out, out_cap, warnings);
	case TRANSFER_UUENCODE: {
		struct transfer_uu u;
		if (!transfer_uu_find(p, n, 0, &u)) {
			if (n && warnings)
				mail_warn(warnings, MAIL_W_BAD_UUENCODE);
			return 0;
		}
		if (!u.terminated && warnings)
			mail_warn(warnings, MAIL_W_BAD_UUENCODE);
		return transfer_uu_decode(p + u.data, u.data_end - u.data, out, out_cap, warnings);
	}
	case TRANSFER_IDENTITY:
	case TRANSFER_UNKNOWN:
		break;
	}
	if (out && out_cap)
		memcpy(out, p, n < out_cap ? n : out_cap);
	return n;
}
