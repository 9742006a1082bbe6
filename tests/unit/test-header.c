/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/header.c: splitting the header block into fields,
 * line ends, BOM, obsolete syntax, malformed lines, the size cap, unfolding. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "helpers.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/limits.h"
#include "mail/header.h"

#define W(x) (UINT64_C(1) << MAIL_W_##x)

struct tcase {
	struct arena arena;
	struct header_block h;
	uint64_t warnings;
};

T_ARENA_CASE(struct tcase)

static void parse(struct tcase *t, const char *p, size_t n)
{
	t->warnings = 0;
	assert_int_equal(header_parse(&t->arena, (const uint8_t *)p, n, &t->h, &t->warnings), 0);
}

#define PARSE(t, lit) parse((t), (lit), sizeof(lit) - 1)

static void assert_field(const struct tcase *t, size_t i, const char *name, const char *value)
{
	assert_true(i < t->h.n);
	t_assert_str(t->h.v[i].name, name);
	t_assert_str(t->h.v[i].value, value);
}

static void test_header_crlf_fields_and_body(void **state)
{
	struct tcase *t = *state;
	static const char m[] = "From: a@b\r\nSubject: hi\r\n\r\nbody\r\n";
	PARSE(t, m);
	assert_int_equal(t->h.n, 2);
	assert_field(t, 0, "From", " a@b");
	assert_field(t, 1, "Subject", " hi");
	assert_int_equal(t->h.body_offset, strlen("From: a@b\r\nSubject: hi\r\n\r\n"));
	assert_int_equal(t->warnings, 0);
}

static void test_header_bare_lf(void **state)
{
	struct tcase *t = *state;
	static const char m[] = "From: a@b\nTo: c@d\n\nbody";
	PARSE(t, m);
	assert_int_equal(t->h.n, 2);
	assert_field(t, 1, "To", " c@d");
	assert_int_equal(t->h.body_offset, 19);
}

static void test_header_folded_value_kept_raw(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "Subject: one\r\n two\r\n\tthree\r\nX: y\r\n\r\n");
	assert_int_equal(t->h.n, 2);
	assert_field(t, 0, "Subject", " one\r\n two\r\n\tthree");
	assert_field(t, 1, "X", " y");
}

static void test_header_bom_skipped(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "\xef\xbb\xbf" "From: a@b\n\nx");
	assert_int_equal(t->h.n, 1);
	assert_field(t, 0, "From", " a@b");
}

static void test_header_block_ends_at_eof(void **state)
{
	struct tcase *t = *state;
	static const char m[] = "From: a@b\nSubject: no body";
	PARSE(t, m);
	assert_int_equal(t->h.n, 2);
	assert_field(t, 1, "Subject", " no body");
	assert_int_equal(t->h.body_offset, sizeof(m) - 1);
	PARSE(t, "From: a@b\r\n");
	assert_int_equal(t->h.n, 1);
	assert_field(t, 0, "From", " a@b");
	assert_int_equal(t->h.body_offset, 11);
}

static void test_header_space_before_colon(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "Subject \t: obsolete\n\n");     /* RFC 5322 4.5 */
	assert_int_equal(t->h.n, 1);
	assert_field(t, 0, "Subject", " obsolete");
	assert_int_equal(t->warnings, 0);
}

static void test_header_empty_value(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "X-Empty:\nX-Other:v\n\n");
	assert_int_equal(t->h.n, 2);
	assert_field(t, 0, "X-Empty", "");
	assert_field(t, 1, "X-Other", "v");
}

/* Fields named name, ASCII case-insensitively. */
static size_t count_named(const struct header_block *h, const char *name)
{
	size_t k = 0, n = strlen(name);
	for (size_t i = 0; i < h->n; i++)
		k += h->v[i].name.n == n && strncasecmp(h->v[i].name.p, name, n) == 0;
	return k;
}

static void test_header_repeated_fields_kept_in_order(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "Received: one\nTo: x@y\nreceived: two\nRECEIVED: three\n\n");
	assert_int_equal(t->h.n, 4);
	assert_int_equal(count_named(&t->h, "Received"), 3);
	assert_int_equal(count_named(&t->h, "cc"), 0);
	const struct header_field *f = header_get(&t->h, "RECEIVED");
	assert_non_null(f);
	t_assert_str(f->value, " one");
	assert_field(t, 2, "received", " two");
	assert_field(t, 3, "RECEIVED", " three");
	assert_null(header_get(&t->h, "Cc"));
	assert_null(header_get(&t->h, "Receive"));
	assert_int_equal(t->warnings, 0);
}

