/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/charset.c: aliases, the built-in windows-1252 table,
 * iconv through the per-thread cache, U+FFFD replacement and its count. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <iconv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mail/charset.h"
#include "mail/charset_probe.h"
#include "mail/mail_ctx.h"
#include "helpers.h"

struct tcase {
	struct mail_ctx ctx;
	struct dynbuf out;
	uint64_t warnings, replaced;
};

static int setup(void **state)
{
	struct tcase *t = calloc(1, sizeof(*t));
	t_mail_ctx_init(&t->ctx);
	dynbuf_init(&t->out, 0);
	*state = t;
	return t->ctx.charsets ? 0 : -1;
}

static int teardown(void **state)
{
	struct tcase *t = *state;
	t_mail_ctx_release(&t->ctx);
	dynbuf_release(&t->out);
	free(t);
	return 0;
}

/* Decodes with label (NULL: no label) and returns the NUL-terminated result. */
static const char *dec(struct tcase *t, const char *label, const char *in, size_t n)
{
	dynbuf_reset(&t->out);
	t->warnings = t->replaced = 0;
	struct str l = label ? (struct str){ label, strlen(label) } : STR_NULL;
	assert_int_equal(charset_decode(&t->ctx, l, (const uint8_t *)in, n, &t->out,
	                                &t->warnings, &t->replaced), 0);
	assert_int_equal(dynbuf_putc(&t->out, '\0'), 0);
	t->out.len--;
	return t->out.p;
}

#define DEC(t, label, lit) dec((t), (label), (lit), sizeof(lit) - 1)
#define W(x) (UINT64_C(1) << MAIL_W_##x)

static void test_charset_utf8_passthrough(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, NULL, "caf\xc3\xa9 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xf0\x9f\x98\x80");
	assert_int_equal(t->warnings, 0);
	assert_string_equal(DEC(t, "UTF-8", "plain"), "plain");
	assert_string_equal(DEC(t, "utf8", "\xc3\xa9"), "\xc3\xa9");
	assert_int_equal(t->warnings, 0);
	assert_int_equal(t->replaced, 0);
}

static void test_charset_utf8_invalid_replaced_and_counted(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "utf-8", "a\xff" "b\xc3"), "a\xef\xbf\xbd" "b\xef\xbf\xbd");
	assert_int_equal(t->replaced, 2);
	assert_int_equal(t->warnings, W(INVALID_BYTES_REPLACED));
}

static void test_charset_utf8_maximal_subpart(void **state)
{
	struct tcase *t = *state;
	/* E2 82 is a truncated three-byte sequence: one U+FFFD, then 'A'. */
	assert_string_equal(DEC(t, "utf-8", "\xe2\x82" "A"), "\xef\xbf\xbd" "A");
	assert_int_equal(t->replaced, 1);
	/* An overlong form is two invalid bytes. */
	assert_string_equal(DEC(t, "utf-8", "\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");
	assert_int_equal(t->replaced, 2);
}

static void test_charset_us_ascii_means_utf8(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "us-ascii", "\xc3\xa9"), "\xc3\xa9");
	assert_int_equal(t->warnings, 0);
}

/* 8-bit text without a charset (or us-ascii) that is not UTF-8 was
 * written in windows-1252: its bytes are read so, and none is replaced;
 * the valid UTF-8 around them stays UTF-8. */
static void test_charset_no_charset_8bit_is_cp1252(void **state)
{
	struct tcase *t = *state;
#define CLEAN() do { assert_int_equal(t->replaced, 0); assert_int_equal(t->warnings, 0); } while (0)
	assert_string_equal(DEC(t, NULL, "caf\xe9"), "caf\xc3\xa9");
	CLEAN();
	assert_string_equal(DEC(t, "us-ascii", "\x80 5"), "\xe2\x82\xac 5");
	CLEAN();
	assert_string_equal(DEC(t, NULL, "\xe2\x82" "A"), "\xc3\xa2\xe2\x80\x9a" "A");
	CLEAN();
	assert_string_equal(DEC(t, "ascii", "\xc3\xa9 \xe9"), "\xc3\xa9 \xc3\xa9");
	CLEAN();
#undef CLEAN
	/* a declared UTF-8 is still UTF-8 */
	assert_string_equal(DEC(t, "utf-8", "caf\xe9"), "caf\xef\xbf\xbd");
	assert_int_equal(t->replaced, 1);
}

