/* SPDX-License-Identifier: MIT */
/* Unit tests for the in-flight byte budget (sched/budget.c, declared in
 * sched/chan.h): accounting, the peak, the oversized request granted when
 * nothing is in flight, a blocked acquire released by another thread,
 * cancellation waking a blocked acquirer, and budget_acquire_held, which
 * waits for the others' bytes only (never for the caller's own).
 *
 * A blocked acquirer is observed through the budget's `waiters` count (it is
 * raised just before the futex wait), so the tests do not depend on sleeps
 * being long enough. */
#include "sched/budget.h"
#include "sched/batch.h"
#include "sched/chan.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

/* Waits (at most 5 s) until `n` threads sleep on the budget. */
static void wait_for_waiters(struct budget *b, unsigned n)
{
	for (int i = 0; i < 5000; i++) {
		if (atomic_load(&b->waiters) == n)
			return;
		sleep_ms(1);
	}
	fail_msg("no thread blocked on the budget after 5 s");
}

struct acquirer {
	struct budget *b;
	uint64_t bytes;
	uint64_t held;         /* > 0: budget_acquire_held with this much held */
	atomic_int state;      /* 0 running, 1 returned true, 2 returned false */
};

static void *acquire_thread(void *arg)
{
	struct acquirer *a = arg;
	bool ok = a->held ? budget_acquire_held(a->b, a->bytes, a->held)
	                  : budget_acquire(a->b, a->bytes);
	atomic_store(&a->state, ok ? 1 : 2);
	return NULL;
}

/* Starts a thread asking for `bytes` (with `held` of its own, if any) and
 * returns once it sleeps on the budget: `n_waiting` threads then do. */
static void start_blocked(struct acquirer *a, pthread_t *t, struct budget *b,
                          uint64_t bytes, uint64_t held, unsigned n_waiting)
{
	a->b = b;
	a->bytes = bytes;
	a->held = held;
	atomic_init(&a->state, 0);
	assert_int_equal(pthread_create(t, NULL, acquire_thread, a), 0);
	wait_for_waiters(b, n_waiting);
	assert_int_equal(atomic_load(&a->state), 0);
}

/* A budget of 100 bytes, `held` of them in flight (after `own` of the
 * acquirer's own, if any), and a thread blocked on it asking for `bytes`. */
struct blocked {
	struct budget b;
	struct acquirer a;
	pthread_t t;
};

static void block_one(struct blocked *x, uint64_t own, uint64_t held, uint64_t bytes)
{
	budget_init(&x->b, 100);
	if (own)
		assert_true(budget_acquire(&x->b, own));
	assert_true(budget_acquire(&x->b, held));
	start_blocked(&x->a, &x->t, &x->b, bytes, own, 1);
}

/* Joins the thread and returns how its acquire ended: 1 granted, 2 refused. */
static int join_acquirer(struct acquirer *a, pthread_t t)
{
	assert_int_equal(pthread_join(t, NULL), 0);
	return atomic_load(&a->state);
}

static void test_budget_accounting(void **state)
{
	(void)state;
	struct budget b;
	budget_init(&b, 100);
	assert_true(budget_acquire(&b, 30));
	assert_true(budget_acquire(&b, 40));
	assert_int_equal(b.used, 70);
	assert_int_equal(b.peak, 70);
	assert_true(budget_try_acquire(&b, 30));      /* exactly the limit */
	assert_int_equal(b.used, 100);
	assert_false(budget_try_acquire(&b, 1));
	assert_int_equal(b.used, 100);
	assert_true(budget_try_acquire(&b, 0));       /* nothing asked: fits */
	budget_release(&b, 30);
	budget_release(&b, 40);
	assert_int_equal(b.used, 30);
	assert_int_equal(b.peak, 100);                /* the peak stays */
	assert_true(budget_acquire(&b, 10));
	assert_int_equal(b.used, 40);
	assert_int_equal(b.peak, 100);
	budget_release(&b, 40);
	budget_release(&b, 0);                        /* a no-op */
	assert_int_equal(b.used, 0);
	/* nothing blocked, so no wait was ever made */
	assert_int_equal(b.waited_ns, 0);
}

/* The always-on checks (core/diag.h) hold in every build, release
 * included: a child process breaks the invariant and must die of SIGABRT. */
static void expect_abort(void (*fn)(void))
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* keep the expected message out of the test log's noise */
		if (!freopen("/dev/null", "w", stderr))
			_exit(2);
		fn();
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGABRT);
}

static void double_release(void)
{
	struct budget b;
	budget_init(&b, 100);
	assert_true(budget_acquire(&b, 10));
	budget_release(&b, 10);
	budget_release(&b, 10);
}

static void test_budget_double_release_aborts(void **state)
{
	(void)state;
	expect_abort(double_release);
}

