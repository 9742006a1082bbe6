/* SPDX-License-Identifier: MIT */
/* Unit tests for emit/json: escaping, UTF-8 repair, lossless byte strings,
 * base64, integers and timestamps, each against the exact expected bytes.
 *
 * The UTF-8 cases follow Unicode 15 §3.9 (Table 3-7 and "U+FFFD substitution
 * of maximal subparts"); Python's bytes.decode('utf-8', 'replace') gives the
 * same answers and was used to check them. */
#include "core/dynbuf.h"
#include "core/utf8.h"
#include "emit/json.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define FFFD "\xEF\xBF\xBD"

/* json_put_str of n bytes must give exactly `want` (NUL-terminated). */
static void check_str(const char *in, size_t n, const char *want)
{
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(json_put_str(&b, in, n), 0);
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.p, want, b.len);
	dynbuf_release(&b);
}

#define CHECK(lit, want) check_str((lit), sizeof(lit) - 1, (want))

static void test_json_plain_ascii(void **state)
{
	(void)state;
	CHECK("", "\"\"");
	CHECK("hello", "\"hello\"");
	/* Long enough for the word-at-a-time scan, special at each offset. */
	CHECK("abcdefghijklmnopqrstuvwxyz0123456789",
	      "\"abcdefghijklmnopqrstuvwxyz0123456789\"");
	for (size_t pos = 0; pos < 20; pos++) {
		char in[21], want[32];
		memset(in, 'a', 20);
		in[pos] = '"';
		in[20] = '\0';
		size_t k = 0;
		want[k++] = '"';
		for (size_t i = 0; i < 20; i++) {
			if (i == pos)
				want[k++] = '\\';
			want[k++] = in[i];
		}
		want[k++] = '"';
		want[k] = '\0';
		check_str(in, 20, want);
	}
	/* DEL and every printable pass; '/' is not escaped. */
	CHECK("\x7f/~ ", "\"\x7f/~ \"");
}

static void test_json_quote_backslash(void **state)
{
	(void)state;
	CHECK("a\"b\\c", "\"a\\\"b\\\\c\"");
	CHECK("\"\"\\\\", "\"\\\"\\\"\\\\\\\\\"");
}

static void test_json_every_control_char(void **state)
{
	(void)state;
	static const char *const want[32] = {
		"\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005",
		"\\u0006", "\\u0007", "\\b", "\\t", "\\n", "\\u000b", "\\f", "\\r",
		"\\u000e", "\\u000f", "\\u0010", "\\u0011", "\\u0012", "\\u0013",
		"\\u0014", "\\u0015", "\\u0016", "\\u0017", "\\u0018", "\\u0019",
		"\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
	};
	for (int c = 0; c < 32; c++) {
		char in[3] = { 'x', (char)c, 'y' };
		char w[16] = "\"x";
		strcat(w, want[c]);
		strcat(w, "y\"");
		check_str(in, 3, w);
	}
}

static void test_json_valid_multibyte(void **state)
{
	(void)state;
	/* 2, 3 and 4 bytes, the edges of each range, and U+FEFF / U+2028. */
	CHECK("caf\xC3\xA9", "\"caf\xC3\xA9\"");
	CHECK("\xC2\x80\xDF\xBF", "\"\xC2\x80\xDF\xBF\"");
	CHECK("\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF",
	      "\"\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF\"");
	CHECK("\xF0\x90\x80\x80\xF4\x8F\xBF\xBF", "\"\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\"");
	CHECK("\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x93\xA7",
	      "\"\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xF0\x9F\x93\xA7\"");
	CHECK("\xEF\xBB\xBF\xE2\x80\xA8", "\"\xEF\xBB\xBF\xE2\x80\xA8\"");
}

