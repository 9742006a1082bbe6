/* SPDX-License-Identifier: MIT */
/* Adversarial inputs must cost time linear in their size.
 *
 * Each case builds a hostile message at size S and 2S, parses each seven
 * times (interleaved) and keeps the minimum CPU time (CLOCK_PROCESS_CPUTIME_ID: other
 * processes do not count, and the minimum drops scheduler noise).  Linear
 * cost doubles; a quadratic one quadruples.  The assertion is ratio < 3,
 * never a wall-clock limit, so it holds on slow machines and under
 * sanitizers alike.  Sizes are chosen so that the smaller run takes
 * milliseconds, well above the clock's resolution, and a parse that takes
 * less is repeated to fill 5 ms (cost_once).  A ratio of 3 or more is
 * measured again, up to three times, before it fails (check_linear_cost). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/limits.h"
#include "mail/mail.h"
#include "mail/mbox.h"
#include "tests/mbox_chunks.h"
#include "helpers.h"

static struct mail_ctx *ctx;

struct msg {
	char *p;
	size_t n, cap;
};

static void put(struct msg *b, const char *s, size_t k)
{
	if (b->n + k > b->cap) {
		b->cap = (b->n + k) * 2;
		b->p = realloc(b->p, b->cap);
		assert_non_null(b->p);
	}
	memcpy(b->p + b->n, s, k);
	b->n += k;
}

static void puts_(struct msg *b, const char *s)
{
	put(b, s, strlen(s));
}

static void repeat(struct msg *b, const char *s, size_t times)
{
	size_t k = strlen(s);
	for (size_t i = 0; i < times; i++)
		put(b, s, k);
}

/* The CPU time of one parse of b, averaged over as many parses as fill
 * about 5 ms: a single parse of a capped input can take half a
 * millisecond, where a moment of a busy machine (another process's cache
 * traffic on a shared VM) counts for as much as the parse itself. */
static double cost_once(const struct msg *b, void *arg)
{
	struct mail_message *m = arg;
	struct mail_options o = { .max_text = LIMIT_MAX_TEXT_DEFAULT, .want_text = true,
	                          .want_headers = true };
	unsigned reps = 0;
	double t0 = t_cpu_seconds(), t;
	do {
		assert_int_equal(mail_parse(ctx, &o, (const uint8_t *)b->p, b->n, m), 0);
		reps++;
	} while ((t = t_cpu_seconds() - t0) < 5e-3 && reps < 1000);
	return t / reps;
}

typedef void build_fn(struct msg *b, size_t size);
typedef double cost_fn(const struct msg *b, void *arg);

/* The two sizes' messages and the cost function, for t_cost_ratio. */
struct linear_pair {
	const struct msg *m[2];
	cost_fn *cost;
	void *arg;
};

static double linear_pair_cost(void *p, int larger)
{
	struct linear_pair *lp = p;
	return lp->cost(lp->m[larger], lp->arg);
}

/* Costs build(size) and build(2 * size) with cost(); arg describes the
 * larger one afterwards, for the caller's checks.  A measurement that looks
 * super-linear is taken again, up to three times in all: a quadratic cost
 * gives a ratio near 4 every time, while a shared VM under load (another
 * guest's cache traffic, stolen time counted as ours) can stretch one
 * measurement of the larger size by half and has been seen to. */
static void check_linear_cost(const char *what, build_fn *build, size_t size, cost_fn *cost,
                              void *arg)
{
	struct msg a = { 0 }, b = { 0 };
	build(&a, size);
	build(&b, size * 2);
	/* seven rounds; the larger size runs last, so that arg describes it */
	struct linear_pair lp = { { &a, &b }, cost, arg };
	double t[2];
	double ratio = t_cost_ratio(what, linear_pair_cost, &lp, 7, 3, 3.0, t);
	free(a.p);
	free(b.p);           /* callers only look at arena data and counts */
	/* Under a millisecond the cost is bounded by the caps (past
	 * LIMIT_MIME_DEPTH, say, the rest is not walked) and the ratio is
	 * clock noise; a quadratic cost at these sizes is far above it. */
	assert_true(ratio < 3.0 || t[1] < 1e-3);
}

