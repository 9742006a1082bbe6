/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/mime.c: the tree walk (boundaries, preamble and
 * epilogue, nesting, caps), the choice of text, attachments and their
 * metadata, format=flowed, and every MIME warning. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "mail/mail.h"
#include "mail/mime.h"

#define W(x) (UINT64_C(1) << MAIL_W_##x)
#define PNG_B64 "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1Pe"

static struct mail_ctx *ctx;
static struct mail_message m;

T_CTX_GLOBAL(ctx)

static void parse_opt(const char *msg, size_t len, size_t max_text)
{
	struct mail_options o = { .max_text = max_text, .want_text = true };
	assert_int_equal(mail_parse(ctx, &o, (const uint8_t *)msg, len, &m), 0);
	assert_true(m.is_mail);
}

static void parse(const char *msg)
{
	parse_opt(msg, strlen(msg), LIMIT_MAX_TEXT_DEFAULT);
}

static void test_mime_single_part_default(void **state)
{
	(void)state;
	parse("Subject: x\n\nHello\nworld\n");
	t_assert_str(m.content_type, "text/plain");
	t_assert_str(m.text, "Hello\nworld");
	assert_int_equal(m.parts, 1);
	assert_int_equal(m.n_attachments, 0);
	assert_int_equal(m.warnings, 0);
}

static const char mixed[] =
	"Content-Type: multipart/mixed; boundary=\"XX\"\r\n"
	"\r\n"
	"This is the preamble.\r\n"
	"--XX\r\n"
	"Content-Type: text/plain; charset=utf-8\r\n"
	"\r\n"
	"Body text.\r\n"
	"--XX\r\n"
	"Content-Type: image/png; name=\"pic.png\"\r\n"
	"Content-Disposition: attachment; filename=\"real.png\"\r\n"
	"Content-Transfer-Encoding: base64\r\n"
	"Content-ID: <img1@example.org>\r\n"
	"\r\n"
	PNG_B64 "\r\n"
	"--XX--\r\n"
	"This is the epilogue.\r\n";

static void test_mime_mixed_text_and_attachment(void **state)
{
	(void)state;
	parse(mixed);
	t_assert_str(m.content_type, "multipart/mixed");
	t_assert_str(m.text, "Body text.");
	assert_int_equal(m.parts, 3);
	assert_int_equal(m.n_attachments, 1);
	struct mail_attachment *a = &m.attachments[0];
	t_assert_str(a->filename, "real.png");
	t_assert_str(a->content_type, "image/png");
	t_assert_str(a->detected_type, "image/png");
	t_assert_str(a->disposition, "attachment");
	t_assert_str(a->content_id, "img1@example.org");
	assert_int_equal(a->size, 33);
	assert_int_equal(m.warnings, 0);
}

static void test_mime_filename_from_name_param(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=b\n\n--b\n"
	      "Content-Type: application/pdf; name=\"doc.pdf\"\n\n%PDF-1.4\n--b--\n");
	assert_int_equal(m.n_attachments, 1);
	t_assert_str(m.attachments[0].filename, "doc.pdf");
	t_assert_str(m.attachments[0].disposition, NULL);
	t_assert_str(m.attachments[0].detected_type, "application/pdf");
	assert_int_equal(m.attachments[0].size, 8);
}

static void test_mime_filename_rfc2231_wins(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=b\n\n--b\n"
	      "Content-Type: application/octet-stream; name=\"n.bin\"\n"
	      "Content-Disposition: attachment; filename=\"plain.bin\";\n"
	      " filename*=utf-8''%E2%82%AC.bin\n\nxyz\n--b--\n");
	t_assert_str(m.attachments[0].filename, "\xe2\x82\xac.bin");
}

static void test_mime_alternative_prefers_plain(void **state)
{
	(void)state;
	parse("Content-Type: multipart/alternative; boundary=a\n\n"
	      "--a\nContent-Type: text/html\n\n<p>HTML version</p>\n"
	      "--a\nContent-Type: text/plain\n\nPlain version\n--a--\n");
	t_assert_str(m.text, "Plain version");
	assert_int_equal(m.parts, 3);
}

