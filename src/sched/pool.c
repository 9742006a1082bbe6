/* SPDX-License-Identifier: MIT */
/* The worker pool: persistent threads, one job slot, one cursor.
 *
 * A thread per batch would cost 15-40 µs to create and join, where a 1 KiB
 * message parses in about 1 µs; so threads start once, on the first batch
 * above the byte gate (a run that never has one, such as the 16 x 1 KiB
 * page, never starts a thread and runs exactly as --threads=1), and sleep
 * on a futex between batches (after polling for the next one for a while,
 * where the pool's owner asks: pool_set_linger()).  A batch below one
 * worker's worth of bytes never leaves the calling thread.  Above it, the caller publishes the
 * job, wakes exactly the workers it needs, and works too: everyone claims
 * items from one atomic cursor, so a slow message delays only the worker
 * that drew it.
 *
 *     caller = worker 0                          pool thread k (1 <= k < n)
 *     -----------------                          --------------------------
 *     job = {fn, ctx, items}      plain
 *     cursor = 0                  relaxed
 *     pending = n - 1             relaxed
 *     for k in 1..n-1:
 *       old = xchg(w[k].word,     release  ----> load(w[k].word) acquire
 *                  ++posted << 1)                  sees a new generation
 *       if old & SLEEPING:
 *         futex_wake(w[k].word) ------------->  returns from futex_wait
 *     loop: i = cursor++          relaxed  <-->  loop: i = cursor++  relaxed
 *           fn(ctx, i, 0)                              fn(ctx, i, k)
 *     spin <= 10 us: load(pending) acquire
 *     old = pending |= WAITER     acquire  <---- old = pending-- release
 *     while count(pending) != 0:                 if old == (WAITER | 1):
 *       futex_wait(pending) <------------------    futex_wake(pending)
 *                                                CAS(w[k].word |= SLEEPING)
 *                                                futex_wait(w[k].word)
 *
 * Who writes what:
 *  - the job slot (fn, ctx, items) and `stop`: the caller only, between
 *    batches; workers read them only after acquiring a new generation, and
 *    the caller writes them again only after acquiring pending == 0, which
 *    every participant's release decrement precedes.  So plain fields.
 *  - w[k].word: the generation (bits 31..1) is written by the caller only,
 *    with one exchange per batch; the SLEEPING bit (bit 0) is set by thread k
 *    only, with a CAS against the generation it has seen.  Both live in one
 *    word, so their modification order decides the race between "caller
 *    publishes" and "worker goes to sleep": either the worker's CAS comes
 *    first and the caller's exchange returns SLEEPING (so it wakes), or the
 *    exchange comes first and the CAS fails (so the worker sees the job).
 *    A wake is issued only to a worker that said it sleeps.
 *  - pending: the caller sets it, each participant decrements it once, and
 *    the caller sets WAITER when it is about to sleep.  One word again, so
 *    the last finisher knows from its own fetch_sub whether the caller
 *    sleeps, and wakes it only then: no Dekker pair, no seq_cst.
 *  - cursor: claimed with relaxed fetch_add.  Uniqueness of an item needs
 *    only the atomicity of the RMW; visibility of the job comes from the
 *    generation, visibility of fn's writes from pending.
 *
 * Futex traffic per batch is O(workers) and independent of the number of
 * items: n - 1 wakes from the caller, one wait per worker going back to
 * sleep, and at most one wait/wake pair for completion.  Each word sits on
 * its own cache line so that workers do not slow each other down.
 *
 * The helper (pool_set_helper()): the last worker may be no pool thread
 * but a thread of the caller's choosing that joins a run late, when it
 * has nothing else to do (the pipeline's reader, about to sleep).  It is
 * not posted to and never sleeps in the pool, so a run it skips costs no
 * futex; it comes in through a door word instead:
 *
 *     caller                                     helper
 *     ------                                     ------
 *     job, cursor as above        plain/relaxed
 *     help = OPEN                 release  ----> CAS(help, v, v + ONE)
 *     helper_wake()                                 acquire, only if OPEN
 *     loop: i = cursor++          relaxed  <-->  loop: i = cursor++
 *     old = help &= ~OPEN         acquire        old = help -= ONE  release
 *     spin <= 50 us, then                        if old == (WAITER | ONE):
 *     help |= WAITER; futex_wait  <------------    futex_wake(help)
 *
 * A helper that finds the door shut does nothing; one that comes in after
 * the cursor ran out leaves at once.  The caller waits only for the items a
 * helper holds, and the count is a count, so the helper may enter any run
 * that is open, the one it looked at or a later one: it reads the job slot
 * only after its CAS.
 *
 * Worker k is always thread k: per-worker state (parser contexts, iconv
 * descriptors, libmagic cookies) indexed by the worker number is therefore
 * touched by one thread only, and stays warm in its cache. */
