/* SPDX-License-Identifier: MIT */
/* Unit tests for the options (options.c), against include/ingest.h and
 * README ("Usage", "Exit status"): every name's default, every accepted
 * form read back as the getter shows it, every refused value refused with
 * the option named and the old value kept, sizes and their suffixes,
 * --shard's forms, options refused together by the run (a usage error),
 * and the command line's one-line message and exit status 2 for each kind
 * of bad usage (the ingest program is this test's first argument). */
#include "helpers.h"
#include "options.h"
#include "core/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static const char *ingest_exe;

static char *get(const struct ingest_options *o, const char *name)
{
	char buf[512];
	int n = ingest_options_get(o, name, buf, sizeof(buf));
	assert_true(n >= 0 && (size_t)n < sizeof(buf));
	assert_null(ingest_options_error(o));
	return strdup(buf);
}

static void assert_get(const struct ingest_options *o, const char *name, const char *want)
{
	char *got = get(o, name);
	if (strcmp(got, want))
		print_message("%s: got '%s', want '%s'\n", name, got, want);
	assert_string_equal(got, want);
	free(got);
}

/* README's defaults ("Usage": 6M, 64M, 256M, 1M; jsonl; auto). */
static const char *const defaults[][2] = {
	{ "backend", "auto" }, { "batch-bytes", "6291456" }, { "max-inflight", "67108864" },
	{ "max-size", "268435456" }, { "max-text", "1048576" }, { "threads", "0" },
	{ "format", "jsonl" }, { "es-index", "" }, { "no-text", "0" }, { "headers", "0" },
	{ "parse", "1" }, { "output", "" }, { "files-from", "" }, { "null", "0" }, { "state", "" },
	{ "wait-state", "0" }, { "state-reset", "0" }, { "shard", "" }, { "stats", "0" },
	{ "exclude", "" }, { "split-bytes", "0" }, { "es-errors", "0" }, { "index", "" },
};

static void test_options_defaults(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	assert_non_null(o);
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		assert_get(o, defaults[i][0], defaults[i][1]);
	/* every field, by default, in the order of the records */
	char *f = get(o, "fields");
	assert_non_null(strstr(f, "path,"));
	assert_non_null(strstr(f, ",subject,"));
	free(f);
	ingest_options_free(o);
}

/* What the getter shows, set again, is the same setting: for every name. */
static void test_options_get_set_round_trip(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	static const char *const set[][2] = {
		{ "backend", "sync" }, { "batch-bytes", "4M" }, { "shard", "2/4" }, { "stats", "json" },
		{ "fields", "subject,path" }, { "exclude", "*.bak" }, { "threads", "3" },
		{ "format", "es-bulk" }, { "es-index", "mail" }, { "no-text", "1" }, { "state", "s" },
	};
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		assert_int_equal(ingest_options_set(o, set[i][0], set[i][1]), 0);
	struct ingest_options *p = ingest_options_new();
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		const char *name = defaults[i][0];
		char *v = get(o, name);
		/* an unset FILE (or shard, or pattern) reads "", an unset
		 * split-bytes "0", the machine's thread count "0": not values to
		 * set, but what is there when none was */
		bool unset = !*v || (!strcmp(v, "0") && (!strcmp(name, "split-bytes") ||
		                                         !strcmp(name, "threads")));
		if (!unset) {
			int r = ingest_options_set(p, name, v);
			if (r)
				print_message("--%s=%s: %s\n", name, v, ingest_options_error(p));
			assert_int_equal(r, 0);
		}
		char *w = get(p, name);
		assert_string_equal(w, v);
		free(w);
		free(v);
	}
	ingest_options_free(p);
	ingest_options_free(o);
}

/* An option with no value of its own by default, once set, is unset again
 * by NULL (an embedder reusing one options object has no other way back):
 * the getter then shows the default. */
static void test_options_unset(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	static const char *const set[][2] = {
		{ "output", "o" }, { "files-from", "l" }, { "state", "s" }, { "index", "x.db" },
		{ "es-index", "mail" }, { "shard", "2/4" }, { "split-bytes", "1M" }, { "threads", "3" },
		{ "exclude", "*.bak" }, { "exclude", "*.tmp" },
	};
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		assert_int_equal(ingest_options_set(o, set[i][0], set[i][1]), 0);
	for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
		assert_int_equal(ingest_options_set(o, set[i][0], NULL), 0);
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		assert_get(o, defaults[i][0], defaults[i][1]);
	ingest_options_free(o);
}

