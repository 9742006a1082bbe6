/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/param.c: Content-Type / Content-Disposition values,
 * RFC 2231 continuations, charsets and percent-decoding, lenient RFC 2047. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mail/charset.h"
#include "mail/mail_ctx.h"
#include "helpers.h"
#include "mail/param.h"

#define W(x) (UINT64_C(1) << MAIL_W_##x)

struct tcase {
	struct mail_ctx ctx;
	struct mime_type m;
	uint64_t warnings;
};

T_CTX_CASE(struct tcase)

static void parse_n(struct tcase *t, const char *in, size_t n)
{
	t->warnings = 0;
	assert_int_equal(param_parse(&t->ctx, (struct str){ in, n }, &t->m, &t->warnings), 0);
}

#define PARSE(t, lit) parse_n((t), (lit), sizeof(lit) - 1)

static void assert_param(struct tcase *t, const char *name, const char *value)
{
	t_assert_str(param_get(&t->m, name), value);
}

static void test_param_type_lowercased(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "Text/PLAIN; CharSet=\"us-ascii\"");
	t_assert_str(t->m.type, "text");
	t_assert_str(t->m.subtype, "plain");
	assert_int_equal(t->m.n_params, 1);
	t_assert_str(t->m.params[0].name, "charset");
	assert_param(t, "charset", "us-ascii");
	assert_int_equal(t->warnings, 0);
}

static void test_param_disposition(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename=report.pdf; size=1234");
	t_assert_str(t->m.type, "attachment");
	t_assert_str(t->m.subtype, "");
	assert_param(t, "filename", "report.pdf");
	assert_param(t, "size", "1234");
	assert_param(t, "creation-date", NULL);
}

static void test_param_quoted_escapes(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename=\"a \\\"b\\\" \\\\ c;d.txt\"");
	assert_param(t, "filename", "a \"b\" \\ c;d.txt");
}

static void test_param_windows_path_backslashes_kept(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename=\"C:\\Temp\\x.doc\"");
	assert_param(t, "filename", "C:\\Temp\\x.doc");
}

static void test_param_rfc2231_continuations(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "message/external-body; access-type=URL;\r\n URL*0=\"ftp://\";\r\n URL*1=\"cs.utk.edu/pub/moore/bulk-mailer/bulk-mailer.tar\"");
	assert_param(t, "url", "ftp://cs.utk.edu/pub/moore/bulk-mailer/bulk-mailer.tar");
	assert_param(t, "access-type", "URL");
	assert_int_equal(t->m.n_params, 2);
}

static void test_param_rfc2231_out_of_order(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename*1=\"two\"; filename*0=\"one\"; filename*2=three");
	assert_param(t, "filename", "onetwothree");
}

static void test_param_rfc2231_charset_percent(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename*=utf-8''%E2%82%AC%20rates.txt");
	assert_param(t, "filename", "\xe2\x82\xac rates.txt");
	PARSE(t, "attachment; filename*=iso-8859-1'en'caf%E9");
	assert_param(t, "filename", "caf\xc3\xa9");
	assert_int_equal(t->warnings, 0);
}

static void test_param_rfc2231_mixed_sections(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename*0*=utf-8''%C3%A9t%C3; filename*1*=%A9; filename*2=\".txt\"");
	/* The split é between sections 0 and 1 survives: bytes are joined
	 * before charset conversion. */
	assert_param(t, "filename", "\xc3\xa9t\xc3\xa9.txt");
}

static void test_param_rfc2231_preferred_over_plain(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename=\"fallback.txt\"; filename*=UTF-8''real.txt");
	assert_int_equal(t->m.n_params, 1);
	assert_param(t, "filename", "real.txt");
}

static void test_param_rfc2231_invalid_percent_kept(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename*=utf-8''100%25%ZZ%4");
	assert_param(t, "filename", "100%%ZZ%4");
}

static void test_param_rfc2231_quoted_extended(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename*=\"utf-8''a%20b\"");
	assert_param(t, "filename", "a b");
}

static void test_param_rfc2231_no_charset(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename*=''x%41");
	assert_param(t, "filename", "xA");
	PARSE(t, "attachment; filename*=noquotes%41");
	assert_param(t, "filename", "noquotesA");
}

static void test_param_rfc2231_unknown_charset(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename*=x-bogus''%E9");
	assert_param(t, "filename", "\xc3\xa9");
	assert_int_equal(t->warnings, W(UNKNOWN_CHARSET));
}

static void test_param_rfc2047_in_quoted_value(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "application/pdf; name=\"=?UTF-8?B?w6k=?=.pdf\"");
	assert_param(t, "name", "\xc3\xa9.pdf");
	assert_int_equal(t->warnings, 0);
}

static void test_param_raw_8bit_value(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename=\"caf\xe9.txt\"");
	assert_param(t, "filename", "caf\xc3\xa9.txt");
	assert_int_equal(t->warnings, W(UNENCODED_8BIT_HEADER));
}

static void test_param_missing_equals_is_bad(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "text/plain; format; charset=utf-8");
	assert_int_equal(t->m.n_params, 1);
	assert_param(t, "charset", "utf-8");
	assert_int_equal(t->warnings, W(BAD_PARAMETER));
}