static void test_json_invalid_utf8_replaced(void **state)
{
	(void)state;
	/* Lone continuation, overlong leads, bytes that never occur. */
	CHECK("a\x80z", "\"a" FFFD "z\"");
	CHECK("\xC0\xAF", "\"" FFFD FFFD "\"");
	CHECK("\xC1\xBF", "\"" FFFD FFFD "\"");
	CHECK("\xF5\x80", "\"" FFFD FFFD "\"");
	CHECK("\xFF\xFE", "\"" FFFD FFFD "\"");
	/* Latin-1 é left undecoded: the lead eats no ASCII. */
	CHECK("caf\xE9!", "\"caf" FFFD "!\"");
	/* Truncated sequences: one U+FFFD per maximal subpart. */
	CHECK("\xE2\x82", "\"" FFFD "\"");
	CHECK("\xE2\x82z", "\"" FFFD "z\"");
	CHECK("\xF0\x9F\x93", "\"" FFFD "\"");
	CHECK("\xF0\x9F\x93\"", "\"" FFFD "\\\"\"");
	/* Overlong 3/4-byte forms, surrogates, above U+10FFFF: the second
	 * byte is out of range, so lead and each continuation are separate. */
	CHECK("\xE0\x80\x80", "\"" FFFD FFFD FFFD "\"");
	CHECK("\xED\xA0\x80", "\"" FFFD FFFD FFFD "\"");
	CHECK("\xF0\x80\x80\x80", "\"" FFFD FFFD FFFD FFFD "\"");
	CHECK("\xF4\x90\x80\x80", "\"" FFFD FFFD FFFD FFFD "\"");
	/* A lead cut short by another lead. */
	CHECK("\xE2\xC3\xA9", "\"" FFFD "\xC3\xA9\"");
	/* NUL inside, then invalid at the very end. */
	CHECK("a\0b\xC3", "\"a\\u0000b" FFFD "\"");
}

static void check_member(const char *key, const char *in, size_t n,
                         const char *want)
{
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(json_put_bytes_member(&b, key, in, n), 0);
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.p, want, b.len);
	dynbuf_release(&b);
}

static void test_json_bytes_member_lossless(void **state)
{
	(void)state;
	check_member("path", "cur/1:2,S", 9, "\"path\":\"cur/1:2,S\"");
	check_member("path", "", 0, "\"path\":\"\"");
	/* Valid UTF-8 needs no _b64, escapes or not. */
	check_member("path", "a\tb/\xC3\xA9", 6, "\"path\":\"a\\tb/\xC3\xA9\"");
	/* Latin-1 name: U+FFFD text plus the exact bytes. */
	check_member("path", "caf\xE9.eml", 8,
	             "\"path\":\"caf" FFFD ".eml\",\"path_b64\":\"Y2Fm6S5lbWw=\"");
	check_member("root", "\xFF", 1,
	             "\"root\":\"" FFFD "\",\"root_b64\":\"/w==\"");
}

static void test_json_base64(void **state)
{
	(void)state;
	static const struct { const char *in, *out; } v[] = {   /* RFC 4648 §10 */
		{ "", "\"\"" }, { "f", "\"Zg==\"" }, { "fo", "\"Zm8=\"" },
		{ "foo", "\"Zm9v\"" }, { "foob", "\"Zm9vYg==\"" },
		{ "fooba", "\"Zm9vYmE=\"" }, { "foobar", "\"Zm9vYmFy\"" },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct dynbuf b;
		dynbuf_init(&b, 0);
		assert_int_equal(json_put_base64(&b, v[i].in, strlen(v[i].in)), 0);
		assert_int_equal(b.len, strlen(v[i].out));
		assert_memory_equal(b.p, v[i].out, b.len);
		dynbuf_release(&b);
	}
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(json_put_base64(&b, "\xFB\xFF\xBF", 3), 0);
	assert_memory_equal(b.p, "\"+/+/\"", 6);
	dynbuf_release(&b);
}

static void test_json_integers(void **state)
{
	(void)state;
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(dynbuf_put_u64(&b, 0), 0);
	assert_int_equal(json_put_lit(&b, " "), 0);
	assert_int_equal(dynbuf_put_u64(&b, 18446744073709551615u), 0);
	const char *want = "0 18446744073709551615";
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.p, want, b.len);
	dynbuf_release(&b);
}

