/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/address.c: RFC 5322 3.4 address lists, groups,
 * comments, quoted parts, obsolete routes, broken forms, linear cost. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mail/address.h"
#include "mail/charset.h"
#include "mail/mail_ctx.h"
#include "helpers.h"

#define W(x) (UINT64_C(1) << MAIL_W_##x)

struct tcase {
	struct mail_ctx ctx;
	struct mail_addr_list l;
	uint64_t warnings;
};

T_CTX_CASE(struct tcase)

static void parse_n(struct tcase *t, const char *in, size_t n)
{
	t->l = (struct mail_addr_list){ 0 };
	t->warnings = 0;
	assert_int_equal(address_parse_list(&t->ctx, (struct str){ in, n }, &t->l, &t->warnings), 0);
	assert_true(t->l.present);
}

#define PARSE(t, lit) parse_n((t), (lit), sizeof(lit) - 1)

static void assert_mbox(const struct mail_addr *a, const char *name, const char *addr)
{
	assert_false(a->is_group);
	t_assert_str(a->name, name);
	t_assert_str(a->address, addr);
}

static void test_address_bare(void **state)
{
	struct tcase *t = *state;
	static const char in[] = "john@example.com";
	PARSE(t, in);
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], NULL, "john@example.com");
	assert_ptr_equal(t->l.v[0].address.p, in);      /* a view */
	assert_int_equal(t->warnings, 0);
}

static void test_address_name_angle(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "John Q. Public <john.q@example.com>");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], "John Q. Public", "john.q@example.com");
}

static void test_address_quoted_name_with_comma(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "\"Doe, John\" <john@x.com>, \"Smith \\\"Jr\\\"\" <s@y.org>,b@c");
	assert_int_equal(t->l.n, 3);
	assert_mbox(&t->l.v[0], "Doe, John", "john@x.com");
	assert_mbox(&t->l.v[1], "Smith \"Jr\"", "s@y.org");
	assert_mbox(&t->l.v[2], NULL, "b@c");
}

static void test_address_encoded_name(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "=?UTF-8?Q?J=C3=B6rg?= =?UTF-8?Q?_M=C3=BCller?= <jm@x.de>");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], "J\xc3\xb6rg M\xc3\xbcller", "jm@x.de");
	PARSE(t, "\"=?iso-8859-1?q?Ren=E9?=\" <r@x.fr>");
	assert_mbox(&t->l.v[0], "Ren\xc3\xa9", "r@x.fr");
}

static void test_address_comment_as_name(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "john@x.com (John Doe)");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], "John Doe", "john@x.com");
	PARSE(t, "<john@x.com> (John)");
	assert_mbox(&t->l.v[0], "John", "john@x.com");
}

static void test_address_comment_dropped_when_named(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "John (the boss) Doe <john(at work)@x.com> (work)");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], "John Doe", "john@x.com");
}

static void test_address_group(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "Friends: a@b, C <c@d>;, e@f");
	assert_int_equal(t->l.n, 2);
	assert_true(t->l.v[0].is_group);
	t_assert_str(t->l.v[0].name, "Friends");
	assert_int_equal(t->l.v[0].n_members, 2);
	assert_mbox(&t->l.v[0].members[0], NULL, "a@b");
	assert_mbox(&t->l.v[0].members[1], "C", "c@d");
	assert_mbox(&t->l.v[1], NULL, "e@f");
	assert_int_equal(t->warnings, 0);
}

static void test_address_undisclosed_recipients(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "undisclosed-recipients:;");
	assert_int_equal(t->l.n, 1);
	assert_true(t->l.v[0].is_group);
	t_assert_str(t->l.v[0].name, "undisclosed-recipients");
	assert_int_equal(t->l.v[0].n_members, 0);
	assert_int_equal(t->warnings, 0);
}

static void test_address_unlisted_recipients_with_comment(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "unlisted-recipients:; (no To-header on input)");
	assert_int_equal(t->l.n, 1);
	assert_true(t->l.v[0].is_group);
	t_assert_str(t->l.v[0].name, "unlisted-recipients");
	assert_int_equal(t->l.v[0].n_members, 0);
	assert_int_equal(t->warnings, 0);
}

