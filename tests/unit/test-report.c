/* SPDX-License-Identifier: MIT */
/* Unit tests for the run's report (pipeline/report.c): the exact text of
 * --stats and --stats=json for fixed counters (records by kind, bytes,
 * written, the closed output, the byte budget's peak and waits, syscalls
 * and ring operations counted by this thread, the index), the error
 * summary (the first ten error records, escaped for a terminal, and how
 * many more), and the failure's reason.  What a clock or the kernel
 * decides (the elapsed time, the rates, the peak RSS) is read back and
 * checked for its consistency, and masked in the text compared. */
#include "helpers.h"
#include "pipeline/report.h"
#include "core/record.h"
#include "core/stats.h"
#include "core/sys.h"
#include "sched/batch.h"
#include "sched/budget.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

/* Appends an item with a record of reason why (RECORD_NONE: a message),
 * counted as the parse stage counts it: its first record is that error. */
static void item(struct batch *b, const char *root, const char *path, enum record_reason why,
                 int err, const char *message, size_t len, uint32_t records)
{
	struct batch_item *it = &b->items[b->n++];
	memset(it, 0, sizeof(*it));
	it->io.root = (struct str){ root, strlen(root) };
	it->io.path = (struct str){ path, strlen(path) };
	it->io.reason = why;
	it->io.err = err;
	it->io.message = message;
	it->len = len;
	it->out_records = records;
	if (why != RECORD_NONE && records)
		it->out_errors[why] = 1;
}

/* The report of a run of fixed counters. */
static struct ingest_report *fixed_report(void)
{
	struct ingest_report *r = report_new();
	assert_non_null(r);
	stats_reset_all();
	report_start(r);
	struct batch *b = batch_new();
	assert_non_null(b);
	item(b, "/m", "cur/a", RECORD_NONE, 0, NULL, 100, 1);
	item(b, "/m", "box", RECORD_NONE, 0, NULL, 1000, 3);          /* an mbox: 3 records */
	item(b, "/m", "cur/b", RECORD_IO, EACCES, NULL, 0, 1);
	item(b, "/m", "unchanged", RECORD_NONE, 0, NULL, 50, 0);
	b->items[b->n - 1].no_output = true;                           /* --state: no record */
	report_count_batch(r, b);
	b->n = 0;
	item(b, "", "x\x1b[31m\tb", RECORD_NOT_MAIL, 0, NULL, 7, 1);  /* a file argument */
	item(b, "/m", "big", RECORD_TOO_LARGE, 0, "larger than --max-size", 0, 1);
	report_count_batch(r, b);
	batch_free(b);
	struct budget bu;
	budget_init(&bu, 1 << 20);
	bu.peak = 4096;
	atomic_store(&bu.waited_ns, 2500000);
	for (int i = 0; i < 3; i++)
		sys_faccessat(AT_FDCWD, "/", F_OK);
	sys_close(-1);
	stats_count_ring(STATS_OP_read, 2);
	stats_count_ring(STATS_OP_other, 1);
	report_set_written(r, 6);
	report_set_flags(r, true, false);
	report_set_index(r, 2, 5, 3, 1, 1, 0, 1500000);
	static const char *const io_names[] = { "read", "write", "sync" };
	static const uint64_t io_n[] = { 7, 9, 1 };
	report_set_index_io(r, io_names, io_n, 3);
	report_finish(r, NULL, NULL, NULL, &bu, 1000000, 0, 0);
	return r;
}

/* The number after key in text, cut out and replaced by '#'. */
static double cut_number(char *text, const char *key)
{
	char *p = strstr(text, key);
	assert_non_null(p);
	p += strlen(key);
	char *end;
	double v = strtod(p, &end);
	assert_true(end > p);
	*p = '#';
	memmove(p + 1, end, strlen(end) + 1);
	return v;
}

static void test_report_human(void **state)
{
	(void)state;
	struct ingest_report *r = fixed_report();
	char *text;
	size_t len;
	assert_int_equal(ingest_report_format(r, 0, &text, &len), 0);
	assert_int_equal(strlen(text), len);
	/* the clock's and the kernel's numbers, consistent with each other */
	double secs = cut_number(text, " records in ");
	double rate = cut_number(text, " s (");
	double mbps = cut_number(text, " files/s, ");
	double rss = cut_number(text, "peak RSS ");
	assert_true(secs >= 0 && secs < 60);
	if (secs > 0.01) {
		assert_true(rate > 7 / secs * 0.9 && rate < 7 / secs * 1.1);
		assert_true(mbps < 1.0);
	}
	assert_true(rss > 0);
	static const char want[] =
		"ingest: 7 records in # s (# files/s, # MB/s)\n"
		"  backend      sync\n"
		"  written      6 records (the output was closed by its reader)\n"
		"  records      ok=4 io-error=1 too-large=1 not-mail=1\n"
		"  bytes read   1107 (grew 0, shrank 0, renamed while read 0)\n"
		"  batches      0, peak in flight 4096 bytes, peak RSS # KiB\n"
		"  walk         0 dirs, 0 entries, 0 getdents64, 0 mail-software files skipped, 0 excluded\n"
		"  pool         0 threads started, 0 batches inline, workers per batch:\n"
		"  waits (ms)   reader on budget 2.5, parser on reader 1.0, writer on parser 0.0\n"
		"  syscalls     close=1 faccessat=3 (total 4, 0.5714 per file)\n"
		"  ring ops     statx=0 openat=0 read=2 close=0 other=1; io_uring_enter=0\n"
		"  index        2 transactions, 5 messages, 3 unchanged, 1 errors, 1 deleted, 0 renamed, 1.5 ms"
		" in SQLite\n"
		"  database     read=7 write=9 sync=1 (total 17: SQLite's file operations, each a syscall or "
		"none, not in the syscalls above)\n";
	assert_string_equal(text, want);
	free(text);
	ingest_report_free(r);
}

