/* SPDX-License-Identifier: MIT */
/* Unit tests for core/arena: alignment, the byte cap, reset keeping the
 * largest chunk or the home chunk, memdup's NUL, overflow of the size
 * rounding, and which bytes of a home go on huge pages (read back from
 * /proc/self/smaps). */
#include "core/arena.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <setjmp.h>
#include <cmocka.h>

static void test_arena_aligned_and_distinct(void **state)
{
	(void)state;
	struct arena a;
	arena_init(&a, 0);
	char *prev = NULL;
	for (size_t n = 1; n < 300; n += 7) {
		char *p = arena_alloc(&a, n);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		memset(p, 0xab, n);     /* ASan: the whole block is ours */
		assert_true(p != prev);
		prev = p;
	}
	arena_release(&a);
	assert_null(a.head);
}

static void test_arena_cap_is_a_failure_not_a_crash(void **state)
{
	(void)state;
	struct arena a;
	arena_init(&a, 64);
	assert_non_null(arena_alloc(&a, 48));
	assert_null(arena_alloc(&a, 32));          /* 48 + 32 > 64 */
	assert_non_null(arena_alloc(&a, 16));      /* exactly up to the cap */
	assert_null(arena_alloc(&a, 1));
	assert_null(arena_alloc(&a, SIZE_MAX));    /* rounding would overflow */
	arena_reset(&a);
	assert_int_equal(a.used, 0);
	assert_non_null(arena_alloc(&a, 64));      /* the cap counts from the reset */
	arena_release(&a);
}

static void test_arena_reset_keeps_the_largest_chunk(void **state)
{
	(void)state;
	struct arena a;
	arena_init(&a, 0);
	for (int i = 0; i < 100; i++)
		assert_non_null(arena_alloc(&a, 1000));
	size_t cap = arena_capacity(&a);
	assert_true(cap >= 1000);
	arena_reset(&a);
	assert_int_equal(arena_capacity(&a), cap);
	/* one chunk kept, all of it free: what fits needs no new chunk */
	assert_int_equal((size_t)(a.end - a.cur), cap);
	const void *head = a.head;
	assert_non_null(arena_alloc(&a, cap / 2));
	assert_ptr_equal(a.head, head);
	arena_release(&a);
	assert_int_equal(arena_capacity(&a), 0);
}

static void test_arena_home_chunk_is_kept(void **state)
{
	(void)state;
	struct arena a;
	arena_init(&a, 0);
	assert_non_null(arena_alloc(&a, 100));
	assert_int_equal(arena_reserve(&a, 4096, 0), 0);
	/* what the arena held before is gone; the home is all there is */
	assert_int_equal(a.used, 0);
	assert_int_equal(arena_capacity(&a), 4096);
	char *p = arena_alloc(&a, 1000);
	assert_non_null(p);
	/* past the home: a chunk of just the request, not a doubling */
	char *big = arena_alloc(&a, 5000);
	assert_non_null(big);
	memset(big, 1, 5000);
	assert_int_equal(arena_capacity(&a), 5008);
	/* reset keeps the home, though the other chunk is larger */
	arena_reset(&a);
	assert_int_equal(arena_capacity(&a), 4096);
	assert_ptr_equal(a.head, a.home);
	assert_ptr_equal(arena_alloc(&a, 10), p);
	/* a home as large or larger is there already; a smaller one is not */
	assert_int_equal(arena_reserve(&a, 4096, 0), 0);
	assert_int_equal(arena_reserve(&a, 100, 0), 0);
	assert_int_equal(arena_reserve(&a, 8192, 0), -EEXIST);
	arena_release(&a);
	assert_null(a.home);
	assert_null(a.head);
}

/* Whether the kernel holds p's mapping advised MADV_HUGEPAGE ("hg" among
 * its VmFlags in /proc/self/smaps). */
static bool advised_huge(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	assert_non_null(f);
	char line[512];
	bool in = false, hg = false;
	uintptr_t at = (uintptr_t)p;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
			in = at >= lo && at < hi;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			hg = strstr(line, " hg") != NULL;
			break;
		}
	}
	fclose(f);
	return hg;
}

/* A home on huge pages is advised at its first use: from its start when
 * that use fills the first huge page (a full batch: its reads fault once
 * a 2 MiB page), from 2 MiB otherwise (a batch of small files that fills
 * less backs no huge page), and from 2 MiB when the use does not say. */