static void test_mime_alternative_html_only(void **state)
{
	(void)state;
	parse("Content-Type: multipart/alternative; boundary=a\n\n"
	      "--a\nContent-Type: text/calendar; method=REQUEST\nContent-Disposition: attachment\n\nBEGIN:VCALENDAR\n"
	      "--a\nContent-Type: text/html; charset=iso-8859-1\n\n<p>Caf&eacute; <b>\xe9t\xe9</b></p>\n--a--\n");
	t_assert_str(m.text, "Caf\xc3\xa9 \xc3\xa9t\xc3\xa9");
	assert_int_equal(m.n_attachments, 1);
	t_assert_str(m.attachments[0].content_type, "text/calendar");
}

static void test_mime_alternative_with_related(void **state)
{
	(void)state;
	parse("Content-Type: multipart/alternative; boundary=a\n\n"
	      "--a\nContent-Type: multipart/related; boundary=r\n\n"
	      "--r\nContent-Type: text/html\n\n<div>rich</div>\n"
	      "--r\nContent-Type: image/png\nContent-Transfer-Encoding: base64\nContent-ID: <c1>\n\n" PNG_B64 "\n"
	      "--r--\n"
	      "--a\nContent-Type: text/plain\n\nsimple\n--a--\n");
	t_assert_str(m.text, "simple");
	assert_int_equal(m.parts, 5);
	assert_int_equal(m.n_attachments, 1);
	t_assert_str(m.attachments[0].content_id, "c1");
	assert_int_equal(m.warnings, 0);
}

static void test_mime_mixed_concatenates_inline_text(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=b\n\n"
	      "--b\n\none\n--b\nContent-Type: text/html\n\n<p>two</p>\n"
	      "--b\nContent-Type: text/x-diff\n\n+three\n--b--\n");
	t_assert_str(m.text, "one\ntwo\n+three");
	assert_int_equal(m.n_attachments, 0);
}

static void test_mime_text_attachment_not_in_text(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=b\n\n"
	      "--b\n\nbody\n--b\nContent-Type: text/plain\nContent-Disposition: attachment; filename=a.txt\n\nsecret\n--b--\n");
	t_assert_str(m.text, "body");
	assert_int_equal(m.n_attachments, 1);
	t_assert_str(m.attachments[0].filename, "a.txt");
	assert_int_equal(m.attachments[0].size, 6);
	t_assert_str(m.attachments[0].detected_type, NULL);   /* text is never sniffed */
}

static void test_mime_inline_text_with_filename_is_both(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=b\n\n"
	      "--b\nContent-Type: text/x-patch; name=fix.patch\nContent-Disposition: inline; filename=fix.patch\n\n+code\n--b--\n");
	t_assert_str(m.text, "+code");
	assert_int_equal(m.n_attachments, 1);
	t_assert_str(m.attachments[0].disposition, "inline");
	assert_int_equal(m.attachments[0].size, 5);
}

static void test_mime_missing_boundary(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed\n\nraw body\n");
	assert_int_equal(m.warnings, W(MISSING_BOUNDARY));
	t_assert_str(m.text, "raw body");
	assert_int_equal(m.parts, 1);
}

static void test_mime_no_delimiter_is_malformed(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=zz\n\njust text\n");
	assert_int_equal(m.warnings, W(MALFORMED_MULTIPART));
	t_assert_str(m.text, "just text");
}

static void test_mime_unterminated_multipart(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=b\n\n--b\n\nfirst\n--b\n\nsecond\n");
	assert_int_equal(m.warnings, W(UNTERMINATED_MULTIPART));
	t_assert_str(m.text, "first\nsecond");
	assert_int_equal(m.parts, 3);
}

static void test_mime_truncated_in_part_headers(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=b\n\n--b\n\nfirst\n--b\nContent-Type: text/pl");
	assert_int_equal(m.warnings, W(UNTERMINATED_MULTIPART) | W(TRUNCATED_MESSAGE));
	t_assert_str(m.text, "first");
}

static void test_mime_boundary_trailing_space_and_crlf(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=b\r\n\r\n--b \t\r\n\r\nA\r\nB\r\n--b--  \r\n");
	assert_int_equal(m.warnings, 0);
	t_assert_str(m.text, "A\nB");
}

static void test_mime_boundary_prefix_is_not_delimiter(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=abc\n\n--abc\n\nx\n--abcdef\ny\n--abc--\n");
	t_assert_str(m.text, "x\n--abcdef\ny");
	assert_int_equal(m.parts, 2);
}

