/* SPDX-License-Identifier: MIT */
/* Unit tests for core/slots.h: every entry put is found under its hash,
 * entries whose hashes collide are each found (the caller tells them
 * apart), a hash never put finds nothing, an empty or unallocated table
 * finds nothing, and a table is never filled past half. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "core/slots.h"

/* How many of the entries a probe of hash offers, and whether want is one. */
static size_t probe_count(const struct slots *t, uint64_t hash, size_t want, bool *found)
{
	size_t n = 0, k;
	*found = false;
	for (struct slots_probe p = slots_probe(t, hash); (k = slots_next(&p));) {
		n++;
		if (k - 1 == want)
			*found = true;
	}
	return n;
}

static void test_slots_empty(void **state)
{
	(void)state;
	struct slots none = { 0 };
	bool found;
	assert_int_equal(probe_count(&none, 42, 0, &found), 0);
	assert_true(slots_full(&none));
	struct slots t;
	assert_int_equal(slots_init(&t, 0), 0);
	assert_int_equal(t.mask + 1, 16);
	assert_int_equal(probe_count(&t, 42, 0, &found), 0);
	assert_false(slots_full(&t));
	slots_free(&t);
	assert_null(t.at);
}

static void test_slots_every_entry_found(void **state)
{
	(void)state;
	enum { N = 100000 };
	struct slots t;
	assert_int_equal(slots_init(&t, N), 0);
	assert_true(t.mask + 1 >= 2 * N);
	for (size_t i = 0; i < N; i++) {
		assert_false(slots_full(&t));
		/* FNV-like values that differ only in their high bits: the mix
		 * must spread them, or probing would run the whole table */
		slots_put(&t, (uint64_t)i << 40, i);
	}
	/* sized for N, it takes more until it is half full, not beyond */
	size_t more = N;
	while (!slots_full(&t)) {
		slots_put(&t, (uint64_t)more << 40, more);
		more++;
	}
	assert_int_equal(2 * t.n, t.mask + 1);
	size_t longest = 0;
	for (size_t i = 0; i < N; i++) {
		bool found;
		size_t n = probe_count(&t, (uint64_t)i << 40, i, &found);
		assert_true(found);
		if (n > longest)
			longest = n;
	}
	assert_true(longest < 64);
	bool found;
	size_t n = probe_count(&t, UINT64_C(0x123456789abcdef1), N, &found);
	assert_false(found);
	assert_true(n < 64);
	slots_free(&t);
}

static void test_slots_collisions(void **state)
{
	(void)state;
	struct slots t;
	assert_int_equal(slots_init(&t, 8), 0);
	for (size_t i = 0; i < 8; i++)
		slots_put(&t, 7, i);    /* one hash for all */
	for (size_t i = 0; i < 8; i++) {
		bool found;
		assert_int_equal(probe_count(&t, 7, i, &found), 8);
		assert_true(found);
	}
	slots_free(&t);
}

static void test_slots_too_many(void **state)
{
	(void)state;
	struct slots t;
	assert_int_equal(slots_init(&t, SLOTS_MAX_ENTRIES + 1), -EOVERFLOW);
	assert_null(t.at);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slots_empty),
		cmocka_unit_test(test_slots_every_entry_found),
		cmocka_unit_test(test_slots_collisions),
		cmocka_unit_test(test_slots_too_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