static void test_address_group_without_semicolon(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "A: a@b, B: c@d");
	assert_int_equal(t->l.n, 2);
	t_assert_str(t->l.v[0].name, "A");
	assert_int_equal(t->l.v[0].n_members, 1);
	t_assert_str(t->l.v[1].name, "B");
	assert_mbox(&t->l.v[1].members[0], NULL, "c@d");
}

static void test_address_quoted_local_part(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "\"john doe\"@example.com, Jo <\"j.d\"@x.org>");
	assert_int_equal(t->l.n, 2);
	assert_mbox(&t->l.v[0], NULL, "\"john doe\"@example.com");
	assert_mbox(&t->l.v[1], "Jo", "\"j.d\"@x.org");
}

static void test_address_obsolete_route_dropped(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "Joe <@relay1.org,@relay2.org:joe@example.com>, x@y");
	assert_int_equal(t->l.n, 2);
	assert_mbox(&t->l.v[0], "Joe", "joe@example.com");
	assert_mbox(&t->l.v[1], NULL, "x@y");
}

static void test_address_missing_closing_bracket(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "Name <a@b");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], "Name", "a@b");
	PARSE(t, "Name <a@b, Other <c@d>");
	assert_int_equal(t->l.n, 2);
	assert_mbox(&t->l.v[0], "Name", "a@b");
	assert_mbox(&t->l.v[1], "Other", "c@d");
}

static void test_address_name_then_bare_address(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "John Doe john@x.com");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], "John Doe", "john@x.com");
}

static void test_address_whitespace_inside_address(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "john . doe @ example . com, < a @ b >");
	assert_int_equal(t->l.n, 2);
	assert_mbox(&t->l.v[0], NULL, "john.doe@example.com");
	assert_mbox(&t->l.v[1], NULL, "a@b");
}

static void test_address_stray_separators(void **state)
{
	struct tcase *t = *state;
	PARSE(t, " , ,a@b,, ;c@d; ");
	assert_int_equal(t->l.n, 2);
	assert_mbox(&t->l.v[0], NULL, "a@b");
	assert_mbox(&t->l.v[1], NULL, "c@d");
	assert_int_equal(t->warnings, 0);
}

static void test_address_name_without_address_is_bad(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "John Smith, a@b");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], NULL, "a@b");
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
}

static void test_address_local_only(void **state)
{
	struct tcase *t = *state;
	/* Kept (a local mailbox is what the sender meant), but RFC 5322
	 * 3.4.1 addr-spec needs "@" domain: bad-address, as Python says. */
	PARSE(t, "MAILER-DAEMON");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], NULL, "MAILER-DAEMON");
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
}

/* Recovered mailboxes that no RFC 5322 3.4 production matches still say so:
 * an unclosed angle-addr, a phrase before a bare addr-spec. */
static void test_address_repairs_warn(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "John Doe <john@example.org");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], "John Doe", "john@example.org");
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
	PARSE(t, "Jane Roe jane@example.org");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], "Jane Roe", "jane@example.org");
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
	PARSE(t, "XX");
	assert_int_equal(t->l.n, 1);
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
	/* Well formed: no warning. */
	PARSE(t, "John Doe <john@example.org>, jane@example.org (Jane Roe)");
	assert_int_equal(t->l.n, 2);
	assert_int_equal(t->warnings, 0);
}

static void test_address_null_path(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "<>");
	assert_int_equal(t->l.n, 0);
	PARSE(t, "Mail System <>");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], "Mail System", "");
	assert_int_equal(t->warnings, 0);
}

/* A date after the address, as some scripts write the From field: the
 * colons of its time start no group. */
static void test_address_date_after_address(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "user@example.de Thu Sep 19 17:31:10 2013");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], NULL, "user@example.de");
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
	PARSE(t, "user@example.de Thu Sep 19 17:31:10 2013, other@example.org");
	assert_int_equal(t->l.n, 2);
	assert_mbox(&t->l.v[1], NULL, "other@example.org");
	/* a group is still a group, a route still no address */
	PARSE(t, "team: a@b, c@d;");
	assert_int_equal(t->l.n, 1);
	assert_true(t->l.v[0].is_group);
	assert_int_equal(t->l.v[0].n_members, 2);
}

