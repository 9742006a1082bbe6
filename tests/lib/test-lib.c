/* SPDX-License-Identifier: MIT */
/* The public API as an embedder sees it: only <ingest.h>, linked against
 * the shared libingest.  Runs on the sample Maildir (tests/sample). */
#include <ingest.h>

#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <cmocka.h>
#include <sqlite3.h>

static const char *sample;   /* the sample Maildir, argv[1] */

struct collect {
	char *bytes;
	size_t len, records, calls;
	int fail_with;           /* returned by the sink when nonzero */
};

static int collect_sink(void *ctx, const char *records, size_t len, size_t count)
{
	struct collect *c = ctx;
	c->calls++;
	if (c->fail_with)
		return c->fail_with;
	c->bytes = realloc(c->bytes, c->len + len + 1);
	assert_non_null(c->bytes);
	memcpy(c->bytes + c->len, records, len);
	c->len += len;
	c->records += count;
	/* whole records only: a call ends with a record's newline */
	assert_true(len > 0 && records[len - 1] == '\n');
	return 0;
}

static size_t count_lines(const char *p, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		k += p[i] == '\n';
	return k;
}

static struct ingest_options *sample_options(void)
{
	struct ingest_options *o = ingest_options_new();
	assert_non_null(o);
	assert_int_equal(ingest_options_add_path(o, sample), 0);
	/* small batches: several sink calls, each in order */
	assert_int_equal(ingest_options_set(o, "batch-bytes", "4K"), 0);
	return o;
}

/* Reads back what went to a memfd. */
static char *run_to_fd(size_t *len)
{
	int fd = memfd_create("ingest-out", 0);
	assert_true(fd >= 0);
	struct ingest_options *o = sample_options();
	assert_int_equal(ingest_options_set_output_fd(o, fd), 0);
	struct ingest_report *rep = NULL;
	assert_int_equal(ingest_run(o, &rep), 0);
	ingest_report_free(rep);
	ingest_options_free(o);
	off_t end = lseek(fd, 0, SEEK_END);
	assert_true(end > 0);
	char *p = malloc((size_t)end);
	assert_non_null(p);
	assert_int_equal(pread(fd, p, (size_t)end, 0), end);
	/* the library never closes a descriptor it was given */
	assert_int_equal(close(fd), 0);
	*len = (size_t)end;
	return p;
}

/* Runs o (which it frees) into a collecting sink; the run must succeed. */
static void run_to_sink(struct ingest_options *o, struct collect *c)
{
	assert_int_equal(ingest_options_set_sink(o, collect_sink, c), 0);
	struct ingest_report *rep = NULL;
	assert_int_equal(ingest_run(o, &rep), 0);
	ingest_report_free(rep);
	ingest_options_free(o);
}

static void test_lib_sink_gets_whole_records_in_order(void **state)
{
	(void)state;
	size_t fd_len;
	char *fd_bytes = run_to_fd(&fd_len);

	struct collect c = { 0 };
	run_to_sink(sample_options(), &c);

	assert_true(c.calls > 1);
	assert_int_equal(c.records, count_lines(c.bytes, c.len));
	assert_int_equal(c.len, fd_len);
	assert_memory_equal(c.bytes, fd_bytes, fd_len);
	free(c.bytes);
	free(fd_bytes);
}

struct progress_seen {
	size_t calls, done_calls;
	uint64_t last_inputs;
};

static void note_progress(void *ctx, uint64_t inputs, uint64_t bytes, uint64_t errors,
                          uint64_t total, uint64_t elapsed_ns, int done)
{
	struct progress_seen *p = ctx;
	(void)bytes; (void)errors; (void)total; (void)elapsed_ns;
	assert_true(inputs >= p->last_inputs);
	p->last_inputs = inputs;
	p->calls++;
	p->done_calls += done != 0;
}

/* Runs the sample into a sink that answers its first call with fail_with,
 * in each format (TSV's first call is its header row): the sink is not
 * called again, and progress counts no input as written.  The result of
 * the run, which must not depend on the format, is returned, and *rep is
 * the last format's report. */
static int run_failing_sink(int fail_with, struct ingest_report **rep)
{
	static const char *const formats[] = { "jsonl", "tsv" };
	int r = 0;
	*rep = NULL;
	for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++) {
		struct ingest_options *o = sample_options();
		struct collect c = { .fail_with = fail_with };
		struct progress_seen seen = { 0 };
		assert_int_equal(ingest_options_set(o, "format", formats[f]), 0);
		ingest_options_set_sink(o, collect_sink, &c);
		ingest_options_set_progress(o, note_progress, &seen);
		ingest_report_free(*rep);
		*rep = NULL;
		int rf = ingest_run(o, rep);
		assert_int_equal(c.calls, 1);
		assert_int_equal(seen.done_calls, 1);
		assert_int_equal(seen.last_inputs, 0);
		assert_true(f == 0 || rf == r);
		r = rf;
		ingest_options_free(o);
	}
	return r;
}