/* A surrogate is three ill-formed bytes (ED's second byte stops at 9F). */
static void test_charset_utf8_surrogate_replaced(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "utf-8", "x\x80y\xed\xa0\x80"),
	                    "x\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	assert_int_equal(t->replaced, 4);
}

static void test_charset_latin1_is_windows1252(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "latin1", "caf\xe9 \x80"), "caf\xc3\xa9 \xe2\x82\xac");
	assert_int_equal(t->warnings, 0);
	assert_string_equal(DEC(t, "ISO-8859-1", "\x93q\x94"), "\xe2\x80\x9cq\xe2\x80\x9d");
	assert_string_equal(DEC(t, "cp1252", "\x99"), "\xe2\x84\xa2");
	assert_int_equal(t->warnings, 0);
}

static void test_charset_cp1252_undefined_bytes_are_c1(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "windows-1252", "\x81\x8d"), "\xc2\x81\xc2\x8d");
	assert_int_equal(t->replaced, 0);
}

static void test_charset_iconv_iso8859_2(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "iso-8859-2", "\xb1"), "\xc4\x85");   /* ą */
	assert_int_equal(t->warnings, 0);
}

static void test_charset_koi8r(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "KOI8-R", "\xf0\xd2\xc9"), "\xd0\x9f\xd1\x80\xd0\xb8");  /* При */
}

static void test_charset_ks_c_5601_is_cp949(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "ks_c_5601-1987", "\xc7\xd1"), "\xed\x95\x9c");  /* 한 */
	assert_int_equal(t->warnings, 0);
}

static void test_charset_gb2312_is_gb18030(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "gb2312", "\xc4\xe3\xba\xc3"), "\xe4\xbd\xa0\xe5\xa5\xbd");  /* 你好 */
	/* A GB18030 four-byte sequence, outside GB2312 proper. */
	assert_string_equal(DEC(t, "GB2312", "\x81\x30\x81\x30"), "\xc2\x80");
	assert_int_equal(t->warnings, 0);
}

static void test_charset_iso8859_8_i(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "iso-8859-8-i", "\xf9"), "\xd7\xa9");  /* ש */
	assert_int_equal(t->warnings, 0);
}

static void test_charset_utf7(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "utf-7", "caf+AOk-"), "caf\xc3\xa9");
	assert_string_equal(DEC(t, "unicode-1-1-utf-7", "+AOk-"), "\xc3\xa9");
	assert_int_equal(t->warnings, 0);
}

static void test_charset_shift_jis(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "Shift_JIS", "\x82\xa0"), "\xe3\x81\x82");  /* あ */
}

static void test_charset_iso2022jp_stateful(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "iso-2022-jp", "\x1b$B$\"\x1b(Bx"), "\xe3\x81\x82x");
	/* The state is reset between calls: plain ASCII decodes as ASCII. */
	assert_string_equal(DEC(t, "iso-2022-jp", "abc"), "abc");
}

static void test_charset_mac_roman(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "x-mac-roman", "\x8e"), "\xc3\xa9");
	assert_int_equal(t->warnings, 0);
}

static void test_charset_iconv_invalid_replaced(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "ks_c_5601-1987", "a\xff" "b"), "a\xef\xbf\xbd" "b");
	assert_int_equal(t->replaced, 1);
	assert_int_equal(t->warnings, W(INVALID_BYTES_REPLACED));
	/* Truncated at the end (EINVAL from iconv): replaced too. */
	assert_string_equal(DEC(t, "ks_c_5601-1987", "x\xc7"), "x\xef\xbf\xbd");
	assert_int_equal(t->replaced, 1);
}

