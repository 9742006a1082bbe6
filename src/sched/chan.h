/* A blocking FIFO of batches between two pipeline threads, and the byte
 * budget that bounds what is in flight between the reader and the writer.
 *
 * Both wait on raw futexes through core/sys.h, so every futex the pipeline
 * makes is counted (pthread condition variables would make uncounted ones),
 * and a wait or wake happens only when a side must block: a producer that
 * finds the consumer awake makes no syscall.  State is guarded by a tiny
 * spinlock (critical sections are a few stores; the threads block on the
 * futex word, never on the lock). */
#ifndef INGEST_CHAN_H
#define INGEST_CHAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct batch;

struct chan {
	atomic_flag lock;
	struct batch *head, *tail;
	bool closed;
	_Atomic uint32_t seq;       /* futex word: bumped on every change */
	atomic_uint waiters;
	_Atomic uint64_t waited_ns; /* time the consumers spent blocked */
};

void chan_init(struct chan *c);
void chan_push(struct chan *c, struct batch *b);
/* No more pushes: pops drain what is queued, then return NULL. */
void chan_close(struct chan *c);
/* Blocks until a batch is queued or the channel is closed and empty. */
struct batch *chan_pop(struct chan *c);
/* The next queued batch, or NULL at once when none is (no syscall). */
struct batch *chan_try_pop(struct chan *c);

struct budget {
	atomic_flag lock;
	uint64_t limit, used, peak;
	bool cancelled;
	_Atomic uint32_t seq;
	atomic_uint waiters;
	_Atomic uint64_t waited_ns; /* summed over waiters, hence atomic */
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
/* Wakes every waiter and makes acquire fail from now on (shutdown). */
void budget_cancel(struct budget *b);

#endif