static void check_time(int64_t t, const char *want)
{
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(json_put_iso8601(&b, t), 0);
	assert_int_equal(b.len, strlen(want));
	assert_memory_equal(b.p, want, b.len);
	dynbuf_release(&b);
}

static void test_json_iso8601(void **state)
{
	(void)state;
	check_time(0, "1970-01-01T00:00:00Z");
	check_time(-1, "1969-12-31T23:59:59Z");
	check_time(951782400, "2000-02-29T00:00:00Z");          /* leap day */
	check_time(4102444800, "2100-01-01T00:00:00Z");         /* 2100: no leap day */
	check_time(4107456000, "2100-02-28T00:00:00Z");
	check_time(4107542400, "2100-03-01T00:00:00Z");   /* the day after */
	check_time(1700000000, "2023-11-14T22:13:20Z");
	check_time(2147483647, "2038-01-19T03:14:07Z");
	check_time(253402300799, "9999-12-31T23:59:59Z");
	check_time(253402300800, "+10000-01-01T00:00:00Z");
	check_time(-62135596800, "0001-01-01T00:00:00Z");
	check_time(-62167219200, "0000-01-01T00:00:00Z");
	check_time(-62167219201, "-0001-12-31T23:59:59Z");
	/* The extremes must not overflow (checked under UBSan). */
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(json_put_iso8601(&b, INT64_MAX), 0);
	assert_int_equal(json_put_iso8601(&b, INT64_MIN), 0);
	assert_int_equal(json_put_iso8601(&b, INT64_MIN + 1), 0);
	dynbuf_release(&b);
}

static void test_json_cap_is_enforced(void **state)
{
	(void)state;
	/* A string that fits exactly, then one byte too many. */
	struct dynbuf b;
	dynbuf_init(&b, 7);
	assert_int_equal(json_put_str(&b, "hello", 5), 0);
	assert_int_equal(b.len, 7);
	dynbuf_release(&b);

	dynbuf_init(&b, 6);
	assert_int_equal(json_put_str(&b, "hello", 5), -E2BIG);
	assert_true(b.len <= 6);
	dynbuf_release(&b);

	/* Escapes grow the output beyond the optimistic reserve. */
	dynbuf_init(&b, 10);
	assert_int_equal(json_put_str(&b, "\x01\x02", 2), -E2BIG);
	assert_true(b.len <= 10);
	dynbuf_release(&b);
	dynbuf_init(&b, 14);
	assert_int_equal(json_put_str(&b, "\x01\x02", 2), 0);
	assert_int_equal(b.len, 14);
	dynbuf_release(&b);
}

/* The escaping rules one character at a time, as the reference the block
 * paths of json_put_str must match byte for byte.  *min_max is the least
 * dynbuf cap under which it succeeds: an escape asks for room for 6 bytes
 * whatever it writes, so `\"` near the end needs more than the output. */
static size_t ref_str(const unsigned char *s, size_t n, char *o, size_t *min_max)
{
	*min_max = 0;
	size_t k = 0, i = 0;
	o[k++] = '"';
	while (i < n) {
		unsigned char c = s[i];
		if (c >= 0x80) {
			int l = utf8_seq(s + i, n - i);
			if (l > 0) {
				memcpy(o + k, s + i, (size_t)l);
				k += (size_t)l;
				i += (size_t)l;
			} else {
				memcpy(o + k, FFFD, 3);
				k += 3;
				i += (size_t)-l;
			}
			continue;
		}
		if ((c == '"' || c == '\\' || c < 0x20) && k + 6 > *min_max)
			*min_max = k + 6;
		if (c == '"' || c == '\\') {
			o[k++] = '\\';
			o[k++] = (char)c;
		} else if (c < 0x20) {
			const char *short_esc = c == '\b' ? "b" : c == '\t' ? "t" : c == '\n' ? "n" :
			                        c == '\f' ? "f" : c == '\r' ? "r" : NULL;
			if (short_esc) {
				o[k++] = '\\';
				o[k++] = short_esc[0];
			} else {
				k += (size_t)sprintf(o + k, "\\u%04x", c);
			}
		} else {
			o[k++] = (char)c;
		}
		i++;
	}
	o[k++] = '"';
	if (k > *min_max)
		*min_max = k;
	return k;
}

