/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/mail.c: the context, warning names, the record's
 * header fields, duplicated fields, --headers, not-mail detection, the mbox
 * From_ line, and arena reuse between messages. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "helpers.h"

#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "mail/mail.h"

#define W(x) (UINT64_C(1) << MAIL_W_##x)

static struct mail_ctx *ctx;
static struct mail_message m;
static const struct mail_options opts = {
	.max_text = LIMIT_MAX_TEXT_DEFAULT, .want_text = true, .want_headers = true,
};

T_CTX_GLOBAL(ctx)

static void parse_n(const void *msg, size_t n)
{
	assert_int_equal(mail_parse(ctx, &opts, msg, n, &m), 0);
}

static void parse(const char *msg)
{
	parse_n(msg, strlen(msg));
}

static void test_message_warning_names(void **state)
{
	(void)state;
	assert_string_equal(mail_warning_name(MAIL_W_DUPLICATED_HEADER), "duplicated-header");
	assert_string_equal(mail_warning_name(MAIL_W_BAD_DATE), "bad-date");
	assert_string_equal(mail_warning_name(MAIL_W_TEXT_TRUNCATED), "text-truncated");
	assert_null(mail_warning_name(MAIL_W__COUNT));
}

static void test_message_ctx_free_null(void **state)
{
	(void)state;
	mail_ctx_free(NULL);
}

static const char full[] =
	"Message-ID: <abc@example.org>\n"
	"In-Reply-To: <parent@example.org>\n"
	"References: <root@example.org>\n <parent@example.org>\n"
	"Date: Thu, 13 Sep 2001 17:28:42 -0400\n"
	"From: \"Barry W.\" <barry@example.org>\n"
	"To: a@example.org, B <b@example.org>\n"
	"Cc: c@example.org\n"
	"Subject: =?UTF-8?Q?caf=C3=A9?= time\n"
	"List-Id: Python list <python-list.python.org>\n"
	"Content-Type: TEXT/Plain; charset=us-ascii\n"
	"\n"
	"body\n";

static void test_message_fields(void **state)
{
	(void)state;
	parse(full);
	assert_true(m.is_mail);
	t_assert_str(m.message_id, "abc@example.org");
	t_assert_str(m.in_reply_to, "parent@example.org");
	assert_int_equal(m.n_references, 2);
	t_assert_str(m.references[0], "root@example.org");
	t_assert_str(m.references[1], "parent@example.org");
	assert_true(m.has_date);
	assert_int_equal(m.date, 1000416522);
	t_assert_str(m.date_raw, NULL);
	assert_int_equal(m.from.n, 1);
	t_assert_str(m.from.v[0].name, "Barry W.");
	t_assert_str(m.from.v[0].address, "barry@example.org");
	assert_int_equal(m.to.n, 2);
	t_assert_str(m.to.v[1].address, "b@example.org");
	assert_int_equal(m.cc.n, 1);
	assert_true(m.to.present);
	assert_false(m.bcc.present);
	t_assert_str(m.subject, "caf\xc3\xa9 time");
	t_assert_str(m.list_id, "python-list.python.org");
	t_assert_str(m.content_type, "text/plain");
	t_assert_str(m.text, "body");
	assert_int_equal(m.parts, 1);
	assert_int_equal(m.warnings, 0);
}

static void test_message_headers_option(void **state)
{
	(void)state;
	parse(full);
	assert_int_equal(m.n_headers, 10);
	t_assert_str(m.headers[0].name, "Message-ID");
	t_assert_str(m.headers[2].value, "<root@example.org> <parent@example.org>");
	t_assert_str(m.headers[7].name, "Subject");
	t_assert_str(m.headers[7].value, "caf\xc3\xa9 time");
	struct mail_options o = opts;
	o.want_headers = false;
	assert_int_equal(mail_parse(ctx, &o, (const uint8_t *)full, sizeof(full) - 1, &m), 0);
	assert_int_equal(m.n_headers, 0);
	assert_null(m.headers);
}

static void test_message_duplicated_header_first_wins(void **state)
{
	(void)state;
	parse("Subject: first\nsubject: second\nX-Any: 1\nX-Any: 2\n\n");
	assert_int_equal(m.warnings, W(DUPLICATED_HEADER));
	t_assert_str(m.subject, "first");
	parse("Received: a\nReceived: b\nSubject: s\n\n");
	assert_int_equal(m.warnings, 0);
}