/* Accepted values, and how the getter shows them. */
static const char *const accepted[][3] = {
	{ "backend", "auto", "auto" }, { "backend", "uring", "uring" }, { "backend", "sync", "sync" },
	/* SIZE: K, M or G, powers of 1024, either case */
	{ "batch-bytes", "4096", "4096" }, { "batch-bytes", "64K", "65536" },
	{ "batch-bytes", "64k", "65536" }, { "batch-bytes", "3M", "3145728" },
	{ "batch-bytes", "1G", "1073741824" }, { "batch-bytes", "1", "1" },
	{ "max-inflight", "16M", "16777216" }, { "max-inflight", "1024G", "1099511627776" },
	{ "max-size", "0", "0" }, { "max-size", "50M", "52428800" }, { "max-size", "64G", "68719476736" },
	{ "max-text", "0", "0" }, { "max-text", "64K", "65536" }, { "max-text", "1G", "1073741824" },
	{ "split-bytes", "90M", "94371840" }, { "split-bytes", "64G", "68719476736" },
	{ "threads", "1", "1" }, { "threads", "256", "256" },
	{ "format", "jsonl", "jsonl" }, { "format", "es-bulk", "es-bulk" }, { "format", "tsv", "tsv" },
	{ "fields", "date,from,subject", "date,from,subject" }, { "fields", "subject,path", "subject,path" },
	{ "es-index", "mail", "mail" },
	{ "output", "out.jsonl", "out.jsonl" }, { "output", "-", "-" },
	{ "files-from", "-", "-" }, { "files-from", "list", "list" },
	{ "state", "s.state", "s.state" }, { "index", "mail.db", "mail.db" },
	/* --shard=K/N, 1 <= K <= N <= 2^20 */
	{ "shard", "1/1", "1/1" }, { "shard", "2/4", "2/4" }, { "shard", "4/4", "4/4" },
	{ "shard", "1048576/1048576", "1048576/1048576" },
	{ "stats", "human", "human" }, { "stats", "1", "human" }, { "stats", "json", "json" },
	{ "stats", "0", "0" },
	/* a flag: 1/0, true/false, yes/no */
	{ "no-text", "1", "1" }, { "no-text", "true", "1" }, { "no-text", "yes", "1" },
	{ "no-text", "0", "0" }, { "no-text", "false", "0" }, { "no-text", "no", "0" },
	{ "headers", "1", "1" }, { "parse", "0", "0" }, { "null", "yes", "1" },
	{ "wait-state", "1", "1" }, { "state-reset", "true", "1" }, { "es-errors", "1", "1" },
};

static void test_options_accepted(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(accepted) / sizeof(accepted[0]); i++) {
		struct ingest_options *o = ingest_options_new();
		int r = ingest_options_set(o, accepted[i][0], accepted[i][1]);
		if (r)
			print_message("--%s=%s: %d\n", accepted[i][0], accepted[i][1], r);
		assert_int_equal(r, 0);
		assert_null(ingest_options_error(o));
		assert_get(o, accepted[i][0], accepted[i][2]);
		ingest_options_free(o);
	}
}

/* A flag or --stats without a value (the command line's --no-text). */
static void test_options_null_value(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	static const char *const flags[] = { "no-text", "headers", "null", "wait-state", "state-reset",
	                                     "es-errors" };
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		assert_int_equal(ingest_options_set(o, flags[i], NULL), 0);
		assert_get(o, flags[i], "1");
	}
	assert_int_equal(ingest_options_set(o, "stats", NULL), 0);
	assert_get(o, "stats", "human");
	ingest_options_free(o);
}

