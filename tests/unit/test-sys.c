/* SPDX-License-Identifier: MIT */
/* Unit tests for core/sys's loops over EINTR and short counts: a scripted
 * one-call read drives sys_pread_full_by and sys_pread_restart_by through
 * every outcome and records each call's arguments; pipes check the
 * wrappers' own forms end to end.  In a build with fault injection, an
 * injected EINTR shows that the wrappers' forms make the call again. */
#include "config.h"
#include "core/sys.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <setjmp.h>
#include <cmocka.h>

/* What the scripted read returns, call by call, and what it was asked. */
struct script {
	const ssize_t *ret;     /* a count, or -errno */
	size_t n_ret;
	size_t calls;
	size_t asked[8];
	uint64_t off[8];
	size_t gap[8];          /* buf's distance from the first call's buf */
	char *first;
};

static ssize_t script_pread(void *ctx, int fd, void *buf, size_t n, uint64_t off)
{
	(void)fd;
	struct script *s = ctx;
	assert_true(s->calls < s->n_ret);
	if (!s->calls)
		s->first = buf;
	s->asked[s->calls] = n;
	s->off[s->calls] = off;
	s->gap[s->calls] = (size_t)((char *)buf - s->first);
	ssize_t r = s->ret[s->calls++];
	if (r > 0)
		memset(buf, 'a' + (int)s->calls, (size_t)r);
	return r;
}

static void test_sys_full_goes_on_after_short_counts_and_eintr(void **state)
{
	(void)state;
	static const ssize_t ret[] = { 3, -EINTR, 4, 3 };
	struct script s = { .ret = ret, .n_ret = 4 };
	char buf[10];
	assert_int_equal(sys_pread_full_by(script_pread, &s, 0, buf, 10, 100), 10);
	assert_int_equal(s.calls, 4);
	/* each call asks for the rest, at the rest's offset */
	static const size_t asked[] = { 10, 7, 7, 3 }, gap[] = { 0, 3, 3, 7 };
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(s.asked[i], asked[i]);
		assert_int_equal(s.gap[i], gap[i]);
		assert_int_equal(s.off[i], 100 + gap[i]);
	}
	assert_memory_equal(buf, "bbbddddeee", 10);
}

static void test_sys_full_stops_at_end_of_file(void **state)
{
	(void)state;
	static const ssize_t ret[] = { 4, 0 };
	struct script s = { .ret = ret, .n_ret = 2 };
	char buf[10];
	assert_int_equal(sys_pread_full_by(script_pread, &s, 0, buf, 10, 0), 4);
	assert_int_equal(s.calls, 2);
	/* nothing to read: no call at all */
	s.calls = 0;
	assert_int_equal(sys_pread_full_by(script_pread, &s, 0, buf, 0, 0), 0);
	assert_int_equal(s.calls, 0);
}

static void test_sys_full_fails_once_with_the_errno(void **state)
{
	(void)state;
	static const ssize_t ret[] = { 4, -EIO };
	struct script s = { .ret = ret, .n_ret = 2 };
	char buf[10];
	assert_int_equal(sys_pread_full_by(script_pread, &s, 0, buf, 10, 0), -EIO);
	assert_int_equal(s.calls, 2);
}

static void test_sys_restart_returns_a_short_count_as_it_is(void **state)
{
	(void)state;
	static const ssize_t ret[] = { -EINTR, -EINTR, 4 };
	struct script s = { .ret = ret, .n_ret = 3 };
	char buf[10];
	assert_int_equal(sys_pread_restart_by(script_pread, &s, 0, buf, 10, 5), 4);
	assert_int_equal(s.calls, 3);
	for (size_t i = 0; i < 3; i++) {
		assert_int_equal(s.asked[i], 10);
		assert_int_equal(s.off[i], 5);
	}
	static const ssize_t fail[] = { -EAGAIN, 4 };
	s = (struct script){ .ret = fail, .n_ret = 2 };
	assert_int_equal(sys_pread_restart_by(script_pread, &s, 0, buf, 10, 0), -EAGAIN);
	assert_int_equal(s.calls, 1);
}

