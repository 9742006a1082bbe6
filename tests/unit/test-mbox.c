/* SPDX-License-Identifier: MIT */
/* Unit tests for mail/mbox.c: which lines are From_ lines, which of them
 * separate messages (an empty line before), mboxo/mboxrd unquoting,
 * Content-Length landing or not, CRLF, a missing final newline, empty
 * messages, and the same messages whether the archive comes whole or in
 * chunks cut at every offset (mbox_next driven as reader.c drives it). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mail/mbox.h"
#include "tests/mbox_chunks.h"

#define MAX_MSGS 64

/* One message as a caller sees it: its span, where the next separator is,
 * and its bytes after unquoting. */
struct msg {
	size_t from, start, end, next;
	char text[512];
};

struct split {
	size_t n;
	struct msg m[MAX_MSGS];
};

static void split_add(struct split *s, const uint8_t *buf, size_t base, const struct mbox_span *m,
                      size_t next)
{
	assert_true(s->n < MAX_MSGS);
	assert_true(m->from < m->start);
	assert_true(m->start <= m->end);
	assert_true(m->end <= next);
	struct msg *o = &s->m[s->n++];
	o->from = base + m->from;
	o->start = base + m->start;
	o->end = base + m->end;
	o->next = base + next;
	size_t len = m->end - m->start;
	assert_true(len < sizeof(o->text));
	memcpy(o->text, buf + m->start, len);
	o->text[mbox_unquote((uint8_t *)o->text, len)] = '\0';
}

/* The archive read whole, as ingest.c splits it. */
static void split_whole(const char *in, size_t n, uint64_t max_len, struct split *s)
{
	/* an exact-size copy: a read past the end is an ASan report */
	uint8_t *p = malloc(n ? n : 1);
	assert_non_null(p);
	memcpy(p, in, n);
	s->n = 0;
	size_t pos = 0, next;
	struct mbox_span m;
	while (pos < n) {
		assert_int_equal(mbox_next_max(p, n, pos, true, max_len, &m, &next), 1);
		assert_true(next > pos);
		split_add(s, p, 0, &m, next);
		pos = next;
	}
	free(p);
}

static bool split_add_chunk(void *ctx, const uint8_t *buf, size_t len, size_t base, size_t pos,
                            const struct mbox_span *m, size_t next)
{
	(void)len;
	assert_true(next > pos);
	split_add(ctx, buf, base, m, next);
	return true;
}

/* The archive streamed, as reader.c does (tests/mbox_chunks.h): cuts[0..k)
 * are the chunk ends (increasing, the last one n); nothing may be left
 * undecided at EOF, nor uncut. */
static void split_chunks(const char *in, const size_t *cuts, size_t k, uint64_t max_len,
                         struct split *s)
{
	s->n = 0;
	size_t pending;
	assert_int_equal(mbox_split_chunks((const uint8_t *)in, cuts, k, max_len, split_add_chunk, s,
	                                   &pending),
	                 MBOX_CHUNKS_DONE);
	assert_int_equal(pending, 0);
}

static void assert_same(const struct split *a, const struct split *b, const char *how, size_t at)
{
	if (a->n != b->n)
		fail_msg("%s %zu: %zu messages, whole %zu", how, at, b->n, a->n);
	for (size_t i = 0; i < a->n; i++) {
		const struct msg *x = &a->m[i], *y = &b->m[i];
		if (x->from != y->from || x->start != y->start || x->end != y->end || x->next != y->next ||
		    strcmp(x->text, y->text))
			fail_msg("%s %zu: message %zu differs: [%zu %zu %zu %zu] vs whole [%zu %zu %zu %zu]",
			         how, at, i, y->from, y->start, y->end, y->next, x->from, x->start, x->end,
			         x->next);
	}
}

/* Whole, then cut once at every offset, then in chunks of every size. */
static void check_chunking(const char *in, size_t n, uint64_t max_len, const struct split *whole)
{
	static struct split s;
	for (size_t at = 0; at <= n; at++) {
		size_t cuts[2] = { at, n };
		split_chunks(in, cuts, 2, max_len, &s);
		assert_same(whole, &s, "cut at", at);
	}
	for (size_t size = 1; size <= n; size++) {
		size_t cuts[4096], k = 0;
		for (size_t e = size; e < n && k < 4095; e += size)
			cuts[k++] = e;
		cuts[k++] = n;
		split_chunks(in, cuts, k, max_len, &s);
		assert_same(whole, &s, "chunks of", size);
	}
}

static struct split got;