#include "core/diag.h"
#include "core/clock.h"
#include "sched/futex_wait.h"
#include "sched/pool.h"

#include "core/sys.h"
#include "core/xalloc.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#define POOL_CACHE_LINE 64
#define POOL_SLEEPING   1u              /* in w[k].word: thread k sleeps */
#define POOL_WAITER     (1u << 31)      /* in pending: the caller sleeps */
#define POOL_HELP_OPEN   1u             /* in help: the run takes a helper */
#define POOL_HELP_WAITER 2u             /* in help: the caller sleeps */
#define POOL_HELP_ONE    4u             /* in help: one helper inside the run */

/* How long the caller polls `pending` before it sleeps: about the cost of
 * blocking (a futex wait, a wake and a context switch), so that polling can
 * never cost more than twice the better choice.  Measured on 2 cores (AMD
 * EPYC, other load present), 2 workers, median per batch:
 *
 *     spin    16 tiny items   16 x 50 us    16 x 1..100 us
 *     0       8-27 us         451 us        368 us
 *     5 us    2.7-3.0 us      438 us        365 us
 *     10 us   2.6-2.8 us      432-439 us    365 us
 *     50 us   2.5-2.9 us      430 us        358-680 us
 *
 * Without a spin every dispatch pays a sleep and a wake-up of the caller
 * (the worker's last item ends microseconds after the caller's).  Past
 * 10 us the gain is within noise while the worst case grows: on 2 cores a
 * spinning caller takes the CPU from the reader and emitter threads, and
 * with another process on the other core from the very worker it waits
 * for (the 680 us above).  A real batch (>= 64 KiB a worker) makes 10 us
 * noise either way. */
#ifndef POOL_CALLER_SPIN_NS
#define POOL_CALLER_SPIN_NS 10000
#endif

/* How long the caller polls for a helper's last item: longer than for a
 * pool thread, since a helper inside the run is awake on another CPU and
 * holds at most one item (a realistic message parses in ~10-20 us), and
 * a sleep would cost a futex pair.  Not tuned apart from the pool
 * threads' 10 us: the futex counts of bench/PIPELINE.md are with 50 us. */
#ifndef POOL_HELPER_SPIN_NS
#define POOL_HELPER_SPIN_NS 50000
#endif

/* One per worker thread, each on its own cache line (the array is only
 * 16-byte aligned by malloc, but a 64-byte stride still keeps two words off
 * one line). */
struct pool_worker {
	union {
		struct {
			_Atomic uint32_t word;  /* generation << 1 | POOL_SLEEPING */
			uint32_t posted;        /* caller only: the last generation posted */
			unsigned index;         /* read-only after start */
			bool started;           /* caller only: pthread_create succeeded */
			_Atomic bool done;      /* set by thread k after its last syscall */
			struct pool *pool;      /* read-only after start */
			pthread_t thread;       /* caller only */
		};
		char line[POOL_CACHE_LINE];
	};
};