/* The wrappers' forms on a pipe: all of what was written arrives, the
 * empty iovecs included; a read_full past what the pipe holds stops at
 * its end; read_restart returns what one read got. */
static void test_sys_wrapper_forms_on_a_pipe(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(sys_write_full(p[1], "head ", 5), 0);
	char a[] = "one ", c[] = "three";
	struct iovec iov[] = { { a, 4 }, { NULL, 0 }, { c, 5 }, { NULL, 0 } };
	uint64_t wrote = 99;
	assert_int_equal(sys_writev_full(p[1], iov, 4, &wrote), 0);
	assert_int_equal(wrote, 9);
	char buf[64];
	assert_int_equal(sys_read_restart(p[0], buf, 3), 3);
	assert_memory_equal(buf, "hea", 3);
	assert_int_equal(close(p[1]), 0);
	assert_int_equal(sys_read_full(p[0], buf, sizeof(buf)), 11);
	assert_memory_equal(buf, "d one three", 11);
	assert_int_equal(sys_read_restart(p[0], buf, sizeof(buf)), 0);
	assert_int_equal(close(p[0]), 0);
}

static void test_sys_write_full_fails_with_the_errno(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(close(p[0]), 0);
	assert_int_equal(sys_write_full(p[1], "x", 1), -EPIPE);
	char x[] = "x";
	struct iovec iov = { x, 1 };
	uint64_t wrote = 99;
	assert_int_equal(sys_writev_full(p[1], &iov, 1, &wrote), -EPIPE);
	assert_int_equal(wrote, 0);
	assert_int_equal(close(p[1]), 0);
}

#if INGEST_FAULT_INJECTION
/* main arms INGEST_FAULT so that this test's first read fails with EINTR:
 * the full form reads on, the restart form makes the call again. */
static void test_sys_injected_eintr_is_made_again(void **state)
{
	(void)state;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(sys_write_full(p[1], "abcdef", 6), 0);
	char buf[8];
	/* the fault's line goes to stderr: caught, to see that it fired */
	int e[2], saved = dup(STDERR_FILENO);
	assert_int_equal(pipe(e), 0);
	assert_int_equal(dup2(e[1], STDERR_FILENO), STDERR_FILENO);
	ssize_t got = sys_read_restart(p[0], buf, 2);   /* 1st read: EINTR, 2nd */
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	assert_int_equal(close(saved), 0);
	assert_int_equal(close(e[1]), 0);
	char line[256] = "";
	assert_true(read(e[0], line, sizeof(line) - 1) > 0);
	assert_int_equal(close(e[0]), 0);
	assert_non_null(strstr(line, "ingest-fault: fired 1 EINTR at read"));
	assert_int_equal(got, 2);
	assert_memory_equal(buf, "ab", 2);
	assert_int_equal(close(p[1]), 0);
	assert_int_equal(sys_read_full(p[0], buf, sizeof(buf)), 4);
	assert_memory_equal(buf, "cdef", 4);
	assert_int_equal(close(p[0]), 0);
}
#endif

int main(void)
{
	/* a closed pipe must be EPIPE, as in main.c */
	signal(SIGPIPE, SIG_IGN);
#if INGEST_FAULT_INJECTION
	setenv("INGEST_FAULT", "1:EINTR:sys:read", 1);
#endif
	const struct CMUnitTest tests[] = {
#if INGEST_FAULT_INJECTION
		cmocka_unit_test(test_sys_injected_eintr_is_made_again),
#endif
		cmocka_unit_test(test_sys_full_goes_on_after_short_counts_and_eintr),
		cmocka_unit_test(test_sys_full_stops_at_end_of_file),
		cmocka_unit_test(test_sys_full_fails_once_with_the_errno),
		cmocka_unit_test(test_sys_restart_returns_a_short_count_as_it_is),
		cmocka_unit_test(test_sys_wrapper_forms_on_a_pipe),
		cmocka_unit_test(test_sys_write_full_fails_with_the_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