static void push_after_close(void)
{
	static struct batch b;
	struct chan c;
	chan_init(&c);
	chan_close(&c);
	chan_push(&c, &b);
}

static void test_chan_push_after_close_aborts(void **state)
{
	(void)state;
	expect_abort(push_after_close);
}

static void test_budget_oversized_granted_when_idle(void **state)
{
	(void)state;
	struct budget b;
	budget_init(&b, 100);
	/* One file larger than the whole budget must not deadlock. */
	assert_true(budget_try_acquire(&b, 500));
	assert_int_equal(b.used, 500);
	assert_int_equal(b.peak, 500);
	assert_false(budget_try_acquire(&b, 1));
	assert_false(budget_try_acquire(&b, 500));
	budget_release(&b, 500);
	assert_true(budget_acquire(&b, 1000));
	budget_release(&b, 1000);
	/* ... but not while something else is in flight */
	assert_true(budget_acquire(&b, 1));
	assert_false(budget_try_acquire(&b, 101));
	assert_false(budget_try_acquire(&b, UINT64_MAX));
	budget_release(&b, 1);
	assert_true(budget_try_acquire(&b, UINT64_MAX));
	budget_release(&b, UINT64_MAX);
	assert_int_equal(b.used, 0);
}

/* An acquire about to sleep calls the wait hook first: a hook that gives
 * bytes back lets it through on this very thread, with no other thread to
 * wake it (src/ingest.c starts its parse thread there). */
struct hook_ctx {
	struct budget *b;
	int calls;
};

static bool release_all(void *arg)
{
	struct hook_ctx *h = arg;
	h->calls++;
	budget_release(h->b, 80);
	return true;
}

static void test_budget_wait_hook_runs_before_sleep(void **state)
{
	(void)state;
	struct budget b;
	budget_init(&b, 100);
	struct hook_ctx h = { &b, 0 };
	b.wait_hook = release_all;
	b.wait_ctx = &h;
	assert_true(budget_acquire(&b, 80));
	assert_int_equal(h.calls, 0);            /* it fitted: no hook */
	assert_true(budget_acquire(&b, 50));     /* would sleep: the hook frees 80 */
	assert_int_equal(h.calls, 1);
	assert_int_equal(b.used, 50);
	budget_release(&b, 50);
}

static void test_budget_blocking_acquire_released(void **state)
{
	(void)state;
	struct blocked x;
	block_one(&x, 0, 80, 50);
	/* Releasing too little keeps it blocked (it re-checks and sleeps). */
	budget_release(&x.b, 20);                     /* used 60: 50 does not fit */
	sleep_ms(20);
	assert_int_equal(atomic_load(&x.a.state), 0);
	budget_release(&x.b, 30);                     /* used 30: fits */
	assert_int_equal(join_acquirer(&x.a, x.t), 1);
	assert_int_equal(x.b.used, 80);
	assert_int_equal(x.b.peak, 80);
	assert_true(x.b.waited_ns > 0);
	budget_release(&x.b, 80);
	assert_int_equal(x.b.used, 0);
}

static void test_budget_blocked_oversized_granted_when_drained(void **state)
{
	(void)state;
	struct blocked x;
	block_one(&x, 0, 10, 300);
	budget_release(&x.b, 10);                     /* now nothing in flight */
	assert_int_equal(join_acquirer(&x.a, x.t), 1);
	assert_int_equal(x.b.used, 300);
	budget_release(&x.b, 300);
}

static void test_budget_cancel_wakes_acquirer(void **state)
{
	(void)state;
	struct blocked x;
	block_one(&x, 0, 100, 1);
	budget_cancel(&x.b);
	assert_int_equal(join_acquirer(&x.a, x.t), 2);
	assert_int_equal(x.b.used, 100);              /* nothing was granted */
	/* After a cancel every acquire fails at once, even ones that fit. */
	budget_release(&x.b, 100);
	assert_false(budget_acquire(&x.b, 1));
	assert_false(budget_try_acquire(&x.b, 1));
	assert_int_equal(x.b.used, 0);
}

/* budget_cancel "wakes every waiter": two blocked acquirers both return. */
static void test_budget_cancel_wakes_every_acquirer(void **state)
{
	(void)state;
	struct budget b;
	budget_init(&b, 100);
	assert_true(budget_acquire(&b, 100));
	struct acquirer a[2];
	pthread_t t[2];
	start_blocked(&a[0], &t[0], &b, 1, 0, 1);
	start_blocked(&a[1], &t[1], &b, 2, 0, 2);
	budget_cancel(&b);
	int done = 0;
	for (int ms = 0; ms < 5000 && done < 2; ms++) {
		done = (atomic_load(&a[0].state) != 0) + (atomic_load(&a[1].state) != 0);
		if (done < 2)
			sleep_ms(1);
	}
	/* unstick a forgotten waiter before judging, so the test can end */
	while (atomic_load(&a[0].state) == 0 || atomic_load(&a[1].state) == 0) {
		budget_cancel(&b);
		sleep_ms(1);
	}
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	if (done < 2)
		fail_msg("budget_cancel woke %d of 2 blocked acquirers", done);
	assert_int_equal(atomic_load(&a[0].state), 2);
	assert_int_equal(atomic_load(&a[1].state), 2);
}