/* Splits `in` whole and in every chunking, and leaves the messages in got. */
static void split_all_max(const char *in, uint64_t max_len)
{
	size_t n = strlen(in);
	split_whole(in, n, max_len, &got);
	check_chunking(in, n, max_len, &got);
}

static void split_all(const char *in)
{
	split_all_max(in, UINT64_MAX);
}

#define FROM_A "From alice@example.org Mon Jan  1 00:00:00 2024\n"
#define FROM_B "From bob@example.org Tue Jan  2 10:00:00 2024\n"
#define FROM_C "From carol@example.org Wed Jan  3 11:00:00 2024\n"

/* Content-Length covers a body whose From_ line after an empty line would
 * otherwise split it (the body is 50 bytes). */
#define CL_BODY "line1\n\nFrom mallory Mon Jan  1 00:00:00 2024\nline3\n"

static void test_mbox_from_lines(void **state)
{
	(void)state;
	static const char *const yes[] = {
		"From alice@example.org Mon Jan  1 00:00:00 2024",
		"From MAILER-DAEMON Fri Apr 06 16:46:09 2001",
		"From - Tue Apr 27 19:42:22 2010",                    /* Thunderbird */
		"From SRS0=aO/p=ON=bag.python.org=None@bounce2.pobox.com  Fri Nov 26 21:40:36 2004",
		"From guido at python.org  Mon Jan  1 10:00:00 2024",  /* pipermail */
		"From 1771548929591427735@xxx Thu Jul 20 15:05:34 +0000 2023",   /* Takeout */
		"From xxxx@yyyyyyy.fr Wed Aug  2 00:39:12 MET DST 1995",
		"From \"/foo/bar baz/\"@dumbdar.com Sat Nov 22 15:29:32 PST 1997",
		"From Sat Jan  3 01:05:34 1996",                       /* no sender */
		"From - Sat May 01 2010 15:07:31 GMT+0400 (Russian Daylight Time)",
		"From alice@example.org Mon, 1 Jan 2024 00:00:00 +0000",
		"From alice@example.org 1 Jan 2024 00:00 +0000",
		"From uucp Mon Jan  1 00:00 2024 remote from host",
		"From fc88cba7f1f37b9cf3b296eace2422dd0e173502 Mon Sep 17 00:00:00 2001",
		"From mallory Mon Jan  1 00:00:00 2024",
		"From alice@example.org Monday January  1 00:00:00 2024",
		"From alice@example.org Mon Jan  1 00:00:00 24",
		"From alice@example.org Mon Jan  1 00:00:00 2024\r",
		"From alice@example.org\tMon Jan  1 00:00:00 2024",
	};
	static const char *const no[] = {
		"From here on we meet Mar 3 at 10:30",
		"From the logs it looks like the second run never started.",
		"From what I can tell, this is the same problem as last week:",
		"From: alice@example.org",
		"From alice@example.org",
		"From alice@example.org Mon Jan  1",
		"From alice@example.org Mon Jan  1 00:00:00",
		"From alice@example.org Mon Jan  1 2024",
		"From alice@example.org Mon Foo  1 00:00:00 2024",
		"From alice@example.org Mon Jan 123 00:00:00 2024",
		"From alice@example.org Mon Jan  1 0:0:00 2024",
		"From alice@example.org Mon Jan  1 00:00:00 20245",
		"From 1 Jan 2024 00:00:00 +0000",              /* no sender needs a weekday */
		"from alice@example.org Mon Jan  1 00:00:00 2024",
		"Fromage Mon Jan  1 00:00:00 2024",
		">From alice@example.org Mon Jan  1 00:00:00 2024",
		" From alice@example.org Mon Jan  1 00:00:00 2024",
		"From alice@example.org Mon Jan  1 00:00:00\x01 2024",
		"From \"unterminated Mon Jan  1 00:00:00 2024",
		"From ",
		"From",
		"",
	};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!mbox_is_from_line((const uint8_t *)yes[i], strlen(yes[i])))
			fail_msg("not taken for a From_ line: %s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (mbox_is_from_line((const uint8_t *)no[i], strlen(no[i])))
			fail_msg("taken for a From_ line: %s", no[i]);
	/* only the first line counts, and a line end may follow */
	const char two[] = "From alice\nMon Jan  1 00:00:00 2024\n";
	assert_false(mbox_is_from_line((const uint8_t *)two, sizeof(two) - 1));
	const char nl[] = "From a@b Mon Jan  1 00:00:00 2024\nx";
	assert_true(mbox_is_from_line((const uint8_t *)nl, sizeof(nl) - 1));
	/* a line longer than MBOX_LINE_MAX is not one */
	char *big = malloc(MBOX_LINE_MAX + 64);
	assert_non_null(big);
	int k = snprintf(big, 64, "From a@b Mon Jan  1 00:00:00 2024 ");
	memset(big + k, 'x', MBOX_LINE_MAX + 64 - k);
	assert_true(mbox_is_from_line((const uint8_t *)big, MBOX_LINE_MAX));
	assert_false(mbox_is_from_line((const uint8_t *)big, MBOX_LINE_MAX + 1));
	free(big);
}