static void test_lib_sink_error_stops_the_run(void **state)
{
	(void)state;
	struct ingest_report *rep;
	assert_int_equal(run_failing_sink(-ECANCELED, &rep), -ECANCELED);
	assert_non_null(ingest_report_error(rep));
	assert_non_null(strstr(ingest_report_error(rep), "the sink failed"));
	ingest_report_free(rep);
}

/* -EPIPE from the sink stops the run as a closed output does: a reader
 * that has seen enough is no failure (include/ingest.h). */
static void test_lib_sink_epipe_is_a_closed_output(void **state)
{
	(void)state;
	struct ingest_report *rep;
	assert_int_equal(run_failing_sink(-EPIPE, &rep), 0);
	assert_int_equal(ingest_report_output_closed(rep), 1);
	assert_null(ingest_report_error(rep));
	ingest_report_free(rep);
}

/* A new directory under $TMPDIR (or /tmp) for one case, into buf. */
static void lib_tmpdir(char *buf, size_t size, const char *name)
{
	const char *t = getenv("TMPDIR");
	snprintf(buf, size, "%s/ingest-lib-%s-XXXXXX", t && *t ? t : "/tmp", name);
	assert_non_null(mkdtemp(buf));
}

/* split-bytes makes files of its own, closing each to open the next: with
 * the caller's descriptor (or a sink) in place of the output it is refused
 * before anything is read, and the descriptor stays the caller's.  It used
 * to write the first part to the descriptor, close it and go on in files. */
static void test_lib_split_bytes_refused_with_fd_or_sink(void **state)
{
	(void)state;
	char dir[256], prefix[300], first[320];
	lib_tmpdir(dir, sizeof(dir), "split");
	snprintf(prefix, sizeof(prefix), "%s/part", dir);
	snprintf(first, sizeof(first), "%s.000", prefix);
	for (int with_sink = 0; with_sink < 2; with_sink++) {
		int fd = memfd_create("ingest-out", 0);
		assert_true(fd >= 0);
		struct ingest_options *o = sample_options();
		assert_int_equal(ingest_options_set(o, "output", prefix), 0);
		assert_int_equal(ingest_options_set(o, "split-bytes", "1K"), 0);
		struct collect c = { 0 };
		if (with_sink)
			assert_int_equal(ingest_options_set_sink(o, collect_sink, &c), 0);
		else
			assert_int_equal(ingest_options_set_output_fd(o, fd), 0);
		struct ingest_report *rep = NULL;
		assert_int_equal(ingest_run(o, &rep), -EINVAL);
		assert_non_null(strstr(ingest_report_error(rep), "split-bytes"));
		ingest_report_free(rep);
		ingest_options_free(o);
		assert_int_equal(lseek(fd, 0, SEEK_END), 0);
		assert_int_equal(c.calls, 0);
		assert_int_equal(fcntl(fd, F_GETFD), 0);   /* still open, still ours */
		assert_int_equal(close(fd), 0);
		assert_int_equal(access(first, F_OK), -1);
	}
	assert_int_equal(rmdir(dir), 0);   /* empty: nothing was written there */
}

/* The lowest descriptor free now: the same before and after a run means
 * the run closed what it opened. */
static int lowest_free_fd(void)
{
	int fd = dup(STDIN_FILENO);
	assert_true(fd >= 0);
	close(fd);
	return fd;
}

/* One run of "-" with a message piped into fd 0. */
static void run_stdin_once(void)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	static const char msg[] = "Subject: piped\n\nbody\n";
	assert_int_equal(write(p[1], msg, sizeof(msg) - 1), (ssize_t)(sizeof(msg) - 1));
	close(p[1]);
	assert_int_equal(dup2(p[0], STDIN_FILENO), STDIN_FILENO);
	close(p[0]);
	struct stat before, after;
	assert_int_equal(fstat(STDIN_FILENO, &before), 0);
	int free_fd = lowest_free_fd();
	struct ingest_options *o = ingest_options_new();
	assert_int_equal(ingest_options_add_path(o, "-"), 0);
	struct collect c = { 0 };
	run_to_sink(o, &c);
	assert_int_equal(fstat(STDIN_FILENO, &after), 0);
	assert_true(S_ISFIFO(after.st_mode));
	assert_true(after.st_ino == before.st_ino && after.st_dev == before.st_dev);
	assert_int_equal(lowest_free_fd(), free_fd);   /* its memory file closed */
	assert_int_equal(c.records, 1);
	c.bytes[c.len] = '\0';   /* the sink keeps a byte of room */
	assert_non_null(strstr(c.bytes, "\"subject\":\"piped\""));
	free(c.bytes);
}

