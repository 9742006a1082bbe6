/* SPDX-License-Identifier: MIT */
/* Unit tests for index/json_read.c and index/addresses.c: what they read
 * equals SQLite's reading of the same JSON (json_extract, json_each), and
 * what they leave to SQLite is only what json_read.h says: \u0000, a
 * surrogate escape, a control character, a bad escape, space between
 * tokens, a number that is not a small integer. */
#include "core/dynbuf.h"
#include "index/addresses.h"
#include "index/json_read.h"

#include <ctype.h>
#include <setjmp.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

static sqlite3 *db;

static int setup(void **state)
{
	(void)state;
	return sqlite3_open(":memory:", &db) == SQLITE_OK ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	sqlite3_close(db);
	return 0;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Whether a JSON string literal holds what json_read leaves to SQLite. */
static bool left_to_sqlite(const char *s, size_t n)
{
	for (size_t i = 1; i + 1 < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20)
			return true;
		if (c != '\\')
			continue;
		char e = s[++i];
		if (e == 'u') {
			if (i + 4 >= n)
				return true;
			for (int k = 1; k <= 4; k++)
				if (!isxdigit((unsigned char)s[i + k]))
					return true;
			unsigned u = (unsigned)strtoul((char[]){ s[i + 1], s[i + 2], s[i + 3], s[i + 4], 0 }, NULL, 16);
			if (u == 0 || (u >= 0xd800 && u <= 0xdfff))
				return true;
			i += 4;
		} else if (!strchr("\"\\/bfnrt", e)) {
			return true;
		}
	}
	return false;
}

/* Strings of escapes of every kind, raw UTF-8 and bytes that are not, and
 * a few malformed ones: each read by json_read equals json_extract's
 * value, and each it leaves to SQLite holds what it should. */
static void test_strings_as_sqlite(void **state)
{
	(void)state;
	static const char *const pieces[] = {
		"a", "Z", " ", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\u0041",
		"\\u00e9", "\\u00E9", "\\u4e2d", "\\uFFFF", "\\u0001", "\\u001f", "\\u0000", "\\ud83d\\ude00",
		"\\ud800", "\\udc00x", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\xff", "\x80", "\x01",
		"\\x", "\\u12", "\\u00zz",
	};
	const size_t kinds = sizeof(pieces) / sizeof(pieces[0]);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT json_extract(?1, '$')", -1, &st, NULL), SQLITE_OK);
	struct dynbuf out;
	dynbuf_init(&out, 0);
	uint64_t seed = 7;
	int read = 0, left = 0;
	for (int i = 0; i < 20000; i++) {
		char text[512];
		size_t n = 0;
		text[n++] = '"';
		for (size_t k = next(&seed) % 12; k > 0; k--) {
			const char *p = pieces[next(&seed) % kinds];
			memcpy(text + n, p, strlen(p));
			n += strlen(p);
		}
		text[n++] = '"';
		struct json_read j = { text, text + n };
		dynbuf_reset(&out);
		int r = json_read_string(&j, &out);
		if (r == JSON_READ_OTHER) {
			assert_true(left_to_sqlite(text, n));
			left++;
			continue;
		}
		assert_int_equal(r, 0);
		assert_ptr_equal(j.p, text + n);
		assert_false(left_to_sqlite(text, n));
		sqlite3_bind_text(st, 1, text, (int)n, SQLITE_STATIC);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		assert_int_equal(sqlite3_column_type(st, 0), SQLITE_TEXT);
		assert_int_equal((size_t)sqlite3_column_bytes(st, 0), out.len);
		if (out.len)
			assert_memory_equal(sqlite3_column_blob(st, 0), out.p, out.len);
		sqlite3_reset(st);
		read++;
	}
	/* both sides seen often */
	assert_true(read > 1000 && left > 1000);
	sqlite3_finalize(st);
	dynbuf_release(&out);
}