static void test_charset_unknown_label_falls_back(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "x-no-such-charset", "caf\xe9"), "caf\xc3\xa9");
	assert_int_equal(t->warnings, W(UNKNOWN_CHARSET));
}

static void test_charset_template_label_unknown(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "%CHARSET", "\xe9"), "\xc3\xa9");
	assert_int_equal(t->warnings, W(UNKNOWN_CHARSET));
}

/* Labels seen in real mail: an Outlook alias of UTF-7, and placeholders
 * that mean "no charset", read as a missing charset is (UTF-8 where
 * valid, else windows-1252), with no unknown-charset. */
static void test_charset_placeholder_labels(void **state)
{
	struct tcase *t = *state;
	static const char *const none[] = {
		"x-unknown", "unknown-8bit", "x-user-defined", "default_charset", "us_ascii", "US_ASCII",
	};
	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		assert_string_equal(dec(t, none[i], "caf\xe9 \xc3\xa9", 7), "caf\xc3\xa9 \xc3\xa9");
		if (t->warnings || t->replaced)
			fail_msg("%s: warnings %#llx", none[i], (unsigned long long)t->warnings);
	}
	assert_string_equal(DEC(t, "x-unicode-2-0-utf-7", "Hi +AOk-"), "Hi \xc3\xa9");
	assert_int_equal(t->warnings, 0);
}

static void test_charset_label_injection_rejected(void **state)
{
	struct tcase *t = *state;
	/* iconv suffixes must not reach iconv_open. */
	assert_string_equal(DEC(t, "UTF-16//IGNORE", "\xe9"), "\xc3\xa9");
	assert_int_equal(t->warnings, W(UNKNOWN_CHARSET));
	assert_string_equal(DEC(t, "", "\xe9"), "\xc3\xa9");
	assert_int_equal(t->warnings, W(UNKNOWN_CHARSET));
}

static void test_charset_label_normalised(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, " \"ISO-8859-2\" ", "\xb1"), "\xc4\x85");
	assert_string_equal(DEC(t, "iso-8859-2*pl", "\xb1"), "\xc4\x85");   /* RFC 2231 5 */
	assert_int_equal(t->warnings, 0);
}

static void test_charset_cache_reuses_descriptors(void **state)
{
	struct tcase *t = *state;
	/* spellings the built-in tables do not list: iconv's */
	DEC(t, "latin2", "a");
	DEC(t, "LATIN2", "b");
	DEC(t, "koi8r", "c");
	DEC(t, "utf-8", "d");          /* no iconv: not cached */
	DEC(t, "iso-8859-2", "e");     /* built in: not cached */
	assert_int_equal(charset_cache_count(t->ctx.charsets), 2);
}

static void test_charset_cache_full_still_decodes(void **state)
{
	struct tcase *t = *state;
	char label[32];
	/* iso8859-N is iconv's spelling, not the tables' iso-8859-N: 15
	 * iconv labels (12 refused) and 17 refused ones. */
	for (int i = 2; i <= 16; i++) {
		snprintf(label, sizeof(label), "iso8859-%d", i);
		DEC(t, label, "A");
	}
	for (int i = 1; i <= 17; i++) {
		snprintf(label, sizeof(label), "x-bogus-%d", i);
		DEC(t, label, "A");
	}
	assert_int_equal(charset_cache_count(t->ctx.charsets), 32);
	assert_string_equal(DEC(t, "iso8859-5", "\xb0"), "\xd0\x90");   /* cached */
	assert_string_equal(DEC(t, "koi8u", "\xf0"), "\xd0\x9f");       /* transient */
	assert_string_equal(DEC(t, "koi8-u", "\xf0"), "\xd0\x9f");      /* built in */
	assert_int_equal(t->warnings, 0);
	assert_int_equal(charset_cache_count(t->ctx.charsets), 32);
}

/* The first byte whose entry in t differs from what the iconv this test
 * runs with says for name (iconv_open refused: 256), or -1. */
