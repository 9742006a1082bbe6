/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/encoded_word.c: RFC 2047 B and Q words, the
 * adjacent-word rule, raw 8-bit bytes, malformed words, linear cost. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mail/charset.h"
#include "mail/encoded_word.h"
#include "mail/mail_ctx.h"
#include "helpers.h"

struct tcase {
	struct mail_ctx ctx;
	uint64_t warnings;
	struct str out;
};

T_CTX_CASE(struct tcase)

static const char *dec_n(struct tcase *t, const char *in, size_t n)
{
	t->warnings = 0;
	assert_int_equal(encoded_word_decode(&t->ctx, (struct str){ in, n }, &t->out, &t->warnings), 0);
	char *s = arena_memdup(&t->ctx.arena, t->out.p, t->out.n);
	assert_non_null(s);
	return s;
}

#define DEC(t, lit) dec_n((t), (lit), sizeof(lit) - 1)
#define W(x) (UINT64_C(1) << MAIL_W_##x)

static void test_encoded_word_plain_ascii_is_view(void **state)
{
	struct tcase *t = *state;
	const char *in = "Hello = world ?=";
	assert_string_equal(dec_n(t, in, strlen(in)), in);
	assert_ptr_equal(t->out.p, in);
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_b(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?UTF-8?B?w6l0w6k=?="), "\xc3\xa9t\xc3\xa9");
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_b_without_padding(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?utf-8?b?w6k?="), "\xc3\xa9");
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_q(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?iso-8859-1?q?caf=E9_bar?="), "caf\xc3\xa9 bar");
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_adjacent_whitespace_dropped(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?utf-8?q?a?= =?utf-8?q?b?=\t =?ISO-8859-1?Q?c?="), "abc");
	/* Folding white space too (a value not yet unfolded). */
	assert_string_equal(DEC(t, "=?utf-8?q?a?=\r\n =?utf-8?q?b?="), "ab");
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_whitespace_to_text_kept(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "Re: =?utf-8?q?a?= b =?utf-8?q?c?="), "Re: a b c");
}

static void test_encoded_word_split_character_joined(void **state)
{
	struct tcase *t = *state;
	/* C3 in one word, A9 in the next: one é, not two U+FFFD. */
	assert_string_equal(DEC(t, "=?utf-8?B?ww==?= =?UTF-8?B?qQ==?="), "\xc3\xa9");
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_different_charsets_adjacent(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?iso-8859-1?q?=E9?= =?utf-8?q?=C3=A9?="), "\xc3\xa9\xc3\xa9");
}

static void test_encoded_word_charset_language(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?utf-8*en?q?hi?="), "hi");   /* RFC 2231 5 */
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_invalid_base64_kept(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "x =?utf-8?B?w6!k?= y"), "x =?utf-8?B?w6!k?= y");
	assert_int_equal(t->warnings, W(INVALID_ENCODED_WORD));
	/* A lone sextet cannot be base64. */
	assert_string_equal(DEC(t, "=?utf-8?B?w6kAB?="), "=?utf-8?B?w6kAB?=");
	assert_int_equal(t->warnings, W(INVALID_ENCODED_WORD));
}

static void test_encoded_word_invalid_q_kept(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?utf-8?q?a?= =?utf-8?q?b=ZZ?="), "a =?utf-8?q?b=ZZ?=");
	assert_int_equal(t->warnings, W(INVALID_ENCODED_WORD));
	assert_string_equal(DEC(t, "=?utf-8?q?b=4?="), "=?utf-8?q?b=4?=");
	assert_int_equal(t->warnings, W(INVALID_ENCODED_WORD));
}

static void test_encoded_word_unterminated_kept(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "Hi =?utf-8?q?abc"), "Hi =?utf-8?q?abc");
	assert_int_equal(t->warnings, W(INVALID_ENCODED_WORD));
}

static void test_encoded_word_not_a_word_no_warning(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "a =? b =?x?y?z?= =?? c"), "a =? b =?x?y?z?= =?? c");
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_raw_utf8_kept(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "J\xc3\xb6rg =?utf-8?q?x?="), "J\xc3\xb6rg x");
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_raw_8bit_is_cp1252(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "caf\xe9 \x80"), "caf\xc3\xa9 \xe2\x82\xac");
	assert_int_equal(t->warnings, W(UNENCODED_8BIT_HEADER));
}

