/* SPDX-License-Identifier: MIT */
/* Unit tests for core/utf8: the well-formed forms of Unicode 15 §3.9
 * table 3-7, the length of each ill-formed sequence's maximal subpart,
 * and the validator's block and inline paths against the decoder. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "core/utf8.h"

static void test_utf8_valid(void **state)
{
	(void)state;
	assert_true(utf8_valid("", 0));
	assert_true(utf8_valid(NULL, 0));
	assert_true(utf8_valid("hello, world 12345", 18));
	assert_true(utf8_valid("plain ascii path/with/many/parts", 32));
	assert_true(utf8_valid("r\xC3\xA9sum\xC3\xA9", 8));
	assert_true(utf8_valid("\xf0\x9f\x98\x80", 4));
	assert_true(utf8_valid("\xef\xbf\xbf", 3));
	assert_true(utf8_valid("\xf4\x8f\xbf\xbf", 4));                   /* U+10FFFF */
	assert_false(utf8_valid("r\xE9sum\xE9", 6));
	assert_false(utf8_valid("\xc0\x80", 2));                            /* overlong */
	assert_false(utf8_valid("\xe0\x80\xaf", 3));                        /* overlong */
	assert_false(utf8_valid("\xed\xa0\x80", 3));                        /* surrogate */
	assert_false(utf8_valid("\xED\xB0\x80", 3));                        /* surrogate */
	assert_false(utf8_valid("\xf4\x90\x80\x80", 4));                    /* > U+10FFFF */
	assert_false(utf8_valid("\xf5\x80\x80\x80", 4));
	assert_false(utf8_valid("abcdefgh\xc3", 9));                        /* truncated */
	assert_false(utf8_valid("aaaaaaaaaaaaaaaa\xC3", 17));
	assert_false(utf8_valid("\x80", 1));
}

#define SEQ(lit) utf8_seq((const uint8_t *)(lit), sizeof(lit) - 1)

/* Positive lengths for well-formed sequences, minus the maximal subpart
 * (the bytes one U+FFFD replaces) for the rest. */
static void test_utf8_seq(void **state)
{
	(void)state;
	assert_int_equal(SEQ("a"), 1);
	assert_int_equal(SEQ("\x7f"), 1);
	assert_int_equal(SEQ("\xc3\xa9x"), 2);
	assert_int_equal(SEQ("\xe2\x82\xac"), 3);
	assert_int_equal(SEQ("\xf0\x9f\x98\x80"), 4);
	assert_int_equal(SEQ("\x80"), -1);             /* stray continuation */
	assert_int_equal(SEQ("\xc1\xbf"), -1);         /* overlong lead */
	assert_int_equal(SEQ("\xf5\x80"), -1);
	assert_int_equal(SEQ("\xe2\x82" "A"), -2);     /* truncated by 'A' */
	assert_int_equal(SEQ("\xe2\x82"), -2);         /* truncated by the end */
	assert_int_equal(SEQ("\xe0\x9f\x80"), -1);     /* E0's second byte from A0 */
	assert_int_equal(SEQ("\xed\xa0\x80"), -1);     /* ED's up to 9F */
	assert_int_equal(SEQ("\xf0\x8f\x80\x80"), -1); /* F0's from 90 */
	assert_int_equal(SEQ("\xf4\x90\x80\x80"), -1); /* F4's up to 8F */
	assert_int_equal(SEQ("\xf0\x9f\x98"), -3);
	assert_int_equal(SEQ("\xf0\x9f\x98\xc3"), -3);
}

/* Bytes that cover each range boundary of table 3-7. */
static const uint8_t boundary_bytes[] = {
	0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1,
	0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf3, 0xf4,
	0xf5, 0xff,
};

/* Every sequence of up to three bytes from a set that covers each range
 * boundary, after every length of ASCII (every offset of a 16- and an
 * 8-byte block): utf8_valid agrees with utf8_seq taken one at a time, and
 * utf8_decode reads back what was encoded. */