/* What starts an mbox: any "From " first line that may be a From_ line,
 * dated or not (Netscape and Mozilla archives open with "From - "). */
static void test_mbox_first_line(void **state)
{
	(void)state;
	static const char *const yes[] = {
		"From - ", "From -", "From 1844@xxx", "From ", "From alice@example.org",
		"From - Tue Apr 27 19:42:22 2010\r", "From here on we meet Mar 3 at 10:30",
	};
	static const char *const no[] = {
		"From: alice@example.org", "Fromage", "from - ", ">From - ", "From - \x01", "From",
	};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!mbox_is_separator((const uint8_t *)yes[i], strlen(yes[i])))
			fail_msg("does not start an mbox: %s", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (mbox_is_separator((const uint8_t *)no[i], strlen(no[i])))
			fail_msg("starts an mbox: %s", no[i]);
	char big[MBOX_LINE_MAX + 8] = "From - ";
	memset(big + 7, 'x', sizeof(big) - 7);
	assert_true(mbox_is_separator((const uint8_t *)big, MBOX_LINE_MAX));
	assert_false(mbox_is_separator((const uint8_t *)big, MBOX_LINE_MAX + 1));
	/* a Netscape archive: every message after the first starts at a bare
	 * "From - " with no empty line before it */
	split_all("From - \nSubject: one\n\nbody one\nFrom - \nMessage-ID: <2@x>\n\nbody two\n");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[0].text, "Subject: one\n\nbody one\n");
	assert_string_equal(got.m[1].text, "Message-ID: <2@x>\n\nbody two\n");
}

static void test_mbox_two_messages(void **state)
{
	(void)state;
	split_all(FROM_A "Subject: one\n\nbody one\n\n" FROM_B "Subject: two\n\nbody two\n");
	assert_int_equal(got.n, 2);
	assert_int_equal(got.m[0].from, 0);
	assert_int_equal(got.m[0].start, strlen(FROM_A));
	assert_string_equal(got.m[0].text, "Subject: one\n\nbody one\n");
	assert_int_equal(got.m[1].from, strlen(FROM_A "Subject: one\n\nbody one\n\n"));
	assert_string_equal(got.m[1].text, "Subject: two\n\nbody two\n");
	assert_int_equal(got.m[1].next, got.m[1].end);
}

/* The bug this rule fixes: a date-looking "From " line in a body. */
static void test_mbox_body_from_lines_do_not_split(void **state)
{
	(void)state;
	/* not after an empty line, however much it looks like a From_ line */
	split_all(FROM_A "Subject: one\n\nbody line\n"
	          "From here on we meet Mar 3 at 10:30\n"
	          "From bob@example.org Tue Jan  2 10:00:00 2024\n"
	          "end\n");
	assert_int_equal(got.n, 1);
	/* after an empty line, but not a From_ line */
	split_all(FROM_A "Subject: one\n\nbody line\n\n"
	          "From here on we meet Mar 3 at 10:30\n\n"
	          "From the logs it looks like the second run never started.\n\n"
	          "From: someone\n");
	assert_int_equal(got.n, 1);
	/* both: a separator */
	split_all(FROM_A "Subject: one\n\nbody line\n\n" FROM_B "end\n");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[0].text, "Subject: one\n\nbody line\n");
	assert_string_equal(got.m[1].text, "end\n");
}

/* The separators a dated-line rule alone misses, as Netscape, Mozilla and
 * id-only writers leave them (GMime's and MimeKit's mbox test archives). */