/* The kernel's Cc: stable convention: the address is the addr-spec, the
 * note after it is dropped with a warning. */
static void test_address_junk_after_addr_spec(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "<stable@vger.kernel.org # 3.11>");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], NULL, "stable@vger.kernel.org");
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
	PARSE(t, "stable@vger.kernel.org # 3.4+, <stable@vger.kernel.org> [3.13], x@y");
	assert_int_equal(t->l.n, 3);
	assert_mbox(&t->l.v[0], NULL, "stable@vger.kernel.org");
	assert_mbox(&t->l.v[1], NULL, "stable@vger.kernel.org");
	assert_mbox(&t->l.v[2], NULL, "x@y");
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
	/* white space around the dots and the @ is still one address */
	PARSE(t, "Name <john . doe @ example . org>");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], "Name", "john.doe@example.org");
}

/* Words in brackets with no @ are no address: none is made up. */
static void test_address_words_in_brackets(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "<no To-header on input>");
	assert_int_equal(t->l.n, 0);
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
	PARSE(t, "Someone <no address given>, b@c");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], NULL, "b@c");
	/* one word is a local mailbox, as without brackets */
	PARSE(t, "<root>");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], NULL, "root");
}

static void test_address_domain_literal(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "root@[192.168.0.1]");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], NULL, "root@[192.168.0.1]");
}

static void test_address_unencoded_8bit_name(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "Ren\xe9 <r@x.fr>, J\xc3\xb6rg <j@x.de>");
	assert_int_equal(t->l.n, 2);
	assert_mbox(&t->l.v[0], "Ren\xc3\xa9", "r@x.fr");
	assert_mbox(&t->l.v[1], "J\xc3\xb6rg", "j@x.de");
	assert_int_equal(t->warnings, W(UNENCODED_8BIT_HEADER));
}

static void test_address_appends_to_list(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "a@b");
	assert_int_equal(address_parse_list(&t->ctx, (struct str){ "c@d, e@f", 8 }, &t->l, NULL), 0);
	assert_int_equal(t->l.n, 3);
	assert_mbox(&t->l.v[0], NULL, "a@b");
	assert_mbox(&t->l.v[2], NULL, "e@f");
}

static void test_address_empty(void **state)
{
	struct tcase *t = *state;
	parse_n(t, "", 0);
	assert_int_equal(t->l.n, 0);
	PARSE(t, "  (just a comment) ");
	assert_int_equal(t->l.n, 0);
	assert_int_equal(t->warnings, 0);
}

static void test_address_unterminated_quote_and_comment(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "\"unterminated <a@b>");
	assert_int_equal(t->l.n, 0);
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
	PARSE(t, "a@b (unterminated");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], "unterminated", "a@b");
}

static void test_address_colons_linear(void **state)
{
	struct tcase *t = *state;
	size_t n = 1 << 20;
	char *in = malloc(n);
	memset(in, ':', n);
	parse_n(t, in, n);
	assert_int_equal(t->l.n, 0);
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
	memset(in, '<', n);
	parse_n(t, in, n);
	assert_int_equal(t->l.n, 0);
	memset(in, ')', n);
	parse_n(t, in, n);
	assert_int_equal(t->l.n, 0);
	memset(in, 'a', n);           /* one huge local-only word */
	parse_n(t, in, n);
	assert_int_equal(t->l.n, 1);
	assert_int_equal(t->l.v[0].address.n, n);
	free(in);
}

static void test_address_100000_entries(void **state)
{
	struct tcase *t = *state;
	size_t k = 100000;
	const char *e = "N <a@b>, ";
	size_t el = strlen(e);
	char *in = malloc(k * el);
	for (size_t i = 0; i < k; i++)
		memcpy(in + i * el, e, el);
	parse_n(t, in, k * el);
	assert_int_equal(t->l.n, k);
	assert_mbox(&t->l.v[k - 1], "N", "a@b");
	free(in);
}

