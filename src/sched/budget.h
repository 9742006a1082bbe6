/* SPDX-License-Identifier: MIT */
/* The byte budget: bounds the bytes read but not yet written, between the
 * reader (which acquires before it reads) and the writer (which releases
 * after it wrote).  It is the pipeline's backpressure and its memory bound
 * (--max-inflight).  Waiting follows sched/futex_wait.h: a wait or wake
 * happens only when a side must block. */
#ifndef INGEST_SCHED_BUDGET_H
#define INGEST_SCHED_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct chan;

struct budget {
	atomic_flag lock;
	uint64_t limit, used, peak;
	bool cancelled;
	_Atomic uint32_t seq;
	atomic_uint waiters;
	_Atomic uint64_t waited_ns; /* summed over waiters, hence atomic */
	/* NULL, or called by an acquire about to sleep, before it sleeps:
	 * whatever would release bytes must be running by then (ingest.c
	 * starts its parse thread there).  True when it did other work
	 * meanwhile: the acquire then tries again rather than sleeping.  Set
	 * before the run. */
	bool (*wait_hook)(void *ctx);
	void *wait_ctx;
	/* NULL, or the channel the acquiring side produces into, flushed
	 * before an acquire sleeps (sched/chan.h, wake_at).  Set before the
	 * run. */
	struct chan *flush_before_sleep;
};

void budget_init(struct budget *b, uint64_t limit);
/* Blocks until `bytes` fit (a request larger than the limit is granted
 * when nothing else is in flight, so one huge file cannot deadlock).
 * Returns false when the budget was cancelled. */
bool budget_acquire(struct budget *b, uint64_t bytes);
/* The same without blocking: false when the bytes do not fit now. */
bool budget_try_acquire(struct budget *b, uint64_t bytes);
/* budget_acquire for a caller that already holds `held` bytes of the budget
 * (at most what is in use) and cannot give them back before this returns,
 * such as a batch that must be complete before it is sent: waiting for
 * everything in flight to drain would then wait on itself.  It waits only
 * until the bytes fit or nothing but its own bytes is in flight.  Granted
 * then, `used` (held + bytes) may pass the limit: it is counted all the
 * same, in `used` and `peak`, and later acquisitions wait until releases
 * bring it back under the limit.  false when cancelled. */
bool budget_acquire_held(struct budget *b, uint64_t bytes, uint64_t held);
void budget_release(struct budget *b, uint64_t bytes);
/* Wakes every waiter to look again (its wait_hook may have work for it
 * now).  No syscall when nobody sleeps. */
void budget_nudge(struct budget *b);
/* Wakes every waiter and makes acquire fail from now on (shutdown). */
void budget_cancel(struct budget *b);

#endif