static void test_message_bad_date(void **state)
{
	(void)state;
	parse("Date: sometime last week\n\nx\n");
	assert_false(m.has_date);
	t_assert_str(m.date_raw, "sometime last week");
	assert_int_equal(m.warnings, W(BAD_DATE));
}

static void test_message_list_id_without_brackets(void **state)
{
	(void)state;
	parse("List-Id: bare.list.example\n\n");
	t_assert_str(m.list_id, "bare.list.example");
}

static void test_message_mbox_from_line_and_bom(void **state)
{
	(void)state;
	parse("From someone@example.org Thu Sep 13 17:28:42 2001\nSubject: mbox\n\nbody\n");
	assert_true(m.is_mail);
	t_assert_str(m.subject, "mbox");
	t_assert_str(m.text, "body");
	parse("\xef\xbb\xbfSubject: bom\n\nbody\n");
	assert_true(m.is_mail);
	t_assert_str(m.subject, "bom");
}

static void test_message_not_mail_binary(void **state)
{
	(void)state;
	static const uint8_t png[] = {
		0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
		0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0, 0x90, 0x77, 0x53, 0xde,
	};
	parse_n(png, sizeof(png));
	assert_false(m.is_mail);
	t_assert_str(m.detected_type, "image/png");
}

static void test_message_not_mail_text_not_sniffed(void **state)
{
	(void)state;
	parse("Just some notes, not a message.\nSecond line.\n");
	assert_false(m.is_mail);
	t_assert_str(m.detected_type, "text/plain");
	parse_n("", 0);
	assert_false(m.is_mail);
	t_assert_str(m.detected_type, "application/x-empty");
}

static void test_message_headers_only(void **state)
{
	(void)state;
	parse("Subject: no body");
	assert_true(m.is_mail);
	t_assert_str(m.subject, "no body");
	assert_null(m.text.p);
	assert_int_equal(m.parts, 1);
}

static void test_message_reuse_ctx(void **state)
{
	(void)state;
	for (int i = 0; i < 100; i++) {
		parse(full);
		t_assert_str(m.subject, "caf\xc3\xa9 time");
	}
}

/* RFC 5322 4.5: "From :" is the obsolete From field, not an mbox From_ line. */
static void test_message_obs_from_space_colon_is_a_field(void **state)
{
	(void)state;
	parse("From : alice@example.com\nSubject: s\n\nb\n");
	assert_true(m.is_mail);
	assert_int_equal(m.from.n, 1);
	t_assert_str(m.from.v[0].address, "alice@example.com");
	assert_int_equal(m.n_headers, 2);
	t_assert_str(m.headers[0].name, "From");
	parse("From \t: bob@example.com\n\nb\n");
	assert_int_equal(m.from.n, 1);
	t_assert_str(m.from.v[0].address, "bob@example.com");
}

/* A stray continuation line before the first field: still mail, the line is
 * dropped with malformed-header (Python's FirstHeaderLineIsContinuationDefect). */
static void test_message_leading_continuation(void **state)
{
	(void)state;
	parse(" leading white space on the first line\nFrom: alice@example.com\n\nBody.\n");
	assert_true(m.is_mail);
	assert_int_equal(m.from.n, 1);
	t_assert_str(m.from.v[0].address, "alice@example.com");
	t_assert_str(m.text, "Body.");
	assert_int_equal(m.parts, 1);
	assert_int_equal(m.n_headers, 1);
	assert_int_equal(m.warnings, W(MALFORMED_HEADER));
	parse("  only indented text\nand more\n");
	assert_false(m.is_mail);
}

/* No blank line before the body: the first line that is not a field starts
 * the body, and no body line is lost. */
static void test_message_missing_blank_line(void **state)
{
	(void)state;
	parse("From: a@example.com\nSubject: s\nThis is the body\nIt: looks like a field\n");
	assert_true(m.is_mail);
	t_assert_str(m.subject, "s");
	t_assert_str(m.text, "This is the body\nIt: looks like a field");
	assert_int_equal(m.n_headers, 2);
	assert_int_equal(m.warnings, W(MALFORMED_HEADER));
}

/* Not mail that starts like a text format libmagic names: a PDF whose first
 * binary bytes are >= 0x80 (no C0 control) is application/pdf, not text. */