/* A run of "-" reads standard input whole and leaves fd 0 as it found it,
 * run after run: it used to put its memory file there for good, so the
 * caller's pipe was gone and a second run read the exhausted copy. */
static void test_lib_stdin_leaves_fd_0(void **state)
{
	(void)state;
	int saved = dup(STDIN_FILENO);
	assert_true(saved >= 0);
	run_stdin_once();
	run_stdin_once();
	assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
	close(saved);
}

/* An index refused before it is opened (a directory) leaves the host's
 * descriptors alone: the refusal closed descriptor 0, the zeroed build
 * descriptor of the index's struct. */
static void test_lib_refused_index_leaves_fd_0(void **state)
{
	(void)state;
	char dir[256];
	lib_tmpdir(dir, sizeof(dir), "refused");
	int saved = dup(STDIN_FILENO);
	if (saved < 0) {   /* no standard input here: give it one */
		int fd = open("/dev/null", O_RDONLY);
		assert_int_equal(fd, STDIN_FILENO);
	}
	struct ingest_options *o = sample_options();
	assert_int_equal(ingest_options_set(o, "index", dir), 0);
	struct ingest_report *rep = NULL;
	assert_true(ingest_run(o, &rep) < 0);
	assert_true(fcntl(STDIN_FILENO, F_GETFD) >= 0);
	ingest_report_free(rep);
	ingest_options_free(o);
	if (saved >= 0) {
		assert_int_equal(dup2(saved, STDIN_FILENO), STDIN_FILENO);
		close(saved);
	}
}

/* ingest_search's error is optional: a query FTS5 cannot parse is -EINVAL
 * with or without it (it was written through unchecked); a missing
 * database or query is an error, with its reason. */
static void test_lib_search_error_optional(void **state)
{
	(void)state;
	char dir[256], db[300];
	lib_tmpdir(dir, sizeof(dir), "search");
	snprintf(db, sizeof(db), "%s/mail.db", dir);
	struct ingest_options *o = sample_options();
	assert_int_equal(ingest_options_set(o, "index", db), 0);
	struct ingest_report *rep = NULL;
	assert_int_equal(ingest_run(o, &rep), 0);
	ingest_report_free(rep);
	/* an index run hands no record over: a sink or a descriptor given
	 * for them is refused, not left waiting for nothing */
	struct collect c = { 0 };
	for (int with_sink = 0; with_sink < 2; with_sink++) {
		assert_int_equal(with_sink ? ingest_options_set_sink(o, collect_sink, &c)
		                           : ingest_options_set_output_fd(o, STDERR_FILENO), 0);
		assert_int_equal(ingest_run(o, &rep), -EINVAL);
		assert_int_equal(ingest_report_usage_error(rep), 1);
		assert_non_null(strstr(ingest_report_error(rep), "--index cannot be combined with"));
		ingest_report_free(rep);
		ingest_options_set_output_fd(o, -1);
	}
	assert_int_equal(c.calls, 0);
	ingest_options_free(o);
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	assert_true(null >= 0);
	assert_int_equal(ingest_search(db, "a AND", 0, 10, null, NULL), -EINVAL);
	char *why = NULL;
	assert_int_equal(ingest_search(db, "a AND", 0, 10, null, &why), -EINVAL);
	assert_non_null(why);
	free(why);
	/* no query, no database: refused, not a crash */
	assert_int_equal(ingest_search(db, NULL, 0, 10, null, NULL), -EINVAL);
	assert_int_equal(ingest_search(NULL, "a", 0, 10, null, NULL), -EINVAL);
	/* a database that is not there: the system's errno and its words */
	char missing[320];
	snprintf(missing, sizeof(missing), "%s/none.db", dir);
	why = NULL;
	assert_int_equal(ingest_search(missing, "a", 0, 10, null, &why), -ENOENT);
	assert_string_equal(why, strerror(ENOENT));
	free(why);
	/* flags: an unknown bit, or both orders, is refused with its reason;
	 * each order alone is a search (the sample has no word "zzz": 0 hits) */
	for (int bad = 0; bad < 2; bad++) {
		why = NULL;
		int flags = bad ? INGEST_SEARCH_NEWEST | INGEST_SEARCH_OLDEST : 16;
		assert_int_equal(ingest_search(db, "zzz", flags, 10, null, &why), -EINVAL);
		assert_string_equal(why, bad ? "flags 0x6: both orders" : "flags 0x10: an unknown bit");
		free(why);
	}
	assert_int_equal(ingest_search(db, "zzz", INGEST_SEARCH_OLDEST | INGEST_SEARCH_TSV, 10, null, NULL), 0);
	assert_int_equal(ingest_search(db, "zzz", INGEST_SEARCH_NEWEST, 10, null, NULL), 0);
	/* the count of every hit, whatever the limit: the sample's 32 */
	assert_int_equal(ingest_search(db, "*", INGEST_SEARCH_COUNT, 1, null, NULL), 32);
	close(null);
	char name[320];
	for (const char *const *x = (const char *const[]){ "", "-wal", "-shm", NULL }; *x; x++) {
		snprintf(name, sizeof(name), "%s%s", db, *x);
		unlink(name);
	}
	assert_int_equal(rmdir(dir), 0);
}

