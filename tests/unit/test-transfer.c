/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/transfer.c: base64, quoted-printable and uuencode,
 * each leniency and each warning, and the size-only / prefix modes. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mail/transfer.h"

#define S(lit) (const uint8_t *)(lit), sizeof(lit) - 1

static char out[4096];

static void check_b64(const char *in, const char *want, bool warn)
{
	uint64_t w = 0;
	uint64_t k = transfer_base64_decode((const uint8_t *)in, strlen(in), (uint8_t *)out,
	                                    sizeof(out), &w);
	assert_int_equal(k, strlen(want));
	assert_memory_equal(out, want, k);
	assert_int_equal(w != 0, warn);
	if (warn)
		assert_int_equal(w, UINT64_C(1) << MAIL_W_BAD_BASE64);
	/* Size only agrees with the full decode. */
	uint64_t w2 = 0;
	assert_int_equal(transfer_base64_decode((const uint8_t *)in, strlen(in), NULL, 0, &w2), k);
	assert_int_equal(w2, w);
}

static void test_transfer_base64_plain(void **state)
{
	(void)state;
	check_b64("", "", false);
	check_b64("TWFu", "Man", false);
	check_b64("TWE=", "Ma", false);
	check_b64("TQ==", "M", false);
	check_b64("SGVsbG8sIHdvcmxkIQ==", "Hello, world!", false);
}

static void test_transfer_base64_whitespace(void **state)
{
	(void)state;
	check_b64("SGVs\r\nbG8s\nIHdv cmxk\tIQ==\r\n", "Hello, world!", false);
	check_b64("  TWFu  ", "Man", false);
}

static void test_transfer_base64_missing_padding(void **state)
{
	(void)state;
	check_b64("TWE", "Ma", false);
	check_b64("TQ", "M", false);
}

static void test_transfer_base64_garbage_warns(void **state)
{
	(void)state;
	check_b64("TW!Fu", "Man", true);
	check_b64("T*W*F*u", "Man", true);
	check_b64("\x80TWFu", "Man", true);
}

static void test_transfer_base64_truncated_warns(void **state)
{
	(void)state;
	check_b64("TWFuT", "Man", true);
	check_b64("T===", "", true);
}

static void test_transfer_base64_concatenated(void **state)
{
	(void)state;
	/* `=` ends a quantum; decoding goes on with the next stream. */
	check_b64("TQ==TWE=", "MMa", false);
}

static void test_transfer_base64_prefix(void **state)
{
	(void)state;
	uint8_t pre[4];
	memset(pre, 0, sizeof(pre));
	uint64_t w = 0;
	uint64_t k = transfer_base64_decode(S("SGVsbG8sIHdvcmxkIQ=="), pre, sizeof(pre), &w);
	assert_int_equal(k, 13);
	assert_memory_equal(pre, "Hell", 4);
	assert_int_equal(w, 0);
}

static void check_qp(const char *in, const char *want, bool warn)
{
	uint64_t w = 0;
	uint64_t k = transfer_qp_decode((const uint8_t *)in, strlen(in), (uint8_t *)out,
	                                sizeof(out), &w);
	assert_int_equal(k, strlen(want));
	assert_memory_equal(out, want, k);
	assert_int_equal(w != 0, warn);
	if (warn)
		assert_int_equal(w, UINT64_C(1) << MAIL_W_BAD_QUOTED_PRINTABLE);
	assert_int_equal(transfer_qp_decode((const uint8_t *)in, strlen(in), NULL, 0, NULL), k);
}

static void test_transfer_qp_escapes(void **state)
{
	(void)state;
	check_qp("caf=C3=A9", "caf\xc3\xa9", false);
	check_qp("a=3db", "a=b", false);           /* lower case hex accepted */
	check_qp("plain text\r\n", "plain text\r\n", false);
}

static void test_transfer_qp_soft_breaks(void **state)
{
	(void)state;
	check_qp("long =\r\nline", "long line", false);
	check_qp("long =\nline", "long line", false);
	check_qp("pad= \t\r\nded", "padded", false);
	check_qp("end=", "end", false);
	check_qp("end=\r", "end", false);
}

static void test_transfer_qp_invalid_kept_literally(void **state)
{
	(void)state;
	check_qp("a=ZZb", "a=ZZb", true);
	check_qp("100=%", "100=%", true);
	check_qp("x=4", "x=4", true);
	check_qp("= x", "= x", true);
}