static void test_header_first_line_not_a_field(void **state)
{
	struct tcase *t = *state;
	PARSE(t, "\x89PNG\r\n\x1a\n");
	assert_int_equal(t->h.n, 0);
	assert_int_equal(t->h.body_offset, 0);
	assert_int_equal(t->warnings, 0);
	PARSE(t, "Body text at once\nFrom: a\n\n");
	assert_int_equal(t->h.n, 0);
	assert_int_equal(t->h.body_offset, 0);
	assert_int_equal(t->warnings, 0);
}

/* A continuation with no field before it is dropped with a warning (Python's
 * FirstHeaderLineIsContinuationDefect); the fields after it count. */
static void test_header_leading_continuation_dropped(void **state)
{
	struct tcase *t = *state;
	static const char m[] = " leading continuation\n\tand more\nFrom: a\n\nBody\n";
	PARSE(t, m);
	assert_int_equal(t->h.n, 1);
	assert_field(t, 0, "From", " a");
	assert_int_equal(t->h.body_offset, sizeof(m) - 1 - 5);
	assert_int_equal(t->warnings, W(MALFORMED_HEADER));
}

/* A line that is neither a field nor a continuation: dropped with a
 * warning when a field follows (the block goes on); else the body starts
 * at that line (nothing of it is lost). */
static void test_header_malformed_line_skipped(void **state)
{
	struct tcase *t = *state;
	static const char m[] = "From: a@b\nthis is not a header\n continuation of junk\nTo: c@d\n"
	                        "Message-ID: <1@x>\n\nbody\n";
	PARSE(t, m);
	assert_int_equal(t->h.n, 3);
	assert_field(t, 0, "From", " a@b");
	assert_field(t, 1, "To", " c@d");
	assert_field(t, 2, "Message-ID", " <1@x>");
	assert_int_equal(t->h.body_offset, sizeof(m) - 1 - 5);
	assert_int_equal(t->warnings, W(MALFORMED_HEADER));
	/* CRLF */
	PARSE(t, "A: 1\r\n>From x\r\nX-B: 2\r\n\r\n");
	assert_int_equal(t->h.n, 2);
	assert_field(t, 1, "X-B", " 2");
	/* a field name body text could start a line with: the body */
	PARSE(t, "A: 1\nThis is the body\nIt: looks like a field\n");
	assert_int_equal(t->h.n, 1);
	assert_int_equal(t->h.body_offset, strlen("A: 1\n"));
	/* two broken lines in a row are a body that lacks its blank line
	 * ("Hi,\nthanks\nNote: ..." keeps its lines) */
	PARSE(t, "A: 1\n>From x\nno colon\nB: 2\n\n");
	assert_int_equal(t->h.n, 1);
	assert_int_equal(t->h.body_offset, strlen("A: 1\n"));
	/* more continuations than the look-ahead: the body */
	PARSE(t, "A: 1\njunk\n 1\n 2\n 3\n 4\n 5\nTo: b\n\n");
	assert_int_equal(t->h.n, 1);
	assert_int_equal(t->h.body_offset, strlen("A: 1\n"));
}