static void test_mbox_undated_separators(void **state)
{
	(void)state;
	/* Mozilla's "From - <date>" right after a body line, headers next */
	split_all(FROM_A "Subject: a\n\nbody\n--b--\nFrom - Mon Jun  3 12:50:27 1996\n"
	          "Return-Path: x@y\nSubject: b\n\nb\n");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[0].text, "Subject: a\n\nbody\n--b--\n");
	/* an undated one-word line after an empty line, a folded and an
	 * unknown field before the known one */
	split_all(FROM_A "Subject: a\n\nbody\n\nFrom 1844@xxx\nX-GM-Foo: 1\n 2\nDate: now\n\nb\n");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[1].text, "X-GM-Foo: 1\n 2\nDate: now\n\nb\n");
	/* CRLF */
	split_all("From - \r\nSubject: a\r\n\r\nbody\r\nFrom - \r\nSubject: b\r\n\r\nb\r\n");
	assert_int_equal(got.n, 2);
	/* a Content-Length that lands on an undated From_ line */
	split_all(FROM_A "Content-Length: 51\n\n" CL_BODY "From - \nX-Foo: no known field\n\nafter\n");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[0].text, "Content-Length: 51\n\n" CL_BODY);
	assert_string_equal(got.m[1].text, "X-Foo: no known field\n\nafter\n");
}

/* "From :", the obsolete From field (RFC 5322 4.5.2), never starts an
 * mbox: a file in a plain tree that began with it was split at byte 11,
 * its From field lost, where mail_parse() of the same bytes kept it. */
static void test_mbox_obsolete_from_field_is_no_separator(void **state)
{
	(void)state;
	static const char *const fields[] = { "From : a@b\n", "From  :a@b\n", "From \t: a@b\n",
	                                      "From :" };
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		const uint8_t *p = (const uint8_t *)fields[i];
		assert_false(mbox_is_separator(p, strlen(fields[i])));
		assert_false(mbox_from_prefix(p, strlen(fields[i])));
	}
	static const char *const lines[] = { "From a@b Mon Jun  3 12:50:27 1996\n", "From - \n",
	                                     "From \n", "From a:b\n",
	                                     "From :x@y Mon Jun  3 12:50:27 1996\n" };
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		assert_true(mbox_is_separator((const uint8_t *)lines[i], strlen(lines[i])));
	/* inside an archive, a dated From_ line whose sender starts with ':'
	 * still separates (the rule above once made it body text) */
	split_all(FROM_A "Subject: a\n\nbody\n\nFrom :x@y Mon Jun  3 12:50:27 1996\nSubject: b\n\nb\n");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[1].text, "Subject: b\n\nb\n");
	/* undated, after an empty line, a known field next: still the From
	 * field, body text (the fuzzer's find against the plain rule) */
	split_all(FROM_A "Subject: a\n\nbody\n\nFrom :x@y\nFrom : c@d\n\nb\n");
	assert_int_equal(got.n, 1);
	const uint8_t *t = (const uint8_t *)"\n\nFrom :00@ex\nFrom :00@exam";
	assert_int_equal(mbox_find_separator(t, 27, 0, false), 27);
	assert_int_equal(mbox_find_separator(t, 27, 0, true), 27);
}

/* Generated: a From line of every kind, after a body line or an empty
 * line, before every kind of next line, in LF and CRLF.  It splits only
 * as the rule says (mbox.c, top); every other combination is a body line
 * that must stay in its message. */
static void test_mbox_adversarial_bodies(void **state)
{
	(void)state;
	enum { DATED = 1, DASH = 2, ONE_WORD = 4 };
	static const struct {
		const char *line;
		int kind;
	} froms[] = {
		{ "From bob@example.org Tue Jan  2 10:00:00 2024", DATED },
		{ "From - Tue Jan  2 10:00:00 2024", DATED | DASH },
		{ "From - ", DASH | ONE_WORD },
		{ "From -", DASH | ONE_WORD },
		{ "From 1844@xxx", ONE_WORD },
		{ "From Alice", ONE_WORD },
		{ "From here on we meet Mar 3 at 10:30", 0 },
		{ "From the logs:", 0 },
		{ "From what I can tell, Date: and Subject: are both missing", 0 },
		{ "From alice Mon Jan  1", 0 },
		{ "From -- Tue", 0 },
	};
	static const struct {
		const char *lines;
		bool headers;   /* a known field within MBOX_PEEK_LINES header lines */
	} nexts[] = {
		{ "", false },
		{ "more text\n", false },
		{ "\n", false },
		{ "> quoted\n", false },
		{ "Date: Tuesday\n", true },
		{ "ERROR: x\nSubject: y\n", true },
		{ "X-A: 1\n folded\nReceived: z\n", true },
		{ "ERROR: disk full\nWARN: retry\nINFO: done\nDate: now\n", false },
		{ "  indented\nSubject: y\n", false },
		{ "ERROR: x\n\nSubject: y\n", false },
		{ "Subject : spaced\n", true },
		{ "Note: see below\nthe Date: line\n", false },
		{ "From: alice\n", true },
	};
	size_t checked = 0, splits = 0;
	for (int crlf = 0; crlf < 2; crlf++)
		for (int empty = 0; empty < 2; empty++)
			for (size_t f = 0; f < sizeof(froms) / sizeof(froms[0]); f++)
				for (size_t x = 0; x < sizeof(nexts) / sizeof(nexts[0]); x++) {
					char lf[512], in[1024];
					snprintf(lf, sizeof(lf), FROM_A "Subject: one\n\nbody line\n%s%s\n%send\n",
					         empty ? "\n" : "", froms[f].line, nexts[x].lines);
					size_t k = 0;
					for (const char *c = lf; *c; c++) {
						if (*c == '\n' && crlf)
							in[k++] = '\r';
						in[k++] = *c;
					}
					in[k] = '\0';
					int kind = froms[f].kind;
					bool want = (empty && (kind & DATED)) ||
					            (nexts[x].headers && ((kind & DASH) || (empty && (kind & ONE_WORD))));
					split_all(in);
					if (got.n != 1 + (size_t)want)
						fail_msg("%s, %s line, %s: %zu messages", froms[f].line,
						         empty ? "after an empty" : "after a body", nexts[x].lines, got.n);
					checked++;
					splits += want;
				}
	print_message("%zu From lines in bodies, %zu of them separators, the rest kept\n", checked,
	              splits);
}