/* A caller whose own bytes are all that is in flight is granted at once,
 * past the limit (plain budget_acquire would wait for itself forever), and
 * every byte shows in used and peak; later acquisitions then wait. */
static void test_budget_held_granted_over_own_bytes(void **state)
{
	(void)state;
	struct budget b;
	budget_init(&b, 100);
	assert_true(budget_acquire(&b, 80));          /* the caller's batch */
	assert_false(budget_try_acquire(&b, 50));     /* budget_acquire would block */
	assert_true(budget_acquire_held(&b, 50, 80));
	assert_int_equal(b.used, 130);
	assert_int_equal(b.peak, 130);                /* the overshoot is counted */
	assert_false(budget_try_acquire(&b, 1));      /* over the limit: others wait */
	/* a second re-read of the same batch: still nothing but its own */
	assert_true(budget_acquire_held(&b, 20, 130));
	assert_int_equal(b.used, 150);
	assert_int_equal(b.peak, 150);
	/* what fits is granted as usual, whatever is held */
	budget_release(&b, 150);
	assert_true(budget_acquire(&b, 10));
	assert_true(budget_acquire_held(&b, 60, 10));
	assert_int_equal(b.used, 70);
	/* held 0 is budget_acquire: an oversize request needs an idle budget */
	budget_release(&b, 70);
	assert_true(budget_acquire_held(&b, 500, 0));
	assert_int_equal(b.used, 500);
	budget_release(&b, 500);
	assert_int_equal(b.used, 0);
	assert_int_equal(b.waited_ns, 0);             /* nothing ever blocked */
}

/* While others hold bytes and the request does not fit, it waits; it is
 * granted when the request fits, or when only its own bytes are left. */
static void test_budget_held_waits_for_others_only(void **state)
{
	(void)state;
	struct blocked x;
	block_one(&x, 30, 60, 90);                    /* 30 its own, 60 another batch's */
	budget_release(&x.b, 20);                     /* others still hold 40 */
	sleep_ms(20);
	assert_int_equal(atomic_load(&x.a.state), 0);
	budget_release(&x.b, 40);                     /* only the caller's 30 left */
	assert_int_equal(join_acquirer(&x.a, x.t), 1);
	assert_int_equal(x.b.used, 120);
	assert_int_equal(x.b.peak, 120);
	assert_true(x.b.waited_ns > 0);
	budget_release(&x.b, 120);

	/* granted by fitting, before the others are gone */
	assert_true(budget_acquire(&x.b, 10));        /* own */
	assert_true(budget_acquire(&x.b, 80));        /* others */
	struct acquirer f;
	start_blocked(&f, &x.t, &x.b, 30, 10, 1);
	budget_release(&x.b, 30);                     /* used 60: 30 fits */
	assert_int_equal(join_acquirer(&f, x.t), 1);
	assert_int_equal(x.b.used, 90);
	budget_release(&x.b, 90);
	assert_int_equal(x.b.used, 0);
}

static void test_budget_held_cancel_wakes(void **state)
{
	(void)state;
	struct blocked x;
	block_one(&x, 10, 90, 50);                    /* 10 its own, 90 others' */
	budget_cancel(&x.b);
	assert_int_equal(join_acquirer(&x.a, x.t), 2);
	assert_int_equal(x.b.used, 100);              /* nothing was granted */
	/* cancelled: refused even when only the caller's bytes are left */
	budget_release(&x.b, 90);
	assert_false(budget_acquire_held(&x.b, 50, 10));
	assert_int_equal(x.b.used, 10);
	budget_release(&x.b, 10);
}

int main(void)
{
	alarm(60);     /* a deadlock fails the run instead of hanging it */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_accounting),
		cmocka_unit_test(test_budget_double_release_aborts),
		cmocka_unit_test(test_chan_push_after_close_aborts),
		cmocka_unit_test(test_budget_oversized_granted_when_idle),
		cmocka_unit_test(test_budget_blocking_acquire_released),
		cmocka_unit_test(test_budget_blocked_oversized_granted_when_drained),
		cmocka_unit_test(test_budget_cancel_wakes_acquirer),
		cmocka_unit_test(test_budget_cancel_wakes_every_acquirer),
		cmocka_unit_test(test_budget_held_granted_over_own_bytes),
		cmocka_unit_test(test_budget_held_waits_for_others_only),
		cmocka_unit_test(test_budget_held_cancel_wakes),
		cmocka_unit_test(test_budget_wait_hook_runs_before_sleep),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
