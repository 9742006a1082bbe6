/* Unit tests for mail/sniff.c: lazy load, binary types, no answer for empty
 * input or a missing cookie, and the prefix cap. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "mail/sniff.h"

#include <magic.h>

static const uint8_t png[] = {
	0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
	0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0, 0x90, 0x77, 0x53, 0xde,
};

static void test_sniff_png(void **state)
{
	(void)state;
	struct sniff_cookie *s = sniff_cookie_new();
	assert_non_null(s);
	const char *t = sniff_buffer(s, png, sizeof(png));
	assert_non_null(t);
	assert_string_equal(t, "image/png");
	sniff_cookie_free(s);
}

static void test_sniff_pdf_and_gzip(void **state)
{
	(void)state;
	struct sniff_cookie *s = sniff_cookie_new();
	const char pdf[] = "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n";
	assert_string_equal(sniff_buffer(s, (const uint8_t *)pdf, sizeof(pdf) - 1), "application/pdf");
	const uint8_t gz[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0x4b, 0x4c, 0x4a, 6, 0 };
	assert_string_equal(sniff_buffer(s, gz, sizeof(gz)), "application/gzip");
	sniff_cookie_free(s);
}

static void test_sniff_no_answer(void **state)
{
	(void)state;
	struct sniff_cookie *s = sniff_cookie_new();
	assert_null(sniff_buffer(s, png, 0));
	assert_null(sniff_buffer(NULL, png, sizeof(png)));
	sniff_cookie_free(s);
	sniff_cookie_free(NULL);
}

static void test_sniff_large_input_is_capped(void **state)
{
	(void)state;
	/* A 1 MiB buffer: only the prefix is looked at, the PNG is found. */
	static uint8_t big[1 << 20];
	memcpy(big, png, sizeof(png));
	struct sniff_cookie *s = sniff_cookie_new();
	assert_string_equal(sniff_buffer(s, big, sizeof(big)), "image/png");
	sniff_cookie_free(s);
}

static void test_sniff_text_is_not_sent_to_libmagic(void **state)
{
	(void)state;
	struct sniff_cookie *s = sniff_cookie_new();
	const char txt[] = "plain words\r\n\tand more, caf\xc3\xa9\n";
	assert_string_equal(sniff_buffer(s, (const uint8_t *)txt, sizeof(txt) - 1), "text/plain");
	const char pgp[] = "-----BEGIN PGP SIGNATURE-----\n\niQEzBAEBCAAdFiEE\n-----END PGP SIGNATURE-----\n";
	assert_string_equal(sniff_buffer(s, (const uint8_t *)pgp, sizeof(pgp) - 1), "application/pgp-signature");
	sniff_cookie_free(s);
}

static void test_sniff_signatures_agree_with_libmagic(void **state)
{
	(void)state;
	/* The built-in fast path must name a type exactly as libmagic does. */
	static const char *const cases[][2] = {
		{ "GIF89a\x10\x00\x10\x00\x80\x00\x00\xff\xff\xff", "image/gif" },
		{ "\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01", "image/jpeg" },
		{ "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\x4b\x4c\x4a\x06\x00", "application/gzip" },
	};
	struct sniff_cookie *s = sniff_cookie_new();
	magic_t mg = magic_open(MAGIC_MIME_TYPE);
	assert_non_null(mg);
	assert_int_equal(magic_load(mg, NULL), 0);
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(sniff_buffer(s, (const uint8_t *)cases[i][0], 16), cases[i][1]);
		assert_string_equal(magic_buffer(mg, cases[i][0], 16), cases[i][1]);
	}
	assert_string_equal(magic_buffer(mg, png, sizeof(png)), "image/png");
	magic_close(mg);
	sniff_cookie_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sniff_png),
		cmocka_unit_test(test_sniff_pdf_and_gzip),
		cmocka_unit_test(test_sniff_no_answer),
		cmocka_unit_test(test_sniff_large_input_is_capped),
		cmocka_unit_test(test_sniff_text_is_not_sent_to_libmagic),
		cmocka_unit_test(test_sniff_signatures_agree_with_libmagic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