/* Runs of every length around the 16- and 8-byte blocks, `=XX` chains cut
 * by a soft break, a bad escape or the end, and every output cap: the
 * prefix written is always the decoded prefix, and nothing is written past
 * the cap. */
static void test_transfer_qp_runs_and_caps(void **state)
{
	(void)state;
	static const char *tails[] = {
		"=3D", "=C3=A9=E2=82=AC", "=C3=A9=\r\nx", "=C3=\nA9", "=3D=ZZ", "=3D=4",
		"=41=42=43=44=45=46=47=48=49=4A=4B=4C=4D=4E=4F=50=51",
	};
	static const char *decoded[] = {
		"=", "\xc3\xa9\xe2\x82\xac", "\xc3\xa9x", "\xc3" "A9", "==ZZ", "==4",
		"ABCDEFGHIJKLMNOPQ",
	};
	char in[256], want[256], got[256];
	for (size_t t = 0; t < sizeof(tails) / sizeof(tails[0]); t++) {
		for (size_t k = 0; k <= 40; k++) {
			size_t n = 0, wn = 0;
			for (size_t j = 0; j < k; j++)
				in[n++] = want[wn++] = (char)('a' + j % 26);
			memcpy(in + n, tails[t], strlen(tails[t]));
			n += strlen(tails[t]);
			memcpy(want + wn, decoded[t], strlen(decoded[t]));
			wn += strlen(decoded[t]);
			for (size_t j = 0; j < k; j++)     /* no hex digit after a `=` */
				in[n++] = want[wn++] = (char)('g' + j % 20);
			for (size_t cap = 0; cap <= wn + 1; cap++) {
				memset(got, 0x55, sizeof(got));
				uint64_t r = transfer_qp_decode((const uint8_t *)in, n, (uint8_t *)got, cap, NULL);
				assert_int_equal(r, wn);
				size_t kept = cap < wn ? cap : wn;
				assert_memory_equal(got, want, kept);
				for (size_t j = cap; j < sizeof(got); j++)
					assert_int_equal((uint8_t)got[j], 0x55);
			}
		}
	}
}

static void test_transfer_qp_prefix(void **state)
{
	(void)state;
	uint8_t pre[3];
	uint64_t k = transfer_qp_decode(S("ab=3Dcdef"), pre, sizeof(pre), NULL);
	assert_int_equal(k, 7);
	assert_memory_equal(pre, "ab=", 3);
}

static void test_transfer_encoding_names(void **state)
{
	(void)state;
	assert_int_equal(transfer_encoding_parse(STR_NULL), TRANSFER_IDENTITY);
	assert_int_equal(transfer_encoding_parse((struct str){ " Base64 ", 8 }), TRANSFER_BASE64);
	assert_int_equal(transfer_encoding_parse((struct str){ "QUOTED-PRINTABLE", 16 }), TRANSFER_QP);
	assert_int_equal(transfer_encoding_parse((struct str){ "8bit", 4 }), TRANSFER_IDENTITY);
	assert_int_equal(transfer_encoding_parse((struct str){ "binary", 6 }), TRANSFER_IDENTITY);
	assert_int_equal(transfer_encoding_parse((struct str){ "x-uuencode", 10 }), TRANSFER_UUENCODE);
	assert_int_equal(transfer_encoding_parse((struct str){ "base64 (x)", 10 }), TRANSFER_BASE64);
	assert_int_equal(transfer_encoding_parse((struct str){ "x-foo", 5 }), TRANSFER_UNKNOWN);
}

/* "Cat" uuencoded: length byte '#' (3), then "0V%T". */
static const char uu_text[] =
	"Hello\n"
	"begin 644 cat.txt\n"
	"#0V%T\n"
	"`\n"
	"end\n"
	"Bye\n";

static void test_transfer_uu_find_and_decode(void **state)
{
	(void)state;
	struct transfer_uu u;
	const uint8_t *p = (const uint8_t *)uu_text;
	size_t n = sizeof(uu_text) - 1;
	assert_true(transfer_uu_find(p, n, 0, &u));
	assert_int_equal(u.start, 6);
	assert_int_equal(u.end, n - 4);
	assert_true(u.terminated);
	assert_int_equal(u.name.n, 7);
	assert_memory_equal(u.name.p, "cat.txt", 7);
	uint64_t w = 0;
	uint64_t k = transfer_uu_decode(p + u.data, u.data_end - u.data, (uint8_t *)out, sizeof(out), &w);
	assert_int_equal(k, 3);
	assert_memory_equal(out, "Cat", 3);
	assert_int_equal(w, 0);
	assert_false(transfer_uu_find(p, n, u.end, &u));
}