static void test_lib_output_fd_rejects_bad_fd(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	assert_int_equal(ingest_options_set_output_fd(o, -2), -EINVAL);
	assert_int_equal(ingest_options_set_output_fd(o, -1), 0);
	ingest_options_free(o);
	/* a descriptor that is not open: the error names it, not "stdout" */
	o = sample_options();
	assert_int_equal(fcntl(999, F_GETFD), -1);
	assert_int_equal(ingest_options_set_output_fd(o, 999), 0);
	struct ingest_report *rep = NULL;
	assert_int_equal(ingest_run(o, &rep), -EBADF);
	assert_non_null(strstr(ingest_report_error(rep), "'fd 999'"));
	ingest_report_free(rep);
	ingest_options_free(o);
}

/* Progress goes to the callback; the library writes nothing to stderr. */
static void test_lib_progress_is_a_callback(void **state)
{
	(void)state;
	int err = memfd_create("stderr", 0), saved = dup(STDERR_FILENO);
	assert_true(err >= 0 && saved >= 0);
	struct ingest_options *o = sample_options();
	struct progress_seen seen = { 0 };
	struct collect c = { 0 };
	ingest_options_set_sink(o, collect_sink, &c);
	assert_int_equal(ingest_options_set_progress(o, note_progress, &seen), 0);
	dup2(err, STDERR_FILENO);
	struct ingest_report *rep = NULL;
	int r = ingest_run(o, &rep);
	dup2(saved, STDERR_FILENO);
	assert_int_equal(r, 0);
	assert_int_equal(seen.done_calls, 1);
	assert_true(seen.calls >= 1);
	assert_int_equal(seen.last_inputs, c.records);
	assert_int_equal(lseek(err, 0, SEEK_END), 0);
	close(err);
	close(saved);
	free(c.bytes);
	ingest_report_free(rep);
	ingest_options_free(o);
}

/* A run refused or failed before its pipeline starts still tells the
 * progress callback its end (done 1): a host that clears its display at
 * done 1 never heard it. */
static void test_lib_progress_ends_a_refused_run(void **state)
{
	(void)state;
	static const char *const bad[][2] = {
		{ "files-from", "/nonexistent/list" },   /* the list cannot be opened */
		{ "format", "tsv" },                     /* with state: refused */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct ingest_options *o = sample_options();
		struct progress_seen seen = { 0 };
		struct collect c = { 0 };
		ingest_options_set_sink(o, collect_sink, &c);
		assert_int_equal(ingest_options_set_progress(o, note_progress, &seen), 0);
		assert_int_equal(ingest_options_set(o, bad[i][0], bad[i][1]), 0);
		if (i == 1)
			assert_int_equal(ingest_options_set(o, "state", "/nonexistent/state"), 0);
		struct ingest_report *rep = NULL;
		assert_true(ingest_run(o, &rep) < 0);
		assert_int_equal(seen.done_calls, 1);
		free(c.bytes);
		ingest_report_free(rep);
		ingest_options_free(o);
	}
}

static void test_lib_version(void **state)
{
	(void)state;
	char want[32];
	snprintf(want, sizeof(want), "%d.%d.%d", INGEST_VERSION_MAJOR, INGEST_VERSION_MINOR,
	         INGEST_VERSION_MICRO);
	assert_string_equal(ingest_version(), want);
	assert_true(INGEST_CHECK_VERSION(1, 0, 0));
	assert_false(INGEST_CHECK_VERSION(2, 0, 0));
	assert_true(ingest_check_version(INGEST_VERSION_MAJOR, INGEST_VERSION_MINOR,
	                                 INGEST_VERSION_MICRO));
	assert_false(ingest_check_version(INGEST_VERSION_MAJOR, INGEST_VERSION_MINOR + 1, 0));
	assert_false(ingest_check_version(INGEST_VERSION_MAJOR + 1, 0, 0));
	assert_false(ingest_check_version(INGEST_VERSION_MAJOR - 1, 0, 0));
}

