/* SPDX-License-Identifier: MIT */
/* Unit tests for sched/batch: a new batch is empty with one output buffer
 * per worker; reset empties it for reuse and keeps its memory (the steady
 * state allocates nothing: the data arena's home chunk of keep_bytes, made
 * at the first reset, holds every batch), except a chunk added for a batch
 * past keep_bytes and an output buffer that once held a huge record, which
 * are given back. */
#include "sched/batch.h"
#include "core/limits.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

static void test_batch_new_is_empty(void **state)
{
	(void)state;
	struct batch *b = batch_new(3);
	assert_non_null(b);
	assert_int_equal(b->n, 0);
	assert_int_equal(b->budget, 0);
	assert_int_equal(b->n_out, 3);
	assert_non_null(b->out);
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(b->out[i].len, 0);
	assert_int_equal(arena_capacity(&b->data), 0);
	assert_int_equal(arena_capacity(&b->meta), 0);
	assert_false(b->last);
	assert_null(b->next);
	batch_free(b);
	batch_free(NULL);
}

static void test_batch_out_per_worker(void **state)
{
	(void)state;
	struct batch *b = batch_new(4);
	assert_non_null(b);
	/* Each worker's buffer is its own: writes do not mix. */
	for (unsigned w = 0; w < 4; w++) {
		char rec[32];
		int n = snprintf(rec, sizeof(rec), "{\"worker\":%u}\n", w);
		for (unsigned k = 0; k <= w; k++)
			assert_int_equal(dynbuf_append(&b->out[w], rec, (size_t)n), 0);
	}
	for (unsigned w = 0; w < 4; w++) {
		char rec[32];
		int n = snprintf(rec, sizeof(rec), "{\"worker\":%u}\n", w);
		assert_int_equal(b->out[w].len, (size_t)n * (w + 1));
		for (unsigned k = 0; k <= w; k++)
			assert_memory_equal(b->out[w].p + k * (size_t)n, rec, (size_t)n);
	}
	for (unsigned w = 0; w < 4; w++)
		assert_ptr_not_equal(b->out[w].p, NULL);
	assert_ptr_not_equal(b->out[0].p, b->out[1].p);
	batch_free(b);
}

static void test_batch_reset_keeps_capacity(void **state)
{
	(void)state;
	struct batch *b = batch_new(2);
	assert_non_null(b);
	/* The reader resets a batch before it fills it: the first reset
	 * gives the data arena its home chunk of keep_bytes. */
	batch_reset(b, LIMIT_BATCH_BYTES_DEFAULT, 0);
	assert_non_null(b->data.home);
	assert_int_equal(arena_capacity(&b->data), LIMIT_BATCH_BYTES_DEFAULT);
	/* Fill it as the reader and the pool would. */
	uint8_t *d = arena_alloc(&b->data, 100 * KiB);
	assert_non_null(d);
	memset(d, 'x', 100 * KiB);
	assert_non_null(arena_memdup(&b->meta, "cur/1:2,S", 9));
	assert_int_equal(dynbuf_append(&b->out[0], "abc", 3), 0);
	assert_int_equal(dynbuf_reserve(&b->out[1], 64 * KiB), 0);
	b->n = 17;
	b->budget = 100 * KiB + 17;
	b->workers_used = 2;
	b->last = true;
	b->next = b;
	size_t data_cap = arena_capacity(&b->data);
	size_t meta_cap = arena_capacity(&b->meta);
	char *out0 = b->out[0].p, *out1 = b->out[1].p;
	size_t out0_cap = b->out[0].cap, out1_cap = b->out[1].cap;

	batch_reset(b, LIMIT_BATCH_BYTES_DEFAULT, 0);
	assert_int_equal(b->n, 0);
	assert_int_equal(b->budget, 0);
	assert_int_equal(b->workers_used, 0);
	assert_false(b->last);
	assert_null(b->next);
	assert_int_equal(b->out[0].len, 0);
	assert_int_equal(b->out[1].len, 0);
	/* the memory stays */
	assert_int_equal(arena_capacity(&b->data), data_cap);
	assert_int_equal(arena_capacity(&b->meta), meta_cap);
	assert_ptr_equal(b->out[0].p, out0);
	assert_ptr_equal(b->out[1].p, out1);
	assert_int_equal(b->out[0].cap, out0_cap);
	assert_int_equal(b->out[1].cap, out1_cap);
	/* and is reused: the next batch's bytes land where the last one's did */
	uint8_t *d2 = arena_alloc(&b->data, 100 * KiB);
	assert_ptr_equal(d2, d);
	assert_int_equal(arena_capacity(&b->data), data_cap);
	batch_free(b);
}

/* A batch of one worker as the reader first takes it: reset, so that its
 * data arena has its home chunk of keep bytes (*home). */