static void test_header_malformed_line_ends_block(void **state)
{
	struct tcase *t = *state;
	/* prose, then prose: the body of a message without its blank line */
	static const char m[] = "From: a@b\nthis is not a header\nnor is this\nTo: c@d\n\n";
	PARSE(t, m);
	assert_int_equal(t->h.n, 1);
	assert_field(t, 0, "From", " a@b");
	assert_int_equal(t->h.body_offset, strlen("From: a@b\n"));
	assert_int_equal(t->warnings, W(MALFORMED_HEADER));
	assert_null(header_get(&t->h, "To"));
	/* a boundary line is the body even with a field after it */
	PARSE(t, "Content-Type: multipart/mixed; boundary=b\n--b\nContent-Type: text/plain\n\nx\n--b--\n");
	assert_int_equal(t->h.n, 1);
	assert_int_equal(t->h.body_offset, strlen("Content-Type: multipart/mixed; boundary=b\n"));

	PARSE(t, "From: a@b\n: no name\n\n");
	assert_int_equal(t->h.n, 1);
	assert_int_equal(t->h.body_offset, strlen("From: a@b\n"));
	assert_int_equal(t->warnings, W(MALFORMED_HEADER));

	/* CRLF, and a line at EOF with no line end. */
	PARSE(t, "A: 1\r\nB: 2\r\nno colon here");
	assert_int_equal(t->h.n, 2);
	assert_field(t, 1, "B", " 2");
	assert_int_equal(t->h.body_offset, strlen("A: 1\r\nB: 2\r\n"));
	assert_int_equal(t->warnings, W(MALFORMED_HEADER));
}

static void test_header_empty_input(void **state)
{
	struct tcase *t = *state;
	parse(t, "", 0);
	assert_int_equal(t->h.n, 0);
	assert_int_equal(t->h.body_offset, 0);
	PARSE(t, "\r\nbody");
	assert_int_equal(t->h.n, 0);
	assert_int_equal(t->h.body_offset, 2);
}

static void test_header_too_large(void **state)
{
	struct tcase *t = *state;
	/* 3 MiB of short fields: those starting past the cap are skipped, the
	 * body is still found. */
	const char *line = "X-Filler: 0123456789012345678901234567890123456789\n";
	size_t ll = strlen(line), lines = 3 * MiB / ll;
	size_t n = lines * ll + 6;
	char *m = malloc(n);
	for (size_t i = 0; i < lines; i++)
		memcpy(m + i * ll, line, ll);
	memcpy(m + lines * ll, "\nbody", 6);
	parse(t, m, n - 1);
	assert_int_equal(t->h.n, (LIMIT_HEADER_BYTES + ll - 1) / ll);
	assert_int_equal(t->h.body_offset, lines * ll + 1);
	assert_int_equal(t->warnings, W(HEADER_TOO_LARGE));
	free(m);
}

static void test_header_10mib_line(void **state)
{
	struct tcase *t = *state;
	size_t n = 10 * MiB;
	char *m = malloc(n);
	memcpy(m, "Subject: ", 9);
	memset(m + 9, 'x', n - 9 - 8);
	memcpy(m + n - 8, "\n\nbody\n", 8);
	parse(t, m, n - 1);
	assert_int_equal(t->h.n, 1);
	assert_int_equal(t->h.v[0].value.n, LIMIT_HEADER_BYTES - 8);   /* from the colon on */
	assert_int_equal(t->h.body_offset, n - 6);
	assert_int_equal(t->warnings, W(HEADER_TOO_LARGE));
	free(m);
}

static void test_header_many_fields(void **state)
{
	struct tcase *t = *state;
	/* 1 MiB of `From: ::::` lines. */
	const char *line = "From: ::::\n";
	size_t ll = strlen(line), lines = MiB / ll;
	char *m = malloc(lines * ll);
	for (size_t i = 0; i < lines; i++)
		memcpy(m + i * ll, line, ll);
	parse(t, m, lines * ll);
	assert_int_equal(t->h.n, lines);
	assert_int_equal(count_named(&t->h, "from"), lines);
	assert_field(t, lines - 1, "From", " ::::");
	free(m);
}

static void test_header_unfold(void **state)
{
	struct tcase *t = *state;
	struct str out;
	static const char v[] = " one\r\n two\n\tthree \r\n";
	assert_int_equal(header_unfold(&t->arena, (struct str){ v, sizeof(v) - 1 }, &out), 0);
	t_assert_str(out, "one two\tthree");
}

static void test_header_unfold_view_when_unchanged(void **state)
{
	struct tcase *t = *state;
	struct str out;
	static const char v[] = "  plain value\t";
	assert_int_equal(header_unfold(&t->arena, (struct str){ v, sizeof(v) - 1 }, &out), 0);
	assert_ptr_equal(out.p, v + 2);
	assert_int_equal(out.n, 11);
	assert_int_equal(header_unfold(&t->arena, (struct str){ v, 2 }, &out), 0);
	assert_int_equal(out.n, 0);
	assert_non_null(out.p);
}