static void test_lib_unknown_option_is_einval_naming_it(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	assert_int_equal(ingest_options_set(o, "fromat", "jsonl"), -EINVAL);
	assert_non_null(ingest_options_error(o));
	assert_non_null(strstr(ingest_options_error(o), "'fromat'"));
	assert_int_equal(ingest_options_set(o, "threads", "0"), -EINVAL);
	assert_non_null(strstr(ingest_options_error(o), "'threads'"));
	assert_int_equal(ingest_options_set(o, "threads", "2"), 0);
	assert_null(ingest_options_error(o));
	ingest_options_free(o);
}

static void test_lib_options_get(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	char buf[64];
	assert_int_equal(ingest_options_set(o, "batch-bytes", "4K"), 0);
	assert_int_equal(ingest_options_get(o, "batch-bytes", buf, sizeof(buf)), 4);
	assert_string_equal(buf, "4096");
	assert_int_equal(ingest_options_get(o, "format", buf, sizeof(buf)), 5);
	assert_string_equal(buf, "jsonl");
	assert_int_equal(ingest_options_set(o, "fields", "subject,from"), 0);
	assert_int_equal(ingest_options_get(o, "fields", buf, sizeof(buf)), 12);
	assert_string_equal(buf, "subject,from");
	assert_int_equal(ingest_options_set(o, "shard", "2/4"), 0);
	ingest_options_get(o, "shard", buf, sizeof(buf));
	assert_string_equal(buf, "2/4");
	assert_int_equal(ingest_options_set(o, "no-text", "1"), 0);
	ingest_options_get(o, "no-text", buf, sizeof(buf));
	assert_string_equal(buf, "1");
	/* like snprintf: the length needed, the text cut */
	assert_int_equal(ingest_options_get(o, "format", buf, 3), 5);
	assert_string_equal(buf, "js");
	assert_int_equal(ingest_options_get(o, "nope", buf, sizeof(buf)), -EINVAL);
	assert_non_null(strstr(ingest_options_error(o), "'nope'"));
	/* what get says, set takes back */
	ingest_options_get(o, "max-text", buf, sizeof(buf));
	assert_int_equal(ingest_options_set(o, "max-text", buf), 0);
	ingest_options_free(o);
}

/* An --index run in a host that uses SQLite itself: the host holding
 * SQLite's application mutex (SQLITE_MUTEX_STATIC_APP1, the host's by
 * SQLite's rules) does not block the run, which took it to register its
 * counting VFS and waited for good; the host's default VFS is still the
 * default, and the run's is registered under a name of its own. */