struct pool {
	/* The two words every participant writes, first and a line apart. */
	union {
		_Atomic size_t cursor;      /* next item to claim */
		char line0[POOL_CACHE_LINE];
	};
	union {
		_Atomic uint32_t pending;   /* POOL_WAITER | participants still working */
		char line1[POOL_CACHE_LINE];
	};
	/* The helper's door (see "The helper" above): POOL_HELP_OPEN while
	 * the caller still claims, POOL_HELP_WAITER, and POOL_HELP_ONE per
	 * helper inside. */
	union {
		struct {
			_Atomic uint32_t help;
			_Atomic uint64_t helper_items;   /* the helper's count */
		};
		char line2[POOL_CACHE_LINE];
	};
	/* The job slot: written by the caller between batches (see top). */
	pool_fn fn;
	void *ctx;
	size_t items;
	bool stop;
	bool stopped;               /* caller only: pool_stop() has run */
	unsigned threads;           /* including the caller */
	uint64_t linger_ns;         /* pool_set_linger(); read-only after start */
	bool launched;              /* pool_launch() has run */
	unsigned usable;            /* the caller + the threads that started */
	unsigned helper;            /* 0, or the worker pool_help() runs as */
	void (*helper_wake)(void *ctx);   /* set with helper, before any run */
	void *helper_wake_ctx;
	struct pool_worker *w;      /* [threads]; w[0] unused (the caller) */
	struct pool_stats stats;    /* caller only */
};

_Static_assert(sizeof(struct pool_worker) == POOL_CACHE_LINE, "one line per worker");
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t), "futex word is a plain u32");

/* The kernel reads a futex word as a plain u32, which is what an _Atomic
 * uint32_t is (asserted above); the detour through uintptr_t only tells
 * -Wcast-qual so. */
static inline uint32_t *pool_futex_word(_Atomic uint32_t *word)
{
	return (uint32_t *)(uintptr_t)word;
}

/* FUTEX_WAKE on a valid private word cannot fail; a failure can therefore
 * only be injected (core/fault), and a lost wake-up would hang the run, so
 * it is retried rather than reported. */
static void pool_wake(_Atomic uint32_t *word)
{
	while (sys_futex_wake(pool_futex_word(word), 1) < 0)
		;
}

/* Claims and runs items until the cursor passes the end. */
static void pool_work(struct pool *p, unsigned worker)
{
	pool_fn fn = p->fn;
	void *ctx = p->ctx;
	size_t items = p->items;
	for (;;) {
		size_t i = atomic_fetch_add_explicit(&p->cursor, 1, memory_order_relaxed);
		if (i >= items)
			return;
		ingest_assert(worker < p->threads);
		fn(ctx, i, worker);
	}
}

/* Thread k: sleeps until the caller posts a generation other than `seen`,
 * and returns it; polls for up to `linger_ns` first (pool_set_linger()).
 * The acquire load that sees the new generation is what makes the job
 * slot (written before the caller's release exchange) visible. */
static uint32_t pool_sleep(struct pool_worker *w, uint32_t seen, uint64_t linger_ns)
{
	uint64_t t0 = linger_ns ? clock_now_ns() : 0;
	for (unsigned i = 0; linger_ns;) {
		uint32_t v = atomic_load_explicit(&w->word, memory_order_acquire);
		if (v >> 1 != seen)
			return v >> 1;
		if (spin_step_expired(&i, t0, linger_ns))
			break;
	}
	for (;;) {
		uint32_t v = atomic_load_explicit(&w->word, memory_order_acquire);
		if (v >> 1 != seen)
			return v >> 1;
		if (!(v & POOL_SLEEPING)) {
			/* Relaxed: the flag carries no data; the exchange that
			 * reads it is ordered with it by the word's own
			 * modification order. */
			if (!atomic_compare_exchange_weak_explicit(&w->word, &v, v | POOL_SLEEPING,
			                                           memory_order_relaxed,
			                                           memory_order_relaxed))
				continue;
			v |= POOL_SLEEPING;
		}
		/* Returns at once (-EAGAIN) if the caller posted since. */
		sys_futex_wait(pool_futex_word(&w->word), v);
	}
}

/* A participant's end of a generation: one decrement, and the caller's
 * wake-up if it sleeps and this was the last.  Release: everything fn wrote
 * on this thread happens before the caller's acquire of pending == 0 (the
 * decrements form one release sequence, so the last value carries them
 * all). */
