/* SPDX-License-Identifier: MIT */
/* Counters: syscalls by name, ring operations by opcode, pipeline figures.
 *
 * Each thread counts into its own struct stats_thread (no atomics, no false
 * sharing on the hot path).  A thread registers its block once; stats_merge()
 * adds all registered blocks up after the threads have stopped, or while they
 * are quiescent.  Registration takes a mutex, counting takes nothing. */
#ifndef INGEST_STATS_H
#define INGEST_STATS_H

#include "core/sys.h"

#include <stdint.h>

#define STATS_RING_OPS(X) X(statx) X(openat) X(read) X(close) X(other)

enum stats_ring_op {
#define STATS_RING_OP_ENUM(name) STATS_OP_##name,
	STATS_RING_OPS(STATS_RING_OP_ENUM)
#undef STATS_RING_OP_ENUM
	STATS_OP__COUNT
};

struct stats_thread {
	uint64_t sys[SC__COUNT];
	uint64_t ring[STATS_OP__COUNT];
	struct stats_thread *next;     /* registration list */
	int exited;                    /* its thread has ended (atomic) */
};

/* The calling thread's counters, created and registered on first use;
 * NULL only if that allocation failed (counting is then skipped). */
struct stats_thread *stats_self(void);
/* Only the owning thread writes its counters, but stats_merge() may read
 * them while it runs (a parked pool thread counting its futex): relaxed
 * atomic loads and stores, which compile to the plain load, add and store
 * of an increment on x86, make that read well-defined. */
static inline void stats_add(uint64_t *counter, uint64_t n)
{
	__atomic_store_n(counter, __atomic_load_n(counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}
static inline void stats_count_sys(enum sys_call c)
{
	struct stats_thread *t = stats_self();
	if (t)
		stats_add(&t->sys[c], 1);
}
void stats_count_ring(enum stats_ring_op op, unsigned n);

/* Sums every registered thread's counters into out. */
void stats_merge(struct stats_thread *out);
/* Clears every registered thread's counters (start of the counted window). */
void stats_reset_all(void);
/* Frees the registered blocks (at process end, all threads joined). */
void stats_free_all(void);
/* Frees the blocks of threads that have ended, after their counts were
 * merged: a run's threads end with it, and a process that runs forever
 * must not keep a block per thread it ever had. */
void stats_reap(void);

#endif
