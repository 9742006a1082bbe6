/* Unit tests for io/maildir: the flags of a cur/ name, its unique base, and
 * the three subdirectory names.
 *
 * Flags follow https://cr.yp.to/proto/maildir.html ("uniq:2,FLAGS"); like
 * mutt and Dovecot, the info is the last ":2," of the name.  '!' is accepted
 * as the separator too (Windows-hosted clients); ';' is not. */
#include "io/maildir.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

/* The flags of `name` must be `want` (NULL: no info at all). */
static void check_flags(const char *name, const char *want)
{
	size_t off = 12345, n = 12345;
	bool got = maildir_flags(name, strlen(name), &off, &n);
	if (!want) {
		assert_false(got);
		return;
	}
	assert_true(got);
	assert_int_equal(n, strlen(want));
	assert_true(off + n <= strlen(name));
	assert_memory_equal(name + off, want, n);
}

static void check_base(const char *name, const char *want)
{
	size_t n = maildir_base_len(name, strlen(name));
	assert_int_equal(n, strlen(want));
	assert_memory_equal(name, want, n);
}

static void test_maildir_flags_colon(void **state)
{
	(void)state;
	check_flags("1700000000.M1P2.host:2,FRS", "FRS");
	check_flags("1700000000.M1P2.host,S=1234:2,S", "S");
	check_flags("x:2,DFPRST", "DFPRST");
}

static void test_maildir_flags_bang(void **state)
{
	(void)state;
	check_flags("1700000000.M1P2.host!2,S", "S");
	/* ';' is not a separator: a name merely containing one has no info */
	check_flags("1700000000.M1P2.host;2,S", NULL);
}

static void test_maildir_flags_none(void **state)
{
	(void)state;
	check_flags("1700000000.M1P2.host", NULL);
	check_flags("", NULL);
	check_flags("a", NULL);
	check_flags(":2", NULL);
	check_flags("x:1,S", NULL);        /* experimental info "1," is not flags */
	check_flags("x:2S", NULL);
}

static void test_maildir_flags_empty(void **state)
{
	(void)state;
	check_flags("1700000000.M1P2.host:2,", "");
	check_flags(":2,", "");
	size_t off, n;
	const char *name = "abc:2,";
	assert_true(maildir_flags(name, strlen(name), &off, &n));
	assert_int_equal(off, strlen(name));
	assert_int_equal(n, 0);
}

static void test_maildir_flags_info_twice(void **state)
{
	(void)state;
	/* The last ":2," is the info (mutt's and Dovecot's strrchr). */
	check_flags("123.host:2,S:2,FR", "FR");
	check_base("123.host:2,S:2,FR", "123.host:2,S");
	check_flags("123.host:2,S!2,T", "T");
}

static void test_maildir_flags_length_bounded(void **state)
{
	(void)state;
	/* Only `len` bytes are looked at: the tail past it is not the name. */
	const char *name = "abc:2,S";
	size_t off, n;
	assert_false(maildir_flags(name, 3, &off, &n));
	assert_true(maildir_flags(name, 6, &off, &n));
	assert_int_equal(off, 6);
	assert_int_equal(n, 0);
	assert_int_equal(maildir_base_len(name, 3), 3);
}

static void test_maildir_base(void **state)
{
	(void)state;
	check_base("1700000000.M1P2.host:2,FRS", "1700000000.M1P2.host");
	/* size hints are part of the unique name */
	check_base("1700000000.M1P2.host,S=1234:2,S", "1700000000.M1P2.host,S=1234");
	check_base("1700000000.M1P2.host,S=1234,W=1300", "1700000000.M1P2.host,S=1234,W=1300");
	check_base("1700000000.M1P2.host!2,S", "1700000000.M1P2.host");
	check_base("1700000000.M1P2.host", "1700000000.M1P2.host");
	check_base("x:2,", "x");
	check_base("", "");
}

static void test_maildir_is_subdir(void **state)
{
	(void)state;
	assert_true(maildir_is_subdir("cur"));
	assert_true(maildir_is_subdir("new"));
	assert_true(maildir_is_subdir("tmp"));
	assert_false(maildir_is_subdir("Cur"));
	assert_false(maildir_is_subdir("cur/"));
	assert_false(maildir_is_subdir("curr"));
	assert_false(maildir_is_subdir("cu"));
	assert_false(maildir_is_subdir(".cur"));
	assert_false(maildir_is_subdir(""));
	assert_false(maildir_is_subdir(".Sent"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maildir_flags_colon),
		cmocka_unit_test(test_maildir_flags_bang),
		cmocka_unit_test(test_maildir_flags_none),
		cmocka_unit_test(test_maildir_flags_empty),
		cmocka_unit_test(test_maildir_flags_info_twice),
		cmocka_unit_test(test_maildir_flags_length_bounded),
		cmocka_unit_test(test_maildir_base),
		cmocka_unit_test(test_maildir_is_subdir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