static void test_mime_outer_boundary_closes_inner(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=o\n\n"
	      "--o\nContent-Type: multipart/mixed; boundary=i\n\n--i\n\ninner\n"
	      "--o\n\nouter\n--o--\n");
	assert_int_equal(m.warnings, W(UNTERMINATED_MULTIPART));
	t_assert_str(m.text, "inner\nouter");
	assert_int_equal(m.parts, 4);
}

static void test_mime_nested_identical_boundary(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=s\n\n"
	      "--s\nContent-Type: multipart/alternative; boundary=s\n\n"
	      "--s\n\nin1\n--s--\n--s\n\nout2\n--s--\n");
	assert_true(m.warnings & W(MALFORMED_MULTIPART));
	t_assert_str(m.text, "in1\nout2");
}

static void test_mime_nested_message(void **state)
{
	(void)state;
	parse("Subject: outer\nContent-Type: multipart/mixed; boundary=b\n\n"
	      "--b\n\nSee below.\n"
	      "--b\nContent-Type: message/rfc822\n\nSubject: inner\nFrom: x@y\n\nForwarded body.\n--b--\n");
	t_assert_str(m.subject, "outer");
	t_assert_str(m.text, "See below.\nForwarded body.");
	assert_int_equal(m.parts, 4);
	assert_int_equal(m.n_attachments, 0);
}

static void test_mime_attached_message_not_walked(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=b\n\n--b\n\nmain\n"
	      "--b\nContent-Type: message/rfc822\nContent-Disposition: attachment; filename=fw.eml\n\n"
	      "Subject: inner\n\nhidden\n--b--\n");
	t_assert_str(m.text, "main");
	assert_int_equal(m.n_attachments, 1);
	t_assert_str(m.attachments[0].content_type, "message/rfc822");
	t_assert_str(m.attachments[0].filename, "fw.eml");
	assert_int_equal(m.attachments[0].size, 22);
}

static void test_mime_digest_default_type(void **state)
{
	(void)state;
	parse("Content-Type: multipart/digest; boundary=d\n\n"
	      "--d\n\nSubject: one\n\nfirst msg\n--d\n\nSubject: two\n\nsecond msg\n--d--\n");
	t_assert_str(m.text, "first msg\nsecond msg");
	assert_int_equal(m.parts, 5);
}

static void test_mime_nesting_overflow(void **state)
{
	(void)state;
	char *msg = malloc(64 * 1024);
	size_t k = 0;
	for (int d = 0; d < LIMIT_MIME_DEPTH + 5; d++)
		k += (size_t)sprintf(msg + k, "Content-Type: multipart/mixed; boundary=b%d\n\n--b%d\n", d, d);
	k += (size_t)sprintf(msg + k, "\ndeep text\n");
	parse_opt(msg, k, LIMIT_MAX_TEXT_DEFAULT);
	assert_true(m.warnings & W(NESTING_OVERFLOW));
	assert_int_equal(m.parts, LIMIT_MIME_DEPTH + 1);
	assert_null(m.text.p);          /* past the cap it is opaque */
	free(msg);
}

static void test_mime_too_many_parts(void **state)
{
	(void)state;
	size_t cap = 64 + (size_t)(LIMIT_MIME_PARTS + 10) * 8;
	char *msg = malloc(cap);
	size_t k = (size_t)sprintf(msg, "Content-Type: multipart/mixed; boundary=b\n\n");
	for (int i = 0; i < LIMIT_MIME_PARTS + 10; i++)
		k += (size_t)sprintf(msg + k, "--b\n\nx\n");
	k += (size_t)sprintf(msg + k, "--b--\n");
	parse_opt(msg, k, LIMIT_MAX_TEXT_DEFAULT);
	assert_int_equal(m.warnings, W(TOO_MANY_PARTS));
	assert_int_equal(m.parts, LIMIT_MIME_PARTS);
	free(msg);
}