static void test_encoded_word_raw_8bit_inside_word_uses_charset(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?iso-8859-2?q?\xb1?="), "\xc4\x85");
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_utf7(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?utf-7?q?caf+AOk-?="), "caf\xc3\xa9");
	assert_string_equal(DEC(t, "=?UNICODE-1-1-UTF-7?B?K0FPay0=?="), "\xc3\xa9");
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_unknown_charset(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?x-klingon?q?=E9?="), "\xc3\xa9");
	assert_int_equal(t->warnings, W(UNKNOWN_CHARSET));
}

static void test_encoded_word_invalid_bytes_in_word(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?utf-8?q?a=FFb?="), "a\xef\xbf\xbd" "b");
	assert_int_equal(t->warnings, W(INVALID_BYTES_REPLACED));
}

static void test_encoded_word_glued_to_text(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "foo=?utf-8?q?bar?=baz"), "foobarbaz");
	assert_string_equal(DEC(t, "=?utf-8?q?a?==?utf-8?q?b?="), "ab");
}

static void test_encoded_word_inside_quotes(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "\"=?utf-8?q?J=C3=B6rg?=\" <j@x>"), "\"J\xc3\xb6rg\" <j@x>");
}

static void test_encoded_word_spaces_in_q_text(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "=?utf-8?q?hello world?="), "hello world");
}

static void test_encoded_word_empty(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, ""), "");
	assert_string_equal(DEC(t, "=?utf-8?q?" "?="), "");
	assert_int_equal(t->warnings, 0);
}

static void test_encoded_word_scratch_preserved(void **state)
{
	struct tcase *t = *state;
	dynbuf_reset(&t->ctx.scratch);
	dynbuf_append(&t->ctx.scratch, "keep", 4);
	assert_string_equal(DEC(t, "=?utf-8?q?x?= \xe9"), "x \xc3\xa9");
	assert_int_equal(t->ctx.scratch.len, 4);
	assert_memory_equal(t->ctx.scratch.p, "keep", 4);
}

static void test_encoded_word_100000_words(void **state)
{
	struct tcase *t = *state;
	const char *w = "=?utf-8?q?a?= ";
	size_t k = 100000, wl = strlen(w);
	char *in = malloc(k * wl);
	for (size_t i = 0; i < k; i++)
		memcpy(in + i * wl, w, wl);
	dec_n(t, in, k * wl);
	/* Adjacent words: every separating space dropped; the last one is
	 * trailing text and stays. */
	assert_int_equal(t->out.n, k + 1);
	for (size_t i = 0; i < k; i++)
		assert_true(t->out.p[i] == 'a');
	free(in);
}

static void test_encoded_word_hostile_prefixes(void **state)
{
	struct tcase *t = *state;
	/* 1 MiB of word openings that never complete: linear, literal. */
	size_t n = 1 << 20;
	char *in = malloc(n);
	for (size_t i = 0; i < n; i++)
		in[i] = "=?a?q?"[i % 6];
	dec_n(t, in, n);
	assert_int_equal(t->out.n, n);
	assert_memory_equal(t->out.p, in, n);
	/* 10 MiB line, 8-bit, one word at the end. */
	n = 10 << 20;
	in = realloc(in, n);
	memset(in, '\xe9', n);
	memcpy(in + n - 13, "=?utf-8?q?Z?=", 13);
	dec_n(t, in, n);
	assert_int_equal(t->out.n, (n - 13) * 2 + 1);
	assert_int_equal(t->warnings, W(UNENCODED_8BIT_HEADER));
	free(in);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_encoded_word_plain_ascii_is_view),
		T(test_encoded_word_b),
		T(test_encoded_word_b_without_padding),
		T(test_encoded_word_q),
		T(test_encoded_word_adjacent_whitespace_dropped),
		T(test_encoded_word_whitespace_to_text_kept),
		T(test_encoded_word_split_character_joined),
		T(test_encoded_word_different_charsets_adjacent),
		T(test_encoded_word_charset_language),
		T(test_encoded_word_invalid_base64_kept),
		T(test_encoded_word_invalid_q_kept),
		T(test_encoded_word_unterminated_kept),
		T(test_encoded_word_not_a_word_no_warning),
		T(test_encoded_word_raw_utf8_kept),
		T(test_encoded_word_raw_8bit_is_cp1252),
		T(test_encoded_word_raw_8bit_inside_word_uses_charset),
		T(test_encoded_word_utf7),
		T(test_encoded_word_unknown_charset),
		T(test_encoded_word_invalid_bytes_in_word),
		T(test_encoded_word_glued_to_text),
		T(test_encoded_word_inside_quotes),
		T(test_encoded_word_spaces_in_q_text),
		T(test_encoded_word_empty),
		T(test_encoded_word_scratch_preserved),
		T(test_encoded_word_100000_words),
		T(test_encoded_word_hostile_prefixes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