/* Parses build(size) and build(2 * size); m describes the larger one. */
static void check_linear(const char *what, build_fn *build, size_t size, struct mail_message *m)
{
	check_linear_cost(what, build, size, cost_once, m);
}

static void build_long_header(struct msg *b, size_t size)
{
	puts_(b, "Subject: ");
	repeat(b, "abcdefghijklmnop", size / 16);
	puts_(b, "\n\nbody\n");
}

static void test_linear_long_header_line(void **state)
{
	(void)state;
	struct mail_message m;
	check_linear("10 MiB header line", build_long_header, 5 * MiB, &m);
	assert_true(m.is_mail);
	assert_true(m.warnings & (UINT64_C(1) << MAIL_W_HEADER_TOO_LARGE));
}

static void build_encoded_words(struct msg *b, size_t size)
{
	puts_(b, "Subject:");
	repeat(b, " =?UTF-8?B?w6k=?=", size);
	puts_(b, "\n\nbody\n");
}

static void test_linear_encoded_words(void **state)
{
	(void)state;
	struct mail_message m;
	check_linear("100,000 encoded words", build_encoded_words, 50000, &m);
	assert_int_equal(m.subject.n, 2 * 100000);   /* "é" each, the spaces between dropped */
}

static void build_parts(struct msg *b, size_t size)
{
	puts_(b, "Content-Type: multipart/mixed; boundary=b\n\n");
	repeat(b, "--b\nContent-Type: application/octet-stream\n\nx\n", size);
	puts_(b, "--b--\n");
}

static void test_linear_many_parts(void **state)
{
	(void)state;
	struct mail_message m;
	check_linear("parts under the cap", build_parts, LIMIT_MIME_PARTS / 2 - 1, &m);
	assert_int_equal(m.parts, LIMIT_MIME_PARTS - 1);
	assert_int_equal(m.warnings, 0);
	check_linear("50,000 parts", build_parts, 25000, &m);
	assert_int_equal(m.parts, LIMIT_MIME_PARTS);
	assert_true(m.warnings & (UINT64_C(1) << MAIL_W_TOO_MANY_PARTS));
}

static void build_nesting(struct msg *b, size_t depth)
{
	char line[128];
	for (size_t d = 0; d < depth; d++) {
		snprintf(line, sizeof(line), "Content-Type: multipart/mixed; boundary=\"b%zu\"\n\n--b%zu\n", d, d);
		puts_(b, line);
	}
	puts_(b, "\ndeep\n");
	for (size_t d = depth; d-- > 0;) {
		snprintf(line, sizeof(line), "--b%zu--\n", d);
		puts_(b, line);
	}
}

static void test_linear_deep_nesting(void **state)
{
	(void)state;
	struct mail_message m;
	/* Repeated so that the smaller run is long enough to time. */
	check_linear("1,000-deep nesting", build_nesting, 500, &m);
	assert_true(m.warnings & (UINT64_C(1) << MAIL_W_NESTING_OVERFLOW));
	assert_int_equal(m.parts, LIMIT_MIME_DEPTH + 1);
}

static void build_nested_messages(struct msg *b, size_t depth)
{
	repeat(b, "Content-Type: message/rfc822\n\n", depth);
	puts_(b, "Subject: innermost\n\ntext\n");
}

static void test_linear_nested_messages(void **state)
{
	(void)state;
	struct mail_message m;
	check_linear("1,000 nested message/rfc822", build_nested_messages, 500, &m);
	assert_true(m.warnings & (UINT64_C(1) << MAIL_W_NESTING_OVERFLOW));
}

static void build_colons(struct msg *b, size_t size)
{
	puts_(b, "From: ");
	repeat(b, "::::::::", size / 8);
	puts_(b, "\n\nbody\n");
}