static void test_mbox_unquote_mboxrd(void **state)
{
	(void)state;
	split_all(FROM_A "Subject: q\n\n"
	          ">From once quoted\n"
	          ">>From twice quoted\n"
	          ">>>From three times\n"
	          ">Fromage is not quoted\n"
	          "> From is not quoted\n"
	          " >From is not at a line start\n"
	          ">>\n"
	          ">From last");
	assert_int_equal(got.n, 1);
	assert_string_equal(got.m[0].text, "Subject: q\n\n"
	                    "From once quoted\n"
	                    ">From twice quoted\n"
	                    ">>From three times\n"
	                    ">Fromage is not quoted\n"
	                    "> From is not quoted\n"
	                    " >From is not at a line start\n"
	                    ">>\n"
	                    "From last");
}

/* mboxo quotes "From " only, and so cannot keep a literal ">From ": the
 * reader undoes one level, which is right for every line mboxo wrote. */
static void test_mbox_unquote_mboxo(void **state)
{
	(void)state;
	split_all(FROM_A "Subject: o\r\n\r\n>From the start of a line.\r\n"
	          ">From someone@example.org Mon Jan  1 00:00:00 2001\r\n\r\n" FROM_B "x\r\n");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[0].text, "Subject: o\r\n\r\nFrom the start of a line.\r\n"
	                    "From someone@example.org Mon Jan  1 00:00:00 2001\r\n");
	uint8_t b[] = ">From x\n";
	assert_int_equal(mbox_unquote(b, sizeof(b) - 1), 7);
	assert_memory_equal(b, "From x\n", 7);
	uint8_t c[] = ">From";
	assert_int_equal(mbox_unquote(c, sizeof(c) - 1), 5);
	assert_int_equal(mbox_unquote(c, 0), 0);
}

static void test_mbox_crlf(void **state)
{
	(void)state;
	split_all("From alice@example.org Mon Jan  1 00:00:00 2024\r\n"
	          "Subject: one\r\n\r\nbody\r\n\r\n"
	          "From bob@example.org Tue Jan  2 10:00:00 2024\r\n"
	          "Subject: two\r\n\r\nbody\r\n"
	          "From carol@example.org Wed Jan  3 11:00:00 2024\r\n\r\n"
	          "From dave@example.org Thu Jan  4 11:00:00 2024\r\n\r\n");
	/* carol follows a text line: part of bob's message */
	assert_int_equal(got.n, 3);
	assert_string_equal(got.m[0].text, "Subject: one\r\n\r\nbody\r\n");
	assert_string_equal(got.m[1].text, "Subject: two\r\n\r\nbody\r\n"
	                    "From carol@example.org Wed Jan  3 11:00:00 2024\r\n");
	assert_string_equal(got.m[2].text, "");
	/* mixed: an LF line, then a CRLF empty line */
	split_all(FROM_A "a\n\r\n" FROM_B "b\n");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[0].text, "a\n");
}

static void test_mbox_missing_final_newline(void **state)
{
	(void)state;
	split_all(FROM_A "Subject: one\n\nbody\n\n" FROM_B "Subject: two\n\nno newline");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[1].text, "Subject: two\n\nno newline");
	assert_int_equal(got.m[1].end, got.m[1].next);
	/* the separator itself unfinished: an empty message */
	split_all(FROM_A "x\n\nFrom bob@example.org Tue Jan  2 10:00:00 2024");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[1].text, "");
}

