/* SPDX-License-Identifier: MIT */
/* Unit tests for the batch channel (sched/chan.h): FIFO order, close
 * semantics (pops drain what is queued, then return NULL), a blocked pop
 * woken by a push or a close from another thread, and the runs of wake_at
 * with their flushes.
 *
 * A blocked pop is observed through the channel's `waiters` count (raised
 * just before the futex wait), so no test relies on a sleep being long
 * enough. */
#include "sched/batch.h"
#include "sched/chan.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

static void wait_for_waiters(struct chan *c, unsigned n)
{
	for (int i = 0; i < 5000; i++) {
		if (atomic_load(&c->waiters) == n)
			return;
		struct timespec ts = { 0, 1000000L };
		nanosleep(&ts, NULL);
	}
	fail_msg("no thread blocked on the channel after 5 s");
}

struct popper {
	struct chan *c;
	struct batch *got;
	atomic_int done;
};

static void *pop_thread(void *arg)
{
	struct popper *p = arg;
	p->got = chan_pop(p->c);
	atomic_store(&p->done, 1);
	return NULL;
}

static void test_chan_fifo_order(void **state)
{
	(void)state;
	struct chan c;
	chan_init(&c);
	struct batch *b[5];
	for (int i = 0; i < 5; i++) {
		b[i] = batch_new();
		assert_non_null(b[i]);
	}
	chan_push(&c, b[0]);
	chan_push(&c, b[1]);
	chan_push(&c, b[2]);
	assert_ptr_equal(chan_pop(&c), b[0]);
	/* interleaved: the queue empties and fills again */
	chan_push(&c, b[3]);
	assert_ptr_equal(chan_pop(&c), b[1]);
	assert_ptr_equal(chan_pop(&c), b[2]);
	assert_ptr_equal(chan_pop(&c), b[3]);
	assert_null(c.head);
	assert_null(c.tail);
	chan_push(&c, b[4]);
	assert_ptr_equal(chan_pop(&c), b[4]);
	for (int i = 0; i < 5; i++)
		batch_free(b[i]);
}

/* The push hook sees every push on the pushing thread and may keep a batch
 * out of the queue (src/ingest.c holds the first one back that way). */
static bool keep_first(void *ctx, struct batch *b)
{
	struct batch **kept = ctx;
	if (*kept)
		return false;
	*kept = b;
	return true;
}

static void test_chan_push_hook_takes_batch(void **state)
{
	(void)state;
	struct chan c;
	chan_init(&c);
	struct batch *kept = NULL, *b0 = batch_new(), *b1 = batch_new();
	assert_non_null(b0);
	assert_non_null(b1);
	c.push_hook = keep_first;
	c.hook_ctx = &kept;
	chan_push(&c, b0);
	assert_ptr_equal(kept, b0);
	assert_null(chan_try_pop(&c));          /* taken: not queued */
	chan_push(&c, b1);
	assert_ptr_equal(chan_try_pop(&c), b1); /* declined: queued */
	assert_null(chan_try_pop(&c));
	batch_free(b0);
	batch_free(b1);
}

static void test_chan_close_drains_then_null(void **state)
{
	(void)state;
	struct chan c;
	chan_init(&c);
	struct batch *x = batch_new(), *y = batch_new();
	assert_non_null(x);
	assert_non_null(y);
	chan_push(&c, x);
	chan_push(&c, y);
	chan_close(&c);
	assert_ptr_equal(chan_pop(&c), x);
	assert_ptr_equal(chan_pop(&c), y);
	assert_null(chan_pop(&c));
	assert_null(chan_pop(&c));           /* and stays so, without blocking */
	/* closing an empty channel: the first pop already returns NULL */
	struct chan e;
	chan_init(&e);
	chan_close(&e);
	assert_null(chan_pop(&e));
	batch_free(x);
	batch_free(y);
}

static void test_chan_blocked_pop_woken_by_push(void **state)
{
	(void)state;
	struct chan c;
	chan_init(&c);
	struct batch *x = batch_new();
	assert_non_null(x);
	struct popper p = { .c = &c };
	atomic_init(&p.done, 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, pop_thread, &p), 0);
	wait_for_waiters(&c, 1);
	assert_int_equal(atomic_load(&p.done), 0);
	chan_push(&c, x);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_ptr_equal(p.got, x);
	assert_null(c.head);
	assert_true(atomic_load(&c.waited_ns) > 0);
	batch_free(x);
}

static void test_chan_blocked_pop_woken_by_close(void **state)
{
	(void)state;
	struct chan c;
	chan_init(&c);
	struct popper p = { .c = &c };
	atomic_init(&p.done, 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, pop_thread, &p), 0);
	wait_for_waiters(&c, 1);
	chan_close(&c);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_null(p.got);
}

/* Starts a thread popping c and returns once it sleeps there. */
static void start_blocked_popper(struct popper *p, struct chan *c, pthread_t *t)
{
	*p = (struct popper){ .c = c };
	atomic_init(&p->done, 0);
	assert_int_equal(pthread_create(t, NULL, pop_thread, p), 0);
	wait_for_waiters(c, 1);
}

/* wake_at 2: one batch queued leaves a blocked pop asleep (the push bumps
 * nothing); the second wakes it, and chan_flush() wakes it for one. */