static void test_transfer_uu_not_a_block(void **state)
{
	(void)state;
	struct transfer_uu u;
	/* Not at a line start, no octal mode, no data: ordinary text. */
	assert_false(transfer_uu_find(S("we begin 644 x\n#0V%T\nend\n"), 0, &u));
	assert_false(transfer_uu_find(S("begin now please\n#0V%T\nend\n"), 0, &u));
	assert_false(transfer_uu_find(S("begin 644 x\nthis is prose\n"), 0, &u));
}

/* buf: k bytes of prose (repeated), a line end, then block; *at is where
 * block starts.  Returns the length. */
static size_t prose_then_block(char *buf, const char *prose, size_t k, const char *block,
                               size_t *at)
{
	size_t n = 0, pn = strlen(prose), bn = strlen(block);
	for (size_t i = 0; i < k; i++)
		buf[n++] = prose[i % pn];
	if (k)
		buf[n++] = '\n';
	*at = n;
	memcpy(buf + n, block, bn);
	return n + bn;
}

/* The block scan for "\nbegin ": a begin line after every length of prose
 * (so at every offset of a 16-byte block and in the byte-wise tail), near
 * misses before it, and a search from the middle of a line. */
static void test_transfer_uu_find_every_offset(void **state)
{
	(void)state;
	static const char prose[] = "ab\nbegin\nbegi\nbb\nb\n\nbegin 64 x\nbeginx\nb";
	static const char block[] = "begin 644 cat.txt\n#0V%T\n`\nend\n";
	char buf[256];
	struct transfer_uu u;
	for (size_t k = 0; k <= 60; k++) {
		size_t at, n = prose_then_block(buf, prose, k, block, &at);
		assert_true(transfer_uu_find((const uint8_t *)buf, n, 0, &u));
		assert_int_equal(u.start, at);
		assert_int_equal(u.end, n);
		assert_true(u.terminated);
		/* From inside the line before, or inside the begin line. */
		if (at > 1) {
			assert_true(transfer_uu_find((const uint8_t *)buf, n, at - 1, &u));
			assert_int_equal(u.start, at);
		}
		assert_false(transfer_uu_find((const uint8_t *)buf, n, at + 1, &u));
		/* Cut short: "begin" with no room for its space, then with
		 * nothing after it. */
		for (size_t cut = at + 1; cut <= at + 6; cut++)
			assert_false(transfer_uu_find((const uint8_t *)buf, cut, 0, &u));
		/* Prose only. */
		assert_false(transfer_uu_find((const uint8_t *)buf, at, 0, &u));
	}
}

/* A block after every length of prose with no "begin" in it (lines that
 * start with 'b' included), up to past two blocks of the vector search,
 * found from the start: each position is looked at. */
static void test_transfer_uu_find_after_long_prose(void **state)
{
	(void)state;
	static const char prose[] = "ab\nbb\nb x\nbegi\n\n";
	static const char block[] = "begin 644 cat.txt\n#0V%T\n`\nend\n";
	char buf[256];
	struct transfer_uu u;
	for (size_t k = 1; k <= 150; k++) {
		size_t at, n = prose_then_block(buf, prose, k, block, &at);
		assert_true(transfer_uu_find((const uint8_t *)buf, n, 0, &u));
		assert_int_equal(u.start, at);
	}
}

static void test_transfer_uu_unterminated(void **state)
{
	(void)state;
	struct transfer_uu u;
	const char t[] = "begin 600 a.bin\n#0V%T\nsome prose after\n";
	assert_true(transfer_uu_find((const uint8_t *)t, sizeof(t) - 1, 0, &u));
	assert_false(u.terminated);
	assert_int_equal(u.end, 22);     /* stops before the prose */
}

static void test_transfer_uu_damaged_warns(void **state)
{
	(void)state;
	uint64_t w = 0;
	/* A byte outside ' '..'`' inside the data. */
	uint64_t k = transfer_uu_decode(S("#0v%T\n`\n"), (uint8_t *)out, sizeof(out), &w);
	assert_int_equal(k, 3);
	assert_int_equal(w, UINT64_C(1) << MAIL_W_BAD_UUENCODE);
	/* Trailing spaces stripped in transit are tolerated. */
	w = 0;
	k = transfer_uu_decode(S("#0V%\n"), (uint8_t *)out, sizeof(out), &w);
	assert_int_equal(k, 3);
	assert_int_equal(w, 0);
}