/* RFC 4155: the empty line after each message belongs to the format, the
 * last one included. */
static void test_mbox_final_empty_line(void **state)
{
	(void)state;
	split_all(FROM_A "Subject: one\n\nbody\n\n");
	assert_int_equal(got.n, 1);
	assert_string_equal(got.m[0].text, "Subject: one\n\nbody\n");
	split_all(FROM_A "Subject: one\r\n\r\nbody\r\n\r\n");
	assert_string_equal(got.m[0].text, "Subject: one\r\n\r\nbody\r\n");
	/* only one: a second empty line is the message's */
	split_all(FROM_A "body\n\n\n");
	assert_string_equal(got.m[0].text, "body\n\n");
}

static void test_mbox_empty_messages(void **state)
{
	(void)state;
	split_all(FROM_A "\n" FROM_B "\n\n" FROM_C "Subject: three\n\n\n" FROM_A);
	assert_int_equal(got.n, 4);
	assert_string_equal(got.m[0].text, "");
	assert_int_equal(got.m[0].start, got.m[0].end);
	assert_string_equal(got.m[1].text, "\n");
	assert_string_equal(got.m[2].text, "Subject: three\n\n");
	assert_string_equal(got.m[3].text, "");
	/* a separator right after a separator is not one (no empty line) */
	split_all(FROM_A FROM_B "\n" FROM_C);
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[0].text, FROM_B);
	split_all(FROM_A);
	assert_int_equal(got.n, 1);
	assert_string_equal(got.m[0].text, "");
}

static void test_mbox_content_length_lands(void **state)
{
	(void)state;
	assert_int_equal(strlen(CL_BODY), 51);
	/* followed by the empty line and a From_ line */
	split_all(FROM_A "Content-Length: 51\n\n" CL_BODY "\n" FROM_B "after\n");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[0].text, "Content-Length: 51\n\n" CL_BODY);
	assert_string_equal(got.m[1].text, "after\n");
	/* right on a From_ line, no empty line between */
	split_all(FROM_A "Content-Length: 51\n\n" CL_BODY FROM_B "after\n");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[0].text, "Content-Length: 51\n\n" CL_BODY);
	/* the end of the data */
	split_all(FROM_A "Content-Length: 51\n\n" CL_BODY);
	assert_int_equal(got.n, 1);
	/* the end of the data after the final empty line (review bug 2) */
	split_all(FROM_A "Content-Length: 51\n\n" CL_BODY "\n");
	assert_int_equal(got.n, 1);
	assert_string_equal(got.m[0].text, "Content-Length: 51\n\n" CL_BODY);
	/* CRLF, the header's case, the last of two, zero */
	split_all(FROM_A "content-length:\t45\r\n\r\nline1\r\n\r\nFrom m Mon Jan  1 00:00:00 2024\r\nx\r\n"
	          "\r\n" FROM_B "after\r\n");
	assert_int_equal(got.n, 2);
	split_all(FROM_A "Content-Length: 3\nContent-Length: 51\n\n" CL_BODY "\n" FROM_B);
	assert_int_equal(got.n, 2);
	split_all(FROM_A "Content-Length: 0\n\n\n" FROM_B "x\n");
	assert_int_equal(got.n, 2);
	assert_string_equal(got.m[0].text, "Content-Length: 0\n\n");
}

static void test_mbox_content_length_wrong(void **state)
{
	(void)state;
	/* too short, too long, past the end, on a line that only starts
	 * "From ": ignored, the separators decide */
	static const char *const cl[] = { "10", "53", "60", "9999999", "37", "x" };
	for (size_t i = 0; i < sizeof(cl) / sizeof(cl[0]); i++) {
		char in[512], want[64];
		snprintf(in, sizeof(in), FROM_A "Content-Length: %s\n\n" CL_BODY "\n" FROM_B "after\n", cl[i]);
		split_all(in);
		if (got.n != 3)
			fail_msg("Content-Length: %s gave %zu messages", cl[i], got.n);
		snprintf(want, sizeof(want), "Content-Length: %s\n\nline1\n", cl[i]);
		assert_string_equal(got.m[0].text, want);
	}
	/* landing on a From_ line inside a body is landing (mutt agrees) */
	split_all(FROM_A "Content-Length: 7\n\n" CL_BODY "\n" FROM_B "after\n");
	assert_int_equal(got.n, 3);
	assert_string_equal(got.m[0].text, "Content-Length: 7\n\nline1\n\n");
	/* a Content-Length header in the body is not one */
	split_all(FROM_A "Subject: x\n\nContent-Length: 51\n\n" CL_BODY "\n" FROM_B);
	assert_int_equal(got.n, 3);
}