/* Refused values: -EINVAL, the option named, the setting as it was. */
static const char *const refused[][2] = {
	{ "backend", "fast" }, { "backend", "" }, { "backend", NULL }, { "backend", "URING" },
	{ "batch-bytes", "0" }, { "batch-bytes", "1025M" }, { "batch-bytes", "2G" },
	{ "batch-bytes", "12Q" }, { "batch-bytes", "" }, { "batch-bytes", "-1" },
	{ "batch-bytes", "1.5M" }, { "batch-bytes", " 1M" }, { "batch-bytes", "1MM" },
	{ "batch-bytes", "1T" }, { "batch-bytes", "M" }, { "batch-bytes", NULL },
	{ "max-inflight", "0" }, { "max-inflight", "1025G" },
	{ "max-size", "65G" }, { "max-size", "18446744073709551616" }, { "max-size", "17179869184G" },
	{ "max-text", "1025M" }, { "split-bytes", "0" }, { "split-bytes", "65G" },
	{ "threads", "0" }, { "threads", "257" }, { "threads", "-1" }, { "threads", "2x" },
	{ "threads", "" }, { "threads", " 4" }, { "threads", "+4" },
	{ "format", "xml" }, { "format", "json" }, { "format", "" }, { "format", NULL },
	{ "fields", "path,nope" }, { "fields", NULL },
	{ "es-index", "" }, { "state", "" }, { "index", "" }, { "exclude", "" }, { "output", "" },
	{ "files-from", "" },
	{ "shard", "0/4" }, { "shard", "5/4" }, { "shard", "1/0" }, { "shard", "4" },
	{ "shard", "/4" }, { "shard", "1/" }, { "shard", "-1/4" }, { "shard", "1/-4" },
	{ "shard", "+1/4" }, { "shard", "1/4x" }, { "shard", " 1/4" }, { "shard", "1/1048577" },
	{ "shard", "1/2/3" }, { "shard", "" },
	{ "shard", "1/99999999999999999999" },
	{ "stats", "xml" }, { "stats", "" },
	{ "no-text", "2" }, { "no-text", "on" }, { "no-text", "" }, { "parse", "maybe" },
	{ "null", "YES" }, { "wait-state", "x" }, { "state-reset", "10" }, { "es-errors", "-" },
	{ "headers", "01" },
};

static void test_options_refused(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		const char *name = refused[i][0], *v = refused[i][1];
		struct ingest_options *o = ingest_options_new();
		char *before = get(o, name);
		int r = ingest_options_set(o, name, v);
		if (r != -EINVAL)
			print_message("--%s=%s: %d\n", name, v ? v : "(null)", r);
		assert_int_equal(r, -EINVAL);
		char *want = t_asprintf("invalid value for '%s': '%s'", name, v ? v : "(null)");
		assert_non_null(ingest_options_error(o));
		assert_string_equal(ingest_options_error(o), want);
		free(want);
		/* the next good call clears the error */
		assert_int_equal(ingest_options_set(o, "es-errors", "0"), 0);
		assert_null(ingest_options_error(o));
		assert_get(o, name, before);
		free(before);
		ingest_options_free(o);
	}
}

static void test_options_unknown_name(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	assert_int_equal(ingest_options_set(o, "fromat", "jsonl"), -EINVAL);
	assert_string_equal(ingest_options_error(o), "unknown option 'fromat'");
	assert_int_equal(ingest_options_set(o, NULL, "x"), -EINVAL);
	assert_string_equal(ingest_options_error(o), "unknown option '(null)'");
	/* the command line's own options are not the library's */
	assert_int_equal(ingest_options_set(o, "strict", "1"), -EINVAL);
	assert_int_equal(ingest_options_set(o, "io-only", "1"), -EINVAL);
	char buf[8];
	assert_int_equal(ingest_options_get(o, "quiet", buf, sizeof(buf)), -EINVAL);
	assert_string_equal(ingest_options_error(o), "unknown option 'quiet'");
	ingest_options_free(o);
}

/* The getter is snprintf's kind: the length it needed, cut to fit. */
static void test_options_get_truncates(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	assert_int_equal(ingest_options_set(o, "exclude", "*.bak"), 0);
	assert_int_equal(ingest_options_set(o, "exclude", ".Trash/*"), 0);
	assert_get(o, "exclude", "*.bak\n.Trash/*");
	char buf[6];
	assert_int_equal(ingest_options_get(o, "exclude", buf, sizeof(buf)), 14);
	assert_string_equal(buf, "*.bak");
	assert_int_equal(ingest_options_get(o, "batch-bytes", buf, 4), 7);
	assert_string_equal(buf, "629");
	assert_int_equal(ingest_options_get(o, "backend", NULL, 0), 4);
	assert_int_equal(ingest_options_set(o, "fields", "subject,date"), 0);
	assert_int_equal(ingest_options_get(o, "fields", buf, sizeof(buf)), 12);
	assert_string_equal(buf, "subje");
	ingest_options_free(o);
}