static void test_report_json(void **state)
{
	(void)state;
	struct ingest_report *r = fixed_report();
	char *text;
	size_t len;
	assert_int_equal(ingest_report_format(r, 1, &text, &len), 0);
	double secs = cut_number(text, "\"elapsed_s\":");
	double rate = cut_number(text, "\"files_per_s\":");
	cut_number(text, "\"mb_per_s\":");
	double rss = cut_number(text, "\"peak_rss_kib\":");
	assert_true(secs > 0 && secs < 60);
	if (secs > 0.01)
		assert_true(rate > 7 / secs * 0.9 && rate < 7 / secs * 1.1);
	assert_true(rss > 0);
	/* every syscall name, counted or not: the names are sys.h's table */
	char sys[2048] = "";
	size_t n = 0;
	for (int i = 0; i < SC__COUNT; i++)
		n += (size_t)snprintf(sys + n, sizeof(sys) - n, "%s\"%s\":%d", i ? "," : "",
		                      sys_call_name(i), i == SC_close ? 1 : i == SC_faccessat ? 3 : 0);
	assert_true(n < sizeof(sys));
	char *want = t_asprintf(
		"{\"files\":7,\"written\":6,\"output_closed\":true,\"bytes\":1107,\"elapsed_s\":#,"
		"\"files_per_s\":#,\"mb_per_s\":#,\"backend\":\"sync\",\"fallback\":null,"
		"\"records\":{\"ok\":4,\"io-error\":1,\"not-regular\":0,\"symlink\":0,\"too-large\":1,"
		"\"not-mail\":1,\"internal\":0},\"grew\":0,\"shrank\":0,\"renamed\":0,\"batches\":0,"
		"\"peak_inflight_bytes\":4096,\"peak_rss_kib\":#,"
		"\"walk\":{\"dirs\":0,\"entries\":0,\"relisted\":0,\"skipped\":0,\"excluded\":0},"
		"\"pool\":{\"threads_started\":0,\"batches\":0,\"inline_batches\":0,\"workers_per_batch\":{}},"
		"\"wait_ms\":{\"reader_on_budget\":2.500,\"parser_on_reader\":1.000,\"writer_on_parser\":0.000},"
		"\"syscalls\":{%s},\"ring_ops\":{\"statx\":0,\"openat\":0,\"read\":2,\"close\":0,\"other\":1},"
		"\"index\":{\"transactions\":2,\"messages\":5,\"unchanged\":3,\"errors\":1,\"deleted\":1,\"renamed\":0,"
		"\"sqlite_ms\":1.500,\"sqlite_io\":{\"read\":7,\"write\":9,\"sync\":1}},\"io_uring_enter\":0,\"io_uring_enter_retries\":0,"
		"\"io_uring_cq_overflow\":0,\"io_uring_cqe_retries\":0}\n", sys);
	assert_string_equal(text, want);
	free(want);
	free(text);
	ingest_report_free(r);
}

/* A run of nothing: no division by zero, nothing listed that did not
 * happen, no index line without an index. */
static void test_report_empty(void **state)
{
	(void)state;
	struct ingest_report *r = report_new();
	stats_reset_all();
	report_start(r);
	struct budget bu;
	budget_init(&bu, 1 << 20);
	report_finish(r, NULL, NULL, NULL, &bu, 0, 0, 0);
	char *text;
	size_t len;
	assert_int_equal(ingest_report_format(r, 0, &text, &len), 0);
	cut_number(text, " records in ");
	cut_number(text, " s (");
	cut_number(text, " files/s, ");
	cut_number(text, "peak RSS ");
	static const char want[] =
		"ingest: 0 records in # s (# files/s, # MB/s)\n"
		"  backend      sync\n"
		"  written      0 records\n"
		"  records     \n"
		"  bytes read   0 (grew 0, shrank 0, renamed while read 0)\n"
		"  batches      0, peak in flight 0 bytes, peak RSS # KiB\n"
		"  walk         0 dirs, 0 entries, 0 getdents64, 0 mail-software files skipped, 0 excluded\n"
		"  pool         0 threads started, 0 batches inline, workers per batch:\n"
		"  waits (ms)   reader on budget 0.0, parser on reader 0.0, writer on parser 0.0\n"
		"  syscalls     (total 0, 0.0000 per file)\n"
		"  ring ops     statx=0 openat=0 read=0 close=0 other=0; io_uring_enter=0\n";
	assert_string_equal(text, want);
	free(text);
	assert_int_equal(ingest_report_format_errors(r, &text, &len), 0);
	assert_string_equal(text, "");
	assert_int_equal(len, 0);
	free(text);
	assert_int_equal(ingest_report_error_records(r), 0);
	assert_null(ingest_report_error(r));
	assert_int_equal(ingest_report_usage_error(r), 0);
	assert_int_equal(ingest_report_output_closed(r), 0);
	assert_int_equal(ingest_report_interrupted(r), 0);
	ingest_report_free(r);
}

