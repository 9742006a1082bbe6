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

struct batch *batch_new(unsigned n_workers)
{
	struct batch *b = xcalloc(1, sizeof(*b));
	if (!b)
		return NULL;
	arena_init(&b->meta, 0);
	arena_init(&b->data, 0);
	b->out = xcalloc(n_workers, sizeof(*b->out));
	b->notes = xcalloc(n_workers, sizeof(*b->notes));
	if (!b->out || !b->notes) {
		xfree(b->out);
		xfree(b->notes);
		xfree(b);
		return NULL;
	}
	b->n_out = n_workers;
	for (unsigned i = 0; i < n_workers; i++) {
		dynbuf_init(&b->out[i], 0);
		dynbuf_init(&b->notes[i], 0);
	}
	return b;
}

void batch_free(struct batch *b)
{
	if (!b)
		return;
	for (unsigned i = 0; i < b->n_out; i++) {
		dynbuf_release(&b->out[i]);
		dynbuf_release(&b->notes[i]);
	}
	xfree(b->out);
	xfree(b->notes);
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
	arena_reset(&b->meta);
	for (unsigned i = 0; i < b->n_out; i++) {
		dynbuf_reset(&b->out[i]);
		dynbuf_reset(&b->notes[i]);
		/* an output buffer that once held a huge record is not kept */
		if (b->out[i].cap > 4 * keep_bytes + (1 << 20))
			dynbuf_release(&b->out[i]);
		/* A worker's records of a batch are most of half its input
		 * (the text, not the attachments): its output buffer starts
		 * there, not at 256 bytes doubling through malloc's mremap
		 * six times or more.  Untouched pages cost no memory. */
		b->out[i].first = (size_t)(keep_bytes / 4);
	}
	arena_reset(&b->data);
	/* A failure leaves the arena growing chunk by chunk as before; the
	 * allocation that cannot be made is then the one that fails. */
	if (keep_bytes && !b->data.home && arena_reserve(&b->data, keep_bytes, fill_bytes) < 0)
		arena_release(&b->data);
}

