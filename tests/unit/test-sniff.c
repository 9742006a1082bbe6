/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/sniff.c: lazy load, binary types, no answer for empty
 * input or a missing cookie, and the prefix cap. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
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

/* PGP armour is named without libmagic, as libmagic names it with the
 * flags sniff.c gives it; a header line it does not know still goes to
 * libmagic. */
static void test_sniff_pgp_armour_agrees_with_libmagic(void **state)
{
	(void)state;
	static const char *const kinds[] = {
		"SIGNATURE", "MESSAGE", "PUBLIC KEY BLOCK", "PRIVATE KEY BLOCK", "SIGNED MESSAGE",
		"ARMORED FILE", "SECRET KEY BLOCK",
	};
	struct sniff_cookie *s = sniff_cookie_new();
	magic_t mg = magic_open(SNIFF_MAGIC_FLAGS);
	assert_non_null(mg);
	assert_int_equal(magic_load(mg, NULL), 0);
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		for (int crlf = 0; crlf < 2; crlf++) {
			char buf[256];
			const char *nl = crlf ? "\r\n" : "\n";
			int len = snprintf(buf, sizeof(buf), "-----BEGIN PGP %s-----%sVersion: GnuPG v2%s%s"
			                   "iQIzBAEBCAAdFiEEabc%s=XyZ1%s-----END PGP %s-----%s",
			                   kinds[i], nl, nl, nl, nl, nl, kinds[i], nl);
			const char *want = magic_buffer(mg, buf, (size_t)len);
			assert_non_null(want);
			assert_string_equal(sniff_buffer(s, (const uint8_t *)buf, (size_t)len), want);
		}
	}
	magic_close(mg);
	sniff_cookie_free(s);
}

/* S/MIME's PKCS#7 blobs (DER lengths of every width, and BER's indefinite
 * length) are answered without libmagic, with libmagic's own answer. */