static void test_transfer_decode_uuencode_body(void **state)
{
	(void)state;
	uint64_t w = 0;
	uint64_t k = transfer_decode(TRANSFER_UUENCODE, (const uint8_t *)uu_text, sizeof(uu_text) - 1,
	                             (uint8_t *)out, sizeof(out), &w);
	assert_int_equal(k, 3);
	assert_memory_equal(out, "Cat", 3);
	assert_int_equal(w, 0);
}

/* A length byte that promises more than its line holds ("_" says 63 bytes)
 * decodes at most the line's own length: output never grows past input
 * (the MIME walk sizes its buffers by the input), with a warning. */
static void test_transfer_uu_length_byte_past_line(void **state)
{
	(void)state;
	char buf[128];
	uint64_t w = 0;
	uint64_t k = transfer_uu_decode(S("_\n_\n"), (uint8_t *)buf, sizeof(buf), &w);
	assert_true(k <= 4);
	assert_true(w & (UINT64_C(1) << MAIL_W_BAD_UUENCODE));
	w = 0;
	k = transfer_decode(TRANSFER_UUENCODE, S("begin 644 x\nM\n`\nend\n"), (uint8_t *)buf,
	                    sizeof(buf), &w);
	assert_true(k <= 2);
	assert_true(w & (UINT64_C(1) << MAIL_W_BAD_UUENCODE));
	/* Size-only and prefix decodes agree with the full one. */
	assert_int_equal(transfer_uu_decode(S("_\n_\n"), NULL, 0, NULL),
	                 transfer_uu_decode(S("_\n_\n"), (uint8_t *)buf, 1, NULL));
}

/* The size from a leading run (the MIME walk's count) is the size
 * without it, with the same warnings and the same sniffing prefix, also
 * when the run is cut to fewer bytes than the data (the content before a
 * delimiter's line end) or is longer than the data (not used). */
static void assert_run_agrees(const uint8_t *in, size_t n, uint64_t k, uint64_t w, const uint8_t *full)
{
	uint8_t pre[4096];
	struct transfer_b64_run run = transfer_base64_run(in, n);
	for (size_t i = 0; i < run.len; i++)
		assert_true(in[i] != '=' && in[i] != '-');
	for (int cut = 0; cut < 2; cut++) {
		uint64_t w2 = 0, w3 = 0;
		assert_int_equal(transfer_base64_decode_run(in, n, &run, NULL, 0, &w2), k);
		assert_int_equal(transfer_base64_decode_run(in, n, &run, pre, sizeof(pre), &w3), k);
		assert_int_equal(w2, w);
		assert_int_equal(w3, w);
		assert_memory_equal(full, pre, k < sizeof(pre) ? (size_t)k : sizeof(pre));
		run.len = n + 1;
	}
}

/* Size-only decoding of a large attachment (the vector counting path, past
 * its 255-step blocks) agrees with the full decode, with garbage, padding
 * and a lone sextet at chosen places; so does a 4 KiB sniffing prefix. */
static void test_transfer_base64_size_only_large(void **state)
{
	(void)state;
	size_t n = 300000;
	uint8_t *in = malloc(n), *full = malloc(n), pre[4096];
	assert_non_null(in);
	assert_non_null(full);
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	for (int variant = 0; variant < 5; variant++) {
		for (size_t i = 0; i < n; i++)
			in[i] = (i % 78 == 76) ? '\r' : (i % 78 == 77) ? '\n' : (uint8_t)al[(i * 7 + i / 5) % 64];
		if (variant == 1)
			in[123457] = '!';                 /* garbage: bad-base64 */
		if (variant == 2)
			in[200003] = '=';                 /* a pad mid-stream */
		if (variant == 3)
			in[n - 3] = ' ';
		if (variant == 4)
			in[n - 4] = '\n';                /* a lone sextet at the end */
		uint64_t w1 = 0, w2 = 0, w3 = 0;
		uint64_t a = transfer_base64_decode(in, n, full, n, &w1);
		uint64_t b = transfer_base64_decode(in, n, NULL, 0, &w2);
		uint64_t c = transfer_base64_decode(in, n, pre, sizeof(pre), &w3);
		assert_int_equal(a, b);
		assert_int_equal(a, c);
		assert_int_equal(w1, w2);
		assert_int_equal(w1, w3);
		assert_memory_equal(full, pre, sizeof(pre));
		assert_run_agrees(in, n, a, w1, full);
		if (variant == 1)
			assert_true(w1 & (UINT64_C(1) << MAIL_W_BAD_BASE64));
	}
	free(in);
	free(full);
}

