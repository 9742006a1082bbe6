/* SPDX-License-Identifier: MIT */
/* UTF-8 validation: see utf8.h.
 *
 * Every header value and every decoded text is checked once, so ASCII
 * goes a block at a time and the common forms of other scripts (two- and
 * three-byte characters) are tested inline; only the rest takes
 * utf8_seq(). */
#include "core/utf8.h"
#include "core/simd.h"

#if defined(SIMD_AVX2)

/* Text of a non-Latin script is nearly all multibyte characters, which
 * the byte loop below takes at several instructions each.  This is the
 * lookup validator of Keiser and Lemire ("Validating UTF-8 in less than
 * one instruction per byte", Software: Practice and Experience, 2021):
 * 32 bytes a step, no branch per character, the same definition of
 * well-formed (Unicode table 3-7).  Each byte is classified by three
 * nibble lookups over it and the byte before it: the bits that survive
 * their AND are errors (an overlong, a surrogate, a value above
 * U+10FFFF, a continuation where none may be, a lead byte cut short)
 * except where the byte must be the 2nd or 3rd continuation of a 3- or
 * 4-byte form, which the 0x80 bit marks and flips. */
__attribute__((target("avx2")))
static inline __m256i utf8_prev(__m256i in, __m256i prev_in, int k)
{
	/* the 32 bytes ending k bytes before in's last, across the lanes */
	__m256i t = _mm256_permute2x128_si256(prev_in, in, 0x21);
	switch (k) {
	case 1: return _mm256_alignr_epi8(in, t, 15);
	case 2: return _mm256_alignr_epi8(in, t, 14);
	default: return _mm256_alignr_epi8(in, t, 13);
	}
}

enum {
	U8_TOO_SHORT = 1 << 0,   /* a lead byte followed by a lead byte or ASCII */
	U8_TOO_LONG = 1 << 1,    /* ASCII followed by a continuation */
	U8_OVERLONG_3 = 1 << 2,  /* E0 80..9F */
	U8_TOO_LARGE = 1 << 3,   /* F4 90..BF, F5..FF 90..BF */
	U8_SURROGATE = 1 << 4,   /* ED A0..BF */
	U8_OVERLONG_2 = 1 << 5,  /* C0, C1 */
	U8_TOO_LARGE_1000 = 1 << 6, /* F5..FF 80..8F */
	U8_OVERLONG_4 = 1 << 6,  /* F0 80..8F */
	U8_TWO_CONTS = 1 << 7,   /* a continuation after a continuation */
	U8_CARRY = U8_TOO_SHORT | U8_TOO_LONG | U8_TWO_CONTS,
};