static int sb_mismatch(const char *name, const uint32_t *t)
{
	iconv_t cd = iconv_open("UTF-8", name);
	if (cd == (iconv_t)-1)
		return 256;
	uint16_t sb[256];
	bool ok = charset_probe_ascii(cd) && charset_probe_single_byte(cd, name, sb);
	iconv_close(cd);
	if (!ok)
		return 256;
	for (int b = 0; b < 256; b++)
		if (t[b] != charset_sb_entry(sb[b]))
			return b;
	return -1;
}

/* The first index at which a and b differ, or -1. */
static int first_diff(const uint16_t *a, const uint16_t *b, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i] != b[i])
			return i;
	return -1;
}

/* The first JIS X 0208 entry (row * 94 + cell) of t, or JIS-Roman's pair
 * (index 94 * 94), differing from iconv's ISO-2022-JP, or -1. */
static int jis_mismatch(const uint16_t *t, uint32_t r5c, uint32_t r7e)
{
	iconv_t cd = iconv_open("UTF-8", "ISO-2022-JP");
	if (cd == (iconv_t)-1)
		return 0;
	static uint16_t want[CHARSET_JIS_SIDE * CHARSET_JIS_SIDE];
	uint32_t w5c, w7e;
	bool ok = charset_probe_ascii(cd) && charset_probe_jis(cd, want, &w5c, &w7e);
	iconv_close(cd);
	if (!ok)
		return 0;
	int at = first_diff(t, want, CHARSET_JIS_SIDE * CHARSET_JIS_SIDE);
	return at != -1 || (r5c == w5c && r7e == w7e) ? at : CHARSET_JIS_SIDE * CHARSET_JIS_SIDE;
}

/* The first two-byte entry of t differing from iconv's GB18030, or -1. */
static int gb_mismatch(const uint16_t *t)
{
	iconv_t cd = iconv_open("UTF-8", "GB18030");
	if (cd == (iconv_t)-1)
		return 0;
	static uint16_t want[CHARSET_GB_LEADS * CHARSET_GB_TRAILS];
	bool ok = charset_probe_gb(cd, want);
	iconv_close(cd);
	if (!ok)
		return 0;
	return first_diff(t, want, CHARSET_GB_LEADS * CHARSET_GB_TRAILS);
}

/* The tables written at build time (charset_gen.c) are the iconv's this
 * runs with, entry by entry; and the comparison sees a corrupted entry. */
static void test_charset_builtin_tables_are_iconvs(void **state)
{
	(void)state;
	size_t n;
	const struct charset_builtin *b = charset_builtin_list(&n);
	assert_true(n >= 20);                      /* ISO-8859-x, windows-125x ... */
	for (size_t i = 0; i < n; i++) {
		int at = sb_mismatch(b[i].name, b[i].sb);
		if (at != -1)
			fail_msg("%s: byte 0x%02x differs from iconv's", b[i].name, (unsigned)at);
	}
	uint32_t t[256];
	memcpy(t, b[0].sb, sizeof(t));
	t[0xB1] ^= 1;
	assert_int_equal(sb_mismatch(b[0].name, t), 0xB1);

	uint32_t r5c, r7e;
	const uint16_t *jis = charset_builtin_jis(&r5c, &r7e);
	assert_int_not_equal(r5c, 0);
	int at = jis_mismatch(jis, r5c, r7e);
	if (at != -1)
		fail_msg("ISO-2022-JP: entry %d differs from iconv's", at);
	static uint16_t bad[CHARSET_JIS_SIDE * CHARSET_JIS_SIDE];
	memcpy(bad, jis, sizeof(bad));
	bad[15 * CHARSET_JIS_SIDE + 3]++;
	assert_int_equal(jis_mismatch(bad, r5c, r7e), 15 * CHARSET_JIS_SIDE + 3);
	assert_int_equal(jis_mismatch(jis, r5c, r7e + 1), CHARSET_JIS_SIDE * CHARSET_JIS_SIDE);

	const uint16_t *gb = charset_builtin_gb();
	assert_non_null(gb);
	at = gb_mismatch(gb);
	if (at != -1)
		fail_msg("GB18030: two-byte entry %d differs from iconv's", at);
	static uint16_t gbad[CHARSET_GB_LEADS * CHARSET_GB_TRAILS];
	memcpy(gbad, gb, sizeof(gbad));
	gbad[40 * CHARSET_GB_TRAILS + 90]--;
	assert_int_equal(gb_mismatch(gbad), 40 * CHARSET_GB_TRAILS + 90);
}