/* A Content-Length whose check would take more than max_len bytes is not
 * believed: the streaming reader never waits past --max-size for it. */
static void test_mbox_content_length_max_len(void **state)
{
	(void)state;
	const char *in = FROM_A "Content-Length: 51\n\n" CL_BODY "\n" FROM_B "after\n";
	size_t at = strlen(FROM_A "Content-Length: 51\n\n" CL_BODY);
	split_all_max(in, UINT64_MAX);
	assert_int_equal(got.n, 2);
	split_all_max(in, at + 2 * MBOX_LINE_MAX);
	assert_int_equal(got.n, 2);
	split_all_max(in, at + MBOX_LINE_MAX);
	assert_int_equal(got.n, 3);
	split_all_max(in, 0);
	assert_int_equal(got.n, 3);
	/* one boundary, wherever the slack puts it: once believed, always */
	bool believed = false;
	for (uint64_t max = at; max <= at + 2 * MBOX_LINE_MAX; max++) {
		split_whole(in, strlen(in), max, &got);
		if (believed)
			assert_int_equal(got.n, 2);
		else if ((believed = got.n == 2))
			split_all_max(in, max);   /* and chunked, right there */
		else
			assert_int_equal(got.n, 3);
	}
	assert_true(believed);
}

/* What mbox_next() asks more bytes for, and what it decides at once. */
static void test_mbox_next_needs_more(void **state)
{
	(void)state;
	struct mbox_span m;
	size_t next;
	const char *cases[] = {
		"From alice@example.org Mon Jan  1 00:00",            /* separator line */
		FROM_A "Subject: x\nContent-Len",                       /* header block */
		FROM_A "Content-Length: 51\n\nline1\n",                 /* body of Content-Length */
		FROM_A "Content-Length: 6\n\nline1\n",                  /* where it lands */
		FROM_A "Content-Length: 6\n\nline1\n\nFrom bob@exa",    /* the line it lands on */
		FROM_A "x\n\nFrom bob@example.org Tue Jan  2 10:00:00 2024", /* a separator line */
		FROM_A "x\n\n",                                         /* nothing yet */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const uint8_t *p = (const uint8_t *)cases[i];
		size_t n = strlen(cases[i]);
		if (mbox_next(p, n, 0, false, &m, &next) != 0)
			fail_msg("case %zu decided too early", i);
		assert_int_equal(mbox_next(p, n, 0, true, &m, &next), 1);
	}
	/* a Content-Length landing on a line that cannot start "From " is
	 * ignored at once; the separator search then waits or finds one */
	const char *in = FROM_A "Content-Length: 6\n\nline1\nxx";
	assert_int_equal(mbox_next((const uint8_t *)in, strlen(in), 0, false, &m, &next), 0);
	in = FROM_A "Content-Length: 6\n\nline1\nxx\n\n" FROM_B;
	assert_int_equal(mbox_next((const uint8_t *)in, strlen(in), 0, false, &m, &next), 1);
	assert_int_equal(next, strlen(FROM_A "Content-Length: 6\n\nline1\nxx\n\n"));
}

static void test_mbox_find_separator(void **state)
{
	(void)state;
	const char *in = FROM_A "a\n\n" FROM_B "b\n" FROM_C "\n" FROM_A;
	const uint8_t *p = (const uint8_t *)in;
	size_t n = strlen(in);
	size_t b = strlen(FROM_A "a\n\n");
	size_t a2 = n - strlen(FROM_A);
	assert_int_equal(mbox_find_separator(p, n, 0, false), b);
	assert_int_equal(mbox_find_separator(p, n, b, false), a2);
	assert_int_equal(mbox_find_separator(p, n, a2, false), n);
	/* offset 0 is a line start: an empty first line counts */
	const char *e = "\n" FROM_B;
	assert_int_equal(mbox_find_separator((const uint8_t *)e, strlen(e), 0, false), 1);
	const char *f = "x\n" FROM_B;
	assert_int_equal(mbox_find_separator((const uint8_t *)f, strlen(f), 0, false), strlen(f));
	const char *g = "\r\n" FROM_B;
	assert_int_equal(mbox_find_separator((const uint8_t *)g, strlen(g), 0, false), 2);
	/* a last From_ line with no line end: undecided while bytes may
	 * come, a separator at the end of the archive (as mbox_next()) */
	const char *h = "x\n\nFrom a@b Mon Jan  1 00:00:00 2024";
	assert_int_equal(mbox_find_separator((const uint8_t *)h, strlen(h), 0, false), strlen(h));
	assert_int_equal(mbox_find_separator((const uint8_t *)h, strlen(h), 0, true), 3);
}

