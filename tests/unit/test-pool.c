/* SPDX-License-Identifier: MIT */
/* Unit tests for sched/pool and sched/parallelism.
 *
 * Every item must run exactly once on a worker the batch was given, fn's
 * plain writes must be visible to the caller on return (the ThreadSanitizer
 * build checks the ordering), the byte gate must keep small batches on the
 * calling thread with no futex call, and futex traffic must grow per batch,
 * not per item. */
#include "core/stats.h"
#include "core/sys.h"
#include "core/limits.h"
#include "sched/parallelism.h"
#include "sched/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

struct count_ctx {
	_Atomic unsigned *runs;      /* [items]: times item i ran */
	size_t *value;               /* [items]: plain writes, read by the caller */
	unsigned *worker_of;         /* [items]: plain, who ran item i */
	unsigned spin_ns;            /* busy time per item */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count_fn(void *arg, size_t item, unsigned worker)
{
	struct count_ctx *c = arg;
	atomic_fetch_add_explicit(&c->runs[item], 1, memory_order_relaxed);
	c->value[item] = item * 3 + 1;
	c->worker_of[item] = worker;
	if (c->spin_ns) {
		uint64_t end = now_ns() + c->spin_ns;
		while (now_ns() < end)
			;
	}
}

static void count_ctx_init(struct count_ctx *c, size_t items)
{
	c->runs = calloc(items + 1, sizeof(*c->runs));
	c->value = calloc(items + 1, sizeof(*c->value));
	c->worker_of = calloc(items + 1, sizeof(*c->worker_of));
	assert_non_null(c->runs);
	assert_non_null(c->value);
	assert_non_null(c->worker_of);
	c->spin_ns = 0;
}

static void count_ctx_release(struct count_ctx *c)
{
	free((void *)(uintptr_t)c->runs);   /* _Atomic unsigned[], plain to free() */
	free(c->value);
	free(c->worker_of);
}

/* Runs one batch and checks every item ran once on a worker it was given. */
static unsigned run_checked(struct pool *p, size_t items, uint64_t bytes, unsigned spin_ns)
{
	struct count_ctx c;
	count_ctx_init(&c, items);
	c.spin_ns = spin_ns;
	unsigned n = pool_run(p, items, bytes, count_fn, &c);
	assert_int_equal(n, pool_workers_for(p, items, bytes));
	for (size_t i = 0; i < items; i++) {
		assert_int_equal(atomic_load(&c.runs[i]), 1);
		assert_int_equal(c.value[i], i * 3 + 1);
		assert_true(c.worker_of[i] < n);
	}
	count_ctx_release(&c);
	return n;
}

/* Checks the pool's counters, then frees it: `with_k` batches ran with k
 * workers, `inline_n` inline (-1: not checked), `batches` in all (-1: not
 * checked). */
static void free_checked(struct pool *p, unsigned k, uint64_t with_k, int64_t inline_n,
                         int64_t batches)
{
	struct pool_stats st;
	pool_stats_get(p, &st);
	assert_int_equal(st.workers_hist[k], with_k);
	if (inline_n >= 0)
		assert_int_equal(st.inline_batches, (uint64_t)inline_n);
	if (batches >= 0)
		assert_int_equal(st.batches, (uint64_t)batches);
	pool_free(p);
}

static uint64_t my_futex_calls(void)
{
	struct stats_thread *t = stats_self();
	assert_non_null(t);
	return t->sys[SC_futex];
}

static void test_pool_workers_for_table(void **state)
{
	(void)state;
	static const struct {
		unsigned threads;
		size_t items;
		uint64_t bytes;
		unsigned want;
	} cases[] = {
		{ 4, 0, 0, 0 },
		{ 4, 0, 100 * MiB, 0 },
		{ 4, 1, 0, 1 },
		{ 4, 16, 16 * KiB, 1 },                        /* 16 x 1 KiB: inline */
		{ 4, 16, LIMIT_BYTES_PER_WORKER - 1, 1 },
		{ 4, 16, LIMIT_BYTES_PER_WORKER, 1 },
		{ 4, 16, 2 * LIMIT_BYTES_PER_WORKER - 1, 1 },
		{ 4, 16, 2 * LIMIT_BYTES_PER_WORKER, 2 },
		{ 4, 16, 3 * LIMIT_BYTES_PER_WORKER, 3 },
		{ 4, 16, 100 * MiB, 4 },                       /* threads caps */
		{ 4, 3, 100 * MiB, 3 },                        /* items caps */
		{ 1, 1000, 100 * MiB, 1 },
		{ 64, 3, 100 * MiB, 3 },
		{ 64, 1000, 10 * LIMIT_BYTES_PER_WORKER, 10 }, /* bytes cap */
		{ 2, 16, 16 * 768 * KiB, 2 },                  /* 16 x 768 KiB */
		{ 2, SIZE_MAX, UINT64_MAX, 2 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pool *p = pool_new(cases[i].threads);
		assert_non_null(p);
		assert_int_equal(pool_workers_for(p, cases[i].items, cases[i].bytes), cases[i].want);
		pool_free(p);
	}
}

static void test_pool_every_item_once(void **state)
{
	(void)state;
	static const unsigned threads[] = { 1, 2, 3, 4, 64 };
	static const size_t items[] = { 0, 1, 2, 3, 7, 16, 100, 1000 };
	static const uint64_t bytes[] = {
		0, 1, LIMIT_BYTES_PER_WORKER - 1, LIMIT_BYTES_PER_WORKER,
		2 * LIMIT_BYTES_PER_WORKER, 3 * LIMIT_BYTES_PER_WORKER + 1, 1 * GiB,
	};
	for (size_t t = 0; t < sizeof(threads) / sizeof(threads[0]); t++) {
		struct pool *p = pool_new(threads[t]);
		assert_non_null(p);
		for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++)
			for (size_t b = 0; b < sizeof(bytes) / sizeof(bytes[0]); b++)
				for (int rep = 0; rep < 3; rep++)
					run_checked(p, items[i], bytes[b], 0);
		pool_free(p);
	}
}

static void test_pool_tiny_batch_many_threads(void **state)
{
	(void)state;
	struct pool *p = pool_new(64);
	assert_non_null(p);
	for (int rep = 0; rep < 100; rep++)
		assert_int_equal(run_checked(p, 3, 1 * GiB, 0), 3);
	free_checked(p, 3, 100, -1, -1);
}

static void never_fn(void *ctx, size_t item, unsigned worker)
{
	(void)ctx;
	(void)item;
	(void)worker;
	fail_msg("fn called for an empty batch");
}

static void test_pool_empty_batch(void **state)
{
	(void)state;
	struct pool *p = pool_new(4);
	assert_non_null(p);
	uint64_t before = my_futex_calls();
	assert_int_equal(pool_run(p, 0, 0, never_fn, NULL), 0);
	assert_int_equal(pool_run(p, 0, 1 * GiB, never_fn, NULL), 0);
	assert_int_equal(my_futex_calls(), before);
	free_checked(p, 0, 2, 0, 2);
}

/* Below the byte gate the caller runs everything itself: worker 0 only, and
 * not one futex call from the caller (a wake would be the caller's). */
static void test_pool_inline_below_gate(void **state)
{
	(void)state;
	struct pool *p = pool_new(4);
	assert_non_null(p);
	uint64_t before = my_futex_calls();
	for (int rep = 0; rep < 100; rep++) {
		struct count_ctx c;
		count_ctx_init(&c, 16);
		assert_int_equal(pool_run(p, 16, 16 * KiB, count_fn, &c), 1);
		for (size_t i = 0; i < 16; i++) {
			assert_int_equal(atomic_load(&c.runs[i]), 1);
			assert_int_equal(c.worker_of[i], 0);
		}
		count_ctx_release(&c);
	}
	assert_int_equal(my_futex_calls(), before);
	struct pool_stats st;
	pool_stats_get(p, &st);
	assert_int_equal(st.caller_wait_ns, 0);
	free_checked(p, 1, 100, 100, -1);
}

struct who_ctx {
	_Atomic unsigned per_worker[LIMIT_MAX_THREADS];
	pthread_t thread_of[LIMIT_MAX_THREADS];   /* written by worker k only */
	_Atomic int seen[LIMIT_MAX_THREADS];
	_Atomic int moved;                         /* worker k seen on two threads */
};

static void who_fn(void *arg, size_t item, unsigned worker)
{
	struct who_ctx *c = arg;
	(void)item;
	atomic_fetch_add_explicit(&c->per_worker[worker], 1, memory_order_relaxed);
	/* Worker k is always the same thread, so this slot has one writer. */
	if (atomic_load_explicit(&c->seen[worker], memory_order_relaxed)) {
		if (!pthread_equal(c->thread_of[worker], pthread_self()))
			atomic_store(&c->moved, 1);
	} else {
		c->thread_of[worker] = pthread_self();
		atomic_store_explicit(&c->seen[worker], 1, memory_order_relaxed);
	}
	uint64_t end = now_ns() + 50000;          /* ~50 µs: a real message */
	while (now_ns() < end)
		;
}

/* Far above the gate: the worker count is deterministic (the return value);
 * the split between threads only loosely so, since on 2 cores the caller
 * may run most items before a woken thread gets a CPU. */
static void test_pool_parallel_above_gate(void **state)
{
	(void)state;
	static struct who_ctx c;
	memset(&c, 0, sizeof(c));
	struct pool *p = pool_new(2);
	assert_non_null(p);
	for (int rep = 0; rep < 20; rep++)
		assert_int_equal(pool_run(p, 64, 1 * GiB, who_fn, &c), 2);
	unsigned w0 = atomic_load(&c.per_worker[0]);
	unsigned w1 = atomic_load(&c.per_worker[1]);
	assert_int_equal(w0 + w1, 20 * 64);
	assert_true(w1 > 0);
	assert_false(atomic_load(&c.moved));
	print_message("2 workers, 20 x 64 items of 50 us: worker 0 ran %u, worker 1 ran %u\n",
	              w0, w1);
	free_checked(p, 2, 20, 0, -1);
}

static void test_pool_threads_started_once(void **state)
{
	(void)state;
	struct pool *p = pool_new(4);
	assert_non_null(p);
	struct pool_stats st;
	pool_stats_get(p, &st);
	/* none until a batch needs them: a run under the gate starts none */
	assert_int_equal(st.threads_started, 0);
	run_checked(p, 16, 16 * 1024, 0);
	pool_stats_get(p, &st);
	assert_int_equal(st.threads_started, 0);
	for (unsigned i = 0; i < 1000; i++) {
		size_t items = i % 37;
		uint64_t bytes = (uint64_t)(i % 5) * LIMIT_BYTES_PER_WORKER;
		run_checked(p, items, bytes, 0);
	}
	pool_stats_get(p, &st);
	assert_int_equal(st.threads_started, 3);
	assert_int_equal(st.batches, 1001);
	uint64_t sum = 0;
	for (unsigned k = 0; k <= LIMIT_MAX_THREADS; k++)
		sum += st.workers_hist[k];
	assert_int_equal(sum, st.batches);
	assert_int_equal(st.inline_batches, st.workers_hist[1]);
	pool_free(p);
}

/* Futex calls of the whole process for `batches` batches of `items` items:
 * measured after pool_free(), when every thread has been joined. */
static uint64_t futex_calls_for(unsigned threads, unsigned batches, size_t items)
{
	struct stats_thread total;
	stats_reset_all();
	struct pool *p = pool_new(threads);
	assert_non_null(p);
	for (unsigned b = 0; b < batches; b++)
		assert_int_equal(run_checked(p, items, 1 * GiB, 0), threads);
	pool_free(p);
	stats_merge(&total);
	return total.sys[SC_futex];
}

static void test_pool_futex_per_batch_not_per_item(void **state)
{
	(void)state;
	const unsigned threads = 3, batches = 200;
	uint64_t small = futex_calls_for(threads, batches, 10);
	uint64_t large = futex_calls_for(threads, batches, 5000);
	print_message("futex calls for %u batches of %u workers: %llu at 10 items, "
	              "%llu at 5000 items\n", batches, threads,
	              (unsigned long long)small, (unsigned long long)large);
	/* Per batch: threads-1 wakes, a wait per worker, a wait/wake pair for
	 * completion, and a few -EAGAIN retries; plus start and stop. */
	uint64_t bound = (uint64_t)batches * 4 * threads + 4 * threads;
	assert_true(small <= bound);
	assert_true(large <= bound);
}

/* Wakes of 20 runs of 2 workers, each after a 1 ms pause of the caller:
 * long enough for a worker that does not linger to fall asleep, far
 * shorter than the 1 s linger. */
static uint64_t wakes_after_pauses(uint64_t linger_ns)
{
	struct pool *p = pool_new(2);
	assert_non_null(p);
	pool_set_linger(p, linger_ns);
	for (unsigned b = 0; b < 20; b++) {
		struct timespec ts = { 0, 1000 * 1000 };
		nanosleep(&ts, NULL);
		assert_int_equal(run_checked(p, 100, 1 * GiB, 0), 2);
	}
	struct pool_stats st;
	pool_stats_get(p, &st);
	pool_free(p);
	return st.wakes;
}

static void test_pool_linger_skips_the_wake(void **state)
{
	(void)state;
	uint64_t lingering = wakes_after_pauses(1000 * 1000 * 1000);
	uint64_t sleeping = wakes_after_pauses(0);
	print_message("threads woken in 20 paused runs: %llu with a 1 s linger, %llu without\n",
	              (unsigned long long)lingering, (unsigned long long)sleeping);
	/* with the linger only the first run may find the new thread asleep;
	 * without, the worker sleeps in each pause (the margin is for a
	 * worker preempted before it could) */
	assert_true(lingering <= 1);
	assert_true(sleeping >= 15);
}

static void test_pool_free_prompt(void **state)
{
	(void)state;
	pool_free(NULL);
	struct pool *p = pool_new(8);
	assert_non_null(p);
	run_checked(p, 100, 1 * GiB, 0);
	struct timespec ts = { 0, 20 * 1000 * 1000 };   /* let them fall asleep */
	nanosleep(&ts, NULL);
	uint64_t t0 = now_ns();
	pool_free(p);
	uint64_t dt = now_ns() - t0;
	print_message("pool_free of 7 sleeping threads: %llu us\n",
	              (unsigned long long)(dt / 1000));
	assert_true(dt < 1000000000u);
}

static void test_pool_new_rejects(void **state)
{
	(void)state;
	assert_null(pool_new(0));
	assert_null(pool_new(LIMIT_MAX_THREADS + 1));
	struct pool *p = pool_new(1);
	assert_non_null(p);
	struct pool_stats st;
	pool_stats_get(p, &st);
	assert_int_equal(st.threads_started, 0);
	assert_int_equal(run_checked(p, 100, 1 * GiB, 0), 1);
	pool_free(p);
}

static void test_parallelism_default_bounds(void **state)
{
	(void)state;
	cpu_set_t set;
	CPU_ZERO(&set);
	assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
	unsigned cpus = (unsigned)CPU_COUNT(&set);
	unsigned n = parallelism_default();
	print_message("parallelism_default() = %u, affinity mask has %u CPUs\n", n, cpus);
	assert_true(n >= 1);
	assert_true(n <= cpus);
	assert_int_equal(parallelism_default(), n);   /* cached */
}

static void test_parallelism_cpu_max_parse(void **state)
{
	(void)state;
	static const struct {
		const char *text;
		unsigned want;
	} cases[] = {
		{ "max 100000\n", 0 },
		{ "max\n", 0 },
		{ "100000 100000\n", 1 },
		{ "50000 100000\n", 1 },
		{ "150000 100000\n", 2 },
		{ "200000 100000\n", 2 },
		{ "200001 100000", 3 },
		{ "1000 1000000\n", 1 },
		{ "", 0 },
		{ "garbage\n", 0 },
		{ "100000\n", 0 },
		{ "100000 0\n", 0 },
		{ "0 100000\n", 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(parallelism_cpu_max_parse(cases[i].text), cases[i].want);
}

/* The helper (pool_set_helper): a thread of the test's own that joins
 * runs late, as the pipeline's reader does. */
struct helper_ctx {
	struct pool *p;
	atomic_bool done;
	_Atomic unsigned wakes;          /* helper_wake calls: runs opened */
	unsigned per_call;               /* > 0: enough() after that many items */
	unsigned in_call;
	size_t ran;                      /* helper thread only */
};

/* count_fn with its writes after the busy time: a caller that returned
 * before the helper's last item ended would find them missing. */
static void late_fn(void *arg, size_t item, unsigned worker)
{
	struct count_ctx *c = arg;
	uint64_t end = now_ns() + c->spin_ns;
	while (now_ns() < end)
		;
	atomic_fetch_add_explicit(&c->runs[item], 1, memory_order_relaxed);
	c->value[item] = item * 3 + 1;
	c->worker_of[item] = worker;
}

static void helper_wake(void *arg)
{
	struct helper_ctx *h = arg;
	atomic_fetch_add_explicit(&h->wakes, 1, memory_order_relaxed);
}

static bool helper_enough(void *arg)
{
	struct helper_ctx *h = arg;
	return ++h->in_call >= h->per_call;
}

static void *helper_main(void *arg)
{
	struct helper_ctx *h = arg;
	while (!atomic_load(&h->done)) {
		h->in_call = 0;
		size_t n = pool_help(h->p, h->per_call ? helper_enough : NULL, h);
		assert_true(!h->per_call || n <= h->per_call);
		h->ran += n;
		if (!n)
			sched_yield();
	}
	return NULL;
}

/* Runs with a helper: every item once, on worker 0 or the helper's
 * number, the helper's writes visible on return; the pool starts no
 * thread of its own for the helper's slot, and each run that uses it
 * calls the wake hook once. */
static void helper_runs(unsigned per_call)
{
	struct pool *p = pool_new(2);
	assert_non_null(p);
	static struct helper_ctx h;
	memset(&h, 0, sizeof(h));
	h.p = p;
	h.per_call = per_call;
	pool_set_helper(p, helper_wake, &h);
	assert_int_equal(pool_helper(p), 1);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, helper_main, &h), 0);
	size_t by_helper = 0;
	const unsigned runs = 200;
	const size_t items = 32;
	for (unsigned r = 0; r < runs; r++) {
		struct count_ctx c;
		count_ctx_init(&c, items);
		c.spin_ns = 20000;
		assert_int_equal(pool_run(p, items, 1 * GiB, late_fn, &c), 2);
		for (size_t i = 0; i < items; i++) {
			assert_int_equal(atomic_load(&c.runs[i]), 1);
			assert_int_equal(c.value[i], i * 3 + 1);
			assert_true(c.worker_of[i] == 0 || c.worker_of[i] == 1);
			by_helper += c.worker_of[i] == 1;
		}
		count_ctx_release(&c);
	}
	atomic_store(&h.done, true);
	pthread_join(t, NULL);
	struct pool_stats st;
	pool_stats_get(p, &st);
	print_message("helper (%u a call): %zu of %zu items, %u wakes\n", per_call, by_helper,
	              (size_t)runs * items, atomic_load(&h.wakes));
	assert_int_equal(st.threads_started, 0);
	assert_int_equal(st.workers_hist[2], runs);
	assert_int_equal(atomic_load(&h.wakes), runs);
	assert_int_equal(st.helper_items, by_helper);
	assert_int_equal(h.ran, by_helper);
	/* 20 us items and a helper that polls: it gets some of them */
	assert_true(by_helper > 0);
	pool_free(p);
}

static void test_pool_helper_joins_runs(void **state)
{
	(void)state;
	helper_runs(0);
}

static void test_pool_helper_enough_stops_it(void **state)
{
	(void)state;
	helper_runs(1);
}

/* A helper that never comes: the caller runs everything itself, without
 * a futex call (nobody to wait for, nobody to wake), and pool_help()
 * with no run open returns at once. */
static void test_pool_helper_absent(void **state)
{
	(void)state;
	struct pool *p = pool_new(3);
	assert_non_null(p);
	static struct helper_ctx h;
	memset(&h, 0, sizeof(h));
	pool_set_helper(p, helper_wake, &h);
	assert_int_equal(pool_helper(p), 2);
	assert_int_equal(pool_help(p, NULL, NULL), 0);
	/* two workers: the run does not reach the helper's slot */
	struct count_ctx c;
	count_ctx_init(&c, 8);
	assert_int_equal(pool_run(p, 8, 2 * LIMIT_BYTES_PER_WORKER, count_fn, &c), 2);
	count_ctx_release(&c);
	assert_int_equal(atomic_load(&h.wakes), 0);
	struct pool_stats st;
	pool_stats_get(p, &st);
	assert_int_equal(st.threads_started, 1);
	/* three: it opens to the helper, which does not come */
	uint64_t f0 = my_futex_calls();
	for (int r = 0; r < 50; r++) {
		count_ctx_init(&c, 64);
		assert_int_equal(pool_run(p, 64, 1 * GiB, count_fn, &c), 3);
		for (size_t i = 0; i < 64; i++) {
			assert_int_equal(atomic_load(&c.runs[i]), 1);
			assert_true(c.worker_of[i] <= 1);
		}
		count_ctx_release(&c);
	}
	assert_int_equal(atomic_load(&h.wakes), 50);
	assert_int_equal(pool_help(p, NULL, NULL), 0);
	pool_stats_get(p, &st);
	assert_int_equal(st.helper_items, 0);
	assert_int_equal(st.threads_started, 1);
	/* the caller's futex calls are the post to worker 1 and its wait for
	 * it: none for the helper's slot */
	assert_true(my_futex_calls() - f0 <= 2 * 50);
	pool_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pool_workers_for_table),
		cmocka_unit_test(test_pool_every_item_once),
		cmocka_unit_test(test_pool_tiny_batch_many_threads),
		cmocka_unit_test(test_pool_empty_batch),
		cmocka_unit_test(test_pool_inline_below_gate),
		cmocka_unit_test(test_pool_parallel_above_gate),
		cmocka_unit_test(test_pool_threads_started_once),
		cmocka_unit_test(test_pool_futex_per_batch_not_per_item),
		cmocka_unit_test(test_pool_linger_skips_the_wake),
		cmocka_unit_test(test_pool_free_prompt),
		cmocka_unit_test(test_pool_new_rejects),
		cmocka_unit_test(test_pool_helper_joins_runs),
		cmocka_unit_test(test_pool_helper_enough_stops_it),
		cmocka_unit_test(test_pool_helper_absent),
		cmocka_unit_test(test_parallelism_default_bounds),
		cmocka_unit_test(test_parallelism_cpu_max_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