/* Converts in[0..n) from GB18030 with iconv alone, whole (valid input). */
static char *gb_by_iconv(const char *in, size_t n)
{
	iconv_t cd = iconv_open("UTF-8", "GB18030");
	assert_true(cd != (iconv_t)-1);
	size_t cap = n * 3 + 1, ol = cap - 1, il = n;
	char *o = calloc(1, cap), *op = o, *ip = (char *)(uintptr_t)in;
	assert_int_not_equal(iconv(cd, &ip, &il, &op, &ol), (size_t)-1);
	iconv_close(cd);
	return o;
}

/* Every two-byte code iconv maps, among ASCII, decodes by the built-in
 * table as iconv decodes the whole; a four-byte sequence among them sends
 * all of it to iconv, with the same result. */
static void test_charset_gb_table_matches_iconv(void **state)
{
	struct tcase *t = *state;
	iconv_t cd = iconv_open("UTF-8", "GB18030");
	assert_true(cd != (iconv_t)-1);
	size_t cap = CHARSET_GB_LEADS * CHARSET_GB_TRAILS * 3 + 16, n = 0;
	char *in = malloc(cap);
	for (int l = 0x81; l <= 0xFE; l++)
		for (int b = 0x40; b <= 0xFE; b++) {
			char pair[2] = { (char)l, (char)b }, u[16], *ip = pair, *op = u;
			size_t il = 2, ol = sizeof(u);
			iconv(cd, NULL, NULL, NULL, NULL);
			if (b == 0x7F || iconv(cd, &ip, &il, &op, &ol) == (size_t)-1)
				continue;
			memcpy(in + n, pair, 2);
			n += 2;
			if ((l + b) % 7 == 0)
				in[n++] = (char)('a' + b % 26);
		}
	iconv_close(cd);
	char *want = gb_by_iconv(in, n);
	assert_string_equal(dec(t, "gb2312", in, n), want);
	assert_int_equal(t->warnings | t->replaced, 0);
	free(want);
	memcpy(in + n, "\x81\x30\x81\x30", 4);        /* U+0080: four bytes */
	want = gb_by_iconv(in, n + 4);
	assert_string_equal(dec(t, "GBK", in, n + 4), want);
	free(want);
	free(in);
}

static void test_charset_empty_input(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(dec(t, "iso-8859-2", "", 0), "");
	assert_string_equal(dec(t, "latin1", "", 0), "");
	assert_string_equal(dec(t, NULL, "", 0), "");
}

/* ASCII, then mid, then more ASCII, with k bytes of ASCII first: *n is the
 * length. */
static const char *around(char *buf, size_t k, const char *mid, size_t *n)
{
	static const char tail[] = "ABCDEFGHIJKLMNOPQRST";
	for (size_t j = 0; j < k; j++)
		buf[j] = (char)('a' + j % 26);
	size_t m = strlen(mid);
	memcpy(buf + k, mid, m);
	memcpy(buf + k + m, tail, sizeof(tail));
	*n = k + m + sizeof(tail) - 1;
	return buf;
}

/* The ASCII block loops: a non-ASCII byte or sequence after every length
 * of ASCII (every offset of a 16- and an 8-byte block), followed by more
 * ASCII, through the UTF-8 check and both single-byte tables. */