static void test_message_not_mail_pdf(void **state)
{
	(void)state;
	parse("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n");
	assert_false(m.is_mail);
	t_assert_str(m.detected_type, "application/pdf");
}

/* The record's warnings are a function of the message, not of --headers:
 * raw 8-bit bytes in a field the record does not parse add nothing. */
static void test_message_warnings_independent_of_headers_option(void **state)
{
	(void)state;
	static const char msg[] = "From: a@example.com\nX-Note: caf\xe9\nSubject: s\xe9\n\nb\n";
	struct mail_options o = opts;
	o.want_headers = false;
	assert_int_equal(mail_parse(ctx, &o, (const uint8_t *)msg, sizeof(msg) - 1, &m), 0);
	uint64_t without = m.warnings;
	parse(msg);
	assert_int_equal(m.warnings, without);
	assert_int_equal(m.warnings, W(UNENCODED_8BIT_HEADER));   /* from Subject */
	assert_int_equal(m.n_headers, 3);
	t_assert_str(m.headers[1].value, "caf\xc3\xa9");
}

/* Field names are matched in any case, and only whole: names one letter
 * longer or shorter, or of the same length, take no field. */
static void test_message_field_names(void **state)
{
	(void)state;
	parse("MESSAGE-id: <a@b>\nIN-REPLY-TO: <c@d>\nrEfErEnCeS: <e@f>\nDATE: 1 Jan 2001 00:00:00 +0000\n"
	      "fROM: f@x\nSENDER: s@x\nREPLY-to: r@x\nTO: t@x\ncC: c@x\nBcc: b@x\n"
	      "SUBJECT: s\nlist-ID: <l.x>\n\n");
	t_assert_str(m.message_id, "a@b");
	t_assert_str(m.in_reply_to, "c@d");
	assert_int_equal(m.n_references, 1);
	assert_true(m.has_date);
	t_assert_str(m.from.v[0].address, "f@x");
	t_assert_str(m.sender.v[0].address, "s@x");
	t_assert_str(m.reply_to.v[0].address, "r@x");
	t_assert_str(m.to.v[0].address, "t@x");
	t_assert_str(m.cc.v[0].address, "c@x");
	t_assert_str(m.bcc.v[0].address, "b@x");
	t_assert_str(m.subject, "s");
	t_assert_str(m.list_id, "l.x");
	assert_int_equal(m.warnings, 0);

	parse("Tos: t@x\nT: t@x\nTp: t@x\nC: c@x\nDates: 1 Jan 2001\nDat: x\nSubjects: s\n"
	      "Message-Ids: <a@b>\nMessage_ID: <a@b>\nIn-Reply-T: <c@d>\nList-Idx: l\nFrom-: f@x\n"
	      "Reply_To: r@x\nSubjec: s\nX-Subject: s\nReceived: x\n\n");
	assert_false(m.to.present);
	assert_false(m.cc.present);
	assert_false(m.from.present);
	assert_false(m.reply_to.present);
	assert_false(m.has_date);
	t_assert_str(m.date_raw, NULL);
	t_assert_str(m.subject, NULL);
	t_assert_str(m.message_id, NULL);
	t_assert_str(m.in_reply_to, NULL);
	t_assert_str(m.list_id, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_message_warning_names),
		cmocka_unit_test(test_message_ctx_free_null),
		cmocka_unit_test(test_message_obs_from_space_colon_is_a_field),
		cmocka_unit_test(test_message_leading_continuation),
		cmocka_unit_test(test_message_missing_blank_line),
		cmocka_unit_test(test_message_not_mail_pdf),
		cmocka_unit_test(test_message_warnings_independent_of_headers_option),
		cmocka_unit_test(test_message_fields),
		cmocka_unit_test(test_message_field_names),
		cmocka_unit_test(test_message_headers_option),
		cmocka_unit_test(test_message_duplicated_header_first_wins),
		cmocka_unit_test(test_message_bad_date),
		cmocka_unit_test(test_message_list_id_without_brackets),
		cmocka_unit_test(test_message_mbox_from_line_and_bom),
		cmocka_unit_test(test_message_not_mail_binary),
		cmocka_unit_test(test_message_not_mail_text_not_sniffed),
		cmocka_unit_test(test_message_headers_only),
		cmocka_unit_test(test_message_reuse_ctx),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
