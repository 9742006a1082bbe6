/* SPDX-License-Identifier: MIT */
/* Batch storage: see batch.h.  Each file gets a buffer of exactly its stat
 * size + 1 from the batch's data arena, whose home chunk of keep_bytes is
 * allocated at the batch's first reset and kept for the run: every batch
 * after the first reads into the same memory, so the steady state maps
 * nothing and its reads land in pages already faulted in.  A batch larger
 * than that (one file past keep_bytes, below the stream threshold) gets a
 * chunk of its own, given back at the next reset. */
#include "sched/batch.h"
#include "core/xalloc.h"

#include <errno.h>
#include <string.h>

struct batch *batch_new(void)
{
	struct batch *b = xcalloc(1, sizeof(*b));
	if (!b)
		return NULL;
	arena_init(&b->meta, 0);
	arena_init(&b->data, 0);
	return b;
}

void batch_free(struct batch *b)
{
	if (!b)
		return;
	arena_release(&b->meta);
	arena_release(&b->data);
	xfree(b);
}

void batch_reset(struct batch *b, uint64_t keep_bytes, uint64_t fill_bytes)
{
	b->n = 0;
	b->budget = 0;
	b->workers_used = 0;
	b->last = false;
	b->next = NULL;
	b->out = NULL;
	b->notes = NULL;
	arena_reset(&b->meta);
	arena_reset(&b->data);
	/* A failure leaves the arena growing chunk by chunk as before; the
	 * allocation that cannot be made is then the one that fails. */
	if (keep_bytes && !b->data.home && arena_reserve(&b->data, keep_bytes, fill_bytes) < 0)
		arena_release(&b->data);
}