static void check_ref(const unsigned char *in, size_t n)
{
	char *want = malloc(n * 6 + 3);
	assert_non_null(want);
	size_t min_max, wn = ref_str(in, n, want, &min_max);
	struct dynbuf b;
	dynbuf_init(&b, 0);
	assert_int_equal(json_put_str(&b, (const char *)in, n), 0);
	assert_int_equal(b.len, wn);
	assert_memory_equal(b.p, want, wn);
	dynbuf_release(&b);

	/* Under the tightest cap: no room for the block path's slack. */
	dynbuf_init(&b, min_max);
	assert_int_equal(json_put_str(&b, (const char *)in, n), 0);
	assert_int_equal(b.len, wn);
	assert_memory_equal(b.p, want, wn);
	dynbuf_release(&b);
	dynbuf_init(&b, min_max - 1);
	assert_int_equal(json_put_str(&b, (const char *)in, n), -E2BIG);
	assert_true(b.len <= min_max - 1);
	dynbuf_release(&b);
	free(want);
}

/* The 16-byte blocks: a byte that needs attention at every offset of the
 * first, second and last block, strings ending at every offset of a block,
 * and ill-formed or well-formed UTF-8 straddling a block boundary. */
static void test_json_blocks(void **state)
{
	(void)state;
	static const unsigned char specials[] = { '"', '\\', 0x00, 0x01, '\n', 0x1F, 0x7F, 0x80, 0xC3, 0xFF };
	unsigned char in[64] = { 0 };
	for (size_t n = 0; n <= 50; n++) {
		for (size_t i = 0; i < n; i++)
			in[i] = (unsigned char)('a' + i % 26);
		check_ref(in, n);
		for (size_t pos = 0; pos < n; pos++) {
			for (size_t k = 0; k < sizeof(specials); k++) {
				unsigned char save = in[pos];
				in[pos] = specials[k];
				check_ref(in, n);
				in[pos] = save;
			}
		}
	}
	/* Multibyte sequences, whole and cut, across offsets 10..20. */
	static const char *seqs[] = {
		"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\xE2\x82", "\xF0\x9F\x98",
		"\xED\xA0\x80", "\xC0\xAF", "\xF4\x90\x80\x80", "\xE0\x80\x80",
	};
	for (size_t s = 0; s < sizeof(seqs) / sizeof(seqs[0]); s++) {
		size_t sl = strlen(seqs[s]);
		for (size_t pos = 10; pos <= 20; pos++) {
			for (size_t n = pos; n <= pos + sl + 20; n++) {
				for (size_t i = 0; i < n; i++)
					in[i] = 'x';
				for (size_t i = 0; i < sl && pos + i < n; i++)
					in[pos + i] = (unsigned char)seqs[s][i];
				check_ref(in, n);
			}
		}
	}
	/* Every escape at once: output much longer than the reserve. */
	for (size_t i = 0; i < 64; i++)
		in[i] = (unsigned char)(i % 2 ? 0x01 : '"');
	check_ref(in, 64);
}

/* json_put_utf8 on valid UTF-8 writes exactly what json_put_str writes,
 * with multibyte characters at every offset across 16-byte blocks and the
 * tail (a block that ends inside a character must not be "repaired"),
 * among escapes, and under caps around the output's size. */
