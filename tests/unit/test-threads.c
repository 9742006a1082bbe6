/* SPDX-License-Identifier: MIT */
/* Unit tests for pipeline/threads' map: a reply joins the thread of the
 * message it names, across the map's growth up to tables on huge pages
 * (2 MiB from 65,536 ids), and ids stay where they were entered. */
#include "pipeline/threads.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

/* Message k's own id; never 0. */
static uint64_t key_of(uint64_t k)
{
	return 0x9e3779b97f4a7c15ull * (k + 1) | 1;
}

static void test_threads_join_across_growth(void **state)
{
	(void)state;
	struct thread_map *m = thread_map_new();
	assert_non_null(m);
	enum { N = 200000 };
	/* pairs: message 2k starts thread 1000 + k; message 2k + 1 replies
	 * to it, formatted with a thread of its own, and must join */
	for (uint64_t k = 0; k < N / 2; k++) {
		struct thread_note root = { .keys = { 0, 0, 0, key_of(2 * k) } };
		assert_int_equal(thread_map_settle(m, &root, 1000 + k), 0);
		struct thread_note reply = { .keys = { key_of(2 * k), key_of(2 * k), 0, key_of(2 * k + 1) } };
		assert_int_equal(thread_map_settle(m, &reply, 5000000 + k), 1000 + k);
	}
	/* every id entered, after the table passed 2 MiB, under its thread:
	 * a message naming the early and the late replies joins their threads */
	struct thread_note early = { .keys = { 0, key_of(1), 0, 0 } };
	assert_int_equal(thread_map_settle(m, &early, 7), 1000);
	struct thread_note late = { .keys = { 0, key_of(N - 1), 0, 0 } };
	assert_int_equal(thread_map_settle(m, &late, 7), 1000 + N / 2 - 1);
	thread_map_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_join_across_growth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