static void pool_finished(struct pool *p)
{
	uint32_t old = atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
	/* each participant decrements once per generation: a count that was
	 * already 0 means a worker ran a job twice */
	ingest_assert(old & ~POOL_WAITER);
	if (old == (POOL_WAITER | 1))
		pool_wake(&p->pending);
}

static void *pool_main(void *arg)
{
	struct pool_worker *w = arg;
	struct pool *p = w->pool;
	char name[16];
	snprintf(name, sizeof(name), "ingest-w%u", w->index);
	/* On itself this is one prctl; on another thread glibc would open
	 * /proc/self/task/N/comm. */
	sys_set_thread_name(name);

	uint32_t seen = 0;
	for (;;) {
		seen = pool_sleep(w, seen, p->linger_ns);
		bool stop = p->stop;
		if (!stop)
			pool_work(p, w->index);
		pool_finished(p);
		if (stop) {
			/* The wake above, if any, was this thread's last counted
			 * syscall: pool_stop() waits for this store. */
			atomic_store_explicit(&w->done, true, memory_order_release);
			return NULL;
		}
	}
}

/* Publishes the job slot to thread k and wakes it if it sleeps (true then).
 * Release: the job slot, cursor and pending stores come before it. */
static bool pool_post(struct pool_worker *w)
{
	uint32_t old = atomic_exchange_explicit(&w->word, ++w->posted << 1,
	                                        memory_order_release);
	if (!(old & POOL_SLEEPING))
		return false;
	pool_wake(&w->word);
	return true;
}

/* Caller: opens the door of this run to the helper (release: the job
 * slot and the cursor are written), and tells it wherever it sleeps; the
 * hook makes a syscall only if it does. */
static void pool_help_open(struct pool *p)
{
	atomic_store_explicit(&p->help, POOL_HELP_OPEN, memory_order_release);
	if (p->helper_wake)
		p->helper_wake(p->helper_wake_ctx);
}

/* Caller, its own claims done: shuts the door and returns once no helper
 * is inside (a helper that came in has at most its last item in hand).
 * Polls first, as pool_wait() does. */
static void pool_help_close(struct pool *p, uint64_t t0)
{
	/* WAITER is the caller's, cleared by the open: what is left is the
	 * count */
	uint32_t v = atomic_fetch_and_explicit(&p->help, ~POOL_HELP_OPEN, memory_order_acquire) &
	             ~POOL_HELP_OPEN;
	for (unsigned i = 0; v >= POOL_HELP_ONE;) {
		bool expired = spin_step_expired(&i, t0, POOL_HELPER_SPIN_NS);
		v = atomic_load_explicit(&p->help, memory_order_acquire);
		if (expired)
			break;
	}
	if (v < POOL_HELP_ONE)
		return;
	v = atomic_fetch_or_explicit(&p->help, POOL_HELP_WAITER, memory_order_acquire);
	while (v & ~POOL_HELP_WAITER) {
		/* -EAGAIN when the helper left in between; loop. */
		sys_futex_wait(pool_futex_word(&p->help), v | POOL_HELP_WAITER);
		v = atomic_load_explicit(&p->help, memory_order_acquire);
	}
}

/* Caller: returns when every participant has decremented pending.  Polls
 * for up to POOL_CALLER_SPIN_NS first, since t0 (taken when the caller's own
 * claims ran out). */
static void pool_wait(struct pool *p, uint64_t t0)
{
	for (unsigned i = 0;;) {
		if (!atomic_load_explicit(&p->pending, memory_order_acquire))
			return;
		if (spin_step_expired(&i, t0, POOL_CALLER_SPIN_NS))
			break;
	}
	/* Acquire for the case where the count reached 0 just now. */
	uint32_t v = atomic_fetch_or_explicit(&p->pending, POOL_WAITER, memory_order_acquire);
	while (v & ~POOL_WAITER) {
		/* -EAGAIN when a worker decremented in between; loop. */
		sys_futex_wait(pool_futex_word(&p->pending), v | POOL_WAITER);
		v = atomic_load_explicit(&p->pending, memory_order_acquire);
	}
}

