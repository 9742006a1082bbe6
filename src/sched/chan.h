/* SPDX-License-Identifier: MIT */
/* A blocking FIFO of batches between two pipeline threads.
 *
 * Both wait on raw futexes through core/sys.h, so every futex the pipeline
 * makes is counted (pthread condition variables would make uncounted ones),
 * and a wait or wake happens only when a side must block: a producer that
 * finds the consumer awake makes no syscall.  With wake_at > 1 a sleeping
 * consumer is woken once per wake_at batches rather than per batch, so the
 * two sides of a pipeline trade batches in runs: one sleep and one wake a
 * run, not a batch.  State is guarded by a tiny
 * spinlock (critical sections are a few stores; the threads block on the
 * futex word, never on the lock). */
#ifndef INGEST_CHAN_H
#define INGEST_CHAN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct batch;

/* Called by chan_push() on the pushing thread, before the batch is queued;
 * returns true when it took the batch itself (it is then not queued). */
typedef bool chan_push_hook(void *ctx, struct batch *b);

struct chan {
	atomic_flag lock;
	struct batch *head, *tail;
	bool closed;
	unsigned queued;            /* batches queued, under the lock */
	/* A push wakes a sleeping consumer only once this many batches are
	 * queued (1: every push); below it the batch waits for more, for
	 * chan_flush() or for the close.  Set before the run. */
	unsigned wake_at;
	/* NULL, or the channel (this one's consumer produces into it) to
	 * flush before a pop sleeps: a consumer never sleeps while a batch it
	 * pushed below its channel's wake_at lies unannounced.  Set before
	 * the run. */
	struct chan *flush_before_sleep;
	/* NULL, or called by a pop about to sleep, after the flush: true
	 * when it did other work instead (the pop then looks again rather
	 * than sleeping).  Set before the run. */
	bool (*idle)(void *ctx);
	void *idle_ctx;
	_Atomic uint32_t seq;       /* futex word: bumped on every change */
	atomic_uint waiters;
	_Atomic uint64_t waited_ns; /* time the consumers spent blocked */
	/* NULL, or set and cleared by the one thread that pushes */
	chan_push_hook *push_hook;
	void *hook_ctx;
};

void chan_init(struct chan *c);
void chan_push(struct chan *c, struct batch *b);
/* Wakes a sleeping consumer if anything is queued, whatever wake_at says:
 * called by a producer that is about to block on what its consumer would
 * give back. */
void chan_flush(struct chan *c);
/* Wakes a sleeping consumer to look again, queued or not: its idle hook
 * may have work for it now.  No syscall when nobody sleeps. */
void chan_nudge(struct chan *c);
/* Whether a batch is queued now (no syscall; a hint to the consumer). */
bool chan_any(struct chan *c);
/* No more pushes: pops drain what is queued, then return NULL. */
void chan_close(struct chan *c);
/* Blocks until a batch is queued or the channel is closed and empty. */
struct batch *chan_pop(struct chan *c);
/* The next queued batch, or NULL at once when none is (no syscall). */
struct batch *chan_try_pop(struct chan *c);

#endif