static void test_param_unterminated_quote(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename=\"open.txt");
	assert_param(t, "filename", "open.txt");
	assert_int_equal(t->warnings, W(BAD_PARAMETER));
}

static void test_param_comment_after_token(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "text/plain (body) ; charset=us-ascii (Plain text)");
	t_assert_str(t->m.type, "text");
	t_assert_str(t->m.subtype, "plain");
	assert_param(t, "charset", "us-ascii");
}

static void test_param_unquoted_value_with_spaces(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename=my file.pdf ; x=1");
	assert_param(t, "filename", "my file.pdf");
	assert_param(t, "x", "1");
}

static void test_param_missing_type(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "; charset=utf-8");
	assert_null(t->m.type.p);
	assert_param(t, "charset", "utf-8");
	PARSE(t, "text/; charset=utf-8");
	assert_null(t->m.type.p);
	parse_n(t, "", 0);
	assert_null(t->m.type.p);
	assert_int_equal(t->m.n_params, 0);
}

static void test_param_trailing_semicolons_harmless(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "text/html;; charset=utf-8;");
	assert_int_equal(t->m.n_params, 1);
	assert_int_equal(t->warnings, 0);
}

static void test_param_duplicate_first_wins(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "text/plain; charset=iso-8859-1; CHARSET=utf-8");
	assert_int_equal(t->m.n_params, 1);
	assert_param(t, "charset", "iso-8859-1");
}

static void test_param_spaces_around_slash_and_equals(void **state)
{
	struct tcase *t = *state;
	PARSE(t, " multipart / mixed ; boundary = \"b1\"");
	t_assert_str(t->m.type, "multipart");
	t_assert_str(t->m.subtype, "mixed");
	assert_param(t, "boundary", "b1");
}

static void test_param_too_many(void **state)
{
	struct tcase *t = *state;
	size_t k = 300;
	char *in = malloc(k * 16 + 16), *q = in;
	q += sprintf(q, "text/plain");
	for (size_t i = 0; i < k; i++)
		q += sprintf(q, "; p%zu=v", i);
	parse_n(t, in, (size_t)(q - in));
	assert_int_equal(t->m.n_params, 256);
	assert_param(t, "p255", "v");
	assert_param(t, "p256", NULL);
	assert_int_equal(t->warnings, W(BAD_PARAMETER));
	free(in);
}

static void test_param_huge_value_linear(void **state)
{
	struct tcase *t = *state;
	size_t n = 10 << 20;
	char *in = malloc(n);
	memcpy(in, "attachment; filename*0*=utf-8''", 31);
	for (size_t i = 31; i + 3 <= n; i += 3)
		memcpy(in + i, "%41", 3);
	size_t len = 31 + (n - 31) / 3 * 3;
	parse_n(t, in, len);
	struct str v = param_get(&t->m, "filename");
	assert_int_equal(v.n, (len - 31) / 3);
	assert_int_equal(v.p[0], 'A');
	free(in);
}

/* RFC 2231 7: "%" must be followed by two hex digits.  A bad escape is
 * kept literally, with bad-parameter. */
static void test_param_rfc2231_bad_percent_warns(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "attachment; filename*=UTF-8''100%zz%41.txt");
	assert_param(t, "filename", "100%zzA.txt");
	assert_int_equal(t->warnings, W(BAD_PARAMETER));
	PARSE(t, "attachment; filename*=UTF-8''50%");
	assert_param(t, "filename", "50%");
	assert_int_equal(t->warnings, W(BAD_PARAMETER));
	PARSE(t, "attachment; filename*=UTF-8''%41%42");
	assert_param(t, "filename", "AB");
	assert_int_equal(t->warnings, 0);
	/* Not extended: a percent is an ordinary byte. */
	PARSE(t, "attachment; filename=\"100%zz\"");
	assert_param(t, "filename", "100%zz");
	assert_int_equal(t->warnings, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_param_rfc2231_bad_percent_warns),
		T(test_param_type_lowercased),
		T(test_param_disposition),
		T(test_param_quoted_escapes),
		T(test_param_windows_path_backslashes_kept),
		T(test_param_rfc2231_continuations),
		T(test_param_rfc2231_out_of_order),
		T(test_param_rfc2231_charset_percent),
		T(test_param_rfc2231_mixed_sections),
		T(test_param_rfc2231_preferred_over_plain),
		T(test_param_rfc2231_invalid_percent_kept),
		T(test_param_rfc2231_quoted_extended),
		T(test_param_rfc2231_no_charset),
		T(test_param_rfc2231_unknown_charset),
		T(test_param_rfc2047_in_quoted_value),
		T(test_param_raw_8bit_value),
		T(test_param_missing_equals_is_bad),
		T(test_param_unterminated_quote),
		T(test_param_comment_after_token),
		T(test_param_unquoted_value_with_spaces),
		T(test_param_missing_type),
		T(test_param_trailing_semicolons_harmless),
		T(test_param_duplicate_first_wins),
		T(test_param_spaces_around_slash_and_equals),
		T(test_param_too_many),
		T(test_param_huge_value_linear),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