/* Bytes encoded with lines of several lengths (none at all; 76, RFC 2045's
 * longest; one block of the vector loop; shorter; one quantum) decode back
 * to themselves, every byte value included, with the full decode taking
 * whole blocks between line ends. */
static void test_transfer_base64_round_trip(void **state)
{
	(void)state;
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t n = 9001;
	uint8_t *raw = malloc(n), *enc = malloc(2 * n + 16), *dec = malloc(2 * n + 16);
	assert_non_null(raw);
	assert_non_null(enc);
	assert_non_null(dec);
	uint32_t x = 12345;
	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		raw[i] = (uint8_t)(i < 256 ? i : x >> 16);
	}
	static const size_t line[] = { 0, 76, 32, 40, 4 };
	for (size_t L = 0; L < sizeof(line) / sizeof(line[0]); L++) {
		size_t e = 0, col = 0;
		for (size_t i = 0; i < n; i += 3) {
			uint32_t v = (uint32_t)raw[i] << 16 | (i + 1 < n ? (uint32_t)raw[i + 1] << 8 : 0) |
			             (i + 2 < n ? raw[i + 2] : 0);
			for (int k = 0; k < 4; k++) {
				enc[e++] = (k >= 2 && i + (size_t)k > n) ? '=' : (uint8_t)al[v >> (18 - 6 * k) & 63];
				if (line[L] && ++col == line[L]) {
					enc[e++] = '\r';
					enc[e++] = '\n';
					col = 0;
				}
			}
		}
		uint64_t w = 0;
		uint64_t k = transfer_base64_decode(enc, e, dec, e, &w);
		assert_int_equal(k, n);
		assert_int_equal(w, 0);
		assert_memory_equal(dec, raw, n);
	}
	free(raw);
	free(enc);
	free(dec);
}

/* Every byte value, inside a long run of base64 lines, is classified by
 * the size-only count as the full decode's byte loop classifies it: the
 * sizes and warnings agree. */
static void test_transfer_base64_count_every_byte(void **state)
{
	(void)state;
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint8_t in[400], full[400];
	for (unsigned b = 0; b < 256; b++) {
		for (size_t at = 100; at < 140; at += 13) {
			for (size_t i = 0; i < sizeof(in); i++)
				in[i] = i % 78 == 77 ? '\n' : (uint8_t)al[(i * 5) % 64];
			in[at] = (uint8_t)b;
			uint64_t w1 = 0, w2 = 0;
			uint64_t k1 = transfer_base64_decode(in, sizeof(in), full, sizeof(full), &w1);
			uint64_t k2 = transfer_base64_decode(in, sizeof(in), NULL, 0, &w2);
			assert_int_equal(k1, k2);
			assert_int_equal(w1, w2);
			assert_run_agrees(in, sizeof(in), k1, w1, full);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transfer_base64_plain),
		cmocka_unit_test(test_transfer_base64_whitespace),
		cmocka_unit_test(test_transfer_base64_missing_padding),
		cmocka_unit_test(test_transfer_base64_garbage_warns),
		cmocka_unit_test(test_transfer_base64_truncated_warns),
		cmocka_unit_test(test_transfer_base64_concatenated),
		cmocka_unit_test(test_transfer_base64_prefix),
		cmocka_unit_test(test_transfer_base64_round_trip),
		cmocka_unit_test(test_transfer_base64_count_every_byte),
		cmocka_unit_test(test_transfer_qp_escapes),
		cmocka_unit_test(test_transfer_qp_soft_breaks),
		cmocka_unit_test(test_transfer_qp_invalid_kept_literally),
		cmocka_unit_test(test_transfer_qp_prefix),
		cmocka_unit_test(test_transfer_qp_runs_and_caps),
		cmocka_unit_test(test_transfer_encoding_names),
		cmocka_unit_test(test_transfer_uu_length_byte_past_line),
		cmocka_unit_test(test_transfer_base64_size_only_large),
		cmocka_unit_test(test_transfer_uu_find_and_decode),
		cmocka_unit_test(test_transfer_uu_find_every_offset),
		cmocka_unit_test(test_transfer_uu_find_after_long_prose),
		cmocka_unit_test(test_transfer_uu_not_a_block),
		cmocka_unit_test(test_transfer_uu_unterminated),
		cmocka_unit_test(test_transfer_uu_damaged_warns),
		cmocka_unit_test(test_transfer_decode_uuencode_body),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
