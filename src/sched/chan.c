/* SPDX-License-Identifier: MIT */
/* The channel: see chan.h.
 *
 *   reader ──push──▶ [full] ──pop── parse stage (parses, writes)
 *      ▲                                  │
 *      └──pop── [free_batches] ◀──push────┘
 *
 * Waiting follows the protocol of sched/futex_wait.h. */
#include "core/diag.h"
#include "sched/chan.h"
#include "sched/batch.h"
#include "sched/futex_wait.h"

#include <limits.h>

void chan_init(struct chan *c)
{
	atomic_flag_clear(&c->lock);
	c->head = c->tail = NULL;
	c->closed = false;
	c->queued = 0;
	c->wake_at = 1;
	c->flush_before_sleep = NULL;
	c->idle = NULL;
	c->idle_ctx = NULL;
	atomic_init(&c->seq, 0);
	atomic_init(&c->waiters, 0);
	atomic_init(&c->waited_ns, 0);
	c->push_hook = NULL;
	c->hook_ctx = NULL;
}

void chan_push(struct chan *c, struct batch *b)
{
	if (c->push_hook && c->push_hook(c->hook_ctx, b))
		return;
	b->next = NULL;
	spin_lock(&c->lock);
	/* a batch pushed after close would never be popped: its records
	 * and its budget bytes would be lost */
	ingest_verify(!c->closed);
	if (c->tail)
		c->tail->next = b;
	else
		c->head = b;
	c->tail = b;
	bool announce = ++c->queued >= c->wake_at;
	spin_unlock(&c->lock);
	/* Below wake_at the sequence word is not bumped either: a consumer
	 * about to sleep then sleeps, and the producer's next push, flush or
	 * close wakes it (it always makes one before it blocks itself). */
	if (announce)
		futex_notify(&c->seq, &c->waiters, 1);
}

void chan_flush(struct chan *c)
{
	spin_lock(&c->lock);
	bool any = c->queued > 0;
	spin_unlock(&c->lock);
	if (any)
		futex_notify(&c->seq, &c->waiters, 1);
}

bool chan_any(struct chan *c)
{
	spin_lock(&c->lock);
	bool any = c->queued > 0;
	spin_unlock(&c->lock);
	return any;
}

void chan_nudge(struct chan *c)
{
	futex_notify(&c->seq, &c->waiters, 1);
}

void chan_close(struct chan *c)
{
	spin_lock(&c->lock);
	c->closed = true;
	spin_unlock(&c->lock);
	/* every blocked pop must see the close, not just one */
	futex_notify(&c->seq, &c->waiters, INT_MAX);
}

/* Unlinks the head, if any; the lock is held. */
static struct batch *chan_take(struct chan *c)
{
	struct batch *b = c->head;
	if (b) {
		c->head = b->next;
		if (!c->head)
			c->tail = NULL;
		c->queued--;
	}
	return b;
}

struct batch *chan_pop(struct chan *c)
{
	for (;;) {
		uint32_t seen = atomic_load_explicit(&c->seq, memory_order_seq_cst);
		spin_lock(&c->lock);
		struct batch *b = chan_take(c);
		bool closed = c->closed;
		spin_unlock(&c->lock);
		if (b || closed)
			return b;
		if (c->flush_before_sleep)
			chan_flush(c->flush_before_sleep);
		if (c->idle && c->idle(c->idle_ctx))
			continue;
		futex_sleep(&c->seq, &c->waiters, seen, &c->waited_ns);
	}
}

struct batch *chan_try_pop(struct chan *c)
{
	spin_lock(&c->lock);
	struct batch *b = chan_take(c);
	spin_unlock(&c->lock);
	return b;
}