/* SIZE as options.h parses it. */
static void test_options_parse_size(void **state)
{
	(void)state;
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "4096", 4096 }, { "1k", KiB }, { "1K", KiB }, { "2m", 2 * MiB },
		{ "2M", 2 * MiB }, { "3g", 3 * GiB }, { "3G", 3 * GiB },
		{ "16777216G", 16777216ull * GiB }, { "18446744073709551615", UINT64_MAX },
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t v = 1;
		assert_int_equal(options_parse_size(ok[i].s, &v), 0);
		assert_true(v == ok[i].v);
	}
	static const char *const bad[] = {
		NULL, "", "-1", "-0", "K", "1T", "1 K", "1K ", "1.5", "0x10", "1KK", "1GB1",
		"18446744073709551616", "17179869184G", " 1", "+1", " -1", "\t1K",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t v = 7;
		if (options_parse_size(bad[i], &v) != -EINVAL)
			print_message("'%s' taken\n", bad[i] ? bad[i] : "(null)");
		assert_int_equal(options_parse_size(bad[i], &v), -EINVAL);
		assert_true(v == 7);
	}
}

/* --exclude is repeatable; every other option is set again, the last wins. */
static void test_options_repeat(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	assert_int_equal(ingest_options_set(o, "output", "a"), 0);
	assert_int_equal(ingest_options_set(o, "output", "b"), 0);
	assert_get(o, "output", "b");
	assert_int_equal(ingest_options_set(o, "shard", "1/2"), 0);
	assert_int_equal(ingest_options_set(o, "shard", "3/3"), 0);
	assert_get(o, "shard", "3/3");
	for (int i = 0; i < 3; i++) {
		char g[8];
		snprintf(g, sizeof(g), "g%d", i);
		assert_int_equal(ingest_options_set(o, "exclude", g), 0);
	}
	assert_get(o, "exclude", "g0\ng1\ng2");
	ingest_options_free(o);
}

/* --- options refused together: the run refuses them before any input --- */

struct clash {
	const char *const set[4][2];
	const char *error;       /* the start of ingest_report_error() */
};

static void test_options_refused_together(void **state)
{
	(void)state;
	char *dir = t_tmpdir("options");
	char *out = t_asprintf("%s/out", dir), *st = t_asprintf("%s/st", dir),
	     *db = t_asprintf("%s/db", dir);
	const struct clash clashes[] = {
		{ { { "index", db }, { "state", st } },
		  "--index cannot be combined with '--state (the index keeps its own state)'" },
		{ { { "index", db }, { "output", out } },
		  "--index cannot be combined with '--output (records go into the index)'" },
		{ { { "index", db }, { "format", "tsv" } },
		  "--index cannot be combined with '--format (records go into the index)'" },
		{ { { "index", db }, { "fields", "path" } },
		  "--index cannot be combined with '--fields (the index keeps every field)'" },
		{ { { "index", db }, { "parse", "0" } },
		  "--index cannot be combined with '--io-only (the index is of parsed messages)'" },
		{ { { "state", st }, { "format", "tsv" } },
		  "--state reports deletions and renames, which TSV cannot carry: use jsonl or es-bulk" },
		{ { { "split-bytes", "1M" } },
		  "--split-bytes writes files PREFIX.000, PREFIX.001, ...: it needs -o PREFIX and jsonl or es-bulk" },
		{ { { "split-bytes", "1M" }, { "output", "-" } }, "--split-bytes writes files" },
		{ { { "split-bytes", "1M" }, { "output", out }, { "format", "tsv" } }, "--split-bytes writes files" },
		{ { { "files-from", "-" } }, "standard input can be read once: '-' and --files-from=- exclude each other" },
	};
	for (size_t i = 0; i < sizeof(clashes) / sizeof(clashes[0]); i++) {
		const struct clash *c = &clashes[i];
		struct ingest_options *o = ingest_options_new();
		for (int k = 0; k < 4 && c->set[k][0]; k++)
			assert_int_equal(ingest_options_set(o, c->set[k][0], c->set[k][1]), 0);
		assert_int_equal(ingest_options_add_path(o, i == sizeof(clashes) / sizeof(clashes[0]) - 1 ? "-" : dir), 0);
		struct ingest_report *rep = NULL;
		assert_int_equal(ingest_run(o, &rep), -EINVAL);
		assert_non_null(rep);
		const char *why = ingest_report_error(rep);
		assert_non_null(why);
		if (strncmp(why, c->error, strlen(c->error)))
			print_message("got '%s', want '%s...'\n", why, c->error);
		assert_memory_equal(why, c->error, strlen(c->error));
		/* the caller's to mend: exit 2 */
		assert_int_equal(ingest_report_usage_error(rep), 1);
		ingest_report_free(rep);
		ingest_options_free(o);
		/* refused before anything was made */
		assert_int_equal(access(out, F_OK), -1);
		assert_int_equal(access(db, F_OK), -1);
	}
	free(out);
	free(st);
	free(db);
	t_rmtree(dir);
}