static void test_mime_format_flowed(void **state)
{
	(void)state;
	parse("Content-Type: text/plain; format=flowed\n\n"
	      "This is a \nflowed para.\n> quoted \n> more\n From stuffed\n-- \nsig\n");
	t_assert_str(m.text, "This is a flowed para.\n> quoted more\nFrom stuffed\n-- \nsig");
	parse("Content-Type: text/plain; format=flowed; delsp=yes\n\nab \ncd\n");
	t_assert_str(m.text, "abcd");
}

static void test_mime_charset_and_qp(void **state)
{
	(void)state;
	parse("Content-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: quoted-printable\n\n"
	      "Gr=FC=DFe, soft=\nbreak\n");
	t_assert_str(m.text, "Gr\xc3\xbc\xc3\x9f" "e, softbreak");
	parse("Content-Type: text/plain; charset=ISO-8859-1\nContent-Transfer-Encoding: base64\n\n"
	      "R3L832UgYXVzIEv2bG4=\n");
	t_assert_str(m.text, "Gr\xc3\xbc\xc3\x9f" "e aus K\xc3\xb6ln");
}

static void test_mime_bad_base64_and_qp_warn(void **state)
{
	(void)state;
	parse("Content-Transfer-Encoding: base64\n\nTW!Fu\n");
	assert_int_equal(m.warnings, W(BAD_BASE64));
	t_assert_str(m.text, "Man");
	parse("Content-Transfer-Encoding: quoted-printable\n\na=ZZ\n");
	assert_int_equal(m.warnings, W(BAD_QUOTED_PRINTABLE));
	t_assert_str(m.text, "a=ZZ");
}

static void test_mime_text_truncated(void **state)
{
	(void)state;
	/* "é" straddles the cap of 6 bytes: the cut goes before it. */
	const char msg[] = "Content-Type: text/plain; charset=utf-8\n\nabcde\xc3\xa9xyz\n";
	parse_opt(msg, sizeof(msg) - 1, 6);
	assert_true(m.text_truncated);
	assert_int_equal(m.warnings, W(TEXT_TRUNCATED));
	t_assert_str(m.text, "abcde");
}

static void test_mime_type_mismatch(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=b\n\n--b\n"
	      "Content-Type: image/jpeg\nContent-Transfer-Encoding: base64\n\n" PNG_B64 "\n--b--\n");
	assert_int_equal(m.warnings, W(TYPE_MISMATCH));
	t_assert_str(m.attachments[0].detected_type, "image/png");
	parse("Content-Type: multipart/mixed; boundary=b\n\n--b\n"
	      "Content-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\n" PNG_B64 "\n--b--\n");
	assert_int_equal(m.warnings, 0);
}

static void test_mime_uuencode_in_text(void **state)
{
	(void)state;
	parse("Subject: uu\n\nHere it is:\nbegin 644 cat.txt\n#0V%T\n`\nend\nThanks\n");
	t_assert_str(m.text, "Here it is:\nThanks");
	assert_int_equal(m.n_attachments, 1);
	t_assert_str(m.attachments[0].filename, "cat.txt");
	t_assert_str(m.attachments[0].content_type, "application/octet-stream");
	assert_int_equal(m.attachments[0].size, 3);
	assert_int_equal(m.warnings, 0);
}

static void test_mime_bad_uuencode(void **state)
{
	(void)state;
	parse("Subject: uu\n\nbegin 644 cat.txt\n#0V%T\nno end line here\n");
	assert_int_equal(m.warnings, W(BAD_UUENCODE));
	assert_int_equal(m.n_attachments, 1);
	t_assert_str(m.text, "no end line here");
}

static void test_mime_unknown_transfer_encoding(void **state)
{
	(void)state;
	parse("Content-Type: text/plain\nContent-Transfer-Encoding: x-rot13\n\nuryyb\n");
	assert_int_equal(m.warnings, W(UNKNOWN_TRANSFER_ENCODING));
	assert_null(m.text.p);
	assert_int_equal(m.n_attachments, 1);
	assert_int_equal(m.attachments[0].size, 6);
}

static void test_mime_no_text_option(void **state)
{
	(void)state;
	struct mail_options o = { .max_text = 100, .want_text = false };
	assert_int_equal(mail_parse(ctx, &o, (const uint8_t *)mixed, sizeof(mixed) - 1, &m), 0);
	assert_null(m.text.p);
	assert_int_equal(m.n_attachments, 1);
}