/* A search resumed over the kept bytes plus what comes next finds what a
 * search over everything finds. */
static void test_mbox_scan_keep(void **state)
{
	(void)state;
	const char *in = "xxxxxxxxxx\nyyyy\n\n" FROM_B "b\n";
	size_t n = strlen(in);
	size_t want = strlen("xxxxxxxxxx\nyyyy\n\n");
	assert_int_equal(mbox_find_separator((const uint8_t *)in, n, 0, false), want);
	for (size_t cut = 1; cut < n; cut++) {
		size_t at = mbox_find_separator((const uint8_t *)in, cut, 0, false);
		if (at < cut && memchr(in + at, '\n', cut - at)) {
			assert_int_equal(at, want);
			continue;
		}
		if (at < cut)
			continue;   /* unfinished line: mbox_next() would wait */
		size_t keep = mbox_scan_keep((const uint8_t *)in, cut, 0);
		assert_true(keep <= cut && cut - keep <= MBOX_LINE_MAX + 3);
		size_t found = keep + mbox_find_separator((const uint8_t *)in + keep, n - keep, 0, false);
		if (found != want)
			fail_msg("cut at %zu, kept from %zu: found %zu", cut, keep, found);
	}
	/* a long last line that cannot be a separator is not kept */
	static char big[4 * MBOX_LINE_MAX];
	memset(big, 'x', sizeof(big));
	assert_int_equal(mbox_scan_keep((const uint8_t *)big, sizeof(big), 0), sizeof(big) - 3);
	assert_int_equal(mbox_scan_keep((const uint8_t *)big, sizeof(big), sizeof(big) - 1),
	                 sizeof(big) - 1);
}

/* Every test input above and more, glued in several orders: whole and
 * chunked agree on all of them (the chunked checks run inside split_all). */
static void test_mbox_chunked_matches_whole(void **state)
{
	(void)state;
	static const char *const parts[] = {
		FROM_A "Subject: a\n\nbody\n\n",
		FROM_B "Content-Length: 51\n\n" CL_BODY "\n",
		FROM_C "Content-Length: 40\n\n" CL_BODY "\n",
		"From x@y Mon Jan  1 00:00:00 2024\r\nS: c\r\n\r\n>From q\r\n\r\n",
		FROM_A "\n",
		FROM_B "x\nFrom here on we meet Mar 3 at 10:30\n\n",
		FROM_C "Content-Length: 9999\n\nshort\n\n",
		/* From_ lines until their last bytes, which a cut can hide */
		FROM_A "x\n\nFrom x@y Mon Jan  1 00:00:00 20245\n\n"
		"From x@y Mon Jan  1 00:00:00 2024 \x01\n\n",
	};
	const size_t np = sizeof(parts) / sizeof(parts[0]);
	for (size_t r = 0; r < np; r++) {
		char in[2048] = "";
		for (size_t i = 0; i < np; i++)
			strcat(in, parts[(i + r) % np]);
		split_all(in);
		assert_int_equal(got.n, np + 1);   /* the wrong length's body splits one */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mbox_from_lines),
		cmocka_unit_test(test_mbox_first_line),
		cmocka_unit_test(test_mbox_two_messages),
		cmocka_unit_test(test_mbox_body_from_lines_do_not_split),
		cmocka_unit_test(test_mbox_undated_separators),
		cmocka_unit_test(test_mbox_obsolete_from_field_is_no_separator),
		cmocka_unit_test(test_mbox_adversarial_bodies),
		cmocka_unit_test(test_mbox_unquote_mboxrd),
		cmocka_unit_test(test_mbox_unquote_mboxo),
		cmocka_unit_test(test_mbox_crlf),
		cmocka_unit_test(test_mbox_missing_final_newline),
		cmocka_unit_test(test_mbox_final_empty_line),
		cmocka_unit_test(test_mbox_empty_messages),
		cmocka_unit_test(test_mbox_content_length_lands),
		cmocka_unit_test(test_mbox_content_length_wrong),
		cmocka_unit_test(test_mbox_content_length_max_len),
		cmocka_unit_test(test_mbox_next_needs_more),
		cmocka_unit_test(test_mbox_find_separator),
		cmocka_unit_test(test_mbox_scan_keep),
		cmocka_unit_test(test_mbox_chunked_matches_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