static void test_sniff_pkcs7_agrees_with_libmagic(void **state)
{
	(void)state;
	static const uint8_t heads[][6] = {
		{ 2, 0x30, 0x40 }, { 3, 0x30, 0x81, 0xf0 }, { 4, 0x30, 0x82, 0x07, 0x45 },
		{ 5, 0x30, 0x83, 0x01, 0x00, 0x00 }, { 2, 0x30, 0x80 },
	};
	static const uint8_t oid[] = { 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x07 };
	struct sniff_cookie *s = sniff_cookie_new();
	magic_t mg = magic_open(SNIFF_MAGIC_FLAGS);
	assert_non_null(mg);
	assert_int_equal(magic_load(mg, NULL), 0);
	for (size_t h = 0; h < sizeof(heads) / sizeof(heads[0]); h++) {
		for (uint8_t kind = 1; kind <= 6; kind++) {
			uint8_t buf[512];
			size_t k = heads[h][0];
			memcpy(buf, heads[h] + 1, k);
			memcpy(buf + k, oid, sizeof(oid));
			k += sizeof(oid);
			buf[k++] = kind;
			for (size_t i = k; i < sizeof(buf); i++)
				buf[i] = (uint8_t)(i * 131 + 7);
			const char *want = magic_buffer(mg, buf, sizeof(buf));
			assert_non_null(want);
			assert_string_equal(sniff_buffer(s, buf, sizeof(buf)), want);
		}
	}
	magic_close(mg);
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

/* Appends a stored zip local file header (version 20, no flags) with name,
 * extra field and data at z[*k]. */
static void zip_put(uint8_t *z, size_t *k, const char *name, const void *extra, size_t xl,
                    const void *data, size_t dl)
{
	size_t nl = strlen(name);
	uint8_t h[30] = { 'P', 'K', 3, 4, 20 };
	h[18] = (uint8_t)dl, h[19] = (uint8_t)(dl >> 8);
	h[22] = (uint8_t)dl, h[23] = (uint8_t)(dl >> 8);
	h[26] = (uint8_t)nl, h[28] = (uint8_t)xl;
	memcpy(z + *k, h, 30);
	memcpy(z + *k + 30, name, nl);
	memcpy(z + *k + 30 + nl, extra, xl);
	memcpy(z + *k + 30 + nl + xl, data, dl);
	*k += 30 + nl + xl + dl;
}

/* Zip-based formats are named without libmagic when the layout is one whose
 * answer is certain, and the answer is libmagic's own; other layouts still
 * get libmagic's answer. */
static void test_sniff_zip_family_agrees_with_libmagic(void **state)
{
	(void)state;
	static const struct {
		const char *names[3];
		const char *first_data;
		bool jar_extra;
		const char *want;
	} cases[] = {
		{ { "export/data-1.bin" }, "xxxx", false, "application/zip" },
		{ { "report.csv" }, "a,b\n", false, "application/zip" },
		{ { "[Content_Types].xml", "_rels/.rels", "word/document.xml" }, "<x/>", false,
		  "application/vnd.openxmlformats-officedocument.wordprocessingml.document" },
		{ { "[Content_Types].xml", "_rels/.rels", "xl/workbook.xml" }, "<x/>", false,
		  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" },
		{ { "[Content_Types].xml", "_rels/.rels", "ppt/presentation.xml" }, "<x/>", false,
		  "application/vnd.openxmlformats-officedocument.presentationml.presentation" },
		{ { "mimetype", "content.xml" }, "application/vnd.oasis.opendocument.text", false,
		  "application/vnd.oasis.opendocument.text" },
		{ { "mimetype", "content.xml" }, "application/vnd.oasis.opendocument.spreadsheet", false,
		  "application/vnd.oasis.opendocument.spreadsheet" },
		/* Left to libmagic. */
		{ { "mimetype" }, "application/epub+zip", false, "application/epub+zip" },
		{ { "AndroidManifest.xml" }, "<x/>", false, "application/vnd.android.package-archive" },
		{ { "report.csv" }, "a,b\n", true, "application/java-archive" },
		{ { "word/document.xml" }, "<x/>", false,
		  "application/vnd.openxmlformats-officedocument.wordprocessingml.document" },
	};
	static const uint8_t cafe[] = { 0xfe, 0xca, 0, 0 };
	struct sniff_cookie *s = sniff_cookie_new();
	magic_t mg = magic_open(MAGIC_MIME_TYPE | MAGIC_NO_CHECK_TEXT | MAGIC_NO_CHECK_ENCODING |
	                        MAGIC_NO_CHECK_TOKENS | MAGIC_NO_CHECK_CSV | MAGIC_NO_CHECK_JSON |
	                        MAGIC_NO_CHECK_COMPRESS);
	assert_non_null(mg);
	assert_int_equal(magic_load(mg, NULL), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t z[512];
		size_t k = 0;
		for (size_t j = 0; j < 3 && cases[i].names[j]; j++) {
			const char *d = j == 0 ? cases[i].first_data : "<x/>";
			zip_put(z, &k, cases[i].names[j], cafe, j == 0 && cases[i].jar_extra ? 4 : 0,
			        d, strlen(d));
		}
		memset(z + k, 0, 64);        /* the start of whatever follows */
		k += 64;
		assert_string_equal(magic_buffer(mg, z, k), cases[i].want);
		assert_string_equal(sniff_buffer(s, z, k), cases[i].want);
	}
	magic_close(mg);
	sniff_cookie_free(s);
}

static void test_sniff_types_agree_rules(void **state)
{
	(void)state;
	struct str d;
#define AGREE(decl, det) (d = (struct str){ decl, sizeof(decl) - 1 }, sniff_types_agree(d, det))
	assert_true(AGREE("image/png", "image/png"));
	assert_true(AGREE("image/x-png", "image/png"));
	assert_true(AGREE("image/jpg", "image/jpeg"));
	assert_true(AGREE("application/x-zip-compressed", "application/zip"));
	assert_true(AGREE("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "application/zip"));
	assert_true(AGREE("application/msword", "application/x-ole-storage"));
	assert_true(AGREE("application/x-gtar-compressed", "application/gzip"));
	assert_true(AGREE("application/pgp-signature", "text/plain"));
	assert_true(AGREE("application/octet-stream", "image/png"));
	assert_true(AGREE("image/png", "application/octet-stream"));
	assert_false(AGREE("image/jpeg", "image/png"));
	assert_false(AGREE("application/pdf", "application/zip"));
	assert_false(AGREE("image/gif", "text/plain"));
	/* Aliases in any case, with parameters, against their canonical
	 * type; a prefix or an extension of an alias is not one. */
	assert_true(AGREE("IMAGE/PJPEG; name=a", "image/jpeg"));
	assert_true(AGREE("Application/X-Gzip", "application/x-gzip"));
	assert_true(AGREE("audio/wav", "audio/x-wav"));
	assert_true(AGREE("application/pkcs7-signature", "application/pkcs7-mime"));
	assert_false(AGREE("image/jp", "image/jpeg"));
	assert_false(AGREE("image/jpgx", "image/jpeg"));
	assert_false(AGREE("audio/mp", "audio/mpeg"));
#undef AGREE
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sniff_zip_family_agrees_with_libmagic),
		cmocka_unit_test(test_sniff_png),
		cmocka_unit_test(test_sniff_pdf_and_gzip),
		cmocka_unit_test(test_sniff_no_answer),
		cmocka_unit_test(test_sniff_large_input_is_capped),
		cmocka_unit_test(test_sniff_text_is_not_sent_to_libmagic),
		cmocka_unit_test(test_sniff_signatures_agree_with_libmagic),
		cmocka_unit_test(test_sniff_pgp_armour_agrees_with_libmagic),
		cmocka_unit_test(test_sniff_pkcs7_agrees_with_libmagic),
		cmocka_unit_test(test_sniff_types_agree_rules),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