static void test_linear_from_colons(void **state)
{
	(void)state;
	struct mail_message m;
	check_linear("1 MiB of From: ::::", build_colons, 512 * KiB, &m);
	assert_true(m.is_mail);
}

static void build_base64(struct msg *b, size_t size)
{
	puts_(b, "Content-Type: multipart/mixed; boundary=b\n\n--b\n\nhello\n"
	         "--b\nContent-Type: application/octet-stream\nContent-Transfer-Encoding: base64\n\n");
	repeat(b, "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAx\r\n",
	       size / 74);
	puts_(b, "--b--\n");
}

/* Both sizes fit a last-level cache: an attachment is streamed through
 * (the boundary scan, the size count), so at 16 and 32 MiB the pair
 * straddled a 32 MiB L3, and the smaller one, hot from the earlier
 * rounds, came out faster than linear against the larger one from
 * memory (ratio 2.8-4.2 once the count took 12 instructions per 32
 * bytes, with the 32 MiB time unchanged). */
static void test_linear_huge_base64(void **state)
{
	(void)state;
	struct mail_message m;
	check_linear("huge base64 body", build_base64, 4 * MiB, &m);
	assert_int_equal(m.n_attachments, 1);
	assert_int_equal(m.attachments[0].size, (8 * MiB / 74) * 54);
	assert_int_equal(m.warnings, 0);
}

static void build_boundary_lines(struct msg *b, size_t size)
{
	/* 64 open boundaries and a body full of near-miss "--" lines: each is
	 * compared with every open boundary, a bounded factor. */
	char line[128];
	for (int d = 0; d < LIMIT_MIME_DEPTH - 1; d++) {
		snprintf(line, sizeof(line), "Content-Type: multipart/mixed; boundary=\"bbbbbbbbbbbbbbbbbb%d\"\n\n--bbbbbbbbbbbbbbbbbb%d\n", d, d);
		puts_(b, line);
	}
	puts_(b, "\n");
	repeat(b, "--bbbbbbbbbbbbbbbbbbX\n", size / 22);
}

static void test_linear_near_miss_boundaries(void **state)
{
	(void)state;
	struct mail_message m;
	check_linear("near-miss delimiters", build_boundary_lines, 2 * MiB, &m);
}

static void build_html(struct msg *b, size_t size)
{
	puts_(b, "Content-Type: text/html\n\n");
	repeat(b, "<p a='<'>&amp;&#x41;<!--x--><script>y</script>", size / 46);
	puts_(b, "<a href=\"unclosed");
}

static void test_linear_html(void **state)
{
	(void)state;
	struct mail_message m;
	check_linear("HTML", build_html, 2 * MiB, &m);
	assert_true(m.text_truncated || m.text.n > 0);
}

static void build_html_links(struct msg *b, size_t size)
{
	puts_(b, "Content-Type: text/html\n\n");
	repeat(b, "<a href='http://x.org/?a=1&amp;b=2'>text</a><img alt='a &amp; b'><a href=#>", size / 64);
}

static void test_linear_html_links(void **state)
{
	(void)state;
	struct mail_message m;
	check_linear("HTML links and alt text", build_html_links, 256 * KiB, &m);
	assert_true(m.text.n > 0);
}

static void build_uu_lures(struct msg *b, size_t size)
{
	/* `begin` lines that are not blocks, each followed by one data-like
	 * line: every one is examined, none may restart a scan. */
	puts_(b, "Subject: uu\n\n");
	repeat(b, "begin 644 f\nM\nprose\n", size / 20);
}

static void test_linear_uuencode_lures(void **state)
{
	(void)state;
	struct mail_message m;
	check_linear("uuencode lures", build_uu_lures, 2 * MiB, &m);
	assert_true(m.n_attachments > 0);
}

/* Broken header lines, each making header_parse look past it for a field
 * (header.c), some dropped, with their continuations. */