static void test_chan_wake_at_runs_and_flush(void **state)
{
	(void)state;
	struct chan c;
	chan_init(&c);
	c.wake_at = 2;
	struct batch *x = batch_new(), *y = batch_new(), *z = batch_new();
	assert_non_null(x);
	assert_non_null(y);
	assert_non_null(z);
	struct popper p;
	pthread_t t;
	start_blocked_popper(&p, &c, &t);
	uint32_t seq = atomic_load(&c.seq);
	chan_push(&c, x);
	assert_int_equal(atomic_load(&c.seq), seq);     /* not announced */
	assert_int_equal(c.queued, 1);
	struct timespec ts = { 0, 20000000L };
	nanosleep(&ts, NULL);
	assert_int_equal(atomic_load(&p.done), 0);      /* still asleep */
	chan_push(&c, y);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_ptr_equal(p.got, x);
	assert_int_equal(c.queued, 1);
	assert_ptr_equal(chan_try_pop(&c), y);
	assert_int_equal(c.queued, 0);

	/* one batch and a flush */
	start_blocked_popper(&p, &c, &t);
	chan_flush(&c);                                 /* nothing queued: no wake */
	chan_push(&c, z);
	nanosleep(&ts, NULL);
	assert_int_equal(atomic_load(&p.done), 0);
	chan_flush(&c);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_ptr_equal(p.got, z);
	batch_free(x);
	batch_free(y);
	batch_free(z);
}

/* A pop about to sleep flushes flush_before_sleep first: the batch its
 * thread pushed there below wake_at is announced, so the two sides cannot
 * both sleep on batches the other has not been told of. */
static void test_chan_pop_flushes_before_sleep(void **state)
{
	(void)state;
	struct chan c, other;
	chan_init(&c);
	chan_init(&other);
	other.wake_at = 4;
	c.flush_before_sleep = &other;
	struct batch *x = batch_new(), *y = batch_new();
	assert_non_null(x);
	assert_non_null(y);
	struct popper p;
	pthread_t t;
	start_blocked_popper(&p, &other, &t);
	chan_push(&other, x);                           /* below wake_at */
	struct popper q = { .c = &c };
	atomic_init(&q.done, 0);
	pthread_t u;
	assert_int_equal(pthread_create(&u, NULL, pop_thread, &q), 0);
	assert_int_equal(pthread_join(t, NULL), 0);     /* woken by q's flush */
	assert_ptr_equal(p.got, x);
	wait_for_waiters(&c, 1);
	chan_push(&c, y);
	assert_int_equal(pthread_join(u, NULL), 0);
	assert_ptr_equal(q.got, y);
	batch_free(x);
	batch_free(y);
}

/* Closing wakes every blocked pop, not just one. */
static void test_chan_close_wakes_every_popper(void **state)
{
	(void)state;
	struct chan c;
	chan_init(&c);
	struct popper p[2] = { { .c = &c }, { .c = &c } };
	pthread_t t[2];
	for (int i = 0; i < 2; i++) {
		atomic_init(&p[i].done, 0);
		assert_int_equal(pthread_create(&t[i], NULL, pop_thread, &p[i]), 0);
	}
	wait_for_waiters(&c, 2);
	chan_close(&c);
	int done = 0;
	for (int ms = 0; ms < 5000 && done < 2; ms++) {
		done = atomic_load(&p[0].done) + atomic_load(&p[1].done);
		if (done < 2) {
			struct timespec ts = { 0, 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	/* unstick a forgotten popper before judging, so the test can end */
	while (!atomic_load(&p[0].done) || !atomic_load(&p[1].done)) {
		chan_close(&c);
		struct timespec ts = { 0, 1000000L };
		nanosleep(&ts, NULL);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	if (done < 2)
		fail_msg("chan_close woke %d of 2 blocked pops", done);
	assert_null(p[0].got);
	assert_null(p[1].got);
}

/* Many batches through the channel from one thread to another: every one
 * arrives, once, in order. */
struct producer {
	struct chan *c;
	struct batch **b;
	int n;
};

static void *push_thread(void *arg)
{
	struct producer *p = arg;
	for (int i = 0; i < p->n; i++)
		chan_push(p->c, p->b[i]);
	chan_close(p->c);
	return NULL;
}

static void test_chan_cross_thread_order(void **state)
{
	(void)state;
	enum { N = 64 };
	struct chan c;
	chan_init(&c);
	struct batch *b[N];
	for (int i = 0; i < N; i++) {
		b[i] = batch_new();
		assert_non_null(b[i]);
	}
	struct producer p = { &c, b, N };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, push_thread, &p), 0);
	int got = 0;
	for (struct batch *x; (x = chan_pop(&c)); got++) {
		assert_true(got < N);
		assert_ptr_equal(x, b[got]);
	}
	assert_int_equal(got, N);
	assert_int_equal(pthread_join(t, NULL), 0);
	for (int i = 0; i < N; i++)
		batch_free(b[i]);
}

int main(void)
{
	alarm(60);     /* a lost wake-up fails the run instead of hanging it */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chan_fifo_order),
		cmocka_unit_test(test_chan_push_hook_takes_batch),
		cmocka_unit_test(test_chan_close_drains_then_null),
		cmocka_unit_test(test_chan_blocked_pop_woken_by_push),
		cmocka_unit_test(test_chan_blocked_pop_woken_by_close),
		cmocka_unit_test(test_chan_close_wakes_every_popper),
		cmocka_unit_test(test_chan_wake_at_runs_and_flush),
		cmocka_unit_test(test_chan_pop_flushes_before_sleep),
		cmocka_unit_test(test_chan_cross_thread_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