/* The error summary: a line a record, the path as typed (root/path),
 * escaped for a terminal, and past ten a count of the rest. */
static void test_report_error_summary(void **state)
{
	(void)state;
	struct ingest_report *r = fixed_report();
	char *text;
	size_t len;
	assert_int_equal(ingest_report_format_errors(r, &text, &len), 0);
	assert_string_equal(text, "ingest: cannot read '/m/cur/b': Permission denied\n"
	                          "ingest: cannot read 'x\\x1b[31m\\tb': not-mail\n"
	                          "ingest: cannot read '/m/big': larger than --max-size\n");
	free(text);
	assert_int_equal(ingest_report_error_records(r), 3);
	/* 10 more: 7 shown (ten in all), 3 counted */
	struct batch *b = batch_new();
	for (int i = 0; i < 10; i++) {
		char *p = t_asprintf("f%d", i);
		item(b, "/m", p, RECORD_SYMLINK, 0, NULL, 0, 1);
		report_count_batch(r, b);
		b->n = 0;
		free(p);
	}
	batch_free(b);
	assert_int_equal(ingest_report_format_errors(r, &text, &len), 0);
	size_t lines = 0;
	for (const char *p = text; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 11);
	assert_non_null(strstr(text, "ingest: cannot read '/m/f6': symlink\n"
	                             "ingest: ... and 3 more error records (see \"error\" in the output)\n"));
	assert_null(strstr(text, "/m/f7"));
	assert_int_equal(ingest_report_error_records(r), 13);
	free(text);
	ingest_report_free(r);
}

/* Why the run failed: the text (escaped), then strerror unless err is 0. */
static void test_report_failure(void **state)
{
	(void)state;
	struct ingest_report *r = report_new();
	report_set_error(r, -ENOENT, "cannot open the list '%s'", "l\x1b]0;x\a");
	assert_string_equal(ingest_report_error(r), "cannot open the list 'l\\x1b]0;x\\x07': No such file or directory");
	report_set_error(r, 0, "refused %d", 1);
	assert_string_equal(ingest_report_error(r), "refused 1");
	report_set_message(r, "state '%s' is %s", "s", "in use\n");
	assert_string_equal(ingest_report_error(r), "state 's' is in use\\n");
	assert_int_equal(ingest_report_usage_error(r), 0);
	report_set_refused(r);
	assert_int_equal(ingest_report_usage_error(r), 1);
	report_set_flags(r, false, true);
	assert_int_equal(ingest_report_interrupted(r), 1);
	assert_int_equal(ingest_report_output_closed(r), 0);
	/* whole, however long: a path the user gave comes first, the reason
	 * after it */
	char *longer = malloc(5000);
	memset(longer, 'a', 4999);
	longer[4999] = '\0';
	report_set_error(r, -ENAMETOOLONG, "%s", longer);
	assert_int_equal(strlen(ingest_report_error(r)), 4999 + strlen(": File name too long"));
	assert_memory_equal(ingest_report_error(r), longer, 4999);
	assert_string_equal(ingest_report_error(r) + 4999, ": File name too long");
	report_set_message(r, "%s", longer);
	assert_string_equal(ingest_report_error(r), longer);
	free(longer);
	ingest_report_free(r);
	/* a report that is not there says nothing */
	assert_null(ingest_report_error(NULL));
	assert_int_equal(ingest_report_usage_error(NULL), 0);
	assert_int_equal(ingest_report_error_records(NULL), 0);
	ingest_report_free(NULL);
}

/* The writer's view as the progress line uses it. */
static void test_report_records(void **state)
{
	(void)state;
	struct ingest_report *r = fixed_report();
	uint64_t bytes, errors;
	assert_int_equal(report_records(r, &bytes, &errors), 7);
	assert_int_equal(bytes, 1107);
	assert_int_equal(errors, 3);
	assert_true(report_started_ns(r) > 0);
	ingest_report_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_report_human),
		cmocka_unit_test(test_report_json),
		cmocka_unit_test(test_report_empty),
		cmocka_unit_test(test_report_error_summary),
		cmocka_unit_test(test_report_failure),
		cmocka_unit_test(test_report_records),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