static void test_charset_ascii_blocks(void **state)
{
	struct tcase *t = *state;
	char in[128], want[128];
	size_t n, wn;
	for (size_t k = 0; k <= 40; k++) {
		around(in, k, "\xe9", &n);                   /* cp1252: é */
		assert_string_equal(dec(t, "latin1", in, n), around(want, k, "\xc3\xa9", &wn));
		around(in, k, "\xf0", &n);                   /* KOI8-R: П */
		assert_string_equal(dec(t, "koi8-r", in, n), around(want, k, "\xd0\x9f", &wn));

		around(in, k, "\xc3\xa9", &n);
		assert_true(utf8_valid((const uint8_t *)in, n));
		assert_false(utf8_valid((const uint8_t *)in, k + 1));   /* cut */
		assert_true(utf8_valid((const uint8_t *)in, k));
		around(in, k, "\xc3x", &n);
		assert_false(utf8_valid((const uint8_t *)in, n));
		around(in, k, "\xe2\x82\xac\xed\xa0\x80", &n);          /* surrogate */
		assert_false(utf8_valid((const uint8_t *)in, n));
	}
}

static void test_charset_large_input(void **state)
{
	struct tcase *t = *state;
	size_t n = 1024 * 1024;
	char *in = malloc(n);
	memset(in, '\xb1', n);
	dec(t, "iso-8859-2", in, n);
	assert_int_equal(t->out.len, 2 * n);
	assert_memory_equal(t->out.p + 2 * n - 2, "\xc4\x85", 2);
	/* Every byte invalid: one replacement each (the slow path of iconv,
	 * two calls a byte: kept moderate for sanitizer builds). */
	n = 128 * 1024;
	memset(in, '\xff', n);
	dec(t, "ks_c_5601-1987", in, n);
	assert_int_equal(t->replaced, n);
	assert_int_equal(t->out.len, 3 * n);
	free(in);
}

/* glibc knows labels for its own UTF-8 decoder that our table does not
 * (ISO-IR-193, CSUTF8) and that decoder passes 5- and 6-byte forms: the
 * output must still be valid UTF-8, with the bytes counted as replaced. */
static void test_charset_iconv_utf8_alias_validated(void **state)
{
	struct tcase *t = *state;
	const char *s = DEC(t, "ISO-IR-193", "ok\xfd\xb4\xb4\xb4\xb4\xb4!");
	assert_true(utf8_valid((const uint8_t *)s, strlen(s)));
	assert_memory_equal(s, "ok", 2);
	assert_int_equal(s[strlen(s) - 1], '!');
	assert_true(t->replaced > 0);
	assert_true(t->warnings & W(INVALID_BYTES_REPLACED));
	s = DEC(t, "ISO-IR-193", "caf\xc3\xa9");
	assert_string_equal(s, "caf\xc3\xa9");
	assert_int_equal(t->replaced, 0);
}

/* Plain ASCII in a charset that maps ASCII to itself skips iconv; text with
 * ISO-2022 shifts or 8-bit bytes still goes through it; a charset that does
 * not map ASCII to itself (UTF-7's "+") is never short-cut. */
static void test_charset_ascii_fast_path(void **state)
{
	struct tcase *t = *state;
	assert_string_equal(DEC(t, "iso-8859-2", "plain ascii\r\n"), "plain ascii\r\n");
	assert_string_equal(DEC(t, "iso-8859-2", "\xb1\xe6"), "\xc4\x85\xc4\x87");
	assert_string_equal(DEC(t, "ISO-2022-JP", "a\x1b$B$\"\x1b(Bb"), "a\xe3\x81\x82" "b");
	assert_string_equal(DEC(t, "ISO-2022-JP", "just ascii"), "just ascii");
	assert_string_equal(DEC(t, "utf-7", "a+AOk-"), "a\xc3\xa9");
	assert_int_equal(t->warnings, 0);
}

/* ISO-2022-JP's RFC 1468 subset is decoded without iconv (a table iconv
 * wrote at build time); the result must be iconv's own, which "csISO2022JP" (same
 * converter, not short-cut) gives.  Other escapes fall back to iconv. */
