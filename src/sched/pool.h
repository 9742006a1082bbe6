/* SPDX-License-Identifier: MIT */
/* The worker pool: persistent threads that run one batch's items in parallel.
 *
 * Threads are started once, on the first batch above the byte gate, and
 * reused for every later batch (a run whose batches all stay under the gate
 * starts none).  A
 * batch gets pool_workers_for() workers: one per LIMIT_BYTES_PER_WORKER bytes,
 * at most one per item, at most `threads`; a one-worker batch runs inline on
 * the calling thread with no wake-up at all.  The caller is worker 0 and
 * claims items from the same cursor as the pool threads.
 *
 * Thread safety: one thread at a time calls pool_run() and pool_stats_get()
 * on a pool (the pipeline's parse stage), and fn must not call pool_run() on
 * the same pool.  fn runs concurrently on up to `threads` threads; worker k
 * is always the same thread (0 the caller, k >= 1 the thread "ingest-wk"),
 * so per-worker state indexed by `worker` is never shared. */
#ifndef INGEST_POOL_H
#define INGEST_POOL_H

#include "core/limits.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pool;

/* Runs item `item` of the batch; worker 0 is the calling thread, 1..n-1 are
 * pool threads. */
typedef void (*pool_fn)(void *ctx, size_t item, unsigned worker);

struct pool_stats {
	uint64_t threads_started;   /* by the first batch above the gate; never again */
	uint64_t batches;           /* pool_run() calls, empty ones included */
	uint64_t inline_batches;    /* batches run by the caller alone */
	/* batches that used k workers (k = 0: empty batches) */
	uint64_t workers_hist[LIMIT_MAX_THREADS + 1];
	/* time the caller waited for workers to finish after its own claims
	 * ran out: the cost of the last items' imbalance */
	uint64_t caller_wait_ns;
	/* items the helper ran (pool_set_helper()) */
	uint64_t helper_items;
	/* threads a run found asleep and woke (a futex wake each) */
	uint64_t wakes;
};

/* A pool of `threads` workers including the caller; the threads - 1 named
 * threads ("ingest-w1"...) start with the first batch that needs them, and
 * if some cannot be created the pool works with those that could.  NULL
 * when threads is 0 or above LIMIT_MAX_THREADS, or without memory. */
struct pool *pool_new(unsigned threads);

/* Stops the threads and returns once each has made its last syscall (the
 * acknowledgement of the stop): what a thread counts is then all behind the
 * caller, and only glibc's thread exit is left for pool_free() to join.
 * No pool_run() may follow.  Accepts NULL; a second call does nothing. */
void pool_stop(struct pool *p);

/* Stops (pool_stop()) and joins the threads.  Accepts NULL.  No pool_run()
 * may be running. */
void pool_free(struct pool *p);

/* Workers a batch gets: min(threads, items, max(1, bytes /
 * LIMIT_BYTES_PER_WORKER)); 0 for 0 items. */
unsigned pool_workers_for(const struct pool *p, size_t items, uint64_t bytes);

/* Runs fn(ctx, i, worker) for every i in [0, items) exactly once, using
 * pool_workers_for(p, items, bytes) workers, and returns once all have run.
 * Everything fn wrote is visible to the caller on return.  Returns the
 * number of workers used (0 for 0 items). */
unsigned pool_run(struct pool *p, size_t items, uint64_t bytes, pool_fn fn, void *ctx);

/* The same with at most max workers, the caller included (1: the caller
 * alone, and no thread is started): a caller's own thread count on a pool
 * shared by callers that ask for different ones, and the parse stage's
 * inline runs. */
unsigned pool_run_max(struct pool *p, size_t items, uint64_t bytes, unsigned max, pool_fn fn,
                      void *ctx);

/* How long a pool thread that finished its part of a run polls for the
 * next before it sleeps (default 0: it sleeps at once).  For callers that
 * post runs back to back (parse_many in a loop): a sleeping thread costs
 * each run a futex wake and the wake-up's latency, tens of microseconds on
 * a VM; a polling one costs its CPU for up to `ns` when no run follows.
 * Call before the first pool_run(). */
void pool_set_linger(struct pool *p, uint64_t ns);
/* The helper: the last worker (threads - 1) becomes no thread of the pool
 * but a thread of the caller's choosing (the pipeline's reader) that joins
 * runs late, when it has nothing else to do, with pool_help().  A run
 * that uses all the workers opens to it while its caller claims; the
 * caller then waits only for the items the helper holds, not for a thread
 * to be woken and to go back to sleep.  `wake` is called by the caller
 * each time a run opens to the helper: it must wake the helper wherever
 * it may sleep (cheaply when it does not: the pipeline's chan_nudge() and
 * budget_nudge() make a syscall only for a sleeper).  Call once, before
 * the first pool_run(), with threads >= 2. */
void pool_set_helper(struct pool *p, void (*wake)(void *ctx), void *ctx);
/* The helper's worker number, 0 when the pool has none. */
unsigned pool_helper(const struct pool *p);
/* On the helper's thread (one thread only): runs items of the open run as
 * worker pool_helper(p), until none is left or enough(ctx) says so after
 * an item (NULL: until none is left).  Returns the items it ran; 0 at
 * once when no run is open.  Everything fn wrote is visible to the run's
 * caller when its pool_run() returns. */
size_t pool_help(struct pool *p, bool (*enough)(void *ctx), void *ctx);

/* Whether a run is open to the helper now (a hint: it may close at once). */
bool pool_help_wanted(const struct pool *p);

/* Copies the counters.  Same thread rules as pool_run(). */
void pool_stats_get(const struct pool *p, struct pool_stats *out);

#endif
