/* SPDX-License-Identifier: MIT */
/* Unit tests for sched/batch: a new batch is empty; reset empties it for
 * reuse and keeps its memory (the steady state allocates nothing: the data
 * arena's home chunk of keep_bytes, made at the first reset, holds every
 * batch), except a chunk added for a batch past keep_bytes, which is given
 * back.  Its output buffers are the parse stage's (core/dynbuf's recycle
 * is their rule, tested in test-dynbuf.c). */
#include "sched/batch.h"
#include "core/dynbuf.h"
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
	struct batch *b = batch_new();
	assert_non_null(b);
	assert_int_equal(b->n, 0);
	assert_int_equal(b->budget, 0);
	assert_int_equal(arena_capacity(&b->data), 0);
	assert_int_equal(arena_capacity(&b->meta), 0);
	assert_false(b->last);
	assert_null(b->next);
	batch_free(b);
	batch_free(NULL);
}

static void test_batch_reset_keeps_capacity(void **state)
{
	(void)state;
	struct batch *b = batch_new();
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
	struct dynbuf out, notes;
	dynbuf_init(&out, 0);
	dynbuf_init(&notes, 0);
	b->out = &out;                         /* as the parse stage lends them */
	b->notes = &notes;
	assert_int_equal(dynbuf_append(&b->out[0], "abc", 3), 0);
	b->n = 17;
	b->budget = 100 * KiB + 17;
	b->workers_used = 2;
	b->last = true;
	b->next = b;
	size_t data_cap = arena_capacity(&b->data);
	size_t meta_cap = arena_capacity(&b->meta);

	batch_reset(b, LIMIT_BATCH_BYTES_DEFAULT, 0);
	assert_int_equal(b->n, 0);
	assert_int_equal(b->budget, 0);
	assert_int_equal(b->workers_used, 0);
	assert_false(b->last);
	assert_null(b->next);
	assert_null(b->out);                   /* the stage's, not the batch's */
	assert_null(b->notes);
	assert_int_equal(out.len, 3);          /* left to their owner */
	dynbuf_release(&out);
	dynbuf_release(&notes);
	/* the memory stays */
	assert_int_equal(arena_capacity(&b->data), data_cap);
	assert_int_equal(arena_capacity(&b->meta), meta_cap);
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
	struct batch *b = batch_new();
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_new_is_empty),
		cmocka_unit_test(test_batch_reset_keeps_capacity),
		cmocka_unit_test(test_batch_data_is_allocated_once),
		cmocka_unit_test(test_batch_reset_frees_grown_data),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