static void test_charset_iso2022jp_own_decoder_matches_iconv(void **state)
{
	struct tcase *t = *state;
	static const char *const cases[] = {
		"\x1b$B$3$s$K$A$O\x1b(B, world\n\x1b$B@$3&\x1b(B!\n",
		"\x1b(Jyen \\ overline ~\x1b(B back \\ ~",
		"\x1b$@$\"\x1b(B",
		"\x1b$B\x7f\x7f\x1b(B unmapped pair",
		"\x1b$B$\"\n$\"\x1b(B line end inside a two-byte run",
		"\x1b$(D+!\x1b(B JIS X 0212: iconv's business",
		"cut pair \x1b$B$",
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n = strlen(cases[i]);
		char *own = strdup(dec(t, "iso-2022-jp", cases[i], n));
		uint64_t w = t->warnings, r = t->replaced;
		assert_string_equal(own, dec(t, "csISO2022JP", cases[i], n));
		assert_int_equal(w, t->warnings);
		assert_int_equal(r, t->replaced);
		free(own);
	}
	assert_string_equal(DEC(t, "ISO-2022-JP", "\x1b$B$3$s\x1b(B"), "\xe3\x81\x93\xe3\x82\x93");
}

/* Stateless single-byte charsets are decoded by a table, built in or read
 * from iconv at open: the output, replacements and warnings are iconv's ("iso8859-2" and
 * "ms-cyrl" name the same converters without the table). */
static void test_charset_single_byte_table_matches_iconv(void **state)
{
	struct tcase *t = *state;
	static const char *const pairs[][2] = {
		{ "iso-8859-2", "iso8859-2" }, { "windows-1251", "ms-cyrl" },
		{ "iso-8859-3", "iso8859-3" }, { "iso-8859-7", "iso8859-7" },
	};
	char in[256];
	for (int i = 0; i < 255; i++)
		in[i] = (char)(i + 1);
	for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
		char *own = strdup(dec(t, pairs[k][0], in, 255));
		uint64_t w = t->warnings, r = t->replaced;
		assert_string_equal(own, dec(t, pairs[k][1], in, 255));
		assert_int_equal(w, t->warnings);
		assert_int_equal(r, t->replaced);
		free(own);
	}
	/* 0xA5 is not in ISO-8859-3: one U+FFFD, counted. */
	assert_string_equal(DEC(t, "iso-8859-3", "a\xa5z"), "a\xef\xbf\xbdz");
	assert_int_equal(t->replaced, 1);
	assert_true(t->warnings & W(INVALID_BYTES_REPLACED));
	/* CP1255 composes characters: never tabled, still right. */
	assert_string_equal(DEC(t, "windows-1255", "\xf9"), "\xd7\xa9");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_charset_ascii_fast_path),
		T(test_charset_builtin_tables_are_iconvs),
		T(test_charset_gb_table_matches_iconv),
		T(test_charset_iso2022jp_own_decoder_matches_iconv),
		T(test_charset_single_byte_table_matches_iconv),
		T(test_charset_utf8_passthrough),
		T(test_charset_iconv_utf8_alias_validated),
		T(test_charset_utf8_invalid_replaced_and_counted),
		T(test_charset_utf8_maximal_subpart),
		T(test_charset_us_ascii_means_utf8),
		T(test_charset_no_charset_8bit_is_cp1252),
		T(test_charset_utf8_surrogate_replaced),
		T(test_charset_latin1_is_windows1252),
		T(test_charset_cp1252_undefined_bytes_are_c1),
		T(test_charset_iconv_iso8859_2),
		T(test_charset_koi8r),
		T(test_charset_ks_c_5601_is_cp949),
		T(test_charset_gb2312_is_gb18030),
		T(test_charset_iso8859_8_i),
		T(test_charset_utf7),
		T(test_charset_shift_jis),
		T(test_charset_iso2022jp_stateful),
		T(test_charset_mac_roman),
		T(test_charset_iconv_invalid_replaced),
		T(test_charset_unknown_label_falls_back),
		T(test_charset_template_label_unknown),
		T(test_charset_placeholder_labels),
		T(test_charset_label_injection_rejected),
		T(test_charset_label_normalised),
		T(test_charset_cache_reuses_descriptors),
		T(test_charset_cache_full_still_decodes),
		T(test_charset_empty_input),
		T(test_charset_large_input),
		T(test_charset_ascii_blocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