/* The shortcuts for spans with no white space, quotes or comments (an
 * angle-addr, a bare addr-spec, a phrase of plain words) and the forms
 * next to them that must take the token loop. */
static void test_address_plain_span_shortcuts(void **state)
{
	struct tcase *t = *state;
	static const char in[] = "Ann <ann@x.org>, b.c@y.org (Bee), <>, <d@z>";
	PARSE(t, in);
	assert_int_equal(t->l.n, 3);
	assert_mbox(&t->l.v[0], "Ann", "ann@x.org");
	assert_ptr_equal(t->l.v[0].address.p, in + 5);    /* views */
	assert_mbox(&t->l.v[1], "Bee", "b.c@y.org");
	assert_ptr_equal(t->l.v[1].address.p, in + 17);
	assert_mbox(&t->l.v[2], NULL, "d@z");
	assert_int_equal(t->warnings, 0);

	/* White space, a comment or a route inside the brackets. */
	PARSE(t, "< e@f >, <g (c)@h>, <@r1,@r2:i@j>, <k @ l>");
	assert_int_equal(t->l.n, 4);
	assert_mbox(&t->l.v[0], NULL, "e@f");
	assert_mbox(&t->l.v[1], NULL, "g@h");
	assert_mbox(&t->l.v[2], NULL, "i@j");
	assert_mbox(&t->l.v[3], NULL, "k@l");
	assert_int_equal(t->warnings, 0);

	/* Unclosed: ends at the separator, with a warning. */
	PARSE(t, "<m@n, o@p");
	assert_int_equal(t->l.n, 2);
	assert_mbox(&t->l.v[0], NULL, "m@n");
	assert_mbox(&t->l.v[1], NULL, "o@p");
	assert_int_equal(t->warnings, W(BAD_ADDRESS));
	PARSE(t, "<q@r");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], NULL, "q@r");
	assert_int_equal(t->warnings, W(BAD_ADDRESS));

	/* A bare address with a stray `>` in it is not the shortcut's. */
	PARSE(t, "s@t>u");
	assert_int_equal(t->l.n, 1);
	assert_mbox(&t->l.v[0], NULL, "s@t>u");

	/* Plain phrases: runs of white space and stray `)` are one space,
	 * specials keep their spacing. */
	PARSE(t, "John \t Q.\r\n Public <j@x>, Ann ) Lee <a@x>, a @ b <c@x>, x.y<z@x>");
	assert_int_equal(t->l.n, 4);
	assert_mbox(&t->l.v[0], "John Q. Public", "j@x");
	assert_mbox(&t->l.v[1], "Ann Lee", "a@x");
	assert_mbox(&t->l.v[2], "a @ b", "c@x");
	assert_mbox(&t->l.v[3], "x.y", "z@x");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_address_bare),
		T(test_address_name_angle),
		T(test_address_quoted_name_with_comma),
		T(test_address_encoded_name),
		T(test_address_comment_as_name),
		T(test_address_comment_dropped_when_named),
		T(test_address_group),
		T(test_address_undisclosed_recipients),
		T(test_address_unlisted_recipients_with_comment),
		T(test_address_group_without_semicolon),
		T(test_address_quoted_local_part),
		T(test_address_obsolete_route_dropped),
		T(test_address_missing_closing_bracket),
		T(test_address_name_then_bare_address),
		T(test_address_whitespace_inside_address),
		T(test_address_stray_separators),
		T(test_address_name_without_address_is_bad),
		T(test_address_local_only),
		T(test_address_repairs_warn),
		T(test_address_null_path),
		T(test_address_date_after_address),
		T(test_address_junk_after_addr_spec),
		T(test_address_words_in_brackets),
		T(test_address_domain_literal),
		T(test_address_unencoded_8bit_name),
		T(test_address_appends_to_list),
		T(test_address_empty),
		T(test_address_unterminated_quote_and_comment),
		T(test_address_colons_linear),
		T(test_address_100000_entries),
		T(test_address_plain_span_shortcuts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