static void test_header_unfold_keeps_lone_cr(void **state)
{
	struct tcase *t = *state;
	struct str out;
	static const char v[] = "a\rb\r\n c";
	assert_int_equal(header_unfold(&t->arena, (struct str){ v, sizeof(v) - 1 }, &out), 0);
	t_assert_str(out, "a\rb c");
}

/* Line ends at every offset of the inline blocks and past them (where the
 * search hands over to memchr), with CR LF and with LF, and a last line
 * with no line end at all. */
static void test_header_line_lengths(void **state)
{
	struct tcase *t = *state;
	char buf[512];
	for (size_t len = 0; len <= 200; len++) {
		for (int crlf = 0; crlf <= 1; crlf++) {
			size_t n = 0;
			memcpy(buf, "X:", 2);
			n = 2;
			for (size_t i = 0; i < len; i++)
				buf[n++] = (char)('a' + i % 26);
			size_t vend = n;
			if (crlf)
				buf[n++] = '\r';
			buf[n++] = '\n';
			memcpy(buf + n, "Y:z\n\nbody", 9);
			n += 9;
			parse(t, buf, n);
			assert_int_equal(t->h.n, 2);
			assert_int_equal(t->h.v[0].value.n, vend - 2);
			assert_memory_equal(t->h.v[0].value.p, buf + 2, vend - 2);
			assert_field(t, 1, "Y", "z");
			assert_int_equal(t->h.body_offset, n - 4);
			assert_int_equal(t->warnings, 0);

			/* The same field as the whole input, unterminated. */
			parse(t, buf, vend);
			assert_int_equal(t->h.n, 1);
			assert_int_equal(t->h.v[0].value.n, vend - 2);
			assert_int_equal(t->h.body_offset, vend);
		}
	}
}

/* Field names of every length across the 16-byte blocks of the name scan,
 * ended by a colon, by white space before it, or by a byte that is not
 * ftext (a control, DEL, 8-bit): the last makes the line the body. */
static void test_header_name_lengths(void **state)
{
	struct tcase *t = *state;
	static const char stops[] = { ':', ' ', '\t', 0x01, 0x7F, (char)0x80, (char)0xFF };
	char buf[128], name[64];
	for (size_t len = 1; len <= 40; len++) {
		for (size_t i = 0; i < len; i++)
			name[i] = "aZ9-!~_.;<@"[i % 11];   /* ftext, its ends too */
		name[len] = '\0';
		for (size_t k = 0; k < sizeof(stops); k++) {
			size_t n = 0;
			memcpy(buf, "A:b\n", 4);
			n = 4;
			memcpy(buf + n, name, len);
			n += len;
			buf[n++] = stops[k];
			if (stops[k] == ' ' || stops[k] == '\t')
				buf[n++] = ':';
			memcpy(buf + n, " value of some length\n\nbody", 27);
			n += 27;
			parse(t, buf, n);
			if (stops[k] == ':' || stops[k] == ' ' || stops[k] == '\t') {
				assert_int_equal(t->h.n, 2);
				assert_field(t, 1, name, " value of some length");
				assert_int_equal(t->warnings, 0);
			} else {
				assert_int_equal(t->h.n, 1);
				assert_int_equal(t->h.body_offset, 4);
				assert_int_equal(t->warnings, W(MALFORMED_HEADER));
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
		T(test_header_crlf_fields_and_body),
		T(test_header_bare_lf),
		T(test_header_folded_value_kept_raw),
		T(test_header_bom_skipped),
		T(test_header_block_ends_at_eof),
		T(test_header_space_before_colon),
		T(test_header_empty_value),
		T(test_header_repeated_fields_kept_in_order),
		T(test_header_first_line_not_a_field),
		T(test_header_malformed_line_skipped),
		T(test_header_malformed_line_ends_block),
		T(test_header_leading_continuation_dropped),
		T(test_header_empty_input),
		T(test_header_too_large),
		T(test_header_10mib_line),
		T(test_header_many_fields),
		T(test_header_line_lengths),
		T(test_header_name_lengths),
		T(test_header_unfold),
		T(test_header_unfold_view_when_unchanged),
		T(test_header_unfold_keeps_lone_cr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