static void test_lib_index_beside_host_sqlite(void **state)
{
	(void)state;
	char dir[256], db[300];
	lib_tmpdir(dir, sizeof(dir), "hostsql");
	snprintf(db, sizeof(db), "%s/mail.db", dir);
	assert_int_equal(sqlite3_initialize(), SQLITE_OK);
	const char *before = sqlite3_vfs_find(NULL)->zName;
	sqlite3_mutex *m = sqlite3_mutex_alloc(SQLITE_MUTEX_STATIC_APP1);
	sqlite3_mutex_enter(m);
	struct ingest_options *o = sample_options();
	assert_int_equal(ingest_options_set(o, "index", db), 0);
	assert_int_equal(ingest_options_set(o, "stats", "json"), 0);
	struct ingest_report *rep = NULL;
	assert_int_equal(ingest_run(o, &rep), 0);
	sqlite3_mutex_leave(m);
	char *text = NULL;
	size_t n = 0;
	assert_int_equal(ingest_report_format(rep, 1, &text, &n), 0);
	assert_non_null(strstr(text, "\"sqlite_io\":{\"read\":"));
	free(text);
	assert_string_equal(sqlite3_vfs_find(NULL)->zName, before);
	int named = 0;
	for (sqlite3_vfs *v = sqlite3_vfs_find(NULL); v; v = v->pNext)
		named += strncmp(v->zName, "ingest-counting-", 16) == 0;
	assert_int_equal(named, 1);
	ingest_report_free(rep);
	ingest_options_free(o);
	char path[400];
	static const char *const leave[] = { "", "-wal", "-shm" };
	for (size_t i = 0; i < sizeof(leave) / sizeof(leave[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", db, leave[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* A run started from inside a run (here, from its sink) is refused. */
static int nested_run_sink(void *ctx, const char *records, size_t len, size_t count)
{
	(void)records; (void)len; (void)count;
	int *nested = ctx;
	struct ingest_options *o = sample_options();
	struct ingest_report *rep = (struct ingest_report *)1;
	*nested = ingest_run(o, &rep);
	assert_null(rep);
	/* the report of a refused run is NULL, and reads as one with
	 * nothing to say (both formatters segfaulted on it) */
	char *text = NULL;
	size_t n = 1;
	assert_int_equal(ingest_report_format(rep, 1, &text, &n), 0);
	assert_string_equal(text, "");
	assert_int_equal(n, 0);
	free(text);
	assert_int_equal(ingest_report_format_errors(rep, &text, &n), 0);
	assert_string_equal(text, "");
	free(text);
	assert_null(ingest_report_error(rep));
	ingest_options_free(o);
	return 0;
}

/* A run started by another thread while one goes on (here, while the
 * first sits in its sink) is refused too, with no report, and the first
 * one goes on undisturbed. */
struct other_run {
	bool tried;
	int result;
	struct collect c;
};

static void *other_thread_run(void *arg)
{
	int *result = arg;
	struct ingest_options *o = sample_options();
	struct collect c = { 0 };
	ingest_options_set_sink(o, collect_sink, &c);
	struct ingest_report *rep = (struct ingest_report *)1;
	*result = ingest_run(o, &rep);
	if (rep)
		*result = 1;   /* a refused run's report is NULL */
	free(c.bytes);
	ingest_options_free(o);
	return NULL;
}

static int other_thread_sink(void *ctx, const char *records, size_t len, size_t count)
{
	struct other_run *x = ctx;
	if (!x->tried) {
		x->tried = true;
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, other_thread_run, &x->result), 0);
		assert_int_equal(pthread_join(t, NULL), 0);
	}
	return collect_sink(&x->c, records, len, count);
}

static void test_lib_run_from_another_thread_is_ebusy(void **state)
{
	(void)state;
	struct ingest_options *o = sample_options();
	struct other_run x = { 0 };
	ingest_options_set_sink(o, other_thread_sink, &x);
	struct ingest_report *rep = NULL;
	assert_int_equal(ingest_run(o, &rep), 0);
	assert_true(x.tried);
	assert_int_equal(x.result, -EBUSY);
	/* the first run's records are all there, byte for byte a run's alone */
	struct collect alone = { 0 };
	run_to_sink(sample_options(), &alone);
	assert_true(alone.records > 0);
	assert_int_equal(x.c.records, alone.records);
	assert_int_equal(x.c.len, alone.len);
	assert_memory_equal(x.c.bytes, alone.bytes, alone.len);
	free(x.c.bytes);
	free(alone.bytes);
	ingest_report_free(rep);
	ingest_options_free(o);
}

static void test_lib_concurrent_run_is_ebusy(void **state)
{
	(void)state;
	struct ingest_options *o = sample_options();
	int nested = 0;
	ingest_options_set_sink(o, nested_run_sink, &nested);
	struct ingest_report *rep = NULL;
	assert_int_equal(ingest_run(o, &rep), 0);
	assert_int_equal(nested, -EBUSY);
	ingest_report_free(rep);
	/* and once it is over, a run goes again */
	struct collect c = { 0 };
	ingest_options_set_sink(o, collect_sink, &c);
	assert_int_equal(ingest_run(o, &rep), 0);
	assert_true(c.records > 0);
	free(c.bytes);
	ingest_report_free(rep);
	ingest_options_free(o);
}

/* Runs one after another in a long-lived process leave nothing behind:
 * each run's threads (pool, parse stage, writer) had counter blocks that
 * outlived them. */
static void test_lib_runs_do_not_grow(void **state)
{
	(void)state;
	struct ingest_options *o = sample_options();
	assert_int_equal(ingest_options_set(o, "threads", "4"), 0);
	assert_int_equal(ingest_options_set(o, "stats", "1"), 0);
	size_t before = 0;
	for (int i = 0; i < 40; i++) {
		struct collect c = { 0 };
		ingest_options_set_sink(o, collect_sink, &c);
		struct ingest_report *rep = NULL;
		assert_int_equal(ingest_run(o, &rep), 0);
		ingest_report_free(rep);
		free(c.bytes);
		if (i == 4)
			before = mallinfo2().uordblks;
	}
	size_t after = mallinfo2().uordblks;
	if (!before) {
		/* a sanitizer's allocator: mallinfo2 knows nothing of it */
		ingest_options_free(o);
		skip();
	}
	assert_true(after <= before + 4096);
	ingest_options_free(o);
}

/* ---- bytes in memory ---------------------------------------------------- */

#define MSG_FIELDS "message_id,date,from,to,subject,content_type,text,warnings,parts,error"

struct file_bytes {
	char path[4400];
	char *p;
	size_t n;
};

/* The sample's message files, read whole, sorted by name. */
static size_t read_sample(struct file_bytes *out, size_t max)
{
	size_t k = 0;
	const char *subs[] = { "cur", "new" };
	for (int s = 0; s < 2; s++) {
		char dir[4096];
		snprintf(dir, sizeof(dir), "%s/%s", sample, subs[s]);
		DIR *d = opendir(dir);
		assert_non_null(d);
		struct dirent *e;
		while ((e = readdir(d)) && k < max) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(out[k].path, sizeof(out[k].path), "%s/%s", dir, e->d_name);
			int fd = open(out[k].path, O_RDONLY);
			assert_true(fd >= 0);
			struct stat st;
			assert_int_equal(fstat(fd, &st), 0);
			out[k].n = (size_t)st.st_size;
			out[k].p = malloc(out[k].n + 1);
			assert_int_equal(read(fd, out[k].p, out[k].n), (ssize_t)out[k].n);
			close(fd);
			k++;
		}
		closedir(d);
	}
	return k;
}

/* ingest_parse() of a file's bytes is the record a run makes of the file,
 * for the fields that do not come from the file system. */
static void test_lib_parse_is_the_runs_record(void **state)
{
	(void)state;
	struct file_bytes f[64];
	size_t n = read_sample(f, 64);
	assert_true(n >= 3);
	for (size_t i = 0; i < n; i++) {
		struct ingest_options *o = ingest_options_new();
		assert_int_equal(ingest_options_set(o, "fields", MSG_FIELDS), 0);
		struct ingest_result res;
		assert_int_equal(ingest_parse(f[i].p, f[i].n, o, &res), 0);
		assert_int_equal(res.kind, INGEST_KIND_MESSAGE);
		assert_non_null(res.record);

		struct collect c = { 0 };
		ingest_options_add_path(o, f[i].path);
		ingest_options_set_sink(o, collect_sink, &c);
		struct ingest_report *rep = NULL;
		assert_int_equal(ingest_run(o, &rep), 0);
		ingest_report_free(rep);
		assert_int_equal(c.records, 1);
		assert_int_equal(res.len, c.len);
		assert_memory_equal(res.record, c.bytes, c.len);
		free(c.bytes);
		ingest_result_release(&res);
		ingest_options_free(o);
	}
	for (size_t i = 0; i < n; i++)
		free(f[i].p);
}

/* Bytes parsed from memory have no identity: their es-bulk action names
 * no _id, so that the engine makes one.  Every such action said
 * "_id":"0000000000000000", and a bulk upload kept only the last. */
static void test_lib_parse_es_bulk_has_no_id(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	assert_non_null(o);
	assert_int_equal(ingest_options_set(o, "format", "es-bulk"), 0);
	struct ingest_result res;
	assert_int_equal(ingest_parse("From: a@example.org\nSubject: one\n\nx\n", 36, o, &res), 0);
	assert_int_equal(res.kind, INGEST_KIND_MESSAGE);
	static const char bare[] = "{\"index\":{}}\n{";
	assert_true(strncmp(res.record, bare, strlen(bare)) == 0);
	ingest_result_release(&res);
	assert_int_equal(ingest_options_set(o, "es-index", "mail"), 0);
	assert_int_equal(ingest_parse("From: a@example.org\nSubject: one\n\nx\n", 36, o, &res), 0);
	static const char named[] = "{\"index\":{\"_index\":\"mail\"}}\n{";
	assert_true(strncmp(res.record, named, strlen(named)) == 0);
	ingest_result_release(&res);
	ingest_options_free(o);
}

static void test_lib_parse_not_mail_and_empty(void **state)
{
	(void)state;
	struct ingest_result res;
	static const char png[] = "\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
	assert_int_equal(ingest_parse(png, sizeof(png) - 1, NULL, &res), 0);
	assert_int_equal(res.kind, INGEST_KIND_NOT_MAIL);
	assert_non_null(strstr(res.record, "\"not-mail\""));
	ingest_result_release(&res);
	assert_int_equal(ingest_parse("", 0, NULL, &res), 0);
	assert_true(res.kind != INGEST_KIND_MESSAGE);
	assert_true(res.len > 0 && res.record[res.len - 1] == '\n');
	ingest_result_release(&res);
	ingest_result_release(&res);   /* twice is harmless */
	assert_string_equal(ingest_warning_name(0) ? "named" : "", "named");
	assert_null(ingest_warning_name(1000));
}

/* A batch: many small, a few large buffers (past the byte gate), junk. */
#define MANY 48
struct many {
	const void *bufs[MANY];
	size_t lens[MANY];
	char *big;
	struct file_bytes f[64];
	size_t nf;
};

static void many_init(struct many *m)
{
	m->nf = read_sample(m->f, 64);
	/* 300 KiB of text after a header: four of these put the batch past
	 * the gate of one worker per 64 KiB */
	size_t big_n = 300 * 1024;
	m->big = malloc(big_n);
	int h = snprintf(m->big, big_n, "From: a@example.org\nSubject: big\n\n");
	for (size_t i = (size_t)h; i < big_n; i++)
		m->big[i] = (i % 61 == 60) ? '\n' : (char)('a' + i % 26);
	for (size_t i = 0; i < MANY; i++) {
		if (i % 12 == 5) {
			m->bufs[i] = m->big;
			m->lens[i] = big_n;
		} else if (i % 12 == 7) {
			m->bufs[i] = "\x7f" "ELF\2\1\1";
			m->lens[i] = 7;
		} else {
			m->bufs[i] = m->f[i % m->nf].p;
			m->lens[i] = m->f[i % m->nf].n;
		}
	}
}

static void many_free(struct many *m)
{
	for (size_t i = 0; i < m->nf; i++)
		free(m->f[i].p);
	free(m->big);
}

static void many_check(const struct many *m, const char *threads)
{
	struct ingest_options *o = ingest_options_new();
	assert_int_equal(ingest_options_set(o, "threads", threads), 0);
	struct ingest_result many[MANY];
	assert_int_equal(ingest_parse_many(m->bufs, m->lens, MANY, o, many), 0);
	for (size_t i = 0; i < MANY; i++) {
		struct ingest_result one;
		assert_int_equal(ingest_parse(m->bufs[i], m->lens[i], o, &one), 0);
		assert_int_equal(many[i].kind, one.kind);
		assert_int_equal(many[i].len, one.len);
		assert_memory_equal(many[i].record, one.record, one.len);
		assert_int_equal(many[i].kind, i % 12 == 7 ? INGEST_KIND_NOT_MAIL : INGEST_KIND_MESSAGE);
		ingest_result_release(&one);
		ingest_result_release(&many[i]);
	}
	ingest_options_free(o);
}

static void test_lib_parse_many_in_order(void **state)
{
	(void)state;
	struct many m;
	many_init(&m);
	many_check(&m, "1");
	many_check(&m, "4");
	many_free(&m);
}

static void *many_thread(void *arg)
{
	for (int k = 0; k < 3; k++)
		many_check(arg, "4");
	return NULL;
}

/* Several threads at once: the pool serves one, the others parse alone. */
static void test_lib_parse_many_from_threads(void **state)
{
	(void)state;
	struct many m;
	many_init(&m);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, many_thread, &m), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	many_free(&m);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test-lib SAMPLE_MAILDIR\n");
		return 2;
	}
	sample = argv[1];
	const struct CMUnitTest tests[] = {
		/* first: the run registers its VFS while the host holds the mutex */
		cmocka_unit_test(test_lib_index_beside_host_sqlite),
		cmocka_unit_test(test_lib_sink_gets_whole_records_in_order),
		cmocka_unit_test(test_lib_sink_error_stops_the_run),
		cmocka_unit_test(test_lib_sink_epipe_is_a_closed_output),
		cmocka_unit_test(test_lib_output_fd_rejects_bad_fd),
		cmocka_unit_test(test_lib_split_bytes_refused_with_fd_or_sink),
		cmocka_unit_test(test_lib_stdin_leaves_fd_0),
		cmocka_unit_test(test_lib_refused_index_leaves_fd_0),
		cmocka_unit_test(test_lib_search_error_optional),
		cmocka_unit_test(test_lib_progress_is_a_callback),
		cmocka_unit_test(test_lib_progress_ends_a_refused_run),
		cmocka_unit_test(test_lib_version),
		cmocka_unit_test(test_lib_unknown_option_is_einval_naming_it),
		cmocka_unit_test(test_lib_options_get),
		cmocka_unit_test(test_lib_concurrent_run_is_ebusy),
		cmocka_unit_test(test_lib_run_from_another_thread_is_ebusy),
		cmocka_unit_test(test_lib_runs_do_not_grow),
		cmocka_unit_test(test_lib_parse_is_the_runs_record),
		cmocka_unit_test(test_lib_parse_not_mail_and_empty),
		cmocka_unit_test(test_lib_parse_es_bulk_has_no_id),
		cmocka_unit_test(test_lib_parse_many_in_order),
		cmocka_unit_test(test_lib_parse_many_from_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