static void test_utf8_valid_matches_seq(void **state)
{
	(void)state;
	const uint8_t *bytes = boundary_bytes;
	const size_t nb = sizeof(boundary_bytes);
	uint8_t buf[64];
	size_t checked_valid = 0, checked_invalid = 0;
	for (size_t k = 0; k <= 17; k += (k < 3 ? 1 : 7)) {
		memset(buf, 'a', k);
		for (size_t x = 0; x < nb * nb * nb; x++) {
			buf[k] = bytes[x % nb];
			buf[k + 1] = bytes[x / nb % nb];
			buf[k + 2] = bytes[x / nb / nb];
			size_t n = k + 3;
			bool want = true;
			for (size_t i = 0; i < n && want;) {
				int l = utf8_seq(buf + i, n - i);
				want = l > 0;
				if (want && l > 1) {
					const uint8_t *q = buf + i;
					uint32_t cp = utf8_decode(&q);
					assert_ptr_equal(q, buf + i + l);
					assert_true(cp >= (l == 2 ? 0x80u : l == 3 ? 0x800u : 0x10000u));
					assert_false(cp >= 0xD800 && cp <= 0xDFFF);
					assert_true(cp <= 0x10FFFF);
				}
				i += want ? (size_t)l : 0;
			}
			assert_int_equal(utf8_valid(buf, n), want);
			if (want)
				checked_valid++;
			else
				checked_invalid++;
		}
	}
	assert_true(checked_valid > 0 && checked_invalid > 0);
}

/* The same over longer inputs, which utf8_valid takes 32 bytes a step
 * where the CPU allows: the three bytes at every offset around the first
 * two block boundaries, in a buffer whose first block also has a
 * well-formed two-byte character (so that it is not all ASCII) or not,
 * and either followed by more ASCII or ending right after them (a short
 * last block). */
static bool utf8_valid_by_seq(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		int l = utf8_seq(p + i, n - i);
		if (l < 0)
			return false;
		i += (size_t)l;
	}
	return true;
}

static void test_utf8_valid_blocks(void **state)
{
	(void)state;
	const uint8_t *bytes = boundary_bytes;
	const size_t nb = sizeof(boundary_bytes);
	uint8_t buf[160];
	size_t checked_valid = 0, checked_invalid = 0;
	for (int lead = 0; lead < 2; lead++) {
		for (size_t k = 61; k <= 100; k += k == 67 ? 24 : 1) {
			for (size_t x = 0; x < nb * nb * nb; x++) {
				memset(buf, 'a', sizeof(buf));
				if (lead)
					memcpy(buf + 3, "\xC3\xA9", 2);
				buf[k] = bytes[x % nb];
				buf[k + 1] = bytes[x / nb % nb];
				buf[k + 2] = bytes[x / nb / nb];
				for (size_t n = k + 3; n <= k + 40; n += 37) {
					bool want = utf8_valid_by_seq(buf, n);
					assert_int_equal(utf8_valid(buf, n), want);
					if (want)
						checked_valid++;
					else
						checked_invalid++;
				}
			}
		}
	}
	/* A four-byte character across each boundary, and one cut short by
	 * the end, after every length of ASCII. */
	for (size_t k = 60; k < 100; k++) {
		memset(buf, 'a', sizeof(buf));
		memcpy(buf + k, "\xF0\x9F\x98\x80", 4);
		assert_true(utf8_valid(buf, sizeof(buf)));
		assert_true(utf8_valid(buf, k + 4));
		assert_false(utf8_valid(buf, k + 3));
	}
	assert_true(checked_valid > 0 && checked_invalid > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8_valid),
		cmocka_unit_test(test_utf8_seq),
		cmocka_unit_test(test_utf8_valid_matches_seq),
		cmocka_unit_test(test_utf8_valid_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
