/* SPDX-License-Identifier: MIT */
/* The byte budget: see budget.h.
 *
 *   reader ── budget_acquire(bytes) ... budget_release(bytes) ── writer
 *
 * Waiting follows the protocol of sched/futex_wait.h. */
#include "core/diag.h"
#include "sched/budget.h"
#include "sched/chan.h"
#include "sched/futex_wait.h"

#include <limits.h>

void budget_init(struct budget *b, uint64_t limit)
{
	atomic_flag_clear(&b->lock);
	b->limit = limit;
	b->used = b->peak = 0;
	b->cancelled = false;
	atomic_init(&b->seq, 0);
	atomic_init(&b->waiters, 0);
	atomic_init(&b->waited_ns, 0);
	b->wait_hook = NULL;
	b->wait_ctx = NULL;
	b->flush_before_sleep = NULL;
}

/* The admission rule; the lock is held.  What the caller holds itself is
 * in `used` too, so "nothing else in flight" is used <= held. */
static bool budget_fits(const struct budget *b, uint64_t bytes, uint64_t held)
{
	return b->used <= held || (bytes <= b->limit && b->used <= b->limit - bytes);
}

static bool budget_try_acquire_held(struct budget *b, uint64_t bytes, uint64_t held)
{
	spin_lock(&b->lock);
	bool ok = !b->cancelled && budget_fits(b, bytes, held);
	if (ok) {
		b->used += bytes;
		if (b->used > b->peak)
			b->peak = b->used;
	}
	spin_unlock(&b->lock);
	return ok;
}

bool budget_try_acquire(struct budget *b, uint64_t bytes)
{
	return budget_try_acquire_held(b, bytes, 0);
}

bool budget_acquire_held(struct budget *b, uint64_t bytes, uint64_t held)
{
	for (;;) {
		/* read the word before checking: a release in between bumps it,
		 * and the sleep then returns at once */
		uint32_t seen = atomic_load_explicit(&b->seq, memory_order_seq_cst);
		if (budget_try_acquire_held(b, bytes, held))
			return true;
		spin_lock(&b->lock);
		bool cancelled = b->cancelled;
		spin_unlock(&b->lock);
		if (cancelled)
			return false;
		if (b->flush_before_sleep)
			chan_flush(b->flush_before_sleep);
		/* a release the hook makes bumps seq: the sleep then returns */
		if (b->wait_hook && b->wait_hook(b->wait_ctx))
			continue;
		futex_sleep(&b->seq, &b->waiters, seen, &b->waited_ns);
	}
}

bool budget_acquire(struct budget *b, uint64_t bytes)
{
	return budget_acquire_held(b, bytes, 0);
}

void budget_release(struct budget *b, uint64_t bytes)
{
	if (!bytes)
		return;
	spin_lock(&b->lock);
	/* releasing more than is in use is a double release: the budget
	 * would then admit unbounded bytes */
	ingest_verify(b->used >= bytes);
	b->used -= bytes;
	spin_unlock(&b->lock);
	/* all waiters: with requests of different sizes, the one woken might
	 * not fit while another would */
	futex_notify(&b->seq, &b->waiters, INT_MAX);
}

void budget_nudge(struct budget *b)
{
	futex_notify(&b->seq, &b->waiters, INT_MAX);
}

void budget_cancel(struct budget *b)
{
	spin_lock(&b->lock);
	b->cancelled = true;
	spin_unlock(&b->lock);
	/* every blocked acquire must see the cancel, not just one */
	futex_notify(&b->seq, &b->waiters, INT_MAX);
}