/* Integers as SQLite reads them; what is not a small integer is left. */
static void test_integers(void **state)
{
	(void)state;
	static const struct { const char *text; int ok; int64_t v; } cases[] = {
		{ "0", 0, 0 }, { "7", 0, 7 }, { "-12", 0, -12 }, { "123456789012345678", 0, 123456789012345678 },
		{ "1234567890123456789", JSON_READ_OTHER, 0 }, { "01", JSON_READ_OTHER, 0 },
		{ "1.5", JSON_READ_OTHER, 0 }, { "1e3", JSON_READ_OTHER, 0 }, { "-", JSON_READ_OTHER, 0 },
		{ "x", JSON_READ_OTHER, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct json_read j = { cases[i].text, cases[i].text + strlen(cases[i].text) };
		int64_t v = -1;
		assert_int_equal(json_read_integer(&j, &v), cases[i].ok);
		if (cases[i].ok == 0)
			assert_true(v == cases[i].v);
	}
}

/* The rows of the address lists are those SQLite's json_each and ->>
 * give, in the table's order; shapes the emitter never writes are left. */
static void test_address_rows(void **state)
{
	(void)state;
	struct addr_rows a;
	addr_rows_init(&a);
	struct str lists[ADDR_ROLES] = { STR_NULL, STR_NULL, STR_NULL, STR_NULL, STR_NULL, STR_NULL };
	static const char from[] = "[{\"name\":\"Ann \\\"A\\\" \\u00e9\",\"address\":\"ann@x.org\"}]";
	static const char to[] = "[{\"group\":\"Friends\",\"members\":[{\"name\":null,\"address\":\"b@x\"},"
	                         "{\"name\":\"C\",\"address\":\"c@x\",\"other\":[1,{\"k\":true}]}]},"
	                         "{\"name\":null,\"address\":\"d@x\"},{\"group\":\"E\",\"members\":[]},"
	                         "{\"group\":null,\"name\":\"F\",\"address\":null},{\"group\":\"G\"}]";
	lists[0] = (struct str){ from, sizeof(from) - 1 };
	lists[3] = (struct str){ to, sizeof(to) - 1 };
	assert_int_equal(addr_rows_read(&a, lists), 0);
	size_t n;
	const struct addr_row *r = addr_rows_get(&a, &n);
	char got[1024] = "";
	for (size_t i = 0; i < n; i++) {
		char line[160];
#define FIELD(off, len) ((off) < 0 ? 4 : (int)(len)), ((off) < 0 ? "NULL" : a.text.p + (off))
		snprintf(line, sizeof(line), "%s %lld %lld %.*s|%.*s|%.*s;", addr_role_names[r[i].role],
		         (long long)r[i].position, (long long)r[i].member, FIELD(r[i].name, r[i].name_len),
		         FIELD(r[i].address, r[i].address_len), FIELD(r[i].group, r[i].group_len));
#undef FIELD
		strcat(got, line);
	}
	assert_string_equal(got, "from 0 -1 Ann \"A\" \xc3\xa9|ann@x.org|NULL;"
	                         "to 1 -1 NULL|d@x|NULL;to 3 -1 F|NULL|NULL;"
	                         "to 0 0 NULL|b@x|Friends;to 0 1 C|c@x|Friends;"
	                         "to 2 -1 NULL|NULL|E;");
	/* shapes left to SQLite (json_each over null or a string gives one
	 * row, of NULLs) */
	static const char *const odd[] = {
		"null", "\"x\"",
		"[\"x\"]", "[{\"name\":1}]", "[{\"name\":\"a\\u0000b\"}]", "[{\"name\":\"a\",\"name\":\"b\"}]",
		"[{\"group\":\"g\",\"members\":null}]", "[{\"group\":\"g\",\"members\":[\"m\"]}]", "{}",
		"[ {\"name\":\"a\"}]",
		"[{\"na\\u006de\":\"a\"}]",
	};
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		lists[3] = (struct str){ odd[i], strlen(odd[i]) };
		assert_int_equal(addr_rows_read(&a, lists), JSON_READ_OTHER);
	}
	addr_rows_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strings_as_sqlite),
		cmocka_unit_test(test_integers),
		cmocka_unit_test(test_address_rows),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
