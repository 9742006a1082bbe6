/* The channel and the byte budget: see chan.h.
 *
 *   reader ──push──▶ [parse chan] ──pop── caller/pool ──push──▶ [write chan] ──pop── writer
 *      │                                                                             │
 *      └──── budget_acquire(bytes) ◀──────────── budget_release(bytes) ──────────────┘
 *
 * The waiting protocol is the classic futex one: read the sequence word,
 * check the condition under the lock, and sleep on the word only if the
 * condition is still false; every change bumps the word before waking, so a
 * wake between the check and the sleep makes the sleep return at once. */
#include "core/clock.h"
#include "sched/chan.h"
#include "sched/batch.h"
#include "core/sys.h"

#include <limits.h>
#include <time.h>

static inline void spin_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static inline void spin_lock(atomic_flag *l)
{
	while (atomic_flag_test_and_set_explicit(l, memory_order_acquire))
		spin_pause();
}

static inline void spin_unlock(atomic_flag *l)
{
	atomic_flag_clear_explicit(l, memory_order_release);
}


static void futex_sleep(_Atomic uint32_t *seq, atomic_uint *waiters, uint32_t seen,
                        _Atomic uint64_t *waited)
{
	uint64_t t0 = clock_now_ns();
	atomic_fetch_add_explicit(waiters, 1, memory_order_seq_cst);
	if (atomic_load_explicit(seq, memory_order_seq_cst) == seen)
		sys_futex_wait((uint32_t *)(uintptr_t)seq, seen);
	atomic_fetch_sub_explicit(waiters, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(waited, clock_now_ns() - t0, memory_order_relaxed);
}

static void futex_notify(_Atomic uint32_t *seq, atomic_uint *waiters, int n)
{
	atomic_fetch_add_explicit(seq, 1, memory_order_seq_cst);
	if (atomic_load_explicit(waiters, memory_order_seq_cst))
		sys_futex_wake((uint32_t *)(uintptr_t)seq, n);
}

void chan_init(struct chan *c)
{
	atomic_flag_clear(&c->lock);
	c->head = c->tail = NULL;
	c->closed = false;
	atomic_init(&c->seq, 0);
	atomic_init(&c->waiters, 0);
	atomic_init(&c->waited_ns, 0);
}

void chan_push(struct chan *c, struct batch *b)
{
	b->next = NULL;
	spin_lock(&c->lock);
	if (c->tail)
		c->tail->next = b;
	else
		c->head = b;
	c->tail = b;
	spin_unlock(&c->lock);
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

void budget_init(struct budget *b, uint64_t limit)
{
	atomic_flag_clear(&b->lock);
	b->limit = limit;
	b->used = b->peak = 0;
	b->cancelled = false;
	atomic_init(&b->seq, 0);
	atomic_init(&b->waiters, 0);
	atomic_init(&b->waited_ns, 0);
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
	b->used -= bytes;
	spin_unlock(&b->lock);
	/* all waiters: with requests of different sizes, the one woken might
	 * not fit while another would */
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