/* A body part that lacks the blank line after its headers: the first line
 * that is not a field starts its content (header.h), nothing is lost. */
static void test_mime_part_without_blank_line(void **state)
{
	(void)state;
	parse("Content-Type: multipart/mixed; boundary=b\n\n"
	      "--b\nContent-Type: text/plain\nHello body\nsecond: line\n"
	      "--b\nplain part, no headers at all\n--b--\n");
	assert_int_equal(m.parts, 3);
	t_assert_str(m.text, "Hello body\nsecond: line\nplain part, no headers at all");
	assert_int_equal(m.warnings, W(MALFORMED_HEADER));
}

/* A uuencode file name in raw 8-bit bytes is made valid UTF-8 (windows-1252
 * when it is not UTF-8 already). */
static void test_mime_uu_filename_made_utf8(void **state)
{
	(void)state;
	parse("From: a@b\n\nbegin 644 \xff.txt\n`\nend\n");
	assert_int_equal(m.n_attachments, 1);
	t_assert_str(m.attachments[0].filename, "\xc3\xbf.txt");
	parse("From: a@b\n\nbegin 644 caf\xc3\xa9.txt\n`\nend\n");
	t_assert_str(m.attachments[0].filename, "caf\xc3\xa9.txt");
}

/* Length bytes that promise more than their lines hold ("_" is 63 bytes):
 * the decoded text part stays inside the buffer sized by the input (an ASan
 * over-read before). */
static void test_mime_uu_length_byte_overread(void **state)
{
	(void)state;
	static const char msg[] = "From: a@b\nContent-Type: text/plain\n"
		"Content-Transfer-Encoding: x-uuencode\n\nbegin 644 x\n_\n_\n_\n_\n_\n_\n_\n_\n";
	parse(msg);
	for (size_t i = 0; i < m.n_attachments; i++)
		assert_true(m.attachments[i].size <= sizeof(msg));
	assert_true(m.warnings & W(BAD_UUENCODE));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mime_part_without_blank_line),
		cmocka_unit_test(test_mime_uu_filename_made_utf8),
		cmocka_unit_test(test_mime_uu_length_byte_overread),
		cmocka_unit_test(test_mime_single_part_default),
		cmocka_unit_test(test_mime_mixed_text_and_attachment),
		cmocka_unit_test(test_mime_filename_from_name_param),
		cmocka_unit_test(test_mime_filename_rfc2231_wins),
		cmocka_unit_test(test_mime_alternative_prefers_plain),
		cmocka_unit_test(test_mime_alternative_html_only),
		cmocka_unit_test(test_mime_alternative_with_related),
		cmocka_unit_test(test_mime_mixed_concatenates_inline_text),
		cmocka_unit_test(test_mime_text_attachment_not_in_text),
		cmocka_unit_test(test_mime_inline_text_with_filename_is_both),
		cmocka_unit_test(test_mime_missing_boundary),
		cmocka_unit_test(test_mime_no_delimiter_is_malformed),
		cmocka_unit_test(test_mime_unterminated_multipart),
		cmocka_unit_test(test_mime_truncated_in_part_headers),
		cmocka_unit_test(test_mime_boundary_trailing_space_and_crlf),
		cmocka_unit_test(test_mime_boundary_prefix_is_not_delimiter),
		cmocka_unit_test(test_mime_outer_boundary_closes_inner),
		cmocka_unit_test(test_mime_nested_identical_boundary),
		cmocka_unit_test(test_mime_nested_message),
		cmocka_unit_test(test_mime_attached_message_not_walked),
		cmocka_unit_test(test_mime_digest_default_type),
		cmocka_unit_test(test_mime_nesting_overflow),
		cmocka_unit_test(test_mime_too_many_parts),
		cmocka_unit_test(test_mime_format_flowed),
		cmocka_unit_test(test_mime_charset_and_qp),
		cmocka_unit_test(test_mime_bad_base64_and_qp_warn),
		cmocka_unit_test(test_mime_text_truncated),
		cmocka_unit_test(test_mime_type_mismatch),
		cmocka_unit_test(test_mime_uuencode_in_text),
		cmocka_unit_test(test_mime_bad_uuencode),
		cmocka_unit_test(test_mime_unknown_transfer_encoding),
		cmocka_unit_test(test_mime_no_text_option),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