__attribute__((target("avx2")))
static bool utf8_valid_avx2(const uint8_t *p, size_t n)
{
	const __m256i lo4 = _mm256_set1_epi8(0x0F);
	const __m256i t1h = SIMD_LANES16(
		U8_TOO_LONG, U8_TOO_LONG, U8_TOO_LONG, U8_TOO_LONG,
		U8_TOO_LONG, U8_TOO_LONG, U8_TOO_LONG, U8_TOO_LONG,
		U8_TWO_CONTS, U8_TWO_CONTS, U8_TWO_CONTS, U8_TWO_CONTS,
		U8_TOO_SHORT | U8_OVERLONG_2,
		U8_TOO_SHORT,
		U8_TOO_SHORT | U8_OVERLONG_3 | U8_SURROGATE,
		U8_TOO_SHORT | U8_TOO_LARGE | U8_TOO_LARGE_1000 | U8_OVERLONG_4);
	const __m256i t1l = SIMD_LANES16(
		U8_CARRY | U8_OVERLONG_3 | U8_OVERLONG_2 | U8_OVERLONG_4,
		U8_CARRY | U8_OVERLONG_2,
		U8_CARRY,
		U8_CARRY,
		U8_CARRY | U8_TOO_LARGE,
		U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
		U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
		U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
		U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
		U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
		U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
		U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
		U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
		U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000 | U8_SURROGATE,
		U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000,
		U8_CARRY | U8_TOO_LARGE | U8_TOO_LARGE_1000);
	const __m256i t2h = SIMD_LANES16(
		U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT,
		U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT,
		U8_TOO_LONG | U8_OVERLONG_2 | U8_TWO_CONTS | U8_OVERLONG_3 | U8_TOO_LARGE_1000 | U8_OVERLONG_4,
		U8_TOO_LONG | U8_OVERLONG_2 | U8_TWO_CONTS | U8_OVERLONG_3 | U8_TOO_LARGE,
		U8_TOO_LONG | U8_OVERLONG_2 | U8_TWO_CONTS | U8_SURROGATE | U8_TOO_LARGE,
		U8_TOO_LONG | U8_OVERLONG_2 | U8_TWO_CONTS | U8_SURROGATE | U8_TOO_LARGE,
		U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT, U8_TOO_SHORT);
	/* A block's last three bytes that start a form longer than what is
	 * left of the block: the next block must continue them. */
	const __m256i tail_max = _mm256_setr_epi8(
		-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
		-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
		(char)(0xF0 - 1), (char)(0xE0 - 1), (char)(0xC0 - 1));
	const __m256i third = _mm256_set1_epi8((char)(0xE0 - 0x80));
	const __m256i fourth = _mm256_set1_epi8((char)(0xF0 - 0x80));
	const __m256i bit7 = _mm256_set1_epi8((char)0x80);
	__m256i prev_in = _mm256_setzero_si256(), err = prev_in, prev_incomplete = prev_in;
	for (size_t i = 0; i < n; i += 32) {
		__m256i in;
		if (n - i >= 32) {
			in = _mm256_loadu_si256((const __m256i *)(const void *)(p + i));
		} else {
			/* The last bytes, padded with ASCII NULs: a form they
			 * cut short fails as it would at the end of the data. */
			uint8_t b[32] = { 0 };
			memcpy(b, p + i, n - i);
			in = _mm256_loadu_si256((const __m256i *)(const void *)b);
		}
		if (!_mm256_movemask_epi8(in)) {
			/* ASCII: only a form the last block began can fail */
			err = _mm256_or_si256(err, prev_incomplete);
		} else {
			__m256i prev1 = utf8_prev(in, prev_in, 1);
			__m256i sc = _mm256_and_si256(
				_mm256_and_si256(
					_mm256_shuffle_epi8(t1h, _mm256_and_si256(_mm256_srli_epi16(prev1, 4), lo4)),
					_mm256_shuffle_epi8(t1l, _mm256_and_si256(prev1, lo4))),
				_mm256_shuffle_epi8(t2h, _mm256_and_si256(_mm256_srli_epi16(in, 4), lo4)));
			__m256i must23 = _mm256_or_si256(
				_mm256_subs_epu8(utf8_prev(in, prev_in, 2), third),
				_mm256_subs_epu8(utf8_prev(in, prev_in, 3), fourth));
			err = _mm256_or_si256(err, _mm256_xor_si256(_mm256_and_si256(must23, bit7), sc));
			prev_incomplete = _mm256_subs_epu8(in, tail_max);
		}
		prev_in = in;
	}
	err = _mm256_or_si256(err, prev_incomplete);
	return _mm256_testz_si256(err, err);
}
#endif

bool utf8_valid(const void *v, size_t n)
{
	const uint8_t *p = v;
	size_t i = 0;
#if defined(SIMD_AVX2)
	/* Header values are mostly short ASCII, which the loop below takes a
	 * block at a time with no set-up; __builtin_cpu_supports reads a
	 * table libgcc fills at start-up. */
	if (n >= 64 && __builtin_cpu_supports("avx2"))
		return utf8_valid_avx2(p, n);
#endif
	while (i < n) {
		/* ASCII runs dominate: take them a block at a time. */
		i = utf8_ascii_run(NULL, p, n, i, false);
		/* Then characters one at a time, the common forms inline (the
		 * text of a non-Latin script is all two- or three-byte forms):
		 * ASCII; C2..DF + one continuation; E1..EC or EE..EF + two (E0
		 * and ED have narrower second bytes: utf8_seq checks them). */
		while (i < n) {
			uint8_t c = p[i];
			if (c < 0x80) {
				i++;
				if (i + 8 <= n && !(p[i] & 0x80))
					break;          /* back to the block loop */
			} else if (c >= 0xC2 && c <= 0xDF && i + 1 < n && (p[i + 1] & 0xC0) == 0x80) {
				i += 2;
			} else if (c >= 0xE1 && c <= 0xEF && c != 0xED && i + 2 < n &&
			           (p[i + 1] & 0xC0) == 0x80 && (p[i + 2] & 0xC0) == 0x80) {
				i += 3;
			} else {
				int l = utf8_seq(p + i, n - i);
				if (l < 0)
					return false;
				i += (size_t)l;
			}
		}
	}
	return true;
}