static void test_arena_huge_advice_at_first_use(void **state)
{
	(void)state;
	const size_t mib = 1 << 20;
	/* where the kernel takes no advice, or smaps shows none, nothing to read back */
	void *probe = NULL;
	bool can = !posix_memalign(&probe, 2 * mib, 2 * mib) &&
	           !madvise(probe, 2 * mib, MADV_HUGEPAGE) && advised_huge(probe);
	free(probe);
	if (!can) {
		print_message("SKIP: MADV_HUGEPAGE is not taken or not shown in /proc/self/smaps here\n");
		skip();
	}
	struct { size_t expect, again; bool call, first_huge; } cases[] = {
		{ 6 * mib, 0, true, true },
		{ 1 * mib, 0, true, false },
		{ 1 * mib, 6 * mib, true, false },   /* the first use decides, once */
		{ 0, 0, false, false },              /* arena_alloc first: size unknown */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct arena a;
		arena_init(&a, 0);
		assert_int_equal(arena_reserve(&a, 13 * mib, 6 * mib), 0);
		if (cases[i].call)
			arena_expect(&a, cases[i].expect);
		if (cases[i].again)
			arena_expect(&a, cases[i].again);
		char *p = arena_alloc(&a, 13 * mib);
		assert_non_null(p);
		assert_int_equal(advised_huge(p), cases[i].first_huge);
		assert_true(advised_huge(p + 2 * mib));
		assert_true(advised_huge(p + 6 * mib - 1));
		assert_false(advised_huge(p + 6 * mib));   /* past the fill */
		arena_release(&a);
	}
	/* a home below 4 MiB filled, or none: nothing to advise, nothing done */
	struct arena a;
	arena_init(&a, 0);
	arena_expect(&a, 6 * mib);
	assert_int_equal(arena_reserve(&a, 13 * mib, 2 * mib), 0);
	arena_expect(&a, 6 * mib);
	char *p = arena_alloc(&a, 16);
	assert_non_null(p);
	assert_false(advised_huge(p));
	arena_release(&a);
}

/* A home that a full use fills past 4 MiB starts on a huge page (its
 * bytes up to the fill are advised as transparent huge pages); it is still
 * the home a reset keeps, every byte of it usable, and released whole
 * (under ASan, a free of anything but the allocator's block would fail). */
static void test_arena_huge_home_is_aligned(void **state)
{
	(void)state;
	const size_t mib = 1 << 20;
	struct arena a;
	arena_init(&a, 0);
	assert_int_equal(arena_reserve(&a, 13 * mib, 6 * mib), 0);
	char *p = arena_alloc(&a, 13 * mib);
	assert_non_null(p);
	assert_int_equal((uintptr_t)p % (2 * mib), 0);
	memset(p, 1, 13 * mib);
	arena_reset(&a);
	assert_ptr_equal(arena_alloc(&a, 16), p);
	arena_release(&a);
	/* below 4 MiB filled, a plain allocation: malloc's block and the
	 * chunk's header come before the data, which is then never at the
	 * start of a page, let alone of a huge one */
	assert_int_equal(arena_reserve(&a, 13 * mib, 2 * mib), 0);
	p = arena_alloc(&a, 13 * mib);
	assert_non_null(p);
	assert_int_not_equal((uintptr_t)p % 4096, 0);
	arena_release(&a);
}

static void test_arena_memdup_terminates(void **state)
{
	(void)state;
	struct arena a;
	arena_init(&a, 0);
	char *s = arena_memdup(&a, "abcdef", 3);
	assert_string_equal(s, "abc");
	char *e = arena_memdup(&a, NULL, 0);
	assert_string_equal(e, "");
	arena_release(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_arena_aligned_and_distinct),
		cmocka_unit_test(test_arena_cap_is_a_failure_not_a_crash),
		cmocka_unit_test(test_arena_reset_keeps_the_largest_chunk),
		cmocka_unit_test(test_arena_home_chunk_is_kept),
		cmocka_unit_test(test_arena_huge_home_is_aligned),
		cmocka_unit_test(test_arena_huge_advice_at_first_use),
		cmocka_unit_test(test_arena_memdup_terminates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