struct pool *pool_new(unsigned threads)
{
	if (threads == 0 || threads > LIMIT_MAX_THREADS)
		return NULL;
	struct pool *p = xcalloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->threads = threads;
	p->usable = threads;
	atomic_init(&p->cursor, 0);
	atomic_init(&p->pending, 0);
	atomic_init(&p->help, 0);
	atomic_init(&p->helper_items, 0);
	p->w = xcalloc(threads, sizeof(*p->w));
	if (!p->w) {
		xfree(p);
		return NULL;
	}
	return p;
}

/* Starts threads 1..threads-1, once.  A thread that cannot be created
 * (EAGAIN: a thread limit) leaves the pool with the ones that did start:
 * fewer workers, the same results. */
static void pool_launch(struct pool *p)
{
	p->launched = true;
	pthread_attr_t attr;
	if (pthread_attr_init(&attr) != 0) {
		p->usable = 1;
		return;
	}
	/* Workers take no asynchronous signals: SIGINT, SIGPIPE and friends go
	 * to the threads that handle them.  Set in the attribute, this costs
	 * no extra syscall (glibc masks signals around clone anyway). */
	sigset_t all;
	sigfillset(&all);
	pthread_attr_setsigmask_np(&attr, &all);
	unsigned k = 1;
	for (; k < p->threads; k++) {
		struct pool_worker *w = &p->w[k];
		atomic_init(&w->word, 0);
		atomic_init(&w->done, false);
		w->index = k;
		w->pool = p;
		if (k == p->helper)
			continue;   /* no thread: pool_help()'s caller */
		if (sys_thread_create(&w->thread, &attr, pool_main, w) < 0)
			break;
		w->started = true;
		p->stats.threads_started++;
	}
	pthread_attr_destroy(&attr);
	p->usable = k;
}

void pool_stop(struct pool *p)
{
	if (!p || p->stopped)
		return;
	p->stopped = true;
	if (!p->w)
		return;
	uint32_t live = 0;
	for (unsigned k = 1; k < p->threads; k++)
		live += p->w[k].started;
	if (!live)
		return;
	/* Written before the posts' release, read after their acquire, like a
	 * job: every worker acknowledges the stop as it would finish a job. */
	p->stop = true;
	atomic_store_explicit(&p->pending, live, memory_order_relaxed);
	for (unsigned k = 1; k < p->threads; k++)
		if (p->w[k].started)
			pool_post(&p->w[k]);
	pool_wait(p, clock_now_ns());
	/* The last worker to acknowledge may still be inside the wake that
	 * let pool_wait() return: a few instructions. */
	for (unsigned k = 1; k < p->threads; k++)
		while (p->w[k].started && !atomic_load_explicit(&p->w[k].done, memory_order_acquire))
			spin_pause();
}

void pool_free(struct pool *p)
{
	if (!p)
		return;
	pool_stop(p);
	if (p->w) {
		for (unsigned k = 1; k < p->threads; k++)
			if (p->w[k].started)
				pthread_join(p->w[k].thread, NULL);
		xfree(p->w);
	}
	xfree(p);
}

unsigned pool_workers_for(const struct pool *p, size_t items, uint64_t bytes)
{
	uint64_t n = bytes / LIMIT_BYTES_PER_WORKER;
	if (n == 0)
		n = 1;
	if (n > items)
		n = items;
	if (n > p->threads)
		n = p->threads;
	return (unsigned)n;
}

unsigned pool_run(struct pool *p, size_t items, uint64_t bytes, pool_fn fn, void *ctx)
{
	return pool_run_max(p, items, bytes, p->threads, fn, ctx);
}

