/* SPDX-License-Identifier: MIT */
/* Per-thread counters and their registry: see stats.h.
 *
 * The hot path (stats_count_sys) touches only a thread-local pointer and the
 * thread's own block.  Blocks are registered on a list under a mutex once per
 * thread and outlive their thread, so that counts made by a worker that has
 * exited are still merged. */
#include "core/stats.h"
#include "core/xalloc.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct stats_thread *stats_list;
static __thread struct stats_thread *stats_tls;
static pthread_key_t stats_key;
/* Made under stats_lock by the first thread that counts: not pthread_once,
 * whose completion is a futex wake whether anyone waits or not. */
static bool stats_key_made;

/* A thread's end marks its block; stats_reap() frees it later, under the
 * lock, so that a merge never reads freed memory. */
static void stats_thread_ended(void *p)
{
	__atomic_store_n(&((struct stats_thread *)p)->exited, 1, __ATOMIC_RELEASE);
}

struct stats_thread *stats_self(void)
{
	if (stats_tls)
		return stats_tls;
	/* Plain calloc: counting must not consume fault-injection numbers, or
	 * the numbering would depend on which thread counted first. */
	struct stats_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_lock(&stats_lock);
	t->next = stats_list;
	stats_list = t;
	if (!stats_key_made)
		stats_key_made = pthread_key_create(&stats_key, stats_thread_ended) == 0;
	bool keyed = stats_key_made;
	pthread_mutex_unlock(&stats_lock);
	stats_tls = t;
	if (keyed)
		pthread_setspecific(stats_key, t);
	return t;
}

void stats_count_ring(enum stats_ring_op op, unsigned n)
{
	struct stats_thread *t = stats_self();
	if (t)
		stats_add(&t->ring[op], n);
}

void stats_merge(struct stats_thread *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&stats_lock);
	for (struct stats_thread *t = stats_list; t; t = t->next) {
		for (int i = 0; i < SC__COUNT; i++)
			out->sys[i] += __atomic_load_n(&t->sys[i], __ATOMIC_RELAXED);
		for (int i = 0; i < STATS_OP__COUNT; i++)
			out->ring[i] += __atomic_load_n(&t->ring[i], __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&stats_lock);
}

void stats_reset_all(void)
{
	pthread_mutex_lock(&stats_lock);
	for (struct stats_thread *t = stats_list; t; t = t->next) {
		for (int i = 0; i < SC__COUNT; i++)
			__atomic_store_n(&t->sys[i], 0, __ATOMIC_RELAXED);
		for (int i = 0; i < STATS_OP__COUNT; i++)
			__atomic_store_n(&t->ring[i], 0, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&stats_lock);
}

void stats_free_all(void)
{
	pthread_mutex_lock(&stats_lock);
	struct stats_thread *t = stats_list;
	stats_list = NULL;
	pthread_mutex_unlock(&stats_lock);
	while (t) {
		struct stats_thread *next = t->next;
		free(t);
		t = next;
	}
	stats_tls = NULL;
}

void stats_reap(void)
{
	pthread_mutex_lock(&stats_lock);
	for (struct stats_thread **pp = &stats_list; *pp;) {
		struct stats_thread *t = *pp;
		if (__atomic_load_n(&t->exited, __ATOMIC_ACQUIRE)) {
			*pp = t->next;
			free(t);
		} else {
			pp = &t->next;
		}
	}
	pthread_mutex_unlock(&stats_lock);
}
