/* SPDX-License-Identifier: MIT */
/* Unit tests for io/maildir: the flags of a cur/ name, its unique base, and
 * the three subdirectory names.
 *
 * Flags follow https://cr.yp.to/proto/maildir.html ("uniq:2,FLAGS"); like
 * mutt and Dovecot, the info is the last ":2," of the name.  '!' and ';' are
 * accepted as the separator too (Windows-hosted clients, mbsync's
 * InfoDelimiter). */
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
}

/* mbsync's `InfoDelimiter ;` (file systems where ':' is not allowed): the
 * same flags, the same unique name, so a flag change is a rename. */
static void test_maildir_flags_semicolon(void **state)
{
	(void)state;
	check_flags("1700000000.M1P2.host;2,RS", "RS");
	check_base("1700000000.M1P2.host;2,RS", "1700000000.M1P2.host");
	/* a semicolon that does not start an info stays in the name */
	check_flags("a;b.host", NULL);
	check_base("a;b.host;2,S", "a;b.host");
	assert_int_equal(maildir_id("/m", 2, "1.2.h;2,S", 9), maildir_id("/m", 2, "1.2.h:2,", 8));
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

static void check_unique(const char *name, const char *want)
{
	size_t n = maildir_unique_len(name, strlen(name));
	assert_int_equal(n, strlen(want));
	assert_memory_equal(name, want, n);
}

static void test_maildir_unique(void **state)
{
	(void)state;
	check_unique("1.2.h:2,S", "1.2.h");
	check_unique("1.2.h:1,x", "1.2.h");        /* the experimental info */
	check_unique("1.2.h:1,x:2,S", "1.2.h");
	check_unique("1.2.h", "1.2.h");
	check_unique("1.2.h:2,a:1,b", "1.2.h");    /* a "1," inside the info */
	check_unique("1.2.h;1,x!1,y", "1.2.h;1,x"); /* the last one */
	check_unique("1:1,", "1");
	check_unique(":2,", "");
	check_unique("1,2,", "1,2,");               /* no separator */
}

static bool is_sep(char c)
{
	return c == ':' || c == '!' || c == ';';
}

/* The definition, as two searches: the last "<sep>2," in the name, then
 * the last "<sep>1," wholly before it. */
static size_t unique_by_definition(const char *name, size_t len)
{
	size_t base = len;
	for (size_t i = len; i >= 3; i--)
		if (is_sep(name[i - 3]) && name[i - 2] == '2' && name[i - 1] == ',') {
			base = i - 3;
			break;
		}
	for (size_t i = base; i >= 3; i--)
		if (is_sep(name[i - 3]) && name[i - 2] == '1' && name[i - 1] == ',')
			return i - 3;
	return base;
}

/* Every name of up to 7 bytes over the bytes that matter (and one that
 * does not) against the definition: maildir_unique_len finds both in one
 * pass. */
static void test_maildir_unique_every_short_name(void **state)
{
	(void)state;
	static const char bytes[] = ":!;12,a";
	enum { B = sizeof(bytes) - 1, MAX = 7 };
	char name[MAX + 1];
	size_t checked = 0;
	for (size_t len = 0; len <= MAX; len++) {
		size_t total = 1;
		for (size_t i = 0; i < len; i++)
			total *= B;
		for (size_t k = 0; k < total; k++) {
			size_t v = k;
			for (size_t i = 0; i < len; i++, v /= B)
				name[i] = bytes[v % B];
			name[len] = '\0';
			size_t got = maildir_unique_len(name, len), want = unique_by_definition(name, len);
			if (got != want)
				fail_msg("\"%s\": %zu, by definition %zu", name, got, want);
			checked++;
		}
	}
	assert_int_equal(checked, 960800);   /* 7^0 + ... + 7^7 */
}

static void test_maildir_software_files(void **state)
{
	(void)state;
	const char *const yes[] = { ".notmuch", ".uidvalidity", "maildirfolder", "dovecot-uidlist",
	                            "dovecot.index.log", ".mbsyncstate", ".mbsyncstate.journal",
	                            "courierimapuiddb", NULL };
	const char *const no[] = { "", "d", "c", ".", "m", ".notmuchx", ".notmuc", "maildirfolder2",
	                           "Dovecot", "dovecoT", "xdovecot", ".mbsyncstat", "courierima",
	                           "1700000000.M1P2.host:2,S", NULL };
	for (size_t i = 0; yes[i]; i++)
		if (!maildir_is_software_file(yes[i]))
			fail_msg("\"%s\" not taken for mail software's", yes[i]);
	for (size_t i = 0; no[i]; i++)
		if (maildir_is_software_file(no[i]))
			fail_msg("\"%s\" taken for mail software's", no[i]);
}

static void test_maildir_flag_tag(void **state)
{
	(void)state;
	assert_string_equal(maildir_flag_tag('S'), "seen");
	assert_string_equal(maildir_flag_tag('R'), "replied");
	assert_string_equal(maildir_flag_tag('F'), "flagged");
	assert_string_equal(maildir_flag_tag('D'), "draft");
	assert_string_equal(maildir_flag_tag('T'), "trashed");
	assert_string_equal(maildir_flag_tag('P'), "passed");
	assert_null(maildir_flag_tag('a'));        /* Dovecot keyword letters */
	assert_null(maildir_flag_tag('X'));
}

static void check_split(const char *path, bool want, size_t want_dir, size_t want_base)
{
	size_t dir = 99, base = 99;
	assert_int_equal(maildir_split(path, strlen(path), &dir, &base), want);
	if (want) {
		assert_int_equal(dir, want_dir);
		assert_int_equal(base, want_base);
	}
}

static void test_maildir_split(void **state)
{
	(void)state;
	check_split("cur/1.2.h:2,S", true, 0, 4);
	check_split("new/1.2.h", true, 0, 4);
	check_split(".Sent/cur/1.2.h:2,S", true, 5, 10);
	check_split("a/b/new/x", true, 3, 8);
	check_split("tmp/x", false, 0, 0);
	check_split("xcur/x", false, 0, 0);
	check_split("cur/", false, 0, 0);
	check_split("x", false, 0, 0);
	check_split("", false, 0, 0);
}

/* Folder-free and flag-free: a move between folders keeps the id; another
 * base (another Maildir) or another unique name does not. */
static void test_maildir_id(void **state)
{
	(void)state;
	uint64_t a = maildir_id("/m", 2, "1.2.h:2,S", 9);
	assert_int_equal(a, maildir_id("/m", 2, "1.2.h", 5));
	assert_int_equal(a, maildir_id("/m", 2, "1.2.h:2,RS", 10));
	assert_true(a != maildir_id("/n", 2, "1.2.h:2,S", 9));
	assert_true(a != maildir_id("/m", 2, "1.3.h:2,S", 9));
	/* the base and the name are apart: "/m" + "x1" is not "/mx" + "1" */
	assert_true(maildir_id("/m", 2, "x1", 2) != maildir_id("/mx", 3, "1", 1));
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
		cmocka_unit_test(test_maildir_flags_semicolon),
		cmocka_unit_test(test_maildir_unique),
		cmocka_unit_test(test_maildir_unique_every_short_name),
		cmocka_unit_test(test_maildir_software_files),
		cmocka_unit_test(test_maildir_flag_tag),
		cmocka_unit_test(test_maildir_split),
		cmocka_unit_test(test_maildir_id),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
