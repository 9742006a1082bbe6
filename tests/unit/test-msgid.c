/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/msgid.c: Message-ID, In-Reply-To, References. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "helpers.h"

#include <stdlib.h>
#include <string.h>

#include "mail/msgid.h"

struct tcase {
	struct arena arena;
	struct str *ids;
	size_t n;
};

T_ARENA_CASE(struct tcase)

static void list(struct tcase *t, const char *in, size_t n)
{
	assert_int_equal(msgid_parse_list(&t->arena, (struct str){ in, n }, &t->ids, &t->n), 0);
}

#define LIST(t, lit) list((t), (lit), sizeof(lit) - 1)

static struct str first_n(const char *s, size_t n)
{
	return msgid_parse_first((struct str){ s, n });
}

static struct str first(const char *s)
{
	return msgid_parse_first((struct str){ s, strlen(s) });
}

static void test_msgid_bracketed(void **state)
{
	(void)state;
	t_assert_str(first("<1234.5678@example.com>"), "1234.5678@example.com");
	t_assert_str(first("  <a@b>  "), "a@b");
}

static void test_msgid_is_view(void **state)
{
	(void)state;
	const char *in = "<x@y>";
	struct str id = first(in);
	assert_ptr_equal(id.p, in + 1);
	assert_int_equal(id.n, 3);
}

static void test_msgid_references_list(void **state)
{
	struct tcase *t = *state;
	LIST(t, "<a@b> <c@d>\r\n <e@f>,<g@h>");
	assert_int_equal(t->n, 4);
	t_assert_str(t->ids[0], "a@b");
	t_assert_str(t->ids[1], "c@d");
	t_assert_str(t->ids[2], "e@f");
	t_assert_str(t->ids[3], "g@h");
}

static void test_msgid_comments_skipped(void **state)
{
	struct tcase *t = *state;
	LIST(t, "(first <not@this>) <a@b> (nested (x@y) comment) <c@d>");
	assert_int_equal(t->n, 2);
	t_assert_str(t->ids[0], "a@b");
	t_assert_str(t->ids[1], "c@d");
}

static void test_msgid_in_reply_to_prose(void **state)
{
	struct tcase *t = *state;
	/* Old clients: quoted prose around the id. */
	t_assert_str(first("Your message of \"Mon, 12 Jan 2004 10:00:00 +0100\" <id@host>"), "id@host");
	LIST(t, "<id@host> (from joe@example.com)");
	assert_int_equal(t->n, 1);
	t_assert_str(t->ids[0], "id@host");
}

static void test_msgid_without_brackets(void **state)
{
	struct tcase *t = *state;
	t_assert_str(first("1234@example.com"), "1234@example.com");
	LIST(t, "a@b junk c@d");
	assert_int_equal(t->n, 2);
	t_assert_str(t->ids[0], "a@b");
	t_assert_str(t->ids[1], "c@d");
}

static void test_msgid_unclosed_bracket(void **state)
{
	struct tcase *t = *state;
	LIST(t, "<a@b <c@d> <e@f");
	assert_int_equal(t->n, 3);
	t_assert_str(t->ids[0], "a@b");
	t_assert_str(t->ids[1], "c@d");
	t_assert_str(t->ids[2], "e@f");
}

static void test_msgid_id_without_at(void **state)
{
	(void)state;
	t_assert_str(first("<12345.ABCDEF>"), "12345.ABCDEF");
}

static void test_msgid_empty_and_none(void **state)
{
	struct tcase *t = *state;
	LIST(t, "<> (none) <  >");
	assert_int_equal(t->n, 0);
	assert_null(t->ids);
	assert_null(first("").p);
	assert_null(first("no ids here").p);
	list(t, "", 0);
	assert_int_equal(t->n, 0);
}

static void test_msgid_space_before_close(void **state)
{
	(void)state;
	t_assert_str(first("<a@b >"), "a@b");
}

static void test_msgid_hostile_brackets_linear(void **state)
{
	struct tcase *t = *state;
	size_t n = 1 << 20;
	char *in = malloc(n);
	memset(in, '<', n);
	list(t, in, n);
	assert_int_equal(t->n, 0);
	memset(in, '(', n);
	list(t, in, n);
	assert_int_equal(t->n, 0);
	free(in);
}

static void test_msgid_100000_references(void **state)
{
	struct tcase *t = *state;
	size_t k = 100000;
	char *in = malloc(k * 8);
	for (size_t i = 0; i < k; i++)
		memcpy(in + i * 8, "<ab@cd> ", 8);
	list(t, in, k * 8);
	assert_int_equal(t->n, k);
	t_assert_str(t->ids[k - 1], "ab@cd");
	free(in);
}

static void put4(char *o, size_t v)
{
	for (int d = 3; d >= 0; d--, v /= 10)
		o[d] = (char)('0' + v % 10);
}

/* Around the 64 ids one pass keeps, and ids whose length crosses the
 * 16-byte blocks of the bracket scan, ended by each byte that ends one. */
static void test_msgid_list_sizes_and_id_lengths(void **state)
{
	struct tcase *t = *state;
	static const size_t counts[] = { 1, 63, 64, 65, 200 };
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t k = counts[c];
		char *in = malloc(k * 12);
		for (size_t i = 0; i < k; i++) {
			memcpy(in + i * 12, "<0000@host> ", 12);
			put4(in + i * 12 + 1, i);
		}
		list(t, in, k * 12);
		assert_int_equal(t->n, k);
		for (size_t i = 0; i < k; i++) {
			char want[] = "0000@host";
			put4(want, i);
			t_assert_str(t->ids[i], want);
		}
		free(in);
	}
	static const char ends[] = { '>', ' ', '\t', '\r', '\n', '<' };
	for (size_t len = 1; len <= 40; len++) {
		for (size_t e = 0; e < sizeof(ends); e++) {
			char in[64], want[48];
			in[0] = '<';
			for (size_t i = 0; i < len; i++)
				want[i] = in[1 + i] = i == len / 2 ? '@' : (char)('a' + i % 26);
			want[len] = '\0';
			in[1 + len] = ends[e];
			size_t n = len + 2;
			if (ends[e] != '>')
				in[n++] = '>';
			t_assert_str(first_n(in, n), want);
			/* and unclosed at the end of the value */
			t_assert_str(first_n(in, len + 1), want);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_msgid_bracketed),
		T(test_msgid_is_view),
		T(test_msgid_references_list),
		T(test_msgid_comments_skipped),
		T(test_msgid_in_reply_to_prose),
		T(test_msgid_without_brackets),
		T(test_msgid_unclosed_bracket),
		T(test_msgid_id_without_at),
		T(test_msgid_empty_and_none),
		T(test_msgid_space_before_close),
		T(test_msgid_hostile_brackets_linear),
		T(test_msgid_100000_references),
		T(test_msgid_list_sizes_and_id_lengths),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