static void test_json_put_utf8_matches_put_str(void **state)
{
	(void)state;
	static const char *chars[] = { "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\n", "\"" };
	char in[96];
	for (size_t c = 0; c < sizeof(chars) / sizeof(chars[0]); c++) {
		size_t cl = strlen(chars[c]);
		for (size_t pos = 0; pos < 40; pos++) {
			for (size_t n = pos + cl; n <= pos + cl + 40 && n <= sizeof(in); n++) {
				for (size_t i = 0; i < n; i++)
					in[i] = (char)('a' + i % 26);
				memcpy(in + pos, chars[c], cl);
				/* a second character further on: two cuts per string */
				if (n >= pos + cl + 20)
					memcpy(in + pos + cl + 17, "\xD0\x91", 2);
				struct dynbuf a, b;
				dynbuf_init(&a, 0);
				dynbuf_init(&b, 0);
				assert_int_equal(json_put_str(&a, in, n), 0);
				assert_int_equal(json_put_utf8(&b, in, n), 0);
				assert_int_equal(a.len, b.len);
				assert_memory_equal(a.p, b.p, a.len);
				/* under a cap, both succeed or fail alike */
				const size_t caps[] = { a.len - 1, a.len, a.len + 6, n + 2, n + 18, n * 6 + 2 };
				for (size_t k = 0; k < sizeof(caps) / sizeof(caps[0]); k++) {
					struct dynbuf cs, cu;
					dynbuf_init(&cs, caps[k]);
					dynbuf_init(&cu, caps[k]);
					int rs = json_put_str(&cs, in, n), ru = json_put_utf8(&cu, in, n);
					assert_int_equal(rs, ru);
					if (rs == 0) {
						assert_int_equal(cs.len, cu.len);
						assert_memory_equal(cs.p, cu.p, cs.len);
					}
					dynbuf_release(&cs);
					dynbuf_release(&cu);
				}
				dynbuf_release(&a);
				dynbuf_release(&b);
			}
		}
	}
}

/* Short strings (the whole string is the tail that json_put_str gathers
 * with overlapping loads) of every length below 32 with each special byte
 * at each offset, written after a prefix into a buffer that already holds
 * six times the input (the path that skips the room checks) and into a
 * buffer grown as it goes; both must match the reference. */
static void test_json_short_and_reserved(void **state)
{
	(void)state;
	static const unsigned char specials[] = { '"', '\\', 0x00, 0x01, '\n', 0x1F, 0x7F, 0x80, 0xC3, 0xFF };
	unsigned char in[32];
	char want[32 * 6 + 3];
	for (size_t n = 0; n < 32; n++) {
		for (size_t pos = 0; pos <= n; pos++) {
			for (size_t k = 0; k < sizeof(specials); k++) {
				for (size_t i = 0; i < n; i++)
					in[i] = (unsigned char)('A' + i);
				if (pos < n)
					in[pos] = specials[k];
				size_t min_max, wn = ref_str(in, n, want, &min_max);
				for (int reserved = 0; reserved <= 1; reserved++) {
					struct dynbuf b;
					dynbuf_init(&b, 0);
					assert_int_equal(json_put_raw(&b, "x", 1), 0);
					if (reserved)
						assert_true(dynbuf_reserve(&b, 6 * n + 64) >= 0);
					assert_int_equal(json_put_str(&b, (const char *)in, n), 0);
					assert_int_equal(b.len, wn + 1);
					assert_memory_equal(b.p + 1, want, wn);
					dynbuf_release(&b);
				}
				if (pos == n)
					break;
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_put_utf8_matches_put_str),
		cmocka_unit_test(test_json_short_and_reserved),
		cmocka_unit_test(test_json_plain_ascii),
		cmocka_unit_test(test_json_quote_backslash),
		cmocka_unit_test(test_json_every_control_char),
		cmocka_unit_test(test_json_valid_multibyte),
		cmocka_unit_test(test_json_invalid_utf8_replaced),
		cmocka_unit_test(test_json_bytes_member_lossless),
		cmocka_unit_test(test_json_base64),
		cmocka_unit_test(test_json_integers),
		cmocka_unit_test(test_json_iso8601),
		cmocka_unit_test(test_json_cap_is_enforced),
		cmocka_unit_test(test_json_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