unsigned pool_run_max(struct pool *p, size_t items, uint64_t bytes, unsigned max, pool_fn fn,
                      void *ctx)
{
	/* a stopped pool has no workers to post to */
	ingest_verify(!p->stopped);
	unsigned n = pool_workers_for(p, items, bytes);
	if (n > max)
		n = max ? max : 1;
	if (n > 1 && !p->launched)
		pool_launch(p);
	if (n > p->usable)
		n = p->usable;
	p->stats.batches++;
	p->stats.workers_hist[n]++;
	if (n <= 1) {
		/* The gate: no atomics, no wake-up, nothing shared. */
		if (n == 1)
			p->stats.inline_batches++;
		for (size_t i = 0; i < items; i++)
			fn(ctx, i, 0);
		return n;
	}

	/* the job slot is the caller's only between batches */
	ingest_assert((atomic_load_explicit(&p->pending, memory_order_relaxed) & ~POOL_WAITER) == 0);
	p->fn = fn;
	p->ctx = ctx;
	p->items = items;
	/* Relaxed: published by the release exchanges in pool_post(). */
	atomic_store_explicit(&p->cursor, 0, memory_order_relaxed);
	bool helped = p->helper && p->helper < n;
	atomic_store_explicit(&p->pending, n - 1 - helped, memory_order_relaxed);
	for (unsigned k = 1; k < n; k++)
		if (k != p->helper && pool_post(&p->w[k]))
			p->stats.wakes++;
	if (helped)
		pool_help_open(p);
	pool_work(p, 0);

	uint64_t t0 = clock_now_ns();
	if (helped)
		pool_help_close(p, t0);
	pool_wait(p, t0);
	p->stats.caller_wait_ns += clock_now_ns() - t0;
	return n;
}

void pool_set_linger(struct pool *p, uint64_t ns)
{
	/* before the threads start, which read it without a barrier of its own */
	ingest_verify(!p->launched);
	p->linger_ns = ns;
}

void pool_set_helper(struct pool *p, void (*wake)(void *ctx), void *ctx)
{
	/* before the threads start: pool_launch() skips the helper's */
	ingest_verify(!p->launched && p->threads >= 2);
	p->helper = p->threads - 1;
	p->helper_wake = wake;
	p->helper_wake_ctx = ctx;
}

bool pool_help_wanted(const struct pool *p)
{
	return atomic_load_explicit(&p->help, memory_order_relaxed) & POOL_HELP_OPEN;
}

unsigned pool_helper(const struct pool *p)
{
	return p->helper;
}

size_t pool_help(struct pool *p, bool (*enough)(void *ctx), void *ctx)
{
	/* Acquire: the job slot, written before the caller's release store
	 * of POOL_HELP_OPEN.  Entering a later run than the one first seen
	 * is fine: the slot is read only after the CAS. */
	uint32_t v = atomic_load_explicit(&p->help, memory_order_relaxed);
	do {
		if (!(v & POOL_HELP_OPEN))
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(&p->help, &v, v + POOL_HELP_ONE,
	                                                memory_order_acquire, memory_order_relaxed));
	pool_fn fn = p->fn;
	void *fctx = p->ctx;
	size_t items = p->items, ran = 0;
	for (;;) {
		size_t i = atomic_fetch_add_explicit(&p->cursor, 1, memory_order_relaxed);
		if (i >= items)
			break;
		fn(fctx, i, p->helper);
		ran++;
		if (enough && enough(ctx))
			break;
	}
	/* Release: what fn wrote, before the caller's acquire of a count of
	 * 0; the caller sleeps only once the door is shut, so WAITER with
	 * one helper left means it waits for this one. */
	atomic_fetch_add_explicit(&p->helper_items, ran, memory_order_relaxed);
	uint32_t old = atomic_fetch_sub_explicit(&p->help, POOL_HELP_ONE, memory_order_release);
	ingest_assert(old >= POOL_HELP_ONE);
	if (old == (POOL_HELP_WAITER | POOL_HELP_ONE))
		pool_wake(&p->help);
	return ran;
}

void pool_stats_get(const struct pool *p, struct pool_stats *out)
{
	*out = p->stats;
	out->helper_items = atomic_load_explicit(&p->helper_items, memory_order_relaxed);
}