static void build_broken_header_lines(struct msg *b, size_t size)
{
	puts_(b, "From: a@b\n");
	repeat(b, "broken line\n c\n c\n c\n c\nX-A: 1\nbroken\nX-B: 2\n", size / 48);
	puts_(b, "\nbody\n");
}

static void test_linear_broken_header_lines(void **state)
{
	(void)state;
	struct mail_message m;
	check_linear("broken header lines", build_broken_header_lines, 512 * KiB, &m);
	assert_true(m.warnings & (UINT64_C(1) << MAIL_W_MALFORMED_HEADER));
	assert_true(m.n_headers > 2);
}

/* mbox: From lines that each make the separator rule look at the lines
 * after them (mbox.c) and never split, between real separators. */
static void build_mbox_lures(struct msg *b, size_t size)
{
	puts_(b, "From - \nSubject: s\n\n");
	for (size_t n = 0; n < size; n += 128) {
		puts_(b, "From - \nX-A: 1\n folded\nX-C: 3\nbody\n"
		         "\nFrom 1844@xxx\nERROR: a\nWARN: b\n"
		         "From - Mon Jun  3 12:50:27 1996\n\nFrom x\n  \n");
		if (n % 4096 == 0)
			puts_(b, "From - \nSubject: next\n\n");
	}
}

struct mbox_count {
	size_t whole, chunked;
};

static bool mbox_count_one(void *ctx_, const uint8_t *buf, size_t len, size_t base, size_t pos,
                           const struct mbox_span *m, size_t next)
{
	(void)buf, (void)len, (void)base, (void)pos, (void)m, (void)next;
	((struct mbox_count *)ctx_)->chunked++;
	return true;
}

/* The archive split whole, as ingest.c does, and streamed in 64 KiB
 * chunks, as reader.c does. */
static double cost_mbox(const struct msg *b, void *arg)
{
	struct mbox_count *c = arg;
	const uint8_t *p = (const uint8_t *)b->p;
	size_t cuts[4096], k = 0, pending;
	for (size_t e = 64 * KiB; e < b->n && k < 4095; e += 64 * KiB)
		cuts[k++] = e;
	cuts[k++] = b->n;
	double t0 = t_cpu_seconds();
	c->whole = c->chunked = 0;
	size_t pos = 0, next;
	struct mbox_span m;
	while (pos < b->n && mbox_next(p, b->n, pos, true, &m, &next)) {
		c->whole++;
		pos = next;
	}
	assert_int_equal(mbox_split_chunks(p, cuts, k, UINT64_MAX, mbox_count_one, c, &pending),
	                 MBOX_CHUNKS_DONE);
	return t_cpu_seconds() - t0;
}

static void test_linear_mbox_lures(void **state)
{
	(void)state;
	struct mbox_count c;
	check_linear_cost("mbox From lines that peek at headers", build_mbox_lures, 4 * MiB, cost_mbox,
	                  &c);
	assert_int_equal(c.whole, 2 * 4 * MiB / 4096 + 1);
	assert_int_equal(c.chunked, c.whole);
}

static int setup(void **state)
{
	(void)state;
	ctx = mail_ctx_new();
	return ctx ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	mail_ctx_free(ctx);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_linear_long_header_line),
		cmocka_unit_test(test_linear_encoded_words),
		cmocka_unit_test(test_linear_many_parts),
		cmocka_unit_test(test_linear_deep_nesting),
		cmocka_unit_test(test_linear_nested_messages),
		cmocka_unit_test(test_linear_from_colons),
		cmocka_unit_test(test_linear_huge_base64),
		cmocka_unit_test(test_linear_near_miss_boundaries),
		cmocka_unit_test(test_linear_html),
		cmocka_unit_test(test_linear_uuencode_lures),
		cmocka_unit_test(test_linear_html_links),
		cmocka_unit_test(test_linear_broken_header_lines),
		cmocka_unit_test(test_linear_mbox_lures),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