static struct batch *batch_with_home(uint64_t keep, const void **home)
{
	struct batch *b = batch_new(1);
	assert_non_null(b);
	batch_reset(b, keep, 0);
	*home = b->data.home;
	assert_non_null(*home);
	return b;
}

static void test_batch_data_is_allocated_once(void **state)
{
	(void)state;
	const uint64_t keep = 1 * MiB;
	const void *home;
	struct batch *b = batch_with_home(keep, &home);
	/* A whole batch's worth of files of mixed sizes, three batches in a
	 * row: every read lands in the home chunk, each batch from its
	 * beginning, and no chunk is ever added. */
	uint8_t *first = NULL;
	for (int round = 0; round < 3; round++) {
		size_t got = 0, n = 1;
		for (int i = 0; got + ((n + 15) & ~(size_t)15) <= keep; i++) {
			uint8_t *p = arena_alloc(&b->data, n);
			assert_non_null(p);
			if (i == 0 && !first)
				first = p;
			if (i == 0)
				assert_ptr_equal(p, first);
			got += (n + 15) & ~(size_t)15;
			n = n * 7 % 8191 + 1;
		}
		assert_ptr_equal(b->data.head, home);
		batch_reset(b, keep, 0);
		assert_ptr_equal(b->data.home, home);
	}
	batch_free(b);
}

static void test_batch_reset_frees_grown_data(void **state)
{
	(void)state;
	const uint64_t keep = 1 * MiB;
	const void *home;
	struct batch *b = batch_with_home(keep, &home);
	uint8_t *small = arena_alloc(&b->data, 10);
	assert_non_null(small);
	/* One huge file grows the data arena past keep_bytes ... */
	assert_non_null(arena_alloc(&b->data, 3 * MiB));
	assert_true(arena_capacity(&b->data) > keep);
	batch_reset(b, keep, 0);
	/* ... and its chunk is given back, not kept for every later batch;
	 * the home chunk stays, and the next batch starts at its beginning. */
	assert_int_equal(arena_capacity(&b->data), keep);
	assert_ptr_equal(b->data.head, home);
	assert_int_equal(b->data.used, 0);
	assert_ptr_equal(arena_alloc(&b->data, 10), small);
	batch_free(b);
}

static void test_batch_reset_frees_huge_out(void **state)
{
	(void)state;
	struct batch *b = batch_new(2);
	assert_non_null(b);
	const uint64_t keep = 64 * KiB;
	/* worker 0 once formatted a huge record; worker 1 a normal batch */
	assert_int_equal(dynbuf_reserve(&b->out[0], 4 * keep + 2 * MiB), 0);
	assert_int_equal(dynbuf_append(&b->out[1], "{}\n", 3), 0);
	char *out1 = b->out[1].p;
	batch_reset(b, keep, 0);
	assert_int_equal(b->out[0].cap, 0);
	assert_int_equal(b->out[0].len, 0);
	assert_ptr_equal(b->out[1].p, out1);
	assert_true(b->out[1].cap > 0);
	/* the released buffer works again */
	assert_int_equal(dynbuf_append(&b->out[0], "{}\n", 3), 0);
	assert_int_equal(b->out[0].len, 3);
	batch_free(b);
}

/* A worker's output buffer takes its room in one allocation, from the
 * batch's first reset and again after a huge record released it: growing
 * from 256 bytes by doubling costs malloc an mmap and an mremap per step
 * past 128 KiB (about 25 calls a run at 10,000 messages). */
static void test_batch_out_starts_large(void **state)
{
	(void)state;
	struct batch *b = batch_new(2);
	assert_non_null(b);
	const uint64_t keep = 2 * LIMIT_BATCH_BYTES_DEFAULT + MiB;
	batch_reset(b, keep, 0);
	for (unsigned w = 0; w < 2; w++) {
		assert_int_equal(b->out[w].cap, 0);   /* nothing until a record comes */
		assert_int_equal(dynbuf_append(&b->out[w], "{}\n", 3), 0);
		assert_true(b->out[w].cap >= keep / 4);
	}
	/* released after a huge record, it starts large again */
	assert_int_equal(dynbuf_reserve(&b->out[0], 4 * keep + 2 * MiB), 0);
	batch_reset(b, keep, 0);
	assert_int_equal(b->out[0].cap, 0);
	assert_int_equal(dynbuf_append(&b->out[0], "{}\n", 3), 0);
	assert_true(b->out[0].cap >= keep / 4);
	assert_true(b->out[0].cap < 4 * keep);
	batch_free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_new_is_empty),
		cmocka_unit_test(test_batch_out_per_worker),
		cmocka_unit_test(test_batch_reset_keeps_capacity),
		cmocka_unit_test(test_batch_data_is_allocated_once),
		cmocka_unit_test(test_batch_reset_frees_grown_data),
		cmocka_unit_test(test_batch_reset_frees_huge_out),
		cmocka_unit_test(test_batch_out_starts_large),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
