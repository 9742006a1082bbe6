/* The public API as an embedder sees it: only <ingest.h>, linked against
 * the shared libingest.  Runs on the sample Maildir (tests/sample). */
#include <ingest.h>

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

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

static void test_lib_sink_gets_whole_records_in_order(void **state)
{
	(void)state;
	size_t fd_len;
	char *fd_bytes = run_to_fd(&fd_len);

	struct ingest_options *o = sample_options();
	struct collect c = { 0 };
	assert_int_equal(ingest_options_set_sink(o, collect_sink, &c), 0);
	struct ingest_report *rep = NULL;
	assert_int_equal(ingest_run(o, &rep), 0);
	ingest_report_free(rep);
	ingest_options_free(o);

	assert_true(c.calls > 1);
	assert_int_equal(c.records, count_lines(c.bytes, c.len));
	assert_int_equal(c.len, fd_len);
	assert_memory_equal(c.bytes, fd_bytes, fd_len);
	free(c.bytes);
	free(fd_bytes);
}

static void test_lib_sink_error_stops_the_run(void **state)
{
	(void)state;
	struct ingest_options *o = sample_options();
	struct collect c = { .fail_with = -ECANCELED };
	ingest_options_set_sink(o, collect_sink, &c);
	struct ingest_report *rep = NULL;
	assert_int_equal(ingest_run(o, &rep), -ECANCELED);
	assert_non_null(ingest_report_error(rep));
	assert_non_null(strstr(ingest_report_error(rep), "the sink failed"));
	assert_int_equal(c.calls, 1);
	ingest_report_free(rep);
	ingest_options_free(o);
}

static void test_lib_output_fd_rejects_bad_fd(void **state)
{
	(void)state;
	struct ingest_options *o = ingest_options_new();
	assert_int_equal(ingest_options_set_output_fd(o, -2), -EINVAL);
	assert_int_equal(ingest_options_set_output_fd(o, -1), 0);
	ingest_options_free(o);
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

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test-lib SAMPLE_MAILDIR\n");
		return 2;
	}
	sample = argv[1];
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lib_sink_gets_whole_records_in_order),
		cmocka_unit_test(test_lib_sink_error_stops_the_run),
		cmocka_unit_test(test_lib_output_fd_rejects_bad_fd),
		cmocka_unit_test(test_lib_progress_is_a_callback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