/* --- the command line: one line on stderr, exit 2 --- */

static int exec_ingest(void *arg, int out)
{
	/* execv's argv is not const for history's sake: it writes none */
	char *const *argv = arg;
	int null = open("/dev/null", O_RDONLY);
	dup2(null, STDIN_FILENO);
	dup2(out, STDOUT_FILENO);
	dup2(out, STDERR_FILENO);
	execv(ingest_exe, argv);
	return 126;
}

static void test_options_command_line(void **state)
{
	(void)state;
	if (!ingest_exe) {
		print_message("SKIP: the ingest program was not given\n");
		skip();
	}
	static const struct { const char *args[4]; const char *out; } cases[] = {
		{ { "--threads=0", "x" }, "ingest: invalid value in '--threads=0' (see ingest --help)\n" },
		{ { "--batch-bytes=12Q", "x" }, "ingest: invalid value in '--batch-bytes=12Q' (see ingest --help)\n" },
		{ { "--shard=5/4", "x" }, "ingest: invalid value in '--shard=5/4' (see ingest --help)\n" },
		{ { "--max-size=65G", "x" }, "ingest: invalid value in '--max-size=65G' (see ingest --help)\n" },
		{ { "--stats=xml", "x" }, "ingest: invalid value in '--stats=xml' (see ingest --help)\n" },
		{ { "--backend", "fast", "x" }, "ingest: invalid value in '--backend=fast' (see ingest --help)\n" },
		{ { "--bogus", "x" }, "ingest: unknown option '--bogus' (see ingest --help)\n" },
		{ { "-z", "x" }, "ingest: unknown option '-z' (see ingest --help)\n" },
		{ { "--no-text=1", "x" }, "ingest: unknown option '--no-text=1' (see ingest --help)\n" },
		{ { "--max-size" }, "ingest: option needs a value: '--max-size' (see ingest --help)\n" },
		{ { "-o" }, "ingest: option needs a value: '-o' (see ingest --help)\n" },
		{ { "--threads=2" }, "ingest: no PATH given (and no --files-from) (see ingest --help)\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[6] = { "ingest" };
		for (int k = 0; k < 4 && cases[i].args[k]; k++)
			argv[k + 1] = cases[i].args[k];
		int status;
		char *got = t_fork_output(exec_ingest, (void *)(uintptr_t)argv, false, &status, NULL);
		if (status != 2 || strcmp(got, cases[i].out))
			print_message("%s: exit %d, '%s'\n", cases[i].args[0], status, got);
		assert_int_equal(status, 2);
		/* nothing on stdout, the one line on stderr */
		assert_string_equal(got, cases[i].out);
		free(got);
	}
	/* refused together, by the run: exit 2 as well */
	char *dir = t_tmpdir("options");
	char *a = t_asprintf("--state=%s/st", dir);
	const char *argv[] = { "ingest", a, "--format=tsv", dir, NULL };
	int status;
	char *got = t_fork_output(exec_ingest, (void *)(uintptr_t)argv, false, &status, NULL);
	assert_int_equal(status, 2);
	static const char head[] = "ingest: --state reports deletions and renames, which TSV cannot carry";
	assert_memory_equal(got, head, sizeof(head) - 1);
	assert_non_null(strchr(got, '\n'));
	assert_null(strchr(got, '\n')[1] ? got : NULL);
	free(got);
	free(a);
	t_rmtree(dir);
}

int main(int argc, char **argv)
{
	ingest_exe = argc > 1 ? argv[1] : NULL;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_options_defaults),
		cmocka_unit_test(test_options_get_set_round_trip),
		cmocka_unit_test(test_options_unset),
		cmocka_unit_test(test_options_accepted),
		cmocka_unit_test(test_options_null_value),
		cmocka_unit_test(test_options_refused),
		cmocka_unit_test(test_options_unknown_name),
		cmocka_unit_test(test_options_get_truncates),
		cmocka_unit_test(test_options_parse_size),
		cmocka_unit_test(test_options_repeat),
		cmocka_unit_test(test_options_refused_together),
		cmocka_unit_test(test_options_command_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
